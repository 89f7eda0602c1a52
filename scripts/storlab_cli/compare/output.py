"""--out DIR: compare.csv, compare.json (what was compared; it also marks the
directory as this command's, safe to overwrite), plots/ and index.html.
DIR must be new, empty or an earlier comparison's, and is written whole:
staged in a directory beside it and renamed into place, so an error leaves
it as it was."""
import datetime
import os
import shutil
import tempfile

from storlab_cli.common import csv_out
from storlab_cli.compare import figures, page, table
from storlab_cli.errors import UserError
from storlab_cli.report import html, plot_data
from storlab_cli.results import directory as results

MARKER_NAME = "compare.json"
MARKER_KIND = "storlab compare"


def _inside(path, directory):
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def _is_earlier_comparison(out):
    try:
        return plot_data.load_manifest(os.path.join(out, MARKER_NAME)).get("kind") == MARKER_KIND
    except (UserError, OSError):
        return False


def check_out(out, runs):
    """--out: new, empty, or an earlier comparison's (replaced whole); never
    an input directory, inside one, or holding one."""
    real = os.path.realpath(out)
    for run in runs:
        if _inside(real, run.real_path):
            raise UserError(f"--out {out}: inside the input directory {run.path}; "
                            "give another --out")
        if _inside(run.real_path, real):
            raise UserError(f"--out {out}: holds the input directory {run.path}; "
                            "give another --out")
    if not os.path.lexists(out):
        return
    if not os.path.isdir(out):
        raise UserError(f"--out {out}: exists and is not a directory")
    if os.listdir(out) and not _is_earlier_comparison(out):
        raise UserError(f"--out {out}: not empty and not written by storlab compare "
                        f"(no {MARKER_NAME}); give a new or empty directory")


def _marker(comparison, created):
    return {"kind": MARKER_KIND, "created_utc": created, "matched_on": comparison.keys,
            "directories": [{"label": r.label, "path": os.path.abspath(r.path),
                             "baseline": i == 0} for i, r in enumerate(comparison.runs)]}


def _write_all(directory, comparison, created):
    """Every output file into directory; returns [plots.Figure]."""
    csv_out.write(os.path.join(directory, table.CSV_NAME), table.csv_header(comparison),
                  table.csv_rows(comparison))
    drawn = figures.render_figures(comparison, directory)
    with open(os.path.join(directory, html.REPORT_NAME), "w", encoding="utf-8") as f:
        f.write(page.render_page(comparison, drawn, created))
    results.write_json(os.path.join(directory, MARKER_NAME), _marker(comparison, created))
    return drawn


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _put_in_place(staged, out):
    """staged becomes out; an earlier out goes only once staged is there."""
    if not os.path.lexists(out):
        os.rename(staged, out)
        return
    old = staged + ".old"
    os.rename(out, old)
    try:
        os.rename(staged, out)
    except OSError:
        os.rename(old, out)
        raise
    shutil.rmtree(old, ignore_errors=True)


def write(out, comparison):
    """Writes the comparison into out, staged in a directory beside it and
    renamed into place, so an error leaves out as it was. Returns the
    figures."""
    check_out(out, comparison.runs)
    out = os.path.abspath(out)
    parent = os.path.dirname(out)
    try:
        os.makedirs(parent, exist_ok=True)
        staged = tempfile.mkdtemp(prefix=f".{os.path.basename(out)}.", suffix=".tmp", dir=parent)
    except OSError as e:
        raise UserError(f"--out {out}: cannot create ({e.strerror})") from None
    created = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    try:
        os.chmod(staged, 0o777 & ~_umask())      # mkdtemp's is private (0700)
        drawn = _write_all(staged, comparison, created)
        _put_in_place(staged, out)
    except OSError as e:
        raise UserError(f"--out {out}: cannot write ({e.strerror})") from None
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    return drawn
