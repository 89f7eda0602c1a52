/* cluster_run.c — see cluster_run.h. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_run.h"
#include "core/units.h"

struct run
run_new (const char *spec)
{
  char err[1024] = "";
  struct sl_model model = sl_cluster_model_from_text (spec, "test.spec", 0, err, sizeof err);
  if (model.ops == NULL)
    fail_msg ("spec refused: %s", err);
  struct run r = { .stats = calloc (1, sizeof *r.stats), .c = sl_cluster_of (&model) };
  r.engine = sl_engine_new (SL_CLOCK_VIRTUAL, model, r.stats, "cluster");
  assert_non_null (r.engine);
  return r;
}

void
run_free (struct run *r)
{
  sl_engine_free (r->engine);
  free (r->stats);
}

static void
count_done (struct sl_engine *e, struct sl_request *r)
{
  (void) e;
  ++*(unsigned *) r->driver_data;
}

/* count requests of op, length bytes each at offset + i * stride, all at
 * once; runs until every one completed; returns the last completion. */
uint64_t
burst (struct run *r, enum sl_op op, unsigned count, uint64_t offset, uint64_t stride,
       uint64_t length)
{
  struct sl_request *req = calloc (count, sizeof *req);
  unsigned done = 0;
  for (unsigned i = 0; i < count; i++) {
    req[i] = (struct sl_request) { .op = op, .offset_bytes = offset + i * stride,
                                   .length_bytes = length, .on_complete = count_done,
                                   .driver_data = &done };
    sl_engine_submit (r->engine, &req[i]);
  }
  while (done < count && sl_engine_run_next (r->engine))
    ;
  assert_int_equal (done, count);
  uint64_t last = 0;
  for (unsigned i = 0; i < count; i++)
    last = sl_max_u64 (last, req[i].completion_ns);
  free (req);
  return last;
}

const struct cl_target_stats *
layer (struct run *r, const char *name)
{
  struct cl_target *t = cl_target_find (r->c, name);
  if (t == NULL)
    fail_msg ("no target %s", name);
  return &t->stats;
}

uint64_t
ops_of (struct run *r, const char *name, enum sl_op op)
{
  return layer (r, name)->op[op].count;
}

uint64_t
bytes_of (struct run *r, const char *name, enum sl_op op)
{
  return layer (r, name)->op[op].bytes;
}

void
assert_refused (const char *spec, const char *expected)
{
  char err[1024] = "";
  struct sl_model model = sl_cluster_model_from_text (spec, "bad.spec", 0, err, sizeof err);
  assert_null (model.ops);
  if (strstr (err, expected) == NULL)
    fail_msg ("error '%s' lacks '%s'", err, expected);
  assert_null (strchr (err, '\n'));
}
