"""Workload volumes ("VMDKs") of a topology's [profile], and their storage
policies (schema/profile.py reads the rest of the table):

    [profile.volumes]       workload volumes ("VMDKs") on every node, written once
    units = 1               workload units per node, 1..16
    per_unit = 8            volumes per unit, 1..64
    size = "32M"
    nodes = ["node1", ...]  optional; the nodes that get them (default every node)
    ftt = 0                 optional: failures to tolerate, 0..3 (a storage policy)
    method = "mirror"       optional: "mirror" (ftt + 1 copies), "raid5" (3 + 1 pieces,
                            ftt 1) or "raid6" (4 + 2, ftt 2): erasure coding
    checksum = false        optional: a checksum per block on every component
    stripe_width = 2        optional, 1..12: capacity devices each component is
                            striped over, below the disk group's cache tier (needs
                            profile.disk_group with its own stripe_width 1 on
                            every node holding one: schema/capacity_layout.py)
    snapshots = "redo-log"  optional: the volumes take snapshots while they run:
                            "redo-log" (a chain of copy-on-write overlays, dm-snapshot:
                            reads fall through it) or "redirect-on-write" (dm-thin)
    snapshot_depth = 3      optional: live snapshots a volume keeps at most, 1..8
                            (the space each may fill is reserved with the volume)

    [profile.volume_sets.NAME]   more workload volumes, each set with its own
                            policy (the keys of profile.volumes), so policies can
                            be compared side by side: set NAME's volumes are
                            NAME-u<unit>v<n>; a sweep's workload.volume_set picks one

A volume's policy places its components as a hyperconverged cluster does:
each copy or piece on a different node, the VM's own node first, the rest
spread round the other nodes (linked to it, with disks); the VM's node
builds md RAID-1/5/6 over them, the remote ones reached over NVMe/TCP.
Mirrors need 2 x ftt + 1 such nodes (a witness's), RAID-5 4, RAID-6 6.
"""
import re
from dataclasses import dataclass, field

from storlab_cli.schema.profile_common import (
    FTT_RANGE, MIB, linked, md_data_offset_bytes, mib_up, nodes_of, size_of)

VOLUMES_KEYS = ("units", "per_unit", "size", "nodes", "ftt", "method", "checksum",
                "stripe_width", "snapshots", "snapshot_depth")
VOLUME_METHODS = ("mirror", "raid5", "raid6")
# erasure codes of the studies: method -> (data pieces, parity pieces)
ERASURE_CODES = {"raid5": (3, 1), "raid6": (4, 2)}
# md's chunk for RAID-5/6 volumes: mdadm's default (the simulator's spec default too)
VOLUME_CHUNK_BYTES = 512 * 1024
# a fill in whole MiB is in whole chunks (Volumes.fill_mib)
assert MIB % VOLUME_CHUNK_BYTES == 0
SNAPSHOT_MECHANISMS = ("redo-log", "redirect-on-write")
SNAPSHOT_DEPTH_RANGE = (1, 8)
# vSAN's policy allows 1 to 12 stripes a component
STRIPE_WIDTH_RANGE = (1, 12)
# dm-snapshot's chunk (a redo log's grain): 4 KiB, a small write's size, as
# LVM's default; a COW store holds a 16-byte exception per chunk in 4 KiB
# metadata chunks (1/256 of the data) after a header chunk: 1/128 and 1 MiB bound it
REDO_CHUNK_BYTES = 4096
# dm-thin's block: 64 KiB, its smallest; the metadata device wants about
# 48 bytes per block (kernel docs, thin-provisioning), at least 2 MiB: twice
# that for snapshots' shared b-tree nodes
THIN_BLOCK_BYTES = 64 * 1024
UNITS_RANGE = (1, 16)
PER_UNIT_RANGE = (1, 64)
# a volume set's name: it prefixes its volumes' names (LVs, md names, NQNs)
VOLUME_SET_NAME_RE = re.compile(r"[a-z][a-z0-9]{0,11}")


@dataclass
class Volumes:
    units: int
    per_unit: int
    size_mib: int
    nodes: list            # the nodes that get them
    ftt: int = 0
    method: str = "mirror"
    checksum: bool = False
    stripe_width: int = 0  # 0: not given (LVs on the node's local volume as it is)
    snapshots: str = ""    # "" (none) or one of SNAPSHOT_MECHANISMS
    snapshot_depth: int = 0
    holders: dict = field(default_factory=dict)   # (node, index) -> component nodes, home first
    set_name: str = ""     # "" for profile.volumes, else its profile.volume_sets key

    @property
    def key_path(self):
        return f"profile.volume_sets.{self.set_name}" if self.set_name else "profile.volumes"

    @property
    def prefix(self):
        """What the set's volume names start with."""
        return f"{self.set_name}-" if self.set_name else ""

    @property
    def has_policy(self):
        """Whether volumes are more than an LV on their node's own stack."""
        return self.ftt > 0 or self.checksum

    @property
    def code(self):
        """(data pieces, parity pieces): a mirror's one copy of the data and
        ftt more."""
        return ERASURE_CODES.get(self.method, (1, self.ftt))

    @property
    def components(self):
        """Copies or pieces per volume."""
        return sum(self.code)

    def names(self):
        """(node, index, name) of every volume, in the lab's order."""
        return [(node, (unit - 1) * self.per_unit + n - 1, f"{self.prefix}u{unit}v{n}")
                for node in self.nodes
                for unit in range(1, self.units + 1) for n in range(1, self.per_unit + 1)]

    def unit_names(self, unit):
        """The names of one unit's volumes on a node, in order."""
        return [f"{self.prefix}u{unit}v{n}" for n in range(1, self.per_unit + 1)]

    def redo_log_mib(self):
        """One redo log's room: every chunk of the volume rewritten, with its
        exception store (see REDO_CHUNK_BYTES)."""
        return mib_up(self.size_mib * MIB + self.size_mib * MIB // 128 + MIB)

    def thin_meta_mib(self):
        """The thin pool's metadata area (see THIN_BLOCK_BYTES)."""
        data = self.size_mib * MIB * (1 + self.snapshot_depth)
        return mib_up(2 * max(2 * MIB, 48 * (data // THIN_BLOCK_BYTES)))

    def base_mib(self):
        """The device under a volume: the volume itself, and the room its
        snapshots may fill: snapshot_depth redo logs after it, or a thin
        pool's metadata and data for the volume and snapshot_depth full
        rewrites while snapshots hold the old blocks."""
        if self.snapshots == "redo-log":
            return self.size_mib + self.snapshot_depth * self.redo_log_mib()
        if self.snapshots == "redirect-on-write":
            return self.thin_meta_mib() + self.size_mib * (1 + self.snapshot_depth)
        return self.size_mib

    def component_mib(self):
        """What one component holds: the volume's base (a copy) or its share (a piece)."""
        data = self.code[0]
        if data == 1:
            return self.base_mib()
        piece = -(-self.base_mib() * MIB // data)
        return mib_up(-(-piece // VOLUME_CHUNK_BYTES) * VOLUME_CHUNK_BYTES)

    def component_lv_mib(self):
        """A lab's LV for one component: what it holds, md's superblock and
        bitmap ahead of it (md_data_offset_bytes' bound), and with a
        checksum dm-integrity's metadata (its bitmap-mode journal area,
        at most 1/128 of the device, and a 4-byte tag per 4 KiB block:
        a bound of 1/64 and 2 MiB)."""
        share = self.component_mib() * MIB
        need = share + md_data_offset_bytes(share)
        if self.checksum:
            need += need // 64 + 2 * MIB
        return mib_up(need)

    def md_data_offset_kib(self):
        """Where md's data starts on each component: given to mdadm, so a
        component filled where it lies (fills_components) has its data where
        md reads it."""
        return md_data_offset_bytes(self.component_mib() * MIB) // 1024

    @property
    def fills_components(self):
        """Whether each holder writes its component's data itself when the
        volume is new, the same bytes in every component, rather than the
        home writing the volume once through md: the data reaches the disks
        without crossing the links. A mirror's copies are then equal. An
        erasure code's pieces are too when its parity is the XOR of an odd
        number of data pieces (RAID-5 3+1): every chunk holds the same
        bytes, and the XOR of three equal chunks is that chunk, so each
        parity chunk already holds what md would compute. RAID-6's second
        syndrome is not a plain XOR: such a volume is written through its
        array."""
        data, parity = self.code
        return data == 1 or (parity == 1 and data % 2 == 1)

    def fill_mib(self):
        """What each component's fill writes from md's data offset, in MiB:
        a copy the volume, a piece its share of the volume in whole MiB, so
        in whole chunks (the same length on every piece: every stripe is
        either filled on all of them or on none)."""
        return -(-self.size_mib // self.code[0])

    def base_path(self, name):
        """Volume name's base device on its node: its LV, or the link to
        the md its policy builds."""
        return f"/dev/storlab{'-policy' if self.has_policy else ''}/{name}"

    def guest_path(self, name):
        """Where a node's workload finds volume name: its base, or with
        snapshots the device-mapper device its snapshots are taken under."""
        return f"/dev/mapper/storlab-vol-{name}" if self.snapshots else self.base_path(name)

    def held_by(self, node):
        """How many components node holds."""
        return sum(1 for holders in self.holders.values() if node in holders)


def parse(loader, value, topo, set_name):
    path = f"profile.volume_sets.{set_name}" if set_name else "profile.volumes"
    table = loader.table(value, path)
    loader.check_keys(table, VOLUMES_KEYS, path)
    if "size" not in table:
        loader.fail(f"{path}.size", 'missing: each volume\'s size, e.g. "32M"')
    volumes = Volumes(loader.integer(table.get("units", 1), f"{path}.units", UNITS_RANGE),
                      loader.integer(table.get("per_unit", 1), f"{path}.per_unit",
                                     PER_UNIT_RANGE),
                      mib_up(size_of(loader, table["size"], f"{path}.size")),
                      [n.name for n in nodes_of(loader, table, f"{path}.nodes", topo)])
    method = loader.choice(table.get("method", "mirror"), f"{path}.method", VOLUME_METHODS,
                           "method")
    code = ERASURE_CODES.get(method)
    # an erasure code tolerates its parity pieces' failures: ftt follows from it
    ftt = loader.integer(table.get("ftt", code[1] if code else 0), f"{path}.ftt", FTT_RANGE)
    if code and ftt != code[1]:
        loader.fail(f"{path}.ftt", f"method = \"{method}\" ({code[0]} + {code[1]}) tolerates "
                    f"{code[1]} failure{'s' if code[1] > 1 else ''}, not {ftt}", ftt)
    checksum = table.get("checksum", False)
    if not isinstance(checksum, bool):
        loader.fail(f"{path}.checksum", "must be true or false", checksum)
    volumes.ftt, volumes.method, volumes.checksum = ftt, method, checksum
    if "stripe_width" in table:
        volumes.stripe_width = loader.integer(table["stripe_width"], f"{path}.stripe_width",
                                              STRIPE_WIDTH_RANGE)
    if "snapshots" in table:
        volumes.snapshots = loader.choice(table["snapshots"], f"{path}.snapshots",
                                          SNAPSHOT_MECHANISMS, "snapshot mechanism")
        volumes.snapshot_depth = loader.integer(table.get("snapshot_depth", 3),
                                                f"{path}.snapshot_depth", SNAPSHOT_DEPTH_RANGE)
    elif "snapshot_depth" in table:
        loader.fail(f"{path}.snapshot_depth", "needs snapshots (\"redo-log\" or "
                    "\"redirect-on-write\")", table["snapshot_depth"])
    volumes.set_name = set_name
    volumes.holders = _placement(loader, volumes, topo)
    return volumes


def _placement(loader, volumes, topo):
    """Each volume's component nodes: its own node first (when it has disks),
    then the others that can hold one (disks, a link to it) in node order
    after it, wrapping, each volume starting one further on so components
    spread evenly."""
    path = volumes.key_path
    order = [n.name for n in topo.nodes]
    with_disks = {n.name for n in topo.nodes if n.devices}
    count = volumes.components
    # a mirror's quorum needs a witness beyond its copies: 2 x ftt + 1 nodes
    needed = (2 * volumes.ftt + 1) if volumes.method == "mirror" else count
    holders = {}
    for node in volumes.nodes:
        at = order.index(node)
        others = [name for name in order[at + 1:] + order[:at]
                  if name in with_disks and linked(topo, node, name)]
        own = [node] if node in with_disks else []
        if volumes.has_policy and len(own) + len(others) < needed:
            key = "ftt" if volumes.method == "mirror" else "method"
            loader.fail(f"{path}.{key}", f"{volumes.method} with ftt {volumes.ftt} needs "
                        f"{needed} nodes with disks linked to {node}, which has "
                        f"{len(own) + len(others)}", getattr(volumes, key))
        if not own and count == 1:
            loader.fail(f"{path}.nodes", f"{node} has no disk for its volumes (give them "
                        "ftt >= 1 to place them on other nodes)", volumes.nodes)
        for index in range(volumes.units * volumes.per_unit):
            picked = [others[(index + k) % len(others)] for k in range(count - len(own))]
            holders[(node, index)] = own + picked
    return holders
