/* sim_run.h — storlab-sim's run: every job clone keeps iodepth requests in
 * flight against one model in virtual time (closed loop: a completion
 * issues the next request at the same virtual instant), like fio jobs
 * sharing a disk; afterwards fio's entries from the clones' counts.  The
 * measured phase begins at the earliest end of a job's ramp_time
 * (startdelay + ramp_time). */
#ifndef STORLAB_SIM_RUN_H
#define STORLAB_SIM_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/engine.h"
#include "fio_json.h"
#include "jobfile.h"
#include "sim_events.h"
#include "sim_progress.h"
#include "sim_timeline.h"

/* Job clones of a cluster run: every node's workers (256 nodes x 256). */
#define SIM_MAX_CLUSTER_CLONES 65536u

struct sim;

/* One job clone: its I/O stream, its request pool and its statistics. */
struct sim_clone {
  struct sim *sim;
  const struct sl_job *job;
  unsigned clone_index;
  struct sl_job_stream stream;
  uint64_t start_ns;                   /* startdelay */
  uint64_t stats_start_ns;             /* start + ramp_time */
  uint64_t end_ns;                     /* stats_start + runtime, or UINT64_MAX */
  uint64_t io_limit_bytes;
  uint64_t max_bs_bytes;               /* largest bs of the directions in use */
  struct sl_job_region region;         /* where its I/O goes */
  uint64_t number_ios;                 /* 0: unlimited */
  uint64_t issued_bytes, issued_ios;
  uint32_t in_flight;
  bool stopped;                        /* issues no more requests */
  bool stopped_by_time;
  bool finished;                       /* counted out of sim->active */
  uint64_t last_counted_completion_ns;
  struct sl_request *pool;
  struct sl_fio_job_report report;     /* this clone's counts and histograms */
};

struct sim {
  struct sl_engine *engine;
  struct sim_clone *clones;
  size_t clone_count;
  size_t active;
  uint64_t in_flight;                  /* over all clones */
  uint64_t last_progress_ns;
  uint64_t completions_at_instant;
  bool stuck;
  struct sl_sim_events *events;        /* --event: may stop the run */
  struct sl_sim_timeline *timeline;    /* --interval-ms */
  struct sim_progress progress;
};


/* One clone per job and numjobs, each with its region of a model of
 * capacity_bytes and a pool of iodepth requests.  -1 with err (naming the
 * job file's line) when more than max_clones or a region does not fit. */
int sl_sim_setup_clones (struct sim *sim, const struct sl_jobfile *jf, uint64_t capacity_bytes,
                         size_t max_clones, char *err, size_t err_bytes);
void sl_sim_free_clones (struct sim *sim);
/* Starts every clone at its start time, in order, the run going on
 * between.  -1 with err when out of memory. */
int sl_sim_start_clones (struct sim *sim, char *err, size_t err_bytes);
/* Runs the engine to until_ns, progress shown on the way. */
void sl_sim_run_until (struct sim *sim, uint64_t until_ns);
/* Starts the clones and runs every one to its end.  -1 with err if the
 * model stalls, leaves requests uncompleted or an --event was refused. */
int sl_sim_run (struct sim *sim, char *err, size_t err_bytes);

/* The measured phase: its start, its planned length (UINT64_MAX unless
 * every job is time-limited), its planned end, and after the run its end. */
uint64_t sl_sim_phase_start_ns (const struct sim *sim);
uint64_t sl_sim_planned_phase_ns (const struct sim *sim);
uint64_t sl_sim_planned_end_ns (const struct sim *sim);
uint64_t sl_sim_phase_end_ns (const struct sim *sim);
/* fio's entries after the run (*count of them), NULL when out of memory. */
struct sl_fio_job_report *sl_sim_build_reports (struct sim *sim, size_t *count);

#endif
