/* test_release.c — the real-time release dispatcher: every waiting thread
 * leaves, near its deadline, in deadline order, whatever order they came in. */
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
     * deadline than the dispatcher sleeps towards, which must wake it.
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
   * about 100 µs, the dispatcher tens of µs). */
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
  nanosleep (&pause, NULL);    /* the dispatcher now sleeps towards 300 ms */
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

/* The dispatcher's thread id (it names itself sl-release), or 0. */
static pid_t
dispatcher_tid (void)
{
  DIR *dir = opendir ("/proc/self/task");
  pid_t found = 0;
  struct dirent *e;
  while (dir && found == 0 && (e = readdir (dir)) != NULL) {
    char path[300], comm[32] = "";
    snprintf (path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen (path, "r");
    if (f && fgets (comm, sizeof comm, f) && strncmp (comm, "sl-release", 10) == 0)
      found = (pid_t) atoi (e->d_name);
    if (f)
      fclose (f);
  }
  if (dir)
    closedir (dir);
  return found;
}

struct hog {
  uint64_t from_ns, until_ns;
  int cpu;
  bool ran;
};

/* Spins on the dispatcher's CPU and, from from_ns to until_ns, takes it at
 * real-time priority: the dispatcher's timer fires meanwhile and it runs
 * only after. */
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

/* A wait of 700 µs whose dispatcher has its CPU taken from 300 to 1200 µs:
 * its timed sleep ends some 600 µs late (the wait 540 µs late).  True when that was arranged. */
static bool
make_the_timer_late (int cpu)
{
  uint64_t start_ns = sl_clock_monotonic_ns ();
  struct hog h = { .from_ns = start_ns + 300000u, .until_ns = start_ns + 1200000u,
                   .cpu = cpu };
  pthread_t hogger;
  pthread_create (&hogger, NULL, hog_cpu, &h);
  sl_release_wait_until (start_ns + 700000u);
  pthread_join (hogger, NULL);
  return h.ran;
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
  struct waiter_thread warm = { .delay_ns = 200000u };
  run_waiters (&warm, 1);      /* the dispatcher runs */
  pid_t dispatcher = dispatcher_tid ();
  assert_true (dispatcher > 0);
  /* the dispatcher on the first CPU, this thread on the last */
  cpu_set_t all, first, last;
  int cpu_first, cpu_last;
  first_and_last_cpu (&all, &cpu_first, &first, &cpu_last, &last);
  bool pinned = sched_setaffinity (dispatcher, sizeof first, &first) == 0
                && sched_setaffinity (0, sizeof last, &last) == 0;
  bool late = pinned;
  for (int i = 0; late && i < LATE_TIMERS; i++)
    late = make_the_timer_late (cpu_first);
  sched_setaffinity (dispatcher, sizeof all, &all);
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
  for (int i = 1; i < WAITS; i++)      /* insertion sort */
    for (int j = i; j > 0 && early_ns[j - 1] > early_ns[j]; j--) {
      int64_t x = early_ns[j]; early_ns[j] = early_ns[j - 1]; early_ns[j - 1] = x;
    }
  /* Early by at most the hand-over (a few µs) plus half the timer's
   * lateness (10-ish) on the median; released at once, it was 50. */
  int64_t median_early_ns = early_ns[WAITS / 2];
  if (median_early_ns > 25000) {
    print_error ("the median wait of %d µs left %lld ns early\n", WAIT_NS / 1000,
                 (long long) median_early_ns);
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

/* Through the path such a wait would sleep on its futex and be woken by
 * the dispatcher (two context switches, on a saturated host most of what a
 * request costs: 100 µs at QD 64, 68-72k IOPS against 95-114k when it
 * leaves at once, scripts/bench/realtime.md) only to leave later than its
 * deadline by more than it now leaves early. */
static void
a_wait_the_path_cannot_keep_costs_no_sleep (void **state)
{
  (void) state;
  enum { WAITS = 2000 };
  struct waiter_thread warm = { .delay_ns = 200000u };
  run_waiters (&warm, 1);
  struct sl_release_path path;
  sl_release_get_path (&path);
  uint64_t wait_ns = path.handover_ns / 4;
  print_message ("learnt hand-over %llu ns: waits of %llu ns\n",
                 (unsigned long long) path.handover_ns, (unsigned long long) wait_ns);
  long before = voluntary_switches ();
  int early = 0;
  for (int i = 0; i < WAITS; i++)
    if (sl_release_wait_until (sl_clock_monotonic_ns () + wait_ns) <= 0)
      early++;
  long slept = voluntary_switches () - before;
  /* a resample of the path (one per 5 ms) or a preemption may sleep */
  if (slept >= WAITS / 10 || early < WAITS / 2) {
    print_error ("%d waits of %llu ns: %ld slept, %d left at or before their deadline\n",
                 WAITS, (unsigned long long) wait_ns, slept, early);
    fail ();
  }
}

struct late_handover {
  uint64_t deadline_ns;
  int cpu;
  bool ran;
};

/* Takes the waiting thread's CPU at real-time priority from just before
 * its deadline until 600 µs after: its wake-up runs that late. */
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

/* A hand-over learnt on a saturated host (hundreds of µs) sends every
 * shorter wait out at once, and such waits measure nothing: without the
 * path's own resample the figure, and the early leaving, would last for
 * good once the host is idle again. */
static void
a_hand_over_learnt_high_is_measured_again (void **state)
{
  (void) state;
  enum { LATE_WAKES = 24, WAIT_NS = 55000, RUN_NS = 400000000, JUDGED_NS = 100000000 };
  cpu_set_t all, first, last;
  int cpu_first, cpu_last;
  first_and_last_cpu (&all, &cpu_first, &first, &cpu_last, &last);
  bool late = sched_setaffinity (0, sizeof last, &last) == 0;
  for (int i = 0; late && i < LATE_WAKES; i++) {
    struct late_handover h = { .deadline_ns = sl_clock_monotonic_ns () + 700000u,
                               .cpu = cpu_last };
    pthread_t hogger;
    pthread_create (&hogger, NULL, hog_waiter_cpu, &h);
    sl_release_wait_until (h.deadline_ns);
    pthread_join (hogger, NULL);
    late = h.ran;
  }
  sched_setaffinity (0, sizeof all, &all);
  struct sl_release_path path;
  sl_release_get_path (&path);
  if (!late || path.handover_ns < 2 * WAIT_NS) {
    print_message ("no late hand-over arranged (not root?): learnt %llu ns\n",
                   (unsigned long long) path.handover_ns);
    return;
  }
  print_message ("after %d late wake-ups: learnt hand-over %llu ns\n", LATE_WAKES,
                 (unsigned long long) path.handover_ns);
  static int64_t early_ns[JUDGED_NS / WAIT_NS];    /* waits that leave at once: more */
  int judged = 0;
  uint64_t start = sl_clock_monotonic_ns ();
  for (uint64_t now = start; now - start < RUN_NS; now = sl_clock_monotonic_ns ()) {
    uint64_t deadline = now + WAIT_NS;
    sl_release_wait_until (deadline);
    if (now - start >= RUN_NS - JUDGED_NS && judged < JUDGED_NS / WAIT_NS)
      early_ns[judged++] = (int64_t) deadline - (int64_t) sl_clock_monotonic_ns ();
  }
  for (int i = 1; i < judged; i++)     /* insertion sort */
    for (int j = i; j > 0 && early_ns[j - 1] > early_ns[j]; j--) {
      int64_t x = early_ns[j]; early_ns[j] = early_ns[j - 1]; early_ns[j - 1] = x;
    }
  sl_release_get_path (&path);
  /* at once, each is 55 µs early; through the path a few µs either way */
  if (judged == 0 || early_ns[judged / 2] > 25000) {
    print_error ("%d waits of %d µs in the last 100 ms left %lld ns early on the median "
                 "(learnt hand-over now %llu ns)\n", judged, WAIT_NS / 1000,
                 judged ? (long long) early_ns[judged / 2] : 0LL,
                 (unsigned long long) path.handover_ns);
    fail ();
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
