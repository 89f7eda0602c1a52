"""Figures of a results directory, drawn by gnuplot from the CSVs only.

Each figure is a generated gnuplot script (DIR/plots/NAME.gp, its data inline
as datablocks, so it can be rerun or tweaked by hand) that writes NAME.png
(pngcairo) and NAME.svg. The figures, in the manner of storage vendors' white
papers:
  iops-latency   IOPS bars, mean and p99 latency lines on a second axis, versus
                 manifest plot.x; one bar per series side by side
  bandwidth      MB/s versus block size (when a bs key is swept)
  hockey         latency versus IOPS, one line per series, in sweep order
  layers         IOPS (bars) and mean latency (lines) at each layer of the stack
                 side by side: the VMs (fio), the devices, a raid device's
                 member disks; for a profile target or a raid device, one series
  timeline-NNN   IOPS and latency over time of point NNN, live events marked
The simulator's prediction (DIR/sim/points.csv) is overlaid on iops-latency and
hockey as "simulator": IOPS as points, latency dashed. The manifest's plot
settings (per node, working set per host, a cache size marked): report/axes.py.
"""
import os
import subprocess
import textwrap
from dataclasses import dataclass

from storlab_cli import deps
from storlab_cli.report import axes
from storlab_cli.errors import UserError

WIDTH_PX, HEIGHT_PX = 1000, 600
FONT = "Sans,10"
TITLE_MAX_CHARS = 90         # a title line at 14 pt across WIDTH_PX; longer ones wrap
GNUPLOT_TIMEOUT_S = 60
# Tableau 10: bar fill per series; lines use a darker shade of the same hue.
PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1",
           "#76b7b2", "#edc948", "#ff9da7", "#9c755f", "#bab0ac"]
MS_THRESHOLD_US = 1000.0     # latency shown in ms once the largest value reaches 1 ms
MAX_POINT_LABELS = 60        # hockey: label points with their x value up to this many
BS_KEYS = ("bs", "block_size")
TIMELINE_HEADROOM = 1.3      # room above the data for the event labels


@dataclass(frozen=True)
class Figure:
    name: str
    title: str

    @property
    def png(self):
        return f"plots/{self.name}.png"

    @property
    def svg(self):
        return f"plots/{self.name}.svg"


# --- gnuplot text -------------------------------------------------------------

def quote(text):
    """A gnuplot single-quoted string: '' is the only escape; one line."""
    text = " ".join(str(text).splitlines())
    return "'" + text.replace("'", "''") + "'"


def title_text(text):
    """A gnuplot string expression for a title: quoted lines joined by
    newlines, wrapped at words so that none runs past the figure's width."""
    lines = textwrap.wrap(" ".join(str(text).splitlines()), TITLE_MAX_CHARS) or [""]
    return ' . "\\n" . '.join(quote(line) for line in lines)


def _num(value):
    return "NaN" if value is None else repr(float(value))


def darker(colour, factor=0.62):
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return "#%02x%02x%02x" % tuple(int(c * factor) for c in (r, g, b))


class Script:
    """A gnuplot script being built: settings, datablocks, plot elements."""

    def __init__(self, title):
        self.title = title
        self.lines = [
            "set encoding utf8",
            f"set title {title_text(title)} font ',14'",
            "set border 3 lw 1 lc rgb '#555555'",
            "set tics out nomirror",
            "set grid ytics lt 1 lw 1 lc rgb '#e3e3e3'",
            "set key outside below center horizontal Left reverse noenhanced spacing 1.2 "
            "height 1",
            "set style textbox opaque noborder margins 0.5,0.5",
            "set style fill solid 0.9 border lc rgb '#404040'",
            "set datafile missing 'NaN'",
        ]
        self.blocks = []
        self.elements = []

    def add(self, *lines):
        self.lines.extend(lines)

    def data(self, rows):
        """A datablock of numeric rows (None = n/a); returns its name."""
        name = f"$d{len(self.blocks)}"
        self.blocks.append([f"{name} << EOD"]
                           + [" ".join(_num(v) for v in row) for row in rows] + ["EOD"])
        return name

    def element(self, text):
        self.elements.append(text)

    def text(self, name):
        out = [line for block in self.blocks for line in block] + self.lines
        plot = "plot " + ", \\\n     ".join(self.elements)
        for terminal, suffix in (("pngcairo", "png"), ("svg", "svg")):
            out += [f"set terminal {terminal} size {WIDTH_PX},{HEIGHT_PX} font '{FONT}' "
                    "noenhanced background '#ffffff'",
                    f"set output {quote(name + '.' + suffix)}", plot]
        out.append("unset output")
        return "\n".join(out) + "\n"


def run_gnuplot(plots_dir, name, script_text):
    """Writes plots_dir/NAME.gp and runs gnuplot on it there."""
    script_path = os.path.join(plots_dir, f"{name}.gp")
    with open(script_path, "w", encoding="utf-8") as f:
        f.write(script_text)
    try:
        result = subprocess.run(["gnuplot", f"{name}.gp"], cwd=plots_dir, capture_output=True,
                                text=True, timeout=GNUPLOT_TIMEOUT_S, check=False)
    except FileNotFoundError:
        raise UserError(f"plot {name}: gnuplot is not installed (Debian: gnuplot-nox)") from None
    except subprocess.TimeoutExpired:
        raise UserError(f"plot {name}: gnuplot took over {GNUPLOT_TIMEOUT_S} s") from None
    if result.returncode != 0:
        lines = [line.strip() for line in result.stderr.splitlines() if line.strip()]
        detail = lines[-1] if lines else f"exit status {result.returncode}"
        raise UserError(f"plot {name}: gnuplot failed: {detail} (script {script_path})")
    for suffix in ("png", "svg"):
        path = os.path.join(plots_dir, f"{name}.{suffix}")
        if not os.path.isfile(path) or os.path.getsize(path) == 0:
            raise UserError(f"plot {name}: gnuplot wrote no {suffix} ({script_path})")


# --- what goes on the axes ------------------------------------------------------

def latency_scale(values_us):
    """(divisor, unit) for latencies: µs, or ms once the largest reaches 1 ms."""
    finite = [v for v in values_us if v is not None]
    if finite and max(finite) >= MS_THRESHOLD_US:
        return 1000.0, "ms"
    return 1.0, "µs"


def _scaled(value, divisor):
    return None if value is None else value / divisor


def axis_top(values, headroom=1.15):
    finite = [v for v in values if v is not None]
    top = max(finite) if finite else 0.0
    return top * headroom if top > 0 else 1.0


def _has_data(rows, column):
    return any(row[column] is not None for row in rows)


def axis_format(axis, top):
    return f"set format {axis} '%.0f'" if top >= 10 else f"set format {axis} '%g'"


def name_of(results, key):
    """What the figures call a column: the sweep's plot.names, else the key."""
    return (results.plot_setting("names") or {}).get(key, key)


@dataclass
class Grouping:
    """Rows arranged for a figure: categories along x (sweep order), series
    (tuples of the series keys' values, in order of first appearance)."""
    x_key: str
    series_keys: list
    categories: list
    series: list
    names: dict = None         # plot.names: key -> what the figures call it

    def series_label(self, values):
        """'battery=ok': keys without their table prefix (the title has them
        whole), or as plot.names calls them."""
        names = self.names or {}
        return ", ".join(f"{names.get(k, k.rsplit('.', 1)[-1])}={v}"
                         for k, v in zip(self.series_keys, values))

    def key_of(self, row):
        return (row[self.x_key], tuple(row[k] for k in self.series_keys))


def _first_seen(values):
    seen = {}
    for value in values:
        seen.setdefault(value, None)
    return list(seen)


def grouping(results, x_key, series_keys):
    rows = results.points.rows + (results.sim.rows if results.sim else [])
    return Grouping(x_key, list(series_keys),
                    axes.ordered(results, x_key, _first_seen(row[x_key] for row in rows)),
                    _first_seen(tuple(row[k] for k in series_keys) for row in rows),
                    results.plot_setting("names") or {})


def plot_axes(results):
    """(x key, series keys): manifest plot.x (default: the first swept key, or
    the point index), then plot.series and every other swept key that takes
    more than one value as series, so no two points share a bar."""
    swept = results.swept
    x_key = results.plot_setting("x") or (swept[0] if swept else "point")
    series_key = results.plot_setting("series")
    series_keys = [series_key] if series_key and series_key != x_key else []
    rows = results.points.rows + (results.sim.rows if results.sim else [])
    series_keys += [k for k in swept if k not in series_keys and k != x_key
                    and len({row[k] for row in rows}) > 1]
    return axes.x_column(results, x_key), series_keys


def _index(table, group):
    return {group.key_of(row): row for row in table.rows} if table else {}


def _legend(what, group, values, simulator=False):
    label = group.series_label(values)
    text = f"simulator {what}" if simulator else what
    return f"{text} · {label}" if label else text


def category_tics(script, categories):
    tics = ", ".join(f"{quote(c)} {i}" for i, c in enumerate(categories))
    rotate = len(categories) > 8 or max((len(c) for c in categories), default=0) > 10
    script.add(f"set xtics ({tics})" + (" rotate by 30 right" if rotate else ""),
               f"set xrange [-0.6:{len(categories) - 0.4}]")


# --- the figures ----------------------------------------------------------------

def _title(results, what):
    name = results.manifest.get("name")
    return f"{name} — {what}" if name else what


def iops_latency(results):
    x_key, series_keys = plot_axes(results)
    group = grouping(results, x_key, series_keys)
    lab, sim = _index(results.points, group), _index(results.sim, group)
    latencies = [t.number(r, c) for t, idx in ((results.points, lab), (results.sim, sim))
                 for r in idx.values() for c in ("lat_mean_us", "lat_p99_us")]
    divisor, unit = latency_scale(latencies)
    width = 0.8 / max(1, len(group.series))

    def rows_of(table, index, offset, values):
        rows = []
        for i, category in enumerate(group.categories):
            row = index.get((category, values))
            get = (lambda c: axes.metric(results, table, row, c)) if row else (lambda c: None)
            rows.append([i + offset, get("iops"), _scaled(get("lat_mean_us"), divisor),
                         _scaled(get("lat_p99_us"), divisor)])
        return rows

    iops = axes.per_node_text(results, "IOPS")
    title = f"{iops} and latency vs {name_of(results, x_key)}" + (
        f" by {', '.join(name_of(results, k) for k in series_keys)}" if series_keys else "")
    script = Script(_title(results, title))
    bars, sim_iops, lines, iops_all, lat_all = [], [], [], [], []
    for j, values in enumerate(group.series):
        offset = (j - (len(group.series) - 1) / 2) * width
        fill = PALETTE[j % len(PALETTE)]
        line = darker(fill)
        for table, index, simulator in ((results.points, lab, False), (results.sim, sim, True)):
            if table is None:
                continue
            rows = rows_of(table, index, offset, values)
            iops_all += [r[1] for r in rows]
            lat_all += [v for r in rows for v in r[2:]]
            block = None
            if _has_data(rows, 1) or _has_data(rows, 2) or _has_data(rows, 3):
                block = script.data(rows)
            if block and _has_data(rows, 1):
                if simulator:
                    sim_iops.append(f"{block} using 1:2 with linespoints dt 3 lw 1.5 pt 12 "
                                    f"ps 1.8 lc rgb '{line}' "
                                    f"title {quote(_legend(iops, group, values, True))}")
                else:
                    bars.append(f"{block} using 1:2 with boxes lc rgb '{fill}' "
                                f"title {quote(_legend(iops, group, values))}")
            for column, what, solid_pt, open_pt in ((3, "mean latency", 7, 6),
                                                    (4, "p99 latency", 9, 8)):
                if block and _has_data(rows, column - 1):
                    style = (f"dt 2 lw 2 pt {open_pt}" if simulator
                             else f"dt 1 lw 2 pt {solid_pt}")
                    lines.append(f"{block} using 1:{column} axes x1y2 with linespoints {style} "
                                 f"ps 1.1 lc rgb '{line}' "
                                 f"title {quote(_legend(what, group, values, simulator))}")
    if not (bars or sim_iops or lines):
        return None
    script.add(f"set boxwidth {width * 0.92} absolute",
               f"set xlabel {quote(name_of(results, x_key))}", f"set ylabel {quote(iops)}",
               f"set yrange [0:{axis_top(iops_all)}]", axis_format("y", axis_top(iops_all)))
    category_tics(script, group.categories)
    cache = axes.mark(results, group.categories)
    if cache:
        marker(script, *cache, (cache[0] + 0.6) / len(group.categories))
    if lines:
        script.add("set border 11 lw 1 lc rgb '#555555'", "set y2tics nomirror",
                   f"set y2label {quote(f'latency ({unit})')}",
                   f"set y2range [0:{axis_top(lat_all)}]", axis_format("y2", axis_top(lat_all)))
    for element in bars + sim_iops + lines:
        script.element(element)
    return script


def bandwidth(results):
    bs_key = next((k for k in results.swept
                   if k in BS_KEYS or k.rsplit(".", 1)[-1] in BS_KEYS), None)
    if bs_key is None:
        return None
    x_key, series_keys = plot_axes(results)
    # plot.x becomes a series here, unless it is the block size or takes one value.
    if x_key in (bs_key, "point") or len({row[x_key] for row in results.points.rows}) < 2:
        series_keys = [k for k in series_keys if k != bs_key]
    else:
        series_keys = [x_key] + [k for k in series_keys if k != bs_key]
    group = grouping(results, bs_key, series_keys)
    group.categories = _first_seen(row[bs_key] for row in results.points.rows)
    lab = _index(results.points, group)
    width = 0.8 / max(1, len(group.series))
    mb_s = axes.per_node_text(results, "MB/s")
    script = Script(_title(results, f"Bandwidth vs {name_of(results, bs_key)}"))
    all_mb_s = []
    for j, values in enumerate(group.series):
        offset = (j - (len(group.series) - 1) / 2) * width
        rows = []
        for i, category in enumerate(group.categories):
            row = lab.get((category, values))
            rows.append([i + offset, axes.metric(results, results.points, row, "mb_s")
                         if row else None])
        all_mb_s += [r[1] for r in rows]
        if _has_data(rows, 1):
            block = script.data(rows)
            script.element(f"{block} using 1:2 with boxes lc rgb '{PALETTE[j % len(PALETTE)]}' "
                           f"title {quote(_legend(mb_s, group, values))}")
    if not script.elements:
        return None
    script.add(f"set boxwidth {width * 0.92} absolute",
               f"set xlabel {quote(name_of(results, bs_key))}",
               f"set ylabel {quote(f'bandwidth ({mb_s})')}",
               f"set yrange [0:{axis_top(all_mb_s)}]", axis_format("y", axis_top(all_mb_s)))
    category_tics(script, group.categories)
    return script


# The layers of the stack a point's I/O passes, top down: (IOPS column,
# mean latency column or None, legend).  The devices are a lab's emulated
# disks or LUNs, or every drive of the simulated cluster; the members a
# raid device's disks behind its controller.
LAYERS = (("iops", "lat_mean_us", "VMs (fio)"), ("dev_iops", "dev_lat_mean_us", "devices"),
          ("member_iops", None, "member disks"))


def layers(results):
    """What each layer does for the VMs' I/O, as the VSA study watched the
    VM, the datastore and the physical adapter: a write that lands on two
    copies shows twice the IOPS below; a cache that serves reads, fewer.
    Totals over every node (the layers below the VMs serve inactive nodes'
    copies too). None when only one layer has figures, when the sweep
    drives a plain device (no layer below its front end), or when more
    than one series would share the bars."""
    table = results.points
    present = [layer for layer in LAYERS
               if any(table.number(row, layer[0]) is not None for row in table.rows)]
    target = (results.manifest.get("workload") or {}).get("target", "device")
    if len(present) < 2 or (target == "device" and present[-1][0] != "member_iops"):
        return None
    x_key, series_keys = plot_axes(results)
    group = grouping(results, x_key, series_keys)
    if len(group.series) > 1:
        return None
    index = _index(table, group)
    rows = [index.get((category, group.series[0])) for category in group.categories]
    latencies = [table.number(row, c) for row in rows if row for _, c, _ in present if c]
    divisor, unit = latency_scale(latencies)
    width = 0.8 / len(present)
    script = Script(_title(results, f"IOPS and latency at each layer vs "
                                    f"{name_of(results, x_key)}"))
    bars, lines, iops_all, lat_all = [], [], [], []
    for j, (iops_column, latency_column, name) in enumerate(present):
        offset = (j - (len(present) - 1) / 2) * width
        data = [[i + offset, table.number(row, iops_column) if row else None,
                 _scaled(table.number(row, latency_column), divisor)
                 if row and latency_column else None]
                for i, row in enumerate(rows)]
        iops_all += [d[1] for d in data]
        lat_all += [d[2] for d in data]
        block = script.data(data)
        fill = PALETTE[j % len(PALETTE)]
        if _has_data(data, 1):
            bars.append(f"{block} using 1:2 with boxes lc rgb '{fill}' "
                        f"title {quote(f'IOPS, {name}')}")
        if _has_data(data, 2):
            lines.append(f"{block} using 1:3 axes x1y2 with linespoints dt 1 lw 2 pt 7 ps 1.1 "
                         f"lc rgb '{darker(fill)}' title {quote(f'mean latency, {name}')}")
    script.add(f"set boxwidth {width * 0.92} absolute",
               f"set xlabel {quote(name_of(results, x_key))}",
               f"set ylabel {quote('IOPS (all nodes)')}",
               f"set yrange [0:{axis_top(iops_all)}]", axis_format("y", axis_top(iops_all)))
    category_tics(script, group.categories)
    if lines:
        script.add("set border 11 lw 1 lc rgb '#555555'", "set y2tics nomirror",
                   f"set y2label {quote(f'latency ({unit})')}",
                   f"set y2range [0:{axis_top(lat_all)}]", axis_format("y2", axis_top(lat_all)))
    for element in bars + lines:
        script.element(element)
    return script


def hockey(results):
    x_key, series_keys = plot_axes(results)
    group = grouping(results, x_key, series_keys)
    tables = [(results.points, False)] + ([(results.sim, True)] if results.sim else [])
    latencies = [t.number(r, c) for t, _ in tables for r in t.rows
                 for c in ("lat_mean_us", "lat_p99_us")]
    divisor, unit = latency_scale(latencies)
    iops = axes.per_node_text(results, "IOPS")
    script = Script(_title(results, f"Latency vs {iops}"))
    iops_all, lat_all, labels = [], [], []
    for j, values in enumerate(group.series):
        fill = PALETTE[j % len(PALETTE)]
        line = darker(fill)
        for table, simulator in tables:
            rows = [[axes.metric(results, table, r, "iops"),
                     _scaled(table.number(r, "lat_mean_us"), divisor),
                     _scaled(table.number(r, "lat_p99_us"), divisor), r[x_key]]
                    for r in table.rows if group.key_of(r)[1] == values]
            usable = [r for r in rows if r[0] is not None and (r[1] is not None
                                                              or r[2] is not None)]
            if not usable:
                continue
            iops_all += [r[0] for r in usable]
            lat_all += [v for r in usable for v in r[1:3]]
            block = script.data([r[:3] for r in rows])
            for column, what, colour, solid_pt, open_pt in ((3, "p99 latency", line, 9, 8),
                                                            (2, "mean latency", fill, 7, 6)):
                if any(r[column - 1] is not None for r in usable):
                    style = f"dt 2 pt {open_pt}" if simulator else f"dt 1 pt {solid_pt}"
                    script.element(f"{block} using 1:{column} with linespoints {style} lw 2 "
                                   f"ps 1.1 lc rgb '{colour}' "
                                   f"title {quote(_legend(what, group, values, simulator))}")
            if not simulator:
                labels += [(r[3], r[0], r[2] if r[2] is not None else r[1], line)
                           for r in usable]
    if not script.elements:
        return None
    if len(labels) <= MAX_POINT_LABELS:
        for text, x, y, colour in labels:
            script.add(f"set label {quote(text)} at first {x}, first {y} "
                       f"offset char 0.7, char 0.6 font ',8' tc rgb '{colour}' noenhanced")
    script.add(f"set xlabel {quote(iops)}", f"set ylabel {quote(f'latency ({unit})')}",
               f"set xrange [0:{axis_top(iops_all, 1.08)}]", axis_format("x", axis_top(iops_all)),
               f"set yrange [0:{axis_top(lat_all)}]", axis_format("y", axis_top(lat_all)),
               "set grid xtics ytics lt 1 lw 1 lc rgb '#e3e3e3'")
    return script


def _point_params(results, point):
    row = next((r for r in results.points.rows if int(r["point"]) == point), None)
    if row is None:
        return ""
    return ", ".join(f"{k}={row[k]}" for k in results.swept)


def timeline(results, point_timeline):
    table = point_timeline.timeline
    rows = [[table.number(r, "t_s"), table.number(r, "iops"), table.number(r, "lat_mean_us")]
            for r in table.rows]
    rows = [r for r in rows if r[0] is not None]
    if not (_has_data(rows, 1) or _has_data(rows, 2)):
        return None
    divisor, unit = latency_scale([r[2] for r in rows])
    rows = [[t, iops, _scaled(lat, divisor)] for t, iops, lat in rows]
    params = _point_params(results, point_timeline.point)
    what = f"point {point_timeline.point:03d}" + (f" ({params})" if params else "")
    script = Script(_title(results, f"IOPS and latency over time, {what}"))
    block = script.data(rows)
    times = [r[0] for r in rows] + [t for t, _ in point_timeline.events]
    low, high = min(0.0, min(times)), max(times)
    if high <= low:
        high = low + 1.0
    script.add("set xlabel 'time (s)'", f"set xrange [{low}:{high}]", "set ylabel 'IOPS'",
               f"set yrange [0:{axis_top([r[1] for r in rows], TIMELINE_HEADROOM)}]",
               axis_format("y", axis_top([r[1] for r in rows])))
    if _has_data(rows, 1):
        script.element(f"{block} using 1:2 with lines lw 2 lc rgb '{PALETTE[0]}' title 'IOPS'")
    if _has_data(rows, 2):
        script.add("set border 11 lw 1 lc rgb '#555555'", "set y2tics nomirror",
                   f"set y2label {quote(f'mean latency ({unit})')}",
                   f"set y2range [0:{axis_top([r[2] for r in rows], TIMELINE_HEADROOM)}]",
                   axis_format("y2", axis_top([r[2] for r in rows])))
        script.element(f"{block} using 1:3 axes x1y2 with lines lw 2 lc rgb '{PALETTE[3]}' "
                       "title 'mean latency'")
    for index, (t_s, text) in enumerate(point_timeline.events):
        # staggered downwards so neighbouring events do not overprint each other
        marker(script, t_s, text, (t_s - low) / (high - low), 0.96 - 0.06 * (index % 4))
    return script


def marker(script, x, text, across, y=0.96):
    """A dashed vertical line at x with text beside it, horizontal, at y
    (graph fraction): right of the line, or left of it when the line is in
    the right third (across: where x is along the axis, 0..1)."""
    place = "right offset char -0.6, 0" if across > 0.67 else "left offset char 0.6, 0"
    script.add(f"set arrow from first {x}, graph 0 to first {x}, graph 1 nohead "
               "dt 2 lw 1.5 lc rgb '#333333' front",
               f"set label {quote(text)} at first {x}, graph {y:.2f} {place} boxed "
               "font ',9' tc rgb '#222222' front noenhanced")


# --- all of them ------------------------------------------------------------------

def _clear(plots_dir):
    for name in os.listdir(plots_dir):
        if name.endswith((".png", ".svg", ".gp")):
            os.remove(os.path.join(plots_dir, name))


# Beyond this many points a sweep's report shows only the timelines of
# points with live events: a hundred near-flat lines tell nothing more.
MAX_PLAIN_TIMELINES = 12


def timelines_worth_drawing(timelines):
    if len(timelines) <= MAX_PLAIN_TIMELINES:
        return timelines
    return [t for t in timelines if t.events]


def render_all(results):
    """Draws every figure the results have data for into DIR/plots/ (stale
    figures removed first); returns [Figure] in report order."""
    deps.ensure_packages(deps.PLOT_PACKAGES)
    plots_dir = os.path.join(results.directory, "plots")
    os.makedirs(plots_dir, exist_ok=True)
    _clear(plots_dir)
    builders = [("iops-latency", iops_latency), ("bandwidth", bandwidth), ("hockey", hockey),
                ("layers", layers)]
    builders += [(f"timeline-{t.point:03d}", lambda r, t=t: timeline(r, t))
                 for t in timelines_worth_drawing(results.timelines)]
    return draw(plots_dir, builders, results)


def draw(plots_dir, builders, data):
    """Each (name, build) of builders: build(data) is a Script, or None when
    there is nothing to draw; gnuplot draws each one into plots_dir. Returns
    [Figure] in builders' order (storlab compare's figures too)."""
    figures = []
    for name, build in builders:
        script = build(data)
        if script is None:
            continue
        run_gnuplot(plots_dir, name, script.text(name))
        figures.append(Figure(name, script.title))
    return figures
