/* sim_run.c — the closed loop of sim_run.h. */
#include "sim_run.h"

#include <stdio.h>
#include <stdlib.h>

/* Completions of time-limited jobs at one virtual instant before we call
 * the model stuck: a zero-latency model never reaches a runtime. */
#define SIM_MAX_COMPLETIONS_WITHOUT_PROGRESS (UINT64_C (1) << 24)

static void on_complete (struct sl_engine *e, struct sl_request *r);

static bool
may_issue (const struct sim_clone *c)
{
  if (c->issued_bytes >= c->io_limit_bytes)
    return false;
  if (c->number_ios != 0 && c->issued_ios >= c->number_ios)
    return false;
  return true;
}

/* Issues the clone's next I/O on r.  False when the job is done instead:
 * a sequential pass ended with less than a block left (fio does not start
 * a pass it cannot fill; keep_running in fio's backend.c). */
static bool
issue (struct sim_clone *c, struct sl_request *r)
{
  enum sl_op op;
  uint64_t offset, length;
  bool wrapped = sl_job_stream_next (&c->stream, &op, &offset, &length);
  if (wrapped && c->io_limit_bytes - c->issued_bytes < c->max_bs_bytes)
    return false;
  r->op = op;
  r->flags = 0;
  r->offset_bytes = offset;
  r->length_bytes = length;
  r->completion_known = false;
  r->on_complete = on_complete;
  r->driver_data = c;
  r->model_next = NULL;
  c->issued_ios++;
  c->issued_bytes += length;
  c->in_flight++;
  c->sim->in_flight++;
  sl_engine_submit (c->sim->engine, r);
  return true;
}

static void
finish_clone (struct sim_clone *c)
{
  if (!c->finished) {
    c->finished = true;
    c->sim->active--;
  }
}

static void
on_complete (struct sl_engine *e, struct sl_request *r)
{
  struct sim_clone *c = r->driver_data;
  struct sim *sim = c->sim;
  uint64_t now = sl_engine_now_ns (e);
  c->in_flight--;
  sim->in_flight--;
  if (sim->stuck)
    return;

  if (now != sim->last_progress_ns) {
    sim->last_progress_ns = now;
    sim->completions_at_instant = 0;
  }
  else if (c->io_limit_bytes == UINT64_MAX && c->number_ios == 0
           && ++sim->completions_at_instant > SIM_MAX_COMPLETIONS_WITHOUT_PROGRESS) {
    sim->stuck = true;
    sim->active = 0;            /* ends the main loop; reported as an error */
    return;
  }

  if (c->finished)
    return;                     /* a time-limited job's straggler */
  /* fio resets its statistics when the ramp ends and stops at runtime */
  bool after_ramp = now > c->stats_start_ns
    || (now == c->stats_start_ns && c->job->ramp_time_ns == 0);
  if (after_ramp && now <= c->end_ns) {
    sl_fio_job_report_record (&c->report, r->op, r->length_bytes, now - r->arrival_ns);
    sl_sim_timeline_record (sim->timeline, now, r->op, r->length_bytes, now - r->arrival_ns);
    c->last_counted_completion_ns = now;
  }
  if (!c->stopped) {
    if (now >= c->end_ns) {
      c->stopped = true;
      c->stopped_by_time = true;
    }
    else if (may_issue (c) && issue (c, r))
      return;
    else
      c->stopped = true;
  }
  /* past the runtime, in-flight requests no longer count */
  if (c->in_flight == 0 || c->stopped_by_time)
    finish_clone (c);
}

static void
start_clone (struct sim_clone *c)
{
  for (uint32_t i = 0; i < c->job->iodepth && may_issue (c); i++)
    if (!issue (c, &c->pool[i]))
      break;
  if (c->in_flight == 0) {
    c->stopped = true;
    finish_clone (c);
  }
}

static int
compare_start (const void *a, const void *b)
{
  const struct sim_clone *const *x = a, *const *y = b;
  if ((*x)->start_ns != (*y)->start_ns)
    return (*x)->start_ns < (*y)->start_ns ? -1 : 1;
  return *x < *y ? -1 : (*x > *y);
}

/* The run stops early for a stuck model or a refused --event. */
static bool
halted (const struct sim *sim)
{
  return sim->stuck || sim->events->failed;
}

/* One engine event; every few thousand, a look at the wall clock. */
static bool
step (struct sim *sim)
{
  if (sim->progress.enabled && (++sim->progress.events & SIM_PROGRESS_CHECK_MASK) == 0)
    sl_sim_progress_tick (sim);
  return sl_engine_run_next (sim->engine);
}

static void
mark_reached (struct sl_engine *e, void *arg, uint64_t arg_u64)
{
  (void) e;
  (void) arg_u64;
  *(bool *) arg = true;
}

/* sl_engine_run_until through step(), so a long startdelay shows
 * progress too: events up to a marker at until_ns, then the rest of that
 * instant.  The marker only takes a sequence number: the order of the
 * other events is unchanged. */
void
sl_sim_run_until (struct sim *sim, uint64_t until_ns)
{
  bool reached = false;
  sl_engine_schedule (sim->engine, until_ns, mark_reached, &reached, 0);
  while (!reached && step (sim))
    ;
  sl_engine_run_until (sim->engine, until_ns);
}

int
sl_sim_start_clones (struct sim *sim, char *err, size_t err_bytes)
{
  struct sim_clone **order = malloc ((sim->clone_count ? sim->clone_count : 1) * sizeof *order);
  if (order == NULL) {
    snprintf (err, err_bytes, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < sim->clone_count; i++)
    order[i] = &sim->clones[i];
  qsort (order, sim->clone_count, sizeof *order, compare_start);
  sim->active = sim->clone_count;
  for (size_t i = 0; i < sim->clone_count && !halted (sim); i++) {
    sl_sim_run_until (sim, order[i]->start_ns);
    start_clone (order[i]);
  }
  free (order);
  return 0;
}

int
sl_sim_run (struct sim *sim, char *err, size_t err_bytes)
{
  if (sl_sim_start_clones (sim, err, err_bytes) != 0)
    return -1;
  while (sim->active > 0 && !halted (sim) && step (sim))
    ;
  /* let the device finish what time-limited jobs left in flight, so its
   * statistics end idle, as the real drive would */
  while (!halted (sim) && sim->in_flight > 0 && step (sim))
    ;

  if (sim->events->failed) {
    snprintf (err, err_bytes, "%s", sim->events->error);
    return -1;
  }
  if (sim->stuck) {
    snprintf (err, err_bytes, "virtual time stopped advancing at %llu ns: the model"
              " completes requests in zero time, so a time_based job never ends",
              (unsigned long long) sim->last_progress_ns);
    return -1;
  }
  if (sim->active > 0) {
    snprintf (err, err_bytes, "the %s model left requests uncompleted at %llu ns",
              sl_engine_model (sim->engine)->ops->kind,
              (unsigned long long) sl_engine_now_ns (sim->engine));
    return -1;
  }
  return 0;
}

/* ---- setup ---- */

int
sl_sim_setup_clones (struct sim *sim, const struct sl_jobfile *jf, uint64_t capacity_bytes,
                     size_t max_clones, char *err, size_t err_bytes)
{
  size_t total = 0;
  for (size_t j = 0; j < jf->job_count; j++)
    total += jf->jobs[j].numjobs;
  if (total > max_clones) {
    snprintf (err, err_bytes, "%s: %zu job clones in all; at most %zu", jf->path, total,
              max_clones);
    return -1;
  }
  sim->clones = calloc (total, sizeof *sim->clones);
  if (sim->clones == NULL) {
    snprintf (err, err_bytes, "out of memory for %zu jobs", total);
    return -1;
  }

  for (size_t j = 0; j < jf->job_count; j++) {
    const struct sl_job *job = &jf->jobs[j];
    for (unsigned k = 0; k < job->numjobs; k++) {
      struct sim_clone *c = &sim->clones[sim->clone_count];
      struct sl_job_region region;
      char why[512];
      if (sl_job_region_resolve (job, k, capacity_bytes, &region, why, sizeof why) != 0) {
        snprintf (err, err_bytes, "%s:%u: %s", jf->path, job->line, why);
        return -1;
      }
      c->pool = calloc (job->iodepth, sizeof *c->pool);
      if (c->pool == NULL) {
        snprintf (err, err_bytes, "out of memory for iodepth=%u", job->iodepth);
        return -1;
      }
      sim->clone_count++;
      c->sim = sim;
      c->job = job;
      c->clone_index = k;
      c->region = region;
      sl_job_stream_init (&c->stream, job, &region, sl_job_seed (job, j, k));
      c->start_ns = job->startdelay_ns;
      c->stats_start_ns = c->start_ns + job->ramp_time_ns;
      c->end_ns = job->runtime_ns ? c->stats_start_ns + job->runtime_ns : UINT64_MAX;
      /* time_based: run for the runtime, whatever the size; number_ios
       * still stops it earlier (fio's exceeds_number_ios) */
      c->io_limit_bytes = job->time_based ? UINT64_MAX : region.io_limit_bytes;
      c->number_ios = job->number_ios;
      c->max_bs_bytes = 0;
      for (int d = 0; d < 2; d++)
        if ((d == SL_OP_READ ? job->do_read : job->do_write) && job->bs_bytes[d] > c->max_bs_bytes)
          c->max_bs_bytes = job->bs_bytes[d];
      sl_fio_job_report_init (&c->report, job->name, job);
    }
  }
  return 0;
}


void
sl_sim_free_clones (struct sim *sim)
{
  for (size_t i = 0; i < sim->clone_count; i++)
    free (sim->clones[i].pool);
  free (sim->clones);
  sim->clones = NULL;
  sim->clone_count = 0;
}

/* ---- the measured phase ---- */

/* It begins where the first job's ramp ends. */
uint64_t
sl_sim_phase_start_ns (const struct sim *sim)
{
  uint64_t start_ns = UINT64_MAX;
  for (size_t i = 0; i < sim->clone_count; i++)
    if (sim->clones[i].stats_start_ns < start_ns)
      start_ns = sim->clones[i].stats_start_ns;
  return start_ns == UINT64_MAX ? 0 : start_ns;
}

/* Its length before the run: known when every job is time-limited. */
uint64_t
sl_sim_planned_phase_ns (const struct sim *sim)
{
  uint64_t end_ns = 0;
  for (size_t i = 0; i < sim->clone_count; i++) {
    if (sim->clones[i].end_ns == UINT64_MAX)
      return UINT64_MAX;
    if (sim->clones[i].end_ns > end_ns)
      end_ns = sim->clones[i].end_ns;
  }
  return end_ns - sl_sim_phase_start_ns (sim);
}

/* The simulated time the run should end at, UINT64_MAX if unknown. */
uint64_t
sl_sim_planned_end_ns (const struct sim *sim)
{
  uint64_t phase_ns = sl_sim_planned_phase_ns (sim);
  return phase_ns == UINT64_MAX ? UINT64_MAX : sl_sim_phase_start_ns (sim) + phase_ns;
}


/* Where a clone's statistics end: its runtime, or its last counted I/O. */
static uint64_t
clone_end_ns (const struct sim_clone *c)
{
  return c->stopped_by_time ? c->end_ns : c->last_counted_completion_ns;
}

/* After the run: the latest end of any clone. */
uint64_t
sl_sim_phase_end_ns (const struct sim *sim)
{
  uint64_t end_ns = sl_sim_phase_start_ns (sim);
  for (size_t i = 0; i < sim->clone_count; i++)
    if (clone_end_ns (&sim->clones[i]) > end_ns)
      end_ns = clone_end_ns (&sim->clones[i]);
  return end_ns;
}

/* fio's entries: one per clone, except that every group_reporting clone
 * (all are in group 0) folds into one entry where the first one stood. */
struct sl_fio_job_report *
sl_sim_build_reports (struct sim *sim, size_t *count)
{
  struct sl_fio_job_report *reports = calloc (sim->clone_count, sizeof *reports);
  if (reports == NULL)
    return NULL;
  size_t n = 0;
  struct sl_fio_job_report *group = NULL;
  for (size_t i = 0; i < sim->clone_count; i++) {
    struct sim_clone *c = &sim->clones[i];
    uint64_t end_ns = clone_end_ns (c);
    uint64_t runtime_ns = end_ns > c->stats_start_ns ? end_ns - c->stats_start_ns : 0;
    sl_fio_job_report_finish (&c->report, runtime_ns, end_ns, c->job->iodepth);
    if (!c->job->group_reporting)
      reports[n++] = c->report;
    else if (group == NULL) {
      group = &reports[n++];
      *group = c->report;
    }
    else
      sl_fio_job_report_merge (group, &c->report);
  }
  *count = n;
  return reports;
}
