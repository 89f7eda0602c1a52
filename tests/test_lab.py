"""Lab integration: build the appliance, boot the 1-node smoke lab under
TCG, run fio with verify through the guest agent on its emulated disk,
tear it down and check nothing is left.  Real libvirt, QEMU and nbdkit."""
import glob
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STORLAB = os.path.join(ROOT, "scripts", "storlab")
sys.path.insert(0, os.path.join(ROOT, "scripts"))

from storlab_cli import libvirt_conn  # noqa: E402

SMOKE = os.path.join(ROOT, "topologies", "smoke.toml")
RUN_BASE = os.environ.get("STORLAB_RUN_DIR", "/run/storlab")


def storlab(*args, timeout=900):
    return subprocess.run(["/usr/bin/python3", STORLAB, *args], capture_output=True,
                          text=True, timeout=timeout, check=False)


def lab_domains(lab):
    conn = libvirt_conn.connect()
    return [d.name() for d in conn.listAllDomains() if d.name().startswith(f"storlab-{lab}-")]


@pytest.fixture(scope="module")
def smoke_lab():
    started = libvirt_conn.ensure_daemons()
    result = storlab("up", SMOKE, "--accel", "tcg")
    try:
        assert result.returncode == 0, result.stdout + result.stderr
        yield "smoke"
    finally:
        storlab("down", "smoke")
        libvirt_conn.stop_daemons(started)


def test_up_reports_every_node_ready(smoke_lab):
    result = storlab("status", smoke_lab, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["phase"] == "ready" and report["accel"] == "tcg"
    assert [n["node"] for n in report["nodes"]] == ["node1"]
    node = report["nodes"][0]
    assert node["state"] == "running" and node["agent"] is True
    assert [d["server"] for d in node["devices"]] == ["running"]


def test_fio_verify_on_the_emulated_disk(smoke_lab):
    fio = ["fio", "--name=verify", "--filename=/dev/sda", "--ioengine=libaio", "--direct=1",
           "--rw=randwrite", "--bs=4k", "--size=8M", "--iodepth=16", "--verify=crc32c",
           "--do_verify=1", "--verify_fatal=1", "--output-format=json"]
    result = storlab("exec", smoke_lab, "node1", "--", *fio)
    assert result.returncode == 0, result.stderr
    job = json.loads(result.stdout[result.stdout.index("{"):])["jobs"][0]
    assert job["error"] == 0
    assert job["write"]["total_ios"] == 2048
    assert job["read"]["total_ios"] == 2048          # every block read back and verified


def test_guest_sees_a_rotational_disk(smoke_lab):
    result = storlab("exec", smoke_lab, "node1", "--", "cat", "/sys/block/sda/queue/rotational")
    assert result.returncode == 0 and result.stdout.strip() == "1"


def test_exec_returns_the_command_exit_code(smoke_lab):
    result = storlab("exec", smoke_lab, "node1", "--", "sh", "-c", "echo out; echo err >&2; exit 7")
    assert result.returncode == 7
    assert result.stdout == "out\n" and result.stderr == "err\n"


def test_up_on_a_running_lab_refuses(smoke_lab):
    result = storlab("up", SMOKE)
    assert result.returncode == 1
    assert "already up" in result.stderr and "Traceback" not in result.stderr
    assert len(lab_domains(smoke_lab)) == 1          # the running lab is untouched


def test_exec_on_an_unknown_node_is_one_clear_error(smoke_lab):
    result = storlab("exec", smoke_lab, "node9", "--", "true")
    assert result.returncode == 1
    assert "no node 'node9'" in result.stderr and "Traceback" not in result.stderr


def test_down_leaves_nothing_behind(smoke_lab):
    pidfiles = glob.glob(os.path.join(RUN_BASE, smoke_lab, "*.pid"))
    pids = [int(open(p, encoding="ascii").read()) for p in pidfiles]
    assert pids
    result = storlab("down", smoke_lab)
    assert result.returncode == 0, result.stderr
    assert lab_domains(smoke_lab) == []
    assert not os.path.exists(os.path.join(RUN_BASE, smoke_lab))
    for pid in pids:
        assert not os.path.exists(f"/proc/{pid}"), f"nbdkit {pid} still running"
    again = storlab("down", smoke_lab)
    assert again.returncode == 1 and "no lab named 'smoke'" in again.stderr


BAD_DEVICE_TOPOLOGY = """\
name = "badlab"
[[defaults.devices]]
name = "disk"
plugin = "hdd"
[defaults.devices.params]
size = "1G"
rpm = "99999"
[nodes]
count = 2
"""


def test_a_device_that_cannot_start_rolls_the_lab_back(tmp_path):
    topology_file = tmp_path / "bad.toml"
    topology_file.write_text(BAD_DEVICE_TOPOLOGY)
    started = libvirt_conn.ensure_daemons()
    try:
        result = storlab("up", str(topology_file), "--accel", "tcg")
        assert result.returncode == 1
        assert "rpm=99999: out of range" in result.stderr     # nbdkit's own message
        assert "Traceback" not in result.stderr
        assert "rolling back" in result.stdout
        assert lab_domains("badlab") == []
        assert not os.path.exists(os.path.join(RUN_BASE, "badlab"))
    finally:
        libvirt_conn.stop_daemons(started)
