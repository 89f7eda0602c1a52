"""pytest for scripts/storlab_cli/results/stack_window.py: a lab point's
disk-group columns (read cache hits, write buffer fill, destage rate) from
the guests' `dmsetup status` at the window's ends, parsed as
lab/profile_status.py parses them."""
import json
import os

import pytest

from storlab_cli.errors import UserError
from storlab_cli.lab import profile_status
from storlab_cli.results import stack_window

# `dmsetup status` in profile-hybrid's node1 (dm-cache under dm-writecache, as
# disk-group.sh builds them), the window's ends of a read point and a write point
READ_BEFORE = """\
dg-data: 0 524288 cache 8 27/2048 128 448/448 10000 2000 0 0 30 478 0 1 writethrough 2 migration_threshold 2048 smq 0 rw -
diskgroup: 0 524288 writecache 0 4864 4864 0 12000 0 0 0 0 0 0 0 0 0
storlab-pv-cache0: 0 131072 linear
"""
READ_AFTER = """\
dg-data: 0 524288 cache 8 27/2048 128 448/448 37000 5000 0 0 30 478 0 1 writethrough 2 migration_threshold 2048 smq 0 rw -
diskgroup: 0 524288 writecache 0 4864 4864 0 42000 0 0 0 0 0 0 0 0 0
"""
WRITE_BEFORE = """\
dg-data: 0 524288 cache 8 27/2048 128 448/448 37000 5000 100 900 30 478 0 1 writethrough 2 migration_threshold 2048 smq 0 rw -
diskgroup: 0 524288 writecache 0 4864 2600 12 42000 0 6000 100 50 0 5850 300 0 0
"""
WRITE_AFTER = """\
dg-data: 0 524288 cache 8 27/2048 128 448/448 37000 5000 400 3600 30 478 0 1 writethrough 2 migration_threshold 2048 smq 0 rw -
diskgroup: 0 524288 writecache 0 4864 2432 9 42000 0 11000 200 100 0 10700 900 0 0
"""


def write_window(directory, node, before, after, span_s=10.0):
    doc = {"before": {"t_s": 100.0, "caches": profile_status.parse_dmsetup_status(before)},
           "after": {"t_s": 100.0 + span_s, "caches": profile_status.parse_dmsetup_status(after)}}
    with open(stack_window.path(str(directory), node), "w", encoding="utf-8") as f:
        json.dump(doc, f)


def test_dmsetup_status_parsed_to_the_caches_only():
    caches = profile_status.parse_dmsetup_status(WRITE_AFTER + "storlab-u1v1: 0 32768 linear\n")
    assert [c["kind"] for c in caches] == ["dm-cache", "dm-writecache"]
    cache, buffer = caches
    assert (cache["block_bytes"], cache["total_blocks"], cache["read_hits"],
            cache["read_misses"], cache["promotions"], cache["demotions"]) == \
        (65536, 448, 37000, 5000, 478, 30)
    assert (buffer["total_blocks"], buffer["used_blocks"], buffer["writeback_blocks"]) == \
        (4864, 4864 - 2432, 9)
    assert (buffer["writes_allocate"], buffer["writes_blocked_on_freelist"]) == (10700, 900)


def test_a_writecache_without_event_counters_has_none():
    """Kernels before 5.15 give the first four fields only."""
    (buffer,) = profile_status.parse_dmsetup_status(
        "diskgroup: 0 524288 writecache 0 4864 2432 9\n")
    assert buffer["used_blocks"] == 2432 and "writes_allocate" not in buffer


def test_read_point_hits_of_the_reads_the_cache_took(tmp_path):
    write_window(tmp_path, "node1", READ_BEFORE, READ_AFTER)
    m = stack_window.metrics(str(tmp_path))
    assert list(m) == list(stack_window.METRIC_COLUMNS)
    assert stack_window.METRIC_COLUMNS == \
        ("stack_cache_hit_pct", "write_buffer_fill_pct", "destage_mb_s")
    # 27000 hits of 30000 reads in the window, not of all since boot
    assert m["stack_cache_hit_pct"] == pytest.approx(90.0)
    assert m["write_buffer_fill_pct"] == pytest.approx(0.0)
    assert m["destage_mb_s"] == pytest.approx(0.0)


def test_write_point_fill_at_the_end_and_destage_over_the_window(tmp_path):
    write_window(tmp_path, "node1", WRITE_BEFORE, WRITE_AFTER, span_s=8.0)
    m = stack_window.metrics(str(tmp_path))
    assert m["stack_cache_hit_pct"] is None         # no read reached the read cache
    assert m["write_buffer_fill_pct"] == pytest.approx(100.0 * 2432 / 4864)
    # 4850 blocks allocated while the used ones grew by 168: 4682 written back
    assert m["destage_mb_s"] == pytest.approx(4682 * 4096 / 1e6 / 8.0)


def test_nodes_summed_and_buffers_averaged(tmp_path):
    write_window(tmp_path, "node1", READ_BEFORE, READ_AFTER)
    write_window(tmp_path, "node2", WRITE_BEFORE, WRITE_AFTER)
    m = stack_window.metrics(str(tmp_path))
    assert m["stack_cache_hit_pct"] == pytest.approx(90.0)
    assert m["write_buffer_fill_pct"] == pytest.approx((0.0 + 50.0) / 2)


def test_no_window_files_no_figures(tmp_path):
    assert stack_window.metrics(str(tmp_path)) == {}


def test_a_node_that_did_not_answer_counts_for_nothing(tmp_path):
    with open(stack_window.path(str(tmp_path), "node1"), "w", encoding="utf-8") as f:
        json.dump({"before": None, "after": None}, f)
    m = stack_window.metrics(str(tmp_path))
    assert m == {"stack_cache_hit_pct": None, "write_buffer_fill_pct": None,
                 "destage_mb_s": None}


def test_a_damaged_window_file_named_in_one_error(tmp_path):
    p = stack_window.path(str(tmp_path), "node1")
    with open(p, "w", encoding="utf-8") as f:
        f.write("{not json")
    with pytest.raises(UserError, match="stack-node1.json"):
        stack_window.metrics(str(tmp_path))
