"""storlab compare: several sweep results directories side by side — lab vs
simulator, before vs after a change, one policy vs another. The first
directory is the baseline; every other one's figures are shown beside it and
as a ratio to it. The command itself is commands/compare.py; its pieces:

  runs.py      the results directories read in (points.csv, manifest.json,
               DIR/sim of a lab sweep) and the label each one goes by
  matching.py  which swept keys points are matched on; the matched points
  ratios.py    a point's metric and its ratio to the baseline, geometric
               means, which metrics are shown
  table.py     the text table and summary lines, compare.csv's header and rows
  figures.py   the overlaid gnuplot figures (report/plots.py's helpers)
  page.py      index.html (report/html.py's style and conventions)
  output.py    --out: what it may be, and writing it all there in one go
"""
