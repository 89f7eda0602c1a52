"""A short simulator-backend sweep end to end through `storlab sweep`: the
VSA-like RAID LUN (topologies/vsa-raid.toml) with the battery ok and
failed plus a point where it fails mid-run; then resume, refusal of a
different sweep in the same directory, and `storlab plot` re-rendering.
Needs the build (storlab-sim) and gnuplot; no VMs."""
import csv
import os
import signal
import subprocess
import sys
import time

TESTS = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(TESTS)
STORLAB = os.path.join(SOURCE, "scripts", "storlab")
TOPOLOGY = os.path.join(SOURCE, "topologies", "vsa-raid.toml")

SWEEP = f'''
name = "sim-test"
backend = "sim"
topology = "{TOPOLOGY}"
[workload]
target = "lun0"
rw = "randrw"
rwmixread = 50
bs = "8k"
iodepth = 16
size = "2G"
[phases]
ramp_s = 2
duration_s = 20
interval_s = 1
[sweep]
iodepth = [4, 16]
"device.battery" = ["ok", "failed"]
[[sweep.points]]
label = "fails at 10 s"
iodepth = 16
events = [{{ at_s = 10, command = "battery failed" }}]
'''


def storlab(*args):
    return subprocess.run(["/usr/bin/python3", STORLAB, *args], capture_output=True, text=True,
                          check=False, timeout=600)


def rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_sim_sweep_end_to_end_resume_and_replot(tmp_path):
    sweep_file = tmp_path / "sweep.toml"
    sweep_file.write_text(SWEEP)
    out = tmp_path / "results"
    result = storlab("sweep", str(sweep_file), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "5/5 points" in result.stderr
    table = rows(out / "points.csv")
    assert [r["point"] for r in table] == ["0", "1", "2", "3", "4"]
    assert [(r["iodepth"], r["device.battery"]) for r in table] == [
        ("4", "ok"), ("4", "failed"), ("16", "ok"), ("16", "failed"), ("16", "fails at 10 s")]
    by = {(r["iodepth"], r["device.battery"]): r for r in table}
    for depth in ("4", "16"):
        ok, failed = by[(depth, "ok")], by[(depth, "failed")]
        # write-back cache vs write-through to the disks: the scenario's collapse
        assert float(failed["write_lat_mean_us"]) > 5 * float(ok["write_lat_mean_us"])
        assert float(failed["iops"]) < float(ok["iops"])
        assert float(ok["iops"]) > 0 and float(ok["lat_p99_us"]) >= float(ok["lat_p50_us"])
        assert float(ok["cache_hit_pct"]) >= 0 and ok["member_iops"] != ""
        # units of one node's fio are summed: iops = read + write
        assert abs(float(ok["iops"]) - float(ok["read_iops"]) - float(ok["write_iops"])) < 0.01

    point4 = out / "points" / "004"
    timeline = rows(point4 / "timeline.csv")
    assert len(timeline) == 20
    before = [float(r["write_lat_mean_us"]) for r in timeline if float(r["t_s"]) <= 10]
    after = [float(r["write_lat_mean_us"]) for r in timeline if float(r["t_s"]) >= 12]
    assert min(after) > 5 * max(before)
    assert (point4 / "events.csv").read_text().splitlines() == ["t_s,what", "10,battery failed"]

    plots = sorted(os.listdir(out / "plots"))
    for name in ("iops-latency", "hockey", "timeline-004"):
        assert f"{name}.png" in plots and f"{name}.svg" in plots
    assert (out / "index.html").exists()
    manifest = (out / "manifest.json").read_text()
    assert '"backend": "sim"' in manifest and '"points_done": 5' in manifest

    # resume: a point without its done marker is rerun, the others are kept
    kept = os.path.getmtime(out / "points" / "000" / "row.json")
    os.unlink(out / "points" / "003" / "done")
    result = storlab("sweep", str(sweep_file), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "resuming at point 3 (4 of 5 done)" in result.stderr
    assert os.path.getmtime(out / "points" / "000" / "row.json") == kept
    assert len(rows(out / "points.csv")) == 5

    # another sweep file into the same directory is refused, nothing lost
    other = tmp_path / "other.toml"
    other.write_text(SWEEP.replace("iodepth = [4, 16]", "iodepth = [4, 8]"))
    result = storlab("sweep", str(other), "--out", str(out))
    assert result.returncode == 1 and "holds the results of a different sweep" in result.stderr
    assert "Traceback" not in result.stderr
    assert len(rows(out / "points.csv")) == 5

    # plot re-renders from the CSVs alone
    for name in os.listdir(out / "plots"):
        os.unlink(out / "plots" / name)
    result = storlab("plot", str(out))
    assert result.returncode == 0, result.stderr
    assert os.path.exists(out / "plots" / "timeline-004.svg")


def test_ctrl_c_loses_nothing_measured_and_the_rerun_resumes(tmp_path):
    # Long virtual runs (a few wall seconds each) so the interrupt lands
    # mid-sweep. Every point keeps its battery: a write-through point runs in
    # a fraction of a second, and one of those could start and finish between
    # the first done and the interrupt (CI once saw all five finish).
    sweep_file = tmp_path / "sweep.toml"
    sweep_file.write_text(SWEEP.replace("duration_s = 20", "duration_s = 600")
                          .replace("interval_s = 1", "interval_s = 0")
                          .replace("at_s = 10", "at_s = 300")
                          .replace('iodepth = [4, 16]\n"device.battery" = ["ok", "failed"]',
                                   "iodepth = [4, 8, 16, 32]"))
    out = tmp_path / "results"
    # two points at once whatever the host's cores, so the fifth waits its turn
    proc = subprocess.Popen(["/usr/bin/python3", STORLAB, "sweep", str(sweep_file), "--out",
                             str(out), "--jobs", "2"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    # points run side by side: the first done, whichever it is, while a
    # second runs and the others wait
    while not list((out / "points").glob("*/done")):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "storlab sweep: interrupted" in stderr and "Traceback" not in stderr
    finished = [r["point"] for r in rows(out / "points.csv")]
    assert 1 <= len(finished) < 5
    # every point that finished (those running at the interrupt too) is in points.csv
    assert sorted(int(p) for p in finished) == sorted(
        int(d.parent.name) for d in (out / "points").glob("*/done"))
    first_missing = min(set(range(5)) - {int(p) for p in finished})
    result = storlab("sweep", str(sweep_file), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert (f"resuming at point {first_missing} ({len(finished)} of 5 done)"
            in result.stderr), result.stderr
    assert [r["point"] for r in rows(out / "points.csv")] == ["0", "1", "2", "3", "4"]


def test_bad_sweep_file_is_one_line_without_traceback(tmp_path):
    sweep_file = tmp_path / "sweep.toml"
    sweep_file.write_text(SWEEP.replace('rw = "randrw"', 'rw = "sideways"'))
    result = storlab("sweep", str(sweep_file), "--out", str(tmp_path / "r"))
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"storlab sweep: {sweep_file}: workload.rw = 'sideways': unknown rw mode "
        "(known: read, write, randread, randwrite, rw, randrw)"]
    assert not os.path.exists(tmp_path / "r")


if __name__ == "__main__":
    sys.exit(subprocess.call([sys.executable, "-m", "pytest", "-q", __file__]))


def test_active_nodes_swept_one_then_all(tmp_path):
    """active_nodes = [1, 3] on the three-node default lab: one node's LUN,
    then every node's; each node has its own identical controller, so three
    run about three times the IOPS of one at the same latency."""
    sweep_file = tmp_path / "sweep.toml"
    sweep_file.write_text(f'''
name = "nodes-test"
backend = "sim"
topology = "{os.path.join(SOURCE, "topologies", "default.toml")}"
[workload]
target = "lun0"
rw = "randread"
bs = "8k"
iodepth = 4
size = "256M"
[phases]
ramp_s = 1
duration_s = 5
interval_s = 0
[sweep]
active_nodes = [1, 3]
''')
    out = tmp_path / "results"
    result = storlab("sweep", str(sweep_file), "--out", str(out))
    assert result.returncode == 0, result.stderr
    one, three = rows(out / "points.csv")
    assert (one["active_nodes"], three["active_nodes"]) == ("1", "3")
    assert (one["nodes"], three["nodes"]) == ("1", "3")          # the nodes whose fio ran
    assert sorted(os.listdir(out / "points" / "000")).count("sim-node1.json") == 1
    assert not (out / "points" / "000" / "sim-node2.json").exists()
    assert all((out / "points" / "001" / f"sim-node{n}.json").exists() for n in (1, 2, 3))
    ratio = float(three["iops"]) / float(one["iops"])
    assert 2.7 < ratio < 3.3, ratio
    assert abs(float(three["lat_mean_us"]) / float(one["lat_mean_us"]) - 1) < 0.1


def test_plot_reread_reads_every_point_again_from_its_raw_files(tmp_path):
    """`storlab plot DIR --reread`: each finished point's row and timeline
    again from the raw files it kept, as this storlab counts them (here
    the simulator's JSON: the same figures). The sweep is the results'
    copy, its relative topology found where the original file was; a
    point without its row gets one back. Not a results directory: one
    line, nothing written."""
    studies = tmp_path / "studies"
    studies.mkdir()
    (tmp_path / "vsa-raid.toml").write_text(open(TOPOLOGY, encoding="utf-8").read())
    sweep_file = studies / "short.toml"
    sweep_file.write_text(SWEEP.replace(f'topology = "{TOPOLOGY}"', 'topology = "../vsa-raid.toml"')
                          .replace("duration_s = 20", "duration_s = 4")
                          .replace('"device.battery" = ["ok", "failed"]', "")
                          .split("[[sweep.points]]")[0])
    out = tmp_path / "results"
    result = storlab("sweep", str(sweep_file), "--out", str(out))
    assert result.returncode == 0, result.stderr
    table, timeline = (out / "points.csv").read_text(), (out / "points" / "001" / "timeline.csv").read_text()
    os.unlink(out / "points" / "001" / "row.json")
    os.unlink(out / "points" / "001" / "timeline.csv")
    result = storlab("plot", str(out), "--reread")
    assert result.returncode == 0, result.stderr
    assert "2 of 2 points read again from their raw files" in result.stdout
    assert (out / "points.csv").read_text() == table
    assert (out / "points" / "001" / "timeline.csv").read_text() == timeline
    assert os.path.exists(out / "plots" / "iops-latency.svg")

    for bad, needle in ((tmp_path, "manifest.json: no such file"),
                        (studies, "manifest.json: no such file")):
        result = storlab("plot", str(bad), "--reread")
        assert result.returncode == 1 and needle in result.stderr, result.stderr
        assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    (out / "sweep.toml").unlink()
    result = storlab("plot", str(out), "--reread")
    assert result.returncode == 1 and "sweep.toml: no such file" in result.stderr, result.stderr
    assert (out / "points.csv").read_text() == table
