/* release.c — the dispatcher of release.h: a deadline heap, one thread, and
 * futexes for the waiting threads. */
#define _GNU_SOURCE
#include "release.h"

#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "recent_median.h"

/* Learnt figures start here and are the median of the recent samples
 * (recent_median.h): with a moving average one 800 µs wake-up raised the
 * timer's learnt lateness to 125 µs, every 55 µs wait then left at once
 * (early by all of it), and no timed sleep came to correct it: 100 µs at
 * QD 1 came out at 61-94 µs (scripts/bench/realtime.md). */
#define HANDOVER_START_NS 10000u
#define TIMER_LATE_START_NS 50000u
#define LEARNT_WINDOW 32u
/* A single sample above this is the thread descheduled, not the path. */
#define SAMPLE_MAX_NS 1000000u
/* The timer's lateness is only measured by a timed sleep, which a wait
 * shorter than half of it never takes: after this long without one (or
 * since the last such try), the next wait is timed to its deadline, late
 * by the timer, to learn it again. */
#define TIMER_RESAMPLE_NS 20000000u
/* The hand-over is only measured by a thread that waits on the path, which
 * a wait shorter than half of it never does (it leaves at once): after this
 * long without one, the next such thread waits anyway, to learn it again.
 * Shorter than the timer's: a figure learnt high on a saturated host is
 * back down within 17 samples (the window's median), some 85 ms. */
#define HANDOVER_RESAMPLE_NS 5000000u
/* A thread given a spin slot is woken this much before its deadline on
 * top of twice the learnt hand-over, and spins the rest: it leaves on time
 * even when its wake-up takes twice as long as usual. */
#define SPIN_GUARD_NS 5000u
/* Threads signalled per unlocked pass (the rest wait for the next). */
#define RELEASE_PASS_MAX 64

struct waiter {
  uint64_t deadline_ns;
  uint64_t signalled_ns;
  bool spin;                   /* holds a spin slot: spins to its deadline */
  _Atomic uint32_t released;   /* futex word: 0 waiting, 1 released */
};

static struct {
  pthread_mutex_t lock;
  pthread_once_t once;
  int started;                 /* 1 running, -1 could not start */
  struct waiter **heap;        /* min-heap on deadline_ns */
  size_t len, cap;
  _Atomic uint32_t wake_seq;   /* futex word the dispatcher waits on */
  int sleeping;                /* the dispatcher is in its futex wait */
  _Atomic unsigned spin_cores; /* threads that may spin at once */
  _Atomic unsigned spinning;   /* released threads spinning to their deadline */
  struct sl_recent_median handover;       /* futex wake -> thread running */
  struct sl_recent_median timer_late;     /* timed sleep's end -> awake */
  uint64_t timer_sampled_ns;   /* the last timed sleep that ran out, or try */
  _Atomic uint64_t handover_sampled_ns;   /* the last hand-over measured, or try */
} d = {
  .lock = PTHREAD_MUTEX_INITIALIZER,
  .once = PTHREAD_ONCE_INIT,
};

/* ------------------------------------------------------------ futexes -- */

static void
futex_wait (_Atomic uint32_t *word, uint32_t expected, uint64_t until_ns)
{
  struct timespec ts, *timeout = NULL;
  if (until_ns != UINT64_MAX) {
    ts = (struct timespec) { .tv_sec = (time_t) (until_ns / 1000000000u),
                             .tv_nsec = (long) (until_ns % 1000000000u) };
    timeout = &ts;
  }
  /* FUTEX_WAIT_BITSET: an absolute CLOCK_MONOTONIC deadline */
  syscall (SYS_futex, word, FUTEX_WAIT_BITSET_PRIVATE, expected, timeout, NULL,
           FUTEX_BITSET_MATCH_ANY);
}

static void
futex_wake (_Atomic uint32_t *word)
{
  syscall (SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void
learn (struct sl_recent_median *figure, uint64_t sample_ns)
{
  if (sample_ns <= SAMPLE_MAX_NS)
    sl_recent_median_push (figure, sample_ns);
}

/* --------------------------------------------------------------- heap -- */

static void
heap_swap (size_t i, size_t j)
{
  struct waiter *t = d.heap[i];
  d.heap[i] = d.heap[j];
  d.heap[j] = t;
}

static int
heap_push (struct waiter *w)
{
  if (d.len == d.cap) {
    size_t cap = d.cap ? 2 * d.cap : 256;
    struct waiter **heap = realloc (d.heap, cap * sizeof *heap);
    if (heap == NULL)
      return -1;
    d.heap = heap;
    d.cap = cap;
  }
  size_t i = d.len++;
  d.heap[i] = w;
  while (i > 0 && d.heap[(i - 1) / 2]->deadline_ns > d.heap[i]->deadline_ns) {
    heap_swap (i, (i - 1) / 2);
    i = (i - 1) / 2;
  }
  return 0;
}

static struct waiter *
heap_pop (void)
{
  struct waiter *top = d.heap[0];
  d.heap[0] = d.heap[--d.len];
  for (size_t i = 0;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < d.len && d.heap[l]->deadline_ns < d.heap[m]->deadline_ns)
      m = l;
    if (r < d.len && d.heap[r]->deadline_ns < d.heap[m]->deadline_ns)
      m = r;
    if (m == i)
      break;
    heap_swap (i, m);
    i = m;
  }
  return top;
}

/* --------------------------------------------------------- dispatcher -- */

/* Signals every thread due before the dispatcher could next act (within
 * horizon_ns of now, hand-over included); with spin_slot, only the first,
 * which spins to its deadline.  Drops the lock to make the wake calls, so
 * threads can queue meanwhile. */
static void
release_due (uint64_t now, uint64_t horizon_ns, bool spin_slot)
{
  struct waiter *due[RELEASE_PASS_MAX];
  size_t n = 0;
  while (d.len > 0 && n < RELEASE_PASS_MAX && d.heap[0]->deadline_ns <= now + horizon_ns
         && !(spin_slot && n == 1))
    due[n++] = heap_pop ();
  if (spin_slot && n == 1) {
    due[0]->spin = true;
    atomic_fetch_add (&d.spinning, 1);
  }
  pthread_mutex_unlock (&d.lock);
  for (size_t i = 0; i < n; i++) {
    struct waiter *w = due[i];
    w->signalled_ns = sl_clock_monotonic_ns ();
    atomic_store_explicit (&w->released, 1, memory_order_release);
    /* w may be gone from here on (its thread saw released): the wake of a
     * stale address is at worst a spurious wake-up, which futexes allow */
    futex_wake (&w->released);
  }
  pthread_mutex_lock (&d.lock);
}

/* Sleeps until until_ns or a new earliest deadline; learns the timer's
 * lateness from the sleeps that ran out. */
static void
sleep_locked (uint64_t until_ns)
{
  uint32_t seq = atomic_load (&d.wake_seq);
  d.sleeping = 1;
  pthread_mutex_unlock (&d.lock);
  futex_wait (&d.wake_seq, seq, until_ns);
  uint64_t woke = sl_clock_monotonic_ns ();
  pthread_mutex_lock (&d.lock);
  d.sleeping = 0;
  if (until_ns != UINT64_MAX && woke >= until_ns && atomic_load (&d.wake_seq) == seq) {
    learn (&d.timer_late, woke - until_ns);
    d.timer_sampled_ns = woke;
  }
}

static void *
dispatcher_main (void *unused)
{
  (void) unused;
  sl_clock_prepare_thread ();
  pthread_setname_np (pthread_self (), "sl-release");   /* as top -H shows it */
  pthread_mutex_lock (&d.lock);
  for (;;) {
    if (d.len == 0) {
      sleep_locked (UINT64_MAX);
      continue;
    }
    uint64_t now = sl_clock_monotonic_ns ();
    uint64_t handover = sl_recent_median_ns (&d.handover);
    uint64_t timer_late = sl_recent_median_ns (&d.timer_late);
    if (now - d.timer_sampled_ns > TIMER_RESAMPLE_NS) {
      timer_late = 0;          /* one decision untouched by the figure */
      d.timer_sampled_ns = now;
    }
    uint64_t deadline = d.heap[0]->deadline_ns;
    /* With a spin slot free the earliest thread is woken well ahead and
     * spins the rest; without, early by the hand-over so that it arrives
     * on time on average. */
    bool spin_slot = atomic_load (&d.spinning) < atomic_load (&d.spin_cores);
    uint64_t lead = spin_slot ? 2 * handover + SPIN_GUARD_NS : handover;
    uint64_t signal_at = deadline > lead ? deadline - lead : 0;
    /* The next chance to act is a timer's lateness away: a thread due
     * sooner than half of that leaves now, early by less than it would be
     * late. */
    uint64_t batch = timer_late / 2;
    if (signal_at <= now + batch) {
      release_due (now, lead + batch, spin_slot);
      continue;
    }
    if (signal_at > now + timer_late)
      sleep_locked (signal_at - timer_late);
    else                       /* closer than the timer's lateness: split the error */
      sleep_locked (signal_at - timer_late / 2);
  }
  return NULL;
}

static void
start_dispatcher (void)
{
  sl_recent_median_init (&d.handover, LEARNT_WINDOW, HANDOVER_START_NS);
  sl_recent_median_init (&d.timer_late, LEARNT_WINDOW, TIMER_LATE_START_NS);
  d.timer_sampled_ns = sl_clock_monotonic_ns ();
  atomic_store (&d.handover_sampled_ns, d.timer_sampled_ns);
  pthread_t t;
  pthread_attr_t attr;
  pthread_attr_init (&attr);
  pthread_attr_setdetachstate (&attr, PTHREAD_CREATE_DETACHED);
  d.started = pthread_create (&t, &attr, dispatcher_main, NULL) == 0 ? 1 : -1;
  pthread_attr_destroy (&attr);
}

/* ------------------------------------------------------------- public -- */

void
sl_release_set_spin_cores (unsigned cores)
{
  atomic_store (&d.spin_cores, cores);
  atomic_fetch_add (&d.wake_seq, 1);
  futex_wake (&d.wake_seq);
}

static int64_t
left_against (uint64_t left_ns, uint64_t deadline_ns)
{
  return left_ns >= deadline_ns ? (int64_t) (left_ns - deadline_ns)
                                : -(int64_t) (deadline_ns - left_ns);
}

/* A wait shorter than half the hand-over cannot be kept by the path: its
 * thread would leave late by more than it leaves early now, and its sleep
 * and wake-up cost the host two context switches (on a saturated host,
 * where the hand-over grows, that is most of what a request costs). */
static bool
leaves_at_once (uint64_t now, uint64_t deadline_ns)
{
  uint64_t handover = sl_recent_median_last_ns (&d.handover);
  if (deadline_ns - now >= handover / 2)
    return false;
  uint64_t sampled = atomic_load_explicit (&d.handover_sampled_ns, memory_order_relaxed);
  if (now - sampled > HANDOVER_RESAMPLE_NS) {
    /* this one measures the path again (one thread per try) */
    atomic_store_explicit (&d.handover_sampled_ns, now, memory_order_relaxed);
    return false;
  }
  return true;
}

int64_t
sl_release_wait_until (uint64_t deadline_ns)
{
  uint64_t now = sl_clock_monotonic_ns ();
  if (now >= deadline_ns)
    return left_against (now, deadline_ns);
  pthread_once (&d.once, start_dispatcher);
  if (leaves_at_once (now, deadline_ns))
    return left_against (now, deadline_ns);
  struct waiter w = { .deadline_ns = deadline_ns };
  pthread_mutex_lock (&d.lock);
  if (d.started < 0 || heap_push (&w) == -1) {
    /* no dispatcher: the thread times itself, as before one existed */
    pthread_mutex_unlock (&d.lock);
    sl_clock_sleep_until_ns (deadline_ns);
    return left_against (sl_clock_monotonic_ns (), deadline_ns);
  }
  if (d.heap[0] == &w) {       /* a new earliest deadline: tell the dispatcher */
    atomic_fetch_add (&d.wake_seq, 1);
    if (d.sleeping)
      futex_wake (&d.wake_seq);
  }
  pthread_mutex_unlock (&d.lock);
  while (atomic_load_explicit (&w.released, memory_order_acquire) == 0)
    futex_wait (&w.released, 0, UINT64_MAX);
  now = sl_clock_monotonic_ns ();
  learn (&d.handover, now - w.signalled_ns);
  atomic_store_explicit (&d.handover_sampled_ns, now, memory_order_relaxed);
  if (w.spin) {
    now = sl_clock_spin_until_ns (deadline_ns);
    atomic_fetch_sub (&d.spinning, 1);
    /* the slot is free: the dispatcher may be sleeping on a later plan */
    atomic_fetch_add (&d.wake_seq, 1);
    futex_wake (&d.wake_seq);
  }
  return left_against (now, deadline_ns);
}

void
sl_release_get_path (struct sl_release_path *out)
{
  pthread_once (&d.once, start_dispatcher);     /* the figures start with it */
  /* as the dispatcher last took them: a request thread calls this under its
   * engine's lock after every release, and sorting there costs the lock */
  *out = (struct sl_release_path) {
    .handover_ns = sl_recent_median_last_ns (&d.handover),
    .timer_late_ns = sl_recent_median_last_ns (&d.timer_late),
    .spin_cores = atomic_load (&d.spin_cores),
  };
}
