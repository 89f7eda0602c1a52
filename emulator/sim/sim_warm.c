/* sim_warm.c — the warm start of sim_warm.h. */
#include "sim_warm.h"

#include <stdio.h>
#include <stdlib.h>

#include "cluster/cluster.h"
#include "core/stats.h"

/* The probe's length; its second half is what it measures. */
#define WARM_PROBE_NS (2 * UINT64_C (1000000000))

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

uint64_t
sl_sim_memory_budget_bytes (void)
{
  return memory_available_bytes () / 10 * 9;
}

int
sl_sim_warm_cluster_regions (struct sim *sim, const struct sl_model *model,
                             const uint64_t *probed_fill, size_t probed, char *err,
                             size_t err_bytes)
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
  return sl_cluster_warm_finish (c, sl_sim_memory_budget_bytes (), err, err_bytes);
}

bool
sl_sim_wants_warm_probe (const struct sl_model *model, const struct sl_jobfile *jf)
{
  const struct cluster *c = sl_cluster_of (model);
  if (c == NULL || sl_cluster_warm_probe_layers (c) == 0)
    return false;
  for (size_t j = 0; j < jf->job_count; j++)
    if (jf->jobs[j].do_write)
      return true;
  return false;
}

int
sl_sim_probe_warm_state (struct sl_model model, const struct sl_jobfile *jf,
                         const char *kind_name, uint64_t **fill, size_t *count, char *err,
                         size_t err_bytes)
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
  if (sl_sim_setup_clones (&sim, jf, model.capacity_bytes, SIM_MAX_CLUSTER_CLONES, err,
                           err_bytes) != 0
      || sl_sim_warm_cluster_regions (&sim, &model, NULL, 0, err, err_bytes) != 0) {
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
  if (sl_sim_start_clones (&sim, err, err_bytes) != 0)
    goto out;
  struct cluster *c = sl_cluster_of (sl_engine_model (sim.engine));
  sl_sim_run_until (&sim, first_start_ns + WARM_PROBE_NS / 2);
  sl_cluster_warm_probe_mark (c);
  sl_sim_run_until (&sim, first_start_ns + WARM_PROBE_NS);
  *count = sl_cluster_warm_probe_verdicts (c, *fill, layers);
  status = 0;
out:
  sl_engine_free (sim.engine);
  free (stats);
  sl_sim_free_clones (&sim);
  sl_sim_timeline_free (&timeline);
  if (status != 0) {
    free (*fill);
    *fill = NULL;
  }
  return status;
}

