/* test_recent_median.c — the median of recent samples (core/recent_median.c):
 * what the release path learns its hand-over and timer lateness from. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>

#include "core/recent_median.h"

#define WINDOW 32u

static void
the_start_value_until_samples_come (void **state)
{
  (void) state;
  struct sl_recent_median m;
  sl_recent_median_init (&m, WINDOW, 50000);
  assert_int_equal (sl_recent_median_ns (&m), 50000);
  for (unsigned i = 0; i < WINDOW; i++)
    sl_recent_median_push (&m, 20000);
  /* what a reporter reads is the median as last taken: nothing sorts it */
  assert_int_equal (sl_recent_median_last_ns (&m), 50000);
  assert_int_equal (sl_recent_median_ns (&m), 20000);
  assert_int_equal (sl_recent_median_last_ns (&m), 20000);
  assert_int_equal (sl_recent_median_count (&m), WINDOW);
}

/* The failure it is there for: a timer that wakes 15-25 µs late and once
 * 800 µs late.  A moving average of weight 1/8 jumped by 100 µs; the
 * median does not move. */
static void
one_outlier_does_not_move_it (void **state)
{
  (void) state;
  struct sl_recent_median m;
  sl_recent_median_init (&m, WINDOW, 50000);
  for (unsigned i = 0; i < 2 * WINDOW; i++)
    sl_recent_median_push (&m, 15000 + (i % 11) * 1000);
  uint64_t before = sl_recent_median_ns (&m);
  assert_in_range (before, 15000, 25000);
  sl_recent_median_push (&m, 800000);
  for (unsigned i = 0; i < WINDOW / 8; i++)      /* enough to sort again */
    sl_recent_median_push (&m, 20000);
  assert_in_range (sl_recent_median_ns (&m), 15000, 25000);
}

/* When the host really changes (most recent samples moved), it follows
 * within a window. */
static void
it_follows_a_lasting_change (void **state)
{
  (void) state;
  struct sl_recent_median m;
  sl_recent_median_init (&m, WINDOW, 0);
  for (unsigned i = 0; i < WINDOW; i++)
    sl_recent_median_push (&m, 120000);
  assert_int_equal (sl_recent_median_ns (&m), 120000);
  for (unsigned i = 0; i < WINDOW / 2 + WINDOW / 8; i++)
    sl_recent_median_push (&m, 20000);
  assert_int_equal (sl_recent_median_ns (&m), 20000);
}

struct pusher {
  struct sl_recent_median *m;
  uint64_t value_ns;
};

static void *
push_many (void *arg)
{
  struct pusher *p = arg;
  for (int i = 0; i < 100000; i++)
    sl_recent_median_push (p->m, p->value_ns);
  return NULL;
}

/* Released threads push from many threads at once while the leader
 * reads: every sample read is one that was pushed. */
static void
concurrent_pushes_keep_whole_samples (void **state)
{
  (void) state;
  static struct sl_recent_median m;
  sl_recent_median_init (&m, WINDOW, 7000);
  struct pusher p[4] = { { &m, 3000 }, { &m, 3000 }, { &m, 9000 }, { &m, 9000 } };
  pthread_t th[4];
  for (int i = 0; i < 4; i++)
    pthread_create (&th[i], NULL, push_many, &p[i]);
  for (int i = 0; i < 1000; i++) {
    uint64_t v = sl_recent_median_ns (&m);
    assert_true (v == 3000 || v == 9000 || v == 7000);
  }
  for (int i = 0; i < 4; i++)
    pthread_join (th[i], NULL);
  assert_int_equal (sl_recent_median_count (&m), 400000);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (the_start_value_until_samples_come),
    cmocka_unit_test (one_outlier_does_not_move_it),
    cmocka_unit_test (it_follows_a_lasting_change),
    cmocka_unit_test (concurrent_pushes_keep_whole_samples),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
