/* raid.h — hardware RAID controller with a battery-backed write cache.
 *
 * Reads like a MegaRAID-class controller's user guide:
 *   - RAID 0, 1, 10, 5, 6 over member drives built from member presets
 *     (any hdd/ssd preset), each member a device model driven by the
 *     controller in the same engine, with its own stats record;
 *   - layout: stripe-size bytes per member per row (the "strip");
 *     RAID 10 = striped 2-way mirrors of adjacent members (0+1, 2+3, ...);
 *     RAID 5/6 parity rotates left-symmetric (Linux md's default):
 *     P of row r is on member n-1-(r mod n), Q (RAID 6) follows it, data
 *     chunks follow the parity;
 *   - RAID 5/6 writes choose read-modify-write (read old data + parity,
 *     write new data + parity: 4 member I/Os for a small RAID-5 write, 6 for
 *     RAID 6) or reconstruct-write (read the untouched data), whichever needs
 *     fewer member I/Os: a full-row write reads nothing;
 *   - write cache: write-back / write-through / forced write-back; write-back
 *     falls back to write-through while the battery is not ok; dirty data is
 *     destaged from a high watermark down to a low one (and when idle), in
 *     row-aligned batches taken in ascending LBA order (C-SCAN), each batch's
 *     member I/Os sorted by member LBA and adjacent ones merged;
 *   - read hits on cached (dirty) data; sequential read-ahead;
 *   - a queue-depth limit and a per-command processing overhead (one
 *     controller CPU: commands are processed one after another);
 *   - battery: ok / learning (periodic learn cycle) / failed / absent;
 *   - member failure: degraded reads reconstruct from survivors; a replaced
 *     member is rebuilt at rebuild-rate-mb-s, competing with foreground I/O;
 *   - members' own write caches (member-write-cache=on): FLUSH flushes them,
 *     write-through FUA writes pass them; at a power cut what they hold and
 *     the controller no longer does is lost (raid_power.c for the rules).
 *
 * Control (battery, policy, fail/replace member, power cut) goes through
 * sl_raid_control_*(): thread safe (sl_engine_locked), usable in both
 * clocks; every change is timestamped into the controller's event list,
 * written in the model's JSON ("events").
 */
#ifndef STORLAB_RAID_H
#define STORLAB_RAID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/extents.h"
#include "core/model.h"
#include "core/request.h"
#include "core/stats.h"
#include "device/params.h"

#define SL_RAID_MAX_MEMBERS 32u
#define SL_RAID_NAME_BYTES SL_PARAM_STRING_BYTES

enum sl_raid_cache_policy {
  SL_RAID_WRITE_THROUGH,
  SL_RAID_WRITE_BACK,                  /* write-through while the battery is not ok */
  SL_RAID_FORCED_WRITE_BACK,           /* write-back whatever the battery says */
};

enum sl_raid_battery {
  SL_RAID_BATTERY_OK,
  SL_RAID_BATTERY_LEARNING,
  SL_RAID_BATTERY_FAILED,
  SL_RAID_BATTERY_ABSENT,
};

enum sl_raid_member_state {
  SL_RAID_MEMBER_OK,
  SL_RAID_MEMBER_FAILED,
  SL_RAID_MEMBER_REBUILDING,
};

struct sl_raid_config {
  uint32_t level;                      /* 0, 1, 5, 6, 10 */
  uint32_t members;
  uint64_t stripe_bytes;               /* per member per row (strip), power of two */
  char member_preset[SL_RAID_NAME_BYTES];
  uint64_t member_capacity_bytes;      /* 0: the preset's size */
  uint64_t cache_bytes;
  char cache_policy[SL_RAID_NAME_BYTES];       /* write-back|write-through|forced-write-back */
  char battery[SL_RAID_NAME_BYTES];            /* ok|learning|failed|absent */
  uint32_t destage_high_percent;       /* destage starts at this dirty share ... */
  uint32_t destage_low_percent;        /* ... and stops at this one */
  uint32_t destage_depth;              /* destage member writes in flight, at most */
  uint64_t idle_destage_delay_ns;      /* front end idle this long: destage anyway */
  uint64_t read_ahead_bytes;           /* 0: no read-ahead */
  uint32_t queue_depth;                /* commands the controller accepts at once */
  uint64_t command_overhead_ns;        /* controller CPU time per command */
  uint64_t rebuild_rate_bytes_per_s;   /* per rebuilt member */
  uint64_t learn_period_ns;            /* 0: no learn cycles */
  uint64_t learn_duration_ns;
  /* The members' own (volatile) write cache, as a controller's "disk cache
   * policy": unchanged (the member preset's), on or off (hdd members). */
  char member_write_cache[SL_RAID_NAME_BYTES];
  /* More member overrides, "key=value,key=value" (the member preset's
   * keys, e.g. idle-destage-delay-ms=60000); empty: none. */
  char member_options[SL_RAID_NAME_BYTES];
};

extern const struct sl_param sl_raid_params[];
extern const size_t sl_raid_param_count;

void sl_raid_config_defaults (struct sl_raid_config *c);
/* Checks levels, member counts, stripe, presets, policy names: -1 with a
 * line naming the key. */
int sl_raid_config_validate (const struct sl_raid_config *c, char *err, size_t err_bytes);

/* ---- layout: where a logical byte lives ---- */
struct sl_raid_layout {
  uint32_t level;
  uint32_t members;
  uint64_t stripe_bytes;
  uint64_t member_bytes;               /* used per member: whole strips */
};

/* Members holding data in a row (RAID 1: 1, RAID 10: n/2, 5: n-1, 6: n-2). */
uint32_t sl_raid_data_members (uint32_t level, uint32_t members);
/* Smallest member count the level needs. */
uint32_t sl_raid_min_members (uint32_t level);
uint64_t sl_raid_capacity_bytes (const struct sl_raid_layout *l);

struct sl_raid_location {
  uint64_t row;
  uint32_t data_index;                 /* chunk within the row */
  uint32_t member;                     /* first copy of the data */
  uint32_t copies;                     /* mirrors: members member .. member+copies-1 */
  uint64_t member_offset_bytes;        /* same on every copy */
  int32_t parity_member;               /* RAID 5/6: P; -1 otherwise */
  int32_t q_member;                    /* RAID 6: Q; -1 otherwise */
};

void sl_raid_map (const struct sl_raid_layout *l, uint64_t offset_bytes,
                  struct sl_raid_location *loc);

/* ---- the model ---- */
/* Builds the members from member-preset (and member-size).  err names
 * the key on failure (ops == NULL). */
struct sl_model sl_raid_model_new (const struct sl_raid_config *c, char *err, size_t err_bytes);
/* True when the model is a RAID controller. */
bool sl_raid_model_is (const struct sl_model *m);
unsigned sl_raid_member_count (const struct sl_model *m);
/* Per-member stats: by default the model's own records; a driver that
 * keeps records in a shared stats file redirects them here, before the
 * engine adopts the model.  Returns -1 for a bad index. */
int sl_raid_use_member_stats (struct sl_model *m, unsigned member,
                              struct sl_device_stats *record);
struct sl_device_stats *sl_raid_member_stats (const struct sl_model *m, unsigned member);

/* Observes every member I/O the controller issues (tests, tracing). */
typedef void (*sl_raid_trace_fn) (void *arg, uint64_t now_ns, unsigned member,
                                  enum sl_op op, uint64_t offset_bytes, uint64_t length_bytes);
void sl_raid_set_trace (struct sl_model *m, sl_raid_trace_fn fn, void *arg);

/* ---- control (thread safe; engine must own a raid model) ---- */

/* What a power cut lost.  extents (logical ranges, sorted) is malloc'd:
 * free it with sl_raid_power_loss_free. */
struct sl_raid_power_loss {
  bool cache_preserved;                /* battery ok: dirty data survives */
  uint64_t lost_bytes;
  size_t extent_count;
  struct sl_extent *extents;
  /* members with volatile write caches lose what they had not flushed */
  unsigned volatile_member_caches;
  /* Of lost_bytes: logical bytes lost only because the members' volatile
   * caches dropped them (data the controller had written to a member and
   * no longer held itself).  extents include them. */
  uint64_t member_lost_bytes;
  uint64_t member_dropped_bytes;       /* member bytes the member caches dropped, all members */
};
void sl_raid_power_loss_free (struct sl_raid_power_loss *loss);

struct sl_raid_status {
  enum sl_raid_battery battery;
  enum sl_raid_cache_policy policy;
  bool write_back_effective;
  uint64_t cache_bytes;
  uint64_t dirty_bytes;                /* cached plus being destaged */
  uint64_t destaged_bytes;
  uint64_t cache_read_hits, cache_read_misses;
  unsigned members;
  enum sl_raid_member_state member_state[SL_RAID_MAX_MEMBERS];
  uint64_t rebuild_done_bytes;         /* of member_bytes, for a rebuilding member */
  uint64_t member_bytes;
  uint64_t event_count;
  unsigned volatile_member_caches;     /* members whose write cache is volatile */
  uint64_t member_volatile_bytes;      /* member bytes in those caches, not on media */
};

int sl_raid_control_battery (struct sl_engine *e, enum sl_raid_battery state,
                             char *err, size_t err_bytes);
int sl_raid_control_policy (struct sl_engine *e, enum sl_raid_cache_policy policy,
                            char *err, size_t err_bytes);
int sl_raid_control_fail_member (struct sl_engine *e, unsigned member,
                                 char *err, size_t err_bytes);
/* A fresh drive in a failed member's slot; rebuilding starts at once. */
int sl_raid_control_replace_member (struct sl_engine *e, unsigned member,
                                    char *err, size_t err_bytes);
int sl_raid_control_power_cut (struct sl_engine *e, struct sl_raid_power_loss *loss,
                               char *err, size_t err_bytes);
/* Runs fn(arg) under the engine lock if, at that moment, the cache holds no
 * dirty data (so everything written so far is on the members); returns
 * whether it ran.  Writes enter the data store under the same lock
 * (sl_engine_execute_at_arrival), so none can slip in between. */
bool sl_raid_control_when_clean (struct sl_engine *e, void (*fn) (void *arg), void *arg);
int sl_raid_control_status (struct sl_engine *e, struct sl_raid_status *status,
                            char *err, size_t err_bytes);

/* Controller events (battery, policy, member, power, learn, rebuild). */
struct sl_raid_event {
  uint64_t time_ns;                    /* engine time */
  char what[72];
};
/* Copies up to max events, oldest first, from index first (0 = the oldest
 * kept); returns how many were copied. */
size_t sl_raid_control_events (struct sl_engine *e, size_t first,
                               struct sl_raid_event *out, size_t max);

/* Name <-> value; parse returns -1 for an unknown name. */
const char *sl_raid_battery_name (enum sl_raid_battery b);
int sl_raid_battery_parse (const char *name, enum sl_raid_battery *out);
const char *sl_raid_policy_name (enum sl_raid_cache_policy p);
int sl_raid_policy_parse (const char *name, enum sl_raid_cache_policy *out);
const char *sl_raid_member_state_name (enum sl_raid_member_state s);

extern const struct sl_device_kind sl_raid_kind;

#endif
