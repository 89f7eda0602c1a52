/* round_trip.c — the transport's round trip from the server's side
 * (round_trip.h). */
#include "round_trip.h"

#include <string.h>

/* Arrivals over which the fewest replies found waiting is taken: in a
 * client's steady state some arrival finds only its own reply waiting. */
#define EPOCH_ARRIVALS 64u
/* gaps the median is taken over */
#define GAPS 64u

void
sl_round_trip_init (struct sl_round_trip *rt)
{
  memset (rt, 0, sizeof *rt);
  sl_recent_median_init (&rt->gaps, GAPS, 0);
  rt->epoch_fewest_waiting = SL_ROUND_TRIP_REPLIES;
}

static void
drop_oldest (struct sl_round_trip *rt, unsigned count)
{
  rt->head = (rt->head + count) % SL_ROUND_TRIP_REPLIES;
  rt->waiting -= count;
}

void
sl_round_trip_reply (struct sl_round_trip *rt, uint64_t now_ns)
{
  if (rt->waiting == SL_ROUND_TRIP_REPLIES)
    drop_oldest (rt, 1);
  rt->reply_ns[(rt->head + rt->waiting) % SL_ROUND_TRIP_REPLIES] = now_ns;
  rt->waiting++;
}

static bool
record_gap (struct sl_round_trip *rt, uint64_t gap_ns)
{
  sl_recent_median_push (&rt->gaps, gap_ns);
  uint64_t median = sl_recent_median_ns (&rt->gaps);
  bool changed = median != rt->median_ns;
  rt->median_ns = median;
  return changed;
}

bool
sl_round_trip_request (struct sl_round_trip *rt, uint64_t now_ns)
{
  while (rt->waiting > 0 && now_ns - rt->reply_ns[rt->head] > SL_ROUND_TRIP_GAP_MAX_NS)
    drop_oldest (rt, 1);
  if (rt->waiting < rt->epoch_fewest_waiting)
    rt->epoch_fewest_waiting = rt->waiting;
  if (++rt->epoch_arrivals == EPOCH_ARRIVALS) {
    /* every arrival of the epoch found these waiting besides its own */
    if (rt->epoch_fewest_waiting > 1)
      drop_oldest (rt, rt->epoch_fewest_waiting - 1);
    rt->epoch_arrivals = 0;
    rt->epoch_fewest_waiting = SL_ROUND_TRIP_REPLIES;
  }
  if (rt->waiting == 0)
    return false;              /* the client's first requests answer no reply */
  uint64_t gap_ns = now_ns - rt->reply_ns[rt->head];
  drop_oldest (rt, 1);
  return record_gap (rt, gap_ns);
}

uint64_t
sl_round_trip_ns (const struct sl_round_trip *rt)
{
  return rt->median_ns;
}
