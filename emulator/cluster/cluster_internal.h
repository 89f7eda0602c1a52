/* cluster_internal.h — the cluster's own state, shared by cluster.c (the
 * model and its I/O plumbing) and cluster_spec.c (building it from a
 * spec). */
#ifndef STORLAB_CLUSTER_INTERNAL_H
#define STORLAB_CLUSTER_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"
#include "core/units.h"
#include "fabric.h"
#include "layer.h"

#define CL_NAME_BYTES 32
#define CL_MAX_NODES 256u
#define CL_MAX_EXPORTS 65536u

/* A physical volume of a node's volume group made of its capacity devices'
 * regions of its disk groups (volume-group=per-device): LVs named onto it. */
struct cl_pv {
  char device[CL_NAME_BYTES];          /* the capacity device it is the region of */
  struct cl_target *group;             /* the disk group the region lies in */
  uint64_t base_bytes;                 /* where the region starts in that group */
  uint64_t size_bytes;
  uint64_t used_bytes;                 /* allocated to LVs so far, after LVM's header */
};

struct cl_node {
  char name[CL_NAME_BYTES];
  struct cl_cpu cpu;
  struct cl_target *local;             /* its local volume (raid, disk group, disk);
                                          of several disk groups, the first */
  uint64_t local_used_bytes;           /* allocated to LVs so far */
  unsigned disk_groups;                /* its local statements' disk groups, 0 for a
                                          disk or raid */
  struct cl_pv *pv;                    /* NULL: the local volume is the one PV */
  unsigned pv_count;
  uint64_t pv_stripe_bytes;            /* an LV striped over several: its stripe unit */
  bool down;                           /* a node event took it down */
};

/* What one node's workload drives, at [base, base + size) of the model. */
struct cl_export {
  uint64_t base_bytes;
  uint64_t size_bytes;
  struct cl_target *target;
  unsigned node;
};

struct cluster {
  struct sl_engine *engine;            /* set when the engine adopts the model */
  struct cl_node node[CL_MAX_NODES];
  unsigned node_count;
  struct cl_cpu pool;                  /* the host every node runs on (pool statement) */
  bool has_pool;
  struct cl_link *links;
  unsigned link_count;
  struct cl_export *exports;           /* ascending base */
  unsigned export_count;
  uint64_t capacity_bytes;
  struct cl_target *targets;           /* every target, newest first */
  struct cl_target *targets_tail;
  unsigned target_count;
  struct cl_io *free_ios;
  void *io_blocks;                     /* cluster.c's, never freed before the end */
  uint64_t ios_allocated;
  uint64_t memory_bytes;               /* models and layers, as estimated */
  bool warmed;                         /* sl_cluster_warm: caches started steady */
  enum sl_warm_load warm_load;         /* what is done to the region being warmed */
};

struct cluster *cl_cluster_new (void);
void cl_cluster_free (struct cluster *c);
struct sl_model cl_cluster_model (struct cluster *c);

int cl_node_find (const struct cluster *c, const char *name);
struct cl_link *cl_link_find (struct cluster *c, unsigned a, unsigned b, bool *a_to_b);

/* Adds an export at [base, base + size) of the address space, after every
 * export so far; -1 with err if it overlaps or the table is full. */
int cl_export_add (struct cluster *c, unsigned node, struct cl_target *target,
                   uint64_t base_bytes, uint64_t size_bytes, char *err, size_t err_bytes);

/* layer.c: the figures of t up to now_ns (queue-depth integrals brought
 * forward); the cl_io blocks, freed with the cluster. */
struct cl_target_stats cl_target_stats_at (const struct cl_target *t, uint64_t now_ns);
void cl_io_blocks_free (struct cluster *c);

/* Device targets of the cluster by "node/name". */
struct cl_target *cl_target_find (struct cluster *c, const char *name);

#endif
