/* histogram.h — log-linear latency histogram (HdrHistogram-like).
 *
 * Values below 2^SL_HIST_SUB_BITS are exact; above, each power-of-two octave
 * is split into 2^SL_HIST_SUB_BITS linear buckets, so any recorded value is
 * known to within 1/128 (0.78 %) and reported at its bucket midpoint
 * (±0.4 %).  Fixed layout: histograms with the same layout merge by adding
 * counts, and the struct can live in shared memory.
 */
#ifndef STORLAB_HISTOGRAM_H
#define STORLAB_HISTOGRAM_H

#include <stdint.h>

#define SL_HIST_SUB_BITS 7
#define SL_HIST_SUB_BUCKETS (1u << SL_HIST_SUB_BITS)
/* group 0 holds exact values 0..127; groups 1..57 hold octaves 2^7..2^63 */
#define SL_HIST_GROUPS (64 - SL_HIST_SUB_BITS + 1)
#define SL_HIST_BUCKETS (SL_HIST_GROUPS * SL_HIST_SUB_BUCKETS)

struct sl_histogram {
  uint64_t count;
  uint64_t min_value;          /* UINT64_MAX while empty */
  uint64_t max_value;
  double sum;                  /* exact sum, for the mean */
  double sum_squares;          /* for the standard deviation */
  uint64_t buckets[SL_HIST_BUCKETS];
};

void sl_histogram_init (struct sl_histogram *h);
void sl_histogram_record (struct sl_histogram *h, uint64_t value);
/* Adds every count of src into dst. */
void sl_histogram_merge (struct sl_histogram *dst, const struct sl_histogram *src);

unsigned sl_histogram_bucket_index (uint64_t value);
uint64_t sl_histogram_bucket_lowest (unsigned index);
uint64_t sl_histogram_bucket_highest (unsigned index);

double sl_histogram_mean (const struct sl_histogram *h);
double sl_histogram_stddev (const struct sl_histogram *h);
/* percentile_pct in [0, 100]; the value at rank ceil(p/100 * count),
 * reported as the bucket midpoint clamped to [min, max].  0 when empty. */
uint64_t sl_histogram_percentile (const struct sl_histogram *h, double percentile_pct);

#endif
