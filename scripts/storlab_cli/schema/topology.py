"""Lab topology files: TOML in, validated dataclasses out.

A topology names a lab's nodes, the disks each node gets (nbdkit plugins) and
the udp links between nodes. Everything the renderer and the lab lifecycle
must agree on (device names, udp ports, MACs, guest addresses) is derived
here, once, so they agree by construction.

Validation is strict: unknown keys, wrong types and out-of-range values are
a UserError of one line naming the file, the key path and the problem.

Device sizes: hdd, ssd and memory disks give params.size; a raid device's
size is the plugin's own capacity rule (raid_lun_bytes), from level,
members, stripe-size and member-size, so the guest sees exactly the LUN the
plugin serves. A raid device has a live control socket (ctl=, set by the
lab, never by the topology): `storlab ctl LAB NODE DEVICE COMMAND`.

The optional [sim] table says what hosts and links `storlab sweep
--backend sim` gives the cluster model (storlab-sim cluster), by preset
name; the figures behind each name are the C library's (cluster/fabric.c):

    [sim]
    host = "bare-metal"     bare-metal | tcg (this project's lab under QEMU TCG)
    link = "10gbe"          1gbe | 10gbe | 25gbe | tcg-udp; default tcg-udp on
                            host "tcg", else 10gbe
    cores = 16              optional: the host's cores for storage (the preset's)
    per_io_us = 10          optional: CPU per I/O on the storage path (the preset's)
    host_cores = 2          optional: every node runs on one host of this many cores
                            (a lab's guests share theirs); default: each node its own

A topology with a [sim] table is one the simulator runs: its hdd and ssd
disks may leave size out and take their preset's (a lab's disks should
be small, so a lab topology gives every disk a size).
"""
import collections
import ipaddress
import math
import os
import re
import zlib
from dataclasses import dataclass, field

from storlab_cli.common import toml_file
from storlab_cli import catalog
from storlab_cli.lab.nbdkit import STORLAB_PLUGINS
from storlab_cli.schema import hosts as hosts_schema, plugin_keys, profile as profile_schema
from storlab_cli.schema import sim_host_file
from storlab_cli.schema.loader import Loader
from storlab_cli.schema.sizes import count, parse_size_bytes, size_text
from storlab_cli.errors import UserError

PLUGINS = ("hdd", "ssd", "raid", "memory")
BUSES = ("virtio", "scsi", "sata")
ACCELS = ("auto", "kvm", "tcg")
LINK_MODES = ("full-mesh", "none", "pairs")

# Facts of the C library (presets, defaults, parameter ranges, RAID level
# arithmetic) come from its catalog (storlab_cli/catalog.py), never typed here.
# Keys the lab owns: it starts every storlab plugin with its stats file and
# every raid plugin with its control socket in the run directory.
LAB_KEYS = ("stats", "ctl")
# A plugin parameter key as the plugins spell them (preset, member-size): it
# can never be read as an nbdkit option ('-') or split ('=', spaces).
PARAM_KEY_RE = re.compile(r"[a-z][a-z0-9-]{0,63}")
PARAM_KEY_RULE = "a-z, then up to 63 of a-z, 0-9, '-'"
# nbdkit's own memory plugin (a zero-latency disk): its keys.
MEMORY_PLUGIN_KEYS = ("size", "allocator")

DEFAULT_VCPUS = 1
DEFAULT_MEMORY_MIB = 768
# What a guest needs besides its checksummed components (its root file
# system in memory, 118 MiB, the kernel, fio's threads: 263 MiB in use in a
# study lab's guest before its components), and each of those: its
# dm-integrity device's 16.4 MiB and about 2.5 MiB of NVMe/TCP export or
# connection and md member (a study lab's guest holding 128 of them:
# 2.1 GiB of vmalloc, 2.8 GiB in use; 2560 MiB was too little).
GUEST_BASE_MIB = 384
CHECKSUMMED_COMPONENT_MIB = 20
DEFAULT_BOOT_TIMEOUT_S = 120
VCPUS_RANGE = (1, 8)
MEMORY_MIB_RANGE = (256, 16384)
BOOT_TIMEOUT_S_RANGE = (10, 1800)
NODE_COUNT_RANGE = (1, hosts_schema.MAX_NODES_PER_HOST)   # a lab's guests on one host
# A node's links: the most a node of a one-host lab can have (a 16-node full
# mesh), whatever the lab's size. A guest then never has more link NICs, or a
# longer storlab.net on its kernel command line (about 40 bytes a link; x86
# takes 2048), than in the biggest one-host lab, and one host's guests bind
# at most 16 x 15 = 240 udp ports of a lab (PORT_SPAN).
LINKS_PER_NODE_MAX = NODE_COUNT_RANGE[1] - 1
# A lab on several hosts ([[hosts]]) holds at most LAB_NODES_MAX nodes, 16 a
# host. The derivations hold at that size: ports are counted per host
# (PORT_SPAN), and at most 64 x 15 / 2 = 480 links keep link indexes well
# inside the MACs (unique to index 32767) and the guest prefixes (a 16-bit
# group). 64 is a choice, not their ceiling (they would take MAX_HOSTS x 16 =
# 256): four full hosts, the largest cluster the studies sweep
# (hybrid-cluster-size), the biggest lab the tests load and check.
LAB_NODES_MAX = 64
# A topology with a [sim] table may describe a study's cluster, for the
# simulator only (storlab-sim cluster refuses, in one line, what it cannot hold).
SIM_NODE_COUNT_RANGE = (1, 256)
DEVICE_COUNT_RANGE = (1, 16)
MAX_DEVICE_ENTRIES = 16

# udp ports: a lab owns a slot of PORT_SLOT_WIDTH ports chosen by its name's
# crc32, and its link ends on one host (one address) use at most PORT_SPAN
# ports from there. 396 slots keep the highest port below 65536:
# 40000 + 395*64 + 239 = 65519. A lab of at most PORT_SPAN / 2 = 120 links
# (every lab of up to 16 nodes: a 16-node full mesh) numbers its ports by link
# index, as it always has (link_ports); a larger one, on several hosts, counts
# each host's ends, and a host's 16 nodes of at most 15 links have 240.
PORT_BASE = 40000
PORT_SLOT_WIDTH = 64
PORT_SLOTS = 396
PORT_SPAN = NODE_COUNT_RANGE[1] * LINKS_PER_NODE_MAX

LAB_NAME_RE = re.compile(r"[a-z0-9-]{1,24}")
LAB_NAME_RULE = "1..24 of a-z, 0-9, '-'"
NODE_NAME_RE = re.compile(r"[a-z][a-z0-9-]{0,15}")
NODE_NAME_RULE = "a-z then up to 15 of a-z, 0-9, '-'"
DEVICE_NAME_RE = re.compile(r"[a-z][a-z0-9]{0,11}")
# nbdkit's size grammar as storlab parses it: DIGITS [SUFFIX ["i"]] ["b"|"B"].
# XML 1.0 cannot carry these even escaped; argv should not either.
CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

TOP_KEYS = ("name", "description", "accel", "boot_timeout_s", "device_data", "defaults",
            "nodes", "node", "links", "hosts", "profile", "sim")
# Where a lab's storlab devices keep the data written to them: the host's
# memory, or a file each in the lab's data directory on its host (labs
# whose volumes outgrow memory; lab/host_fit.py counts either).
DEVICE_DATA = ("memory", "disk")
DEFAULTS_KEYS = ("vcpus", "memory_mib", "devices")
NODE_KEYS = DEFAULTS_KEYS + ("host",)
NODES_KEYS = ("count", "names")
DEVICE_KEYS = ("name", "plugin", "count", "bus", "params")
LINKS_KEYS = ("mode", "pairs")
SIM_KEYS = ("host", "link", "cores", "per_io_us", "host_cores")


@dataclass
class Device:
    name: str            # "disk0": the entry's name plus its index
    plugin: str          # "hdd" | "ssd" | "raid" | "memory"
    params: dict         # plugin KEY=VALUE parameters, values as strings
    bus: str             # "virtio" | "scsi" | "sata"
    size_bytes: int      # what the guest sees (raid: the LUN, from the plugin's rule)
    rotation_rpm: int | None  # hdd: its rpm; otherwise None (raid: see device_entry)
    table: str = field(default="", compare=False)   # "disk": the entry it comes from

    @property
    def index(self):
        """Its place in its entry (disk0: 0)."""
        return int(self.name[len(self.table):])


@dataclass
class Link:
    a: str
    b: str
    index: int
    port_a: int
    port_b: int
    mac_a: str
    mac_b: str
    addr_a: str          # "fd5c:...::1/64"
    addr_b: str


@dataclass
class Node:
    name: str
    index: int           # 1-based
    vcpus: int
    memory_mib: int
    devices: list
    host: hosts_schema.Host = field(default_factory=hosts_schema.local_host)   # where it runs

    @property
    def disk_bytes(self):
        return sum(d.size_bytes for d in self.devices)


@dataclass(frozen=True)
class SimHost:
    """The [sim] table: preset names for the cluster model's hosts and links."""
    host: str | None = None          # a preset, or a host file's path; None: the default preset
    link: str | None = None          # None: the host's own (its preset's links)
    cores: int | None = None         # None: the host preset's
    per_io_us: float | None = None   # None: the host preset's
    host_cores: int | None = None    # every node on one host of this many cores; None: own
    # resolved from a host file: its preset in host, its figures here
    # (node-line words), its path in host_file
    host_words: tuple = ()
    host_file: str | None = None

    def resolved(self, host=None, host_cores=None):
        """This table with host replaced (`storlab sweep --sim-host`: a
        preset or a host file) and the link named: an unset link follows the
        host's preset; host_cores, when given, puts every node on one host of
        that many cores."""
        host = host or self.host or catalog.default_sim_host()
        words, host_file = (), None
        if sim_host_file.is_file_name(host):
            host_file = os.path.abspath(host)
            host, words = sim_host_file.load(host_file)
        # a preset's hosts have their links: TCG guests the lab's udp links
        return SimHost(host, self.link or catalog.sim_hosts()[host], self.cores, self.per_io_us,
                       host_cores or self.host_cores, words, host_file)


@dataclass
class Topology:
    name: str
    path: str            # absolute path of the file it was loaded from
    nodes: list
    links: list
    accel: str           # "auto" | "kvm" | "tcg"
    boot_timeout_s: int
    description: str = ""
    device_data: str = "memory"      # DEVICE_DATA
    profile: object = None   # profile_schema.Profile: the storage stack `up` builds, or None
    sim: SimHost | None = None   # the [sim] table, or None
    hosts: list = field(default_factory=lambda: [hosts_schema.local_host()])  # [[hosts]]

    def lab_refusal(self):
        """Why `storlab up` cannot build this topology, or None."""
        size = lab_size_refusal(self)
        if size:
            return f"{self.path}: {size}"
        memory = guest_memory_refusal(self)
        if memory:
            return f"{self.path}: {memory}"
        group = self.profile.disk_group if self.profile else None
        if group is not None and group.space_efficiency:
            return (f"{self.path}: profile.disk_group.space_efficiency = "
                    f"'{group.space_efficiency}': a lab cannot build it (Debian 12's kernel, "
                    "6.1, has no dm-vdo and no other block-level deduplication): it is for "
                    "the simulator (storlab sweep --backend sim)")
        return None

    def node(self, name):
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(name)


@dataclass(frozen=True)
class LinkEnd:
    """One node's side of a link: what its interface and its guest address use."""
    link: Link
    peer: str
    port: int            # udp port this end listens on (libvirt <local>)
    peer_port: int       # udp port the peer listens on (libvirt <source>)
    mac: str
    addr: str
    local_address: str = hosts_schema.LOCAL_ADDRESS   # this end's host address (<local>)
    peer_address: str = hosts_schema.LOCAL_ADDRESS    # the peer's host address (<source>)


def link_ends(topology, node):
    """This node's link ends, in link order. A link within a host stays on
    127.0.0.1; one between hosts goes from this host's address to the peer's."""
    node_name = node if isinstance(node, str) else node.name

    def addresses(peer):
        here, there = topology.node(node_name).host, topology.node(peer).host
        if here.name == there.name:
            return hosts_schema.LOCAL_ADDRESS, hosts_schema.LOCAL_ADDRESS
        return here.address, there.address

    ends = []
    for link in topology.links:
        if link.a == node_name:
            ends.append(LinkEnd(link, link.b, link.port_a, link.port_b, link.mac_a, link.addr_a,
                                *addresses(link.b)))
        elif link.b == node_name:
            ends.append(LinkEnd(link, link.a, link.port_b, link.port_a, link.mac_b, link.addr_b,
                                *addresses(link.a)))
    return ends


def raid_lun_bytes(level, members, stripe_bytes, member_bytes):
    """The raid plugin's LUN size (emulator/raid/raid_map.c sl_raid_capacity_bytes):
    each member's bytes rounded down to whole strips, times the level's data
    members."""
    return ((member_bytes // stripe_bytes) * stripe_bytes
            * catalog.raid_data_members(level, members))


def lab_hash(name):
    return zlib.crc32(name.encode())


def lab_port_offset(name):
    return (lab_hash(name) % PORT_SLOTS) * PORT_SLOT_WIDTH


def link_ports(lab_name, pairs, machine_of):
    """(port_a, port_b) of each link of pairs (node names, in link order).
    machine_of: node -> what its host binds on (its address: hosts that
    share one are one machine, with one set of ports).

    A lab of at most PORT_SPAN / 2 links (every lab of up to 16 nodes) takes
    P = base + 2 * I for end a of link I and P + 1 for end b, on whichever
    host each runs: unique in the whole lab, as they have always been. A
    larger lab counts each machine's link ends in link order (a before b):
    the K-th end bound there takes base + K, unique on that machine, and
    below base + PORT_SPAN while its nodes have at most 16 x 15 ends
    (machine_ends; the loader refuses more)."""
    base = PORT_BASE + lab_port_offset(lab_name)
    if 2 * len(pairs) <= PORT_SPAN:
        return [(base + 2 * i, base + 2 * i + 1) for i in range(len(pairs))]
    taken = collections.Counter()
    ports = []
    for pair in pairs:
        ends = []
        for node in pair:
            ends.append(base + taken[machine_of[node]])
            taken[machine_of[node]] += 1
        ports.append(tuple(ends))
    return ports


def machine_ends(pairs, machine_of):
    """machine -> how many link ends bind there (each link's two ends)."""
    return collections.Counter(machine_of[node] for pair in pairs for node in pair)


def make_link(lab_name, index, a, b, ports=None):
    """Link index between a and b: its udp ports (ports, from link_ports;
    default: by index, P = base + 2 * index), MACs and guest addresses.
    A MAC's last two bytes are the index's low byte and 2 x its high byte +
    the end (0: a, 1: b): 52:54:00:LL:II:00 and :01 up to index 255, as
    always; unique up to index 32767."""
    lab = lab_hash(lab_name)
    lab_byte = lab & 0xFF
    lab_group = lab & 0xFFFF
    if ports is None:
        port_a = PORT_BASE + lab_port_offset(lab_name) + 2 * index
        ports = (port_a, port_a + 1)

    def address(host):
        # canonical text, as `ip addr` prints it
        return str(ipaddress.IPv6Interface(f"fd5c:{lab_group:x}:{index:x}::{host}/64"))

    def mac(end):
        return f"52:54:00:{lab_byte:02x}:{index & 0xFF:02x}:{2 * (index >> 8) + end:02x}"

    return Link(a=a, b=b, index=index, port_a=ports[0], port_b=ports[1],
                mac_a=mac(0), mac_b=mac(1), addr_a=address(1), addr_b=address(2))


def links_refusal(node_names, pairs, mode=None):
    """Why a lab cannot have these links, as (key path, value or None,
    reason), or None: a node with more than LINKS_PER_NODE_MAX links.
    mode: links.mode as read (None: told from the pairs)."""
    n = len(node_names)
    hi = LINKS_PER_NODE_MAX
    full_mesh = mode == "full-mesh" if mode else len(pairs) == n * (n - 1) // 2
    if full_mesh and n - 1 > hi:
        return ("links.mode", None,
                f"full-mesh of {n} nodes needs {len(pairs)} links, {n - 1} a node; a node "
                f"has at most {hi} (a full mesh at most {hi + 1} nodes, {hi * (hi + 1) // 2} "
                "links): give the links with mode = 'pairs'")
    total = collections.Counter(node for pair in pairs for node in pair)
    seen = collections.Counter()
    for i, pair in enumerate(pairs):
        for node in pair:
            seen[node] += 1
            if seen[node] > hi:
                return (f"links.pairs[{i}]", list(pair),
                        f"node '{node}' has {total[node]} links; a node has at most {hi}")
    return None


def ports_refusal(hosts, placement, pairs):
    """Why a lab's link ends cannot have a udp port each, or None: a lab
    past PORT_SPAN / 2 links counts ports per machine (link_ports), and the
    hosts sharing one address (one machine) hold more than PORT_SPAN ends.
    placement: node -> Host."""
    if 2 * len(pairs) <= PORT_SPAN:
        return None
    ends = machine_ends(pairs, {node: host.address for node, host in placement.items()})
    for address, count in ends.items():
        if count > PORT_SPAN:
            names = ", ".join(h.name for h in hosts if h.address == address)
            return (f"hosts {names} share address {address} (one machine): their nodes' "
                    f"{count} link ends need a udp port each there; a lab has {PORT_SPAN} on "
                    f"one machine ({NODE_COUNT_RANGE[1]} nodes of {LINKS_PER_NODE_MAX} links)")
    return None


def lab_size_refusal(topo):
    """Why a lab cannot hold topo's nodes and links, or None (what the
    loader refuses of a topology without [sim]; a [sim] one may be larger)."""
    n, hi = len(topo.nodes), NODE_COUNT_RANGE[1]
    for_sim = " (a topology this large is for the simulator: storlab sweep --backend sim)"
    if len(topo.hosts) == 1 and n > hi:
        return f"{n} nodes: a lab holds at most {hi}{for_sim}"
    if n > LAB_NODES_MAX:
        return f"{n} nodes: a lab holds at most {LAB_NODES_MAX}, {hi} a host{for_sim}"
    for host in topo.hosts:
        on = sum(1 for node in topo.nodes if node.host.name == host.name)
        if on > hi:
            return f"host '{host.name}' has {on} nodes: a host holds at most {hi}{for_sim}"
    pairs = [(link.a, link.b) for link in topo.links]
    refusal = links_refusal([node.name for node in topo.nodes], pairs)
    if refusal:
        return f"{refusal[0]}: {refusal[2]}{for_sim}"
    reason = ports_refusal(topo.hosts, {node.name: node.host for node in topo.nodes}, pairs)
    return f"hosts: {reason}" if reason else None


def guest_memory_refusal(topo):
    """Why a node's guest would run out of memory building its profile, or
    None: each checksummed component is a dm-integrity device, which in the
    appliance's kernel (Debian 12's 6.1) holds a 16 MiB recalculation
    buffer whether it recalculates or not (measured in a guest: 16.2-16.6
    MiB of vmalloc a device); 64 of them took a 768 MiB guest's agent down
    half-way through its components, 128 a 2560 MiB guest's writes."""
    if topo.profile is None:
        return None
    for node in topo.nodes:
        count = topo.profile.checksummed_components(node.name)
        need_mib = GUEST_BASE_MIB + count * CHECKSUMMED_COMPONENT_MIB
        if count and node.memory_mib < need_mib:
            return (f"node {node.name}: memory_mib = {node.memory_mib} is too little for its "
                    f"{count} checksummed components ({CHECKSUMMED_COMPONENT_MIB} MiB of the "
                    "guest's memory each, most of it dm-integrity's): give it at least "
                    f"{need_mib} ([defaults] memory_mib)")
    return None


def load(path):
    path = os.fspath(path)
    return _TopologyLoader(path).topology(toml_file.read(path))


def from_data(data, where):
    """A topology from a file's tables already read (a structural sweep's
    variant); errors name where."""
    return _TopologyLoader(where).topology(data)


class _TopologyLoader(Loader):
    sim = None               # the [sim] table's SimHost, once read
    link_mode = None         # links.mode, once read

    # ---- the file -----------------------------------------------------------------

    def topology(self, data):
        self.check_keys(data, TOP_KEYS, "")
        if "name" not in data:
            self.fail("name", f"missing (a lab name: {LAB_NAME_RULE})")
        name = self.name(data["name"], "name", LAB_NAME_RE, LAB_NAME_RULE)
        description = self.string(data.get("description", ""), "description")
        if CONTROL_RE.search(description):
            self.fail("description", "contains a control character")
        accel = self.choice(data.get("accel", "auto"), "accel", ACCELS, "accelerator")
        boot_timeout_s = self.integer(data.get("boot_timeout_s", DEFAULT_BOOT_TIMEOUT_S),
                                      "boot_timeout_s", BOOT_TIMEOUT_S_RANGE)
        device_data = self.choice(data.get("device_data", "memory"), "device_data",
                                  DEVICE_DATA, "place for device data")
        self.sim = self.sim_host(data["sim"]) if "sim" in data else None

        defaults = self.table(data.get("defaults", {}), "defaults")
        self.check_keys(defaults, DEFAULTS_KEYS, "defaults")
        vcpus = self.integer(defaults.get("vcpus", DEFAULT_VCPUS), "defaults.vcpus", VCPUS_RANGE)
        memory_mib = self.integer(defaults.get("memory_mib", DEFAULT_MEMORY_MIB),
                                  "defaults.memory_mib", MEMORY_MIB_RANGE)
        devices = self.devices(defaults.get("devices", []), "defaults.devices")

        node_names = self.node_names(data)
        overrides = self.overrides(data.get("node", {}), node_names)
        nodes = []
        for index, node_name in enumerate(node_names, start=1):
            override = overrides.get(node_name, {})
            key_path = f"node.{node_name}"
            node_devices = devices
            if "devices" in override:
                node_devices = self.devices(override["devices"], f"{key_path}.devices")
            nodes.append(Node(
                name=node_name, index=index,
                vcpus=self.integer(override.get("vcpus", vcpus), f"{key_path}.vcpus", VCPUS_RANGE),
                memory_mib=self.integer(override.get("memory_mib", memory_mib),
                                        f"{key_path}.memory_mib", MEMORY_MIB_RANGE),
                # each node owns its Device objects: callers may annotate them
                devices=[Device(d.name, d.plugin, dict(d.params), d.bus, d.size_bytes,
                                d.rotation_rpm, d.table) for d in node_devices]))

        hosts = hosts_schema.read_hosts(self, data["hosts"]) if "hosts" in data \
            else [hosts_schema.local_host()]
        # a [sim] topology's hosts take any number: lab_refusal says what a lab cannot build
        placement = hosts_schema.place(
            self, hosts, node_names, self.chosen_hosts(overrides, hosts),
            per_host_max=None if self.sim is not None else NODE_COUNT_RANGE[1])
        for node in nodes:
            node.host = placement[node.name]
        pairs = self.link_pairs(data.get("links", {}), node_names)
        if self.sim is None:
            self.check_lab_links(node_names, pairs, hosts, placement)
        machine_of = {node: host.address for node, host in placement.items()}
        links = [make_link(name, i, a, b, ports) for i, ((a, b), ports)
                 in enumerate(zip(pairs, link_ports(name, pairs, machine_of)))]
        topo = Topology(name=name, path=os.path.abspath(self.path), nodes=nodes, links=links,
                        accel=accel, boot_timeout_s=boot_timeout_s, description=description,
                        device_data=device_data,
                        sim=self.sim, hosts=hosts)
        if "profile" in data:
            topo.profile = profile_schema.parse(self, data["profile"], topo)
        return topo

    def sim_host(self, value):
        table = self.table(value, "sim")
        self.check_keys(table, SIM_KEYS, "sim")
        host = None
        if "host" in table:
            host = self.path_string(table["host"], "sim.host")
            if sim_host_file.is_file_name(host):     # beside the topology, checked now
                host = os.path.join(os.path.dirname(os.path.abspath(self.path)), host)
                sim_host_file.load(host)
            elif host not in catalog.sim_hosts():
                self.fail("sim.host", "unknown host preset (known: "
                          f"{', '.join(catalog.sim_hosts())}; or a host file, NAME.toml)", host)
        link = self.choice(table["link"], "sim.link", catalog.sim_links(), "link preset") \
            if "link" in table else None
        cores = per_io_us = None
        # the upper bounds are the simulator's: it refuses in one line what it cannot take
        if "cores" in table:
            cores = table["cores"]
            if isinstance(cores, bool) or not isinstance(cores, int) or cores < 1:
                self.fail("sim.cores", "must be a whole number of cores, at least 1", cores)
        if "per_io_us" in table:
            per_io_us = table["per_io_us"]
            if isinstance(per_io_us, bool) or not isinstance(per_io_us, (int, float)) \
                    or not math.isfinite(per_io_us) or per_io_us < 0:
                self.fail("sim.per_io_us", "must be a number of microseconds, at least 0",
                          per_io_us)
        host_cores = None
        if "host_cores" in table:
            host_cores = table["host_cores"]
            if isinstance(host_cores, bool) or not isinstance(host_cores, int) or host_cores < 1:
                self.fail("sim.host_cores", "must be a whole number of cores, at least 1",
                          host_cores)
        return SimHost(host, link, cores, per_io_us, host_cores)

    def node_names(self, data):
        if "nodes" not in data:
            self.fail("nodes", "missing (give nodes.count or nodes.names)")
        nodes = self.table(data["nodes"], "nodes")
        self.check_keys(nodes, NODES_KEYS, "nodes")
        if ("count" in nodes) == ("names" in nodes):
            self.fail("nodes", "give exactly one of count and names")
        # a lab on one host holds NODE_COUNT_RANGE; one with [[hosts]] up to
        # LAB_NODES_MAX, which the hosts' placement spreads 16 a host at most
        why = ""
        if self.sim is not None:
            node_range = SIM_NODE_COUNT_RANGE
        elif "hosts" in data:
            node_range = (NODE_COUNT_RANGE[0], LAB_NODES_MAX)
            why = (f": a lab on several hosts holds at most {LAB_NODES_MAX} nodes, "
                   f"{NODE_COUNT_RANGE[1]} a host")
        else:
            node_range = NODE_COUNT_RANGE
        lo, hi = node_range
        if "count" in nodes:
            value = nodes["count"]
            if why and isinstance(value, int) and not isinstance(value, bool) and value > hi:
                self.fail("nodes.count", f"must be {lo}..{hi}{why}", value)
            count = self.integer(value, "nodes.count", node_range)
            return [f"node{i}" for i in range(1, count + 1)]
        names = nodes["names"]
        if not isinstance(names, list) or not lo <= len(names) <= hi:
            self.fail("nodes.names", f"must be a list of {lo}..{hi} node names{why}", names)
        seen = set()
        for i, node_name in enumerate(names):
            key_path = f"nodes.names[{i}]"
            self.name(node_name, key_path, NODE_NAME_RE, NODE_NAME_RULE)
            if node_name in seen:
                self.fail(key_path, "duplicate node name", node_name)
            seen.add(node_name)
        return list(names)

    def overrides(self, value, node_names):
        node_tables = self.table(value, "node")
        for node_name, override in node_tables.items():
            key_path = f"node.{node_name}"
            if node_name not in node_names:
                self.fail(key_path, f"no such node (nodes: {', '.join(node_names)})")
            self.table(override, key_path)
            self.check_keys(override, NODE_KEYS, key_path)
        return node_tables

    def chosen_hosts(self, overrides, hosts):
        """node -> host name, of the nodes whose table says host = ."""
        names = [h.name for h in hosts]
        chosen = {}
        for node_name, override in overrides.items():
            if "host" in override:
                chosen[node_name] = self.choice(override["host"], f"node.{node_name}.host",
                                                names, "host (hosts)")
        return chosen

    # ---- devices ------------------------------------------------------------------

    def devices(self, value, key_path):
        entries = self.array_of_tables(value, key_path)
        if len(entries) > MAX_DEVICE_ENTRIES:
            self.fail(key_path, f"at most {MAX_DEVICE_ENTRIES} device entries "
                      f"(use count), not {len(entries)}")
        devices = []
        first_entry_of = {}
        for i, entry in enumerate(entries):
            entry_path = f"{key_path}[{i}]"
            for device in self.device_entry(entry, entry_path):
                if device.name in first_entry_of:
                    self.fail(f"{entry_path}.name", f"device '{device.name}' already comes from "
                              f"{key_path}[{first_entry_of[device.name]}]", entry["name"])
                first_entry_of[device.name] = i
                devices.append(device)
        return devices

    def device_entry(self, entry, key_path):
        self.check_keys(entry, DEVICE_KEYS, key_path)
        for required in ("name", "plugin"):
            if required not in entry:
                self.fail(f"{key_path}.{required}", "missing")
        base = self.name(entry["name"], f"{key_path}.name", DEVICE_NAME_RE,
                         "a-z then up to 11 of a-z, 0-9")
        plugin = self.choice(entry["plugin"], f"{key_path}.plugin", PLUGINS, "plugin")
        count = self.integer(entry.get("count", 1), f"{key_path}.count", DEVICE_COUNT_RANGE)
        # A RAID LUN is a SCSI logical unit (a MegaRAID-class controller's
        # virtual disk): scsi by default, like hdd, so the guest's sd driver
        # reads its block characteristics.
        bus = self.choice(entry.get("bus", "scsi" if plugin in ("hdd", "raid") else "virtio"),
                          f"{key_path}.bus", BUSES, "bus")
        params = self.params(entry.get("params", {}), f"{key_path}.params", plugin)

        if plugin == "raid":
            size_bytes = self.raid_size(params, entry.get("params", {}), f"{key_path}.params")
        else:
            size_path = f"{key_path}.params.size"
            if "size" not in params and self.sim is not None and "preset" in params \
                    and plugin in STORLAB_PLUGINS:
                if params["preset"] not in catalog.presets(plugin):
                    self.fail(f"{key_path}.params.preset", f"unknown {plugin} preset (known: "
                              f"{', '.join(catalog.presets(plugin))})", params["preset"])
                size_bytes = parse_size_bytes(catalog.effective(plugin, params)["size"])
            elif "size" not in params:
                self.fail(size_path, 'missing: give every disk a size, e.g. size = "1G" '
                          "(labs should be small; with a [sim] table a disk with a preset "
                          "takes the preset's)")
            else:
                size_bytes = parse_size_bytes(params["size"])
                if not size_bytes:
                    self.fail(size_path, "not a size > 0 (examples: 512, 4k, 2G)",
                              params["size"])
        # raid: None. A controller's virtual disk reports no rotation rate
        # (VPD page B1 "not reported"; MegaRAID does so for HDD arrays), and
        # Linux then treats it as rotational, as it does real HDD RAID LUNs
        # (the plugin's NBD rotational flag says the same). The members' rpm
        # would be a claim about one spindle the LUN does not have.
        rotation_rpm = self.rotation_rpm(plugin, params, entry.get("params", {}).get("rpm"),
                                         f"{key_path}.params")
        return [Device(name=f"{base}{n}", plugin=plugin, params=dict(params), bus=bus,
                       size_bytes=size_bytes, rotation_rpm=rotation_rpm, table=base)
                for n in range(count)]

    def params(self, value, key_path, plugin):
        table = self.table(value, key_path)
        params = {}
        for key, raw in table.items():
            key_path_k = f"{key_path}.{key}"
            if not PARAM_KEY_RE.fullmatch(key):
                self.fail(key_path_k, f"not a plugin parameter key ({PARAM_KEY_RULE})")
            if key in LAB_KEYS and plugin != "memory":
                self.fail(key_path_k, "set by the lab (the device's file in the lab's run "
                          "directory: `storlab top`/`storlab ctl LAB NODE DEVICE`): remove it",
                          raw)
            if plugin == "memory" and key not in MEMORY_PLUGIN_KEYS:
                self.fail(key_path_k, "not a key of nbdkit's memory plugin (known: "
                          f"{', '.join(MEMORY_PLUGIN_KEYS)})", raw)
            # (a raid LUN's size= gets raid_size's own, better, reason)
            if plugin in STORLAB_PLUGINS and (plugin, key) != ("raid", "size"):
                reason = plugin_keys.unknown_key_reason(plugin, key)
                if reason:
                    self.fail(key_path_k, reason, raw)
            if isinstance(raw, bool):
                text = "true" if raw else "false"
            elif isinstance(raw, (int, float, str)):
                text = str(raw)
            else:
                self.fail(key_path_k, "must be a string, number or boolean", raw)
            if CONTROL_RE.search(text) or "\n" in text:
                self.fail(key_path_k, "contains a control character", raw)
            params[key] = text
        return params

    def raid_size(self, params, raw, key_path):
        """The LUN size the raid plugin serves for these params (raid_lun_bytes),
        from the values the plugin settles on: defaults, preset, keys."""
        if "size" in params:
            self.fail(f"{key_path}.size", "not a raid parameter: the LUN's size follows from "
                      "level, members, stripe-size and member-size", raw["size"])
        known_presets = catalog.presets("raid")
        if "preset" in params and params["preset"] not in known_presets:
            self.fail(f"{key_path}.preset", "unknown raid preset (known: "
                      f"{', '.join(known_presets)})", raw["preset"])
        effective = catalog.effective("raid", params)

        def blame(*keys):
            """The key path to name: the first of keys the topology gives."""
            key = next((k for k in keys if k in params), keys[0])
            return f"{key_path}.{key}", (raw[key],) if key in raw else ()

        level = count(effective["level"])
        levels = catalog.raid_levels()
        if level not in levels:
            where, value = blame("level", "preset")
            self.fail(where, f"unknown RAID level (known: {', '.join(map(str, levels))})",
                      *value)
        members = count(effective["members"])
        if members is None:
            self.fail(f"{key_path}.members", "not a whole number", raw["members"])
        least, most = catalog.raid_min_members(level), catalog.raid_max_members()
        if not least <= members <= most:
            where, value = blame("members", "level", "preset")
            self.fail(where, f"RAID {level} needs {least}..{most} members (members = {members})",
                      *value)
        if level == 10 and members % 2:
            where, value = blame("members", "level", "preset")
            self.fail(where, f"RAID 10 needs an even number of members (mirrored pairs; "
                      f"members = {members})", *value)
        stripe = parse_size_bytes(effective["stripe-size"])
        stripe_range = catalog.param("raid", "stripe-size")
        lo, hi = int(stripe_range["min"]), int(stripe_range["max"])
        if stripe is None or not lo <= stripe <= hi or stripe & (stripe - 1):
            self.fail(f"{key_path}.stripe-size", f"must be a power of two, {size_text(lo)}.."
                      f"{size_text(hi)}", raw["stripe-size"])

        size_path = f"{key_path}.member-size"
        if "member-size" not in params:
            self.fail(size_path, 'missing: give the members a size, e.g. member-size = "1G" '
                      "(the LUN's size follows from it; labs should be small)")
        member = parse_size_bytes(params["member-size"])
        member_max = int(catalog.param("raid", "member-size")["max"])
        if not member or member > member_max:
            self.fail(size_path, f"not a size 1..{size_text(member_max)} (examples: 64M, 1G)",
                      raw["member-size"])
        if member < stripe:
            self.fail(size_path, f"smaller than stripe-size ({stripe} bytes)", raw["member-size"])
        return raid_lun_bytes(level, members, stripe, member)

    def rotation_rpm(self, plugin, params, raw_rpm, key_path):
        if plugin != "hdd":
            return None
        if "rpm" in params:
            try:
                rpm = float(params["rpm"])
            except ValueError:
                rpm = None
            if rpm is None or not math.isfinite(rpm) or rpm != int(rpm) or rpm <= 0:
                self.fail(f"{key_path}.rpm", "must be a whole number of revolutions per minute",
                          raw_rpm)
            return int(rpm)
        if params.get("preset", "") not in catalog.presets("hdd"):
            return int(catalog.default("hdd", "rpm"))  # the plugin refuses the name at `up`
        return int(catalog.effective("hdd", params)["rpm"])

    # ---- links --------------------------------------------------------------------

    def check_lab_links(self, node_names, pairs, hosts, placement):
        """A lab's links: at most LINKS_PER_NODE_MAX a node, and their ends'
        udp ports within PORT_SPAN on each machine (links_refusal,
        ports_refusal)."""
        refusal = links_refusal(node_names, pairs, self.link_mode)
        if refusal:
            key_path, value, reason = refusal
            self.fail(key_path, reason, *(() if value is None else (value,)))
        reason = ports_refusal(hosts, placement, pairs)
        if reason:
            self.fail("hosts", reason)

    def link_pairs(self, value, node_names):
        links = self.table(value, "links")
        self.check_keys(links, LINKS_KEYS, "links")
        mode = self.choice(links.get("mode", "full-mesh"), "links.mode", LINK_MODES, "link mode")
        self.link_mode = mode
        if mode != "pairs":
            if "pairs" in links:
                self.fail("links.pairs", f"only with mode = 'pairs' (mode is '{mode}')")
            if mode == "none":
                return []
            return [(a, b) for i, a in enumerate(node_names) for b in node_names[i + 1:]]

        if "pairs" not in links:
            self.fail("links.pairs", "missing (mode = 'pairs' needs pairs = [[\"a\", \"b\"], ...])")
        pairs = links["pairs"]
        if not isinstance(pairs, list) or not pairs:
            self.fail("links.pairs", "must be a non-empty list of [node, node] pairs", pairs)
        seen = {}
        result = []
        for i, pair in enumerate(pairs):
            key_path = f"links.pairs[{i}]"
            if (not isinstance(pair, list) or len(pair) != 2
                    or not all(isinstance(n, str) for n in pair)):
                self.fail(key_path, "must be a pair of node names", pair)
            for node_name in pair:
                if node_name not in node_names:
                    self.fail(key_path, f"no such node '{node_name}' "
                              f"(nodes: {', '.join(node_names)})", pair)
            a, b = pair
            if a == b:
                self.fail(key_path, "a node cannot link to itself", pair)
            key = frozenset(pair)
            if key in seen:
                self.fail(key_path, f"duplicate of links.pairs[{seen[key]}]", pair)
            seen[key] = i
            result.append((a, b))
        return result
