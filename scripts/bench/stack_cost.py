#!/usr/bin/python3
"""What each step of a profile lab's stack costs its guest's CPU, one step
at a time, in the lab itself (issue 14).

The calibration (tcg_calibrate.py) measures each mechanism alone on
untimed disks of a lab of its own; a profile lab's point puts them
together, on timed devices, with several workload units and workers. Where
the cluster model parts from such a lab at the host CPU
(cluster_validation.md), this runs fio (4 KiB, libaio, O_DIRECT, measured
in a window as a lab sweep's point is: gated_fio.py) in one node of the lab
that is up, on each step from the device up: a raw device, the md RAID
over the devices, one workload volume (an LV on it), and that volume driven
as the sweep's workload drives it (its units as fio processes, its workers
as threads). Per step it prints IOPS, the node's vCPU per I/O, the
hypervisor's (the lab's QEMU threads besides the vCPUs, and nbdkit) per
I/O, and the device I/Os per I/O; the differences between the rows are the
steps' own costs.

With --model SPEC (the cluster spec of one of the lab sweep's simulated
points, DIR/sim/points/N/cluster.spec: its hosts as that prediction had
them) it runs each step in storlab-sim too and prints the model's figures
beside the lab's: a raw device as the node's only local device, the md and
a volume as the spec's own local storage (an LV: its remap, per-linear-io-us,
is charged only on the steps that are LVs in the lab too).

usage: scripts/bench/stack_cost.py LAB NODE [--op randread] [--depth 8] [--model SPEC]
           [--step NAME=PATH[:PROCESSESxTHREADS]]...

A step's PATH is a guest path, or serial:NAME for the disk of that serial
(a device of the topology, named so in the spec). Without --step,
profile-raid's steps. Writes only to steps among the workload volumes
(/dev/storlab/).
"""
import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import gated_fio  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

from storlab_cli.errors import UserError  # noqa: E402
from storlab_cli.schema.sizes import parse_size_bytes  # noqa: E402

import tcg_calibrate  # noqa: E402
import tcg_model_check  # noqa: E402

VOLUMES = "/dev/storlab/"
LIB = ". /usr/lib/storlab/profiles/lib.sh; "
RUNTIME_S = 12
RAMP_S, WINDOW_S = 3.0, 6.0
# profile-raid's node1 from its devices up (the sweep: 2 units of 2 volumes)
RAID_STEPS = ["ssd=serial:ssd0", "lun=serial:lun0", "md=/dev/md0", "lv=/dev/storlab/u1v1",
              "lv-2threads=/dev/storlab/u1v1:1x2", "lv-2x2=/dev/storlab/u1v1:2x2"]


def parse_step(text):
    """(name, path, processes, threads) of NAME=PATH[:PxT]."""
    name, sep, rest = text.partition("=")
    if not sep or not name or not rest:
        raise SystemExit(f"stack_cost: --step {text!r}: not NAME=PATH[:PROCESSESxTHREADS]")
    processes, threads, path = 1, 1, rest
    layout = re.fullmatch(r"(.+):(\d+)x(\d+)", rest)
    if layout:
        path, processes, threads = layout[1], int(layout[2]), int(layout[3])
    return name, path, processes, threads


def resolve(lab, node, path):
    """The guest's block device of a step's PATH; exits naming the step's
    path when there is none (fio would make a file of that name and
    measure it)."""
    what = f"disk_by_serial {path[7:]}" if path.startswith("serial:") else f"echo {path}"
    out = gated_fio.guest(lab, node, LIB + f'd=$({what}) && [ -b "$d" ] && echo "$d"').strip()
    if not out:
        raise SystemExit(f"stack_cost: {node}: {path}: no such block device")
    return out


def model_spec(spec_text, node, path, processes, threads, depth, size_bytes):
    """spec_text with node's front end one volume on the step: a raw
    device alone (serial:NAME), else the spec's own local storage; the
    node's workload processes x threads at depth. The model's volume is an
    LV: on a step the lab's fio drives below its LVs, its remap is not
    charged."""
    out = []
    for line in spec_text.splitlines():
        words = line.split()
        if len(words) > 1 and words[1] == node and words[0] in ("volume", "export"):
            continue
        if words[:2] == ["local", node] and path.startswith("serial:"):
            line = f"local {node} disk {path[7:]}"
        elif words[:2] == ["node", node]:
            lv = [] if path.startswith(VOLUMES) else ["per-linear-io-us=0"]
            line = " ".join([w for w in words if w.split("=")[0] not in
                             ("processes", "threads", "worker-depth")]
                            + [f"processes={processes}", f"threads={threads}",
                               f"worker-depth={depth}"] + lv)
        out.append(line)
    out += [f"volume {node} v {size_bytes}", f"export {node} at=0 size={size_bytes} volume=v"]
    return "\n".join(out) + "\n"


def model_job(op, depth, size_bytes, workers):
    return (f"[global]\nioengine=libaio\ndirect=1\nthread=1\nrw={op}\nbs=4k\n"
            f"iodepth={depth}\nsize={size_bytes}\ntime_based=1\nramp_time={RAMP_S:g}\n"
            f"runtime={WINDOW_S:g}\nnumjobs={workers}\n[w]\n")


def simulate(spec_text, job_text, node):
    """(IOPS, node's CPU µs per I/O, the hypervisor's, device I/Os per I/O)."""
    try:
        device = tcg_model_check.run_cluster(spec_text, job_text)["storlab"]["device"]
    except UserError as e:
        raise SystemExit(f"stack_cost: {e}") from None
    model = device["model"]
    front = sum(l["ops"]["read"]["count"] + l["ops"]["write"]["count"]
                for l in model["layers"] if l["kind"] == "front")
    devices = sum(l["ops"]["read"]["count"] + l["ops"]["write"]["count"]
                  for l in model["layers"] if l.get("layer") == "device")
    front = max(front, 1)
    hosts = {h["node"]: h["busy_ns"] for h in model["hosts"]}
    pool = model.get("host_pool") or {}
    hyper = (pool.get("busy_ns", 0) - sum(hosts.values())) / front / 1e3 if pool else None
    elapsed_s = model["layers"][0]["elapsed_ns"] / 1e9
    return front / elapsed_s, hosts.get(node, 0) / front / 1e3, hyper, devices / front


def main():
    usage = __doc__[__doc__.index("usage: ") + 7:].split("\n\n")[0]
    parser = argparse.ArgumentParser(usage=usage)
    parser.add_argument("lab")
    parser.add_argument("node")
    parser.add_argument("--op", default="randread")
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--size", default="16M")
    parser.add_argument("--step", action="append")
    parser.add_argument("--model", metavar="SPEC")
    args = parser.parse_args()
    steps = [parse_step(s) for s in (args.step or RAID_STEPS)]
    # a write below the volumes would overwrite what the lab built on them
    below = [name for name, path, _, _ in steps if not path.startswith(VOLUMES)]
    if "write" in args.op and below:
        raise SystemExit(f"stack_cost: --op {args.op}: steps {', '.join(below)} lie below the"
                         f" workload volumes ({VOLUMES}): writing them would break the lab's stack")
    spec_text = None
    if args.model:
        try:
            with open(args.model, encoding="utf-8") as f:
                spec_text = f.read()
        except OSError as e:
            raise SystemExit(f"stack_cost: --model {args.model}: cannot read ({e.strerror})")
    size_bytes = parse_size_bytes(args.size)
    if size_bytes is None:
        raise SystemExit(f"stack_cost: --size {args.size!r}: not a size (16M, 1G, bytes)")
    print(f"{args.lab} {args.node}: 4 KiB {args.op}, {args.depth} outstanding a worker,"
          f" {WINDOW_S:g} s window\n")
    columns = ["IOPS", "vCPU µs/IO", "hypervisor µs/IO", "device I/Os per I/O"]
    header = ["step", "device", "processes x threads"] + [f"lab {c}" for c in columns] \
        + ["host cores busy"] + ([f"model {c}" for c in columns] if spec_text else [])
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name, path, processes, threads in steps:
        device = resolve(args.lab, args.node, path)
        try:
            window = gated_fio.run(args.lab, {args.node: gated_fio.FioJob(
                device, args.op, args.depth, processes, threads, args.size)},
                RUNTIME_S, RAMP_S, WINDOW_S)
        except gated_fio.Failed as e:
            raise SystemExit(f"stack_cost: {name}: {e}") from None
        r = tcg_calibrate.Run(window)
        row = [name, device, f"{processes} x {threads}", f"{r.iops:.0f}",
               f"{r.vcpu_us.get(args.node, 0):.0f}", f"{r.host_us:.0f}",
               f"{sum(r.devices.values()):.2f}", f"{r.host_cores:.2f}"]
        if spec_text:
            m_iops, m_vcpu, m_hyper, m_devices = simulate(
                model_spec(spec_text, args.node, path, processes, threads, args.depth, size_bytes),
                model_job(args.op, args.depth, size_bytes, processes * threads), args.node)
            row += [f"{m_iops:.0f}", f"{m_vcpu:.0f}", "–" if m_hyper is None else f"{m_hyper:.0f}",
                    f"{m_devices:.2f}"]
        print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
