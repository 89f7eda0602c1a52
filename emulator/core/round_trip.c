/* round_trip.c — the transport's round trip from the server's side
 * (round_trip.h). */
#include "round_trip.h"

#include <stdlib.h>
#include <string.h>

/* Arrivals over which the fewest replies found waiting is taken: in a
 * client's steady state some arrival finds only its own reply waiting. */
#define EPOCH_ARRIVALS 64u
#define MEDIAN_EVERY 16u

void
sl_round_trip_init (struct sl_round_trip *rt)
{
  memset (rt, 0, sizeof *rt);
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

static int
compare_u64 (const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
  return x < y ? -1 : x > y;
}

static bool
record_gap (struct sl_round_trip *rt, uint64_t gap_ns)
{
  rt->gap_ns[rt->gap_next] = gap_ns;
  rt->gap_next = (rt->gap_next + 1) % SL_ROUND_TRIP_GAPS;
  if (rt->gap_count < SL_ROUND_TRIP_GAPS)
    rt->gap_count++;
  if (++rt->gaps_since_median < MEDIAN_EVERY && rt->gap_count == SL_ROUND_TRIP_GAPS)
    return false;
  rt->gaps_since_median = 0;
  uint64_t sorted[SL_ROUND_TRIP_GAPS];
  memcpy (sorted, rt->gap_ns, rt->gap_count * sizeof sorted[0]);
  qsort (sorted, rt->gap_count, sizeof sorted[0], compare_u64);
  uint64_t median = sorted[rt->gap_count / 2];
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
