"""A sweep's results directory: layout, manifest, resume bookkeeping.
The layout is in /work docs and README ("Sweeps"): points/NNN/ per point
with its raw files and a `done` marker written last, points.csv rebuilt
from the finished points, plots/ and index.html rendered from the CSVs."""
import datetime
import json
import os
import platform
import shutil
import subprocess

from storlab_cli import paths
from storlab_cli.errors import UserError

SWEEP_COPY = "sweep.toml"
# a lab sweep's simulator prediction: a results directory of its own inside
SIM_DIR = "sim"


def default_dir(sweep):
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    return os.path.join(os.getcwd(), "results", f"{sweep.name}-{stamp}")


def point_dir(out, point):
    return os.path.join(out, "points", f"{point.index:03d}")


def point_done(out, point):
    return os.path.exists(os.path.join(point_dir(out, point), "done"))


def prepare(out, sweep_path):
    """Creates DIR, or checks it holds this very sweep file (resume)."""
    with open(sweep_path, "rb") as f:
        text = f.read()
    copy = os.path.join(out, SWEEP_COPY)
    if os.path.exists(copy):
        with open(copy, "rb") as f:
            if f.read() != text:
                raise UserError(f"{out}: holds the results of a different sweep file "
                                f"(its {SWEEP_COPY} differs from {sweep_path}); "
                                "give another --out")
        return True
    if os.path.isdir(out) and os.listdir(out):
        raise UserError(f"{out}: exists and is not a sweep results directory; give another --out")
    try:
        os.makedirs(os.path.join(out, "points"), exist_ok=True)
    except OSError as e:
        raise UserError(f"{out}: cannot create: {e.strerror}") from None
    with open(copy + ".tmp", "wb") as f:
        f.write(text)
    os.replace(copy + ".tmp", copy)
    return False


def fresh_point_dir(out, point):
    """An empty directory for a point; what an interrupted run left goes."""
    directory = point_dir(out, point)
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    return directory


def keep_points_of(out, points, inputs, record):
    """out's finished points kept only when they were made from these
    inputs (a JSON value), as out/record says; else they go (a record
    missing beside finished points is taken as other inputs), and the
    record becomes these. True when points went."""
    path = os.path.join(out, record)
    inputs = json.loads(json.dumps(inputs))
    try:
        with open(path, encoding="utf-8") as f:
            before = json.load(f)
    except (OSError, ValueError):
        before = None
    dropped = before != inputs and any(point_done(out, p) for p in points)
    if dropped:
        for point in points:
            shutil.rmtree(point_dir(out, point), ignore_errors=True)
    write_json(path, inputs)
    return dropped


def mark_done(directory):
    with open(os.path.join(directory, "done"), "w", encoding="utf-8") as f:
        f.write(datetime.datetime.now(datetime.timezone.utc).isoformat() + "\n")


def write_json(path, doc):
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, sort_keys=False)
        f.write("\n")
    os.replace(path + ".tmp", path)


def _first_line(argv):
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = (result.stdout or result.stderr).strip().splitlines()
    return lines[0] if lines else None


def revision():
    return _first_line(["git", "-C", paths.SOURCE_DIR, "describe", "--always", "--dirty"]) \
        or "unknown"


def host_facts():
    memory_bytes = None
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            memory_bytes = int(f.readline().split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    os_name = None
    try:
        with open("/etc/os-release", encoding="utf-8") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    os_name = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return {"cpus": os.cpu_count(), "memory_bytes": memory_bytes, "os": os_name,
            "machine": platform.machine()}


def tool_versions():
    return {"qemu": _first_line(["qemu-system-x86_64", "--version"]),
            "nbdkit": _first_line(["nbdkit", "--version"]),
            "fio": _first_line(["fio", "--version"]),
            "gnuplot": _first_line(["gnuplot", "--version"]),
            "host_kernel": platform.release()}


def manifest(sweep, topo, backend, facts, points_done):
    versions = tool_versions()
    versions.update(facts.get("versions", {}))
    return {
        "name": sweep.name, "description": sweep.description, "backend": backend,
        "created_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "revision": revision(), "sweep_file": os.path.abspath(sweep.path),
        "topology": {"path": topo.path, "name": topo.name},
        "swept": sweep.swept, "plot": {"x": sweep.plot_x, "series": sweep.plot_series,
                                       "per_node": sweep.plot_per_node,
                                       "x_per_host": sweep.plot_x_per_host,
                                       "mark": sweep.plot_mark, "names": sweep.plot_names},
        "workload": sweep.workload, "phases": sweep.phases,
        "points": [{"index": p.index, "params": p.params, "label": p.label,
                    "events": [vars(e) for e in p.events]} for p in sweep.points],
        "versions": versions, "accelerator": facts.get("accelerator"), "host": host_facts(),
        "points_total": len(sweep.points), "points_done": points_done,
    }
