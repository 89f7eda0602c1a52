#!/usr/bin/python3
"""Benchmarks of `storlab sweep` (issue 7), printed as a markdown table:

- a 100-point simulator sweep (10 queue depths x 5 block sizes x battery ok
  / failed on the VSA-like RAID LUN, 10 s measured each), wall time from the
  command to the report (target: under 30 s);
- with --lab: the shipped `cache-disabled` scenario on the lab, wall time
  from the command to the report, lab up and down included (target: under
  10 minutes on 2 cores under TCG), plus its headline figures.

usage: scripts/bench/sweep_bench.py [--lab] [--keep DIR]   (--lab as root)
"""
import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STORLAB = os.path.join(ROOT, "scripts", "storlab")
SCENARIO = os.path.join(ROOT, "topologies", "sweeps", "cache-disabled.toml")

SIM_SWEEP = f'''
name = "bench-100"
backend = "sim"
topology = "{os.path.join(ROOT, "topologies", "vsa-raid.toml")}"
[workload]
target = "lun0"
rw = "randrw"
rwmixread = 50
size = "2G"
[phases]
ramp_s = 1
duration_s = 10
interval_s = 1
[sweep]
iodepth = [1, 2, 4, 8, 12, 16, 24, 32, 48, 64]
bs = ["4k", "8k", "16k", "32k", "64k"]
"device.battery" = ["ok", "failed"]
'''


def timed_sweep(args):
    started = time.monotonic()
    result = subprocess.run(["/usr/bin/python3", STORLAB, "sweep", *args], capture_output=True,
                            text=True, check=False)
    elapsed_s = time.monotonic() - started
    if result.returncode != 0:
        sys.exit(f"sweep_bench: storlab sweep {' '.join(args)} failed:\n{result.stderr}")
    return elapsed_s


def rows(out):
    with open(os.path.join(out, "points.csv"), newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lab", action="store_true", help="also run cache-disabled on the lab")
    parser.add_argument("--keep", help="keep the results directories under DIR")
    args = parser.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="storlab-sweep-bench-")
    os.makedirs(work, exist_ok=True)
    table = ["| benchmark | points | wall s | target | figures |", "|---|---|---|---|---|"]
    try:
        sweep_file = os.path.join(work, "bench-100.toml")
        with open(sweep_file, "w", encoding="utf-8") as f:
            f.write(SIM_SWEEP)
        out = os.path.join(work, "bench-100")
        shutil.rmtree(out, ignore_errors=True)
        elapsed_s = timed_sweep([sweep_file, "--out", out])
        points = rows(out)
        figures = f"{len(os.listdir(os.path.join(out, 'plots'))) // 3} figures"
        table.append(f"| 100-point simulator sweep | {len(points)} | {elapsed_s:.1f} | < 30 s "
                     f"| {figures} |")
        if args.lab:
            out = os.path.join(work, "cache-disabled")
            shutil.rmtree(out, ignore_errors=True)
            elapsed_s = timed_sweep([SCENARIO, "--out", out])
            by = {r["device.battery"]: r for r in rows(out) if r["iodepth"] == "32"}
            ok, failed = by["ok"], by["failed"]
            figures = (f"QD32 write latency {float(ok['write_lat_mean_us']):.0f} µs → "
                       f"{float(failed['write_lat_mean_us']):.0f} µs "
                       f"(×{float(failed['write_lat_mean_us']) / float(ok['write_lat_mean_us']):.0f}),"
                       f" IOPS {float(ok['iops']):.0f} → {float(failed['iops']):.0f}")
            table.append(f"| cache-disabled on the lab (up, precondition, sweep, prediction, "
                         f"plots, down) | {len(rows(out))} | {elapsed_s:.1f} | < 600 s | "
                         f"{figures} |")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("\n".join(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
