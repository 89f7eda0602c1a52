/* layer_device.c — a device model (hdd, ssd, raid) as a cluster target.
 * The model runs in the cluster's engine, unchanged: each I/O becomes one
 * of its requests (SL_REQUEST_INTERNAL, as a RAID controller hands its
 * members theirs), and its completion completes the I/O.  The model's own
 * counters (cache hits, GC, destage) come out in the layer's record. */
#define _GNU_SOURCE
#include "layers.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_internal.h"
#include "core/engine.h"
#include "ranges.h"
#include "core/stats.h"
#include "ssd/ssd.h"

#define REQUESTS_PER_BLOCK 64u

/* The model's requests, kept apart from the cl_ios (only leaves need one)
 * in blocks freed with the device: a request stays valid while an engine
 * event may still point at it. */
struct request_block {
  struct request_block *next;
  struct sl_request request[REQUESTS_PER_BLOCK];
};

struct device_layer {
  struct sl_model model;
  struct sl_device_stats *stats;       /* the model's counters live here */
  struct sl_engine *engine;
  struct request_block *blocks;
  struct sl_request *free_requests;    /* linked by model_next */
  uint64_t release_ns;                 /* its node's device_release_ns (host_cpu.h) */
  struct cl_cpu *cpu;                  /* its node's, where a reply to a sleeping guest */
  uint64_t idle_hypervisor_ns;         /* ... costs the hypervisor this more */
  struct cl_ranges written;            /* bytes the warm-up's workload writes */
  bool written_at_random;              /* ... some of them at random (else in order) */
};

static struct sl_request *
request_new (struct cl_target *t)
{
  struct device_layer *d = t->self;
  if (d->free_requests == NULL) {
    struct request_block *b = cl_xcalloc (1, sizeof *b);
    b->next = d->blocks;
    d->blocks = b;
    t->cluster->memory_bytes += sizeof *b;
    for (unsigned i = 0; i < REQUESTS_PER_BLOCK; i++) {
      b->request[i].model_next = d->free_requests;
      d->free_requests = &b->request[i];
    }
  }
  struct sl_request *r = d->free_requests;
  d->free_requests = r->model_next;
  return r;
}

static void
request_done (struct sl_engine *e, struct sl_request *r)
{
  (void) e;
  struct cl_io *io = r->driver_data;
  struct device_layer *d = io->target->self;
  r->model_next = d->free_requests;
  d->free_requests = r;
  uint64_t released_ns = sl_engine_now_ns (e) + d->release_ns;
  if (d->cpu)
    cl_hypervisor_idle_reply (d->cpu, released_ns, d->idle_hypervisor_ns);
  cl_io_complete_released (io, d->release_ns);
}

static void
device_submit (struct cl_target *t, struct cl_io *io)
{
  struct device_layer *d = t->self;
  struct sl_request *r = request_new (t);
  memset (r, 0, sizeof *r);
  r->op = io->op;
  r->flags = SL_REQUEST_INTERNAL | (io->flags & SL_REQUEST_FUA);
  r->offset_bytes = io->offset_bytes;
  r->length_bytes = io->length_bytes;
  r->arrival_ns = cl_now_ns (t->cluster);
  r->on_complete = request_done;
  r->driver_data = io;
  d->model.ops->submit (d->model.self, d->engine, r);
}

static void
device_attach (struct cl_target *t, struct sl_engine *e)
{
  struct device_layer *d = t->self;
  d->engine = e;
  sl_device_stats_init (d->stats, t->name, d->model.ops->kind, d->model.capacity_bytes, 0);
  if (d->model.ops->attach)
    d->model.ops->attach (d->model.self, e, d->stats);
}

static void
device_write_counters (struct cl_target *t, FILE *out)
{
  struct device_layer *d = t->self;
  bool first = true;
  struct sl_ssd_status ssd;
  sl_ssd_model_status (&d->model, &ssd);      /* zeroes for another kind */
  /* the state it started from (cl_device_written_as_log, device_warm_finish) */
  if (ssd.log_layout_bytes > 0) {
    fprintf (out, "\"log_layout_bytes\": %" PRIu64, ssd.log_layout_bytes);
    first = false;
  }
  else if (ssd.written_region_bytes > 0) {
    fprintf (out, "\"written_region_bytes\": %" PRIu64, ssd.written_region_bytes);
    first = false;
  }
  for (unsigned i = 0; i < 16; i++) {
    if (d->stats->model_counter_name[i][0] == '\0')
      continue;
    fprintf (out, "%s\"%.*s\": %" PRIu64, first ? "" : ", ",
             (int) sizeof d->stats->model_counter_name[i], d->stats->model_counter_name[i],
             d->stats->model_counter[i]);
    first = false;
  }
}

/* The workload writes [offset, offset + length) of the device: noted, for
 * a drive whose steady state depends on where it is written. */
static void
device_warm (struct cl_target *t, uint64_t offset_bytes, uint64_t length_bytes)
{
  struct device_layer *d = t->self;
  enum sl_warm_load load = cl_warm_load (t->cluster);
  if (load == SL_WARM_READS || length_bytes == 0)
    return;
  cl_ranges_add (&d->written, offset_bytes, offset_bytes + length_bytes);
  d->written_at_random |= load == SL_WARM_RANDOM_WRITES;
}

/* The span of what the warm-up's workload writes on the device: false
 * when it writes none of it. */
static bool
written_span (struct device_layer *d, uint64_t *first, uint64_t *end)
{
  if (cl_ranges_merge (&d->written) == 0)
    return false;
  *first = d->written.range[0].first;
  *end = d->written.range[d->written.count - 1].end;
  return true;
}

/* An SSD in steady state written only in part starts in the state that
 * reaches, over the span of what the workload writes (md's members each
 * take their share of the volumes, one range for the usual layouts;
 * several are taken as one, the gaps between them counted written): at
 * random, the region filled and settled (sl_ssd_model_lay_out_written_region);
 * in order only, the region as the circular log it is written as.  Runs
 * after the layers above (the list's order), so a write buffer's log laid
 * out on the drive stays. */
static int
device_warm_finish (struct cl_target *t, char *err, size_t err_bytes)
{
  struct device_layer *d = t->self;
  uint64_t first, end;
  if (!written_span (d, &first, &end))
    return 0;
  cl_ranges_free (&d->written);
  char why[200];
  int rc = d->written_at_random
    ? sl_ssd_model_lay_out_written_region (&d->model, first, end - first, why, sizeof why)
    : sl_ssd_model_lay_out_log (&d->model, first, end - first, first, why, sizeof why);
  if (rc < 0) {
    snprintf (err, err_bytes, "%s: %s", t->name, why);
    return -1;
  }
  return 0;
}

/* The memory device_warm_finish's layout takes at most (its bits grow as
 * the region is written), so a warm state the host cannot hold is
 * refused before it is built. */
static uint64_t
device_warm_need_bytes (struct cl_target *t)
{
  struct device_layer *d = t->self;
  uint64_t first, end;
  if (!written_span (d, &first, &end))
    return 0;
  return d->written_at_random ? sl_ssd_model_written_region_bytes (&d->model, end - first)
    : sl_ssd_model_log_layout_bytes (&d->model, end - first);
}

static void device_destroy (struct cl_target *t);

static const struct cl_target_ops device_ops = {
  .kind = "device", .submit = device_submit, .attach = device_attach,
  .write_counters = device_write_counters, .warm = device_warm,
  .warm_need_bytes = device_warm_need_bytes, .warm_finish = device_warm_finish,
  .destroy = device_destroy,
};

/* The device t is, or slices (through any number of slices), and the
 * offset there of t's offset 0 in *offset_bytes; NULL for another target. */
static struct device_layer *
device_under (const struct cl_target *t, uint64_t *offset_bytes)
{
  *offset_bytes = 0;
  for (; t->slice_of != NULL; t = t->slice_of)
    *offset_bytes += t->slice_offset_bytes;
  return t->ops == &device_ops ? t->self : NULL;
}

uint64_t
cl_device_log_bytes (const struct cl_target *t, uint64_t length_bytes)
{
  uint64_t base;
  struct device_layer *d = device_under (t, &base);
  return d ? sl_ssd_model_log_layout_bytes (&d->model, length_bytes) : 0;
}

int
cl_device_written_as_log (struct cl_target *t, uint64_t offset_bytes, uint64_t length_bytes,
                          uint64_t oldest_bytes, char *err, size_t err_bytes)
{
  uint64_t base;
  struct device_layer *d = device_under (t, &base);
  return d ? sl_ssd_model_lay_out_log (&d->model, base + offset_bytes, length_bytes,
                                       base + oldest_bytes, err, err_bytes) : 0;
}

static void
device_destroy (struct cl_target *t)
{
  struct device_layer *d = t->self;
  d->model.ops->destroy (d->model.self);
  cl_ranges_free (&d->written);
  while (d->blocks) {
    struct request_block *next = d->blocks->next;
    free (d->blocks);
    d->blocks = next;
  }
  free (d->stats);
  free (d);
}

struct cl_target *
cl_device_new (struct cluster *c, const char *node, const char *name, struct sl_model model,
               char *err, size_t err_bytes)
{
  if (model.ops == NULL) {
    snprintf (err, err_bytes, "%s: no model", name);
    return NULL;
  }
  struct device_layer *d = cl_xcalloc (1, sizeof *d);
  d->model = model;
  d->stats = cl_xcalloc (1, sizeof *d->stats);
  c->memory_bytes += sizeof *d + sizeof *d->stats;
  struct cl_target *t = cl_target_new (c, &device_ops, d, node, name, model.capacity_bytes,
                                       true);
  t->kind = model.ops->kind;           /* "hdd", "ssd", "raid" */
  int sender = node ? cl_node_find (c, node) : -1;
  if (sender >= 0) {
    struct cl_cpu *cpu = &c->node[sender].cpu;
    /* a server that replies at once has no release path: none of its
     * cost and no lateness; a reply that finds the guest asleep costs
     * QEMU's threads more either way (each request taken alone) */
    bool untimed = sl_model_is_untimed (model);
    cl_target_pays (t, cpu, cpu->config.per_device_io,
                    untimed ? cpu->config.hypervisor_per_untimed_io_ns
                    : cpu->config.hypervisor_per_device_io_ns);
    d->release_ns = untimed ? 0 : cpu->config.device_release_ns;
    d->cpu = cpu;
    d->idle_hypervisor_ns = untimed ? cpu->config.hypervisor_idle_untimed_io_ns
      : cpu->config.hypervisor_idle_device_io_ns;
    t->inflight_max = (uint32_t) cpu->config.device_inflight_max;
  }
  return t;
}
