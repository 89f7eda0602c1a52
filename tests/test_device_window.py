"""pytest for scripts/storlab_cli/results/device_window.py on real storlab-stats
snapshots (tests/data/stats-*.json, trimmed to the fields used).

Made with nbdkit serving build/plugins/nbdkit-raid-plugin.so
(preset=vsa-raid10-8x-sas10k member-size=1G) and nbdkit-hdd-plugin.so
(preset=sas10k-300g write-cache=on), fio --ioengine=nbd 8K randrw 50/50
QD8 for 4 s over 48 MiB (raid), snapshots taken 1.5 s and 3.5 s in.
"""
import copy
import json
import os

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(TESTS, "data")

from storlab_cli.results import device_window
from storlab_cli.errors import UserError


def snapshot(name):
    return device_window.load(os.path.join(DATA, f"stats-{name}.json"))


@pytest.fixture
def raid():
    return snapshot("raid-before"), snapshot("raid-after")


@pytest.fixture
def hdd():
    return snapshot("hdd-before"), snapshot("hdd-after")


# Numbers read off the fixtures by hand.
RAID_WINDOW_NS = 3556622024 - 1550277977
RAID_IOS = (10105 - 2118) + (10095 - 2240)
RAID_LAT_SUM_NS = 10105 * 1704102.86 - 2118 * 3497428.6 + 10095 * 10641.0286 - 2240 * 10134.8638
HDD_WINDOW_NS = 3557339569 - 1552625125
HDD_IOS = (2280 - 998) + (2397 - 1062)
HDD_LAT_SUM_NS = 2280 * 10973523.6 - 998 * 9505399.26 + 2397 * 213654 - 1062 * 213654


def test_raid_window(raid):
    w = device_window.window_between(*raid, source="raid")
    assert (w.name, w.kind, w.ios) == ("raid", "raid", RAID_IOS)
    assert w.window_s == RAID_WINDOW_NS / 1e9
    assert w.dev_iops == pytest.approx(RAID_IOS / (RAID_WINDOW_NS / 1e9), rel=1e-12)
    assert w.dev_lat_mean_us == pytest.approx(RAID_LAT_SUM_NS / RAID_IOS / 1000, rel=1e-12)
    # the controller counted 58 % read hits in its cache in this window
    assert (w.cache_read_hits, w.cache_read_misses) == (4653 - 0, 5454 - 2122)
    assert w.cache_hit_pct == pytest.approx(100 * 4653 / (4653 + 3332))
    assert w.dirty_mb == 44834816 / 1e6
    assert list(w.metrics()) == list(device_window.METRIC_COLUMNS)


def test_member_iops_agree_with_the_controllers_own_count(raid):
    """Members' completions in the window = the IOs the controller sent them
    in the window + those in flight at the start - those in flight at the end."""
    before, after = raid
    w = device_window.window_between(before, after)
    sent = sum(after["devices"][0]["counters"][k] - before["devices"][0]["counters"][k]
               for k in ("member_reads", "member_writes"))
    in_flight = [sum(r["queue_depth"] for r in doc["devices"][1:]) for doc in (before, after)]
    member_ios = sent + in_flight[0] - in_flight[1]
    assert member_ios == 3334
    assert w.member_iops == pytest.approx(member_ios / (RAID_WINDOW_NS / 1e9), rel=1e-12)


def with_lun_records(doc):
    """doc as the raid plugin with lun=a:... lun=b:... writes it: a record
    per LUN after the members (here copies of the front end)."""
    doc = copy.deepcopy(doc)
    front = doc["devices"][0]
    doc["devices"] += [dict(copy.deepcopy(front), name=name, kind="lun")
                       for name in ("lun:a", "lun:b")]
    return doc


def test_lun_records_are_not_members(raid):
    plain = device_window.window_between(*raid)
    with_luns = device_window.window_between(*(with_lun_records(doc) for doc in raid))
    assert with_luns.member_iops == plain.member_iops
    assert (with_luns.name, with_luns.ios) == ("raid", RAID_IOS)


def test_hdd_window_has_no_raid_figures(hdd):
    w = device_window.window_between(*hdd)
    assert w.ios == HDD_IOS
    assert w.dev_iops == pytest.approx(HDD_IOS / (HDD_WINDOW_NS / 1e9), rel=1e-12)
    assert w.dev_lat_mean_us == pytest.approx(HDD_LAT_SUM_NS / HDD_IOS / 1000, rel=1e-12)
    assert w.metrics() == {"dev_iops": w.dev_iops, "dev_lat_mean_us": w.dev_lat_mean_us,
                           "member_iops": None, "cache_hit_pct": None, "dirty_mb": None,
                           "dev_qd_mean": pytest.approx(HDD_LAT_SUM_NS / HDD_WINDOW_NS),
                           "release_late_p99_us": None}     # stats from before the histogram


def test_wall_clock_window_and_stored_delta(raid, tmp_path):
    w = device_window.window_between(*raid, window_s=2.0)
    assert w.dev_iops == RAID_IOS / 2.0
    # the delta document, stored and read back, gives the same window
    path = tmp_path / "device-node1-raid.json"
    path.write_text(json.dumps(device_window.delta(*raid, window_s=2.0)))
    assert device_window.window(device_window.load(str(path)), str(path)) == w


def test_combine_sums_iops_and_weights_latency(raid, hdd):
    r = device_window.window_between(*raid)
    h = device_window.window_between(*hdd)
    both = device_window.combine([r, h])
    assert both.dev_iops == pytest.approx(r.dev_iops + h.dev_iops)
    assert both.dev_lat_mean_us == pytest.approx(
        (RAID_LAT_SUM_NS + HDD_LAT_SUM_NS) / (RAID_IOS + HDD_IOS) / 1000, rel=1e-12)
    assert (both.member_iops, both.cache_hit_pct, both.dirty_mb) == \
        (r.member_iops, r.cache_hit_pct, r.dirty_mb)
    two = device_window.combine([r, r])
    assert two.member_iops == 2 * r.member_iops
    assert two.cache_hit_pct == pytest.approx(r.cache_hit_pct)
    assert two.dirty_mb == 2 * r.dirty_mb
    assert device_window.combine([h]).member_iops is None


def test_errors_name_the_input(raid, hdd, tmp_path):
    before, after = raid
    with pytest.raises(UserError, match="node1/raid: raid: read count went backwards"):
        device_window.delta(after, before, "node1/raid", window_s=1.0)
    with pytest.raises(UserError, match="node1/raid: no time passed"):
        device_window.delta(after, after, "node1/raid")
    with pytest.raises(UserError, match="before and after hold different devices"):
        device_window.delta(before, hdd[1])
    with pytest.raises(UserError, match=r"x \(before\): no 'devices' list"):
        device_window.delta({"jobs": []}, after, "x")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(UserError, match="bad.json: not JSON"):
        device_window.load(str(bad))
    with pytest.raises(UserError, match="missing.json: cannot read"):
        device_window.load(str(tmp_path / "missing.json"))
    with pytest.raises(UserError, match="w.json: not a device window document"):
        device_window.window({"devices": []}, "w.json")


def test_layers_give_every_record_its_rates(raid):
    before, after = raid
    layers = device_window.layers(device_window.delta(*raid), "raid")
    assert [x.name for x in layers] == [r["name"] for r in after["devices"]]
    window_s = RAID_WINDOW_NS / 1e9
    for x, b, a in zip(layers, before["devices"], after["devices"]):
        reads = a["ops"]["read"]["count"] - b["ops"]["read"]["count"]
        written = a["ops"]["write"]["bytes"] - b["ops"]["write"]["bytes"]
        assert x.read_iops == pytest.approx(reads / window_s, rel=1e-12)
        assert x.write_mb_s == pytest.approx(written / 1e6 / window_s, rel=1e-12)
        assert x.queue_depth == a["queue_depth"]
        assert x.busy_pct is None          # the fixtures keep no busy time
    front = layers[0]
    assert front.lat_mean_us == pytest.approx(RAID_LAT_SUM_NS / RAID_IOS / 1000, rel=1e-12)
    assert front.mean_queue_depth == pytest.approx(RAID_LAT_SUM_NS / RAID_WINDOW_NS, rel=1e-12)


def test_busy_share_from_busy_time_else_utilization(hdd):
    before, after = (json.loads(json.dumps(doc)) for doc in hdd)
    after["devices"][0]["utilization"] = 0.25
    assert device_window.layers(device_window.delta(before, after, window_s=2.0))[0].busy_pct == 25.0
    before["devices"][0]["busy_ns"], after["devices"][0]["busy_ns"] = 10**9, 10**9 + 5 * 10**8
    assert device_window.layers(device_window.delta(before, after, window_s=2.0))[0].busy_pct == 25.0
    after["devices"][0]["busy_ns"] = 10**9 + 3 * 10**9        # accrued late: never above 100 %
    assert device_window.layers(device_window.delta(before, after, window_s=2.0))[0].busy_pct == 100.0


def test_cache_window_of_the_controller(raid, hdd):
    c = device_window.cache(device_window.delta(*raid, window_s=2.0))
    assert (c.read_hits, c.read_misses) == (4653, 5454 - 2122)
    assert (c.writes_cached, c.writes_through) == (10095 - 2240, 0)
    assert c.hit_pct == pytest.approx(100 * 4653 / (4653 + 3332))
    assert (c.dirty_mb, c.destage_mb_s) == (44834816 / 1e6, 0.0)
    assert (c.battery_state, c.write_back_effective) == (0, True)
    assert device_window.cache(device_window.delta(*hdd)) is None
