"""pytest for the [profile] table of topology files (schema/profile.py) and
the parsing of the guests' status lines (lab/profiles.py). No build, no VMs."""
import os

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(TESTS)

from storlab_cli.lab import profile_status, profiles, snapshots
from storlab_cli.schema import profile as profile_schema, sweep as sweep_schema, topology
from storlab_cli.sweep import cluster_spec, plan as sweep_plan
from storlab_cli.errors import UserError

MIB = 1 << 20

# 3 nodes, full mesh; each: a 64 MiB cache and four 256 MiB disks.
BASE = '''
name = "lab"
[[defaults.devices]]
name = "cache"
plugin = "memory"
[defaults.devices.params]
size = "64M"
[[defaults.devices]]
name = "disk"
plugin = "memory"
count = 4
[defaults.devices.params]
size = "256M"
[nodes]
count = 3
'''
# A local volume big enough for the replica and workload volume tests.
RAID0 = '[profile.raid]\nlevel = 0\ndevices = ["disk0", "disk1"]\n'
ALL_FLASH = '[profile.disk_group]\nmode = "all-flash"\ncache = "cache0"\n'


def load(tmp_path, profile_text, base=BASE):
    path = tmp_path / "lab.toml"
    path.write_text(base + profile_text)
    return topology.load(str(path))


def error(tmp_path, profile_text, base=BASE):
    with pytest.raises(UserError) as info:
        load(tmp_path, profile_text, base)
    message = str(info.value)
    assert message.startswith(str(tmp_path / "lab.toml") + ": ") and "\n" not in message
    return message


def test_no_profile_is_none(tmp_path):
    assert load(tmp_path, "").profile is None


def test_raid_defaults_to_every_disk(tmp_path):
    p = load(tmp_path, "[profile.raid]\nlevel = 5\n").profile
    assert p.raid.level == 5 and p.raid.chunk_kib == 64
    assert p.raid.devices["node2"] == ["cache0", "disk0", "disk1", "disk2", "disk3"]
    assert not p.needs_volume_group("node1")


def test_raid_named_devices_and_chunk(tmp_path):
    p = load(tmp_path, '[profile.raid]\nlevel = 10\nchunk_kib = 128\n'
             'devices = ["disk0", "disk1", "disk2", "disk3"]\n').profile
    assert p.raid.devices["node1"] == ["disk0", "disk1", "disk2", "disk3"]
    assert p.raid.chunk_kib == 128


@pytest.mark.parametrize("level, count", [(5, 2), (6, 3), (1, 1), (10, 1), (0, 1)])
def test_raid_level_needing_more_disks_than_the_node_has(tmp_path, level, count):
    devices = ", ".join(f'"disk{i}"' for i in range(count))
    message = error(tmp_path, f"[profile.raid]\nlevel = {level}\ndevices = [{devices}]\n")
    assert f"profile.raid.level = {level}: RAID {level} needs at least" in message
    assert f"node node1 has {count}" in message


@pytest.mark.parametrize("text, expected", [
    ("level = 4", "profile.raid.level = 4: unknown RAID level (known: 0, 1, 10, 5, 6)"),
    ('level = "10"', "profile.raid.level = '10': unknown RAID level"),
    ("chunk_kib = 96\nlevel = 0", "profile.raid.chunk_kib = 96: must be a power of two"),
    ("chunk_kib = 2\nlevel = 0", "profile.raid.chunk_kib = 2: must be 4..4096"),
    ('level = 1\ndevices = ["disk9"]', "node node1 has no device 'disk9'"),
    ('level = 1\ndevices = ["disk0", "disk0"]', "device 'disk0' listed twice"),
    ("level = 1\nspare = 1", "profile.raid: unknown key 'spare'"),
    ("", "profile.raid.level: missing"),
])
def test_raid_bad_settings(tmp_path, text, expected):
    assert expected in error(tmp_path, f"[profile.raid]\n{text}\n")


def test_hybrid_disk_group_defaults(tmp_path):
    p = load(tmp_path, '[profile.disk_group]\nmode = "hybrid"\ncache = "cache0"\n'
             'stripe_width = 2\n').profile
    g = p.disk_group
    assert g.capacity["node3"] == ["disk0", "disk1", "disk2", "disk3"]
    assert g.read_cache_percent == 70                    # the studies' 70/30 split
    assert g.cache_mib["node1"] == 64 - 8                # the device less LVM's share
    assert g.stripe_width == 2
    # two stripe sets of two 256 MiB devices, less LVM's share of each
    assert p.local_bytes["node1"] == 4 * (256 - 8) * MIB


def test_all_flash_disk_group(tmp_path):
    g = load(tmp_path, '[profile.disk_group]\nmode = "all-flash"\ncache = "cache0"\n'
             'cache_size = "32M"\ncapacity = ["disk0", "disk1", "disk2"]\n'
             'stripe_width = 3\n').profile.disk_group
    assert g.mode == "all-flash" and g.cache_mib["node2"] == 32
    assert g.capacity["node2"] == ["disk0", "disk1", "disk2"]


# Each node: two 64 MiB caches (one 48 MiB on node1) and four 256 MiB disks.
TWO_CACHES = BASE.replace('name = "cache"\nplugin = "memory"\n',
                          'name = "cache"\nplugin = "memory"\ncount = 2\n') + \
    '[[node.node1.devices]]\nname = "cache"\nplugin = "memory"\ncount = 2\n' \
    '[node.node1.devices.params]\nsize = "48M"\n' \
    '[[node.node1.devices]]\nname = "disk"\nplugin = "memory"\ncount = 4\n' \
    '[node.node1.devices.params]\nsize = "256M"\n'


def test_two_disk_groups_a_node(tmp_path):
    """groups = 2: group k's cache is the k-th of the cache's table, its
    capacity the k-th half of the other disks; every group's cache the
    size of the smallest; the node's volume group spans both groups'
    capacity devices, its volumes spread over them (the freest first)."""
    p = load(tmp_path, ALL_FLASH + 'groups = 2\n[profile.volumes]\nper_unit = 4\nsize = "64M"\n',
             TWO_CACHES).profile
    g = p.disk_group
    assert [(m.name, m.cache, m.capacity) for m in g.members["node2"]] == [
        ("diskgroup", "cache0", ["disk0", "disk1"]), ("diskgroup2", "cache1", ["disk2", "disk3"])]
    assert g.capacity["node2"] == ["disk0", "disk1", "disk2", "disk3"]   # every group's
    assert g.cache_mib["node2"] == 64 - 8 and g.cache_mib["node1"] == 48 - 8
    assert p.local_bytes["node1"] == 4 * (256 - 8) * MIB
    assert p.lv_devices["node1"] == {"u1v1": ["disk0"], "u1v2": ["disk1"], "u1v3": ["disk2"],
                                     "u1v4": ["disk3"]}
    topo = load(tmp_path, ALL_FLASH + 'groups = 2\n[profile.volumes]\nper_unit = 4\n'
                'size = "64M"\n', TWO_CACHES)
    local, used = cluster_spec._local_stack(topo.profile, topo.node("node1"), None)
    assert used == {"cache0", "cache1", "disk0", "disk1", "disk2", "disk3"}
    assert local.splitlines() == [
        "local node1 disk-group mode=all-flash cache=cache0 cache-size=40M stripe-width=1 "
        "stripe=64k volume-group=per-device disk0 disk1",
        "local node1 disk-group group=2 mode=all-flash cache=cache1 cache-size=40M "
        "stripe-width=1 stripe=64k volume-group=per-device disk2 disk3"]
    assert cluster_spec._volume_line(topo.profile, topo.profile.volumes, "node1", 3, "u1v3") \
        == "volume node1 u1v3 64M devices=disk2"


def test_group_caches_come_from_the_cache_entry_itself(tmp_path):
    """An entry name ending in a digit: "c1" x 2 is c10, c11, beside "c" x 4
    (c0..c3); the groups' caches are c10 and c11, the capacity c0..c3."""
    base = BASE.replace('name = "cache"\nplugin = "memory"\n',
                        'name = "c1"\nplugin = "memory"\ncount = 2\n') \
        .replace('name = "disk"\n', 'name = "c"\n')
    g = load(tmp_path, '[profile.disk_group]\nmode = "all-flash"\ncache = "c10"\ngroups = 2\n',
             base).profile.disk_group
    assert [(m.cache, m.capacity) for m in g.members["node1"]] == [
        ("c10", ["c0", "c1"]), ("c11", ["c2", "c3"])]


def test_one_group_leaves_the_other_caches_idle(tmp_path):
    """groups = 1 over a table of two caches: cache1 is no capacity device
    (the default capacity is every disk outside the cache's table)."""
    g = load(tmp_path, ALL_FLASH, TWO_CACHES).profile.disk_group
    assert g.capacity["node1"] == ["disk0", "disk1", "disk2", "disk3"]
    assert [m.name for m in g.members["node1"]] == ["diskgroup"]


@pytest.mark.parametrize("text, expected", [
    ("groups = 2", "profile.disk_group.groups = 2: node node1 has no device 'cache1' for "
                   "group 2's cache"),
    ("groups = 3\ncapacity = [\"disk0\", \"disk1\"]", "groups = 3: node node1 has no device"),
    ("groups = 0", "profile.disk_group.groups = 0: must be 1..8"),
    ("groups = 9", "profile.disk_group.groups = 9: must be 1..8"),
])
def test_groups_bad_settings(tmp_path, text, expected):
    assert expected in error(tmp_path, ALL_FLASH + text + "\n")


@pytest.mark.parametrize("text, expected", [
    ('groups = 2\ncapacity = ["disk0", "disk1", "disk2"]',
     "profile.disk_group.groups = 2: node node1's 3 capacity devices (disk0, disk1, disk2) "
     "do not split into 2 equal groups"),
    ('groups = 2\nstripe_width = 2', "profile.disk_group.stripe_width = 2: must be 1 with "
                                      "groups = 2"),
    ('groups = 2\ncapacity = ["cache1", "disk0"]',
     "the cache device 'cache1' cannot also be a capacity device"),
    ('groups = 2\ncache_size = "44M"', "profile.disk_group.cache_size = '44M': larger than its "
                                       "device: 'cache0' of node node1 holds 48 MiB"),
])
def test_groups_bad_settings_with_two_caches(tmp_path, text, expected):
    assert expected in error(tmp_path, ALL_FLASH + text + "\n", TWO_CACHES)


@pytest.mark.parametrize("text, expected", [
    ('mode = "tiered"\ncache = "cache0"',
     "profile.disk_group.mode = 'tiered': unknown disk group mode (known: hybrid, all-flash)"),
    ('mode = "hybrid"\ncache = "cache0"\ncache_size = "128M"',
     "profile.disk_group.cache_size = '128M': larger than its device: 'cache0' of node node1 "
     "holds 64 MiB, at most 56 MiB usable"),
    ('mode = "hybrid"\ncache = "cache0"\ncache_size = "60M"', "larger than its device"),
    ('mode = "all-flash"\ncache = "cache0"\nread_cache_percent = 70',
     "read_cache_percent = 70: only with mode = 'hybrid'"),
    ('mode = "hybrid"\ncache = "cache0"\nread_cache_percent = 100',
     "read_cache_percent = 100: must be 10..90"),
    ('mode = "hybrid"\ncache = "cache0"\nstripe_width = 5',
     "profile.disk_group.stripe_width = 5: must be 1..4"),
    ('mode = "hybrid"\ncache = "cache0"\nstripe_width = 0', "stripe_width = 0: must be 1..4"),
    ('mode = "hybrid"\ncache = "ssd0"', "node node1 has no device 'ssd0'"),
    ('mode = "hybrid"\ncache = "cache0"\ncapacity = ["cache0", "disk0"]',
     "the cache device 'cache0' cannot also be a capacity device"),
    ('mode = "hybrid"\ncache = "cache0"\ncache_size = "12M"', "too small"),
    ('cache = "cache0"', "profile.disk_group.mode: missing"),
])
def test_disk_group_bad_settings(tmp_path, text, expected):
    assert expected in error(tmp_path, f"[profile.disk_group]\n{text}\n")


def test_space_efficiency_is_all_flash_and_the_simulators(tmp_path):
    """space_efficiency: deduplication and compression (or compression
    alone) on an all-flash group; a lab refuses it in one line, naming the
    key and why, before anything starts."""
    topo = load(tmp_path, ALL_FLASH + 'space_efficiency = "dedup-compression"\n')
    assert topo.profile.disk_group.space_efficiency == "dedup-compression"
    refusal = topo.lab_refusal()
    assert "profile.disk_group.space_efficiency = 'dedup-compression': a lab cannot build it" \
        in refusal and "dm-vdo" in refusal and "\n" not in refusal
    assert load(tmp_path, ALL_FLASH).lab_refusal() is None
    assert "profile.disk_group.space_efficiency = 'compression': only with mode = 'all-flash'" \
        in error(tmp_path, ALL_FLASH.replace("all-flash", "hybrid")
                 + 'space_efficiency = "compression"\n')
    assert "profile.disk_group.space_efficiency = 'vdo': unknown space efficiency (known: " \
        "dedup-compression, compression)" in error(tmp_path, ALL_FLASH
                                                    + 'space_efficiency = "vdo"\n')


def test_raid_and_disk_group_exclude_each_other(tmp_path):
    assert "give at most one of profile.raid and profile.disk_group" in error(
        tmp_path, '[profile.raid]\nlevel = 0\n[profile.disk_group]\nmode = "hybrid"\n'
        'cache = "cache0"\n')


def volumes_of(replicas):
    return [(v.name, v.index, v.primary, v.peers) for v in replicas.volumes]


def test_replicas_default_peers_and_size(tmp_path):
    p = load(tmp_path, '[profile.replicas]\nftt = 2\nsize = "30M"\n').profile
    r = p.replicas
    assert (r.ftt, r.size_mib) == (2, 32)
    assert volumes_of(r) == [("node1", 1, "node1", ["node2", "node3"])]
    assert [p.needs_volume_group(n) for n in ("node1", "node2", "node3")] == [True] * 3


def test_replicas_named_primary_and_peer(tmp_path):
    r = load(tmp_path, RAID0 + '[profile.replicas]\nftt = 1\nprimary = "node2"\n'
             'peers = ["node3"]\nsize = "64M"\n').profile.replicas
    assert volumes_of(r) == [("node2", 1, "node2", ["node3"])]


def test_default_peers_are_the_next_nodes_wrapping(tmp_path):
    r = load(tmp_path, RAID0 + '[profile.replicas]\nftt = 1\nprimary = "node3"\n'
             'size = "64M"\n').profile.replicas
    assert volumes_of(r) == [("node3", 1, "node3", ["node1"])]


def test_every_node_a_primary_is_a_ring(tmp_path):
    """The VSA shape: each host's share mirrored to the next host."""
    p = load(tmp_path, RAID0 + '[profile.replicas]\nftt = 1\nprimaries = "all"\n'
             'size = "64M"\n').profile
    assert volumes_of(p.replicas) == [("node1", 1, "node1", ["node2"]),
                                      ("node2", 2, "node2", ["node3"]),
                                      ("node3", 3, "node3", ["node1"])]
    assert [v.name for v in p.replicas.held_by("node1")] == ["node1", "node3"]


def test_listed_primaries_with_three_copies(tmp_path):
    r = load(tmp_path, RAID0 + '[profile.replicas]\nftt = 2\nprimaries = ["node2", "node1"]\n'
             'size = "64M"\n').profile.replicas
    assert volumes_of(r) == [("node2", 1, "node2", ["node3", "node1"]),
                             ("node1", 2, "node1", ["node2", "node3"])]


def test_ring_skips_nodes_without_a_link(tmp_path):
    base = BASE + '[links]\nmode = "pairs"\npairs = [["node1", "node2"], ["node1", "node3"]]\n'
    r = load(tmp_path, RAID0 + '[profile.replicas]\nftt = 1\nprimaries = ["node2", "node3"]\n'
             'size = "64M"\n', base).profile.replicas
    assert volumes_of(r) == [("node2", 1, "node2", ["node1"]), ("node3", 2, "node3", ["node1"])]


def test_space_counts_every_copy_a_node_holds(tmp_path):
    """A 256 MiB first disk holds about 248 MiB: with every node a primary of
    three copies each node holds three 64 MiB copies (192 MiB); a 64 MiB
    workload volume beside them does not fit."""
    ring = '[profile.replicas]\nftt = 2\nprimaries = "all"\nsize = "64M"\n'
    base = BASE.replace('size = "64M"', 'size = "256M"')
    load(tmp_path, ring, base)
    assert ("node node1 needs 256 MiB for its replica and workload volumes but its local "
            "volume holds about 248 MiB") in error(
                tmp_path, ring + '[profile.volumes]\nsize = "64M"\n', base)


@pytest.mark.parametrize("text, expected", [
    ('ftt = 3\nsize = "64M"', "profile.replicas.ftt = 3: 4 copies need 4 nodes; the lab has 3"),
    ('ftt = 4\nsize = "64M"', "profile.replicas.ftt = 4: must be 0..3"),
    ('ftt = 1\nprimary = "node7"\nsize = "64M"', "profile.replicas.primary = 'node7': no such node"),
    ('ftt = 2\npeers = ["node2"]\nsize = "64M"', "ftt = 2 needs exactly 2 peers"),
    ('ftt = 1\npeers = ["node1"]\nsize = "64M"', "'node1' is not another node"),
    ("ftt = 1", "profile.replicas.size: missing"),
    ('ftt = 1\nsize = "1k"', "not a size of at least 4M"),
    ('ftt = 1\nsize = "2G"', "node node1 needs 2048 MiB for its replica and workload volumes"),
    ('primary = "node1"\nprimaries = "all"\nsize = "8M"',
     "profile.replicas: give primary (one replicated volume) or primaries (several), not both"),
    ('primaries = "some"\nsize = "8M"',
     "profile.replicas.primaries = 'some': must be \"all\" or a non-empty list of node names"),
    ('primaries = []\nsize = "8M"', "profile.replicas.primaries = []: must be \"all\""),
    ('primaries = ["node1", "node1"]\nsize = "8M"', "'node1' is not a node, once"),
    ('primaries = ["node9"]\nsize = "8M"', "'node9' is not a node, once (nodes: node1, node2, node3)"),
    ('primaries = "all"\npeers = ["node2"]\nsize = "8M"',
     "profile.replicas.peers = ['node2']: only with a single primary"),
])
def test_replicas_bad_settings(tmp_path, text, expected):
    assert expected in error(tmp_path, f"[profile.replicas]\n{text}\n")


def test_replica_peer_needs_a_link_to_the_primary(tmp_path):
    base = BASE + '[links]\nmode = "pairs"\npairs = [["node1", "node2"]]\n'
    assert "peer node3 has no link to the primary node1" in error(
        tmp_path, '[profile.replicas]\nftt = 1\npeers = ["node3"]\nsize = "64M"\n', base)
    assert "profile.replicas.ftt = 2: the primary node1 has links to 1 nodes" in error(
        tmp_path, '[profile.replicas]\nftt = 2\nsize = "64M"\n', base)


def test_nfs_default_mount_point(tmp_path):
    p = load(tmp_path, RAID0 + '[profile.replicas]\nftt = 1\nsize = "64M"\n[profile.nfs]\n').profile
    assert p.nfs.mount_point == "/mnt/storlab"


def test_nfs_needs_a_node_linked_to_each_primary(tmp_path):
    base = BASE.replace("count = 3", "count = 3\n[links]\nmode = \"none\"")
    assert "profile.nfs: no node has a link to the primary node1 to mount its export" in error(
        tmp_path, RAID0 + '[profile.replicas]\nftt = 0\nsize = "64M"\n[profile.nfs]\n', base)


@pytest.mark.parametrize("text, expected", [
    ("[profile.nfs]\n", "profile.nfs: needs profile.replicas"),
    ('[profile.replicas]\nsize = "64M"\n[profile.nfs]\nmount_point = "mnt"\n',
     "profile.nfs.mount_point = 'mnt': must be an absolute path"),
    ('[profile.replicas]\nsize = "64M"\n[profile.nfs]\nmount_point = "/a b"\n',
     "must be an absolute path"),
])
def test_nfs_bad_settings(tmp_path, text, expected):
    assert expected in error(tmp_path, text)


def test_volumes(tmp_path):
    v = load(tmp_path, RAID0 + '[profile.volumes]\nunits = 2\nper_unit = 8\nsize = "6M"\n'
             ).profile.volumes
    assert (v.units, v.per_unit, v.size_mib) == (2, 8, 8)


@pytest.mark.parametrize("text, expected", [
    ('units = 0\nsize = "8M"', "profile.volumes.units = 0: must be 1..16"),
    ('per_unit = 65\nsize = "8M"', "profile.volumes.per_unit = 65: must be 1..64"),
    ("units = 1", "profile.volumes.size: missing"),
    # the local volume is the first disk (64 MiB cache0) without raid or disk group
    ('units = 2\nper_unit = 4\nsize = "8M"', "node node1 needs 64 MiB"),
])
def test_volumes_bad_settings(tmp_path, text, expected):
    assert expected in error(tmp_path, f"[profile.volumes]\n{text}\n")


def test_unknown_profile_section(tmp_path):
    assert ("profile: unknown key 'dedupe' (known: raid, disk_group, replicas, nfs, volumes, "
            "volume_sets)") in error(tmp_path, "[profile.dedupe]\n")


def test_raid_usable_bytes_per_level():
    member = 1024 * MIB
    usable = member - 128 * MIB
    assert profile_schema.raid_usable_bytes(0, member, 4) == 4 * usable
    assert profile_schema.raid_usable_bytes(1, member, 2) == usable
    assert profile_schema.raid_usable_bytes(10, member, 4) == 2 * usable
    assert profile_schema.raid_usable_bytes(5, member, 4) == 3 * usable
    assert profile_schema.raid_usable_bytes(6, member, 4) == 2 * usable


STATUS = """\
md md1 level=raid1 array_state=clean degraded=1 sync_action=recover sync_completed=1024_/_4096 mismatch_cnt=0 size_bytes=66060288 members=dm-1:in_sync;nvme0n1:in_sync,write_mostly;nvme1n1:faulty
dm dg-data target=cache status=8_9/2048_128_31/448_89_131_6_272_0_31_5_2_metadata2_writethrough_2_migration_threshold_2048
dm diskgroup target=writecache status=0_5100_1280_7_1586_266
nvme nvme0 nqn=nqn.x:lab:node2:replica state=live
mount /mnt/storlab source=[fd5c::1]:/export type=nfs4
nfsd /export threads=8
volume /dev/storlab/u1v1 size_bytes=16777216
"""


def test_parse_status():
    s = profile_status.parse_status(STATUS)
    md = s["md"][0]
    assert (md["name"], md["degraded"], md["sync_action"], md["sync_percent"]) == \
        ("md1", 1, "recover", 25.0)
    assert md["members"] == [{"device": "dm-1", "state": "in sync"},
                             {"device": "nvme0n1", "state": "in sync,write mostly"},
                             {"device": "nvme1n1", "state": "faulty"}]
    cache, writecache = s["caches"]
    assert cache["kind"] == "dm-cache" and cache["mode"] == "writethrough"
    assert (cache["used_blocks"], cache["total_blocks"], cache["read_hits"]) == (31, 448, 89)
    assert cache["dirty_blocks"] == 5 and cache["dirty_bytes"] == 5 * 128 * 512
    assert writecache["kind"] == "dm-writecache" and writecache["dirty_blocks"] == 3820
    assert writecache["writeback_blocks"] == 7
    assert s["nvme"] == [{"controller": "nvme0", "nqn": "nqn.x:lab:node2:replica",
                          "state": "live"}]
    assert s["mounts"][0]["path"] == "/mnt/storlab" and s["nfsd"] is True
    assert s["volumes"] == [{"path": "/dev/storlab/u1v1", "size_bytes": 16777216}]
    assert "md1 raid1 clean degraded 1 recover 25.0%" in profile_status.summary(s)


# ----------------------------------------------------- failover decisions
# The guest steps are recorded instead of run (the lab test runs them for
# real); what is checked here is which node does what, in which order, and
# what the lab state records.

RING = '[profile.replicas]\nftt = 1\nprimaries = "all"\nsize = "64M"\n[profile.nfs]\n'


class Steps:
    def __init__(self, monkeypatch):
        self.calls = []
        monkeypatch.setattr(profiles, "run_step", self.run_step)

    def run_step(self, domain, node, script, args, timeout_s=None):
        self.calls.append((node, script, [str(a) for a in args]))
        if script == "replica-mirror.sh":
            return {"device": [f"/dev/md{args[1]}"]}
        if script == "raid.sh":
            return {"device": ["/dev/md0"]}
        if script == "disk-group.sh":
            return {"device": ["/dev/mapper/x"]}
        if script == "components.sh":
            return {"device": [f"c-{spec.split()[0]}-{spec.split()[1]} /dev/mapper/x"
                               for spec in args]}
        return {"device": ["/dev/md0"]} if script == "volume-group.sh" else {}

    def scripts(self, node=None):
        return [(n, s) for n, s, _ in self.calls if node is None or n == node]


def ring_state(tmp_path):
    topo = load(tmp_path, RAID0 + RING)
    volumes = [profiles._volume_state(topo, v) for v in topo.profile.replicas.volumes]
    return topo, {"nodes": {}, "replicas": volumes, "nfs": {"mount_point": "/mnt/storlab"}}


def test_failover_moves_the_volume_to_its_first_running_peer(tmp_path, monkeypatch):
    topo, state = ring_state(tmp_path)
    steps = Steps(monkeypatch)
    running = {"node2": "dom2", "node3": "dom3"}
    said = []
    profiles.failover(topo, state, running, "node1", said.append)
    moved, kept, dropped = state["replicas"]
    assert (moved["primary"], moved["peers"], moved["home"]) == ("node2", ["node1"], "node1")
    assert moved["missing"] == ["node1"]
    # node3 served volume node3 with its copy on node1: it drops that copy
    assert (dropped["primary"], dropped["peers"], dropped["missing"]) == \
        ("node3", ["node1"], ["node1"])
    assert kept["primary"] == "node2" and kept["missing"] == []
    # the move comes first: dropping a dead copy waits for its transport to time out
    order = steps.scripts()
    assert order.index(("node3", "replica-mirror.sh")) > order.index(("node2", "nfs-export.sh"))
    # node2 stops exporting its copy, assembles md1 from it, serves NFS; node3 remounts
    assert steps.scripts("node2") == [("node2", "replica-unexport.sh"),
                                      ("node2", "replica-mirror.sh"), ("node2", "nfs-export.sh")]
    assert ("node3", "nfs-mount.sh", ["node1", profiles._link_addr(topo, "node2", "node3"),
                                      "/mnt/storlab"]) in steps.calls
    unexport = next(a for n, s, a in steps.calls if s == "replica-unexport.sh")
    assert unexport == [profiles.nqn("lab", "node1", "node2")]
    assert any("volume node1 failed over from node1 to node2" in s for s in said)


def test_a_volume_with_no_running_copy_goes_offline_and_waits(tmp_path, monkeypatch):
    topo, state = ring_state(tmp_path)
    steps = Steps(monkeypatch)
    said = []
    # node2 down first: volume node1 (copy on node2) drops it, volume node2 moves to node3
    profiles.failover(topo, state, {"node1": 1, "node3": 3}, "node2", said.append)
    assert state["replicas"][1]["primary"] == "node3"
    # then node1: volume node1's only other copy (node2) is down: offline
    profiles.failover(topo, state, {"node3": 3}, "node1", said.append)
    v1 = state["replicas"][0]
    assert (v1["primary"], v1["serving"]) == ("node1", False)
    assert any("volume node1 is offline" in s for s in said)
    # node2 comes back first: its copy of volume node1 may be stale; it waits
    steps.calls.clear()
    profiles.rejoin(topo, state, {"node2": 2, "node3": 3}, "node2", said.append)
    assert not state["replicas"][0]["serving"]
    assert any("node2: volume node1 stays offline until node1" in s for s in said)
    assert all(a[0] != "node1" for n, s, a in steps.calls if s == "replica-mirror.sh")
    # node1 comes back: it served volume node1 last, so it serves it again
    profiles.rejoin(topo, state, {"node1": 1, "node2": 2, "node3": 3}, "node1", said.append)
    assert state["replicas"][0]["serving"] and state["replicas"][0]["primary"] == "node1"
    assert ("node1", "replica-mirror.sh", ["node1", "1", "64", "-",
            f"{profiles.nqn('lab', 'node1', 'node2')}@{profiles._link_addr(topo, 'node2', 'node1')}"]
            ) in steps.calls


def test_rejoin_exports_the_copies_and_the_servers_readd_them(tmp_path, monkeypatch):
    topo, state = ring_state(tmp_path)
    Steps(monkeypatch)
    profiles.failover(topo, state, {"node2": 2, "node3": 3}, "node1", lambda s: None)
    steps = Steps(monkeypatch)
    running = {"node1": 1, "node2": 2, "node3": 3}
    profiles.rejoin(topo, state, running, "node1", lambda s: None)
    calls = steps.scripts()
    # node1: local stack, then its copy of volume node1 (now served by node2) and of node3
    assert calls[:2] == [("node1", "raid.sh"), ("node1", "volume-group.sh")]
    exports = [a[0] for n, s, a in steps.calls if s == "replica-export.sh"]
    assert exports == ["node1", "node3"]
    servers = [(n, a[0]) for n, s, a in steps.calls if s == "replica-mirror.sh"]
    assert servers == [("node2", "node1"), ("node3", "node3")]
    # and it mounts every share from the node serving it now
    mounts = [(a[0], a[1]) for n, s, a in steps.calls if s == "nfs-mount.sh" and n == "node1"]
    assert mounts == [("node1", profiles._link_addr(topo, "node2", "node1")),
                      ("node2", profiles._link_addr(topo, "node2", "node1")),
                      ("node3", profiles._link_addr(topo, "node3", "node1"))]
    assert state["replicas"][0]["missing"] == []


# ------------------------------------------------------------ per-node scope

def test_raid_on_some_nodes_volumes_on_others(tmp_path):
    p = load(tmp_path, '[profile.raid]\nlevel = 10\nnodes = ["node1", "node2"]\n'
             '[profile.volumes]\nsize = "8M"\nnodes = ["node2", "node3"]\n').profile
    assert sorted(p.raid.devices) == ["node1", "node2"]
    assert p.volumes.nodes == ["node2", "node3"]
    assert [p.needs_volume_group(n) for n in ("node1", "node2", "node3")] == [False, True, True]
    # node3 has no RAID: its local volume is its first disk (the 64 MiB cache0)
    assert p.local_bytes["node3"] == 64 * MIB
    assert p.local_bytes["node2"] == profile_schema.raid_usable_bytes(10, 64 * MIB, 5)


def test_disk_group_only_where_the_cache_is(tmp_path):
    base = BASE + '[node.node3]\ndevices = [{ name = "disk", plugin = "memory", ' \
        'params = { size = "256M" } }]\n'
    group = '[profile.disk_group]\nmode = "all-flash"\ncache = "cache0"\n'
    assert "node node3 has no device 'cache0'" in error(tmp_path, group, base)
    p = load(tmp_path, group + 'nodes = ["node1", "node2"]\n', base).profile
    assert sorted(p.disk_group.capacity) == ["node1", "node2"]


def test_a_diskless_node_is_an_nfs_client(tmp_path):
    """node3 has no disk: the ring skips it, it holds nothing, and it mounts
    both shares; giving it workload volumes is an error naming it."""
    base = BASE + "[node.node3]\ndevices = []\n"
    ring = RAID0.replace("level = 0", 'level = 0\nnodes = ["node1", "node2"]') + \
        '[profile.replicas]\nprimaries = "all"\nsize = "64M"\n[profile.nfs]\n'
    p = load(tmp_path, ring, base).profile
    assert volumes_of(p.replicas) == [("node1", 1, "node1", ["node2"]),
                                      ("node2", 2, "node2", ["node1"])]
    assert not p.needs_volume_group("node3")
    assert "profile.volumes.nodes = ['node1', 'node2', 'node3']: node3 has no disk for its " \
        "volumes (give them ftt >= 1" in error(tmp_path, ring + '[profile.volumes]\nsize = "8M"\n', base)
    load(tmp_path, ring + '[profile.volumes]\nsize = "8M"\nnodes = ["node1", "node2"]\n', base)


@pytest.mark.parametrize("text, expected", [
    ('[profile.raid]\nlevel = 1\nnodes = ["node9"]\n',
     "profile.raid.nodes = ['node9']: 'node9' is not a node, once (nodes: node1, node2, node3)"),
    ('[profile.raid]\nlevel = 1\nnodes = []\n',
     "profile.raid.nodes = []: must be a non-empty list of node names"),
    ('[profile.volumes]\nsize = "8M"\nnodes = "node1"\n',
     "profile.volumes.nodes = 'node1': must be a non-empty list of node names"),
    ('[profile.disk_group]\nmode = "hybrid"\ncache = "cache0"\nnodes = ["node1", "node1"]\n',
     "profile.disk_group.nodes = ['node1', 'node1']: 'node1' is not a node, once"),
])
def test_nodes_bad_settings(tmp_path, text, expected):
    assert expected in error(tmp_path, text)


# ---- storage policies on workload volumes ----

MESH = BASE.replace("count = 3\n", "count = {nodes}\n[links]\nmode = \"full-mesh\"\n")


def policy(tmp_path, keys, nodes=6, units=1, per_unit=4):
    text = (RAID0 + f'[profile.volumes]\nunits = {units}\nper_unit = {per_unit}\nsize = "8M"\n'
            + keys)
    return load(tmp_path, text, MESH.format(nodes=nodes)).profile.volumes


def test_no_policy_keeps_volumes_on_their_node(tmp_path):
    v = policy(tmp_path, "")
    assert not v.has_policy and v.components == 1
    assert all(holders == [node] for (node, _), holders in v.holders.items())


def test_mirror_places_copies_on_distinct_nodes_own_first_spread(tmp_path):
    """ftt 2: three copies, the VM's node first, the others rotating round
    the rest so each node holds as many as the next."""
    v = policy(tmp_path, "ftt = 2\n")
    assert (v.method, v.components) == ("mirror", 3)
    assert v.holders[("node1", 0)] == ["node1", "node2", "node3"]
    assert v.holders[("node1", 1)] == ["node1", "node3", "node4"]
    assert v.holders[("node5", 3)] == ["node5", "node3", "node4"]
    for holders in v.holders.values():
        assert len(set(holders)) == 3
    held = [v.held_by(f"node{i}") for i in range(1, 7)]
    assert held == [12] * 6          # 6 nodes x 4 volumes x 3 copies, evenly
    assert v.component_mib() == 8


def test_erasure_codes_place_their_pieces(tmp_path):
    v = policy(tmp_path, 'method = "raid5"\nchecksum = true\n', nodes=4)
    assert (v.ftt, v.components, v.checksum) == (1, 4, True)
    assert sorted(v.holders[("node2", 0)]) == ["node1", "node2", "node3", "node4"]
    assert v.holders[("node2", 0)][0] == "node2"
    # a piece holds a third of the volume, in whole 512 KiB chunks, LVM's 4 MiB extents
    assert v.component_mib() == 4
    # RAID-5 3+1's pieces are filled where they lie, each with its share of
    # the volume (the XOR of three equal chunks is the parity md would write)
    assert (v.size_mib, v.fills_components, v.fill_mib()) == (8, True, 3)
    v = policy(tmp_path, 'method = "raid6"\n', nodes=6)
    assert (v.ftt, v.components) == (2, 6)
    # RAID-6's second parity is no XOR of equal chunks: written through its array
    assert not v.fills_components


@pytest.mark.parametrize("keys, nodes, expected", [
    ("ftt = 1\n", 2, "profile.volumes.ftt = 1: mirror with ftt 1 needs 3 nodes with disks "
                     "linked to node1, which has 2"),
    ('method = "raid5"\n', 3, 'profile.volumes.method = \'raid5\': raid5 with ftt 1 needs 4'),
    ('method = "raid6"\n', 5, "raid6 with ftt 2 needs 6"),
    ('method = "raid5"\nftt = 2\n', 6, 'profile.volumes.ftt = 2: method = "raid5" (3 + 1) '
                                       'tolerates 1 failure, not 2'),
    ('method = "raid7"\n', 6, "profile.volumes.method = 'raid7': unknown method (known: "
                              "mirror, raid5, raid6)"),
    ("ftt = 4\n", 6, "profile.volumes.ftt = 4: must be 0..3"),
    ('checksum = "yes"\n', 6, "profile.volumes.checksum = 'yes': must be true or false"),
    ("stripes = 2\n", 6, "profile.volumes: unknown key 'stripes'"),
])
def test_bad_policies(tmp_path, keys, nodes, expected):
    text = RAID0 + '[profile.volumes]\nsize = "8M"\n' + keys
    assert expected in error(tmp_path, text, MESH.format(nodes=nodes))


def test_stripe_width_places_each_component_on_its_capacity_devices(tmp_path):
    """stripe_width 2, ftt 1: every node's volume group is its four disks'
    regions; each component lies on two of them, the freest first (ties in
    disk order), so the stripes spread evenly; a set without stripe_width
    on the same nodes takes one disk a volume; the simulator's spec says
    the same."""
    text = (ALL_FLASH + '[profile.volumes]\nper_unit = 4\nsize = "8M"\nftt = 1\n'
            'stripe_width = 2\n[profile.volume_sets.plain]\nper_unit = 2\nsize = "8M"\n')
    # devices with simulator models, for the spec
    topo = load(tmp_path, text, MESH.format(nodes=4).replace('"memory"', '"hdd"'))
    p = topo.profile
    assert p.volumes.stripe_width == 2 and p.volume_sets["plain"].stripe_width == 0
    assert sorted(p.lv_devices) == ["node1", "node2", "node3", "node4"]
    placed = p.lv_devices["node1"]
    assert placed["plain-u1v1"] == ["disk0"] and placed["plain-u1v2"] == ["disk1"]
    components = {lv: d for lv, d in placed.items() if lv.startswith("c-")}
    # node1's own four and the four of node4's it holds (3 copies a node, in order)
    assert len(components) == 8 and all(len(d) == 2 for d in components.values())
    assert placed["c-node1-u1v1"] == ["disk2", "disk3"]
    assert placed["c-node1-u1v2"] == ["disk0", "disk1"]
    per_disk = [sum(f"disk{k}" in d for d in placed.values()) for k in range(4)]
    assert per_disk == [5, 5, 4, 4]
    spec = cluster_spec.text(topo, [])
    assert ("local node1 disk-group mode=all-flash cache=cache0 cache-size=56M stripe-width=1 "
            "stripe=64k volume-group=per-device disk0 disk1 disk2 disk3") in spec
    assert "volume node1 plain-u1v1 8M devices=disk0\n" in spec
    holders = p.volumes.holders[("node1", 0)]
    assert (f"volume node1 u1v1 8M method=mirror on=node1:disk2+disk3,{holders[1]}:"
            + "+".join(p.lv_devices[holders[1]]["c-node1-u1v1"])) in spec


def test_the_lab_puts_each_lv_where_the_layout_says(tmp_path, monkeypatch):
    """The guest steps get what schema/capacity_layout.py decided: the volume
    group over the disk group's disks' regions, each component and plain
    volume on its disks (stripe unit: the disk group's), a replica copy on one."""
    text = (ALL_FLASH + '[profile.volumes]\nper_unit = 2\nsize = "8M"\nftt = 1\n'
            'stripe_width = 2\n[profile.volume_sets.plain]\nsize = "8M"\n'
            '[profile.replicas]\nftt = 1\nsize = "16M"\n')
    topo = load(tmp_path, text, MESH.format(nodes=3))
    steps = Steps(monkeypatch)
    profiles.provision(topo, {f"node{i}": i for i in (1, 2, 3)}, lambda _: None)
    args = {(n, s): a for n, s, a in steps.calls}
    placed = topo.profile.lv_devices
    assert args[("node1", "volume-group.sh")] == ["/dev/mapper/x", "disk0", "disk1", "disk2",
                                                 "disk3"]
    assert args[("node1", "volumes.sh")] == ["1", "1", "8", "plain-", "8",
                                             "64:" + ",".join(placed["node1"]["plain-u1v1"])]
    components = [(n, spec.split()) for n, s, a in steps.calls if s == "components.sh"
                  for spec in a]
    assert len(components) == 12       # 3 nodes x 2 volumes x 2 copies
    for node, a in components:
        assert a[-2] == "64:" + ",".join(placed[node][f"c-{a[0]}-{a[1]}"])
        assert len(placed[node][f"c-{a[0]}-{a[1]}"]) == 2
    assert args[("node1", "replica-mirror.sh")][3] == "64:" + placed["node1"]["replica-node1"][0]
    assert args[("node2", "replica-export.sh")][3] == "64:" + placed["node2"]["replica-node1"][0]


def test_policy_volumes_are_built_in_one_step_a_node(tmp_path, monkeypatch):
    """Each holder makes all its components in one components.sh call, each
    home all its arrays in one policy-volumes.sh call (under TCG a guest
    command's start costs about a second); the home's own component is its
    array's first leg. When a node goes down, each home drops its
    components in one call, and what the guest reports missing is kept."""
    text = ALL_FLASH + '[profile.volumes]\nper_unit = 2\nsize = "8M"\nftt = 1\n'
    topo = load(tmp_path, text, MESH.format(nodes=3))
    steps = Steps(monkeypatch)
    state = profiles.provision(topo, {f"node{i}": i for i in (1, 2, 3)}, lambda _: None)
    per_node = [(n, s) for n, s, _ in steps.calls if s in ("components.sh", "policy-volumes.sh")]
    assert sorted(per_node) == sorted((f"node{i}", s) for i in (1, 2, 3)
                                      for s in ("components.sh", "policy-volumes.sh"))
    arrays = {n: a for n, s, a in steps.calls if s == "policy-volumes.sh"}
    # md's data 5 MiB into each 8 MiB copy (8/8 + 4 MiB), the copies filled where they lie
    assert [spec.split()[:8] for spec in arrays["node1"]] == [
        ["/dev/storlab-policy/u1v1", "100", "1", "512", "8", "5120", "components", "/dev/mapper/x"],
        ["/dev/storlab-policy/u1v2", "101", "1", "512", "8", "5120", "components", "/dev/mapper/x"]]
    volumes = state["policy_volumes"]
    assert all(v["local"] == "/dev/mapper/x" and v["missing"] == [] for v in volumes)
    # every holder of a copy fills it with the same bytes (one seed a volume), at md's offset
    fills = {}
    for node, script, specs in steps.calls:
        for spec in specs if script == "components.sh" else []:
            home, volume, *_, fill = spec.split()
            fills.setdefault((home, volume), set()).add(fill)
    assert len(fills) == 6 and all(len(f) == 1 for f in fills.values()), fills
    assert all(f.startswith("5120:8:") for (f,) in fills.values())
    assert len({f for (f,) in fills.values()}) == 6

    lost = [v for v in volumes if v["home"] == "node1" and "node2" in v["holders"]]
    assert lost

    def run_step(domain, node, script, args, timeout_s=None):
        steps.calls.append((node, script, list(args)))
        return {"missing": [f"{spec.split()[0]} nqn.x:{spec.split()[-1].split('@')[0]}"
                            "@[fd00::1]:4420" for spec in args if "node2@" in spec]}
    steps.calls.clear()
    monkeypatch.setattr(profiles, "run_step", run_step)
    profiles._policy_failover(topo, state, {"node1": 1, "node3": 3}, "node2", lambda _: None)
    homes = [n for n, s, _ in steps.calls]
    assert sorted(homes) == sorted(set(homes)) and "node2" not in homes
    assert all(v["missing"] == ["node2"] for v in lost)


@pytest.mark.parametrize("method, nodes, fill, written", [
    ("raid5", 4, "5120:8:", "components"),     # 24 MiB: 8 MiB a piece, md's data 5 MiB in
    ("raid6", 6, "-", "array")])
def test_erasure_coded_pieces_filled_where_they_lie_or_the_volume_through_md(
        tmp_path, monkeypatch, method, nodes, fill, written):
    """RAID-5 3+1: every piece of a volume is filled with the same bytes
    (one seed a volume, its share of the volume from md's data offset), so
    md is created clean with nothing written; RAID-6's pieces are left to
    the array, which the home writes once."""
    text = RAID0 + f'[profile.volumes]\nper_unit = 2\nsize = "24M"\nmethod = "{method}"\n'
    topo = load(tmp_path, text, MESH.format(nodes=nodes))
    steps = Steps(monkeypatch)
    profiles.provision(topo, {f"node{i}": i for i in range(1, nodes + 1)}, lambda _: None)
    fills = {}
    for node, script, specs in steps.calls:
        for spec in specs if script == "components.sh" else []:
            home, volume, *_, piece_fill = spec.split()
            fills.setdefault((home, volume), []).append(piece_fill)
    assert len(fills) == 2 * nodes
    for pieces in fills.values():
        assert len(pieces) == topo.profile.volumes.components and len(set(pieces)) == 1
        assert pieces[0].startswith(fill)
    assert len({pieces[0] for pieces in fills.values()}) == (2 * nodes if fill != "-" else 1)
    arrays = [spec for node, script, specs in steps.calls if script == "policy-volumes.sh"
              for spec in specs]
    assert len(arrays) == 2 * nodes and all(spec.split()[6] == written for spec in arrays)


@pytest.mark.parametrize("text, nodes, expected", [
    (RAID0 + '[profile.volumes]\nsize = "8M"\nstripe_width = 2\n', 3,
     "profile.volumes.stripe_width = 2: stripes over a disk group's capacity devices: needs "
     "profile.disk_group"),
    (ALL_FLASH + 'stripe_width = 2\n[profile.volumes]\nsize = "8M"\nstripe_width = 2\n', 3,
     "profile.volumes.stripe_width = 2: a volume's stripes replace the disk group's: needs "
     "profile.disk_group.stripe_width = 1, not 2"),
    (ALL_FLASH + '[profile.volumes]\nsize = "8M"\nstripe_width = 5\n', 3,
     "profile.volumes.stripe_width = 5: node node1 holds components of these volumes but "
     "has 4 capacity devices"),
    (ALL_FLASH + 'nodes = ["node1"]\n[profile.volumes]\nsize = "8M"\nftt = 1\n'
     'stripe_width = 1\n', 3, "profile.volumes.stripe_width = 1: node node2 holds components "
     "of these volumes but builds no disk group"),
    (ALL_FLASH + '[profile.volumes]\nsize = "8M"\nstripe_width = 13\n', 3,
     "profile.volumes.stripe_width = 13: must be 1..12"),
    (ALL_FLASH + '[profile.volumes]\nper_unit = 3\nsize = "250M"\nstripe_width = 2\n', 3,
     "profile: node node1: LV u1v3 (252 MiB over 2 capacity devices) does not fit: disk0 has "
     "120 MiB free"),
])
def test_bad_stripe_widths(tmp_path, text, nodes, expected):
    assert expected in error(tmp_path, text, MESH.format(nodes=nodes))


def test_components_count_against_their_holders_space(tmp_path):
    """ftt 3 puts 4 copies of every volume on 4 of the 7 nodes: each node
    holds 4/7 x 7 x 8 = 32 copies of 16 MiB, each LV with md's superblock
    and bitmap ahead (16/8 + 4 MiB): 32 x 24 MiB, more than its RAID-0 of
    two 256 MiB disks holds."""
    text = RAID0 + '[profile.volumes]\nunits = 1\nper_unit = 8\nsize = "16M"\nftt = 3\n'
    assert "needs 768 MiB for its replica and workload volumes" in \
        error(tmp_path, text, MESH.format(nodes=7))


def test_named_volume_sets_each_with_its_policy(tmp_path):
    """Sets side by side: their own keys, names with the set's prefix, the
    space of every set's components counted on each holder."""
    text = (RAID0 + '[profile.volume_sets.mirror]\nsize = "8M"\nftt = 1\n'
            '[profile.volume_sets.ec]\nsize = "24M"\nmethod = "raid5"\nnodes = ["node2"]\n')
    p = load(tmp_path, text, MESH.format(nodes=4)).profile
    assert p.volumes is None and list(p.volume_sets) == ["mirror", "ec"]
    mirror, ec = p.volume_sets["mirror"], p.volume_sets["ec"]
    assert p.all_volume_sets() == [mirror, ec] and p.volume_set("ec") is ec
    assert p.volume_set("") is None and p.volume_set("nope") is None
    assert mirror.names()[0] == ("node1", 0, "mirror-u1v1") and ec.unit_names(1) == ["ec-u1v1"]
    assert ec.holders[("node2", 0)] == ["node2", "node3", "node4", "node1"]
    assert mirror.guest_path("mirror-u1v1") == "/dev/storlab-policy/mirror-u1v1"
    assert mirror.key_path == "profile.volume_sets.mirror"
    # a mirror's copies and RAID-5's pieces are written where they lie
    assert mirror.fills_components and ec.fills_components
    assert (mirror.fill_mib(), ec.fill_mib()) == (8, 8)
    assert (mirror.md_data_offset_kib(), ec.md_data_offset_kib()) == (5 * 1024, 5 * 1024)


@pytest.mark.parametrize("text, expected", [
    ('[profile.volume_sets.Bad]\nsize = "8M"\n', "profile.volume_sets.Bad = 'Bad': must be a "
                                                 "set name"),
    ('[profile.volume_sets.m]\nsize = "8M"\nftt = 3\n', "profile.volume_sets.m.ftt = 3: mirror "
                                                        "with ftt 3 needs 7 nodes"),
    ('[profile.volume_sets.m]\nsize = "8M"\ncopies = 2\n', "profile.volume_sets.m: unknown key "
                                                           "'copies'"),
    ("[profile.volume_sets]\nm = 3\n", "profile.volume_sets.m = 3: must be a table"),
])
def test_bad_volume_sets(tmp_path, text, expected):
    assert expected in error(tmp_path, RAID0 + text, MESH.format(nodes=4))


def test_a_volumes_sweep_frames_the_nodes_holding_components(tmp_path):
    """The device stats of a point on policy volumes: the active node's and
    every node holding a component of its volumes."""
    topo_path = tmp_path / "lab.toml"
    topo_path.write_text(MESH.format(nodes=5) + RAID0 + '[profile.volumes]\nsize = "8M"\n'
                         'per_unit = 2\nftt = 1\n')
    sweep_path = tmp_path / "s.toml"
    sweep_path.write_text(f'name = "s"\ntopology = "{topo_path}"\n[workload]\n'
                          'target = "volumes"\nnodes = ["node2"]\nsize = "8M"\n')
    plan = sweep_plan.make(sweep_schema.load(str(sweep_path)), topology.load(str(topo_path)))
    # node2's two volumes: copies on node2, node3 and node2, node4
    assert sorted({n for n, _ in plan.stats_devices}) == ["node2", "node3", "node4"]


# ---- snapshots

def test_snapshot_room_is_reserved_with_the_volume(tmp_path):
    """Redo-log: snapshot_depth redo logs after the volume, each able to take
    a full rewrite with its exception store (8 MiB + 1/128 + 1 MiB, in LVM's
    4 MiB extents); redirect-on-write: a thin pool's metadata and the volume
    plus a full rewrite per snapshot. A mirror's copies carry the room."""
    v = policy(tmp_path, 'snapshots = "redo-log"\nsnapshot_depth = 2\n')
    assert (v.snapshots, v.snapshot_depth, v.redo_log_mib()) == ("redo-log", 2, 12)
    assert v.base_mib() == 8 + 2 * 12 and not v.has_policy
    assert v.guest_path("u1v1") == "/dev/mapper/storlab-vol-u1v1"
    assert v.base_path("u1v1") == "/dev/storlab/u1v1"
    v = policy(tmp_path, 'snapshots = "redirect-on-write"\n')
    assert v.snapshot_depth == 3 and v.thin_meta_mib() == 4 and v.base_mib() == 4 + 8 * 4
    v = policy(tmp_path, 'snapshots = "redo-log"\nftt = 1\n', per_unit=1)
    assert v.component_mib() == v.base_mib() == 8 + 3 * 12
    assert v.base_path("u1v1") == "/dev/storlab-policy/u1v1"
    assert policy(tmp_path, "").base_mib() == 8


@pytest.mark.parametrize("keys, expected", [
    ('snapshots = "clone"\n', "profile.volumes.snapshots = 'clone': unknown snapshot mechanism "
                              "(known: redo-log, redirect-on-write)"),
    ('snapshots = "redo-log"\nsnapshot_depth = 9\n', "profile.volumes.snapshot_depth = 9: "
                                                      "must be 1..8"),
    ("snapshot_depth = 2\n", "profile.volumes.snapshot_depth = 2: needs snapshots"),
    ('snapshots = "redo-log"\nper_unit = 8\nsnapshot_depth = 8\n',
     # 8 volumes of 16 MiB and 8 redo logs of 20 MiB each: 8 x 176 MiB
     "node node1 needs 1408 MiB for its replica and workload volumes"),
])
def test_bad_snapshot_settings(tmp_path, keys, expected):
    text = RAID0 + '[profile.volumes]\nsize = "16M"\n' + keys
    assert expected in error(tmp_path, text, MESH.format(nodes=3))


class SnapshotSteps:
    """snapshot.sh's calls recorded instead of run."""
    def __init__(self, monkeypatch):
        self.calls = []
        monkeypatch.setattr(snapshots, "run_step", self.run_step)

    def run_step(self, domain, node, script, args, timeout_s=None):
        self.calls.append((node, script, [str(a) for a in args]))
        return {}


def test_snapshot_ids_slots_and_depth(tmp_path, monkeypatch):
    """Ids count up; a redo log slot is reused once its snapshot is gone; the
    depth is a limit; delete takes the oldest by default; a node coming
    back rebuilds its chain oldest first."""
    topo = load(tmp_path, RAID0 + '[profile.volumes]\nsize = "8M"\nsnapshots = "redo-log"\n')
    steps, state = SnapshotSteps(monkeypatch), {}
    made = [snapshots.create(topo, state, None, "node2", "u1v1") for _ in range(3)]
    assert [(s["id"], s["slot"]) for s in made] == [(1, 1), (2, 2), (3, 3)]
    with pytest.raises(UserError, match="has 3 snapshots, as many as "
                       "profile.volumes.snapshot_depth allows"):
        snapshots.create(topo, state, None, "node2", "u1v1")
    assert snapshots.delete(topo, state, None, "node2", "u1v1", 2)["id"] == 2
    assert (snapshots.create(topo, state, None, "node2", "u1v1")["slot"]) == 2
    assert snapshots.delete(topo, state, None, "node2", "u1v1")["id"] == 1
    with pytest.raises(UserError, match=r"has no snapshot 7 \(its snapshots: 3, 4\)"):
        snapshots.delete(topo, state, None, "node2", "u1v1", 7)
    assert steps.calls[0] == ("node2", "snapshot.sh", ["create", "u1v1", "redo-log",
                                                       "/dev/storlab/u1v1", "8", "12", "4",
                                                       "1", "1"])
    steps.calls.clear()
    snapshots.open_all(topo, {"node2": None}, state, "node2")
    assert steps.calls == [("node2", "snapshot.sh", ["open", "u1v1", "redo-log",
                                                     "/dev/storlab/u1v1", "8", "12", "4",
                                                     "3:3", "4:2"])]
    with pytest.raises(UserError, match="node node2 has no workload volume 'u9v9' "
                       r"\(its volumes: u1v1\)"):
        snapshots.create(topo, state, None, "node2", "u9v9")
    plain = load(tmp_path, RAID0 + '[profile.volumes]\nsize = "8M"\n')
    with pytest.raises(UserError, match='takes no snapshots: give profile.volumes snapshots'):
        snapshots.create(plain, {}, None, "node1", "u1v1")
