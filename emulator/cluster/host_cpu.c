/* host_cpu.c — a host's CPU as the storage path sees it: the cores that
 * serve each step of an I/O first come first served, the shared host a
 * lab's guests run on (the pool), and the host presets.
 *
 * Host presets (per I/O of the storage path, what a host spends):
 *   tcg        — this project's lab under QEMU TCG: one vCPU a guest, as the
 *                lab topologies give, and the guest's kernel emulated, so
 *                every step of an I/O costs tens to hundreds of µs.  The
 *                medians of three passes of scripts/bench/tcg_calibrate.py
 *                (fio 4 KiB random in a guest of calibrate-tcg.toml, its
 *                workers threads as a lab's, one mechanism at a time, on
 *                2026-11-27 at 02:06-02:26 UTC; the tables are in
 *                scripts/bench/cluster_validation.md): at 8 outstanding a
 *                bare disk costs the vCPU 141 µs a read and 102 a write, of
 *                which 42 µs are the device I/O (what md RAID-1's second
 *                write adds) and the rest the front end's on a block
 *                device (100 µs a read, 60 a write); on a file of ext4 the
 *                front end takes 83 µs a read and 176 a write.  md RAID-1
 *                costs a read 32 µs more than the disk alone (its own code,
 *                charged for every I/O an md takes).  A device-mapper
 *                linear target over the disk (LVM's remap: every LV is
 *                one) costs 26 µs more an I/O (21-29 in the three passes;
 *                7-12 in the evening's run before), charged for every I/O
 *                an LV takes; stack_cost.py in profile-raid's lab saw +7 µs
 *                for the LV on its md (2026-12-02).  The disk group's
 *                write buffer (dm-writecache over an LVM volume, as
 *                disk-group.sh builds it) adds 40 µs an I/O; its read cache
 *                (dm-cache, smq) measured -9 µs on reads against the buffer
 *                alone: nothing to charge.  An NVMe/TCP request
 *                costs the initiator 369 µs a read and 437 a write besides
 *                the front end, the target 249 and 279 besides its device
 *                I/O; an I/O at 1 outstanding costs 110 µs more than at 8
 *                (the vCPU idles while the request is out, then takes the
 *                interrupt and wakes fio).  Two fio processes on the vCPU,
 *                against two threads of one, cost about 218 µs more an I/O
 *                at 1 outstanding: TCG flushes its software TLB at every
 *                address-space switch, so the next process's pages are
 *                translated again; with switches about every other I/O,
 *                437 µs a switch.  A switch serves more than one I/O when
 *                workers keep several in flight: eight fio processes of 8
 *                workers against 64 threads of one (processes8x8 and
 *                threads64, started at a lab sweep's start gate, one pass
 *                on 2026-11-27 at 09:12 UTC) cost 403 and 344 µs more a
 *                read and a write at 1 outstanding a worker (a switch an
 *                I/O, 7/8 of the time to another process: the 437 µs
 *                above), 102 and 123 at 4, 104 and 115 at 16: a switch
 *                serves at most about 3.4 I/Os (373 over 111), however many
 *                a worker has in flight, and no more than the process has
 *                threads: two fio processes of one worker at 8 outstanding
 *                paid a read a whole switch, as at 1 (the calibration's
 *                processes2 against threads2), and profile-raid's two units
 *                of two workers at 8 outstanding cost the lab's vCPU
 *                312-338 µs a read, where the model gives 392 with a switch
 *                an I/O, 238 with 3.4 I/Os a switch, 283 with 2
 *                (scripts/bench/cluster_validation.md, 2026-11-27 08:48).
 *                The same 64 threads alone cost 34 and 42 µs more a read and
 *                a write at 1 outstanding than at 4 (196 against 162, 159
 *                against 117; 155 and 110 at 16): a thread woken for every
 *                I/O, where deeper its wake-up serves up to 3.4; 54 µs a
 *                wake-up (38 over 1 - 1/3.4), charged where the core is
 *                busy (an idle one pays its own wake-up).
 *                Beside the vCPUs, QEMU's I/O thread and nbdkit spend 65 µs
 *                per device I/O
 *                and QEMU's udp netdevs 144 µs per message.
 *                Each of a guest's disks is QEMU's NBD client, which
 *                keeps at most 16 requests in flight (MAX_NBD_REQUESTS in
 *                QEMU's block/nbd.c, 7.2 as the lab runs it); the rest
 *                wait in QEMU, where the device's server (and its stats)
 *                does not see them: device_inflight_max 16, so that a
 *                device's depth and latency are what the lab's plugin
 *                counts (profile-hybrid's writeback sent 32 copies a disk
 *                at once in the model, twice the lab's device latency;
 *                cluster_validation.md, 2026-12-07).
 *                A hop at 1 outstanding finds both guests asleep: the
 *                same run's NVMe/TCP rows cost the initiator's vCPU 556 µs
 *                a read and 386 a write more than at 8 outstanding, the
 *                target's 334 and 256, QEMU's threads 278 and 284 (the
 *                bare disk's 16 and 52); beyond the wake-up the model
 *                charges anyway (and the initiator's fio thread's wake, 38
 *                µs of thread_wake_ns below), a message that finds its
 *                guest asleep costs its vCPU 254 µs (the mean of both
 *                sides and directions) and QEMU's threads 124 (the hop's
 *                more, less its device I/O's, over its two messages):
 *                idle_message_ns, as tcg_calibrate.py works them out, here
 *                from the run's tables (each row the median of its passes).
 *                Guests that outnumber the host's cores pay for each
 *                wake-up: scripts/bench/tcg_crowding.py (four guests of
 *                calibrate-crowding.toml on this 2-core host, each driving
 *                its bare disk at 4 KiB random, two passes on 2026-11-27 at
 *                15:41-15:59 UTC; the table is in
 *                scripts/bench/cluster_validation.md):
 *                at 1 outstanding, where the vCPU sleeps and is woken for
 *                every I/O, four busy guests cost their vCPUs 477-496 µs a
 *                read (269-286 with one guest busy) and 402-451 a write
 *                (244-251), and QEMU's other threads and nbdkit 223-226 and
 *                193-209 (112-119): 232-326 µs more an I/O, vCPU and
 *                hypervisor together, with two vCPUs a core, one beyond
 *                one; the median, 303 µs, is charged to a vCPU's wake-up
 *                for each busy vCPU a core runs beyond one (beyond two not
 *                measured).  Guests taking turns on a core evict each
 *                other's caches (TCG's translated code, QEMU's software
 *                TLB), so a vCPU that slept comes back cold.  Busy vCPUs
 *                pay little of it: eight threads of 16 outstanding a guest
 *                cost 1.11-1.16 times a lone guest's; one thread at 8
 *                outstanding, whose vCPU idles between completions, 1.67-
 *                1.83 times (the model charges only the wake-ups its vCPU
 *                takes, so it gives such a load less).  Two busy guests, a
 *                core each, cost about what one does; an idle guest's vCPU
 *                uses about 1 % of a core.
 *                tcg_calibrate.py's figures were taken over each fio run
 *                whole, its start-up included (tcg_crowding.py's in a
 *                window timed from when the runs were asked for, which a
 *                slow start could reach into); since 2026-11-29 both
 *                measure inside a window of the run, as a lab sweep's
 *                point is (scripts/bench/gated_fio.py).  On that day's
 *                machine the start-up had added 16 % to a bare disk's read
 *                at 8 outstanding and 43 % at 1.  The preset's machine is gone
 *                and the preset was not measured again: a lab's prediction
 *                takes its own host's figures where it can
 *                (scripts/bench/cluster_validate.py --calibrate).
 *                Nor was a timed device's release path on that machine
 *                (device_release_ns: how late a lab plugin's reply leaves
 *                past its model's completion, measured since 2026-12-03 on
 *                calibrate-tcg.toml's timed disk): 0 here, a host file
 *                from tcg_calibrate.py --host-file carries it.  Nor what
 *                the hypervisor spends on an untimed disk's I/O apart from
 *                a timed disk's, or more on a reply that finds its guest
 *                asleep (measured since 2026-12-07: the bare and timed
 *                disks at 1 and 8 outstanding; the untimed one since
 *                2026-12-07 evening): the timed figure, and none more,
 *                here.
 *                Every figure above is a partly idle host's: tcg_calibrate.py
 *                runs one guest, and the bare and ext4 runs at 8
 *                outstanding kept 0.65-0.72 of the host's two cores busy
 *                (median 0.71: calibrated_utilisation).  With two busy
 *                loops at nice 19 keeping both cores from idling, the same
 *                runs cost node1's vCPU 0.56-0.80 of that (median 0.71:
 *                busy_host_share, charged with every pool core busy over
 *                the last window, linearly between by the pool's
 *                utilisation; a steady round of scripts/bench/
 *                tcg_calibrate.py --only bare,ext4 idle and busy
 *                alternating, on 2026-12-06 at 19:12-19:23 UTC, scripts/
 *                bench/cluster_validation.md).  At 1 outstanding the vCPU
 *                cost 0.82-0.98 as much on the busy host in that round and
 *                0.92-1.22 in a pass at 20:45-21:10 (a vCPU woken for each
 *                I/O preempts the loop on its core each time, which a lab's
 *                busy neighbours, guests at the same priority, do not make
 *                it do): not charged.  The likely cause:
 *                this machine is itself a VM, and a core that idles halts
 *                in the outer hypervisor, so whatever runs there next comes
 *                back to a cold cache.  QEMU's threads beside the vCPUs
 *                cost 1.29-1.38 times as much at 1 outstanding and 0.67-
 *                0.98 at 8: no one share, not charged.
 *   bare-metal — a KVM host: the kernel block layer plus virtio and QEMU's
 *                I/O thread cost on the order of 10 µs of CPU per I/O, and
 *                an NVMe/TCP or NFS target about as much again; 16 cores
 *                for storage; a process switch no more than a few µs with
 *                the hardware's tagged TLB (PCID), not charged.  An
 *                assumption of this order, not a measurement: override per
 *                node where a study gives more.
 */
#define _GNU_SOURCE
#include "host_cpu.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/units.h"

#define COUNT(a) (sizeof (a) / sizeof (a)[0])

struct host_preset {
  const char *name;
  const char *link;                    /* the links such hosts have */
  struct cl_host_config config;
};

static const struct host_preset host_presets[] = {
  { "bare-metal", "10gbe", { .cores = 16, .per_volume_io = { 10000, 10000 },
                             .per_file_io = { 10000, 10000 },
                             .per_remote_io = { 10000, 10000 }, .busy_host_share = 1.0,
                             .calibrated_utilisation = 1.0, .cpu_time_scale = 1.0 } },
  { "tcg", "tcg-udp", { .cores = 1, .per_volume_io = { 100000, 60000 },
                        .per_file_io = { 83000, 176000 }, .per_device_io = { 42000, 42000 },
                        .per_md_io_ns = 32000, .per_linear_io_ns = 26000,
                        .per_write_buffer_io_ns = 40000,
                        .per_read_cache_io_ns = 0,
                        .per_hop_io = { 369000, 437000 }, .per_remote_io = { 249000, 279000 },
                        .idle_wake_ns = 110000, .idle_message_ns = 254000,
                        .hypervisor_idle_message_ns = 124000, .hypervisor_per_device_io_ns = 65000,
                        .hypervisor_per_untimed_io_ns = 65000,
                        .hypervisor_per_message_ns = 144000, .process_switch_ns = 437000,
                        .thread_wake_ns = 54000, .batch_ios_max = 3.4,
                        .crowded_wake_ns = 303000, .busy_host_share = 0.71,
                        .calibrated_utilisation = 0.71, .device_inflight_max = 16,
                        .cpu_time_scale = 1.0 } },
};

int
cl_host_preset (const char *name, struct cl_host_config *config, char *err, size_t err_bytes)
{
  for (size_t i = 0; i < COUNT (host_presets); i++)
    if (strcmp (host_presets[i].name, name) == 0) {
      *config = host_presets[i].config;
      return 0;
    }
  snprintf (err, err_bytes, "host=%s: no such host preset (known: %s)", name,
            cl_host_preset_names ());
  return -1;
}

const char *
cl_host_preset_at (size_t i, const char **link)
{
  if (i >= COUNT (host_presets))
    return NULL;
  *link = host_presets[i].link;
  return host_presets[i].name;
}

const char *
cl_host_preset_names (void)
{
  return "bare-metal, tcg";
}

/* ------------------------------------------------------ ratio keys -- */

#define RATIO(field) offsetof (struct cl_host_config, field)
static const struct {
  const char *key;
  size_t at;
  double lo, hi;
  bool whole;                          /* a count: whole numbers only */
} host_ratios[] = {
  { "batch-ios-max", RATIO (batch_ios_max), 1, 1e6, false },
  { "busy-host-share", RATIO (busy_host_share), 0.05, 4, false },
  { "calibrated-utilisation", RATIO (calibrated_utilisation), 0, 1, false },
  { "device-inflight-max", RATIO (device_inflight_max), 0, 65536, true },
  { "cpu-time-scale", RATIO (cpu_time_scale), 0.1, 10, false },
};
#undef RATIO

/* The index of the ratio named key, or COUNT (host_ratios). */
static size_t
ratio_index (const char *key)
{
  size_t i = 0;
  while (i < COUNT (host_ratios) && strcmp (host_ratios[i].key, key) != 0)
    i++;
  return i;
}

const char *
cl_host_ratio_at (size_t i, double *lo, double *hi)
{
  if (i >= COUNT (host_ratios))
    return NULL;
  *lo = host_ratios[i].lo;
  *hi = host_ratios[i].hi;
  return host_ratios[i].key;
}

bool
cl_host_ratio_is_count (size_t i)
{
  return i < COUNT (host_ratios) && host_ratios[i].whole;
}

bool
cl_host_ratio_find (const char *key, double *lo, double *hi)
{
  return cl_host_ratio_at (ratio_index (key), lo, hi) != NULL;
}

int
cl_host_ratio_set (struct cl_host_config *config, const char *key, double value)
{
  size_t i = ratio_index (key);
  if (i == COUNT (host_ratios) || !(value >= host_ratios[i].lo && value <= host_ratios[i].hi)
      || (host_ratios[i].whole && value != (double) (uint64_t) value))
    return -1;
  *(double *) ((char *) config + host_ratios[i].at) = value;
  return 0;
}

double
cl_host_ratio_get (const struct cl_host_config *config, const char *key)
{
  size_t i = ratio_index (key);
  return i == COUNT (host_ratios) ? 0
    : *(const double *) ((const char *) config + host_ratios[i].at);
}

/* "a, b, ..." of the keys key_at gives (NULL past the last) into buf. */
static const char *
join_keys (char *buf, size_t buf_bytes, const char *(*key_at) (size_t))
{
  size_t used = 0;
  const char *key;
  buf[0] = '\0';
  for (size_t i = 0; (key = key_at (i)) != NULL && used < buf_bytes; i++)
    used += (size_t) snprintf (buf + used, buf_bytes - used, "%s%s", i ? ", " : "", key);
  return buf;
}

static const char *
ratio_key_at (size_t i)
{
  return i < COUNT (host_ratios) ? host_ratios[i].key : NULL;
}

const char *
cl_host_ratio_keys (char *buf, size_t buf_bytes)
{
  return join_keys (buf, buf_bytes, ratio_key_at);
}

/* ------------------------------------------------------- cost keys -- */

/* The KEY=µs names of a host's costs, as a cluster spec's node line and a
 * host file give them: the figures each sets (several for a key that sets
 * a cost's both directions or both front ends), as offsets into struct
 * cl_host_config. */
#define COST(field) offsetof (struct cl_host_config, field)
struct cl_host_cost {
  const char *key;
  size_t at[4];
  unsigned count;
};
static const struct cl_host_cost host_costs[] = {
  { "per-io-us", { COST (per_volume_io.read_ns), COST (per_volume_io.write_ns),
                   COST (per_file_io.read_ns), COST (per_file_io.write_ns) }, 4 },
  { "per-volume-read-us", { COST (per_volume_io.read_ns) }, 1 },
  { "per-volume-write-us", { COST (per_volume_io.write_ns) }, 1 },
  { "per-file-read-us", { COST (per_file_io.read_ns) }, 1 },
  { "per-file-write-us", { COST (per_file_io.write_ns) }, 1 },
  { "per-device-io-us", { COST (per_device_io.read_ns), COST (per_device_io.write_ns) }, 2 },
  { "per-device-read-us", { COST (per_device_io.read_ns) }, 1 },
  { "per-device-write-us", { COST (per_device_io.write_ns) }, 1 },
  { "per-md-io-us", { COST (per_md_io_ns) }, 1 },
  { "per-linear-io-us", { COST (per_linear_io_ns) }, 1 },
  { "per-write-buffer-io-us", { COST (per_write_buffer_io_ns) }, 1 },
  { "per-read-cache-io-us", { COST (per_read_cache_io_ns) }, 1 },
  { "per-hop-io-us", { COST (per_hop_io.read_ns), COST (per_hop_io.write_ns) }, 2 },
  { "per-hop-read-us", { COST (per_hop_io.read_ns) }, 1 },
  { "per-hop-write-us", { COST (per_hop_io.write_ns) }, 1 },
  { "per-remote-io-us", { COST (per_remote_io.read_ns), COST (per_remote_io.write_ns) }, 2 },
  { "per-remote-read-us", { COST (per_remote_io.read_ns) }, 1 },
  { "per-remote-write-us", { COST (per_remote_io.write_ns) }, 1 },
  { "idle-wake-us", { COST (idle_wake_ns) }, 1 },
  { "idle-message-us", { COST (idle_message_ns) }, 1 },
  { "hypervisor-idle-message-us", { COST (hypervisor_idle_message_ns) }, 1 },
  { "hypervisor-per-device-io-us", { COST (hypervisor_per_device_io_ns) }, 1 },
  { "hypervisor-per-untimed-io-us", { COST (hypervisor_per_untimed_io_ns) }, 1 },
  { "hypervisor-idle-device-io-us", { COST (hypervisor_idle_device_io_ns) }, 1 },
  { "hypervisor-idle-untimed-io-us", { COST (hypervisor_idle_untimed_io_ns) }, 1 },
  { "hypervisor-per-message-us", { COST (hypervisor_per_message_ns) }, 1 },
  { "device-release-us", { COST (device_release_ns) }, 1 },
  { "process-switch-us", { COST (process_switch_ns) }, 1 },
  { "thread-wake-us", { COST (thread_wake_ns) }, 1 },
  { "crowded-wake-us", { COST (crowded_wake_ns) }, 1 },
};
#undef COST

const struct cl_host_cost *
cl_host_cost_find (const char *key)
{
  for (size_t i = 0; i < COUNT (host_costs); i++)
    if (strcmp (host_costs[i].key, key) == 0)
      return &host_costs[i];
  return NULL;
}

const char *
cl_host_cost_at (size_t i, bool *one_figure)
{
  if (i >= COUNT (host_costs))
    return NULL;
  *one_figure = host_costs[i].count == 1;
  return host_costs[i].key;
}

void
cl_host_cost_set (struct cl_host_config *config, const struct cl_host_cost *cost,
                  uint64_t value_ns)
{
  for (unsigned k = 0; k < cost->count; k++)
    *(uint64_t *) ((char *) config + cost->at[k]) = value_ns;
}

uint64_t
cl_host_cost_get (const struct cl_host_config *config, const struct cl_host_cost *cost)
{
  return *(const uint64_t *) ((const char *) config + cost->at[0]);
}

static const char *
cost_key_at (size_t i)
{
  return i < COUNT (host_costs) ? host_costs[i].key : NULL;
}

const char *
cl_host_cost_keys (char *buf, size_t buf_bytes)
{
  return join_keys (buf, buf_bytes, cost_key_at);
}

/* Every cost figure of config times scale, each once (several keys set
 * the same figure: per-io-us and per-volume-read-us). */
static void
scale_costs (struct cl_host_config *config, double scale)
{
  for (size_t i = 0; i < COUNT (host_costs); i++)
    for (unsigned k = 0; k < host_costs[i].count; k++) {
      size_t at = host_costs[i].at[k];
      bool seen = false;
      for (size_t j = 0; j < i && !seen; j++)
        for (unsigned m = 0; m < host_costs[j].count; m++)
          seen |= host_costs[j].at[m] == at;
      if (!seen) {
        uint64_t *figure = (uint64_t *) ((char *) config + at);
        *figure = (uint64_t) ((double) *figure * scale + 0.5);
      }
    }
}

/* ---------------------------------------------------------------- CPU -- */

int
cl_cpu_init (struct cl_cpu *cpu, const struct cl_host_config *config)
{
  memset (cpu, 0, sizeof *cpu);
  cpu->config = *config;
  if (config->cpu_time_scale > 0 && config->cpu_time_scale != 1.0)
    scale_costs (&cpu->config, config->cpu_time_scale);
  if (config->cores == 0)
    return -1;
  cpu->core_free_ns = calloc (config->cores, sizeof *cpu->core_free_ns);
  if (cpu->core_free_ns == NULL)
    abort ();                  /* out of memory building a model: nothing sane to do */
  return 0;
}

void
cl_cpu_free (struct cl_cpu *cpu)
{
  if (cpu->timelines)
    for (uint32_t i = 0; i < cpu->config.cores; i++)
      cl_timeline_free (&cpu->timelines[i]);
  free (cpu->timelines);
  cpu->timelines = NULL;
  free (cpu->members);
  cpu->members = NULL;
  free (cpu->core_free_ns);
  cpu->core_free_ns = NULL;
}

static uint32_t
first_free_core (const struct cl_cpu *cpu)
{
  uint32_t best = 0;
  for (uint32_t i = 1; i < cpu->config.cores; i++)
    if (cpu->core_free_ns[i] < cpu->core_free_ns[best])
      best = i;
  return best;
}

static void
occupy (struct cl_cpu *cpu, uint32_t core, uint64_t until_ns, uint64_t cost_ns)
{
  cpu->core_free_ns[core] = until_ns;
  cpu->busy_ns += cost_ns;
  cpu->ios++;
}

/* Takes a core of the pool for cost_ns from from_ns on, where it fits
 * first (core_timeline.h: a hole before work booked ahead, or after the
 * last); returns when it starts there. */
static uint64_t
take_first_fit (struct cl_cpu *pool, uint64_t from_ns, uint64_t cost_ns)
{
  if (pool->timelines == NULL) {
    pool->timelines = calloc (pool->config.cores, sizeof *pool->timelines);
    if (pool->timelines == NULL)
      abort ();                /* out of memory mid-run: nothing sane to do */
  }
  uint32_t best = 0;
  uint64_t best_at = cl_timeline_fit (&pool->timelines[0], from_ns, cost_ns);
  for (uint32_t i = 1; i < pool->config.cores; i++) {
    uint64_t at = cl_timeline_fit (&pool->timelines[i], from_ns, cost_ns);
    if (at < best_at) {
      best = i;
      best_at = at;
    }
  }
  cl_timeline_book (&pool->timelines[best], best_at, cost_ns, pool->floor_ns);
  pool->busy_ns += cost_ns;
  pool->ios++;
  return best_at;
}

/* now_ns is the engine's: nothing is booked on the pool before it again. */
static void
floor_at (struct cl_cpu *cpu, uint64_t now_ns)
{
  if (cpu->pool && now_ns > cpu->pool->floor_ns)
    cpu->pool->floor_ns = now_ns;
}

void
cl_cpu_join_pool (struct cl_cpu *cpu, struct cl_cpu *pool)
{
  struct cl_cpu **members = realloc (pool->members, (pool->member_count + 1) * sizeof *members);
  if (members == NULL)
    abort ();                  /* out of memory building a model: nothing sane to do */
  pool->members = members;
  pool->members[pool->member_count++] = cpu;
  pool->guest_vcpus += cpu->config.cores;
  pool->busy_vcpus = pool->guest_vcpus;
  cpu->pool = pool;
}

/* The pool's last whole window before now_ns, taken when one has ended
 * (work is booked when it is handed out, so a window holds what was
 * booked in it; at a point's time scale the difference is nil): the share
 * of its cores' time booked, and the vCPUs of the guests busy in it. */
static void
pool_window (struct cl_cpu *pool, uint64_t now_ns)
{
  if (now_ns < pool->window_start_ns + CL_POOL_WINDOW_NS)
    return;
  double window_ns = (double) (now_ns - pool->window_start_ns);
  pool->recent_utilisation = (double) (pool->busy_ns - pool->window_start_busy_ns)
    / (window_ns * pool->config.cores);
  pool->busy_vcpus = 0;
  for (uint32_t i = 0; i < pool->member_count; i++) {
    struct cl_cpu *m = pool->members[i];
    double share = (double) (m->busy_ns - m->window_start_busy_ns) / (window_ns * m->config.cores);
    if (share >= CL_GUEST_BUSY_SHARE_MIN)
      pool->busy_vcpus += m->config.cores;
    m->window_start_busy_ns = m->busy_ns;
  }
  pool->window_start_ns = now_ns;
  pool->window_start_busy_ns = pool->busy_ns;
}

uint64_t
cl_crowded_wake_ns (struct cl_cpu *cpu, uint64_t now_ns)
{
  if (cpu->pool == NULL)
    return 0;
  pool_window (cpu->pool, now_ns);
  if (cpu->pool->busy_vcpus <= cpu->pool->config.cores)
    return 0;
  double beyond = (double) cpu->pool->busy_vcpus / cpu->pool->config.cores - 1.0;
  return (uint64_t) ((double) cpu->config.crowded_wake_ns * beyond);
}

double
cl_busy_host_share (struct cl_cpu *cpu, uint64_t now_ns)
{
  const struct cl_host_config *h = &cpu->config;
  if (cpu->pool == NULL || h->busy_host_share == 1.0 || h->calibrated_utilisation >= 1.0)
    return 1.0;
  pool_window (cpu->pool, now_ns);
  double u = cpu->pool->recent_utilisation < 1.0 ? cpu->pool->recent_utilisation : 1.0;
  if (u <= h->calibrated_utilisation)
    return 1.0;
  return 1.0 - (1.0 - h->busy_host_share) * (u - h->calibrated_utilisation)
    / (1.0 - h->calibrated_utilisation);
}

/* cl_cpu_run on a core already chosen (the first free one). */
static uint64_t
run_on (struct cl_cpu *cpu, uint32_t core, uint64_t now_ns, uint64_t cost_ns)
{
  if (cpu->core_free_ns[core] < now_ns)
    cost_ns += cpu->config.idle_wake_ns + cl_crowded_wake_ns (cpu, now_ns);
  uint64_t start = sl_max_u64 (now_ns, cpu->core_free_ns[core]);
  if (cpu->pool) {                     /* a guest's vCPU runs only while the host gives it a core */
    cost_ns = (uint64_t) ((double) cost_ns * cl_busy_host_share (cpu, start));
    start = take_first_fit (cpu->pool, start, cost_ns);
  }
  occupy (cpu, core, start + cost_ns, cost_ns);
  return start + cost_ns;
}

uint64_t
cl_cpu_run (struct cl_cpu *cpu, uint64_t now_ns, uint64_t cost_ns)
{
  floor_at (cpu, now_ns);
  return run_on (cpu, first_free_core (cpu), now_ns, cost_ns);
}

/* The I/Os one wake-up or switch serves where each of at most `most`
 * waiters (threads, or I/Os of a thread) has one: at most batch_ios_max. */
static double
batch_ios (const struct cl_cpu *cpu, uint64_t most)
{
  double ios = (double) sl_max_u64 (most, 1);
  if (cpu->config.batch_ios_max >= 1.0 && ios > cpu->config.batch_ios_max)
    ios = cpu->config.batch_ios_max;
  return ios;
}

uint64_t
cl_cpu_front_io_ns (const struct cl_cpu *cpu, enum sl_op op, bool file)
{
  uint64_t cost_ns = cl_op_cost_ns (file ? &cpu->config.per_file_io : &cpu->config.per_volume_io,
                                    op);
  if (cpu->processes > 1)
    cost_ns += (uint64_t) ((double) cpu->config.process_switch_ns * (cpu->processes - 1)
                           / cpu->processes
                           / batch_ios (cpu, sl_min_u64 (cpu->threads, cpu->worker_depth)));
  return cost_ns;
}

uint64_t
cl_cpu_front_run (struct cl_cpu *cpu, uint64_t now_ns, enum sl_op op, bool file)
{
  floor_at (cpu, now_ns);
  uint64_t cost_ns = cl_cpu_front_io_ns (cpu, op, file);
  uint32_t core = first_free_core (cpu);
  if (cpu->core_free_ns[core] >= now_ns) {    /* an idle core pays idle_wake_ns instead */
    double full = batch_ios (cpu, UINT64_MAX);
    cost_ns += (uint64_t) ((double) cpu->config.thread_wake_ns
                           * (1.0 / batch_ios (cpu, cpu->worker_depth) - 1.0 / full));
  }
  return run_on (cpu, core, now_ns, cost_ns);
}

uint64_t
cl_hypervisor_run (struct cl_cpu *cpu, uint64_t now_ns, uint64_t cost_ns)
{
  if (cost_ns == 0)
    return now_ns;
  if (cpu->pool == NULL)
    return now_ns + cost_ns;           /* threads of its own beside the node's cores */
  return take_first_fit (cpu->pool, now_ns, cost_ns) + cost_ns;
}

void
cl_hypervisor_idle_reply (struct cl_cpu *cpu, uint64_t released_ns, uint64_t cost_ns)
{
  if (cost_ns == 0 || released_ns < cpu->idle_reply_until_ns || !cl_cpu_asleep (cpu, released_ns))
    return;
  cpu->idle_reply_until_ns = cl_hypervisor_run (cpu, released_ns, cost_ns);
}

bool
cl_cpu_asleep (const struct cl_cpu *cpu, uint64_t now_ns)
{
  for (uint32_t i = 0; i < cpu->config.cores; i++)
    if (cpu->core_free_ns[i] >= now_ns)
      return false;
  return true;
}

/* Whether a message reaching the node at now_ns finds it asleep (every
 * core idle), where the host has figures for that. */
static bool
message_wakes (const struct cl_cpu *cpu, uint64_t now_ns)
{
  if (cpu->config.idle_message_ns == 0 && cpu->config.hypervisor_idle_message_ns == 0)
    return false;
  return cl_cpu_asleep (cpu, now_ns);
}

/* The message handed to the sleeping node, then taken alone with cost_ns
 * of work on the core it woke. */
static uint64_t
wake_for_message (struct cl_cpu *cpu, uint32_t core, uint64_t now_ns, uint64_t cost_ns)
{
  uint64_t handed = cl_hypervisor_run (cpu, now_ns, cpu->config.hypervisor_idle_message_ns);
  return run_on (cpu, core, handed, cpu->config.idle_message_ns + cost_ns);
}

uint64_t
cl_cpu_message_run (struct cl_cpu *cpu, uint64_t now_ns, uint64_t cost_ns)
{
  floor_at (cpu, now_ns);
  uint32_t core = first_free_core (cpu);
  return message_wakes (cpu, now_ns) ? wake_for_message (cpu, core, now_ns, cost_ns)
    : run_on (cpu, core, now_ns, cost_ns);
}

uint64_t
cl_cpu_message_arrives (struct cl_cpu *cpu, uint64_t now_ns)
{
  floor_at (cpu, now_ns);
  uint32_t core = first_free_core (cpu);
  return message_wakes (cpu, now_ns) ? wake_for_message (cpu, core, now_ns, 0) : now_ns;
}
