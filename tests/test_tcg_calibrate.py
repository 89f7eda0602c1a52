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
    r.host_cores_total = 2
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


def test_timed_and_untimed_disks_give_their_hypervisor_figures():
    """bare's is the untimed disks'; timed's at 8 a timed disk's, and what
    each one's reply costs more taken alone is its run at 1 less at 8 (bare
    100 against 90); a raid run (printed) moves none of them."""
    out = runs(timed=True)
    f = tcg_calibrate.figures(out)
    assert f["hypervisor_per_untimed_io_ns"] == pytest.approx(90)
    assert f["hypervisor_per_device_io_ns"] == pytest.approx(130)
    assert f["hypervisor_idle_device_io_ns"] == pytest.approx(300 - 130)
    assert f["hypervisor_idle_untimed_io_ns"] == pytest.approx(100 - 90)
    out["raid", "randread", 8] = run(160, host_us=270)
    out["raid", "randwrite", 8] = run(160, host_us=130)
    assert tcg_calibrate.figures(out) == f
    assert tcg_calibrate.figures(runs(timed=False))["hypervisor_idle_device_io_ns"] == 0


def test_without_a_timed_disk_the_figures_are_the_bare_disks():
    f = tcg_calibrate.figures(runs(timed=False))
    assert f["device_release_ns"] == 0
    assert f["idle_wake_ns"] == pytest.approx(200 - 150)
    assert f["hypervisor_per_device_io_ns"] == pytest.approx(90)


def with_busy_host(out):
    """busy-bare and busy-ext4 beside bare and ext4 at both depths: the
    vCPU's shares 0.5-0.9, QEMU's threads' 1.2 at 1 outstanding and 0.8 at 8."""
    vcpu = {("bare", "randread", 1): 0.9, ("bare", "randread", 8): 0.7,
            ("bare", "randwrite", 1): 0.8, ("bare", "randwrite", 8): 0.5,
            ("ext4", "randread", 1): 0.85, ("ext4", "randread", 8): 0.6,
            ("ext4", "randwrite", 1): 0.75, ("ext4", "randwrite", 8): 0.65}
    for (name, op, depth), share in vcpu.items():
        out.setdefault((name, op, depth), run(200))
        idle = out[name, op, depth]
        out["busy-" + name, op, depth] = run(idle.vcpu_us["node1"] * share,
                                             host_us=idle.host_us * (1.2 if depth == 1 else 0.8))
    return out


def test_a_busy_host_gives_the_median_share_of_the_vcpu_at_depth():
    f = tcg_calibrate.figures(with_busy_host(runs(timed=True)))
    # the median of the four shares at 8 outstanding (0.7, 0.5, 0.6, 0.65)
    assert f["busy_host_share"] == pytest.approx(0.625)
    assert f["(hypervisor's busy host share)"] == pytest.approx(0.8)
    assert f["calibrated_utilisation"] == pytest.approx(0.5)    # 1 of the 2 cores busy


def test_the_host_file_takes_the_share_and_runs_without_it_leave_it_out(monkeypatch):
    monkeypatch.setattr(tcg_calibrate, "switch_batching", lambda *_: None)
    figures = tcg_calibrate.host_file_figures([with_busy_host(runs(timed=True))])
    assert figures["busy-host-share"] == 0.62       # rounded to two places
    assert figures["calibrated-utilisation"] == 0.5
    assert "(hypervisor's busy host share)" not in figures
    assert "busy-host-share" not in tcg_calibrate.host_file_figures([runs(timed=True)])


def test_the_median_runs_carry_the_lateness():
    passes = [runs(timed=True), runs(timed=True), runs(timed=True)]
    passes[1]["timed", "randread", 1].release_late_us = 200
    taken = tcg_calibrate.median_runs(passes)
    assert taken["timed", "randread", 1].release_late_us == 20
    assert taken["bare", "randread", 1].release_late_us is None


def test_writeback_prints_what_a_copy_costs_beyond_its_device_ios(capsys):
    """writeback against hybrid writes: 60 µs more a write for 1.5 device
    I/Os more is 40 µs an extra device I/O, beside the 40 the runs give a
    device I/O (raid1 - bare)."""
    out = runs(timed=False)
    for d in (1, 8):
        out["hybrid", "randwrite", d] = run(200 if d == 1 else 100)
        out["writeback", "randwrite", d] = run(260 if d == 1 else 160, devices=2.5)
    tcg_calibrate.print_writeback([out])
    printed = capsys.readouterr().out
    assert "| 8 | 100 | 160 | 60 | 1.00 | 2.50 | 1.50 | 40 |" in printed
    assert "40 µs as measured here" in printed


def test_no_writeback_runs_print_nothing(capsys):
    tcg_calibrate.print_writeback([runs(timed=False)])
    assert capsys.readouterr().out == ""
