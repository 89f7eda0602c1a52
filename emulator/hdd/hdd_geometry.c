/* hdd_geometry.c — the HDD's geometry and timing: zoned recording, the
 * seek curve, where an LBA lives, and how long media transfers take.
 *
 *   seek      Ruemmler & Wilkes curve fitted to track-to-track / average /
 *             full-stroke figures (plus write settle for writes);
 *   rotation  the platter angle is a function of engine time, the sector's
 *             angle a function of its LBA (zones, track skew);
 *   transfer  length at the zone's media rate (bytes per track per turn).
 *
 * Modelling choice the datasheet does not settle: a small disk (few
 * cylinders) that cannot reach a consistent average seek gets the closest
 * curve instead of an error.
 *
 * The per-command fast paths (seek_ns, locate_fast, media_transfer_ns) live
 * in hdd_internal.h so the scheduler in hdd.c inlines them.
 */
#define _GNU_SOURCE
#include "hdd.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hdd_internal.h"

/* Bounded so cylinder numbers fit in 32 bits with room to spare. */
#define MAX_CYLINDERS (1ull << 31)

/* Sum_{d=1..k} d^(1/2) and d^(3/2): exact below the threshold, else the
 * Euler-Maclaurin expansion (error below 1e-16 relative there). */
#define DIRECT_SUM_LIMIT 4096
static const double ZETA_MINUS_HALF = -0.2078862250773545;
static const double ZETA_MINUS_THREE_HALVES = -0.02548520188983303;

static double
sum_sqrt (uint64_t k)
{
  if (k <= DIRECT_SUM_LIMIT) {
    double s = 0;
    for (uint64_t d = 1; d <= k; d++)
      s += sqrt ((double) d);
    return s;
  }
  double x = (double) k, r = sqrt (x);
  return ZETA_MINUS_HALF + 2.0 / 3.0 * x * r + r / 2 + 1 / (24 * r)
    - 1 / (1920 * x * x * r);
}

static double
sum_pow_three_halves (uint64_t k)
{
  if (k <= DIRECT_SUM_LIMIT) {
    double s = 0;
    for (uint64_t d = 1; d <= k; d++)
      s += d * sqrt ((double) d);
    return s;
  }
  double x = (double) k, r = sqrt (x);
  return ZETA_MINUS_THREE_HALVES + 2.0 / 5.0 * x * x * r + x * r / 2 + r / 8
    + 1 / (1920 * x * r);
}

/* Seek curve through t(1) = t2t and t(C-1) = full with its sqrt/linear
 * boundary at db: t(d) = a + b sqrt(d) below db, and the tangent there,
 * t(d) = a + b (db + d) / (2 sqrt(db)), beyond.  Returns the mean over
 * uniformly random (start, end) cylinder pairs: distance d >= 1 has weight
 * 2 (C - d) / C^2, distance 0 (no seek) weight 1 / C. */
static double
seek_curve_mean (uint64_t cylinders, double t2t_ns, double full_ns, double db,
                 double *a_out, double *b_out)
{
  double c = (double) cylinders, d_max = c - 1, root_db = sqrt (db);
  double b = (full_ns - t2t_ns) / ((db + d_max) / (2 * root_db) - 1);
  double a = t2t_ns - b;
  uint64_t k = (uint64_t) ceil (db) - 1;       /* distances 1..k on the sqrt part */
  if (k > cylinders - 1)
    k = cylinders - 1;
  double sqrt_part = c * sum_sqrt (k) - sum_pow_three_halves (k);
  double m = (double) (cylinders - 1 - k);     /* tail d = k+1..C-1: C - d = 1..m */
  double tail_weight = m * (m + 1) / 2;
  double tail_weight_d = c * m * (m + 1) / 2 - m * (m + 1) * (2 * m + 1) / 6;
  double linear_part = (db * tail_weight + tail_weight_d) / (2 * root_db);
  double shape_mean = 2 / (c * c) * (sqrt_part + linear_part);
  double weight_moving = 1 - 1 / c;
  *a_out = a;
  *b_out = b;
  return a * weight_moving + b * shape_mean;
}

static int
fit_seek_curve (const struct sl_hdd_config *cfg, struct sl_hdd_geometry *g,
                char *err, size_t err_bytes)
{
  double t2t = (double) cfg->track_to_track_seek_ns;
  double full = (double) cfg->full_stroke_seek_ns;
  double target = (double) cfg->average_seek_ns;
  uint64_t cylinders = g->cylinders;
  double a, b;
  if (cylinders < 3) {
    snprintf (err, err_bytes, "size=%" PRIu64 ": only %" PRIu64 " cylinders (zones=%" PRIu32
              "), too few for a seek curve from track-to-track-seek-ms to "
              "full-stroke-seek-ms; raise zones or size",
              cfg->capacity_bytes, cylinders, cfg->zones);
    return -1;
  }
  /* all-linear (boundary at 1) .. all-sqrt (boundary at C-1) */
  double lo = 1, hi = (double) (cylinders - 1);
  double mean_linear = seek_curve_mean (cylinders, t2t, full, lo, &a, &b);
  double mean_sqrt = seek_curve_mean (cylinders, t2t, full, hi, &a, &b);
  /* What the figures allow on a full-size drive (mean distance a third of
   * the stroke; mean sqrt distance 8/15 of sqrt(stroke)).  A small disk has
   * few cylinders, 1/C of its random pairs need no seek at all, and it may
   * not reach a consistent datasheet average: it gets the closest curve
   * (fitted_average_seek_ns says what that averages). */
  double limit_linear = t2t + (full - t2t) / 3, limit_sqrt = t2t + (full - t2t) * 8 / 15;
  double lowest = fmin (mean_linear, limit_linear), highest = fmax (mean_sqrt, limit_sqrt);
  if (target < lowest * (1 - 1e-9) || target > highest * (1 + 1e-9)) {
    snprintf (err, err_bytes,
              "average-seek-ms=%g: not achievable with track-to-track-seek-ms=%g and "
              "full-stroke-seek-ms=%g: a seek curve between them (linear .. square root) "
              "averages %.3f..%.3f ms over random cylinder pairs",
              target / NS_PER_MS, t2t / NS_PER_MS, full / NS_PER_MS,
              lowest / NS_PER_MS, highest / NS_PER_MS);
    return -1;
  }
  if (target <= mean_linear)
    hi = lo;
  else if (target >= mean_sqrt)
    lo = hi;
  /* The mean grows as the boundary moves out (the curve gets more concave). */
  for (int i = 0; i < 200 && hi - lo > 1e-9 * hi; i++) {
    double mid = (lo + hi) / 2;
    if (seek_curve_mean (cylinders, t2t, full, mid, &a, &b) < target)
      lo = mid;
    else
      hi = mid;
  }
  double db = (lo + hi) / 2;
  g->fitted_average_seek_ns = seek_curve_mean (cylinders, t2t, full, db, &a, &b);
  g->boundary_cylinders = db;
  g->sqrt_a_ns = a;
  g->sqrt_b_ns = b;
  g->linear_e_ns = b / (2 * sqrt (db));
  g->linear_c_ns = a + b * sqrt (db) / 2;
  g->write_settle_ns = (double) cfg->average_write_seek_ns - (double) cfg->average_seek_ns;
  return 0;
}

int
sl_hdd_geometry_build (const struct sl_hdd_config *c, struct sl_hdd_geometry *g,
                       char *err, size_t err_bytes)
{
  memset (g, 0, sizeof *g);
  if (c->rpm == 0 || c->heads == 0 || c->zones == 0 || c->capacity_bytes == 0
      || c->outer_rate_bytes_per_s == 0 || c->inner_rate_bytes_per_s == 0) {
    snprintf (err, err_bytes, "hdd: size, rpm, heads, zones, outer-mb-s and inner-mb-s "
              "must be nonzero");
    return -1;
  }
  g->heads = c->heads;
  g->revolution_ns = (uint64_t) llround (60 * NS_PER_S / c->rpm);
  double revolution_s = g->revolution_ns / NS_PER_S;

  g->zones = calloc (c->zones, sizeof *g->zones);
  if (g->zones == NULL) {
    snprintf (err, err_bytes, "hdd: out of memory for %" PRIu32 " zones", c->zones);
    return -1;
  }
  g->zone_count = c->zones;

  /* Zoned recording: the media rate (= bytes per track per turn) falls
   * linearly from the outer zone to the inner one; tracks hold whole sectors. */
  uint64_t track_bytes_all_zones = 0;
  for (uint32_t z = 0; z < c->zones; z++) {
    double position = c->zones == 1 ? 0 : (double) z / (c->zones - 1);
    double rate = c->outer_rate_bytes_per_s
      + ((double) c->inner_rate_bytes_per_s - (double) c->outer_rate_bytes_per_s) * position;
    uint64_t track_bytes = (uint64_t) llround (rate * revolution_s / SECTOR_BYTES) * SECTOR_BYTES;
    if (track_bytes < SECTOR_BYTES)
      track_bytes = SECTOR_BYTES;
    g->zones[z].track_bytes = track_bytes;
    track_bytes_all_zones += track_bytes;
  }
  /* Every zone has the same number of cylinders: enough for the capacity. */
  uint64_t bytes_per_cylinder_row = c->heads * track_bytes_all_zones;
  uint64_t cylinders_per_zone = (c->capacity_bytes + bytes_per_cylinder_row - 1)
    / bytes_per_cylinder_row;
  uint64_t cylinders = cylinders_per_zone * c->zones;
  if (cylinders > MAX_CYLINDERS) {
    snprintf (err, err_bytes, "size=%" PRIu64 ": needs %" PRIu64 " cylinders, more than "
              "the model's %" PRIu64 "; raise heads, outer-mb-s or inner-mb-s",
              c->capacity_bytes, cylinders, (uint64_t) MAX_CYLINDERS);
    sl_hdd_geometry_free (g);
    return -1;
  }
  uint64_t byte = 0;
  for (uint32_t z = 0; z < c->zones; z++) {
    struct sl_hdd_zone *zone = &g->zones[z];
    zone->first_cylinder = (uint32_t) (z * cylinders_per_zone);
    zone->cylinders = (uint32_t) cylinders_per_zone;
    zone->first_byte = byte < c->capacity_bytes ? byte : c->capacity_bytes;
    byte += cylinders_per_zone * c->heads * zone->track_bytes;
    zone->end_byte = byte < c->capacity_bytes ? byte : c->capacity_bytes;
  }
  g->cylinders = (uint32_t) cylinders;

  /* Track skew: the next cylinder's first sector sits one track-to-track
   * seek later in the turn, so a transfer crossing cylinders loses no turn. */
  double skew_turns = (double) c->track_to_track_seek_ns / (double) g->revolution_ns;
  g->skew_fraction = skew_turns - floor (skew_turns);

  if (fit_seek_curve (c, g, err, err_bytes) < 0) {
    sl_hdd_geometry_free (g);
    return -1;
  }
  return 0;
}

void
sl_hdd_geometry_free (struct sl_hdd_geometry *g)
{
  free (g->zones);
  g->zones = NULL;
  g->zone_count = 0;
}

double
sl_hdd_seek_ns (const struct sl_hdd_geometry *g, uint32_t distance_cylinders, bool write)
{
  return seek_ns (g, distance_cylinders, write);
}

double
sl_hdd_mean_seek_ns (const struct sl_hdd_geometry *g)
{
  double c = g->cylinders, sum = 0;
  for (uint32_t d = 1; d < g->cylinders; d++)
    sum += (c - d) * seek_ns (g, d, false);
  return 2 * sum / (c * c);
}

void
sl_hdd_locate (const struct sl_hdd_geometry *g, uint64_t offset_bytes,
               uint32_t *cylinder, double *angle, const struct sl_hdd_zone **zone)
{
  uint32_t zi;
  double a;
  uint32_t cyl = locate_fast (g, offset_bytes, &a, &zi);
  if (cylinder)
    *cylinder = cyl;
  if (angle)
    *angle = a;
  if (zone)
    *zone = &g->zones[zi];
}

double
sl_hdd_platter_angle (const struct sl_hdd_geometry *g, uint64_t t_ns)
{
  return (double) (t_ns % g->revolution_ns) / (double) g->revolution_ns;
}
