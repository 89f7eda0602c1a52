"""`storlab sweep FILE`: run every point of a sweep on a lab or in the
simulator, keep each finished point on disk, and render plots and a report.

A point is finished when its `done` marker exists; rerunning the same
sweep into the same directory resumes at the first point without one, so
Ctrl-C or a crash loses nothing measured."""
import argparse
import concurrent.futures
import contextlib
import dataclasses
import json
import os
import sys
import threading
import time

from storlab_cli import catalog, deps
from storlab_cli.commands import plot
from storlab_cli.common import cli_args
from storlab_cli.lab import lifecycle
from storlab_cli.results import directory as results, host_limit
from storlab_cli.schema import sim_host_file, sweep as sweep_schema
from storlab_cli.schema.topology import SimHost
from storlab_cli.sweep import parts as sweep_parts, plan as sweep_plan, point_result
from storlab_cli.sweep.backends import lab as sweep_lab, sim
from storlab_cli.errors import UserError

PREDICTION_HOSTS = "hosts.json"     # in the prediction's directory: the hosts it ran on


def _sim_host(value):
    """--sim-host: a host preset of the library's or a host file (read only
    when given)."""
    if sim_host_file.is_file_name(value):
        try:
            sim_host_file.load(value)
        except UserError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
        return os.path.abspath(value)
    known = tuple(catalog.sim_hosts())
    if value not in known:
        raise argparse.ArgumentTypeError(f"invalid choice: {value!r} (choose from "
                                         f"{', '.join(known)}, or a host file NAME.toml)")
    return value


def _parse(argv):
    parser = cli_args.Parser(prog="storlab sweep", add_help=True)
    parser.add_argument("file", help="the sweep file (TOML)")
    parser.add_argument("--out", help="results directory (default results/NAME-UTCSTAMP; "
                        "an existing one of the same sweep resumes)")
    parser.add_argument("--backend", choices=sweep_schema.BACKENDS,
                        help="override the file's backend")
    parser.add_argument("--keep-lab", action="store_true",
                        help="leave a lab the sweep brought up running afterwards")
    parser.add_argument("--no-predict", action="store_true",
                        help="lab backend: skip the simulator's prediction")
    parser.add_argument("--scale", type=float, metavar="N",
                        help="divide capacities, cache sizes and working sets by N, timing "
                        "kept (overrides the file's scale; 1: full size)")
    parser.add_argument("--jobs", type=int, metavar="N",
                        help="simulator: points run at once, one process each (default: the "
                        "host's cores; a lab runs one point at a time)")
    parser.add_argument("--sim-host", type=_sim_host, metavar="PRESET|FILE",
                        help="simulator, profile targets: the hosts' preset, or a host file "
                        "of one machine's own figures (scripts/bench/tcg_calibrate.py writes "
                        "one); overrides the topology's [sim] host")
    return parser.parse_args(argv)


class Progress:
    """One line with a bar and an ETA; redrawn in place on a terminal."""

    def __init__(self, total, done, label, stream=sys.stderr):
        self.total, self.done, self.label, self.stream = total, done, label, stream
        self.started_s = time.monotonic()
        self.ran = 0
        self.tty = stream.isatty()

    def show(self, estimate_s=None):
        width = 24
        filled = width * self.done // max(1, self.total)
        if self.ran:
            per_point_s = (time.monotonic() - self.started_s) / self.ran
            eta_s = per_point_s * (self.total - self.done)
        else:
            eta_s = estimate_s * (self.total - self.done) if estimate_s else None
        eta = f"ETA {_duration(eta_s)}" if eta_s is not None else "ETA ?"
        line = f"{self.label} [{'#' * filled}{'.' * (width - filled)}] " \
               f"{self.done}/{self.total} points, {eta}"
        if self.tty:
            self.stream.write("\r" + line + ("\n" if self.done == self.total else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def step(self):
        self.done += 1
        self.ran += 1
        self.show()


def _duration(seconds):
    seconds = int(round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def _say(message):
    print(message, file=sys.stderr, flush=True)


def _note_host_path_cap(sweep):
    deepest = max(w["units"] * w["workers"] * w["iodepth"]
                  for w in (p.workload(sweep.workload) for p in sweep.points))
    if sweep.backend == "lab" and sweep.target_is_device and deepest > host_limit.QEMU_NBD_IN_FLIGHT:
        _say(f"note: up to {deepest} outstanding I/Os per device, but QEMU's NBD client keeps at "
             f"most {host_limit.QEMU_NBD_IN_FLIGHT} in flight per disk: the rest queue in the guest "
             "(the simulator's prediction shows the device at full depth)")


def point_jobs(backend, requested=None):
    """Points at once: a lab's guests run one point at a time; the
    simulator one process a point, as many as the host has cores."""
    if backend.name != "sim":
        return 1
    return requested or len(os.sched_getaffinity(0)) or 1


def run_points(sweep, work, out, label, needs_precondition, jobs=1):
    """Runs what is missing of work's points in out, jobs points at once:
    work is [(backend, points)], a sweep's parts (a simulator's side by
    side: each point is a process of its own). Returns the points.csv path
    (of every point of the sweep)."""
    todo = [(backend, p) for backend, points in work for p in points
            if not results.point_done(out, p)]
    total = sum(len(points) for _, points in work)
    done = total - len(todo)
    if done and todo:
        _say(f"{label}: resuming at point {todo[0][1].index} ({done} of {total} done)")
    progress = Progress(total, done, label)
    if todo:
        notes = []
        for backend in dict.fromkeys(b for b, _ in todo):      # each once, in order
            if needs_precondition or done == 0:
                note = backend.precondition()
                if note and note not in notes:
                    notes.append(note)
                    _say(f"{label}: preconditioned: {note}")
        progress.show(estimate_s=sweep.phases["ramp_s"] + sweep.phases["duration_s"]
                      if todo[0][0].name == "lab" else None)
    stopping = threading.Event()

    def one(backend, point):
        if stopping.is_set():
            return
        directory = results.fresh_point_dir(out, point)
        results.write_json(os.path.join(directory, "params.json"), point.params)
        backend.run_point(point, directory)
        point_result.summarize(directory, backend.name, sweep, point)
        results.mark_done(directory)

    # Simulator points are independent processes with fixed seeds: run side
    # by side they give what a serial run gives (test_sweep_cluster_sim).
    # Interrupted, no new point starts; those running finish and are kept.
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(one, backend, point) for backend, point in todo]
        try:
            for future in concurrent.futures.as_completed(futures):
                future.result()
                point_result.write_points_csv(out, sweep)
                progress.step()
        except BaseException:
            stopping.set()
            for future in futures:
                future.cancel()
            pool.shutdown(wait=True)
            point_result.write_points_csv(out, sweep)
            raise
    return point_result.write_points_csv(out, sweep)


def _predict_host(sim_host, topo, accelerator):
    """The hosts and links a prediction of a lab gives its cluster (a
    resolved SimHost). For a lab under TCG, the lab's own, whatever the
    topology's [sim] says of the cluster a study ran on: a TCG guest's CPU
    cost (the tcg preset, or --sim-host's, say this machine's own host
    file), the udp links, every guest on this host's cores. Else --sim-host
    over the topology's [sim], or the default."""
    if accelerator == "tcg":
        own = SimHost().resolved(sim_host or "tcg", len(os.sched_getaffinity(0)))
        if own.host == "tcg":
            return own
    if sim_host:
        return (topo.sim or SimHost()).resolved(sim_host)
    return (topo.sim or SimHost()).resolved()


def _predict(sweep, parts, out, sim_host, accelerator):
    """The simulator's prediction of the same sweep, in out/sim."""
    try:
        plans = [sweep_plan.make(part.sweep, part.topo, backend="sim") for part in parts]
    except UserError as e:
        _say(f"no simulator prediction: {e}")
        return None
    sim_out = os.path.join(out, results.SIM_DIR)
    results.prepare(sim_out, sweep.path)
    hosts = [_predict_host(sim_host, part.topo, accelerator) for part in parts]
    # a prediction made on other hosts (another --sim-host, a host file's
    # figures changed) is not this one: made again
    if results.keep_points_of(sim_out, sweep.points, [dataclasses.asdict(h) for h in hosts],
                              PREDICTION_HOSTS):
        _say("the simulator's prediction in this directory ran on other hosts: predicting again")
    _run_in_simulator(sweep, parts, [sim.SimBackend(part.sweep, part.topo, plan, _say, host=host)
                                     for part, plan, host in zip(parts, plans, hosts)],
                      sim_out, "simulator prediction", None)


def _run_in_simulator(sweep, parts, backends, out, label, jobs):
    """The simulator's parts side by side (backends: a SimBackend for each of
    the parts with points left): a structural study's points at once, one
    process each. The manifest says how many points are done before and
    after. Returns the simulator's facts."""
    with contextlib.ExitStack() as stack:
        for backend in backends:
            stack.enter_context(backend)
        facts = backends[0].facts()

        def manifest():
            done = sum(results.point_done(out, p) for p in sweep.points)
            results.write_json(os.path.join(out, "manifest.json"),
                               sweep_parts.manifest(sweep, parts, "sim", facts, done))
        manifest()
        run_points(sweep, [(b, b.sweep.points) for b in backends], out, label, False,
                   point_jobs(backends[0], jobs))
        manifest()
    return facts


def _earlier_facts(out):
    """A resumed sweep with nothing left to run: the facts its manifest kept."""
    try:
        with open(os.path.join(out, "manifest.json"), encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, ValueError):
        manifest = {}
    return {"accelerator": manifest.get("accelerator"), "versions": manifest.get("versions", {})}


def run(argv):
    args = _parse(argv)
    if args.jobs is not None and not 1 <= args.jobs <= 256:
        raise UserError(f"--jobs {args.jobs}: must be 1..256")
    sweep = sweep_schema.load(args.file, args.backend, args.scale)
    parts = sweep_parts.split(sweep, sweep.backend)
    packages = deps.BUILD_PACKAGES + deps.PLOT_PACKAGES
    if sweep.backend == "lab":
        packages += lifecycle.LAB_PACKAGES
    deps.ensure_packages(packages)
    out = os.path.abspath(args.out or results.default_dir(sweep))
    resumed = results.prepare(out, sweep.path)
    structures = f", {len(parts)} topologies" if len(parts) > 1 else ""
    structures += f", at scale 1/{sweep.scale:g}" if sweep.scale != 1 else ""
    _say(f"sweep '{sweep.name}': {len(sweep.points)} points{structures} on the {sweep.backend} "
         f"backend ({'resuming in' if resumed else 'results in'} {out})")
    for part in parts:
        part.settle(out)
    _note_host_path_cap(sweep)
    facts = None
    pending = [part for part in parts
               if not all(results.point_done(out, p) for p in part.points)]
    if sweep.backend == "sim" and pending:
        facts = _run_in_simulator(sweep, parts, [sim.SimBackend(part.sweep, part.topo, part.plan,
                                                                _say, args.sim_host)
                                                 for part in pending],
                                  out, "sweep", args.jobs)
    for n, part in enumerate(parts if sweep.backend == "lab" else []):
        if part not in pending:
            continue                   # resumed: nothing of it to run, no lab to bring up
        # a part's lab goes down before the next one's comes up; --keep-lab: the last stays
        keep = args.keep_lab and n == len(parts) - 1
        with sweep_lab.LabBackend(part.sweep, part.topo, part.plan, _say, keep_lab=keep) as backend:
            facts = backend.facts()
            done = sum(results.point_done(out, p) for p in sweep.points)
            results.write_json(os.path.join(out, "manifest.json"),
                               sweep_parts.manifest(sweep, parts, backend.name, facts, done))
            run_points(sweep, [(backend, part.points)], out, part.label("sweep", len(parts)),
                       backend.brought_up, 1)
    facts = facts or _earlier_facts(out)
    results.write_json(os.path.join(out, "manifest.json"),
                       sweep_parts.manifest(sweep, parts, sweep.backend, facts, len(sweep.points)))
    if sweep.backend == "lab" and sweep.predict and not args.no_predict:
        _predict(sweep, parts, out, args.sim_host, facts["accelerator"])
    figures, report_path = plot.render(out)
    print(f"results: {out}")
    print(f"  points.csv  {os.path.join(out, 'points.csv')}")
    print(f"  plots       {os.path.join(out, 'plots')} ({len(figures)} figures)")
    print(f"  report      {report_path}")
    return 0
