/* fabric.c — network links and the targets that cross them: a node's
 * front end and a hop to a peer (their CPU: host_cpu.c).
 *
 * Link presets (one way latency = wire + switch + both network stacks):
 *   1gbe    — 125 MB/s, 50 µs;  10gbe — 1250 MB/s, 20 µs;
 *   25gbe   — 3125 MB/s, 15 µs (line rates; latencies of the order kernel
 *             TCP round trips show on such links);
 *   tcg-udp — the lab's libvirt udp links between TCG guests: ~300 Mbit/s
 *             of TCP (37.5 MB/s; lab-recipes.md, "Guest-to-guest links")
 *             and 25 µs one way: a datagram over 127.0.0.1 from one QEMU
 *             to the other, half the 50-51 µs median round trip between
 *             two processes on the lab's 2-core host
 *             (scripts/bench/udp_loopback_rtt.py, 2026-11-29).  The same
 *             page's pings of 2-9 ms between idle guests are mostly their
 *             CPU (waking, the kernel's network stack, QEMU's netdev),
 *             which the model charges their hosts (host_cpu.c); the link
 *             took ~1 ms one way until 2026-11-29, and a calibration's
 *             whole NVMe/TCP round trip at 1 outstanding, CPU and all,
 *             took 947 µs (scripts/bench/cluster_validation.md).
 * Every message carries a header of HEADER_BYTES (an NVMe/TCP PDU header,
 * TCP/IP and Ethernet framing) beside its data. */
#define _GNU_SOURCE
#include "fabric.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_internal.h"
#include "core/units.h"

#define HEADER_BYTES 128u

struct link_preset {
  const char *name;
  struct cl_link_config config;
};

static const struct link_preset link_presets[] = {
  { "1gbe", { .latency_ns = 50000, .bytes_per_s = 125000000 } },
  { "10gbe", { .latency_ns = 20000, .bytes_per_s = 1250000000 } },
  { "25gbe", { .latency_ns = 15000, .bytes_per_s = 3125000000 } },
  { "tcg-udp", { .latency_ns = 25000, .bytes_per_s = 37500000 } },
};

#define COUNT(a) (sizeof (a) / sizeof (a)[0])

int
cl_link_preset (const char *name, struct cl_link_config *config, char *err, size_t err_bytes)
{
  for (size_t i = 0; i < COUNT (link_presets); i++)
    if (strcmp (link_presets[i].name, name) == 0) {
      *config = link_presets[i].config;
      return 0;
    }
  snprintf (err, err_bytes, "preset=%s: no such link preset (known: %s)", name,
            cl_link_preset_names ());
  return -1;
}

const char *
cl_link_preset_at (size_t i)
{
  return i < COUNT (link_presets) ? link_presets[i].name : NULL;
}

const char *
cl_link_preset_names (void)
{
  return "1gbe, 10gbe, 25gbe, tcg-udp";
}

/* --------------------------------------------------------------- links -- */

uint64_t
cl_link_send (struct cl_link_dir *dir, const struct cl_link_config *config, uint64_t now_ns,
              uint64_t bytes)
{
  uint64_t wire_ns = config->bytes_per_s
    ? (uint64_t) ((double) bytes * NS_PER_S / (double) config->bytes_per_s) : 0;
  uint64_t start = sl_max_u64 (now_ns, dir->free_ns);
  dir->free_ns = start + wire_ns;
  dir->busy_ns += wire_ns;
  dir->bytes += bytes;
  dir->messages++;
  return start + wire_ns + config->latency_ns;
}

/* ---------------------------------------------------------- front end -- */

struct front {
  struct cl_cpu *cpu;
  struct cl_target *below;
  bool file;                           /* a share's files, not a volume's block device */
};

static void
front_cpu_done (struct sl_engine *e, void *arg, uint64_t unused)
{
  (void) e;
  (void) unused;
  struct cl_io *io = arg;
  struct front *f = io->target->self;
  cl_submit_only (f->below, io, io->op, io->flags, io->offset_bytes, io->length_bytes, NULL);
}

static void
front_submit (struct cl_target *t, struct cl_io *io)
{
  struct front *f = t->self;
  uint64_t done = cl_cpu_front_run (f->cpu, cl_now_ns (t->cluster), io->op, f->file);
  cl_schedule (t->cluster, done, front_cpu_done, io, 0);
}

static void
front_warm (struct cl_target *t, uint64_t offset_bytes, uint64_t length_bytes)
{
  struct front *f = t->self;
  cl_warm (f->below, offset_bytes, length_bytes);
}

static void
free_self (struct cl_target *t)
{
  free (t->self);
}

struct cl_target *
cl_front_new (struct cluster *c, const char *node, const char *name, struct cl_cpu *cpu,
              struct cl_target *below, bool file, char *err, size_t err_bytes)
{
  (void) err;
  (void) err_bytes;
  static const struct cl_target_ops ops = {
    .kind = "front", .submit = front_submit, .warm = front_warm, .destroy = free_self,
  };
  struct front *f = cl_xcalloc (1, sizeof *f);
  f->cpu = cpu;
  f->below = below;
  f->file = file;
  return cl_target_new (c, &ops, f, node, name, below->capacity_bytes, true);
}

/* ---------------------------------------------------- a hop to a peer -- */

struct remote {
  struct cl_link *link;                /* NULL: the same node */
  int out_dir;                         /* index of the request's direction */
  struct cl_cpu *client_cpu;
  struct cl_cpu *server_cpu;
  struct cl_target *below;
};

static uint64_t
request_bytes (const struct cl_io *io)
{
  return HEADER_BYTES + (io->op == SL_OP_WRITE ? io->length_bytes : 0);
}

static uint64_t
reply_bytes (const struct cl_io *io)
{
  return HEADER_BYTES + (io->op == SL_OP_READ ? io->length_bytes : 0);
}

/* A message through the sender's hypervisor (its network backend), then
 * over the link; returns when it has arrived. */
static uint64_t
send_message (struct remote *r, struct cl_cpu *sender, int dir, uint64_t now_ns, uint64_t bytes)
{
  uint64_t sent = cl_hypervisor_run (sender, now_ns, sender->config.hypervisor_per_message_ns);
  return cl_link_send (&r->link->dir[dir], &r->link->config, sent, bytes);
}

/* The reply has reached the initiator: a sleeping one is woken by it. */
static void
reply_arrived (struct sl_engine *e, void *arg, uint64_t unused)
{
  (void) unused;
  struct cl_io *io = arg;
  struct remote *r = io->target->self;
  cl_io_complete_at (io, cl_cpu_message_arrives (r->client_cpu, sl_engine_now_ns (e)));
}

static void
remote_below_done (struct cl_io *child)
{
  struct cl_io *io = child->parent;
  struct cluster *c = child->target->cluster;
  cl_io_free (c, child);
  struct remote *r = io->target->self;
  uint64_t now = cl_now_ns (c);
  if (r->link == NULL) {
    cl_io_complete_at (io, now);
    return;
  }
  uint64_t back = send_message (r, r->server_cpu, 1 - r->out_dir, now, reply_bytes (io));
  cl_schedule (c, back, reply_arrived, io, 0);
}

static void
remote_served (struct sl_engine *e, void *arg, uint64_t unused)
{
  (void) e;
  (void) unused;
  struct cl_io *io = arg;
  struct remote *r = io->target->self;
  cl_submit_child (r->below, io, io->op, io->flags, io->offset_bytes, io->length_bytes,
                   remote_below_done, NULL);
}

static void
remote_arrived (struct sl_engine *e, void *arg, uint64_t unused)
{
  (void) e;
  (void) unused;
  struct cl_io *io = arg;
  struct remote *r = io->target->self;
  struct cluster *c = io->target->cluster;
  uint64_t cost = cl_op_cost_ns (&r->server_cpu->config.per_remote_io, io->op);
  uint64_t done = r->link ? cl_cpu_message_run (r->server_cpu, cl_now_ns (c), cost)
    : cl_cpu_run (r->server_cpu, cl_now_ns (c), cost);
  cl_schedule (c, done, remote_served, io, 0);
}

static void
remote_submit (struct cl_target *t, struct cl_io *io)
{
  struct remote *r = t->self;
  uint64_t now = cl_now_ns (t->cluster);
  uint64_t arrive = now;
  if (r->link) {                       /* the initiator's side, then the wire */
    uint64_t cost = cl_op_cost_ns (&r->client_cpu->config.per_hop_io, io->op);
    uint64_t sent = cost ? cl_cpu_run (r->client_cpu, now, cost) : now;
    arrive = send_message (r, r->client_cpu, r->out_dir, sent, request_bytes (io));
  }
  cl_schedule (t->cluster, arrive, remote_arrived, io, 0);
}

static void
remote_warm (struct cl_target *t, uint64_t offset_bytes, uint64_t length_bytes)
{
  struct remote *r = t->self;
  cl_warm (r->below, offset_bytes, length_bytes);
}

struct cl_target *
cl_remote_new (struct cluster *c, const char *node, const char *name, const char *kind,
               struct cl_link *link, bool a_to_b, struct cl_cpu *client_cpu,
               struct cl_cpu *server_cpu, struct cl_target *below, char *err, size_t err_bytes)
{
  static const struct cl_target_ops nvme_ops = {
    .kind = "nvme-tcp", .submit = remote_submit, .warm = remote_warm, .destroy = free_self,
  };
  static const struct cl_target_ops nfs_ops = {
    .kind = "nfs", .submit = remote_submit, .warm = remote_warm, .destroy = free_self,
  };
  const struct cl_target_ops *ops = strcmp (kind, "nfs") == 0 ? &nfs_ops
    : strcmp (kind, "nvme-tcp") == 0 ? &nvme_ops : NULL;
  if (ops == NULL) {
    snprintf (err, err_bytes, "%s: unknown hop kind '%s' (known: nvme-tcp, nfs)", name, kind);
    return NULL;
  }
  struct remote *r = cl_xcalloc (1, sizeof *r);
  r->link = link;
  r->out_dir = a_to_b ? 0 : 1;
  r->client_cpu = client_cpu;
  r->server_cpu = server_cpu;
  r->below = below;
  return cl_target_new (c, ops, r, node, name, below->capacity_bytes, true);
}
