"""pytest: lab and node names are checked before they become paths or libvirt
lookups, and `down` acts only on what the lab's own state file lists.

libvirt and directory removal are replaced by recorders here (no VMs, nothing
of the host's touched): `storlab down /` once meant shutil.rmtree('/').
"""
import json
import os
import shutil
import subprocess

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(TESTS)
STORLAB = os.path.join(SOURCE, "scripts", "storlab")

from storlab_cli.lab import libvirt_conn, lifecycle, nbdkit, state as lab_state
from storlab_cli.errors import UserError

BAD_LAB_NAMES = ["/", "", "..", ".", "../../tmp/canary", "a/b", "Lab", "x" * 25, "lab name",
                 "lab\n", "lab\x00"]


class FakeDomain:
    def __init__(self, name, log):
        self._name, self.log = name, log

    def name(self):
        return self._name

    def isPersistent(self):  # noqa: N802 - libvirt's spelling
        return False

    def isActive(self):  # noqa: N802
        return True

    def destroy(self):
        self.log.append(("destroy", self._name))


class FakeConnection:
    def __init__(self, names):
        self.log = []
        self.domains = [FakeDomain(n, self.log) for n in names]

    def listAllDomains(self):  # noqa: N802
        return list(self.domains)


@pytest.fixture
def recorders(tmp_path, monkeypatch):
    """RUN_BASE in tmp_path; libvirt, rmtree and nbdkit stops recorded."""
    run_base = tmp_path / "run" / "storlab"
    run_base.mkdir(parents=True)
    monkeypatch.setattr(lab_state, "RUN_BASE", str(run_base))
    removed, stopped = [], []
    conn = FakeConnection(["storlab-hw-node1", "storlab-hw-wss-node1", "storlab-hw-wss-node2",
                           "other-domain"])
    monkeypatch.setattr(libvirt_conn, "ensure_daemons", lambda: None)
    monkeypatch.setattr(libvirt_conn, "connect", lambda uri=libvirt_conn.URI: conn)
    monkeypatch.setattr(shutil, "rmtree", lambda path, *a, **k: removed.append(str(path)))
    monkeypatch.setattr(nbdkit, "stop_daemons",
                        lambda pidfiles, *a, **k: stopped.extend(pidfiles) or list(pidfiles))
    return run_base, conn, removed, stopped


def write_state(run_base, lab_name, nodes, devices=()):
    directory = run_base / lab_name
    directory.mkdir()
    state = {"name": lab_name, "topology": "/x.toml", "accel": "tcg", "appliance": "0",
             "created": 0, "phase": "ready",
             "domains": [f"storlab-{lab_name}-{n}" for n in nodes], "devices": list(devices)}
    (directory / "lab.json").write_text(json.dumps(state))
    return directory


@pytest.mark.parametrize("name", BAD_LAB_NAMES)
def test_down_refuses_what_is_not_a_lab_name(recorders, name):
    _, conn, removed, stopped = recorders
    with pytest.raises(UserError, match=r"not a lab name \(a topology's name: 1\.\.24 of a-z"):
        lifecycle.down(name)
    assert (conn.log, removed, stopped) == ([], [], [])


def test_down_of_a_prefix_leaves_the_longer_lab_alone(recorders):
    run_base, conn, removed, _ = recorders
    write_state(run_base, "hw-wss", ["node1", "node2"])
    with pytest.raises(UserError, match=r"no lab named 'hw' is up \(known: hw-wss\)"):
        lifecycle.down("hw")
    assert (conn.log, removed) == ([], [])
    write_state(run_base, "hw", ["node1"])
    lifecycle.down("hw")
    assert conn.log == [("destroy", "storlab-hw-node1")]
    assert removed == [str(run_base / "hw")]


def test_down_acts_only_on_what_the_state_lists(recorders):
    run_base, conn, removed, stopped = recorders
    inside = str(run_base / "hw" / "node1-disk0.pid")
    devices = [{"node": "node1", "device": "disk0", "plugin": "hdd", "pidfile": inside},
               {"node": "node1", "device": "evil", "plugin": "hdd", "pidfile": "/run/sshd.pid"},
               {"node": "node1", "device": "up", "plugin": "hdd",
                "pidfile": str(run_base / "hw" / ".." / "x.pid")}]
    directory = write_state(run_base, "hw", ["node1"], devices)
    state = json.loads((directory / "lab.json").read_text())
    state["domains"].append("other-domain")             # not a domain of this lab's nodes
    (directory / "lab.json").write_text(json.dumps(state))
    lifecycle.down("hw")
    assert conn.log == [("destroy", "storlab-hw-node1")]
    assert stopped == [inside]
    assert removed == [str(directory)]


def test_down_never_follows_a_run_directory_that_is_a_link(recorders, tmp_path):
    run_base, conn, removed, _ = recorders
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (run_base / "hw").symlink_to(elsewhere)
    with pytest.raises(UserError, match="a symbolic link, not a lab's run directory"):
        lifecycle.down("hw")
    assert removed == [] and elsewhere.exists()


def run_cli(run_base, *args):
    return subprocess.run(["/usr/bin/python3", STORLAB, *args], capture_output=True, text=True,
                          check=False, env=dict(os.environ, STORLAB_RUN_DIR=str(run_base)),
                          timeout=60)


def one_line_error(result, command):
    assert result.returncode != 0, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"storlab {command}: "), result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def test_down_of_a_relative_path_removes_nothing_for_real(tmp_path):
    """The reproduction of the defect, with real directories: the canary stays."""
    run_base = tmp_path / "run" / "storlab"
    run_base.mkdir(parents=True)
    canary = tmp_path / "canary"
    canary.mkdir()
    (canary / "lab.json").write_text("{}")
    line = one_line_error(run_cli(run_base, "down", "../../canary"), "down")
    assert "'../../canary': not a lab name" in line
    assert (canary / "lab.json").exists()


@pytest.mark.parametrize("args, command, message", [
    (["status", "../x"], "status", "lab name '../x': not a lab name"),
    (["exec", "/", "node1", "--", "true"], "exec", "lab name '/': not a lab name"),
    (["console", "hw", "../node"], "console", "node name '../node': not a node name"),
    (["node", "..", "node1", "down"], "node", "lab name '..': not a lab name"),
    (["node", "hw", "node1", "../x", "up"], "node", "node name '../x': not a node name"),
    (["node", "hw", "node1", "node9", "down"], "node", "lab 'hw' has no node 'node9'"),
    (["node", "hw", "node1", "node1", "up"], "node", "node node1 of lab 'hw' is named twice"),
    (["ctl", "lab", "node1", "lun0", "status"], "ctl", "no lab named 'lab' is up"),
    (["ctl", "hw", "Node", "lun0", "status"], "ctl", "node name 'Node': not a node name"),
    (["top", "hw", "node1", "x/y", "--once"], "top", "no device"),
])
def test_every_command_taking_a_lab_checks_its_names(tmp_path, args, command, message):
    run_base = tmp_path / "run"
    run_base.mkdir()
    write_state(run_base, "hw", ["node1"])
    line = one_line_error(run_cli(run_base, *args), command)
    assert message in line, line


# ---- the state file is typed: written and read back whole, another shape refused ----

def test_lab_state_round_trips_and_refuses_another_shape(tmp_path, monkeypatch):
    monkeypatch.setattr(lab_state, "RUN_BASE", str(tmp_path))
    (tmp_path / "hw").mkdir()
    state = lab_state.LabState(name="hw", topology="/x.toml", accel="tcg", appliance="abc",
                               created=1.5)
    state.domains.append(lab_state.domain_name("hw", "node1"))
    state.devices.append(lab_state.DeviceEntry(node="node1", device="disk0", plugin="hdd",
                                               socket="/s", pidfile="/p", stats=None, ctl=None))
    lab_state.save(state)
    assert lab_state.load("hw") == state
    assert lab_state.nodes_of(state) == ["node1"]
    for broken, why in (({"name": "hw", "domains": [], "devices": []}, "created"),
                        ({"name": "other", "domains": [], "devices": []}, "another name"),
                        ({**state.to_json(), "devices": [{"node": "n"}]}, "device"),
                        ({**state.to_json(), "domains": "x"}, "no domains")):
        (tmp_path / "hw" / "lab.json").write_text(json.dumps(broken))
        with pytest.raises(UserError, match=r"lab\.json: not a lab state of lab 'hw' \(.*"
                           + why):
            lab_state.load("hw")
