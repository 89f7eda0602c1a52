/* closed_loop.h — the cmocka tests' load generator: a closed loop of
 * `depth` requests against one engine in virtual time (each completion
 * issues the next, as fio's iodepth does), with what the model tests
 * measure (latencies, a write cache's dirty peak), and their shared
 * helpers (a deterministic random stream, a tolerance assert, a model
 * counter by name). */
#ifndef STORLAB_TEST_CLOSED_LOOP_H
#define STORLAB_TEST_CLOSED_LOOP_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/engine.h"
#include "core/stats.h"

/* value within relative (0.05: 5 %) of expected, or the test fails
 * saying both. */
#define assert_within(value, expected, relative)                               \
  do {                                                                         \
    double v_ = (value), x_ = (expected);                                      \
    if (!(fabs (v_ - x_) <= fabs (x_) * (relative)))                           \
      fail_msg ("%s = %.6g, expected %.6g within %.2f%%", #value, v_, x_,      \
                100.0 * (relative));                                           \
  } while (0)

/* xorshift64*: the same stream on every machine. */
uint64_t test_rng_next (uint64_t *state);

/* The model counter named name of a stats record (fails the test when the
 * model has none). */
uint64_t test_model_counter (const struct sl_device_stats *s, const char *name);

enum test_pattern { TEST_RANDOM, TEST_SEQUENTIAL };

struct test_driver {
  struct sl_engine *e;
  struct sl_device_stats *stats;       /* the engine's record (for sample_dirty) */
  struct sl_request *requests;
  uint8_t *in_flight;
  unsigned depth;
  uint64_t target, issued, completed;
  enum sl_op op;
  unsigned read_pct;                   /* > 0: a mix, this share reads (op ignored) */
  enum test_pattern pattern;
  uint64_t length_bytes;
  uint64_t region_start, region_bytes;
  uint64_t next_offset;                /* sequential, from region_start */
  uint64_t rng;
  bool drain;                          /* run on past the last completion (background work) */
  bool lean;                           /* speed runs: no per-completion figures */
  bool sample_dirty;                   /* record the "dirty_bytes" counter's peak */
  /* results */
  double latency_sum_ns;
  uint64_t latency_max_ns;
  uint64_t first_completion_ns, last_completion_ns;
  uint64_t dirty_max_bytes;
  uint64_t *latencies;                 /* per completion, when the test allocates it */
};

/* A driver of target requests of length_bytes over [0, region_bytes) of e. */
void test_driver_init (struct test_driver *d, struct sl_engine *e, uint64_t region_bytes,
                       unsigned depth, enum sl_op op, enum test_pattern pattern,
                       uint64_t length_bytes, uint64_t target, uint64_t seed);
/* Issues the first depth requests (the engine runs nothing yet). */
void test_driver_start (struct test_driver *d);
/* Issues depth requests and runs until all target requests completed (and,
 * with drain, until no event is left); every request completes once. */
void test_driver_run (struct test_driver *d);
double test_driver_iops (const struct test_driver *d);
/* Frees what the driver allocated and latencies; not the engine. */
void test_driver_free (struct test_driver *d);

#endif
