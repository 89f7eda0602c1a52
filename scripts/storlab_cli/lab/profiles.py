"""Storage profiles in the guests: the host side.

The topology's [profile] table (validated in schema/profile.py) says what to
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
- replicas: md RAID-1 on the node serving the volume over its own copy and
  each peer's copy, exported by the peer's kernel NVMe-over-TCP target
  (nvmet) and imported by the kernel's nvme-tcp initiator. One mechanism for
  1..3 peers (DRBD 8.4 stops at two nodes), no userspace daemon in the guest
  (the appliance has no NBD server), and md's write-intent bitmap resyncs
  only what a returning copy missed. md acknowledges a write when every
  working leg has it; remote legs are write-mostly, so reads stay local.
- failover: when the node serving a volume goes down (`storlab node LAB NODE
  down`), this module plays the cluster's failover manager: the first
  running peer stops exporting its copy, assembles the array from it and the
  other survivors' copies, and takes over the NFS export; the clients
  remount. The old primary comes back as a peer and resyncs from the bitmap.
  A volume with no running copy goes offline and waits for the node that
  served it last (a copy that was down before it may be stale).
- snapshots: a volume whose set has `snapshots` runs under a device-mapper
  device of its own; redo-log snapshots are dm-snapshot overlays (each
  takes the writes after it, reads fall through the chain), redirect-on-
  write ones dm-thin's (a write to a shared block goes to a new one); the
  room both may fill is reserved on the volume's own device, so it has the
  volume's policy (lab/snapshots.py, scripts/profiles/snapshot.sh).
- NFS: the kernel NFSv4 server on the serving node exports ext4 on the
  array; every node sees volume V at <mount_point>/V.
- workload volumes with a storage policy: each copy or RAID-5/6 piece an LV
  on the node the profile placed it (dm-integrity in bitmap mode over it
  for checksums: crc32c per block, no journal, so data is written once),
  exported over NVMe/TCP like a replica's copy; the VM's node runs md
  RAID-1/5/6 over them. The kernel's own mechanisms, so a guest write fans
  out over the links and md's RAID-5/6 read-modify-write as the studies'.
  A new mirror's copies, and a new RAID-5 volume's pieces, are written
  once where they lie, the same bytes on every holder (a pattern from a
  seed naming the volume), and md created clean over them: the same result
  as writing the volume once through md, without its data crossing the
  links (under TCG, minutes of a study lab's `up`). A RAID-6 volume is
  written once through its array (its second parity is not a plain XOR).
"""

import time
import zlib

from storlab_cli.lab import snapshots
from storlab_cli.lab.each_node import each_node
from storlab_cli.lab.guest_scripts import run_step, step_timeout_s
from storlab_cli.schema import topology, volumes as volume_schema
from storlab_cli.schema.capacity_layout import component_lv, replica_lv
from storlab_cli.schema.profile_common import linked
from storlab_cli.errors import UserError

EXPORT_ROOT = "/export"


def nqn(lab, volume, holder):
    """The NVMe subsystem of holder's copy of a replicated volume."""
    return f"nqn.2024-01.org.storlab:{lab}:{volume}:{holder}"


def _link_addr(topo, node, peer):
    """node's own address on its link to peer (no prefix)."""
    for end in topology.link_ends(topo, node):
        if end.peer == peer:
            return end.addr.split("/")[0]
    raise UserError(f"node {node} has no link to {peer}")


def _local_stack(topo, domain, node):
    """The node's local volume, volume group and workload volumes: what of
    the profile applies to this node (see schema/profile.py's nodes keys)."""
    profile = topo.profile
    entry = {"local": None, "volumes": []}
    bases = []                         # volume-group.sh's: each local volume, then its regions
    if profile.raid is not None and node in profile.raid.devices:
        raid = profile.raid
        out = run_step(domain, node, "raid.sh",
                       [raid.level, raid.chunk_kib] + raid.devices[node])
        entry["local"] = out["device"][0]
        bases = [entry["local"]]
    elif profile.disk_group is not None and node in profile.disk_group.capacity:
        group = profile.disk_group
        for members in group.members[node]:
            out = run_step(domain, node, "disk-group.sh",
                           [members.name, group.mode, members.cache, group.cache_mib[node],
                            group.read_cache_percent, group.stripe_width, group.stripe_kib]
                           + members.capacity)
            bases += [out["device"][0]] + (members.capacity if node in profile.lv_devices
                                           else [])
        entry["local"] = bases[0]
    if profile.needs_volume_group(node):
        out = run_step(domain, node, "volume-group.sh",
                       bases or [f"serial:{topo.node(node).devices[0].name}"])
        entry["local"] = entry["local"] or out["device"][0]
    for v in profile.all_volume_sets():
        if node not in v.nodes:
            continue
        if not v.has_policy:
            names = [name for home, _, name in v.names() if home == node]
            run_step(domain, node, "volumes.sh",
                     [v.units, v.per_unit, v.size_mib, v.prefix, v.base_mib()]
                     + [_placement(profile, node, name) for name in names],
                     timeout_s=step_timeout_s(len(names)))
        entry["volumes"] += [v.guest_path(name) for home, _, name in v.names() if home == node]
    return entry


def _placement(profile, node, lv):
    """Where LV lv goes on node (lib.sh new_lv's PLACEMENT): "-", or the
    capacity devices schema/capacity_layout.py picked, striped by the disk
    group's stripe unit."""
    devices = profile.lv_devices_of(node, lv)
    if not devices:
        return "-"
    return f"{profile.disk_group.stripe_kib}:{','.join(devices)}"


def provision(topo, domains, say):
    """Builds the profile in every guest (domains: node -> libvirt domain).
    Returns the profile's live state, kept in lab.json: where each node's
    volumes are and, per replicated volume, which node serves it."""
    profile = topo.profile
    if profile is None:
        return None
    say("provisioning the storage profile")
    names = [n.name for n in topo.nodes]
    nodes = each_node(names, lambda node: _local_stack(topo, domains[node], node))
    result = {"nodes": nodes}
    if profile.replicas is not None:
        volumes = [_volume_state(topo, v) for v in profile.replicas.volumes]
        result["replicas"] = volumes
        # every node exports its copies of the others' volumes, then each
        # primary builds its array over them (nodes at once, a node's steps in turn)
        each_node(names, lambda node: [_export_copy(topo, domains, v, node)
                                        for v in volumes if node in v["peers"]])
        _each_volume(volumes, lambda v: _mirror(topo, domains, v, say))
        for v in volumes:
            say(f"  replicated volume {v['volume']}: {v['device']} on {v['primary']}, "
                f"copies on {', '.join(v['peers']) or 'no other node'}")
    if any(v.has_policy for v in profile.all_volume_sets()):
        result["policy_volumes"] = _policy_volumes(topo, domains, names, say)
    if any(v.snapshots for v in profile.all_volume_sets()):
        result["snapshots"] = {}
        each_node(names, lambda node: snapshots.open_all(topo, domains, result, node))
        for v in profile.all_volume_sets():
            if v.snapshots:
                say(f"  volumes {v.prefix}u*v*: {v.snapshots} snapshots, up to "
                    f"{v.snapshot_depth} (`storlab snapshot`), at /dev/mapper/storlab-vol-*")
    if profile.nfs is not None:
        result["nfs"] = {"mount_point": profile.nfs.mount_point, "export_root": EXPORT_ROOT}
        _each_volume(volumes, lambda v: _serve_nfs(topo, domains, v))
        each_node(names, lambda node: _mount_all(topo, domains, result, node))
        say(f"  NFS: every node sees volume V at {profile.nfs.mount_point}/V "
            f"({', '.join(v['volume'] for v in volumes)})")
    for node, entry in nodes.items():
        if entry["local"] or entry["volumes"]:
            say(f"  {node}: local volume {entry['local']}, {len(entry['volumes'])} workload volumes")
    return result


# ---- workload volumes with a storage policy ----

# md devices of policy volumes: /dev/md<POLICY_MD_FIRST + index> on their
# home, clear of md0 (the local RAID) and the replicated volumes' md1...
POLICY_MD_FIRST = 100
MD_LEVELS = {"mirror": 1, "raid5": 5, "raid6": 6}


def _policy_volumes(topo, domains, names, say):
    """Every volume of every set with a policy: each holder makes its
    components (at once on every node), then each home its arrays over
    them. Returns their state for lab.json: set, home, md index, name,
    holders, the home's own component ("local", "-" when it holds none),
    missing. A home's arrays are numbered through its sets in turn."""
    volumes, first = [], 0
    for v in topo.profile.all_volume_sets():
        if not v.has_policy:
            continue
        volumes += [{"set": v.set_name, "home": home, "index": first + index, "volume": name,
                     "holders": v.holders[(home, index)], "local": "-", "missing": []}
                    for home, index, name in v.names()]
        first += v.units * v.per_unit
        say(f"  volumes {v.prefix}u*v*: policy {v.method}, ftt {v.ftt}"
            f"{', checksummed' if v.checksum else ''}, on "
            f"{', '.join(sorted({n for h in v.holders.values() for n in h}))}")
    held = {node: [x for x in volumes if node in x["holders"]] for node in names}
    each_node(names, lambda node: _timed(
        say, f"{node}: {len(held[node])} volume components made",
        lambda: _components(topo, domains, held[node], node)) if held[node] else None)
    by_home = _by_node(volumes, "home")
    each_node(list(by_home), lambda home: _timed(
        say, f"{home}: {len(by_home[home])} policy volumes built",
        lambda: _policy_arrays(topo, domains, by_home[home], say)))
    return volumes


def _timed(say, done, work):
    """work(), then "done (N s)": a node's batched step at a study's lab
    scale takes minutes, and `up` should not look stuck meanwhile."""
    started = time.monotonic()
    work()
    say(f"  {done} ({time.monotonic() - started:.1f} s)")


def _by_node(volumes, key):
    """{node: its volumes, in order}; key: "home" (a policy volume's) or
    "primary" (the node serving a replicated volume)."""
    result = {}
    for volume in volumes:
        result.setdefault(volume[key], []).append(volume)
    return result


def _holder_of_missing(leg):
    """The holder a guest step's "missing NQN@[ADDR]:PORT" names: the NQN's
    last field."""
    return leg.split("@")[0].rsplit(":", 1)[-1]


def _set_of(topo, volume):
    return topo.profile.volume_set(volume["set"])


def _component_nqn(topo, volume, holder):
    return nqn(topo.name, component_lv(volume["home"], volume["volume"]), holder)


def _components(topo, domains, volumes, holder):
    """holder's components of volumes, in one guest step; the home's own is
    its array's first leg."""
    specs = []
    for volume in volumes:
        v, lv = _set_of(topo, volume), component_lv(volume["home"], volume["volume"])
        exported = _component_nqn(topo, volume, holder) if holder != volume["home"] else "-"
        specs.append(_spec([volume["home"], volume["volume"], v.component_lv_mib(),
                            int(v.checksum), exported, _placement(topo.profile, holder, lv),
                            _fill(v, lv)]))
    if not specs:
        return
    out = run_step(domains[holder], holder, "components.sh", specs,
                   timeout_s=step_timeout_s(len(specs)))
    devices = dict(line.split(" ", 1) for line in out.get("device", []))
    for volume in volumes:
        if holder == volume["home"]:
            volume["local"] = devices[component_lv(volume["home"], volume["volume"])]


def _fill(v, lv):
    """components.sh's FILL of a new component: "OFFSET_KIB:MIB:SEED" when
    each component is written where it lies (v.fills_components), "-"
    otherwise. The seed names the volume, so every holder of a component
    writes the same bytes (a pattern from that seed) and different volumes
    different ones."""
    if not v.fills_components:
        return "-"
    return f"{v.md_data_offset_kib()}:{v.fill_mib()}:{zlib.crc32(lv.encode())}"


def _spec(fields):
    """One item of a batched guest step: its fields in one argument."""
    return " ".join(str(f) for f in fields)


def _policy_arrays(topo, domains, volumes, say):
    """The md of each of volumes (all on one home, in one guest step) over
    its own component (when it holds one) and every running holder's it
    has a link to."""
    if not volumes:
        return
    home = volumes[0]["home"]
    specs, paths, unreachable = [], [], {}
    chunk_kib = volume_schema.VOLUME_CHUNK_BYTES // 1024
    for volume in volumes:
        v, legs = _set_of(topo, volume), []
        path = v.base_path(volume["volume"])
        paths.append(path)
        unreachable[path] = []
        for holder in volume["holders"]:
            if holder == home:
                continue
            if holder in domains and linked(topo, home, holder):
                legs.append(f"{_component_nqn(topo, volume, holder)}@"
                            f"{_link_addr(topo, holder, home)}")
            else:
                unreachable[path].append(holder)
        written = "components" if v.fills_components else "array"
        specs.append(_spec([path, POLICY_MD_FIRST + volume["index"], MD_LEVELS[v.method],
                            chunk_kib, v.size_mib, v.md_data_offset_kib(), written,
                            volume["local"]] + legs))
    out = run_step(domains[home], home, "policy-volumes.sh", specs,
                   timeout_s=step_timeout_s(len(specs)))
    for line in out.get("missing", []):                # "missing PATH NQN@[ADDR]:PORT"
        path, _, leg = line.partition(" ")
        unreachable[path].append(_holder_of_missing(leg))
    for volume, path in zip(volumes, paths):
        volume["missing"] = unreachable[path]
        if volume["missing"]:
            say(f"  volume {volume['volume']} on {home} runs without the components on "
                f"{', '.join(volume['missing'])}")


def _policy_failover(topo, state, domains, node, say):
    """node went down: the arrays on running homes drop its components
    (I/O goes on degraded; homes at once)."""
    by_home = _by_node([x for x in (state or {}).get("policy_volumes", [])
                        if node in x["holders"] and x["home"] in domains and x["home"] != node],
                       "home")
    each_node(list(by_home), lambda home: _policy_arrays(topo, domains, by_home[home], say))


def _policy_rejoin(topo, state, domains, node, say):
    """node came back: its components reopened and exported again, its own
    arrays reassembled, and every running home re-adds what node holds (the
    bitmap resyncs only what it missed)."""
    volumes = (state or {}).get("policy_volumes", [])
    _components(topo, domains, [x for x in volumes if node in x["holders"]], node)
    by_home = _by_node([x for x in volumes if x["home"] in domains
                        and (x["home"] == node or node in x["holders"])], "home")
    each_node(list(by_home), lambda home: _policy_arrays(topo, domains, by_home[home], say))
    if by_home:
        say(f"  {node}: its volume components re-added; resync runs in the background")


def _volume_state(topo, volume):
    state = {"volume": volume.name, "index": volume.index, "device": f"/dev/md{volume.index}",
             "home": volume.primary, "primary": volume.primary, "peers": list(volume.peers),
             "ftt": topo.profile.replicas.ftt, "serving": True, "missing": []}
    if topo.profile.nfs is not None:
        state["export"] = f"{EXPORT_ROOT}/{volume.name}"
        state["mount"] = f"{topo.profile.nfs.mount_point}/{volume.name}"
    return state


def _each_volume(volumes, work):
    """work(volume) for volumes served by different nodes at once."""
    by_node = _by_node(volumes, "primary")
    each_node(list(by_node), lambda node: [work(v) for v in by_node[node]])


def _export_copy(topo, domains, volume, holder):
    run_step(domains[holder], holder, "replica-export.sh",
             [volume["volume"], topo.profile.replicas.size_mib,
              nqn(topo.name, volume["volume"], holder),
              _placement(topo.profile, holder, replica_lv(volume["volume"]))])


def _mirror(topo, domains, volume, say):
    """The array on the node serving volume, over every running peer's copy
    it has a link to; records the copies it could not reach."""
    primary = volume["primary"]
    legs, unreachable = [], []
    for peer in volume["peers"]:
        if peer in domains and linked(topo, primary, peer):
            legs.append(f"{nqn(topo.name, volume['volume'], peer)}@"
                        f"{_link_addr(topo, peer, primary)}")
        else:
            unreachable.append(peer)
    out = run_step(domains[primary], primary, "replica-mirror.sh",
                   [volume["volume"], volume["index"], topo.profile.replicas.size_mib,
                    _placement(topo.profile, primary, replica_lv(volume["volume"]))] + legs)
    volume["missing"] = unreachable + [_holder_of_missing(m) for m in out.get("missing", [])]
    if volume["missing"]:
        say(f"  volume {volume['volume']} on {primary} runs without the copies of "
            f"{', '.join(volume['missing'])}")
    return out["device"][0]


def _serve_nfs(topo, domains, volume):
    primary = volume["primary"]
    run_step(domains[primary], primary, "nfs-export.sh",
             [volume["volume"], volume["index"], volume["device"], topo.profile.nfs.mount_point])


def _mount_all(topo, domains, state, node):
    """Mounts on node every serving volume another running node serves."""
    for volume in state.get("replicas", []):
        primary = volume["primary"]
        if (volume["serving"] and primary != node and primary in domains
                and linked(topo, primary, node)):
            run_step(domains[node], node, "nfs-mount.sh",
                     [volume["volume"], _link_addr(topo, primary, node),
                      topo.profile.nfs.mount_point])


def _remount(topo, domains, volume):
    """Every other running node mounts volume from the node now serving it."""
    each_node([n for n in domains if n != volume["primary"]],
               lambda n: _mount_all(topo, domains, {"replicas": [volume]}, n))


def failover(topo, state, domains, node, say):
    """node went down: every volume it served moves to its first running
    peer; then the nodes serving the volumes it held a copy of drop that
    copy (md would notice only at its next write to it; dropping waits for
    the dead copy's transport to time out, so the moves go first).
    domains: the running nodes. Changes state (lab.json's profile)."""
    volumes = [v for v in (state or {}).get("replicas", []) if v["serving"]]
    served = [v for v in volumes if v["primary"] == node]
    held = [v for v in volumes if node in v["peers"] and v["primary"] in domains]
    for volume in served:
        _move(topo, domains, volume, node, say)
    for volume in held:
        _mirror(topo, domains, volume, say)
    _policy_failover(topo, state, domains, node, say)


def _move(topo, domains, volume, node, say):
    """volume, served by node that went down, to its first running peer."""
    survivors = [p for p in volume["peers"] if p in domains]
    if not survivors:
        volume["serving"] = False
        say(f"  volume {volume['volume']} is offline: no running node holds a copy; "
            f"it comes back with {node}")
        return
    new = survivors[0]
    volume["primary"] = new
    volume["peers"] = [p for p in volume["peers"] if p != new] + [node]
    run_step(domains[new], new, "replica-unexport.sh",
             [nqn(topo.name, volume["volume"], new)])
    _mirror(topo, domains, volume, say)
    say(f"  volume {volume['volume']} failed over from {node} to {new} "
        f"({volume['device']}; copies on {', '.join(volume['peers'])})")
    if "export" in volume:
        _serve_nfs(topo, domains, volume)
        _remount(topo, domains, volume)
        say(f"  {volume['mount']} now served by {new}")


def rejoin(topo, state, domains, node, say):
    """node came back (fresh guest, same disks): its local stack reassembled,
    its copies exported again and re-added by the nodes serving them
    (bitmap resync), the volumes it still serves reassembled, the NFS
    exports mounted. domains: the running nodes, node included."""
    if topo.profile is None:
        return
    state = state or {}
    _local_stack(topo, domains[node], node)
    for volume in state.get("replicas", []):
        if node == volume["primary"]:
            # it served the volume when it went down: no peer could take over
            _mirror(topo, domains, volume, say)
            volume["serving"] = True
            if "export" in volume:
                _serve_nfs(topo, domains, volume)
                _remount(topo, domains, volume)
            say(f"  {node}: serves volume {volume['volume']} again")
        elif node in volume["peers"]:
            if not volume["serving"] or volume["primary"] not in domains:
                say(f"  {node}: volume {volume['volume']} stays offline until "
                    f"{volume['primary']}, which served it last, is up")
                continue
            _export_copy(topo, domains, volume, node)
            _mirror(topo, domains, volume, say)
            say(f"  {node}: copy of volume {volume['volume']} re-added on "
                f"{volume['primary']}; resync runs in the background")
    _policy_rejoin(topo, state, domains, node, say)
    if "snapshots" in state:
        snapshots.open_all(topo, domains, state, node)
    if topo.profile.nfs is not None:
        _mount_all(topo, domains, state, node)
