"""Lab integration for storage policies: workload volumes RAID-5 3+1 across
four nodes with checksums and a mirrored set beside them, fio verify at
depth 32, the device I/Os of a small write counted against the formula (for
RAID-5 and for the mirror), a sweep on a volume set, and a node going down
during I/O and coming back; snapshot chains of depth 3 of both mechanisms
verified point by point, and a sweep's snapshot event."""
import json
import os
import subprocess
import time

import pytest

from storlab_cli.lab import state as lab_state

from lab_profile_rig import (STORLAB, TOPOLOGIES, Lab, at_once, device_writes, disk_ops,
                             fio_verify, guest, kernel_log_on_failure, md_arrays, replica_md,
                             resynced_and_checked, short_sweep, storlab, verify_only)


# ------------------------------------------------------------ storage policies

# dm-integrity devices a node holds: a piece of node1's and of node2's RAID-5
# volume on each, a copy of node3's mirror on node3 and node4
CHECKSUMMED = {"node1": 2, "node2": 2, "node3": 3, "node4": 3}

@pytest.fixture(scope="module")
def policy_lab():
    with Lab(os.path.join(TOPOLOGIES, "profile-policy.toml"), "profile-policy") as lab:
        yield lab.name




def test_the_devices_keep_their_data_in_the_labs_files(policy_lab):
    """device_data = "disk": each device serves a sparse file of its own in
    the lab's data directory, root's only, with file-sync=off; what the
    profile wrote is in the files, not in nbdkit's memory."""
    data_dir = lab_state.data_dir(policy_lab)
    assert os.stat(data_dir).st_mode & 0o777 == 0o700
    state = json.loads(open(lab_state.state_path(policy_lab), encoding="utf-8").read())
    assert state["data_dirs"] == {"local": data_dir}
    for device in state["devices"]:
        path = os.path.join(data_dir, f"{device['node']}-{device['device']}.data")
        assert os.path.getsize(path) == 256 << 20
        assert os.stat(path).st_blocks * 512 >= 8 << 20, path    # its volumes' pieces
        pid = int(open(device["pidfile"], encoding="ascii").read())
        argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        assert f"file={path}".encode() in argv and b"file-sync=off" in argv
        resident_kib = next(int(line.split()[1]) for line in
                            open(f"/proc/{pid}/status", encoding="ascii")
                            if line.startswith("VmRSS:"))
        assert resident_kib < 64 * 1024, (device, resident_kib)


def test_policy_volumes_are_raid5_over_a_piece_on_every_node(policy_lab):
    for home, md in (("node1", "md100"), ("node2", "md100")):
        array = replica_md(policy_lab, home, md)
        assert array["level"] == "raid5" and array["degraded"] == 0, array
        assert len(array["members"]) == 4
        assert guest(policy_lab, home, "readlink", "/dev/storlab-policy/u1v1").strip() == f"/dev/{md}"
    for n in range(1, 5):
        tables = guest(policy_lab, f"node{n}", "dmsetup", "table")
        # a checksummed piece of each of the two volumes, in bitmap mode (and
        # on node3 and node4 a copy of node3's checksummed mirror)
        assert tables.count(" integrity ") == CHECKSUMMED[f"node{n}"], tables
        assert " B " in tables, tables
    fio_verify(policy_lab, "node1", "/dev/storlab-policy/u1v1", size="8M",
               extra=("--iodepth=32",))


def test_every_block_of_a_new_component_reads_back_and_the_copies_agree(policy_lab):
    """A new component is not written end to end (it reads as zeros): under
    dm-integrity it was discarded once, so a block the volume never wrote
    (md's own areas, a piece's tail) reads without a checksum error; the
    arrays' legs (RAID-5 data and parity, the mirror's copies) agree."""
    for n in range(1, 5):
        node = f"node{n}"
        names = guest(policy_lab, node, "sh", "-c",
                      "ls /dev/mapper | grep '^i-'").split()
        assert len(names) == CHECKSUMMED[node], (node, names)
        for name in names:
            # the whole device, past any volume's data: a tag never computed is an error
            guest(policy_lab, node, "dd", f"if=/dev/mapper/{name}", "of=/dev/null", "bs=1M",
                  "iflag=direct")
            status = guest(policy_lab, node, "dmsetup", "status", name).split()
            assert status[2] == "integrity" and status[3] == "0", (node, name, status)
    # a new mirror's copies and a new RAID-5 volume's pieces were written
    # where they lie (the same bytes on each holder, through each one's
    # dm-integrity, so the dd above read them with their checksums), not
    # left as zeros: every MiB of node3's mirrored volume holds data, and of
    # node1's RAID-5 volume past the 8 MiB fio wrote above; md's check below
    # finds the copies equal and the parity right (and node2's and node4's)
    for node, md, first, count in (("node3", "md101", 0, 16), ("node1", "md100", 8, 16)):
        zero_mib, *sums = guest(policy_lab, node, "sh", "-c", (
            f"head -c 1048576 /dev/zero | md5sum; i={first}; while [ $i -lt {first + count} ]; "
            f"do dd if=/dev/{md} bs=1M skip=$i count=1 iflag=direct 2>/dev/null | md5sum; "
            "i=$((i + 1)); done")).split("\n")[:count + 1]
        assert len(sums) == count and zero_mib not in sums, (node, md, zero_mib, sums)
    resynced_and_checked(policy_lab, [("node1", "md100", 4), ("node2", "md100", 4),
                                      ("node3", "md101", 2), ("node4", "md102", 2)],
                         time.monotonic() + 300)


def test_a_second_set_beside_it_is_a_mirror(policy_lab):
    """[profile.volume_sets.mirror]: node3's volume mirrored on node3 and
    node4 (the next node), md101 (its home's second policy array), each
    copy checksummed, reads from node3's own copy."""
    array = replica_md(policy_lab, "node3", "md101")
    assert array["level"] == "raid1" and len(array["members"]) == 2 and array["degraded"] == 0
    assert guest(policy_lab, "node3", "dmsetup", "table",
                 "i-c-node3-mirror-u1v1").split()[2] == "integrity"
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


def test_a_mirrored_write_lands_on_every_copy(policy_lab):
    """1000 random 4 KiB writes on node3's mirrored volume (ftt 1): a device
    write on each of its two copies' disks per guest write, node3's own and
    node4's over NVMe/TCP (md's bitmap and dm-integrity's tags add a few),
    and at most a few reads (dm-integrity reading a block of its tags into
    its buffers: a block holds the tags of 4 MiB of the copy)."""
    before = disk_ops(policy_lab)
    guest(policy_lab, "node3", "fio", "--name=mirror",
          "--filename=/dev/storlab-policy/mirror-u1v1", "--ioengine=libaio", "--direct=1", "--rw=randwrite", "--bs=4k", "--size=16M",
          "--io_size=4000k", "--iodepth=8", "--randrepeat=0", "--output-format=terse")
    after = disk_ops(policy_lab)
    writes = {n: after[n][1] - before[n][1] for n in after}
    reads = sum(after[n][0] - before[n][0] for n in ("node3", "node4"))
    print(f"\nmirror, ftt 1: 1000 guest writes -> {writes['node3']} + {writes['node4']} "
          f"device writes, {reads} device reads")
    for copy in ("node3", "node4"):
        assert 1000 <= writes[copy] <= 1000 * 1.05, writes
    assert reads <= 2 * 8, reads


# ------------------------------------------------------------------ snapshots

def snapshot(lab, volume, *args):
    result = storlab("snapshot", lab, "node4", volume, *args)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


# A pattern is 1 MiB of 4 KiB blocks, each its name's byte and the block's
# offset (fio's verify=pattern with %o), so a check tells pattern a from a
# pattern d written over it at the same offset: crc32c verify would not (it
# checks that a block is some fio block of that offset, whatever run wrote it).
FIO_1M = ["--ioengine=libaio", "--direct=1", "--thread", "--rw=randwrite", "--bs=4k",
          "--size=1M", "--verify=pattern", "--output-format=json"]


def fio_jobs(lab, options, jobs):
    """One fio run on node4 with a job per (path, name, offset), each its
    name's pattern (jobs run at once); returns each job's error code, in
    order (0: its whole region written or checked)."""
    argv = ["fio"] + FIO_1M + options
    for i, (path, name, offset) in enumerate(jobs):
        argv += [f"--name={name}{i}", f"--filename={path}", f"--offset={offset}",
                 f"--verify_pattern=0x{ord(name):02x}%o"]
    result = storlab("exec", lab, "node4", "--", *argv, timeout=600)
    report = json.loads(result.stdout[result.stdout.index("{"):])
    errors = {job["jobname"]: job["error"] for job in report["jobs"]}
    assert len(errors) == len(jobs), result.stdout + result.stderr
    return [errors[f"{name}{i}"] for i, (_, name, _) in enumerate(jobs)]


def write_patterns(lab, patterns):
    """For each (path, name, offset): name's pattern written there, read
    back, flushed at the end (dm-thin commits its mappings on a flush, as
    a disk's cache keeps data until one)."""
    codes = fio_jobs(lab, ["--iodepth=32", "--do_verify=1", "--verify_fatal=1",
                           "--end_fsync=1"], patterns)
    assert codes == [0] * len(patterns), codes


def holding(lab, checks):
    """For each (path, name, offset, _): whether path holds what
    write_patterns wrote as name at offset."""
    return [code == 0 for code in fio_jobs(
        lab, ["--iodepth=16", "--verify_only", "--verify_fatal=1"],
        [(path, name, offset) for path, name, offset, _ in checks])]


# what test_snapshot_chains... wrote, checked again after node4 comes back
CHAINS = []
# a sweep on node4's redo-log set: a point without events, one with a snapshot at 1 s
EVENT_SWEEP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                           "snapshot-event-sweep.toml")


def check_holding(lab, checks):
    assert holding(lab, checks) == [held for *_, held in checks], checks


def test_snapshot_chains_of_depth_three_keep_every_point_in_time(policy_lab):
    """Chains of three snapshots taken between writes on node4's redo-log
    volume (mirrored on node1) and its redirect-on-write volume, the first
    of each during a verify run at queue depth 32: a volume holds its latest
    writes, each snapshot what was there when it was taken (checked again
    after node4 goes down and comes back, below)."""
    lab, volumes = policy_lab, ("redo-u1v1", "row-u1v1")
    top = {v: f"/dev/mapper/storlab-vol-{v}" for v in volumes}
    snap = {v: [None] + [f"/dev/mapper/storlab-snap-{v}-{i}" for i in (1, 2, 3)]
            for v in volumes}
    write_patterns(lab, [(top[v], "a", "0") for v in volumes])
    # snapshot 1 of each while a verify run at depth 32 writes both volumes
    busy = subprocess.Popen(
        ["/usr/bin/python3", STORLAB, "exec", lab, "node4", "--", "fio", "--ioengine=libaio",
         "--direct=1", "--rw=randwrite", "--bs=4k", "--size=4M", "--io_size=8M",
         "--iodepth=32", "--offset=12M", "--verify=crc32c", "--do_verify=1",
         "--verify_fatal=1", "--output-format=terse"]
        + [arg for v in volumes for arg in (f"--name=busy-{v}", f"--filename={top[v]}")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    for v in volumes:
        snapshot(lab, v, "create")
    out, err = busy.communicate(timeout=600)
    assert busy.returncode == 0, out + err
    write_patterns(lab, [(top[v], "b", "4M") for v in volumes])
    for v in volumes:
        snapshot(lab, v, "create")
    write_patterns(lab, [(top[v], "c", "8M") for v in volumes])
    for v in volumes:
        snapshot(lab, v, "create")
    write_patterns(lab, [(top[v], "d", "0") for v in volumes])      # over a, below each snapshot
    refused = storlab("snapshot", lab, "node4", "row-u1v1", "create")
    assert refused.returncode == 1 and "snapshot_depth" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1

    def every_point(v):
        s = snap[v]
        return [(top[v], "d", "0", True), (top[v], "b", "4M", True), (top[v], "c", "8M", True),
                (top[v], "a", "0", False),
                (s[1], "a", "0", True), (s[1], "b", "4M", False), (s[1], "d", "0", False),
                (s[2], "a", "0", True), (s[2], "b", "4M", True), (s[2], "c", "8M", False),
                (s[3], "a", "0", True), (s[3], "c", "8M", True)]

    CHAINS.extend(every_point(volumes[0]) + every_point(volumes[1]))
    check_holding(lab, CHAINS)


def test_a_node_down_degrades_the_arrays_and_io_goes_on(policy_lab, tmp_path):
    """node4 goes down: it holds a piece of node1's and node2's RAID-5
    volumes, the second copy of node3's mirror, and is the home of the
    snapshot chains above (its redo-log volume mirrored on node1). I/O goes
    on degraded, with new data on every array; node4 comes back, every
    array resyncs (parity and copies checked block by block), holds what
    was written without it, and node4's chains are rebuilt from lab.json
    with every point in time."""
    started = time.monotonic()
    assert storlab("node", policy_lab, "node4", "down").returncode == 0
    # md sees a leg gone when I/O to it fails: after the writes, on the three homes at once
    volumes = (("node1", "md100", 4, "u1v1"), ("node2", "md100", 4, "u1v1"),
               ("node3", "md101", 2, "mirror-u1v1"))
    with kernel_log_on_failure(policy_lab, [home for home, *_ in volumes]):
        at_once(*(lambda h=home, v=volume: fio_verify(policy_lab, h, f"/dev/storlab-policy/{v}")
                  for home, _, _, volume in volumes))
    state = md_arrays(policy_lab)
    assert [state[(home, md)]["degraded"] for home, md, _, _ in volumes] == [1, 1, 1], state
    # a sweep measures the whole lab: refused while a node is down
    refused = storlab("sweep", str(EVENT_SWEEP), "--out", str(tmp_path / "refused"),
                      "--no-predict")
    assert refused.returncode == 1 and refused.stderr.strip().splitlines()[-1] == (
        "storlab sweep: node node4 of lab 'profile-policy' is down "
        "(`storlab node profile-policy node4 up`)"), refused.stderr
    result = storlab("node", policy_lab, "node4", "up")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "runs without" not in result.stdout, result.stdout     # every copy back
    resynced_and_checked(policy_lab, [(home, md, copies) for home, md, copies, _ in volumes],
                         time.monotonic() + 300)       # parity or copies checked
    at_once(*(lambda h=home, v=volume: verify_only(policy_lab, h, f"/dev/storlab-policy/{v}")
              for home, _, _, volume in volumes))
    check_holding(policy_lab, CHAINS)
    print(f"\nnode4 lost and back, every array resynced: {time.monotonic() - started:.1f} s")


def test_deleting_snapshots_keeps_the_others_and_the_volume(policy_lab):
    """The middle snapshot deleted (redo-log: its log merged into the one
    below while the volume runs), then the rest, oldest first."""
    lab, volumes = policy_lab, ("redo-u1v1", "row-u1v1")
    top = {v: f"/dev/mapper/storlab-vol-{v}" for v in volumes}
    checks = CHAINS
    for v in volumes:
        snapshot(lab, v, "delete", "2")
    check_holding(lab, [c for c in checks if "-2" not in c[0]])
    for v in volumes:
        listed = json.loads(snapshot(lab, v, "list", "--json").stdout)
        assert [s["id"] for s in listed["snapshots"]] == [1, 3]
        assert listed["mechanism"] == ("redo-log" if v.startswith("redo") else
                                       "redirect-on-write")
        snapshot(lab, v, "delete")                         # the oldest: 1
        snapshot(lab, v, "delete")                         # then 3
        assert json.loads(snapshot(lab, v, "list", "--json").stdout)["snapshots"] == []
    check_holding(lab, [c for c in checks if c[0] in top.values()])


def test_a_sweep_takes_snapshots_as_events(policy_lab, tmp_path):
    """events = [{ at_s = 1, command = "snapshot" }] on the redo-log set: a
    snapshot of node4's volume taken during the measured window, recorded
    in the point's events, and deleted after the point."""
    out = tmp_path / "results"
    result = storlab("sweep", str(EVENT_SWEEP), "--out", str(out), "--no-predict", timeout=600)
    assert result.returncode == 0, result.stderr
    assert json.loads((out / "points" / "000" / "events.json").read_text()) == []
    events = json.loads((out / "points" / "001" / "events.json").read_text())
    assert [(e["node"], e["volume"], e["command"]) for e in events] == \
        [("node4", "redo-u1v1", "snapshot")]
    fio = json.loads((out / "points" / "001" / "fio-node4-u1.json").read_text())
    assert fio["jobs"][0]["error"] == 0 and fio["jobs"][0]["write"]["total_ios"] > 0
    assert json.loads(snapshot(policy_lab, "redo-u1v1", "list", "--json").stdout)[
        "snapshots"] == []


def test_what_a_snapshot_costs_on_the_disks(policy_lab):
    """The formulas the simulator's snapshot layer counts, on the lab's disks:
    redirect-on-write, 256 writes of 4 KiB each in its own shared 64 KiB
    block copy the block first (a 64 KiB read, a 64 KiB write) then write:
    256 reads, 512 writes and the pool's commits; redo-log over a mirror,
    256 writes each to a new 4 KiB chunk: the chunk and its exception's
    commit on each copy (4 writes a guest write at queue depth 1, where no
    commit has company), no read."""
    lab = policy_lab
    cases = (("row-u1v1", "--rw=write:60k", 256, 512), ("redo-u1v1", "--rw=write", 0, 1024))
    for volume, pattern, reads_expected, writes_expected in cases:
        snapshot(lab, volume, "create")
        before = disk_ops(lab)
        # 256 writes of 4 KiB: every 64 KiB (a thin block each), or in a row
        guest(lab, "node4", "fio", "--name=cost", f"--filename=/dev/mapper/storlab-vol-{volume}",
              pattern, "--bs=4k", "--size=16M" if "60k" in pattern else "--size=1M",
              "--io_size=1M", "--ioengine=libaio", "--direct=1", "--iodepth=1",
              "--output-format=terse")
        time.sleep(2)                     # dm-thin's commit within a second
        after = disk_ops(lab)
        reads = sum(after[n][0] - before[n][0] for n in after)
        writes = sum(after[n][1] - before[n][1] for n in after)
        print(f"\n{volume}: 256 guest writes after a snapshot -> {writes} device writes, "
              f"{reads} device reads (formula: {writes_expected}, {reads_expected})")
        assert reads_expected <= reads <= reads_expected + 8, reads
        assert writes_expected <= writes <= writes_expected * 1.05 + 8, writes
        snapshot(lab, volume, "delete")
