/* test_histogram.c — bucket layout, percentiles, moments and merging of
 * the log-linear histogram against independently computed values. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/histogram.h"

/* xorshift64*: deterministic values without libc rand() state */
static uint64_t
next_random (uint64_t *state)
{
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * UINT64_C (2685821657736338717);
}

static double
uniform_open01 (uint64_t *state)
{
  return ((double) (next_random (state) >> 11) + 0.5) / 9007199254740992.0;
}

/* Index by the header's description, with a plain loop instead of clz. */
static unsigned
reference_index (uint64_t v)
{
  if (v < 128)
    return (unsigned) v;
  unsigned e = 0;
  while ((v >> e) > 1)
    e++;
  unsigned mantissa = (unsigned) ((v >> (e - 7)) - 128);
  return (e - 7 + 1) * 128 + mantissa;
}

static void
check_value (uint64_t v)
{
  unsigned index = sl_histogram_bucket_index (v);
  assert_int_equal (index, reference_index (v));
  assert_true (index < SL_HIST_BUCKETS);
  uint64_t lowest = sl_histogram_bucket_lowest (index);
  uint64_t highest = sl_histogram_bucket_highest (index);
  assert_true (lowest <= v);
  assert_true (v <= highest);
  assert_int_equal (sl_histogram_bucket_index (lowest), index);
  assert_int_equal (sl_histogram_bucket_index (highest), index);
}

static void
test_exact_below_128 (void **state)
{
  (void) state;
  for (uint64_t v = 0; v < 128; v++) {
    assert_int_equal (sl_histogram_bucket_index (v), v);
    assert_int_equal (sl_histogram_bucket_lowest ((unsigned) v), v);
    assert_int_equal (sl_histogram_bucket_highest ((unsigned) v), v);
    struct sl_histogram h;
    sl_histogram_init (&h);
    sl_histogram_record (&h, v);
    sl_histogram_record (&h, v);
    assert_int_equal (sl_histogram_percentile (&h, 50.0), v);
  }
}

static void
test_known_indices (void **state)
{
  (void) state;
  assert_int_equal (sl_histogram_bucket_index (128), 128);
  assert_int_equal (sl_histogram_bucket_index (255), 255);
  assert_int_equal (sl_histogram_bucket_index (256), 256);
  assert_int_equal (sl_histogram_bucket_index (257), 256);
  assert_int_equal (sl_histogram_bucket_index (258), 257);
  assert_int_equal (sl_histogram_bucket_lowest (256), 256);
  assert_int_equal (sl_histogram_bucket_highest (256), 257);
  /* 2000 = 250 << 3: octave 2^10, group 4, mantissa 122 */
  assert_int_equal (sl_histogram_bucket_index (2000), 4 * 128 + 122);
  assert_int_equal (sl_histogram_bucket_lowest (4 * 128 + 122), 2000);
  assert_int_equal (sl_histogram_bucket_highest (4 * 128 + 122), 2007);
  assert_int_equal (sl_histogram_bucket_index (UINT64_MAX), SL_HIST_BUCKETS - 1);
  assert_int_equal (sl_histogram_bucket_index (UINT64_C (1) << 63), 57 * 128);
  assert_int_equal (sl_histogram_bucket_lowest (57 * 128), UINT64_C (1) << 63);
  assert_int_equal (sl_histogram_bucket_highest (SL_HIST_BUCKETS - 1), UINT64_MAX);
  assert_int_equal (sl_histogram_bucket_lowest (SL_HIST_BUCKETS - 1), UINT64_C (0xFF) << 56);
}

static void
test_round_trip (void **state)
{
  (void) state;
  for (unsigned bit = 0; bit < 64; bit++) {
    uint64_t p = UINT64_C (1) << bit;
    check_value (p);
    check_value (p - 1);
    check_value (p + 1);
    check_value (p | (p >> 1));
    check_value (p | (p - 1));
  }
  check_value (UINT64_MAX);
  check_value (UINT64_MAX - 1);
  check_value ((UINT64_C (1) << 63) + 12345);
  uint64_t rng = 0x9E3779B97F4A7C15u;
  for (int i = 0; i < 200000; i++) {
    uint64_t v = next_random (&rng);
    check_value (v >> (v & 63));
  }
}

static void
test_buckets_tile_and_width (void **state)
{
  (void) state;
  assert_int_equal (sl_histogram_bucket_lowest (0), 0);
  for (unsigned i = 0; i + 1 < SL_HIST_BUCKETS; i++)
    assert_int_equal (sl_histogram_bucket_highest (i) + 1, sl_histogram_bucket_lowest (i + 1));
  for (unsigned i = 128; i < SL_HIST_BUCKETS; i++) {
    uint64_t lowest = sl_histogram_bucket_lowest (i);
    uint64_t width = sl_histogram_bucket_highest (i) - lowest + 1;   /* wraps to 0 nowhere: < 2^57 */
    assert_true ((double) width / (double) lowest <= 1.0 / 128.0);
  }
}

static int
compare_u64 (const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
  return x < y ? -1 : x > y;
}

#define SAMPLE_COUNT 100000

/* log-normal latencies around 100 us (sigma 1: 1 us .. 10 ms) */
static uint64_t *
lognormal_samples (uint64_t seed)
{
  uint64_t *values = malloc (SAMPLE_COUNT * sizeof *values);
  assert_non_null (values);
  uint64_t rng = seed;
  for (int i = 0; i < SAMPLE_COUNT; i++) {
    double u1 = uniform_open01 (&rng), u2 = uniform_open01 (&rng);
    double z = sqrt (-2.0 * log (u1)) * cos (2.0 * M_PI * u2);
    values[i] = (uint64_t) exp (log (100000.0) + z);
  }
  return values;
}

static void
test_percentiles_vs_sorted (void **state)
{
  (void) state;
  uint64_t *values = lognormal_samples (42);
  struct sl_histogram *h = malloc (sizeof *h);
  assert_non_null (h);
  sl_histogram_init (h);
  for (int i = 0; i < SAMPLE_COUNT; i++)
    sl_histogram_record (h, values[i]);
  qsort (values, SAMPLE_COUNT, sizeof *values, compare_u64);

  /* percentiles in thousandths of a percent: integer rank arithmetic */
  static const uint64_t pct_milli[] = { 1, 1000, 10000, 25000, 50000, 75000, 90000,
                                        99000, 99900, 99990, 99999 };
  for (size_t i = 0; i < sizeof pct_milli / sizeof pct_milli[0]; i++) {
    uint64_t rank = (pct_milli[i] * SAMPLE_COUNT + 99999) / 100000;
    if (rank == 0)
      rank = 1;
    uint64_t exact = values[rank - 1];
    uint64_t got = sl_histogram_percentile (h, (double) pct_milli[i] / 1000.0);
    double error = fabs ((double) got - (double) exact) / (double) exact;
    if (error >= 0.005)
      fail_msg ("p%.3f: got %llu, exact %llu", (double) pct_milli[i] / 1000.0,
                (unsigned long long) got, (unsigned long long) exact);
  }
  assert_int_equal (sl_histogram_percentile (h, 0.0), values[0]);
  assert_int_equal (sl_histogram_percentile (h, 100.0), values[SAMPLE_COUNT - 1]);
  assert_int_equal (h->min_value, values[0]);
  assert_int_equal (h->max_value, values[SAMPLE_COUNT - 1]);
  assert_int_equal (h->count, SAMPLE_COUNT);
  free (h);
  free (values);
}

static void
test_percentile_small_hand_cases (void **state)
{
  (void) state;
  struct sl_histogram h;
  sl_histogram_init (&h);
  for (uint64_t v = 1; v <= 4; v++)
    sl_histogram_record (&h, v);
  assert_int_equal (sl_histogram_percentile (&h, 25.0), 1);
  assert_int_equal (sl_histogram_percentile (&h, 25.1), 2);
  assert_int_equal (sl_histogram_percentile (&h, 50.0), 2);
  assert_int_equal (sl_histogram_percentile (&h, 75.0), 3);
  assert_int_equal (sl_histogram_percentile (&h, 99.0), 4);
  assert_int_equal (sl_histogram_percentile (&h, 100.0), 4);
  assert_int_equal (sl_histogram_percentile (&h, 0.0), 1);

  /* 99.9 % of 1000 values is rank 999 exactly, not 1000 by rounding */
  sl_histogram_init (&h);
  for (uint64_t v = 1; v <= 1000; v++)
    sl_histogram_record (&h, v < 1000 ? 10 : 100);
  assert_int_equal (sl_histogram_percentile (&h, 99.9), 10);
  assert_int_equal (sl_histogram_percentile (&h, 99.95), 100);

  /* a lone value is reported exactly: the midpoint is clamped to [min, max] */
  sl_histogram_init (&h);
  sl_histogram_record (&h, 1000001);
  assert_int_equal (sl_histogram_percentile (&h, 50.0), 1000001);
  assert_int_equal (sl_histogram_percentile (&h, 99.99), 1000001);

  /* midpoint of bucket [2000, 2007] when not clamped */
  sl_histogram_init (&h);
  sl_histogram_record (&h, 2000);
  sl_histogram_record (&h, 2001);
  sl_histogram_record (&h, 2007);
  sl_histogram_record (&h, 5000);
  assert_int_equal (sl_histogram_percentile (&h, 50.0), 2003);
}

static void
test_mean_stddev (void **state)
{
  (void) state;
  uint64_t *values = lognormal_samples (7);
  struct sl_histogram *h = malloc (sizeof *h);
  assert_non_null (h);
  sl_histogram_init (h);
  long double sum = 0;
  for (int i = 0; i < SAMPLE_COUNT; i++) {
    sl_histogram_record (h, values[i]);
    sum += values[i];
  }
  long double mean = sum / SAMPLE_COUNT, squares = 0;
  for (int i = 0; i < SAMPLE_COUNT; i++)
    squares += ((long double) values[i] - mean) * ((long double) values[i] - mean);
  double stddev = (double) sqrtl (squares / SAMPLE_COUNT);
  assert_true (fabs (sl_histogram_mean (h) - (double) mean) <= 1e-9 * (double) mean);
  assert_true (fabs (sl_histogram_stddev (h) - stddev) <= 1e-6 * stddev);

  sl_histogram_init (h);
  for (uint64_t v = 1; v <= 4; v++)
    sl_histogram_record (h, v);
  assert_true (fabs (sl_histogram_mean (h) - 2.5) < 1e-12);
  assert_true (fabs (sl_histogram_stddev (h) - sqrt (1.25)) < 1e-12);

  /* identical values: variance rounds around 0, never NaN; the sum of
   * squares loses ~1e-16 of v^2, so the error scales with the value */
  sl_histogram_init (h);
  for (int i = 0; i < 1000; i++)
    sl_histogram_record (h, 1000003);
  assert_true (sl_histogram_stddev (h) < 1.0);
  sl_histogram_init (h);
  for (int i = 0; i < 1000; i++)
    sl_histogram_record (h, 123456789012u);
  double constant_stddev = sl_histogram_stddev (h);
  assert_false (isnan (constant_stddev));
  assert_true (constant_stddev <= 1e-6 * 123456789012.0);
  free (h);
  free (values);
}

static void
test_merge_equals_single (void **state)
{
  (void) state;
  uint64_t *values = lognormal_samples (99);
  struct sl_histogram *all = malloc (sizeof *all), *a = malloc (sizeof *a),
    *b = malloc (sizeof *b), *empty = malloc (sizeof *empty);
  assert_true (all && a && b && empty);
  sl_histogram_init (all);
  sl_histogram_init (a);
  sl_histogram_init (b);
  sl_histogram_init (empty);
  for (int i = 0; i < SAMPLE_COUNT; i++) {
    sl_histogram_record (all, values[i]);
    sl_histogram_record (i % 3 ? a : b, values[i]);
  }
  sl_histogram_merge (a, b);
  sl_histogram_merge (a, empty);
  assert_int_equal (a->count, all->count);
  assert_int_equal (a->min_value, all->min_value);
  assert_int_equal (a->max_value, all->max_value);
  assert_memory_equal (a->buckets, all->buckets, sizeof all->buckets);
  assert_true (fabs (a->sum - all->sum) <= 1e-12 * all->sum);
  assert_true (fabs (a->sum_squares - all->sum_squares) <= 1e-12 * all->sum_squares);
  assert_int_equal (sl_histogram_percentile (a, 99.0), sl_histogram_percentile (all, 99.0));

  sl_histogram_merge (empty, all);      /* into an empty one: min taken from src */
  assert_int_equal (empty->min_value, all->min_value);
  assert_int_equal (empty->count, all->count);
  free (all);
  free (a);
  free (b);
  free (empty);
  free (values);
}

static void
test_empty (void **state)
{
  (void) state;
  struct sl_histogram h;
  sl_histogram_init (&h);
  assert_int_equal (h.count, 0);
  assert_int_equal (h.min_value, UINT64_MAX);
  assert_int_equal (h.max_value, 0);
  assert_int_equal (sl_histogram_percentile (&h, 0.0), 0);
  assert_int_equal (sl_histogram_percentile (&h, 50.0), 0);
  assert_int_equal (sl_histogram_percentile (&h, 100.0), 0);
  assert_true (sl_histogram_mean (&h) == 0.0);
  assert_true (sl_histogram_stddev (&h) == 0.0);
}

static void
test_extreme_values (void **state)
{
  (void) state;
  struct sl_histogram h;
  sl_histogram_init (&h);
  sl_histogram_record (&h, 0);
  sl_histogram_record (&h, UINT64_MAX);
  assert_int_equal (h.buckets[0], 1);
  assert_int_equal (h.buckets[SL_HIST_BUCKETS - 1], 1);
  assert_int_equal (sl_histogram_percentile (&h, 50.0), 0);
  /* the top bucket's midpoint, below the clamp */
  assert_int_equal (sl_histogram_percentile (&h, 99.0), UINT64_C (0xFF7FFFFFFFFFFFFF));
  assert_int_equal (sl_histogram_percentile (&h, 100.0), UINT64_MAX);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_exact_below_128),
    cmocka_unit_test (test_known_indices),
    cmocka_unit_test (test_round_trip),
    cmocka_unit_test (test_buckets_tile_and_width),
    cmocka_unit_test (test_percentiles_vs_sorted),
    cmocka_unit_test (test_percentile_small_hand_cases),
    cmocka_unit_test (test_mean_stddev),
    cmocka_unit_test (test_merge_equals_single),
    cmocka_unit_test (test_empty),
    cmocka_unit_test (test_extreme_values),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
