"""Where a node's LVs lie on its capacity devices when a volume set has a
`stripe_width` (schema/volumes.py): the one place that decides it, for the
lab (scripts/profiles/volume-group.sh, lvcreate's PV lists) and for the
simulator (cluster_spec.py's devices= and NODE:DEV words).

A hyperconverged cluster stripes each component of a volume over
stripe_width capacity devices of its disk group, below the shared cache
tier, and spreads a node's components over its disk groups. The lab
builds the same: the disk group's capacity LV is the capacity devices one
after another (its own stripe_width 1), so /dev/mapper/diskgroup's address
range of each device is a region of its own; the node's volume group
"storlab" is made of those regions, one physical volume each, and every LV
on it names its devices: a striped component `lvcreate -i stripe_width`
over the ones picked for it, every other LV (a set without stripe_width, a
replica copy) one device. A node
with several disk groups always has such a volume group, made of every
group's capacity devices: its LVs spread over the groups the same way.

The rule that picks them is vSAN's balancing, and LVM's own preference for
the freest areas: an LV's devices are the stripe_width ones with the most
free extents, ties in capacity order. LVs are taken in the lab's order on
the node (plain volumes, replica copies, then components, each in set
order)."""
from storlab_cli.schema.profile_common import MIB

EXTENT_BYTES = 4 * MIB
PE_START_BYTES = MIB


def component_lv(home, volume):
    """The LV of a component of volume (homed on home) on the node holding
    it, as scripts/profiles/components.sh names it."""
    return f"c-{home}-{volume}"


def replica_lv(volume):
    """A replicated volume's copy on each holder (lib.sh ensure_replica_lv)."""
    return f"replica-{volume}"


def split_nodes(profile):
    """The nodes whose volume group lies on their capacity devices: those
    holding an LV of a set with stripe_width, and those with more than one
    disk group that hold LVs (one volume group over every group)."""
    out = set()
    for v in profile.all_volume_sets():
        if v.stripe_width:
            out |= {n for holders in v.holders.values() for n in holders}
    group = profile.disk_group
    if group is not None and group.groups > 1:
        out |= {n for n in group.capacity if profile.needs_volume_group(n)}
    return out


def region_extents(topo, group, node, device):
    """Extents of one capacity device's region for the volume group: its
    disk group's capacity LV takes the same whole extents of every device of
    that group (disk-group.sh); the region leaves out its first MiB
    (volume-group.sh) and its own PV header takes one more: one extent less."""
    sizes = {d.name: d.size_bytes for d in topo.node(node).devices}
    members = group.group_of(node, device).capacity
    per_device = min((sizes[n] - PE_START_BYTES) // EXTENT_BYTES for n in members)
    return per_device - 1


def lvs_of(profile, node):
    """(LV name, MiB, stripe width) of every LV on node, in the lab's order."""
    lvs = []
    for v in profile.all_volume_sets():
        if not v.has_policy:
            lvs += [(name, v.base_mib(), v.stripe_width or 1)
                    for home, _, name in v.names() if home == node]
    if profile.replicas is not None:
        lvs += [(replica_lv(r.name), profile.replicas.size_mib, 1)
                for r in profile.replicas.held_by(node)]
    for v in profile.all_volume_sets():
        if v.has_policy:
            lvs += [(component_lv(home, name), v.component_lv_mib(), v.stripe_width or 1)
                    for home, index, name in v.names() if node in v.holders[(home, index)]]
    return lvs


def layout(loader, profile, topo):
    """node -> {LV name: [capacity devices]} for every split node; refuses
    (naming the key) an LV that does not fit."""
    out = {}
    group = profile.disk_group
    for node in sorted(split_nodes(profile)):
        devices = group.capacity[node]
        free = {d: region_extents(topo, group, node, d) for d in devices}
        placed = {}
        for name, mib, width in lvs_of(profile, node):
            extents = -(-mib * MIB // EXTENT_BYTES)
            per_stripe = -(-extents // width)
            picked = sorted(devices, key=lambda d: (-free[d], devices.index(d)))[:width]
            if free[picked[-1]] < per_stripe:
                loader.fail("profile", f"node {node}: LV {name} ({mib} MiB over {width} "
                            f"capacity device{'s' if width > 1 else ''}) does not fit: "
                            + ", ".join(f"{d} has {free[d] * 4} MiB free" for d in devices))
            for d in picked:
                free[d] -= per_stripe
            placed[name] = sorted(picked, key=devices.index)
        out[node] = placed
    return out
