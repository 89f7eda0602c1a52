"""The lab sweep's fio launcher and job files (sweep/fio_launcher.py), run
here with the host's real /bin/sh and fio as a guest runs them: every
unit started together, each one's JSON, stderr and exit status kept
apart; killed, it stops its fio processes; with a start gate, no unit's
I/O starts before the go, and then all units' at once."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))

from storlab_cli.sweep.fio_launcher import (LAUNCHER, gate_go_script,  # noqa: E402
                                           gate_state_script, inflight_script,
                                           job_files_script, split_unit_logs,
                                           stuck_listing_script,
                                           unit_logs_script)
from storlab_cli.sweep.fio_jobfile import threads_of  # noqa: E402

GOOD = "[global]\nioengine=null\nsize=4M\nbs=4k\nrw=randread\n\n[unit]\nnumjobs=2\nthread\n"
BAD = "[unit]\nioengine=no-such-engine\nsize=4M\n"
LONG = "[unit]\nioengine=null\nsize=4M\ntime_based\nruntime=120\n"
# two threads a unit, 4 s of I/O once through the gate (GATE: its directory)
GATED = ("[global]\nioengine=null\nsize=4M\nbs=4k\nrw=randread\nthread\ntime_based\n"
         "runtime=4\nexec_prerun=/bin/sh GATE/wait\n\n[a]\n\n[b]\n")


def write_jobs(directory, texts):
    stems = {str(directory / name): text for name, text in texts.items()}
    subprocess.run(["/bin/sh"], input=job_files_script(str(directory), stems), check=True)
    return list(stems)


def test_job_files_are_written_as_given_and_old_outputs_removed(tmp_path):
    stale = [tmp_path / "u1.json", tmp_path / "u1.rc", tmp_path / "u1.err",
             tmp_path / "u1_clat.1.log", tmp_path / "u10_clat.1.log"]
    for path in stale:
        path.write_text("old")
    odd = "[unit]\n# a line with 'quotes', $HOME and `backticks`\nsize=1M\n"
    write_jobs(tmp_path, {"u1": GOOD, "u2": odd})
    assert (tmp_path / "u1.fio").read_text() == GOOD
    assert (tmp_path / "u2.fio").read_text() == odd
    assert [p.exists() for p in stale] == [False, False, False, False, True]   # u10's kept


def test_units_run_together_each_with_its_own_results(tmp_path):
    stems = write_jobs(tmp_path, {"u1": GOOD, "u2": BAD, "u3": GOOD})
    done = subprocess.run(["/bin/sh", "-c", LAUNCHER, "fio-launcher", "", *stems],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    rc = {os.path.basename(s): (tmp_path / f"{os.path.basename(s)}.rc").read_text().strip()
          for s in stems}
    assert rc == {"u1": "0", "u2": "1", "u3": "0"}
    for unit in ("u1", "u3"):
        report = json.loads((tmp_path / f"{unit}.json").read_text())
        assert [j["read"]["total_ios"] for j in report["jobs"]] == [1024, 1024]
    assert "no-such-engine" in (tmp_path / "u2.err").read_text()


def test_killed_it_stops_every_fio(tmp_path):
    stems = write_jobs(tmp_path, {"u1": LONG, "u2": LONG})
    launcher = subprocess.Popen(["/bin/sh", "-c", LAUNCHER, "fio-launcher", "", *stems])
    children = []
    deadline = time.monotonic() + 30
    while len(children) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
        listing = subprocess.run(["ps", "-o", "pid=", "--ppid", str(launcher.pid)],
                                 capture_output=True, text=True, check=False).stdout
        children = [int(p) for p in listing.split()]
    assert len(children) == 2
    launcher.send_signal(signal.SIGTERM)
    assert launcher.wait(timeout=30) == 143
    deadline = time.monotonic() + 30
    while any(os.path.exists(f"/proc/{pid}") for pid in children):
        assert time.monotonic() < deadline, "fio outlived its launcher"
        time.sleep(0.2)


def test_a_stuck_points_fio_threads_are_listed(tmp_path):
    """stuck_listing_script, as a timed-out point runs it in the guest: one line a fio
    thread (pid, state, wait channel); nothing else."""
    stems = write_jobs(tmp_path, {"u1": LONG.replace("[unit]", "[unit]\nnumjobs=2\nthread")})
    launcher = subprocess.Popen(["/bin/sh", "-c", LAUNCHER, "fio-launcher", "", *stems])
    try:
        lines = []
        deadline = time.monotonic() + 30
        while len(lines) < 3 and time.monotonic() < deadline:    # fio's main thread + 2 jobs
            time.sleep(0.2)
            listing = subprocess.run(["/bin/sh", "-c", stuck_listing_script()], capture_output=True,
                                     text=True, check=False).stdout.splitlines()
            lines = [line for line in listing if line.split(" ")[0].isdigit()]
        assert len(lines) >= 3, lines
        for line in lines:
            tid, state, wchan = line.split(" ", 2)
            assert os.path.exists(f"/proc/{tid}") and state in "RSDTtIZ" and wchan
        assert any(line.split(" ", 2)[2] != "?" for line in lines), lines   # wait channels read
    finally:
        launcher.send_signal(signal.SIGTERM)
        launcher.wait(timeout=30)


def test_block_devices_with_requests_in_flight_are_listed(tmp_path):
    """inflight_script over a sysfs-like tree: a line for each device with
    reads or writes in flight, none for an idle one or an unreadable one."""
    for name, text in {"sda": "0 0\n", "sdb": "0 8\n", "md90": "3 0\n"}.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "inflight").write_text(text)
    (tmp_path / "loop0").mkdir()                    # no inflight file
    out = subprocess.run(["/bin/sh", "-c", inflight_script(str(tmp_path))], capture_output=True,
                         text=True, check=True)
    assert sorted(out.stdout.splitlines()) == ["inflight md90 3 0", "inflight sdb 0 8"]
    assert out.stderr == ""
    # the stuck listing carries it (on this host: whatever is in flight now)
    assert inflight_script() in stuck_listing_script()


def gate_state(gate):
    return subprocess.run(["/bin/sh", "-c", gate_state_script(gate)], capture_output=True,
                          text=True, check=True).stdout.strip()


def wait_for_state(gate, wanted, timeout_s=60):
    deadline = time.monotonic() + timeout_s
    while (state := gate_state(gate)) != wanted:
        assert time.monotonic() < deadline, f"gate state {state!r}, never {wanted!r}"
        time.sleep(0.2)


def test_gated_units_start_their_io_together_on_the_go(tmp_path):
    gate = str(tmp_path / "gate")
    job = GATED.replace("GATE", gate)
    assert threads_of(job) == 2
    stems = write_jobs(tmp_path, {"u1": job, "u2": job})
    assert gate_state(gate) == "-"                        # no launcher yet
    launcher = subprocess.Popen(["/bin/sh", "-c", LAUNCHER, "fio-launcher", gate, *stems])
    try:
        wait_for_state(gate, "4 2")                      # 2 units x 2 threads at the gate
        time.sleep(5)                                    # longer than a unit's whole run
        assert gate_state(gate) == "4 2" and launcher.poll() is None
        assert not any(os.path.exists(f"{s}.rc") for s in stems)
        go_s = time.time()
        subprocess.run(["/bin/sh", "-c", gate_go_script(gate)], check=True, timeout=90)
        assert launcher.wait(timeout=60) == 0
    finally:
        if launcher.poll() is None:
            launcher.kill()
    ends_s = []
    for stem in stems:
        assert open(f"{stem}.rc", encoding="utf-8").read().strip() == "0"
        text = open(f"{stem}.json", encoding="utf-8").read()
        report = json.loads(text[text.index("{"):])      # after fio's "Saving output of prerun"
        ran = [(j["read"]["total_ios"], j["job_runtime"]) for j in report["jobs"]]
        assert all(ios > 0 and runtime_ms >= 3000 for ios, runtime_ms in ran), ran
        ends_s.append(report["timestamp_ms"] / 1000)
    assert min(ends_s) >= go_s + 4                       # no I/O counted before the go
    # and the units' 4 s runs mostly together (fio's ending under load set aside)
    assert max(ends_s) - min(ends_s) < 2.0, ends_s
    # each thread's time through the gate (uptime), in its prerun's output in the gate (not
    # the cwd)
    boot_s = time.time() - float(open("/proc/uptime").read().split()[0])
    for job in ("a", "b"):
        passed_s = boot_s + float(open(os.path.join(gate, f"{job}.prerun.txt")).read())
        assert go_s - 1 <= passed_s <= min(ends_s)


def test_a_unit_dead_before_the_gate_shows_and_a_waiting_launcher_can_be_killed(tmp_path):
    gate = str(tmp_path / "gate")
    stems = write_jobs(tmp_path, {"u1": GATED.replace("GATE", gate), "u2": BAD})
    launcher = subprocess.Popen(["/bin/sh", "-c", LAUNCHER, "fio-launcher", gate, *stems])
    try:
        wait_for_state(gate, "2 1")                      # u1's threads wait, u2's fio ended
        # a point given up on lists the launcher too: waiting for the go, on the FIFO
        listing = subprocess.run(["/bin/sh", "-c", stuck_listing_script(gate)],
                                 capture_output=True, text=True, check=True).stdout
        line = next(x for x in listing.splitlines() if x.startswith("launcher "))
        assert line.split()[1:3] == [str(launcher.pid), "S"] and len(line.split()) == 4, line
        assert any(x.endswith(" go") for x in listing.splitlines()), listing    # the gate's files
    finally:
        launcher.send_signal(signal.SIGTERM)
        assert launcher.wait(timeout=30) == 143          # also while it waits for the go
    fio_pids = open(os.path.join(gate, "pids"), encoding="utf-8").read().split()
    deadline = time.monotonic() + 30
    while any(os.path.exists(f"/proc/{pid}") for pid in fio_pids):
        assert time.monotonic() < deadline, "fio outlived its launcher"
        time.sleep(0.2)


HIST_FULL = "1000, 0, 4096, " + ", ".join("7" if i == 954 else "0" for i in range(1856))


@pytest.mark.parametrize("awk", ["host", "busybox"])
def test_a_units_logs_come_in_one_command_and_are_removed(tmp_path, awk, busybox_path):
    """unit_logs_script prints a unit's IOPS, clat and histogram logs, each
    after its name (other logs and other units' left out), the histograms
    with their zero bins left out (with the host's awk and the guest's
    busybox awk alike), and changes nothing: run again it prints the same.
    The next job_files_script removes them all."""
    logs = {"u1_iops.1.log": "1000, 5, 0, 4096, 0\n2000, 6, 0, 4096, 0\n",
            "u1_clat.1.log": "1001, 700, 0, 4096, 0",                      # no last newline
            "u1_iops.2.log": "", "u1_clat.2.log": "",
            "u1_clat_hist.1.log": HIST_FULL + "\n" + HIST_FULL.replace("1000, 0", "2000, 1", 1) + "\n",
            "u1_slat.1.log": "1000, 9, 0, 4096, 0\n", "u10_iops.1.log": "1000, 1, 0, 4096, 0\n"}
    for name, text in logs.items():
        (tmp_path / name).write_text(text)
    env = {"PATH": busybox_path} if awk == "busybox" else None
    done = subprocess.run(["/bin/sh", "-c", unit_logs_script(str(tmp_path / "u1"))],
                          capture_output=True, text=True, check=True, env=env)
    got = split_unit_logs(done.stdout)
    assert sorted(got) == ["u1_clat.1.log", "u1_clat.2.log", "u1_clat_hist.1.log",
                           "u1_iops.1.log", "u1_iops.2.log"]
    assert got["u1_iops.1.log"].split() == logs["u1_iops.1.log"].split()
    assert got["u1_clat.1.log"].strip() == logs["u1_clat.1.log"]
    assert got["u1_clat_hist.1.log"].split("\n")[:2] == ["1000, 0, 4096, 954:7", "2000, 1, 4096, 954:7"]
    again = subprocess.run(["/bin/sh", "-c", unit_logs_script(str(tmp_path / "u1"))],
                           capture_output=True, text=True, check=True, env=env)
    assert again.stdout == done.stdout
    write_jobs(tmp_path, {"u1": GOOD})
    assert sorted(os.listdir(tmp_path)) == ["u1.fio", "u10_iops.1.log"]
