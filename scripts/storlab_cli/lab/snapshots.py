"""Snapshots of a lab's workload volumes: the host side of the guest's
scripts/profiles/snapshot.sh.

A volume set with `snapshots` (schema/volumes.py) runs each volume under a
device-mapper device on its home node. The host keeps each volume's live
snapshots in lab.json (profile["snapshots"]["NODE/VOLUME"]: the next id and
the live ones, oldest first, each with its redo-log slot); the guest script
keeps nothing and rebuilds what the host lists after a boot. Used by
`storlab snapshot` and a sweep's snapshot events."""
import time

from storlab_cli.errors import UserError
from storlab_cli.lab.guest_scripts import run_step

SCRIPT = "snapshot.sh"


def _key(node, name):
    return f"{node}/{name}"


def volume_set(topo, node, name):
    """The volume set holding node's volume name, or a UserError naming
    what node has."""
    mine = []
    for v in topo.profile.all_volume_sets() if topo.profile else []:
        for home, _, volume in v.names():
            if home != node:
                continue
            if volume == name:
                return v
            mine.append(volume)
    raise UserError(f"node {node} has no workload volume '{name}' (its volumes: "
                    f"{', '.join(mine) or 'none'})")


def _snapshotting_set(topo, node, name):
    v = volume_set(topo, node, name)
    if not v.snapshots:
        raise UserError(f"volume {name} on {node} takes no snapshots: give {v.key_path} "
                        'snapshots = "redo-log" or "redirect-on-write"')
    return v


def _args(action, v, name):
    return [action, name, v.snapshots, v.base_path(name), v.size_mib, v.redo_log_mib(),
            v.thin_meta_mib()]


def _record(profile_state, node, name):
    return profile_state.setdefault("snapshots", {}).setdefault(
        _key(node, name), {"next_id": 1, "live": []})


def open_all(topo, domains, profile_state, node):
    """Builds the devices of node's snapshotting volumes, each with the
    snapshots the lab records (a node that came back: its chains rebuilt)."""
    for v in topo.profile.all_volume_sets():
        if not v.snapshots:
            continue
        for home, _, name in v.names():
            if home == node:
                live = _record(profile_state, node, name)["live"]
                run_step(domains[node], node, SCRIPT, _args("open", v, name)
                         + [f"{s['id']}:{s['slot']}" for s in live])


def create(topo, profile_state, domain, node, name):
    """A new snapshot of node's volume name; returns its record."""
    v = _snapshotting_set(topo, node, name)
    record = _record(profile_state, node, name)
    live = record["live"]
    if len(live) >= v.snapshot_depth:
        raise UserError(f"volume {name} on {node} has {len(live)} snapshots, as many as "
                        f"{v.key_path}.snapshot_depth allows: delete one first")
    used = {s["slot"] for s in live}
    slot = min(k for k in range(1, v.snapshot_depth + 1) if k not in used)
    snapshot = {"id": record["next_id"], "slot": slot, "created": round(time.time(), 3)}
    run_step(domain, node, SCRIPT, _args("create", v, name) + [snapshot["id"], slot])
    record["next_id"] += 1
    live.append(snapshot)
    return snapshot


def delete(topo, profile_state, domain, node, name, snapshot_id=None):
    """Deletes snapshot snapshot_id of node's volume name (default: its
    oldest, as a consolidation does); returns its record."""
    v = _snapshotting_set(topo, node, name)
    live = _record(profile_state, node, name)["live"]
    if not live:
        raise UserError(f"volume {name} on {node} has no snapshot")
    if snapshot_id is None:
        snapshot = live[0]
    else:
        snapshot = next((s for s in live if s["id"] == snapshot_id), None)
        if snapshot is None:
            raise UserError(f"volume {name} on {node} has no snapshot {snapshot_id} "
                            f"(its snapshots: {', '.join(str(s['id']) for s in live)})")
    run_step(domain, node, SCRIPT, _args("delete", v, name) + [snapshot["id"]])
    live.remove(snapshot)
    return snapshot


def listing(topo, profile_state, domain, node, name):
    """node's volume name: its mechanism, device and live snapshots with
    the space each fills (redo-log: its redo log; redirect-on-write: the
    pool the volume and its snapshots share)."""
    v = _snapshotting_set(topo, node, name)
    live = _record(profile_state, node, name)["live"]
    out = run_step(domain, node, SCRIPT, _args("usage", v, name) + [s["id"] for s in live])
    usage = {}
    for line in out.get("snapshot", []) + out.get("pool", []):
        words = line.split()
        usage[words[0]] = dict(w.split("=", 1) for w in words[1:] if "=" in w)
    snapshots = []
    for s in live:
        entry = {**s, "device": f"/dev/mapper/storlab-snap-{name}-{s['id']}"}
        if str(s["id"]) in usage:
            entry["used_bytes"] = int(usage[str(s["id"])]["used_bytes"])
            entry["room_bytes"] = int(usage[str(s["id"])]["room_bytes"])
        snapshots.append(entry)
    pool = next((u for k, u in usage.items() if k.startswith("storlab-pool-")), None)
    return {"node": node, "volume": name, "mechanism": v.snapshots,
            "device": v.guest_path(name), "depth": v.snapshot_depth, "snapshots": snapshots,
            "pool": {k: int(pool[k]) for k in ("used_bytes", "room_bytes")} if pool else None}


def format_listing(report):
    """listing()'s report as the lines `storlab snapshot ... list` prints."""
    lines = [f"{report['node']}/{report['volume']}: {report['mechanism']} snapshots "
             f"({len(report['snapshots'])} of at most {report['depth']}), volume at "
             f"{report['device']}"]
    for s in report["snapshots"]:
        made = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s["created"]))
        room = (f", redo log {s['used_bytes'] / 2**20:.1f} of {s['room_bytes'] / 2**20:.0f} MiB"
                if "used_bytes" in s else "")
        lines.append(f"  snapshot {s['id']}: taken {made}, at {s['device']} (read-only){room}")
    if report["pool"]:
        lines.append(f"  thin pool: {report['pool']['used_bytes'] / 2**20:.1f} of "
                     f"{report['pool']['room_bytes'] / 2**20:.0f} MiB in use by the volume "
                     "and its snapshots")
    return "\n".join(lines)
