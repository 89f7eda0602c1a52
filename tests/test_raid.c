/* test_raid.c — the RAID controller model in virtual time: member I/O
 * counts per level, destage order, battery fall-back to write-through,
 * degraded reads, rebuild progress, power-cut losses and bad input.
 * A closed-loop driver keeps a fixed number of random I/Os outstanding. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/kinds.h"
#include "core/engine.h"
#include "device/device.h"
#include "raid/raid.h"
#include "test_device_builder.h"
#include "core/units.h"

#define S 1000000000ull

/* ---------------------------------------------------------- driver -- */

struct driver {
  struct sl_engine *e;
  struct sl_device_stats *stats;
  uint64_t rng;
  uint64_t span_bytes, block_bytes;
  unsigned read_percent;
  bool sequential;
  uint64_t next_offset;
  uint64_t stop_ns;
  uint64_t count[2], latency_ns[2];    /* read, write */
  struct sl_request *req;
};

static uint64_t
next_random (struct driver *d)
{
  d->rng ^= d->rng << 13;
  d->rng ^= d->rng >> 7;
  d->rng ^= d->rng << 17;
  return d->rng;
}

static void issue (struct driver *d, struct sl_request *r);

static void
done (struct sl_engine *e, struct sl_request *r)
{
  struct driver *d = r->driver_data;
  d->count[r->op == SL_OP_WRITE]++;
  d->latency_ns[r->op == SL_OP_WRITE] += r->completion_ns - r->arrival_ns;
  if (sl_engine_now_ns (e) < d->stop_ns)
    issue (d, r);
}

static void
issue (struct driver *d, struct sl_request *r)
{
  memset (r, 0, sizeof *r);
  r->op = next_random (d) % 100 < d->read_percent ? SL_OP_READ : SL_OP_WRITE;
  if (d->sequential) {
    r->offset_bytes = d->next_offset;
    d->next_offset = (d->next_offset + d->block_bytes) % d->span_bytes;
  }
  else
    r->offset_bytes = next_random (d) % (d->span_bytes / d->block_bytes) * d->block_bytes;
  r->length_bytes = d->block_bytes;
  r->on_complete = done;
  r->driver_data = d;
  sl_engine_submit (d->e, r);
}

static struct driver *
driver_new (const char *params)
{
  struct driver *d = calloc (1, sizeof *d);
  d->stats = calloc (1, sizeof *d->stats);
  d->e = test_engine_new ("raid", params, d->stats);
  d->rng = 88172645463325252ull;
  d->span_bytes = sl_engine_model (d->e)->capacity_bytes;
  d->block_bytes = 8 * KIB;
  return d;
}

static void
driver_free (struct driver *d)
{
  sl_engine_free (d->e);
  free (d->req);
  free (d->stats);
  free (d);
}

/* Runs depth outstanding I/Os until stop_ns, then lets them finish. */
static void
run (struct driver *d, unsigned depth, uint64_t duration_ns)
{
  d->stop_ns = sl_engine_now_ns (d->e) + duration_ns;
  free (d->req);
  d->req = calloc (depth, sizeof *d->req);
  for (unsigned i = 0; i < depth; i++)
    issue (d, &d->req[i]);
  while (sl_engine_now_ns (d->e) < d->stop_ns && sl_engine_run_next (d->e))
    ;
  /* drain: run until every front request is back */
  while (d->stats->queue_depth > 0 && sl_engine_run_next (d->e))
    ;
}

static void
reset_counts (struct driver *d)
{
  memset (d->count, 0, sizeof d->count);
  memset (d->latency_ns, 0, sizeof d->latency_ns);
}

static uint64_t
member_ops (struct driver *d, enum sl_op op)
{
  uint64_t total = 0;
  struct sl_model *m = sl_engine_model (d->e);
  for (unsigned i = 0; i < sl_raid_member_count (m); i++)
    total += sl_raid_member_stats (m, i)->op[op].count;
  return total;
}

static double
mean_ms (const struct driver *d, int write)
{
  return d->count[write] ? d->latency_ns[write] / 1e6 / d->count[write] : 0;
}

/* ------------------------------------------------------------ tests -- */

static void
test_raid5_small_and_full_stripe_writes (void **state)
{
  (void) state;
  struct driver *d = driver_new ("level=5 members=5 stripe-size=64k member-preset=sas10k-300g "
                                 "member-size=1G cache-policy=write-through");
  d->read_percent = 0;
  d->block_bytes = 4 * KIB;
  run (d, 8, S);
  uint64_t writes = d->count[1];
  assert_true (writes > 100);
  assert_int_equal (member_ops (d, SL_OP_READ), 2 * writes);
  assert_int_equal (member_ops (d, SL_OP_WRITE), 2 * writes);
  driver_free (d);

  /* full rows (4 data x 64k), sequential: no reads, 5 writes per row */
  d = driver_new ("level=5 members=5 stripe-size=64k member-preset=sas10k-300g "
                  "member-size=1G cache-policy=write-through");
  d->read_percent = 0;
  d->sequential = true;
  d->block_bytes = 256 * KIB;
  run (d, 1, S);
  assert_true (d->count[1] > 10);
  assert_int_equal (member_ops (d, SL_OP_READ), 0);
  assert_int_equal (member_ops (d, SL_OP_WRITE), 5 * d->count[1]);
  driver_free (d);
}

static void
test_raid10_writes_twice (void **state)
{
  (void) state;
  struct driver *d = driver_new ("preset=vsa-raid10-8x-sas10k member-size=1G "
                                 "cache-policy=write-through");
  d->read_percent = 50;
  run (d, 16, S);
  assert_int_equal (member_ops (d, SL_OP_WRITE), 2 * d->count[1]);
  assert_int_equal (member_ops (d, SL_OP_READ), d->count[0]);
  /* reads balanced over the mirrors: every member served some */
  struct sl_model *m = sl_engine_model (d->e);
  for (unsigned i = 0; i < 8; i++)
    assert_true (sl_raid_member_stats (m, i)->op[SL_OP_READ].count > d->count[0] / 32);
  driver_free (d);
}

struct trace {
  uint64_t last_offset[8];
  unsigned writes, out_of_order;
};

static void
trace_fn (void *arg, uint64_t now, unsigned member, enum sl_op op, uint64_t offset,
          uint64_t length)
{
  (void) now;
  (void) length;
  struct trace *t = arg;
  if (op != SL_OP_WRITE)
    return;
  t->writes++;
  if (offset < t->last_offset[member])
    t->out_of_order++;
  t->last_offset[member] = offset;
}

/* Dirty data goes out in one ascending sweep per member when drained. */
static void
test_destage_order (void **state)
{
  (void) state;
  struct driver *d = driver_new ("preset=vsa-raid10-8x-sas10k member-size=1G "
                                 "destage-depth=8");
  d->read_percent = 0;
  d->block_bytes = 4 * KIB;
  run (d, 1, 20000000);        /* 20 ms of cached writes: well below the watermark */
  uint64_t cached = d->count[1];
  assert_true (cached > 100);
  struct sl_raid_status st;
  char err[256];
  assert_int_equal (sl_raid_control_status (d->e, &st, err, sizeof err), 0);
  assert_int_equal (st.destaged_bytes, 0);
  struct trace t = { { 0 }, 0, 0 };
  sl_raid_set_trace (sl_engine_model (d->e), trace_fn, &t);
  assert_int_equal (sl_raid_control_policy (d->e, SL_RAID_WRITE_THROUGH, err, sizeof err), 0);
  while (sl_engine_run_next (d->e))
    ;
  assert_int_equal (sl_raid_control_status (d->e, &st, err, sizeof err), 0);
  assert_int_equal (st.dirty_bytes, 0);
  assert_true (t.writes > 0 && t.writes <= 2 * cached);
  assert_int_equal (t.out_of_order, 0);
  driver_free (d);
}

/* The seed scenario: battery fails mid-run, write latency rises >= 5x,
 * IOPS drop; battery back: recovers.  Member IOPS = reads + 2 x writes. */
static void
test_battery_failure (void **state)
{
  (void) state;
  struct driver *d = driver_new ("preset=vsa-raid10-8x-sas10k");
  d->read_percent = 50;
  run (d, 32, 5 * S);
  double ok_write_ms = mean_ms (d, 1);
  double ok_iops = (d->count[0] + d->count[1]) / 5.0;
  uint64_t member_before = member_ops (d, SL_OP_READ) + member_ops (d, SL_OP_WRITE);
  reset_counts (d);
  char err[256];
  assert_int_equal (sl_raid_control_battery (d->e, SL_RAID_BATTERY_FAILED, err, sizeof err), 0);
  run (d, 32, 1 * S);
  reset_counts (d);
  run (d, 32, 5 * S);
  double failed_write_ms = mean_ms (d, 1);
  double failed_iops = (d->count[0] + d->count[1]) / 5.0;
  /* write-through: every member I/O is a front read or a mirrored write */
  uint64_t member_after = member_ops (d, SL_OP_READ) + member_ops (d, SL_OP_WRITE);
  (void) member_before;
  (void) member_after;
  print_message ("write latency ok %.3f ms, battery failed %.3f ms; IOPS %.0f -> %.0f\n",
                 ok_write_ms, failed_write_ms, ok_iops, failed_iops);
  assert_true (failed_write_ms >= 5 * ok_write_ms);
  assert_true (failed_iops < ok_iops);
  reset_counts (d);
  assert_int_equal (sl_raid_control_battery (d->e, SL_RAID_BATTERY_OK, err, sizeof err), 0);
  run (d, 32, 5 * S);
  print_message ("battery ok again: write latency %.3f ms\n", mean_ms (d, 1));
  assert_true (mean_ms (d, 1) * 5 <= failed_write_ms);
  struct sl_raid_event ev[16];
  size_t n = sl_raid_control_events (d->e, 0, ev, 16);
  bool saw_failed = false, saw_through = false;
  for (size_t i = 0; i < n; i++) {
    saw_failed |= strcmp (ev[i].what, "battery set failed") == 0 && ev[i].time_ns >= 5 * S;
    saw_through |= strcmp (ev[i].what, "cache now write-through") == 0;
  }
  assert_true (saw_failed && saw_through);
  driver_free (d);
}

static void
test_degraded_reads (void **state)
{
  (void) state;
  struct driver *d = driver_new ("level=5 members=4 stripe-size=64k member-preset=sas10k-300g "
                                 "member-size=1G");
  char err[256];
  assert_int_equal (sl_raid_control_fail_member (d->e, 1, err, sizeof err), 0);
  /* a second failure would lose data: refused, array unharmed */
  assert_int_equal (sl_raid_control_fail_member (d->e, 2, err, sizeof err), -1);
  assert_non_null (strstr (err, "member 2"));
  d->read_percent = 100;
  d->block_bytes = 4 * KIB;
  run (d, 8, S);
  struct sl_model *m = sl_engine_model (d->e);
  assert_int_equal (sl_raid_member_stats (m, 1)->op[SL_OP_READ].count, 0);
  /* a quarter of the chunks live on member 1: each costs 3 reads */
  double per_read = (double) member_ops (d, SL_OP_READ) / d->count[0];
  assert_true (per_read > 1.35 && per_read < 1.65);
  driver_free (d);
}

static void
test_rebuild_progress (void **state)
{
  (void) state;
  struct driver *d = driver_new ("preset=vsa-raid10-8x-sas10k member-size=64M "
                                 "rebuild-rate-mb-s=50");
  char err[256];
  assert_int_equal (sl_raid_control_fail_member (d->e, 2, err, sizeof err), 0);
  assert_int_equal (sl_raid_control_fail_member (d->e, 3, err, sizeof err), -1);
  assert_int_equal (sl_raid_control_replace_member (d->e, 2, err, sizeof err), 0);
  d->read_percent = 70;
  run (d, 4, S / 2);
  struct sl_raid_status st;
  assert_int_equal (sl_raid_control_status (d->e, &st, err, sizeof err), 0);
  assert_int_equal (st.member_state[2], SL_RAID_MEMBER_REBUILDING);
  double done_mb = st.rebuild_done_bytes / 1e6;
  print_message ("rebuilt %.1f MB in 0.5 s at 50 MB/s under load\n", done_mb);
  assert_true (done_mb > 10 && done_mb <= 26);
  run (d, 4, 2 * S);
  assert_int_equal (sl_raid_control_status (d->e, &st, err, sizeof err), 0);
  assert_int_equal (st.member_state[2], SL_RAID_MEMBER_OK);
  driver_free (d);
}

static void
test_power_cut (void **state)
{
  (void) state;
  char err[256];
  struct sl_raid_power_loss loss;
  /* battery ok: nothing lost */
  struct driver *d = driver_new ("preset=vsa-raid10-8x-sas10k member-size=1G");
  d->read_percent = 0;
  run (d, 1, 10000000);
  assert_int_equal (sl_raid_control_power_cut (d->e, &loss, err, sizeof err), 0);
  assert_true (loss.cache_preserved);
  assert_int_equal (loss.lost_bytes, 0);
  sl_raid_power_loss_free (&loss);
  driver_free (d);
  /* forced write-back, battery failed: exactly the dirty data */
  d = driver_new ("preset=vsa-raid10-8x-sas10k member-size=1G cache-policy=forced-write-back "
                  "battery=failed");
  d->read_percent = 0;
  d->sequential = true;
  d->block_bytes = 4 * KIB;
  run (d, 1, 10000000);
  struct sl_raid_status st;
  assert_int_equal (sl_raid_control_status (d->e, &st, err, sizeof err), 0);
  assert_true (st.dirty_bytes > 0);
  assert_int_equal (st.dirty_bytes, d->count[1] * 4 * KIB);
  assert_int_equal (sl_raid_control_power_cut (d->e, &loss, err, sizeof err), 0);
  assert_false (loss.cache_preserved);
  assert_int_equal (loss.lost_bytes, st.dirty_bytes);
  assert_int_equal (loss.extent_count, 1);     /* one sequential run */
  assert_int_equal (loss.extents[0].offset_bytes, 0);
  assert_int_equal (loss.extents[0].length_bytes, st.dirty_bytes);
  sl_raid_power_loss_free (&loss);
  assert_int_equal (sl_raid_control_status (d->e, &st, err, sizeof err), 0);
  assert_int_equal (st.dirty_bytes, 0);
  driver_free (d);
}

static void
expect_error (const char *key, const char *value, const char *needle)
{
  const struct sl_device_kind *kind = sl_device_kind_find ("raid");
  struct sl_device_builder b;
  sl_device_builder_init (&b, kind);
  char err[1024] = "";
  void *config = calloc (1, kind->config_bytes);
  int r = sl_device_builder_add (&b, key, value, err, sizeof err);
  if (r == 0)
    r = sl_device_builder_build (&b, config, err, sizeof err);
  assert_int_equal (r, -1);
  if (strstr (err, needle) == NULL)
    fail_msg ("%s=%s: error '%s' lacks '%s'", key, value, err, needle);
  sl_device_builder_free (&b);
  free (config);
}

static void
test_bad_input (void **state)
{
  (void) state;
  expect_error ("level", "7", "level=7: unknown RAID level");
  expect_error ("stripe-size", "96k", "stripe-size=98304: must be a power of two");
  expect_error ("members", "5", "members=5: RAID 10 needs an even number");
  expect_error ("member-preset", "no-such-disk", "member-preset=no-such-disk: unknown member preset");
  expect_error ("cache-policy", "sometimes", "cache-policy=sometimes: unknown policy");
  expect_error ("battery", "charged", "battery=charged: unknown battery state");
  /* RAID 5 over 2 members: level and members given together */
  const struct sl_device_kind *kind = sl_device_kind_find ("raid");
  struct sl_device_builder b;
  sl_device_builder_init (&b, kind);
  char err[512];
  assert_int_equal (sl_device_builder_add (&b, "level", "5", err, sizeof err), 0);
  assert_int_equal (sl_device_builder_add (&b, "members", "2", err, sizeof err), 0);
  void *config = calloc (1, kind->config_bytes);
  assert_int_equal (sl_device_builder_build (&b, config, err, sizeof err), -1);
  assert_non_null (strstr (err, "members=2: RAID 5 needs 3"));
  sl_device_builder_free (&b);
  free (config);
  /* control of a device that is not a raid */
  struct sl_device_stats *stats = calloc (1, sizeof *stats);
  struct sl_engine *e = sl_engine_new (SL_CLOCK_VIRTUAL, sl_fixed_model_new (1 << 20, 1000),
                                       stats, "plain");
  assert_int_equal (sl_raid_control_battery (e, SL_RAID_BATTERY_FAILED, err, sizeof err), -1);
  assert_non_null (strstr (err, "not a raid device"));
  sl_engine_free (e);
  free (stats);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_raid5_small_and_full_stripe_writes),
    cmocka_unit_test (test_raid10_writes_twice),
    cmocka_unit_test (test_destage_order),
    cmocka_unit_test (test_battery_failure),
    cmocka_unit_test (test_degraded_reads),
    cmocka_unit_test (test_rebuild_progress),
    cmocka_unit_test (test_power_cut),
    cmocka_unit_test (test_bad_input),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
