"""The comparison as tables: the text table and summary lines printed on
stdout (values with their ratio to the baseline beside them), and
compare.csv's header and rows (every metric of every directory, and the
ratios). Values and ratios are formatted here for the page too."""
from storlab_cli.common import csv_out, text_table
from storlab_cli.compare import ratios
from storlab_cli.results import points_csv

CSV_NAME = "compare.csv"
RATIO_SUFFIX = "_ratio"
RATIO_METRICS = points_csv.NUMBER_COLUMNS    # compare.csv has a ratio of each
RATIO_WIDTH = 6                   # room for "12.3x" and a space, so ratios line up
# The summary's: a geometric mean of the ratios of each.
SUMMARY_METRICS = (("IOPS", "iops"), ("mean latency", "lat_mean_us"))


def format_value(value):
    if value is None:
        return ""
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def format_ratio(value):
    if value is None:
        return ""
    if value >= 100:
        return f"{value:.0f}x"
    if value >= 10:
        return f"{value:.1f}x"
    return f"{value:.2f}x"


# --- stdout -------------------------------------------------------------------------

def _text_cell(point, run_index, column):
    value = format_value(ratios.metric_value(point.rows[run_index], column))
    if run_index == 0 or not value:
        return value
    return value + format_ratio(ratios.point_ratio(point, run_index, column)).rjust(RATIO_WIDTH)


def table_lines(comparison):
    """A row per point and metric, a column per directory: its value, and
    beside it the ratio to the baseline (the first column)."""
    metrics = ratios.shown_metrics(comparison)
    headers = [*comparison.keys, "metric", *(run.label for run in comparison.runs)]
    rows = []
    for point in comparison.points:
        for n, metric in enumerate(metrics):
            keys = [csv_out.cell(v) for v in point.key] if n == 0 else [""] * len(point.key)
            rows.append([*keys, metric, *(_text_cell(point, i, metric)
                                          for i in range(len(comparison.runs)))])
    align = "l" * (len(comparison.keys) + 1) + "r" * len(comparison.runs)
    return text_table.lines(headers, rows, align)


def summary_lines(comparison):
    base = comparison.baseline
    lines = [f"{base.label}: the baseline, {_points(len(base.table.rows))}"]
    for i, run in enumerate(comparison.runs[1:], start=1):
        parts, matched = [], 0
        for what, column in SUMMARY_METRICS:
            mean, count = ratios.geometric_mean_ratio(comparison, i, column)
            parts.append(f"{what} {format_ratio(mean) or 'n/a'}")
            matched = max(matched, count)
        if matched:
            lines.append(f"{run.label}: {', '.join(parts)} vs {base.label} (geometric mean "
                         f"over {matched} matched point{'' if matched == 1 else 's'})")
        else:
            lines.append(f"{run.label}: no point in common with {base.label}")
    return lines


def _points(n):
    return f"{n} point{'' if n == 1 else 's'}"


# --- compare.csv --------------------------------------------------------------------

def csv_header(comparison):
    return [*comparison.keys, "directory", "point", *points_csv.METRIC_COLUMNS,
            *(c + RATIO_SUFFIX for c in RATIO_METRICS)]


def csv_rows(comparison):
    """A row per point and directory, the directory's blanks where it lacks the point."""
    for point in comparison.points:
        for i, (run, row) in enumerate(zip(comparison.runs, point.rows)):
            values = [row.get(c) if row else None for c in ("point", *points_csv.METRIC_COLUMNS)]
            yield [*point.key, run.label, *values,
                   *(ratios.point_ratio(point, i, c) for c in RATIO_METRICS)]
