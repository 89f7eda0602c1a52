"""The simulator backend of `storlab sweep`: every point in virtual time.

A device target: one storlab-sim run per active node on that node's
target device model (the topology's plugin and parameters, with the
point's device knobs), the node's workload units as job sections of one
job file; raw files sim-NODE.json.

A profile target ("volumes", "share"): one `storlab-sim cluster` run of the
whole lab (sweep/cluster_spec.py writes its cluster.spec from the topology
and its [profile]), every active node's workers as sections of one job
file; raw file sim-cluster.json.

The raw files are storlab-sim's fio-shaped JSON (bins, device stats,
storlab.timeline, storlab.events); read_point reads them back."""
import glob
import os
import subprocess
from dataclasses import replace

from storlab_cli import build, paths
from storlab_cli.common.last_line import last_line
from storlab_cli.results import cluster_layers, device_window, fio_merge, fio_results, timeline
from storlab_cli.schema.topology import SimHost
from storlab_cli.sweep import cluster_spec, fio_jobfile, plan as sweep_plan
from storlab_cli.sweep.raw_point import RawPoint
from storlab_cli.errors import UserError

SIM_TIMEOUT_S = 3600         # a 64-node cluster point takes minutes
CLUSTER_OUT = "sim-cluster.json"
CLUSTER_SPEC = "cluster.spec"
CLUSTER_JOB = "job-cluster.fio"


class SimBackend:
    name = "sim"

    def __init__(self, sweep, topo, plan, say, sim_host=None, host=None):
        self.sweep, self.topo, self.plan, self.say = sweep, topo, plan, say
        # the cluster's host and link presets: the topology's [sim], --sim-host over
        # it; host: already resolved (a prediction of a lab: its own hosts)
        self.host = host or (topo.sim or SimHost()).resolved(sim_host)

    def __enter__(self):
        build.build()
        return self

    def __exit__(self, *exc):
        return False

    def facts(self):
        """Virtual time: no accelerator, no guest; the simulator is this
        revision's build (the manifest records the revision)."""
        return {"accelerator": None, "versions": {}}

    def precondition(self):
        """Nothing to fill: a model starts in its configured state (an SSD's
        precondition=steady key synthesises steady state instantly; a
        cluster's caches start warm with --warm, see _cluster_argv)."""
        if not self.sweep.target_is_device and self.sweep.phases["precondition"]:
            return "every point's caches start as the lab's fill leaves them (--warm)"
        return None

    def _argv(self, node, point, job_path):
        device = self.plan.devices[node]
        params = dict(device.params)
        params.update({k: str(v) for k, v in point.device_knobs().items()})
        argv = [paths.simulator(), device.plugin]
        if self.sweep.phases["interval_s"] > 0:
            argv.append(f"--interval-ms={self.sweep.phases['interval_s'] * 1000}")
        for event in point.events:
            argv += ["--event", f"{event.at_s * 1000:.0f}ms:{event.command}"]
        # '--': no device key is ever read as a storlab-sim option
        return argv + ["--"] + [f"{k}={v}" for k, v in params.items()] + [job_path]

    def _cluster_argv(self, spec_path, job_path, point):
        argv = [paths.simulator(), "cluster"]
        if self.sweep.phases["interval_s"] > 0:
            argv.append(f"--interval-ms={self.sweep.phases['interval_s'] * 1000}")
        for event in point.events:           # the profile's events (plan.py lets no other here)
            argv += ["--event", f"{event.at_s * 1000:.0f}ms:{event.command}"]
        if self.sweep.phases["precondition"]:
            # The lab preconditions by writing the whole working set first
            # (a sequential fill, or the volumes written when provisioned):
            # the simulator starts its caches in the state that reaches
            # instead of simulating the fill.
            argv.append("--warm")
        return argv + ["--", spec_path, job_path]

    def _simulate(self, argv, out_path, what):
        with open(out_path + ".tmp", "wb") as out:
            result = subprocess.run(argv, stdout=out, stderr=subprocess.PIPE,
                                    timeout=SIM_TIMEOUT_S, check=False)
        if result.returncode != 0:
            os.unlink(out_path + ".tmp")
            raise UserError(f"{what}: {last_line(result.stderr, 'failed')}")
        os.replace(out_path + ".tmp", out_path)

    def run_point(self, point, point_dir):
        if self.sweep.target_is_device:
            self._run_devices(point, point_dir)
        else:
            self._run_cluster(point, point_dir)

    def _run_devices(self, point, point_dir):
        workload = point.workload(self.sweep.workload)
        for n, node in enumerate(sweep_plan.point_nodes(self.plan, workload)):
            workers = []
            for unit in range(1, workload["units"] + 1):
                workers += fio_jobfile.region_workers(node, unit, workload, None)
            job_path = os.path.join(point_dir, f"job-{node}.fio")
            with open(job_path, "w", encoding="utf-8") as f:
                f.write(fio_jobfile.measured(workload, self.sweep.phases, workers,
                                             randseed=1000 + n))
            self._simulate(self._argv(node, point, job_path),
                           os.path.join(point_dir, f"sim-{node}.json"),
                           f"storlab-sim on {node}'s {self.plan.devices[node].name} "
                           f"(point {point.index})")

    def _run_cluster(self, point, point_dir):
        workload = point.workload(self.sweep.workload)
        laid_out = cluster_spec.exports(self.topo, workload,
                                        sweep_plan.point_nodes(self.plan, workload))
        spec_path = os.path.join(point_dir, CLUSTER_SPEC)
        job_path = os.path.join(point_dir, CLUSTER_JOB)
        with open(spec_path, "w", encoding="utf-8") as f:
            f.write(cluster_spec.text(self.topo, laid_out, self.host, workload))
        workers = cluster_spec.job_workers(laid_out)
        with open(job_path, "w", encoding="utf-8") as f:
            # each section carries its own randseed; [global]'s is the first unit's
            f.write(fio_jobfile.measured(workload, self.sweep.phases, workers,
                                         randseed=workers[0].randseed))
        self._simulate(self._cluster_argv(spec_path, job_path, point),
                       os.path.join(point_dir, CLUSTER_OUT),
                       f"storlab-sim cluster (point {point.index})")


# ---- reading a point back ----

def _zeroed(record):
    """The same device before any I/O: what the simulator started from."""
    ops = {op: {"count": 0, "bytes": 0, "latency_ns": {"mean": 0}} for op in record["ops"]}
    counters = {k: 0 for k, v in record.get("counters", {}).items() if isinstance(v, int)}
    return {"name": record["name"], "kind": record["kind"], "now_ns": 0, "ops": ops,
            "counters": counters}


def _whole_run_window(records, source):
    """A window of records (a device and its members) over the simulator's
    whole run, ramp included: what it started from is the same device idle."""
    return device_window.window_between({"devices": [_zeroed(r) for r in records]},
                                        {"devices": records}, source,
                                        records[0]["elapsed_ns"] / 1e9)


def _sim_device_windows(docs):
    """Device figures of the simulator cover its whole run (ramp included)."""
    windows = []
    for doc, source in docs:
        device = doc.get("storlab", {}).get("device", {})
        records = [device["stats"]] if "stats" in device else []
        records += [m["stats"] for m in device.get("model", {}).get("member_layer", [])]
        if records:
            windows.append(_whole_run_window(records, source))
    return windows


def _cluster_windows(doc, source):
    """Every device of the cluster (what a lab's plugins count) as a device
    window over the whole run; the stack's own layers (md, caches, fabric,
    front ends) stay in sim-cluster.json."""
    try:
        layers = doc["storlab"]["device"]["model"]["layers"]
    except (KeyError, TypeError):
        raise UserError(f"{source}: no storlab.device.model.layers (not storlab-sim "
                        "cluster's JSON?)") from None
    return [_whole_run_window([record], f"{source}: {record['name']}")
            for record in layers if record.get("layer") == "device"]


def _events(doc):
    """[(t_s, command)] of the events storlab-sim applied (its JSON's
    storlab.events: every node's sim JSON has the same ones)."""
    return [(e["t_ms"] / 1000.0, e["command"]) for e in doc.get("storlab", {}).get("events", [])]


def _read_cluster(directory, sweep, path):
    doc = fio_results.load(path)
    summary = fio_merge.merge_docs([(doc, path)])
    with open(os.path.join(directory, CLUSTER_JOB), encoding="utf-8") as f:
        units = fio_jobfile.units_of(f.read())
    return RawPoint(sources=[path],
                    # as a lab counts them: one fio per node and unit
                    summary=replace(summary, units=len(units)),
                    nodes=len({node for node, _ in units}),
                    windows=_cluster_windows(doc, path), host_limit=None,
                    samples=timeline.sim_samples(doc, path) if sweep.phases["interval_s"] else [],
                    events=_events(doc), extra=cluster_layers.metrics(doc, path))


def read_point(directory, sweep, point):
    """The point's figures from its sim-cluster.json, else its sim-NODE.json
    files. No host path: its points are never host-limited."""
    del point                      # every node's run is in the directory
    cluster = os.path.join(directory, CLUSTER_OUT)
    if os.path.exists(cluster):
        return _read_cluster(directory, sweep, cluster)
    sources = sorted(glob.glob(os.path.join(directory, "sim-*.json")))
    docs = [(fio_results.load(p), p) for p in sources]
    samples = []
    if sweep.phases["interval_s"]:
        for doc, source in docs:
            samples += timeline.sim_samples(doc, source)
    return RawPoint(sources=sources, summary=fio_merge.merge_docs(docs) if docs else {},
                    windows=_sim_device_windows(docs), host_limit=None, samples=samples,
                    events=_events(docs[0][0]) if docs else [],
                    nodes=len(sources))      # sim-NODE.json: one a node
