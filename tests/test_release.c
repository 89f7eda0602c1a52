/* test_release.c — the real-time release path: every waiting thread leaves,
 * near its deadline, in deadline order, whatever order they came in. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "core/clock.h"
#include "core/release.h"

/* The learnt hand-over and half the timer's lateness are each capped at
 * 1 ms (release.c): no thread can leave earlier than this. */
#define EARLY_MAX_NS 1500000u

struct waiter_thread {
  uint64_t delay_ns;           /* deadline = start + delay */
  uint64_t start_ns;
  uint64_t left_ns;
  int64_t reported_ns;         /* left against the deadline, as returned */
};

static void *
wait_once (void *arg)
{
  struct waiter_thread *t = arg;
  t->reported_ns = sl_release_wait_until (t->start_ns + t->delay_ns);
  t->left_ns = sl_clock_monotonic_ns ();
  return NULL;
}

static void
run_waiters (struct waiter_thread *t, int n)
{
  pthread_t th[n];
  for (int i = 0; i < n; i++) {
    t[i].start_ns = sl_clock_monotonic_ns ();
    pthread_create (&th[i], NULL, wait_once, &t[i]);
  }
  for (int i = 0; i < n; i++)
    pthread_join (th[i], NULL);
}

static uint64_t
median_error_ns (const struct waiter_thread *t, int n)
{
  uint64_t err[n];
  for (int i = 0; i < n; i++) {
    uint64_t deadline = t[i].start_ns + t[i].delay_ns;
    err[i] = t[i].left_ns > deadline ? t[i].left_ns - deadline : deadline - t[i].left_ns;
  }
  for (int i = 1; i < n; i++)  /* insertion sort: n is a few hundred */
    for (int j = i; j > 0 && err[j - 1] > err[j]; j--) {
      uint64_t x = err[j]; err[j] = err[j - 1]; err[j - 1] = x;
    }
  return err[n / 2];
}

static void
check_bounds (const struct waiter_thread *t, int n)
{
  for (int i = 0; i < n; i++) {
    uint64_t deadline = t[i].start_ns + t[i].delay_ns;
    assert_true (t[i].left_ns + EARLY_MAX_NS >= deadline);
    /* a lost wake-up never ends: a slow host is late by far less */
    assert_true (t[i].left_ns < deadline + 100000000u);
    /* what it reports was measured just before left_ns: early or late */
    assert_true (t[i].reported_ns <= (int64_t) t[i].left_ns - (int64_t) deadline);
    assert_true (t[i].reported_ns > (int64_t) t[i].left_ns - (int64_t) deadline - 100000000);
  }
}

/* One of nbdkit's request threads: it lives for the whole run and waits
 * for one deadline after another.  (A thread created per wait measures the
 * host's thread creation instead: on a 2-core VM, 48 of them start up to
 * 4 ms late.) */
enum { POOL_THREADS = 48, WAITS_PER_THREAD = 5, ROUNDS = 3 };

struct pool_thread {
  int index;
  bool self_timed;             /* the baseline: the kernel's timer alone */
  pthread_barrier_t *all_started;
  struct waiter_thread waits[WAITS_PER_THREAD];
};

static void *
wait_in_turn (void *arg)
{
  struct pool_thread *p = arg;
  pthread_barrier_wait (p->all_started);
  for (int k = 0; k < WAITS_PER_THREAD; k++) {
    struct waiter_thread *t = &p->waits[k];
    /* Deadlines 0.2-4.7 ms out, several equal (released together), in no
     * particular order across threads: a thread often brings an earlier
     * deadline than the leader sleeps towards, and must lead instead.
     * All start at once: a burst of arrivals. */
    t->delay_ns = 200000u + (uint64_t) (((p->index + k) * 7919) % 16) * 300000u;
    t->start_ns = sl_clock_monotonic_ns ();
    if (p->self_timed) {
      uint64_t at = t->start_ns + t->delay_ns;
      struct timespec ts = { .tv_sec = (time_t) (at / 1000000000u),
                             .tv_nsec = (long) (at % 1000000000u) };
      clock_nanosleep (CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
      t->left_ns = sl_clock_monotonic_ns ();
      t->reported_ns = 0;
    } else
      wait_once (t);
  }
  return NULL;
}

/* Runs the pool once; appends its waits to out. */
static void
run_pool (bool self_timed, struct waiter_thread *out)
{
  static struct pool_thread pool[POOL_THREADS];
  pthread_t th[POOL_THREADS];
  pthread_barrier_t all_started;
  pthread_barrier_init (&all_started, NULL, POOL_THREADS);
  for (int i = 0; i < POOL_THREADS; i++) {
    pool[i] = (struct pool_thread) { .index = i, .self_timed = self_timed,
                                     .all_started = &all_started };
    pthread_create (&th[i], NULL, wait_in_turn, &pool[i]);
  }
  for (int i = 0; i < POOL_THREADS; i++)
    pthread_join (th[i], NULL);
  pthread_barrier_destroy (&all_started);
  for (int i = 0; i < POOL_THREADS; i++)
    for (int k = 0; k < WAITS_PER_THREAD; k++)
      out[i * WAITS_PER_THREAD + k] = pool[i].waits[k];
}

/* Released threads against threads timing themselves, on this host now. */
static void
leave_as_near_as_self_timed_threads (void)
{
  enum { PER_ROUND = POOL_THREADS * WAITS_PER_THREAD, N = ROUNDS * PER_ROUND };
  static struct waiter_thread released[N], self_timed[N];
  /* Rounds alternate, so both paths meet the same host (a shared VM's
   * wake-ups vary by ten times from one minute to the next). */
  for (int round = 0; round < ROUNDS; round++) {
    run_pool (true, &self_timed[round * PER_ROUND]);
    run_pool (false, &released[round * PER_ROUND]);
  }
  check_bounds (released, N);
  /* Typical precision: within 0.5 ms, or no worse than twice what the
   * kernel's timer gives threads timing themselves (on the 2-core host
   * about 100 µs, the path tens of µs). */
  uint64_t released_ns = median_error_ns (released, N);
  uint64_t self_timed_ns = median_error_ns (self_timed, N);
  if (released_ns >= 500000u && released_ns > 2 * self_timed_ns) {
    print_error ("median error %lu ns over %d waits; self-timed threads: %lu ns\n",
                 (unsigned long) released_ns, N, (unsigned long) self_timed_ns);
    fail ();
  }
}

static void
every_thread_leaves_near_its_deadline (void **state)
{
  (void) state;
  leave_as_near_as_self_timed_threads ();
}

static void
an_earlier_deadline_does_not_wait_for_a_later_one (void **state)
{
  (void) state;
  struct waiter_thread slow = { .delay_ns = 300000000u };   /* 300 ms */
  pthread_t th;
  slow.start_ns = sl_clock_monotonic_ns ();
  pthread_create (&th, NULL, wait_once, &slow);
  struct timespec pause = { 0, 20000000 };
  nanosleep (&pause, NULL);    /* the slow thread leads, its timer 300 ms out */
  struct waiter_thread fast = { .delay_ns = 1000000u };
  run_waiters (&fast, 1);
  check_bounds (&fast, 1);
  assert_true (fast.left_ns < fast.start_ns + 100000000u);
  pthread_join (th, NULL);
  check_bounds (&slow, 1);
}

static void
a_spin_slot_holder_leaves_at_its_deadline (void **state)
{
  (void) state;
  enum { N = 16 };
  struct waiter_thread t[N];
  sl_release_set_spin_cores (1);
  for (int i = 0; i < N; i++)
    t[i] = (struct waiter_thread) { .delay_ns = 100000u + (uint64_t) i * 50000u };
  run_waiters (t, N);
  check_bounds (t, N);
  /* One thread at a time always holds the slot: it spins to its deadline
   * and never leaves early. */
  for (int i = 0; i < 20; i++) {
    struct waiter_thread one = { .delay_ns = 300000u };
    run_waiters (&one, 1);
    assert_true (one.left_ns >= one.start_ns + one.delay_ns);
  }
  struct sl_release_path path;
  sl_release_get_path (&path);
  assert_int_equal (path.spin_cores, 1);
  sl_release_set_spin_cores (0);
  sl_release_get_path (&path);
  assert_int_equal (path.spin_cores, 0);
  run_waiters (t, N);
  check_bounds (t, N);
}

static void
a_past_deadline_returns_at_once (void **state)
{
  (void) state;
  uint64_t now = sl_clock_monotonic_ns ();
  int64_t late_ns = sl_release_wait_until (now - 5000000u);
  assert_true (late_ns >= 5000000);
}

/* ---- one late timer must not send every later thread out early ---- */

struct hog {
  uint64_t from_ns, until_ns;
  int cpu;
  bool ran;
};

/* Spins on a waiting thread's CPU and, from from_ns to until_ns, takes it
 * at real-time priority: the thread's timer or wake-up comes meanwhile and
 * it runs only after. */
static void *
hog_cpu (void *arg)
{
  struct hog *h = arg;
  cpu_set_t one;
  CPU_ZERO (&one);
  CPU_SET (h->cpu, &one);
  if (pthread_setaffinity_np (pthread_self (), sizeof one, &one) != 0)
    return NULL;
  sl_clock_spin_until_ns (h->from_ns);
  struct sched_param fifo = { .sched_priority = 1 };
  if (pthread_setschedparam (pthread_self (), SCHED_FIFO, &fifo) != 0)
    return NULL;               /* not permitted here: no outlier made */
  h->ran = true;
  sl_clock_spin_until_ns (h->until_ns);
  return NULL;
}

/* A wait of 700 µs, alone (it leads: it times itself), whose CPU is taken
 * from 300 to 1200 µs: its timed sleep ends some 600 µs late (the wait
 * 540 µs late).  True when that was arranged (the wait left that late). */
static bool
make_the_timer_late (int cpu)
{
  uint64_t start_ns = sl_clock_monotonic_ns ();
  struct hog h = { .from_ns = start_ns + 300000u, .until_ns = start_ns + 1200000u,
                   .cpu = cpu };
  pthread_t hogger;
  pthread_create (&hogger, NULL, hog_cpu, &h);
  int64_t late_ns = sl_release_wait_until (start_ns + 700000u);
  pthread_join (hogger, NULL);
  return h.ran && late_ns > 300000;
}

/* The first and last CPU this thread may run on (all: every one it may),
 * and a set of just that one CPU each. */
static void
first_and_last_cpu (cpu_set_t *all, int *cpu_first, cpu_set_t *first, int *cpu_last,
                    cpu_set_t *last)
{
  sched_getaffinity (0, sizeof *all, all);
  *cpu_first = *cpu_last = -1;
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET (c, all)) {
      *cpu_first = *cpu_first < 0 ? c : *cpu_first;
      *cpu_last = c;
    }
  CPU_ZERO (first);
  CPU_SET (*cpu_first, first);
  CPU_ZERO (last);
  CPU_SET (*cpu_last, last);
}

/* The median of n waits' early leaving (sorts them). */
static int64_t
median_early_ns (int64_t *early_ns, int n)
{
  for (int i = 1; i < n; i++)          /* insertion sort */
    for (int j = i; j > 0 && early_ns[j - 1] > early_ns[j]; j--) {
      int64_t x = early_ns[j]; early_ns[j] = early_ns[j - 1]; early_ns[j - 1] = x;
    }
  return n ? early_ns[n / 2] : 0;
}

/* At 1 outstanding with a 100 µs model and the transport's 45 µs taken
 * off, each wait is some 55 µs, one after another.  A moving average of
 * the timer's lateness that late wake-ups had raised above twice that
 * released every such wait at once (with six here, 5 runs in 6 failed) (2026-12-06: 100 µs came out at 61-94
 * µs); the median they are learnt from now shrugs them off. */
static void
short_waits_after_a_late_timer_do_not_leave_early (void **state)
{
  (void) state;
  enum { WAITS = 2000, WAIT_NS = 55000, LATE_TIMERS = 6 };
  /* this thread on the last CPU, and the late timers there */
  cpu_set_t all, first, last;
  int cpu_first, cpu_last;
  first_and_last_cpu (&all, &cpu_first, &first, &cpu_last, &last);
  bool late = sched_setaffinity (0, sizeof last, &last) == 0;
  for (int i = 0; late && i < LATE_TIMERS; i++)
    late = make_the_timer_late (cpu_last);
  sched_setaffinity (0, sizeof all, &all);
  struct sl_release_path path;
  sl_release_get_path (&path);
  if (late)
    print_message ("after %d late timers: learnt timer lateness %llu ns\n",
                   LATE_TIMERS, (unsigned long long) path.timer_late_ns);
  else
    print_message ("no late timer arranged (not root?): short waits measured as they come\n");
  static int64_t early_ns[WAITS];
  for (int i = 0; i < WAITS; i++) {
    uint64_t deadline = sl_clock_monotonic_ns () + WAIT_NS;
    sl_release_wait_until (deadline);
    early_ns[i] = (int64_t) deadline - (int64_t) sl_clock_monotonic_ns ();
  }
  /* Early by at most the hand-over (a few µs) plus half the timer's
   * lateness (10-ish) on the median; released at once, it was 50. */
  int64_t median_ns = median_early_ns (early_ns, WAITS);
  if (median_ns > 25000) {
    print_error ("the median wait of %d µs left %lld ns early\n", WAIT_NS / 1000,
                 (long long) median_ns);
    fail ();
  }
}

/* ---- a wait shorter than half the hand-over leaves at once ---- */

static long
voluntary_switches (void)
{
  struct rusage u;
  getrusage (RUSAGE_THREAD, &u);
  return u.ru_nvcsw;
}

struct pinned_wait {
  cpu_set_t cpu;
  uint64_t deadline_ns;
};

/* Waits to its deadline on its own CPU. */
static void *
wait_pinned (void *arg)
{
  struct pinned_wait *p = arg;
  sched_setaffinity (0, sizeof p->cpu, &p->cpu);
  sl_release_wait_until (p->deadline_ns);
  return NULL;
}

/* Behind an earlier thread, through the path such a wait would sleep on
 * its futex until the leader woke it (two context switches, on a saturated
 * host most of what a request costs: 100 µs at QD 64, 68-72k IOPS against
 * 95-114k when it leaves at once, scripts/bench/realtime.md), only to
 * leave later than its deadline by more than it now leaves early.  Here
 * the leader is kept overdue, so that every wait is behind it: through the
 * path, the first would sleep until the leader ran again. */
static void
a_wait_the_path_cannot_keep_costs_no_sleep (void **state)
{
  (void) state;
  enum { WINDOW_NS = 2000000, WAITS_MIN = 50 };
  cpu_set_t all, first, last;
  int cpu_first, cpu_last;
  first_and_last_cpu (&all, &cpu_first, &first, &cpu_last, &last);
  if (cpu_first == cpu_last || sched_setaffinity (0, sizeof last, &last) != 0) {
    print_message ("one CPU: no overdue leader arranged\n");
    return;
  }
  /* two waits close together: the second is woken by the first, so the
   * hand-over is freshly measured (no resample falls in the window) */
  struct waiter_thread warm[2] = { { .delay_ns = 200000u }, { .delay_ns = 210000u } };
  run_waiters (warm, 2);
  struct sl_release_path path;
  sl_release_get_path (&path);
  uint64_t wait_ns = path.handover_ns / 4;
  uint64_t now = sl_clock_monotonic_ns ();
  struct pinned_wait o = { .cpu = first, .deadline_ns = now + 1000000u };
  /* the leader waits (its timer set) before its CPU is taken, from before
   * its timer ends until after the window */
  struct hog hog = { .from_ns = o.deadline_ns - 400000u,
                     .until_ns = o.deadline_ns + 100000u + WINDOW_NS + 500000u,
                     .cpu = cpu_first };
  pthread_t leader, hogger;
  pthread_create (&leader, NULL, wait_pinned, &o);
  struct timespec settle = { 0, 100000 };
  nanosleep (&settle, NULL);
  pthread_create (&hogger, NULL, hog_cpu, &hog);
  /* asleep meanwhile, so that both threads started here get to their CPU */
  uint64_t window_ns = o.deadline_ns + 100000u;
  struct timespec at = { .tv_sec = (time_t) (window_ns / 1000000000u),
                         .tv_nsec = (long) (window_ns % 1000000000u) };
  clock_nanosleep (CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL);
  long before = voluntary_switches ();
  int waits = 0, early = 0;
  for (uint64_t start = sl_clock_monotonic_ns (); sl_clock_monotonic_ns () - start < WINDOW_NS;
       waits++)
    if (sl_release_wait_until (sl_clock_monotonic_ns () + wait_ns) <= 0)
      early++;
  long slept = voluntary_switches () - before;
  pthread_join (hogger, NULL);
  pthread_join (leader, NULL);
  sched_setaffinity (0, sizeof all, &all);
  if (!hog.ran) {
    print_message ("no overdue leader arranged (not root?)\n");
    return;
  }
  print_message ("learnt hand-over %llu ns: %d waits of %llu ns behind an overdue leader\n",
                 (unsigned long long) path.handover_ns, waits, (unsigned long long) wait_ns);
  if (waits < WAITS_MIN || slept >= waits / 10 || early < waits / 2) {
    print_error ("%d waits of %llu ns in %d µs: %ld slept, %d left at or before their "
                 "deadline\n", waits, (unsigned long long) wait_ns, WINDOW_NS / 1000, slept,
                 early);
    fail ();
  }
}

struct late_handover {
  uint64_t deadline_ns;
  int cpu;
  bool ran;
};

/* Takes a waiting thread's CPU at real-time priority from just before its
 * deadline until 600 µs after: its wake-up runs that late. */
static void *
hog_waiter_cpu (void *arg)
{
  struct late_handover *h = arg;
  struct hog hog = { .from_ns = h->deadline_ns - 100000u, .until_ns = h->deadline_ns + 600000u,
                     .cpu = h->cpu };
  hog_cpu (&hog);
  h->ran = hog.ran;
  return NULL;
}

/* One late hand-over: a thread on the first CPU leads to 700 µs; this one
 * (on the last CPU) waits 20 µs behind it, so that the leader wakes it,
 * and its CPU is taken meanwhile.  True when that was arranged. */
static bool
make_a_hand_over_late (cpu_set_t *first, int cpu_last)
{
  struct pinned_wait leader = { .cpu = *first,
                                .deadline_ns = sl_clock_monotonic_ns () + 700000u };
  struct late_handover h = { .deadline_ns = leader.deadline_ns + 20000u, .cpu = cpu_last };
  pthread_t lead, hogger;
  pthread_create (&lead, NULL, wait_pinned, &leader);
  pthread_create (&hogger, NULL, hog_waiter_cpu, &h);
  struct timespec settle = { 0, 200000 };      /* the leader is waiting by then */
  nanosleep (&settle, NULL);
  sl_release_wait_until (h.deadline_ns);
  pthread_join (hogger, NULL);
  pthread_join (lead, NULL);
  return h.ran;
}

struct waits_in_turn {
  uint64_t run_ns, judged_ns, wait_ns;
  int64_t *early_ns;           /* the waits judged, how early each left */
  int judged, judged_max;
};

/* Waits of wait_ns one after another for run_ns; the last judged_ns of them
 * are judged. */
static void *
wait_in_a_row (void *arg)
{
  struct waits_in_turn *t = arg;
  uint64_t start = sl_clock_monotonic_ns ();
  for (uint64_t now = start; now - start < t->run_ns; now = sl_clock_monotonic_ns ()) {
    uint64_t deadline = now + t->wait_ns;
    sl_release_wait_until (deadline);
    if (now - start >= t->run_ns - t->judged_ns && t->judged < t->judged_max)
      t->early_ns[t->judged++] = (int64_t) deadline - (int64_t) sl_clock_monotonic_ns ();
  }
  return NULL;
}

/* Teaches the path a hand-over of some 600 µs (LATE_WAKES late ones); true
 * when that was arranged (root, two CPUs). */
static bool
learn_a_late_hand_over (void)
{
  enum { LATE_WAKES = 24 };
  cpu_set_t all, first, last;
  int cpu_first, cpu_last;
  first_and_last_cpu (&all, &cpu_first, &first, &cpu_last, &last);
  bool late = cpu_first != cpu_last && sched_setaffinity (0, sizeof last, &last) == 0;
  for (int i = 0; late && i < LATE_WAKES; i++)
    late = make_a_hand_over_late (&first, cpu_last);
  sched_setaffinity (0, sizeof all, &all);
  struct sl_release_path path;
  sl_release_get_path (&path);
  print_message ("after %d late wake-ups: learnt hand-over %llu ns\n", LATE_WAKES,
                 (unsigned long long) path.handover_ns);
  return late && path.handover_ns >= 300000u;
}

/* Waits of 55 µs by `threads` threads in turn for 400 ms, after a hand-over
 * learnt high; how early the waits of the last 100 ms left, on the median. */
static int64_t
median_early_after_a_late_hand_over (int threads, uint64_t *handover_after_ns)
{
  enum { WAIT_NS = 55000, RUN_NS = 400000000, JUDGED_NS = 100000000,
         JUDGED_MAX = JUDGED_NS / WAIT_NS };
  static int64_t early_ns[2 * JUDGED_MAX];
  struct waits_in_turn t[2];
  pthread_t th[2];
  for (int i = 0; i < threads; i++) {
    t[i] = (struct waits_in_turn) { .run_ns = RUN_NS, .judged_ns = JUDGED_NS,
                                    .wait_ns = WAIT_NS, .early_ns = early_ns + i * JUDGED_MAX,
                                    .judged_max = JUDGED_MAX };
    pthread_create (&th[i], NULL, wait_in_a_row, &t[i]);
  }
  int judged = 0;
  for (int i = 0; i < threads; i++) {
    pthread_join (th[i], NULL);
    memmove (early_ns + judged, early_ns + i * JUDGED_MAX, t[i].judged * sizeof *early_ns);
    judged += t[i].judged;
  }
  struct sl_release_path path;
  sl_release_get_path (&path);
  *handover_after_ns = path.handover_ns;
  return judged ? median_early_ns (early_ns, judged) : WAIT_NS;
}

/* A hand-over learnt on a saturated host (hundreds of µs) sends every
 * shorter wait out at once, and such waits measure nothing: without the
 * path's own resample the figure, and the early leaving, would last for
 * good once the host is idle again.  Two threads in turn: the resample
 * waits behind the other and is woken by it.  One thread alone: the
 * resample leads, woken by nobody, and its timer's wake-up stands in. */
static void
a_hand_over_learnt_high_is_measured_again (void **state)
{
  (void) state;
  for (int threads = 1; threads <= 2; threads++) {
    if (!learn_a_late_hand_over ()) {
      print_message ("no late hand-over arranged (not root, or one CPU?)\n");
      return;
    }
    uint64_t handover_ns;
    int64_t early_ns = median_early_after_a_late_hand_over (threads, &handover_ns);
    /* at once, each is 55 µs early; through the path a few µs either way */
    if (early_ns > 25000 || handover_ns >= 300000u) {
      print_error ("%d thread(s) in turn: waits of 55 µs in the last 100 ms left %lld ns "
                   "early on the median; learnt hand-over now %llu ns\n", threads,
                   (long long) early_ns, (unsigned long long) handover_ns);
      fail ();
    }
  }
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (every_thread_leaves_near_its_deadline),
    cmocka_unit_test (an_earlier_deadline_does_not_wait_for_a_later_one),
    cmocka_unit_test (a_spin_slot_holder_leaves_at_its_deadline),
    cmocka_unit_test (a_past_deadline_returns_at_once),
    cmocka_unit_test (short_waits_after_a_late_timer_do_not_leave_early),
    cmocka_unit_test (a_wait_the_path_cannot_keep_costs_no_sleep),
    cmocka_unit_test (a_hand_over_learnt_high_is_measured_again),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
