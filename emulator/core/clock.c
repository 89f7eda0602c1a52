/* clock.c — monotonic time and precise absolute-deadline waits. */
#define _GNU_SOURCE
#include "clock.h"

#include <errno.h>
#include <sys/prctl.h>
#include <time.h>

/* Sleep margins adapt per thread: each waiting nbdkit worker learns how late
 * the kernel wakes *it* and spins only for that long. */
#define SPIN_MARGIN_MIN_NS 5000u
#define SPIN_MARGIN_MAX_NS 1000000u
#define SPIN_MARGIN_START_NS 60000u

static _Thread_local int thread_prepared;
static _Thread_local uint64_t oversleep_ewma_ns = SPIN_MARGIN_START_NS / 2;

uint64_t
sl_clock_monotonic_ns (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

void
sl_clock_prepare_thread (void)
{
  /* Default timer slack is 50 µs: more than the error budget of a fast
   * device.  1 ns asks the kernel for its best. */
  prctl (PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  thread_prepared = 1;
}

void
sl_clock_prepare_thread_once (void)
{
  if (!thread_prepared)
    sl_clock_prepare_thread ();
}

static uint64_t
spin_margin_ns (void)
{
  uint64_t m = 2 * oversleep_ewma_ns + SPIN_MARGIN_MIN_NS;
  return m > SPIN_MARGIN_MAX_NS ? SPIN_MARGIN_MAX_NS : m;
}

static inline void
cpu_relax (void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause ();
#endif
}

void
sl_clock_sleep_until_ns (uint64_t deadline_ns)
{
  uint64_t now = sl_clock_monotonic_ns ();
  if (now >= deadline_ns)
    return;
  sl_clock_prepare_thread_once ();

  uint64_t margin = spin_margin_ns ();
  if (deadline_ns - now > margin) {
    uint64_t target = deadline_ns - margin;
    struct timespec ts = { .tv_sec = (time_t) (target / 1000000000u),
                           .tv_nsec = (long) (target % 1000000000u) };
    while (clock_nanosleep (CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
      ;
    now = sl_clock_monotonic_ns ();
    uint64_t late = now > target ? now - target : 0;
    /* EWMA with weight 1/8: follows load changes within a few dozen waits. */
    oversleep_ewma_ns = oversleep_ewma_ns - oversleep_ewma_ns / 8 + late / 8;
  }
  sl_clock_spin_until_ns (deadline_ns);
}

uint64_t
sl_clock_spin_until_ns (uint64_t deadline_ns)
{
  uint64_t now;
  while ((now = sl_clock_monotonic_ns ()) < deadline_ns)
    cpu_relax ();
  return now;
}
