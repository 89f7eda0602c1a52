"""The results directories being compared: each one's points.csv and
manifest.json, whether it is the simulator's prediction of a lab sweep
(DIR/sim), and the label it goes by in the table, the figures and the page."""
import os
from dataclasses import dataclass

from storlab_cli.errors import UserError
from storlab_cli.report import plot_data
from storlab_cli.results import directory as results_dir, points_csv

SIM_SUBDIR = results_dir.SIM_DIR     # a lab sweep's simulator prediction


@dataclass
class Run:
    """One input directory."""
    path: str               # as given, for messages
    manifest: dict
    table: points_csv.Table
    is_sim: bool            # DIR/sim of a lab sweep
    label: str = ""

    @property
    def real_path(self):
        return os.path.realpath(self.path)


def _is_sim_of_a_lab_sweep(path):
    parent = os.path.dirname(os.path.abspath(path))
    return (os.path.basename(os.path.abspath(path)) == SIM_SUBDIR
            and os.path.isfile(os.path.join(parent, "points.csv")))


def _manifest(path):
    try:
        return plot_data.load_manifest(path)
    except OSError as e:             # load_manifest names a missing file itself
        raise UserError(f"{path}: cannot read ({e.strerror})") from None


def load_run(path):
    if not os.path.isdir(path):
        raise UserError(f"{path}: no such directory")
    csv_path = os.path.join(path, "points.csv")
    if not os.path.isfile(csv_path):
        raise UserError(f"{path}: not a sweep results directory (no points.csv)")
    table = points_csv.read(csv_path)
    if not table.rows:
        raise UserError(f"{csv_path}: no points (an unfinished sweep?)")
    manifest = _manifest(os.path.join(path, "manifest.json"))
    return Run(path, manifest, table, _is_sim_of_a_lab_sweep(path))


def _name_label(run):
    name = run.manifest.get("name")
    if not isinstance(name, str) or not name.strip():
        return _dir_label(run)
    return f"{name} ({SIM_SUBDIR})" if run.is_sim else name


def _dir_label(run):
    path = os.path.abspath(run.path)
    if run.is_sim:
        return f"{os.path.basename(os.path.dirname(path))} ({SIM_SUBDIR})"
    return os.path.basename(path)


def _numbered_where_repeated(labels):
    seen = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if labels.count(label) == 1 else f"{label} #{seen[label]}")
    return out


def assign_labels(runs):
    """The sweep's name; where two share it, the directory's name; where those
    too are the same, numbered."""
    labels = [_name_label(run) for run in runs]
    labels = [_dir_label(run) if labels.count(label) > 1 else label
              for run, label in zip(runs, labels)]
    for run, label in zip(runs, _numbered_where_repeated(labels)):
        run.label = label


def load_runs(paths):
    """[Run] of the directories given, the baseline first; at least two, no
    directory twice (by its real path), each labelled."""
    if len(paths) < 2:
        raise UserError(f"give at least two results directories, the first the baseline "
                        f"(got {len(paths)}: {' '.join(paths)})")
    runs = [load_run(path) for path in paths]
    seen = {}
    for run in runs:
        earlier = seen.get(run.real_path)
        if earlier is not None:
            also = f" (also as {earlier})" if earlier != run.path else ""
            raise UserError(f"{run.path}: given twice{also}")
        seen[run.real_path] = run.path
    assign_labels(runs)
    return runs
