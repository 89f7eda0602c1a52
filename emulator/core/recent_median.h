/* recent_median.h — the median of the last few samples of a figure the
 * host gives (a wake-up's lateness, a round trip).
 *
 * Such figures are skewed: mostly a few µs, now and then hundreds when the
 * host runs something else.  An average moves with one outlier (one 800 µs
 * wake-up in a moving average of weight 1/8 adds 100 µs) and a lead taken
 * from it sends threads out early; the median moves only when most recent
 * samples moved, and it is what a client's p50 feels.
 *
 * Any thread may push (slots and cursor are atomic: a racing push at worst
 * overwrites a sample); reading the median takes a copy and sorts it. */
#ifndef STORLAB_RECENT_MEDIAN_H
#define STORLAB_RECENT_MEDIAN_H

#include <stdatomic.h>
#include <stdint.h>

#define SL_RECENT_MEDIAN_SAMPLES 64u

struct sl_recent_median {
  _Atomic uint64_t sample_ns[SL_RECENT_MEDIAN_SAMPLES];
  _Atomic unsigned pushed;     /* samples ever pushed (the ring's cursor) */
  uint64_t start_ns;           /* the median before the first sample */
  unsigned window;             /* samples the median is taken over */
  /* the last median taken, and the push count it was taken at: a reader
   * sorts again only after window / 8 new samples */
  _Atomic uint64_t median_ns;
  _Atomic unsigned median_at;
};

/* window: how many recent samples count (at most SL_RECENT_MEDIAN_SAMPLES). */
void sl_recent_median_init (struct sl_recent_median *m, unsigned window, uint64_t start_ns);
void sl_recent_median_push (struct sl_recent_median *m, uint64_t sample_ns);
/* The median of the last window samples (of those there are so far, as of
 * at most window / 8 pushes ago); start_ns before the first. */
uint64_t sl_recent_median_ns (struct sl_recent_median *m);
/* The median as last taken by sl_recent_median_ns (start_ns before that):
 * no sort, for a reader on a hot path who only reports it. */
uint64_t sl_recent_median_last_ns (const struct sl_recent_median *m);
/* Samples pushed so far. */
unsigned sl_recent_median_count (struct sl_recent_median *m);

#endif
