/* hdd_internal.h — what the HDD model's files share but the API does not:
 * unit constants, and the geometry fast paths (seek curve, locate, media
 * transfer time) that SPTF evaluates for every queued command on every
 * pick.  These stay static inline here rather than calls into
 * hdd_geometry.c: the simulator's speed (millions of simulated I/Os per
 * second at queue depth 32) depends on them inlining into the scheduler.
 */
#ifndef STORLAB_HDD_INTERNAL_H
#define STORLAB_HDD_INTERNAL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/units.h"
#include "hdd.h"

#define SECTOR_BYTES 512u
/* Smallest read-cache segment the firmware will make (cache-segments check). */
#define MIN_SEGMENT_BYTES ((uint64_t) 4096)

/* The fitted curve of hdd.h; the public sl_hdd_seek_ns wraps it. */
static inline double
seek_ns (const struct sl_hdd_geometry *g, uint32_t distance, bool write)
{
  if (distance == 0)
    return 0;
  double d = distance;
  double t = d < g->boundary_cylinders ? g->sqrt_a_ns + g->sqrt_b_ns * sqrt (d)
    : g->linear_c_ns + g->linear_e_ns * d;
  return write ? t + g->write_settle_ns : t;
}

/* Same curve without branches (the sqrt/linear choice is unpredictable
 * when SPTF scans a queue of random commands). */
static inline double
seek_ns_branchless (const struct sl_hdd_geometry *g, uint32_t distance, bool write)
{
  double d = distance;
  double on_sqrt_part = d < g->boundary_cylinders;
  double sqrt_curve = g->sqrt_a_ns + g->sqrt_b_ns * sqrt (d);
  double linear = g->linear_c_ns + g->linear_e_ns * d;
  double t = linear + on_sqrt_part * (sqrt_curve - linear) + write * g->write_settle_ns;
  return distance ? t : 0;
}

/* Index of the zone holding offset (zones with end_byte > offset, first). */
static inline uint32_t
zone_index (const struct sl_hdd_geometry *g, uint64_t offset)
{
  uint32_t lo = 0, hi = g->zone_count - 1;
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (g->zones[mid].end_byte > offset)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

static inline uint32_t
locate_fast (const struct sl_hdd_geometry *g, uint64_t offset, double *angle,
             uint32_t *zone_out)
{
  uint64_t end = g->zones[g->zone_count - 1].end_byte;
  if (offset >= end)
    offset = end - 1;          /* past the last LBA: the last sector */
  uint32_t zi = zone_index (g, offset);
  const struct sl_hdd_zone *z = &g->zones[zi];
  uint64_t within = offset >= z->first_byte ? offset - z->first_byte : 0;
  uint64_t track_bytes = z->track_bytes;
  uint64_t track = within / track_bytes;
  uint32_t cylinder = z->first_cylinder + (uint32_t) (track / g->heads);
  if (angle) {
    /* heads switch instantly: only cylinders carry skew */
    double a = (double) (within - track * track_bytes) / (double) track_bytes
      + cylinder * g->skew_fraction;
    *angle = a - floor (a);
  }
  if (zone_out)
    *zone_out = zi;
  return cylinder;
}

/* Media time for [offset, offset+length): each zone's part at its rate,
 * plus one track skew per cylinder boundary crossed. */
static inline uint64_t
media_transfer_ns (const struct sl_hdd_geometry *g, uint64_t offset, uint64_t length,
                   uint32_t first_cylinder, uint32_t last_cylinder)
{
  double revolution = (double) g->revolution_ns, ns = 0;
  uint32_t zi = zone_index (g, offset);
  while (length > 0 && zi < g->zone_count) {
    const struct sl_hdd_zone *z = &g->zones[zi];
    uint64_t part = z->end_byte > offset ? z->end_byte - offset : 0;
    if (part > length || zi == g->zone_count - 1)
      part = length;
    ns += (double) part * revolution / (double) z->track_bytes;
    offset += part;
    length -= part;
    zi++;
  }
  ns += (double) (last_cylinder - first_cylinder) * g->skew_fraction * revolution;
  uint64_t whole = (uint64_t) ceil (ns);
  return whole > 0 ? whole : 1;
}

#endif
