"""pytest for scripts/storlab_cli/results/points_csv.py (and common/csv_out.py): the
contract's points.csv, written from the merge modules' figures and read
back the way the plots read it."""
import json
import os

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(TESTS, "data")

from storlab_cli.results import cluster_layers, device_window, fio_merge, points_csv, steady_state
from storlab_cli.errors import UserError

# The sweep contract's points.csv columns after the swept keys, verbatim.
CONTRACT = """units_run iops read_iops write_iops mb_s read_mb_s write_mb_s
lat_mean_us lat_p50_us lat_p99_us lat_p99_9_us
read_lat_mean_us read_lat_p99_us write_lat_mean_us write_lat_p99_us
dev_iops dev_lat_mean_us member_iops cache_hit_pct dirty_mb
dev_qd_mean release_late_p99_us host_limit
stack_cache_hit_pct write_buffer_fill_pct destage_mb_s cpu_util_pct link_util_pct
start_state data_reduction_pct nodes units_end_spread_s
iops_range_pct iops_slope_pct""".split()


def test_columns_are_the_contracts():
    assert points_csv.METRIC_COLUMNS == tuple(CONTRACT)
    assert fio_merge.METRIC_COLUMNS + device_window.METRIC_COLUMNS + ("host_limit",) \
        + cluster_layers.METRIC_COLUMNS + ("nodes", "units_end_spread_s") \
        + steady_state.COLUMNS == tuple(CONTRACT)
    assert points_csv.columns(["iodepth", "device.battery"]) == \
        ("point", "iodepth", "device.battery", *CONTRACT)


def fio_unit(read_ios, write_ios, lat_ns):
    def side(ios):
        return {"total_ios": ios, "io_bytes": 8192 * ios, "runtime": 10000,
                "clat_ns": {"N": ios, "mean": float(lat_ns),
                            "bins": {str(lat_ns): ios} if ios else {}}}
    return {"jobs": [{"read": side(read_ios), "write": side(write_ios)}]}


def test_written_from_the_figures_and_read_back(tmp_path):
    path = str(tmp_path / "points.csv")
    before, after = (device_window.load(os.path.join(DATA, f"stats-raid-{w}.json"))
                     for w in ("before", "after"))
    dev = device_window.window_between(before, after).metrics()
    rows = []
    for point, (depth, battery) in enumerate([(1, "ok"), (4, "failed, then ok")]):
        units = [(fio_unit(1000 * depth, 500 * depth, 250_000), f"u{i}") for i in range(2)]
        rows.append({"point": point, "iodepth": depth, "device.battery": battery,
                     **fio_merge.point_metrics(fio_merge.merge_docs(units)), **dev})
    rows.append({"point": 2, "iodepth": 8, "device.battery": "ok"})      # nothing measured
    points_csv.write(path, list(reversed(rows)), ["iodepth", "device.battery"])
    lines = open(path).read().splitlines()
    assert lines[0] == "point,iodepth,device.battery," + ",".join(CONTRACT)
    assert lines[2].startswith('1,4,"failed, then ok",2,1200,800,400,9.8304,6.5536,3.2768,250,')
    assert lines[3] == "2,8,ok" + "," * len(CONTRACT)
    table = points_csv.read(path)
    assert table.swept == ("iodepth", "device.battery")
    assert [r["point"] for r in table.rows] == [0, 1, 2]
    first = table.rows[0]
    assert first["iodepth"] == 1.0 and first["device.battery"] == "ok"
    assert first["iops"] == 300.0 and first["mb_s"] == pytest.approx(2.4576)
    assert first["lat_p99_9_us"] == 250.0 and first["write_lat_p99_us"] == 250.0
    assert first["dev_iops"] == pytest.approx(dev["dev_iops"], rel=1e-9)
    assert first["cache_hit_pct"] == pytest.approx(dev["cache_hit_pct"], rel=1e-9)
    assert first["dirty_mb"] == 44.834816
    assert table.rows[2]["iops"] is None and table.rows[2]["dirty_mb"] is None
    assert first["host_limit"] is None and first["dev_qd_mean"] == pytest.approx(dev["dev_qd_mean"])
    # rewritten after another point: the file holds exactly the new rows
    points_csv.write(path, rows[:1], ["iodepth", "device.battery"])
    assert [r["point"] for r in points_csv.read(path).rows] == [0]
    assert not os.path.exists(path + ".tmp")


def test_units_a_sweep_of_units_per_node_and_earlier_files(tmp_path):
    """The workload's units per node is a swept key of its own; files from
    before units_run had its name read with it."""
    path = str(tmp_path / "points.csv")
    points_csv.write(path, [{"point": 0, "units": 4, "units_run": 16, "iops": 10}], ["units"])
    table = points_csv.read(path)
    assert table.swept == ("units",) and table.rows[0]["units"] == 4
    assert table.rows[0]["units_run"] == 16
    older = tmp_path / "older.csv"
    before_spread = CONTRACT.index("units_end_spread_s")
    older.write_text("point,iodepth,units," + ",".join(CONTRACT[1:before_spread]) + "\n0,8,3,100"
                     + "," * (before_spread - 2) + "\n")
    table = points_csv.read(str(older))
    assert table.swept == ("iodepth",) and table.rows[0]["units_run"] == 3
    assert table.rows[0]["iops"] == 100 and table.rows[0]["data_reduction_pct"] is None


def test_no_swept_keys(tmp_path):
    path = str(tmp_path / "points.csv")
    points_csv.write(path, [{"point": 0, "units_run": 3, "iops": 1e-05, "lat_p99_us": float("nan")}], [])
    assert open(path).read().splitlines()[1].startswith("0,3,1e-05,,")
    table = points_csv.read(path)
    assert table.swept == () and table.rows[0]["iops"] == 1e-05
    assert table.rows[0]["lat_p99_us"] is None


@pytest.mark.parametrize("rows, swept, expected", [
    ([{"point": 0, "iodepth": 1, "iosp": 5}], ["iodepth"], "point 0: unknown column.*iosp"),
    ([{"point": 0, "iodepth": 1}, {"point": 0, "iodepth": 2}], ["iodepth"], "point 0 twice"),
    ([{"point": 1}], ["iodepth"], "point 1: no value for swept iodepth"),
    ([{"iodepth": 1}], ["iodepth"], "row without a point index"),
    ([], ["iops"], "swept key 'iops' clashes"),
    ([], ["bs", "bs"], "swept keys repeat"),
])
def test_write_refuses_bad_rows(tmp_path, rows, swept, expected):
    with pytest.raises(UserError, match=expected):
        points_csv.write(str(tmp_path / "points.csv"), rows, swept)


@pytest.mark.parametrize("text, expected", [
    ("", "points.csv: empty"),
    ("point,iodepth,iops\n", "points.csv: header is not point, <swept keys>"),
    ("point,bs," + ",".join(CONTRACT) + "\n0,4k,x" + "," * (len(CONTRACT) - 1) + "\n",
     "points.csv: line 2: units_run 'x' is not a number"),
    ("point," + ",".join(CONTRACT) + "\n0,1\n",
     f"points.csv: line 2: 2 fields, the header has {len(CONTRACT) + 1}"),
    ("point," + ",".join(CONTRACT) + "\nzero" + "," * len(CONTRACT) + "\n",
     "points.csv: line 2: point 'zero' is not an index"),
])
def test_read_refuses_bad_files(tmp_path, text, expected):
    path = tmp_path / "points.csv"
    path.write_text(text)
    with pytest.raises(UserError, match=expected):
        points_csv.read(str(path))
    with pytest.raises(UserError, match="nothere.csv: cannot read"):
        points_csv.read(str(tmp_path / "nothere.csv"))


def read_earlier(path, first_missing, last="1"):
    """points.csv as written before first_missing and the columns after it
    existed (swept iodepth 4, every figure 1 but the last, last), read."""
    earlier = CONTRACT[:CONTRACT.index(first_missing)]
    with open(path, "w") as f:
        f.write("point,iodepth," + ",".join(earlier) + "\n0,4,"
                + ",".join(["1"] * (len(earlier) - 1) + [last]) + "\n")
    return points_csv.read(path)


def test_host_limit_is_a_word_and_earlier_files_still_read(tmp_path):
    path = str(tmp_path / "points.csv")
    points_csv.write(path, [{"point": 0, "iodepth": 32, "iops": 10.0,
                             "host_limit": "nbd-16+host-queue"},
                            {"point": 1, "iodepth": 1, "iops": 5.0, "host_limit": ""}], ["iodepth"])
    rows = points_csv.read(path).rows
    assert [r["host_limit"] for r in rows] == ["nbd-16+host-queue", None]
    # a points.csv from before the host columns: they read as empty
    table = read_earlier(path, "dev_qd_mean")
    assert table.swept == ("iodepth",) and table.columns[-len(CONTRACT):] == tuple(CONTRACT)
    assert table.rows[0]["iops"] == 1.0 and table.rows[0]["host_limit"] is None
    # ... and from before the cluster model's columns
    table = read_earlier(path, "stack_cache_hit_pct", last="nbd-16")
    assert table.swept == ("iodepth",) and table.rows[0]["host_limit"] == "nbd-16"
    assert table.rows[0]["start_state"] is None and table.rows[0]["cpu_util_pct"] is None
    # ... and from before the nodes column
    table = read_earlier(path, "nodes")
    assert table.swept == ("iodepth",) and table.rows[0]["data_reduction_pct"] == 1.0
    assert table.rows[0]["nodes"] is None
    # ... and from before the units' end spread
    table = read_earlier(path, "units_end_spread_s")
    assert table.rows[0]["nodes"] == 1.0 and table.rows[0]["units_end_spread_s"] is None
    # ... and from before the window's steadiness
    table = read_earlier(path, "iops_range_pct")
    assert table.rows[0]["units_end_spread_s"] == 1.0 and table.rows[0]["iops_slope_pct"] is None


def test_nodes_comes_after_every_earlier_column(tmp_path):
    """nodes (the nodes whose fio ran) after every earlier column, which keep
    their places: a per-node figure divides by it."""
    path = str(tmp_path / "points.csv")
    points_csv.write(path, [{"point": 0, "topology.nodes.count": 4, "units_run": 32, "iops": 4e5,
                             "nodes": 4}], ["topology.nodes.count"])
    header, line = open(path).read().splitlines()
    assert header.split(",")[-5:] == ["data_reduction_pct", "nodes", "units_end_spread_s",
                                      "iops_range_pct", "iops_slope_pct"]
    assert line.startswith("0,4,32,400000") and line.endswith(",4,,,")
    row = points_csv.read(path).rows[0]
    assert row["nodes"] == 4.0 and row["units_run"] == 32.0


def test_a_labs_nodes_are_the_nodes_its_fio_results_are_of():
    """A lab point's fio-NODE-uUNIT.json: one per unit of each node that ran."""
    from storlab_cli.sweep.backends import lab
    assert lab._nodes_of(["p/fio-node1-u1.json", "p/fio-node1-u2.json",
                          "p/fio-node-3-u1.json"]) == 2
    assert lab._nodes_of([]) == 0


def test_a_labs_units_end_spread_is_how_far_apart_their_fio_ended(tmp_path):
    """A lab point's units_end_spread_s: the last unit's fio end (its JSON's
    timestamp_ms, after the banner fio prints for a prerun) less the first's."""
    from storlab_cli.sweep.backends import lab
    sources = []
    for unit, end_ms in enumerate((1_795_768_328_763, 1_795_768_339_463, 1_795_768_329_000), 1):
        path = tmp_path / f"fio-node1-u{unit}.json"
        path.write_text(f"node1-u{unit}v1 : Saving output of prerun in node1-u{unit}v1.prerun.txt\n"
                        f'{{"timestamp_ms": {end_ms}, "jobs": []}}\n')
        sources.append(str(path))
    docs = fio_merge.load_files(sources)
    assert lab._units_end_spread_s(docs) == 10.7
    assert lab._units_end_spread_s(docs[:1]) is None


def test_a_labs_events_are_one_mark_per_event_fired(tmp_path):
    """events.json holds a record per node or volume an event reached, each
    with the time the event was sent: three snapshots of two volumes are
    three marks, a device command to two nodes one."""
    from storlab_cli.sweep.backends import lab
    sent = [{"t_s": t_s, "node": "node1", "volume": volume, "command": "snapshot"}
            for t_s in (10.01, 20.054, 30.106) for volume in ("redo-u1v1", "redo-u1v2")]
    sent += [{"t_s": 5.0, "node": node, "device": "disk0", "command": "battery fail"}
             for node in ("node1", "node2")]
    (tmp_path / "events.json").write_text(json.dumps(sent))
    assert lab._lab_events(str(tmp_path)) == [
        (5.0, "battery fail"), (10.01, "snapshot"), (20.054, "snapshot"), (30.106, "snapshot")]
    assert lab._lab_events(str(tmp_path / "none")) == []


def test_a_window_is_steady_as_snia_pts_judges_one():
    """Five rounds of the window (10 intervals: two each): range and slope
    excursion against the rounds' mean; flat is steady, a climb is not."""
    def series(iops):
        return [{"t_s": t + 1.0, "iops": x} for t, x in enumerate(iops)]

    def why(figures):
        return steady_state.unsteady(*(figures.get(c) for c in steady_state.COLUMNS))
    flat = steady_state.metrics(series([101, 101, 99, 99, 100, 100, 99, 99, 101, 101]))
    assert flat == {"iops_range_pct": 2.0, "iops_slope_pct": 0.0}
    assert why(flat) == ""
    # 300 per round more: rounds 150, 450, 750, 1050, 1350 about 750
    climb = steady_state.metrics(series([100, 200, 400, 500, 700, 800, 1000, 1100, 1300, 1400]))
    assert climb == {"iops_range_pct": 160.0, "iops_slope_pct": 160.0}
    climbed = why(climb)
    assert "span 160 %" in climbed and "rose 160 %" in climbed
    # within the range, but sliding: 106 to 94 is 12 % of 100 down
    slide = steady_state.metrics(series([106, 106, 103, 103, 100, 100, 97, 97, 94, 94]))
    assert slide == {"iops_range_pct": 12.0, "iops_slope_pct": -12.0}
    assert why(slide) == "IOPS fell 12 % across the window (steady: at most 10 %)"
    # too short a window to say, or none
    assert steady_state.metrics(series([1, 2, 3, 4])) == {}
    assert steady_state.metrics(series([0] * 10)) == {}
    assert why({"iops_range_pct": None}) == ""
