"""The cluster spec of one sweep point: the topology and its [profile] as
`storlab-sim cluster` builds them, and the exports the point's workload
drives. The format is the C reader's (emulator/cluster/cluster_spec.c,
its header comment); every figure behind a preset name is the C
library's.

Exports are laid out one after another from offset 0, each starting on a
MiB; a worker's job section puts it at its export's offset plus its own
region's. Everything here was validated by schema/ and sweep/plan.py
already; what is refused is only what a spec cannot say (a plugin without
a model, a value a spec word cannot carry)."""
from dataclasses import dataclass, replace

from storlab_cli.errors import UserError
from storlab_cli.lab.nbdkit import STORLAB_PLUGINS
from storlab_cli.schema import volumes as volume_schema
from storlab_cli.schema.capacity_layout import component_lv, replica_lv
from storlab_cli.schema.profile_common import md_data_offset_bytes
from storlab_cli.schema.sizes import parse_size_bytes
from storlab_cli.schema.sweep import HOST_PATH_KEYS, TARGET_VOLUMES
from storlab_cli.schema.topology import SimHost
from storlab_cli.sweep import fio_jobfile

FORMAT = "storlab-cluster 1"
MIB = 1 << 20
EXPORT_ALIGN_BYTES = MIB
# What ends or splits a spec word: a device parameter holding one cannot go in.
SPEC_BREAKS = (" ", "\t", "\r", "\n", "#")


@dataclass
class Export:
    """What one node's workload drives: a workload volume or its own share."""
    node: str
    kind: str             # "volume" | "share" (the spec's key)
    name: str             # the volume (u1v2), or the replicated volume (its home node)
    size_bytes: int
    workers: list         # fio_jobfile.Worker, offsets inside the export
    at_bytes: int = 0


# ---- the exports of a point ----

def exports(topo, workload, nodes):
    """The exports of a point run by nodes (sweep.plan.point_nodes), laid
    out. Workers and seeds as the lab's: target "volumes", one worker per
    volume of each unit (fio_jobfile.volume_workers); target "share", the
    units' workers on regions of the node's own share (as the lab's files)."""
    size_bytes = parse_size_bytes(workload["size"])
    units = workload["units"]
    profile = topo.profile
    out = []
    for n, node in enumerate(nodes):
        share_workers = []
        for unit in range(1, units + 1):
            seed = fio_jobfile.unit_randseed(unit, n * units + unit - 1)
            if workload["target"] == TARGET_VOLUMES:
                volumes = profile.volume_set(workload["volume_set"])
                names = volumes.unit_names(unit)
                for worker, name in zip(fio_jobfile.volume_workers(node, unit, names), names):
                    out.append(Export(node, "volume", name, volumes.size_mib * MIB,
                                      [replace(worker, filename=None, size_bytes=size_bytes,
                                               randseed=seed)]))
            else:
                share_workers += [replace(w, size_bytes=size_bytes, randseed=seed)
                                  for w in fio_jobfile.region_workers(node, unit, workload, None)]
        if share_workers:
            out.append(Export(node, "share", node, profile.replicas.size_mib * MIB,
                              share_workers))
    at = 0
    for export in out:
        export.at_bytes = at
        at = -(-(at + export.size_bytes) // EXPORT_ALIGN_BYTES) * EXPORT_ALIGN_BYTES
    return out


def job_workers(laid_out):
    """Every worker of the exports, at its offset in the cluster's address space."""
    return [replace(w, offset_bytes=x.at_bytes + w.offset_bytes)
            for x in laid_out for w in x.workers]


# ---- the spec ----

def _word(value, where):
    text = str(value)
    if not text or any(c in text for c in SPEC_BREAKS):
        raise UserError(f"{where} = {text!r}: the simulator's cluster spec cannot carry a "
                        "value with blanks or '#'")
    return text


def _device_line(topo, node, device):
    where = f"{topo.path}: node {node.name}'s {device.name}"
    if device.plugin not in STORLAB_PLUGINS:
        raise UserError(f"{where}: plugin = {device.plugin!r} has no simulator model "
                        f"(models: {', '.join(STORLAB_PLUGINS)})")
    # a plugin process's own files (data, stats, control socket) mean nothing here
    params = [f"{key}={_word(value, f'{where}: params.{key}')}"
              for key, value in device.params.items() if key not in HOST_PATH_KEYS]
    return " ".join(["device", node.name, device.name, device.plugin] + params)


def _local_stack(profile, node, workload):
    """The node's local volume (schema/profile.py's rule: its RAID, else its
    disk groups, else its first disk when it holds LVs) as (its spec lines,
    the devices it is built from), or (None, no devices). A disk group that
    deduplicates or compresses takes what the data is like from the
    workload's fio keys."""
    raid, group = profile.raid, profile.disk_group
    if raid is not None and node.name in raid.devices:
        names = raid.devices[node.name]
        member_bytes = min(d.size_bytes for d in node.devices if d.name in names)
        offset = md_data_offset_bytes(member_bytes)
        return (" ".join(["local", node.name, "raid", f"level={raid.level}",
                          f"chunk={raid.chunk_kib}k", f"data-offset={offset}"] + names),
                set(names))
    if group is not None and node.name in group.capacity:
        lines, used = [], set()
        for k, members in enumerate(group.members[node.name], start=1):
            words = ["local", node.name, "disk-group"] + ([f"group={k}"] if k > 1 else [])
            words += [f"mode={group.mode}", f"cache={members.cache}",
                      f"cache-size={group.cache_mib[node.name]}M"]
            if group.mode == "hybrid":
                words.append(f"read-cache-percent={group.read_cache_percent}")
            words += [f"stripe-width={group.stripe_width}", f"stripe={group.stripe_kib}k"]
            if node.name in profile.lv_devices or group.groups > 1:
                words.append("volume-group=per-device")
            if group.space_efficiency:
                data = workload or {}
                words += [f"space-efficiency={group.space_efficiency}",
                          f"dedupe-percent={data.get('dedupe_percentage', 0)}",
                          f"compress-percent={data.get('buffer_compress_percentage', 0)}"]
            lines.append(" ".join(words + members.capacity))
            used |= {members.cache, *members.capacity}
        return "\n".join(lines), used
    if profile.needs_volume_group(node.name):
        first = node.devices[0].name
        return f"local {node.name} disk {first}", {first}
    return None, set()


def _on_devices(profile, node, lv):
    """NODE, or NODE:DEV+DEV... when the LV lv lies on capacity devices
    node's volume group is made of (schema/capacity_layout.py)."""
    devices = profile.lv_devices_of(node, lv)
    return f"{node}:{'+'.join(devices)}" if devices else node


def _volume_line(profile, volumes, node, index, name):
    """A workload volume: an LV on its node, or its policy's components on
    the nodes the profile placed them (each on the capacity devices it was
    given, if any); with snapshots, the room of one redo log or of the thin
    pool's metadata (the base holds the volume and that room:
    schema/volumes.py base_mib, layer_snapshot.c)."""
    words = ["volume", node, name, f"{volumes.size_mib}M"]
    own = profile.lv_devices_of(node, component_lv(node, name) if volumes.has_policy else name)
    if volumes.ftt == 0 and own:
        words.append("devices=" + "+".join(own))
    if volumes.ftt > 0:
        words += [f"method={volumes.method}",
                  "on=" + ",".join(_on_devices(profile, h, component_lv(node, name))
                                   for h in volumes.holders[(node, index)])]
        if volumes.method in volume_schema.ERASURE_CODES:
            words.append(f"chunk={volume_schema.VOLUME_CHUNK_BYTES // 1024}k")
    if volumes.checksum:
        words.append("checksum=on")
    if volumes.snapshots:
        room = (volumes.redo_log_mib() if volumes.snapshots == "redo-log"
                else volumes.thin_meta_mib())
        words += [f"snapshots={volumes.snapshots}", f"depth={volumes.snapshot_depth}",
                  f"room={room}M"]
    return " ".join(words)


def text(topo, laid_out, sim_host=None, workload=None):
    """The spec: every node (host preset), the devices its stack uses, the
    topology's links, local volumes, the LVs in the lab's order (workload
    volumes, then replica copies), then the exports in ascending order.
    sim_host: the topology's [sim] already resolved (SimHost.resolved);
    workload: the point's (what its data is like)."""
    host = sim_host or SimHost().resolved()
    profile = topo.profile
    lines = [FORMAT, f"# topology {topo.name}"]
    if host.host_file is not None:
        lines.append(f"# host file {host.host_file}")
    if host.host_cores is not None:
        lines.append(f"pool cores={host.host_cores}")
    processes = fio_jobfile.processes_per_node(job_workers(laid_out))
    threads = fio_jobfile.threads_per_process(job_workers(laid_out))
    for node in topo.nodes:
        words = ["node", node.name, f"host={host.host}", *host.host_words]
        if processes.get(node.name, 0) > 1:      # switching between them costs the core
            # a switch serves a batch: its threads' I/Os that wait, each as deep as fio's iodepth
            words.append(f"processes={processes[node.name]} threads={threads[node.name]}")
        if workload is not None and node.name in processes:
            words.append(f"worker-depth={workload['iodepth']}")
        if host.cores is not None:
            words.append(f"cores={host.cores}")
        if host.per_io_us is not None:
            words.append(f"per-io-us={host.per_io_us:g}")
        lines.append(" ".join(words))
    stacks = [_local_stack(profile, node, workload) for node in topo.nodes]
    for node, (_, used) in zip(topo.nodes, stacks):
        # a device outside the stack is never reached: left out, modelled or not
        lines += [_device_line(topo, node, d) for d in node.devices if d.name in used]
    lines += [f"link {link.a} {link.b} preset={host.link}" for link in topo.links]
    lines += [line for line, _ in stacks if line]
    lines += [_volume_line(profile, volumes, node, index, name)
              for volumes in profile.all_volume_sets() for node, index, name in volumes.names()]
    if profile.replicas is not None:
        lines += [" ".join(["replica", r.name, f"{profile.replicas.size_mib}M"]
                           + [_on_devices(profile, h, replica_lv(r.name)) for h in r.holders])
                  for r in profile.replicas.volumes]
    lines += [f"export {x.node} at={x.at_bytes} size={x.size_bytes} {x.kind}={x.name}"
              for x in laid_out]
    return "\n".join(lines) + "\n"
