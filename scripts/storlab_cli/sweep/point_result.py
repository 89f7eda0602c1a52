"""One finished point's raw files -> its points.csv row, timeline.csv and
events.csv. The backend that wrote the raw files reads them back
(read_point in sweep/backends/), so a results directory can always be
summarised again from its raw data."""
import importlib
import json
import os

from storlab_cli.results import (device_window, directory as results, fio_merge, points_csv,
                                 steady_state, timeline)
from storlab_cli.errors import UserError

ROW_FILE = "row.json"


def _swept_values(sweep, point):
    values = dict(point.params)
    if point.label is not None and sweep.label_key is not None:
        values[sweep.label_key] = point.label        # an extra point is its own series (or x)
    return values


def summarize(directory, backend, sweep, point):
    """Writes row.json, timeline.csv and events.csv of a point from what its
    backend ("lab", "sim") left in directory; returns the row."""
    reader = importlib.import_module(f"storlab_cli.sweep.backends.{backend}")
    raw = reader.read_point(directory, sweep, point)
    if not raw.sources:
        raise UserError(f"{directory}: no fio results for point {point.index}")
    row = {"point": point.index, **_swept_values(sweep, point),
           **fio_merge.point_metrics(raw.summary)}
    if raw.windows:
        row.update(device_window.combine(raw.windows).metrics())
    if raw.host_limit is not None:
        row["host_limit"] = raw.host_limit
    if raw.nodes is not None:
        row["nodes"] = raw.nodes
    row.update(raw.extra or {})
    if raw.samples:
        series = timeline.rows(raw.samples)
        timeline.write_timeline(os.path.join(directory, "timeline.csv"), series)
        row.update(steady_state.metrics(series))
    if raw.events:
        timeline.write_events(os.path.join(directory, "events.csv"), raw.events)
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
