"""The simulator backend of `storlab sweep`: every point in virtual time,
one storlab-sim run per active node on that node's target device model
(the topology's plugin and parameters, with the point's device knobs), the
node's workload units as job sections of one job file.

Raw files of a point: sim-NODE.json (storlab-sim's fio-shaped JSON: bins,
device stats, storlab.timeline, storlab.events); read_point reads them back."""
import glob
import os
import subprocess

from storlab_cli import build, paths
from storlab_cli.results import device_window, fio_merge, fio_results, timeline
from storlab_cli.sweep import fio_jobfile, plan as sweep_plan
from storlab_cli.sweep.raw_point import RawPoint
from storlab_cli.errors import UserError

SIM_TIMEOUT_S = 600


class SimBackend:
    name = "sim"

    def __init__(self, sweep, topo, plan, say):
        self.sweep, self.topo, self.plan, self.say = sweep, topo, plan, say

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
        precondition=steady key synthesises steady state instantly)."""
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

    def run_point(self, point, point_dir):
        workload = point.workload(self.sweep.workload)
        for n, node in enumerate(sweep_plan.point_nodes(self.plan, workload)):
            workers = []
            for unit in range(1, workload["units"] + 1):
                workers += fio_jobfile.region_workers(node, unit, workload, None)
            job_path = os.path.join(point_dir, f"job-{node}.fio")
            with open(job_path, "w", encoding="utf-8") as f:
                f.write(fio_jobfile.measured(workload, self.sweep.phases, workers,
                                             randseed=1000 + n))
            argv = self._argv(node, point, job_path)
            out_path = os.path.join(point_dir, f"sim-{node}.json")
            with open(out_path + ".tmp", "wb") as out:
                result = subprocess.run(argv, stdout=out, stderr=subprocess.PIPE,
                                        timeout=SIM_TIMEOUT_S, check=False)
            if result.returncode != 0:
                os.unlink(out_path + ".tmp")
                detail = result.stderr.decode(errors="replace").strip().splitlines()
                raise UserError(f"storlab-sim on {node}'s {self.plan.devices[node].name} "
                                f"(point {point.index}): {detail[-1] if detail else 'failed'}")
            os.replace(out_path + ".tmp", out_path)


# ---- reading a point back ----

def _zeroed(record):
    """The same device before any I/O: what the simulator started from."""
    ops = {op: {"count": 0, "bytes": 0, "latency_ns": {"mean": 0}} for op in record["ops"]}
    counters = {k: 0 for k, v in record.get("counters", {}).items() if isinstance(v, int)}
    return {"name": record["name"], "kind": record["kind"], "now_ns": 0, "ops": ops,
            "counters": counters}


def _sim_device_windows(docs):
    """Device figures of the simulator cover its whole run (ramp included)."""
    windows = []
    for doc, source in docs:
        device = doc.get("storlab", {}).get("device", {})
        records = [device["stats"]] if "stats" in device else []
        records += [m["stats"] for m in device.get("model", {}).get("member_layer", [])]
        if not records:
            continue
        after = {"devices": records}
        before = {"devices": [_zeroed(r) for r in records]}
        window_s = records[0]["elapsed_ns"] / 1e9
        windows.append(device_window.window_between(before, after, source, window_s))
    return windows


def read_point(directory, sweep, point):
    """The point's figures from its sim-NODE.json files. No host path: its
    points are never host-limited."""
    del point                      # every node's run is in the directory
    sources = sorted(glob.glob(os.path.join(directory, "sim-*.json")))
    docs = [(fio_results.load(p), p) for p in sources]
    samples = []
    if sweep.phases["interval_s"]:
        for doc, source in docs:
            samples += timeline.sim_samples(doc, source)
    events = [(e["t_ms"] / 1000.0, e["command"])
              for e in (docs[0][0].get("storlab", {}).get("events", []) if docs else [])]
    return RawPoint(sources=sources, summary=fio_merge.merge_docs(docs) if docs else {},
                    windows=_sim_device_windows(docs), host_limit=None, samples=samples,
                    events=events)
