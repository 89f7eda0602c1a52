"""What the figures' axes show beyond the swept keys' raw values and the
cluster's totals, as the manifest's plot settings say (the sweep file's
[plot] table, schema/sweep.py):

  per_node    IOPS and MB/s per node: each point's divided by its points.csv
              nodes (the nodes whose fio ran), the lab's and the simulator's
  x_per_host  x = "size": the categories are each point's working set per
              host, size x units x workers of its workload, smallest first
  mark        the disk group's read cache or write buffer per host (the
              manifest's mark_bytes, from the topology: sweep/parts.py) as a
              dashed line, placed between the two categories it falls
              between, or at the edge, "beyond", past all of them

report/plots.py draws the figures with these.
"""
from storlab_cli.schema.sizes import binary_text, parse_size_bytes
from storlab_cli.schema.sweep import WORKLOAD_DEFAULTS

PER_HOST_KEY = "working set per host"       # x_per_host's column (and axis label)
PER_NODE_COLUMNS = ("iops", "read_iops", "write_iops", "mb_s", "read_mb_s", "write_mb_s")
EDGE = 0.5                                  # a mark past every category: this far out


def per_node(results):
    return bool(results.plot_setting("per_node"))


def per_node_text(results, what):
    """An axis' or legend's "IOPS": "IOPS per node" when per_node."""
    return f"{what} per node" if per_node(results) else what


def metric(results, table, row, column):
    """The row's number in column; IOPS and MB/s divided by its nodes when
    per_node (None when the point says no nodes)."""
    value = table.number(row, column)
    if value is None or column not in PER_NODE_COLUMNS or not per_node(results):
        return value
    nodes = table.number(row, "nodes")
    return value / nodes if nodes else None


def _rows(results):
    return results.points.rows + (results.sim.rows if results.sim else [])


def per_host_bytes(results, row):
    """size x units x workers of the row's point: its swept values, else the
    sweep's workload's; None when its size is no size (an extra point's
    label stands there)."""
    workload = {**WORKLOAD_DEFAULTS, **(results.manifest.get("workload") or {})}
    values = {k: row[k] if k in results.swept else workload[k]
              for k in ("size", "units", "workers")}
    size = parse_size_bytes(str(values["size"]).strip())
    try:
        units, workers = int(float(values["units"])), int(float(values["workers"]))
    except (TypeError, ValueError):
        return None
    return size * units * workers if size else None


def x_column(results, x_key):
    """The column the figures take x from: x_key, or with x_per_host
    PER_HOST_KEY, which this writes into every row (lab and simulator) as
    the text of its working set per host ("64 GiB"), or x's own value where
    that is no size."""
    if not results.plot_setting("x_per_host"):
        return x_key
    for row in _rows(results):
        size = per_host_bytes(results, row)
        row[PER_HOST_KEY] = binary_text(size) if size else row[x_key]
    return PER_HOST_KEY


def _sizes(results):
    """{category text: bytes per host} of the rows x_column wrote."""
    sizes = {}
    for row in _rows(results):
        size = per_host_bytes(results, row)
        if size:
            sizes[row[PER_HOST_KEY]] = size
    return sizes


def ordered(results, x_key, categories):
    """The categories in axis order: sweep order, or working sets per host
    from the smallest (other values after them, in sweep order)."""
    if x_key != PER_HOST_KEY:
        return categories
    sizes = _sizes(results)
    return sorted(categories, key=lambda c: (c not in sizes, sizes.get(c, 0)))


def position(value, known):
    """(x, beyond) of value on a categorical axis whose categories at
    positions x hold ascending numbers, known = [(x, number)]: interpolated
    between the two it falls between; left or right of every one, EDGE past
    the first or last, beyond "below" or "above" (else None)."""
    (first_x, first), (last_x, last) = known[0], known[-1]
    if value < first:
        return first_x - EDGE, "below"
    if value > last:
        return last_x + EDGE, "above"
    for (x0, v0), (x1, v1) in zip(known, known[1:]):
        if v0 <= value <= v1:
            return (x0 if v1 == v0 else x0 + (x1 - x0) * (value - v0) / (v1 - v0)), None
    return first_x, None                   # one category, the value itself


def mark(results, categories):
    """(x, text) of plot.mark on an axis of categories (x_column's, in
    order), or None: no mark, or no category is a working set."""
    what, size = results.plot_setting("mark"), results.plot_setting("mark_bytes")
    if not what or not results.plot_setting("x_per_host"):
        return None
    sizes = _sizes(results)
    known = [(i, sizes[c]) for i, c in enumerate(categories) if c in sizes]
    if not known:
        return None
    x, beyond = position(size, known)
    text = f"{what.replace('-', ' ')} {binary_text(size)} per host"
    if beyond:
        text += f" (beyond: {beyond} every working set)"
    return round(x, 4), text
