/* test_hdd.c — the HDD model against its datasheet figures.
 *
 * Geometry and seek-curve checks use the geometry API directly; timing
 * checks run the model in virtual time with a small closed-loop driver
 * (each completion submits the next request) and compare what the model
 * did with figures computed here from the configuration.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/engine.h"
#include "core/stats.h"
#include "device/device.h"
#include "hdd/hdd.h"
#include "core/units.h"

#include "closed_loop.h"

#define MS 1000000.0

static struct sl_hdd_config
default_config (void)
{
  struct sl_hdd_config c;
  sl_hdd_config_defaults (&c);
  return c;
}

static struct sl_hdd_config
sata7200_config (void)
{
  struct sl_hdd_config c = default_config ();
  c.capacity_bytes = 2000398934016ull;
  c.rpm = 7200;
  c.track_to_track_seek_ns = 1000000;
  c.average_seek_ns = 8500000;
  c.average_write_seek_ns = 9500000;
  c.full_stroke_seek_ns = 18000000;
  c.outer_rate_bytes_per_s = 140000000;
  c.inner_rate_bytes_per_s = 70000000;
  return c;
}

static double
frac (double x)
{
  return x - floor (x);
}

/* ------------------------------------------------------------- params -- */

static void
test_params_table (void **state)
{
  (void) state;
  static const char *const keys[] = {
    "size", "rpm", "heads", "zones", "track-to-track-seek-ms", "average-seek-ms",
    "average-write-seek-ms", "full-stroke-seek-ms", "outer-mb-s", "inner-mb-s",
    "interface-mb-s", "command-overhead-us", "cache-size", "cache-segments",
    "read-ahead", "write-cache", "ncq-depth", "ncq-max-wait-ms", "idle-destage-delay-ms",
  };
  assert_int_equal (sl_hdd_param_count, sizeof keys / sizeof keys[0]);
  for (size_t i = 0; i < sl_hdd_param_count; i++) {
    assert_string_equal (sl_hdd_params[i].key, keys[i]);
    size_t n = strlen (sl_hdd_params[i].help);
    assert_true (n > 10);
    assert_true (sl_hdd_params[i].help[n - 1] != '.');
    assert_null (strchr (sl_hdd_params[i].help, '\n'));
  }
  struct sl_hdd_config c = default_config ();
  assert_int_equal (c.capacity_bytes, 300000000000ull);
  assert_int_equal (c.cache_bytes, 16 * MIB);
  assert_int_equal (c.read_ahead_bytes, 512 * KIB);
  assert_false (c.write_cache);
  char err[256] = "";
  assert_int_equal (sl_hdd_config_validate (&c, err, sizeof err), 0);

  assert_string_equal (sl_hdd_kind.kind, "hdd");
  assert_ptr_equal (sl_hdd_kind.params, sl_hdd_params);
  assert_int_equal (sl_hdd_kind.param_count, sl_hdd_param_count);
  assert_int_equal (sl_hdd_kind.config_bytes, sizeof (struct sl_hdd_config));
  struct sl_hdd_config k;
  sl_hdd_kind.set_defaults (&k);
  for (size_t i = 0; i < sl_hdd_param_count; i++) {       /* field by field: padding differs */
    size_t offset = sl_hdd_params[i].offset;
    size_t bytes = sl_hdd_params[i].type == SL_PARAM_ON_OFF ? sizeof (bool)
      : sl_hdd_params[i].type == SL_PARAM_COUNT ? sizeof (uint32_t) : sizeof (uint64_t);
    assert_memory_equal ((char *) &k + offset, (char *) &c + offset, bytes);
  }
  struct sl_model model = sl_hdd_kind.create (&k, err, sizeof err);
  assert_non_null (model.ops);
  assert_string_equal (model.ops->kind, "hdd");
  assert_int_equal (model.capacity_bytes, c.capacity_bytes);
  model.ops->destroy (model.self);
}

static void
expect_invalid (struct sl_hdd_config c, const char *const *words)
{
  char err[512] = "";
  assert_int_equal (sl_hdd_config_validate (&c, err, sizeof err), -1);
  for (; *words; words++)
    if (strstr (err, *words) == NULL)
      fail_msg ("error \"%s\" does not mention %s", err, *words);
  struct sl_model m = sl_hdd_model_new (&c, err, sizeof err);
  assert_null (m.ops);
}

static void
test_validate_rejects (void **state)
{
  (void) state;
  struct sl_hdd_config c = default_config ();
  c.track_to_track_seek_ns = 4000000;
  expect_invalid (c, (const char *[]) { "track-to-track-seek-ms", "average-seek-ms", NULL });

  c = default_config ();
  c.average_write_seek_ns = 3000000;
  expect_invalid (c, (const char *[]) { "average-write-seek-ms", "average-seek-ms", NULL });

  c = default_config ();
  c.inner_rate_bytes_per_s = 200000000;
  expect_invalid (c, (const char *[]) { "inner-mb-s", "outer-mb-s", NULL });

  c = default_config ();
  c.read_ahead_bytes = 32 * MIB;
  expect_invalid (c, (const char *[]) { "read-ahead", "cache-size", NULL });

  c = default_config ();
  c.cache_bytes = 512 * KIB;
  c.read_ahead_bytes = 0;
  c.cache_segments = 256;
  expect_invalid (c, (const char *[]) { "cache-segments", "cache-size", NULL });

  c = default_config ();
  c.capacity_bytes = 300000000100ull;
  expect_invalid (c, (const char *[]) { "size", "512", NULL });

  c = default_config ();
  c.rpm = 100;
  expect_invalid (c, (const char *[]) { "rpm=100", NULL });

  c = default_config ();
  c.write_cache = true;
  c.cache_bytes = 0;
  c.read_ahead_bytes = 0;
  expect_invalid (c, (const char *[]) { "write-cache", "cache-size", NULL });
}

/* ---------------------------------------------------------- seek curve -- */

static void
check_seek_fit (const struct sl_hdd_config *c)
{
  struct sl_hdd_geometry g;
  char err[256] = "";
  if (sl_hdd_geometry_build (c, &g, err, sizeof err) != 0)
    fail_msg ("geometry: %s", err);
  uint32_t cylinders = g.cylinders;
  assert_true (cylinders > 1000);

  assert_within (sl_hdd_seek_ns (&g, 1, false), (double) c->track_to_track_seek_ns, 0.005);
  assert_within (sl_hdd_seek_ns (&g, cylinders - 1, false), (double) c->full_stroke_seek_ns, 0.005);
  assert_true (sl_hdd_seek_ns (&g, 0, false) == 0);
  assert_true (sl_hdd_seek_ns (&g, 0, true) == 0);

  /* exact mean over random (start, end) pairs, summed here independently */
  double sum = 0, c_d = cylinders;
  for (uint32_t d = 1; d < cylinders; d++)
    sum += 2 * (c_d - d) / (c_d * c_d) * sl_hdd_seek_ns (&g, d, false);
  assert_within (sum, (double) c->average_seek_ns, 0.005);
  assert_within (sl_hdd_mean_seek_ns (&g), sum, 1e-9);
  assert_within (g.fitted_average_seek_ns, sum, 1e-6);

  /* monotone non-decreasing */
  double previous = 0;
  for (uint32_t d = 1; d < cylinders; d++) {
    double t = sl_hdd_seek_ns (&g, d, false);
    if (t < previous)
      fail_msg ("seek(%u) = %g < seek(%u) = %g", d, t, d - 1, previous);
    previous = t;
  }

  /* continuous and smooth at the boundary */
  double db = g.boundary_cylinders;
  assert_true (db >= 1 && db <= cylinders - 1);
  double sqrt_side = g.sqrt_a_ns + g.sqrt_b_ns * sqrt (db);
  double linear_side = g.linear_c_ns + g.linear_e_ns * db;
  assert_within (linear_side, sqrt_side, 1e-9);
  assert_within (g.linear_e_ns, g.sqrt_b_ns / (2 * sqrt (db)), 1e-9);
  if (db > 2 && db < cylinders - 2) {
    uint32_t below = (uint32_t) floor (db), above = below + 1;
    double step = sl_hdd_seek_ns (&g, above, false) - sl_hdd_seek_ns (&g, below, false);
    assert_true (step >= 0 && step <= 1.01 * g.sqrt_b_ns / (2 * sqrt ((double) below)));
  }

  /* writes settle for average-write - average on every nonzero seek */
  double settle = (double) c->average_write_seek_ns - (double) c->average_seek_ns;
  uint32_t probes[] = { 1, 7, 1000, cylinders / 2, cylinders - 1 };
  for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++)
    assert_within (sl_hdd_seek_ns (&g, probes[i], true) - sl_hdd_seek_ns (&g, probes[i], false),
                   settle, 1e-9);
  sl_hdd_geometry_free (&g);
}

static void
test_seek_fit_default (void **state)
{
  (void) state;
  struct sl_hdd_config c = default_config ();
  check_seek_fit (&c);
  struct sl_hdd_geometry g;
  char err[256];
  assert_int_equal (sl_hdd_geometry_build (&c, &g, err, sizeof err), 0);
  assert_within (g.write_settle_ns, 0.6 * MS, 1e-9);
  sl_hdd_geometry_free (&g);
}

static void
test_seek_fit_7200 (void **state)
{
  (void) state;
  struct sl_hdd_config c = sata7200_config ();
  check_seek_fit (&c);
}

static void
test_seek_unachievable (void **state)
{
  (void) state;
  const char *const keys[] = { "average-seek-ms", "track-to-track-seek-ms",
                               "full-stroke-seek-ms", "achievable", NULL };
  /* linear curve: 0.3 + 7.5/3 = 2.8 ms; sqrt curve: ~0.3 + 8/15 * 7.5 = 4.3 ms */
  struct sl_hdd_config c = default_config ();
  c.average_seek_ns = 5000000;
  c.average_write_seek_ns = 5500000;
  expect_invalid (c, keys);
  c.average_seek_ns = 2500000;
  expect_invalid (c, keys);
  c.average_seek_ns = 4200000;         /* inside: accepted */
  char err[256] = "";
  assert_int_equal (sl_hdd_config_validate (&c, err, sizeof err), 0);
}

/* -------------------------------------------------------------- zones -- */

static void
test_zones (void **state)
{
  (void) state;
  struct sl_hdd_config c = default_config ();
  struct sl_hdd_geometry g;
  char err[256];
  assert_int_equal (sl_hdd_geometry_build (&c, &g, err, sizeof err), 0);
  assert_int_equal (g.revolution_ns, 6000000);
  assert_int_equal (g.zone_count, 16);
  assert_int_equal (g.cylinders, g.zones[0].cylinders * 16);

  uint64_t capacity_sum = 0;
  for (uint32_t z = 0; z < g.zone_count; z++) {
    const struct sl_hdd_zone *zone = &g.zones[z];
    assert_int_equal (zone->track_bytes % 512, 0);
    capacity_sum += (uint64_t) zone->cylinders * c.heads * zone->track_bytes;
    if (z > 0) {
      assert_true (zone->track_bytes < g.zones[z - 1].track_bytes);
      assert_int_equal (zone->first_byte, g.zones[z - 1].end_byte);
      assert_int_equal (zone->first_cylinder, g.zones[z - 1].first_cylinder + g.zones[z - 1].cylinders);
    }
  }
  assert_true (capacity_sum >= c.capacity_bytes);
  assert_int_equal (g.zones[0].first_byte, 0);
  assert_int_equal (g.zones[g.zone_count - 1].end_byte, c.capacity_bytes);
  /* track bytes = media rate x revolution, to the sector */
  assert_within ((double) g.zones[0].track_bytes, 124e6 * 0.006, 0.001);
  assert_within ((double) g.zones[15].track_bytes, 67e6 * 0.006, 0.002);

  /* locate(): monotone over the LBA space, always on the disk */
  uint32_t previous = 0;
  for (uint64_t off = 0; off < c.capacity_bytes; off += 7 * MIB + 512) {
    uint32_t cyl;
    double angle;
    const struct sl_hdd_zone *zone;
    sl_hdd_locate (&g, off, &cyl, &angle, &zone);
    assert_true (cyl >= previous);
    assert_true (cyl < g.cylinders);
    assert_true (angle >= 0 && angle < 1);
    assert_true (off >= zone->first_byte && off < zone->end_byte);
    assert_true (cyl >= zone->first_cylinder && cyl < zone->first_cylinder + zone->cylinders);
    previous = cyl;
  }
  uint32_t last;
  sl_hdd_locate (&g, c.capacity_bytes - 1, &last, NULL, NULL);
  assert_true (last < g.cylinders && last >= previous);

  /* within a zone: a track is one turn; the next cylinder starts one
   * track-to-track seek later (skew); heads switch without skew */
  const struct sl_hdd_zone *z3 = &g.zones[3];
  uint64_t cylinder_bytes = c.heads * z3->track_bytes;
  uint64_t base = z3->first_byte + 10 * cylinder_bytes;
  uint32_t cyl_a, cyl_b, cyl_c;
  double angle_a, angle_b, angle_c, angle_d;
  sl_hdd_locate (&g, base, &cyl_a, &angle_a, NULL);
  sl_hdd_locate (&g, base + z3->track_bytes, &cyl_b, &angle_b, NULL);   /* next head */
  sl_hdd_locate (&g, base + cylinder_bytes, &cyl_c, &angle_c, NULL);    /* next cylinder */
  sl_hdd_locate (&g, base + z3->track_bytes / 4, NULL, &angle_d, NULL);
  assert_int_equal (cyl_b, cyl_a);
  assert_int_equal (cyl_c, cyl_a + 1);
  assert_within (angle_b + 1, angle_a + 1, 1e-9);
  assert_within (frac (angle_c - angle_a), 0.05, 1e-6);     /* 0.3 ms / 6 ms */
  assert_within (frac (angle_d - angle_a), 0.25, 1e-6);
  assert_within (g.skew_fraction, 0.05, 1e-9);

  assert_true (sl_hdd_platter_angle (&g, 0) == 0);
  assert_within (sl_hdd_platter_angle (&g, 3000000), 0.5, 1e-12);
  assert_within (sl_hdd_platter_angle (&g, 6000000ull * 1000 + 1500000), 0.25, 1e-12);
  sl_hdd_geometry_free (&g);
}

/* ------------------------------------------------------------- driver -- */

static struct sl_engine *
new_engine (const struct sl_hdd_config *c, struct sl_device_stats **stats)
{
  char err[256] = "";
  struct sl_model model = sl_hdd_model_new (c, err, sizeof err);
  if (model.ops == NULL)
    fail_msg ("model: %s", err);
  *stats = calloc (1, sizeof **stats);
  assert_non_null (*stats);
  struct sl_engine *e = sl_engine_new (SL_CLOCK_VIRTUAL, model, *stats, "hdd0");
  assert_non_null (e);
  return e;
}

/* A closed loop over the whole drive; it drains the drive's background
 * work (destage) and samples its dirty peak. */
static void
driver_init (struct test_driver *d, const struct sl_hdd_config *c, unsigned depth,
             enum sl_op op, enum test_pattern pattern, uint64_t length_bytes, uint64_t target)
{
  struct sl_device_stats *stats;
  struct sl_engine *e = new_engine (c, &stats);
  test_driver_init (d, e, c->capacity_bytes, depth, op, pattern, length_bytes, target,
                    0x9e3779b97f4a7c15ull);
  d->stats = stats;
  d->drain = true;
  d->sample_dirty = true;
}

static void
driver_free (struct test_driver *d)
{
  sl_engine_free (d->e);
  free (d->stats);
  test_driver_free (d);
}

/* Single requests, for hand-made scenarios. */
static void
submit_one (struct sl_engine *e, struct sl_request *r, enum sl_op op,
            uint64_t offset, uint64_t length)
{
  memset (r, 0, sizeof *r);
  r->op = op;
  r->offset_bytes = offset;
  r->length_bytes = length;
  sl_engine_submit (e, r);
}

static void
run_all (struct sl_engine *e)
{
  while (sl_engine_run_next (e))
    ;
}

/* A small disk has few cylinders: it keeps the track-to-track and full
 * stroke figures and gets the curve closest to the datasheet average. */
static void
test_small_disk (void **state)
{
  (void) state;
  struct sl_hdd_config c = default_config ();
  c.capacity_bytes = 16 * MIB;
  char err[256] = "";
  if (sl_hdd_config_validate (&c, err, sizeof err) != 0)
    fail_msg ("16 MiB disk rejected: %s", err);
  struct sl_hdd_geometry g;
  assert_int_equal (sl_hdd_geometry_build (&c, &g, err, sizeof err), 0);
  assert_int_equal (g.cylinders, 16);
  assert_within (sl_hdd_seek_ns (&g, 1, false), 0.3 * MS, 0.005);
  assert_within (sl_hdd_seek_ns (&g, 15, false), 7.8 * MS, 0.005);
  /* 1/16 of random pairs do not seek: the all-sqrt curve is the closest */
  assert_within (g.boundary_cylinders, 15, 1e-9);
  assert_within (g.fitted_average_seek_ns, sl_hdd_mean_seek_ns (&g), 1e-9);
  assert_true (g.fitted_average_seek_ns < 3.8 * MS && g.fitted_average_seek_ns > 3.0 * MS);
  sl_hdd_geometry_free (&g);

  struct test_driver d;
  driver_init (&d, &c, 4, SL_OP_READ, TEST_RANDOM, 4 * KIB, 2000);
  test_driver_run (&d);
  assert_true (test_model_counter (d.stats, "media_reads") > 0);
  driver_free (&d);
  /* seek figures no full-size drive could have stay errors */
  c.average_seek_ns = 6000000;
  c.average_write_seek_ns = 6000000;
  assert_int_equal (sl_hdd_config_validate (&c, err, sizeof err), -1);
  assert_non_null (strstr (err, "average-seek-ms"));
}

/* ----------------------------------------------------------- rotation -- */

static void
test_rotation_random_qd1 (void **state)
{
  (void) state;
  struct sl_hdd_config c = default_config ();
  struct test_driver d;
  driver_init (&d, &c, 1, SL_OP_READ, TEST_RANDOM, 4 * KIB, 20000);
  test_driver_run (&d);
  uint64_t media = test_model_counter (d.stats, "media_reads");
  assert_true (media > 19900);         /* random over 300 GB: (almost) no hits */
  double rotation_mean = (double) test_model_counter (d.stats, "rotation_ns_total") / (double) media;
  assert_within (rotation_mean, 3.0 * MS, 0.05);
  driver_free (&d);
}

static void
check_sequential (const struct sl_hdd_config *c, uint64_t start, double *rate_out)
{
  struct test_driver d;
  const uint64_t n = 2000;
  driver_init (&d, c, 1, SL_OP_READ, TEST_SEQUENTIAL, 64 * KIB, n);
  d.next_offset = start;
  /* first request alone: the positioning it pays is the only one */
  test_driver_start (&d);             /* depth 1: the first request alone */
  while (d.completed == 0 && sl_engine_run_next (d.e))
    ;
  uint64_t rotation_first = test_model_counter (d.stats, "rotation_ns_total");
  uint64_t seek_first = test_model_counter (d.stats, "seek_ns_total");
  while (sl_engine_run_next (d.e))
    ;
  assert_int_equal (d.completed, n);
  assert_int_equal (test_model_counter (d.stats, "rotation_ns_total"), rotation_first);
  assert_int_equal (test_model_counter (d.stats, "seek_ns_total"), seek_first);
  assert_int_equal (test_model_counter (d.stats, "media_reads"), 1);
  assert_int_equal (test_model_counter (d.stats, "readahead_hits"), n - 1);

  struct sl_hdd_geometry g;
  char err[256];
  assert_int_equal (sl_hdd_geometry_build (c, &g, err, sizeof err), 0);
  const struct sl_hdd_zone *zone;
  sl_hdd_locate (&g, start, NULL, NULL, &zone);
  double zone_rate = (double) zone->track_bytes / (g.revolution_ns / 1e9);
  double rate = (double) (n - 1) * 64 * KIB
    / ((d.last_completion_ns - d.first_completion_ns) / 1e9);
  assert_within (rate, zone_rate, 0.03);
  *rate_out = rate;
  sl_hdd_geometry_free (&g);
  driver_free (&d);
}

static void
test_sequential_qd1 (void **state)
{
  (void) state;
  struct sl_hdd_config c = default_config ();
  double outer, inner;
  check_sequential (&c, 0, &outer);
  check_sequential (&c, c.capacity_bytes - 256 * MIB, &inner);
  assert_within (outer, 124e6, 0.03);
  assert_within (inner, 67e6, 0.03);
  assert_true (outer > inner * 1.5);
}

/* --------------------------------------------------------------- IOPS -- */

static void
test_qd1_random_iops (void **state)
{
  (void) state;
  struct sl_hdd_config c = default_config ();
  struct test_driver d;
  driver_init (&d, &c, 1, SL_OP_READ, TEST_RANDOM, 4 * KIB, 20000);
  test_driver_run (&d);
  double iops = test_driver_iops (&d);
  /* datasheet arithmetic: overhead + average seek + half a turn + transfer
   * (4 KiB at the mean media rate) */
  double mean_rate = (124e6 + 67e6) / 2;
  double expected = 1e9 / (0.2 * MS + 3.8 * MS + 3.0 * MS + 4096 / mean_rate * 1e9);
  print_message ("QD1 4K random read: %.1f IOPS (datasheet estimate %.1f)\n", iops, expected);
  assert_true (iops >= 125 && iops <= 160);
  assert_within (iops, expected, 0.05);
  driver_free (&d);
}

static void
test_ncq_qd32 (void **state)
{
  (void) state;
  struct sl_hdd_config c = default_config ();
  struct test_driver qd1, qd32;
  driver_init (&qd1, &c, 1, SL_OP_READ, TEST_RANDOM, 4 * KIB, 10000);
  test_driver_run (&qd1);
  driver_init (&qd32, &c, 32, SL_OP_READ, TEST_RANDOM, 4 * KIB, 20000);
  test_driver_run (&qd32);
  double iops1 = test_driver_iops (&qd1), iops32 = test_driver_iops (&qd32);
  print_message ("4K random read: QD1 %.1f IOPS, QD32 %.1f IOPS (x%.2f)\n",
                 iops1, iops32, iops32 / iops1);
  assert_true (iops32 >= 1.5 * iops1);
  /* SPTF shortens positioning: seeks and rotational waits per I/O drop */
  double pos1 = (double) (test_model_counter (qd1.stats, "seek_ns_total") + test_model_counter (qd1.stats, "rotation_ns_total"))
    / test_model_counter (qd1.stats, "media_reads");
  double pos32 = (double) (test_model_counter (qd32.stats, "seek_ns_total") + test_model_counter (qd32.stats, "rotation_ns_total"))
    / test_model_counter (qd32.stats, "media_reads");
  assert_true (pos32 < 0.6 * pos1);
  driver_free (&qd1);
  driver_free (&qd32);
}

/* Positioning time from t for a read at offset, computed from the geometry
 * API (independent of the model's scheduler). */
static double
expected_positioning (const struct sl_hdd_geometry *g, uint32_t head_cylinder,
                      uint64_t t, uint64_t offset)
{
  uint32_t cyl;
  double angle;
  sl_hdd_locate (g, offset, &cyl, &angle, NULL);
  uint32_t distance = cyl > head_cylinder ? cyl - head_cylinder : head_cylinder - cyl;
  double seek = sl_hdd_seek_ns (g, distance, false);
  double arrive = (double) t + seek;
  double platter = frac (arrive / (double) g->revolution_ns);
  return seek + frac (angle - platter) * (double) g->revolution_ns;
}

static void
test_sptf_order (void **state)
{
  (void) state;
  struct sl_hdd_config c = default_config ();
  struct sl_hdd_geometry g;
  char err[256];
  assert_int_equal (sl_hdd_geometry_build (&c, &g, err, sizeof err), 0);
  uint64_t rng = 12345;
  enum { CANDIDATES = 8, TRIALS = 30 };
  int near_first = 0;
  for (int trial = 0; trial < TRIALS; trial++) {
    struct sl_device_stats *stats;
    struct sl_engine *e = new_engine (&c, &stats);
    /* keep the head busy with a long read that ends at cylinder X */
    struct sl_request busy, cand[CANDIDATES];
    uint64_t busy_offset = (test_rng_next (&rng) % (c.capacity_bytes / MIB - 64)) * MIB;
    submit_one (e, &busy, SL_OP_READ, busy_offset, 8 * MIB);
    assert_true (busy.completion_known);
    uint64_t head_free = busy.completion_ns;
    uint32_t head_cylinder;
    sl_hdd_locate (&g, busy_offset + 8 * MIB - 1, &head_cylinder, NULL, NULL);
    sl_engine_run_until (e, 1000000);
    int best = -1;
    double best_cost = INFINITY;
    for (int i = 0; i < CANDIDATES; i++) {
      uint64_t offset;
      /* half near the head, half anywhere; never in the read-ahead window */
      do {
        if (i % 2 == 0) {
          uint64_t around = busy_offset + 8 * MIB + 2 * MIB;
          offset = around + (test_rng_next (&rng) % (64 * MIB)) / 4096 * 4096;
        }
        else
          offset = test_rng_next (&rng) % (c.capacity_bytes / 4096) * 4096;
      } while (offset + 4096 > c.capacity_bytes
               || (offset + 4096 > busy_offset && offset < busy_offset + 10 * MIB));
      submit_one (e, &cand[i], SL_OP_READ, offset, 4096);
      assert_false (cand[i].completion_known);          /* queued behind the head */
      double cost = expected_positioning (&g, head_cylinder, head_free, offset);
      if (cost < best_cost) {
        best_cost = cost;
        best = i;
      }
    }
    run_all (e);
    int first = 0;
    for (int i = 1; i < CANDIDATES; i++)
      if (cand[i].completion_ns < cand[first].completion_ns)
        first = i;
    assert_int_equal (first, best);
    /* and it completes when the positioning computed here says */
    const struct sl_hdd_zone *zone;
    sl_hdd_locate (&g, cand[first].offset_bytes, NULL, NULL, &zone);
    double transfer = 4096.0 * (double) g.revolution_ns / (double) zone->track_bytes;
    double expected_done = (double) head_free + best_cost + transfer;
    if (fabs ((double) cand[first].completion_ns - expected_done) > 2000)
      fail_msg ("first candidate done at %" PRIu64 ", expected %.0f",
                cand[first].completion_ns, expected_done);
    near_first += best % 2 == 0;
    sl_engine_free (e);
    free (stats);
  }
  assert_true (near_first > TRIALS / 2);     /* the nearby ones usually win */
  sl_hdd_geometry_free (&g);
}

static void
test_ncq_max_wait (void **state)
{
  (void) state;
  for (int aged = 0; aged <= 1; aged++) {
    struct sl_hdd_config c = default_config ();
    c.ncq_max_wait_ns = aged ? 1000000 : 5000000000ull;
    struct sl_device_stats *stats;
    struct sl_engine *e = new_engine (&c, &stats);
    struct sl_request busy, far, near;
    submit_one (e, &busy, SL_OP_READ, 0, 8 * MIB);      /* ~70 ms of transfer */
    sl_engine_run_until (e, 100000);
    submit_one (e, &far, SL_OP_READ, c.capacity_bytes - 4096, 4096);
    sl_engine_run_until (e, 200000);
    submit_one (e, &near, SL_OP_READ, 8 * MIB + 4 * MIB, 4096);
    run_all (e);
    /* near costs at most a short seek and a turn (< 6.5 ms), far a full
     * stroke (7.8 ms); past the age limit the older one goes first anyway */
    if (aged)
      assert_true (far.completion_ns < near.completion_ns);
    else
      assert_true (near.completion_ns < far.completion_ns);
    sl_engine_free (e);
    free (stats);
  }
}

static struct test_driver
run_random_reads (unsigned ncq_depth, double max_wait_ms, unsigned queue_depth, uint64_t n)
{
  struct sl_hdd_config c = default_config ();
  c.ncq_depth = ncq_depth;
  c.ncq_max_wait_ns = (uint64_t) (max_wait_ms * MS);
  struct test_driver d;
  driver_init (&d, &c, queue_depth, SL_OP_READ, TEST_RANDOM, 4 * KIB, n);
  d.latencies = calloc (n, sizeof *d.latencies);
  test_driver_run (&d);             /* every request completed exactly once */
  assert_int_equal (d.stats->op[SL_OP_READ].count, n);
  assert_int_equal (d.stats->queue_depth, 0);
  print_message ("QD%u, ncq-depth %u, ncq-max-wait %.0f ms: %.1f IOPS, latency mean %.1f "
                 "max %.1f ms\n", queue_depth, ncq_depth, max_wait_ms, test_driver_iops (&d),
                 d.latency_sum_ns / n / MS, d.latency_max_ns / MS);
  return d;
}

static void
test_no_starvation (void **state)
{
  (void) state;
  /* pure SPTF (age limit out of reach) lets unlucky commands wait for seconds */
  struct test_driver sptf = run_random_reads (256, 60000, 256, 30000);
  assert_true (sptf.latency_max_ns > 4000 * MS);
  assert_true (test_driver_iops (&sptf) > 600);
  /* the age limit caps the wait: nothing waits much longer than the limit
   * plus one more command, and the queue still reorders */
  struct test_driver aged = run_random_reads (256, 3000, 256, 30000);
  assert_true (aged.latency_max_ns < 3000 * MS + 20 * MS);
  assert_true (test_driver_iops (&aged) > 0.95 * test_driver_iops (&sptf));
  /* defaults (500 ms) with a host queue in front of the 32-tag NCQ: age
   * counts from entering the NCQ, so the host queue does not age commands */
  struct test_driver hostq = run_random_reads (32, 500, 256, 30000);
  assert_true (hostq.latency_max_ns < 500 * MS + 224 * 16 * MS);
  assert_true (test_driver_iops (&hostq) > 350);
  driver_free (&sptf);
  driver_free (&aged);
  driver_free (&hostq);
}

/* -------------------------------------------------------- write cache -- */

static void
test_write_cache_on (void **state)
{
  (void) state;
  struct sl_hdd_config c = default_config ();
  c.write_cache = true;
  struct test_driver d;
  const uint64_t n = 1000;             /* 4 MB: well inside the 8 MB write share */
  driver_init (&d, &c, 1, SL_OP_WRITE, TEST_RANDOM, 4 * KIB, n);
  d.latencies = calloc (n, sizeof *d.latencies);
  test_driver_start (&d);             /* depth 1: the first request alone */
  while (d.completed < n && sl_engine_run_next (d.e))
    ;
  uint64_t cached = c.command_overhead_ns + (uint64_t) ceil (4096 / 600e6 * 1e9);
  for (uint64_t i = 0; i < n; i++)
    assert_int_equal (d.latencies[i], cached);
  assert_int_equal (test_model_counter (d.stats, "media_writes"), 0);
  assert_true (test_model_counter (d.stats, "dirty_bytes") > 0);

  /* FLUSH returns once everything dirty is on the media */
  struct sl_request flush;
  submit_one (d.e, &flush, SL_OP_FLUSH, 0, 0);
  assert_false (flush.completion_known);
  run_all (d.e);
  assert_true (flush.completion_known);
  assert_int_equal (test_model_counter (d.stats, "dirty_bytes"), 0);
  assert_true (test_model_counter (d.stats, "destages") > 0);
  assert_true (flush.completion_ns - flush.arrival_ns > 1 * MS);
  assert_true (d.dirty_max_bytes <= c.cache_bytes / 2);
  driver_free (&d);
}

/* Write-back starts at once above 3/4 of the write share, idle or not. */
static void
test_write_cache_high_water (void **state)
{
  (void) state;
  struct sl_hdd_config c = default_config ();
  c.write_cache = true;
  c.idle_destage_delay_ns = 10000 * 1000000ull;        /* never idle long enough */
  uint64_t share = c.cache_bytes / 2;
  struct test_driver d;
  const uint64_t below = share / 2 / 4096, above = share * 7 / 8 / 4096;
  driver_init (&d, &c, 1, SL_OP_WRITE, TEST_RANDOM, 4 * KIB, above);
  test_driver_start (&d);             /* depth 1: the first request alone */
  while (d.completed < below && sl_engine_run_next (d.e))
    ;
  assert_int_equal (test_model_counter (d.stats, "destages"), 0);
  while (d.completed < above && sl_engine_run_next (d.e))
    ;
  assert_true (test_model_counter (d.stats, "destages") > 0);
  assert_true (d.dirty_max_bytes > share * 3 / 4);
  assert_true (d.dirty_max_bytes <= share);
  driver_free (&d);
}

static void
test_write_cache_fills (void **state)
{
  (void) state;
  struct sl_hdd_config c = default_config ();
  c.write_cache = true;
  struct test_driver d;
  const uint64_t n = 20000;            /* 80 MB: ten times the write share */
  driver_init (&d, &c, 32, SL_OP_WRITE, TEST_RANDOM, 4 * KIB, n);
  d.latencies = calloc (n, sizeof *d.latencies);
  test_driver_run (&d);
  assert_true (d.dirty_max_bytes <= c.cache_bytes / 2);
  assert_true (d.dirty_max_bytes > c.cache_bytes / 2 - 64 * KIB);   /* it did fill */
  uint64_t waited = 0;
  for (uint64_t i = 0; i < n; i++)
    waited += d.latencies[i] > 10 * MS;
  assert_true (waited > n / 2);        /* past the first 8 MB, writes wait for room */
  double destage_iops = test_model_counter (d.stats, "destages") / (sl_engine_now_ns (d.e) / 1e9);
  print_message ("write-back of random 4K writes: %.0f destages/s\n", destage_iops);
  assert_true (destage_iops > 150);    /* SPTF over the dirty list beats QD1 random */
  driver_free (&d);
}

static void
test_write_cache_off (void **state)
{
  (void) state;
  struct sl_hdd_config c = default_config ();
  struct test_driver reads, writes;
  driver_init (&reads, &c, 1, SL_OP_READ, TEST_RANDOM, 4 * KIB, 5000);
  test_driver_run (&reads);
  driver_init (&writes, &c, 1, SL_OP_WRITE, TEST_RANDOM, 4 * KIB, 5000);   /* same offsets */
  test_driver_run (&writes);
  assert_int_equal (test_model_counter (writes.stats, "media_writes"), 5000);
  assert_int_equal (test_model_counter (writes.stats, "dirty_bytes"), 0);
  double read_seek = (double) test_model_counter (reads.stats, "seek_ns_total") / test_model_counter (reads.stats, "seeks");
  double write_seek = (double) test_model_counter (writes.stats, "seek_ns_total") / test_model_counter (writes.stats, "seeks");
  assert_int_equal (test_model_counter (reads.stats, "seeks"), test_model_counter (writes.stats, "seeks"));
  assert_within (write_seek - read_seek, 0.6 * MS, 0.005);
  double read_latency = reads.latency_sum_ns / 5000, write_latency = writes.latency_sum_ns / 5000;
  assert_true (write_latency > read_latency + 0.3 * MS);
  driver_free (&reads);
  driver_free (&writes);
}

static void
test_cache_hit_trim_flush (void **state)
{
  (void) state;
  struct sl_hdd_config c = default_config ();
  struct sl_device_stats *stats;
  struct sl_engine *e = new_engine (&c, &stats);
  struct sl_request r;
  uint64_t offset = 100 * 1000 * MIB;
  submit_one (e, &r, SL_OP_READ, offset, 4096);
  run_all (e);
  uint64_t miss = r.completion_ns - r.arrival_ns;
  assert_true (miss > c.command_overhead_ns + 10000);
  sl_engine_run_until (e, sl_engine_now_ns (e) + 50 * 1000000);
  submit_one (e, &r, SL_OP_READ, offset, 4096);
  run_all (e);
  uint64_t hit = c.command_overhead_ns + (uint64_t) ceil (4096 / 600e6 * 1e9);
  assert_int_equal (r.completion_ns - r.arrival_ns, hit);
  /* read-ahead filled the following sectors while the drive was idle */
  submit_one (e, &r, SL_OP_READ, offset + 64 * KIB, 4096);
  run_all (e);
  assert_int_equal (r.completion_ns - r.arrival_ns, hit);
  assert_int_equal (test_model_counter (stats, "cache_read_hits"), 2);
  assert_int_equal (test_model_counter (stats, "media_reads"), 1);
  /* a write (cache off) goes to the media and keeps the cached data valid */
  submit_one (e, &r, SL_OP_WRITE, offset, 4096);
  run_all (e);
  assert_int_equal (test_model_counter (stats, "media_writes"), 1);
  submit_one (e, &r, SL_OP_TRIM, offset, 1 * MIB);
  run_all (e);
  assert_int_equal (r.completion_ns - r.arrival_ns, c.command_overhead_ns);
  submit_one (e, &r, SL_OP_FLUSH, 0, 0);
  run_all (e);
  assert_int_equal (r.completion_ns - r.arrival_ns, c.command_overhead_ns);

  char *json = NULL;
  size_t json_bytes = 0;
  FILE *out = open_memstream (&json, &json_bytes);
  sl_engine_write_json (e, out);
  fclose (out);
  assert_non_null (strstr (json, "\"revolution_ns\": 6000000"));
  assert_non_null (strstr (json, "\"fitted_average_seek_ns\": 38"));
  assert_non_null (strstr (json, "\"media_reads\": 1"));
  assert_non_null (strstr (json, "\"dirty_bytes\": 0"));
  free (json);
  sl_engine_free (e);
  free (stats);
}

/* -------------------------------------------------------------- speed -- */

static void
measure_speed (unsigned depth)
{
  struct sl_hdd_config c = default_config ();
  struct test_driver d;
  const uint64_t n = 1000000;
  driver_init (&d, &c, depth, SL_OP_READ, TEST_RANDOM, 4 * KIB, n);
  d.lean = true;
  struct timespec t0, t1;
  clock_gettime (CLOCK_MONOTONIC, &t0);
  test_driver_run (&d);
  clock_gettime (CLOCK_MONOTONIC, &t1);
  double seconds = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
  print_message ("simulator speed, QD%u 4K random reads: %.2f million simulated I/Os per second\n",
                 depth, n / seconds / 1e6);
  driver_free (&d);
}

static void
test_speed_report (void **state)
{
  (void) state;
  measure_speed (1);
  measure_speed (32);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_params_table),
    cmocka_unit_test (test_validate_rejects),
    cmocka_unit_test (test_seek_fit_default),
    cmocka_unit_test (test_seek_fit_7200),
    cmocka_unit_test (test_seek_unachievable),
    cmocka_unit_test (test_small_disk),
    cmocka_unit_test (test_zones),
    cmocka_unit_test (test_rotation_random_qd1),
    cmocka_unit_test (test_sequential_qd1),
    cmocka_unit_test (test_qd1_random_iops),
    cmocka_unit_test (test_ncq_qd32),
    cmocka_unit_test (test_sptf_order),
    cmocka_unit_test (test_ncq_max_wait),
    cmocka_unit_test (test_no_starvation),
    cmocka_unit_test (test_write_cache_on),
    cmocka_unit_test (test_write_cache_high_water),
    cmocka_unit_test (test_write_cache_fills),
    cmocka_unit_test (test_write_cache_off),
    cmocka_unit_test (test_cache_hit_trim_flush),
    cmocka_unit_test (test_speed_report),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
