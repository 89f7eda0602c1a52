/* raid_internal.h — what the RAID controller's files share but the API
 * does not: the battery state machine (raid_battery.c) and the controller's state
 * (raid.c, raid_control.c). */
#ifndef STORLAB_RAID_INTERNAL_H
#define STORLAB_RAID_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/units.h"
#include "raid.h"
#include "raid_map.h"


/* ------------------------------------------------------------ battery -- */

/* The set state (ok/failed/absent) plus the learn cycle: while set ok,
 * a learn cycle runs during [k*period, k*period + duration) after the
 * schedule's origin, k >= 1.  Evaluated lazily: no far-future events. */
struct raid_battery {
  enum sl_raid_battery set_state;
  enum sl_raid_battery state;          /* effective, as of last advance */
  uint64_t period_ns, duration_ns;
  uint64_t origin_ns;
};

void raid_battery_init (struct raid_battery *b, enum sl_raid_battery state,
                        uint64_t period_ns, uint64_t duration_ns, uint64_t now_ns);
/* The first state change in (last, now], if any: returns true with its
 * time and the new state (call until false). */
bool raid_battery_next_change (struct raid_battery *b, uint64_t now_ns,
                               uint64_t *when_ns, enum sl_raid_battery *state);
/* Sets the state by hand; learning starts a learn cycle now. */
void raid_battery_set (struct raid_battery *b, enum sl_raid_battery state, uint64_t now_ns);

/* --------------------------------------------------------- controller -- */

struct raid_model;

enum raid_op_kind { OP_FRONT, OP_DESTAGE, OP_REBUILD, OP_READ_AHEAD, OP_MEMBER_FLUSH };

/* A group of member I/Os in up to two phases, for one purpose. */
struct raid_op {
  enum raid_op_kind kind;
  struct sl_request *front;            /* completed when the op is done */
  struct raid_plan plan;
  size_t phase1_start;
  uint32_t pending;
  uint32_t phase;
  struct sl_extents batch;           /* destage: the logical data written */
  uint64_t rebuild_bytes;
  uint32_t rebuild_member;
  bool lost;                           /* power cut: the batch's data is gone */
  bool fua;                            /* front write with FUA: member writes too */
  struct raid_op *next_in_flight;      /* destage batches in flight */
  struct raid_op *prev_live, *next_live;       /* every op, freed on destroy */
};

/* A member request; req comes first so the engine's pointer is ours. */
struct member_io {
  struct sl_request req;
  struct raid_model *m;
  struct raid_op *op;
  uint32_t member;
  struct member_io *next_free;
};

/* Member requests are carved from blocks so destroy can free those still
 * referenced by pending engine events. */
#define RAID_IOS_PER_BLOCK 64u
struct raid_io_block {
  struct raid_io_block *next;
  struct member_io ios[RAID_IOS_PER_BLOCK];
};

struct raid_member {
  struct sl_model model;
  enum sl_raid_member_state state;
  struct sl_device_stats *stats;
  struct sl_device_stats *own_stats;
  uint32_t in_flight;
};

enum raid_counter {
  RC_CACHE_READ_HITS,
  RC_CACHE_READ_MISSES,
  RC_WRITES_CACHED,
  RC_WRITES_THROUGH,
  RC_DIRTY_BYTES,
  RC_DESTAGED_BYTES,
  RC_DESTAGE_BATCHES,
  RC_MEMBER_READS,
  RC_MEMBER_WRITES,
  RC_DEGRADED_READS,
  RC_REBUILT_BYTES,
  RC_BATTERY_STATE,
  RC_WRITE_BACK_EFFECTIVE,
  RC_ROOM_WAITS,
  RC_READAHEAD_HITS,
  RC_EVENTS,
  RC_COUNT
};

#define RAID_EVENTS_KEPT 256u

struct raid_model {
  struct sl_raid_config config;
  struct sl_raid_layout layout;
  uint64_t capacity_bytes;
  struct sl_engine *engine;
  struct raid_member member[SL_RAID_MAX_MEMBERS];
  struct raid_member_view view;
  uint32_t mirror_turn;                /* balances ties between mirrors */

  enum sl_raid_cache_policy policy;
  struct raid_battery battery;
  bool write_back;                     /* effective, as of the last update */

  /* front end */
  uint32_t in_controller;
  uint32_t front_writes;               /* arrived, not completed: in no cache yet */
  struct sl_request *wait_head, *wait_tail;    /* over the queue depth */
  uint64_t cpu_free_ns;
  uint64_t last_front_ns;              /* last arrival or completion */
  uint64_t idle_token;

  /* write cache */
  struct sl_extents dirty;
  uint64_t destaging_bytes;
  struct raid_op *destaging;
  uint32_t destage_ios_in_flight;
  bool destage_active;                 /* between the watermarks, going down */
  uint64_t destage_cursor;             /* C-SCAN position (logical) */
  struct sl_request *room_head, *room_tail;    /* writes waiting for room */
  struct sl_request *flush_head, *flush_tail;  /* FLUSHes waiting for the drain */

  /* read-ahead: one ready window and one being read */
  uint64_t last_read_end;
  uint64_t ra_start, ra_end;
  struct raid_op *ra_op;
  uint64_t ra_next_start, ra_next_end;
  struct sl_request *ra_wait_head, *ra_wait_tail;

  /* rebuild */
  struct raid_op *rebuild_op;
  uint64_t rebuild_step_start_ns;
  bool rebuild_timer;

  uint64_t own_counters[RC_COUNT];
  uint64_t *counter;

  struct sl_raid_event events[RAID_EVENTS_KEPT];
  uint64_t event_total;

  sl_raid_trace_fn trace;
  void *trace_arg;
  struct member_io *free_ios;
  struct raid_io_block *io_blocks;
  struct raid_op *live_ops;
};

struct raid_model *raid_from_engine (struct sl_engine *e, char *err, size_t err_bytes);
void raid_event (struct raid_model *m, uint64_t when_ns, const char *fmt, ...)
  __attribute__ ((format (printf, 3, 4)));
/* Re-evaluates battery (learn cycles) and the effective write policy;
 * a change to write-through starts draining the cache. */
void raid_update_policy (struct raid_model *m);
void raid_kick_destage (struct raid_model *m);
void raid_start_rebuild (struct raid_model *m);

/* raid_power.c: adds to lost the logical ranges the members' volatile
 * write caches lose in a power cut (dropped_bytes: member bytes dropped),
 * then cuts the members' power.  -1 when out of memory. */
int raid_member_power_cut (struct raid_model *m, struct sl_extents *lost,
                           uint64_t *dropped_bytes);
/* Member bytes in volatile write caches, not yet on media. */
uint64_t raid_member_volatile_bytes (const struct raid_model *m);

#endif
