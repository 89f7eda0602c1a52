"""Whether a lab fits its hosts: `up` asks before a guest starts.

Every emulated device keeps the data written to it in its nbdkit's memory,
unless the device has file= or the topology says device_data = "disk" (then
each storlab device's data is a file in the lab's data directory on its
host: lab/hosts.py), and every guest's RAM and, under TCG, QEMU's cache of
translated code are host memory too. A lab that outgrows a host's memory is
not slowed down but killed, a guest at a time, by the host's OOM killer,
half-way through `up` or a sweep: an all-flash study at scale 1/500 on this
24 GiB host lost a guest after 32 minutes of provisioning (16 devices
holding 1.1 GiB each, 4 guests 1.6 GiB each). One that outgrows a host's
disk fails its writes.

What counts, per host:
- each guest: memory_mib, QEMU itself, and under TCG its code cache;
- what `up` itself writes to the devices: every LV of the profile (a
  volume is written once end to end, a policy's components filled where
  they lie or through their array, so counted whole, all of it resident:
  schema/capacity_layout.lvs_of) and each disk
  group's share of its cache device (a write buffer fills with dirty data,
  a read cache with what is read), in memory or on disk as the devices
  keep it.
What a workload writes later is bounded by the volumes, so is counted too;
a lab without a profile writes nothing at `up`, and only its guests count.
"""
import os

from storlab_cli.errors import UserError
from storlab_cli.lab import hosts as lab_hosts, render, state as lab_state
from storlab_cli.lab.nbdkit import STORLAB_PLUGINS
from storlab_cli.schema import topology_variants
from storlab_cli.schema.capacity_layout import lvs_of

# QEMU's own memory beside the guest's RAM (devices, I/O buffers, libraries).
QEMU_OWN_MIB = 128
# QEMU's translated-code buffer under TCG: what the domain is given (QEMU
# fills it, then flushes it and starts again).
TCG_CODE_CACHE_MIB = render.TCG_CODE_CACHE_MIB
# Left to the host itself, its daemons and storlab.
HOST_RESERVE_MIB = 1024
# Left free on the disk that holds a lab's device data files.
DISK_RESERVE_MIB = 1024


def on_disk(topo, device):
    """Whether device keeps its data in a file: its own file=, or the
    lab's data directory for storlab's plugins under device_data = "disk"
    (nbdkit's memory plugin has no file)."""
    return "file" in device.params or (topo.device_data == "disk"
                                       and device.plugin in STORLAB_PLUGINS)


def _store_of(topo, devices):
    """Where data written to any of devices goes: "disk" when all of them
    keep it there, else (a part of it may be in memory) "memory"."""
    return "disk" if devices and all(on_disk(topo, d) for d in devices) else "memory"


def device_data_mib(topo, node):
    """({"memory": MiB, "disk": MiB}, what) the profile writes to node's
    devices."""
    where = {"memory": 0, "disk": 0}
    profile = topo.profile
    if profile is None:
        return where, ""
    devices = topo.node(node).devices
    lvs = lvs_of(profile, node)
    parts = []
    if lvs:
        mib = sum(m for _, m, _ in lvs)
        where[_store_of(topo, devices)] += mib    # an LV may lie on any of them
        parts.append(f"{len(lvs)} volumes and components {mib} MiB")
    group = profile.disk_group
    if group is not None and node in group.members:
        caches = [g.cache for g in group.members[node]]
        cache_mib = group.cache_mib[node] * len(caches)
        where[_store_of(topo, [d for d in devices if d.name in caches])] += cache_mib
        parts.append(f"cache tier {cache_mib} MiB")
    return where, ", ".join(parts)


def _device_data_in(topo, node, store):
    """(MiB, what) of node's device data kept in store ("memory", "disk")."""
    where, what = device_data_mib(topo, node)
    return where[store], what if where[store] else ""


def guest_mib(node, accel):
    """What a node's guest takes of its host at most."""
    return node.memory_mib + QEMU_OWN_MIB + (TCG_CODE_CACHE_MIB if accel != "kvm" else 0)


def need_mib(topo, nodes, accel):
    """(total MiB, guests' MiB, device data MiB, [(node, MiB, what)]) for
    nodes (names) of topo under accel."""
    guests = sum(guest_mib(topo.node(n), accel) for n in nodes)
    data = [(n, *_device_data_in(topo, n, "memory")) for n in nodes]
    device_mib = sum(mib for _, mib, _ in data)
    return guests + device_mib, guests, device_mib, data


def disk_need_mib(topo, nodes):
    """(MiB, [(node, MiB, what)]) of device data nodes (names) of topo keep
    in files."""
    data = [(n, *_device_data_in(topo, n, "disk")) for n in nodes]
    return sum(mib for _, mib, _ in data), data


def sweep_need_mib(sweep, accel="tcg"):
    """(memory MiB, disk MiB): the most one of a lab sweep's topologies
    needs of each, every node on one host."""
    needs = [(need_mib(v.topology, names, accel)[0], disk_need_mib(v.topology, names)[0])
             for v, _ in topology_variants.variants(sweep)
             for names in [[n.name for n in v.topology.nodes]]]
    return max(m for m, _ in needs), max(d for _, d in needs)


def local_free_disk_mib():
    """MiB free where this host's labs keep device data files (the nearest
    directory of lab_state.DATA_BASE that exists), or None."""
    directory = lab_state.DATA_BASE
    while not os.path.isdir(directory) and os.path.dirname(directory) != directory:
        directory = os.path.dirname(directory)
    try:
        return lab_hosts.free_disk_mib(directory)
    except OSError:
        return None


def local_available_mib():
    """This host's MemAvailable in MiB (None when unknown)."""
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            return mem_available_mib(f.read())
    except OSError:
        return None


def mem_available_mib(meminfo_text):
    """MemAvailable of a /proc/meminfo text, in MiB (None when absent)."""
    for line in meminfo_text.splitlines():
        key, _, value = line.partition(":")
        if key == "MemAvailable":
            return int(value.split()[0]) // 1024
    return None


def check_before_sweep(topo):
    """check() for a lab sweep's topology before any of its labs comes up:
    with each guest as under KVM (the accelerator is chosen at `up`), what
    the lab needs at the least; and check_disk() for this host."""
    hosts = lab_hosts.from_topology(topo)
    check(topo, hosts, {name: "kvm" for name in hosts}, at_least=True)
    free_mib = local_free_disk_mib() if topo.device_data == "disk" else None
    for host in hosts.values():
        if host.local and free_mib is not None:     # a remote host's disk: at its `up`
            check_disk(topo, hosts, host, free_mib)


def check(topo, hosts, accels, at_least=False):
    """A UserError when a host's nodes need more memory than it has
    available (hosts: name -> LabHost; accels: host name -> accelerator)."""
    for name, host in hosts.items():
        nodes = [n.name for n in topo.nodes if n.host.name == name]
        if not nodes:
            continue
        available = mem_available_mib(host.read_text("/proc/meminfo", 65536) or "")
        if available is None:
            continue                  # not Linux's /proc: nothing to compare with
        accel = accels[name]
        total, guests, device_mib, data = need_mib(topo, nodes, accel)
        if total <= available - HOST_RESERVE_MIB:
            continue
        heaviest = max(data, key=lambda d: d[1])
        where = _where(hosts, name)
        code_cache = f" + {TCG_CODE_CACHE_MIB} MiB of TCG code cache" if accel != "kvm" else ""
        detail = (f"; device data the profile writes {device_mib / 1024:.1f} GiB "
                  f"({heaviest[0]}: {heaviest[2]})" if device_mib else "")
        raise UserError(
            f"lab '{topo.name}' needs {'at least' if at_least else 'about'} {total / 1024:.1f} GiB "
            f"of memory; {where} has {available / 1024:.1f} GiB available, of which "
            f"{HOST_RESERVE_MIB} MiB are kept for itself: "
            f"{len(nodes)} guests {guests / 1024:.1f} GiB (memory_mib + {QEMU_OWN_MIB} MiB of "
            f"QEMU{code_cache} each){detail}; "
            + ('emulated devices keep their data in memory: device_data = "disk" in the '
               "topology, a larger sweep scale (--scale), or smaller or fewer volumes"
               if device_mib else "fewer or smaller guests, or a host with more memory"))


def _where(hosts, name):
    """How a message names host name of hosts."""
    return "this host" if hosts[name].local and len(hosts) == 1 else f"host '{name}'"


def check_disk(topo, hosts, host, free_mib):
    """A UserError when the device data host's nodes keep in files (in the
    lab's data directory there, with free_mib free) would not fit."""
    nodes = [n.name for n in topo.nodes if n.host.name == host.name]
    need, data = disk_need_mib(topo, nodes)
    if need <= free_mib - DISK_RESERVE_MIB:
        return
    heaviest = max(data, key=lambda d: d[1])
    raise UserError(
        f"lab '{topo.name}' keeps about {need / 1024:.1f} GiB of device data in files "
        f"(device_data = \"disk\"; {heaviest[0]}: {heaviest[2]}); {_where(hosts, host.name)} has "
        f"{free_mib / 1024:.1f} GiB free in {host.data_dir}, of which {DISK_RESERVE_MIB} MiB "
        "are kept: a larger sweep scale (--scale), smaller or fewer volumes, or more disk")
