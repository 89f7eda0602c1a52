/* cluster.h — a whole lab in virtual time: nodes with their devices, the
 * storage stack the lab's profile builds on them, the links between them
 * and each host's CPU, composed as one device model.
 *
 * The model's address space is the cluster's exports one after another:
 * each export is what one node's workload drives (a workload volume, a
 * share), at the byte offset the cluster spec gives it.  A job file for
 * storlab-sim puts each worker at its export's offset, so the closed loop,
 * the fio JSON and the timeline are the single-device simulator's own.
 *
 * A cluster is described by a cluster spec (cluster_spec.c: one statement
 * a line), which `storlab sweep --backend sim` writes from a topology and
 * its [profile]. */
#ifndef STORLAB_CLUSTER_H
#define STORLAB_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/model.h"

struct cluster;

/* Reads the cluster spec at path and builds the cluster, its models'
 * memory held to budget_bytes (0: no limit; a spec whose sizes need more is
 * refused at the line where it would, before the host runs out).  On
 * failure returns a model with ops == NULL and one line in err naming the
 * file, the line and what was wrong. */
struct sl_model sl_cluster_model_from_file (const char *path, uint64_t budget_bytes,
                                            char *err, size_t err_bytes);
/* The same from the spec's text (tests); name stands for the file. */
struct sl_model sl_cluster_model_from_text (const char *text, const char *name,
                                            uint64_t budget_bytes, char *err, size_t err_bytes);

bool sl_cluster_model_is (const struct sl_model *model);
struct cluster *sl_cluster_of (const struct sl_model *model);

/* What a worker does to its region, for the state its warm-up starts in. */
enum sl_warm_load {
  SL_WARM_READS,                       /* reads only: write buffers stay empty */
  SL_WARM_RANDOM_WRITES,               /* writes anywhere in it: a write buffer holds
                                        * blocks drawn from all of it */
  SL_WARM_SEQUENTIAL_WRITES,           /* writes in order from its start, wrapping at its
                                        * end: a write buffer holds the end written last */
};

/* Starts [offset, offset + length) of the address space in the steady
 * state a workload there reaches: read caches hold their share of it, and
 * when the workload writes (load), write buffers are as full as their
 * writeback lets them stay.  Call before the first I/O, once per worker
 * region. */
void sl_cluster_warm (struct cluster *c, uint64_t offset_bytes, uint64_t length_bytes,
                      enum sl_warm_load load);
/* After the last sl_cluster_warm: every cache settles on its share of all
 * the regions given (not first come, first served).  A state that needs
 * more than budget_bytes of memory (0: no limit; a write buffer's dirty
 * blocks take ~13 bytes each) is refused before anything is allocated:
 * -1 and one line in err saying how much it needs. */
int sl_cluster_warm_finish (struct cluster *c, uint64_t budget_bytes, char *err,
                            size_t err_bytes);

/* The probe that tells how full a warm write buffer starts (storlab-sim
 * cluster --warm runs it): a cluster from the run's spec, warmed the same
 * way, run under the workload; halfway every layer notes its state
 * (sl_cluster_warm_probe_mark), at the end each that asks for a probe
 * gives the fill it should start at (0: as warm_finish puts it), in the
 * cluster's order (sl_cluster_warm_probe_verdicts: how many, at most max
 * in fill[]); the run's cluster, built after the probe's is freed, starts
 * so (sl_cluster_warm_start_from, before its sl_cluster_warm_finish; -1
 * with err when the counts differ). */
size_t sl_cluster_warm_probe_layers (const struct cluster *c);
void sl_cluster_warm_probe_mark (struct cluster *probe);
size_t sl_cluster_warm_probe_verdicts (const struct cluster *probe, uint64_t *fill, size_t max);
int sl_cluster_warm_start_from (struct cluster *c, const uint64_t *fill, size_t count,
                                char *err, size_t err_bytes);

/* A snapshot event (storlab-sim --event AT:snapshot): take one of every
 * volume that takes snapshots (take), or delete each one's oldest; -1 with
 * err when the cluster has no such volume or one refuses (it has as many
 * as its depth, or none to delete). */
int sl_cluster_snapshot_event (struct cluster *c, bool take, char *err, size_t err_bytes);

/* A node event (storlab-sim --event AT:node NODE down|up), as `storlab node
 * LAB NODE down|up` in a lab: down fails the components the node holds in
 * every array over it (I/O goes on degraded, the arrays' bitmaps mark what
 * they miss); up re-adds them and resyncs what was marked.  -1 with err
 * for an unknown node, one already so, one running workers, or an array
 * that would lose more components than it tolerates (nothing changes). */
int sl_cluster_node_event (struct cluster *c, const char *node, bool down, char *err,
                           size_t err_bytes);

#endif
