#!/usr/bin/python3
"""SSD presets through the nbdkit plugin (fio's nbd engine, real time) beside
the simulator on the same job: the plugin must deliver what the model
predicts wherever the host path can carry it.  Prints a markdown table.

usage: scripts/bench/ssd_plugin_subset.py [--seconds N]   (after scripts/storlab check)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from storlab_cli import paths  # noqa: E402
from storlab_cli.lab.nbdkit import Nbdkit  # noqa: E402
from storlab_cli.results import fio_results  # noqa: E402

# (preset, workload label, fio rw, block size, queue depth)
CASES = [
    ("intel-s3700-400g", "4K random read", "randread", "4k", 4),
    ("intel-s3700-400g", "4K random write", "randwrite", "4k", 4),
    ("intel-s3700-400g", "128K sequential read", "read", "128k", 4),
    ("micron-5100eco-1920g", "4K random write", "randwrite", "4k", 4),
    ("samsung-840evo-120g", "4K random read", "randread", "4k", 1),
]


def job_lines(rw, bs, qd, seconds):
    return ["[subset]", f"rw={rw}", f"bs={bs}", f"iodepth={qd}", f"runtime={seconds}",
            "time_based=1", "ramp_time=1", "size=1G"]   # 1 GiB region keeps host memory small


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=8)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="storlab-ssd-subset-") as workdir:
        for preset, label, rw, bs, qd in CASES:
            job = os.path.join(workdir, "job.fio")
            with open(job, "w", encoding="utf-8") as f:
                f.write("\n".join(job_lines(rw, bs, qd, args.seconds)) + "\n")
            params = [f"preset={preset}"]     # full capacity: data store and FTL map are sparse
            sim = subprocess.run([paths.simulator(), "ssd"] + params + [job], capture_output=True,
                                 text=True, check=True)
            direction = "read" if "read" in rw else "write"
            predicted = fio_results.direction_summary(json.loads(sim.stdout), direction)
            out = os.path.join(workdir, "fio.json")
            with Nbdkit(workdir, "ssd", params) as server:
                subprocess.run(["fio", "--ioengine=nbd", f"--uri={server.uri}",
                                "--output-format=json", f"--output={out}", job],
                               capture_output=True, check=True, cwd=workdir)
            measured = fio_results.direction_summary(fio_results.load(out), direction)
            rows.append((preset, label, qd, predicted, measured))
    print("\n| preset | workload | QD | sim IOPS | plugin IOPS | plugin/sim | sim mean µs | plugin mean µs |")
    print("|---|---|---|---|---|---|---|---|")
    for preset, label, qd, p, m in rows:
        print(f"| {preset} | {label} | {qd} | {p['iops']:.0f} | {m['iops']:.0f} | "
              f"{m['iops'] / p['iops']:.3f} | {p['mean_us']:.0f} | {m['mean_us']:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
