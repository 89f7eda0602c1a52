"""OUT/index.html of a comparison: the directories compared, the summary,
the figures, and the points table with each value's ratio to the baseline
under it — in report/html.py's style, with its image-load record that
report/check.py reads back."""
import os

from storlab_cli.common import csv_out
from storlab_cli.compare import ratios, table
from storlab_cli.report import html, plots

TABLE_ID = html.POINTS_TABLE_ID   # report/check.py counts this table's rows

TEMPLATE = html.PAGE_HEAD + """\
.ratio { display: block; color: #666; font-size: 0.9em; }
th.group { text-align: center; }
</style>
</head>
<body>
<h1>{{ title }}</h1>
<p class="subtitle">storlab compare, {{ created }} &middot; baseline {{ baseline }} &middot;
points matched on {{ keys | join(", ") }}</p>
{% if note %}
<p id="note">{{ note }}</p>
{% endif %}

<h2>Directories</h2>
<table class="summary" id="directories">
<thead><tr><th>label</th><th>directory</th><th>sweep</th><th>backend</th><th>topology</th>
<th>scale</th><th>created (UTC)</th><th>points</th></tr></thead>
<tbody>
{% for run in runs %}
<tr><td>{{ run.label }}</td><td>{{ run.path }}</td><td>{{ run.name }}</td><td>{{ run.backend }}</td>
<td>{{ run.topology }}</td><td>{{ run.scale }}</td><td>{{ run.created }}</td><td>{{ run.points }}</td></tr>
{% endfor %}
</tbody>
</table>
<ul id="summary">
{% for line in summary %}
<li>{{ line }}</li>
{% endfor %}
</ul>

""" + html.FIGURES_SECTION + """
<h2>Points</h2>
<p>{{ rows | length }} point{{ "" if rows | length == 1 else "s" }}; under each value its ratio to
the baseline &middot; <a href="{{ csv }}">{{ csv }}</a> (every metric)</p>
<div class="scroll">
<table class="data" id="{{ table_id }}">
<thead>
<tr>{% for key in keys %}<th rowspan="2">{{ key }}</th>{% endfor %}
{% for metric in metrics %}<th class="group" colspan="{{ runs | length }}">{{ metric }}</th>{% endfor %}</tr>
<tr>{% for metric in metrics %}{% for run in runs %}<th>{{ run.label }}</th>{% endfor %}{% endfor %}</tr>
</thead>
<tbody>
{% for row in rows %}
<tr>{% for key in row.key %}<td class="text">{{ key }}</td>{% endfor %}
{% for cell in row.cells %}{% if cell.value == "" %}<td class="na">n/a</td>
{%- else %}<td>{{ cell.value }}{% if cell.ratio %}<span class="ratio">{{ cell.ratio }}</span>{% endif %}</td>{% endif %}
{%- endfor %}</tr>
{% endfor %}
</tbody>
</table>
</div>

""" + html.IMAGE_LOAD_SCRIPT + """</body>
</html>
"""


def _scale(manifest):
    factor = manifest.get("scale", 1)
    if not isinstance(factor, (int, float)) or isinstance(factor, bool) or factor == 1:
        return "1"
    return f"1/{factor:g}"


def _run_view(run):
    manifest = run.manifest
    topology = manifest.get("topology")
    return {"label": run.label, "path": os.path.abspath(run.path),
            "name": html.describe(manifest.get("name")),
            "backend": html.describe(manifest.get("backend")),
            "topology": html.describe(topology.get("name") if isinstance(topology, dict)
                                      else topology),
            "scale": _scale(manifest), "created": html.describe(manifest.get("created_utc")),
            "points": len(run.table.rows)}


def _html_rows(comparison, metrics):
    rows = []
    for point in comparison.points:
        cells = [{"value": table.format_value(ratios.metric_value(point.rows[i], metric)),
                  "ratio": table.format_ratio(ratios.point_ratio(point, i, metric)) if i else ""}
                 for metric in metrics for i in range(len(comparison.runs))]
        rows.append({"key": [csv_out.cell(v) for v in point.key], "cells": cells})
    return rows


def render_page(comparison, figures, created):
    """index.html's text; figures: [plots.Figure] drawn into plots/."""
    metrics = ratios.shown_metrics(comparison)
    return html.environment().from_string(TEMPLATE).render(
        title="Comparison: " + " vs ".join(run.label for run in comparison.runs),
        created=created, baseline=comparison.baseline.label, keys=comparison.keys,
        note=comparison.note, runs=[_run_view(run) for run in comparison.runs],
        summary=table.summary_lines(comparison),
        figures=html.figure_views(figures),
        no_figures="No figures: no point has IOPS or latency to plot.",
        metrics=metrics, rows=_html_rows(comparison, metrics), csv=table.CSV_NAME,
        table_id=TABLE_ID, width=plots.WIDTH_PX, height=plots.HEIGHT_PX)
