"""A topology's [[hosts]] and where its nodes run.

A lab runs on one host, this one, unless the topology lists libvirt hosts:

    [[hosts]]
    name = "here"
    uri = "qemu:///system"              this machine's libvirtd
    address = "192.0.2.1"               what links to other hosts use here

    [[hosts]]
    name = "far"
    uri = "qemu+ssh://root@192.0.2.2/system?keyfile=/root/.ssh/lab"
    address = "192.0.2.2"
    capacity = 4                        at most 4 nodes (optional)
    cache_dir = "/srv/storlab-cache"    where the plugins and appliance go there
                                        (optional, default /var/cache/storlab)

    [node.node3]
    host = "far"                        placed by hand; the others are spread

storlab reaches a remote host only through what its URI says: libvirt
opens it, and storlab's own ssh (nbdkit, files, control sockets) takes the
user, host, port, keyfile, no_verify and command (the ssh program) from the
same URI, so one line says how to get there. Nodes without host = are spread
over the hosts in proportion to their capacity (a host without one weighs 1
and takes up to MAX_NODES_PER_HOST), first host first on a tie. No host
holds more than MAX_NODES_PER_HOST: a lab's udp ports on one host are
counted for that many guests (schema/topology.py, PORT_SPAN).

cache_dir is a remote host's only: this machine's cache is the one every
storlab command here uses (STORLAB_CACHE_DIR), not one topology's.
"""
import ipaddress
import os
import re
import urllib.parse
from dataclasses import dataclass

from storlab_cli import paths

LOCAL_URI = "qemu:///system"
LOCAL_HOST = "local"                   # the implicit host of a topology without [[hosts]]
LOCAL_ADDRESS = "127.0.0.1"
HOST_KEYS = ("name", "uri", "address", "capacity", "cache_dir")
HOST_NAME_RE = re.compile(r"[a-z][a-z0-9-]{0,15}")
HOST_NAME_RULE = "a-z then up to 15 of a-z, 0-9, '-'"
MAX_HOSTS = 16
# A host's guests: a lab without [[hosts]] holds this many (topology.py's
# NODE_COUNT_RANGE), and so does each host of a lab on several.
MAX_NODES_PER_HOST = 16
CAPACITY_RANGE = (1, MAX_NODES_PER_HOST)
DEFAULT_CACHE_DIR = paths.DEFAULT_CACHE_DIR  # a remote host's, without cache_dir
# What storlab's ssh takes from a qemu+ssh URI's query (libvirt's own names).
SSH_URI_PARAMS = ("keyfile", "no_verify", "command")
# libvirt query parameters storlab passes on to libvirt and does not itself use.
LIBVIRT_ONLY_PARAMS = ("no_tty", "proxy", "socket", "netcat", "mode")


@dataclass(frozen=True)
class Host:
    name: str
    uri: str
    address: str             # the host's address on the links between hosts
    capacity: int | None     # at most this many nodes; None: any, weight 1
    cache_dir: str | None = None   # a remote host's plugin bundle and appliance go under it

    @property
    def local(self):
        return self.uri == LOCAL_URI


def local_host():
    return Host(LOCAL_HOST, LOCAL_URI, LOCAL_ADDRESS, None)


@dataclass(frozen=True)
class SshTarget:
    """How storlab's ssh reaches a qemu+ssh host: from its URI, nothing else."""
    user: str | None
    hostname: str
    port: int | None
    keyfile: str | None
    no_verify: bool
    command: str             # the ssh program

    def argv(self, *options):
        """ssh ... DESTINATION: BatchMode (never a prompt), the URI's key,
        port and host key policy; options come before the destination."""
        args = [self.command, "-o", "BatchMode=yes", "-o", "ConnectTimeout=10"]
        if self.port:
            args += ["-p", str(self.port)]
        if self.keyfile:
            args += ["-i", self.keyfile]
        if self.no_verify:
            args += ["-o", "StrictHostKeyChecking=no"]
        if self.user:
            args += ["-l", self.user]
        return args + list(options) + [self.hostname]


def parse_ssh_uri(uri):
    """The SshTarget of a qemu+ssh URI, or a reason (str) it is not one
    storlab can use."""
    parts = urllib.parse.urlsplit(uri)
    if parts.scheme != "qemu+ssh":
        return "not a qemu+ssh:// URI"
    if parts.path != "/system":
        return "the path must be /system (the system QEMU driver)"
    if not parts.hostname:
        return "no host name"
    try:
        port = parts.port
    except ValueError:
        return "not a port number"
    query = urllib.parse.parse_qs(parts.query, keep_blank_values=True)
    for key in query:
        if key not in SSH_URI_PARAMS + LIBVIRT_ONLY_PARAMS:
            return (f"query parameter '{key}' is not one storlab knows "
                    f"(known: {', '.join(SSH_URI_PARAMS + LIBVIRT_ONLY_PARAMS)})")
    one = {k: v[-1] for k, v in query.items()}
    if one.get("no_verify", "0") not in ("0", "1"):
        return "no_verify must be 0 or 1"
    return SshTarget(user=parts.username, hostname=parts.hostname, port=port,
                     keyfile=one.get("keyfile") or None, no_verify=one.get("no_verify") == "1",
                     command=one.get("command") or "ssh")


def read_hosts(loader, value):
    """The [[hosts]] array as Host objects, each checked (loader names the file)."""
    entries = loader.array_of_tables(value, "hosts")
    if not 1 <= len(entries) <= MAX_HOSTS:
        loader.fail("hosts", f"must list 1..{MAX_HOSTS} hosts", value)
    hosts, first_of = [], {}
    for i, entry in enumerate(entries):
        key_path = f"hosts[{i}]"
        loader.check_keys(entry, HOST_KEYS, key_path)
        for required in ("name", "uri"):
            if required not in entry:
                loader.fail(f"{key_path}.{required}", "missing")
        name = loader.name(entry["name"], f"{key_path}.name", HOST_NAME_RE, HOST_NAME_RULE)
        uri = loader.string(entry["uri"], f"{key_path}.uri")
        if uri != LOCAL_URI:
            target = parse_ssh_uri(uri)
            if isinstance(target, str):
                loader.fail(f"{key_path}.uri", f"{target} (a host is {LOCAL_URI} or "
                            "qemu+ssh://[USER@]HOST[:PORT]/system[?keyfile=...])", uri)
        for key, seen in (("name", name), ("uri", uri)):
            if (key, seen) in first_of:
                loader.fail(f"{key_path}.{key}", f"the same as hosts[{first_of[key, seen]}]",
                            seen)
            first_of[key, seen] = i
        if "address" not in entry and len(entries) > 1:
            loader.fail(f"{key_path}.address", "missing: with several hosts each names the "
                        "address its links use (an IPv4 or IPv6 address)")
        address = loader.string(entry.get("address", LOCAL_ADDRESS), f"{key_path}.address")
        try:
            address = str(ipaddress.ip_address(address))
        except ValueError:
            loader.fail(f"{key_path}.address", "not an IPv4 or IPv6 address", address)
        capacity = None
        if "capacity" in entry:
            capacity = loader.integer(entry["capacity"], f"{key_path}.capacity", CAPACITY_RANGE)
        cache_dir = read_cache_dir(loader, entry, key_path, name, uri)
        hosts.append(Host(name, uri, address, capacity, cache_dir))
    return hosts


def read_cache_dir(loader, entry, key_path, name, uri):
    """A remote host's cache directory (DEFAULT_CACHE_DIR without one);
    None for this machine, where the key is refused."""
    if uri == LOCAL_URI:
        if "cache_dir" in entry:
            loader.fail(f"{key_path}.cache_dir", f"host '{name}' is this machine ({LOCAL_URI}), "
                        "whose cache is STORLAB_CACHE_DIR's (default "
                        f"{DEFAULT_CACHE_DIR}): cache_dir is for a remote host",
                        entry["cache_dir"])
        return None
    value = loader.path_string(entry.get("cache_dir", DEFAULT_CACHE_DIR), f"{key_path}.cache_dir",
                               f"host '{name}': ")
    # the path as written is the one used: absolute, and nothing to resolve
    if not value.startswith("/") or os.path.normpath(value) != value or value.startswith("//"):
        loader.fail(f"{key_path}.cache_dir", f"host '{name}': must be an absolute path without "
                    "'.', '..', '//' or a trailing '/'", value)
    return value


def place(loader, hosts, node_names, chosen, per_host_max=MAX_NODES_PER_HOST):
    """node -> host name: chosen (node -> host name given by `host =`, already
    checked to name a host) first, the rest spread by capacity in node order.
    A host takes at most its capacity, or per_host_max without one (None: any
    number, for a [sim] topology, which lab_refusal judges as a lab)."""
    by_name = {h.name: h for h in hosts}
    count = {h.name: 0 for h in hosts}

    def room(host):
        return host.capacity if host.capacity is not None else per_host_max

    for node, host in chosen.items():
        count[host] += 1
    for host in hosts:
        if host.capacity is not None and count[host.name] > host.capacity:
            loader.fail("hosts", f"host '{host.name}' has capacity {host.capacity} and "
                        f"{count[host.name]} nodes placed on it with host =")
        elif room(host) is not None and count[host.name] > room(host):
            loader.fail("hosts", f"host '{host.name}' has {count[host.name]} nodes placed on it "
                        f"with host =: a host holds at most {room(host)}")
    placement = {}
    for node in node_names:
        if node in chosen:
            placement[node] = chosen[node]
            continue
        open_hosts = [h for h in hosts if room(h) is None or count[h.name] < room(h)]
        if not open_hosts:
            total = sum(room(h) for h in hosts)
            without = (f" (a host without capacity holds {per_host_max})"
                       if any(h.capacity is None for h in hosts) else "")
            loader.fail("hosts", f"{len(node_names)} nodes do not fit: the hosts' capacity "
                        f"is {total}{without}")
        # the least loaded for its weight; the first listed on a tie
        host = min(open_hosts, key=lambda h: count[h.name] / (h.capacity or 1))
        count[host.name] += 1
        placement[node] = host.name
    return {node: by_name[placement[node]] for node in node_names}
