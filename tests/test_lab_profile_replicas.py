"""Lab integration for replicated volumes and NFS: md RAID-1 over NVMe/TCP
copies on each node's peers, NFS on top, fio verify through it, a sweep on
every node's own share, and the node serving a volume failing over and
rejoining (a copy's node for the other volume: it resyncs)."""
import json
import os
import time

import pytest

from storlab_cli.lab import libvirt_conn

from lab_profile_rig import (TOPOLOGIES, Lab, at_once, device_writes, fio_verify, guest,
                             kernel_log_on_failure, replica_md, resynced_and_checked,
                             short_sweep, status, storage, storlab, verify_only)


# ----------------------------------------------------------- replicas and NFS

@pytest.fixture(scope="module")
def replica_lab():
    with Lab(os.path.join(TOPOLOGIES, "profile-replicas.toml"), "profile-replicas") as lab:
        yield lab.name




def volume_state(lab, volume):
    return next(v for v in status(lab)["profile"]["replicas"] if v["volume"] == volume)


def nfs_sources(lab, node):
    return {m["path"]: (m["type"], m["source"]) for m in storage(lab, node)["mounts"]
            if m["path"].startswith("/mnt/storlab/")}




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
    # two clients, two servers, at once (each guest has its own vCPU)
    at_once(lambda: fio_verify(replica_lab, "node2", "/mnt/storlab/node1/node2.fio"),
            lambda: fio_verify(replica_lab, "node3", "/mnt/storlab/node2/node3.fio"))
    # every other node sees the same file systems
    assert "node2.fio" in guest(replica_lab, "node3", "ls", "/mnt/storlab/node1")
    assert "node3.fio" in guest(replica_lab, "node1", "ls", "/mnt/storlab/node2")




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


def test_primary_failover_and_rejoin(replica_lab):
    """node1 serves volume node1 and crashes (its domain destroyed behind
    storlab's back): status says so, `node down` moves the volume to node2
    (the first peer), which then serves both volumes; node1 comes back as a
    peer and resyncs. For volume node2 the same crash is a peer's failure:
    node2 keeps serving it degraded, and node1's copy catches up."""
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
    # what was written through node1 is all there, and the share takes new writes; volume
    # node2 lost a copy (node1's) and keeps serving its share (both shares' I/O at once)
    verify_only(replica_lab, "node3", "/mnt/storlab/node1/node2.fio")
    with kernel_log_on_failure(replica_lab, ["node2", "node3"]):
        at_once(lambda: fio_verify(replica_lab, "node3", "/mnt/storlab/node1/failover.fio"),
                lambda: fio_verify(replica_lab, "node3", "/mnt/storlab/node2/degraded.fio"))
    assert replica_md(replica_lab, "node2", "md2")["degraded"] == 1
    text = storlab("status", replica_lab).stdout
    assert "replicated volume node1: /dev/md1 served by node2, home node1" in text
    result = storlab("node", replica_lab, "node1", "up")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "runs without" not in result.stdout, result.stdout     # every copy back
    assert "node1: copy of volume node1 re-added on node2" in result.stdout
    md, _ = resynced_and_checked(replica_lab, [("node2", "md1", 3), ("node2", "md2", 3)],
                                 time.monotonic() + 300)
    assert sorted(m["state"] for m in md["members"]) == \
        ["in sync", "in sync,write mostly", "in sync,write mostly"]
    # node1 is a client of its old share now, and reads what was written without it
    assert nfs_sources(replica_lab, "node1")["/mnt/storlab/node1"][0].startswith("nfs")
    at_once(lambda: verify_only(replica_lab, "node1", "/mnt/storlab/node1/failover.fio"),
            lambda: verify_only(replica_lab, "node1", "/mnt/storlab/node2/degraded.fio"))
    assert volume_state(replica_lab, "node1")["primary"] == "node2"
    print(f"failover, rejoin and resync: {time.monotonic() - started:.1f} s")
