"""storlab plot RESULTS_DIR — redraws a results directory's figures and its
report from points.csv, sim/points.csv, the timelines and manifest.json alone
(nothing is rerun); with --reread, every finished point read again from its
raw files first (sweep/reread.py). The sweep runner calls render() at the
end of a run."""
import os

from storlab_cli.common import cli_args
from storlab_cli.report import html, plot_data, plots
from storlab_cli.sweep import reread


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
    p.add_argument("--reread", action="store_true",
                   help="first read every finished point again from the raw files it kept "
                        "(fio's JSON and logs, device snapshots), as this storlab counts them")
    a = p.parse_args(argv)
    if a.reread:
        done, total = reread.reread(a.results_dir)
        print(f"storlab plot: {done} of {total} points read again from their raw files; "
              f"{os.path.join(a.results_dir, 'points.csv')} rewritten")
    figures, report_path = render(a.results_dir)
    plots_dir = os.path.join(a.results_dir, "plots")
    names = ", ".join(f.name for f in figures) or "none (no data to plot yet)"
    print(f"storlab plot: {len(figures)} figure{'' if len(figures) == 1 else 's'} in "
          f"{plots_dir}: {names}")
    print(f"storlab plot: report {report_path}")
    return 0
