/* core_timeline.h — one core's booked work as spans of time, so that work
 * booked later but runnable earlier takes a hole before work booked ahead.
 *
 * The simulator books a shared host core when it hands work out, not when
 * the work runs: a guest's next step is booked when its vCPU will be free,
 * the hypervisor's work for a reply at the end of the step that sent it.
 * A core kept as one "free from" time loses the hole before such a booking
 * for good: with the replicas profile's reads at QD 8 the lab host's two
 * cores sat at 85 % in the model with every guest waiting for one, where
 * the lab's were 99.5 % busy (scripts/bench/cluster_validation.md).  A
 * host's scheduler gives a runnable thread an idle core; so does this. */
#ifndef STORLAB_CORE_TIMELINE_H
#define STORLAB_CORE_TIMELINE_H

#include <stdint.h>

struct cl_span {
  uint64_t start_ns, end_ns;
};

struct cl_core_timeline {
  struct cl_span *spans;       /* sorted, apart; those ended by the floor go */
  uint32_t count, room;
};

/* When work of cost_ns runnable from from_ns first fits: in a hole
 * between the booked spans, or after the last. */
uint64_t cl_timeline_fit (const struct cl_core_timeline *t, uint64_t from_ns, uint64_t cost_ns);

/* Books [start_ns, start_ns + cost_ns) (where cl_timeline_fit said);
 * spans that ended by floor_ns, before which nothing is booked again, go. */
void cl_timeline_book (struct cl_core_timeline *t, uint64_t start_ns, uint64_t cost_ns,
                       uint64_t floor_ns);

void cl_timeline_free (struct cl_core_timeline *t);

#endif
