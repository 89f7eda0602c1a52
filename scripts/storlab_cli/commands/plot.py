"""storlab plot RESULTS_DIR — redraws a results directory's figures and its
report from points.csv, sim/points.csv, the timelines and manifest.json alone
(nothing is rerun). The sweep runner calls render() at the end of a run."""
import os

from storlab_cli.common import cli_args
from storlab_cli.report import html, plot_data, plots


def render(results_dir):
    """Figures into RESULTS_DIR/plots/, then RESULTS_DIR/index.html;
    returns ([plots.Figure], report path)."""
    results = plot_data.load_results(results_dir)
    figures = plots.render_all(results)
    return figures, html.write(results, figures)


def run(argv):
    p = cli_args.Parser(prog="storlab plot",
                description="redraw a results directory's figures and report from its CSVs")
    p.add_argument("results_dir", metavar="RESULTS_DIR",
                   help="a directory written by storlab sweep (manifest.json, points.csv)")
    a = p.parse_args(argv)
    figures, report_path = render(a.results_dir)
    plots_dir = os.path.join(a.results_dir, "plots")
    names = ", ".join(f.name for f in figures) or "none (no data to plot yet)"
    print(f"storlab plot: {len(figures)} figure{'' if len(figures) == 1 else 's'} in "
          f"{plots_dir}: {names}")
    print(f"storlab plot: report {report_path}")
    return 0
