/* raid_params.c — the controller's parameters: key table, defaults,
 * validation, member construction from member presets, and the
 * device-kind record (defaults: the vsa-raid10-8x-sas10k seed controller,
 * MegaRAID 9200-class: 512 MB cache, RAID 10 of 8 x sas10k-300g). */
#define _GNU_SOURCE
#include "raid.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "device/presets.h"
#include "hdd/hdd.h"
#include "ssd/ssd.h"
#include "core/units.h"


#define FIELD(f) offsetof (struct sl_raid_config, f)

const struct sl_param sl_raid_params[] = {
  { "level", SL_PARAM_COUNT, FIELD (level), 0, 10,
    "RAID level: 0, 1, 5, 6 or 10" },
  { "members", SL_PARAM_COUNT, FIELD (members), 1, SL_RAID_MAX_MEMBERS,
    "member drives in the array" },
  { "stripe-size", SL_PARAM_SIZE_BYTES, FIELD (stripe_bytes), 4.0 * KIB, 16.0 * MIB,
    "strip size: bytes per member per row, a power of two" },
  { "member-preset", SL_PARAM_STRING, FIELD (member_preset), 0, 0,
    "preset of every member drive (an hdd or ssd preset)" },
  { "member-size", SL_PARAM_CAPACITY_BYTES, FIELD (member_capacity_bytes), 0, 64.0 * TIB,
    "member capacity override; 0 keeps the member preset's size" },
  { "cache-size", SL_PARAM_CAPACITY_BYTES, FIELD (cache_bytes), 0, 64.0 * GIB,
    "controller cache (DRAM) size; 0: no write cache" },
  { "cache-policy", SL_PARAM_STRING, FIELD (cache_policy), 0, 0,
    "write-back, write-through or forced-write-back" },
  { "battery", SL_PARAM_STRING, FIELD (battery), 0, 0,
    "cache battery state at start: ok, learning, failed or absent" },
  { "destage-high-percent", SL_PARAM_COUNT, FIELD (destage_high_percent), 1, 100,
    "dirty share of the cache at which destage starts" },
  { "destage-low-percent", SL_PARAM_COUNT, FIELD (destage_low_percent), 0, 99,
    "dirty share of the cache at which destage stops" },
  { "destage-depth", SL_PARAM_COUNT, FIELD (destage_depth), 1, 4096,
    "destage member writes in flight, at most" },
  { "idle-destage-delay-ms", SL_PARAM_TIME_MS, FIELD (idle_destage_delay_ns), 0, 60000,
    "front end idle this long: destage below the high watermark too" },
  { "read-ahead", SL_PARAM_SIZE_BYTES, FIELD (read_ahead_bytes), 0, 64.0 * MIB,
    "bytes read ahead of a sequential read stream; 0: no read-ahead" },
  { "queue-depth", SL_PARAM_COUNT, FIELD (queue_depth), 1, 65536,
    "commands the controller accepts at once; more wait" },
  { "command-overhead-us", SL_PARAM_TIME_US, FIELD (command_overhead_ns), 0, 10000,
    "controller CPU time per command (commands are processed one at a time)" },
  { "rebuild-rate-mb-s", SL_PARAM_RATE_MB_S, FIELD (rebuild_rate_bytes_per_s), 0.1, 10000,
    "rebuild speed of a replaced member, at most" },
  { "learn-period-ms", SL_PARAM_TIME_MS, FIELD (learn_period_ns), 0, 1e11,
    "battery learn cycle period (90 days = 7776000000); 0: never" },
  { "learn-duration-ms", SL_PARAM_TIME_MS, FIELD (learn_duration_ns), 0, 1e9,
    "how long a learn cycle keeps the battery not ok" },
  { "member-write-cache", SL_PARAM_STRING, FIELD (member_write_cache), 0, 0,
    "members' own volatile write cache (disk cache policy): unchanged, on or off" },
  { "member-options", SL_PARAM_STRING, FIELD (member_options), 0, 0,
    "more member preset overrides, key=value,key=value (e.g. idle-destage-delay-ms=10000)" },
};

#define RAID_PARAM_COUNT (sizeof sl_raid_params / sizeof sl_raid_params[0])
const size_t sl_raid_param_count = RAID_PARAM_COUNT;

void
sl_raid_config_defaults (struct sl_raid_config *c)
{
  *c = (struct sl_raid_config) {
    .level = 10,
    .members = 8,
    .stripe_bytes = 64 * KIB,          /* MegaRAID default strip */
    .member_preset = "sas10k-300g",
    .cache_bytes = 512 * MIB,
    .cache_policy = "write-back",
    .battery = "ok",
    .destage_high_percent = 80,        /* reference/devices.md: start 80 %, stop 16 % */
    .destage_low_percent = 16,
    .destage_depth = 64,
    .idle_destage_delay_ns = 100000000,
    .read_ahead_bytes = 0,             /* MegaRAID's "no read ahead" default */
    .queue_depth = 256,
    .command_overhead_ns = 10000,      /* ~100k IOPS controller ceiling */
    .rebuild_rate_bytes_per_s = 50000000,
    .learn_period_ns = 7776000000000000ull,    /* 90 days */
    .learn_duration_ns = 3600000000000ull,     /* 1 hour */
    .member_write_cache = "unchanged",
    .member_options = "",
  };
}

/* The kinds a member can be: drives, never another controller. */
static const struct sl_device_kind *
member_kind (const char *name)
{
  if (strcmp (name, sl_hdd_kind.kind) == 0)
    return &sl_hdd_kind;
  if (strcmp (name, sl_ssd_kind.kind) == 0)
    return &sl_ssd_kind;
  return NULL;
}

static const struct sl_preset *
find_member_preset (const char *name)
{
  for (size_t i = 0; i < sl_preset_count (); i++) {
    const struct sl_preset *p = sl_preset_at (i);
    if (strcmp (p->name, name) == 0 && member_kind (p->kind) != NULL)
      return p;
  }
  return NULL;
}

static bool
is_power_of_two (uint64_t x)
{
  return x != 0 && (x & (x - 1)) == 0;
}

int
sl_raid_config_validate (const struct sl_raid_config *c, char *err, size_t err_bytes)
{
  uint32_t min_members = sl_raid_min_members (c->level);
  if (min_members == 0) {
    snprintf (err, err_bytes, "level=%" PRIu32 ": unknown RAID level (known: 0, 1, 5, 6, 10)",
              c->level);
    return -1;
  }
  if (c->members < min_members || c->members > SL_RAID_MAX_MEMBERS) {
    snprintf (err, err_bytes, "members=%" PRIu32 ": RAID %" PRIu32 " needs %" PRIu32
              "..%u members", c->members, c->level, min_members, SL_RAID_MAX_MEMBERS);
    return -1;
  }
  if (c->level == 10 && c->members % 2 != 0) {
    snprintf (err, err_bytes, "members=%" PRIu32 ": RAID 10 needs an even number of members"
              " (mirrored pairs)", c->members);
    return -1;
  }
  if (!is_power_of_two (c->stripe_bytes)) {
    snprintf (err, err_bytes, "stripe-size=%" PRIu64 ": must be a power of two",
              c->stripe_bytes);
    return -1;
  }
  if (find_member_preset (c->member_preset) == NULL) {
    char hdd[512], ssd[512];
    sl_preset_names ("hdd", hdd, sizeof hdd);
    sl_preset_names ("ssd", ssd, sizeof ssd);
    snprintf (err, err_bytes, "member-preset=%s: unknown member preset (known: %s%s%s)",
              c->member_preset, hdd, ssd[0] ? ", " : "", ssd);
    return -1;
  }
  enum sl_raid_cache_policy policy;
  if (sl_raid_policy_parse (c->cache_policy, &policy) < 0) {
    snprintf (err, err_bytes, "cache-policy=%s: unknown policy (known: write-back, "
              "write-through, forced-write-back)", c->cache_policy);
    return -1;
  }
  enum sl_raid_battery battery;
  if (sl_raid_battery_parse (c->battery, &battery) < 0) {
    snprintf (err, err_bytes, "battery=%s: unknown battery state (known: ok, learning, "
              "failed, absent)", c->battery);
    return -1;
  }
  if (c->destage_low_percent >= c->destage_high_percent) {
    snprintf (err, err_bytes, "destage-low-percent=%" PRIu32 ": must be below "
              "destage-high-percent=%" PRIu32, c->destage_low_percent, c->destage_high_percent);
    return -1;
  }
  if (c->cache_bytes == 0 && policy != SL_RAID_WRITE_THROUGH) {
    snprintf (err, err_bytes, "cache-size=0: cache-policy=%s needs a cache (use "
              "write-through)", c->cache_policy);
    return -1;
  }
  if (strcmp (c->member_write_cache, "unchanged") != 0 && strcmp (c->member_write_cache, "on") != 0
      && strcmp (c->member_write_cache, "off") != 0) {
    snprintf (err, err_bytes, "member-write-cache=%s: must be unchanged, on or off",
              c->member_write_cache);
    return -1;
  }
  if (c->member_capacity_bytes != 0 && c->member_capacity_bytes < c->stripe_bytes) {
    snprintf (err, err_bytes, "member-size=%" PRIu64 ": smaller than stripe-size=%" PRIu64,
              c->member_capacity_bytes, c->stripe_bytes);
    return -1;
  }
  return 0;
}

/* One member: the member preset through its kind's builder (so a member
 * is exactly what the hdd/ssd plugin would build), size overridden. */
struct sl_model raid_member_model_new (const struct sl_raid_config *c, char *err,
                                       size_t err_bytes);

/* member-write-cache and member-options as member builder keys; the
 * failing key=value goes into reason. */
static int
add_member_overrides (struct sl_device_builder *b, const struct sl_raid_config *c,
                      char *reason, size_t reason_bytes)
{
  if (strcmp (c->member_write_cache, "unchanged") != 0
      && sl_device_builder_add (b, "write-cache", c->member_write_cache, reason,
                                reason_bytes) != 0)
    return -1;
  char options[SL_RAID_NAME_BYTES], *save = NULL;
  snprintf (options, sizeof options, "%s", c->member_options);
  for (char *kv = strtok_r (options, ",", &save); kv; kv = strtok_r (NULL, ",", &save)) {
    char *eq = strchr (kv, '=');
    if (eq == NULL) {
      snprintf (reason, reason_bytes, "member-options: %s: expected key=value", kv);
      return -1;
    }
    *eq = '\0';
    if (sl_device_builder_add (b, kv, eq + 1, reason, reason_bytes) != 0)
      return -1;
  }
  return 0;
}

struct sl_model
raid_member_model_new (const struct sl_raid_config *c, char *err, size_t err_bytes)
{
  struct sl_model none = { 0 };
  const struct sl_preset *preset = find_member_preset (c->member_preset);
  const struct sl_device_kind *kind = preset ? member_kind (preset->kind) : NULL;
  if (kind == NULL) {
    snprintf (err, err_bytes, "member-preset=%s: unknown member preset", c->member_preset);
    return none;
  }
  struct sl_device_builder b;
  sl_device_builder_init (&b, kind);
  char reason[512], size[32];
  snprintf (size, sizeof size, "%" PRIu64, c->member_capacity_bytes);
  void *config = calloc (1, kind->config_bytes);
  int ok = config != NULL
    && sl_device_builder_add (&b, "preset", preset->name, reason, sizeof reason) == 0
    && (c->member_capacity_bytes == 0
        || sl_device_builder_add (&b, "size", size, reason, sizeof reason) == 0)
    && add_member_overrides (&b, c, reason, sizeof reason) == 0
    && sl_device_builder_build (&b, config, reason, sizeof reason) == 0;
  struct sl_model model = none;
  if (ok) {
    model = kind->create (config, reason, sizeof reason);
    ok = model.ops != NULL;
  }
  if (!ok)
    snprintf (err, err_bytes, "member-preset=%s: %s", c->member_preset,
              config ? reason : "out of memory");
  sl_device_builder_free (&b);
  free (config);
  return model;
}

/* ========================================================== device kind == */

static void
kind_set_defaults (void *config)
{
  sl_raid_config_defaults (config);
}

static int
kind_validate (const void *config, char *err, size_t err_bytes)
{
  return sl_raid_config_validate (config, err, err_bytes);
}

static struct sl_model
kind_create (const void *config, char *err, size_t err_bytes)
{
  return sl_raid_model_new (config, err, err_bytes);
}

const struct sl_device_kind sl_raid_kind = {
  .kind = "raid",
  .params = sl_raid_params,
  .param_count = RAID_PARAM_COUNT,
  .config_bytes = sizeof (struct sl_raid_config),
  .set_defaults = kind_set_defaults,
  .validate = kind_validate,
  .create = kind_create,
};
