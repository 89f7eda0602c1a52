/* round_trip.h — the transport's round trip as a server sees it: from a
 * reply leaving to the request that reply lets the client send.
 *
 * A client that keeps N requests in flight sends one as each reply comes,
 * so the k-th request to arrive answers the k-th reply out, however many
 * are in flight: replies wait in order of leaving and each arrival is paired
 * with the oldest.  (Measuring only the gaps that end an idle spell sees
 * the round trip at 1 outstanding alone; deeper, the engine is rarely
 * empty, and when it is the next request was on its way already: at 4
 * outstanding those gaps were under 30 µs where the round trip was nearer
 * 80, scripts/bench/realtime.md.)
 *
 * A reply no request answers (the client went shallower, or stopped) would
 * shift every pairing after it; it is dropped when it is older than the
 * longest gap counted, or when every arrival of an epoch found it waiting
 * beside the one it answered.  The estimate is the median of recent gaps. */
#ifndef STORLAB_ROUND_TRIP_H
#define STORLAB_ROUND_TRIP_H

#include <stdbool.h>
#include <stdint.h>

#include "recent_median.h"

#define SL_ROUND_TRIP_REPLIES 256      /* replies awaiting their request */
/* A longer gap is the client thinking, not the transport. */
#define SL_ROUND_TRIP_GAP_MAX_NS 2000000u

struct sl_round_trip {
  uint64_t reply_ns[SL_ROUND_TRIP_REPLIES];    /* a ring, oldest at head */
  unsigned head, waiting;
  unsigned epoch_arrivals, epoch_fewest_waiting;
  struct sl_recent_median gaps;
  uint64_t median_ns;          /* as last told */
};

void sl_round_trip_init (struct sl_round_trip *rt);
/* A reply left at now_ns. */
void sl_round_trip_reply (struct sl_round_trip *rt, uint64_t now_ns);
/* A request arrived at now_ns; true when the estimate changed. */
bool sl_round_trip_request (struct sl_round_trip *rt, uint64_t now_ns);
/* The median of recent round trips, 0 before the first. */
uint64_t sl_round_trip_ns (const struct sl_round_trip *rt);

#endif
