"""A lab point's figures over its measured window (results/fio_window.py):
fio's interval logs counted inside the window that starts ramp_s after
the node's gate opened; a thread that starts its I/O late counts only
what it did in the window. Hand-made logs for the arithmetic and the bad
input; then the host's real fio, started through the lab's own launcher
and gate with the lab's job file, one thread logging 2 s late."""
import os
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))

from storlab_cli.errors import UserError  # noqa: E402
from storlab_cli.results import fio_merge, fio_window, timeline  # noqa: E402
from storlab_cli.sweep import fio_jobfile  # noqa: E402
from storlab_cli.sweep.fio_launcher import (LAUNCHER, gate_go_script,  # noqa: E402
                                           gate_passes_script, gate_state_script,
                                           job_files_script)

PHASES = {"ramp_s": 1, "duration_s": 4, "interval_s": 1}


def write(path, lines):
    path.write_text("".join(f"{line}\n" for line in lines))
    return str(path)


def test_gate_opened_at_the_first_pass(tmp_path):
    gate = write(tmp_path / "gate-node1.txt", ["n-u1w1.prerun.txt:100.52", "n-u1w2.prerun.txt:100.50",
                                               "n-u2w1.prerun.txt:101"])
    assert fio_window.gate_opened_ms(gate) == pytest.approx(100500)
    window = fio_window.node_window(gate, PHASES)
    assert (window.start_ms, window.end_ms) == pytest.approx((104500, 108500))   # ramp + 3 s


@pytest.mark.parametrize("lines, needle", [
    (["n-u1w1.prerun.txt:12.5", "Saving output of prerun"], "gate-node1.txt: line 2: not JOB.prerun.txt:UPTIME_S"),
    (["n-u1w1.prerun.txt:-3"], "line 1: not JOB.prerun.txt:UPTIME_S"),
    ([], "gate-node1.txt: no thread passed the gate"),
])
def test_bad_gate_files_are_named(tmp_path, lines, needle):
    gate = write(tmp_path / "gate-node1.txt", lines)
    with pytest.raises(UserError) as e:
        fio_window.gate_opened_ms(gate)
    assert needle in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(UserError) as e:
        fio_window.gate_opened_ms(str(tmp_path / "none.txt"))
    assert "none.txt: cannot read the gate's passes" in str(e.value)


def counted(tmp_path, name, iops_lines, clat_lines, window, interval_ms=1000):
    counts = {d: fio_window._Count() for d in ("read", "write")}
    fio_window.count_job(write(tmp_path / f"{name}_iops.1.log", iops_lines),
                         write(tmp_path / f"{name}_clat.1.log", clat_lines),
                         interval_ms, window, counts)
    return counts


def test_intervals_count_by_their_part_in_the_window(tmp_path):
    window = fio_window.Window(10_000, 14_000)
    # intervals end at 10.5 .. 15.5 s: the first and the last are half in the window
    counts = counted(tmp_path, "a",
                     [f"{t}, 100, 0, 4096, 0" for t in (10500, 11500, 12500, 13500, 14500, 15500)]
                     + ["12500, 50, 1, 4096, 0"],
                     # fio stamps a clat line a millisecond or so off its IOPS line
                     [f"{t + 1}, 2000000, 0, 4096, 0" for t in (10500, 11500, 12500, 13500, 14500)]
                     + ["15499, 8000000, 0, 4096, 0", "12500, 1000000, 1, 4096, 0"], window)
    assert counts["read"].ios == pytest.approx(400)          # 0.5 + 3 + 0.5 intervals of 100
    assert counts["read"].clat_sum_ns / counts["read"].clat_ios == pytest.approx(2e6)
    assert counts["write"].ios == pytest.approx(50)
    # nothing of a thread that logged only after the window
    late = counted(tmp_path, "b", ["15000, 900, 0, 4096, 0", "16000, 900, 0, 4096, 0"],
                   ["15000, 1000, 0, 4096, 0"], window)
    assert late["read"].ios == 0


def test_rates_and_means_over_the_window_percentiles_as_fio_gave(tmp_path):
    """Two jobs, 4 s window: one at 100 IOPS throughout, one at 100 IOPS in
    its last second only; fio's own figures (each over its run) say 200."""
    gate = write(tmp_path / "gate-n.txt", ["n-u1w1.prerun.txt:6"])
    window = fio_window.node_window(gate, PHASES)            # 10 .. 14 s
    steady = (write(tmp_path / "s_iops.1.log", [f"{t}, 100, 0, 4096, 0" for t in range(11000, 16000, 1000)]),
              write(tmp_path / "s_clat.1.log", [f"{t}, 1000000, 0, 4096, 0" for t in range(11000, 16000, 1000)]))
    late = (write(tmp_path / "l_iops.1.log", [f"{t}, 100, 0, 4096, 0" for t in range(14000, 19000, 1000)]),
            write(tmp_path / "l_clat.1.log", [f"{t}, 3000000, 0, 4096, 0" for t in range(14000, 19000, 1000)]))
    part = (500, 500 * 4096, 5000, 500 * 2e6, 500, {2_000_000: 500})
    none = (0, 0, 5000, 0.0, 0, {})
    whole = fio_merge.Summary(
        units=1, read=fio_merge._direction([part, part]), write=fio_merge._direction([none, none]),
        total=fio_merge.merge_directions([fio_merge._direction([part, part]),
                                          fio_merge._direction([none, none])]))
    assert whole.total.iops == pytest.approx(200)
    over = fio_window.over_window(whole, [(*steady, window), (*late, window)], 1000, 4)
    metrics = fio_merge.point_metrics(over)
    assert metrics["iops"] == pytest.approx(125)             # (400 + 100) / 4 s
    assert metrics["read_mb_s"] == pytest.approx(125 * 4096 / 1e6)
    assert metrics["lat_mean_us"] == pytest.approx((400 * 1000 + 100 * 3000) / 500)
    assert metrics["write_iops"] == 0 and metrics["write_lat_mean_us"] is None
    assert metrics["lat_p99_us"] == fio_merge.point_metrics(whole)["lat_p99_us"] == 2000


def test_real_fio_through_the_gate_one_thread_late(tmp_path):
    """The lab's job file (fio_jobfile.measured, logged: a ramp of 1 s),
    the null engine at a fixed 400 IOPS a thread, run by the lab's
    launcher behind its gate; thread w2 is given a ramp of 6 s, so it
    logs 2 s into the window that starts 1 + 3 s after the gate. Over the
    4 s window: 400 + 400 x 2/4 IOPS; fio's JSON sums 800."""
    gate = str(tmp_path / "gate")
    workload = {"rw": "randread", "rwmixread": 100, "random_percent": 100, "bs": "4k",
                "iodepth": 1, "size": "4M"}
    workers = [fio_jobfile.Worker(f"node1-u1w{w}", None, 0) for w in (1, 2)]
    stem = str(tmp_path / "node1-u1")
    text = fio_jobfile.measured(workload, PHASES, workers, randseed=1, log_prefix=stem,
                                start_gate=f"{gate}/wait")
    text = (text.replace("ioengine=libaio", "ioengine=null").replace("direct=1\n", "")
            .replace("[node1-u1w1]", "[node1-u1w1]\nrate_iops=400")
            .replace("[node1-u1w2]", "[node1-u1w2]\nrate_iops=400\nramp_time=6"))
    subprocess.run(["/bin/sh"], input=job_files_script(str(tmp_path), {stem: text}), check=True)
    launcher = subprocess.Popen(["/bin/sh", "-c", LAUNCHER, "fio-launcher", gate, stem])
    try:
        deadline = time.monotonic() + 60
        while subprocess.run(["/bin/sh", "-c", gate_state_script(gate)], capture_output=True,
                             text=True, check=True).stdout.strip() != "2 1":
            assert time.monotonic() < deadline, "the threads never reached the gate"
            time.sleep(0.2)
        subprocess.run(["/bin/sh", "-c", gate_go_script(gate)], check=True, timeout=90)
        assert launcher.wait(timeout=60) == 0
    finally:
        if launcher.poll() is None:
            launcher.kill()
    gate_file = tmp_path / "gate-node1.txt"
    gate_file.write_bytes(subprocess.run(["/bin/sh", "-c", gate_passes_script(gate)],
                                         capture_output=True, check=True).stdout)
    window = fio_window.node_window(str(gate_file), PHASES)
    whole = fio_merge.merge_files([f"{stem}.json"])
    pairs = timeline.fio_log_pairs(stem)
    over = fio_window.over_window(whole, [(i, c, window) for i, c in pairs], 1000, 4)
    report = (f"window {window}: JSON {whole.total.iops:.0f} IOPS, window {over.total.iops:.0f}; "
              f"logs {[open(i).read() for i, _ in pairs]}")
    assert whole.total.iops == pytest.approx(800, rel=0.05), report
    assert over.total.iops == pytest.approx(600, rel=0.1), report
    assert over.total.lat_mean_us is not None, report
    # the timeline in the window: w1 from the first interval, w2 from the third
    rows = timeline.rows(timeline.fio_samples(pairs, 1000, start_ms=window.start_ms, end_ms=4000))
    assert [r["t_s"] for r in rows] == [1, 2, 3, 4], report
    assert [round(r["iops"], -2) for r in rows] == [400, 400, 800, 800], report
