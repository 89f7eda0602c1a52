/* hdd.h — hard disk drive model.
 *
 * Reads like a drive's product manual:
 *   - seek curve after Ruemmler & Wilkes ("An introduction to disk drive
 *     modeling", IEEE Computer 1994): t = a + b*sqrt(d) for short seeks,
 *     t = c + e*d for long ones, joined smoothly; fitted so that seek(1) is
 *     the track-to-track figure, seek(cylinders-1) the full stroke, and the
 *     mean over uniformly random start/end cylinders the average seek.
 *     Writes add a settle time (average write seek - average read seek).
 *   - the platter's rotational position is a function of time; a request
 *     waits for its first sector to come under the head after the seek.
 *   - zoned recording: bytes per track fall linearly from the outer zone
 *     (outer-mb-s) to the inner zone (inner-mb-s); tracks are skewed by the
 *     track-to-track time so sequential transfers do not miss a revolution.
 *   - per-command overhead; interface transfer for cache hits.
 *   - drive cache: read-ahead segments filled while idle; write cache on
 *     (volatile, destaged when idle or when full) or off (write-through).
 *   - NCQ: up to ncq-depth commands, the next one picked by shortest
 *     positioning time (seek + rotational wait), with an age limit so no
 *     command starves.
 */
#ifndef STORLAB_HDD_H
#define STORLAB_HDD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/model.h"
#include "device/params.h"

struct sl_hdd_config {
  uint64_t capacity_bytes;
  uint32_t rpm;
  uint32_t heads;                      /* recording surfaces */
  uint32_t zones;
  uint64_t track_to_track_seek_ns;
  uint64_t average_seek_ns;            /* read */
  uint64_t average_write_seek_ns;
  uint64_t full_stroke_seek_ns;
  uint64_t outer_rate_bytes_per_s;     /* sustained media rate, outer zone */
  uint64_t inner_rate_bytes_per_s;
  uint64_t interface_rate_bytes_per_s;
  uint64_t command_overhead_ns;
  uint64_t cache_bytes;
  uint32_t cache_segments;
  uint64_t read_ahead_bytes;
  bool write_cache;
  uint32_t ncq_depth;
  uint64_t ncq_max_wait_ns;            /* age after which a command goes first */
  uint64_t idle_destage_delay_ns;      /* idle time before write-back starts */
};

extern const struct sl_param sl_hdd_params[];
extern const size_t sl_hdd_param_count;

void sl_hdd_config_defaults (struct sl_hdd_config *c);
int sl_hdd_config_validate (const struct sl_hdd_config *c, char *err, size_t err_bytes);

/* Geometry and timing derived from a config: exposed for tests and reports. */
struct sl_hdd_zone {
  uint64_t first_byte;                 /* LBA range of the zone, in bytes */
  uint64_t end_byte;
  uint32_t first_cylinder;
  uint32_t cylinders;
  uint64_t track_bytes;                /* bytes per track in this zone */
};

struct sl_hdd_geometry {
  uint64_t revolution_ns;
  uint32_t cylinders;
  uint32_t zone_count;
  struct sl_hdd_zone *zones;
  /* seek curve: t(d) = sqrt_a_ns + sqrt_b_ns*sqrt(d) for 1 <= d < boundary,
   * linear_c_ns + linear_e_ns*d beyond */
  double sqrt_a_ns, sqrt_b_ns, linear_c_ns, linear_e_ns;
  double boundary_cylinders;
  double write_settle_ns;
  double fitted_average_seek_ns;       /* what the fit achieves */
  double skew_fraction;                /* track skew as a fraction of a turn */
  uint32_t heads;                      /* surfaces per cylinder (for locate) */
};

int sl_hdd_geometry_build (const struct sl_hdd_config *c, struct sl_hdd_geometry *g,
                           char *err, size_t err_bytes);
void sl_hdd_geometry_free (struct sl_hdd_geometry *g);
double sl_hdd_seek_ns (const struct sl_hdd_geometry *g, uint32_t distance_cylinders, bool write);
/* Where a byte lives: its cylinder and the angle (fraction of a turn, [0,1))
 * of its sector, track skew included. */
void sl_hdd_locate (const struct sl_hdd_geometry *g, uint64_t offset_bytes,
                    uint32_t *cylinder, double *angle, const struct sl_hdd_zone **zone);
/* Platter angle [0,1) at engine time t. */
double sl_hdd_platter_angle (const struct sl_hdd_geometry *g, uint64_t t_ns);
/* Mean seek over uniformly random (start, end) cylinder pairs, exact sum. */
double sl_hdd_mean_seek_ns (const struct sl_hdd_geometry *g);

struct sl_model sl_hdd_model_new (const struct sl_hdd_config *c, char *err, size_t err_bytes);

extern const struct sl_device_kind sl_hdd_kind;

#endif
