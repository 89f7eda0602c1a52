/* release.h — every real-time request thread of the process leaves at its
 * deadline: the earliest times itself, the others wait on a futex.
 *
 * A model decides when a request completes; an nbdkit thread waits for that
 * moment, then sends the reply.  When each waiting thread timed its own
 * wake-up and spun it away, a handful of spinning threads on two cores
 * starved the transport sharing those cores (100 µs at QD 16: 0.12 of the
 * memory plugin's IOPS); one dispatcher thread that slept to the earliest
 * deadline and woke each thread in turn put a futex wake-up (20-50 µs on
 * a busy small virtual machine) between every timer and its reply.  Here:
 *
 *  - the thread with the earliest deadline leads: it sleeps to its own
 *    deadline (1 ns timer slack, early by the timer's learnt lateness) and
 *    leaves on its own timer, with no other thread's wake-up between.  Only
 *    the leader holds a timer, as the dispatcher did, not one per thread
 *    (which on the 2-core host cost half the IOPS deeper than QD 1);
 *  - leaving, it releases every thread due before the next leader could
 *    act (woken early by the hand-over it measures, futex wake to that
 *    thread running, so they leave on time on average) and wakes the next
 *    earliest to lead.  An arrival with an earlier deadline takes the lead;
 *    the one it replaces finds out when its timer ends;
 *  - the hand-over and the timer's lateness are medians of recent samples
 *    (recent_median.h), which one late wake-up of the host does not move;
 *  - a thread whose wait is shorter than half the hand-over leaves at once,
 *    without sleeping: woken by another it would leave later than its
 *    deadline by more than it leaves early, and on a saturated host (where
 *    the hand-over grows to tens or hundreds of µs) any sleep and wake-up,
 *    a leader's timed one too, were most of what a request cost.  Such
 *    waits measure nothing, so one every 5 ms takes the path anyway to
 *    learn the hand-over again (leading, woken by nobody, its timer's
 *    wake-up stands in);
 *  - nothing spins unless given a core to spin on (sl_release_set_spin_cores):
 *    then the leader alone spins its last stretch.
 *
 * Measured against the dispatcher: scripts/bench/realtime.md.
 */
#ifndef STORLAB_RELEASE_H
#define STORLAB_RELEASE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "stats.h"

/* The cores the release path may keep busy spinning (0, the default:
 * never).  With 1 or more, the leader's timer ends ahead of its deadline by
 * twice the timer's learnt lateness and it spins the rest, so it leaves on
 * time however late its timer; one thread leads at a time, so it spins on
 * one core at most.  The budget is this process's: plugin processes sharing
 * a host each spin their own.  Takes effect at the leader's next decision. */
void sl_release_set_spin_cores (unsigned cores);

/* Blocks the calling thread until sl_clock_monotonic_ns() reaches
 * deadline_ns (or the leader's early hand-over makes it arrive then).
 * Returns when the thread left against deadline_ns: how late, negative
 * when it left early. */
int64_t sl_release_wait_until (uint64_t deadline_ns);

/* What the release path runs with and has learnt, for the stats (no lock
 * taken: figures of the moment). */
void sl_release_get_path (struct sl_release_path *out);

#endif
