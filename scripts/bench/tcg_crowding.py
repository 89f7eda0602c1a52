#!/usr/bin/python3
"""How much more a TCG guest's I/O costs the host's CPU when more guests
than the host has cores are busy at once: the `tcg` host preset's
crowded_wake_ns (emulator/cluster/host_cpu.c; issue 14).

It brings up scripts/bench/calibrate-crowding.toml (four nodes, one vCPU
each, untimed disks) and runs fio (4 KiB random read and write, libaio,
O_DIRECT, 12 s) on its bare disk in 1, then as many nodes as the host has
cores, then all four at once: one thread at 1 and at 8 outstanding, and
eight threads at 16 outstanding (a vCPU that never idles). The busy
guests' fio start at their start gates, opened together; from 2 s after,
for 8 s (gated_fio.py), the host reads /proc for the guests' vCPU threads,
the rest of their QEMUs (I/O thread) and the lab's nbdkits, and the
devices' stats for the I/Os. Per I/O of all the busy guests together:

  vcpu_us        the vCPUs' time (sum over guests / sum of their IOPS)
  hypervisor_us  QEMU's other threads and nbdkit

each against the same with one guest busy. At 1 outstanding the vCPU
sleeps and is woken for every I/O, so what an I/O costs more there, vCPU
and hypervisor together, over the vCPUs a core runs beyond one (busy
guests / cores - 1, for runs with more busy guests than cores), is what a
wake-up costs more on a crowded host: the preset's crowded_wake_ns. An
idle guest's vCPU is measured too (it should cost ~0).

With --host-file FILE it sets crowded-wake-us, the median, in that host
file (made if missing; tcg_calibrate.py --host-file's figures in it stay),
for `storlab sweep --sim-host FILE`.

usage: scripts/bench/tcg_crowding.py [--repeat N] [--keep] [--out JSON] [--host-file FILE]
       scripts/bench/tcg_crowding.py --report JSON [--host-file FILE]
It saves results/tcg-crowding-STAMP.json."""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

from storlab_cli.common import text_table  # noqa: E402
from storlab_cli.errors import UserError  # noqa: E402
from storlab_cli.lab.each_node import each_node  # noqa: E402
from storlab_cli.schema import sim_host_file  # noqa: E402

import gated_fio  # noqa: E402
import host_probe  # noqa: E402
from lab_cpu import between, sample  # noqa: E402

STORLAB = os.path.join(ROOT, "scripts", "storlab")
TOPOLOGY = os.path.join(HERE, "calibrate-crowding.toml")
LAB = "calibrate-crowding"
NODES = 4
RUNTIME_S = 12
# the window, from the start gates' opening: every guest's fio past its
# start, none ended
RAMP_S, WINDOW_S = 2, 8
OPS = ("randread", "randwrite")
# (threads, outstanding each) a guest
LAYOUTS = ((1, 1), (1, 8), (8, 16))
BARE_DISK = ". /usr/lib/storlab/profiles/lib.sh; disk_by_serial disk0"


class Failed(Exception):
    pass


def storlab(*args, timeout=900):
    result = subprocess.run(["/usr/bin/python3", STORLAB, *args], capture_output=True, text=True,
                            timeout=timeout, check=False)
    if result.returncode != 0:
        raise Failed(f"storlab {args[0]} failed: {result.stderr.strip()}")
    return result.stdout


def run(busy, op, threads, depth, disks):
    """fio on the first `busy` nodes at once (disks: {node: its bare disk}),
    measured in its window (gated_fio.py): {IOPS, vCPU and hypervisor µs an
    I/O of them all, the host's busy cores}."""
    nodes = [f"node{i}" for i in range(1, busy + 1)]
    try:
        window = gated_fio.run(LAB, {n: gated_fio.FioJob(disks[n], op, depth, threads=threads)
                                     for n in nodes}, RUNTIME_S, RAMP_S, WINDOW_S)
    except gated_fio.Failed as e:
        raise Failed(f"{op} {threads}x qd{depth} on {busy} nodes: {e}") from None
    used, ios = window.used, max(window.ios, 1)
    vcpu = sum(used["vcpu"][n] for n in nodes)
    hypervisor = sum(used["qemu_io"][n] for n in nodes) + used["nbdkit"]
    return {"busy": busy, "op": op, "threads": threads, "depth": depth,
            "iops": window.ios / used["seconds"],
            "vcpu_us": vcpu * used["seconds"] * 1e6 / ios,
            "hypervisor_us": hypervisor * used["seconds"] * 1e6 / ios,
            "host_busy_cores": used["host_busy"],
            "host_cache_ratio": window.cache_ratio}    # host_probe.py: a slow spell's mark


def idle_vcpu_cores():
    """What an idle guest's vCPU keeps busy, in cores (the most of any)."""
    a = sample(LAB)
    time.sleep(8)
    used = between(a, sample(LAB), os.sysconf("SC_CLK_TCK"))
    return max(used["vcpu"].values())


def bare_disks():
    """{node: the path of its disk0}."""
    try:
        return each_node([f"node{i}" for i in range(1, NODES + 1)],
                         lambda node: gated_fio.guest(LAB, node, BARE_DISK).strip())
    except gated_fio.Failed as e:
        raise Failed(str(e)) from None


def measure(repeat, cores):
    counts = sorted({1, min(cores, NODES), NODES})
    disks = bare_disks()
    rows = []
    for n in range(repeat):
        for op in OPS:
            for threads, depth in LAYOUTS:
                for busy in counts:
                    try:
                        row = run(busy, op, threads, depth, disks)
                    except Failed as e:        # a fio stuck (gated_fio.STUCK_S): once more
                        print(f"tcg_crowding: {e}; the lab restarted, once more",
                              file=sys.stderr)
                        storlab("down", LAB, timeout=600)
                        storlab("up", TOPOLOGY, timeout=1200)
                        disks = bare_disks()
                        row = run(busy, op, threads, depth, disks)
                    row["pass"] = n + 1
                    rows.append(row)
                    print(f"tcg_crowding: pass {n + 1}: {busy} busy, {op} {threads}x qd{depth}:"
                          f" {row['iops']:.0f} IOPS, vCPU {row['vcpu_us']:.0f} µs/IO, host caches"
                          f" {host_probe.ratio_text(row['host_cache_ratio'])} their lowest", file=sys.stderr)
    return rows


def print_table(doc):
    cores, rows = doc["cores"], doc["rows"]
    alone = {}
    for r in rows:
        if r["busy"] == 1:
            alone.setdefault((r["op"], r["threads"], r["depth"]), []).append(r)
    table, wakes = [], []
    for r in rows:
        base = alone[r["op"], r["threads"], r["depth"]]
        base_vcpu = statistics.mean(b["vcpu_us"] for b in base)
        base_hyp = statistics.mean(b["hypervisor_us"] for b in base)
        beyond = r["busy"] / cores - 1
        wake = None
        if beyond > 0 and r["threads"] == 1 and r["depth"] == 1:
            wake = (r["vcpu_us"] + r["hypervisor_us"] - base_vcpu - base_hyp) / beyond
            wakes.append(wake)
        table.append([r["pass"], r["op"], f"{r['threads']}x{r['depth']}", r["busy"],
                      f"{r['iops']:.0f}", f"{r['host_busy_cores']:.2f}", f"{r['vcpu_us']:.0f}",
                      f"{r['vcpu_us'] / base_vcpu:.2f}", f"{r['hypervisor_us']:.0f}",
                      f"{r['hypervisor_us'] / base_hyp:.2f}", "" if wake is None else f"{wake:.0f}"])
    print(f"guests crowding a {cores}-core host ({doc['when']}); an idle guest's vCPU:"
          f" {doc['idle_vcpu_cores'] * 100:.1f} % of a core")
    for line in text_table.lines(["pass", "op", "threads x qd", "busy guests", "IOPS",
                                  "host busy cores", "vCPU µs/IO", "x alone",
                                  "hypervisor µs/IO", "x alone", "µs more a wake-up"], table):
        print(line)
    if wakes:
        print(f"crowded_wake_ns: median {statistics.median(wakes):.0f} µs"
              f" (range {min(wakes):.0f}-{max(wakes):.0f}, {len(wakes)} runs at 1 outstanding)")
    return statistics.median(wakes) if wakes else None


def write_host_file(wake_us, path, source):
    if wake_us is None:
        sys.exit("tcg_crowding: --host-file: no run had more busy guests than cores")
    try:
        sim_host_file.update(path, {"crowded-wake-us": round(max(wake_us, 0.0))},
                             f"a crowded host's wake-up: {source}")
    except UserError as e:
        sys.exit(f"tcg_crowding: {e}")
    print(f"host file: {path}", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=2, help="passes (default 2)")
    parser.add_argument("--keep", action="store_true", help="leave the lab up afterwards")
    parser.add_argument("--out", help="where the runs' JSON goes"
                        " (default results/tcg-crowding-STAMP.json)")
    parser.add_argument("--report", metavar="JSON", help="the table of a saved run, nothing run")
    parser.add_argument("--host-file", metavar="FILE", help="also set crowded-wake-us in this"
                        " host file, for `storlab sweep --sim-host FILE`")
    args = parser.parse_args()
    if args.report:
        with open(args.report, encoding="utf-8") as f:
            wake_us = print_table(json.load(f))
        if args.host_file:
            write_host_file(wake_us, args.host_file, f"the median of {os.path.abspath(args.report)}")
        return
    already_up = subprocess.run(["/usr/bin/python3", STORLAB, "status", LAB],
                                capture_output=True, check=False).returncode == 0
    if not already_up:
        try:
            storlab("up", TOPOLOGY, timeout=1200)
        except Failed as e:
            sys.exit(f"tcg_crowding: {e}")
    now = datetime.datetime.now(datetime.timezone.utc)
    try:
        cores = os.cpu_count()
        doc = {"when": now.strftime("%Y-%m-%d %H:%M UTC"), "cores": cores,
               "idle_vcpu_cores": idle_vcpu_cores(), "rows": measure(max(args.repeat, 1), cores)}
    except Failed as e:
        sys.exit(f"tcg_crowding: {e}")
    finally:
        if not args.keep:
            subprocess.run(["/usr/bin/python3", STORLAB, "down", LAB], capture_output=True,
                           timeout=600, check=False)
    out = args.out or os.path.join(ROOT, "results", f"tcg-crowding-{now:%Y%m%d-%H%M%S}.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    print(f"runs: {out}", file=sys.stderr)
    wake_us = print_table(doc)
    if args.host_file:
        write_host_file(wake_us, args.host_file, f"scripts/bench/tcg_crowding.py --repeat"
                        f" {max(args.repeat, 1)} on {doc['when']} ({out})")


if __name__ == "__main__":
    main()
