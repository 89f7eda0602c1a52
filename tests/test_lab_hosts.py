"""A lab's remote host (lab/hosts.py, the nbdkit functions on a host) without
an sshd: the qemu+ssh URI's command= names a stand-in for ssh that runs the
remote command on this machine, so every script storlab sends a host runs
for real (nbdkit's memory plugin, the built storlab-stats, tar); one that
exits 255 as ssh does when a host cannot be reached; one that logs its
arguments (the shared connection's options, its master asked to exit); one
that cuts its input short (an appliance copy broken off). A stand-in QEMU
answers the KVM probe: no guest boots here. The lab test
(test_lab_multihost.py) does the same through a real sshd and libvirt."""
import json
import os
import time
import types
import xml.etree.ElementTree as ET

import pytest

from storlab_cli import paths
from storlab_cli.errors import UserError
from storlab_cli.lab import (accel, appliance, hosts as lab_hosts, lifecycle, nbdkit,
                             state as lab_state)
from storlab_cli.schema import topology

FAKE_SSH = """#!/bin/sh
# ssh OPTIONS... DESTINATION -- COMMAND: runs COMMAND here
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done
shift
exec /bin/sh -c "$1"
"""
# FAKE_SSH that first writes its arguments to LOG, a line a call, and
# answers `-O exit` itself as a shared connection's master leaves: its
# socket (ControlPath) removed.
LOGGING_SSH = """#!/bin/sh
printf '%s\\n' "$*" >> LOG
case " $* " in *" -O exit "*)
  for a in "$@"; do case "$a" in ControlPath=*) rm -f "${a#ControlPath=}";; esac; done
  exit 0;;
esac
""" + FAKE_SSH.split("\n", 2)[2]
UNREACHABLE_SSH = "#!/bin/sh\necho 'ssh: connect to host far port 22: Connection refused' >&2\nexit 255\n"


def program(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def run_base(tmp_path, monkeypatch):
    base = tmp_path / "run"
    base.mkdir()
    monkeypatch.setattr(lab_state, "RUN_BASE", str(base))
    return base


def far_host(tmp_path, ssh=FAKE_SSH, lab="lab"):
    """A remote host through the stand-in ssh, its cache directory under tmp_path."""
    uri = f"qemu+ssh://root@far.invalid/system?command={program(tmp_path, 'ssh', ssh)}"
    return lab_hosts.LabHost(lab, "far", uri, "192.0.2.2", cache_dir=str(tmp_path / "far-cache"))


def test_prepare_makes_the_run_directory_there_once(tmp_path, run_base):
    host = far_host(tmp_path)
    gid = host.prepare()
    assert os.path.isdir(run_base / "lab.far") and isinstance(gid, int)
    assert os.stat(run_base / "lab.far").st_mode & 0o777 == 0o750
    # another lab of the same name there: refused, the directory left alone
    with pytest.raises(UserError, match=r"host 'far' \(qemu\+ssh://.*\): preparing the lab's "
                                        r"run directory: .*lab\.far exists"):
        host.prepare()
    host.remove_run_dir()
    assert not os.path.exists(run_base / "lab.far")


def test_bundle_copied_once_and_its_stats_tool_used_there(tmp_path, run_base):
    host = far_host(tmp_path)
    bundle = host.ensure_bundle()
    assert os.path.dirname(bundle) == str(tmp_path / "far-cache" / "bundle")
    names = sorted(os.listdir(bundle))
    assert names == sorted([".complete", "nbdkit-hdd-plugin.so", "nbdkit-ssd-plugin.so",
                            "nbdkit-raid-plugin.so", "storlab-stats"])
    with open(os.path.join(bundle, "nbdkit-hdd-plugin.so"), "rb") as copy, \
            open(paths.plugin("hdd"), "rb") as built:
        assert copy.read() == built.read()
    marker = os.stat(os.path.join(bundle, ".complete")).st_mtime_ns
    assert host.ensure_bundle() == bundle                      # found again by its hash
    assert os.stat(os.path.join(bundle, ".complete")).st_mtime_ns == marker
    assert not os.path.exists(bundle + ".tmp")


def test_nbdkit_started_looked_at_and_stopped_there(tmp_path, run_base):
    host = far_host(tmp_path)
    gid = host.prepare()
    host.bundle = host.ensure_bundle()
    directory = host.run_dir
    sock, pidfile, stats = (os.path.join(directory, f"node1-disk0.{e}")
                            for e in ("sock", "pid", "stats"))
    target = os.path.join(host.bundle, "nbdkit-hdd-plugin.so")
    pid = nbdkit.start_on(host, "hdd", target, ["size=16M", "timing=off", f"stats={stats}"],
                          sock, pidfile, gid)
    second = os.path.join(directory, "node1-disk1.pid")
    second_pid = nbdkit.start_on(host, "hdd", target, ["size=16M", "timing=off"],
                                 os.path.join(directory, "node1-disk1.sock"), second, gid)
    try:
        assert nbdkit.is_nbdkit(pid)
        assert os.stat(sock).st_mode & 0o777 == 0o660 and os.stat(sock).st_gid == gid
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            assert target.encode() in f.read()          # the bundle's plugin, not this build's
        assert nbdkit.running_on(host, [pidfile, pidfile + ".none"]) == \
            {pidfile: True, pidfile + ".none": False}
        assert host.stats(stats)["devices"][0]["ops"]["read"]["count"] == 0
        assert host.read_text(stats + ".absent", 100) is None
    finally:
        # both at once, in one ssh; a pidfile with no nbdkit behind it is passed over
        assert nbdkit.stop_all_on(host, [pidfile, pidfile + ".none", second]) == [pidfile, second]
    assert not nbdkit.is_nbdkit(pid) and not nbdkit.is_nbdkit(second_pid)
    assert nbdkit.stop_all_on(host, [pidfile, second]) == []       # nothing left to stop
    # the plugin's own refusal comes back in one line naming the host
    with pytest.raises(UserError, match=r"host 'far' .*: nbdkit hdd preset=nosuch: .*nosuch"):
        nbdkit.start_on(host, "hdd", target, ["preset=nosuch"], sock, pidfile, gid)
    host.remove_run_dir()


def test_a_host_that_cannot_be_reached(tmp_path, run_base):
    host = far_host(tmp_path, UNREACHABLE_SSH)
    with pytest.raises(UserError) as caught:
        host.prepare()
    assert str(caught.value) == (f"host 'far' ({host.uri}): preparing the lab's run directory: "
                                 "ssh: connect to host far port 22: Connection refused")


def test_status_shows_an_unreachable_host_and_down_keeps_the_state(tmp_path, run_base):
    host = far_host(tmp_path, UNREACHABLE_SSH, lab="gone")
    directory = run_base / "gone"
    directory.mkdir()
    state = lab_state.LabState(
        name="gone", topology="/x.toml", accel="tcg", appliance="0", created=0, phase="ready",
        domains=["storlab-gone-node1"],
        devices=[lab_state.DeviceEntry("node1", "disk0", "hdd", pidfile=str(
            run_base / "gone.far" / "node1-disk0.pid"), host="far")],
        hosts=[{"name": "far", "uri": host.uri, "address": host.address}],
        placement={"node1": "far"}, bundles={"far": ""})
    lab_state.save(state)
    node = lifecycle.lab_status("gone")["nodes"][0]
    assert (node["host"], node["state"], node["devices"][0]["server"]) == \
        ("far", "unreachable", "stopped")
    assert "Connection refused" in node["error"]
    with pytest.raises(UserError, match=r"lab 'gone' is not all down \(host 'far': cannot "
                                        r"connect to libvirt at qemu\+ssh://root@far.invalid/.*\); "
                                        r"run `storlab down gone` again"):
        lifecycle.down("gone")
    assert os.path.exists(directory / "lab.json")            # kept for the next `down`


def test_hosts_of_a_state_from_before_hosts(tmp_path, run_base):
    state = lab_state.LabState(name="old", topology="/x.toml", accel="tcg", appliance="0",
                               created=0)
    hosts = lab_hosts.from_state(state)
    assert [(h.name, h.local, h.run_dir) for h in hosts.values()] == \
        [("local", True, str(run_base / "old"))]
    assert lab_hosts.host_of_node(state, hosts, "node1").local


def test_stats_tool_refusal_names_the_host(tmp_path, run_base):
    host = far_host(tmp_path)
    host.bundle = host.ensure_bundle()
    missing = str(tmp_path / "no.stats")
    with pytest.raises(UserError, match=r"host 'far' .*: storlab-stats .*no\.stats: "):
        host.stats(missing)


def test_a_remote_nodes_console_tail(tmp_path, run_base):
    """A node that never answers on the second host: `up`'s message shows
    the end of its console log, read there."""
    host = far_host(tmp_path)
    host.prepare()
    log = os.path.join(host.run_dir, "node2.console.log")
    with open(log, "w", encoding="utf-8") as f:
        f.write("".join(f"line {i}\n" for i in range(100)))
    tail = lifecycle._console_tail(host, "node2")
    assert tail.splitlines() == [f"    line {i}" for i in range(75, 100)]
    assert "(no console log at" in lifecycle._console_tail(host, "node3")
    host.remove_run_dir()


# ---- one shared ssh connection a host --------------------------------------------

def logging_host(tmp_path, lab="lab"):
    """far_host through LOGGING_SSH; returns (host, the log's path)."""
    log = tmp_path / "ssh.log"
    return far_host(tmp_path, LOGGING_SSH.replace("LOG", str(log)), lab), log


def ssh_calls(log):
    return log.read_text().splitlines() if log.exists() else []


def sharing_options(control):
    return (f"-o ControlMaster=auto -o ControlPath={control} "
            f"-o ControlPersist={lab_hosts.CONTROL_PERSIST_S}")


def test_remote_steps_share_one_ssh_connection(tmp_path, run_base):
    host, log = logging_host(tmp_path)
    # no lab run directory here yet (up's first checks): no sharing
    host.shell("true", "a check")
    assert "ControlMaster" not in ssh_calls(log)[-1]
    (run_base / "lab").mkdir()
    control = str(run_base / "lab" / "ssh-far")
    assert host.control_path == control
    host.prepare()
    call = ssh_calls(log)[-1]
    assert call.startswith("-o BatchMode=yes ") and sharing_options(control) in call
    # no master made its socket (this stand-in makes none): nothing to close
    calls = len(ssh_calls(log))
    host.close_connection()
    assert len(ssh_calls(log)) == calls
    # one that did: asked to exit with the same options, its socket removed
    open(control, "w").close()
    host.close_connection()
    assert ssh_calls(log)[-1] == (f"-o BatchMode=yes -o ConnectTimeout=10 -l root "
                                  f"{sharing_options(control)} -O exit far.invalid")
    assert not os.path.exists(control)
    host.remove_run_dir()


def test_a_dead_masters_socket_is_removed_without_waiting(tmp_path, run_base):
    host = far_host(tmp_path, UNREACHABLE_SSH)           # `-O exit` refused: exit 255
    (run_base / "lab").mkdir()
    open(host.control_path, "w").close()
    started_s = time.monotonic()
    host.close_connection()
    assert not os.path.exists(host.control_path) and time.monotonic() - started_s < 1


def test_no_sharing_where_ssh_cannot_take_the_socket_path(tmp_path, monkeypatch):
    for base, why in ((tmp_path / ("x" * 80), "too long for a unix socket"),
                      (tmp_path / "with space", "read apart by ssh")):
        (base / "lab").mkdir(parents=True)
        monkeypatch.setattr(lab_state, "RUN_BASE", str(base))
        host = far_host(tmp_path)
        assert host.control_path is None, why
        assert "ControlMaster=auto" not in host._ssh_argv("-T"), why


class NoDomains:
    """A libvirt connection with no domains (down acts on what lab.json lists)."""

    def listAllDomains(self):
        return []


def remote_lab_state(host, run_base):
    (run_base / host.lab).mkdir()
    state = lab_state.LabState(
        name=host.lab, topology="/x.toml", accel="tcg", appliance="0", created=0,
        hosts=[{"name": "far", "uri": host.uri, "address": host.address}],
        placement={"node1": "far"}, bundles={"far": ""})
    lab_state.save(state)
    return state


def test_down_closes_the_shared_connection_before_the_run_directory_goes(
        tmp_path, run_base, monkeypatch):
    host, log = logging_host(tmp_path)
    remote_lab_state(host, run_base)
    host.prepare()
    master = host.control_path
    open(master, "w").close()                            # as a master leaves its socket
    monkeypatch.setattr(lab_hosts.LabHost, "libvirt", lambda self: NoDomains())
    lifecycle.down("lab")
    assert ssh_calls(log)[-1].endswith(f"{sharing_options(master)} -O exit far.invalid")
    assert not os.path.exists(run_base / "lab") and not os.path.exists(run_base / "lab.far")


def test_down_closes_the_shared_connection_of_a_host_it_could_not_clean(
        tmp_path, run_base, monkeypatch):
    """The lab stays (lab.json, for the next `down`); its master does not."""
    host, log = logging_host(tmp_path)
    remote_lab_state(host, run_base)
    master = host.control_path
    open(master, "w").close()

    def refused(self):
        raise UserError(f"cannot connect to libvirt at {self.uri}: refused")
    monkeypatch.setattr(lab_hosts.LabHost, "libvirt", refused)
    with pytest.raises(UserError, match=r"lab 'lab' is not all down"):
        lifecycle.down("lab")
    assert ssh_calls(log)[-1].endswith("-O exit far.invalid")
    assert not os.path.exists(master) and os.path.exists(run_base / "lab" / "lab.json")


# ---- the appliance copied to a host's cache directory ----------------------------

APPLIANCE_HASH = "0123456789abcdef"
# ssh as FAKE_SSH whose connection breaks after 64 KiB of input
CUT_SSH = FAKE_SSH.replace('exec /bin/sh -c "$1"', 'head -c 65536 | /bin/sh -c "$1"')


def local_appliance(tmp_path):
    """A small appliance in a cache directory here, with a manifest as
    appliance.ensure writes it (its hash, its files' sizes)."""
    directory = tmp_path / "local-cache" / "appliance" / APPLIANCE_HASH
    directory.mkdir(parents=True)
    (directory / appliance.KERNEL_NAME).write_bytes(os.urandom(256 << 10))
    (directory / appliance.INITRD_NAME).write_bytes(os.urandom(128 << 10))
    (directory / appliance.MANIFEST_NAME).write_text(json.dumps(
        {"content_hash": APPLIANCE_HASH, "kernel_bytes": 256 << 10,
         "initramfs_bytes": 128 << 10}))
    return appliance.Appliance(str(directory / appliance.KERNEL_NAME),
                               str(directory / appliance.INITRD_NAME), "6.1.0-test-amd64",
                               APPLIANCE_HASH, appliance.CMDLINE)


def test_appliance_copied_whole_to_the_hosts_cache_dir_once(tmp_path, run_base):
    image = local_appliance(tmp_path)
    host = far_host(tmp_path)
    there = host.ensure_appliance(image)
    directory = tmp_path / "far-cache" / "appliance" / APPLIANCE_HASH
    assert there.kernel_path == str(directory / appliance.KERNEL_NAME)
    assert there.initrd_path == str(directory / appliance.INITRD_NAME)
    assert there == host.appliance_there(image)
    for name in (appliance.KERNEL_NAME, appliance.INITRD_NAME, appliance.MANIFEST_NAME):
        assert (directory / name).read_bytes() == \
            (tmp_path / "local-cache" / "appliance" / APPLIANCE_HASH / name).read_bytes()
    # found there as appliance.ensure finds a cached build
    plan = types.SimpleNamespace(content_hash=APPLIANCE_HASH, kernel_version="6.1.0-test-amd64")
    assert appliance._load(str(directory), plan).kernel_path == there.kernel_path
    assert os.stat(directory).st_mode & 0o777 == 0o755      # libvirt's qemu user gets in
    marker = os.stat(directory / ".complete").st_mtime_ns
    assert host.ensure_appliance(image) == there            # found again: not copied
    assert os.stat(directory / ".complete").st_mtime_ns == marker
    # the local host keeps its own
    local = lab_hosts.LabHost("lab", "here", "qemu:///system", "127.0.0.1")
    assert local.ensure_appliance(image) == image and local.cache_dir is None


def test_an_appliance_copy_cut_short_leaves_nothing_there(tmp_path, run_base):
    image = local_appliance(tmp_path)
    host = far_host(tmp_path, CUT_SSH)
    with pytest.raises(UserError, match=r"host 'far' .*: copying the guest appliance "
                                        rf"{APPLIANCE_HASH[:12]} to .*far-cache/appliance/"
                                        rf"{APPLIANCE_HASH}: tar: "):
        host.ensure_appliance(image)
    assert os.listdir(tmp_path / "far-cache" / "appliance") == []     # no half directory
    # whole through a connection that holds
    assert os.path.exists(far_host(tmp_path).ensure_appliance(image).kernel_path)


def test_a_hosts_cache_dir_in_lab_json(tmp_path, run_base):
    host = far_host(tmp_path)
    local = lab_hosts.LabHost("lab", "here", "qemu:///system", "127.0.0.1")
    entries = lab_hosts.state_entries({"here": local, "far": host})
    assert entries[1]["cache_dir"] == str(tmp_path / "far-cache") and "cache_dir" not in entries[0]
    state = lab_state.LabState(name="lab", topology="/x.toml", accel="tcg", appliance="0",
                               created=0, hosts=entries)
    again = lab_hosts.from_state(state)
    assert (again["far"].cache_dir, again["here"].cache_dir) == (host.cache_dir, None)
    # a lab.json from before cache_dir: the default there
    del entries[1]["cache_dir"]
    assert lab_hosts.from_state(state)["far"].cache_dir == "/var/cache/storlab"


# ---- each host's accelerator, probed there ----------------------------------------

# QEMU as the probe runs it: prints what MODE says, its arguments logged to LOG
FAKE_QEMU = """#!/bin/sh
printf '%s\\n' "$*" >> LOG
case MODE in
  banner) echo 'Linux version 6.1.0-test-amd64 (fake)';;
  refuses) echo 'qemu-system-x86_64: failed to initialize kvm: Permission denied' >&2; exit 1;;
  hangs) exec sleep 30;;
esac
"""


@pytest.fixture
def fake_qemu(tmp_path, monkeypatch):
    """A stand-in qemu-system-x86_64 first on PATH (here and, through the
    stand-in ssh, on the remote host) and a /dev/kvm of the test's own; no
    QEMU really runs. Returns set_mode(mode) -> the log of its calls."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "qemu.log"
    device = tmp_path / "kvm"
    device.write_text("")
    monkeypatch.setattr(accel, "KVM_DEVICE", str(device))
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")

    def set_mode(mode):
        program(bin_dir, "qemu-system-x86_64",
                FAKE_QEMU.replace("LOG", str(log)).replace("MODE", mode))
        return log
    return set_mode


def probe_cache(run_base):
    return str(run_base / accel.CACHE_NAME)


def test_the_kvm_probe_is_one_command_line_run_on_each_host(tmp_path, run_base, fake_qemu):
    log = fake_qemu("banner")
    image = local_appliance(tmp_path)
    local = lab_hosts.LabHost("lab", "here", "qemu:///system", "127.0.0.1")
    far = far_host(tmp_path)
    for host in (local, far):
        kernel = host.appliance_there(image).kernel_path
        assert accel.probe_kvm(host, kernel) == (True, "a probe boot under KVM ran the kernel")
        # `timeout -k 5 15` ends it on that host; QEMU's arguments name the kernel there
        assert accel.probe_argv(kernel)[4] == "qemu-system-x86_64"
        assert log.read_text().splitlines()[-1] == " ".join(accel.probe_argv(kernel)[5:])
    assert str(tmp_path / "far-cache" / "appliance") in log.read_text().splitlines()[-1]
    fake_qemu("refuses")
    assert accel.probe_kvm(far, "/k") == (False, "a probe boot under KVM failed: qemu-system-"
                                                 "x86_64: failed to initialize kvm: Permission "
                                                 "denied")


def test_a_hung_kvm_probe_is_ended_on_its_host(tmp_path, run_base, fake_qemu, monkeypatch):
    fake_qemu("hangs")
    monkeypatch.setattr(accel, "PROBE_TIMEOUT_S", 1)
    assert accel.probe_kvm(far_host(tmp_path), "/k") == \
        (False, "a probe boot under KVM did not finish in 1 s")


def test_a_remote_host_without_kvm_runs_tcg_and_its_answer_is_kept_there(
        tmp_path, run_base, fake_qemu, monkeypatch):
    log = fake_qemu("banner")
    monkeypatch.setattr(accel, "KVM_DEVICE", str(tmp_path / "no-kvm"))
    image = local_appliance(tmp_path)
    host = far_host(tmp_path)
    (run_base / "lab").mkdir()
    state = lab_state.LabState(name="lab", topology="/x.toml", accel="auto", appliance="0",
                               created=0)
    lifecycle._choose_accels(state, {"far": host}, image, "auto")
    reason = f"host 'far': {tmp_path / 'no-kvm'} is missing or not accessible"
    assert state.accels == {"far": {"accel": "tcg", "reason": reason}}
    assert state.accel == "tcg" and lab_state.load("lab").accels == state.accels
    assert not log.exists()                                  # no probe boot without KVM
    # kept on that host for the kernel there: not probed again
    with open(probe_cache(run_base), encoding="utf-8") as f:
        assert json.load(f)["kernel"] == host.appliance_there(image).kernel_path
    monkeypatch.setattr(accel, "KVM_DEVICE", str(tmp_path / "kvm"))
    lifecycle._choose_accels(state, {"far": host}, image, "auto")
    assert state.accels["far"] == {"accel": "tcg", "reason": reason + " (probed earlier "
                                                                      "this boot)"}


def test_a_forced_accelerator_applies_to_every_host(tmp_path, run_base, fake_qemu):
    log = fake_qemu("banner")
    far, ssh_log = logging_host(tmp_path)
    here = lab_hosts.LabHost("lab", "here", "qemu:///system", "127.0.0.1")
    (run_base / "lab").mkdir()
    state = lab_state.LabState(name="lab", topology="/x.toml", accel="tcg", appliance="0",
                               created=0)
    lifecycle._choose_accels(state, {"here": here, "far": far}, local_appliance(tmp_path), "tcg")
    assert state.accels == {"here": {"accel": "tcg", "reason": "host 'here': forced with tcg"},
                            "far": {"accel": "tcg", "reason": "host 'far': forced with tcg"}}
    assert not log.exists() and not ssh_log.exists()        # nothing probed, nothing asked
    with pytest.raises(UserError, match=r"--accel fast: expected one of auto, kvm, tcg"):
        accel.check_requested("fast")


TWO_HOST_TOPOLOGY = '''name = "lab"
[[hosts]]
name = "here"
uri = "qemu:///system"
address = "192.0.2.1"
[[hosts]]
name = "far"
uri = "qemu+ssh://root@far.invalid/system"
address = "192.0.2.2"
cache_dir = "/srv/far-cache"
[[defaults.devices]]
name = "disk"
plugin = "memory"
[defaults.devices.params]
size = "16M"
[nodes]
count = 2
'''


def test_each_node_runs_under_its_hosts_accelerator(tmp_path, run_base):
    path = tmp_path / "lab.toml"
    path.write_text(TWO_HOST_TOPOLOGY)
    topo = topology.load(str(path))
    hosts = lab_hosts.from_topology(topo)
    state = lab_state.LabState(name="lab", topology=str(path), accel="tcg", appliance="0",
                               created=0, hosts=lab_hosts.state_entries(hosts),
                               accels={"here": {"accel": "kvm", "reason": "probed"},
                                       "far": {"accel": "tcg", "reason": "no /dev/kvm"}})
    image = appliance.Appliance("/cache/appliance/0123/vmlinux", "/cache/appliance/0123/"
                                "initramfs.cpio", "6.1", "0123", appliance.CMDLINE)
    domains = {}
    for node in topo.nodes:
        root = ET.fromstring(lifecycle._domain_xml(state, topo, node, hosts[node.host.name],
                                                   image))
        domains[node.host.name] = (root.get("type"), root.findtext("os/kernel"))
    assert domains == {"here": ("kvm", "/cache/appliance/0123/vmlinux"),
                       "far": ("qemu", "/srv/far-cache/appliance/0123/vmlinux")}
    # a lab.json from before: every host under the lab's
    assert lab_state.accel_of(lab_state.LabState(name="old", topology="/x", accel="kvm",
                                                 appliance="0", created=0), "far") == "kvm"


def test_status_shows_each_hosts_accelerator(tmp_path, run_base):
    host = far_host(tmp_path)
    (run_base / "lab").mkdir()
    lab_state.save(lab_state.LabState(
        name="lab", topology="/x.toml", accel="tcg", appliance="0", created=0, phase="ready",
        hosts=[{"name": "here", "uri": "qemu:///system", "address": "192.0.2.1"},
               {"name": "far", "uri": host.uri, "address": "192.0.2.2"}],
        accels={"here": {"accel": "kvm", "reason": "host 'here': probed"},
                "far": {"accel": "tcg", "reason": "host 'far': no kvm"}}))
    report = lifecycle.lab_status("lab")
    assert [(h["name"], h["accel"], h["accel_reason"]) for h in report["hosts"]] == \
        [("here", "kvm", "host 'here': probed"), ("far", "tcg", "host 'far': no kvm")]
    text = lifecycle.format_status(report)
    assert text.startswith("lab lab: ready, accel tcg, ")
    assert f"  host far: {host.uri} (links: 192.0.2.2), accel tcg" in text.splitlines()


def test_up_asks_each_host_for_the_ports_its_nodes_bind(tmp_path):
    """A 48-node lab on three hosts (past 120 links: ports counted per
    host): each host is asked for its own ends' ports, every one of them,
    and a taken one is named with its link and host."""
    pairs = [(f"node{i + 1}", f"node{(i + o) % 48 + 1}") for i in range(48) for o in (1, 2, 3)]
    text = 'name = "big"\n[nodes]\ncount = 48\n[links]\nmode = "pairs"\npairs = [' + \
        ", ".join(f'["{a}", "{b}"]' for a, b in pairs) + "]\n"
    for i in range(3):
        uri = "qemu:///system" if i == 0 else f"qemu+ssh://root@192.0.2.{i + 1}/system"
        text += f'[[hosts]]\nname = "h{i}"\nuri = "{uri}"\naddress = "192.0.2.{i + 1}"\n'
    path = tmp_path / "big.toml"
    path.write_text(text)
    topo = topology.load(str(path))
    asked = {}

    def host(name, taken=()):
        def in_use(ports):
            asked[name] = ports
            return [p for p in ports if p in taken]
        return types.SimpleNamespace(name=name, local=False, udp_ports_in_use=in_use,
                                     describe=lambda: f"host '{name}'")

    lifecycle._check_ports_free(topo, {name: host(name) for name in ("h0", "h1", "h2")})
    for name in ("h0", "h1", "h2"):
        ends = [e.port for n in topo.nodes if n.host.name == name
                for e in topology.link_ends(topo, n)]
        assert sorted(asked[name]) == sorted(ends) and len(set(ends)) == len(ends) == 96
    link = next(l for l in topo.links if topo.node(l.b).host.name == "h2")
    hosts = {name: host(name, {link.port_b} if name == "h2" else ()) for name in ("h0", "h1", "h2")}
    with pytest.raises(UserError, match=f"^udp port {link.port_b} \\(link {link.a}-{link.b}\\) "
                                        "is in use on host 'h2'$"):
        lifecycle._check_ports_free(topo, hosts)
