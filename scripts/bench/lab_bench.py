#!/usr/bin/python3
"""Benchmarks of the virtual lab (issue 5), printed as markdown tables:

- time from `storlab up` to the first fio result from every node of the
  3-node default lab (target: 90 s on 2 cores under TCG);
- host RAM per node (QEMU and nbdkit resident memory);
- the guest's per-I/O floor: fio inside a guest against a zero-latency
  disk (hdd plugin with timing=off), QD1 and QD16.

usage: scripts/bench/lab_bench.py [--accel tcg|kvm|auto]   (as root)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STORLAB = os.path.join(ROOT, "scripts", "storlab")
RUN_BASE = os.environ.get("STORLAB_RUN_DIR", "/run/storlab")

FLOOR_TOPOLOGY = """\
name = "floor"
description = "one node, one zero-latency disk: the guest's own per-I/O cost"
[[defaults.devices]]
name = "disk"
plugin = "hdd"
[defaults.devices.params]
size = "1G"
timing = "off"
[nodes]
count = 1
"""


def storlab(*args, check=True):
    result = subprocess.run(["/usr/bin/python3", STORLAB, *args], capture_output=True,
                            text=True, check=False)
    if check and result.returncode != 0:
        sys.exit(f"lab_bench: storlab {' '.join(args)} failed:\n{result.stdout}{result.stderr}")
    return result


def guest_fio(lab, node, rw, iodepth, seconds):
    result = storlab("exec", lab, node, "--", "fio", "--name=b", "--filename=/dev/sda",
                     "--ioengine=libaio", "--direct=1", f"--rw={rw}", "--bs=4k",
                     f"--iodepth={iodepth}", f"--runtime={seconds}", "--time_based=1",
                     "--output-format=json")
    job = json.loads(result.stdout[result.stdout.index("{"):])["jobs"][0]["read"]
    return job["iops"], job["clat_ns"]["mean"] / 1000.0


def rss_kib(pid):
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def qemu_pid(domain):
    with open(f"/run/libvirt/qemu/{domain}.pid", encoding="ascii") as f:
        return int(f.read().strip())


def lab_memory(lab):
    state = json.load(open(os.path.join(RUN_BASE, lab, "lab.json"), encoding="utf-8"))
    rows = []
    for domain in state["domains"]:
        node = domain[len(f"storlab-{lab}-"):]
        servers = [d for d in state["devices"] if d["node"] == node]
        nbdkit_kib = sum(rss_kib(int(open(d["pidfile"], encoding="ascii").read())) for d in servers)
        rows.append((node, rss_kib(qemu_pid(domain)), nbdkit_kib))
    return rows


def default_lab_timing(accel):
    topology = os.path.join(ROOT, "topologies", "default.toml")
    start = time.monotonic()
    storlab("up", topology, "--accel", accel)
    ready = time.monotonic() - start
    results = {}

    def one(node):
        results[node] = guest_fio("default", node, "randread", 1, 3)
        results[node] += (time.monotonic() - start,)

    try:
        threads = [threading.Thread(target=one, args=(f"node{i}",)) for i in (1, 2, 3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        memory = lab_memory("default")
    finally:
        storlab("down", "default", check=False)
    return ready, max(r[2] for r in results.values()), memory


def floor(accel):
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(FLOOR_TOPOLOGY)
        path = f.name
    try:
        storlab("up", path, "--accel", accel)
        try:
            return [(qd, *guest_fio("floor", "node1", "randread", qd, 8)) for qd in (1, 16)]
        finally:
            storlab("down", "floor", check=False)
    finally:
        os.unlink(path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--accel", default="tcg", choices=("tcg", "kvm", "auto"))
    args = parser.parse_args()
    ready, first_results, memory = default_lab_timing(args.accel)
    print(f"\n### 3-node default lab ({args.accel}), 2 cores\n")
    print("| up until every agent answers | up until fio results from all 3 nodes |")
    print("|---|---|")
    print(f"| {ready:.1f} s | {first_results:.1f} s |")
    print("\n### Host RAM per node (resident)\n")
    print("| node | QEMU MiB | nbdkit MiB (2 disks) |\n|---|---|---|")
    for node, qemu_kib, nbdkit_kib in memory:
        print(f"| {node} | {qemu_kib/1024:.0f} | {nbdkit_kib/1024:.0f} |")
    print(f"\n### Guest per-I/O floor: fio in the guest, zero-latency disk ({args.accel})\n")
    print("| QD | IOPS | mean latency µs |\n|---|---|---|")
    for qd, iops, mean_us in floor(args.accel):
        print(f"| {qd} | {iops:.0f} | {mean_us:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
