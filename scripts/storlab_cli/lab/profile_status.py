"""A node's storage stack as it is now, for `storlab status`: the guest's
status.sh lines parsed (md arrays with their legs and resync progress,
dm-cache and dm-writecache state, NVMe controllers, mounts, NFS server,
volumes) and one-line summaries of a node's stack and of a replicated
volume."""
from storlab_cli.lab import agent
from storlab_cli.lab.guest_scripts import GUEST_DIR


def _fields(words):
    return dict(w.split("=", 1) for w in words if "=" in w)


# dm-writecache's event counters after its first four status fields
# (Documentation/admin-guide/device-mapper/writecache.rst, "Status")
WRITECACHE_COUNTERS = ("read_blocks", "read_hit_blocks", "write_blocks",
                       "write_hits_uncommitted", "write_hits_committed", "writes_around",
                       "writes_allocate", "writes_blocked_on_freelist", "flushes", "discards")


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
                    "demotions": int(f[8]), "promotions": int(f[9]),
                    "dirty_blocks": int(f[10]), "dirty_bytes": int(f[10]) * block_bytes}
        # writecache: <error> <total blocks> <free blocks> <blocks under writeback>, then
        # (kernels since 5.15) its event counters, in blocks
        total, free, writeback = int(f[1]), int(f[2]), int(f[3])
        state = {"name": name, "kind": "dm-writecache", "mode": "write-buffer",
                 "error": int(f[0]), "block_bytes": 4096, "total_blocks": total,
                 "used_blocks": total - free, "writeback_blocks": writeback,
                 # every block a writecache holds is a write not yet freed
                 "dirty_blocks": total - free, "dirty_bytes": (total - free) * 4096}
        if len(f) >= len(WRITECACHE_COUNTERS) + 4:
            state.update(zip(WRITECACHE_COUNTERS, (int(x) for x in f[4:])))
        return state
    except (IndexError, ValueError):
        return {"name": name, "kind": target, "raw": status}


def parse_dmsetup_status(text):
    """`dmsetup status` output -> the cache and writecache targets' states
    (the disk groups' read caches and write buffers), as parse_status gives
    them."""
    caches = []
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 4 and words[0].endswith(":") and words[3] in ("cache", "writecache"):
            caches.append(_cache_state(words[0][:-1], words[3], "_".join(words[4:])))
    return caches


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


def volume_summary(volume):
    """One line of a replicated volume for the text status."""
    where = f"served by {volume['primary']}" if volume["serving"] else \
        f"OFFLINE (last served by {volume['primary']})"
    home = "" if volume["primary"] == volume["home"] else f", home {volume['home']}"
    missing = f", running without {', '.join(volume['missing'])}" if volume["missing"] else ""
    nfs = f"; NFS {volume['export']} at {volume['mount']} on every node" \
        if "export" in volume else ""
    return (f"replicated volume {volume['volume']}: {volume['device']} {where}{home} "
            f"(ftt {volume['ftt']}, copies on {', '.join(volume['peers']) or 'none'}"
            f"{missing}){nfs}")


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
