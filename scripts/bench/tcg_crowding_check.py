#!/usr/bin/python3
"""The cluster model against scripts/bench/tcg_crowding.py's runs (issue
14): calibrate-crowding.toml's four guests on the host's cores, each busy
one driving its bare disk at once, as the model predicts them with a host
file's figures (tcg_calibrate.py --host-file and tcg_crowding.py
--host-file write one).  The crowding runs check what no calibration run
does alone: guests that take turns on the host's cores (the pool), where
the model charges a vCPU woken from idle crowded-wake-us more for each
busy vCPU a core runs beyond one, and a busy host's work busy-host-share
of its figures.

Per row (the median of the runs' passes): fio's IOPS of all busy guests,
their vCPUs' µs an I/O and the hypervisor's (QEMU's other threads and
nbdkit), lab and model, and each against its own one-busy-guest row.
The lab's fio drives each guest's disk itself: the model's volume is
given no LV remap (per-linear-io-us=0).

usage: scripts/bench/tcg_crowding_check.py CROWDING_JSON HOST_FILE
"""
import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

from storlab_cli.errors import UserError  # noqa: E402

import tcg_crowding  # noqa: E402
import tcg_model_check  # noqa: E402
from tcg_model_check import RUNTIME_S, RAMP_S, load_inputs  # noqa: E402

SIZE_MIB = 64              # gated_fio.FioJob's size: what each guest's fio covers


def spec(preset, words, cores, busy, threads, depth):
    nodes = [f"node{i}" for i in range(1, tcg_crowding.NODES + 1)]
    lines = ["storlab-cluster 1", f"pool cores={cores}"]
    lines += [f"node {n} host={preset} {' '.join(words)} per-linear-io-us=0 cores=1"
              f" threads={threads} worker-depth={depth}" for n in nodes]
    lines += [f"device {n} disk0 hdd preset=sas10k-300g size=256M timing=off" for n in nodes]
    lines += [f"link {a} {b} preset=tcg-udp" for i, a in enumerate(nodes) for b in nodes[i + 1:]]
    lines += [f"local {n} disk disk0" for n in nodes]
    lines += [f"volume {n} v {SIZE_MIB}M" for n in nodes]
    lines += [f"export {n} at={i * SIZE_MIB}M size={SIZE_MIB}M volume=v"
              for i, n in enumerate(nodes[:busy])]
    return "\n".join(lines) + "\n"


def job(op, busy, threads, depth):
    text = (f"[global]\nioengine=libaio\ndirect=1\nthread=1\nrw={op}\nbs=4k\n"
            f"iodepth={depth}\ntime_based=1\nruntime={RUNTIME_S}\nramp_time={RAMP_S}\n")
    for i in range(busy):
        for t in range(threads):
            text += (f"[node{i + 1}-w{t + 1}]\noffset={i * SIZE_MIB}M\nsize={SIZE_MIB}M\n"
                     f"randseed={1000 + i * threads + t}\n")
    return text


def simulate(spec_text, job_text):
    """(IOPS, vCPU µs an I/O of all nodes, hypervisor µs an I/O)."""
    iops, vcpu, hypervisor = tcg_model_check.simulate(spec_text, job_text)
    return iops, sum(vcpu.values()), hypervisor


def lab_rows(doc):
    """{(op, threads, depth, busy): (IOPS, vCPU µs/IO, hypervisor µs/IO)},
    each the median over the passes."""
    by_key = {}
    for row in doc["rows"]:
        key = (row["op"], row["threads"], row["depth"], row["busy"])
        by_key.setdefault(key, []).append(row)
    return {key: tuple(statistics.median(r[f] for r in rows)
                       for f in ("iops", "vcpu_us", "hypervisor_us"))
            for key, rows in by_key.items()}


def load(path):
    """The runs' rows (lab_rows) and the host's cores they ran on."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    return lab_rows(doc), int(doc["cores"])


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    crowding, host_file = sys.argv[1:]
    (lab, cores), preset, words = load_inputs("tcg_crowding_check", crowding, load,
                                              "tcg_crowding.py", host_file)
    print(f"Lab: {crowding} ({cores} host cores); model: {host_file}\n")
    print("| op | threads x qd | busy guests | lab IOPS | model IOPS | lab vCPU µs/IO | x alone |"
          " model | x alone | lab hypervisor µs/IO | x alone | model | x alone |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    alone = {}
    for key in sorted(lab, key=lambda k: (k[0], k[1], k[2], k[3])):
        op, threads, depth, busy = key
        try:
            model = simulate(spec(preset, words, cores, busy, threads, depth),
                             job(op, busy, threads, depth))
        except UserError as e:
            sys.exit(f"tcg_crowding_check: {op} {threads}x{depth} on {busy}: {e}")
        if busy == 1:
            alone[op, threads, depth] = (lab[key], model)
        base_lab, base_model = alone.get((op, threads, depth), (lab[key], model))

        def x(value, base):
            return f"{value / base:.2f}" if base else "–"
        print(f"| {op} | {threads}x{depth} | {busy} | {lab[key][0]:.0f} | {model[0]:.0f} |"
              f" {lab[key][1]:.0f} | {x(lab[key][1], base_lab[1])} |"
              f" {model[1]:.0f} | {x(model[1], base_model[1])} |"
              f" {lab[key][2]:.0f} | {x(lab[key][2], base_lab[2])} |"
              f" {model[2]:.0f} | {x(model[2], base_model[2])} |")


if __name__ == "__main__":
    main()
