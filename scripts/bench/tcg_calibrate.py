#!/usr/bin/python3
"""Calibration of the cluster model's `tcg` host preset: what a lab guest
under TCG, and the host around it, spend per I/O on each storage mechanism
alone (issue 14).

It brings up scripts/bench/calibrate-tcg.toml (two nodes, one udp link,
three untimed disks each: nothing but the host path and the guests' CPU
for a request to wait for) and runs fio (4 KiB random, libaio, O_DIRECT,
8 s, at 1 and 8 outstanding) in node1 on one mechanism at a time:

  bare     a disk itself
  linear   a device-mapper linear target over a disk (one remap, as LVM's)
  raid1    md RAID-1 over two disks: a read goes to one, a write to both
  ext4     a file on ext4 over a disk (the replicas' share's file system)
  busy-bare, busy-ext4   bare and ext4 again with a busy loop on every
           core of the host at the lowest priority (nice 19), so that no
           core idles: the share of an idle host's figures a guest spends
           on a host whose cores are all busy
  nvme     node2's disk imported over NVMe/TCP (nvmet in node2's kernel)
  nvme-lv  the same over an LVM logical volume of node2's (a replica
           holder's copy, as replica-export.sh makes it)
  replica  a replica leg as profile-replicas builds it (replica-mirror.sh):
           ext4 on an md RAID-1 (internal write-intent bitmap) over an LV
           on node1's disk and node2's LV over NVMe/TCP, the remote leg
           write-mostly (reads stay local); node2's vCPU per write against
           nvme-lv's is what the leg costs its holder beyond a bare
           import (printed, not a preset figure)
  timed    a disk that waits for its model's time (the hdd plugin at a
           fixed latency, as a lab starts it: no latency offset)
  raid     profile-raid's RAID LUN (the raid plugin: a controller's model
           over eight disks'), written whole first as the lab's volumes are
  ssd      profile-raid's SSD (the ssd plugin, a 64 MiB S3700 in steady
           state); raid and ssd are printed beside bare and timed (what
           the hypervisor spends a device I/O on each), not preset figures:
           where they answer fast (raid's cached writes, ssd's reads) they
           cost what timed does, where slowly (raid's reads from its
           disks, ssd's writes behind its GC) what timed does at 1
           outstanding, each reply taken alone
  threads2, processes2   the bare disk driven by two fio workers, as two
           threads of one fio process and as two fio processes (a lab runs
           one fio a workload unit, its workers threads)
  threads64, processes8x8   the bare disk driven by 64 fio workers at
           1, 4 and 16 outstanding each, as 64 threads of one fio process
           and as 8 fio processes of 8 threads (a lab's 8 units of 8
           workers): how many I/Os a process switch serves as each
           worker has more in flight
  allflash the disk group as the lab builds it (scripts/profiles/
           disk-group.sh, all-flash: LVM and a dm-writecache over it),
           cache on disk1, capacity disk2
  hybrid   the same, hybrid: the write buffer over an lvmcache (dm-cache,
           smq, writethrough) holding the read cache (70 %), warmed first
           by reading the working set, so reads hit
  writeback  hybrid with a 12 MiB write buffer (a 40 MiB cache) under
           random writes over 64 MiB, filled first: the buffer stays past
           its watermark and dm-writecache copies blocks to the capacity
           disk all through the run, as in a profile lab at steady state
           (hybrid's 72 MiB buffer under its 32 MiB never starts); writes
           only.  What a copy costs the guest beyond its device I/Os is
           printed (its own table), not a preset figure

Every run starts and is measured as a lab sweep's point (gated_fio.py): in
a window inside the run, from 1.5 s after the start gate opened, 5 s long,
the host reads /proc for the nodes' vCPU threads, the rest of their QEMUs
(virtio and NBD client, the udp netdev) and the lab's nbdkits, and the
devices' stats files for the device I/Os each request made. From
the mechanisms' differences it works out the `tcg` preset's figures
(emulator/cluster/host_cpu.h, struct cl_host_config), at 8 outstanding, where
the vCPU is busy throughout, so each I/O's cost is its own:

  per_device_io_ns   each I/O the guest sends a virtual disk (its request
                     and completion interrupt): raid1 write - bare write,
                     less raid1 read - bare read (md's own remap)
  per_volume_read_ns, per_volume_write_ns   the front end's own on a
                     block device (syscall, block layer, fio), by direction
                     (a read costs more): bare - per_device_io_ns
  per_md_io_ns       md's own per I/O it takes: raid1 read - bare read
  per_linear_io_ns   an LV's remap (a dm linear target) per I/O it takes:
                     linear - bare
  per_file_read_ns, per_file_write_ns   the same on a file of ext4 (a
                     share's): ext4 - per_device_io_ns
  per_hop_read_ns, per_hop_write_ns   the initiator's NVMe/TCP request:
                     nvme - per_volume_*, by direction
  per_remote_read_ns, per_remote_write_ns   the target's side, besides
                     its device I/O: node2's vCPU in nvme - per_device_io_ns
  idle_wake_ns       what an I/O at 1 outstanding costs more than at 8 (the
                     vCPU idles while the request is out, then takes an
                     interrupt and wakes fio): timed qd1 - timed qd8 (bare
                     where timed was not measured)
  idle_message_ns    what a network message that finds its guest asleep
                     costs the vCPU more than one at depth, beyond the
                     wake-up: nvme qd1 - nvme qd8 on each side, less the
                     wake-up (and the initiator's fio thread's wake), the
                     mean of the two sides
  hypervisor_idle_message_ns   the same for QEMU's threads: nvme qd1 -
                     nvme qd8, less bare qd1 - bare qd8 (the target's
                     device I/O), over the hop's two messages
  hypervisor_per_device_io_ns   QEMU's I/O thread and nbdkit per device
                     I/O: timed (a lab's devices wait for their model's
                     time, and the plugin's release path costs nbdkit
                     more; bare where timed was not measured)
  hypervisor_per_untimed_io_ns  the same for a disk that replies at once
                     (timing=off): bare
  hypervisor_idle_device_io_ns  what a timed reply costs QEMU's threads and
                     nbdkit more when it finds the guest asleep, taken
                     alone: timed qd1 - timed qd8 (0 where timed was not
                     measured)
  hypervisor_idle_untimed_io_ns  the same for a disk that replies at once:
                     bare qd1 - bare qd8 (QEMU's I/O thread and nbdkit
                     take each request alone, where at 8 they take several
                     a wake-up)
  device_release_ns  how late a timed device's reply leaves past its
                     model's completion (its release path's timer and
                     thread wake-up; the stats' release lateness), the
                     mean of timed's runs
  hypervisor_per_message_ns     QEMU's netdevs per network message (nvme,
                     less its device I/Os, over its two messages)
  per_write_buffer_io_ns   the disk group's write buffer (dm-writecache
                     and the LVM linear volume under it) per I/O it takes:
                     allflash - bare, less a device I/O's cost for each it
                     makes more (its metadata commits)
  per_read_cache_io_ns     the read cache (dm-cache, smq) per I/O it takes:
                     hybrid - allflash on reads (writes stay in the buffer
                     above it), less a device I/O's cost for each more
  busy_host_share    what a guest's I/O costs its vCPU on a host whose
                     cores never idle, as a share of the idle host's: the
                     median over busy-bare/bare and busy-ext4/ext4 (each
                     op) of the vCPU's µs an I/O at 8 outstanding, where
                     the vCPU is busy throughout (every figure of work is
                     taken there).  At 1 outstanding, and for QEMU's
                     threads, the ratios are printed, not charged: a vCPU
                     woken for each I/O preempts the busy loop on its core
                     every time, which a lab's busy neighbours (guests at
                     the same priority) do not make it do
  calibrated_utilisation   the share of the host's cores busy in those
                     idle-host runs (the median): the model charges the
                     figures as measured up to it, busy_host_share of them
                     with every core busy, linearly between
  process_switch_ns  the vCPU going from one process's I/O to another's
                     (TCG flushes its software TLB with every address
                     space switch): two processes switch about every other
                     I/O, so twice processes2 - threads2, at 1 outstanding
                     (at 8 fio reaps writes in batches: fewer switches)

A figure not by direction is the mean of its read and write runs. The
bench makes --repeat passes (interleaved, so a slow spell of the host hits
every mechanism alike) and the preset takes its figures from the median
runs (each run's figures, median over the passes: median_runs). The
tables are what the run measured; the preset quotes them with the date.

With --host-file FILE it also writes this machine's own figures, of the
median runs, as a host file (scripts/storlab_cli/schema/sim_host_file.py) that
`storlab sweep --sim-host FILE` gives the simulator's prediction in place of
the tcg preset's: the preset holds one machine's figures, and another
machine's TCG guests may spend two or three times as much (cluster_
validation.md). A figure it does not measure (the crowded wake-up: scripts/
bench/tcg_crowding.py) stays the preset's.

usage: scripts/bench/tcg_calibrate.py [--repeat N] [--keep] [--out JSON] [--only NAME,...]
                                      [--host-file FILE]
       scripts/bench/tcg_calibrate.py --report JSON [--host-file FILE]
                                      (the tables of a saved run, nothing run)
"""
import argparse
import contextlib
import datetime
import json
import os
import signal
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

from storlab_cli import catalog  # noqa: E402
from storlab_cli.errors import UserError  # noqa: E402
from storlab_cli.schema import sim_host_file  # noqa: E402
from storlab_cli.lab import profiles  # noqa: E402
from storlab_cli.schema import topology  # noqa: E402

import gated_fio  # noqa: E402
import host_probe  # noqa: E402

STORLAB = os.path.join(ROOT, "scripts", "storlab")
TOPOLOGY = os.path.join(HERE, "calibrate-tcg.toml")
LAB = "calibrate-tcg"
LIB = ". /usr/lib/storlab/profiles/lib.sh; . /usr/lib/storlab/profiles/nvme.sh; "
NQN = "nqn.2024-01.org.storlab:calibrate-tcg:disk0"
NQN_LEG = "nqn.2024-01.org.storlab:calibrate-tcg:leg"
# node1's own copy for replica: an LV on its disk1, as replica-mirror.sh's
# local leg is (new_lv: zeroed, no stripes on a plain disk)
LOCAL_LEG = ("d=$(disk_by_serial disk1) && run pvcreate -ff -y $d && run vgcreate calrep $d"
             " && run lvcreate -y -Wy -Zy -n leg -L 128m calrep")
LOCAL_LEG_DOWN = ("vgremove -ff -y calrep >/dev/null 2>&1; d=$(disk_by_serial disk1);"
                  " pvremove -ff -y $d >/dev/null 2>&1; wipefs -a -q $d")
# node2's copy for nvme-lv and replica: an LV on its disk1, exported
LEG_EXPORT = ("d=$(disk_by_serial disk1); vgs calleg >/dev/null 2>&1 || { run pvcreate -ff -y $d"
              " && run vgcreate calleg $d; } && { lvs calleg/leg >/dev/null 2>&1 ||"
              " run lvcreate -y -Wy -Zy -n leg -L 128m calleg; } && "
              f"nvmet_export {NQN_LEG} /dev/calleg/leg >/dev/null && echo ok")


def nvme_down(nqn):
    """node1's guest script dropping its import of nqn."""
    return f"c=$(nvme_controller_of {nqn}) && echo 1 > /sys/class/nvme/$c/delete_controller"


# a file on ext4 over node1's disk2 (ext4, and busy-ext4 on a busy host)
EXT4 = ("d=$(disk_by_serial disk2); mkfs.ext4 -q -F $d && mkdir -p /mnt/cal"
        " && mount $d /mnt/cal && echo /mnt/cal/file",
        "umount /mnt/cal")

RUNTIME_S = 8
# the measured window inside each run: from RAMP_S after the start gate
# opens, WINDOW_S long (ending before fio's last threads could stop)
RAMP_S, WINDOW_S = 1.5, 5.0
DEPTHS = (1, 8)
OPS = ("randread", "randwrite")
WORKING_SET = "64M"
# The disk group's working set stays below the write buffer's writeback
# watermark (half of its 72 MiB), so what a write costs is its own, not
# the destage's.
DISK_GROUP_WORKING_SET = "32M"
DISK_GROUP = ("/bin/sh /usr/lib/storlab/profiles/disk-group.sh diskgroup {mode} disk1 240 70 1 64"
              " disk2 >/dev/null && "
              f"fio --name=warm --filename=/dev/mapper/diskgroup --ioengine=libaio --direct=1"
              f" --rw=randread --bs=4k --size={DISK_GROUP_WORKING_SET} --iodepth=8 --time_based"
              " --runtime=6 --output=/dev/null && echo /dev/mapper/diskgroup")
# the write buffer past its watermark throughout: 12 MiB of it under writes
# over 64 MiB, filled first by the same writes
WRITEBACK_WORKING_SET = "64M"
WRITEBACK = ("/bin/sh /usr/lib/storlab/profiles/disk-group.sh diskgroup hybrid disk1 40 70 1 64"
             " disk2 >/dev/null && "
             f"fio --name=fill --filename=/dev/mapper/diskgroup --ioengine=libaio --direct=1"
             f" --rw=randwrite --bs=4k --size={WRITEBACK_WORKING_SET} --iodepth=8 --time_based"
             " --runtime=8 --output=/dev/null && echo /dev/mapper/diskgroup")
DISK_GROUP_DOWN = ("dmsetup remove --noudevsync diskgroup; vgchange -an dg >/dev/null 2>&1;"
                   " vgremove -ff -y dg >/dev/null 2>&1; d1=$(disk_by_serial disk1);"
                   " d2=$(disk_by_serial disk2); pvremove -ff -y $d1 $d2 >/dev/null 2>&1;"
                   " wipefs -a -q $d1 $d2")

# name: (guest setup printing the device fio drives, teardown)
MECHANISMS = {
    "bare": ("disk_by_serial disk0", ""),
    "timed": ("disk_by_serial timed0", ""),
    "raid": ("d=$(disk_by_serial lun0); fio --name=fill --filename=$d --ioengine=libaio --direct=1"
             " --rw=write --bs=1M --iodepth=4 --output=/dev/null && echo $d", ""),
    "ssd": ("disk_by_serial ssd0", ""),
    "linear": ('d=$(disk_by_serial disk1); '
               'dmsetup create --noudevsync cal-linear --table "0 $(blockdev --getsz $d) linear $d 0"'
               ' && dmsetup mknodes cal-linear && echo /dev/mapper/cal-linear',
               "dmsetup remove --noudevsync cal-linear"),
    "raid1": ("mdadm --create /dev/md90 --run --quiet --level=1 --raid-devices=2 --assume-clean"
              " --bitmap=none $(disk_by_serial disk1) $(disk_by_serial disk2) >/dev/null 2>&1"
              " && echo /dev/md90",
              "mdadm --stop /dev/md90 >/dev/null 2>&1;"
              " mdadm --zero-superblock $(disk_by_serial disk1) $(disk_by_serial disk2)"),
    "ext4": EXT4,
    "busy-bare": ("disk_by_serial disk0", ""),
    "busy-ext4": EXT4,
    "nvme": (f"nvme_connect {NQN} {{addr}}", nvme_down(NQN)),
    "nvme-lv": (f"nvme_connect {NQN_LEG} {{addr}}", nvme_down(NQN_LEG)),
    "replica": (f"{LOCAL_LEG} && ns=$(nvme_connect {NQN_LEG} {{addr}} | tail -n 1) && mdadm"
                " --create /dev/md92 --run --quiet --metadata=1.2 --level=1 --raid-devices=2"
                " --bitmap=internal --assume-clean /dev/calrep/leg --write-mostly $ns"
                " >/dev/null 2>&1 && mkfs.ext4 -q -F /dev/md92 && mkdir -p /mnt/calrep"
                " && mount /dev/md92 /mnt/calrep && echo /mnt/calrep/file",
                f"umount /mnt/calrep; mdadm --stop /dev/md92 >/dev/null 2>&1; mdadm"
                f" --zero-superblock /dev/calrep/leg $(nvme_namespace_of {NQN_LEG})"
                f" >/dev/null 2>&1; {nvme_down(NQN_LEG)}; {LOCAL_LEG_DOWN}"),
    "threads2": ("disk_by_serial disk0", ""),
    "processes2": ("disk_by_serial disk0", ""),
    "threads64": ("disk_by_serial disk0", ""),
    "processes8x8": ("disk_by_serial disk0", ""),
    "allflash": (DISK_GROUP.format(mode="all-flash"), DISK_GROUP_DOWN),
    "hybrid": (DISK_GROUP.format(mode="hybrid"), DISK_GROUP_DOWN),
    "writeback": (WRITEBACK, DISK_GROUP_DOWN),
}
# fio processes x threads each, per mechanism (default one of one): the same
# two workers, once sharing an address space and once not
LAYOUTS = {"threads2": (1, 2), "processes2": (2, 1), "threads64": (1, 64),
           "processes8x8": (8, 8)}
# the switch's layouts run at these depths (the others at DEPTHS)
DEPTHS_OF = {"threads64": (1, 4, 16), "processes8x8": (1, 4, 16)}
WORKING_SETS = {"allflash": DISK_GROUP_WORKING_SET, "hybrid": DISK_GROUP_WORKING_SET,
                "writeback": WRITEBACK_WORKING_SET}
OPS_OF = {"writeback": ("randwrite",)}
# run with every host core kept busy: the mechanism each repeats
BUSY_HOST = {"busy-bare": "bare", "busy-ext4": "ext4"}


@contextlib.contextmanager
def busy_host():
    """Every core of the host kept from idling while the block runs: a
    shell loop a core at nice 19 (a QEMU thread that wakes still takes its
    turn), stopped by PID after it; each loop also ends by itself once
    this process is gone, so none outlives a killed bench."""
    loop = f"while kill -0 {os.getpid()} 2>/dev/null; do :; done"
    loops = [subprocess.Popen(["nice", "-n", "19", "sh", "-c", loop])
             for _ in range(os.cpu_count() or 1)]
    try:
        yield
    finally:
        for p in loops:
            p.kill()
        for p in loops:
            p.wait()


def storlab(*args, timeout=900):
    result = subprocess.run(["/usr/bin/python3", STORLAB, *args], capture_output=True, text=True,
                            timeout=timeout, check=False)
    if result.returncode != 0:
        sys.exit(f"tcg_calibrate: storlab {args[0]} failed: {result.stderr.strip()}")
    return result.stdout


def guest(node, script, timeout=600):
    try:
        return gated_fio.guest(LAB, node, LIB + script, timeout)
    except gated_fio.Failed as e:
        sys.exit(f"tcg_calibrate: {e}")


def run_point(device, op, depth, processes=1, threads=1, size=WORKING_SET):
    """One fio run on node1 (processes fio at once, each of threads
    workers), measured in its window (gated_fio.py): a Run."""
    return Run(gated_fio.run(LAB, {"node1": gated_fio.FioJob(device, op, depth, processes,
                                                              threads, size)},
                             RUNTIME_S, RAMP_S, WINDOW_S))


class Run:
    """One mechanism, op and depth: per front-end I/O, the guest CPU of
    each node, the device I/Os it made, and the host's CPU besides the
    guests per device I/O and per network message."""

    def __init__(self, window):
        used, busy_s = window.used, window.used["seconds"]
        self.ios = max(window.ios, 1)
        self.iops = window.ios / busy_s
        self.vcpu_us = {n: c * busy_s * 1e6 / self.ios for n, c in used["vcpu"].items()}
        self.devices = {n: d / self.ios for n, d in window.devices.items()}
        self.host_us = (sum(used["qemu_io"].values()) + used["nbdkit"]) * busy_s * 1e6 / self.ios
        self.server_us = used["nbdkit"] * busy_s * 1e6 / self.ios      # of host_us
        self.host_cores = used["host_busy"]
        self.host_cores_total = os.cpu_count()
        self.host_cache_ratio = window.cache_ratio    # host_probe.py: a slow spell's mark
        self.release_late_us = None if window.release_late_ns is None \
            else window.release_late_ns / 1e3

    def hypervisor_per_device_io_us(self):
        """QEMU's threads and nbdkit per device I/O node1 made."""
        return self.host_us / max(self.devices.get("node1", 0.0), 1e-9)


def export_node2(topo):
    """node2's disk0 exported over NVMe/TCP, and an LV on its disk1 (a
    replica holder's copy); node1's address for them."""
    out = guest("node2", f"nvmet_export {NQN} $(disk_by_serial disk0) >/dev/null && echo ok")
    if out.strip() != "ok":
        sys.exit(f"tcg_calibrate: node2 could not export its disk over NVMe/TCP: {out}")
    out = guest("node2", LEG_EXPORT)
    if out.strip().splitlines()[-1:] != ["ok"]:
        sys.exit(f"tcg_calibrate: node2 could not export an LV over NVMe/TCP: {out}")
    return profiles._link_addr(topo, "node2", "node1")


def measure_mechanism(name, addr, n):
    """{(name, op, depth): Run} of one mechanism in pass n, set up and torn
    down."""
    setup, teardown = MECHANISMS[name]
    device = guest("node1", setup.format(addr=addr)).strip().splitlines()[-1]
    runs = {}
    try:
        for op in OPS_OF.get(name, OPS):
            for depth in DEPTHS_OF.get(name, DEPTHS):
                with busy_host() if name in BUSY_HOST else contextlib.nullcontext():
                    r = run_point(device, op, depth, *LAYOUTS.get(name, (1, 1)),
                                  size=WORKING_SETS.get(name, WORKING_SET))
                runs[name, op, depth] = r
                print(f"tcg_calibrate: pass {n}: {name} {op} qd{depth}: {r.iops:.0f}"
                      f" IOPS, node1 vCPU {r.vcpu_us.get('node1', 0):.0f} us/IO, host caches"
                      f" {host_probe.ratio_text(r.host_cache_ratio)} their lowest"
                      + (f", replies {r.release_late_us:.0f} us late" if r.release_late_us is not None
                         else ""), file=sys.stderr, flush=True)
    finally:
        if teardown:
            try:
                guest("node1", teardown)
            except SystemExit as e:
                print(f"{e} (after the runs)", file=sys.stderr)
    return runs


def measure(topo, repeat, only=None):
    """repeat passes over every mechanism (or those named in only), op and
    depth; a list of {(mechanism, op, depth): Run} per pass. A mechanism
    whose run fails (a fio stuck on requests its guest never sent on) is
    measured again on the lab brought down and up."""
    addr = export_node2(topo)
    passes = []
    for n in range(repeat):
        runs = {}
        for name in MECHANISMS:
            if only and name not in only:
                continue
            try:
                runs.update(measure_mechanism(name, addr, n + 1))
                continue
            except gated_fio.Failed as e:
                print(f"tcg_calibrate: {name}: {e}; the lab restarted, {name} once more",
                      file=sys.stderr)
            storlab("down", LAB, timeout=600)
            storlab("up", TOPOLOGY, timeout=1200)
            addr = export_node2(topo)
            try:
                runs.update(measure_mechanism(name, addr, n + 1))
            except gated_fio.Failed as e:
                sys.exit(f"tcg_calibrate: {name}: {e}")
        passes.append(runs)
    return passes


def figures(runs):
    """The preset's figures (µs). The costs of work are taken at 8
    outstanding, where the vCPU is busy throughout and every I/O's cost is
    its own; the wake-up is what an I/O at 1 outstanding costs more (the
    vCPU idles while the request is out, then takes an interrupt and wakes
    fio). A figure by direction comes from that direction's runs; the
    others are the mean of the read and write runs."""
    def cpu(name, op, depth=8, node="node1"):
        return runs[name, op, depth].vcpu_us.get(node, 0.0)

    def mean(f):
        return sum(f(op) for op in OPS) / len(OPS)

    # md RAID-1's second write is one device write more than bare's
    # (its own remap costs it as much on reads as on writes)
    device = (cpu("raid1", "randwrite") - cpu("bare", "randwrite")) \
        - (cpu("raid1", "randread") - cpu("bare", "randread"))
    # the rest of a bare I/O is the front end's on a block device, by
    # direction (a read costs more); on a file of ext4, the file's
    volume = {op: cpu("bare", op) - device for op in OPS}
    file = {op: cpu("ext4", op) - device for op in OPS}
    def hypervisor_per_device(name):
        return mean(lambda op: runs[name, op, 8].hypervisor_per_device_io_us())

    # the untimed disks' (the hop's runs are on them), and a lab's devices'
    hypervisor_device = hypervisor_per_device("bare")
    # runs saved before the timed disk was measured have none of its runs
    timed = all(("timed", op, d) in runs for op in OPS for d in DEPTHS)
    hypervisor_timed = hypervisor_per_device("timed") if timed else hypervisor_device

    def hypervisor_idle_device(name, op):
        return (runs[name, op, 1].hypervisor_per_device_io_us()
                - runs[name, op, 8].hypervisor_per_device_io_us())
    lateness = [runs["timed", op, d].release_late_us for op in OPS for d in DEPTHS] if timed else []
    lateness = [late for late in lateness if late is not None]

    def per_message(op):
        r = runs["nvme", op, 8]
        # a request and its reply: two messages per I/O
        return (r.host_us - hypervisor_device * r.devices["node2"]) / 2

    def more_than(name, base, op):
        """What an I/O of name costs the vCPU more than one of base, less
        the device I/Os it makes more."""
        a, b = runs[name, op, 8], runs[base, op, 8]
        return (cpu(name, op) - cpu(base, op)
                - device * (a.devices["node1"] - b.devices["node1"]))

    # where the disk waits as a lab's devices do, the vCPU goes idle for
    # the whole wait (an untimed disk answers before it may have): the
    # wake-up is measured there when it was
    waits = "timed" if timed else "bare"
    idle_wake = mean(lambda op: cpu(waits, op, 1) - cpu(waits, op))
    # A hop at 1 outstanding finds both guests asleep. What it costs each
    # side's vCPU more than at 8, less what the model charges there anyway
    # (the wake-up; on the initiator also its fio thread's wake, which the
    # protocol's worker does on the core the reply woke), is a message's
    # taken alone; QEMU's threads' more, less the target's device I/O's own
    # more (the bare disk's at 1 against 8: hypervisor_idle_untimed_io_ns,
    # charged on its own), over the hop's two messages.
    batching = switch_batching(*switch_costs([runs]))
    thread_wake = batching[1] * (1 - 1 / batching[0]) if batching else 0.0

    def idle_message(op):
        initiator = cpu("nvme", op, 1) - cpu("nvme", op) - idle_wake - thread_wake
        target = cpu("nvme", op, 1, node="node2") - cpu("nvme", op, node="node2") - idle_wake
        return (initiator + target) / 2

    def hypervisor_idle_message(op):
        hop = runs["nvme", op, 1].host_us - runs["nvme", op, 8].host_us
        return (hop - hypervisor_idle_device("bare", op)) / 2

    busy = busy_host_ratios(runs, depths=(8,))
    return {
        "per_volume_read_ns": volume["randread"],
        "per_volume_write_ns": volume["randwrite"],
        "per_file_read_ns": file["randread"],
        "per_file_write_ns": file["randwrite"],
        "per_device_io_ns": device,
        # what md RAID-1 costs a read more than the disk alone (on a write
        # the same, by the way per_device_io_ns is taken)
        "per_md_io_ns": cpu("raid1", "randread") - cpu("bare", "randread"),
        # the initiator's NVMe/TCP namespace is a block device too
        "per_hop_read_ns": cpu("nvme", "randread") - volume["randread"],
        "per_hop_write_ns": cpu("nvme", "randwrite") - volume["randwrite"],
        "per_remote_read_ns": cpu("nvme", "randread", node="node2") - device,
        "per_remote_write_ns": cpu("nvme", "randwrite", node="node2") - device,
        "idle_wake_ns": idle_wake,
        "idle_message_ns": mean(idle_message),
        "hypervisor_idle_message_ns": mean(hypervisor_idle_message),
        "hypervisor_per_device_io_ns": hypervisor_timed,
        "hypervisor_per_untimed_io_ns": hypervisor_device,
        "hypervisor_idle_device_io_ns": mean(lambda op: hypervisor_idle_device("timed", op))
        if timed else 0.0,
        "hypervisor_idle_untimed_io_ns": mean(lambda op: hypervisor_idle_device("bare", op)),
        "device_release_ns": sum(lateness) / len(lateness) if lateness else 0.0,
        "hypervisor_per_message_ns": mean(per_message),
        # at 1 outstanding, where each I/O wakes its process on its own (at 8,
        # writes are reaped in batches and switch less); runs saved before
        # the process layouts were measured have none
        "process_switch_ns": mean(lambda op: 2 * (cpu("processes2", op, 1)
                                                  - cpu("threads2", op, 1)))
        if ("processes2", "randread", 1) in runs else 0.0,
        # runs saved before the disk group was measured have neither
        "per_write_buffer_io_ns": mean(lambda op: more_than("allflash", "bare", op))
        if ("allflash", "randread", 8) in runs else 0.0,
        "per_read_cache_io_ns": more_than("hybrid", "allflash", "randread")
        if ("hybrid", "randread", 8) in runs else 0.0,
        # LVM's remap (every LV is a dm linear or striped target)
        "per_linear_io_ns": mean(lambda op: cpu("linear", op) - cpu("bare", op)),
        # runs saved before 2026-12-06 have no busy host's: no share
        **({"busy_host_share": median(busy["vcpu"]),
            "calibrated_utilisation": median(busy["idle_utilisation"]),
            "(hypervisor's busy host share)": median(busy["hypervisor"])}
           if busy["vcpu"] else {}),
    }


def busy_host_ratios(runs, depths=DEPTHS):
    """{"vcpu": [...], "hypervisor": [...], "idle_utilisation": [...]}:
    each busy-host run's node1 vCPU µs an I/O, and QEMU's threads' and
    nbdkit's, over its idle twin's, for every op and depth measured both
    ways; and the share of the host's cores busy in each idle twin (the
    utilisation the idle host's figures hold)."""
    out = {"vcpu": [], "hypervisor": [], "idle_utilisation": []}
    for busy, idle in BUSY_HOST.items():
        for op in OPS:
            for depth in depths:
                if (busy, op, depth) not in runs or (idle, op, depth) not in runs:
                    continue
                b, i = runs[busy, op, depth], runs[idle, op, depth]
                out["vcpu"].append(b.vcpu_us.get("node1", 0.0)
                                   / max(i.vcpu_us.get("node1", 0.0), 1e-9))
                out["hypervisor"].append(b.host_us / max(i.host_us, 1e-9))
                out["idle_utilisation"].append(
                    min(i.host_cores / (i.host_cores_total or os.cpu_count() or 1), 1.0))
    return out


# what figures() cannot do without
FIGURES_NEED = [(name, op, depth) for name in ("bare", "raid1", "nvme") for op in OPS
                for depth in DEPTHS]


def median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def median_runs(passes):
    """{(mechanism, op, depth): Run} whose every figure is its median over
    the passes. A preset figure is a difference of runs: taken from the
    median runs, one slow run (a spell of the shared host: the same run
    ranged 150-226 µs of vCPU an I/O across passes on 2026-12-02, 147-157
    six times back to back) moves no figure, where the median of each
    pass's differences is moved once two passes have one in either run."""
    out = {}
    for key in passes[0]:
        runs = [p[key] for p in passes if key in p]
        r = Run.__new__(Run)
        for name in ("ios", "iops", "host_us", "host_cores"):
            setattr(r, name, median([getattr(x, name) for x in runs]))
        server = [x.server_us for x in runs if getattr(x, "server_us", None) is not None]
        r.server_us = median(server) if server else None
        r.host_cores_total = runs[0].host_cores_total
        late = [x.release_late_us for x in runs if x.release_late_us is not None]
        r.release_late_us = median(late) if late else None
        for name in ("vcpu_us", "devices"):
            nodes = sorted({n for x in runs for n in getattr(x, name)})
            setattr(r, name, {n: median([getattr(x, name).get(n, 0.0) for x in runs])
                              for n in nodes})
        out[key] = r
    return out


def print_tables(passes):
    """Each run's figures as the median over the passes, then the preset's
    figures of every pass and those of the median runs (what the preset
    takes: median_runs)."""
    print("| mechanism | op | qd | IOPS | node1 vCPU µs/IO | node2 vCPU µs/IO |"
          " node1 disk I/Os per IO | node2 disk I/Os per IO | host besides guests µs/IO |"
          " host cores busy |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for key in passes[0]:
        runs = [p[key] for p in passes]

        def m(f):
            return median([f(r) for r in runs])

        print(f"| {' | '.join(str(k) for k in key)} | {m(lambda r: r.iops):.0f} |"
              f" {m(lambda r: r.vcpu_us.get('node1', 0)):.0f} |"
              f" {m(lambda r: r.vcpu_us.get('node2', 0)):.0f} |"
              f" {m(lambda r: r.devices.get('node1', 0)):.2f} |"
              f" {m(lambda r: r.devices.get('node2', 0)):.2f} | {m(lambda r: r.host_us):.0f} |"
              f" {m(lambda r: r.host_cores):.2f} |")
    print()
    print_switch_by_depth(passes)
    print_device_servers(passes)
    print_busy_host(passes)
    print_writeback(passes)
    if any(key not in passes[0] for key in FIGURES_NEED):
        print("(the preset's figures need every mechanism: not all were measured)")
        return
    each = [figures(p) for p in passes]
    taken = figures(median_runs(passes))
    print("| preset figure | " + " | ".join(f"pass {i + 1} µs" for i in range(len(each)))
          + " | of the median runs µs |")
    print("|---|" + "---|" * (len(each) + 1))
    for key in each[0]:
        # the shares are ratios, not µs
        form = ".0f" if key.endswith("_ns") else ".2f"
        print(f"| {key} | " + " | ".join(format(f[key], form) if key in f else "–"
                                        for f in each)
              + f" | {format(taken[key], form)} |")


def print_switch_by_depth(passes):
    """What eight processes' workers cost the vCPU an I/O more than as
    many threads of one (the process switches), at each depth a worker
    has: the model's rule is checked against it (host_cpu.c)."""
    cost, depths = switch_costs(passes)
    if not depths:
        return
    print("| op | outstanding a worker | threads64 vCPU µs/IO | processes8x8 vCPU µs/IO |"
          " switches' share µs/IO |")
    print("|---|---|---|---|---|")
    for op in OPS:
        for d in depths:
            one, eight = cost[op, d]
            print(f"| {op} | {d} | {one:.0f} | {eight:.0f} | {eight - one:.0f} |")
    print()
    batching = switch_batching(cost, depths)
    if batching is not None:
        batch, wake_us = batching
        print(f"a switch or a thread's wake-up serves at most {batch:.1f} I/Os (batch_ios_max);"
              f" a thread's wake-up costs {wake_us:.0f} µs (thread_wake_ns)")
        print()


# the disks whose servers differ: what each does for a request
SERVERS = {"bare": "replies at once (timing=off)", "timed": "holds the reply for 100 µs",
           "ssd": "runs the SSD's model", "raid": "runs a RAID controller's model"}


def print_device_servers(passes):
    """QEMU's threads and nbdkit per device I/O on each kind of disk (the
    median runs): what the hypervisor_per_*_io_ns figures are taken from,
    and how much of it is the device's server (nbdkit)."""
    runs = median_runs(passes)
    rows = [(name, op, d) for name in SERVERS for op in OPS for d in DEPTHS
            if (name, op, d) in runs]
    if not rows:
        return
    print("| disk | its server | op | qd | IOPS | hypervisor µs per device I/O |"
          " of it nbdkit's |")
    print("|---|---|---|---|---|---|---|")
    for name, op, d in rows:
        r = runs[name, op, d]
        server = "–" if r.server_us is None \
            else f"{r.server_us / max(r.devices.get('node1', 0.0), 1e-9):.0f}"
        print(f"| {name} | {SERVERS[name]} | {op} | {d} | {r.iops:.0f} |"
              f" {r.hypervisor_per_device_io_us():.0f} | {server} |")
    print()


def print_busy_host(passes):
    """Each run on a busy host against its idle twin (the median runs):
    node1's vCPU and the hypervisor's µs an I/O, and their ratios."""
    runs = median_runs(passes)
    pairs = [(busy, idle, op, d) for busy, idle in BUSY_HOST.items() for op in OPS
             for d in DEPTHS if (busy, op, d) in runs and (idle, op, d) in runs]
    if not pairs:
        return
    print("| mechanism | op | qd | vCPU µs/IO idle host | busy host | share |"
          " hypervisor µs/IO idle host | busy host | share |")
    print("|---|---|---|---|---|---|---|---|---|")
    for busy, idle, op, d in pairs:
        b, i = runs[busy, op, d], runs[idle, op, d]
        vb, vi = b.vcpu_us.get("node1", 0.0), i.vcpu_us.get("node1", 0.0)
        print(f"| {idle} | {op} | {d} | {vi:.0f} | {vb:.0f} | {vb / max(vi, 1e-9):.2f} |"
              f" {i.host_us:.0f} | {b.host_us:.0f} | {b.host_us / max(i.host_us, 1e-9):.2f} |")
    ratios, at_depth = busy_host_ratios(runs, depths=(1,)), busy_host_ratios(runs, depths=(8,))
    print(f"busy host share (the median): vCPU at 8 outstanding {median(at_depth['vcpu']):.2f}"
          f" (busy_host_share); not charged: at 1 outstanding {median(ratios['vcpu']):.2f},"
          f" the hypervisor's {median(at_depth['hypervisor']):.2f} at 8 and"
          f" {median(ratios['hypervisor']):.2f} at 1; the idle host's cores"
          f" {median(at_depth['idle_utilisation']):.2f} busy at 8 (calibrated_utilisation)")
    print()


def print_writeback(passes):
    """Writes with the write buffer copying to the capacity disk
    (writeback) against the same writes that never start it (hybrid), the
    median runs: what node1's vCPU spends a write more, the device I/Os a
    write makes more (the copies' buffer reads and capacity writes, and
    the buffer's metadata commits), and the vCPU per extra device I/O
    beside what the preset charges a device I/O."""
    runs = median_runs(passes)
    depths = [d for d in DEPTHS if ("writeback", "randwrite", d) in runs
              and ("hybrid", "randwrite", d) in runs]
    if not depths:
        return
    device_ns = figures(runs).get("per_device_io_ns") \
        if all(key in runs for key in FIGURES_NEED) else None
    print("| qd | vCPU µs/write, hybrid | writeback | more | device I/Os a write, hybrid |"
          " writeback | more | vCPU µs per extra device I/O |")
    print("|---|---|---|---|---|---|---|---|")
    for d in depths:
        h, w = runs["hybrid", "randwrite", d], runs["writeback", "randwrite", d]
        vh, vw = h.vcpu_us.get("node1", 0.0), w.vcpu_us.get("node1", 0.0)
        dh, dw = h.devices.get("node1", 0.0), w.devices.get("node1", 0.0)
        per = f"{(vw - vh) / (dw - dh):.0f}" if dw - dh > 0.05 else "–"
        print(f"| {d} | {vh:.0f} | {vw:.0f} | {vw - vh:.0f} | {dh:.2f} | {dw:.2f} |"
              f" {dw - dh:.2f} | {per} |")
    print("(the preset charges a device I/O "
          + (f"{device_ns:.0f} µs as measured here" if device_ns is not None
             else "per_device_io_ns") + ", and an origin write the LV's remap besides)")
    print()


def switch_costs(passes):
    """{(op, depth): (threads64, processes8x8) vCPU µs per I/O, medians}
    and the depths both were measured at."""
    depths = [d for d in DEPTHS_OF["processes8x8"]
              if all(("processes8x8", op, d) in passes[0] and ("threads64", op, d) in passes[0]
                     for op in OPS)]
    return {(op, d): tuple(median([p[name, op, d].vcpu_us.get("node1", 0) for p in passes])
                           for name in ("threads64", "processes8x8"))
            for op in OPS for d in depths}, depths


def switch_batching(cost, depths):
    """(batch_ios_max, thread_wake µs) from the switch costs, or None."""
    deeper = [d for d in depths if d > 1]
    if 1 not in depths or not deeper:
        return None
    # the preset's batch_ios_max: a switch an I/O at 1 outstanding, a batch's share deeper
    share = {(op, d): cost[op, d][1] - cost[op, d][0] for op in OPS for d in depths}
    batch = (sum(share[op, 1] for op in OPS) / len(OPS)) \
        / (sum(share[op, d] for op in OPS for d in deeper) / (len(OPS) * len(deeper)))
    # thread_wake_ns: what a thread woken for each I/O costs more than one woken for a batch
    saved = sum(cost[op, 1][0] - cost[op, deeper[0]][0] for op in OPS) / len(OPS)
    return batch, saved / (1 - 1 / batch)


def host_file_figures(passes):
    """This machine's figures, of the median runs, by the cost keys the
    library takes (the catalog's), each named as its field is (per_volume_read_ns:
    per-volume-read-us), at least 0 (a mechanism that measured cheaper
    than its base costs nothing more)."""
    cluster = catalog.load()["cluster"]
    known, bounds = cluster["host_cost_keys"], sim_host_file.ratio_bounds(cluster)
    taken = figures(median_runs(passes))
    out = {}
    for field, value in taken.items():
        if field.startswith("("):                 # printed, not charged
            continue
        if not field.endswith("_ns"):             # a share, not µs
            key = field.replace("_", "-")
            low, high = bounds[key]
            out[key] = round(min(max(value, low), high), 2)
            continue
        key = field.removesuffix("_ns").replace("_", "-") + "-us"
        if key not in known:
            raise SystemExit(f"tcg_calibrate: {field}: the library takes no {key}"
                             f" (known: {', '.join(known)})")
        out[key] = round(max(value, 0.0))
    batching = switch_batching(*switch_costs(passes))
    if batching is not None:
        batch, wake_us = batching
        out["batch-ios-max"] = round(max(batch, 1.0), 1)
        out["thread-wake-us"] = round(max(wake_us, 0.0))
    return out


def write_host_file(passes, path, source):
    """Sets this machine's figures in the host file at path (made if
    missing; another bench's figures in it stay)."""
    if any(key not in passes[0] for key in FIGURES_NEED):
        raise SystemExit("tcg_calibrate: --host-file needs every mechanism measured")
    try:
        sim_host_file.update(path, host_file_figures(passes),
                             f"this machine's TCG guests, per I/O: {source}")
    except UserError as e:
        raise SystemExit(f"tcg_calibrate: {e}") from None
    print(f"host file: {path}", file=sys.stderr)


def save(passes, path):
    with open(path, "w", encoding="utf-8") as f:
        json.dump([[{"mechanism": name, "op": op, "depth": depth, **vars(r)}
                    for (name, op, depth), r in runs.items()] for runs in passes], f, indent=1)


def load(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    passes = []
    for rows in doc:
        runs = {}
        for row in rows:
            r = Run.__new__(Run)
            for key in ("ios", "iops", "vcpu_us", "devices", "host_us", "host_cores"):
                setattr(r, key, row[key])
            r.host_cache_ratio = row.get("host_cache_ratio")      # none before 2026-12-03
            r.release_late_us = row.get("release_late_us")        # none before 2026-12-03 13:50
            r.host_cores_total = row.get("host_cores_total")      # none before 2026-12-06 21:00
            r.server_us = row.get("server_us")                    # none before 2026-12-07 16:00
            runs[row["mechanism"], row["op"], row["depth"]] = r
        passes.append(runs)
    return passes


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keep", action="store_true", help="leave the lab up afterwards")
    parser.add_argument("--out", default=None, help="where the runs' JSON goes (default:"
                        " results/tcg-calibrate-STAMP.json)")
    parser.add_argument("--repeat", type=int, default=3, help="passes over every mechanism"
                        " (default 3; the figures are their median)")
    parser.add_argument("--only", metavar="NAME,...", type=lambda v: v.split(","),
                        help="measure only these mechanisms (a check; the preset needs all)")
    parser.add_argument("--report", metavar="JSON", help="the tables of a saved run, nothing run")
    parser.add_argument("--host-file", metavar="FILE", help="also write this machine's figures"
                        " (of the median runs) as a host file for `storlab sweep --sim-host FILE`")
    args = parser.parse_args()
    # a SIGTERM (nohup's runs ignore SIGINT) still takes the lab down and
    # stops the busy loops: the finally blocks run
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("tcg_calibrate: stopped (SIGTERM)"))
    unknown = [name for name in args.only or () if name not in MECHANISMS]
    if unknown:
        sys.exit(f"tcg_calibrate: --only {','.join(unknown)}: no such mechanism"
                 f" (known: {', '.join(MECHANISMS)})")
    if args.report:
        passes = load(args.report)
        print_tables(passes)
        if args.host_file:
            write_host_file(passes, args.host_file, f"the median runs of {len(passes)} passes in"
                            f" {os.path.abspath(args.report)}")
        return
    topo = topology.load(TOPOLOGY)
    already_up = subprocess.run(["/usr/bin/python3", STORLAB, "status", LAB], capture_output=True,
                                check=False).returncode == 0
    if not already_up:
        storlab("up", TOPOLOGY, timeout=1200)
    try:
        passes = measure(topo, max(args.repeat, 1), args.only)
    finally:
        if not args.keep:
            storlab("down", LAB, timeout=600)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    out = args.out or os.path.join(ROOT, "results", f"tcg-calibrate-{stamp}.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    save(passes, out)
    print(f"runs: {out}", file=sys.stderr)
    print_tables(passes)
    if args.host_file:
        write_host_file(passes, args.host_file, f"the median runs of scripts/bench/tcg_calibrate.py"
                        f" --repeat {len(passes)} on {stamp} UTC ({out})")


if __name__ == "__main__":
    main()
