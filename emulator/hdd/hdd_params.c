/* hdd_params.c — the HDD's parameters: key table, defaults, validation,
 * and the device-kind record that ties them to the model (hdd.c).
 *
 * The parameters are the figures of a drive's product manual (defaults: the
 * sas10k-300g preset, a Seagate Savvio 10K.3 class drive).
 */
#define _GNU_SOURCE
#include "hdd.h"

#include <inttypes.h>
#include <stdio.h>

#include "device/device.h"
#include "hdd_internal.h"
#include "core/units.h"


#define FIELD(f) offsetof (struct sl_hdd_config, f)

const struct sl_param sl_hdd_params[] = {
  { "size", SL_PARAM_CAPACITY_BYTES, FIELD (capacity_bytes), 1.0 * MIB, 64.0 * TIB,
    "formatted capacity in bytes (user-addressable LBAs x 512)" },
  { "rpm", SL_PARAM_COUNT, FIELD (rpm), 3600, 20000,
    "spindle speed in revolutions per minute" },
  { "heads", SL_PARAM_COUNT, FIELD (heads), 1, 32,
    "data heads, i.e. recording surfaces per cylinder" },
  { "zones", SL_PARAM_COUNT, FIELD (zones), 1, 256,
    "recording zones from outer to inner diameter (zoned bit recording)" },
  { "track-to-track-seek-ms", SL_PARAM_TIME_MS, FIELD (track_to_track_seek_ns), 0.05, 10,
    "track-to-track seek time: one cylinder, read" },
  { "average-seek-ms", SL_PARAM_TIME_MS, FIELD (average_seek_ns), 0.5, 50,
    "average read seek time: mean over random start/end cylinders" },
  { "average-write-seek-ms", SL_PARAM_TIME_MS, FIELD (average_write_seek_ns), 0.5, 50,
    "average write seek time (read seek plus write settle)" },
  { "full-stroke-seek-ms", SL_PARAM_TIME_MS, FIELD (full_stroke_seek_ns), 0.5, 100,
    "full-stroke seek time: outermost to innermost cylinder, read" },
  { "outer-mb-s", SL_PARAM_RATE_MB_S, FIELD (outer_rate_bytes_per_s), 1, 2000,
    "sustained media transfer rate at the outer diameter" },
  { "inner-mb-s", SL_PARAM_RATE_MB_S, FIELD (inner_rate_bytes_per_s), 1, 2000,
    "sustained media transfer rate at the inner diameter" },
  { "interface-mb-s", SL_PARAM_RATE_MB_S, FIELD (interface_rate_bytes_per_s), 1, 24000,
    "host interface rate (600 for SAS/SATA 6 Gb/s)" },
  { "command-overhead-us", SL_PARAM_TIME_US, FIELD (command_overhead_ns), 0, 10000,
    "controller overhead per command (the datasheet's command overhead)" },
  /* a size, not a capacity: the buffer is segments that each hold a stream's
   * read-ahead, a unit of the drive's transfers; a lab at a sweep's scale
   * keeps it whole, or a scaled one would hold no read-ahead at all */
  { "cache-size", SL_PARAM_SIZE_BYTES, FIELD (cache_bytes), 0, 4.0 * GIB,
    "drive buffer (cache) size; 0 disables read caching and read-ahead" },
  { "cache-segments", SL_PARAM_COUNT, FIELD (cache_segments), 1, 256,
    "read cache segments the buffer is divided into (replaced LRU)" },
  { "read-ahead", SL_PARAM_SIZE_BYTES, FIELD (read_ahead_bytes), 0, 64.0 * MIB,
    "bytes prefetched past a media read while the head is idle" },
  { "write-cache", SL_PARAM_ON_OFF, FIELD (write_cache), 0, 1,
    "volatile write cache (WCE); enterprise SAS drives ship with it off" },
  { "ncq-depth", SL_PARAM_COUNT, FIELD (ncq_depth), 1, 256,
    "commands the drive queues and reorders (NCQ/TCQ tags)" },
  { "ncq-max-wait-ms", SL_PARAM_TIME_MS, FIELD (ncq_max_wait_ns), 1, 60000,
    "age after which a queued command is served first (starvation limit)" },
  { "idle-destage-delay-ms", SL_PARAM_TIME_MS, FIELD (idle_destage_delay_ns), 0, 10000,
    "idle time before the write cache starts writing back" },
};

#define HDD_PARAM_COUNT (sizeof sl_hdd_params / sizeof sl_hdd_params[0])
const size_t sl_hdd_param_count = HDD_PARAM_COUNT;

void
sl_hdd_config_defaults (struct sl_hdd_config *c)
{
  /* sas10k-300g: Seagate Savvio 10K.3 class (reference/devices.md). */
  *c = (struct sl_hdd_config) {
    .capacity_bytes = 300000000000ull,
    .rpm = 10000,
    .heads = 4,
    .zones = 16,
    .track_to_track_seek_ns = 300000,
    .average_seek_ns = 3800000,
    .average_write_seek_ns = 4400000,
    .full_stroke_seek_ns = 7800000,
    .outer_rate_bytes_per_s = 124000000,
    .inner_rate_bytes_per_s = 67000000,
    .interface_rate_bytes_per_s = 600000000,
    .command_overhead_ns = 200000,
    .cache_bytes = 16 * MIB,
    .cache_segments = 16,
    .read_ahead_bytes = 512 * KIB,
    .write_cache = false,               /* enterprise SAS ships WCE off */
    .ncq_depth = 32,
    .ncq_max_wait_ns = 500000000,
    .idle_destage_delay_ns = 1000000,
  };
}

int
sl_hdd_config_validate (const struct sl_hdd_config *c, char *err, size_t err_bytes)
{
  if (sl_params_check_ranges (sl_hdd_params, HDD_PARAM_COUNT, c, err, err_bytes) < 0)
    return -1;
  double t2t_ms = c->track_to_track_seek_ns / NS_PER_MS;
  double avg_ms = c->average_seek_ns / NS_PER_MS;
  double full_ms = c->full_stroke_seek_ns / NS_PER_MS;
  if (!(c->track_to_track_seek_ns < c->average_seek_ns
        && c->average_seek_ns < c->full_stroke_seek_ns)) {
    snprintf (err, err_bytes,
              "track-to-track-seek-ms=%g, average-seek-ms=%g, full-stroke-seek-ms=%g: "
              "need track-to-track < average < full-stroke", t2t_ms, avg_ms, full_ms);
    return -1;
  }
  if (c->average_write_seek_ns < c->average_seek_ns) {
    snprintf (err, err_bytes, "average-write-seek-ms=%g: must be >= average-seek-ms=%g "
              "(writes settle longer than reads)",
              c->average_write_seek_ns / NS_PER_MS, avg_ms);
    return -1;
  }
  if (c->inner_rate_bytes_per_s > c->outer_rate_bytes_per_s) {
    snprintf (err, err_bytes, "inner-mb-s=%g: must be <= outer-mb-s=%g "
              "(inner tracks hold fewer sectors)",
              c->inner_rate_bytes_per_s / 1e6, c->outer_rate_bytes_per_s / 1e6);
    return -1;
  }
  if (c->read_ahead_bytes > c->cache_bytes) {
    snprintf (err, err_bytes, "read-ahead=%" PRIu64 ": must be <= cache-size=%" PRIu64
              " (read-ahead fills the cache)", c->read_ahead_bytes, c->cache_bytes);
    return -1;
  }
  if (c->cache_bytes > 0 && (uint64_t) c->cache_segments * MIN_SEGMENT_BYTES > c->cache_bytes) {
    snprintf (err, err_bytes, "cache-segments=%" PRIu32 ": segments of at least 4 KiB "
              "need cache-size >= %" PRIu64 ", have cache-size=%" PRIu64,
              c->cache_segments, (uint64_t) c->cache_segments * MIN_SEGMENT_BYTES,
              c->cache_bytes);
    return -1;
  }
  if (c->write_cache && c->cache_bytes == 0) {
    snprintf (err, err_bytes, "write-cache=on: needs cache-size > 0");
    return -1;
  }
  if (c->capacity_bytes % SECTOR_BYTES != 0) {
    snprintf (err, err_bytes, "size=%" PRIu64 ": must be a multiple of 512", c->capacity_bytes);
    return -1;
  }
  struct sl_hdd_geometry g;
  if (sl_hdd_geometry_build (c, &g, err, err_bytes) < 0)
    return -1;
  sl_hdd_geometry_free (&g);
  return 0;
}

/* ========================================================== device kind == */

static void
kind_set_defaults (void *config)
{
  sl_hdd_config_defaults (config);
}

static int
kind_validate (const void *config, char *err, size_t err_bytes)
{
  return sl_hdd_config_validate (config, err, err_bytes);
}

static struct sl_model
kind_create (const void *config, char *err, size_t err_bytes)
{
  return sl_hdd_model_new (config, err, err_bytes);
}

const struct sl_device_kind sl_hdd_kind = {
  .kind = "hdd",
  .params = sl_hdd_params,
  .param_count = HDD_PARAM_COUNT,
  .config_bytes = sizeof (struct sl_hdd_config),
  .set_defaults = kind_set_defaults,
  .validate = kind_validate,
  .create = kind_create,
};
