"""Lab integration for storage profiles: `storlab up` builds each profile in
real guests (TCG, libvirt, nbdkit), status shows it, fio verifies data on the
volumes it made, and a replica node that dies and comes back resyncs.
One lab per profile, shared by that profile's tests; each is torn down."""
import json
import os
import subprocess
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STORLAB = os.path.join(ROOT, "scripts", "storlab")
TOPOLOGIES = os.path.join(ROOT, "topologies")

from storlab_cli import paths
from storlab_cli.lab import libvirt_conn

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


def short_sweep(tmp_path, name, topology_file, workload):
    """Runs a two-point sweep (iodepth 1 and 4; 1 s ramp, 3 s measured) of
    workload (the [workload] table's lines) on the lab of topology_file,
    which is up and stays up; returns the results directory. The
    simulator's prediction runs the same sweep on the cluster model
    (storlab-sim cluster, on the lab's hosts: TCG) in out/sim."""
    sweep_file = tmp_path / "sweep.toml"
    sweep_file.write_text(f'name = "{name}"\n'
                          f'topology = "{os.path.join(TOPOLOGIES, topology_file)}"\n'
                          f"[workload]\n{workload}\n"
                          "[phases]\nramp_s = 1\nduration_s = 3\n[sweep]\niodepth = [1, 4]\n")
    out = tmp_path / "results"
    result = storlab("sweep", str(sweep_file), "--out", str(out), timeout=600)
    assert result.returncode == 0, result.stderr
    assert (out / "sim" / "points.csv").exists()
    assert (out / "index.html").exists()
    return out


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


def test_a_node_outside_the_raid_keeps_its_volumes_on_its_disk(raid_lab):
    """profile.raid.nodes = ["node1"]: node2 builds no md0; its one disk is
    its local volume and holds its own workload volumes."""
    assert storage(raid_lab, "node2")["md"] == []
    entry = status(raid_lab)["profile"]["nodes"]["node2"]
    disk = guest(raid_lab, "node2", "sh", "-c",
                 ". /usr/lib/storlab/profiles/lib.sh; disk_by_serial disk0").strip()
    assert entry["local"] == disk and disk.startswith("/dev/sd")
    assert entry["volumes"] == [f"/dev/storlab/u{u}v{v}" for u in (1, 2) for v in (1, 2)]
    pvs = guest(raid_lab, "node2", "pvs", "--noheadings", "-o", "pv_name,vg_name").split()
    assert pvs == [disk, "storlab"]
    fio_verify(raid_lab, "node2", "/dev/storlab/u1v1")


def test_a_sweep_on_the_profiles_workload_volumes(raid_lab, tmp_path):
    """target = "volumes": each unit's fio drives its own volumes (one worker
    each), both units at once, the simulator's prediction beside it (md and
    LVM modelled by storlab-sim cluster); the lab left up for the other tests."""
    out = short_sweep(tmp_path, "volumes-sweep", "profile-raid.toml",
                      'target = "volumes"\nnodes = ["node1"]\nunits = 2\nrw = "randrw"\n'
                      'bs = "4k"\nsize = "8M"')
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


def replica_md(lab, node, name):
    return next(m for m in storage(lab, node)["md"] if m["name"] == name)


def volume_state(lab, volume):
    return next(v for v in status(lab)["profile"]["replicas"] if v["volume"] == volume)


def nfs_sources(lab, node):
    return {m["path"]: (m["type"], m["source"]) for m in storage(lab, node)["mounts"]
            if m["path"].startswith("/mnt/storlab/")}


def wait_in_sync(lab, node, name, copies, deadline):
    while True:
        md = replica_md(lab, node, name)
        if md["degraded"] == 0 and md["sync_action"] == "idle" and len(md["members"]) == copies:
            break
        assert time.monotonic() < deadline, f"no resync of {name} on {node}: {md}"
        time.sleep(1)
    assert all(m["state"].startswith("in sync") for m in md["members"]), md
    return md


def check_copies_equal(lab, node, name, deadline):
    """md compares every leg block by block."""
    guest(lab, node, "sh", "-c", f"echo check > /sys/block/{name}/md/sync_action")
    while replica_md(lab, node, name)["sync_action"] != "idle":
        assert time.monotonic() < deadline, f"md check of {name} did not finish"
        time.sleep(1)
    assert replica_md(lab, node, name)["mismatch_cnt"] == 0


def verify_only(lab, node, path):
    guest(lab, node, "fio", "--name=reread", f"--filename={path}", "--rw=randwrite", "--bs=4k",
          "--size=8M", "--verify=crc32c", "--verify_only", "--verify_fatal=1",
          "--ioengine=libaio", "--direct=1", "--iodepth=8")


def test_replicated_volumes_have_a_leg_per_copy(replica_lab):
    for node, name in (("node1", "md1"), ("node2", "md2")):
        md = replica_md(replica_lab, node, name)
        assert (md["level"], md["degraded"]) == ("raid1", 0)
        states = sorted(m["state"] for m in md["members"])
        # reads stay on the local copy; the two remote copies are write-mostly
        assert states == ["in sync", "in sync,write mostly", "in sync,write mostly"]
    volumes = status(replica_lab)["profile"]["replicas"]
    assert [(v["volume"], v["device"], v["primary"], v["peers"], v["serving"]) for v in volumes] \
        == [("node1", "/dev/md1", "node1", ["node2", "node3"], True),
            ("node2", "/dev/md2", "node2", ["node3", "node1"], True)]
    # every node sees both shares at the same paths: NFS, or the server's own bind mount
    for node in ("node1", "node2", "node3"):
        mounts = nfs_sources(replica_lab, node)
        assert sorted(mounts) == ["/mnt/storlab/node1", "/mnt/storlab/node2"], mounts
        for volume, device in (("node1", "/dev/md1"), ("node2", "/dev/md2")):
            kind, source = mounts[f"/mnt/storlab/{volume}"]
            if node == volume:
                assert (kind, source) == ("ext4", device)
            else:
                assert kind.startswith("nfs") and source.endswith(f":/export/{volume}")
    text = storlab("status", replica_lab).stdout
    assert "replicated volume node1: /dev/md1 served by node1 (ftt 2, copies on node2, node3)" \
        in text


def test_fio_verify_over_nfs(replica_lab):
    fio_verify(replica_lab, "node2", "/mnt/storlab/node1/node2.fio")
    fio_verify(replica_lab, "node3", "/mnt/storlab/node2/node3.fio")
    # every other node sees the same file systems
    assert "node2.fio" in guest(replica_lab, "node3", "ls", "/mnt/storlab/node1")
    assert "node3.fio" in guest(replica_lab, "node1", "ls", "/mnt/storlab/node2")


def device_writes(path):
    """Writes a device served in a point's measured window (storlab-stats)."""
    doc = json.loads(path.read_text())
    count = [snap["devices"][0]["ops"]["write"]["count"] for snap in (doc["before"], doc["after"])]
    return count[1] - count[0]


def test_a_sweep_on_each_nodes_own_share(replica_lab, tmp_path):
    """target = "share": node1 and node2 each drive files on their own
    replicated volume through its mount (the server's bind mount), both at
    once; every copy's disk is counted, node3's too (it holds a copy of both
    volumes and serves none)."""
    out = short_sweep(tmp_path, "share-sweep", "profile-replicas.toml",
                      'target = "share"\nnodes = ["node1", "node2"]\nworkers = 2\n'
                      'rw = "randwrite"\nbs = "4k"\nsize = "4M"')
    for point in ("000", "001"):
        directory = out / "points" / point
        for node in ("node1", "node2"):
            job = (directory / f"job-{node}-u1.fio").read_text()
            for worker in (1, 2):
                assert f"filename=/mnt/storlab/{node}/{node}-u1w{worker}.fio" in job
            fio = json.loads((directory / f"fio-{node}-u1.json").read_text())
            assert fio["jobs"][0]["error"] == 0 and fio["jobs"][0]["write"]["total_ios"] > 0
            assert device_writes(directory / f"device-{node}-disk0.json") > 0
        assert device_writes(directory / "device-node3-disk0.json") > 0


def test_replica_node_failure_and_resync(replica_lab):
    """node3 holds a copy of both volumes and serves none."""
    started = time.monotonic()
    assert storlab("node", replica_lab, "node3", "down").returncode == 0
    # both volumes keep serving on the survivors: writes complete and verify
    fio_verify(replica_lab, "node2", "/mnt/storlab/node1/degraded.fio")
    fio_verify(replica_lab, "node1", "/mnt/storlab/node2/degraded.fio")
    for node, name in (("node1", "md1"), ("node2", "md2")):
        md = replica_md(replica_lab, node, name)
        assert md["degraded"] == 1, md
    result = storlab("node", replica_lab, "node3", "up")
    assert result.returncode == 0, result.stdout + result.stderr
    deadline = time.monotonic() + 300
    for node, name in (("node1", "md1"), ("node2", "md2")):
        wait_in_sync(replica_lab, node, name, 3, deadline)
        check_copies_equal(replica_lab, node, name, deadline)
    # the returned node mounts the exports again and reads what was written without it
    verify_only(replica_lab, "node3", "/mnt/storlab/node1/degraded.fio")
    verify_only(replica_lab, "node3", "/mnt/storlab/node2/degraded.fio")
    print(f"\npeer failure and resync: {time.monotonic() - started:.1f} s")


def test_primary_failover_and_rejoin(replica_lab):
    """node1 serves volume node1 and crashes (its domain destroyed behind
    storlab's back): status says so, `node down` moves the volume to node2
    (the first peer), which then serves both volumes; node1 comes back as a
    peer and resyncs."""
    conn = libvirt_conn.connect()
    conn.lookupByName(f"storlab-{replica_lab}-node1").destroy()
    assert "node1 is not running: `storlab node profile-replicas node1 down` fails volume " \
        "node1 over" in storlab("status", replica_lab).stdout
    started = time.monotonic()
    result = storlab("node", replica_lab, "node1", "down")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "node node1 of lab 'profile-replicas' was already down" in result.stdout
    assert "volume node1 failed over from node1 to node2" in result.stdout
    print(f"\nfailover of volume node1: {time.monotonic() - started:.1f} s")
    volume = volume_state(replica_lab, "node1")
    assert (volume["primary"], volume["peers"], volume["home"], volume["serving"]) == \
        ("node2", ["node3", "node1"], "node1", True)
    md = replica_md(replica_lab, "node2", "md1")
    assert (md["level"], md["degraded"], len(md["members"])) == ("raid1", 1, 2), md
    # node2's copy became the local leg: no longer write-mostly; node3's still is
    assert sorted(m["state"] for m in md["members"]) == ["in sync", "in sync,write mostly"]
    # node3 now mounts the share from node2, node2 has it locally
    assert nfs_sources(replica_lab, "node3")["/mnt/storlab/node1"][1].endswith(":/export/node1")
    assert nfs_sources(replica_lab, "node2")["/mnt/storlab/node1"] == ("ext4", "/dev/md1")
    # what was written through node1 is all there, and the share takes new writes
    verify_only(replica_lab, "node3", "/mnt/storlab/node1/node2.fio")
    fio_verify(replica_lab, "node3", "/mnt/storlab/node1/failover.fio")
    text = storlab("status", replica_lab).stdout
    assert "replicated volume node1: /dev/md1 served by node2, home node1" in text
    result = storlab("node", replica_lab, "node1", "up")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "node1: copy of volume node1 re-added on node2" in result.stdout
    deadline = time.monotonic() + 300
    md = wait_in_sync(replica_lab, "node2", "md1", 3, deadline)
    assert sorted(m["state"] for m in md["members"]) == \
        ["in sync", "in sync,write mostly", "in sync,write mostly"]
    wait_in_sync(replica_lab, "node2", "md2", 3, deadline)
    check_copies_equal(replica_lab, "node2", "md1", deadline)
    # node1 is a client of its old share now, and reads what was written without it
    assert nfs_sources(replica_lab, "node1")["/mnt/storlab/node1"][0].startswith("nfs")
    verify_only(replica_lab, "node1", "/mnt/storlab/node1/failover.fio")
    assert volume_state(replica_lab, "node1")["primary"] == "node2"
    print(f"failover, rejoin and resync: {time.monotonic() - started:.1f} s")


# ------------------------------------------------------------ storage policies

@pytest.fixture(scope="module")
def policy_lab():
    with Lab(os.path.join(TOPOLOGIES, "profile-policy.toml"), "profile-policy") as lab:
        yield lab.name


def disk_ops(lab):
    """Every node's disk0 reads and writes so far (the plugin's own counters)."""
    ops = {}
    for n in range(1, 5):
        stats = subprocess.run([paths.stats_tool(), os.path.join(RUN_BASE, lab,
                                                                 f"node{n}-disk0.stats")],
                               capture_output=True, text=True, timeout=60, check=True)
        device = json.loads(stats.stdout)["devices"][0]["ops"]
        ops[f"node{n}"] = (device["read"]["count"], device["write"]["count"])
    return ops


def test_policy_volumes_are_raid5_over_a_piece_on_every_node(policy_lab):
    for home, md in (("node1", "md100"), ("node2", "md100")):
        array = replica_md(policy_lab, home, md)
        assert array["level"] == "raid5" and array["degraded"] == 0, array
        assert len(array["members"]) == 4
        assert guest(policy_lab, home, "readlink", "/dev/storlab-policy/u1v1").strip() == f"/dev/{md}"
    for n in range(1, 5):
        tables = guest(policy_lab, f"node{n}", "dmsetup", "table")
        # a checksummed piece of each of the two volumes, in bitmap mode
        assert tables.count(" integrity ") == 2 and " B " in tables, tables
    fio_verify(policy_lab, "node1", "/dev/storlab-policy/u1v1", size="16M",
               extra=("--iodepth=32",))


def test_a_second_set_beside_it_is_a_mirror(policy_lab):
    """[profile.volume_sets.mirror]: node3's volume mirrored on node3 and
    node4 (the next node), md101 (its home's second policy array), reads
    from node3's own copy."""
    array = replica_md(policy_lab, "node3", "md101")
    assert array["level"] == "raid1" and len(array["members"]) == 2 and array["degraded"] == 0
    assert guest(policy_lab, "node3", "readlink",
                 "/dev/storlab-policy/mirror-u1v1").strip() == "/dev/md101"
    fio_verify(policy_lab, "node3", "/dev/storlab-policy/mirror-u1v1", size="8M",
               extra=("--iodepth=32",))


def test_a_sweep_on_a_volume_set(policy_lab, tmp_path):
    """workload.volume_set = "mirror": node3's fio drives its mirrored
    volume; both copies' disks take the writes (node4's over NVMe/TCP), and
    the simulator's prediction builds the same policy."""
    out = short_sweep(tmp_path, "policy-sweep", "profile-policy.toml",
                      'target = "volumes"\nnodes = ["node3"]\nvolume_set = "mirror"\n'
                      'rw = "randwrite"\nbs = "4k"\nsize = "8M"')
    for point in ("000", "001"):
        directory = out / "points" / point
        assert "filename=/dev/storlab-policy/mirror-u1v1" in \
            (directory / "job-node3-u1.fio").read_text()
        fio = json.loads((directory / "fio-node3-u1.json").read_text())
        assert fio["jobs"][0]["error"] == 0 and fio["jobs"][0]["write"]["total_ios"] > 0
        assert device_writes(directory / "device-node3-disk0.json") > 0
        assert device_writes(directory / "device-node4-disk0.json") > 0
    spec = (out / "sim" / "points" / "000" / "cluster.spec").read_text()
    assert "volume node3 mirror-u1v1 16M method=mirror on=node3,node4" in spec


def test_a_small_write_reads_and_writes_data_and_parity(policy_lab):
    """2000 random 4 KiB writes on node1's volume (24 MiB, 512 KiB chunks):
    md's read-modify-write reads the old data and parity (2 reads; fewer
    when its stripe cache still holds them) and writes both (2 writes);
    dm-integrity keeps the new tags in its buffers until its bitmap flush
    (every 10 s) or a FLUSH, so the checksums add only a few writes, as
    md's own bitmap does."""
    before = disk_ops(policy_lab)
    guest(policy_lab, "node1", "fio", "--name=rmw", "--filename=/dev/storlab-policy/u1v1",
          "--ioengine=libaio", "--direct=1", "--rw=randwrite", "--bs=4k", "--size=24M",
          "--io_size=8000k", "--iodepth=8", "--randrepeat=0", "--output-format=terse")
    after = disk_ops(policy_lab)
    reads = sum(after[n][0] - before[n][0] for n in after)
    writes = sum(after[n][1] - before[n][1] for n in after)
    print(f"\nRAID-5 3+1 with checksums: 2000 guest writes -> {writes} device writes, "
          f"{reads} device reads")
    assert 2 * 2000 <= writes <= 2 * 2000 * 1.05, writes
    assert 2000 <= reads <= 2 * 2000, reads
    # every node holds a piece: all four disks took writes
    assert all(after[n][1] > before[n][1] for n in after)


def test_a_node_down_degrades_the_arrays_and_io_goes_on(policy_lab):
    # what node3's mirror holds before it goes down (the sweep above wrote
    # over the earlier verify data): it must come back with node3
    fio_verify(policy_lab, "node3", "/dev/storlab-policy/mirror-u1v1", size="8M")
    started = time.monotonic()
    assert storlab("node", policy_lab, "node3", "down").returncode == 0
    for home in ("node1", "node2"):
        fio_verify(policy_lab, home, "/dev/storlab-policy/u1v1", size="8M")
        assert replica_md(policy_lab, home, "md100")["degraded"] == 1
    result = storlab("node", policy_lab, "node3", "up")
    assert result.returncode == 0, result.stdout + result.stderr
    deadline = time.monotonic() + 300
    for home in ("node1", "node2"):
        wait_in_sync(policy_lab, home, "md100", 4, deadline)
        check_copies_equal(policy_lab, home, "md100", deadline)      # parity checked
        verify_only(policy_lab, home, "/dev/storlab-policy/u1v1")
    # node3 came back as the home of its mirror too: reassembled over its own
    # copy and node4's, holding what was written before it went down
    wait_in_sync(policy_lab, "node3", "md101", 2, deadline)
    verify_only(policy_lab, "node3", "/dev/storlab-policy/mirror-u1v1")
    print(f"\nRAID-5 piece lost and resynced: {time.monotonic() - started:.1f} s")
