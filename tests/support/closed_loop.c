/* closed_loop.c — see closed_loop.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "closed_loop.h"

uint64_t
test_rng_next (uint64_t *s)
{
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ull;
}

uint64_t
test_model_counter (const struct sl_device_stats *s, const char *name)
{
  for (unsigned i = 0; i < 16; i++)
    if (strcmp (s->model_counter_name[i], name) == 0)
      return s->model_counter[i];
  fail_msg ("no model counter named %s", name);
  return 0;
}

static void issue (struct test_driver *d, struct sl_request *r);

static void
record (struct test_driver *d, const struct sl_request *r)
{
  uint64_t latency = r->completion_ns - r->arrival_ns;
  if (d->latencies)
    d->latencies[d->completed] = latency;
  d->latency_sum_ns += (double) latency;
  if (latency > d->latency_max_ns)
    d->latency_max_ns = latency;
  if (d->completed == 0)
    d->first_completion_ns = r->completion_ns;
  d->last_completion_ns = r->completion_ns;
  if (d->sample_dirty) {
    uint64_t dirty = test_model_counter (d->stats, "dirty_bytes");
    if (dirty > d->dirty_max_bytes)
      d->dirty_max_bytes = dirty;
  }
}

static void
complete (struct sl_engine *e, struct sl_request *r)
{
  struct test_driver *d = r->driver_data;
  size_t slot = (size_t) (r - d->requests);
  assert_true (d->in_flight[slot]);            /* completes exactly once */
  d->in_flight[slot] = 0;
  assert_true (r->completion_known);
  assert_true (r->completion_ns >= r->arrival_ns);
  assert_int_equal (r->completion_ns, sl_engine_now_ns (e));
  if (!d->lean)
    record (d, r);
  d->completed++;
  if (d->issued < d->target)
    issue (d, r);
}

static void
issue (struct test_driver *d, struct sl_request *r)
{
  memset (r, 0, sizeof *r);
  r->op = d->read_pct
    ? (test_rng_next (&d->rng) % 100 < d->read_pct ? SL_OP_READ : SL_OP_WRITE) : d->op;
  r->length_bytes = d->length_bytes;
  if (d->pattern == TEST_SEQUENTIAL) {
    r->offset_bytes = d->region_start + d->next_offset % d->region_bytes;
    d->next_offset += d->length_bytes;
  }
  else {
    uint64_t slots = d->region_bytes / d->length_bytes;
    r->offset_bytes = d->region_start + test_rng_next (&d->rng) % slots * d->length_bytes;
  }
  r->on_complete = complete;
  r->driver_data = d;
  d->in_flight[r - d->requests] = 1;
  d->issued++;
  sl_engine_submit (d->e, r);
}

void
test_driver_init (struct test_driver *d, struct sl_engine *e, uint64_t region_bytes,
                  unsigned depth, enum sl_op op, enum test_pattern pattern,
                  uint64_t length_bytes, uint64_t target, uint64_t seed)
{
  memset (d, 0, sizeof *d);
  d->e = e;
  d->depth = depth;
  d->requests = calloc (depth, sizeof *d->requests);
  d->in_flight = calloc (depth, 1);
  assert_non_null (d->requests);
  assert_non_null (d->in_flight);
  d->op = op;
  d->pattern = pattern;
  d->length_bytes = length_bytes;
  d->region_bytes = region_bytes;
  d->target = target;
  d->rng = seed;
}

void
test_driver_start (struct test_driver *d)
{
  for (unsigned i = 0; i < d->depth && d->issued < d->target; i++)
    issue (d, &d->requests[i]);
}

void
test_driver_run (struct test_driver *d)
{
  test_driver_start (d);
  while ((d->drain || d->completed < d->target) && sl_engine_run_next (d->e))
    ;
  assert_int_equal (d->completed, d->target);
  for (unsigned i = 0; i < d->depth; i++)
    assert_false (d->in_flight[i]);
}

double
test_driver_iops (const struct test_driver *d)
{
  return d->completed / (sl_engine_now_ns (d->e) / 1e9);
}

void
test_driver_free (struct test_driver *d)
{
  free (d->requests);
  free (d->in_flight);
  free (d->latencies);
  d->requests = NULL;
  d->in_flight = NULL;
  d->latencies = NULL;
}
