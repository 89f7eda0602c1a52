"""storlab compare DIR DIR... [--out DIR] — results directories side by
side, the first the baseline: a table of each one's IOPS and latencies and
their ratio to the baseline's, point by point; with --out also compare.csv,
overlaid figures and an HTML page (the compare/ package)."""
import os
import sys

from storlab_cli.common import cli_args
from storlab_cli.compare import matching, output, runs, table


def _parse(argv):
    p = cli_args.Parser(prog="storlab compare",
                        description="results directories side by side, the first the "
                        "baseline: values and ratios to it, point by point")
    p.add_argument("dirs", nargs="+", metavar="DIR",
                   help="a directory written by storlab sweep (points.csv), or its sim/ "
                   "(the simulator's prediction of a lab sweep); two or more")
    p.add_argument("--out", metavar="DIR",
                   help="also write compare.csv, the figures and index.html there (a new or "
                   "empty directory, or one an earlier storlab compare wrote)")
    return p.parse_args(argv)


def run(argv):
    args = _parse(argv)
    comparison = matching.compare(runs.load_runs(args.dirs))
    if args.out is not None:
        output.check_out(args.out, comparison.runs)   # refused before anything is printed
    if comparison.note:
        print(f"storlab compare: note: {comparison.note}", file=sys.stderr, flush=True)
    print("\n".join(table.table_lines(comparison)))
    print()
    print("\n".join(table.summary_lines(comparison)))
    if args.out is not None:
        figures = output.write(args.out, comparison)
        out = os.path.abspath(args.out)
        print(f"comparison: {out}")
        print(f"  {table.CSV_NAME}  {os.path.join(out, table.CSV_NAME)}")
        print(f"  plots        {os.path.join(out, 'plots')} ({len(figures)} figures)")
        print(f"  report       {os.path.join(out, 'index.html')}")
    return 0
