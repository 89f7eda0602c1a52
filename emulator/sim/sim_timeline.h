/* sim_timeline.h — storlab-sim's per-interval series (--interval-ms):
 * completions of all jobs, summed per direction into fixed intervals of
 * the measured phase, so a sweep can plot what happened over time (e.g.
 * before and after a live event).  An I/O counts in the interval in which
 * it completes: interval k covers (start + k*I, start + (k+1)*I], the
 * phase's first instant going to interval 0. */
#ifndef STORLAB_SIM_TIMELINE_H
#define STORLAB_SIM_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

struct sl_sim_interval_dir {
  uint64_t ios;
  uint64_t bytes;
  uint64_t lat_sum_ns;                 /* sum of completion latencies */
};

struct sl_sim_interval {
  struct sl_sim_interval_dir dir[2];   /* [SL_OP_READ], [SL_OP_WRITE] */
};

struct sl_sim_timeline {
  uint64_t interval_ns;                /* 0: no timeline */
  uint64_t phase_start_ns;             /* engine time of the measured phase's start */
  uint64_t phase_end_ns;               /* set by sl_sim_timeline_finish */
  struct sl_sim_interval *intervals;
  size_t count, capacity;
  int out_of_memory;
};

void sl_sim_timeline_init (struct sl_sim_timeline *t, uint64_t interval_ns,
                           uint64_t phase_start_ns);
/* One completed I/O at engine time now_ns (>= phase_start_ns); dir is an
 * sl_op (read or write).  A no-op when the timeline is off. */
void sl_sim_timeline_record (struct sl_sim_timeline *t, uint64_t now_ns, int dir,
                             uint64_t bytes, uint64_t latency_ns);
/* Ends the series at phase_end_ns: one entry per interval of the measured
 * phase, quiet ones included, the last cut short by the phase end.
 * -1 when memory ran out on the way. */
int sl_sim_timeline_finish (struct sl_sim_timeline *t, uint64_t phase_end_ns);
void sl_sim_timeline_free (struct sl_sim_timeline *t);

#endif
