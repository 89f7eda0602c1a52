/* test_extents.c — the sorted byte-range list behind the write caches
 * (core/extents.c): merging, splitting, taking, and what a cache does with
 * it (the HDD destages the front of one extent at a time). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/extents.h"

static void
test_merge_split_take (void **state)
{
  (void) state;
  struct sl_extents x = { 0 }, out = { 0 };
  assert_int_equal (sl_extents_add (&x, 100, 200), 0);
  assert_int_equal (sl_extents_add (&x, 300, 400), 0);
  assert_int_equal (sl_extents_add (&x, 200, 250), 0);   /* touches: merges */
  assert_int_equal (x.count, 2);
  assert_int_equal (x.bytes, 250);
  assert_true (sl_extents_covers (&x, 120, 240));
  assert_false (sl_extents_covers (&x, 120, 260));
  assert_int_equal (sl_extents_remove (&x, 150, 160), 0);        /* split */
  assert_int_equal (x.count, 3);
  assert_int_equal (x.bytes, 240);
  assert_int_equal (sl_extents_take (&x, 0, 320, &out), 0);
  assert_int_equal (out.bytes, 50 + 90 + 20);
  assert_int_equal (x.count, 1);
  assert_int_equal (x.e[0].offset_bytes, 320);
  assert_int_equal (x.bytes, 80);
  sl_extents_free (&x);
  sl_extents_free (&out);
}

static void
test_overlapping_adds_count_each_byte_once (void **state)
{
  (void) state;
  struct sl_extents x = { 0 };
  assert_int_equal (sl_extents_add (&x, 0, 100), 0);
  assert_int_equal (sl_extents_add (&x, 50, 150), 0);
  assert_int_equal (sl_extents_add (&x, 400, 500), 0);
  assert_int_equal (sl_extents_add (&x, 10, 20), 0);             /* inside: nothing new */
  assert_int_equal (sl_extents_add (&x, 0, 1000), 0);            /* swallows all */
  assert_int_equal (x.count, 1);
  assert_int_equal (x.bytes, 1000);
  assert_int_equal (sl_extents_add (&x, 5, 5), 0);               /* empty: ignored */
  assert_int_equal (x.bytes, 1000);
  sl_extents_free (&x);
}

/* The HDD's destage: the front of the extent nearest the head, a chunk at
 * a time, until it is gone; the others stay. */
static void
test_taking_the_front_of_one_extent (void **state)
{
  (void) state;
  struct sl_extents x = { 0 };
  assert_int_equal (sl_extents_add (&x, 4096, 4096 + 3 * 65536), 0);
  assert_int_equal (sl_extents_add (&x, 1 << 20, (1 << 20) + 4096), 0);
  for (int chunk = 0; chunk < 3; chunk++) {
    size_t i = sl_extents_lower_bound (&x, 0);
    assert_int_equal (i, 0);
    uint64_t start = x.e[i].offset_bytes;
    assert_int_equal (start, 4096 + (uint64_t) chunk * 65536);
    assert_int_equal (sl_extents_remove (&x, start, start + 65536), 0);
  }
  assert_int_equal (x.count, 1);
  assert_int_equal (x.e[0].offset_bytes, 1 << 20);
  assert_int_equal (x.bytes, 4096);
  assert_true (sl_extents_overlaps (&x, (1 << 20) + 100, (1 << 20) + 200));
  assert_false (sl_extents_overlaps (&x, 0, 1 << 20));
  assert_int_equal (sl_extents_lower_bound (&x, 2 << 20), x.count);
  sl_extents_clear (&x);
  assert_int_equal (x.count, 0);
  assert_int_equal (x.bytes, 0);
  assert_false (sl_extents_covers (&x, 0, 1));
  sl_extents_free (&x);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_merge_split_take),
    cmocka_unit_test (test_overlapping_adds_count_each_byte_once),
    cmocka_unit_test (test_taking_the_front_of_one_extent),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
