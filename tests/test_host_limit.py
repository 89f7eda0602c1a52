"""pytest: when a lab point measured the host (results/host_limit.py), and the
windowed histogram reading it rests on (results/latency_buckets.py)."""
import json
import os
import subprocess

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(TESTS)
BUILD = os.environ.get("STORLAB_BUILD_DIR", os.path.join(SOURCE, "build"))

from storlab_cli.results import device_window, host_limit, latency_buckets
from storlab_cli.results.host_limit import DeviceLoad


@pytest.mark.parametrize("kind, params", [("hdd", ["preset=sas10k-300g"]),
                                          ("raid", ["preset=vsa-raid10-8x-sas10k",
                                                    "member-size=1G"])])
def test_bucket_percentiles_read_as_the_c_side_reads_them(kind, params):
    """Every op's percentiles as the C side printed them, recomputed from its
    buckets (a storlab-sim run's device stats: the records storlab-stats prints)."""
    sim = os.path.join(BUILD, "emulator", "storlab-sim")
    if not os.access(sim, os.X_OK):
        pytest.skip(f"{sim}: not built")
    job = os.path.join(SOURCE, "scripts", "jobs", "hdd-randread-qd32.fio")
    result = subprocess.run([sim, kind, *params, job], capture_output=True, text=True,
                            check=True, timeout=120)
    record = json.loads(result.stdout)["storlab"]["device"]["stats"]
    checked = 0
    for op, o in record["ops"].items():
        if not o["count"]:
            continue
        buckets = latency_buckets.counts(o["latency_histogram"], f"{kind} {op}")
        lat = o["latency_ns"]
        for key, pct in (("50", 50.0), ("90", 90.0), ("99", 99.0), ("99.9", 99.9)):
            value = latency_buckets.percentile(buckets, pct)
            clamped = min(max(value, lat["min"]), lat["max"])       # the C side clamps too
            assert clamped == lat["percentiles"][key], (op, key)
            checked += 1
    assert checked >= 4


def test_bucket_bounds_and_window_difference():
    assert [latency_buckets.bucket_midpoint(i) for i in (0, 127, 128, 255, 256)] == \
        [0, 127, 128, 255, 256.0]
    # group 3 is the octave 512..1023 in buckets of 4: index 384 holds 512..515
    assert latency_buckets.bucket_midpoint(384) == 513
    assert latency_buckets.difference({1: 5, 2: 3}, {1: 5, 2: 1}) == {2: 2}
    assert latency_buckets.percentile({}, 99) is None


@pytest.mark.parametrize("load, expected", [
    # an HDD at QD1: the device holds the I/O nearly all the time
    (DeviceLoad(1, 0.97, 8000.0, 40.0), []),
    # the demo's write-back QD16: a 10 us cache, a guest that cannot keep it busy
    (DeviceLoad(16, 1.2, 12.0, 0.5), ["host-queue"]),
    # QD32 on one disk: QEMU keeps 16 in flight, the device sees 15.8 of them
    (DeviceLoad(32, 15.8, 7000.0, 30.0), ["nbd-16"]),
    (DeviceLoad(32, 4.0, 700.0, 30.0), ["nbd-16", "host-queue"]),
    # replies released 200 us late on a 1 ms device
    (DeviceLoad(4, 3.9, 1000.0, 200.0), ["release-late"]),
    # under a stack the offered depth is unknown: only lateness can speak
    (DeviceLoad(None, 0.1, 1000.0, 50.0), []),
    (DeviceLoad(None, 0.1, 100.0, 50.0), ["release-late"]),
    # the simulator: no release figures at all
    (DeviceLoad(64, 64.0, 500.0, None), ["nbd-16"]),
])
def test_reasons(load, expected):
    assert host_limit.reasons(load) == expected


def test_point_reasons_join_every_devices_signs_in_one_order():
    loads = [DeviceLoad(4, 3.9, 1000.0, 200.0), DeviceLoad(32, 4.0, 700.0, 1.0)]
    assert host_limit.point_reasons(loads) == "nbd-16+host-queue+release-late"
    assert host_limit.point_reasons([DeviceLoad(1, 0.97, 8000.0, 1.0)]) == ""
    assert len(host_limit.explain("nbd-16+release-late")) == 2
    # a fio thread that started after the window began: last in the order
    assert host_limit.point_reasons(loads, late_start=True) == \
        "nbd-16+host-queue+release-late+late-start"
    assert host_limit.point_reasons([], late_start=True) == "late-start"
    assert "start_skew_s" in host_limit.explain("late-start")[0]


def test_device_window_reads_the_windows_queue_depth_and_lateness():
    """Two snapshots of a real-time device: the lateness p99 of the replies in
    the window only, the mean queue depth by Little's law."""
    def snapshot(now_ns, count, lat_mean_ns, late_buckets):
        op = {"count": count, "bytes": 4096 * count, "latency_ns": {"mean": lat_mean_ns}}
        return {"devices": [{"name": "hdd", "kind": "hdd", "now_ns": now_ns,
                             "ops": {"read": op, "write": dict(op, count=0, bytes=0)},
                             "realtime": {"release_lateness_histogram": {
                                 "sub_bits": 7, "buckets": late_buckets}}}]}
    before = snapshot(1_000_000_000, 100, 1_000_000, [[50, 100]])
    # 1000 more reads of 1 ms each in 1 s; 990 released 50 ns late, 10 at ~100 us
    after = snapshot(2_000_000_000, 1100, 1_000_000, [[50, 1090], [1187, 10]])
    w = device_window.window_between(before, after, window_s=1.0)
    assert w.mean_queue_depth == pytest.approx(1.0)
    assert w.release_late_p99_us == pytest.approx(0.05)
    after = snapshot(2_000_000_000, 1100, 1_000_000, [[50, 1080], [1187, 20]])
    assert device_window.window_between(before, after, window_s=1.0).release_late_p99_us == \
        pytest.approx(latency_buckets.bucket_midpoint(1187) / 1000)


def test_io_slower_than_the_way_to_the_window_is_long_io():
    """A closed loop is steady once a round of its queue has completed:
    fio's mean latency beyond ramp_s + start_skew_s (5 s by default) means
    the window began inside the start. Seen: 256 KiB reads at 64 in flight
    a thread on a TCG guest, 5.7 s mean, no completion in the window."""
    assert host_limit.long_io(5.69e6, 5) and not host_limit.long_io(3.48e6, 5)
    assert not host_limit.long_io(None, 5)               # nothing completed: fio says no mean
    assert host_limit.point_reasons([], late_start=True, long_io=True) == "late-start+long-io"
    assert host_limit.point_reasons([DeviceLoad(4, 3.9, 1000.0, 1.0)], long_io=True) == "long-io"
    assert "ramp_s + start_skew_s" in host_limit.explain("long-io")[0]
