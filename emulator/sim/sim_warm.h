/* sim_warm.h — storlab-sim cluster --warm: every clone's region starts in
 * the steady state its workload reaches (a cluster's read caches hold
 * their share of it, its write buffers the fill their writeback lets them
 * keep), so a working set of hundreds of GiB needs no hours of simulated
 * warm-up. */
#ifndef STORLAB_SIM_WARM_H
#define STORLAB_SIM_WARM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/model.h"
#include "jobfile.h"
#include "sim_run.h"

/* What a cluster's models may take: nine tenths of what the host has
 * available, the rest left for the run (its queues, the output). */
uint64_t sl_sim_memory_budget_bytes (void);

/* Warms model's cluster (nothing for another model) for sim's clones; the
 * write buffers start at probed_fill (probed of them, from
 * sl_sim_probe_warm_state) where given.  A state larger than the memory
 * the host has left is refused before it is built: -1 with err. */
int sl_sim_warm_cluster_regions (struct sim *sim, const struct sl_model *model,
                                 const uint64_t *probed_fill, size_t probed, char *err,
                                 size_t err_bytes);

/* A warm write buffer starts as full as its writeback lets it stay, and
 * which that is depends on the workload and the devices together: where
 * writeback keeps up it holds the buffer between its watermarks, where it
 * cannot (random writes arriving at SSD speed, leaving at a disk's) the
 * fill where new blocks come in as fast as writeback takes them out.  So
 * where a job writes into a cluster with write buffers, the workload runs
 * first for a short probe of simulated time on the cluster as built and
 * warmed, which is then freed and built again for the run (memory for one
 * at a time).  Whether model needs one: */
bool sl_sim_wants_warm_probe (const struct sl_model *model, const struct sl_jobfile *jf);
/* Runs the probe on model (which it frees): *fill gets each write
 * buffer's starting fill (0: its high watermark), *count how many. */
int sl_sim_probe_warm_state (struct sl_model model, const struct sl_jobfile *jf,
                             const char *kind_name, uint64_t **fill, size_t *count, char *err,
                             size_t err_bytes);

#endif
