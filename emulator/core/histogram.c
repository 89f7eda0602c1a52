/* histogram.c — log-linear latency histogram (see histogram.h). */
#include "histogram.h"

#include <math.h>
#include <string.h>

void
sl_histogram_init (struct sl_histogram *h)
{
  memset (h, 0, sizeof *h);
  h->min_value = UINT64_MAX;
}

/* OR-ing in 2^SUB_BITS makes values below 2^(SUB_BITS+1) share the
 * exponent SUB_BITS, so group 0 (exact) and group 1 (also exact: bucket
 * width 1) come out of the same formula without a branch:
 *   index = (e - SUB_BITS) * SUB_BUCKETS + (v >> (e - SUB_BITS)),
 * which equals the documented (e - SUB_BITS + 1) * 128 + mantissa - 128. */
unsigned
sl_histogram_bucket_index (uint64_t value)
{
  unsigned exponent = 63u - (unsigned) __builtin_clzll (value | SL_HIST_SUB_BUCKETS);
  unsigned shift = exponent - SL_HIST_SUB_BITS;
  return (shift << SL_HIST_SUB_BITS) + (unsigned) (value >> shift);
}

uint64_t
sl_histogram_bucket_lowest (unsigned index)
{
  if (index >= SL_HIST_BUCKETS)
    index = SL_HIST_BUCKETS - 1;
  unsigned group = index >> SL_HIST_SUB_BITS;
  uint64_t sub = index & (SL_HIST_SUB_BUCKETS - 1);
  if (group == 0)
    return sub;
  return (SL_HIST_SUB_BUCKETS + sub) << (group - 1);
}

uint64_t
sl_histogram_bucket_highest (unsigned index)
{
  if (index >= SL_HIST_BUCKETS)
    index = SL_HIST_BUCKETS - 1;
  unsigned group = index >> SL_HIST_SUB_BITS;
  uint64_t width = group == 0 ? 1 : UINT64_C (1) << (group - 1);
  /* the last bucket ends exactly at UINT64_MAX: lowest + (width-1) never wraps */
  return sl_histogram_bucket_lowest (index) + (width - 1);
}

void
sl_histogram_record (struct sl_histogram *h, uint64_t value)
{
  h->count++;
  if (value < h->min_value)
    h->min_value = value;
  if (value > h->max_value)
    h->max_value = value;
  double v = (double) value;
  h->sum += v;
  h->sum_squares += v * v;
  h->buckets[sl_histogram_bucket_index (value)]++;
}

void
sl_histogram_merge (struct sl_histogram *dst, const struct sl_histogram *src)
{
  if (src->count == 0)
    return;
  dst->count += src->count;
  if (src->min_value < dst->min_value)
    dst->min_value = src->min_value;
  if (src->max_value > dst->max_value)
    dst->max_value = src->max_value;
  dst->sum += src->sum;
  dst->sum_squares += src->sum_squares;
  for (unsigned i = 0; i < SL_HIST_BUCKETS; i++)
    dst->buckets[i] += src->buckets[i];
}

double
sl_histogram_mean (const struct sl_histogram *h)
{
  if (h->count == 0)
    return 0.0;
  return h->sum / (double) h->count;
}

double
sl_histogram_stddev (const struct sl_histogram *h)
{
  if (h->count == 0)
    return 0.0;
  double n = (double) h->count;
  double mean = h->sum / n;
  double variance = h->sum_squares / n - mean * mean;
  /* E[x^2] - E[x]^2 can dip below zero by rounding when the spread is tiny */
  if (!(variance > 0.0))
    return 0.0;
  return sqrt (variance);
}

uint64_t
sl_histogram_percentile (const struct sl_histogram *h, double percentile_pct)
{
  if (h->count == 0)
    return 0;
  if (!(percentile_pct > 0.0))  /* also catches NaN */
    return h->min_value;
  if (percentile_pct >= 100.0)
    return h->max_value;

  /* multiply before dividing and shave a relative epsilon so that e.g.
   * 99.9 % of 1000 is rank 999, not 1000 through rounding */
  double exact_rank = percentile_pct * (double) h->count / 100.0;
  double rank_f = ceil (exact_rank * (1.0 - 1e-12));
  uint64_t rank = rank_f < 1.0 ? 1 : (uint64_t) rank_f;
  if (rank > h->count)
    rank = h->count;

  unsigned first = sl_histogram_bucket_index (h->min_value);
  unsigned last = sl_histogram_bucket_index (h->max_value);
  uint64_t seen = 0;
  unsigned index = last;
  for (unsigned i = first; i <= last; i++) {
    seen += h->buckets[i];
    if (seen >= rank) {
      index = i;
      break;
    }
  }

  uint64_t lowest = sl_histogram_bucket_lowest (index);
  uint64_t highest = sl_histogram_bucket_highest (index);
  uint64_t midpoint = lowest + (highest - lowest) / 2;
  if (midpoint < h->min_value)
    return h->min_value;
  if (midpoint > h->max_value)
    return h->max_value;
  return midpoint;
}
