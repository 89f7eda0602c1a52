/* host_cpu.h — a host's CPU as the storage path sees it (host_cpu.c): the
 * figures a host pays per step of an I/O, from presets whose sources are
 * in host_cpu.c, every one overridable per node. */
#ifndef STORLAB_CLUSTER_HOST_CPU_H
#define STORLAB_CLUSTER_HOST_CPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/request.h"
#include "core_timeline.h"

/* What a step of an I/O costs by its direction: under TCG a read and a
 * write differ by tens of µs at several steps (tcg_calibrate.py). */
struct cl_op_cost {
  uint64_t read_ns;
  uint64_t write_ns;                   /* also flushes and trims */
};

/* A host's CPU as the storage path sees it: cores that each serve one I/O's
 * processing at a time, first come first served.  A node's own kernel pays
 * per front-end I/O (a volume's block device, or a file of a share: the
 * file system's own work besides), per I/O it sends a device, per I/O its
 * md RAID, its LVs and its disk group's write buffer and read cache take, per
 * request it sends a peer and per request it serves; a core that was idle
 * first pays its wake-up.  Where the node is a guest, the hypervisor's
 * threads beside its vCPUs (QEMU's I/O thread, the device's server, the
 * network backend) pay per device I/O and per network message, on the
 * shared host's cores (the pool) when there is one. */
struct cl_host_config {
  uint32_t cores;
  struct cl_op_cost per_volume_io;     /* a VM's I/O on a volume: syscall, block layer */
  struct cl_op_cost per_file_io;       /* ... on a file of a share, its file system's */
  struct cl_op_cost per_device_io;     /* each I/O it sends one of its devices */
  uint64_t per_md_io_ns;               /* each I/O its md RAID (or a replica's md) takes */
  uint64_t per_linear_io_ns;           /* each I/O an LV of its (a dm linear or striped target) takes */
  uint64_t per_write_buffer_io_ns;     /* each I/O its dm-writecache (and LV under it) takes */
  uint64_t per_read_cache_io_ns;       /* each I/O its dm-cache takes */
  struct cl_op_cost per_hop_io;        /* each NVMe/TCP or NFS request it sends a peer */
  struct cl_op_cost per_remote_io;     /* serving a peer's NVMe/TCP or NFS request */
  uint64_t idle_wake_ns;               /* an idle core's interrupt and wake-up */
  /* A network message (an NVMe/TCP or NFS request or reply) that finds
   * every core of its node idle: beyond idle_wake_ns, what the node pays
   * for taking it alone (its interrupt, the protocol's softirq and the
   * wake of the thread that waits on the socket, which at depth are shared
   * by several messages), and its hypervisor for handing it to a sleeping
   * guest (QEMU's netdev waking the vCPU, a packet at a time). */
  uint64_t idle_message_ns;
  uint64_t hypervisor_idle_message_ns;
  /* QEMU's I/O thread and the device's server (a lab's nbdkit) per device
   * I/O, by what the server does for a request: hold its reply for the
   * model's time (the plugins' timed release: a futex hand-over more), or
   * reply at once (timing=off, sl_model_is_untimed).  And what a reply
   * costs them more where it finds the guest asleep (every core idle),
   * timed and untimed: taken alone, not with others that came while they
   * were at work.  That is load on the host's cores, not time on the
   * reply's way: it overlaps the guest's own wake-up (tcg_calibrate.py). */
  uint64_t hypervisor_per_device_io_ns;
  uint64_t hypervisor_per_untimed_io_ns;
  uint64_t hypervisor_idle_device_io_ns;
  uint64_t hypervisor_idle_untimed_io_ns;
  uint64_t hypervisor_per_message_ns;
  /* A device's reply leaves its server this long after the model completes
   * it: a lab's release path (the plugin's timer and the wake of the
   * thread that sends the reply, nbdkit-hdd-plugin(1)).  Time, not work:
   * no core is taken.  0 for a real device, and for an untimed one (no
   * release path). */
  uint64_t device_release_ns;
  uint64_t process_switch_ns;          /* a core going from one process's I/O to another's */
  /* A thread woken for an I/O's completion: at 1 outstanding a thread
   * every I/O, deeper a batch of them (batch_ios_max at most).  The
   * per-I/O figures above hold such batches already: what is charged is
   * what a smaller batch costs more. */
  uint64_t thread_wake_ns;
  /* The most I/Os one wake-up of a thread, or one switch to a process,
   * serves (the completions that wait for it, reaped together). */
  double batch_ios_max;
  /* Guests that take turns on a shared host's cores (the pool) evict each
   * other's caches: a vCPU woken from idle there pays this more (its own
   * and its QEMU's threads' refill) for each guest vCPU a core runs beyond
   * one (cl_crowded_wake_ns).  A vCPU that stays busy pays none. */
  uint64_t crowded_wake_ns;
  /* The figures above were measured on a shared host (the pool) whose
   * cores were calibrated_utilisation busy; where its cores never idle a
   * guest vCPU's work costs busy_host_share of them (under a hypervisor
   * that halts idle cores: this host is itself a VM).  Between the two,
   * by the pool's recent utilisation, the share goes linearly from 1 to
   * busy_host_share (cl_busy_host_share).  1 and 1 where not measured. */
  double busy_host_share;
  double calibrated_utilisation;
  /* At most this many I/Os of one device in flight past the hypervisor,
   * the rest waiting there, unseen by the device (0: no limit): a lab
   * guest's disk is QEMU's NBD client (cl_device_new). */
  double device_inflight_max;
  /* Every cost above is this many times its figure (0 or 1: as given):
   * the host reads slower (> 1) or faster than when the figures were
   * measured.  A lab host under TCG moves by tens of per cent within
   * minutes; a speed reading beside a run (the calibration's bare read,
   * scripts/bench/host_speed.py) says by how much. */
  double cpu_time_scale;
};

/* cost's figure for an I/O of op */
static inline uint64_t
cl_op_cost_ns (const struct cl_op_cost *cost, enum sl_op op)
{
  return op == SL_OP_READ ? cost->read_ns : cost->write_ns;
}

#define CL_HOST_PRESET_DEFAULT "bare-metal"

/* Fills config from a named preset; -1 (err names the known ones) if none. */
int cl_host_preset (const char *name, struct cl_host_config *config, char *err, size_t err_bytes);
/* The i-th host preset's name and the link preset its hosts have (tcg's
 * guests: the lab's udp links); NULL past the end. */
const char *cl_host_preset_at (size_t i, const char **link);
/* "bare-metal, tcg" */
const char *cl_host_preset_names (void);

/* A host's figures that count no time (a batch, shares), by the names a
 * node line and a host file give them ("batch-ios-max", ...): the i-th's
 * key and bounds, NULL past the end; whether key names one, and its
 * bounds; set into config when value is within them (0), -1 if not. */
const char *cl_host_ratio_at (size_t i, double *lo, double *hi);
/* Whether the i-th is a count (whole numbers only: device-inflight-max). */
bool cl_host_ratio_is_count (size_t i);
bool cl_host_ratio_find (const char *key, double *lo, double *hi);
int cl_host_ratio_set (struct cl_host_config *config, const char *key, double value);
double cl_host_ratio_get (const struct cl_host_config *config, const char *key);
/* "batch-ios-max, busy-host-share, ..." into buf. */
const char *cl_host_ratio_keys (char *buf, size_t buf_bytes);

/* A host's costs by the KEY=µs names a cluster spec's node line and a host
 * file give them ("per-volume-read-us", ...; "per-io-us" sets four). */
struct cl_host_cost;
/* The cost named key, or NULL. */
const struct cl_host_cost *cl_host_cost_find (const char *key);
/* The i-th cost's key, and whether it names one figure (not a pair or the
 * four front-end figures); NULL past the end. */
const char *cl_host_cost_at (size_t i, bool *one_figure);
/* Sets every figure of config the key stands for. */
void cl_host_cost_set (struct cl_host_config *config, const struct cl_host_cost *cost,
                       uint64_t value_ns);
/* The (first) figure the key stands for. */
uint64_t cl_host_cost_get (const struct cl_host_config *config, const struct cl_host_cost *cost);
/* "per-io-us, per-volume-read-us, ..." into buf. */
const char *cl_host_cost_keys (char *buf, size_t buf_bytes);

struct cl_cpu {
  struct cl_host_config config;
  uint64_t *core_free_ns;              /* per core: when it is free again (a
                                        * node's; a pool keeps timelines) */
  uint64_t busy_ns;                    /* summed over cores */
  uint64_t ios;
  /* The node's hypervisor threads, woken by a device's reply to its
   * sleeping guest, are at work on it until then: replies ready before
   * that are taken in the same wake-up (cl_hypervisor_idle_reply). */
  uint64_t idle_reply_until_ns;
  /* A pool's recent utilisation: the share of its cores' time booked in
   * the last whole window of CL_POOL_WINDOW_NS (busy_ns at its start). */
  uint64_t window_start_ns;
  uint64_t window_start_busy_ns;
  double recent_utilisation;
  /* The physical cores a node's own run on, shared with other nodes (the
   * lab's guests on one host), or NULL: its cores are its own. */
  struct cl_cpu *pool;
  /* A pool's: the guests' vCPUs it runs (every node's cores), the nodes
   * (cl_cpu_join_pool), and the vCPUs of those busy over its last whole
   * window (CL_GUEST_BUSY_SHARE_MIN; every one before the first ends).
   * A node's window_start_busy_ns marks its busy_ns at the window's start. */
  uint32_t guest_vcpus;
  struct cl_cpu **members;
  uint32_t member_count;
  uint32_t busy_vcpus;
  /* A pool's: per core, the work booked on it (core_timeline.h: work
   * runnable earlier takes the hole before work booked ahead), and the
   * engine's time, before which nothing is booked again. */
  struct cl_core_timeline *timelines;
  uint64_t floor_ns;
  /* The processes issuing the node's front-end I/Os (a lab's fio: one a
   * workload unit, its workers threads), 0 or 1: no switches between them;
   * the threads each runs and the I/Os each thread keeps in flight (fio's
   * iodepth), 0 taken as 1. */
  uint32_t processes;
  uint32_t threads;
  uint32_t worker_depth;
};

int cl_cpu_init (struct cl_cpu *cpu, const struct cl_host_config *config);
void cl_cpu_free (struct cl_cpu *cpu);
/* Takes the first free core for cost_ns from now on (and, with a pool, the
 * first free core of the pool at the same time), plus the core's wake-up
 * if it was idle; returns when done. */
uint64_t cl_cpu_run (struct cl_cpu *cpu, uint64_t now_ns, uint64_t cost_ns);
/* What a front-end I/O of op costs the node's core: its own (on a file of
 * a share or on a volume) and, with several processes issuing, its share
 * of the switches between them: a switch (process_switch_ns, to another
 * process (processes - 1) / processes of the time) serves a batch of I/Os,
 * as many as the process has threads and a thread has in flight, at most
 * batch_ios_max: one where either is one. */
uint64_t cl_cpu_front_io_ns (const struct cl_cpu *cpu, enum sl_op op, bool file);
/* A front-end I/O of op on the node's core (cl_cpu_front_io_ns; a core
 * that is busy, so not woken from idle, still wakes the I/O's thread);
 * returns when done. */
uint64_t cl_cpu_front_run (struct cl_cpu *cpu, uint64_t now_ns, enum sl_op op, bool file);
/* The node's cores run on the pool's (a lab's guest on its host). */
void cl_cpu_join_pool (struct cl_cpu *cpu, struct cl_cpu *pool);
/* What a wake-up of the node's vCPU at now_ns costs more on its pool:
 * crowded_wake_ns for each busy guest vCPU a pool core runs beyond one (0
 * without a pool, or with a core a busy vCPU). */
uint64_t cl_crowded_wake_ns (struct cl_cpu *cpu, uint64_t now_ns);
/* The share of its figures a guest's work that starts at now_ns on the
 * node's pool costs (1 without a pool): linear in the pool's recent
 * utilisation, 1 at calibrated_utilisation or less, busy_host_share with
 * every core busy. */
double cl_busy_host_share (struct cl_cpu *cpu, uint64_t now_ns);
/* The pool's utilisation windows: long enough to hold many I/Os of a TCG
 * guest (hundreds of µs each), short against a sweep point's seconds. */
#define CL_POOL_WINDOW_NS 20000000ULL
/* A guest crowds its host's cores when its vCPUs were busy at least this
 * share of the last window: an idle TCG guest's vCPU takes 0.5-1 % of a
 * core (tcg_crowding.py), a replica holder's under another node's 450
 * writes a second 27 %, a guest driving I/O at 1 outstanding half or more
 * (cluster_validation.md).  The crowding was measured with guests driving
 * I/O beside idle ones, which did not count. */
#define CL_GUEST_BUSY_SHARE_MIN 0.05
/* The hypervisor's work for a node (cost_ns from now on): on the first
 * free core of the pool, or beside the node's cores without one. */
uint64_t cl_hypervisor_run (struct cl_cpu *cpu, uint64_t now_ns, uint64_t cost_ns);
/* A device's reply released to the node at released_ns: where it finds
 * the guest asleep and the hypervisor's threads not already woken by
 * another reply, they take it alone, cost_ns more on the pool (load, not
 * delay: it overlaps the guest's own wake-up).  A mirrored write's two
 * replies that come together cost one wake-up: md RAID-1's at 1
 * outstanding cost QEMU's threads and nbdkit 16 µs an I/O more than at 8,
 * a single disk's 53-64 (tcg_calibrate.py's raid1 and bare, 2026-12-07). */
void cl_hypervisor_idle_reply (struct cl_cpu *cpu, uint64_t released_ns, uint64_t cost_ns);
/* Whether every core of the node is idle at now_ns (its guest asleep). */
bool cl_cpu_asleep (const struct cl_cpu *cpu, uint64_t now_ns);
/* A network message reaches the node at now_ns and takes cost_ns of its
 * work (a request it serves), as cl_cpu_run; but where it finds every core
 * idle it wakes one: hypervisor_idle_message_ns on the hypervisor's side
 * first, then idle_message_ns and the wake-up before the work, on that
 * core.  Returns when done. */
uint64_t cl_cpu_message_run (struct cl_cpu *cpu, uint64_t now_ns, uint64_t cost_ns);
/* The same for a message that only wakes whoever waits (a reply): when
 * the node has taken it, now_ns if a core was at work anyway. */
uint64_t cl_cpu_message_arrives (struct cl_cpu *cpu, uint64_t now_ns);

#endif
