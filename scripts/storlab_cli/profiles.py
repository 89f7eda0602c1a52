"""Storage profiles in the guests: the host side.

The topology's [profile] table (validated in profile_schema) says what to
build; the guest scripts in scripts/profiles/ (in the appliance at
/usr/lib/storlab/profiles/) build it, one concern a script. This module
only calls them through the guest agent, in order, and parses what they
print ("key value" lines).

Mechanisms, and why (see also README "Storage profiles"):
- local RAID: md (mdadm), the Linux software RAID the studies' RAID LUNs map to.
- disk group, hybrid: lvmcache (dm-cache, writethrough) on read_cache_percent
  of the cache device serves and keeps reads; dm-writecache on the rest
  absorbs writes in front of it. Two real kernel mechanisms give the
  studies' 70 % read cache / 30 % write buffer split exactly, where a single
  dm-cache or bcache shares one pool between reads and dirty data.
- disk group, all-flash: dm-writecache alone: a write buffer that never
  caches reads, as the all-flash studies' cache tier.
- replicas: md RAID-1 on the primary over its own volume and each peer's
  volume, exported by the peer's kernel NVMe-over-TCP target (nvmet) and
  imported by the kernel's nvme-tcp initiator. One mechanism for 1..3 peers
  (DRBD 8.4 stops at two nodes), no userspace daemon in the guest (the
  appliance has no NBD server), and md's write-intent bitmap resyncs only
  what a returning peer missed. md acknowledges a write when every working
  leg has it; remote legs are write-mostly, so reads stay local.
- NFS: the kernel NFSv4 server on the primary exports ext4 on the replica.
"""
import concurrent.futures

from . import agent, topology
from .errors import UserError

GUEST_DIR = "/usr/lib/storlab/profiles"
STEP_TIMEOUT_S = 900
LOCAL_DEVICES = {"raid": "/dev/md0", "disk_group": "/dev/mapper/diskgroup"}
REPLICA_DEVICE = "/dev/md1"


def nqn(lab, node):
    return f"nqn.2024-01.org.storlab:{lab}:{node}:replica"


def _link_addr(topo, node, peer):
    """node's own address on its link to peer (no prefix)."""
    for end in topology.link_ends(topo, node):
        if end.peer == peer:
            return end.addr.split("/")[0]
    raise UserError(f"node {node} has no link to {peer}")


def run_step(domain, node, script, args, timeout_s=STEP_TIMEOUT_S):
    """Runs one guest script; returns its "key value" lines as a dict of lists."""
    argv = ["/bin/sh", f"{GUEST_DIR}/{script}"] + [str(a) for a in args]
    code, out, err = agent.run(domain, argv, timeout_s=timeout_s)
    if code != 0:
        detail = err.decode(errors="replace").strip().splitlines() or [f"exit status {code}"]
        raise UserError(f"profile step {script} on {node} failed: {detail[-1]}")
    result = {}
    for line in out.decode(errors="replace").splitlines():
        key, _, value = line.partition(" ")
        if key:
            result.setdefault(key, []).append(value)
    return result


def _local_stack(topo, domain, node):
    """The node's local volume, volume group and workload volumes."""
    profile = topo.profile
    entry = {"local": None, "volumes": []}
    if profile.raid is not None:
        raid = profile.raid
        out = run_step(domain, node, "raid.sh",
                       [raid.level, raid.chunk_kib] + raid.devices[node])
        entry["local"] = out["device"][0]
    elif profile.disk_group is not None:
        group = profile.disk_group
        out = run_step(domain, node, "disk-group.sh",
                       [group.mode, group.cache, group.cache_mib[node], group.read_cache_percent,
                        group.stripe_width, group.stripe_kib] + group.capacity[node])
        entry["local"] = out["device"][0]
    if profile.needs_volume_group:
        base = entry["local"] or f"serial:{topo.node(node).devices[0].name}"
        out = run_step(domain, node, "volume-group.sh", [base])
        entry["local"] = entry["local"] or out["device"][0]
    if profile.volumes is not None:
        v = profile.volumes
        out = run_step(domain, node, "volumes.sh", [v.units, v.per_unit, v.size_mib])
        entry["volumes"] = out.get("volume", [])
    return entry


def _export_replica(topo, domain, node):
    r = topo.profile.replicas
    run_step(domain, node, "replica-export.sh",
             [r.size_mib, nqn(topo.name, node), _link_addr(topo, node, r.primary)])


def _mirror(topo, domains):
    r = topo.profile.replicas
    legs = [f"{nqn(topo.name, p)}@{_link_addr(topo, p, r.primary)}" for p in r.peers]
    out = run_step(domains[r.primary], r.primary, "replica-mirror.sh", [r.size_mib] + legs)
    return out["device"][0]


def _mount_nfs(topo, domain, node):
    r, nfs = topo.profile.replicas, topo.profile.nfs
    run_step(domain, node, "nfs-mount.sh",
             [_link_addr(topo, r.primary, node), nfs.mount_point])


def _each_node(nodes, work):
    """work(node) for every node at once (each guest works on its own)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(nodes))) as pool:
        futures = {node: pool.submit(work, node) for node in nodes}
        return {node: future.result() for node, future in futures.items()}


def provision(topo, domains, say):
    """Builds the profile in every guest (domains: node -> libvirt domain).
    Returns what `status` reports: where each node's volumes are."""
    profile = topo.profile
    if profile is None:
        return None
    say("provisioning the storage profile")
    nodes = _each_node([n.name for n in topo.nodes],
                       lambda node: _local_stack(topo, domains[node], node))
    result = {"nodes": nodes}
    if profile.replicas is not None:
        r = profile.replicas
        _each_node(r.peers, lambda node: _export_replica(topo, domains[node], node))
        result["replica"] = {"primary": r.primary, "peers": r.peers, "ftt": r.ftt,
                             "device": _mirror(topo, domains)}
        say(f"  replicated volume {result['replica']['device']} on {r.primary}, "
            f"copies on {', '.join(r.peers) or 'no other node'}")
    if profile.nfs is not None:
        run_step(domains[profile.replicas.primary], profile.replicas.primary, "nfs-export.sh",
                 [REPLICA_DEVICE])
        _each_node(profile.nfs.clients,
                   lambda node: _mount_nfs(topo, domains[node], node))
        result["nfs"] = {"server": profile.replicas.primary, "export": "/export",
                         "mount_point": profile.nfs.mount_point, "clients": profile.nfs.clients}
        say(f"  NFS export of {profile.replicas.primary} mounted at {profile.nfs.mount_point} "
            f"on {', '.join(profile.nfs.clients)}")
    for node, entry in nodes.items():
        if entry["local"] or entry["volumes"]:
            say(f"  {node}: local volume {entry['local']}, {len(entry['volumes'])} workload volumes")
    return result


def rejoin(topo, domains, node, say):
    """A node that came back (fresh guest, same disks): reassemble its local
    stack, re-export its replica leg, let the primary re-add it (resync) and
    remount NFS."""
    profile = topo.profile
    if profile is None:
        return
    _local_stack(topo, domains[node], node)
    r = profile.replicas
    if r is not None and node in r.peers:
        _export_replica(topo, domains[node], node)
        _mirror(topo, domains)
        say(f"  {node}: replica leg re-added on {r.primary}; resync runs in the background")
    if r is not None and node == r.primary:
        _mirror(topo, domains)
        if profile.nfs is not None:
            run_step(domains[node], node, "nfs-export.sh", [REPLICA_DEVICE])
    if profile.nfs is not None and node in profile.nfs.clients:
        _mount_nfs(topo, domains[node], node)


# ------------------------------------------------------------------ status

def _fields(words):
    return dict(w.split("=", 1) for w in words if "=" in w)


def _cache_state(name, target, status):
    """dmsetup status fields of a cache or writecache target -> a dict."""
    f = status.split("_")
    try:
        if target == "cache":
            # <md block> <used>/<total md> <cache block sectors> <used>/<total> <read hits>
            # <read misses> <write hits> <write misses> <demotions> <promotions> <dirty> ...
            used, total = (int(x) for x in f[3].split("/"))
            block_bytes = int(f[2]) * 512
            return {"name": name, "kind": "dm-cache",
                    "mode": next((m for m in ("writethrough", "writeback", "passthrough")
                                  if m in f), "writeback"),
                    "block_bytes": block_bytes, "used_blocks": used, "total_blocks": total,
                    "read_hits": int(f[4]), "read_misses": int(f[5]),
                    "write_hits": int(f[6]), "write_misses": int(f[7]),
                    "dirty_blocks": int(f[10]), "dirty_bytes": int(f[10]) * block_bytes}
        # writecache: <error> <total blocks> <free blocks> <blocks under writeback> ...
        total, free, writeback = int(f[1]), int(f[2]), int(f[3])
        return {"name": name, "kind": "dm-writecache", "mode": "write-buffer",
                "error": int(f[0]), "block_bytes": 4096, "total_blocks": total,
                "used_blocks": total - free, "writeback_blocks": writeback,
                # every block a writecache holds is a write not yet freed
                "dirty_blocks": total - free, "dirty_bytes": (total - free) * 4096}
    except (IndexError, ValueError):
        return {"name": name, "kind": target, "raw": status}


def parse_status(text):
    """status.sh output -> {"md": [...], "caches": [...], "nvme": [...], "mounts": [...],
    "nfsd": bool, "volumes": [...]}."""
    state = {"md": [], "caches": [], "nvme": [], "mounts": [], "nfsd": False, "volumes": []}
    for line in text.splitlines():
        words = line.split()
        if len(words) < 2:
            continue
        kind, name, fields = words[0], words[1], _fields(words[2:])
        if kind == "md":
            members = [] if fields.get("members") == "none" else [
                {"device": m.split(":")[0], "state": m.split(":", 1)[1].replace("_", " ")}
                for m in fields.get("members", "").split(";") if ":" in m]
            done = fields.get("sync_completed", "none").replace("_", " ")
            progress = None
            if "/" in done:
                a, b = (int(x) for x in done.split("/"))
                progress = round(100.0 * a / b, 1) if b else None
            state["md"].append({"name": name, "level": fields.get("level"),
                                "array_state": fields.get("array_state"),
                                "degraded": int(fields.get("degraded") or 0),
                                "sync_action": fields.get("sync_action"),
                                "sync_percent": progress,
                                "mismatch_cnt": int(fields.get("mismatch_cnt") or 0),
                                "size_bytes": int(fields.get("size_bytes", 0)),
                                "members": members})
        elif kind == "dm":
            state["caches"].append(_cache_state(name, fields.get("target"),
                                                fields.get("status", "")))
        elif kind == "nvme":
            state["nvme"].append({"controller": name, "nqn": fields.get("nqn"),
                                  "state": fields.get("state")})
        elif kind == "mount":
            state["mounts"].append({"path": name, "source": fields.get("source"),
                                    "type": fields.get("type")})
        elif kind == "nfsd":
            state["nfsd"] = True
        elif kind == "volume":
            state["volumes"].append({"path": name, "size_bytes": int(fields.get("size_bytes", 0))})
    return state


def node_status(domain, node):
    """The node's storage stack now, or {"error": ...} when the guest cannot say."""
    try:
        code, out, err = agent.run(domain, ["/bin/sh", f"{GUEST_DIR}/status.sh"], timeout_s=30)
    except Exception as e:  # noqa: BLE001 - a node that is down has no status, not an error
        return {"error": str(e).splitlines()[0] if str(e) else type(e).__name__}
    if code != 0:
        return {"error": err.decode(errors="replace").strip() or f"exit status {code}"}
    return parse_status(out.decode(errors="replace"))


def summary(stack):
    """One line of a node's stack for the text status."""
    if "error" in stack:
        return f"storage: unknown ({stack['error']})"
    parts = []
    for md in stack["md"]:
        sync = f" {md['sync_action']} {md['sync_percent']}%" if md["sync_percent"] is not None \
            else ""
        parts.append(f"{md['name']} {md['level']} {md['array_state']}"
                     f"{' degraded ' + str(md['degraded']) if md['degraded'] else ''}{sync}")
    for cache in stack["caches"]:
        parts.append(f"{cache['name']} {cache['kind']} {cache.get('mode', '?')} "
                     f"dirty {cache.get('dirty_bytes', 0) // 1024} KiB")
    if stack["nfsd"]:
        parts.append("nfs server")
    parts += [f"nfs mount {m['path']}" for m in stack["mounts"] if m["type"].startswith("nfs")]
    if stack["volumes"]:
        parts.append(f"{len(stack['volumes'])} volumes")
    return "storage: " + ("; ".join(parts) if parts else "none")
