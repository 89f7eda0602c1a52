/* cluster.c — the cluster as one device model: its address space is the
 * exports one after another; a request is handed to its export's target
 * (a node's front end, then the stack below) and completes when that
 * target is done.  Also the JSON every layer's record goes into; the
 * plumbing the layers share is layer.c's. */
#define _GNU_SOURCE
#include "cluster_internal.h"
#include "layers.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"
#include "core/json_string.h"
#include "core/stats.h"
#include "core/units.h"

struct cl_target *
cl_target_find (struct cluster *c, const char *name)
{
  for (struct cl_target *t = c->targets; t; t = t->next_all)
    if (strcmp (t->name, name) == 0)
      return t;
  return NULL;
}

/* ---------------------------------------------------------- the model -- */

struct cluster *
cl_cluster_new (void)
{
  struct cluster *c = cl_xcalloc (1, sizeof *c);
  c->memory_bytes = sizeof *c;
  return c;
}

void
cl_cluster_free (struct cluster *c)
{
  if (c == NULL)
    return;
  for (struct cl_target *t = c->targets, *next; t; t = next) {
    next = t->next_all;
    if (t->ops->destroy)
      t->ops->destroy (t);
    free (t);
  }
  cl_io_blocks_free (c);
  for (unsigned i = 0; i < c->node_count; i++) {
    cl_cpu_free (&c->node[i].cpu);
    free (c->node[i].pv);
  }
  cl_cpu_free (&c->pool);
  free (c->links);
  free (c->exports);
  free (c);
}

int
cl_node_find (const struct cluster *c, const char *name)
{
  for (unsigned i = 0; i < c->node_count; i++)
    if (strcmp (c->node[i].name, name) == 0)
      return (int) i;
  return -1;
}

struct cl_link *
cl_link_find (struct cluster *c, unsigned a, unsigned b, bool *a_to_b)
{
  for (unsigned i = 0; i < c->link_count; i++) {
    struct cl_link *l = &c->links[i];
    if (l->a == a && l->b == b) {
      *a_to_b = true;
      return l;
    }
    if (l->a == b && l->b == a) {
      *a_to_b = false;
      return l;
    }
  }
  return NULL;
}

int
cl_export_add (struct cluster *c, unsigned node, struct cl_target *target,
               uint64_t base_bytes, uint64_t size_bytes, char *err, size_t err_bytes)
{
  if (c->export_count == CL_MAX_EXPORTS) {
    snprintf (err, err_bytes, "more than %u exports", CL_MAX_EXPORTS);
    return -1;
  }
  if (size_bytes == 0 || size_bytes > target->capacity_bytes) {
    snprintf (err, err_bytes, "export of %" PRIu64 " bytes on %s (%" PRIu64 " bytes)",
              size_bytes, target->name, target->capacity_bytes);
    return -1;
  }
  if (base_bytes < c->capacity_bytes || base_bytes + size_bytes < base_bytes) {
    snprintf (err, err_bytes, "export at %" PRIu64 " overlaps the one before (ends at %"
              PRIu64 "): exports go in ascending order", base_bytes, c->capacity_bytes);
    return -1;
  }
  if (c->export_count % 64 == 0) {
    struct cl_export *grown = realloc (c->exports, (c->export_count + 64) * sizeof *grown);
    if (grown == NULL)
      abort ();
    c->exports = grown;
    c->memory_bytes += 64 * sizeof *grown;
  }
  c->exports[c->export_count++] = (struct cl_export) {
    .base_bytes = base_bytes, .size_bytes = size_bytes, .target = target, .node = node };
  c->capacity_bytes = base_bytes + size_bytes;
  return 0;
}

static const struct cl_export *
export_at (const struct cluster *c, uint64_t offset_bytes)
{
  unsigned lo = 0, hi = c->export_count;
  while (lo < hi) {
    unsigned mid = lo + (hi - lo) / 2;
    const struct cl_export *x = &c->exports[mid];
    if (offset_bytes < x->base_bytes)
      hi = mid;
    else if (offset_bytes >= x->base_bytes + x->size_bytes)
      lo = mid + 1;
    else
      return x;
  }
  return NULL;
}

static void
front_done (struct cl_io *io)
{
  struct cluster *c = io->owner;
  struct sl_request *r = (struct sl_request *) io->scratch[0];
  cl_io_free (c, io);
  sl_engine_complete (c->engine, r, cl_now_ns (c));
}

static void
reject_event (struct sl_engine *e, void *arg, uint64_t unused)
{
  (void) unused;
  sl_engine_complete (e, arg, sl_engine_now_ns (e));
}

static void
cluster_attach (void *self, struct sl_engine *e, struct sl_device_stats *stats)
{
  (void) stats;
  struct cluster *c = self;
  c->engine = e;
  for (struct cl_target *t = c->targets; t; t = t->next_all)
    if (t->ops->attach)
      t->ops->attach (t, e);
}

/* A request that crosses an export's end is cut there: a job's region
 * lies inside one export (the spec's writer makes it so), so only a
 * misplaced job file gets here, and it is told by its figures.  A FLUSH
 * goes to the export its offset is in (fio's fsync= on a worker's file). */
static void
cluster_submit (void *self, struct sl_engine *e, struct sl_request *r)
{
  struct cluster *c = self;
  const struct cl_export *x = export_at (c, r->offset_bytes);
  if (x == NULL) {
    /* a gap between exports (a FLUSH with no offset in one): nothing there */
    sl_engine_schedule (e, sl_engine_now_ns (e), reject_event, r, 0);
    return;
  }
  struct cl_io *io = cl_io_new (c);
  io->op = r->op;
  io->flags = r->flags & SL_REQUEST_FUA;
  io->offset_bytes = r->op == SL_OP_FLUSH ? 0 : r->offset_bytes - x->base_bytes;
  io->length_bytes = r->op == SL_OP_FLUSH ? 0
    : sl_min_u64 (r->length_bytes, x->size_bytes - io->offset_bytes);
  io->done = front_done;
  io->owner = c;
  io->scratch[0] = (uint64_t) (uintptr_t) r;
  cl_submit (x->target, io);
}

void
sl_cluster_warm (struct cluster *c, uint64_t offset_bytes, uint64_t length_bytes,
                 enum sl_warm_load load)
{
  const struct cl_export *x = export_at (c, offset_bytes);
  if (x == NULL)
    return;
  c->warmed = true;
  c->warm_load = load;
  uint64_t start = offset_bytes - x->base_bytes;
  cl_warm (x->target, start, sl_min_u64 (length_bytes, x->size_bytes - start));
  c->warm_load = SL_WARM_READS;
}

enum sl_warm_load
cl_warm_load (const struct cluster *c)
{
  return c->warm_load;
}

/* warm_settle of every target that has one, the layers above first: a
 * layer is made after those below it, so the list read backwards. */
static void
warm_settle_top_down (struct cluster *c)
{
  size_t n = 0;
  for (struct cl_target *t = c->targets; t; t = t->next_all)
    n += t->ops->warm_settle != NULL;
  if (n == 0)
    return;
  struct cl_target **settling = cl_xcalloc (n, sizeof *settling);
  size_t i = 0;
  for (struct cl_target *t = c->targets; t; t = t->next_all)
    if (t->ops->warm_settle)
      settling[i++] = t;
  while (i > 0) {
    struct cl_target *t = settling[--i];
    t->ops->warm_settle (t);
  }
  free (settling);
}

int
sl_cluster_warm_finish (struct cluster *c, uint64_t budget_bytes, char *err, size_t err_bytes)
{
  warm_settle_top_down (c);
  uint64_t need = 0;
  for (struct cl_target *t = c->targets; t; t = t->next_all)
    if (t->ops->warm_need_bytes)
      need += t->ops->warm_need_bytes (t);
  if (budget_bytes && need > budget_bytes) {
    snprintf (err, err_bytes, "--warm: the write buffers' and SSDs' steady state needs %" PRIu64
              " MiB more memory (the cluster's models hold %" PRIu64 " MiB); this host has %"
              PRIu64 " MiB for it: a smaller working set, smaller buffers or fewer nodes",
              (need + (1 << 20) - 1) >> 20, c->memory_bytes >> 20, budget_bytes >> 20);
    return -1;
  }
  for (struct cl_target *t = c->targets; t; t = t->next_all)
    if (t->ops->warm_finish && t->ops->warm_finish (t, err, err_bytes) < 0)
      return -1;
  return 0;
}

size_t
sl_cluster_warm_probe_layers (const struct cluster *c)
{
  size_t n = 0;
  for (const struct cl_target *t = c->targets; t; t = t->next_all)
    n += t->ops->warm_probe_fill != NULL;
  return n;
}

void
sl_cluster_warm_probe_mark (struct cluster *probe)
{
  for (struct cl_target *t = probe->targets; t; t = t->next_all)
    if (t->ops->warm_probe_mark)
      t->ops->warm_probe_mark (t);
}

size_t
sl_cluster_warm_probe_verdicts (const struct cluster *probe, uint64_t *fill, size_t max)
{
  size_t n = 0;
  for (const struct cl_target *t = probe->targets; t; t = t->next_all)
    if (t->ops->warm_probe_fill) {
      if (n < max)
        fill[n] = t->ops->warm_probe_fill (t);
      n++;
    }
  return n;
}

int
sl_cluster_warm_start_from (struct cluster *c, const uint64_t *fill, size_t count, char *err,
                            size_t err_bytes)
{
  if (sl_cluster_warm_probe_layers (c) != count) {
    snprintf (err, err_bytes, "--warm: the probe's cluster has %zu write buffers, the run's %zu",
              count, sl_cluster_warm_probe_layers (c));
    return -1;
  }
  size_t n = 0;
  for (struct cl_target *t = c->targets; t; t = t->next_all)
    if (t->ops->warm_probe_fill && t->ops->warm_start_fill)
      t->ops->warm_start_fill (t, fill[n++]);
  return 0;
}

int
sl_cluster_snapshot_event (struct cluster *c, bool take, char *err, size_t err_bytes)
{
  unsigned volumes = 0;
  for (struct cl_target *t = c->targets; t; t = t->next_all) {
    if (!cl_is_snapshot_layer (t))
      continue;
    volumes++;
    if (cl_snapshot_event (t, take, err, err_bytes) != 0)
      return -1;
  }
  if (volumes == 0) {
    snprintf (err, err_bytes, "no volume of the cluster takes snapshots (a volume statement's "
              "snapshots=)");
    return -1;
  }
  return 0;
}

int
sl_cluster_node_event (struct cluster *c, const char *node, bool down, char *err,
                       size_t err_bytes)
{
  int n = cl_node_find (c, node);
  if (n < 0) {
    snprintf (err, err_bytes, "no node '%s'", node);
    return -1;
  }
  struct cl_node *nd = &c->node[n];
  if (nd->down == down) {
    snprintf (err, err_bytes, "node %s is %s already", node, down ? "down" : "up");
    return -1;
  }
  for (unsigned i = 0; down && i < c->export_count; i++)
    if (c->exports[i].node == (unsigned) n) {
      snprintf (err, err_bytes, "node %s runs workers of this run (a node down here holds "
                "components only)", node);
      return -1;
    }
  /* every array first: none changes when one would fail (an array whose
   * home is down, or going, does no I/O) */
  for (struct cl_target *t = c->targets; down && t; t = t->next_all) {
    char why[192];
    if (cl_md_node_check (t, (unsigned) n, why, sizeof why) == 0)
      continue;
    int home = cl_node_find (c, t->node);
    if (home >= 0 && home != n && !c->node[home].down) {
      snprintf (err, err_bytes, "node %s down: %s", node, why);
      return -1;
    }
  }
  nd->down = down;
  for (struct cl_target *t = c->targets; t; t = t->next_all)
    cl_md_node_event (t, (unsigned) n, down);
  return 0;
}

/* ------------------------------------------------------------ output -- */

static void
write_ops (const struct cl_target_stats *s, FILE *out)
{
  fputs ("\"ops\": {", out);
  for (int op = 0; op < SL_OP_COUNT; op++) {
    const struct cl_op_count *o = &s->op[op];
    fprintf (out, "%s\"%s\": {\"count\": %" PRIu64 ", \"bytes\": %" PRIu64
             ", \"latency_ns\": {\"mean\": %.1f}}", op ? ", " : "", sl_op_name (op), o->count,
             o->bytes, o->count ? (double) o->latency_sum_ns / (double) o->count : 0.0);
  }
  fputc ('}', out);
}

static void
write_target (struct cl_target *t, uint64_t now_ns, FILE *out)
{
  struct cl_target_stats s = cl_target_stats_at (t, now_ns);
  fputs ("{\"name\": ", out);
  sl_json_write_string (out, t->name, sizeof (t->name));
  /* kind: the model's ("hdd", or "fixed" under timing=off); layer: what the
   * target is in the stack ("device", "md", "readcache", ...) */
  fprintf (out, ", \"kind\": \"%s\", \"layer\": \"%s\", \"node\": ", t->kind, t->ops->kind);
  sl_json_write_string (out, t->node, sizeof (t->node));
  fprintf (out, ", \"capacity_bytes\": %" PRIu64 ", \"now_ns\": %" PRIu64
           ", \"elapsed_ns\": %" PRIu64 ", ", t->capacity_bytes, now_ns, now_ns);
  write_ops (&s, out);
  fprintf (out, ", \"queue_depth_mean\": %.3f, \"busy_ns\": %" PRIu64 ", \"counters\": {",
           now_ns ? (double) s.queue_depth_integral_ns / (double) now_ns : 0.0, s.busy_ns);
  if (t->ops->write_counters)
    t->ops->write_counters (t, out);
  fputs ("}}", out);
}

static void
write_hosts (const struct cluster *c, uint64_t now_ns, FILE *out)
{
  fputs ("\"hosts\": [", out);
  for (unsigned i = 0; i < c->node_count; i++) {
    const struct cl_cpu *cpu = &c->node[i].cpu;
    double capacity_ns = (double) now_ns * cpu->config.cores;
    fprintf (out, "%s{\"node\": ", i ? ", " : "");
    sl_json_write_string (out, c->node[i].name, sizeof (c->node[i].name));
    const struct cl_host_config *h = &cpu->config;
    fprintf (out, ", \"cores\": %" PRIu32 ", \"per_volume_read_ns\": %" PRIu64
             ", \"per_volume_write_ns\": %" PRIu64 ", \"per_file_read_ns\": %" PRIu64
             ", \"per_file_write_ns\": %" PRIu64 ", \"per_device_read_ns\": %" PRIu64
             ", \"per_device_write_ns\": %" PRIu64 ", \"per_md_io_ns\": %" PRIu64
             ", \"per_linear_io_ns\": %" PRIu64
             ", \"per_write_buffer_io_ns\": %" PRIu64 ", \"per_read_cache_io_ns\": %" PRIu64
             ", \"per_hop_read_ns\": %" PRIu64 ", \"per_hop_write_ns\": %" PRIu64
             ", \"per_remote_read_ns\": %" PRIu64 ", \"per_remote_write_ns\": %" PRIu64
             ", \"idle_wake_ns\": %" PRIu64 ", \"idle_message_ns\": %" PRIu64
             ", \"hypervisor_idle_message_ns\": %" PRIu64 ", \"hypervisor_per_device_io_ns\": %" PRIu64
             ", \"hypervisor_per_untimed_io_ns\": %" PRIu64 ", \"hypervisor_idle_device_io_ns\": %" PRIu64
             ", \"hypervisor_idle_untimed_io_ns\": %" PRIu64
             ", \"hypervisor_per_message_ns\": %" PRIu64 ", \"device_release_ns\": %" PRIu64
             ", \"process_switch_ns\": %" PRIu64
             ", \"thread_wake_ns\": %" PRIu64 ", \"batch_ios_max\": %.2f"
             ", \"crowded_wake_ns\": %" PRIu64 ", \"busy_host_share\": %.2f"
             ", \"calibrated_utilisation\": %.2f, \"device_inflight_max\": %.0f"
             ", \"cpu_time_scale\": %.3f, \"processes\": %" PRIu32
             ", \"threads\": %" PRIu32 ", \"worker_depth\": %" PRIu32, h->cores, h->per_volume_io.read_ns,
             h->per_volume_io.write_ns, h->per_file_io.read_ns, h->per_file_io.write_ns,
             h->per_device_io.read_ns, h->per_device_io.write_ns, h->per_md_io_ns,
             h->per_linear_io_ns,
             h->per_write_buffer_io_ns, h->per_read_cache_io_ns, h->per_hop_io.read_ns,
             h->per_hop_io.write_ns, h->per_remote_io.read_ns, h->per_remote_io.write_ns,
             h->idle_wake_ns, h->idle_message_ns, h->hypervisor_idle_message_ns,
             h->hypervisor_per_device_io_ns, h->hypervisor_per_untimed_io_ns,
             h->hypervisor_idle_device_io_ns, h->hypervisor_idle_untimed_io_ns,
             h->hypervisor_per_message_ns, h->device_release_ns,
             h->process_switch_ns,
             h->thread_wake_ns, h->batch_ios_max, h->crowded_wake_ns, h->busy_host_share,
             h->calibrated_utilisation, h->device_inflight_max,
             h->cpu_time_scale > 0 ? h->cpu_time_scale : 1.0, cpu->processes, cpu->threads, cpu->worker_depth);
    fprintf (out, ", \"ios\": %" PRIu64 ", \"busy_ns\": %" PRIu64
             ", \"utilisation_pct\": %.2f}", cpu->ios, cpu->busy_ns,
             capacity_ns > 0 ? 100.0 * (double) cpu->busy_ns / capacity_ns : 0.0);
  }
  fputc (']', out);
}

static void
write_pool (const struct cluster *c, uint64_t now_ns, FILE *out)
{
  if (!c->has_pool) {
    fputs ("\"host_pool\": null", out);
    return;
  }
  const struct cl_cpu *pool = &c->pool;
  double capacity_ns = (double) now_ns * pool->config.cores;
  fprintf (out, "\"host_pool\": {\"cores\": %" PRIu32 ", \"guest_vcpus\": %" PRIu32
           ", \"ios\": %" PRIu64 ", \"busy_ns\": %" PRIu64 ", \"utilisation_pct\": %.2f}",
           pool->config.cores, pool->guest_vcpus, pool->ios, pool->busy_ns,
           capacity_ns > 0 ? 100.0 * (double) pool->busy_ns / capacity_ns : 0.0);
}

static void
write_links (const struct cluster *c, uint64_t now_ns, FILE *out)
{
  fputs ("\"links\": [", out);
  for (unsigned i = 0; i < c->link_count; i++) {
    const struct cl_link *l = &c->links[i];
    fprintf (out, "%s{\"name\": ", i ? ", " : "");
    sl_json_write_string (out, l->name, sizeof (l->name));
    fprintf (out, ", \"latency_ns\": %" PRIu64 ", \"bytes_per_s\": %" PRIu64, l->config.latency_ns,
             l->config.bytes_per_s);
    for (int d = 0; d < 2; d++) {
      const struct cl_link_dir *dir = &l->dir[d];
      fprintf (out, ", \"%s\": {\"from\": ", d == 0 ? "a_to_b" : "b_to_a");
      sl_json_write_string (out, c->node[d == 0 ? l->a : l->b].name, sizeof (c->node[d == 0 ? l->a : l->b].name));
      fprintf (out, ", \"bytes\": %" PRIu64 ", \"messages\": %" PRIu64 ", \"busy_ns\": %"
               PRIu64 ", \"utilisation_pct\": %.2f}", dir->bytes, dir->messages, dir->busy_ns,
               now_ns ? 100.0 * (double) dir->busy_ns / (double) now_ns : 0.0);
    }
    fputc ('}', out);
  }
  fputc (']', out);
}

static void
cluster_write_json (void *self, FILE *out)
{
  struct cluster *c = self;
  uint64_t now = cl_now_ns (c);
  fprintf (out, "\"nodes\": %u, \"exports\": %u, \"start_state\": \"%s\", \"memory_bytes\": %"
           PRIu64 ", ", c->node_count, c->export_count, c->warmed ? "warm" : "empty",
           c->memory_bytes);
  write_hosts (c, now, out);
  fputs (", ", out);
  write_pool (c, now, out);
  fputs (", ", out);
  write_links (c, now, out);
  fputs (", \"layers\": [", out);
  bool first = true;
  for (struct cl_target *t = c->targets; t; t = t->next_all) {
    if (!t->listed)
      continue;
    if (!first)
      fputs (", ", out);
    first = false;
    write_target (t, now, out);
  }
  fputc (']', out);
}

static void
cluster_destroy (void *self)
{
  cl_cluster_free (self);
}

static const struct sl_model_ops cluster_ops = {
  .kind = "cluster",
  .attach = cluster_attach,
  .submit = cluster_submit,
  .write_json = cluster_write_json,
  .destroy = cluster_destroy,
};

struct sl_model
cl_cluster_model (struct cluster *c)
{
  return (struct sl_model) { .ops = &cluster_ops, .self = c, .capacity_bytes = c->capacity_bytes,
                             .volatile_write_cache = false };
}

bool
sl_cluster_model_is (const struct sl_model *model)
{
  return model->ops == &cluster_ops;
}

struct cluster *
sl_cluster_of (const struct sl_model *model)
{
  return sl_cluster_model_is (model) ? model->self : NULL;
}
