/* sim.c — storlab-sim: run a fio job file against a device model in
 * virtual time and print fio-compatible JSON.
 *
 *   storlab-sim PLUGIN [OPTIONS] [KEY=VALUE ...] [--] [KEY=VALUE ...] JOBFILE
 *
 * KEY=VALUE pairs are the plugin's: model parameters and preset= through
 * sl_device_builder, driver keys through driver_keys.h.  After `--` every
 * argument is a KEY=VALUE pair or the JOBFILE, never an option, so a key
 * such as "--interval-ms=5" from a topology is refused as a key.
 * --event runs a raid control command at a virtual time (sim_events.h);
 * --interval-ms
 * adds a per-interval series (sim_timeline.h).  Both count time from the
 * start of the measured phase: the earliest end of a job's ramp_time
 * (startdelay + ramp_time).  Every job clone
 * keeps iodepth requests in flight against the one device (closed loop: a
 * completion issues the next request at the same virtual instant), like
 * fio jobs sharing a disk.  The JSON is built only after the run succeeded,
 * so an error leaves stdout empty.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "catalog/kinds.h"
#include "cluster/cluster.h"
#include "cluster/fabric.h"
#include "core/clock.h"
#include "core/engine.h"
#include "core/model.h"
#include "core/stats.h"
#include "device/device.h"
#include "device/driver_keys.h"
#include "device/params.h"
#include "device/presets.h"
#include "fio_json.h"
#include "jobfile.h"
#include "raid/raid.h"
#include "huge_pages.h"
#include "sim_events.h"
#include "sim_timeline.h"

#define SIM_VERSION "storlab-sim-0.1"
#define ERR_BYTES 2048

/* Completions of time-limited jobs at one virtual instant before we call
 * the model stuck: a zero-latency model never reaches a runtime. */
#define SIM_MAX_COMPLETIONS_WITHOUT_PROGRESS (UINT64_C (1) << 24)

#define SIM_MAX_INTERVAL_MS 60000u

/* Job clones of a cluster run: every node's workers (256 nodes x 256). */
#define SIM_MAX_CLUSTER_CLONES 65536u

/* Progress on stderr (stdout carries the JSON): after 2 s of wall time,
 * once a second.  The clock is read every 4096 events: a few ns each. */
#define SIM_PROGRESS_AFTER_NS UINT64_C (2000000000)
#define SIM_PROGRESS_EVERY_NS UINT64_C (1000000000)
#define SIM_PROGRESS_CHECK_MASK UINT64_C (4095)

struct sim_progress {
  bool enabled;                        /* stderr is a terminal, or --progress */
  bool tty;                            /* rewrite one line; cleared at the end */
  bool shown;                          /* a line was printed */
  uint64_t events;
  uint64_t wall_start_ns;
  uint64_t next_ns;                    /* wall time of the next line */
  uint64_t planned_ns;                 /* simulated end if every job is time-limited */
};

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

static void
usage (FILE *out)
{
  fprintf (out,
           "usage: storlab-sim PLUGIN [--interval-ms N] [--event AT:COMMAND ...] [--progress]\n"
           "                   [KEY=VALUE ...] [--] [KEY=VALUE ...] JOBFILE\n"
           "       storlab-sim cluster [--warm] [--interval-ms N] [--event AT:COMMAND ...]\n"
           "                   [--progress] [--] SPEC JOBFILE\n"
           "       storlab-sim PLUGIN --help\n"
           "       storlab-sim --list-presets\n"
           "\n"
           "Runs the fio job file JOBFILE closed-loop against the PLUGIN device model\n"
           "(%s) in virtual time and prints fio --output-format=json+ on stdout\n"
           "(clat_ns.bins: {\"<bucket midpoint ns>\": count}), storlab's extras under\n"
           "\"storlab\".  KEY=VALUE pairs are the nbdkit plugin's: model parameters,\n"
           "preset=NAME, and the driver keys:\n", sl_device_kind_names ());
  sl_driver_keys_help (out);
  fprintf (out,
           "\n"
           "Times below count from the start of the measured phase: the end of ramp_time\n"
           "(of the job whose ramp ends first).\n"
           "  --event AT:COMMAND   raid, cluster; repeatable: at AT (fio time syntax: 10, 10s,\n"
           "                       500ms, 2m) run COMMAND as the raid plugin's control socket\n"
           "                       would: battery ok|learning|failed|absent, policy\n"
           "                       write-back|write-through|forced-write-back, fail-member N,\n"
           "                       replace-member N.  Output: storlab.events = [{\"t_ms\",\n"
           "                       \"command\", \"reply\"}] (the controller's own log stays in\n"
           "                       storlab.device.model.events).  A cluster takes\n"
           "                       snapshot (one of every volume with snapshots=) and\n"
           "                       snapshot delete (each one's oldest) instead.\n"
           "  --interval-ms N      1..%u: output storlab.timeline_interval_ms = N and\n"
           "                       storlab.timeline = [{\"t_ms\": interval end, \"duration_ms\",\n"
           "                       \"read\": {\"ios\", \"bytes\", \"lat_sum_ns\"}, \"write\": {...}}],\n"
           "                       one entry per interval of the measured phase, all jobs\n"
           "                       summed, each I/O in the interval it completed in.\n"
           "  --warm               cluster only: every job's region starts in the steady\n"
           "                       state its workload reaches (read caches hold their\n"
           "                       share of it, write buffers a writer's share at their\n"
           "                       high watermark, or where a 2 s probe run finds the\n"
           "                       fill steady when writeback cannot keep up, up to\n"
           "                       full: a sequential writer's region end);\n"
           "                       the JSON says so (start_state).\n"
           "  --progress           print progress (simulated time, percent, wall time, time\n"
           "                       left) to stderr once a second after the first 2 s even\n"
           "                       when stderr is not a terminal; on a terminal it is shown\n"
           "                       anyway.  stdout carries only the JSON.\n"
           "  --                   ends the options: every later argument is a KEY=VALUE\n"
           "                       pair or the JOBFILE.\n"
           "\n"
           "Job files: regular files of at most 1 MiB; runtime, ramp_time and startdelay\n"
           "at most 30 days each; bs and byte offsets multiples of 512 (the plugins' sector).\n",
           SIM_MAX_INTERVAL_MS);
}

static int
print_help (const char *kind_name)
{
  usage (stdout);
  if (kind_name && strcmp (kind_name, "cluster") == 0) {
    printf ("\ncluster: SPEC describes a whole lab (nodes, devices, links, local volumes,\n"
            "LVs, replicated volumes, exports); `storlab sweep --backend sim` writes it from\n"
            "a topology.  Its format: storlab-sim(1).  Host presets: %s.  Link presets:\n"
            "%s.\n", cl_host_preset_names (), cl_link_preset_names ());
    return 0;
  }
  const struct sl_device_kind *kind = kind_name ? sl_device_kind_find (kind_name) : NULL;
  if (kind == NULL) {
    printf ("\nRun 'storlab-sim PLUGIN --help' for a model's parameters.\n");
    return 0;
  }
  void *defaults = calloc (1, kind->config_bytes);
  if (defaults == NULL) {
    fprintf (stderr, "storlab-sim: out of memory\n");
    return 1;
  }
  kind->set_defaults (defaults);
  printf ("\n%s parameters:\n", kind->kind);
  sl_params_help (kind->params, kind->param_count, defaults, stdout);
  free (defaults);
  char names[1024];
  sl_preset_names (kind->kind, names, sizeof names);
  printf ("\n%s presets: %s\n", kind->kind, names);
  return 0;
}

static int
list_presets (void)
{
  for (size_t i = 0; i < sl_preset_count (); i++) {
    const struct sl_preset *p = sl_preset_at (i);
    printf ("%-24s %-5s %s\n", p->name, p->kind, p->summary);
  }
  return 0;
}

/* ---- the closed loop ---- */

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

/* ---- progress on stderr ---- */

/* "42.0 s", "12 min 5 s", "3 h 20 min", "2 d 4 h": simulated and wall times. */
static void
format_duration (uint64_t ns, char *out, size_t out_bytes)
{
  uint64_t s = ns / 1000000000u;
  if (s < 60)
    snprintf (out, out_bytes, "%.1f s", (double) ns / 1e9);
  else if (s < 3600)
    snprintf (out, out_bytes, "%llu min %llu s", (unsigned long long) (s / 60),
              (unsigned long long) (s % 60));
  else if (s < 86400)
    snprintf (out, out_bytes, "%llu h %llu min", (unsigned long long) (s / 3600),
              (unsigned long long) (s % 3600 / 60));
  else
    snprintf (out, out_bytes, "%llu d %llu h", (unsigned long long) (s / 86400),
              (unsigned long long) (s % 86400 / 3600));
}

static double
ratio (uint64_t done, uint64_t total)
{
  return total == 0 || done >= total ? 1.0 : (double) done / (double) total;
}

/* How far a clone is: it stops at whichever of its limits comes first. */
static double
clone_fraction (const struct sim_clone *c, uint64_t now_ns)
{
  if (c->finished)
    return 1.0;
  double f = 0.0, g;
  if (c->end_ns != UINT64_MAX && (g = ratio (now_ns, c->end_ns)) > f)
    f = g;
  if (c->io_limit_bytes != UINT64_MAX && (g = ratio (c->issued_bytes, c->io_limit_bytes)) > f)
    f = g;
  if (c->number_ios != 0 && (g = ratio (c->issued_ios, c->number_ios)) > f)
    f = g;
  return f;
}

/* The run ends with its slowest clone. */
static double
run_fraction (const struct sim *sim, uint64_t now_ns)
{
  double f = 1.0;
  for (size_t i = 0; i < sim->clone_count; i++) {
    double g = clone_fraction (&sim->clones[i], now_ns);
    if (g < f)
      f = g;
  }
  return f;
}

static void
progress_print (struct sim *sim, uint64_t wall_ns, bool last)
{
  struct sim_progress *p = &sim->progress;
  uint64_t now_ns = sl_engine_now_ns (sim->engine);
  double f = last ? 1.0 : run_fraction (sim, now_ns);
  char done[32], total[40] = "", wall[32], left[48] = "";
  format_duration (now_ns, done, sizeof done);
  if (p->planned_ns != UINT64_MAX) {
    strcpy (total, " of ");
    format_duration (p->planned_ns, total + 4, sizeof total - 4);
  }
  format_duration (wall_ns, wall, sizeof wall);
  if (!last && f > 0.0) {
    strcpy (left, ", about ");
    format_duration ((uint64_t) ((double) wall_ns * (1.0 - f) / f), left + 8, sizeof left - 8);
    strcat (left, " left");
  }
  unsigned percent = (unsigned) (100.0 * f);
  if (!last && percent > 99)
    percent = 99;               /* 100 % only once done */
  fprintf (stderr, "%sstorlab-sim: progress: %s%s simulated (%u%%), %s wall%s%s",
           p->tty ? "\r" : "", done, total, percent, wall, left, p->tty ? "\033[K" : "\n");
  fflush (stderr);
  p->shown = true;
}

static void
progress_tick (struct sim *sim)
{
  struct sim_progress *p = &sim->progress;
  uint64_t wall_ns = sl_clock_monotonic_ns () - p->wall_start_ns;
  if (wall_ns < p->next_ns)
    return;
  progress_print (sim, wall_ns, false);
  p->next_ns = wall_ns + SIM_PROGRESS_EVERY_NS;
}

/* After the run: a terminal's line is erased (the JSON or an error
 * follows), a log gets a last line at 100 %. */
static void
progress_end (struct sim *sim, bool succeeded)
{
  struct sim_progress *p = &sim->progress;
  if (!p->shown)
    return;
  if (p->tty)
    fputs ("\r\033[K", stderr);
  else if (succeeded)
    progress_print (sim, sl_clock_monotonic_ns () - p->wall_start_ns, true);
  fflush (stderr);
}

/* One engine event; every few thousand, a look at the wall clock. */
static bool
step (struct sim *sim)
{
  if (sim->progress.enabled && (++sim->progress.events & SIM_PROGRESS_CHECK_MASK) == 0)
    progress_tick (sim);
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
static void
run_until (struct sim *sim, uint64_t until_ns)
{
  bool reached = false;
  sl_engine_schedule (sim->engine, until_ns, mark_reached, &reached, 0);
  while (!reached && step (sim))
    ;
  sl_engine_run_until (sim->engine, until_ns);
}

/* Starts every clone at its start time, in order, the run going on
 * between.  -1 with err when out of memory. */
static int
start_clones (struct sim *sim, char *err, size_t err_bytes)
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
    run_until (sim, order[i]->start_ns);
    start_clone (order[i]);
  }
  free (order);
  return 0;
}

/* Runs every clone to its end.  -1 with err if the model stalls. */
static int
run (struct sim *sim, char *err, size_t err_bytes)
{
  if (start_clones (sim, err, err_bytes) != 0)
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

static int
setup_clones (struct sim *sim, const struct sl_jobfile *jf, uint64_t capacity_bytes,
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

/* What a job does to its region, as a write buffer's warm state needs it. */
static enum sl_warm_load
warm_load_of (const struct sl_job *job)
{
  if (!job->do_write)
    return SL_WARM_READS;
  return job->random ? SL_WARM_RANDOM_WRITES : SL_WARM_SEQUENTIAL_WRITES;
}

/* MemAvailable of /proc/meminfo in bytes, or 0 when it cannot be read. */
static uint64_t
memory_available_bytes (void)
{
  FILE *f = fopen ("/proc/meminfo", "r");
  char line[256];
  unsigned long long kib = 0;
  while (f && fgets (line, sizeof line, f))
    if (sscanf (line, "MemAvailable: %llu kB", &kib) == 1)
      break;
  if (f)
    fclose (f);
  return (uint64_t) kib * 1024;
}

/* What a cluster's models may take: nine tenths of what the host has
 * available, the rest left for the run (its queues, the output). */
static uint64_t
memory_budget_bytes (void)
{
  return memory_available_bytes () / 10 * 9;
}

/* Every clone's region starts in the steady state its workload reaches
 * (a cluster's read caches hold their share of it), so a working set of
 * hundreds of GiB needs no hours of simulated warm-up.  A state larger
 * than the memory the host has left is refused before it is built. */
static int
warm_cluster_regions (struct sim *sim, const struct sl_model *model,
                      const uint64_t *probed_fill, size_t probed, char *err, size_t err_bytes)
{
  struct cluster *c = sl_cluster_of (model);
  if (c == NULL)
    return 0;
  if (probed_fill != NULL && sl_cluster_warm_start_from (c, probed_fill, probed, err,
                                                         err_bytes) != 0)
    return -1;
  for (size_t i = 0; i < sim->clone_count; i++)
    sl_cluster_warm (c, sim->clones[i].region.offset_bytes, sim->clones[i].region.size_bytes,
                     warm_load_of (sim->clones[i].job));
  return sl_cluster_warm_finish (c, memory_budget_bytes (), err, err_bytes);
}

static void
free_clones (struct sim *sim)
{
  for (size_t i = 0; i < sim->clone_count; i++)
    free (sim->clones[i].pool);
  free (sim->clones);
  sim->clones = NULL;
  sim->clone_count = 0;
}

/* ---- the measured phase ---- */

/* It begins where the first job's ramp ends. */
static uint64_t
phase_start_ns (const struct sim *sim)
{
  uint64_t start_ns = UINT64_MAX;
  for (size_t i = 0; i < sim->clone_count; i++)
    if (sim->clones[i].stats_start_ns < start_ns)
      start_ns = sim->clones[i].stats_start_ns;
  return start_ns == UINT64_MAX ? 0 : start_ns;
}

/* Its length before the run: known when every job is time-limited. */
static uint64_t
planned_phase_ns (const struct sim *sim)
{
  uint64_t end_ns = 0;
  for (size_t i = 0; i < sim->clone_count; i++) {
    if (sim->clones[i].end_ns == UINT64_MAX)
      return UINT64_MAX;
    if (sim->clones[i].end_ns > end_ns)
      end_ns = sim->clones[i].end_ns;
  }
  return end_ns - phase_start_ns (sim);
}

/* The simulated time the run should end at, UINT64_MAX if unknown. */
static uint64_t
planned_end_ns (const struct sim *sim)
{
  uint64_t phase_ns = planned_phase_ns (sim);
  return phase_ns == UINT64_MAX ? UINT64_MAX : phase_start_ns (sim) + phase_ns;
}

/* Shown on a terminal, or anywhere with --progress; never on stdout. */
static void
progress_init (struct sim_progress *p, bool forced, uint64_t planned_ns, uint64_t wall_start_ns)
{
  bool tty = isatty (STDERR_FILENO) == 1;
  *p = (struct sim_progress) {
    .enabled = forced || tty,
    .tty = tty,
    .wall_start_ns = wall_start_ns,
    .next_ns = SIM_PROGRESS_AFTER_NS,
    .planned_ns = planned_ns,
  };
}

/* Where a clone's statistics end: its runtime, or its last counted I/O. */
static uint64_t
clone_end_ns (const struct sim_clone *c)
{
  return c->stopped_by_time ? c->end_ns : c->last_counted_completion_ns;
}

/* After the run: the latest end of any clone. */
static uint64_t
phase_end_ns (const struct sim *sim)
{
  uint64_t end_ns = phase_start_ns (sim);
  for (size_t i = 0; i < sim->clone_count; i++)
    if (clone_end_ns (&sim->clones[i]) > end_ns)
      end_ns = clone_end_ns (&sim->clones[i]);
  return end_ns;
}

/* fio's entries: one per clone, except that every group_reporting clone
 * (all are in group 0) folds into one entry where the first one stood. */
static struct sl_fio_job_report *
build_reports (struct sim *sim, size_t *count)
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

static void
write_device_json (void *arg, FILE *out)
{
  sl_engine_write_json (arg, out);
}

/* ---- command line ---- */

struct sim_args {
  const char *kind_name;
  const char *jobfile;
  const char *cluster_spec;            /* "storlab-sim cluster SPEC": a whole lab */
  bool warm;                           /* --warm: caches start in their steady state */
  struct sl_driver_settings driver;
  struct sl_device_builder builder;
  struct sl_sim_events events;
  uint64_t interval_ns;                /* 0: no timeline */
  bool progress;                       /* --progress: even when stderr is no terminal */
};

/* A timeline entry is ~100 bytes of memory and of JSON: refuse, before the
 * run, one longer than anybody plots (a day at 10 ms is 8.6 M entries). */
#define TIMELINE_ENTRIES_MAX UINT64_C (10000000)

static int
check_timeline_length (uint64_t interval_ns, uint64_t phase_ns, char *err, size_t err_bytes)
{
  if (interval_ns == 0)
    return 0;
  uint64_t entries = phase_ns / interval_ns + 1;
  if (entries <= TIMELINE_ENTRIES_MAX)
    return 0;
  snprintf (err, err_bytes, "--interval-ms %" PRIu64 ": the measured phase would give %"
            PRIu64 " timeline entries, at most %" PRIu64 " (a longer interval, or a shorter"
            " runtime=)", interval_ns / 1000000, entries, TIMELINE_ENTRIES_MAX);
  return -1;
}

static int
parse_interval (const char *value, uint64_t *interval_ns, char *err, size_t err_bytes)
{
  char *end;
  unsigned long long ms = value[0] >= '0' && value[0] <= '9' ? strtoull (value, &end, 10) : 0;
  if (ms == 0 || *end != '\0' || ms > SIM_MAX_INTERVAL_MS) {
    snprintf (err, err_bytes, "--interval-ms %s: not an integer number of milliseconds in"
              " 1..%u", value, SIM_MAX_INTERVAL_MS);
    return -1;
  }
  *interval_ns = ms * 1000000;
  return 0;
}

/* --NAME VALUE or --NAME=VALUE at argv[*i]; 1 if it is one of ours (and
 * *i moved past its value), 0 if not, -1 with err. */
static int
parse_option (int argc, char **argv, int *i, struct sim_args *a, char *err, size_t err_bytes)
{
  if (strcmp (argv[*i], "--progress") == 0) {
    a->progress = true;
    return 1;
  }
  if (strcmp (argv[*i], "--warm") == 0) {
    if (a->cluster_spec == NULL && strcmp (a->kind_name, "cluster") != 0) {
      snprintf (err, err_bytes, "--warm: only for 'storlab-sim cluster' (an SSD starts in"
                " steady state with its precondition=steady key)");
      return -1;
    }
    a->warm = true;
    return 1;
  }
  static const char *const names[] = { "--event", "--interval-ms" };
  for (size_t n = 0; n < sizeof names / sizeof names[0]; n++) {
    size_t length = strlen (names[n]);
    if (strncmp (argv[*i], names[n], length) != 0
        || (argv[*i][length] != '\0' && argv[*i][length] != '='))
      continue;
    const char *value;
    if (argv[*i][length] == '=')
      value = argv[*i] + length + 1;
    else if (*i + 1 < argc)
      value = argv[++*i];
    else {
      snprintf (err, err_bytes, "%s: missing value (%s)", names[n],
                n == 0 ? "AT:COMMAND, e.g. 10s:battery failed" : "milliseconds, 1..60000");
      return -1;
    }
    if (n == 0)
      return sl_sim_events_add (&a->events, value, err, err_bytes) == 0 ? 1 : -1;
    return parse_interval (value, &a->interval_ns, err, err_bytes) == 0 ? 1 : -1;
  }
  return 0;
}

/* argv[*i] as an option (with its value) or the '--' that ends them: 1
 * when it was one, 0 when it is a plain word, -1 with err. */
static int
take_option (int argc, char **argv, int *i, bool *options_ended, struct sim_args *a,
             const char *known, char *err, size_t err_bytes)
{
  if (*options_ended)
    return 0;
  if (strcmp (argv[*i], "--") == 0) {
    *options_ended = true;
    return 1;
  }
  if (strncmp (argv[*i], "--", 2) != 0)
    return 0;
  int rc = parse_option (argc, argv, i, a, err, err_bytes);
  if (rc == 0)
    snprintf (err, err_bytes, "unknown option '%s' (%s; '--' ends them)", argv[*i], known);
  return rc == 1 ? 1 : -1;
}

/* storlab-sim cluster [OPTIONS] [--] SPEC JOBFILE: the devices' keys are in
 * the spec, so every other word is an option, the spec or the job file. */
static int
parse_cluster_args (int argc, char **argv, struct sim_args *a, char *err, size_t err_bytes)
{
  a->kind_name = "cluster";
  sl_driver_settings_defaults (&a->driver);
  const char *files[2] = { NULL, NULL };
  unsigned file_count = 0;
  bool options_ended = false;
  for (int i = 2; i < argc; i++) {
    int rc = take_option (argc, argv, &i, &options_ended, a, "storlab-sim cluster options:"
                          " --warm, --interval-ms, --progress, --help", err, err_bytes);
    if (rc < 0)
      return -1;
    if (rc > 0)
      continue;
    if (file_count == 2) {
      snprintf (err, err_bytes, "unexpected argument '%s' (storlab-sim cluster takes SPEC and"
                " JOBFILE; the devices' keys are in the spec)", argv[i]);
      return -1;
    }
    files[file_count++] = argv[i];
  }
  if (file_count < 2) {
    snprintf (err, err_bytes, "missing %s; usage: storlab-sim cluster [OPTIONS] [--] SPEC"
              " JOBFILE (--help for more)", file_count ? "JOBFILE" : "SPEC and JOBFILE");
    return -1;
  }
  a->cluster_spec = files[0];
  a->jobfile = files[1];
  return sl_sim_events_check_kind (&a->events, true, err, err_bytes);
}

static int
parse_args (int argc, char **argv, struct sim_args *a, char *err, size_t err_bytes)
{
  if (strcmp (argv[1], "cluster") == 0)
    return parse_cluster_args (argc, argv, a, err, err_bytes);
  const struct sl_device_kind *kind = sl_device_kind_find (argv[1]);
  if (kind == NULL) {
    snprintf (err, err_bytes, "unknown plugin '%s'; known: %s", argv[1],
              sl_device_kind_names ());
    return -1;
  }
  a->kind_name = argv[1];
  sl_driver_settings_defaults (&a->driver);
  sl_device_builder_init (&a->builder, kind);

  bool options_ended = false;
  for (int i = 2; i < argc; i++) {
    int rc = take_option (argc, argv, &i, &options_ended, a, "storlab-sim options: --event,"
                          " --interval-ms, --progress, --help", err, err_bytes);
    if (rc < 0)
      return -1;
    if (rc > 0)
      continue;
    char *eq = strchr (argv[i], '=');
    if (eq == NULL) {
      if (i != argc - 1) {
        snprintf (err, err_bytes, "unexpected argument '%s' (KEY=VALUE pairs come before"
                  " the JOBFILE, which is last)", argv[i]);
        return -1;
      }
      a->jobfile = argv[i];
      break;
    }
    *eq = '\0';                 /* argv is ours to split */
    const char *key = argv[i], *value = eq + 1;
    const struct sl_driver_key *dk = strcmp (key, "preset") ? sl_driver_key_find (key) : NULL;
    if (dk != NULL) {
      rc = sl_driver_settings_set (&a->driver, key, value, err, err_bytes);
      if (rc == 0 && !dk->simulator_uses)
        fprintf (stderr, "storlab-sim: note: %s= is a plugin-only key; ignored\n", key);
    }
    else
      rc = sl_device_builder_add (&a->builder, key, value, err, err_bytes);
    *eq = '=';
    if (rc != 0)
      return -1;
  }
  if (a->jobfile == NULL) {
    snprintf (err, err_bytes, "missing JOBFILE; usage: storlab-sim PLUGIN [OPTIONS]"
              " [KEY=VALUE ...] [--] [KEY=VALUE ...] JOBFILE (--help for more)");
    return -1;
  }
  if (sl_sim_events_check_kind (&a->events, false, err, err_bytes) != 0)
    return -1;
  if (a->events.count > 0 && strcmp (kind->kind, "raid") != 0) {
    snprintf (err, err_bytes, "--event '%s': live events need the raid plugin, not %s",
              a->events.items[0].spec, kind->kind);
    return -1;
  }
  return 0;
}

/* A cluster's models take memory with their sizes (caches' maps, FTLs):
 * a spec that needs more than the host has (with room for the run) is
 * refused at the line where it would, before it is killed. */
static struct sl_model
build_cluster (struct sim_args *a, char *err, size_t err_bytes)
{
  return sl_cluster_model_from_file (a->cluster_spec, memory_budget_bytes (), err, err_bytes);
}

static struct sl_model
build_model (struct sim_args *a, char *err, size_t err_bytes)
{
  if (a->cluster_spec != NULL)
    return build_cluster (a, err, err_bytes);
  const struct sl_device_kind *kind = a->builder.kind;
  struct sl_model model = { 0 };
  void *config = calloc (1, kind->config_bytes);
  if (config == NULL) {
    snprintf (err, err_bytes, "out of memory");
    return model;
  }
  if (sl_device_builder_build (&a->builder, config, err, err_bytes) == 0)
    model = kind->create (config, err, err_bytes);
  free (config);
  if (model.ops != NULL) {
    model = sl_driver_settings_model (&a->driver, model);
    if (model.ops == NULL)
      snprintf (err, err_bytes, "out of memory");
  }
  return model;
}

/* A warm write buffer starts as full as its writeback lets it stay, and
 * which that is depends on the workload and the devices together: where
 * writeback keeps up it holds the buffer between its watermarks, where it
 * cannot (random writes arriving at SSD speed, leaving at a disk's) the
 * fill where new blocks come in as fast as writeback takes them out.  So
 * where a job writes into a cluster with write buffers, the workload runs
 * first for WARM_PROBE_NS of simulated time on the cluster as built and
 * warmed, which is then freed and built again for the run (memory for one
 * at a time).  Whether model needs one: */
#define WARM_PROBE_NS (2 * UINT64_C (1000000000))

static bool
wants_warm_probe (const struct sl_model *model, const struct sl_jobfile *jf)
{
  const struct cluster *c = sl_cluster_of (model);
  if (c == NULL || sl_cluster_warm_probe_layers (c) == 0)
    return false;
  for (size_t j = 0; j < jf->job_count; j++)
    if (jf->jobs[j].do_write)
      return true;
  return false;
}

/* Runs the probe on model (which it frees): *fill gets each write
 * buffer's starting fill (0: its high watermark), *count how many. */
static int
probe_warm_state (struct sl_model model, const struct sl_jobfile *jf, const char *kind_name,
                  uint64_t **fill, size_t *count, char *err, size_t err_bytes)
{
  size_t layers = sl_cluster_warm_probe_layers (sl_cluster_of (&model));
  struct sl_sim_events no_events = { 0 };
  struct sl_sim_timeline timeline;
  sl_sim_timeline_init (&timeline, 0, 0);
  struct sim sim = { .events = &no_events, .timeline = &timeline };
  struct sl_device_stats *stats = malloc (sizeof *stats);
  *fill = calloc (layers, sizeof **fill);
  *count = 0;
  int status = -1;
  if (stats == NULL || *fill == NULL) {
    snprintf (err, err_bytes, "out of memory");
    model.ops->destroy (model.self);
    goto out;
  }
  if (setup_clones (&sim, jf, model.capacity_bytes, SIM_MAX_CLUSTER_CLONES, err,
                    err_bytes) != 0
      || warm_cluster_regions (&sim, &model, NULL, 0, err, err_bytes) != 0) {
    model.ops->destroy (model.self);
    goto out;
  }
  sim.engine = sl_engine_new (SL_CLOCK_VIRTUAL, model, stats, kind_name);
  if (sim.engine == NULL) {
    snprintf (err, err_bytes, "out of memory");
    model.ops->destroy (model.self);
    goto out;
  }
  uint64_t first_start_ns = UINT64_MAX;
  for (size_t i = 0; i < sim.clone_count; i++)
    if (sim.clones[i].start_ns < first_start_ns)
      first_start_ns = sim.clones[i].start_ns;
  if (start_clones (&sim, err, err_bytes) != 0)
    goto out;
  struct cluster *c = sl_cluster_of (sl_engine_model (sim.engine));
  run_until (&sim, first_start_ns + WARM_PROBE_NS / 2);
  sl_cluster_warm_probe_mark (c);
  run_until (&sim, first_start_ns + WARM_PROBE_NS);
  *count = sl_cluster_warm_probe_verdicts (c, *fill, layers);
  status = 0;
out:
  sl_engine_free (sim.engine);
  free (stats);
  free_clones (&sim);
  sl_sim_timeline_free (&timeline);
  if (status != 0) {
    free (*fill);
    *fill = NULL;
  }
  return status;
}

static int
fail (const char *message)
{
  fprintf (stderr, "storlab-sim: %s\n", message);
  return 1;
}

int
main (int argc, char **argv)
{
  sl_sim_use_huge_pages (argv);
  for (int i = 1; i < argc && strcmp (argv[i], "--") != 0; i++) {
    if (strcmp (argv[i], "--help") == 0 || strcmp (argv[i], "-h") == 0)
      return print_help (i > 1 ? argv[1] : NULL);
    if (strcmp (argv[i], "--list-presets") == 0)
      return list_presets ();
  }
  if (argc < 2)
    return fail ("missing PLUGIN; usage: storlab-sim PLUGIN [KEY=VALUE ...] JOBFILE"
                 " or storlab-sim cluster SPEC JOBFILE (--help for more)");

  static char err[ERR_BYTES];
  struct sim_args args = { 0 };
  if (parse_args (argc, argv, &args, err, sizeof err) != 0) {
    if (args.builder.kind)
      sl_device_builder_free (&args.builder);
    sl_sim_events_free (&args.events);
    return fail (err);
  }

  struct sl_jobfile jf;
  if (sl_jobfile_parse_file (args.jobfile, &jf, err, sizeof err) != 0) {
    sl_device_builder_free (&args.builder);
    sl_sim_events_free (&args.events);
    return fail (err);
  }

  if (!args.driver.timing && args.driver.fixed_latency_ns == 0)
    for (size_t j = 0; j < jf.job_count; j++)
      if (jf.jobs[j].time_based && jf.jobs[j].number_ios == 0) {
        snprintf (err, sizeof err, "%s:%u: job '%s': time_based never ends with timing=off"
                  " (zero latency: virtual time stands still); limit the job by size,"
                  " io_size or number_ios instead", jf.path, jf.jobs[j].line, jf.jobs[j].name);
        sl_device_builder_free (&args.builder);
        sl_sim_events_free (&args.events);
        sl_jobfile_free (&jf);
        return fail (err);
      }

  int status = 1;
  struct sl_sim_timeline timeline;
  sl_sim_timeline_init (&timeline, 0, 0);
  struct sim sim = { .events = &args.events, .timeline = &timeline };
  struct sl_stats_file *stats_file = NULL;
  struct sl_device_stats *stats = NULL;
  struct sl_fio_job_report *reports = NULL;
  char *json = NULL;
  size_t json_bytes = 0;

  struct sl_model model = build_model (&args, err, sizeof err);
  uint64_t *probed_fill = NULL;
  size_t probed = 0;
  if (model.ops != NULL && args.warm && wants_warm_probe (&model, &jf)) {
    int probe = probe_warm_state (model, &jf, args.kind_name, &probed_fill, &probed, err,
                                  sizeof err);
    sl_device_notes_mute (true);       /* the first build said them */
    model = probe == 0 ? build_model (&args, err, sizeof err) : (struct sl_model) { 0 };
    sl_device_notes_mute (false);
  }
  sl_device_builder_free (&args.builder);
  if (model.ops == NULL)
    goto out;
  if (args.events.count > 0 && !sl_raid_model_is (&model) && !sl_cluster_model_is (&model)) {
    snprintf (err, sizeof err, "--event '%s': live events need the raid model (timing=off"
              " and fixed-latency-us= replace it)", args.events.items[0].spec);
    model.ops->destroy (model.self);
    goto out;
  }
  /* a cluster's workers are every node's: 64 nodes x 64 workers and more */
  size_t max_clones = args.cluster_spec ? SIM_MAX_CLUSTER_CLONES : SL_JOB_MAX_NUMJOBS;
  if (setup_clones (&sim, &jf, model.capacity_bytes, max_clones, err, sizeof err) != 0
      || sl_sim_events_check_length (&args.events, planned_phase_ns (&sim), err,
                                     sizeof err) != 0) {
    model.ops->destroy (model.self);
    goto out;
  }
  if (check_timeline_length (args.interval_ns, planned_phase_ns (&sim), err, sizeof err) != 0) {
    model.ops->destroy (model.self);
    goto out;
  }
  if (args.warm && warm_cluster_regions (&sim, &model, probed_fill, probed, err,
                                         sizeof err) != 0) {
    model.ops->destroy (model.self);
    goto out;
  }
  uint64_t phase_start = phase_start_ns (&sim);
  sl_sim_timeline_init (&timeline, args.interval_ns, phase_start);

  if (args.driver.stats_path != NULL) {
    stats_file = sl_stats_file_create (args.driver.stats_path, 1, 0, err, sizeof err);
    if (stats_file == NULL) {
      model.ops->destroy (model.self);
      goto out;
    }
    stats = sl_stats_file_record (stats_file, 0);
  }
  else if ((stats = malloc (sizeof *stats)) == NULL) {
    snprintf (err, sizeof err, "out of memory");
    model.ops->destroy (model.self);
    goto out;
  }
  sim.engine = sl_engine_new (SL_CLOCK_VIRTUAL, model, stats, args.kind_name);
  if (sim.engine == NULL) {
    snprintf (err, sizeof err, "out of memory");
    model.ops->destroy (model.self);
    goto out;
  }

  if (sl_cluster_model_is (&model))
    args.events.cluster = sl_cluster_of (&model);
  sl_sim_events_schedule (&args.events, sim.engine, phase_start);
  uint64_t wall_start_ns = sl_clock_monotonic_ns ();
  progress_init (&sim.progress, args.progress, planned_end_ns (&sim), wall_start_ns);
  int run_status = run (&sim, err, sizeof err);
  progress_end (&sim, run_status == 0);
  if (run_status != 0)
    goto out;
  uint64_t wall_ns = sl_clock_monotonic_ns () - wall_start_ns;
  uint64_t phase_end = phase_end_ns (&sim);
  if (sl_sim_events_check_run (&args.events, phase_start, phase_end - phase_start, err,
                               sizeof err) != 0)
    goto out;
  if (sl_sim_timeline_finish (&timeline, phase_end) != 0) {
    snprintf (err, sizeof err, "--interval-ms: out of memory for the timeline");
    goto out;
  }

  size_t report_count;
  reports = build_reports (&sim, &report_count);
  if (reports == NULL) {
    snprintf (err, sizeof err, "out of memory");
    goto out;
  }
  uint64_t simulated_ios = 0;
  for (size_t i = 0; i < sim.clone_count; i++)
    simulated_ios += sim.clones[i].issued_ios;

  struct timespec now;
  clock_gettime (CLOCK_REALTIME, &now);
  struct sl_fio_output output = {
    .version = SIM_VERSION,
    .timestamp = now.tv_sec,
    .timestamp_ms = (uint64_t) now.tv_sec * 1000 + (uint64_t) now.tv_nsec / 1000000,
    .jobfile = &jf,
    .jobs = reports,
    .job_count = report_count,
    .backend = "sim",
    .write_device_json = write_device_json,
    .device_arg = sim.engine,
    .simulated_ns = sl_engine_now_ns (sim.engine),
    .wall_ns = wall_ns,
    .simulated_ios = simulated_ios,
    .events = &args.events,
    .timeline = &timeline,
  };
  FILE *mem = open_memstream (&json, &json_bytes);
  if (mem == NULL) {
    snprintf (err, sizeof err, "out of memory");
    goto out;
  }
  sl_fio_json_write (mem, &output);
  if (fclose (mem) != 0) {
    snprintf (err, sizeof err, "out of memory writing the JSON");
    goto out;
  }
  if (fwrite (json, 1, json_bytes, stdout) != json_bytes || fflush (stdout) != 0) {
    snprintf (err, sizeof err, "cannot write the results to stdout");
    goto out;
  }
  status = 0;

out:
  if (status != 0)
    fail (err);
  free (probed_fill);
  free (json);
  free (reports);
  sl_engine_free (sim.engine);
  if (stats_file != NULL)
    sl_stats_file_close (stats_file);
  else
    free (stats);
  free_clones (&sim);
  sl_sim_timeline_free (&timeline);
  sl_sim_events_free (&args.events);
  sl_jobfile_free (&jf);
  return status;
}
