/* ssd_timeline.h — a shared resource's busy intervals (an SSD's channels and
 * host link), internal to the ssd model.
 *
 * A channel or a link moves whatever data is ready: a transfer reserved
 * later may use an idle gap before transfers reserved earlier (whose data
 * is ready later).  A single "free from" time cannot express that -- one
 * transfer waiting for a busy die would hold back everything behind it --
 * so the timeline keeps its future intervals, sorted and disjoint, and a
 * reservation takes the earliest gap at or after its ready time that fits.
 * Intervals that ended before the engine's present are dropped.
 */
#ifndef STORLAB_SSD_TIMELINE_H
#define STORLAB_SSD_TIMELINE_H

#include <stdint.h>

struct ssd_interval {
  uint64_t start_ns, end_ns;
};

struct ssd_timeline {
  struct ssd_interval *items;  /* [first, first + count) sorted by start */
  uint32_t first, count, capacity;
};

/* 0, or -1 when out of memory. */
int ssd_timeline_init (struct ssd_timeline *t, uint32_t capacity);
void ssd_timeline_free (struct ssd_timeline *t);
/* Reserves duration_ns at the earliest time >= ready_ns that is free;
 * returns the start.  now_ns: nothing before it matters any more. */
uint64_t ssd_timeline_reserve (struct ssd_timeline *t, uint64_t now_ns, uint64_t ready_ns,
                               uint64_t duration_ns);
/* End of the last reservation (0 when none). */
uint64_t ssd_timeline_last_end (const struct ssd_timeline *t);

#endif
