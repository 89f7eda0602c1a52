"""Lab integration: build the appliance, boot the 1-node smoke lab under
TCG, run fio with verify through the guest agent on its emulated disk and
its RAID LUN, fail the LUN's battery live with `storlab ctl`, tear it down
and check nothing is left; then a structural sweep, a lab per topology.
Real libvirt, QEMU and nbdkit.

STORLAB_TEST_LAB=NAME runs the smoke topology under another lab name (two
checkouts testing on one host at once)."""
import csv
import glob
import json
import os
import stat
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STORLAB = os.path.join(ROOT, "scripts", "storlab")

from storlab_cli.common import process
from storlab_cli.results.host_limit import HOST_QUEUE_SHARE_MIN
from storlab_cli.lab import libvirt_conn
from storlab_cli.live import stats_snapshot

SMOKE = os.path.join(ROOT, "topologies", "smoke.toml")
RUN_BASE = os.environ.get("STORLAB_RUN_DIR", "/run/storlab")
LAB = os.environ.get("STORLAB_TEST_LAB", "smoke")
LUN_BYTES = 64 << 20           # smoke.toml's lun0: RAID 10 of 8 x 16 MiB members
# sh prelude in the guest: $dev is the disk whose serial is $1 (a topology device name)
BY_SERIAL = ". /usr/lib/storlab/profiles/lib.sh; dev=$(disk_by_serial \"$1\") || exit 99; "


def storlab(*args, timeout=900):
    return subprocess.run(["/usr/bin/python3", STORLAB, *args], capture_output=True,
                          text=True, timeout=timeout, check=False)


def lab_domains(lab):
    conn = libvirt_conn.connect()
    return [d.name() for d in conn.listAllDomains() if d.name().startswith(f"storlab-{lab}-")]


def device_record(lab, device):
    """The front record of node1's device's live stats file (storlab-stats)."""
    return stats_snapshot.take(os.path.join(RUN_BASE, lab, f"node1-{device}.stats"))["devices"][0]


def in_guest(lab, device, script, timeout=900):
    """Runs sh script in node1 with $dev set to the device's /dev path."""
    return storlab("exec", lab, "node1", "--", "/bin/sh", "-c", BY_SERIAL + script, "sh", device,
                   timeout=timeout)


@pytest.fixture(scope="module")
def smoke_topology(tmp_path_factory):
    if LAB == "smoke":
        return SMOKE
    path = tmp_path_factory.mktemp("topology") / f"{LAB}.toml"
    with open(SMOKE, encoding="utf-8") as f:
        text = f.read()
    path.write_text(text.replace('name = "smoke"', f'name = "{LAB}"', 1))
    return str(path)


@pytest.fixture(scope="module")
def smoke_lab(smoke_topology):
    started = libvirt_conn.ensure_daemons()
    result = storlab("up", smoke_topology, "--accel", "tcg")
    try:
        assert result.returncode == 0, result.stdout + result.stderr
        yield LAB
    finally:
        storlab("down", LAB)
        libvirt_conn.stop_daemons(started)


def test_up_reports_every_node_ready(smoke_lab):
    result = storlab("status", smoke_lab, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["phase"] == "ready" and report["accel"] == "tcg"
    assert [n["node"] for n in report["nodes"]] == ["node1"]
    node = report["nodes"][0]
    assert node["state"] == "running" and node["agent"] is True
    assert [(d["device"], d["plugin"], d["server"]) for d in node["devices"]] == \
        [("disk0", "hdd", "running"), ("lun0", "raid", "running")]
    disk0, lun0 = node["devices"]
    ctl = os.path.join(RUN_BASE, smoke_lab, "node1-lun0.ctl")
    assert (disk0["ctl"], lun0["ctl"]) == (None, ctl)
    mode = os.stat(ctl)
    assert stat.S_ISSOCK(mode.st_mode) and mode.st_uid == 0
    assert stat.S_IMODE(mode.st_mode) & 0o007 == 0     # not reachable by others
    human = storlab("status", smoke_lab)
    assert f"lun0 control socket {ctl} (storlab ctl {smoke_lab} node1 lun0 COMMAND)" in human.stdout


@pytest.mark.parametrize("device", ["disk0", "lun0"])
def test_fio_verify_on_the_emulated_disks(smoke_lab, device):
    fio = ("fio --name=verify --filename=$dev --ioengine=libaio --direct=1 --rw=randwrite "
           "--bs=4k --size=8M --iodepth=16 --verify=crc32c --do_verify=1 --verify_fatal=1 "
           "--output-format=json")
    result = in_guest(smoke_lab, device, fio)
    assert result.returncode == 0, result.stderr
    job = json.loads(result.stdout[result.stdout.index("{"):])["jobs"][0]
    assert job["error"] == 0
    assert job["write"]["total_ios"] == 2048
    assert job["read"]["total_ios"] == 2048          # every block read back and verified


def test_guest_sees_rotational_disks_and_the_luns_exact_size(smoke_lab):
    script = ('echo $(cat /sys/block/${dev#/dev/}/queue/rotational) '
              '$(cat /sys/block/${dev#/dev/}/size)')
    assert in_guest(smoke_lab, "disk0", script).stdout.split() == ["1", str((1 << 30) // 512)]
    assert in_guest(smoke_lab, "lun0", script).stdout.split() == ["1", str(LUN_BYTES // 512)]


def test_ctl_fails_the_luns_battery_live(smoke_lab):
    result = storlab("ctl", smoke_lab, "node1", "lun0", "battery", "failed")
    assert (result.returncode, result.stdout) == (0, "ok battery failed; write-back off\n"), \
        result.stderr
    status = storlab("ctl", smoke_lab, "node1", "lun0", "status")
    assert status.returncode == 0 and " battery=failed " in status.stdout
    assert " write-back=off " in status.stdout
    events = os.path.join(RUN_BASE, smoke_lab, "node1-lun0.stats.events")
    with open(events, encoding="utf-8") as f:
        logged = [json.loads(line)["event"] for line in f]
    assert "battery set failed" in logged and "cache now write-through" in logged
    front = device_record(smoke_lab, "lun0")
    assert front["kind"] == "raid" and front["capacity_bytes"] == LUN_BYTES
    assert front["counters"]["battery_state"] == 2 and front["counters"]["write_back_effective"] == 0
    assert front["counters"]["events"] >= 4
    refused = storlab("ctl", smoke_lab, "node1", "disk0", "status")
    assert refused.returncode == 1 and "has no control socket" in refused.stderr


def device_reads(lab, device):
    """(count, mean latency ns, latency offset ns) of a device's reads so far."""
    front = device_record(lab, device)
    read = front["ops"]["read"]
    return read["count"], read["latency_ns"]["mean"], front["realtime"]["latency_offset_ns"]


def test_the_guest_feels_every_device_read(smoke_lab):
    """A guest's read takes at least what the model gave it: the lab's
    devices release at the model's time, not early by a learnt gap that
    would hold the guest's own work (lifecycle.LATENCY_OFFSET_KEY)."""
    count_before, mean_before, _ = device_reads(smoke_lab, "disk0")
    fio = ("fio --name=feel --filename=$dev --ioengine=libaio --direct=1 --rw=randread "
           "--bs=4k --iodepth=1 --runtime=4 --time_based --output-format=json")
    result = in_guest(smoke_lab, "disk0", fio)
    assert result.returncode == 0, result.stderr
    guest = json.loads(result.stdout[result.stdout.index("{"):])["jobs"][0]["read"]
    count, mean, offset_ns = device_reads(smoke_lab, "disk0")
    model_mean_ns = (mean * count - mean_before * count_before) / (count - count_before)
    assert offset_ns == 0
    assert count - count_before >= guest["total_ios"] > 0
    assert guest["clat_ns"]["mean"] >= model_mean_ns, (guest["clat_ns"]["mean"], model_mean_ns)


SWEEP = """
name = "smoke-sweep"
topology = "{topology}"
[workload]
target = "lun0"
rw = "randrw"
rwmixread = 50
bs = "8k"
iodepth = 8
size = "16M"
[phases]
ramp_s = 1
duration_s = 5
interval_s = 1
[sweep]
"device.battery" = ["ok", "failed"]
[[sweep.points]]
label = "fails at 2 s"
events = [{{ at_s = 2, command = "battery failed" }}]
"""


def test_a_short_sweep_on_the_running_lab(smoke_lab, smoke_topology, tmp_path):
    """`storlab sweep` reuses the lab that is up (and leaves it up): fio in
    the guest, knobs and a live event through the LUN's control socket,
    device stats of the window, timeline, the simulator's prediction, plots."""
    sweep_file = tmp_path / "sweep.toml"
    sweep_file.write_text(SWEEP.format(topology=smoke_topology))
    out = tmp_path / "results"
    result = storlab("sweep", str(sweep_file), "--out", str(out), timeout=600)
    assert result.returncode == 0, result.stderr
    assert f"reusing lab '{smoke_lab}'" in result.stderr
    assert lab_domains(smoke_lab), "the sweep took down a lab it did not bring up"
    with open(out / "points.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [r["device.battery"] for r in rows] == ["ok", "failed", "fails at 2 s"]
    ok, failed = rows[0], rows[1]
    for row in rows:
        assert row["units_run"] == "1" and float(row["iops"]) > 0
        assert float(row["dev_iops"]) > 0 and row["member_iops"] != ""
    # write-back acknowledges from the controller's cache; write-through waits for the disks.
    # The device shows it as a ratio; the guest adds its own TCG CPU time (hundreds of us
    # an I/O, more when the host is busy) to both, so it must see at least a 10k rpm disk's seek
    # and half a turn more per write (~2 ms of the ~7 ms the disks add; a ratio of the
    # guest's figures failed twice on a loaded host: 2.75x and 2.2x)
    assert float(failed["dev_lat_mean_us"]) > 3 * float(ok["dev_lat_mean_us"]), (ok, failed)
    assert float(failed["write_lat_mean_us"]) > float(ok["write_lat_mean_us"]) + 2000, (ok, failed)
    # the cache answers in microseconds: a TCG guest cannot keep 8 I/Os at it, and the
    # point says so; the disks behind a failed battery hold more of them. Whether they hold
    # half of the 8 depends on the host's load (CI's failed point was rightly flagged with
    # release-late beside it), so that point's flag must only agree with its own queue depth.
    assert "host-queue" in ok["host_limit"].split("+"), ok
    assert ("host-queue" in failed["host_limit"].split("+")) == (
        float(failed["dev_qd_mean"]) < HOST_QUEUE_SHARE_MIN * 8), failed
    assert float(failed["dev_qd_mean"]) > 4 * float(ok["dev_qd_mean"]), (ok, failed)
    with open(out / "sim" / "points.csv", encoding="utf-8") as f:
        assert all(r["host_limit"] == "" for r in csv.DictReader(f))
    assert "Where the host was the limit" in (out / "index.html").read_text()
    point = out / "points" / "002"
    for name in ("fio-node1-u1.json", "device-node1-lun0.json", "timeline.csv", "events.csv",
                 "job-node1-u1.fio", "done"):
        assert (point / name).exists(), name
    assert (point / "events.csv").read_text().splitlines()[1].endswith(",battery failed")
    # after its 1 s ramp fio ran 3 s for late starters, the 5 s window and 1 s past it; the
    # figures and the timeline are the window's, 4 s after the first pass through the gate
    assert "runtime=9" in (point / "job-node1-u1.fio").read_text().splitlines()
    assert (point / "gate-node1.txt").read_text().startswith("node1-u1w1.prerun.txt:")
    times_s = [float(line.split(",")[0])
               for line in (point / "timeline.csv").read_text().splitlines()[1:]]
    assert len(times_s) >= 4 and max(times_s) <= 5, times_s
    # the percentiles' histograms came back with their empty bins left out, and hold
    # at least the window's I/Os (they cover the 3 s before it and 1 s after too)
    hist_lines = [line for path in (point / "fio-node1-u1-logs").glob("node1-u1_clat_hist.*.log")
                  for line in path.read_text().splitlines() if line.strip()]
    assert hist_lines and all(":" in field for line in hist_lines
                              for field in line.split(", ")[3:]), hist_lines[:2]
    completions = sum(int(field.split(":")[1]) for line in hist_lines
                      for field in line.split(", ")[3:])
    assert completions >= 0.9 * float(rows[2]["iops"]) * 5, (completions, rows[2]["iops"])
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["backend"] == "lab" and manifest["accelerator"] in ("tcg", "kvm")
    assert manifest["versions"]["kernel"] and manifest["points_done"] == 3
    assert (out / "sim" / "points.csv").exists()        # the simulator's prediction
    assert (out / "plots" / "iops-latency.svg").exists() and (out / "index.html").exists()


def test_exec_returns_the_command_exit_code(smoke_lab):
    result = storlab("exec", smoke_lab, "node1", "--", "sh", "-c", "echo out; echo err >&2; exit 7")
    assert result.returncode == 7
    assert result.stdout == "out\n" and result.stderr == "err\n"


def test_up_on_a_running_lab_refuses(smoke_lab, smoke_topology):
    result = storlab("up", smoke_topology)
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
    for pid in pids:        # gone, or exited and waiting for its reaper (PID 1)
        assert not process.running(pid), f"nbdkit {pid} still running"
    again = storlab("down", smoke_lab)
    assert again.returncode == 1 and f"no lab named '{smoke_lab}'" in again.stderr


BAD_DEVICE_TOPOLOGY = """\
name = "badlab"
[[defaults.devices]]
name = "disk"
plugin = "hdd"
[defaults.devices.params]
size = "1G"
{hdd_param}
[[defaults.devices]]
name = "ram"
plugin = "memory"
[defaults.devices.params]
size = "16M"
allocator = "{allocator}"
[nodes]
count = 2
"""


def test_a_device_that_cannot_start_rolls_the_lab_back(tmp_path):
    """The library accepts every emulated device, nbdkit refuses the memory
    plugin's allocator: node1's disk0 was already serving and is stopped,
    nothing is left. A device the library refuses (rpm out of range) stops
    `up` before anything starts."""
    topology_file = tmp_path / "bad.toml"
    started = libvirt_conn.ensure_daemons()
    try:
        topology_file.write_text(BAD_DEVICE_TOPOLOGY.format(hdd_param='timing = "off"',
                                                            allocator="nosuch"))
        result = storlab("up", str(topology_file), "--accel", "tcg")
        assert result.returncode == 1
        assert 'unknown allocator "nosuch"' in result.stderr     # nbdkit's own message
        assert "Traceback" not in result.stderr
        assert "rolling back" in result.stdout
        assert lab_domains("badlab") == []
        assert not os.path.exists(os.path.join(RUN_BASE, "badlab"))
        topology_file.write_text(BAD_DEVICE_TOPOLOGY.format(hdd_param='rpm = "99999"',
                                                            allocator="sparse"))
        result = storlab("up", str(topology_file), "--accel", "tcg")
        assert (result.returncode, result.stdout) == (1, "")
        assert result.stderr.strip() == (f"storlab up: {topology_file}: node node1 device disk0 "
                                         "(hdd): rpm=99999: out of range 3600..20000")
        assert not os.path.exists(os.path.join(RUN_BASE, "badlab"))
    finally:
        libvirt_conn.stop_daemons(started)


MANY_DISKS_TOPOLOGY = """\
name = "{name}"
boot_timeout_s = 180
[defaults]
vcpus = 1
memory_mib = 512
[[defaults.devices]]
name = "scsi"
plugin = "hdd"
count = 9
[defaults.devices.params]
preset = "sas10k-300g"
size = "16M"
[[defaults.devices]]
name = "sata"
plugin = "hdd"
bus = "sata"
count = 7
[defaults.devices.params]
preset = "sata7200-2t"
size = "16M"
[[defaults.devices]]
name = "virtio"
plugin = "memory"
count = 2
[defaults.devices.params]
size = "16M"
[nodes]
count = 1
"""


def test_every_disk_of_a_node_with_many_reaches_the_guest(tmp_path):
    """More SCSI disks than libvirt puts on one controller by itself (7) and
    more SATA disks than one AHCI controller has ports (6): the guest finds
    each by its serial, as the profile scripts do, each on its own /dev node
    and rotational where it is a disk."""
    lab = f"{LAB}-disks"
    topology_file = tmp_path / "disks.toml"
    topology_file.write_text(MANY_DISKS_TOPOLOGY.format(name=lab))
    names = [f"scsi{k}" for k in range(9)] + [f"sata{k}" for k in range(7)] + ["virtio0", "virtio1"]
    started = libvirt_conn.ensure_daemons()
    try:
        result = storlab("up", str(topology_file), "--accel", "tcg")
        assert result.returncode == 0, result.stdout + result.stderr
        script = (". /usr/lib/storlab/profiles/lib.sh; for name in " + " ".join(names) + "; do "
                  'dev=$(disk_by_serial "$name") || dev=missing; '
                  'echo "$name $dev $(cat /sys/block/${dev#/dev/}/queue/rotational 2>/dev/null)"; '
                  "done")
        result = storlab("exec", lab, "node1", "--", "/bin/sh", "-c", script)
        assert result.returncode == 0, result.stderr
        found = {name: (dev, rotational) for name, dev, *rotational in
                 (line.split() for line in result.stdout.splitlines())}
        assert [name for name in names if found[name][0] == "missing"] == []
        assert len({dev for dev, _ in found.values()}) == len(names)
        assert all(found[name][1] == ["1"] for name in names if not name.startswith("virtio"))
        # a name no disk has stops a profile step at once, in one line naming it
        # (it once went on, in a subshell's exit, to build on the disks it found)
        for step in (["raid.sh", "1", "64", "scsi0", "nosuch"],
                     ["disk-group.sh", "diskgroup", "hybrid", "virtio0", "8", "70", "1", "64",
                      "scsi0", "nosuch"]):
            result = storlab("exec", lab, "node1", "--", "/usr/lib/storlab/profiles/" + step[0],
                             *step[1:])
            assert result.returncode == 1, result.stderr
            assert result.stderr.strip().endswith(
                "storlab-profile: node1: no disk with serial 'nosuch' in this node"), result.stderr
            assert result.stdout == ""
    finally:
        storlab("down", lab)
        libvirt_conn.stop_daemons(started)


STRUCTURE_TOPOLOGY = """\
name = "{name}"
boot_timeout_s = 180
[defaults]
vcpus = 1
memory_mib = 512
[[defaults.devices]]
name = "disk"
plugin = "hdd"
[defaults.devices.params]
preset = "sas10k-300g"
size = "512M"
[nodes]
count = 1
"""

# at half scale: each variant's disk, and the working set, halved
STRUCTURE_SWEEP = """\
name = "structure"
topology = "{topology}"
scale = 2
[workload]
target = "disk0"
rw = "randread"
bs = "4k"
iodepth = 4
size = "32M"
[phases]
ramp_s = 1
duration_s = 2
interval_s = 0
[sweep]
"topology.devices.disk.params.size" = ["512M", "768M"]
"""


def test_a_structural_sweep_builds_a_lab_per_topology(tmp_path):
    """A swept topology key: each value's lab is brought up from its own
    topology file in the results, runs its points and goes down before the
    next one comes up; the guest's disk has each variant's size, at the
    sweep's scale (1/2), as has its working set; nothing is left afterwards."""
    lab = f"{LAB}-structure"
    (tmp_path / "base.toml").write_text(STRUCTURE_TOPOLOGY.format(name=lab))
    sweep_file = tmp_path / "sweep.toml"
    sweep_file.write_text(STRUCTURE_SWEEP.format(topology=tmp_path / "base.toml"))
    out = tmp_path / "results"
    started = libvirt_conn.ensure_daemons()
    try:
        result = storlab("sweep", str(sweep_file), "--out", str(out), timeout=900)
        assert result.returncode == 0, result.stderr
        assert result.stderr.count(f"bringing lab '{lab}' up") == 2, result.stderr
        assert result.stderr.count(f"taking lab '{lab}' down") == 2, result.stderr
        assert lab_domains(lab) == []
        assert not os.path.exists(os.path.join(RUN_BASE, lab))
        with open(out / "points.csv", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        assert [r["topology.devices.disk.params.size"] for r in rows] == ["512M", "768M"]
        for row, mib in zip(rows, (256, 384)):
            assert float(row["iops"]) > 0
            window = json.loads((out / "points" / f"{int(row['point']):03d}" /
                                 "device-node1-disk0.json").read_text())
            assert window["after"]["devices"][0]["capacity_bytes"] == mib << 20
            job = (out / "points" / f"{int(row['point']):03d}" / "job-node1-u1.fio").read_text()
            assert "size=16M" in job.split(), job
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["scale"] == 2
        assert [s["topology"] for s in manifest["structures"]] == [
            str(out / "structures" / f"topology-0{i}.toml") for i in (0, 1)]
        with open(out / "sim" / "points.csv", encoding="utf-8") as f:
            assert len(list(csv.DictReader(f))) == 2            # the prediction, per topology
    finally:
        storlab("down", lab)
        libvirt_conn.stop_daemons(started)
