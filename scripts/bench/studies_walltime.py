#!/usr/bin/python3
"""Wall time of each shipped study (topologies/studies/) in the simulator at
full scale on this host (issue 16's benchmark: all of scenario 2 within 15
minutes on 2 cores), or in a lab at the study's lab scale. Each study runs
through `storlab sweep --backend sim|lab` into a scratch directory, points
side by side as the sweep runs them (a lab: one after the other, its labs
brought up and down by the sweep, the prediction left out); the table gives
the wall time, the points and the wall time a point, with a total per
scenario.

  scripts/bench/studies_walltime.py                 every study
  scripts/bench/studies_walltime.py hybrid-ftt ...  those (names or files)
  scripts/bench/studies_walltime.py --update        and write each measured
                                    time into its file's [study] sim_wall_s
                                    (lab_wall_s with --backend lab)
  scripts/bench/studies_walltime.py --backend lab NAME ...   in a lab, at
                                    each study's lab_scale (studies with
                                    none are left out)
  scripts/bench/studies_walltime.py --keep DIR      keep each study's results
                                    directory (DIR/NAME: figures, report)
  scripts/bench/studies_walltime.py --report FILE   reprint a saved run

It saves results/studies-walltime-STAMP.json."""
import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SOURCE, "scripts"))

from storlab_cli.commands import studies  # noqa: E402
from storlab_cli.common import text_table  # noqa: E402

STORLAB = os.path.join(SOURCE, "scripts", "storlab")
WALL_KEYS = {"sim": "sim_wall_s", "lab": "lab_wall_s"}
SCENARIO_2_TARGET_S = 15 * 60


def run_study(sweep, scratch, keep, backend):
    out = os.path.join(keep or scratch, sweep.name)
    started = time.monotonic()
    extra = ["--no-predict"] if backend == "lab" else []
    result = subprocess.run(["/usr/bin/python3", STORLAB, "sweep", sweep.path, "--backend", backend,
                             "--out", out, *extra], capture_output=True, text=True, check=False)
    wall_s = time.monotonic() - started
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise SystemExit(f"studies_walltime: {sweep.name} failed: {last}")
    if not keep:
        shutil.rmtree(out, ignore_errors=True)
    return wall_s


def update_file(path, wall_s, backend):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    key = WALL_KEYS[backend]
    line = f"{key} = {max(1, round(wall_s))}"
    existing = re.compile(rf"^{key} = \d+$", re.M)
    after_scale = re.compile(r"^lab_scale = .*$", re.M)
    if existing.search(text):
        text = existing.sub(line, text, count=1)
    elif backend == "lab" and after_scale.search(text):
        # beside the scale it ran at (a lab's wall time needs it)
        text = after_scale.sub(lambda m: f"{m.group(0)}\n{line}", text, count=1)
    elif "\n[study]\n" in text:
        text = text.replace("\n[study]\n", f"\n[study]\n{line}\n", 1)
    else:
        raise SystemExit(f"studies_walltime: {path}: no [study] table to record it in")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def report(record):
    rows, by_scenario = [], {}
    for r in record["studies"]:
        rows.append((r["name"], str(r["scenario"]), str(r["points"]), f"{r['wall_s']:.0f}",
                     f"{r['wall_s'] / r['points']:.1f}"))
        by_scenario[r["scenario"]] = by_scenario.get(r["scenario"], 0) + r["wall_s"]
    where = ("in a lab at each study's lab scale" if record.get("backend") == "lab"
             else "in the simulator at full scale")
    print(f"studies {where}, {record['cpus']} cores, "
          f"{record['date']}, load average {record['load_average']:.1f} at the start")
    for line in text_table.lines(("study", "scenario", "points", "wall s", "s/point"), rows):
        print(line)
    print()
    for scenario, wall_s in sorted(by_scenario.items()):
        note = ""
        if scenario == 2 and record.get("backend", "sim") == "sim":
            note = (f"  (target: {SCENARIO_2_TARGET_S / 60:.0f} min: "
                    f"{'met' if wall_s <= SCENARIO_2_TARGET_S else 'missed'})")
        print(f"scenario {scenario}: {wall_s / 60:.1f} min{note}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", help="study names or files (default: all)")
    p.add_argument("--update", action="store_true",
                   help="write each measured wall time into its study file")
    p.add_argument("--keep", metavar="DIR", help="keep each study's results in DIR/NAME")
    p.add_argument("--backend", choices=sorted(WALL_KEYS), default="sim",
                   help="the simulator at full scale (default) or a lab at the study's lab scale")
    p.add_argument("--report", metavar="FILE", help="reprint a saved run")
    a = p.parse_args()
    if a.report:
        with open(a.report, encoding="utf-8") as f:
            report(json.load(f))
        return 0
    chosen = [s for s in studies.load_all() if s.study]
    if a.names:
        wanted = {os.path.splitext(os.path.basename(n))[0] for n in a.names}
        chosen = [s for s in chosen if s.name in wanted or
                  os.path.splitext(os.path.basename(s.path))[0] in wanted]
        if len(chosen) != len(wanted):
            raise SystemExit(f"studies_walltime: unknown study among {', '.join(sorted(wanted))}")
    if a.backend == "lab":
        chosen = [s for s in chosen if s.study.lab_scale]
    stamp = datetime.datetime.now(datetime.timezone.utc)
    record = {"date": stamp.strftime("%Y-%m-%d %H:%M UTC"), "cpus": os.cpu_count(),
              "backend": a.backend,
              "load_average": os.getloadavg()[0], "studies": []}
    with tempfile.TemporaryDirectory(prefix="storlab-studies-") as scratch:
        for sweep in chosen:
            wall_s = run_study(sweep, scratch, a.keep, a.backend)
            print(f"{sweep.name}: {wall_s:.0f} s", file=sys.stderr, flush=True)
            record["studies"].append({"name": sweep.name, "file": os.path.relpath(sweep.path, SOURCE),
                                      "scenario": sweep.study.scenario,
                                      "points": len(sweep.points), "wall_s": wall_s})
            if a.update:
                update_file(sweep.path, wall_s, a.backend)
    os.makedirs(os.path.join(SOURCE, "results"), exist_ok=True)
    saved = os.path.join(SOURCE, "results", f"studies-walltime-{stamp:%Y%m%d-%H%M%S}.json")
    with open(saved, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=2)
    report(record)
    print(f"\nsaved: {saved}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
