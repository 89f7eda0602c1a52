"""A lab point's figures over its measured window (results/fio_window.py):
fio's interval logs counted inside the window that starts ramp_s after
the node's gate opened; a thread that starts its I/O late counts only
what it did in the window; percentiles from fio's histogram logs counted
the same way. Hand-made logs for the arithmetic and the bad input; then
the host's real fio, started through the lab's own launcher and gate with
the lab's job file, one thread logging 2 s late."""
import os
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))

from storlab_cli.errors import UserError  # noqa: E402
from storlab_cli.results import fio_hist_log, fio_merge, fio_window, timeline  # noqa: E402
from storlab_cli.sweep import fio_jobfile  # noqa: E402
from storlab_cli.sweep.fio_launcher import (LAUNCHER, gate_go_script,  # noqa: E402
                                           gate_passes_script, gate_state_script,
                                           job_files_script, split_unit_logs,
                                           unit_logs_script)

PHASES = {"ramp_s": 1, "duration_s": 4, "interval_s": 1, "start_skew_s": 3}


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


def test_a_thread_whose_first_interval_began_inside_the_window_started_late(tmp_path):
    """Its first line ends an interval that began at its ramp's end or
    before: a first line at 11.0 s (interval 1 s) may have ramped until
    10.0 s, the window's start, and is on time; one at 11.5 s is late."""
    window = fio_window.Window(10_000, 14_000)

    def job(name, first_ms):
        path = write(tmp_path / f"{name}_iops.1.log",
                     [f"{t}, 100, 0, 4096, 0" for t in range(first_ms, 16_000, 1000)])
        return (path, None, None, window)

    on_time, late, silent = job("a", 11_000), job("b", 11_500), job("c", 16_000)
    assert not fio_window.started_late(on_time[0], 1000, window)
    assert fio_window.started_late(late[0], 1000, window)
    assert not fio_window.started_late(silent[0], 1000, window)   # logged nothing at all
    assert fio_window.late_starters([on_time, late, on_time], 1000) == 1


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
    over = fio_window.over_window(whole, [(*steady, None, window), (*late, None, window)], 1000, 4)
    metrics = fio_merge.point_metrics(over)
    assert metrics["iops"] == pytest.approx(125)             # (400 + 100) / 4 s
    assert metrics["read_mb_s"] == pytest.approx(125 * 4096 / 1e6)
    assert metrics["lat_mean_us"] == pytest.approx((400 * 1000 + 100 * 3000) / 500)
    assert metrics["write_iops"] == 0 and metrics["write_lat_mean_us"] is None
    assert metrics["lat_p99_us"] == fio_merge.point_metrics(whole)["lat_p99_us"] == 2000


def hist_line(t_ms, ddir, bins):
    """A fio histogram log line, full form: {bin index: count}."""
    return ", ".join([str(t_ms), str(ddir), "4096"]
                     + [str(bins.get(i, 0)) for i in range(fio_hist_log.PLAT_NR)])


# fio's bins of 1 ms and 3 ms (json+ keys 1003520 and 2998272)
BIN_1MS, BIN_3MS = 954, 1051


def test_bin_values_are_fios_json_keys():
    assert [fio_hist_log.bin_value_ns(i) for i in (0, 127, 128, 129, BIN_1MS, BIN_3MS)] == \
        [0, 127, 129, 131, 1003520, 2998272]


def test_histogram_lines_count_by_their_span_in_the_window(tmp_path):
    """A line holds the completions since the last line of its direction:
    the first (10.5 s) from 9.5 s, half inside a window from 10 s; the
    rest whole but the one that reaches past 14 s."""
    window = fio_window.Window(10_000, 14_000)
    log = write(tmp_path / "a_clat_hist.1.log",
                [hist_line(10_500, 0, {BIN_1MS: 100}), hist_line(12_500, 0, {BIN_1MS: 200}),
                 hist_line(11_000, 1, {BIN_3MS: 40}),     # the writes' own last line
                 hist_line(13_000, 1, {BIN_3MS: 80}),
                 hist_line(15_500, 0, {BIN_3MS: 300})])    # 12.5 .. 15.5: a half
    bins = {"read": {}, "write": {}}
    fio_window.count_hist(log, 1000, window, bins)
    assert bins["read"] == pytest.approx({1003520: 50 + 200, 2998272: 150})
    assert bins["write"] == pytest.approx({2998272: 40 + 80})


def test_percentiles_over_the_window_from_histogram_logs(tmp_path):
    """The steady job completes at 1 ms, the late one at 3 ms and only in
    the window's last second: over the window 20 % of I/Os took 3 ms, so
    p50 is 1 ms and p90 3 ms, where fio's own bins (each over its run:
    half and half) would say 3 ms at p50."""
    gate = write(tmp_path / "gate-n.txt", ["n-u1w1.prerun.txt:6"])
    window = fio_window.node_window(gate, PHASES)            # 10 .. 14 s
    steady = (write(tmp_path / "s_iops.1.log", [f"{t}, 100, 0, 4096, 0" for t in range(11000, 16000, 1000)]),
              write(tmp_path / "s_clat.1.log", [f"{t}, 1000000, 0, 4096, 0" for t in range(11000, 16000, 1000)]),
              write(tmp_path / "s_clat_hist.1.log", [hist_line(t, 0, {BIN_1MS: 100})
                                                     for t in range(11000, 16000, 1000)]))
    late = (write(tmp_path / "l_iops.1.log", [f"{t}, 100, 0, 4096, 0" for t in range(14000, 19000, 1000)]),
            write(tmp_path / "l_clat.1.log", [f"{t}, 3000000, 0, 4096, 0" for t in range(14000, 19000, 1000)]),
            write(tmp_path / "l_clat_hist.1.log", [hist_line(t, 0, {BIN_3MS: 100})
                                                   for t in range(14000, 19000, 1000)]))
    part = {1003520: 500}, {2998272: 500}
    whole = fio_merge.merge_docs([({"jobs": [
        {d: {"total_ios": 500 if d == "read" else 0, "io_bytes": 500 * 4096 if d == "read" else 0,
             "runtime": 5000, "clat_ns": ({"N": 500, "mean": 2e6, "bins": bins} if d == "read"
                                          else {"N": 0})}
         for d in ("read", "write")} for bins in part]}, "fio.json")])
    assert fio_merge.point_metrics(whole)["lat_p50_us"] == pytest.approx(1003.52)
    over = fio_window.over_window(whole, [(*steady, window), (*late, window)], 1000, 4)
    metrics = fio_merge.point_metrics(over)
    assert metrics["iops"] == pytest.approx(125)
    assert dict(over.read.bins) == {1003520: 400, 2998272: 100}
    assert metrics["lat_p50_us"] == pytest.approx(1003.52)
    assert metrics["lat_p99_us"] == metrics["read_lat_p99_us"] == pytest.approx(2998.272)
    assert over.read.percentile_us(80) == pytest.approx(1003.52)
    assert over.read.percentile_us(81) == pytest.approx(2998.272)
    # a job without a histogram log (an earlier storlab's): fio's bins stay
    kept = fio_window.over_window(whole, [(*steady[:2], None, window), (*late, window)], 1000, 4)
    assert kept.read.bins == whole.read.bins


def test_a_starved_iops_log_does_not_count_the_histograms_do(tmp_path):
    """fio writes its IOPS log from a helper thread, which a busy guest
    starves: here one IOPS line for a thread that completed 100 I/Os a
    second all through the 4 s window (one at 3 ms, the rest at 1 ms), and
    none at all for a second thread. The histogram lines, written as I/Os
    complete, count both: 800 in the window; the mean from the bins. The
    second thread is on time by its histogram log."""
    window = fio_window.Window(10_000, 14_000)
    steady = [hist_line(t, 0, {BIN_1MS: 99, BIN_3MS: 1}) for t in range(11_000, 16_000, 1000)]
    jobs = []
    for name, iops_lines in (("a", ["15000, 100, 0, 4096, 0"]), ("b", [])):
        jobs.append((write(tmp_path / f"{name}_iops.1.log", iops_lines),
                     write(tmp_path / f"{name}_clat.1.log", []),
                     write(tmp_path / f"{name}_clat_hist.1.log", steady), window))
    whole = fio_merge.Summary(units=1, read=fio_merge._direction([(1000, 1000 * 4096, 10000, 0, 0, {})]),
                              write=fio_merge._direction([(0, 0, 10000, 0, 0, {})]),
                              total=fio_merge._direction([(1000, 1000 * 4096, 10000, 0, 0, {})]))
    over = fio_window.over_window(whole, jobs, 1000, 4)
    assert over.read.iops == pytest.approx(200)
    assert over.read.lat_mean_us == pytest.approx((99 * 1003.52 + 2998.272) / 100)
    assert dict(over.read.bins) == {1003520: 792, 2998272: 8}
    # by its IOPS log, thread a began 4 s into the window and b never did
    assert fio_window.started_late(jobs[0][0], 1000, window)
    assert fio_window.late_starters(jobs, 1000) == 0
    # the same lines interval by interval: 100 IOPS a thread in each second
    samples = fio_window.hist_samples(jobs[1][2], 1000, window.start_ms, 4000)
    rows = timeline.rows(samples)
    assert [(r["t_s"], round(r["iops"], 6), r["write_iops"]) for r in rows] == \
        [(1.0, 100, 0), (2.0, 100, 0), (3.0, 100, 0), (4.0, 100, 0)]
    assert rows[0]["read_lat_mean_us"] == pytest.approx(over.read.lat_mean_us)
    # a line spanning 2.5 s (from the last at 11 s to 13.5 s) spreads over it
    spread = write(tmp_path / "c_clat_hist.1.log", [hist_line(11_000, 0, {BIN_1MS: 10}),
                                                    hist_line(13_500, 0, {BIN_1MS: 250})])
    assert [round(r["iops"], 6) for r in timeline.rows(
        fio_window.hist_samples(spread, 1000, window.start_ms, 4000))] == [10, 100, 100, 50]


@pytest.mark.parametrize("line, needle", [
    ("1000, 0, 4096, 1, 2, 3", "line 1: not a fio histogram log line"),          # too few bins
    ("1000, 0, 4096, 5:1, 1856:2", "line 1: not a fio histogram log line"),     # no such bin
    ("1000, 0, 4096, 5:-1", "line 1: not a fio histogram log line"),
    ("x, 0, 4096", "line 1: not a fio histogram log line"),
])
def test_bad_histogram_logs_are_named(tmp_path, line, needle):
    log = write(tmp_path / "j_clat_hist.1.log", [line])
    with pytest.raises(UserError) as e:
        fio_hist_log.read(log)
    assert "j_clat_hist.1.log" in str(e.value) and needle in str(e.value)
    assert "\n" not in str(e.value)
    with pytest.raises(UserError) as e:
        fio_hist_log.read(str(tmp_path / "none.log"))
    assert "none.log: cannot read fio histogram log" in str(e.value)


def test_real_fio_through_the_gate_one_thread_late(tmp_path, busybox_path):
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
    jobs = [(i, c, fio_hist_log.path_beside(c), window) for i, c in pairs]
    assert all(hist for _, _, hist, _ in jobs)
    over = fio_window.over_window(whole, jobs, 1000, 4)
    report = (f"window {window}: JSON {whole.total.iops:.0f} IOPS, window {over.total.iops:.0f}; "
              f"logs {[open(i).read() for i, _ in pairs]}")
    assert whole.total.iops == pytest.approx(800, rel=0.05), report
    assert over.total.iops == pytest.approx(600, rel=0.1), report
    assert over.total.lat_mean_us is not None, report
    # w2 ramped into the window: the point says so (host_limit's late-start)
    assert [fio_window.started_late(i, 1000, window) for i, _ in pairs] == [False, True], report
    # the histograms count the window's I/Os, in the bins fio's JSON has
    in_window = sum(count for _, count in over.total.bins)
    assert in_window == pytest.approx(over.total.iops * 4, rel=0.1), report
    assert set(dict(over.total.bins)) <= set(dict(whole.total.bins)), report
    # the timeline in the window: w1 from the first interval, w2 from the third
    rows = timeline.rows(timeline.fio_samples(pairs, 1000, start_ms=window.start_ms, end_ms=4000))
    assert [r["t_s"] for r in rows] == [1, 2, 3, 4], report
    assert [round(r["iops"], -2) for r in rows] == [400, 400, 800, 800], report
    # and from the histogram logs, as a lab's timeline is counted
    rows = timeline.rows([s for _, _, hist, _ in jobs
                          for s in fio_window.hist_samples(hist, 1000, window.start_ms, 4000)])
    assert [r["t_s"] for r in rows] == [1, 2, 3, 4], report
    assert [round(r["iops"], -2) for r in rows] == [400, 400, 800, 800], report
    # the lab fetches the histogram logs sparse, with the guest's busybox
    # awk: the same lines
    fetched = split_unit_logs(subprocess.run(
        ["/bin/sh", "-c", unit_logs_script(stem)], env={"PATH": busybox_path},
        capture_output=True, text=True, check=True).stdout)
    for _, _, hist, _ in jobs:
        sparse = write(tmp_path / "sparse.log", fetched[os.path.basename(hist)].splitlines())
        assert len(open(sparse).read()) < len(open(hist).read())
        assert fio_hist_log.read(sparse) == fio_hist_log.read(hist)

