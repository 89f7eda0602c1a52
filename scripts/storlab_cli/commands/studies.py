"""storlab studies — the shipped studies (topologies/studies/*.toml): which
seed scenario and figure each reproduces, its points, how long it took in
the simulator at full scale here, and whether a lab can run it (at what
scale). Everything comes from the files' [study] tables (schema/study.py)."""
import glob
import json
import os

from storlab_cli import paths
from storlab_cli.common import cli_args, text_table
from storlab_cli.schema import sweep as sweep_schema

STUDIES_DIR = os.path.join(paths.SOURCE_DIR, "topologies", "studies")


def load_all(directory=STUDIES_DIR):
    """Every study file's sweep, by scenario then name."""
    sweeps = [sweep_schema.load(path) for path in sorted(glob.glob(os.path.join(directory,
                                                                               "*.toml")))]
    return sorted(sweeps, key=lambda s: (s.study.scenario if s.study else 0, s.name))


def wall_text(seconds):
    if seconds is None:
        return "not measured"
    return f"{seconds} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def lab_text(study):
    if not study.lab_scale:
        return "no"
    return f"scale {study.lab_scale:g}" + (f", {wall_text(study.lab_wall_s)}"
                                           if study.lab_wall_s else "")


def as_json(sweep):
    study = sweep.study
    return {"name": sweep.name, "file": os.path.relpath(sweep.path, paths.SOURCE_DIR),
            "scenario": study.scenario, "figure": study.figure, "points": len(sweep.points),
            "swept": sweep.swept, "sim_wall_s": study.sim_wall_s,
            "lab_scale": study.lab_scale, "lab_wall_s": study.lab_wall_s,
            "deviation": study.deviation,
            "description": sweep.description}


def run(argv):
    p = cli_args.Parser(prog="storlab studies",
                        description="list the shipped studies: what each reproduces and how "
                                    "long it takes")
    p.add_argument("--json", action="store_true", help="one JSON document instead of a table")
    a = p.parse_args(argv)
    sweeps = [s for s in load_all() if s.study]
    if a.json:
        print(json.dumps([as_json(s) for s in sweeps], indent=2))
        return 0
    rows = [(s.name, str(s.study.scenario), s.study.figure, str(len(s.points)),
             wall_text(s.study.sim_wall_s),
             lab_text(s.study))
            for s in sweeps]
    for line in text_table.lines(("study", "scenario", "figure", "points", "sim (full size)",
                                  "lab (its scale, wall time)"), rows, align="lrlrrl"):
        print(line)
    print(f"\nrun one: storlab sweep {os.path.relpath(STUDIES_DIR)}/NAME.toml "
          "(simulator, full size; --backend lab: a lab at its scale)")
    deviations = [s for s in sweeps if s.study.deviation]
    if deviations:
        print("where a study differs from the published one:")
        for s in deviations:
            print(f"  {s.name}: {s.study.deviation}")
    return 0
