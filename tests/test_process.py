"""common/process.py: a process counts as running until it exits; an exited
one waiting for its parent to reap it (a zombie) does not, though /proc
still lists it (a daemon's reaper, PID 1, may take seconds)."""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))

from storlab_cli.common import process  # noqa: E402


def test_a_zombie_is_not_running_though_proc_lists_it():
    child = subprocess.Popen(["sleep", "30"])
    try:
        assert process.running(child.pid) and process.running(child.pid, "sleep")
        assert not process.running(child.pid, "nbdkit")
        os.kill(child.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while process.running(child.pid):         # not reaped: this test is its parent
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert os.path.exists(f"/proc/{child.pid}")      # a zombie until waited for
    finally:
        child.kill()
        child.wait()
    assert not process.running(child.pid)


def test_no_such_process_and_bad_pids():
    assert process.running(os.getpid())
    for pid in (0, -1, 2 ** 22 + 1, "x"):
        assert not process.running(pid)
