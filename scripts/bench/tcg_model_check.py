#!/usr/bin/python3
"""The cluster model against its own calibration: the mechanisms of a
scripts/bench/tcg_calibrate.py run that a cluster spec can state, run in
storlab-sim with the host file that run wrote, beside what the lab
measured (issue 14).

A host figure is a difference between two lab runs, each at 8 outstanding
or at 1; this checks that the model, given them, gives back the runs
themselves: IOPS, each guest's vCPU per I/O and the hypervisor's (QEMU's
threads besides the vCPUs, and nbdkit) per I/O, on the calibration's
topology (two tcg nodes on the lab's 2 host cores, untimed disks, one
udp link):

  bare   node1's volume on its disk
  raid1  node1's volume on an md RAID-1 over two of its disks (the lab's
         fio drives the md itself: the model's volume remap, its LV, is
         not charged: per-linear-io-us=0)
  nvme   node1's volume a mirror of one copy on node2, over NVMe/TCP (the
         lab's fio drives the namespace itself: the model adds md's
         per-md-io-us a request)
  nvme-lv   the same, node2's copy an LV (its remap charged there), as a
         replica holder exports its copy (replica-export.sh)
  replica   a file of ext4 on md RAID-1 over an LV on node1's disk and
         that LV of node2's (write-mostly: reads stay local), as
         profile-replicas' primary writes its share
  timed, raid, ssd   node1's volume on its disk that waits 100 µs, on its
         RAID LUN, on its SSD (calibrate-tcg.toml's, as the lab has them):
         what the hypervisor spends a device I/O where replies come slowly

usage: scripts/bench/tcg_model_check.py CALIBRATION_JSON HOST_FILE
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

from storlab_cli import paths  # noqa: E402
from storlab_cli.errors import UserError  # noqa: E402
from storlab_cli.schema import sim_host_file  # noqa: E402

import tcg_calibrate  # noqa: E402

RUNTIME_S, RAMP_S = 8, 1
DISKS = "".join(f"device {node} disk{i} hdd preset=sas10k-300g size=256M timing=off\n"
                for node in ("node1", "node2") for i in range(2)) \
    + "device node1 timed0 hdd preset=sas10k-300g size=256M fixed-latency-us=100\n" \
    + "device node1 lun0 raid preset=vsa-raid10-8x-sas10k member-size=16M\n" \
    + ("device node1 ssd0 ssd preset=intel-s3700-400g size=64M channels=2 dies-per-channel=2"
       " planes-per-die=1 page-size=4k pages-per-block=32 over-provisioning-pct=12\n")
NVME = "local node1 disk disk0\nlocal node2 disk disk0\nvolume node1 v 64M method=mirror on=node2\n"
SMALL_VOLUME = "60M"
# mechanism -> (its volumes, what node1 exports, the nodes whose LV remap the lab has)
MECHANISMS = {
    "bare": ("local node1 disk disk0\nvolume node1 v 64M\n", "volume=v", ()),
    "raid1": ("local node1 raid level=1 chunk=64k disk0 disk1\nvolume node1 v 64M\n", "volume=v",
              ()),
    "nvme": (NVME, "volume=v", ()),
    "nvme-lv": (NVME, "volume=v", ("node2",)),
    "replica": ("local node1 disk disk1\nlocal node2 disk disk0\nreplica r 64M node1 node2\n",
                "share=r", ("node1", "node2")),
    **{name: (f"local node1 disk {disk}\nvolume node1 v {SMALL_VOLUME}\n", "volume=v", ())
       for name, disk in (("timed", "timed0"), ("raid", "lun0"), ("ssd", "ssd0"))},
}


def volume_size(mechanism):
    """What node1 exports and fio covers: the LUN and the SSD are 64 MiB,
    so their LV of whole 4 MiB extents after the first MiB is smaller."""
    return SMALL_VOLUME if mechanism in ("timed", "raid", "ssd") else "64M"


def spec(preset, words, mechanism, depth):
    # fio's one thread keeps depth I/Os in flight (as a sweep's spec says);
    # the lab's fio drives the disk, md or namespace itself, where the
    # model's volume is an LV: its remap is not charged there
    volumes, export, lv_nodes = MECHANISMS[mechanism]
    nodes = "".join(f"node {n} host={preset} {' '.join(words)}"
                    f"{'' if n in lv_nodes else ' per-linear-io-us=0'} worker-depth={depth}\n"
                    for n in ("node1", "node2"))
    return (f"storlab-cluster 1\npool cores=2\n{nodes}{DISKS}link node1 node2\n"
            f"{volumes}export node1 at=0 size={volume_size(mechanism)} {export}\n")


def job(op, depth, size):
    return (f"[global]\nioengine=libaio\ndirect=1\nrw={op}\nbs=4k\niodepth={depth}\nsize={size}\n"
            f"time_based=1\nruntime={RUNTIME_S}\nramp_time={RAMP_S}\n[j]\n")


def run_cluster(spec_text, job_text):
    """storlab-sim cluster's JSON document of a spec and a job (their
    texts); UserError with its last words when it fails."""
    with tempfile.TemporaryDirectory() as tmp:
        spec_path, job_path = os.path.join(tmp, "check.spec"), os.path.join(tmp, "check.fio")
        with open(spec_path, "w", encoding="utf-8") as f:
            f.write(spec_text)
        with open(job_path, "w", encoding="utf-8") as f:
            f.write(job_text)
        result = subprocess.run([paths.simulator(), "cluster", "--", spec_path, job_path],
                                capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise UserError(f"storlab-sim: {result.stderr.strip().splitlines()[-1]}")
    return json.loads(result.stdout)


def simulate(spec_text, job_text):
    """(IOPS of all its jobs, {node: vCPU µs per I/O}, hypervisor µs per
    I/O) of one run."""
    doc = run_cluster(spec_text, job_text)
    device = doc["storlab"]["device"]
    ops = device["stats"]["ops"]
    ios = max(ops["read"]["count"] + ops["write"]["count"], 1)
    hosts = {h["node"]: h["busy_ns"] / ios / 1e3 for h in device["model"]["hosts"]}
    hypervisor = device["model"]["host_pool"]["busy_ns"] / ios / 1e3 - sum(hosts.values())
    iops = sum(j["read"]["iops"] + j["write"]["iops"] for j in doc["jobs"])
    return iops, hosts, hypervisor


def load_inputs(tool, runs_path, load, bench, host_file):
    """(load(runs_path), preset, words of the host file); one line naming
    the file and an exit where either cannot be read or is not what the
    tool takes (a bench's --out file, a host file)."""
    try:
        runs = load(runs_path)
        preset, words = sim_host_file.load(host_file)
    except OSError as e:
        sys.exit(f"{tool}: {runs_path}: cannot read ({e.strerror})")
    except (ValueError, KeyError, TypeError) as e:
        sys.exit(f"{tool}: {runs_path}: not a {bench} --out file ({e})")
    except UserError as e:
        sys.exit(f"{tool}: {e}")
    return runs, preset, words


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    calibration, host_file = sys.argv[1:]
    passes, preset, words = load_inputs("tcg_model_check", calibration, tcg_calibrate.load,
                                        "tcg_calibrate.py", host_file)
    print(f"Lab: {calibration} (the median of {len(passes)} pass(es)); model: {host_file}\n")
    print("| mechanism | op | qd | lab IOPS | model IOPS | lab vCPU µs/IO node1 / node2 |"
          " model | lab hypervisor µs/IO | model |")
    print("|---|---|---|---|---|---|---|---|---|")
    for mechanism in MECHANISMS:
        for op in tcg_calibrate.OPS:
            for depth in tcg_calibrate.DEPTHS:
                runs = [p[mechanism, op, depth] for p in passes if (mechanism, op, depth) in p]
                if not runs:
                    continue

                def lab(f):
                    return tcg_calibrate.median([f(r) for r in runs])
                try:
                    iops, vcpu, hypervisor = simulate(spec(preset, words, mechanism, depth),
                                                        job(op, depth, volume_size(mechanism)))
                except UserError as e:
                    sys.exit(f"tcg_model_check: {mechanism} {op} qd{depth}: {e}")
                print(f"| {mechanism} | {op} | {depth} | {lab(lambda r: r.iops):.0f} | {iops:.0f} |"
                      f" {lab(lambda r: r.vcpu_us.get('node1', 0)):.0f} /"
                      f" {lab(lambda r: r.vcpu_us.get('node2', 0)):.0f} |"
                      f" {vcpu.get('node1', 0):.0f} / {vcpu.get('node2', 0):.0f} |"
                      f" {lab(lambda r: r.host_us):.0f} | {hypervisor:.0f} |")


if __name__ == "__main__":
    main()
