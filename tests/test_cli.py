"""pytest for the storlab command line (no build, no devices needed)."""
import json
import os
import subprocess
import sys

import pytest

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts")
sys.path.insert(0, SCRIPTS)

from storlab_cli import check, fio_results  # noqa: E402
from storlab_cli.errors import UserError  # noqa: E402

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


def run_cli(*args):
    return subprocess.run(["/usr/bin/python3", STORLAB, *args],
                          capture_output=True, text=True, check=False)


def test_unknown_command_is_one_line_and_nonzero():
    result = run_cli("frobnicate")
    assert result.returncode == 2
    assert result.stderr.strip() == ("storlab: unknown command 'frobnicate' "
                                     "(known: demo, check, up, down, status, exec, node, console, sweep, plot, ctl)")
    assert "Traceback" not in result.stderr


def test_demo_with_arguments_is_refused_without_traceback():
    result = run_cli("demo", "extra")
    assert result.returncode == 1
    assert "unrecognized arguments: extra" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("args, needle", [
    (("up", "/nonexistent/lab.toml"), "/nonexistent/lab.toml"),
    (("up",), "the following arguments are required: topology"),
    (("up", "x.toml", "--accel", "fast"), "invalid choice: 'fast'"),
    (("exec", "nolab", "node1"), "usage: storlab exec LAB NODE -- COMMAND"),
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
