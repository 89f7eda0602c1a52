"""Lab integration for storage profiles: `storlab up` builds each profile in
real guests (TCG, libvirt, nbdkit), status shows it, fio verifies data on the
volumes it made, and a replica node that dies and comes back resyncs.
One lab per profile, shared by that profile's tests; each is torn down."""
import json
import os
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STORLAB = os.path.join(ROOT, "scripts", "storlab")
TOPOLOGIES = os.path.join(ROOT, "topologies")
sys.path.insert(0, os.path.join(ROOT, "scripts"))

from storlab_cli import libvirt_conn  # noqa: E402

RUN_BASE = os.environ.get("STORLAB_RUN_DIR", "/run/storlab")


def storlab(*args, timeout=900):
    return subprocess.run(["/usr/bin/python3", STORLAB, *args], capture_output=True,
                          text=True, timeout=timeout, check=False)


def guest(lab, node, *argv, timeout=600):
    result = storlab("exec", lab, node, "--", *argv, timeout=timeout)
    assert result.returncode == 0, f"{argv} on {node}: {result.stdout}{result.stderr}"
    return result.stdout


def status(lab):
    result = storlab("status", lab, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def storage(lab, node):
    return next(n for n in status(lab)["nodes"] if n["node"] == node)["storage"]


def fio_verify(lab, node, filename, size="8M", extra=()):
    """Random 4k writes with crc32c, every block read back and checked."""
    out = guest(lab, node, "fio", "--name=verify", f"--filename={filename}",
                "--ioengine=libaio", "--direct=1", "--rw=randwrite", "--bs=4k",
                f"--size={size}", "--iodepth=8", "--verify=crc32c", "--do_verify=1",
                "--verify_fatal=1", "--output-format=json", *extra)
    job = json.loads(out[out.index("{"):])["jobs"][0]
    blocks = int(size[:-1]) * 256
    assert job["error"] == 0
    assert job["write"]["total_ios"] == blocks and job["read"]["total_ios"] == blocks
    return job


class Lab:
    """A lab brought up from a topology file, always torn down."""

    def __init__(self, path, name):
        self.path, self.name = path, name

    def __enter__(self):
        self.daemons = libvirt_conn.ensure_daemons()
        started = time.monotonic()
        result = storlab("up", self.path, "--accel", "tcg")
        self.up_s = time.monotonic() - started
        print(f"\n{self.name}: up with its profile in {self.up_s:.1f} s")
        if result.returncode != 0:
            self.__exit__()
            pytest.fail(f"up {self.name}: {result.stdout}{result.stderr}")
        return self

    def __exit__(self, *exc):
        down = storlab("down", self.name)
        libvirt_conn.stop_daemons(self.daemons)
        assert down.returncode == 0 or "no lab named" in down.stderr, down.stderr
        assert not os.path.exists(os.path.join(RUN_BASE, self.name))


# ----------------------------------------------------------------- local RAID

@pytest.fixture(scope="module")
def raid_lab():
    with Lab(os.path.join(TOPOLOGIES, "profile-raid.toml"), "profile-raid") as lab:
        yield lab.name


def test_raid_is_built_as_the_file_says(raid_lab):
    md = storage(raid_lab, "node1")["md"]
    assert [(m["name"], m["level"], m["degraded"]) for m in md] == [("md0", "raid10", 0)]
    assert md[0]["array_state"] in ("clean", "active")
    assert [m["state"] for m in md[0]["members"]] == ["in sync"] * 4
    assert guest(raid_lab, "node1", "cat", "/sys/block/md0/md/chunk_size").strip() == "65536"
    report = status(raid_lab)
    assert report["profile"]["nodes"]["node1"]["local"] == "/dev/md0"


def test_workload_volumes_are_preallocated_and_written(raid_lab):
    volumes = status(raid_lab)["profile"]["nodes"]["node1"]["volumes"]
    assert volumes == [f"/dev/storlab/u{u}v{v}" for u in (1, 2) for v in (1, 2)]
    for volume in volumes:
        assert guest(raid_lab, "node1", "blockdev", "--getsize64", volume).strip() == str(16 << 20)
        # written once: its last MiB is not the zeros a fresh disk reads as
        out = storlab("exec", raid_lab, "node1", "--", "sh", "-c",
                      f"dd if={volume} bs=1M skip=15 count=1 2>/dev/null | cmp -s - /dev/zero"
                      " -n 1048576")
        assert out.returncode == 1, f"{volume} reads zeros: it was not preconditioned"


def test_fio_verify_on_a_raid_volume(raid_lab):
    fio_verify(raid_lab, "node1", "/dev/storlab/u2v2")


def test_a_sweep_on_the_profiles_workload_volumes(raid_lab, tmp_path):
    """target = "volumes": each unit's fio drives its own volumes (one worker
    each), both units at once; no simulator prediction (md and LVM are not
    modelled), the lab left up for the other tests."""
    sweep_file = tmp_path / "sweep.toml"
    sweep_file.write_text(f"""
name = "volumes-sweep"
topology = "{os.path.join(TOPOLOGIES, 'profile-raid.toml')}"
[workload]
target = "volumes"
units = 2
rw = "randrw"
bs = "4k"
size = "8M"
[phases]
ramp_s = 1
duration_s = 3
[sweep]
iodepth = [1, 4]
""")
    out = tmp_path / "results"
    result = storlab("sweep", str(sweep_file), "--out", str(out), timeout=600)
    assert result.returncode == 0, result.stderr
    with open(out / "points.csv", encoding="utf-8") as f:
        header, *rows = f.read().splitlines()
    columns = header.split(",")
    assert [r.split(",")[columns.index("iodepth")] for r in rows] == ["1", "4"]
    assert all(r.split(",")[columns.index("units")] == "2" for r in rows)
    for point in ("000", "001"):
        for unit in (1, 2):
            job = (out / "points" / point / f"job-node1-u{unit}.fio").read_text()
            assert f"filename=/dev/storlab/u{unit}v1" in job
            assert f"filename=/dev/storlab/u{unit}v2" in job
            fio = json.loads((out / "points" / point / f"fio-node1-u{unit}.json").read_text())
            assert fio["jobs"][0]["error"] == 0
    assert not (out / "sim").exists()
    assert (out / "index.html").exists()


# ----------------------------------------------------------------- disk groups

def disk_group_topology(tmp_path_factory, mode):
    text = open(os.path.join(TOPOLOGIES, "profile-hybrid.toml"), encoding="utf-8").read()
    if mode == "all-flash":
        text = (text.replace('name = "profile-hybrid"', 'name = "profile-allflash"')
                .replace('mode = "hybrid"', 'mode = "all-flash"')
                .replace("read_cache_percent = 70\n", ""))
    path = tmp_path_factory.mktemp(mode) / f"{mode}.toml"
    path.write_text(text)
    return str(path), "profile-hybrid" if mode == "hybrid" else "profile-allflash"


@pytest.fixture(scope="module", params=["hybrid", "all-flash"])
def disk_group_lab(request, tmp_path_factory):
    path, name = disk_group_topology(tmp_path_factory, request.param)
    with Lab(path, name) as lab:
        yield request.param, lab.name


def test_disk_group_caches_and_verifies(disk_group_lab):
    mode, lab = disk_group_lab
    before = {c["kind"]: c for c in storage(lab, "node1")["caches"]}
    if mode == "hybrid":
        assert set(before) == {"dm-cache", "dm-writecache"}
        read_cache = before["dm-cache"]
        assert read_cache["mode"] == "writethrough"
        # 70 % of the 56 MiB cache: a 36 MiB cache volume (4 MiB extents), part of it
        # dm-cache's metadata
        assert 24 << 20 <= read_cache["total_blocks"] * read_cache["block_bytes"] <= 36 << 20
        assert before["dm-writecache"]["total_blocks"] * 4096 <= 20 << 20
    else:
        assert set(before) == {"dm-writecache"}
        assert before["dm-writecache"]["total_blocks"] * 4096 > 40 << 20
    # the capacity LV (hidden as data_corig under the read cache) is striped over both disks
    lines = guest(lab, "node1", "lvs", "-a", "--noheadings", "-o", "lv_name,stripes", "dg")
    stripes = dict(line.replace("[", "").replace("]", "").split()
                   for line in lines.splitlines() if line.strip())
    assert stripes["data_corig" if mode == "hybrid" else "data"] == "2"
    fio_verify(lab, "node1", "/dev/storlab/u1v2")
    after = {c["kind"]: c for c in storage(lab, "node1")["caches"]}
    assert after["dm-writecache"]["error"] == 0
    assert after["dm-writecache"]["dirty_blocks"] > 0          # writes land in the buffer


# ----------------------------------------------------------- replicas and NFS

@pytest.fixture(scope="module")
def replica_lab():
    with Lab(os.path.join(TOPOLOGIES, "profile-replicas.toml"), "profile-replicas") as lab:
        yield lab.name


def replica_md(lab):
    return next(m for m in storage(lab, "node1")["md"] if m["name"] == "md1")


def test_replicated_volume_has_a_leg_per_copy(replica_lab):
    md = replica_md(replica_lab)
    assert (md["level"], md["degraded"]) == ("raid1", 0)
    states = sorted(m["state"] for m in md["members"])
    assert states == ["in sync", "in sync,write mostly", "in sync,write mostly"]
    report = status(replica_lab)
    assert report["profile"]["replica"] == {"primary": "node1", "peers": ["node2", "node3"],
                                            "ftt": 2, "device": "/dev/md1"}
    for node in ("node2", "node3"):
        mounts = storage(replica_lab, node)["mounts"]
        assert [m["path"] for m in mounts if m["type"].startswith("nfs")] == ["/mnt/storlab"]


def test_fio_verify_over_nfs(replica_lab):
    fio_verify(replica_lab, "node2", "/mnt/storlab/node2.fio")
    # the other client sees the same file system
    assert "node2.fio" in guest(replica_lab, "node3", "ls", "/mnt/storlab")


def test_replica_node_failure_and_resync(replica_lab):
    started = time.monotonic()
    assert storlab("node", replica_lab, "node3", "down").returncode == 0
    # the volume keeps serving on the survivors: writes complete and verify
    fio_verify(replica_lab, "node2", "/mnt/storlab/degraded.fio")
    md = replica_md(replica_lab)
    assert md["degraded"] == 1
    assert sum(m["state"].startswith("faulty") for m in md["members"]) <= 1
    result = storlab("node", replica_lab, "node3", "up")
    assert result.returncode == 0, result.stdout + result.stderr
    deadline = time.monotonic() + 300
    while True:
        md = replica_md(replica_lab)
        if md["degraded"] == 0 and md["sync_action"] == "idle":
            break
        assert time.monotonic() < deadline, f"no resync: {md}"
        time.sleep(1)
    assert len(md["members"]) == 3
    assert all(m["state"].startswith("in sync") for m in md["members"])
    # every leg holds the same data: md compares them block by block
    guest(replica_lab, "node1", "sh", "-c", "echo check > /sys/block/md1/md/sync_action")
    while replica_md(replica_lab)["sync_action"] != "idle":
        assert time.monotonic() < deadline, "md check did not finish"
        time.sleep(1)
    assert replica_md(replica_lab)["mismatch_cnt"] == 0
    # the returned node mounts the export again and reads what was written without it
    guest(replica_lab, "node3", "fio", "--name=reread", "--filename=/mnt/storlab/degraded.fio",
          "--rw=randwrite", "--bs=4k", "--size=8M", "--verify=crc32c", "--verify_only",
          "--verify_fatal=1", "--ioengine=libaio", "--direct=1", "--iodepth=8")
    print(f"\nfailover and resync: {time.monotonic() - started:.1f} s")
