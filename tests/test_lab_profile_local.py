"""Lab integration for local storage profiles: `storlab up` builds a local
RAID and hybrid and all-flash disk groups in real guests (TCG, libvirt,
nbdkit), status shows them, fio verifies data on the volumes they made, and
a sweep drives the profile's workload volumes."""
import csv
import json
import os

import pytest

from lab_profile_rig import (TOPOLOGIES, Lab, fio_verify, guest, short_sweep, status, storage,
                             storlab)


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
    assert all(r.split(",")[columns.index("units_run")] == "2" for r in rows)
    for point in ("000", "001"):
        for unit in (1, 2):
            job = (out / "points" / point / f"job-node1-u{unit}.fio").read_text()
            assert f"filename=/dev/storlab/u{unit}v1" in job
            assert f"filename=/dev/storlab/u{unit}v2" in job
            fio = json.loads((out / "points" / point / f"fio-node1-u{unit}.json").read_text())
            assert fio["jobs"][0]["error"] == 0
    # resumed with other hosts for the prediction (a host file whose guests pay 20 ms of
    # vCPU a device I/O): nothing left to measure, the prediction made again on them
    predicted = sim_iops(out)
    host_file = tmp_path / "slow-host.toml"
    host_file.write_text('host = "tcg"\nper-device-io-us = 20000\n')
    sweep = ["sweep", str(tmp_path / "sweep.toml"), "--out", str(out), "--sim-host", str(host_file)]
    again = storlab(*sweep, timeout=600)
    assert again.returncode == 0 and "predicting again" in again.stderr, again.stderr
    slower = sim_iops(out)
    assert len(slower) == 2 and all(s < p / 2 for s, p in zip(slower, predicted)), \
        (predicted, slower)
    kept = storlab(*sweep, timeout=600)           # the same hosts: the prediction kept
    assert kept.returncode == 0 and "predicting again" not in kept.stderr, kept.stderr
    assert sim_iops(out) == slower


def sim_iops(out):
    with open(out / "sim" / "points.csv", encoding="utf-8") as f:
        return [float(row["iops"]) for row in csv.DictReader(f)]


# ----------------------------------------------------------------- disk groups

def disk_group_topology(tmp_path_factory, mode):
    """profile-hybrid.toml as it is (its capacity LV striped over both
    disks), or all-flash as two disk groups (groups = 2: cache0 in front of
    disk0, cache1 in front of disk1) with the striping moved to the volumes:
    profile.volumes striped over both disks, so over both groups
    (stripe_width 2), and a second set with a volume on each (stripe_width 1)."""
    text = open(os.path.join(TOPOLOGIES, "profile-hybrid.toml"), encoding="utf-8").read()
    if mode == "all-flash":
        text = (text.replace('name = "profile-hybrid"', 'name = "profile-allflash"')
                .replace('name = "cache"\nplugin = "ssd"\n',
                         'name = "cache"\nplugin = "ssd"\ncount = 2\n')
                .replace('mode = "hybrid"', 'mode = "all-flash"\ngroups = 2')
                .replace("read_cache_percent = 70\n", "")
                .replace("stripe_width = 2\n", "stripe_width = 1\n")
                .replace('size = "16M"\n', 'size = "16M"\nstripe_width = 2\n')
                + '\n[profile.volume_sets.single]\nper_unit = 2\nsize = "16M"\n'
                'stripe_width = 1\n')
    path = tmp_path_factory.mktemp(mode) / f"{mode}.toml"
    path.write_text(text)
    return str(path), "profile-hybrid" if mode == "hybrid" else "profile-allflash"


@pytest.fixture(scope="module", params=["hybrid", "all-flash"])
def disk_group_lab(request, tmp_path_factory):
    path, name = disk_group_topology(tmp_path_factory, request.param)
    with Lab(path, name) as lab:
        yield request.param, lab.name, path


def test_disk_group_caches_and_verifies(disk_group_lab):
    mode, lab, _ = disk_group_lab
    caches = storage(lab, "node1")["caches"]
    before = {c["kind"]: c for c in caches}
    if mode == "hybrid":
        assert set(before) == {"dm-cache", "dm-writecache"}
        read_cache = before["dm-cache"]
        assert read_cache["mode"] == "writethrough"
        # 70 % of the 56 MiB cache: a 36 MiB cache volume (4 MiB extents), part of it
        # dm-cache's metadata
        assert 24 << 20 <= read_cache["total_blocks"] * read_cache["block_bytes"] <= 36 << 20
        assert before["dm-writecache"]["total_blocks"] * 4096 <= 20 << 20
    else:                                # a write buffer on each cache device
        assert sorted(c["name"] for c in caches) == ["diskgroup", "diskgroup2"]
        assert {c["kind"] for c in caches} == {"dm-writecache"}
        assert all(c["total_blocks"] * 4096 > 40 << 20 for c in caches)
    # the capacity LV (hidden as data_corig under the read cache) is striped
    # over both disks, or (all-flash) each group's is its one disk and the
    # volumes are striped
    for vg in ["dg"] if mode == "hybrid" else ["dg", "dg2"]:
        lines = guest(lab, "node1", "lvs", "-a", "--noheadings", "-o", "lv_name,stripes", vg)
        stripes = dict(line.replace("[", "").replace("]", "").split()
                       for line in lines.splitlines() if line.strip())
        assert stripes["data_corig" if mode == "hybrid" else "data"] == \
            ("2" if mode == "hybrid" else "1")
    fio_verify(lab, "node1", "/dev/storlab/u1v2")
    after = [c for c in storage(lab, "node1")["caches"] if c["kind"] == "dm-writecache"]
    assert all(c["error"] == 0 for c in after)
    # writes land in the buffers: a striped volume's in both groups'
    assert all(c["dirty_blocks"] > 0 for c in after)


def test_volume_stripes_lie_on_the_capacity_devices(disk_group_lab):
    """hybrid: the volume group is the disk group, one PV. all-flash, two
    groups, stripe_width on the volumes: a PV per capacity disk (its region
    of its disk group, below that group's cache), u1v1 and u1v2 striped over
    both, the single set's volumes on one disk each, as
    schema/capacity_layout.py placed them (the freest disk first); and
    data verifies through them."""
    mode, lab, _ = disk_group_lab
    pvs = guest(lab, "node1", "pvs", "--noheadings", "-o", "pv_name", "--select",
                "vg_name=storlab").split()
    if mode == "hybrid":
        assert pvs == ["/dev/mapper/diskgroup"]
        return
    assert sorted(pvs) == ["/dev/mapper/storlab-pv-disk0", "/dev/mapper/storlab-pv-disk1"]
    lines = guest(lab, "node1", "lvs", "--noheadings", "-o", "lv_name,stripes,devices",
                  "storlab")
    placed = {}
    for line in lines.splitlines():
        if line.strip():
            name, stripes, devices = line.split()
            placed[name] = (int(stripes), sorted(d.split("(")[0].rsplit("-", 1)[-1]
                                                 for d in devices.split(",")))
    assert placed == {"u1v1": (2, ["disk0", "disk1"]), "u1v2": (2, ["disk0", "disk1"]),
                      "single-u1v1": (1, ["disk0"]), "single-u1v2": (1, ["disk1"])}
    # each region maps the sectors of its disk group that the group's
    # capacity LV puts on its disk, less the first MiB (2048 sectors)
    for disk, vg, group in (("disk0", "dg", "diskgroup"), ("disk1", "dg2", "diskgroup2")):
        data = guest(lab, "node1", "dmsetup", "table", f"{vg}-data").splitlines()
        region = guest(lab, "node1", "dmsetup", "table", f"storlab-pv-{disk}").split()
        start, length = map(int, data[0].split()[:2])
        assert region[2] == "linear"
        assert (int(region[1]), int(region[4])) == (length - 2048, start + 2048)
        assert region[3] == guest(lab, "node1", "dmsetup", "info", "-c", "--noheadings",
                                  "-o", "major,minor", group).strip()      # of its own group
    fio_verify(lab, "node1", "/dev/storlab/u1v1")
    fio_verify(lab, "node1", "/dev/storlab/single-u1v2")


def test_a_sweep_reads_the_disk_groups_own_counters(disk_group_lab, tmp_path):
    """A lab sweep's points carry the disk groups' figures the simulator's
    do (points.csv stack_cache_hit_pct, write_buffer_fill_pct,
    destage_mb_s), from each guest's dmsetup status at the window's ends
    (stack-NODE.json): read hits of the reads the read cache took, the
    write buffer's fill at the end, what it wrote back."""
    mode, lab, path = disk_group_lab
    out = short_sweep(tmp_path, "stack-sweep", path,
                      'target = "volumes"\nrw = "randrw"\nbs = "4k"\nsize = "8M"')
    for side in (out, out / "sim"):
        with open(side / "points.csv", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        assert len(rows) == 2
        for row in rows:
            fill = float(row["write_buffer_fill_pct"])
            assert 0 < fill <= 100, (side, row)
            assert float(row["destage_mb_s"]) >= 0, (side, row)
            if mode == "hybrid":
                assert 0 <= float(row["stack_cache_hit_pct"]) <= 100, (side, row)
            else:
                assert row["stack_cache_hit_pct"] == "", (side, row)
    window = json.loads((out / "points" / "000" / "stack-node1.json").read_text())
    kinds = {c["kind"] for c in window["after"]["caches"]}
    assert kinds == ({"dm-cache", "dm-writecache"} if mode == "hybrid" else {"dm-writecache"})
    assert window["after"]["t_s"] > window["before"]["t_s"]
