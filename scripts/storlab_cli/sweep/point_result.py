"""One finished point's raw files -> its points.csv row, timeline.csv and
events.csv. Reads only what the backend left in the point's directory, so
a results directory can always be summarised again from its raw data.

Raw files by backend:
  lab  fio-NODE-uUNIT.json (fio json+), fio-NODE-uUNIT-logs/ (per-interval
       logs), device-NODE-DEV.json ({"before", "after"} storlab-stats
       snapshots of the measured window), events.json (what was sent when)
  sim  sim-NODE.json (storlab-sim's fio-shaped JSON: bins, device stats,
       storlab.timeline, storlab.events)
"""
import glob
import json
import os

from storlab_cli.results import (device_window, directory as results, fio_merge, fio_results,
                                 host_limit, points_csv, timeline)
from storlab_cli.errors import UserError

ROW_FILE = "row.json"


def _swept_values(sweep, point):
    values = dict(point.params)
    if point.label is not None and sweep.label_key is not None:
        values[sweep.label_key] = point.label        # an extra point is its own series (or x)
    return values


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


def _lab_device_windows(directory, duration_s):
    """[(device name, DeviceWindow)] of the point's device-NODE-DEVICE.json files."""
    windows = []
    for path in sorted(glob.glob(os.path.join(directory, "device-*.json"))):
        doc = device_window.load(path)
        if doc.get("before") is None:
            continue          # fio ended before the ramp did: no window
        device = os.path.basename(path)[:-len(".json")].rsplit("-", 1)[-1]   # no '-' in device names
        windows.append((device, device_window.window_between(doc["before"], doc["after"], path,
                                                             window_s=duration_s)))
    return windows


def _host_limit(sweep, workload, windows):
    """The point's host_limit (host_limit.REASONS codes joined by '+', "" for
    none): the target device gets units x workers x iodepth outstanding I/Os;
    devices under the guests' stack get what the stack makes of it (unknown)."""
    offered = workload["units"] * workload["workers"] * workload["iodepth"]
    loads = [host_limit.DeviceLoad(
        offered_depth=offered if sweep.target_is_device and device == workload["target"] else None,
        mean_queue_depth=w.mean_queue_depth, mean_latency_us=w.dev_lat_mean_us,
        release_late_p99_us=w.release_late_p99_us) for device, w in windows]
    return host_limit.point_reasons(loads)


def _lab_timeline(directory, interval_ms):
    pairs = []
    for logs in sorted(glob.glob(os.path.join(directory, "fio-*-logs"))):
        unit = os.path.basename(logs)[len("fio-"):-len("-logs")]
        pairs += timeline.fio_log_pairs(os.path.join(logs, unit))
    return timeline.fio_samples(pairs, interval_ms) if pairs else []


def _lab_events(directory):
    path = os.path.join(directory, "events.json")
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        sent = json.load(f)
    first = {}
    for event in sent:                 # one mark per command, when the first node got it
        first.setdefault(event["command"], event["t_s"])
    return [(t_s, command) for command, t_s in first.items()]


def summarize(directory, backend, sweep, point):
    """Writes row.json, timeline.csv and events.csv of a point; returns the row."""
    interval_ms = sweep.phases["interval_s"] * 1000
    if backend == "sim":
        paths = sorted(glob.glob(os.path.join(directory, "sim-*.json")))
        docs = [(fio_results.load(p), p) for p in paths]
        summary = fio_merge.merge_docs(docs)
        windows = _sim_device_windows(docs)
        samples = []
        if interval_ms:
            for doc, source in docs:
                samples += timeline.sim_samples(doc, source)
        events = [(e["t_ms"] / 1000.0, e["command"])
                  for e in (docs[0][0].get("storlab", {}).get("events", []) if docs else [])]
        host = {}
    else:
        paths = sorted(glob.glob(os.path.join(directory, "fio-*-u*.json")))
        summary = fio_merge.merge_files(paths)
        named = _lab_device_windows(directory, sweep.phases["duration_s"])
        windows = [w for _, w in named]
        host = {"host_limit": _host_limit(sweep, point.workload(sweep.workload), named)} \
            if named else {}
        samples = _lab_timeline(directory, interval_ms) if interval_ms else []
        events = _lab_events(directory)
    if not paths:
        raise UserError(f"{directory}: no fio results for point {point.index}")
    row = {"point": point.index, **_swept_values(sweep, point),
           **fio_merge.point_metrics(summary)}
    if windows:
        row.update(device_window.combine(windows).metrics())
    row.update(host)
    if samples:
        timeline.write_timeline(os.path.join(directory, "timeline.csv"), timeline.rows(samples))
    if events:
        timeline.write_events(os.path.join(directory, "events.csv"), events)
    results.write_json(os.path.join(directory, ROW_FILE), row)
    return row


def write_points_csv(out, sweep):
    """points.csv of every finished point, in point order."""
    rows = []
    for point in sweep.points:
        path = os.path.join(results.point_dir(out, point), ROW_FILE)
        if results.point_done(out, point) and os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                rows.append(json.load(f))
    target = os.path.join(out, "points.csv")
    points_csv.write(target, rows, sweep.swept)
    return target
