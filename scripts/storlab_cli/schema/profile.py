"""The [profile] table of a topology file: what storage stack `storlab up`
builds in the guests, validated strictly before anything starts.

    [profile.raid]          md RAID over a node's disks            -> /dev/md0
    level = 10              0 | 1 | 10 | 5 | 6
    chunk_kib = 64          4..4096, a power of two (not for level 1)
    devices = ["disk0", ...] optional; default every disk of the node
    nodes = ["node1", ...]  optional; the nodes that build it (default every node)

    [profile.disk_group]    a cache device in front of capacity devices -> /dev/mapper/diskgroup
    mode = "hybrid"         "hybrid" (read cache + write buffer) | "all-flash" (write buffer only)
    cache = "cache0"        the cache device (of the first group)
    capacity = [...]        optional; default every disk of the node outside the cache's
                            device table
    groups = 1              disk groups per node, 1..8: group k's cache is the k-th device
                            of the cache's table from it (cache0, cache1, ...), its capacity
                            the k-th of as many equal runs of the capacity devices; with
                            more than one, the node's volume group is made of every group's
                            capacity devices (/dev/mapper/diskgroup, diskgroup2, ...)
    cache_size = "256M"     optional; default the whole cache device (less LVM's share);
                            every group's cache the same (the smallest cache device's)
    read_cache_percent = 70 hybrid only, 10..90: the read cache's share, the rest buffers writes
    stripe_width = 1        1..len(capacity): capacity devices an extent is striped over
    stripe_kib = 64         stripe unit, 4..4096, a power of two
    space_efficiency = "dedup-compression"   all-flash only, simulator only: deduplication
                            and compression at destage ("compression": compression alone);
                            the data is as a sweep's workload says (dedupe_percentage,
                            buffer_compress_percentage). A lab refuses it (Debian 12's
                            kernel has no dm-vdo)
    nodes = ["node1", ...]  optional; the nodes that build it (default every node)

    [profile.replicas]      replicated volumes, each mirrored synchronously to ftt other nodes
    ftt = 1                 failures to tolerate, 0..3 (copies = ftt + 1)
    primary = "node1"       optional; the node whose volume is replicated (default the first)
    primaries = "all"       instead of primary: "all" or a list of nodes, one replicated
                            volume each (the VSA shape: every host's share mirrored)
    peers = ["node2"]       optional with one primary; default the next ftt nodes after
                            the primary (in node order, wrapping) linked to it
    size = "256M"           each replicated volume

    [profile.nfs]           each replicated volume exported over NFSv4 by the node serving
    mount_point = "/mnt/storlab"   it; every node sees volume V at <mount_point>/V

A replicated volume is named by its primary node (its home) and is
/dev/md<index> on whichever node serves it: the primary, or after that node
fails the first running peer (`storlab node LAB NODE down` fails it over).

    [profile.volumes], [profile.volume_sets.NAME]   workload volumes and
                            their storage policies: schema/volumes.py

Each node's local volume is its RAID, else its disk group, else its first
disk; the replica copies it holds and its workload volumes are LVM volumes
on it. A node that holds neither needs no disk (an NFS client, say).
"""
from dataclasses import dataclass, field

from storlab_cli.schema import capacity_layout, volumes as volume_schema
from storlab_cli.schema.profile_common import (
    FTT_RANGE, MIB, linked, md_data_offset_bytes, mib_up, node_names, nodes_of, size_of)

RAID_LEVELS = (0, 1, 10, 5, 6)
RAID_MIN_DEVICES = {0: 2, 1: 2, 10: 2, 5: 3, 6: 4}
DISK_GROUP_MODES = ("hybrid", "all-flash")
PROFILE_KEYS = ("raid", "disk_group", "replicas", "nfs", "volumes", "volume_sets")
RAID_KEYS = ("level", "chunk_kib", "devices", "nodes")
DISK_GROUP_KEYS = ("mode", "cache", "capacity", "groups", "cache_size", "read_cache_percent",
                   "stripe_width", "stripe_kib", "space_efficiency", "nodes")
GROUPS_RANGE = (1, 8)
SPACE_EFFICIENCY = ("dedup-compression", "compression")
REPLICAS_KEYS = ("ftt", "primary", "primaries", "peers", "size")
NFS_KEYS = ("mount_point",)
DEFAULT_CHUNK_KIB = 64
DEFAULT_READ_CACHE_PERCENT = 70        # the hybrid studies' 70 % read / 30 % write split
READ_CACHE_PERCENT_RANGE = (10, 90)
DEFAULT_MOUNT_POINT = "/mnt/storlab"
# LVM keeps 1 MiB of metadata per PV and allocates 4 MiB extents.
LVM_OVERHEAD_BYTES = 8 * MIB
MIN_CACHE_PART_BYTES = 8 * MIB


@dataclass
class Raid:
    level: int
    chunk_kib: int
    devices: dict          # node -> [device names], for the nodes that build it


@dataclass
class GroupMembers:
    """One disk group of a node: its name in the guest and its devices."""
    name: str              # "diskgroup", "diskgroup2", ...: /dev/mapper/NAME
    cache: str
    capacity: list


@dataclass
class DiskGroup:
    mode: str
    cache: str             # the first group's cache device
    capacity: dict         # node -> every group's capacity devices, group after group
    cache_mib: dict        # node -> MiB of each group's cache device used
    read_cache_percent: int
    stripe_width: int
    stripe_kib: int
    space_efficiency: str = ""     # "" (none) or one of SPACE_EFFICIENCY
    groups: int = 1
    members: dict = field(default_factory=dict)   # node -> [GroupMembers], in order

    def cache_parts_bytes(self, node):
        """(read cache, write buffer) bytes of one of node's caches as it is built."""
        return cache_parts(self.mode, self.cache_mib[node] * MIB, self.read_cache_percent)

    def group_of(self, node, device):
        """The group of node whose capacity device is device."""
        return next(g for g in self.members[node] if device in g.capacity)


def group_name(index):
    """The k-th disk group's device-mapper name (index from 0): the first
    keeps the name a node with one group has always had."""
    return "diskgroup" if index == 0 else f"diskgroup{index + 1}"


@dataclass
class ReplicatedVolume:
    name: str              # its home node's name: the primary it starts on
    index: int             # 1..: /dev/md<index> wherever it is served; its NFS fsid
    primary: str
    peers: list            # the nodes holding the other copies, in failover order

    @property
    def holders(self):
        return [self.primary] + self.peers


@dataclass
class Replicas:
    ftt: int
    size_mib: int
    volumes: list          # ReplicatedVolume, one per primary

    def held_by(self, node):
        return [v for v in self.volumes if node in v.holders]


@dataclass
class Nfs:
    mount_point: str


@dataclass
class Profile:
    raid: Raid | None = None
    disk_group: DiskGroup | None = None
    replicas: Replicas | None = None
    nfs: Nfs | None = None
    volumes: volume_schema.Volumes | None = None
    volume_sets: dict = field(default_factory=dict)   # name -> Volumes, in file order
    local_bytes: dict = field(default_factory=dict)   # node -> estimated local volume size
    # node -> {LV name: capacity devices} where volumes have stripe_width
    lv_devices: dict = field(default_factory=dict)

    def all_volume_sets(self):
        """profile.volumes (when given), then the named sets."""
        return ([self.volumes] if self.volumes is not None else []) + list(self.volume_sets.values())

    def volume_set(self, name):
        """The set a workload's volume_set names ("": profile.volumes), or None."""
        return self.volumes if name == "" else self.volume_sets.get(name)

    def lv_devices_of(self, node, lv):
        """The capacity devices LV lv of node lies on, or None (its volume
        group is its local volume as it is: capacity_layout.py)."""
        return self.lv_devices.get(node, {}).get(lv)

    def checksummed_components(self, node):
        """How many of node's components are under dm-integrity (a policy
        with checksum = true)."""
        return sum(v.held_by(node) for v in self.all_volume_sets() if v.checksum)

    def needs_volume_group(self, node):
        """Whether node holds a replica copy or workload volumes (LVs)."""
        return bool((self.replicas is not None and self.replicas.held_by(node))
                    or any(v.held_by(node) for v in self.all_volume_sets()))


def cache_parts(mode, size_bytes, read_percent):
    """(read cache, write buffer) bytes of a disk group's cache of size_bytes:
    hybrid, read_percent % of it reads and the rest buffers writes; all-flash,
    no read cache, all of it a write buffer."""
    if mode != "hybrid":
        return 0, size_bytes
    read_bytes = size_bytes * read_percent // 100
    return read_bytes, size_bytes - read_bytes


def raid_usable_bytes(level, member_bytes, count):
    member = member_bytes - md_data_offset_bytes(member_bytes)
    factor = {0: count, 1: 1, 10: count / 2, 5: count - 1, 6: count - 2}[level]
    return int(member * factor)


def parse(loader, raw, topo):
    """The validated Profile of raw (the [profile] table) for topo, or None.
    loader is a schema.loader.Loader: its fail() names the file and key."""
    table = loader.table(raw, "profile")
    loader.check_keys(table, PROFILE_KEYS, "profile")
    if not table:
        return None
    profile = Profile()
    if "raid" in table and "disk_group" in table:
        loader.fail("profile", "give at most one of profile.raid and profile.disk_group "
                    "(each builds the node's local volume)")
    if "raid" in table:
        profile.raid = _raid(loader, table["raid"], topo)
    if "disk_group" in table:
        profile.disk_group = _disk_group(loader, table["disk_group"], topo)
    if "replicas" in table:
        profile.replicas = _replicas(loader, table["replicas"], topo)
    if "nfs" in table:
        if profile.replicas is None:
            loader.fail("profile.nfs", "needs profile.replicas (it exports the replicated volume)")
        profile.nfs = _nfs(loader, table["nfs"], topo, profile.replicas)
    if "volumes" in table:
        profile.volumes = volume_schema.parse(loader, table["volumes"], topo, "")
    if "volume_sets" in table:
        sets = loader.table(table["volume_sets"], "profile.volume_sets")
        for name, value in sets.items():
            loader.name(name, f"profile.volume_sets.{name}", volume_schema.VOLUME_SET_NAME_RE,
                        "a set name: a lowercase letter, then up to 11 lowercase letters "
                        "or digits")
            profile.volume_sets[name] = volume_schema.parse(loader, value, topo, name)
    _check_stripes(loader, profile)
    _check_space(loader, profile, topo)
    profile.lv_devices = capacity_layout.layout(loader, profile, topo)
    return profile


def _check_stripes(loader, profile):
    """A set's stripe_width stripes its components over capacity devices:
    each node holding one needs a disk group of that many whose own
    capacity LV is not striped (capacity_layout.py)."""
    group = profile.disk_group
    for v in profile.all_volume_sets():
        if not v.stripe_width:
            continue
        key = f"{v.key_path}.stripe_width"
        if group is None:
            loader.fail(key, "stripes over a disk group's capacity devices: needs "
                        "profile.disk_group", v.stripe_width)
        if group.stripe_width != 1:
            loader.fail(key, "a volume's stripes replace the disk group's: needs "
                        f"profile.disk_group.stripe_width = 1, not {group.stripe_width}",
                        v.stripe_width)
        for node in sorted({n for holders in v.holders.values() for n in holders}):
            count = len(group.capacity.get(node, []))
            if count < v.stripe_width:
                loader.fail(key, f"node {node} holds components of these volumes but "
                            + (f"has {count} capacity device{'s' if count != 1 else ''}"
                               if count else "builds no disk group (profile.disk_group.nodes)"),
                            v.stripe_width)


def _device_list(loader, value, key_path, node):
    names = [d.name for d in node.devices]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        loader.fail(key_path, "must be a non-empty list of device names", value)
    seen = set()
    for name in value:
        if name not in names:
            loader.fail(key_path, f"node {node.name} has no device '{name}' "
                        f"(devices: {', '.join(names) or 'none'})", value)
        if name in seen:
            loader.fail(key_path, f"device '{name}' listed twice", value)
        seen.add(name)
    return list(value)


def _power_of_two(loader, value, key_path):
    loader.integer(value, key_path, (4, 4096))
    if value & (value - 1):
        loader.fail(key_path, "must be a power of two", value)
    return value


def _raid(loader, value, topo):
    table = loader.table(value, "profile.raid")
    loader.check_keys(table, RAID_KEYS, "profile.raid")
    if "level" not in table:
        loader.fail("profile.raid.level", "missing (0, 1, 10, 5 or 6)")
    level = table["level"]
    if isinstance(level, bool) or level not in RAID_LEVELS:
        loader.fail("profile.raid.level", "unknown RAID level (known: 0, 1, 10, 5, 6)", level)
    chunk_kib = _power_of_two(loader, table.get("chunk_kib", DEFAULT_CHUNK_KIB),
                              "profile.raid.chunk_kib")
    devices = {}
    for node in nodes_of(loader, table, "profile.raid.nodes", topo):
        if "devices" in table:
            names = _device_list(loader, table["devices"], "profile.raid.devices", node)
        else:
            names = [d.name for d in node.devices]
        if len(names) < RAID_MIN_DEVICES[level]:
            loader.fail("profile.raid.level", f"RAID {level} needs at least "
                        f"{RAID_MIN_DEVICES[level]} devices; node {node.name} has "
                        f"{len(names)}", level)
        devices[node.name] = names
    return Raid(level, chunk_kib, devices)


def _disk_group(loader, value, topo):
    path = "profile.disk_group"
    table = loader.table(value, path)
    loader.check_keys(table, DISK_GROUP_KEYS, path)
    for required in ("mode", "cache"):
        if required not in table:
            loader.fail(f"{path}.{required}", "missing")
    mode = loader.choice(table["mode"], f"{path}.mode", DISK_GROUP_MODES, "disk group mode")
    cache = loader.string(table["cache"], f"{path}.cache")
    if "read_cache_percent" in table and mode != "hybrid":
        loader.fail(f"{path}.read_cache_percent", f"only with mode = 'hybrid' (mode '{mode}' "
                    "has no read cache)", table["read_cache_percent"])
    read_percent = loader.integer(table.get("read_cache_percent", DEFAULT_READ_CACHE_PERCENT),
                                  f"{path}.read_cache_percent", READ_CACHE_PERCENT_RANGE)
    stripe_kib = _power_of_two(loader, table.get("stripe_kib", DEFAULT_CHUNK_KIB),
                               f"{path}.stripe_kib")
    groups = loader.integer(table.get("groups", 1), f"{path}.groups", GROUPS_RANGE)
    cache_size = size_of(loader, table["cache_size"], f"{path}.cache_size") \
        if "cache_size" in table else None
    capacity, cache_mib, members, stripe_width = {}, {}, {}, None
    for node in nodes_of(loader, table, f"{path}.nodes", topo):
        _device_list(loader, [cache], f"{path}.cache", node)
        caches = _group_caches(loader, cache, groups, node)
        if "capacity" in table:
            names = _device_list(loader, table["capacity"], f"{path}.capacity", node)
            for name in caches:
                if name in names:
                    loader.fail(f"{path}.capacity", f"the cache device '{name}' cannot also be "
                                "a capacity device", table["capacity"])
        else:
            table_of_cache = node_device(node, cache).table
            names = [d.name for d in node.devices if d.table != table_of_cache]
            if not names:
                loader.fail(path, f"node {node.name} has no capacity device besides "
                            f"the cache's table '{table_of_cache}'")
        if len(names) % groups:
            loader.fail(f"{path}.groups", f"node {node.name}'s {len(names)} capacity devices "
                        f"({', '.join(names)}) do not split into {groups} equal groups", groups)
        per_group = len(names) // groups
        stripe_width = loader.integer(table.get("stripe_width", 1), f"{path}.stripe_width",
                                      (1, per_group))
        if groups > 1 and stripe_width != 1:
            loader.fail(f"{path}.stripe_width", f"must be 1 with groups = {groups}: the node's "
                        "volume group is made of every group's capacity devices, each one "
                        "region (stripe the volumes instead: profile.volumes.stripe_width)",
                        stripe_width)
        capacity[node.name] = names
        members[node.name] = [GroupMembers(group_name(k), caches[k],
                                           names[k * per_group:(k + 1) * per_group])
                              for k in range(groups)]
        size = _cache_size(loader, path, table, cache_size, caches, node)
        read_bytes, write_bytes = cache_parts(mode, size, read_percent)
        if min([read_bytes, write_bytes] if mode == "hybrid" else [write_bytes]) \
                < MIN_CACHE_PART_BYTES:
            loader.fail(f"{path}.cache_size", f"too small: every cache part needs "
                        f"{MIN_CACHE_PART_BYTES // MIB} MiB (node {node.name}: "
                        f"{size // MIB} MiB)", table.get("cache_size", f"{size // MIB}M"))
        cache_mib[node.name] = size // (4 * MIB) * 4
    space_efficiency = ""
    if "space_efficiency" in table:
        space_efficiency = loader.choice(table["space_efficiency"], f"{path}.space_efficiency",
                                         SPACE_EFFICIENCY, "space efficiency")
        if mode != "all-flash":
            loader.fail(f"{path}.space_efficiency", "only with mode = 'all-flash' (a hybrid "
                        "group's capacity devices are disks)", space_efficiency)
    return DiskGroup(mode, cache, capacity, cache_mib, read_percent, stripe_width, stripe_kib,
                     space_efficiency, groups, members)


def node_device(node, name):
    return next(d for d in node.devices if d.name == name)


def _group_caches(loader, cache, groups, node):
    """The cache devices of node's groups: cache, then the next ones of its
    device table (cache0, cache1, ...)."""
    first = node_device(node, cache)
    names = [cache] + [f"{first.table}{first.index + k}" for k in range(1, groups)]
    have = {d.name: d.table for d in node.devices}
    for k, name in enumerate(names[1:], start=2):
        if have.get(name) != first.table:
            loader.fail("profile.disk_group.groups", f"node {node.name} has no device '{name}' "
                        f"for group {k}'s cache (group k's cache is the k-th device of "
                        f"'{cache}''s table from it)", groups)
    return names


def _cache_size(loader, path, table, cache_size, caches, node):
    """The bytes of each group's cache: cache_size, or the smallest cache
    device's usable space; no larger than any cache device holds."""
    usable = {d.name: d.size_bytes - LVM_OVERHEAD_BYTES for d in node.devices if d.name in caches}
    smallest = min(caches, key=lambda name: usable[name])
    if cache_size is None:
        return usable[smallest]
    if cache_size > usable[smallest]:
        device_bytes = usable[smallest] + LVM_OVERHEAD_BYTES
        loader.fail(f"{path}.cache_size", f"larger than its device: '{smallest}' of node "
                    f"{node.name} holds {device_bytes // MIB} MiB, at most "
                    f"{max(usable[smallest], 0) // MIB} MiB usable", table["cache_size"])
    return cache_size


def _replicas(loader, value, topo):
    path = "profile.replicas"
    table = loader.table(value, path)
    loader.check_keys(table, REPLICAS_KEYS, path)
    names = [n.name for n in topo.nodes]
    ftt = loader.integer(table.get("ftt", 1), f"{path}.ftt", FTT_RANGE)
    if ftt > len(names) - 1:
        loader.fail(f"{path}.ftt", f"{ftt + 1} copies need {ftt + 1} nodes; the lab has "
                    f"{len(names)}", ftt)
    if "size" not in table:
        loader.fail(f"{path}.size", 'missing: the replicated volume\'s size, e.g. "256M"')
    size_mib = mib_up(size_of(loader, table["size"], f"{path}.size"))
    primaries = _primaries(loader, table, topo)
    if "peers" in table and len(primaries) > 1:
        loader.fail(f"{path}.peers", "only with a single primary (with several, each "
                    "volume's peers are the next nodes after its primary)", table["peers"])
    volumes = []
    for index, primary in enumerate(primaries, start=1):
        peers = _peers(loader, table, topo, primary, ftt) if "peers" in table else \
            _next_linked(topo, names, primary)[:ftt]
        if len(peers) < ftt:
            loader.fail(f"{path}.ftt", f"the primary {primary} has links to {len(peers)} "
                        f"nodes; ftt = {ftt} needs {ftt}", ftt)
        volumes.append(ReplicatedVolume(primary, index, primary, list(peers)))
    return Replicas(ftt, size_mib, volumes)


def _primaries(loader, table, topo):
    path = "profile.replicas"
    names = [n.name for n in topo.nodes]
    if "primary" in table and "primaries" in table:
        loader.fail(path, "give primary (one replicated volume) or primaries (several), "
                    "not both")
    if "primaries" not in table:
        primary = loader.string(table.get("primary", names[0]), f"{path}.primary")
        if primary not in names:
            loader.fail(f"{path}.primary", f"no such node (nodes: {', '.join(names)})", primary)
        return [primary]
    primaries = table["primaries"]
    if primaries == "all":
        return [n.name for n in topo.nodes if n.devices]      # a diskless node holds no copy
    return node_names(loader, primaries, f"{path}.primaries", topo,
                       expected='"all" or a non-empty list of node names')


def _next_linked(topo, names, primary):
    """The other nodes with a disk linked to primary, starting after it in
    node order and wrapping, so primaries = "all" spreads the copies round
    the ring."""
    at = names.index(primary)
    ring = names[at + 1:] + names[:at]
    return [n for n in ring if linked(topo, primary, n) and topo.node(n).devices]


def _peers(loader, table, topo, primary, ftt):
    path = "profile.replicas.peers"
    names = [n.name for n in topo.nodes]
    peers = table["peers"]
    if not isinstance(peers, list) or not all(isinstance(p, str) for p in peers):
        loader.fail(path, "must be a list of node names", peers)
    if len(peers) != ftt:
        loader.fail(path, f"ftt = {ftt} needs exactly {ftt} peers", peers)
    for peer in peers:
        if peer not in names or peer == primary or peers.count(peer) > 1:
            loader.fail(path, f"'{peer}' is not another node, once "
                        f"(nodes: {', '.join(names)}; primary {primary})", peers)
        if not linked(topo, primary, peer):
            loader.fail(path, f"peer {peer} has no link to the primary {primary} "
                        "(see [links])", peers)
    return peers


def _nfs(loader, value, topo, replicas):
    table = loader.table(value, "profile.nfs")
    loader.check_keys(table, NFS_KEYS, "profile.nfs")
    mount_point = loader.string(table.get("mount_point", DEFAULT_MOUNT_POINT),
                                "profile.nfs.mount_point")
    if (not mount_point.startswith("/") or mount_point == "/"
            or not all(c.isalnum() or c in "/-_." for c in mount_point)):
        loader.fail("profile.nfs.mount_point", "must be an absolute path of a-z, 0-9, '/-_.'",
                    mount_point)
    for volume in replicas.volumes:
        if not any(linked(topo, volume.primary, n.name) for n in topo.nodes):
            loader.fail("profile.nfs", f"no node has a link to the primary {volume.primary} "
                        "to mount its export")
    return Nfs(mount_point)


def local_volume_bytes(profile, node):
    """About how much the node's local volume holds (conservative)."""
    sizes = {d.name: d.size_bytes for d in node.devices}
    if profile.raid is not None and node.name in profile.raid.devices:
        names = profile.raid.devices[node.name]
        return raid_usable_bytes(profile.raid.level, min(sizes[n] for n in names), len(names))
    if profile.disk_group is not None and node.name in profile.disk_group.capacity:
        group = profile.disk_group
        total = 0
        for members in group.members[node.name]:
            per_device = min(sizes[n] for n in members.capacity) - LVM_OVERHEAD_BYTES
            total += len(members.capacity) // group.stripe_width * group.stripe_width * per_device
        return total
    return node.devices[0].size_bytes if node.devices else 0


def _check_space(loader, profile, topo):
    for node in topo.nodes:
        local = local_volume_bytes(profile, node)
        profile.local_bytes[node.name] = local
        if not profile.needs_volume_group(node.name):
            continue
        if not node.devices:
            loader.fail("profile", f"node {node.name} has no disk to hold its replica copies "
                        "and workload volumes")
        need_mib = 0
        if profile.replicas:
            need_mib += len(profile.replicas.held_by(node.name)) * profile.replicas.size_mib
        for v in profile.all_volume_sets():
            need_mib += v.held_by(node.name) * (v.component_lv_mib() if v.has_policy
                                                else v.base_mib())
        usable = local - LVM_OVERHEAD_BYTES
        if need_mib * MIB > usable:
            loader.fail("profile", f"node {node.name} needs {need_mib} MiB for its replica "
                        f"and workload volumes but its local volume holds about "
                        f"{max(usable, 0) // MIB} MiB")
