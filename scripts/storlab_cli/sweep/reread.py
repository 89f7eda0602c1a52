"""A results directory's finished points read again from the raw files
each kept (fio's JSON and interval logs, the devices' snapshots, the
gates' passes): when storlab counts them differently than it did, old
results get today's figures without anything run again. The sweep is the
results' own copy of its file, its topology found where the original file
was (the manifest names it), at the scale and on the backend it ran."""
import os

from storlab_cli.errors import UserError
from storlab_cli.report import plot_data
from storlab_cli.results import directory as results
from storlab_cli.schema import sweep as sweep_schema
from storlab_cli.sweep import point_result


def reread(out):
    """Every finished point's row.json (and timeline) again from its raw
    files, then points.csv. Returns (points read, points in the sweep)."""
    manifest_path = os.path.join(out, "manifest.json")
    manifest = plot_data.load_manifest(manifest_path)
    backend, sweep_file = manifest.get("backend"), manifest.get("sweep_file")
    if backend not in sweep_schema.BACKENDS or not isinstance(sweep_file, str):
        raise UserError(f"{manifest_path}: no backend or sweep_file: not a results directory "
                        "storlab sweep wrote")
    copy = os.path.join(out, results.SWEEP_COPY)
    if not os.path.isfile(copy):
        raise UserError(f"{copy}: no such file: the sweep file its points ran is not kept there")
    scale = manifest.get("scale")
    sweep = sweep_schema.load(copy, backend, scale if isinstance(scale, (int, float)) else None,
                              topology_dir=os.path.dirname(sweep_file))
    done = [p for p in sweep.points if results.point_done(out, p)]
    for point in done:
        point_result.summarize(results.point_dir(out, point), backend, sweep, point)
    point_result.write_points_csv(out, sweep)
    return len(done), len(sweep.points)
