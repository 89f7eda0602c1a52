#!/usr/bin/python3
"""Benchmarks of issue 2 (engine + HDD model + hdd plugin + storlab-sim).

Prints one markdown table to paste: fidelity (what fio sees through the
plugin vs the model's own latencies, beside nbdkit's delay filter set to the
same mean), plugin overhead vs nbdkit's memory plugin, simulator speed, and
the 10k SAS preset's accuracy in the simulator and through the plugin.
Everything is measured back to back in one run: compare ratios, not
absolute figures, on a shared machine.

usage: scripts/bench/hdd_bench.py [--seconds N]   (after scripts/storlab check or demo)
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
from storlab_cli.errors import UserError  # noqa: E402

PRESET = "preset=sas10k-300g"


def fio(uri, workdir, name, extra):
    out = os.path.join(workdir, name + ".json")
    cmd = ["fio", f"--name={name}", "--ioengine=nbd", f"--uri={uri}",
           "--output-format=json", f"--output={out}"] + extra
    result = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=workdir)
    if result.returncode != 0:
        raise UserError(f"fio {name}: {result.stderr.strip()}")
    return fio_results.load(out)


def clat(doc, direction="read"):
    side = doc["jobs"][0][direction]
    c = side["clat_ns"]
    return {"iops": side["iops"], "mean_ns": c["mean"],
            "p99_ns": c["percentile"]["99.000000"]}


def model_latency(stats_path, direction="read"):
    out = subprocess.run([paths.stats_tool(), stats_path], capture_output=True,
                         text=True, check=True).stdout
    device = json.loads(out)["devices"][0]
    op = device["ops"][direction]
    lat = op["latency_ns"]
    late = device["realtime"]["release_lateness_ns"]["percentiles"]["99"]
    return {"mean_ns": lat["mean"], "p99_ns": lat["percentiles"]["99"], "count": op["count"],
            "late_p99_ns": late}


def simulate(workdir, params, job_lines):
    job = os.path.join(workdir, "sim.fio")
    with open(job, "w", encoding="utf-8") as f:
        f.write("\n".join(job_lines) + "\n")
    result = subprocess.run([paths.simulator(), "hdd"] + params + [job],
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise UserError(f"storlab-sim: {result.stderr.strip()}")
    return json.loads(result.stdout)


def pct(a, b):
    return 100.0 * (a - b) / b if b else float("nan")


def plugin_run(workdir, name, params, qd, seconds):
    """fio through the hdd plugin; (model latency from the stats file, fio clat)."""
    stats = os.path.join(workdir, f"{name}.stats")
    with Nbdkit(workdir, "hdd", params + [f"stats={stats}"], threads=max(64, qd + 16)) as server:
        doc = fio(server.uri, workdir, name,
                  ["--rw=randread", "--bs=4k", f"--iodepth={qd}",
                   f"--runtime={seconds}", "--time_based=1"])
        model = model_latency(stats)
    return model, clat(doc)


def delay_filter_run(workdir, mean_ns, seconds):
    """nbdkit's memory plugin behind its delay filter, asked for mean_ns."""
    with Nbdkit(workdir, "memory", ["size=1G", f"rdelay={mean_ns / 1e6:.3f}ms"],
                options=["--filter=delay"]) as server:
        doc = fio(server.uri, workdir, "delay",
                  ["--rw=randread", "--bs=4k", "--iodepth=1",
                   f"--runtime={seconds}", "--time_based=1"])
    target = {"mean_ns": mean_ns, "p99_ns": mean_ns}
    return target, clat(doc)


def fidelity_rows(workdir, seconds):
    rows = []
    for qd in (1, 32, 256):
        model, seen = plugin_run(workdir, f"fid{qd}", [PRESET], qd, seconds)
        rows.append((f"hdd plugin, sas10k-300g, 4K randread QD{qd}", model, seen))
        if qd == 1:
            target, seen = delay_filter_run(workdir, model["mean_ns"], seconds)
            rows.append(("nbdkit delay filter, same mean, QD1", target, seen))
    model, seen = plugin_run(workdir, "fixed1ms", [PRESET, "fixed-latency-us=1000"], 1, seconds)
    rows.append(("hdd plugin, fixed-latency-us=1000, QD1", model, seen))
    target, seen = delay_filter_run(workdir, 1e6, seconds)
    rows.append(("nbdkit delay filter, rdelay=1ms, QD1", target, seen))
    return rows


def overhead_rows(workdir, seconds, runs):
    results = {"memory": [], "hdd timing=off": []}
    for _ in range(runs):        # alternate to share the machine's noise fairly
        for label, kind, params in (("memory", "memory", ["size=1G"]),
                                    ("hdd timing=off", "hdd", ["size=1G", "timing=off"])):
            with Nbdkit(workdir, kind, params) as server:
                doc = fio(server.uri, workdir, "ovh",
                          ["--rw=randread", "--bs=4k", "--iodepth=16",
                           f"--runtime={seconds}", "--time_based=1"])
            results[label].append(clat(doc)["iops"])
    return {k: sum(v) / len(v) for k, v in results.items()}


def simulator_speed(workdir):
    rows = []
    for label, params, depth in (("fixed 0 latency (timing=off), QD32", [PRESET, "timing=off"], 32),
                                 ("hdd sas10k-300g, QD1", [PRESET], 1),
                                 ("hdd sas10k-300g, QD32", [PRESET], 32)):
        doc = simulate(workdir, params, ["[speed]", "rw=randread", "bs=4k",
                                         f"iodepth={depth}", "number_ios=2000000"])
        rows.append((label, doc["storlab"]["simulated_ios_per_wall_s"]))
    return rows


def print_fidelity(fid):
    print("\n### Fidelity: what fio sees vs the model's own latency\n")
    print("| path | model mean µs | fio mean µs | Δ mean | model p99 µs | fio p99 µs | Δ p99 "
          "| plugin release lateness p99 µs |")
    print("|---|---|---|---|---|---|---|---|")
    for label, model, seen in fid:
        late = model.get("late_p99_ns")
        late_text = f"{late/1e3:.0f}" if late is not None else "–"
        print(f"| {label} | {model['mean_ns']/1e3:.0f} | {seen['mean_ns']/1e3:.0f} | "
              f"{pct(seen['mean_ns'], model['mean_ns']):+.1f}% | {model['p99_ns']/1e3:.0f} | "
              f"{seen['p99_ns']/1e3:.0f} | {pct(seen['p99_ns'], model['p99_ns']):+.1f}% | {late_text} |")


def print_overhead(ovh, runs):
    print(f"\n### Overhead: 4K randread QD16, IOPS (mean of {runs} alternating runs)\n")
    print("| nbdkit memory | hdd timing=off | ratio |\n|---|---|---|")
    print(f"| {ovh['memory']:.0f} | {ovh['hdd timing=off']:.0f} | "
          f"{ovh['hdd timing=off']/ovh['memory']:.3f} |")


def print_speed(speed):
    print("\n### Simulator speed (4K randread, 2 M I/Os, one core)\n")
    print("| model | simulated I/Os per wall second |\n|---|---|")
    for label, rate in speed:
        print(f"| {label} | {rate/1e6:.2f} M |")


def print_accuracy(workdir, fid):
    sims = {qd: clat(simulate(workdir, [PRESET], ["[a]", "rw=randread", "bs=4k",
                                                  f"iodepth={qd}", "runtime=60", "time_based=1"]))
            for qd in (1, 32)}
    plugin = {qd: next(s for label, _, s in fid if label.endswith(f"randread QD{qd}"))
              for qd in (1, 32)}
    print("\n### Accuracy: sas10k-300g, 4K random read over the full stroke "
          "(target 125–160 IOPS at QD1)\n")
    print("| QD | sim IOPS | plugin IOPS | plugin/sim |\n|---|---|---|---|")
    for qd in (1, 32):
        s, p = sims[qd], plugin[qd]
        print(f"| {qd} | {s['iops']:.1f} | {p['iops']:.1f} | {p['iops']/s['iops']:.3f} |")


SECTIONS = ("fidelity", "overhead", "speed")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=20, help="per fio run (default 20)")
    parser.add_argument("--runs", type=int, default=2, help="overhead alternations (default 2)")
    parser.add_argument("--only", choices=SECTIONS, action="append",
                        help="run just this section (repeatable); accuracy comes with fidelity")
    args = parser.parse_args()
    sections = args.only or SECTIONS
    with tempfile.TemporaryDirectory(prefix="storlab-bench-") as workdir:
        if "fidelity" in sections:
            fid = fidelity_rows(workdir, args.seconds)
            print_fidelity(fid)
            print_accuracy(workdir, fid)
        if "overhead" in sections:
            print_overhead(overhead_rows(workdir, max(5, args.seconds // 2), args.runs), args.runs)
        if "speed" in sections:
            print_speed(simulator_speed(workdir))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except UserError as e:
        print(f"hdd_bench: {e}", file=sys.stderr)
        sys.exit(1)
