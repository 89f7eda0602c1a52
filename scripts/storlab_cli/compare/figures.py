"""The comparison's figures, drawn by gnuplot with report/plots.py's helpers
into OUT/plots/: IOPS and mean latency versus the x key, overlaid — a
directory is a colour, a series value a dash and a marker."""
import os

from storlab_cli import deps
from storlab_cli.common import csv_out
from storlab_cli.compare import ratios
from storlab_cli.report import plots

POINT_TYPES = (7, 9, 5, 11, 13, 6, 8, 4, 10, 12)   # gnuplot markers, a series value each


def plot_axes(comparison):
    """(x key, series keys): the baseline's plot.x when it is matched on (else
    the first key), its plot.series, then every other key taking more than one
    value, so no two points of a directory share a place."""
    plot = comparison.baseline.manifest.get("plot") or {}
    keys = comparison.keys
    x_key = plot.get("x") if plot.get("x") in keys else keys[0]
    series = [plot["series"]] if plot.get("series") in keys and plot["series"] != x_key else []
    series += [k for k in keys if k != x_key and k not in series
               and len({p.key[keys.index(k)] for p in comparison.points}) > 1]
    return x_key, series


def _grouping(comparison):
    x_key, series_keys = plot_axes(comparison)
    keys = comparison.keys

    def cells(point, wanted):
        return tuple(csv_out.cell(point.key[keys.index(k)]) for k in wanted)

    return plots.Grouping(
        x_key, series_keys,
        list(dict.fromkeys(cells(p, [x_key])[0] for p in comparison.points)),
        list(dict.fromkeys(cells(p, series_keys) for p in comparison.points))), cells


def _overlay(comparison, column, what, unit_divisor=1.0, unit=""):
    """One figure of column vs the x key: a line per directory (its colour)
    and series value (its dash and marker)."""
    group, cells = _grouping(comparison)
    title = f"{what} vs {group.x_key}" + (f" by {', '.join(group.series_keys)}"
                                          if group.series_keys else "")
    script = plots.Script(f"{title}: {' vs '.join(r.label for r in comparison.runs)}")
    everything = []
    for i, run in enumerate(comparison.runs):
        colour = plots.darker(plots.PALETTE[i % len(plots.PALETTE)], 0.85)
        for j, values in enumerate(group.series):
            at = {cells(p, [group.x_key])[0]: ratios.metric_value(p.rows[i], column)
                  for p in comparison.points if cells(p, group.series_keys) == values}
            rows = [[n, None if at.get(c) is None else at[c] / unit_divisor]
                    for n, c in enumerate(group.categories)]
            if all(r[1] is None for r in rows):
                continue
            everything += [r[1] for r in rows]
            series = group.series_label(values)
            legend = f"{run.label} · {series}" if series else run.label
            script.element(f"{script.data(rows)} using 1:2 with linespoints dt {j % 5 + 1} "
                           f"lw 2 pt {POINT_TYPES[j % len(POINT_TYPES)]} ps 1.2 lc rgb '{colour}' "
                           f"title {plots.quote(legend)}")
    if not script.elements:
        return None
    top = plots.axis_top(everything)
    script.add(f"set xlabel {plots.quote(group.x_key)}",
               f"set ylabel {plots.quote(what + (f' ({unit})' if unit else ''))}",
               f"set yrange [0:{top}]", plots.axis_format("y", top))
    plots.category_tics(script, group.categories)
    return script


def _mean_latency_overlay(comparison):
    values = [ratios.metric_value(row, "lat_mean_us") for p in comparison.points for row in p.rows]
    divisor, unit = plots.latency_scale(values)
    return _overlay(comparison, "lat_mean_us", "mean latency", divisor, unit)


FIGURES = (("iops", lambda c: _overlay(c, "iops", "IOPS")),
           ("latency", _mean_latency_overlay))


def render_figures(comparison, out_dir):
    """Draws the figures there is data for into out_dir/plots/; returns
    [plots.Figure]."""
    deps.ensure_packages(deps.PLOT_PACKAGES)
    plots_dir = os.path.join(out_dir, "plots")
    os.makedirs(plots_dir, exist_ok=True)
    return plots.draw(plots_dir, FIGURES, comparison)
