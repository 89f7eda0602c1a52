"""tcg_calibrate.py's figures from given runs (no lab): what the timed disk
(a disk that waits for its model's time, as a lab's devices do) gives the
host file, and what it leaves as before when a saved run has none."""
import os
import sys

import pytest

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SOURCE, "scripts"))
sys.path.insert(0, os.path.join(SOURCE, "scripts", "bench"))

import tcg_calibrate  # noqa: E402


def run(vcpu_us, host_us=100.0, devices=1.0, node2_us=0.0, late_us=None):
    r = tcg_calibrate.Run.__new__(tcg_calibrate.Run)
    r.ios, r.iops, r.host_cores, r.host_cache_ratio = 1000, 1000.0, 1.0, None
    r.vcpu_us = {"node1": vcpu_us, "node2": node2_us}
    r.devices = {"node1": devices, "node2": devices}
    r.host_us, r.release_late_us = host_us, late_us
    return r


def runs(timed):
    """bare: 200 µs an I/O at 1 outstanding, 150 at 8; raid1, nvme, ext4
    and linear as figures() needs them; timed (when asked): 320 at 1, 150 at 8, its
    hypervisor 130 µs a device I/O at 8, its replies 20-40 µs late."""
    out = {}
    for op in tcg_calibrate.OPS:
        out["bare", op, 1], out["bare", op, 8] = run(200), run(150, host_us=90)
        out["raid1", op, 1], out["raid1", op, 8] = run(240), run(190 if op == "randread" else 230,
                                                                  devices=2.0)
        out["nvme", op, 1], out["nvme", op, 8] = run(700, host_us=400, node2_us=500), \
            run(500, host_us=300, node2_us=300)
        out["ext4", op, 8], out["linear", op, 8] = run(250), run(170)
        if timed:
            out["timed", op, 1] = run(320, host_us=300, late_us=20)
            out["timed", op, 8] = run(150, host_us=130, late_us=40)
    return out


def test_the_timed_disk_gives_the_release_the_wake_up_and_the_hypervisor():
    f = tcg_calibrate.figures(runs(timed=True))
    assert f["device_release_ns"] == pytest.approx(30)         # the mean of its runs
    assert f["idle_wake_ns"] == pytest.approx(320 - 150)       # its vCPU went idle for the wait
    assert f["hypervisor_per_device_io_ns"] == pytest.approx(130)


def test_without_a_timed_disk_the_figures_are_the_bare_disks():
    f = tcg_calibrate.figures(runs(timed=False))
    assert f["device_release_ns"] == 0
    assert f["idle_wake_ns"] == pytest.approx(200 - 150)
    assert f["hypervisor_per_device_io_ns"] == pytest.approx(90)


def test_the_median_runs_carry_the_lateness():
    passes = [runs(timed=True), runs(timed=True), runs(timed=True)]
    passes[1]["timed", "randread", 1].release_late_us = 200
    taken = tcg_calibrate.median_runs(passes)
    assert taken["timed", "randread", 1].release_late_us == 20
    assert taken["bare", "randread", 1].release_late_us is None
