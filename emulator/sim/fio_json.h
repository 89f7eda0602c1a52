/* fio_json.h — results in fio 3.33's --output-format=json layout.
 *
 * Every later tool reads the simulator's output exactly like fio's, so the
 * field names, units and nesting are fio's: bytes, KiB (io_kbytes, bw),
 * bytes/s (bw_bytes), ms (runtime, job_runtime), ns (*_ns), percentile
 * keys printed "%f".  In the simulator slat is 0 and clat == lat.  fio
 * prints clat percentiles only (lat_percentiles=0 by default), and so do
 * we, with the histogram beside them as --output-format=json+ does
 * (clat_ns.bins, see fio_json.c).  Anything storlab-specific lives under the top-level "storlab"
 * member, including each entry's non-zero latency histogram buckets so
 * later tools can merge histograms exactly.
 */
#ifndef STORLAB_FIO_JSON_H
#define STORLAB_FIO_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "core/histogram.h"
#include "jobfile.h"
#include "sim_events.h"
#include "sim_timeline.h"

/* fio's iodepth_level buckets: 1, 2, 4, 8, 16, 32, >=64 */
#define SL_FIO_DEPTH_LEVELS 7

struct sl_fio_direction {
  uint64_t ios;
  uint64_t bytes;
  uint64_t runtime_ns;                 /* 0 when the direction saw no I/O */
  struct sl_histogram latency_ns;      /* completion latency: clat == lat */
};

/* One entry of fio's "jobs" array: a job clone, or a group_reporting merge. */
struct sl_fio_job_report {
  const char *jobname;
  const struct sl_job *job;            /* options, iodepth, percentiles */
  struct sl_fio_direction dir[2];      /* [SL_OP_READ], [SL_OP_WRITE] */
  uint64_t job_runtime_ns;             /* fio sums this over a group */
  uint64_t elapsed_ns;                 /* start of the run to the end of the job */
  uint64_t depth_level_ios[SL_FIO_DEPTH_LEVELS];
};

void sl_fio_job_report_init (struct sl_fio_job_report *r, const char *jobname,
                             const struct sl_job *job);
/* Records one completed I/O. */
static inline void
sl_fio_job_report_record (struct sl_fio_job_report *r, int dir, uint64_t bytes,
                          uint64_t latency_ns)
{
  r->dir[dir].ios++;
  r->dir[dir].bytes += bytes;
  sl_histogram_record (&r->dir[dir].latency_ns, latency_ns);
}
/* Marks the run as having lasted runtime_ns at iodepth (after recording). */
void sl_fio_job_report_finish (struct sl_fio_job_report *r, uint64_t runtime_ns,
                               uint64_t elapsed_ns, uint32_t iodepth);
/* group_reporting, as fio's sum_thread_stats: counts and histograms add,
 * per-direction runtime is the maximum, job_runtime the sum. */
void sl_fio_job_report_merge (struct sl_fio_job_report *dst,
                              const struct sl_fio_job_report *src);

/* fio's iodepth_level bucket (0..6) of a depth. */
unsigned sl_fio_depth_level (uint32_t iodepth);

struct sl_fio_output {
  const char *version;                 /* "storlab-sim-0.1" */
  time_t timestamp;
  uint64_t timestamp_ms;
  const struct sl_jobfile *jobfile;    /* "global options" */
  const struct sl_fio_job_report *jobs;
  size_t job_count;
  /* the "storlab" member */
  const char *backend;                 /* "sim" */
  void (*write_device_json) (void *arg, FILE *out);
  void *device_arg;
  uint64_t simulated_ns;
  uint64_t wall_ns;
  uint64_t simulated_ios;
  /* storlab.events ([] without any) and, when timeline->interval_ns != 0,
   * storlab.timeline; both NULL: neither member.  Times in them count from
   * the start of the measured phase. */
  const struct sl_sim_events *events;
  const struct sl_sim_timeline *timeline;
};

void sl_fio_json_write (FILE *out, const struct sl_fio_output *o);

#endif
