/* sim.c — storlab-sim: run a fio job file against a device model, or a
 * whole cluster, in virtual time and print fio-compatible JSON.
 *
 *   storlab-sim PLUGIN [OPTIONS] [KEY=VALUE ...] [--] [KEY=VALUE ...] JOBFILE
 *   storlab-sim cluster [OPTIONS] [--] SPEC JOBFILE
 *
 * This file is the command line: KEY=VALUE pairs are the plugin's, model
 * parameters and preset= through sl_device_builder, driver keys through
 * driver_keys.h.  After `--` every argument is a KEY=VALUE pair or the
 * JOBFILE, never an option, so a key such as "--interval-ms=5" from a
 * topology is refused as a key.  --event runs a control command at a
 * virtual time (sim_events.h), --interval-ms adds a per-interval series
 * (sim_timeline.h), --warm starts a cluster in its steady state
 * (sim_warm.h); the run itself is sim_run.h's.  The JSON is built only
 * after the run succeeded, so an error leaves stdout empty.
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
#include "sim_run.h"
#include "sim_timeline.h"
#include "sim_warm.h"

#define SIM_VERSION "storlab-sim-0.1"
#define ERR_BYTES 2048

#define SIM_MAX_INTERVAL_MS 60000u

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
           "                       full: a sequential writer's region end; a buffer\n"
           "                       only read through, the end of the regions' fill\n"
           "                       when they were made, below its low watermark);\n"
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
  return sl_cluster_model_from_file (a->cluster_spec, sl_sim_memory_budget_bytes (), err,
                                     err_bytes);
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
  if (model.ops != NULL && args.warm && sl_sim_wants_warm_probe (&model, &jf)) {
    int probe = sl_sim_probe_warm_state (model, &jf, args.kind_name, &probed_fill, &probed,
                                         err, sizeof err);
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
  if (sl_sim_setup_clones (&sim, &jf, model.capacity_bytes, max_clones, err, sizeof err) != 0
      || sl_sim_events_check_length (&args.events, sl_sim_planned_phase_ns (&sim), err,
                                     sizeof err) != 0) {
    model.ops->destroy (model.self);
    goto out;
  }
  if (check_timeline_length (args.interval_ns, sl_sim_planned_phase_ns (&sim), err,
                             sizeof err) != 0) {
    model.ops->destroy (model.self);
    goto out;
  }
  if (args.warm && sl_sim_warm_cluster_regions (&sim, &model, probed_fill, probed, err,
                                                sizeof err) != 0) {
    model.ops->destroy (model.self);
    goto out;
  }
  uint64_t phase_start = sl_sim_phase_start_ns (&sim);
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
  sl_sim_progress_init (&sim.progress, args.progress, sl_sim_planned_end_ns (&sim),
                        wall_start_ns);
  int run_status = sl_sim_run (&sim, err, sizeof err);
  sl_sim_progress_end (&sim, run_status == 0);
  if (run_status != 0)
    goto out;
  uint64_t wall_ns = sl_clock_monotonic_ns () - wall_start_ns;
  uint64_t phase_end = sl_sim_phase_end_ns (&sim);
  if (sl_sim_events_check_run (&args.events, phase_start, phase_end - phase_start, err,
                               sizeof err) != 0)
    goto out;
  if (sl_sim_timeline_finish (&timeline, phase_end) != 0) {
    snprintf (err, sizeof err, "--interval-ms: out of memory for the timeline");
    goto out;
  }

  size_t report_count;
  reports = sl_sim_build_reports (&sim, &report_count);
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
  sl_sim_free_clones (&sim);
  sl_sim_timeline_free (&timeline);
  sl_sim_events_free (&args.events);
  sl_jobfile_free (&jf);
  return status;
}

