/* release.h — one dispatcher releases every real-time request thread of the
 * process at its deadline.
 *
 * A model decides when a request completes; an nbdkit thread waits for that
 * moment, then sends the reply.  When each waiting thread timed its own
 * wake-up, each paid the kernel's wake-up lateness and spun it away, and a
 * handful of spinning threads on two cores starved the transport sharing
 * those cores (100 µs at QD 16: 0.12 of the memory plugin's IOPS).  Here the
 * waiting threads block on a futex and one dispatcher owns the deadlines:
 *
 *  - it sleeps to the earliest deadline with 1 ns timer slack.  It runs at
 *    normal priority: at SCHED_FIFO it preempted the very threads it had
 *    just released (100 µs at QD 16 on the 2-core host: 40k IOPS against
 *    74k, scripts/bench/realtime_bench.py);
 *  - it wakes each thread early by the hand-over it measures (futex wake to
 *    that thread running), so threads leave on time, not late by it; the
 *    hand-over and the timer's lateness are medians of recent samples
 *    (recent_median.h), which one late wake-up of the host does not move;
 *  - threads due together (before its next wake-up could come) leave in
 *    one pass;
 *  - a thread whose wait is shorter than half the hand-over leaves at once,
 *    without sleeping: the path would release it later than its deadline
 *    by more than it leaves early, and on a saturated host (where the
 *    hand-over grows to tens of µs) the sleep and wake-up were most of
 *    what a request cost (100 µs at QD 64: 68-72k IOPS, 95-114k leaving
 *    at once).  Such waits measure nothing, so one every 5 ms takes the
 *    path anyway to learn the hand-over again;
 *  - a thread spins its last microseconds only when given a core to spin
 *    on (sl_release_set_spin_cores): never more spinning threads than that.
 */
#ifndef STORLAB_RELEASE_H
#define STORLAB_RELEASE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "stats.h"

/* The cores the release path may keep busy spinning (0, the default:
 * never).  With N, up to N released threads at once are woken ahead of
 * their deadline by twice the learnt hand-over and spin the rest, so they
 * leave on time however long their wake-up took.  The budget is this
 * process's: plugin processes sharing a host each spin their own.  Takes
 * effect at the dispatcher's next decision. */
void sl_release_set_spin_cores (unsigned cores);

/* Blocks the calling thread until sl_clock_monotonic_ns() reaches
 * deadline_ns (or the dispatcher's early hand-over makes it arrive then).
 * Returns when the thread left against deadline_ns: how late, negative
 * when it left early. */
int64_t sl_release_wait_until (uint64_t deadline_ns);

/* What the dispatcher runs with and has learnt, for the stats (no lock
 * taken: figures of the moment). */
void sl_release_get_path (struct sl_release_path *out);

#endif
