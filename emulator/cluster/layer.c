/* layer.c — the plumbing every layer shares (layer.h): cl_ios, their
 * submission and completion, per-target figures, the engine's clock and
 * events, and targets kept in the cluster's list. */
#define _GNU_SOURCE
#include "cluster_internal.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"

#define IOS_PER_BLOCK 256u

void *
cl_xcalloc (size_t count, size_t size)
{
  void *p = calloc (count ? count : 1, size ? size : 1);
  if (p == NULL)
    abort ();                  /* out of memory mid-model: nothing sane to do */
  return p;
}

/* ------------------------------------------------------------ I/Os -- */

/* cl_ios live in blocks that are never returned before the cluster is
 * freed: an I/O still referenced by a pending engine event stays valid. */
struct io_block {
  struct io_block *next;
  struct cl_io io[IOS_PER_BLOCK];
};

static struct io_block *
blocks_of (struct cluster *c)
{
  return (struct io_block *) c->io_blocks;
}

struct cl_io *
cl_io_new (struct cluster *c)
{
  if (c->free_ios == NULL) {
    struct io_block *b = cl_xcalloc (1, sizeof *b);
    b->next = blocks_of (c);
    c->io_blocks = b;
    c->ios_allocated += IOS_PER_BLOCK;
    c->memory_bytes += sizeof *b;
    for (unsigned i = 0; i < IOS_PER_BLOCK; i++) {
      b->io[i].next = c->free_ios;
      c->free_ios = &b->io[i];
    }
  }
  struct cl_io *io = c->free_ios;
  c->free_ios = io->next;
  memset (io, 0, sizeof *io);
  return io;
}

void
cl_io_free (struct cluster *c, struct cl_io *io)
{
  io->next = c->free_ios;
  c->free_ios = io;
}

uint64_t
cl_now_ns (const struct cluster *c)
{
  return sl_engine_now_ns (c->engine);
}

void
cl_schedule (struct cluster *c, uint64_t when_ns, sl_event_fn fn, void *arg, uint64_t arg_u64)
{
  sl_engine_schedule (c->engine, when_ns, fn, arg, arg_u64);
}

/* Little's law bookkeeping: the integral of the queue depth over time. */
static void
depth_change (struct cl_target_stats *s, uint64_t now_ns, int delta)
{
  uint64_t dt = now_ns - s->last_change_ns;
  s->queue_depth_integral_ns += s->queue_depth * dt;
  if (s->queue_depth > 0)
    s->busy_ns += dt;
  s->last_change_ns = now_ns;
  s->queue_depth = (uint64_t) ((int64_t) s->queue_depth + delta);
}

void
cl_slice_range (const struct cl_target *t, const struct cl_io *io, uint64_t *offset_bytes,
                uint64_t *length_bytes)
{
  bool flush = io->op == SL_OP_FLUSH;
  uint64_t offset = flush ? 0 : t->slice_offset_bytes + io->offset_bytes;
  uint64_t length = flush ? 0 : sl_min_u64 (io->length_bytes, t->capacity_bytes
                                            - sl_min_u64 (io->offset_bytes, t->capacity_bytes));
  *offset_bytes = offset;              /* after both are known: the caller's may be io's own */
  *length_bytes = length;
}

static void
enter (struct cl_target *t, struct cl_io *io, uint64_t now_ns)
{
  io->start_ns = now_ns;
  depth_change (&t->stats, now_ns, +1);
  t->ops->submit (t, io);
}

static void
held_event (struct sl_engine *e, void *arg, uint64_t unused)
{
  (void) unused;
  struct cl_io *io = arg;
  enter (io->target, io, sl_engine_now_ns (e));
}

/* t takes io now, or holds it behind the others while inflight_max of its
 * I/Os are out. */
static void
arrive (struct cl_target *t, struct cl_io *io, uint64_t now_ns)
{
  io->target = t;
  if (t->inflight_max) {
    if (t->inflight == t->inflight_max) {
      cl_io_queue_push (&t->held, io);
      return;
    }
    t->inflight++;
  }
  enter (t, io, now_ns);
}

/* One of t's I/Os is done: its slot goes to the oldest held one (an event
 * of its own, not a call from inside this completion). */
static void
hand_on_slot (struct cl_target *t, uint64_t now_ns)
{
  struct cl_io *io = cl_io_queue_pop (&t->held);
  if (io == NULL) {
    t->inflight--;
    return;
  }
  cl_schedule (t->cluster, now_ns, held_event, io, 0);
}

static void
sent_event (struct sl_engine *e, void *arg, uint64_t unused)
{
  (void) unused;
  struct cl_io *io = arg;
  arrive (io->target, io, sl_engine_now_ns (e));
}

void
cl_submit (struct cl_target *t, struct cl_io *io)
{
  /* a bare slice is an offset: through it to what it slices (layer.h),
   * unless it costs something (an LV's remap) */
  for (; t->slice_of && !t->listed && !t->cpu; t = t->slice_of)
    cl_slice_range (t, io, &io->offset_bytes, &io->length_bytes);
  uint64_t now = cl_now_ns (t->cluster);
  if (t->cpu) {                        /* the node's kernel, then its hypervisor */
    uint64_t cost = cl_op_cost_ns (&t->cpu_cost, io->op);
    uint64_t sent = cost ? cl_cpu_run (t->cpu, now, cost) : now;
    sent = cl_hypervisor_run (t->cpu, sent, t->hypervisor_ns);
    if (sent > now) {
      io->target = t;
      cl_schedule (t->cluster, sent, sent_event, io, 0);
      return;
    }
  }
  arrive (t, io, now);
}

/* A new I/O of the layer below, filled in (the rest zero). */
static struct cl_io *
io_for (struct cl_target *t, enum sl_op op, uint32_t flags, uint64_t offset_bytes,
        uint64_t length_bytes, cl_done_fn done, void *owner)
{
  struct cl_io *io = cl_io_new (t->cluster);
  io->op = op;
  io->flags = flags;
  io->offset_bytes = offset_bytes;
  io->length_bytes = length_bytes;
  io->done = done;
  io->owner = owner;
  return io;
}

void
cl_submit_child (struct cl_target *t, struct cl_io *parent, enum sl_op op, uint32_t flags,
                 uint64_t offset_bytes, uint64_t length_bytes, cl_done_fn done, void *owner)
{
  struct cl_io *io = io_for (t, op, flags, offset_bytes, length_bytes, done, owner);
  io->parent = parent;
  if (parent)
    parent->pending++;
  cl_submit (t, io);
}

static void
count_completion (struct cl_target *t, const struct cl_io *io, uint64_t now_ns)
{
  depth_change (&t->stats, now_ns, -1);
  struct cl_op_count *o = &t->stats.op[io->op < SL_OP_COUNT ? io->op : SL_OP_READ];
  o->count++;
  o->bytes += io->length_bytes;
  o->latency_sum_ns += now_ns - io->start_ns;
  if (t->inflight_max)
    hand_on_slot (t, now_ns);
}

/* The layers io passed through (slices that cost nothing of their own),
 * then whoever waits for it. */
static void
complete_passes (struct cl_io *io, uint64_t now_ns)
{
  while (io->passes > 0) {             /* innermost first, as children would */
    const struct cl_pass *p = &io->passed[--io->passes];
    io->target = p->target;
    io->start_ns = p->start_ns;
    count_completion (io->target, io, now_ns);
  }
  io->done (io);
}

void
cl_io_complete (struct cl_io *io)
{
  uint64_t now = cl_now_ns (io->target->cluster);
  count_completion (io->target, io, now);
  complete_passes (io, now);
}

static void
released_event (struct sl_engine *e, void *arg, uint64_t unused)
{
  (void) e;
  (void) unused;
  struct cl_io *io = arg;
  complete_passes (io, cl_now_ns (io->target->cluster));
}

void
cl_io_complete_released (struct cl_io *io, uint64_t release_ns)
{
  if (release_ns == 0) {
    cl_io_complete (io);
    return;
  }
  uint64_t now = cl_now_ns (io->target->cluster);
  count_completion (io->target, io, now);
  cl_schedule (io->target->cluster, now + release_ns, released_event, io, 0);
}

static void
complete_event (struct sl_engine *e, void *arg, uint64_t unused)
{
  (void) e;
  (void) unused;
  cl_io_complete (arg);
}

void
cl_submit_only (struct cl_target *t, struct cl_io *io, enum sl_op op, uint32_t flags,
                uint64_t offset_bytes, uint64_t length_bytes, void *owner)
{
  if (op != io->op || flags != io->flags || length_bytes != io->length_bytes
      || io->passes == CL_PASSES) {
    cl_submit_child (t, io, op, flags, offset_bytes, length_bytes, cl_part_done, owner);
    return;
  }
  io->passed[io->passes++] = (struct cl_pass) { io->target, io->start_ns };
  io->offset_bytes = offset_bytes;
  cl_submit (t, io);
}

void
cl_part_done (struct cl_io *child)
{
  struct cl_io *io = child->parent;
  cl_io_free (child->target->cluster, child);
  if (--io->pending == 0)
    cl_io_complete (io);
}

void
cl_io_complete_at (struct cl_io *io, uint64_t when_ns)
{
  cl_schedule (io->target->cluster, when_ns, complete_event, io, 0);
}

void
cl_warm (struct cl_target *t, uint64_t offset_bytes, uint64_t length_bytes)
{
  if (t->ops->warm)
    t->ops->warm (t, offset_bytes, length_bytes);
}

void
cl_warm_exclude (struct cl_target *t, uint64_t offset_bytes, uint64_t length_bytes)
{
  if (t->ops->warm_exclude)
    t->ops->warm_exclude (t, offset_bytes, length_bytes);
}

void
cl_target_pays (struct cl_target *t, struct cl_cpu *cpu, struct cl_op_cost cpu_cost,
                uint64_t hypervisor_ns)
{
  if (cpu_cost.read_ns == 0 && cpu_cost.write_ns == 0 && hypervisor_ns == 0)
    return;                            /* nothing to pay: no detour through the engine */
  t->cpu = cpu;
  t->cpu_cost = cpu_cost;
  t->hypervisor_ns = hypervisor_ns;
}

void
cl_layer_runs_on (struct cl_target *t, struct cl_cpu *cpu, uint64_t per_io_ns)
{
  cl_target_pays (t, cpu, (struct cl_op_cost) { per_io_ns, per_io_ns }, 0);
}

struct cl_target *
cl_target_new (struct cluster *c, const struct cl_target_ops *ops, void *self,
               const char *node, const char *name, uint64_t capacity_bytes, bool listed)
{
  struct cl_target *t = cl_xcalloc (1, sizeof *t);
  t->ops = ops;
  t->kind = ops->kind;
  t->self = self;
  t->cluster = c;
  snprintf (t->name, sizeof t->name, "%s", name);
  snprintf (t->node, sizeof t->node, "%s", node ? node : "");
  t->capacity_bytes = capacity_bytes;
  t->listed = listed;
  if (c->targets_tail)
    c->targets_tail->next_all = t;
  else
    c->targets = t;
  c->targets_tail = t;
  c->target_count++;
  c->memory_bytes += sizeof *t;
  return t;
}

struct cl_io *
cl_submit_own (struct cl_target *t, enum sl_op op, uint32_t flags, uint64_t offset_bytes,
               uint64_t length_bytes, cl_done_fn done, void *owner, uint64_t scratch0,
               uint64_t scratch1)
{
  struct cl_io *io = io_for (t, op, flags, offset_bytes, length_bytes, done, owner);
  io->scratch[0] = scratch0;
  io->scratch[1] = scratch1;
  cl_submit (t, io);
  return io;
}

struct cl_target_stats
cl_target_stats_at (const struct cl_target *t, uint64_t now_ns)
{
  struct cl_target_stats s = t->stats;
  depth_change (&s, now_ns, 0);
  return s;
}

void
cl_io_blocks_free (struct cluster *c)
{
  for (struct io_block *b = blocks_of (c), *next; b; b = next) {
    next = b->next;
    free (b);
  }
  c->io_blocks = NULL;
  c->free_ios = NULL;
}
