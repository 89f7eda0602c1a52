"""A sweep against its topology: which nodes and devices take part, and
every cross-check between the two files, before anything starts."""
from dataclasses import dataclass

from storlab_cli.lab import nbdkit
from storlab_cli.schema import plugin_keys
from storlab_cli.schema.sweep import TARGET_SHARE, TARGET_VOLUMES
from storlab_cli.schema.sizes import parse_size_bytes
from storlab_cli.errors import UserError

MIB = 1 << 20


# ext4's own share of a replicated volume (journal, inode tables, reserve).
EXT4_OVERHEAD = 0.10


@dataclass
class Plan:
    nodes: list               # active node names
    devices: dict             # node -> the target Device (None for "volumes" and "share")
    event_devices: dict       # node -> {device name: Device} controlled live
    stats_devices: list       # (node, device name) whose stats frame each point


def _device(topo_node, name):
    for device in topo_node.devices:
        if device.name == name:
            return device
    return None


def _check_knob_keys(sweep, device):
    """In the simulator a knob is a parameter of the device's model: one it takes."""
    for point in sweep.points:
        for knob in point.device_knobs():
            reason = plugin_keys.unknown_key_reason(device.plugin, knob)
            if reason:
                raise UserError(f"{sweep.path}: device.{knob}: {reason}")


def _check_fits(sweep, capacity_bytes, what):
    """Every point's working set (units x workers x size) fits capacity_bytes
    of what (e.g. "node1's lun0 (1024 MiB)")."""
    for point in sweep.points:
        w = point.workload(sweep.workload)
        need_bytes = w["units"] * w["workers"] * parse_size_bytes(w["size"])
        if need_bytes > capacity_bytes:
            raise UserError(
                f"{sweep.path}: point {point.index}: {w['units']} units x {w['workers']} workers"
                f" x size {w['size']} = {need_bytes // MIB} MiB does not fit {what}")


def _check_volumes(sweep, topo, active):
    """target "volumes": every point's set exists, on every active node,
    with enough units, each volume holding a worker's size."""
    profile = topo.profile
    sets = profile.all_volume_sets() if profile is not None else []
    if not sets:
        raise UserError(f"{sweep.path}: workload.target = 'volumes' but {topo.path} has no "
                        "[profile.volumes] or [profile.volume_sets]")
    for point in sweep.points:
        w = point.workload(sweep.workload)
        volumes = profile.volume_set(w["volume_set"])
        if volumes is None:
            names = ", ".join(([""] if profile.volumes else []) + list(profile.volume_sets))
            raise UserError(f"{sweep.path}: point {point.index}: volume_set = "
                            f"'{w['volume_set']}': {topo.path} has no such volume set "
                            f"(sets: {names or 'none'}; '' is profile.volumes)")
        for name in active:
            if name not in volumes.nodes:
                raise UserError(f"{sweep.path}: workload.target = 'volumes': {name} has no "
                                f"workload volumes ({volumes.key_path}.nodes: "
                                f"{', '.join(volumes.nodes)}; see workload.nodes)")
        if w["units"] > volumes.units:
            raise UserError(f"{sweep.path}: point {point.index}: units = {w['units']} but "
                            f"{volumes.key_path} has {volumes.units} workload units per node")
        if parse_size_bytes(w["size"]) > volumes.size_mib * MIB:
            raise UserError(f"{sweep.path}: point {point.index}: size = {w['size']} is larger "
                            f"than a workload volume ({volumes.size_mib} MiB)")


def _check_shares(sweep, topo, active):
    """target "share": each active node drives files on its own replicated
    volume (the one whose home it is), through the NFS mount every node has."""
    profile = topo.profile
    if profile is None or profile.nfs is None:
        raise UserError(f"{sweep.path}: workload.target = 'share' but {topo.path} has no "
                        "[profile.nfs] (the shares are its replicated volumes over NFS)")
    homes = [v.name for v in profile.replicas.volumes]
    for name in active:
        if name not in homes:
            raise UserError(f"{sweep.path}: workload.target = 'share': {name} has no share of "
                            f"its own (replicated volumes: {', '.join(homes)}; see "
                            "profile.replicas.primaries, or workload.nodes)")
    usable_bytes = int(profile.replicas.size_mib * MIB * (1 - EXT4_OVERHEAD))
    _check_fits(sweep, usable_bytes, f"a share (about {usable_bytes // MIB} MiB of a "
                f"{profile.replicas.size_mib} MiB volume)")


def point_nodes(plan, workload):
    """The nodes that run a point's workload: the first active_nodes of the
    sweep's active nodes (all by default). Devices of the others still take
    the point's knobs and events: they are hosts, not workloads."""
    return plan.nodes[:workload["active_nodes"] or len(plan.nodes)]


def _check_snapshot_event(sweep, topo, point, event):
    volumes = topo.profile.volume_set(point.workload(sweep.workload)["volume_set"])
    if not volumes.snapshots:
        raise UserError(f"{sweep.path}: point {point.index}: event {event.command!r}: the "
                        f"volumes it drives ({volumes.key_path}) take no snapshots (give "
                        'the set snapshots = "redo-log" or "redirect-on-write")')
    taken = sum(1 for e in point.events if e.command == "snapshot")
    if taken > volumes.snapshot_depth:
        raise UserError(f"{sweep.path}: point {point.index}: {taken} snapshot events, more "
                        f"than {volumes.key_path}.snapshot_depth = {volumes.snapshot_depth}")


def _arrays(topo):
    """(home, component nodes, failures tolerated) of every array the profile
    builds: each policy volume with copies or pieces, each replicated volume."""
    profile = topo.profile
    out = [(home, holders, v.ftt) for v in profile.all_volume_sets() if v.ftt > 0
           for (home, _), holders in v.holders.items()]
    if profile.replicas is not None:
        out += [(r.primary, r.holders, profile.replicas.ftt) for r in profile.replicas.volumes]
    return out


def _check_node_events(sweep, topo, point, active, backend):
    """A point's node events (the simulator's), in time order: nodes of the
    topology that run none of the sweep's workload, each down before it
    comes up, and no array left with more of its components down than it
    tolerates (an array whose home is down does no I/O)."""
    where = f"{sweep.path}: point {point.index}"
    names = [n.name for n in topo.nodes]
    events = sorted((e for e in point.events if e.is_node), key=lambda e: e.at_s)
    if events and backend == "lab":
        raise UserError(f"{where}: event {events[0].command!r}: a lab sweep takes no node events "
                        "(in a lab: `storlab node LAB NODE down|up`; the simulator models them: "
                        "--backend sim)")
    down = set()
    for event in events:
        node, going_down = event.node
        what = f"{where}: event {event.command!r}"
        if node not in names:
            raise UserError(f"{what}: no node '{node}' in {topo.path} (nodes: {', '.join(names)})")
        if node in active:
            raise UserError(f"{what}: {node} runs the sweep's workload (workload.nodes); a node "
                            "event fails a node that holds components or copies only")
        if going_down == (node in down):
            raise UserError(f"{what}: {node} is {'down' if going_down else 'up'} already then")
        if not going_down:
            down.discard(node)
            continue
        down.add(node)
        for home, holders, ftt in _arrays(topo):
            lost = [h for h in holders if h in down]
            if home not in down and len(lost) > ftt:
                raise UserError(f"{what}: {home}'s array over {', '.join(holders)} would lose "
                                f"{len(lost)} components ({', '.join(lost)}); it tolerates {ftt}")


def make(sweep, topo, backend=None):
    backend = backend or sweep.backend
    names = [n.name for n in topo.nodes]
    active = sweep.workload["nodes"] or names
    for name in active:
        if name not in names:
            raise UserError(f"{sweep.path}: workload.nodes: no node '{name}' in {topo.path} "
                            f"(nodes: {', '.join(names)})")
    for point in sweep.points:
        count = point.workload(sweep.workload)["active_nodes"]
        if count is not None and count > len(active):
            raise UserError(f"{sweep.path}: point {point.index}: active_nodes = {count} but the "
                            f"sweep has {len(active)} active nodes ({', '.join(active)})")
    target = sweep.workload["target"]
    if target == TARGET_VOLUMES:
        _check_volumes(sweep, topo, active)
        for point in sweep.points:
            for event in point.events:
                if event.is_snapshot:
                    _check_snapshot_event(sweep, topo, point, event)
    if target == TARGET_SHARE:
        _check_shares(sweep, topo, active)
    for point in sweep.points:
        _check_node_events(sweep, topo, point, active, backend)
    devices, event_devices = {}, {}
    for name in active:
        topo_node = topo.node(name)
        if target in (TARGET_VOLUMES, TARGET_SHARE):
            devices[name] = None
        else:
            device = _device(topo_node, target)
            if device is None:
                raise UserError(f"{sweep.path}: workload.target = {target!r}: {name} has no such "
                                f"device (devices: "
                                f"{', '.join(d.name for d in topo_node.devices) or 'none'})")
            if backend == "sim" and device.plugin not in nbdkit.STORLAB_PLUGINS:
                raise UserError(f"{sweep.path}: workload.target = {target!r}: plugin "
                                f"{device.plugin!r} has no model for the simulator (storlab "
                                f"plugins: {', '.join(nbdkit.STORLAB_PLUGINS)})")
            _check_fits(sweep, device.size_bytes,
                        f"{name}'s {device.name} ({device.size_bytes // MIB} MiB)")
            devices[name] = device
            if backend == "sim" and device.plugin in nbdkit.STORLAB_PLUGINS:
                _check_knob_keys(sweep, device)
        controlled = {}
        if any(p.device_knobs() for p in sweep.points):
            if devices[name] is None:
                what, hint = ("change the target device live", "target a raid device, or "
                              "send events to one") if backend == "lab" else \
                    ("are parameters of the target device's model", "a cluster's devices keep "
                     "the topology's parameters")
                raise UserError(f"{sweep.path}: device knobs {what}; workload.target = "
                                f"{target!r} names none ({hint})")
            if backend == "lab":
                controlled[target] = devices[name]
        for point in sweep.points:
            for event in point.events:
                if event.is_profile:
                    continue                   # the profile's events, checked above
                device = _device(topo_node, event.device)
                if device is None:
                    raise UserError(f"{sweep.path}: point {point.index}: event device "
                                    f"{event.device!r}: {name} has no such device")
                if backend == "sim" and devices[name] is None:
                    raise UserError(f"{sweep.path}: point {point.index}: event device "
                                    f"{event.device!r}: the simulator's cluster takes no live "
                                    "events (target the raid device to simulate them)")
                if backend == "sim" and device is not devices[name]:
                    raise UserError(f"{sweep.path}: point {point.index}: event device "
                                    f"{event.device!r}: the simulator runs only the target "
                                    f"device ({target})")
                controlled[event.device] = device
        for device in controlled.values():
            if device.plugin != "raid":
                raise UserError(f"{sweep.path}: {name}'s {device.name} is "
                                f"{device.plugin}: live control (events; device knobs in a lab) needs a "
                                "raid device")
        event_devices[name] = controlled
    stats = {(n, d) for n in active for d in event_devices[n]}
    stats |= {(n, devices[n].name) for n in active if devices[n] is not None}
    if target == TARGET_VOLUMES:
        # the volumes sit on the node's own stack and, with a policy, on the
        # nodes holding their components: those nodes' devices frame a point
        holders = set(active)
        for point in sweep.points:
            volumes = topo.profile.volume_set(point.workload(sweep.workload)["volume_set"])
            holders |= {h for (home, _), nodes in volumes.holders.items() if home in active
                        for h in nodes}
        stats |= {(n, d.name) for n in holders for d in topo.node(n).devices}
    if target == TARGET_SHARE:
        # a share's writes land on every node holding a copy: all of them count
        stats |= {(n.name, d.name) for n in topo.nodes for d in n.devices}
    return Plan(active, devices, event_devices, sorted(stats))
