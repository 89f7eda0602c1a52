"""storlab studies — the shipped studies (topologies/studies/*.toml): which
seed scenario and figure each reproduces, its points, how long it took in
the simulator at full scale here, and whether a lab can run it (at what
scale). Everything comes from the files' [study] tables (schema/study.py)."""
import glob
import json
import os

from storlab_cli import paths
from storlab_cli.common import cli_args, text_table
from storlab_cli.lab import host_fit
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


def lab_need_mib(sweep):
    """(memory, disk) MiB the study's lab needs at its scale under TCG
    (lab/host_fit.py; disk: device_data = "disk"), or (None, None)."""
    if not sweep.study.lab_scale:
        return None, None
    return host_fit.sweep_need_mib(sweep_schema.load(sweep.path, backend="lab"))


def lab_text(study, need):
    if not study.lab_scale:
        return "no"
    memory_mib, disk_mib = need
    return (f"scale {study.lab_scale:g}, {memory_mib / 1024:.0f} GiB"
            + (f" + {disk_mib / 1024:.0f} GiB on disk" if disk_mib else "")
            + (f", {wall_text(study.lab_wall_s)}" if study.lab_wall_s else ""))


def too_big(sweeps, need, available):
    """The studies whose lab this host cannot hold: its memory (available
    MiB), or the disk under its labs' data directory."""
    free_disk = host_fit.local_free_disk_mib()
    return [
        s.name for s in sweeps
        if (need[s.name][0] or 0) > available - host_fit.HOST_RESERVE_MIB
        or (free_disk is not None
            and (need[s.name][1] or 0) > free_disk - host_fit.DISK_RESERVE_MIB)]


def as_json(sweep, need):
    memory_mib, disk_mib = need
    study = sweep.study
    return {"name": sweep.name, "file": os.path.relpath(sweep.path, paths.SOURCE_DIR),
            "scenario": study.scenario, "figure": study.figure, "points": len(sweep.points),
            "swept": sweep.swept, "sim_wall_s": study.sim_wall_s,
            "lab_scale": study.lab_scale, "lab_wall_s": study.lab_wall_s,
            "lab_memory_mib": memory_mib, "lab_disk_mib": disk_mib,
            "deviation": study.deviation,
            "description": sweep.description}


def run(argv):
    p = cli_args.Parser(prog="storlab studies",
                        description="list the shipped studies: what each reproduces and how "
                                    "long it takes")
    p.add_argument("--json", action="store_true", help="one JSON document instead of a table")
    a = p.parse_args(argv)
    sweeps = [s for s in load_all() if s.study]
    need = {s.name: lab_need_mib(s) for s in sweeps}
    if a.json:
        print(json.dumps([as_json(s, need[s.name]) for s in sweeps], indent=2))
        return 0
    rows = [(s.name, str(s.study.scenario), s.study.figure, str(len(s.points)),
             wall_text(s.study.sim_wall_s),
             lab_text(s.study, need[s.name]))
            for s in sweeps]
    for line in text_table.lines(("study", "scenario", "figure", "points", "sim (full size)",
                                  "lab (its scale, memory, wall time)"), rows, align="lrlrrl"):
        print(line)
    available = host_fit.local_available_mib()
    if available is not None:
        big = too_big(sweeps, need, available)
        print(f"\nthis host has {available / 1024:.0f} GiB available: "
              + (f"{', '.join(big)} would not fit in a lab here (a larger --scale, "
                 "or a host with more memory or disk)" if big else "every lab fits"))
    print(f"\nrun one: storlab sweep {os.path.relpath(STUDIES_DIR)}/NAME.toml "
          "(simulator, full size; --backend lab: a lab at its scale)")
    deviations = [s for s in sweeps if s.study.deviation]
    if deviations:
        print("where a study differs from the published one:")
        for s in deviations:
            print(f"  {s.name}: {s.study.deviation}")
    return 0
