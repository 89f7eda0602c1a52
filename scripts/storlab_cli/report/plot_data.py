"""Reading a results directory for plotting: manifest.json, points.csv, the
simulator's sim/points.csv, and each point's timeline.csv and events.csv.

Everything is checked on the way in, so a bad file is one UserError naming the
file (and line, and column) instead of a crash in the middle of a figure.
Empty cells mean n/a and come out as None.
"""
import csv
import json
import math
import os
import re
from dataclasses import dataclass, field

from storlab_cli.results import directory as results_dir, points_csv, timeline
from storlab_cli.schema.sweep import PLOT_MARKS
from storlab_cli.errors import UserError

# The measured columns of timeline.csv, as its writer defines them (points.csv's:
# points_csv.METRIC_COLUMNS).
TIMELINE_COLUMNS = list(timeline.COLUMNS)
POINT_DIR_RE = re.compile(r"^\d{3,}$")


@dataclass
class Table:
    """A CSV file: its columns and rows (dicts of column -> raw string)."""
    path: str
    columns: list
    rows: list

    def number(self, row, column):
        """The cell as a float; None when empty, absent or not finite."""
        return number_or_none(row.get(column, ""))


@dataclass
class PointTimeline:
    point: int
    timeline: Table
    events: list = field(default_factory=list)   # [(t_s, what)]


@dataclass
class Results:
    directory: str
    manifest: dict
    points: Table                 # rows sorted by point index
    sim: Table | None             # DIR/sim/points.csv, when present
    timelines: list               # [PointTimeline], by point index

    @property
    def swept(self):
        return list(self.manifest.get("swept") or [])

    def plot_setting(self, key):
        return (self.manifest.get("plot") or {}).get(key)


def number_or_none(text):
    text = (text or "").strip()
    if not text:
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def _is_number(text):
    try:
        number_or_none(text)
        return True
    except ValueError:
        return False


def read_csv(path, required=(), numeric=(), integer=()):
    """A header-row CSV (RFC 4180) as a Table; cells of `numeric` columns must be
    numbers or empty, of `integer` columns non-negative integers, and every row
    must have as many fields as the header."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            reader = csv.reader(f)
            try:
                header = next(reader, None)
                if header is None:
                    raise UserError(f"{path}: empty, expected a header row")
                header = [name.strip() for name in header]
                for name in required:
                    if name not in header:
                        raise UserError(f"{path}: no '{name}' column in the header row")
                duplicates = sorted({n for n in header if header.count(n) > 1})
                if duplicates:
                    raise UserError(f"{path}: column '{duplicates[0]}' appears twice")
                rows = []
                for fields in reader:
                    if not fields:        # a blank line
                        continue
                    line = reader.line_num
                    if len(fields) != len(header):
                        raise UserError(f"{path} line {line}: {len(fields)} fields, "
                                        f"the header has {len(header)}")
                    row = dict(zip(header, fields))
                    for name in numeric:
                        if name in row and not _is_number(row[name]):
                            raise UserError(f"{path} line {line}: {name} '{row[name]}' "
                                            "is not a number")
                    for name in integer:
                        row[name] = row[name].strip()
                        if not re.fullmatch(r"[0-9]+", row[name]):
                            raise UserError(f"{path} line {line}: {name} '{row[name]}' "
                                            "is not a point index")
                    rows.append(row)
            except csv.Error as e:
                raise UserError(f"{path} line {reader.line_num}: {e}") from None
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory, expected a CSV file") from None
    return Table(path, header, rows)


def load_manifest(path):
    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
    except FileNotFoundError:
        raise UserError(f"{path}: no such file (not a storlab results directory?)") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise UserError(f"{path}: not valid JSON ({e.msg} at line {e.lineno})") from None
    if not isinstance(manifest, dict):
        raise UserError(f"{path}: expected a JSON object")
    swept = manifest.get("swept", [])
    if not isinstance(swept, list) or not all(isinstance(k, str) for k in swept):
        raise UserError(f"{path}: 'swept' must be a list of column names")
    plot = manifest.get("plot", {})
    if plot is None:
        plot = {}
    if not isinstance(plot, dict):
        raise UserError(f"{path}: 'plot' must be an object with 'x' and 'series'")
    for key in ("x", "series"):
        value = plot.get(key)
        if value is not None and not isinstance(value, str):
            raise UserError(f"{path}: plot.{key} must be a column name or null")
    for key in ("per_node", "x_per_host"):
        if plot.get(key) is not None and not isinstance(plot[key], bool):
            raise UserError(f"{path}: plot.{key} must be true, false or null")
    names = plot.get("names") or {}
    if not isinstance(names, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                              for k, v in names.items()):
        raise UserError(f"{path}: plot.names must map column names to names")
    mark, mark_bytes = plot.get("mark"), plot.get("mark_bytes")
    if mark is not None and mark not in PLOT_MARKS:
        raise UserError(f"{path}: plot.mark must be {', '.join(PLOT_MARKS)} or null")
    if mark is not None and (isinstance(mark_bytes, bool) or not isinstance(mark_bytes, int)
                             or mark_bytes <= 0):
        raise UserError(f"{path}: plot.mark_bytes must be the bytes per host plot.mark marks")
    return manifest


def load_points(path, swept):
    """points.csv (or sim/points.csv): 'point' an integer, metrics numbers,
    every swept key a column; rows sorted by point."""
    table = read_csv(path, required=["point"] + list(swept),
                     numeric=[c for c in points_csv.NUMBER_COLUMNS if c not in swept],
                     integer=["point"])
    table.rows.sort(key=lambda r: int(r["point"]))
    return table


def load_events(path):
    table = read_csv(path, required=["t_s", "what"], numeric=["t_s"])
    events = []
    for row in table.rows:
        t_s = table.number(row, "t_s")
        if t_s is not None:
            events.append((t_s, row["what"]))
    return events


def load_timelines(directory):
    """Every DIR/points/NNN/timeline.csv, with the events.csv beside it."""
    points_dir = os.path.join(directory, "points")
    if not os.path.isdir(points_dir):
        return []
    timelines = []
    for name in sorted(os.listdir(points_dir), key=lambda n: (len(n), n)):
        path = os.path.join(points_dir, name, "timeline.csv")
        if not POINT_DIR_RE.match(name) or not os.path.isfile(path):
            continue
        timeline = read_csv(path, required=["t_s"],
                            numeric=[c for c in TIMELINE_COLUMNS])
        events_path = os.path.join(points_dir, name, "events.csv")
        events = load_events(events_path) if os.path.isfile(events_path) else []
        timelines.append(PointTimeline(int(name), timeline, events))
    return timelines


def load_results(directory):
    if not os.path.isdir(directory):
        raise UserError(f"{directory}: no such results directory")
    manifest_path = os.path.join(directory, "manifest.json")
    manifest = load_manifest(manifest_path)
    swept = manifest.get("swept", [])
    points = load_points(os.path.join(directory, "points.csv"), swept)
    for key in ("x", "series"):
        column = (manifest.get("plot") or {}).get(key)
        if column is not None and column != "point" and column not in points.columns:
            raise UserError(f"{manifest_path}: plot.{key} '{column}' is not a column of "
                            f"{points.path}")
    sim_path = os.path.join(directory, results_dir.SIM_DIR, "points.csv")
    sim = load_points(sim_path, swept) if os.path.exists(sim_path) else None
    for table in (points, sim):
        if (manifest.get("plot") or {}).get("per_node") and table is not None \
                and "nodes" not in table.columns:
            raise UserError(f"{table.path}: no 'nodes' column, which plot.per_node divides "
                            "by (written before points.csv had it)")
    return Results(directory, manifest, points, sim, load_timelines(directory))
