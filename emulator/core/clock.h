/* clock.h — the two clocks an engine can run on.
 *
 * Real time: CLOCK_MONOTONIC, waits are absolute-deadline sleeps finished
 * with a short spin so a guest feels the modelled latency, not the kernel's
 * timer slack.  Virtual time: the engine jumps its own counter to the next
 * event; nothing ever sleeps.  Models never see this: they read
 * sl_engine_now_ns().
 */
#ifndef STORLAB_CLOCK_H
#define STORLAB_CLOCK_H

#include <stdint.h>

enum sl_clock_kind { SL_CLOCK_VIRTUAL, SL_CLOCK_REAL };

/* Monotonic wall clock in nanoseconds. */
uint64_t sl_clock_monotonic_ns (void);

/* Block the calling thread until sl_clock_monotonic_ns() >= deadline_ns.
 * Sleeps with TIMER_ABSTIME to (deadline - spin margin), then spins.  The
 * spin margin adapts to the oversleep this thread has observed.  Sets the
 * calling thread's timer slack to 1 ns on first use. */
void sl_clock_sleep_until_ns (uint64_t deadline_ns);

/* Busy-waits until sl_clock_monotonic_ns() >= deadline_ns; returns that
 * time (the last microseconds of a wait, where sleeping is too coarse). */
uint64_t sl_clock_spin_until_ns (uint64_t deadline_ns);

/* Minimises the calling thread's timer slack (for threads that wait on
 * condition variables with deadlines, like the engine's driver). */
void sl_clock_prepare_thread (void);
void sl_clock_prepare_thread_once (void);

#endif
