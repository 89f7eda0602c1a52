"""A lab on two libvirt hosts: this machine as itself (qemu:///system) and
again as a remote host, qemu+ssh://root@127.0.0.1:PORT/system through an
sshd this file starts on loopback with keys it makes (its own known_hosts,
through the URI's command=: nothing of root's ssh set-up is touched).

node1 runs here, node2 on the second host: its nbdkit started over ssh from
the plugin bundle copied there, the appliance copied whole into that host's
cache_dir (a directory of this test's, so the copy is made, not found), its
files in the run directory there, its domain defined through that host's
libvirt connection, storlab's ssh steps there sharing one connection.
Each node's replicated volume has its copy on the other host; fio verify
goes through one, the remote node goes down and comes back (its volume
fails over and its copy resyncs), `top` and `ctl` reach its devices, and
`down` leaves nothing on either host, nor an ssh master. Then `up` refused
by a host: nothing left behind."""
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

from storlab_cli.lab import libvirt_conn, state as lab_state

from lab_profile_rig import (RUN_BASE, Lab, device_writes, fio_verify, guest,
                             kernel_log_on_failure, replica_md, resynced_and_checked,
                             short_sweep, status, storlab)

LAB = "multihost"
PRIVSEP_DIR = "/run/sshd"


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SecondHost:
    """An sshd on 127.0.0.1 that lets in the key it makes; stopped by its PID.
    Its cache_dir is a directory of its own, 0755: libvirt's qemu user reads
    the appliance there, through no 0700 directory."""

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="storlab-sshd-")
        self.cache_dir = tempfile.mkdtemp(prefix="storlab-far-cache-")
        os.chmod(self.cache_dir, 0o755)
        self.made_privsep = not os.path.isdir(PRIVSEP_DIR)
        os.makedirs(PRIVSEP_DIR, mode=0o755, exist_ok=True)
        for key in ("host_key", "client_key", "stranger_key"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                            self.path(key)], check=True)
        shutil.copy(self.path("client_key.pub"), self.path("authorized_keys"))
        self.port = free_port()
        with open(self.path("sshd_config"), "w", encoding="ascii") as f:
            f.write(f"ListenAddress 127.0.0.1\nPort {self.port}\nHostKey {self.path('host_key')}\n"
                    f"PidFile {self.path('sshd.pid')}\n"
                    f"AuthorizedKeysFile {self.path('authorized_keys')}\n"
                    "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
                    "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                    "AllowStreamLocalForwarding yes\n")
        # the ssh program both libvirt and storlab run (the URI's command=)
        with open(self.path("ssh"), "w", encoding="ascii") as f:
            f.write("#!/bin/sh\nexec ssh -o UserKnownHostsFile=" + self.path("known_hosts")
                    + ' -o StrictHostKeyChecking=accept-new "$@"\n')
        os.chmod(self.path("ssh"), 0o755)
        subprocess.run(["/usr/sbin/sshd", "-f", self.path("sshd_config"), "-E",
                        self.path("sshd.log")], check=True)
        deadline = time.monotonic() + 10
        while not os.path.exists(self.path("sshd.pid")):
            assert time.monotonic() < deadline, "sshd wrote no pidfile"
            time.sleep(0.05)
        with open(self.path("sshd.pid"), encoding="ascii") as f:
            self.pid = int(f.read())
        return self

    def path(self, name):
        return os.path.join(self.dir, name)

    def uri(self, key="client_key"):
        return (f"qemu+ssh://root@127.0.0.1:{self.port}/system?keyfile={self.path(key)}"
                f"&command={self.path('ssh')}")

    def __exit__(self, *exc):
        try:
            os.kill(self.pid, 15)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + 10      # sshd removes its pidfile as it leaves
        while os.path.exists(self.path("sshd.pid")) and time.monotonic() < deadline:
            time.sleep(0.05)
        shutil.rmtree(self.dir)
        shutil.rmtree(self.cache_dir)
        if self.made_privsep:
            shutil.rmtree(PRIVSEP_DIR, ignore_errors=True)


TOPOLOGY = '''
name = "{name}"
description = "two hosts: node1 here, node2 on the second one; each volume's copy on the other"
boot_timeout_s = 180
device_data = "disk"

[[hosts]]
name = "here"
uri = "qemu:///system"
address = "127.0.0.1"

[[hosts]]
name = "far"
uri = "{uri}"
address = "127.0.0.1"
cache_dir = "{cache_dir}"

[defaults]
memory_mib = 512

[[defaults.devices]]
name = "disk"
plugin = "hdd"
[defaults.devices.params]
preset = "sas10k-300g"
size = "256M"
timing = "off"

[nodes]
count = 2

[node.node2]
host = "far"
[[node.node2.devices]]
name = "lun"
plugin = "raid"
[node.node2.devices.params]
preset = "vsa-raid10-8x-sas10k"
member-size = "64M"

[profile.replicas]
ftt = 1
primaries = ["node1", "node2"]
size = "64M"

[profile.nfs]
mount_point = "/mnt/storlab"
'''


@pytest.fixture(scope="module")
def second_host():
    with SecondHost() as host:
        yield host


@pytest.fixture(scope="module")
def topology_path(second_host, tmp_path_factory):
    path = tmp_path_factory.mktemp("topology") / "multihost.toml"
    path.write_text(TOPOLOGY.format(name=LAB, uri=second_host.uri(),
                                    cache_dir=second_host.cache_dir))
    return str(path)


@pytest.fixture(scope="module")
def lab(topology_path):
    with Lab(topology_path, LAB) as up:
        yield up.name
    # nothing of the lab is left on either host, nor a shared ssh master
    assert not os.path.exists(os.path.join(RUN_BASE, f"{LAB}.far"))
    assert not os.path.exists(lab_state.data_dir(LAB))
    assert not os.path.exists(lab_state.data_dir(LAB) + ".far")
    assert not lab_processes()


def lab_processes(name=LAB):
    """nbdkit, QEMU or ssh master processes whose command line names the
    lab's run directories (a master's names its socket there)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if f"{RUN_BASE}/{name}/" in cmdline or f"{RUN_BASE}/{name}.far/" in cmdline:
            found.append(cmdline)
    return found


def device_entry(name, node, device):
    return next(d for n in status(name)["nodes"] if n["node"] == node
                for d in n["devices"] if d["device"] == device)


def test_each_node_runs_on_its_host(lab, second_host):
    report = status(lab)
    assert [(n["node"], n["host"], n["state"], n["agent"]) for n in report["nodes"]] == \
        [("node1", "here", "running", True), ("node2", "far", "running", True)]
    assert [h["name"] for h in report["hosts"]] == ["here", "far"]
    # each host's accelerator (forced by the rig's --accel tcg: on every host)
    assert [(h["accel"], h["accel_reason"]) for h in report["hosts"]] == \
        [("tcg", "host 'here': forced with tcg"), ("tcg", "host 'far': forced with tcg")]
    far = device_entry(lab, "node2", "lun0")       # node2's own devices: one RAID LUN
    assert far["server"] == "running"
    assert far["socket"] == os.path.join(RUN_BASE, f"{LAB}.far", "node2-lun0.sock")
    assert device_entry(lab, "node1", "disk0")["socket"] == \
        os.path.join(RUN_BASE, LAB, "node1-disk0.sock")
    # node2's servers run the bundle copied to the second host, not this build
    bundles = os.path.join(second_host.cache_dir, "bundle") + "/"
    commands = [c for c in lab_processes() if c.startswith("nbdkit") and "node2-" in c]
    assert len(commands) == 1 and all(bundles in c for c in commands), commands
    # device_data = "disk": each host's devices keep their data in its own
    # directory there (made over ssh for the second host)
    far_data = lab_state.data_dir(LAB) + ".far"
    assert f"file={far_data}/node2-lun0.data file-sync=off" in commands[0], commands
    assert os.listdir(far_data) == ["node2-lun0.data"]
    assert os.listdir(lab_state.data_dir(LAB)) == ["node1-disk0.data"]
    # node2 boots the appliance copied whole into the second host's cache_dir
    with open(os.path.join(RUN_BASE, LAB, "lab.json"), encoding="utf-8") as f:
        copy = os.path.join(second_host.cache_dir, "appliance", json.load(f)["appliance"])
    assert sorted(os.listdir(copy)) == [".complete", "initramfs.cpio", "manifest.json",
                                        "vmlinux"], os.listdir(copy)
    conn = libvirt_conn.connect()
    try:
        xml = conn.lookupByName(f"storlab-{LAB}-node2").XMLDesc()
    finally:
        conn.close()
    assert f"<kernel>{copy}/vmlinux</kernel>" in xml, xml
    # storlab's steps to the second host share one ssh connection: its master's
    # socket in the lab's run directory here (`status` above just used it)
    assert os.path.exists(os.path.join(RUN_BASE, LAB, "ssh-far"))
    text = storlab("status", lab).stdout
    assert "host far: qemu+ssh://root@127.0.0.1:" in text and "accel tcg" in text


def test_fio_verify_through_a_volume_copied_across_hosts(lab):
    md = replica_md(lab, "node1", "md1")
    assert (md["level"], md["degraded"], len(md["members"])) == ("raid1", 0, 2), md
    fio_verify(lab, "node1", "/mnt/storlab/node1/node1.fio")
    fio_verify(lab, "node1", "/mnt/storlab/node2/node1.fio")   # node2's volume, over NFS


def test_top_and_ctl_reach_the_remote_hosts_devices(lab):
    top = storlab("top", lab, "node2", "lun0", "--once", "--interval", "0.5", timeout=120)
    assert top.returncode == 0, top.stderr
    # the stats file and the event log, both read on the second host
    assert "raid 10, 8 members" in top.stdout and "member7  ok" in top.stdout, top.stdout
    reply = storlab("ctl", lab, "node2", "lun0", "status", timeout=60)
    assert reply.returncode == 0 and reply.stdout.startswith("ok"), reply.stdout + reply.stderr
    bad = storlab("ctl", lab, "node2", "lun0", "battery", "sideways", timeout=60)
    assert bad.returncode != 0 and bad.stdout.startswith("error"), bad.stdout + bad.stderr


def test_a_sweep_on_both_hosts(lab, topology_path, tmp_path):
    """Each node drives its own share; every copy's device is counted, on
    whichever host it runs (node2's LUN's stats read there)."""
    out = short_sweep(tmp_path, "multihost-sweep", topology_path,
                      'target = "share"\nnodes = ["node1", "node2"]\nworkers = 1\n'
                      'rw = "randwrite"\nbs = "4k"\nsize = "4M"')
    for node, device in (("node1", "disk0"), ("node2", "lun0")):
        fio = json.loads((out / "points" / "001" / f"fio-{node}-u1.json").read_text())
        assert fio["jobs"][0]["error"] == 0 and fio["jobs"][0]["write"]["total_ios"] > 0
        assert device_writes(out / "points" / "001" / f"device-{node}-{device}.json") > 0


def test_remote_node_down_and_back(lab):
    result = storlab("node", lab, "node2", "down")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "volume node2 failed over from node2 to node1" in result.stdout
    assert [n["state"] for n in status(lab)["nodes"]] == ["running", "absent"]
    assert device_entry(lab, "node2", "lun0")["server"] == "running"     # its disks stay up
    with kernel_log_on_failure(lab, ["node1"]):
        fio_verify(lab, "node1", "/mnt/storlab/node2/node1-degraded.fio")
    result = storlab("node", lab, "node2", "up")
    assert result.returncode == 0, result.stdout + result.stderr
    # every copy back (a controller still reconnecting to node2 must not
    # keep one out)
    assert "runs without" not in result.stdout, result.stdout
    resynced_and_checked(lab, [("node1", "md1", 2), ("node1", "md2", 2)],
                         time.monotonic() + 300)
    guest(lab, "node2", "true")            # back, and reached through the second host


def write_topology(tmp_path, second_host, uri, name):
    path = tmp_path / f"{name}.toml"
    path.write_text(TOPOLOGY.format(name=name, uri=uri, cache_dir=second_host.cache_dir))
    return str(path)


def assert_nothing_of(name, conn):
    assert not os.path.exists(os.path.join(RUN_BASE, name))
    assert not os.path.exists(os.path.join(RUN_BASE, f"{name}.far"))
    assert not [d.name() for d in conn.listAllDomains() if d.name().startswith(f"storlab-{name}-")]


def test_up_refused_by_a_host_leaves_nothing(second_host, tmp_path):
    daemons = libvirt_conn.ensure_daemons()
    try:
        conn = libvirt_conn.connect()
        # a key the second host does not let in: refused before anything starts
        result = storlab("up", write_topology(tmp_path, second_host,
                                              second_host.uri("stranger_key"), "mh-refused"),
                         "--accel", "tcg")
        assert result.returncode != 0
        assert result.stderr.strip().count("\n") == 0, result.stderr
        assert "cannot connect to libvirt at qemu+ssh://root@127.0.0.1:" in result.stderr
        assert_nothing_of("mh-refused", conn)
        # a run directory of the same lab there already: refused half-way, rolled
        # back here, and the directory there (not this lab's) left alone
        taken = os.path.join(RUN_BASE, "mh-taken.far")
        os.makedirs(taken)
        try:
            result = storlab("up", write_topology(tmp_path, second_host, second_host.uri(),
                                                  "mh-taken"), "--accel", "tcg")
            assert result.returncode != 0
            assert "host 'far'" in result.stderr and "exists" in result.stderr, result.stderr
            assert "rolling back lab 'mh-taken'" in result.stdout
            assert os.path.isdir(taken)
            assert not os.path.exists(os.path.join(RUN_BASE, "mh-taken"))
            assert not lab_processes("mh-taken")       # its ssh master closed by the rollback
        finally:
            os.rmdir(taken)
    finally:
        libvirt_conn.stop_daemons(daemons)
