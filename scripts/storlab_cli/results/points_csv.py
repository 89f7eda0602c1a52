"""points.csv of a sweep: one row per complete point, the swept values and
the cluster figures (fio_merge.point_metrics, device_window metrics), in the
contract's column order. Written whole after every point; read back by the
plots."""
import csv
from dataclasses import dataclass

from storlab_cli.common import csv_out
from storlab_cli.errors import UserError

# units_run: the fio results merged (was "units", a name a sweep of the
# workload's units per node needs for itself)
METRIC_COLUMNS = (
    "units_run",
    "iops", "read_iops", "write_iops",
    "mb_s", "read_mb_s", "write_mb_s",
    "lat_mean_us", "lat_p50_us", "lat_p99_us", "lat_p99_9_us",
    "read_lat_mean_us", "read_lat_p99_us", "write_lat_mean_us", "write_lat_p99_us",
    "dev_iops", "dev_lat_mean_us",
    "member_iops",
    "cache_hit_pct", "dirty_mb",
    "dev_qd_mean", "release_late_p99_us",
    "host_limit",
    # the cluster model's own layers (simulator, profile targets; cluster_layers.py),
    # the first three a lab's disk groups' too (stack_window.py)
    "stack_cache_hit_pct", "write_buffer_fill_pct", "destage_mb_s",
    "cpu_util_pct", "link_util_pct", "start_state", "data_reduction_pct",
    # the nodes whose fio ran (the point's active nodes; raw_point.RawPoint.nodes)
    "nodes",
    # a lab point: how far apart its units' fio ended (their windows' overlap)
    "units_end_spread_s",
    # whether the window was steady (steady_state.py: SNIA PTS's range and slope)
    "iops_range_pct", "iops_slope_pct",
)
# Columns holding words: host_limit names what held a lab point back
# (host_limit.REASONS codes joined by '+'; empty: nothing did, or the simulator);
# start_state, what the simulator's caches started from (warm or empty).
TEXT_COLUMNS = ("host_limit", "start_state")
# The rest hold numbers (or are empty).
NUMBER_COLUMNS = tuple(c for c in METRIC_COLUMNS if c not in TEXT_COLUMNS)
# Results written before the host columns, or the cluster's, existed read
# with those empty.
# with those empty; and before units_run had its name, with "units" first.
EARLIER_UNITS_COLUMN = "units"
_SHORTER = (METRIC_COLUMNS[:METRIC_COLUMNS.index("iops_range_pct")],         # or steadiness
            METRIC_COLUMNS[:METRIC_COLUMNS.index("units_end_spread_s")],     # or the spread
            METRIC_COLUMNS[:METRIC_COLUMNS.index("nodes")],                   # or nodes
            METRIC_COLUMNS[:METRIC_COLUMNS.index("data_reduction_pct")],
            METRIC_COLUMNS[:METRIC_COLUMNS.index("stack_cache_hit_pct")],
            METRIC_COLUMNS[:METRIC_COLUMNS.index("dev_qd_mean")])
EARLIER_METRIC_COLUMNS = _SHORTER + tuple((EARLIER_UNITS_COLUMN,) + m[1:]
                                          for m in (METRIC_COLUMNS,) + _SHORTER)


@dataclass(frozen=True)
class Table:
    swept: tuple        # swept keys, in sweep-file order
    columns: tuple      # every column, in file order
    rows: list          # {column: int (point) | float | str (a swept word) | None}


def columns(swept):
    """point, the swept keys, then METRIC_COLUMNS."""
    swept = tuple(swept)
    for key in swept:
        if not isinstance(key, str) or not key:
            raise UserError(f"swept key {key!r} is not a name")
        if key == "point" or key in METRIC_COLUMNS:
            raise UserError(f"swept key '{key}' clashes with a points.csv column")
    if len(set(swept)) != len(swept):
        raise UserError(f"swept keys repeat: {', '.join(swept)}")
    return ("point",) + swept + METRIC_COLUMNS


def write(path, rows, swept):
    """Write (or rewrite) points.csv from row dicts: 'point', every swept key,
    any of METRIC_COLUMNS (missing = empty). Rows come out by point."""
    header = columns(swept)
    known = set(header)
    seen = set()
    lines = []
    for row in rows:
        point = row.get("point")
        if isinstance(point, bool) or not isinstance(point, int) or point < 0:
            raise UserError(f"{path}: row without a point index ({point!r})")
        if point in seen:
            raise UserError(f"{path}: point {point} twice")
        seen.add(point)
        unknown = sorted(set(row) - known)
        if unknown:
            raise UserError(f"{path}: point {point}: unknown column(s) {', '.join(unknown)}")
        missing = [k for k in swept if k not in row]
        if missing:
            raise UserError(f"{path}: point {point}: no value for swept {', '.join(missing)}")
        lines.append((point, [row.get(c) for c in header]))
    try:
        csv_out.write(path, header, [values for _, values in sorted(lines, key=lambda x: x[0])])
    except TypeError as e:
        raise UserError(f"{path}: {e}") from None


def _value(text, column, where, swept):
    if text == "":
        return None
    if column == "point":
        try:
            return int(text)
        except ValueError:
            raise UserError(f"{where}: point '{text}' is not an index") from None
    if column in TEXT_COLUMNS:
        return text
    try:
        return float(text)
    except ValueError:
        if column in swept:
            return text
        raise UserError(f"{where}: {column} '{text}' is not a number") from None


def read(path):
    """Table of a points.csv: numbers as float (point as int), empty as None,
    swept words (e.g. battery 'ok') as str."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            records = list(csv.reader(f))
    except OSError as e:
        raise UserError(f"{path}: cannot read ({e.strerror})") from None
    except (csv.Error, UnicodeDecodeError) as e:
        raise UserError(f"{path}: not CSV ({e})") from None
    if not records:
        raise UserError(f"{path}: empty, no header row")
    header = tuple(records[0])
    metrics = next((m for m in (METRIC_COLUMNS, *EARLIER_METRIC_COLUMNS)
                    if len(header) > len(m) and header[0] == "point"
                    and header[-len(m):] == m), None)
    if metrics is None:
        raise UserError(f"{path}: header is not point, <swept keys>, {', '.join(METRIC_COLUMNS[:2])}, ...")
    swept = header[1:-len(metrics)]
    header = header[:-len(metrics)] + METRIC_COLUMNS[:len(metrics)]    # units -> units_run
    rows = []
    for line, record in enumerate(records[1:], start=2):
        if not record:
            continue
        if len(record) != len(header):
            raise UserError(f"{path}: line {line}: {len(record)} fields, the header has {len(header)}")
        row = {c: None for c in METRIC_COLUMNS}
        row.update({c: _value(t, c, f"{path}: line {line}", swept) for c, t in zip(header, record)})
        rows.append(row)
    return Table(swept=swept, columns=("point",) + swept + METRIC_COLUMNS, rows=rows)
