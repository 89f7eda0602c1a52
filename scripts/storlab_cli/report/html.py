"""DIR/index.html: the report of a results directory — the manifest in brief,
every figure (SVG, linking the PNG), the points table with links to each
point's raw files. Self-contained apart from those relative links: no external
URLs, styles inline, every value escaped (Jinja2 autoescape).

A small inline script records, once the page has loaded, how many images
rendered (naturalWidth > 0) on <body>: data-images-total, data-images-loaded,
data-images-failed (their src, space separated), data-report-checked="yes".
"""
import os
import urllib.parse

import jinja2

from storlab_cli.report.plots import HEIGHT_PX, WIDTH_PX
from storlab_cli.results import host_limit, steady_state

REPORT_NAME = "index.html"
POINTS_TABLE_ID = "points"
SIM_TABLE_ID = "sim-points"
GIB = 1 << 30

# The look of storlab's pages (this report, storlab compare's).
PAGE_STYLE = """\
body { font-family: "DejaVu Sans", Arial, sans-serif; margin: 2em auto; max-width: 1100px;
       padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; border-bottom: 1px solid #ccc; padding-bottom: 0.2em; margin-top: 2em; }
.subtitle { color: #666; margin-top: 0; }
table { border-collapse: collapse; font-size: 0.85em; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.5em; text-align: left; vertical-align: top; }
th { background: #f3f4f6; }
table.summary th { width: 11em; }
table.data td { text-align: right; font-variant-numeric: tabular-nums; }
table.data td.text { text-align: left; }
.na { color: #aaa; }
.scroll { overflow-x: auto; }
figure { margin: 1.5em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 0.9em; color: #444; }
"""

# The start of storlab's pages, in that look: each goes on with any style of
# its own, then </style> and its body.
PAGE_HEAD = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }}</title>
<style>
""" + PAGE_STYLE

# Records on <body>, once the page has loaded, how many images rendered: a
# headless browser reads it back (report/check.py).
IMAGE_LOAD_SCRIPT = """<script>
window.addEventListener("load", function () {
  var images = Array.prototype.slice.call(document.images);
  var failed = images.filter(function (img) { return !(img.complete && img.naturalWidth > 0); });
  var body = document.body;
  body.setAttribute("data-images-total", String(images.length));
  body.setAttribute("data-images-loaded", String(images.length - failed.length));
  body.setAttribute("data-images-failed",
                    failed.map(function (img) { return img.getAttribute("src"); }).join(" "));
  body.setAttribute("data-report-checked", "yes");
});
</script>
"""

# The figures, each its SVG linking the PNG and the script (figure_views);
# no_figures says why there are none.
FIGURES_SECTION = """<h2>Figures</h2>
{% for figure in figures %}
<figure id="figure-{{ figure.name }}">
<a href="{{ figure.png }}"><img src="{{ figure.svg }}" alt="{{ figure.title }}"
 width="{{ width }}" height="{{ height }}"></a>
<figcaption>{{ figure.title }} &middot; <a href="{{ figure.png }}">PNG</a> &middot;
<a href="{{ figure.svg }}">SVG</a> &middot;
<a href="{{ figure.script }}">gnuplot script</a></figcaption>
</figure>
{% else %}
<p>{{ no_figures }}</p>
{% endfor %}
"""

TEMPLATE = PAGE_HEAD + """</style>
</head>
<body>
<h1>{{ title }}</h1>
<p class="subtitle">storlab results{% if created %}, {{ created }}{% endif %} &middot;
rendered from points.csv and manifest.json</p>

<h2>Run</h2>
<table class="summary" id="manifest">
{% for label, value in summary %}
<tr><th>{{ label }}</th><td>{{ value }}</td></tr>
{% endfor %}
</table>

""" + FIGURES_SECTION + """
{% if host_limited %}
<h2>Where the host was the limit</h2>
<p id="host-limits">{{ host_limited | length }} of {{ lab_points }} lab point{{ "" if lab_points == 1 else "s" }}
measured the host path, not only the device (column host_limit; the simulator's
prediction shows the device alone):</p>
<ul>
{% for point in host_limited %}
<li id="host-limit-{{ point.point }}">point {{ point.point }}{% if point.where %} ({{ point.where }}){% endif %}:
{{ point.reasons | join("; ") }}</li>
{% endfor %}
</ul>
{% endif %}

{% if unsteady %}
<h2>Windows that were not steady</h2>
<p id="unsteady">{{ unsteady | length }} point{{ "" if unsteady | length == 1 else "s" }} measured a
transient, not a steady state, as SNIA's PTS judges one (columns iops_range_pct and
iops_slope_pct, the window in {{ rounds }} rounds; a longer ramp_s lets the transient pass):</p>
<ul>
{% for point in unsteady %}
<li id="unsteady-{{ point.side }}-{{ point.point }}">{{ point.side }} point {{ point.point }}{% if point.where %} ({{ point.where }}){% endif %}:
{{ point.why }}</li>
{% endfor %}
</ul>
{% endif %}

{% for table in tables %}
<h2>{{ table.heading }}</h2>
<p>{{ table.rows | length }} point{{ "" if table.rows | length == 1 else "s" }} &middot;
<a href="{{ table.csv }}">{{ table.csv }}</a>
{%- if table.note %} &middot; {{ table.note }}{% endif %}</p>
<div class="scroll">
<table class="data" id="{{ table.id }}">
<thead><tr>{% for column in table.columns %}<th>{{ column }}</th>{% endfor %}
{% if table.raw %}<th>raw files</th>{% endif %}</tr></thead>
<tbody>
{% for row in table.rows %}
<tr>{% for cell in row.cells %}{% if cell.value == "" %}<td class="na">n/a</td>
{%- elif cell.shown != cell.value %}<td title="{{ cell.value }}">{{ cell.shown }}</td>
{%- else %}<td{% if cell.text %} class="text"{% endif %}>{{ cell.value }}</td>{% endif %}
{%- endfor %}
{% if table.raw %}<td class="text">
{%- for file in row.files %}<a href="{{ file.href }}">{{ file.name }}</a>
{%- if not loop.last %} {% endif %}
{%- else %}<span class="na">none</span>{% endfor %}</td>{% endif %}</tr>
{% endfor %}
</tbody>
</table>
</div>
{% endfor %}

""" + IMAGE_LOAD_SCRIPT + """</body>
</html>
"""


def environment():
    return jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined,
                              trim_blocks=True, lstrip_blocks=True)


def figure_views(figures):
    """What FIGURES_SECTION shows of each plots.Figure."""
    return [{"name": f.name, "title": f.title, "png": f.png, "svg": f.svg,
             "script": f"plots/{f.name}.gp"} for f in figures]


def describe(value):
    """A manifest value as one line of text."""
    if value is None or value == "":
        return "n/a"
    if isinstance(value, dict):
        return ", ".join(f"{k} {describe(v)}" for k, v in value.items()) or "n/a"
    if isinstance(value, list):
        return ", ".join(describe(v) for v in value) or "none"
    return str(value)


def _host(host):
    if not isinstance(host, dict):
        return describe(host)
    parts = []
    if host.get("cpus") is not None:
        parts.append(f"{host['cpus']} CPUs")
    memory = host.get("memory_bytes")
    if isinstance(memory, (int, float)) and not isinstance(memory, bool):
        parts.append(f"{memory / GIB:.1f} GiB memory")
    if host.get("os"):
        parts.append(str(host["os"]))
    others = {k: v for k, v in host.items() if k not in ("cpus", "memory_bytes", "os")}
    if others:
        parts.append(describe(others))
    return ", ".join(parts) or "n/a"


def _topology(topology):
    if isinstance(topology, dict):
        name, path = topology.get("name"), topology.get("path")
        if name and path:
            return f"{name} ({path})"
    return describe(topology)


def _scale(factor):
    if not isinstance(factor, (int, float)) or isinstance(factor, bool) or factor == 1:
        return "full size (1)"
    return (f"1/{factor:g}: capacities, cache sizes and working sets divided by {factor:g}, "
            "timing kept; sizes on the axes are the study's")


def summary_rows(manifest):
    """(label, text) pairs for the run table, in reading order."""
    plot = manifest.get("plot") or {}
    done, total = manifest.get("points_done"), manifest.get("points_total")
    rows = [
        ("Backend", describe(manifest.get("backend"))),
        ("Topology", _topology(manifest.get("topology"))),
        ("Scale", _scale(manifest.get("scale", 1))),
        ("Sweep file", describe(manifest.get("sweep_file"))),
        ("Swept", describe(manifest.get("swept"))),
        ("Plotted", f"x {describe(plot.get('x'))}, series {describe(plot.get('series'))}"),
        ("Points", f"{describe(done)} of {describe(total)} done"),
        ("Workload", describe(manifest.get("workload"))),
        ("Phases", describe(manifest.get("phases"))),
        ("Revision", describe(manifest.get("revision"))),
    ]
    versions = manifest.get("versions")
    if isinstance(versions, dict) and versions:
        rows += [(f"Version: {name}", describe(value)) for name, value in versions.items()]
    else:
        rows.append(("Versions", describe(versions)))
    rows += [
        ("Accelerator", describe(manifest.get("accelerator"))),
        ("Host", _host(manifest.get("host"))),
        ("Created (UTC)", describe(manifest.get("created_utc"))),
    ]
    return rows


def _raw_files(directory, point):
    point_dir = os.path.join(directory, "points", f"{int(point):03d}")
    if not os.path.isdir(point_dir):
        return []
    names = sorted(n for n in os.listdir(point_dir)
                   if os.path.isfile(os.path.join(point_dir, n)))
    return [{"name": name,
             "href": urllib.parse.quote(f"points/{int(point):03d}/{name}")} for name in names]


def _table(directory, table, table_id, heading, csv_path, swept, raw, note=""):
    text_columns = set(swept) | {c for c in table.columns if any(
        not _numeric(row[c]) for row in table.rows)}
    rows = [{"cells": [{"value": row[c], "text": c in text_columns,
                        "shown": row[c] if c in text_columns or c == "point"
                        else rounded(row[c])} for c in table.columns],
             "files": _raw_files(directory, row["point"]) if raw else []}
            for row in table.rows]
    return {"id": table_id, "heading": heading, "columns": table.columns, "rows": rows,
            "csv": csv_path, "raw": raw, "note": note}


def rounded(text):
    """A measured value for reading: 1 decimal from 100 up, 2 from 1, else 3
    significant digits; as written when that is no longer (integers, 55.5)."""
    try:
        value = float(text)
    except ValueError:
        return text
    if "." not in text and "e" not in text.lower():
        return text
    if abs(value) >= 100:
        shown = f"{value:.1f}"
    elif abs(value) >= 1:
        shown = f"{value:.2f}"
    else:
        shown = f"{value:.3g}"
    return shown if len(shown) < len(text) else text


def _numeric(text):
    try:
        float(text)
        return True
    except ValueError:
        return text.strip() == ""


def render(results, figures):
    """The report's HTML text."""
    manifest = results.manifest
    name = manifest.get("name")
    tables = [_table(results.directory, results.points, POINTS_TABLE_ID, "Points",
                     "points.csv", results.swept, raw=True)]
    if results.sim is not None:
        tables.append(_table(results.directory, results.sim, SIM_TABLE_ID,
                             "Simulator prediction", "sim/points.csv", results.swept,
                             raw=False, note="overlaid as \u201csimulator\u201d on the figures"))
    host_limited = [{"point": row["point"],
                     "where": ", ".join(f"{k} {row[k]}" for k in results.swept),
                     "reasons": host_limit.explain(row.get("host_limit") or "")}
                    for row in results.points.rows if row.get("host_limit")]
    return environment().from_string(TEMPLATE).render(
        title=f"{name}: sweep results" if name else "storlab sweep results",
        created=manifest.get("created_utc"), summary=summary_rows(manifest),
        figures=figure_views(figures), tables=tables, width=WIDTH_PX, height=HEIGHT_PX,
        no_figures="No figures: no complete point has data to plot yet.",
        host_limited=host_limited, lab_points=len(results.points.rows),
        unsteady=_unsteady(results), rounds=steady_state.ROUNDS)


def _unsteady(results):
    """The points of each side whose window was not steady, and why."""
    sides = [("lab" if results.sim is not None else results.manifest.get("backend", ""),
              results.points)]
    if results.sim is not None:
        sides.append(("simulator", results.sim))
    out = []
    for side, table in sides:
        for row in table.rows:
            why = steady_state.unsteady(*(table.number(row, c) for c in steady_state.COLUMNS))
            if why:
                out.append({"side": side, "point": row["point"], "why": why,
                            "where": ", ".join(f"{k} {row[k]}" for k in results.swept)})
    return out


def write(results, figures):
    """Writes DIR/index.html (atomically); returns its path."""
    path = os.path.join(results.directory, REPORT_NAME)
    temporary = path + ".tmp"
    with open(temporary, "w", encoding="utf-8") as f:
        f.write(render(results, figures))
    os.replace(temporary, path)
    return path
