"""The points.csv figures of the cluster model's own layers, from a
`storlab-sim cluster` JSON (storlab.device.model): what a lab's device
windows cannot show, over the whole simulated run (ramp included, as the
simulator's device windows are).  A lab's disk groups give the first three
from their own counters (stack_window.py).

    stack_cache_hit_pct    the disk groups' read caches (dm-cache): hits of reads
    write_buffer_fill_pct  their write buffers (dm-writecache): used at the end, mean
    destage_mb_s           written back from the write buffers to capacity, all nodes
    cpu_util_pct           the busiest host's CPU (or the one host they all share)
    link_util_pct          the busiest link direction
    start_state            warm (caches started steady, --warm) or empty
    data_reduction_pct     what the disk groups' deduplication and compression saved
                           of the blocks they destaged (100: nothing stored)
"""
from storlab_cli.errors import UserError

MB = 1_000_000
METRIC_COLUMNS = ("stack_cache_hit_pct", "write_buffer_fill_pct", "destage_mb_s",
                  "cpu_util_pct", "link_util_pct", "start_state", "data_reduction_pct")
BLOCK_BYTES = 4096          # the data reduction layer's blocks


def _layers(model, kind):
    return [layer for layer in model.get("layers", []) if layer.get("kind") == kind]


def metrics(doc, source):
    """The cluster columns of one point; None where the cluster has no such layer."""
    try:
        model = doc["storlab"]["device"]["model"]
        elapsed_s = doc["storlab"]["simulated_ns"] / 1e9
    except (KeyError, TypeError):
        raise UserError(f"{source}: no storlab.device.model (not storlab-sim cluster's JSON?)") \
            from None
    row = {"start_state": model.get("start_state")}
    caches = [layer["counters"] for layer in _layers(model, "readcache")]
    reads = sum(c["read_hits"] + c["read_misses"] for c in caches)
    row["stack_cache_hit_pct"] = (100.0 * sum(c["read_hits"] for c in caches) / reads
                                  if reads else None)
    buffers = [layer["counters"] for layer in _layers(model, "writecache")]
    if buffers:
        row["write_buffer_fill_pct"] = sum(b["fill_pct"] for b in buffers) / len(buffers)
        destaged = sum(b["writeback_blocks"] * b["block_bytes"] for b in buffers)
        row["destage_mb_s"] = destaged / MB / elapsed_s if elapsed_s else None
    hosts = model.get("hosts", []) + ([model["host_pool"]] if model.get("host_pool") else [])
    row["cpu_util_pct"] = max((h["utilisation_pct"] for h in hosts), default=None)
    row["link_util_pct"] = max((link[d]["utilisation_pct"] for link in model.get("links", [])
                                for d in ("a_to_b", "b_to_a")), default=None)
    reductions = [layer["counters"] for layer in _layers(model, "data-reduction")]
    logical = sum(r["blocks_written"] for r in reductions) * BLOCK_BYTES
    row["data_reduction_pct"] = (100.0 * (1 - sum(r["stored_bytes"] for r in reductions)
                                          / logical) if logical else None)
    return row
