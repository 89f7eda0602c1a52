/* test_raid_map.c — RAID layouts: every logical byte maps to the member
 * and offset the layout definitions give, parity rotates, and no two
 * logical chunks share a member location; extent lists behave. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "raid/raid.h"
#include "raid/raid_internal.h"

#define STRIPE 4096u

static struct sl_raid_layout
layout (uint32_t level, uint32_t members, uint64_t rows)
{
  return (struct sl_raid_layout) { level, members, STRIPE, rows * STRIPE };
}

/* Independent restatement of the layouts, chunk by chunk. */
static void
expected (uint32_t level, uint32_t n, uint64_t chunk, uint32_t *member, uint64_t *row,
          int *parity, int *q)
{
  *parity = *q = -1;
  switch (level) {
  case 0: *member = (uint32_t) (chunk % n); *row = chunk / n; break;
  case 1: *member = 0; *row = chunk; break;
  case 10: *member = 2 * (uint32_t) (chunk % (n / 2)); *row = chunk / (n / 2); break;
  case 5: {
    *row = chunk / (n - 1);
    *parity = (int) (n - 1 - *row % n);
    *member = (uint32_t) ((*parity + 1 + chunk % (n - 1)) % n);
    break;
  }
  case 6: {
    *row = chunk / (n - 2);
    *parity = (int) (n - 1 - *row % n);
    *q = (*parity + 1) % (int) n;
    *member = (uint32_t) ((*parity + 2 + chunk % (n - 2)) % n);
    break;
  }
  }
}

static void
check_level (uint32_t level, uint32_t n)
{
  const uint64_t rows = 24;
  struct sl_raid_layout l = layout (level, n, rows);
  uint64_t capacity = sl_raid_capacity_bytes (&l);
  assert_int_equal (capacity, rows * STRIPE * sl_raid_data_members (level, n));
  /* each (member, row) holds at most one logical chunk (or parity) */
  uint8_t *used = calloc (n * rows, 1);
  for (uint64_t offset = 0; offset < capacity; offset += 512) {
    struct sl_raid_location loc;
    sl_raid_map (&l, offset, &loc);
    uint64_t chunk = offset / STRIPE, row = 0;
    uint32_t member = 0;
    int parity, q;
    expected (level, n, chunk, &member, &row, &parity, &q);
    assert_int_equal (loc.member, member);
    assert_int_equal (loc.row, row);
    assert_int_equal (loc.parity_member, parity);
    assert_int_equal (loc.q_member, q);
    assert_int_equal (loc.member_offset_bytes, row * STRIPE + offset % STRIPE);
    assert_int_equal (loc.copies, level == 1 ? n : level == 10 ? 2 : 1);
    assert_true (loc.member + loc.copies <= n);
    if (parity >= 0) {
      assert_int_not_equal (loc.member, (uint32_t) parity);
      if (q >= 0)
        assert_int_not_equal (loc.member, (uint32_t) q);
    }
    if (offset % STRIPE == 0) {
      for (uint32_t c = 0; c < loc.copies; c++) {
        uint8_t *slot = &used[(loc.member + c) * rows + row];
        assert_int_equal (*slot, 0);
        *slot = 1;
      }
      if (parity >= 0) {
        used[(uint32_t) parity * rows + row] = 2;
        if (q >= 0)
          used[(uint32_t) q * rows + row] = 2;
      }
    }
  }
  /* every member location is used: data, copy or parity */
  for (uint64_t i = 0; i < n * rows; i++)
    assert_int_not_equal (used[i], 0);
  free (used);
}

static void test_map_raid0 (void **s) { (void) s; check_level (0, 3); check_level (0, 1); }
static void test_map_raid1 (void **s) { (void) s; check_level (1, 2); check_level (1, 3); }
static void test_map_raid10 (void **s) { (void) s; check_level (10, 4); check_level (10, 8); }
static void test_map_raid5 (void **s) { (void) s; check_level (5, 3); check_level (5, 5); }
static void test_map_raid6 (void **s) { (void) s; check_level (6, 4); check_level (6, 6); }

/* Parity rotates: over n consecutive rows every member holds P once. */
static void
test_parity_rotation (void **state)
{
  (void) state;
  for (uint32_t level = 5; level <= 6; level++) {
    uint32_t n = 5;
    struct sl_raid_layout l = layout (level, n, 100);
    uint32_t data = sl_raid_data_members (level, n);
    uint32_t p_count[8] = { 0 }, q_count[8] = { 0 };
    for (uint64_t row = 0; row < n; row++) {
      struct sl_raid_location loc;
      sl_raid_map (&l, row * data * STRIPE, &loc);
      assert_int_equal (loc.row, row);
      p_count[loc.parity_member]++;
      if (level == 6)
        q_count[loc.q_member]++;
    }
    for (uint32_t i = 0; i < n; i++) {
      assert_int_equal (p_count[i], 1);
      assert_int_equal (q_count[i], level == 6 ? 1 : 0);
    }
  }
  /* md left-symmetric, 4 disks: row 0 P on disk 3, data 0,1,2; row 1 P on 2, data 3,0,1 */
  struct sl_raid_layout l = layout (5, 4, 10);
  struct sl_raid_location loc;
  sl_raid_map (&l, 3 * STRIPE, &loc);
  assert_int_equal (loc.parity_member, 2);
  assert_int_equal (loc.member, 3);
  sl_raid_map (&l, 4 * STRIPE, &loc);
  assert_int_equal (loc.member, 0);
}

static uint32_t
pick_first (void *arg, uint32_t first, uint32_t copies, uint32_t mask)
{
  (void) arg;
  for (uint32_t i = first; i < first + copies; i++)
    if (mask & (1u << i))
      return i;
  return first;
}

static void
count_plan (const struct raid_plan *p, unsigned *reads, unsigned *writes)
{
  *reads = *writes = 0;
  for (size_t i = 0; i < p->count; i++) {
    if (p->io[i].op == SL_OP_READ) {
      (*reads)++;
      assert_int_equal (p->io[i].phase, 0);
    }
    else {
      (*writes)++;
      assert_int_equal (p->io[i].phase, 1);
    }
  }
}

/* Member I/O counts straight from the planner. */
static void
test_plans (void **state)
{
  (void) state;
  struct raid_member_view ok = { .rebuilding = -1 };
  struct raid_plan p = { 0 };
  unsigned r, w;
  /* RAID 5 small write: read old data + parity, write both */
  struct sl_raid_layout l5 = layout (5, 4, 100);
  assert_int_equal (raid_plan_write (&p, &l5, &ok, 5 * STRIPE + 512, 4096 - 512), 0);
  raid_plan_finish (&p);
  count_plan (&p, &r, &w);
  assert_int_equal (r, 2);
  assert_int_equal (w, 2);
  /* full row: no reads, every member written once */
  raid_plan_reset (&p);
  assert_int_equal (raid_plan_write (&p, &l5, &ok, 3 * STRIPE, 3 * STRIPE), 0);
  raid_plan_finish (&p);
  count_plan (&p, &r, &w);
  assert_int_equal (r, 0);
  assert_int_equal (w, 4);
  /* RAID 6 small write: 3 reads + 3 writes */
  struct sl_raid_layout l6 = layout (6, 6, 100);
  raid_plan_reset (&p);
  assert_int_equal (raid_plan_write (&p, &l6, &ok, 7 * STRIPE, 4096), 0);
  raid_plan_finish (&p);
  count_plan (&p, &r, &w);
  assert_int_equal (r, 3);
  assert_int_equal (w, 3);
  /* RAID 10 write: both copies; two rows on the same pair merge */
  struct sl_raid_layout l10 = layout (10, 4, 100);
  raid_plan_reset (&p);
  assert_int_equal (raid_plan_write (&p, &l10, &ok, 0, 4096), 0);
  raid_plan_finish (&p);
  count_plan (&p, &r, &w);
  assert_int_equal (w, 2);
  raid_plan_reset (&p);
  assert_int_equal (raid_plan_write (&p, &l10, &ok, 0, 4 * STRIPE), 0);
  raid_plan_finish (&p);
  count_plan (&p, &r, &w);
  assert_int_equal (w, 4);     /* members 0..3, each 2 strips merged */
  for (size_t i = 0; i < p.count; i++)
    assert_int_equal (p.io[i].length_bytes, 2 * STRIPE);
  /* degraded RAID 5 read of the failed member's chunk: read the 3 others */
  struct raid_member_view failed = { .failed_mask = 1u << 1, .rebuilding = -1 };
  struct sl_raid_location loc;
  sl_raid_map (&l5, 0, &loc);
  assert_int_equal (loc.member, 0);
  sl_raid_map (&l5, STRIPE, &loc);
  assert_int_equal (loc.member, 1);
  raid_plan_reset (&p);
  assert_int_equal (raid_plan_read (&p, &l5, &failed, pick_first, NULL, STRIPE, 4096), 0);
  raid_plan_finish (&p);
  count_plan (&p, &r, &w);
  assert_int_equal (r, 3);
  assert_int_equal (p.degraded_pieces, 1);
  for (size_t i = 0; i < p.count; i++)
    assert_int_not_equal (p.io[i].member, 1);
  /* a healthy member's chunk reads once */
  raid_plan_reset (&p);
  assert_int_equal (raid_plan_read (&p, &l5, &failed, pick_first, NULL, 0, 4096), 0);
  raid_plan_finish (&p);
  assert_int_equal (p.count, 1);
  /* RAID 10 rebuild of member 2 reads member 3 */
  raid_plan_reset (&p);
  struct raid_member_view rebuilding = { .rebuilding = 2, .rebuild_frontier_bytes = 0 };
  assert_int_equal (raid_plan_rebuild (&p, &l10, &rebuilding, pick_first, NULL, 2, 0, 8 * STRIPE), 0);
  raid_plan_finish (&p);
  assert_int_equal (p.count, 2);
  assert_int_equal (p.io[0].member, 3);
  assert_int_equal (p.io[0].op, SL_OP_READ);
  assert_int_equal (p.io[1].member, 2);
  assert_int_equal (p.io[1].op, SL_OP_WRITE);
  raid_plan_free (&p);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_map_raid0),
    cmocka_unit_test (test_map_raid1),
    cmocka_unit_test (test_map_raid10),
    cmocka_unit_test (test_map_raid5),
    cmocka_unit_test (test_map_raid6),
    cmocka_unit_test (test_parity_rotation),
    cmocka_unit_test (test_plans),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
