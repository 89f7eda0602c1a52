/* release.c — the release path of release.h: a deadline heap, the thread
 * with the earliest deadline timing itself, futexes for the others. */
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
/* The hand-over is only measured by a thread woken by another, which a
 * wait shorter than half of it never is (it leaves at once): after this
 * long without one, the next such thread waits anyway, to learn it again.
 * Shorter than the timer's: a figure learnt high on a saturated host is
 * back down within 17 samples (the window's median), some 85 ms. */
#define HANDOVER_RESAMPLE_NS 5000000u
/* With a spin slot the leader's timer is set this much before its
 * deadline on top of twice the timer's learnt lateness, and it spins the
 * rest: it leaves on time even when its timer is twice as late as usual. */
#define SPIN_GUARD_NS 5000u
/* Threads woken per hand-on (the rest are the next leader's). */
#define RELEASE_PASS_MAX 64

/* A waiting thread's futex word. */
enum { WAITING = 0, RELEASED = 1, LEADING = 2 };

struct waiter {
  uint64_t deadline_ns;
  uint64_t signalled_ns;       /* when another thread woke it, or 0 */
  bool resample;               /* it waits to measure the hand-over again */
  _Atomic uint32_t word;       /* WAITING, RELEASED or LEADING */
};

static struct {
  pthread_mutex_t lock;
  pthread_once_t once;
  struct waiter **heap;        /* min-heap on deadline_ns */
  size_t len, cap;
  struct waiter *leader;       /* the thread timing the earliest deadline */
  _Atomic unsigned spin_cores; /* 0: nobody spins; else the leader may */
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

/* ------------------------------------------------------------ leader -- */

/* Under the lock, the leader leaving (already popped): every thread due
 * before the next leader could act is released with it (woken early by
 * the hand-over, as they arrive on time on average), and the next earliest
 * is woken to lead.  Returns how many to wake, in due[]. */
static size_t
hand_on_locked (uint64_t now, uint64_t handover, uint64_t timer_late,
                struct waiter **due)
{
  size_t n = 0;
  while (d.len > 0 && n < RELEASE_PASS_MAX - 1
         && d.heap[0]->deadline_ns <= now + handover + timer_late / 2) {
    struct waiter *o = heap_pop ();
    o->signalled_ns = now;
    atomic_store_explicit (&o->word, RELEASED, memory_order_release);
    due[n++] = o;
  }
  d.leader = d.len > 0 ? d.heap[0] : NULL;
  if (d.leader) {
    d.leader->signalled_ns = now;
    atomic_store_explicit (&d.leader->word, LEADING, memory_order_release);
    due[n++] = d.leader;
  }
  return n;
}

/* The leader times its own wake-up and leaves on it: no other thread's
 * wake-up stands between its timer and its reply.  Called and returns with
 * the lock held; returns when w is released or no longer leads (an
 * earlier deadline arrived). */
static void
lead_locked (struct waiter *w)
{
  while (atomic_load_explicit (&w->word, memory_order_acquire) == LEADING) {
    w->signalled_ns = 0;       /* its designation's wake measures nothing here */
    uint64_t now = sl_clock_monotonic_ns ();
    uint64_t timer_late = sl_recent_median_ns (&d.timer_late);
    if (now - d.timer_sampled_ns > TIMER_RESAMPLE_NS) {
      timer_late = 0;          /* one decision untouched by the figure */
      d.timer_sampled_ns = now;
    }
    bool spins = atomic_load (&d.spin_cores) > 0;
    /* With a spin slot the timer ends well ahead and the thread spins the
     * rest; without, the thread leaves once what is left is shorter than
     * half a timer's lateness: early by less than it would be late. */
    uint64_t lead = spins ? 2 * timer_late + SPIN_GUARD_NS : timer_late / 2;
    if (w->deadline_ns <= now + lead) {
      heap_pop ();             /* w: the leader is the earliest */
      struct waiter *due[RELEASE_PASS_MAX];
      size_t n = hand_on_locked (now, sl_recent_median_ns (&d.handover), timer_late, due);
      atomic_store_explicit (&w->word, RELEASED, memory_order_release);
      pthread_mutex_unlock (&d.lock);
      /* a woken thread may be gone already (it saw its word): the wake of
       * a stale address is at worst a spurious wake-up, which futexes allow */
      for (size_t i = 0; i < n; i++)
        futex_wake (&due[i]->word);
      if (spins)
        sl_clock_spin_until_ns (w->deadline_ns);
      pthread_mutex_lock (&d.lock);
      return;
    }
    uint64_t until = spins ? w->deadline_ns - lead
      : w->deadline_ns > now + timer_late ? w->deadline_ns - timer_late
      : w->deadline_ns - timer_late / 2;       /* closer than that: split the error */
    pthread_mutex_unlock (&d.lock);
    futex_wait (&w->word, LEADING, until);
    uint64_t woke = sl_clock_monotonic_ns ();
    pthread_mutex_lock (&d.lock);
    if (woke >= until && atomic_load (&w->word) == LEADING) {
      learn (&d.timer_late, woke - until);
      d.timer_sampled_ns = woke;
      /* A thread sent to measure the hand-over again that leads (one
       * thread at a time, say after a saturated spell) is woken by nobody:
       * its timer's wake-up, the host's now, stands in.  Else the figure
       * learnt in the spell would stay and send every short wait out at
       * once for good. */
      if (w->resample) {
        learn (&d.handover, woke - until);
        w->resample = false;
      }
    }
  }
}

static void
start_path (void)
{
  sl_recent_median_init (&d.handover, LEARNT_WINDOW, HANDOVER_START_NS);
  sl_recent_median_init (&d.timer_late, LEARNT_WINDOW, TIMER_LATE_START_NS);
  d.timer_sampled_ns = sl_clock_monotonic_ns ();
  atomic_store (&d.handover_sampled_ns, d.timer_sampled_ns);
}

/* ------------------------------------------------------------- public -- */

void
sl_release_set_spin_cores (unsigned cores)
{
  atomic_store (&d.spin_cores, cores);
}

static int64_t
left_against (uint64_t left_ns, uint64_t deadline_ns)
{
  return left_ns >= deadline_ns ? (int64_t) (left_ns - deadline_ns)
                                : -(int64_t) (deadline_ns - left_ns);
}

/* A wait shorter than half the hand-over cannot be kept by the path: a
 * thread woken by another would leave late by more than it leaves early
 * now, and a sleep and wake-up cost the host two context switches (on a
 * saturated host, where the hand-over grows, that is most of what a request
 * costs: a leader's timed sleep of a few µs, 20 µs at QD 4, cost a third of
 * the IOPS, scripts/bench/realtime.md). */
static bool
leaves_at_once (uint64_t now, uint64_t deadline_ns, bool *resample)
{
  uint64_t handover = sl_recent_median_last_ns (&d.handover);
  if (deadline_ns - now >= handover / 2)
    return false;
  uint64_t sampled = atomic_load_explicit (&d.handover_sampled_ns, memory_order_relaxed);
  if (now - sampled > HANDOVER_RESAMPLE_NS) {
    /* this one measures the path again (one thread per try) */
    atomic_store_explicit (&d.handover_sampled_ns, now, memory_order_relaxed);
    *resample = true;
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
  pthread_once (&d.once, start_path);
  bool resample = false;
  if (leaves_at_once (now, deadline_ns, &resample))
    return left_against (now, deadline_ns);
  sl_clock_prepare_thread_once ();     /* a leader's timer: 1 ns slack */
  struct waiter w = { .deadline_ns = deadline_ns, .resample = resample };
  pthread_mutex_lock (&d.lock);
  if (heap_push (&w) == -1) {
    /* no room: the thread times itself, as before the path existed */
    pthread_mutex_unlock (&d.lock);
    sl_clock_sleep_until_ns (deadline_ns);
    return left_against (sl_clock_monotonic_ns (), deadline_ns);
  }
  if (d.heap[0] == &w) {       /* the earliest: it leads */
    if (d.leader != NULL)      /* the one it replaces finds out when its timer ends */
      atomic_store_explicit (&d.leader->word, WAITING, memory_order_release);
    d.leader = &w;
    atomic_store_explicit (&w.word, LEADING, memory_order_release);
  }
  for (;;) {
    uint32_t word = atomic_load_explicit (&w.word, memory_order_acquire);
    if (word == RELEASED)
      break;
    if (word == LEADING) {
      lead_locked (&w);
      continue;
    }
    pthread_mutex_unlock (&d.lock);
    futex_wait (&w.word, WAITING, UINT64_MAX);
    pthread_mutex_lock (&d.lock);
    if (w.signalled_ns != 0) { /* woken by a leader: that took the hand-over */
      now = sl_clock_monotonic_ns ();
      learn (&d.handover, now - w.signalled_ns);
      atomic_store_explicit (&d.handover_sampled_ns, now, memory_order_relaxed);
      w.signalled_ns = 0;
    }
  }
  pthread_mutex_unlock (&d.lock);
  return left_against (sl_clock_monotonic_ns (), deadline_ns);
}

void
sl_release_get_path (struct sl_release_path *out)
{
  pthread_once (&d.once, start_path);  /* the figures start with it */
  /* as last learnt: a request thread calls this under its engine's lock
   * after every release, and sorting there costs the lock */
  *out = (struct sl_release_path) {
    .handover_ns = sl_recent_median_last_ns (&d.handover),
    .timer_late_ns = sl_recent_median_last_ns (&d.timer_late),
    .spin_cores = atomic_load (&d.spin_cores),
  };
}
