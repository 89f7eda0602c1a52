"""What the parts of a topology's [profile] share: sizes in LVM's extents,
md's data offset, the nodes a part applies to, links between nodes
(schema/profile.py and schema/volumes.py)."""
from storlab_cli.schema.sizes import parse_size_bytes

MIB = 1 << 20
FTT_RANGE = (0, 3)
# md's superblock, bitmap and data offset: mdadm leaves up to 128 MiB, less
# on small members; an eighth plus 4 MiB is a safe bound for lab-sized disks.
MD_DATA_OFFSET_MAX_BYTES = 128 * MIB


def mib_up(size_bytes):
    """Bytes -> MiB, rounded up to LVM's 4 MiB extents."""
    return -(-size_bytes // (4 * MIB)) * 4


def md_data_offset_bytes(member_bytes):
    """Where md's data starts on a member, as this module assumes it (an
    upper bound of what mdadm leaves); the simulator's md starts there too."""
    return min(MD_DATA_OFFSET_MAX_BYTES, member_bytes // 8 + 4 * MIB)


def nodes_of(loader, table, key_path, topo):
    """The topology's nodes a profile part applies to: table's nodes key,
    default every node."""
    if "nodes" not in table:
        return list(topo.nodes)
    listed = node_names(loader, table["nodes"], key_path, topo)
    return [n for n in topo.nodes if n.name in listed]


def node_names(loader, value, key_path, topo, expected="a non-empty list of node names"):
    """value, checked to be a list of the topology's node names, each once."""
    names = [n.name for n in topo.nodes]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        loader.fail(key_path, f"must be {expected}", value)
    for name in value:
        if name not in names or value.count(name) > 1:
            loader.fail(key_path, f"'{name}' is not a node, once (nodes: {', '.join(names)})",
                        value)
    return list(value)


def size_of(loader, value, key_path):
    loader.string(value, key_path)
    size_bytes = parse_size_bytes(value)
    if not size_bytes or size_bytes < 4 * MIB:
        loader.fail(key_path, "not a size of at least 4M (examples: 64M, 1G)", value)
    return size_bytes


def linked(topo, a, b):
    """Whether topo has a link between nodes a and b."""
    return any({link.a, link.b} == {a, b} for link in topo.links)
