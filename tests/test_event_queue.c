/* test_event_queue.c — the engine's pending events come out in (time,
 * sequence) order whichever store holds them: the 4-ary heap, the FIFO of
 * events due now, or both at once. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "core/event_queue.h"

static void
nothing (struct sl_engine *e, void *arg, uint64_t arg_u64)
{
  (void) e;
  (void) arg;
  (void) arg_u64;
}

/* Pops everything at its own time, as the engine does; tags in order. */
static size_t
drain (struct sl_event_queue *q, uint64_t *now_ns, uint64_t *tags, size_t max)
{
  size_t n = 0;
  struct sl_event ev;
  while (sl_event_queue_pop (q, *now_ns, &ev)) {
    assert_true (ev.when_ns >= *now_ns);
    *now_ns = ev.when_ns;
    assert_true (n < max);
    tags[n++] = ev.arg_u64;
  }
  return n;
}

static void
time_order_then_schedule_order (void **state)
{
  (void) state;
  struct sl_event_queue q = { 0 };
  uint64_t now = 0, tags[8];
  sl_event_queue_push (&q, now, 300, nothing, NULL, 3);
  sl_event_queue_push (&q, now, 100, nothing, NULL, 1);
  sl_event_queue_push (&q, now, 300, nothing, NULL, 4);
  sl_event_queue_push (&q, now, 200, nothing, NULL, 2);
  sl_event_queue_push (&q, now, 0, nothing, NULL, 0);      /* due now: the FIFO */
  assert_int_equal (sl_event_queue_len (&q), 5);
  assert_int_equal (sl_event_queue_next_ns (&q, now), 0);
  assert_int_equal (drain (&q, &now, tags, 8), 5);
  for (uint64_t k = 0; k < 5; k++)
    assert_int_equal (tags[k], k);
  sl_event_queue_free (&q);
}

/* A heap event due now was scheduled before the clock got here: it runs
 * before an event scheduled at this time for this time. */
static void
heap_events_due_now_run_before_the_fifo (void **state)
{
  (void) state;
  struct sl_event_queue q = { 0 };
  uint64_t now = 0;
  sl_event_queue_push (&q, now, 50, nothing, NULL, 1);
  sl_event_queue_push (&q, now, 50, nothing, NULL, 2);
  struct sl_event ev;
  assert_true (sl_event_queue_pop (&q, now, &ev));
  now = ev.when_ns;
  assert_int_equal (ev.arg_u64, 1);
  sl_event_queue_push (&q, now, now, nothing, NULL, 3);    /* the FIFO's */
  sl_event_queue_push (&q, now, 10, nothing, NULL, 4);     /* the past: now, FIFO too */
  uint64_t tags[4];
  assert_int_equal (drain (&q, &now, tags, 4), 3);
  assert_int_equal (tags[0], 2);
  assert_int_equal (tags[1], 3);
  assert_int_equal (tags[2], 4);
  assert_int_equal (now, 50);
  sl_event_queue_free (&q);
}

/* A reference: every event pushed, with the time it was pushed at; sorted
 * by (when, push order) it is the order the queue must give. */
struct reference {
  uint64_t when_ns, order;
};

static int
by_when_then_order (const void *a, const void *b)
{
  const struct reference *x = a, *y = b;
  if (x->when_ns != y->when_ns)
    return x->when_ns < y->when_ns ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

/* Thousands of events, pushed while the queue drains: some due at once
 * (wrapping the FIFO's ring), the others at random near times with many
 * ties, so heap events often fall due beside FIFO ones: the same order as
 * a sort. */
static void
random_run_matches_a_sort (void **state)
{
  (void) state;
  enum { EVENTS = 20000 };
  struct reference *pushed = calloc (EVENTS, sizeof *pushed), *popped = calloc (EVENTS,
                                                                                 sizeof *popped);
  struct sl_event_queue q = { 0 };
  uint64_t now = 0, seed = 12345;
  size_t n_pushed = 0, n_popped = 0;
  while (n_popped < EVENTS) {
    if (n_pushed == n_popped && n_pushed < EVENTS) {
      pushed[n_pushed] = (struct reference) { now + 1, n_pushed };
      sl_event_queue_push (&q, now, now + 1, nothing, NULL, n_pushed);
      n_pushed++;
    }
    seed = seed * 6364136223846793005u + 1442695040888963407u;
    unsigned burst = (unsigned) (seed >> 62);          /* 0-3: the clock moves on */
    for (unsigned k = 0; k < burst && n_pushed < EVENTS; k++) {
      seed = seed * 6364136223846793005u + 1442695040888963407u;
      /* a quarter due now, the rest within 16 ns: many ties, in both stores */
      uint64_t when = (seed >> 62) == 0 ? now : now + (seed >> 40) % 16;
      pushed[n_pushed] = (struct reference) { when, n_pushed };
      sl_event_queue_push (&q, now, when, nothing, NULL, n_pushed);
      n_pushed++;
    }
    struct sl_event ev;
    assert_true (sl_event_queue_pop (&q, now, &ev));
    assert_true (ev.when_ns >= now);
    now = ev.when_ns;
    popped[n_popped++] = (struct reference) { ev.when_ns, ev.arg_u64 };
  }
  assert_int_equal (sl_event_queue_len (&q), 0);
  qsort (pushed, EVENTS, sizeof *pushed, by_when_then_order);
  for (size_t k = 0; k < EVENTS; k++) {
    assert_int_equal (popped[k].when_ns, pushed[k].when_ns);
    assert_int_equal (popped[k].order, pushed[k].order);
  }
  sl_event_queue_free (&q);
  free (pushed);
  free (popped);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (time_order_then_schedule_order),
    cmocka_unit_test (heap_events_due_now_run_before_the_fifo),
    cmocka_unit_test (random_run_matches_a_sort),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
