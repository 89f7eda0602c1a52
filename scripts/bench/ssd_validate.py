#!/usr/bin/python3
"""Validation of the SSD presets against their datasheets, in the simulator.

For every SSD preset: 4 KiB random read and write IOPS and 128 KiB
sequential read and write MB/s, fresh out of box (precondition=fob) and in
steady state (precondition=steady), with write amplification and the
model's memory.  Prints a markdown table and writes it to
scripts/bench/ssd_validation.md (committed; regenerate with this command).

Which state a datasheet figure is compared with:
  random read, sequential read   steady (datasheets read a full drive);
  random write                   steady for enterprise drives (they quote
                                 steady state), fresh for the consumer
                                 samsung-840evo-120g (its 35,000 IOPS is the
                                 TurboWrite burst);
  sequential write               fresh (datasheets precondition sequentially,
                                 so garbage collection moves nothing: the
                                 same write amplification of 1 as fresh).
Queue depth: 32 (SATA NCQ, the datasheets' QD32); NVMe datasheets quote
their IOPS at deep queues (128 or more), so NVMe drives run at QD128: at
QD32 a drive with ~60 us reads cannot exceed ~500,000 IOPS (Little's law).
Times are simulated seconds; the whole bench takes a minute or two.

usage: scripts/bench/ssd_validate.py [--sim PATH] [--seconds S] [--out FILE]
                                     [--presets a,b,...]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# Datasheet figures (storlab devices.md and the sources each preset cites):
# (random read IOPS, random write IOPS, sequential read MB/s, sequential
# write MB/s); None where no figure is confirmed.
DATASHEET = {
    "intel-s3700-400g": (75000, 36000, 500, 460),
    "intel-s3500-800g": (75000, 11500, 500, 450),
    "intel-p3700-400g": (450000, 75000, 2700, 1080),
    "micron-5100max-960g": (93000, 74000, 540, 520),
    "micron-5100eco-1920g": (93000, 24000, 540, 520),
    "micron-7300pro-3840g": (520000, None, 3000, 1900),
    "samsung-840evo-120g": (94000, 35000, 540, 410),
}
# Figures devices.md marks unconfirmed: (preset, workload index).
UNCONFIRMED = {("intel-s3500-800g", 0), ("intel-s3500-800g", 1), ("intel-s3500-800g", 2),
               ("intel-s3500-800g", 3), ("intel-p3700-400g", 1), ("intel-p3700-400g", 2),
               ("intel-p3700-400g", 3)}
CONSUMER = {"samsung-840evo-120g"}
NVME = {"intel-p3700-400g", "micron-7300pro-3840g"}

WORKLOADS = (
    # name, fio rw, bs, metric
    ("4K random read", "randread", "4k", "iops"),
    ("4K random write", "randwrite", "4k", "iops"),
    ("128K sequential read", "read", "128k", "mb_s"),
    ("128K sequential write", "write", "128k", "mb_s"),
)
TARGET_ERROR_PCT = 10.0


def fail(message):
    print(f"ssd_validate: {message}", file=sys.stderr)
    sys.exit(1)


def run_sim(sim, workdir, preset, state, rw, bs, depth, seconds):
    job = os.path.join(workdir, "job.fio")
    ramp = seconds / 4
    with open(job, "w", encoding="utf-8") as f:
        f.write(f"[{rw}]\nrw={rw}\nbs={bs}\niodepth={depth}\n"
                f"runtime={int(seconds * 1e6)}us\nramp_time={int(ramp * 1e6)}us\n"
                "time_based=1\n")
    cmd = [sim, "ssd", f"preset={preset}", f"precondition={state}", job]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        fail(f"{' '.join(cmd)}: {result.stderr.strip()}")
    doc = json.loads(result.stdout)
    side = doc["jobs"][0]["read" if "read" in rw else "write"]
    model = doc["storlab"]["device"]["model"]
    return {
        "iops": side["iops"],
        "mb_s": side["bw_bytes"] / 1e6,
        "wa": model["write_amplification"],
        "state_bytes": model["state_bytes"],
        "state_bytes_limit": model["state_bytes_limit"],
        "steady_wa": model["steady_write_amplification"],
        "physical_bytes": model["physical_bytes"],
        "block_bytes": model["block_bytes"],
        "dies": model["dies"],
        "wall_ios_per_s": doc["storlab"]["simulated_ios_per_wall_s"],
    }


def compared_state(preset, workload):
    if workload == "4K random write":
        return "fob" if preset in CONSUMER else "steady"
    if workload == "128K sequential write":
        return "fob"
    return "steady"


def fmt_value(value, metric):
    if value is None:
        return "–"
    return f"{value:,.0f}" if metric == "iops" else f"{value:,.0f}"


def mib(n):
    return f"{n / 2**20:,.1f} MiB"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sim", default=os.path.join(ROOT, "build", "emulator", "storlab-sim"),
                        help="storlab-sim binary (default build/emulator/storlab-sim)")
    parser.add_argument("--seconds", type=float, default=1.0,
                        help="simulated seconds measured per run (default 1)")
    parser.add_argument("--out", default=os.path.join(HERE, "ssd_validation.md"),
                        help="markdown file to write (default scripts/bench/ssd_validation.md)")
    parser.add_argument("--presets", default=",".join(DATASHEET),
                        help="comma-separated subset of the SSD presets")
    args = parser.parse_args()
    if not os.access(args.sim, os.X_OK):
        fail(f"--sim {args.sim}: not an executable (build it, or pass --sim)")
    presets = [p for p in args.presets.split(",") if p]
    for p in presets:
        if p not in DATASHEET:
            fail(f"--presets: unknown SSD preset '{p}'; known: {', '.join(DATASHEET)}")

    rows, memory, checks = [], [], []
    worst = 0.0
    with tempfile.TemporaryDirectory(prefix="ssd_validate.") as workdir:
        for preset in presets:
            depth = 128 if preset in NVME else 32
            results = {}
            for wi, (name, rw, bs, metric) in enumerate(WORKLOADS):
                for state in ("fob", "steady"):
                    results[(name, state)] = run_sim(args.sim, workdir, preset, state, rw, bs,
                                                     depth, args.seconds)
                sheet = DATASHEET[preset][wi]
                state = compared_state(preset, name)
                sim_value = results[(name, state)][metric]
                error = None if sheet is None else 100.0 * (sim_value - sheet) / sheet
                if error is not None:
                    worst = max(worst, abs(error))
                wa = (results[(name, "fob")]["wa"], results[(name, "steady")]["wa"])
                rows.append((preset, name, depth, metric, sheet,
                             results[(name, "fob")][metric], results[(name, "steady")][metric],
                             "fresh" if state == "fob" else state, error,
                             wa if "write" in name else None, (preset, wi) in UNCONFIRMED))
            steady = results[("4K random write", "steady")]
            memory.append((preset, steady["dies"], steady["block_bytes"], steady["physical_bytes"],
                           steady["steady_wa"], steady["state_bytes"],
                           steady["state_bytes_limit"]))
            fresh_w = results[("4K random write", "fob")]["iops"]
            steady_w = steady["iops"]
            checks.append((preset, fresh_w, steady_w, steady_w / fresh_w))

    lines = []
    out = lines.append
    out("## SSD presets vs datasheets (storlab-sim, virtual time)")
    out("")
    out(f"Generated by `scripts/bench/ssd_validate.py` ({args.seconds:g} simulated s per run "
        "after a quarter of that as ramp). `fresh` = precondition=fob, `steady` = "
        "precondition=steady (synthesised state after long 4 KiB random overwrite). "
        "The datasheet figure is compared with the state it is quoted for (column `vs`): "
        "reads and enterprise random writes steady, sequential writes and the consumer "
        "drive's burst random writes fresh. WA = NAND pages programmed / host pages "
        "written during the run (fresh / steady). IOPS at 4 KiB, MB/s (10^6 B/s) at "
        "128 KiB; QD32 for SATA, QD128 for NVMe (whose datasheets quote deep queues).")
    out("")
    out("| preset | workload | QD | datasheet | fresh | steady | vs | error | WA fresh / steady |")
    out("|---|---|---|---|---|---|---|---|---|")
    for (preset, name, depth, metric, sheet, fresh, steady, state, error, wa, unconf) in rows:
        unit = " IOPS" if metric == "iops" else " MB/s"
        err = "–" if error is None else f"{error:+.1f}%" + ("" if abs(error) <= TARGET_ERROR_PCT else " ✗")
        wa_text = "" if wa is None else f"{wa[0]:.2f} / {wa[1]:.2f}"
        mark = " *" if unconf else ""
        out(f"| {preset} | {name} | {depth} | {fmt_value(sheet, metric)}{unit if sheet else ''}{mark} "
            f"| {fmt_value(fresh, metric)} | {fmt_value(steady, metric)} | {state} | {err} "
            f"| {wa_text} |")
    out("")
    out("\\* figure not confirmed from a datasheet (devices.md: \"unconf.\"); – none known.")
    out("")
    out(f"Largest error against a datasheet figure: {worst:.1f}% (target: within "
        f"{TARGET_ERROR_PCT:.0f}%).")
    out("")
    out("### Steady vs fresh random writes")
    out("")
    out("| preset | fresh IOPS | steady IOPS | steady / fresh |")
    out("|---|---|---|---|")
    for preset, fresh_w, steady_w, ratio in checks:
        out(f"| {preset} | {fresh_w:,.0f} | {steady_w:,.0f} | {ratio:.2f} |")
    out("")
    out("### Model memory (precondition=steady)")
    out("")
    out("`state` is what the model holds at start; `limit` what it holds at most, once "
        "the exact map (exact-map-size, default 16 GiB of data) is full.")
    out("")
    out("| preset | dies | FTL block | physical | predicted steady WA | state | limit |")
    out("|---|---|---|---|---|---|---|")
    for preset, dies, block, physical, steady_wa, state_bytes, limit in memory:
        out(f"| {preset} | {dies} | {mib(block)} | {physical / 1e9:,.1f} GB | {steady_wa:.2f} "
            f"| {mib(state_bytes)} | {mib(limit)} |")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
