"""The numbers of a comparison: a point's metric in one directory, its ratio
to the baseline's, the geometric mean of those ratios over the matched
points, and which metrics have data enough to show."""
import math

from storlab_cli.results import points_csv

# The table's metrics: each total, then its read and write halves
# (points_csv.METRIC_COLUMNS spells them all; checked below).
MAIN_METRICS = ("iops", "lat_mean_us", "lat_p99_us")
SPLIT_PREFIXES = ("read_", "write_")

for _metric in MAIN_METRICS:
    for _column in (_metric, *(p + _metric for p in SPLIT_PREFIXES)):
        assert _column in points_csv.METRIC_COLUMNS, _column


def metric_value(row, column):
    """The row's number in column; None where the row is (the point is not
    in that directory), or the cell empty or a word."""
    value = row.get(column) if row else None
    return value if isinstance(value, float) else None


def ratio(value, baseline):
    if value is None or baseline is None or baseline <= 0:
        return None
    return value / baseline


def point_ratio(point, run_index, column):
    """The point's column in run run_index over the baseline's (run 0)."""
    return ratio(metric_value(point.rows[run_index], column),
                 metric_value(point.rows[0], column))


def geometric_mean_ratio(comparison, run_index, column):
    """(geometric mean of the ratios to the baseline, points it is over)."""
    ratios = [point_ratio(p, run_index, column) for p in comparison.points]
    ratios = [r for r in ratios if r is not None and r > 0]
    if not ratios:
        return None, 0
    return math.exp(sum(math.log(r) for r in ratios) / len(ratios)), len(ratios)


def _has_data(comparison, column):
    return any(metric_value(row, column) is not None
               for p in comparison.points for row in p.rows)


def shown_metrics(comparison):
    """The main metrics with data; the read/write halves only where both
    have data (a read-only run's read figures are its totals)."""
    shown = []
    for metric in MAIN_METRICS:
        if _has_data(comparison, metric):
            shown.append(metric)
        halves = [prefix + metric for prefix in SPLIT_PREFIXES]
        if all(_has_data(comparison, half) for half in halves):
            shown += halves
    return shown
