"""pytest for the storlab command line (no build, no devices needed)."""
import json
import os
import subprocess

import pytest

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts")

from storlab_cli.commands import check
from storlab_cli.results import fio_results
from storlab_cli.errors import UserError

STORLAB = os.path.join(SCRIPTS, "storlab")


def fio_doc(iops, mean_ns, p99_ns):
    side = {"iops": iops, "total_ios": int(iops * 10),
            "clat_ns": {"mean": mean_ns, "percentile": {"99.000000": p99_ns}}}
    return {"jobs": [{"read": side, "write": dict(side, iops=0.0)}]}


def test_fio_json_with_engine_banner_is_read(tmp_path):
    path = tmp_path / "out.json"
    path.write_text("fio: connected to NBD server\n" + json.dumps(fio_doc(140.5, 7.1e6, 1.4e7)))
    summary = fio_results.direction_summary(fio_results.load(str(path)), "read")
    assert summary == {"iops": 140.5, "mean_us": 7100.0, "p99_us": 14000.0, "ios": 1405}


def test_not_fio_json_is_one_clear_error(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("fio: nothing here\n")
    with pytest.raises(UserError, match="broken.json: no fio JSON"):
        fio_results.load(str(path))
    path.write_text("{ not json")
    with pytest.raises(UserError, match="broken.json: not fio JSON"):
        fio_results.load(str(path))


def test_check_summary_counts_meson_results(tmp_path):
    log = tmp_path / "testlog.json"
    results = ["OK", "OK", "FAIL", "SKIP", "TIMEOUT", "EXPECTEDFAIL"]
    log.write_text("\n".join(json.dumps({"name": f"t{i}", "result": r})
                             for i, r in enumerate(results)) + "\n")
    assert check.summarise(str(log)) == (3, 2, 1)
    # two runs writing the log at once leave a torn line: one clear error
    log.write_text(json.dumps({"name": "t0", "result": "OK"}) + "\n" + '"result": "OK"}\n')
    with pytest.raises(UserError, match="testlog.json: line 2 is not a meson test record"):
        check.summarise(str(log))


def run_cli(*args):
    return subprocess.run(["/usr/bin/python3", STORLAB, *args],
                          capture_output=True, text=True, check=False)


def test_unknown_command_is_one_line_and_nonzero():
    result = run_cli("frobnicate")
    assert result.returncode == 2
    assert result.stderr.strip() == ("storlab: unknown command 'frobnicate' "
                                     "(known: demo, check, up, down, status, exec, node, snapshot, console, sweep, studies, plot, compare, top, ctl)")
    assert "Traceback" not in result.stderr


def test_help_says_what_demo_runs():
    """demo is the lab sweep (it once claimed to run the HDD model side by side)."""
    result = run_cli("--help")
    assert result.returncode == 0
    demo_line = next(line for line in result.stdout.splitlines() if line.startswith("  demo"))
    for needle in ("default 3-node lab", "RAID LUN", "cache on and off", "simulator"):
        assert needle in demo_line, demo_line
    assert "HDD model" not in result.stdout


def test_demo_with_arguments_is_refused_without_traceback():
    result = run_cli("demo", "extra")
    assert result.returncode == 1
    assert "unrecognized arguments: extra" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("args, needle", [
    (("up", "/nonexistent/lab.toml"), "/nonexistent/lab.toml"),
    (("up",), "the following arguments are required: topology"),
    (("up", "x.toml", "--accel", "fast"), "invalid choice: 'fast'"),
    (("exec", "nolab", "node1"), "usage: storlab exec [--timeout S] LAB NODE -- COMMAND"),
    (("exec", "nolab", "node1", "--"), "no command after --"),
    (("exec", "no-such-lab", "node1", "--", "true"), "no lab named 'no-such-lab'"),
    (("status", "no-such-lab"), "no lab named 'no-such-lab'"),
])
def test_lab_commands_refuse_bad_input_in_one_line(args, needle, tmp_path, monkeypatch):
    monkeypatch.setenv("STORLAB_RUN_DIR", str(tmp_path))
    result = subprocess.run(["/usr/bin/python3", STORLAB, *args], capture_output=True,
                            text=True, check=False, env=dict(os.environ, STORLAB_RUN_DIR=str(tmp_path)))
    assert result.returncode == 1, result.stderr
    assert needle in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_ctl_without_a_socket_is_one_line_and_nonzero(tmp_path):
    result = run_cli("ctl", str(tmp_path / "none.ctl"), "status")
    assert result.returncode == 1
    assert result.stderr.strip().startswith("storlab ctl: ")
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_ctl_prints_reply_and_exits_nonzero_on_error(tmp_path):
    import socket
    import threading
    path = str(tmp_path / "fake.ctl")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(2)
    received = []

    def serve():
        for reply in (b"error battery sideways: unknown state\n", b"ok battery failed\n"):
            conn, _ = server.accept()
            with conn:
                received.append(conn.recv(512))
                conn.sendall(reply)

    thread = threading.Thread(target=serve)
    thread.start()
    bad = run_cli("ctl", path, "battery", "sideways")
    good = run_cli("ctl", path, "battery", "failed")
    thread.join(timeout=10)
    server.close()
    assert received == [b"battery sideways\n", b"battery failed\n"]
    assert (bad.returncode, bad.stdout) == (1, "error battery sideways: unknown state\n")
    assert (good.returncode, good.stdout) == (0, "ok battery failed\n")


# ---- storlab ctl LAB NODE DEVICE: the control socket from lab state ----------------

def fake_lab(run_base, lab="rlab"):
    """A lab.json as `up` writes it: node1 with an hdd disk0 and a raid lun0."""
    directory = run_base / lab
    directory.mkdir()
    stem = str(directory / "node1-")
    devices = [{"node": "node1", "device": "disk0", "plugin": "hdd", "socket": stem + "disk0.sock",
                "pidfile": stem + "disk0.pid", "stats": stem + "disk0.stats", "ctl": None},
               {"node": "node1", "device": "lun0", "plugin": "raid", "socket": stem + "lun0.sock",
                "pidfile": stem + "lun0.pid", "stats": stem + "lun0.stats",
                "ctl": stem + "lun0.ctl"}]
    (directory / "lab.json").write_text(json.dumps({
        "name": lab, "topology": "/x.toml", "accel": "tcg", "appliance": "0", "created": 0,
        "phase": "ready", "domains": [f"storlab-{lab}-node1"], "devices": devices}))
    return stem + "lun0.ctl"


def fake_controller(path, replies):
    """A unix socket answering one connection per reply; returns (thread, received)."""
    import socket
    import threading
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(len(replies))
    received = []

    def serve():
        with server:
            for reply in replies:
                conn, _ = server.accept()
                with conn:
                    received.append(conn.recv(512))
                    conn.sendall(reply)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread, received


def run_cli_in(run_base, *args):
    return subprocess.run(["/usr/bin/python3", STORLAB, *args], capture_output=True, text=True,
                          check=False, env=dict(os.environ, STORLAB_RUN_DIR=str(run_base)))


def test_ctl_lab_node_device_finds_the_socket_in_lab_state(tmp_path):
    path = fake_lab(tmp_path)
    thread, received = fake_controller(path, [b"ok battery failed; write-back off\n",
                                              b"error battery sideways: unknown state\n"])
    good = run_cli_in(tmp_path, "ctl", "rlab", "node1", "lun0", "battery", "failed")
    bad = run_cli_in(tmp_path, "ctl", "rlab", "node1", "lun0", "battery", "sideways")
    thread.join(timeout=10)
    assert received == [b"battery failed\n", b"battery sideways\n"]
    assert (good.returncode, good.stdout, good.stderr) == (0, "ok battery failed; write-back off\n", "")
    assert (bad.returncode, bad.stdout) == (1, "error battery sideways: unknown state\n")


@pytest.mark.parametrize("args, message", [
    (("nolab", "node1", "lun0", "status"), "no lab named 'nolab' is up (known: rlab)"),
    (("rlab", "node9", "lun0", "status"), "lab 'rlab' has no node 'node9' (nodes: node1)"),
    (("rlab", "node1", "lun7", "status"),
     "lab 'rlab' node 'node1' has no device 'lun7' (devices: disk0, lun0)"),
    (("rlab", "node1", "disk0", "status"),
     "lab 'rlab' node 'node1' device 'disk0' (hdd) has no control socket "
     "(raid devices have one: node1 lun0)"),
    (("rlab", "node1", "lun0"), "usage: storlab ctl LAB NODE DEVICE COMMAND..."),
    (("rlab", "node1", "lun0", "status"), "node1-lun0.ctl: No such file or directory"),
])
def test_ctl_lab_form_errors_name_lab_node_and_device(tmp_path, args, message):
    fake_lab(tmp_path)
    result = run_cli_in(tmp_path, "ctl", *args)
    assert result.returncode == 1, result
    assert result.stderr.startswith("storlab ctl: ") and message in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_send_to_device_returns_ok_replies_and_raises_on_errors(tmp_path, monkeypatch):
    from storlab_cli.lab import state
    from storlab_cli.live import ctl
    monkeypatch.setattr(state, "RUN_BASE", str(tmp_path))
    path = fake_lab(tmp_path)
    thread, received = fake_controller(path, [b"ok battery=failed policy=write-back\n",
                                              b"error fail-member 9: no such member\n"])
    assert ctl.device_ctl_path("rlab", "node1", "lun0") == path
    assert ctl.send_to_device("rlab", "node1", "lun0", "status") == \
        "ok battery=failed policy=write-back"
    with pytest.raises(UserError, match=r"^lab 'rlab' node 'node1' device 'lun0': fail-member 9: "
                                        r"error fail-member 9: no such member$"):
        ctl.send_to_device("rlab", "node1", "lun0", "fail-member 9")
    thread.join(timeout=10)
    assert received == [b"status\n", b"fail-member 9\n"]
    with pytest.raises(UserError, match="has no control socket"):
        ctl.send_to_device("rlab", "node1", "disk0", "status")


def test_status_lists_plugins_and_raid_control_sockets():
    from storlab_cli.lab import lifecycle
    report = {"name": "rlab", "phase": "ready", "accel": "tcg", "topology": "/x.toml",
              "profile": None, "nodes": [{
                  "node": "node1", "state": "running", "agent": True, "devices": [
                      {"device": "disk0", "plugin": "hdd", "server": "running", "ctl": None},
                      {"device": "lun0", "plugin": "raid", "server": "running",
                       "ctl": "/run/storlab/rlab/node1-lun0.ctl"}]}]}
    text = lifecycle.format_status(report)
    assert "disk0(hdd, running), lun0(raid, running)" in text
    assert ("lun0 control socket /run/storlab/rlab/node1-lun0.ctl "
            "(storlab ctl rlab node1 lun0 COMMAND)") in text
    assert text.count("control socket") == 1


def test_status_lists_each_volumes_live_snapshots():
    from storlab_cli.lab import lifecycle
    report = {"name": "plab", "phase": "ready", "accel": "tcg", "topology": "/x.toml",
              "nodes": [], "profile": {"nodes": {}, "snapshots": {
                  "node4/redo-u1v1": {"next_id": 4, "live": [{"id": 1}, {"id": 3}]},
                  "node4/row-u1v1": {"next_id": 1, "live": []}}}}
    text = lifecycle.format_status(report)
    assert ("snapshots of node4/redo-u1v1: 1, 3 (`storlab snapshot plab node4 redo-u1v1 list`)"
            in text)
    assert "row-u1v1" not in text


# ---- the CLI asks the built library about itself: built first on a fresh machine ----

def test_a_missing_build_is_installed_and_built_before_it_is_asked(tmp_path, monkeypatch):
    from storlab_cli import build, deps
    calls = []
    monkeypatch.setattr(deps, "ensure_packages", lambda packages: calls.append("packages"))
    artifact = tmp_path / "nbdkit-hdd-plugin.so"
    monkeypatch.setattr(build, "build", lambda: (calls.append("build"), artifact.touch()))
    build.ensure_built(str(artifact))
    assert calls == ["packages", "build"]
    build.ensure_built(str(artifact))          # there now: nothing installed or built again
    assert calls == ["packages", "build"]


def test_a_build_that_does_not_make_the_artifact_is_one_clear_error(tmp_path, monkeypatch):
    from storlab_cli import build, deps
    monkeypatch.setattr(deps, "ensure_packages", lambda packages: None)
    monkeypatch.setattr(build, "build", lambda: None)
    with pytest.raises(UserError, match="nbdkit-ssd-plugin.so: not built by meson compile"):
        build.ensure_built(str(tmp_path / "nbdkit-ssd-plugin.so"))


# ---- a failed command is reported by its last stderr line ----

def test_last_line_names_what_failed():
    from storlab_cli.common.last_line import last_line
    assert last_line(b"warming up\nmdadm: /dev/sdb is busy\n\n", "exit 1") == \
        "mdadm: /dev/sdb is busy"
    assert last_line("  one line  ", "x") == "one line"
    assert last_line(b"", "exit status 3") == "exit status 3"
    assert last_line(None, "no output") == "no output"
    assert last_line(b"\xff\xfe broken\n", "x").endswith("broken")


def test_a_failed_guest_command_is_one_line_with_its_last_stderr_line(monkeypatch):
    from storlab_cli.lab import agent
    monkeypatch.setattr(agent, "run", lambda *a, **k: (2, b"", b"step 1\nno such disk: sdz\n"))
    with pytest.raises(UserError, match=r"^profile step raid.sh on node1 failed: no such disk: sdz$"):
        agent.run_checked("dom", ["/bin/sh", "raid.sh"], "profile step raid.sh on node1 failed")
    monkeypatch.setattr(agent, "run", lambda *a, **k: (0, b"ok\n", b"noise"))
    assert agent.run_checked("dom", ["true"], "x") == b"ok\n"
