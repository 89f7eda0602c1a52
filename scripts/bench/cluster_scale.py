#!/usr/bin/python3
"""The cluster simulator at the studies' scale (issue 14), printed as a
markdown table: seed scenario 2's hybrid cluster at full size — per node
1 x intel-s3700-400g (70 % read cache, 30 % write buffer) in front of
4 x wd-xe-900g, 8 VMs x 8 workers, one volume each, 4 KiB random read at
16 outstanding per worker — for each node count asked, one point of
--runtime simulated seconds (caches warm), run by storlab-sim alone on one
core.  Per row: wall time, peak resident memory (the process's own, from
wait4), simulated I/Os and I/Os per wall second, and the cluster's figures.

Targets: 4 nodes, 60 s simulated in at most 30 s wall; 64 nodes in at most
10 minutes and 4 GiB resident.

The spec and job file are written by the CLI's own code (the topology and
sweep files a user would give; sweep/cluster_spec.py), so the run is the
one `storlab sweep --backend sim` makes.

usage: scripts/bench/cluster_scale.py [--nodes 4 64] [--runtime 60] [--size 2G] [--keep DIR]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

from storlab_cli import build, paths  # noqa: E402
from storlab_cli.schema import sweep as sweep_schema, topology  # noqa: E402
from storlab_cli.sweep import cluster_spec, fio_jobfile, plan as sweep_plan  # noqa: E402

TOPOLOGY = '''# bench: seed scenario 2 at full size, {nodes} nodes
name = "bench-hybrid-{nodes}"
description = "cluster_scale.py: {nodes} hybrid nodes at full size"
[sim]
host = "bare-metal"
[[defaults.devices]]
name = "cache"
plugin = "ssd"
[defaults.devices.params]
preset = "intel-s3700-400g"
[[defaults.devices]]
name = "disk"
plugin = "hdd"
count = 4
[defaults.devices.params]
preset = "wd-xe-900g"
[nodes]
count = {nodes}
[links]
mode = "full-mesh"
[profile.disk_group]
mode = "hybrid"
cache = "cache0"
read_cache_percent = 70
[profile.volumes]
units = 8
per_unit = 8
size = "{size}"
'''

SWEEP = '''name = "bench-scale"
backend = "sim"
topology = "{topology}"
[workload]
target = "volumes"
units = 8
workers = 8
rw = "randread"
bs = "4k"
iodepth = 16
size = "{size}"
[phases]
ramp_s = 0
duration_s = {runtime}
interval_s = 0
'''


def write_point(directory, nodes, size, runtime):
    """The cluster spec and job file of the one point, as the sim backend writes them."""
    topo_path = os.path.join(directory, f"hybrid-{nodes}.toml")
    with open(topo_path, "w", encoding="utf-8") as f:
        f.write(TOPOLOGY.format(nodes=nodes, size=size))
    sweep_path = os.path.join(directory, f"scale-{nodes}.toml")
    with open(sweep_path, "w", encoding="utf-8") as f:
        f.write(SWEEP.format(topology=topo_path, size=size, runtime=runtime))
    sweep = sweep_schema.load(sweep_path)
    topo = topology.load(topo_path)
    plan = sweep_plan.make(sweep, topo)
    workload = sweep.points[0].workload(sweep.workload)
    laid_out = cluster_spec.exports(topo, workload, sweep_plan.point_nodes(plan, workload))
    spec_path = os.path.join(directory, f"cluster-{nodes}.spec")
    with open(spec_path, "w", encoding="utf-8") as f:
        f.write(cluster_spec.text(topo, laid_out, topo.sim.resolved()))
    workers = cluster_spec.job_workers(laid_out)
    job_path = os.path.join(directory, f"job-{nodes}.fio")
    with open(job_path, "w", encoding="utf-8") as f:
        f.write(fio_jobfile.measured(workload, sweep.phases, workers, workers[0].randseed))
    return spec_path, job_path


def run(spec_path, job_path, out_path):
    """storlab-sim cluster --warm on one core; (wall s, peak RSS bytes)."""
    argv = ["taskset", "-c", "0", paths.simulator(), "cluster", "--warm", "--", spec_path,
            job_path]
    started = time.monotonic()
    with open(out_path, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
    wall_s = time.monotonic() - started
    stderr = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"cluster_scale: storlab-sim failed: {stderr.strip().splitlines()[-1:]}")
    return wall_s, usage.ru_maxrss * 1024


def row(nodes, wall_s, rss_bytes, out_path):
    with open(out_path, encoding="utf-8") as f:
        doc = json.load(f)
    job, extra = doc["jobs"][0], doc["storlab"]
    model = extra["device"]["model"]
    caches = [layer["counters"] for layer in model["layers"] if layer["kind"] == "readcache"]
    hits = sum(c["read_hits"] for c in caches)
    reads = hits + sum(c["read_misses"] for c in caches)
    iops = job["read"]["iops"] + job["write"]["iops"]
    ios = extra["simulated_ios"]
    return (f"| {nodes} | {extra['simulated_ns'] / 1e9:.0f} | {wall_s:.1f} | {ios / 1e6:.2f} M "
            f"| {ios / wall_s / 1e3:.0f}k | {rss_bytes / 2**20:.0f} | {iops / 1e3:.0f}k "
            f"| {iops / nodes / 1e3:.1f}k | {job['read']['clat_ns']['mean'] / 1e6:.2f} "
            f"| {100.0 * hits / reads if reads else 0:.1f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[4, 64])
    parser.add_argument("--runtime", type=int, default=60, help="simulated seconds")
    parser.add_argument("--size", default="2G", help="working set per worker (64 per node)")
    parser.add_argument("--keep", help="keep the specs, job files and results here")
    args = parser.parse_args()
    build.build()
    directory = args.keep or tempfile.mkdtemp(prefix="cluster-scale-")
    os.makedirs(directory, exist_ok=True)
    print(f"hybrid cluster, 8 VMs x 8 workers a node, 4k randread QD16 a worker, "
          f"{args.size} a worker, caches warm; storlab-sim on one core\n")
    print("| nodes | simulated s | wall s | simulated I/Os | I/Os per wall s | peak RSS MiB "
          "| cluster IOPS | IOPS per node | mean latency ms | read-cache hit % |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    try:
        for nodes in args.nodes:
            spec_path, job_path = write_point(directory, nodes, args.size, args.runtime)
            out_path = os.path.join(directory, f"result-{nodes}.json")
            wall_s, rss_bytes = run(spec_path, job_path, out_path)
            print(row(nodes, wall_s, rss_bytes, out_path), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
