/* layer.h — the blocks a cluster is built of: targets that take I/O.
 *
 * A cluster (cluster.h) is a tree of targets in one virtual-time engine:
 * the devices (the hdd/ssd/raid models, unchanged) at the leaves, and above
 * them the layers a lab's guests build: md RAID, LVM's linear and striped
 * volumes, the disk group's write buffer (dm-writecache) and read cache
 * (dm-cache), a replicated volume (md RAID-1 over NVMe/TCP legs), the hops
 * over a network link, a host's CPU.  Every target takes an I/O in
 * submit() and finishes it with cl_io_complete() at the engine time it is
 * done; a layer's own I/Os to the targets below are cl_ios too.
 *
 * Rules every layer keeps (the engine's model rules, one level up):
 *   - submit() never completes the I/O it is given before returning: a
 *     layer that is done at once schedules cl_io_complete_at(now);
 *   - cl_io_complete() is called exactly once per I/O, from an engine event;
 *   - a layer owns the cl_ios it takes with cl_io_new() until their done
 *     callback ran, then gives them back with cl_io_free().
 * Each target counts its own I/Os (cl_target_stats), so every layer's
 * figures come out of one run with the same names as a lab's devices.
 */
#ifndef STORLAB_CLUSTER_LAYER_H
#define STORLAB_CLUSTER_LAYER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cluster.h"
#include "core/engine.h"
#include "core/request.h"
#include "host_cpu.h"

struct sl_engine;
struct cl_target;
struct cl_io;
struct cl_cpu;

typedef void (*cl_done_fn) (struct cl_io *io);

/* A layer an I/O went through as itself (cl_submit_only): its completion
 * is counted there too, with the time it arrived there. */
struct cl_pass {
  struct cl_target *target;
  uint64_t start_ns;
};

#define CL_PASSES 3                    /* front end, write buffer, read cache */

struct cl_io {
  enum sl_op op;
  uint32_t flags;                      /* SL_REQUEST_FUA */
  uint64_t offset_bytes;               /* in the target it is submitted to */
  uint64_t length_bytes;
  uint64_t start_ns;                   /* set by cl_submit */
  struct cl_target *target;            /* set by cl_submit */
  cl_done_fn done;                     /* the submitter's, at completion */
  void *owner;                         /* the submitter's context */
  struct cl_io *parent;                /* the I/O this one serves, if any */
  uint64_t scratch[2];                 /* the submitter's */
  struct cl_io *next;                  /* free list; layers' queues */
  uint32_t pending;                    /* children outstanding (fan-out) */
  uint32_t passes;                     /* of passed[], outermost first */
  struct cl_pass passed[CL_PASSES];
};                                     /* 144 bytes: tens of thousands are in flight
                                        * at once, and each completion finds its own
                                        * cold, so a layer that only passes an I/O on
                                        * sends it down itself (cl_submit_only) rather
                                        * than a child; a device leaf's model request
                                        * lives apart (layer_device.c) */

/* I/Os waiting in order, linked by next (a layer's queue). */
struct cl_io_queue {
  struct cl_io *head, *tail;
};

static inline void
cl_io_queue_push (struct cl_io_queue *q, struct cl_io *io)
{
  io->next = NULL;
  if (q->tail)
    q->tail->next = io;
  else
    q->head = io;
  q->tail = io;
}

/* In front of the others: it was first in line before. */
static inline void
cl_io_queue_push_front (struct cl_io_queue *q, struct cl_io *io)
{
  io->next = q->head;
  q->head = io;
  if (q->tail == NULL)
    q->tail = io;
}

/* The oldest, or NULL. */
static inline struct cl_io *
cl_io_queue_pop (struct cl_io_queue *q)
{
  struct cl_io *io = q->head;
  if (io == NULL)
    return NULL;
  q->head = io->next;
  if (q->head == NULL)
    q->tail = NULL;
  io->next = NULL;
  return io;
}

/* Per-target figures: what storlab-stats prints for a device, without the
 * histograms (a cluster has thousands of targets; the VM's latency
 * distribution comes from the fio JSON). */
struct cl_op_count {
  uint64_t count;
  uint64_t bytes;
  uint64_t latency_sum_ns;
};

struct cl_target_stats {
  struct cl_op_count op[SL_OP_COUNT];
  uint64_t queue_depth;
  uint64_t queue_depth_integral_ns;
  uint64_t busy_ns;
  uint64_t last_change_ns;
};

struct cl_target_ops {
  const char *kind;                    /* "hdd", "md", "writecache", "link", ... */
  void (*submit) (struct cl_target *t, struct cl_io *io);
  /* Optional: the layer's own figures as JSON object members
   * ("key": number, ...), no leading or trailing comma. */
  void (*write_counters) (struct cl_target *t, FILE *out);
  /* Optional: start in the steady state a workload over
   * [offset, offset + length) reaches (a read cache holding its share of
   * the working set).  Called before any I/O; passes it down. */
  void (*warm) (struct cl_target *t, uint64_t offset_bytes, uint64_t length_bytes);
  /* Optional: every warm region has been given; settle the state (a cache
   * shared by several regions gives each its share).  0, or -1 with err. */
  int (*warm_finish) (struct cl_target *t, char *err, size_t err_bytes);
  /* Optional, before any warm_finish, the layers above first: every warm
   * region has been given; settle what this layer will hold, and tell the
   * layer below what it need not (cl_warm_exclude). */
  void (*warm_settle) (struct cl_target *t);
  /* Optional: a layer above serves [offset, offset + length) from the
   * start, so this one holds none of it warm. */
  void (*warm_exclude) (struct cl_target *t, uint64_t offset_bytes, uint64_t length_bytes);
  /* Optional, the three together: a probe run (a cluster from the same
   * spec, warmed the same way, under the workload) is half done: note the
   * state (a write buffer its fill and writeback); at its end, the fill to
   * start at where that is more than warm_finish would give (a write
   * buffer whose writeback cannot keep up with the new blocks: the fill
   * where it would), 0 for none; and, on the run's cluster before
   * warm_finish, start so. */
  void (*warm_probe_mark) (struct cl_target *t);
  uint64_t (*warm_probe_fill) (const struct cl_target *t);
  void (*warm_start_fill) (struct cl_target *t, uint64_t blocks);
  /* Optional: the bytes warm_finish will allocate (a write buffer's dirty
   * blocks), so a warm state the host cannot hold is refused first. */
  uint64_t (*warm_need_bytes) (struct cl_target *t);
  /* Optional: the engine adopts the cluster (a device model's attach). */
  void (*attach) (struct cl_target *t, struct sl_engine *e);
  /* Optional: frees what the layer allocated (not the target itself). */
  void (*destroy) (struct cl_target *t);
};

struct cl_target {
  const struct cl_target_ops *ops;
  void *self;                          /* the layer's state */
  struct cluster *cluster;
  const char *kind;                    /* ops->kind, or a device model's own */
  char name[64];                       /* "node1/cache0", "node1/diskgroup" */
  char node[32];                       /* the node it belongs to, "" for links */
  uint64_t capacity_bytes;
  bool listed;                         /* a record of its own in the output */
  /* A slice: an offset into slice_of (cl_slice_new).  A bare one
   * (unlisted, costing no CPU) is nothing else, so cl_submit sends its
   * I/Os straight there (a level less per request). */
  struct cl_target *slice_of;
  uint64_t slice_offset_bytes;
  /* The node whose kernel pays for each I/O this target takes (a device's
   * driver, a layer's own code), before the target sees it, so a device's
   * figures are its own as a lab's plugin counts them: cpu_cost on that
   * node's core, then hypervisor_ns on its hypervisor (a device: QEMU's
   * I/O thread and the device's server).  NULL: nothing to pay. */
  struct cl_cpu *cpu;
  struct cl_op_cost cpu_cost;
  uint64_t hypervisor_ns;
  struct cl_target_stats stats;
  /* At most inflight_max of its I/Os at once (0: no limit), the rest held
   * in order before it, uncounted in its depth and latency: a lab
   * device behind QEMU's NBD client (host_cpu.h, device_inflight_max). */
  uint32_t inflight_max;
  uint32_t inflight;
  struct cl_io_queue held;
  struct cl_target *next_all;          /* the cluster's list, for output and free */
};

/* ---- used by every layer ---- */

struct cl_io *cl_io_new (struct cluster *c);
void cl_io_free (struct cluster *c, struct cl_io *io);
/* Hands io to t at the current engine time (counts its arrival). */
void cl_submit (struct cl_target *t, struct cl_io *io);
/* A child I/O of parent on t: op, range and flags; done(child) runs at its
 * completion and owner is the caller's. */
void cl_submit_child (struct cl_target *t, struct cl_io *parent, enum sl_op op,
                      uint32_t flags, uint64_t offset_bytes, uint64_t length_bytes,
                      cl_done_fn done, void *owner);
/* A layer's own I/O on t with no parent (background work): done, owner, scratch[0-1] its. */
struct cl_io *cl_submit_own (struct cl_target *t, enum sl_op op, uint32_t flags,
                             uint64_t offset_bytes, uint64_t length_bytes, cl_done_fn done,
                             void *owner, uint64_t scratch0, uint64_t scratch1);
/* Where io, on slice t, lies in what t slices: its offset there and its
 * length within t (0 and 0 for a FLUSH). */
void cl_slice_range (const struct cl_target *t, const struct cl_io *io, uint64_t *offset_bytes,
                     uint64_t *length_bytes);
/* The one I/O a layer sends below for io, with nothing of its own to do
 * at its completion (a child done with cl_part_done) and nothing after it
 * in the submit: when it is io but for its offset, io itself goes down and
 * its completion is counted for this layer too (up to CL_PASSES layers):
 * one cold record less to visit per completion in a big run. */
void cl_submit_only (struct cl_target *t, struct cl_io *io, enum sl_op op, uint32_t flags,
                     uint64_t offset_bytes, uint64_t length_bytes, void *owner);
/* The target is done with io now (counts it, and every layer it passed
 * through as itself, then calls io->done). */
void cl_io_complete (struct cl_io *io);
/* The same for a device whose reply leaves release_ns after the model is
 * done with it (host_cpu.h, device_release_ns): the device's own record
 * counts the model's completion, as a plugin's stats do; the layers above
 * see the reply. */
void cl_io_complete_released (struct cl_io *io, uint64_t release_ns);
/* A done callback for a child that is one part of its parent: frees it and
 * completes the parent when its last part is done (pending reaches 0). */
void cl_part_done (struct cl_io *child);
/* ... or at when_ns (>= now), through an engine event. */
void cl_io_complete_at (struct cl_io *io, uint64_t when_ns);
/* Starts the warm-up of [offset, offset + length) of t, if it has any. */
void cl_warm (struct cl_target *t, uint64_t offset_bytes, uint64_t length_bytes);
/* During a warm-up: the layer above t serves [offset, offset + length). */
void cl_warm_exclude (struct cl_target *t, uint64_t offset_bytes, uint64_t length_bytes);
/* During a warm-up: what the region's workload does (a write buffer
 * stays empty under a read load, fills under a write load, with the end
 * of the region a sequential writer wrote last). */
enum sl_warm_load cl_warm_load (const struct cluster *c);

uint64_t cl_now_ns (const struct cluster *c);
/* Runs fn(engine, arg, arg_u64) at when_ns (>= now). */
void cl_schedule (struct cluster *c, uint64_t when_ns, sl_event_fn fn, void *arg,
                  uint64_t arg_u64);

/* A new target of the cluster (zeroed stats), kept in its list and freed
 * with it.  listed: reported as a layer of its own. */
struct cl_target *cl_target_new (struct cluster *c, const struct cl_target_ops *ops,
                                 void *self, const char *node, const char *name,
                                 uint64_t capacity_bytes, bool listed);

/* Each I/O t takes costs cpu's node cpu_cost, then its hypervisor
 * hypervisor_ns (nothing is charged when both are zero). */
void cl_target_pays (struct cl_target *t, struct cl_cpu *cpu, struct cl_op_cost cpu_cost,
                     uint64_t hypervisor_ns);
/* A layer's own code runs on cpu (its node's) for per_io_ns of every I/O
 * t takes, read or write alike. */
void cl_layer_runs_on (struct cl_target *t, struct cl_cpu *cpu, uint64_t per_io_ns);

/* Aborts: out of memory in the middle of a run leaves nothing sane to do. */
void *cl_xcalloc (size_t count, size_t size);

#endif
