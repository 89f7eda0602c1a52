"""lab/each_node.py: the nodes' work runs at once; Ctrl-C stops it at each
worker's next guest command (a lab's provisioning is minutes of steps a
node, and leaving the thread pool waits for every worker)."""
import os
import signal
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))

from storlab_cli.lab import agent  # noqa: E402
from storlab_cli.lab.each_node import Stopped, each_node, raise_if_stopped  # noqa: E402

WORK_S = 30


def interrupt_in(seconds):
    """SIGINT to this process, as Ctrl-C: Python raises it in the main thread."""
    timer = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    return timer


def steps_until_stopped(ended):
    """A node's long list of steps, each looking whether to stop first."""
    def work(node):
        deadline = time.monotonic() + WORK_S
        try:
            while time.monotonic() < deadline:
                raise_if_stopped()
                time.sleep(0.01)
            ended[node] = "finished"
        except Stopped:
            ended[node] = "stopped"
    return work


def test_ctrl_c_stops_every_nodes_work_at_its_next_step():
    ended = {}
    started = time.monotonic()
    interrupt_in(0.3)
    with pytest.raises(KeyboardInterrupt):
        each_node(["node1", "node2", "node3"], steps_until_stopped(ended))
    assert time.monotonic() - started < 5
    assert ended == {"node1": "stopped", "node2": "stopped", "node3": "stopped"}


def test_work_that_runs_each_node_itself_is_stopped_too():
    ended = {}
    interrupt_in(0.3)
    with pytest.raises(KeyboardInterrupt):
        each_node(["node1", "node2"], lambda node: each_node(
            [f"{node}-a", f"{node}-b"], steps_until_stopped(ended)))
    assert sorted(ended.values()) == ["stopped"] * 4


def test_a_wait_on_a_guest_command_is_a_step(monkeypatch):
    """agent.wait gives up on an interrupted call's command (the guest's
    command runs on; `up` rolls the lab back)."""
    monkeypatch.setattr(agent, "poll", lambda domain, pid: None)     # never ends
    ended = {}

    def work(node):
        try:
            agent.wait(None, 1, timeout_s=WORK_S)
        except Stopped:
            ended[node] = "stopped"
    interrupt_in(0.3)
    with pytest.raises(KeyboardInterrupt):
        each_node(["node1"], work)
    assert ended == {"node1": "stopped"}


def test_a_nodes_error_does_not_stop_the_others_nor_the_next_call():
    """A failing node re-raises once all have ended (the others' work is not
    cut short: `down` stops every domain even when one fails); a call after
    an interrupted one runs to its end."""
    done = []

    def work(node):
        if node == "node1":
            raise ValueError("node1 failed")
        time.sleep(0.2)
        raise_if_stopped()
        done.append(node)
    with pytest.raises(ValueError, match="node1 failed"):
        each_node(["node1", "node2", "node3"], work)
    assert sorted(done) == ["node2", "node3"]
    interrupt_in(0.1)
    with pytest.raises(KeyboardInterrupt):
        each_node(["node1"], steps_until_stopped({}))
    assert each_node(["node1", "node2"], lambda node: raise_if_stopped() or node) == \
        {"node1": "node1", "node2": "node2"}
    assert raise_if_stopped() is None            # the main thread is never stopped
