"""The points.csv figures of a lab's disk groups over a point's measured
window, from the guests' own counters: `dmsetup status` of every node's
read caches (dm-cache) and write buffers (dm-writecache), taken when the
window starts and when it ends (stack-NODE.json, {"before", "after"}:
{"t_s": the host's clock when the status came back, "caches": [...] as
lab/profile_status.parse_dmsetup_status gives them}). The same columns
as the simulator's (cluster_layers.py), so that lab and model sit side by
side:

    stack_cache_hit_pct    reads the read caches served, of the reads they took
    write_buffer_fill_pct  the write buffers' used blocks at the end, mean
    destage_mb_s           written back from the write buffers in the window, all nodes:
                           the blocks allocated less what the used blocks grew by
                           (dm-writecache counts no written-back blocks of its own)
"""
import glob
import json
import os

from storlab_cli.errors import UserError
from storlab_cli.results import cluster_layers

MB = 1_000_000
# the simulator's first three, the disk groups' own
METRIC_COLUMNS = cluster_layers.METRIC_COLUMNS[:3]


def path(directory, node):
    return os.path.join(directory, f"stack-{node}.json")


def _load(path_):
    try:
        with open(path_, encoding="utf-8") as f:
            doc = json.load(f)
        return doc["before"], doc["after"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise UserError(f"{path_}: not a stack window ({e})") from None


def _by_name(snapshot, kind):
    return {c["name"]: c for c in snapshot.get("caches", []) if c.get("kind") == kind}


def metrics(directory):
    """The columns of the point in directory: {} where it has no
    stack-NODE.json (no disk group, or results of an earlier storlab),
    None where no target of the kind moved."""
    paths = sorted(glob.glob(path(directory, "*")))
    if not paths:
        return {}
    hits = reads = destaged_bytes = 0
    fills, span_s = [], 0.0
    for p in paths:
        before, after = _load(p)
        if before is None or after is None:
            continue
        span_s = max(span_s, after["t_s"] - before["t_s"])
        old = _by_name(before, "dm-cache")
        for name, cache in _by_name(after, "dm-cache").items():
            if name in old:
                hits += cache["read_hits"] - old[name]["read_hits"]
                reads += (cache["read_hits"] + cache["read_misses"]
                          - old[name]["read_hits"] - old[name]["read_misses"])
        old = _by_name(before, "dm-writecache")
        for name, buffer in _by_name(after, "dm-writecache").items():
            fills.append(100.0 * buffer["used_blocks"] / buffer["total_blocks"]
                         if buffer["total_blocks"] else 0.0)
            if name in old and "writes_allocate" in buffer and "writes_allocate" in old[name]:
                allocated = buffer["writes_allocate"] - old[name]["writes_allocate"]
                grown = buffer["used_blocks"] - old[name]["used_blocks"]
                destaged_bytes += max(allocated - grown, 0) * buffer["block_bytes"]
    return {"stack_cache_hit_pct": 100.0 * hits / reads if reads else None,
            "write_buffer_fill_pct": sum(fills) / len(fills) if fills else None,
            "destage_mb_s": destaged_bytes / MB / span_s if fills and span_s > 0 else None}
