"""pytest for lab topologies (scripts/storlab_cli/schema/topology.py) and their libvirt
domain XML (lab/render.py + topologies/templates/domain.xml.j2). No build, no VMs.

Golden files: STORLAB_REGENERATE_GOLDEN=1 rewrites tests/golden/*.xml.
"""
import collections
import glob
import ipaddress
import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
import zlib
from dataclasses import dataclass

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(TESTS)
STORLAB = os.path.join(SOURCE, "scripts", "storlab")

from storlab_cli import catalog, paths
from storlab_cli.lab import host_fit, render, state
from storlab_cli.schema import sizes, topology
from storlab_cli.errors import UserError

TOPOLOGIES = sorted(glob.glob(os.path.join(SOURCE, "topologies", "*.toml")))
GOLDEN = os.path.join(TESTS, "golden")
RUN_DIR = "/run/storlab/LAB"
GIB = 1 << 30
MIB = 1 << 20


@dataclass(frozen=True)
class FakeAppliance:  # the fields of appliance.Appliance
    kernel_path: str = "/cache/vmlinux"
    initrd_path: str = "/cache/initramfs.cpio"
    kernel_version: str = "6.1.0-test-amd64"
    content_hash: str = "0123456789abcdef"
    cmdline: str = "console=ttyS0"


APPLIANCE = FakeAppliance()

MINIMAL = '''
name = "lab"
[nodes]
count = 3
'''

ONE_DISK = '''
name = "lab"
[[defaults.devices]]
name = "disk"
plugin = "hdd"
[defaults.devices.params]
preset = "sas10k-300g"
size = "1G"
[nodes]
count = 3
'''


def write(tmp_path, text, name="x.toml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def load_text(tmp_path, text):
    return topology.load(write(tmp_path, text))


def load_error(tmp_path, text):
    """The one-line UserError loading text gives; asserts its shape."""
    path = write(tmp_path, text)
    with pytest.raises(UserError) as caught:
        topology.load(path)
    message = str(caught.value)
    assert type(caught.value) is UserError
    assert "\n" not in message
    assert message.startswith(path + ": "), message
    return message[len(path) + 2:]


def mesh(n, name="lab"):
    return f'name = "{name}"\n[nodes]\ncount = {n}\n'


# ---- shipped topologies -----------------------------------------------------------

def test_the_shipped_topologies_are_there():
    names = {os.path.basename(p) for p in TOPOLOGIES}
    assert {"smoke.toml", "default.toml", "vsa-3node.toml", "hybrid-4node.toml",
            "vsa-raid.toml"} <= names


@pytest.mark.parametrize("path", TOPOLOGIES, ids=os.path.basename)
def test_every_shipped_topology_loads(path):
    topo = topology.load(path)
    assert topo.name == os.path.basename(path)[:-len(".toml")]
    assert topo.path == os.path.abspath(path)
    assert topo.description
    with open(path) as f:
        assert f.readline().startswith("# "), "header comment saying what the lab is"
    if topo.sim is not None and any(
            ("size" not in d.params if d.plugin != "raid" else d.size_bytes > 4 * GIB)
            for n in topo.nodes for d in n.devices):
        return          # the simulator's: full-size disks (their presets' sizes) or LUNs
    if topo.lab_refusal():
        return          # the simulator's only (what a lab cannot build)
    for node in topo.nodes:
        # labs are small: a disk is at most 2 GiB, a RAID LUN (sparse) at most 4 GiB
        assert node.devices and all(d.size_bytes <= (4 if d.plugin == "raid" else 2) * GIB
                                    for d in node.devices)


def test_sim_table_names_presets_and_lets_disks_take_their_presets_size(tmp_path):
    """[sim]: host and link preset names (the link follows the host unless
    named), cores and per_io_us only when given; its disks may leave size
    to their preset (the catalog's figure, never typed here)."""
    assert load_text(tmp_path, ONE_DISK).sim is None
    text = ONE_DISK.replace('size = "1G"\n', '') + '[sim]\nhost = "tcg"\n'
    topo = load_text(tmp_path, text)
    assert topo.sim == topology.SimHost("tcg", None, None, None)
    assert topo.sim.resolved() == topology.SimHost("tcg", "tcg-udp", None, None)
    assert topo.sim.resolved("bare-metal") == topology.SimHost("bare-metal", "10gbe", None, None)
    assert topo.sim.resolved(None, 2).host_cores == 2
    preset_bytes = int(catalog.presets("hdd")["sas10k-300g"]["params"]["size"])
    assert all(d.size_bytes == preset_bytes for n in topo.nodes for d in n.devices)
    topo = load_text(tmp_path, MINIMAL + '[sim]\nlink = "25gbe"\ncores = 4\nper_io_us = 2.5\n'
                     'host_cores = 2\n')
    assert topo.sim.resolved("tcg") == topology.SimHost("tcg", "25gbe", 4, 2.5, 2)
    assert "sim.host_cores" in load_error(tmp_path, MINIMAL + '[sim]\nhost_cores = 0\n')


def test_a_study_sized_cluster_is_for_the_simulator_only(tmp_path):
    """A [sim] topology may hold a study's 64 nodes; a lab holds 16: `storlab
    up` (and a lab sweep) refuse it in one line before anything starts."""
    assert "1..16" in load_error(tmp_path, mesh(64))
    topo = load_text(tmp_path, mesh(64) + '[sim]\nhost = "bare-metal"\n')
    assert len(topo.nodes) == 64
    assert "1..256" in load_error(tmp_path, mesh(257) + '[sim]\n')
    path = write(tmp_path, mesh(64, "big") + '[sim]\n', "big.toml")
    result = subprocess.run(["/usr/bin/python3", STORLAB, "up", path], capture_output=True,
                            text=True, check=False, timeout=120)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == [
        f"storlab up: {path}: 64 nodes: a lab holds at most 16 (a topology this large is for the "
        "simulator: storlab sweep --backend sim)"], result.stderr


def test_smoke():
    topo = topology.load(os.path.join(SOURCE, "topologies", "smoke.toml"))
    assert [n.name for n in topo.nodes] == ["node1"]
    (node,) = topo.nodes
    assert (node.index, node.vcpus, node.memory_mib) == (1, 1, 768)
    assert node.devices == [
        topology.Device("disk0", "hdd", {"preset": "sas10k-300g", "size": "1G"}, "scsi", GIB, 10000),
        topology.Device("lun0", "raid", {"preset": "vsa-raid10-8x-sas10k", "member-size": "16M"},
                        "scsi", 64 * MIB, None)]
    assert topo.links == []
    assert (topo.accel, topo.boot_timeout_s) == ("auto", 120)


def test_default():
    topo = topology.load(os.path.join(SOURCE, "topologies", "default.toml"))
    assert [n.name for n in topo.nodes] == ["node1", "node2", "node3"]
    assert [(l.a, l.b) for l in topo.links] == [("node1", "node2"), ("node1", "node3"),
                                                ("node2", "node3")]
    for node in topo.nodes:
        assert [d.name for d in node.devices] == ["disk0", "disk1", "lun0"]
        assert all(d.plugin == "hdd" and d.size_bytes == 2 * GIB and d.bus == "scsi"
                   for d in node.devices[:2])
        lun = node.devices[2]
        assert (lun.plugin, lun.size_bytes, lun.bus) == ("raid", GIB, "scsi")
        assert node.disk_bytes == 5 * GIB


def test_vsa_3node_is_scenario_1():
    topo = topology.load(os.path.join(SOURCE, "topologies", "vsa-3node.toml"))
    assert len(topo.nodes) == 3 and len(topo.links) == 3
    for node in topo.nodes:
        [lun] = node.devices
        assert (lun.name, lun.plugin, lun.params["preset"], lun.bus) == \
            ("lun0", "raid", "vsa-raid10-8x-sas10k", "scsi")
        assert lun.size_bytes == 4 * GIB          # RAID 1/0 of 8 x 1 GiB members
    # each host's share mirrored to the next host, NFS-exported
    replicas = topo.profile.replicas
    assert [(v.name, v.peers) for v in replicas.volumes] == \
        [("node1", ["node2"]), ("node2", ["node3"]), ("node3", ["node1"])]
    assert topo.profile.nfs.mount_point == "/mnt/storlab"


def test_hybrid_4node_is_scenario_2():
    topo = topology.load(os.path.join(SOURCE, "topologies", "hybrid-4node.toml"))
    assert len(topo.nodes) == 4 and len(topo.links) == 6
    for node in topo.nodes:
        cache, *capacity = node.devices
        assert (cache.name, cache.plugin, cache.bus, cache.rotation_rpm) == \
            ("cache0", "ssd", "virtio", None)
        assert [d.name for d in capacity] == ["disk0", "disk1", "disk2", "disk3"]
        for d in capacity:
            assert (d.plugin, d.params["preset"], d.rotation_rpm) == ("hdd", "wd-xe-900g", 10000)
        assert cache.size_bytes < capacity[0].size_bytes


def test_vsa_raid_is_issue_7():
    """One node, one RAID 10 LUN of 8 x 1 GiB 10k SAS members, no profile."""
    topo = topology.load(os.path.join(SOURCE, "topologies", "vsa-raid.toml"))
    (node,) = topo.nodes
    assert (node.name, node.vcpus, node.memory_mib, topo.links, topo.profile) == \
        ("node1", 1, 768, [], None)
    assert node.devices == [topology.Device(
        "lun0", "raid", {"preset": "vsa-raid10-8x-sas10k", "member-size": "1G"}, "scsi",
        4 * GIB, None)]


# ---- raid devices: the LUN size is the plugin's ----------------------------------

def raid_text(params, entry=""):
    return device_text(f'name = "lun"\nplugin = "raid"\n{entry}', params)


@pytest.mark.parametrize("params, size", [
    # preset (= the built-in defaults): RAID 10 of 8, 64 KiB strips -> 4 x member
    ('preset = "vsa-raid10-8x-sas10k"\nmember-size = "1G"', 4 * GIB),
    ('member-size = "1G"', 4 * GIB),
    ('preset = "vsa-raid10-8x-sas10k"\nmember-size = "16M"', 64 * MIB),
    # a member is rounded down to whole strips
    ('member-size = "10000384"', 4 * (10000384 // 65536) * 65536),
    ('level = 0\nmembers = 3\nmember-size = "100M"\nstripe-size = "4k"', 300 * MIB),
    ('level = 1\nmembers = 2\nmember-size = "10M"', 10 * MIB),
    ('level = 1\nmembers = 3\nmember-size = "10M"', 10 * MIB),
    ('level = 5\nmembers = 4\nmember-size = "100M"', 300 * MIB),
    ('level = 6\nmembers = 6\nmember-size = "100M"\nstripe-size = "128k"', 400 * MIB),
    ('level = "10"\nmembers = "4"\nmember-size = "64M"', 128 * MIB),
    ('preset = "vsa-raid10-8x-sas10k"\nlevel = 5\nmember-size = "64M"', 7 * 64 * MIB),
    ('members = "8.0"\nmember-size = "1GiB"', 4 * GIB),
    ('member-size = "64M"\nstripe-size = "1M"\nbattery = "failed"', 4 * 64 * MIB),
])
def test_raid_lun_size_is_the_plugins_rule(tmp_path, params, size):
    (node,) = load_text(tmp_path, raid_text(params)).nodes
    (lun,) = node.devices
    assert (lun.name, lun.plugin, lun.size_bytes, lun.bus, lun.rotation_rpm) == \
        ("lun0", "raid", size, "scsi", None)


def test_raid_bus_can_be_chosen(tmp_path):
    (node,) = load_text(tmp_path, raid_text('member-size = "16M"', 'bus = "virtio"')).nodes
    assert (node.devices[0].bus, node.devices[0].rotation_rpm) == ("virtio", None)


def plugin_lun_bytes(params):
    """The size the built raid plugin serves for params (nbdkit + nbdinfo)."""
    plugin = paths.plugin("raid")
    if not (os.path.exists(plugin) and shutil.which("nbdkit") and shutil.which("nbdinfo")):
        pytest.skip("raid plugin not built (or nbdkit/nbdinfo missing)")
    result = subprocess.run(["nbdkit", "-U", "-", plugin, *params, "--run",
                             'nbdinfo --size "$uri"'], capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    return int(result.stdout)


@pytest.mark.parametrize("params", [
    {"preset": "vsa-raid10-8x-sas10k", "member-size": "16M"},
    {"member-size": "10000384"},
    {"level": "5", "members": "5", "member-size": "10M", "stripe-size": "256k"},
    {"level": "6", "members": "4", "member-size": "3M", "stripe-size": "4k"},
])
def test_raid_lun_size_matches_the_built_plugin(tmp_path, params):
    text = "\n".join(f'{k} = "{v}"' for k, v in params.items())
    (node,) = load_text(tmp_path, raid_text(text)).nodes
    assert node.devices[0].size_bytes == plugin_lun_bytes([f"{k}={v}" for k, v in params.items()])


def simulated_model(tmp_path, kind, params):
    """storlab-sim's report of the model it built from params: what the
    library itself settled on (defaults, preset, keys)."""
    simulator = paths.simulator()
    if not os.path.exists(simulator):
        pytest.skip(f"{simulator} not built")
    job = tmp_path / "one.fio"
    job.write_text("[one]\nrw=randread\nbs=4k\nnumber_ios=1\nsize=1m\n")
    result = subprocess.run([simulator, kind, *params, str(job)], capture_output=True,
                            text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["storlab"]["device"]["model"]


@pytest.mark.parametrize("preset", sorted(catalog.presets("hdd")) + [None])
def test_a_disks_rotation_rate_is_the_one_the_library_settles_on(tmp_path, preset):
    """The catalog's preset and defaults give the rpm the model itself uses."""
    params = ([f"preset={preset}"] if preset else []) + ["size=1G"]
    text = ONE_DISK.replace('preset = "sas10k-300g"\n',
                            f'preset = "{preset}"\n' if preset else "")
    node = load_text(tmp_path, text).nodes[0]
    revolution_ns = simulated_model(tmp_path, "hdd", params)["revolution_ns"]
    assert node.devices[0].rotation_rpm == round(60e9 / revolution_ns)


@pytest.mark.parametrize("preset", [None, *sorted(catalog.presets("raid"))])
def test_raid_presets_and_defaults_are_the_librarys(tmp_path, preset):
    params = {"preset": preset} if preset else {}
    model = simulated_model(tmp_path, "raid", [f"{k}={v}" for k, v in params.items()]
                            + ["member-size=16M"])
    effective = catalog.effective("raid", params)
    assert (int(effective["level"]), int(effective["members"]),
            sizes.parse_size_bytes(effective["stripe-size"])) == \
        (model["level"], model["members"], model["stripe_bytes"])


# ---- derived values -----------------------------------------------------------------

@pytest.mark.parametrize("n", range(1, 17))
def test_full_mesh_has_every_pair_once_in_index_order(tmp_path, n):
    topo = load_text(tmp_path, mesh(n))
    assert len(topo.links) == n * (n - 1) // 2
    expected = [(f"node{i}", f"node{j}") for i in range(1, n + 1) for j in range(i + 1, n + 1)]
    assert [(l.a, l.b) for l in topo.links] == expected
    assert [l.index for l in topo.links] == list(range(len(expected)))


def check_links(topo):
    """Every derived link value against the contract, computed independently."""
    crc = zlib.crc32(topo.name.encode())
    offset = (crc % 396) * 64
    ports, macs, addrs, networks = [], [], [], []
    for i, link in enumerate(topo.links):
        assert link.index == i
        assert link.port_a == 40000 + 2 * i + offset
        assert link.port_b == link.port_a + 1
        assert 1024 < link.port_a and link.port_b <= 65535
        assert link.mac_a == "52:54:00:%02x:%02x:00" % (crc & 0xFF, i)
        assert link.mac_b == "52:54:00:%02x:%02x:01" % (crc & 0xFF, i)
        net = ipaddress.IPv6Network("fd5c:%x:%x::/64" % (crc & 0xFFFF, i))
        a, b = ipaddress.IPv6Interface(link.addr_a), ipaddress.IPv6Interface(link.addr_b)
        assert (a.network, b.network) == (net, net)
        assert (a.ip, b.ip) == (net[1], net[2])
        assert link.addr_a == str(a)  # canonical text, as `ip addr` prints it
        ports += [link.port_a, link.port_b]
        macs += [link.mac_a, link.mac_b]
        addrs += [link.addr_a, link.addr_b]
        networks.append(net)
    for values in (ports, macs, addrs, networks):
        assert len(set(values)) == len(values)


@pytest.mark.parametrize("path", TOPOLOGIES, ids=os.path.basename)
def test_shipped_link_values(path):
    check_links(topology.load(path))


def test_biggest_lab_in_the_highest_port_slot_stays_below_65536(tmp_path):
    name = next(f"lab{i}" for i in range(100000) if zlib.crc32(f"lab{i}".encode()) % 396 == 395)
    topo = load_text(tmp_path, mesh(16, name))
    assert len(topo.links) == 120
    check_links(topo)
    assert topo.links[-1].port_b == 40000 + 395 * 64 + 239


def test_labs_with_other_names_get_other_ports_macs_and_prefixes(tmp_path):
    one = load_text(tmp_path, mesh(3, "alpha"))
    two = load_text(tmp_path, mesh(3, "beta"))
    assert one.links[0].port_a != two.links[0].port_a
    assert one.links[0].mac_a != two.links[0].mac_a
    assert one.links[0].addr_a != two.links[0].addr_a


def test_link_ends_give_each_side_its_own_port_and_the_peers(tmp_path):
    topo = load_text(tmp_path, mesh(3))
    l12, _, l23 = topo.links
    ends = topology.link_ends(topo, topo.node("node2"))
    assert [(e.peer, e.port, e.peer_port, e.mac, e.addr) for e in ends] == [
        ("node1", l12.port_b, l12.port_a, l12.mac_b, l12.addr_b),
        ("node3", l23.port_a, l23.port_b, l23.mac_a, l23.addr_a),
    ]
    assert [e.peer for e in topology.link_ends(topo, "node1")] == ["node2", "node3"]


def test_links_none_and_pairs(tmp_path):
    assert load_text(tmp_path, mesh(3) + '[links]\nmode = "none"\n').links == []
    topo = load_text(tmp_path, mesh(4) + '[links]\nmode = "pairs"\n'
                     'pairs = [["node3", "node1"], ["node2", "node4"]]\n')
    assert [(l.a, l.b, l.index) for l in topo.links] == [("node3", "node1", 0),
                                                        ("node2", "node4", 1)]
    check_links(topo)


def test_node_names_and_defaults(tmp_path):
    topo = load_text(tmp_path, 'name = "n"\n[nodes]\nnames = ["alpha", "beta-2"]\n')
    assert [(n.name, n.index, n.vcpus, n.memory_mib, n.devices) for n in topo.nodes] == [
        ("alpha", 1, 1, 768, []), ("beta-2", 2, 1, 768, [])]
    assert (topo.accel, topo.boot_timeout_s, topo.description) == ("auto", 120, "")
    assert state.domain_name(topo.name, topo.nodes[1].name) == "storlab-n-beta-2"
    assert state.domain_name(topo.name, "alpha") == "storlab-n-alpha"


def test_per_node_overrides(tmp_path):
    topo = load_text(tmp_path, ONE_DISK + '''
[defaults]
vcpus = 2
memory_mib = 1024
[node.node2]
memory_mib = 2048
vcpus = 4
[[node.node2.devices]]
name = "ram"
plugin = "memory"
count = 2
[node.node2.devices.params]
size = "64M"
[node.node3]
devices = []
''')
    node1, node2, node3 = topo.nodes
    assert (node1.vcpus, node1.memory_mib, [d.name for d in node1.devices]) == (2, 1024, ["disk0"])
    assert (node2.vcpus, node2.memory_mib) == (4, 2048)
    assert [(d.name, d.plugin, d.bus, d.size_bytes) for d in node2.devices] == [
        ("ram0", "memory", "virtio", 64 << 20), ("ram1", "memory", "virtio", 64 << 20)]
    assert (node3.vcpus, node3.memory_mib, node3.devices) == (2, 1024, [])


def test_nodes_do_not_share_device_objects(tmp_path):
    node1, node2, _ = load_text(tmp_path, ONE_DISK).nodes
    node1.devices[0].params["size"] = "9G"
    assert node2.devices[0].params["size"] == "1G"


def device_text(entry, params):
    return f'name = "lab"\n[[defaults.devices]]\n{entry}\n[defaults.devices.params]\n' \
           f'{params}\n[nodes]\ncount = 1\n'


@pytest.mark.parametrize("entry, params, expected", [
    ('name = "disk"\nplugin = "hdd"', 'size = "1G"', [("disk0", "scsi", 10000)]),
    ('name = "d"\nplugin = "hdd"\ncount = 3', 'size = "1G"\npreset = "hgst-7k1000-1t"',
     [("d0", "scsi", 7200), ("d1", "scsi", 7200), ("d2", "scsi", 7200)]),
    ('name = "d"\nplugin = "hdd"\nbus = "sata"', 'size = "1G"\npreset = "sata7200-2t"',
     [("d0", "sata", 7200)]),
    ('name = "d"\nplugin = "hdd"\nbus = "virtio"', 'size = "1G"\npreset = "wd-xe-900g"',
     [("d0", "virtio", 10000)]),
    ('name = "d"\nplugin = "hdd"', 'size = "1G"\npreset = "sas10k-300g"\nrpm = "15000"',
     [("d0", "scsi", 15000)]),
    ('name = "d"\nplugin = "hdd"', 'size = "1G"\nrpm = 5400', [("d0", "scsi", 5400)]),
    # an unknown preset is the plugin's to reject at `up`
    ('name = "d"\nplugin = "hdd"', 'size = "1G"\npreset = "nosuch"', [("d0", "scsi", 10000)]),
    ('name = "m"\nplugin = "memory"', 'size = "1G"', [("m0", "virtio", None)]),
    ('name = "m"\nplugin = "memory"\nbus = "scsi"', 'size = "1G"', [("m0", "scsi", None)]),
])
def test_device_expansion_bus_and_rpm(tmp_path, entry, params, expected):
    (node,) = load_text(tmp_path, device_text(entry, params)).nodes
    assert [(d.name, d.bus, d.rotation_rpm) for d in node.devices] == expected


def test_params_are_passed_through_as_strings(tmp_path):
    (node,) = load_text(tmp_path, device_text(
        'name = "d"\nplugin = "hdd"',
        'size = "1G"\nheads = 4\nwrite-cache = true\naverage-seek-ms = 3.5\n'
        'file = "/tmp/a b"')).nodes
    assert node.devices[0].params == {"size": "1G", "heads": "4", "write-cache": "true",
                                      "average-seek-ms": "3.5", "file": "/tmp/a b"}


@pytest.mark.parametrize("text, size", [
    ("512", 512), ("4k", 4096), ("4K", 4096), ("2G", 2 * GIB), ("1GiB", GIB), ("3MB", 3 << 20),
    ("1t", 1 << 40), ("100b", 100), ("1.5G", None), ("G", None), ("1Gi", None), ("-1", None),
    ("1 G", None), ("", None), ("1x", None),
])
def test_size_grammar(text, size):
    assert sizes.parse_size_bytes(text) == size


# ---- validation errors --------------------------------------------------------------

TOP_KNOWN = "name, description, accel, boot_timeout_s, device_data, defaults, nodes, node, links, hosts, profile, sim"


ERROR_CASES = [
    # the contract's examples
    ('name = "x"\n[nodes]\ncount = 0\n', "nodes.count = 0: must be 1..16"),
    (ONE_DISK.replace('plugin = "hdd"', 'plugin = "nvram"'),
     "defaults.devices[0].plugin = 'nvram': unknown plugin (known: hdd, ssd, raid, memory)"),
    (MINIMAL + "[node.node9]\nvcpus = 2\n",
     "node.node9: no such node (nodes: node1, node2, node3)"),
    (MINIMAL + "[nodez]\ncount = 1\n", f"unknown key 'nodez' (known: {TOP_KNOWN})"),
    # the file
    ('name = "x"\n[nodes]\ncount = 3\ncount = 4\n', "not valid TOML: "),
    ('name = "x\n', "not valid TOML: "),
    # top level
    ("[nodes]\ncount = 1\n", "name: missing"),
    ('name = "Smoke"\n[nodes]\ncount = 1\n', "name = 'Smoke': must be 1..24 of a-z, 0-9, '-'"),
    ('name = "a_b"\n[nodes]\ncount = 1\n', "name = 'a_b': must be"),
    ('name = "a.b"\n[nodes]\ncount = 1\n', "name = 'a.b': must be"),
    (f'name = "{"a" * 25}"\n[nodes]\ncount = 1\n', f"name = '{'a' * 25}': must be 1..24"),
    ('name = ""\n[nodes]\ncount = 1\n', "name = '': must be"),
    ('name = 3\n[nodes]\ncount = 1\n', "name = 3: must be a string"),
    ('description = "a\\u0001b"\n' + MINIMAL, "description: contains a control character"),
    ('accel = "xen"\n' + MINIMAL, "accel = 'xen': unknown accelerator (known: auto, kvm, tcg)"),
    ('boot_timeout_s = 9\n' + MINIMAL, "boot_timeout_s = 9: must be 10..1800"),
    ('boot_timeout_s = 1801\n' + MINIMAL, "boot_timeout_s = 1801: must be 10..1800"),
    ('boot_timeout_s = "60"\n' + MINIMAL, "boot_timeout_s = '60': must be an integer"),
    ('boot_timeout_s = true\n' + MINIMAL, "boot_timeout_s = true: must be an integer"),
    ('boot_timeout_s = 60.0\n' + MINIMAL, "boot_timeout_s = 60.0: must be an integer"),
    # nodes
    ('name = "x"\n', "nodes: missing"),
    ('name = "x"\nnodes = 3\n', "nodes = 3: must be a table"),
    ('name = "x"\n[nodes]\n', "nodes: give exactly one of count and names"),
    ('name = "x"\n[nodes]\ncount = 2\nnames = ["a", "b"]\n',
     "nodes: give exactly one of count and names"),
    ('name = "x"\n[nodes]\ncount = 17\n', "nodes.count = 17: must be 1..16"),
    ('name = "x"\n[nodes]\ncount = 2\nsize = 1\n',
     "nodes: unknown key 'size' (known: count, names)"),
    ('name = "x"\n[nodes]\nnames = ["a", "b", "a"]\n',
     "nodes.names[2] = 'a': duplicate node name"),
    ('name = "x"\n[nodes]\nnames = ["a", "B"]\n', "nodes.names[1] = 'B': must be a-z then"),
    ('name = "x"\n[nodes]\nnames = ["1a"]\n', "nodes.names[0] = '1a': must be a-z then"),
    ('name = "x"\n[nodes]\nnames = ["a23456789012345678"]\n', "nodes.names[0] = "),
    ('name = "x"\n[nodes]\nnames = []\n', "nodes.names = []: must be a list of 1..16 node names"),
    ('name = "x"\n[nodes]\nnames = "a"\n', "nodes.names = 'a': must be a list"),
    ('name = "x"\n[nodes]\nnames = [1]\n', "nodes.names[0] = 1: must be a string"),
    # defaults and overrides
    ('name = "x"\n[defaults]\nmemory_mib = 255\n[nodes]\ncount = 1\n',
     "defaults.memory_mib = 255: must be 256..16384"),
    ('name = "x"\n[defaults]\nmemory_mib = 16385\n[nodes]\ncount = 1\n',
     "defaults.memory_mib = 16385: must be 256..16384"),
    ('name = "x"\n[defaults]\nvcpus = 0\n[nodes]\ncount = 1\n', "defaults.vcpus = 0: must be 1..8"),
    ('name = "x"\n[defaults]\nvcpus = 9\n[nodes]\ncount = 1\n', "defaults.vcpus = 9: must be 1..8"),
    ('name = "x"\n[defaults]\nvcpu = 2\n[nodes]\ncount = 1\n',
     "defaults: unknown key 'vcpu' (known: vcpus, memory_mib, devices)"),
    (MINIMAL + "[node.node2]\nmemory_mib = 100000\n",
     "node.node2.memory_mib = 100000: must be 256..16384"),
    (MINIMAL + "[node.node2]\nname = 'y'\n",
     "node.node2: unknown key 'name' (known: vcpus, memory_mib, devices, host)"),
    ("node = 1\n" + MINIMAL, "node = 1: must be a table"),
    (MINIMAL + "[node]\nnode1 = 2\n", "node.node1 = 2: must be a table"),
    # devices
    (ONE_DISK.replace('name = "disk"\n', ''), "defaults.devices[0].name: missing"),
    (ONE_DISK.replace('plugin = "hdd"\n', ''), "defaults.devices[0].plugin: missing"),
    (ONE_DISK.replace('name = "disk"', 'name = "disk-a"'),
     "defaults.devices[0].name = 'disk-a': must be a-z then up to 11 of a-z, 0-9"),
    (ONE_DISK.replace('name = "disk"', 'name = "abcdefghijklm"'), "defaults.devices[0].name = "),
    (ONE_DISK.replace('plugin = "hdd"', 'plugin = "hdd"\ncount = 0'),
     "defaults.devices[0].count = 0: must be 1..16"),
    (ONE_DISK.replace('plugin = "hdd"', 'plugin = "hdd"\ncount = 17'),
     "defaults.devices[0].count = 17: must be 1..16"),
    (ONE_DISK.replace('plugin = "hdd"', 'plugin = "hdd"\nbus = "ide"'),
     "defaults.devices[0].bus = 'ide': unknown bus (known: virtio, scsi, sata)"),
    (ONE_DISK.replace('plugin = "hdd"', 'plugin = "hdd"\nsize = "1G"'),
     "defaults.devices[0]: unknown key 'size' (known: name, plugin, count, bus, params)"),
    (ONE_DISK.replace('size = "1G"', ''),
     "defaults.devices[0].params.size: missing: give every disk a size"),
    (ONE_DISK.replace('size = "1G"', 'size = "big"'),
     "defaults.devices[0].params.size = 'big': not a size > 0 (examples: 512, 4k, 2G)"),
    (ONE_DISK.replace('size = "1G"', 'size = "0"'), "defaults.devices[0].params.size = '0'"),
    (ONE_DISK.replace('size = "1G"', 'size = "1G"\nrpm = "fast"'),
     "defaults.devices[0].params.rpm = 'fast': must be a whole number"),
    (ONE_DISK.replace('size = "1G"', 'size = "1G"\nrpm = 7200.5'),
     "defaults.devices[0].params.rpm = 7200.5: must be a whole number"),
    (ONE_DISK.replace('size = "1G"', 'size = "1G"\nrpm = "inf"'),
     "defaults.devices[0].params.rpm = 'inf': must be"),
    (ONE_DISK.replace('size = "1G"', 'size = "1G"\nPreset = "a"'),
     "defaults.devices[0].params.Preset: not a plugin parameter key"),
    (ONE_DISK.replace('size = "1G"', 'size = "1G"\n"a=b" = "c"'),
     "defaults.devices[0].params.a=b: not a plugin parameter key"),
    (ONE_DISK.replace('size = "1G"', 'size = "1G"\n"a b" = "c"'),
     "defaults.devices[0].params.a b: not a plugin parameter key"),
    # a key read as an nbdkit option would run a command as root (--run, --filter, -U)
    (ONE_DISK.replace('size = "1G"', 'size = "1G"\n"--run" = "touch /tmp/x"'),
     "defaults.devices[0].params.--run: not a plugin parameter key (a-z, then"),
    (ONE_DISK.replace('size = "1G"', 'size = "1G"\n"-U" = "/tmp/s"'),
     "defaults.devices[0].params.-U: not a plugin parameter key"),
    (ONE_DISK.replace('size = "1G"', 'size = "1G"\n"" = "x"'),
     "defaults.devices[0].params.: not a plugin parameter key"),
    # only keys the plugin's own tables list (nbdkit PLUGIN --dump-plugin)
    (ONE_DISK.replace('size = "1G"', 'size = "1G"\nrmp = 7200'),
     "defaults.devices[0].params.rmp = 7200: not a key of the hdd plugin (did you mean rpm?"),
    (ONE_DISK.replace('size = "1G"', 'size = "1G"\nrun = "touch /tmp/x"'),
     "defaults.devices[0].params.run = 'touch /tmp/x': not a key of the hdd plugin"),
    (raid_text('member-size = "16M"\nchannels = 8'),
     "defaults.devices[0].params.channels = 8: not a key of the raid plugin"),
    (ONE_DISK.replace('size = "1G"', 'size = "1G"\nstats = "/etc/shadow"'),
     "defaults.devices[0].params.stats = '/etc/shadow': set by the lab"),
    (ONE_DISK.replace('size = "1G"', 'size = "1G"\nheads = [1, 2]'),
     "defaults.devices[0].params.heads = [1, 2]: must be a string, number or boolean"),
    (ONE_DISK.replace('size = "1G"', 'size = "1G"\nfile = "a\\nb"'),
     "defaults.devices[0].params.file = 'a\\nb': contains a control character"),
    ('name = "x"\n[defaults]\ndevices = 3\n[nodes]\ncount = 1\n',
     "defaults.devices = 3: must be an array of tables"),
    (ONE_DISK.replace("[nodes]", '[[defaults.devices]]\nname = "disk"\nplugin = "memory"\n'
                      '[defaults.devices.params]\nsize = "1M"\n[nodes]'),
     "defaults.devices[1].name = 'disk': device 'disk0' already comes from defaults.devices[0]"),
    ('name = "x"\n' + '[[defaults.devices]]\nname = "d"\nplugin = "memory"\n' * 17
     + "[nodes]\ncount = 1\n", "defaults.devices: at most 16 device entries (use count), not 17"),
    (MINIMAL + '[[node.node1.devices]]\nname = "d"\nplugin = "nvram"\n',
     "node.node1.devices[0].plugin = 'nvram': unknown plugin"),
    # raid devices
    (raid_text('preset = "vsa-raid10-8x-sas10k"'),
     "defaults.devices[0].params.member-size: missing: give the members a size, "
     "e.g. member-size = \"1G\""),
    (raid_text('member-size = "1G"\nsize = "4G"'),
     "defaults.devices[0].params.size = '4G': not a raid parameter: the LUN's size follows "
     "from level, members, stripe-size and member-size"),
    (raid_text('member-size = "1G"\nctl = "/tmp/x.ctl"'),
     "defaults.devices[0].params.ctl = '/tmp/x.ctl': set by the lab"),
    (raid_text('member-size = "1G"\npreset = "sas10k-300g"'),
     "defaults.devices[0].params.preset = 'sas10k-300g': unknown raid preset "
     "(known: vsa-raid10-8x-sas10k)"),
    (raid_text('member-size = "big"'),
     "defaults.devices[0].params.member-size = 'big': not a size 1..64T"),
    (raid_text('member-size = "65T"'), "defaults.devices[0].params.member-size = '65T': not a size"),
    (raid_text('member-size = "0"'), "defaults.devices[0].params.member-size = '0': not a size"),
    (raid_text('member-size = "32k"'),
     "defaults.devices[0].params.member-size = '32k': smaller than stripe-size (65536 bytes)"),
    (raid_text('member-size = "1G"\nlevel = 4'),
     "defaults.devices[0].params.level = 4: unknown RAID level (known: 0, 1, 5, 6, 10)"),
    (raid_text('member-size = "1G"\nlevel = "ten"'),
     "defaults.devices[0].params.level = 'ten': unknown RAID level"),
    (raid_text('member-size = "1G"\nmembers = 7'),
     "defaults.devices[0].params.members = 7: RAID 10 needs an even number of members"),
    (raid_text('member-size = "1G"\nmembers = 2'),
     "defaults.devices[0].params.members = 2: RAID 10 needs 4..32 members (members = 2)"),
    (raid_text('member-size = "1G"\nlevel = 6\nmembers = 33'),
     "defaults.devices[0].params.members = 33: RAID 6 needs 4..32 members"),
    (raid_text('member-size = "1G"\nmembers = 4.5'),
     "defaults.devices[0].params.members = 4.5: not a whole number"),
    (raid_text('member-size = "1G"\nstripe-size = "48k"'),
     "defaults.devices[0].params.stripe-size = '48k': must be a power of two, 4k..16M"),
    (raid_text('member-size = "1G"\nstripe-size = "32M"'),
     "defaults.devices[0].params.stripe-size = '32M': must be a power of two"),
    # links
    (MINIMAL + '[links]\nmode = "ring"\n',
     "links.mode = 'ring': unknown link mode (known: full-mesh, none, pairs)"),
    (MINIMAL + '[links]\nmode = "pairs"\npairs = [["node1", "node4"]]\n',
     "links.pairs[0] = ['node1', 'node4']: no such node 'node4' (nodes: node1, node2, node3)"),
    (MINIMAL + '[links]\nmode = "pairs"\npairs = [["node2", "node2"]]\n',
     "links.pairs[0] = ['node2', 'node2']: a node cannot link to itself"),
    (MINIMAL + '[links]\nmode = "pairs"\npairs = [["node1", "node2"], ["node2", "node1"]]\n',
     "links.pairs[1] = ['node2', 'node1']: duplicate of links.pairs[0]"),
    (MINIMAL + '[links]\nmode = "pairs"\npairs = [["node1"]]\n',
     "links.pairs[0] = ['node1']: must be a pair of node names"),
    (MINIMAL + '[links]\nmode = "pairs"\n', "links.pairs: missing"),
    (MINIMAL + '[links]\nmode = "pairs"\npairs = []\n', "links.pairs = []: must be a non-empty"),
    (MINIMAL + '[links]\npairs = [["node1", "node2"]]\n',
     "links.pairs: only with mode = 'pairs' (mode is 'full-mesh')"),
    (MINIMAL + '[links]\nmesh = true\n', "links: unknown key 'mesh' (known: mode, pairs)"),
    # [sim]: preset names only (their figures are the C library's)
    (MINIMAL + '[sim]\nhots = "tcg"\n',
     "sim: unknown key 'hots' (known: host, link, cores, per_io_us, host_cores)"),
    (MINIMAL + '[sim]\nhost = "kvm"\n',
     "sim.host = 'kvm': unknown host preset (known: bare-metal, tcg; or a host file, NAME.toml)"),
    (MINIMAL + '[sim]\nlink = "100gbe"\n',
     "sim.link = '100gbe': unknown link preset (known: 1gbe, 10gbe, 25gbe, tcg-udp)"),
    (MINIMAL + '[sim]\ncores = 0\n', "sim.cores = 0: must be a whole number of cores"),
    (MINIMAL + '[sim]\ncores = 2.5\n', "sim.cores = 2.5: must be a whole number of cores"),
    (MINIMAL + '[sim]\nper_io_us = -1\n', "sim.per_io_us = -1: must be a number of micro"),
    (MINIMAL + '[sim]\nper_io_us = "10"\n', "sim.per_io_us = '10': must be a number of micro"),
    ("sim = 1\n" + MINIMAL, "sim = 1: must be a table"),
    # with [sim] a disk may take its preset's size: a preset it names, then
    (ONE_DISK.replace('preset = "sas10k-300g"\nsize = "1G"', 'preset = "nope"') + "[sim]\n",
     "defaults.devices[0].params.preset = 'nope': unknown hdd preset (known: "),
    (ONE_DISK.replace('preset = "sas10k-300g"\nsize = "1G"', 'rpm = 7200') + "[sim]\n",
     "defaults.devices[0].params.size: missing: give every disk a size"),
]


@pytest.mark.parametrize("text, expected", ERROR_CASES, ids=[e for _, e in ERROR_CASES])
def test_validation_errors(tmp_path, text, expected):
    message = load_error(tmp_path, text)
    assert message.startswith(expected), message


def test_contract_example_messages_exactly(tmp_path):
    path = write(tmp_path, 'name = "x"\n[nodes]\ncount = 0\n')
    with pytest.raises(UserError, match=re.escape(f"{path}: nodes.count = 0: must be 1..16") + "$"):
        topology.load(path)


def test_missing_file_names_the_path(tmp_path):
    path = str(tmp_path / "nope.toml")
    with pytest.raises(UserError, match=re.escape(path) + ": cannot read: No such file"):
        topology.load(path)
    with pytest.raises(UserError, match=re.escape(str(tmp_path)) + ": cannot read: "):
        topology.load(str(tmp_path))


def test_not_utf8_is_a_toml_error(tmp_path):
    path = tmp_path / "bin.toml"
    path.write_bytes(b'name = "\xff"\n')
    with pytest.raises(UserError, match="bin.toml: not valid TOML: not UTF-8"):
        topology.load(str(path))


def test_message_names_the_path_as_given(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "topologies").mkdir()
    (tmp_path / "topologies" / "x.toml").write_text('name = "x"\n[nodes]\ncount = 0\n')
    with pytest.raises(UserError, match=r"^topologies/x\.toml: nodes\.count = 0: must be 1\.\.16$"):
        topology.load("topologies/x.toml")


# ---- rendering -------------------------------------------------------------------------

def shipped(name):
    return topology.load(os.path.join(SOURCE, "topologies", f"{name}.toml"))


@pytest.mark.parametrize("lab, node_name, accel, golden", [
    ("smoke", "node1", "tcg", "smoke-node1.xml"),
    ("default", "node2", "kvm", "default-node2.xml"),
    ("vsa-raid", "node1", "tcg", "vsa-raid-node1.xml"),
])
def test_golden_domain_xml(lab, node_name, accel, golden):
    topo = shipped(lab)
    xml = render.domain_xml(topo, topo.node(node_name), APPLIANCE, RUN_DIR, accel)
    path = os.path.join(GOLDEN, golden)
    if os.environ.get("STORLAB_REGENERATE_GOLDEN") == "1":
        os.makedirs(GOLDEN, exist_ok=True)
        with open(path, "w") as f:
            f.write(xml)
    with open(path) as f:
        assert xml == f.read(), f"{golden} differs (STORLAB_REGENERATE_GOLDEN=1 rewrites it)"


def render_all():
    for path in TOPOLOGIES:
        topo = topology.load(path)
        for node in topo.nodes:
            for accel in ("tcg", "kvm"):
                yield topo, node, accel


@pytest.mark.parametrize("topo, node, accel",
                         [pytest.param(t, n, a, id=f"{t.name}-{n.name}-{a}")
                          for t, n, a in render_all()])
def test_domain_xml_structure(topo, node, accel):
    root = ET.fromstring(render.domain_xml(topo, node, APPLIANCE, RUN_DIR, accel))
    assert root.tag == "domain"
    assert root.get("type") == {"tcg": "qemu", "kvm": "kvm"}[accel]
    assert root.findtext("name") == f"storlab-{topo.name}-{node.name}"
    assert root.find("memory").get("unit") == "MiB"
    assert int(root.findtext("memory")) == node.memory_mib
    assert int(root.findtext("vcpu")) == node.vcpus
    os_type = root.find("os/type")
    assert (os_type.get("arch"), os_type.get("machine"), os_type.text) == ("x86_64", "pc", "hvm")
    assert root.findtext("os/kernel") == APPLIANCE.kernel_path
    assert root.findtext("os/initrd") == APPLIANCE.initrd_path
    assert root.findtext("on_poweroff") == "destroy"
    cpus = root.findall("cpu")
    tb_cache = root.find("features/tcg/tb-cache")
    if accel == "kvm":
        assert [c.get("mode") for c in cpus] == ["host-passthrough"]
        assert tb_cache is None
    else:
        assert cpus == []
        # QEMU's code cache a guest, as host_fit counts it (not QEMU's 1 GiB)
        assert (tb_cache.get("unit"), int(tb_cache.text)) == ("MiB", host_fit.TCG_CODE_CACHE_MIB)

    ends = topology.link_ends(topo, node)
    args = root.findtext("os/cmdline").split()
    assert args[0] == "console=ttyS0"
    assert f"storlab.node={node.name}" in args
    net = [a for a in args if a.startswith("storlab.net=")]
    if ends:
        assert net == ["storlab.net=" + ",".join(f"{e.mac}@{e.addr}" for e in ends)]
    else:
        assert net == []

    devices = root.find("devices")
    disks = devices.findall("disk")
    assert len(disks) == len(node.devices)
    targets, scsi_units = [], []
    for disk, device in zip(disks, node.devices):
        assert (disk.get("type"), disk.get("device")) == ("network", "disk")
        driver = disk.find("driver")
        assert (driver.get("name"), driver.get("type"), driver.get("cache")) == \
            ("qemu", "raw", "none")
        assert disk.find("source").get("protocol") == "nbd"
        host = disk.find("source/host")
        assert host.get("transport") == "unix"
        assert host.get("socket") == f"{RUN_DIR}/{node.name}-{device.name}.sock"
        target = disk.find("target")
        assert target.get("bus") == device.bus
        assert target.get("dev")[:2] == ("vd" if device.bus == "virtio" else "sd")
        targets.append(target.get("dev"))
        if device.plugin == "hdd" and device.bus in ("scsi", "sata"):
            assert target.get("rotation_rate") == str(device.rotation_rpm)
        else:  # raid LUNs too: "not reported", which Linux takes as rotational
            assert target.get("rotation_rate") is None
        assert disk.findtext("serial") == device.name
        address = disk.find("address")
        if device.bus == "scsi":  # the k-th SCSI disk: LUN k of the one virtio-scsi controller
            assert {k: address.get(k) for k in ("type", "controller", "bus", "target")} == \
                {"type": "drive", "controller": "0", "bus": "0", "target": "0"}
            scsi_units.append(int(address.get("unit")))
        else:
            assert address is None
    assert scsi_units == list(range(len(scsi_units)))
    assert len(set(targets)) == len(targets)
    scsi = [c for c in devices.findall("controller") if c.get("type") == "scsi"]
    if any(d.bus == "scsi" for d in node.devices):
        assert [c.get("model") for c in scsi] == ["virtio-scsi"]
    else:
        assert scsi == []

    interfaces = devices.findall("interface")
    assert [i.get("type") for i in interfaces] == ["udp"] * len(ends)
    for interface, end in zip(interfaces, ends):
        assert interface.find("mac").get("address") == end.mac
        source = interface.find("source")
        assert (source.get("address"), source.get("port")) == ("127.0.0.1", str(end.peer_port))
        local = source.find("local")
        assert (local.get("address"), local.get("port")) == ("127.0.0.1", str(end.port))
        assert interface.find("model").get("type") == "virtio"
    # no host network of any kind, no display
    assert root.findall(".//graphics") == [] and root.findall(".//hostdev") == []
    assert not any(i.get("type") in ("network", "bridge", "user", "direct", "ethernet")
                   for i in root.iter("interface"))
    addresses = {e.get("address") for e in root.iter() if e.get("address") and e.tag != "mac"}
    assert addresses <= {"127.0.0.1"}

    channels = devices.findall("channel")
    assert [(c.get("type"), c.find("target").get("type"), c.find("target").get("name"))
            for c in channels] == [("unix", "virtio", "org.qemu.guest_agent.0")]
    (serial,) = devices.findall("serial")
    assert serial.get("type") == "pty"
    assert serial.find("log").get("file") == f"{RUN_DIR}/{node.name}.console.log"
    assert serial.find("log").get("append") == "off"
    assert [c.get("type") for c in devices.findall("console")] == ["pty"]
    assert [m.get("model") for m in devices.findall("memballoon")] == ["none"]


def test_scsi_and_sata_share_sd_names_virtio_gets_vd(tmp_path):
    topo = load_text(tmp_path, '''
name = "mix"
[[defaults.devices]]
name = "a"
plugin = "hdd"
count = 2
[defaults.devices.params]
size = "1G"
[[defaults.devices]]
name = "b"
plugin = "hdd"
bus = "sata"
[defaults.devices.params]
size = "1G"
preset = "sata7200-2t"
[[defaults.devices]]
name = "c"
plugin = "memory"
count = 2
[defaults.devices.params]
size = "1G"
[nodes]
count = 1
''')
    root = ET.fromstring(render.domain_xml(topo, topo.nodes[0], APPLIANCE, RUN_DIR, "tcg"))
    targets = [(t.get("dev"), t.get("bus"), t.get("rotation_rate"))
               for t in root.iterfind("devices/disk/target")]
    assert targets == [("sda", "scsi", "10000"), ("sdb", "scsi", "10000"),
                       ("sdc", "sata", "7200"), ("vda", "virtio", None), ("vdb", "virtio", None)]
    assert [c.get("type") for c in root.iterfind("devices/controller")
            if c.get("type") in ("scsi", "sata")] == ["scsi", "sata"]


def test_eight_and_more_scsi_disks_share_one_virtio_scsi_controller(tmp_path):
    # libvirt's own addressing stops at unit 6 and adds an lsilogic controller
    # the guest has no driver for: the 8th disk vanished from the guest.
    topo = load_text(tmp_path, """
name = "many"
[[defaults.devices]]
name = "c"
plugin = "memory"
[defaults.devices.params]
size = "1G"
[[defaults.devices]]
name = "d"
plugin = "hdd"
count = 9
[defaults.devices.params]
size = "1G"
[nodes]
count = 1
""")
    root = ET.fromstring(render.domain_xml(topo, topo.nodes[0], APPLIANCE, RUN_DIR, "tcg"))
    units = [(d.findtext("serial"), d.find("address").get("controller"),
              d.find("address").get("unit"))
             for d in root.iterfind("devices/disk") if d.find("target").get("bus") == "scsi"]
    assert units == [(f"d{k}", "0", str(k)) for k in range(9)]
    assert [c.get("model") for c in root.iterfind("devices/controller")
            if c.get("type") == "scsi"] == ["virtio-scsi"]


@pytest.mark.parametrize("index, letters", [(0, "a"), (1, "b"), (25, "z"), (26, "aa"),
                                            (27, "ab"), (701, "zz"), (702, "aaa")])
def test_drive_letters(index, letters):
    assert render.drive_letters(index) == letters


def test_autoescape_is_on_and_text_cannot_break_the_xml(tmp_path):
    assert render.environment().autoescape is True
    topo = load_text(tmp_path, 'name = "esc"\ndescription = "a < b & \'c\' \\"d\\" ]]> -->"\n'
                     '[nodes]\ncount = 2\n')
    appliance = FakeAppliance(kernel_path="/cache/a&b/vmlinux",
                              cmdline="console=ttyS0 x='<&>' y=\"</cmdline>\"")
    xml = render.domain_xml(topo, topo.nodes[0], appliance, "/run/storlab/a&'b", "tcg")
    root = ET.fromstring(xml)
    assert root.findtext("description").endswith(": a < b & 'c' \"d\" ]]> -->")
    assert root.findtext("os/kernel") == "/cache/a&b/vmlinux"
    assert root.findtext("os/cmdline").startswith("console=ttyS0 x='<&>' y=\"</cmdline>\" ")
    assert root.find("devices/serial/log").get("file") == "/run/storlab/a&'b/node1.console.log"


def test_accel_must_be_resolved(tmp_path):
    topo = load_text(tmp_path, MINIMAL)
    with pytest.raises(ValueError, match="accel"):
        render.domain_xml(topo, topo.nodes[0], APPLIANCE, RUN_DIR, "auto")


def have_validator():
    return shutil.which("virt-xml-validate") and shutil.which("xmllint")


@pytest.mark.skipif(not have_validator(), reason="virt-xml-validate/xmllint not installed")
def test_libvirt_schema_accepts_every_rendered_domain(tmp_path):
    renders = list(render_all())
    mixed = load_text(tmp_path, device_text('name = "s"\nplugin = "hdd"\nbus = "sata"',
                                            'size = "1G"'))
    renders.append((mixed, mixed.nodes[0], "tcg"))
    for i, (topo, node, accel) in enumerate(renders):
        path = tmp_path / f"{i}.xml"
        path.write_text(render.domain_xml(topo, node, APPLIANCE, RUN_DIR, accel))
        result = subprocess.run(["virt-xml-validate", str(path), "domain"],
                                capture_output=True, text=True)
        assert result.returncode == 0, (topo.name, node.name, accel, result.stderr)


def test_libvirt_parser_keeps_what_we_asked_for():
    libvirt = pytest.importorskip("libvirt")
    conn = libvirt.open("test:///default")  # in-process test driver: no daemon, no VM
    try:
        topo = shipped("hybrid-4node")
        xml = render.domain_xml(topo, topo.nodes[0], APPLIANCE, RUN_DIR, "tcg")
        domain = conn.defineXML(xml)
        root = ET.fromstring(domain.XMLDesc())
        rates = [t.get("rotation_rate") for t in root.iterfind("devices/disk/target")]
        assert rates == [None, "10000", "10000", "10000", "10000"]
        assert len(root.findall("devices/interface[@type='udp']")) == 3
    finally:
        conn.close()


# ---- hosts: [[hosts]] and node placement --------------------------------------------

TWO_HOSTS = MINIMAL + '''
[[hosts]]
name = "here"
uri = "qemu:///system"
address = "192.0.2.1"
[[hosts]]
name = "far"
uri = "qemu+ssh://root@192.0.2.2:2222/system?keyfile=/k/id&no_verify=1"
address = "192.0.2.2"
'''


def test_one_local_host_by_default(tmp_path):
    topo = load_text(tmp_path, MINIMAL)
    assert [(h.name, h.uri, h.local) for h in topo.hosts] == [("local", "qemu:///system", True)]
    assert {n.host.name for n in topo.nodes} == {"local"}
    # links within one host stay on loopback
    ends = topology.link_ends(topo, "node1")
    assert {(e.local_address, e.peer_address) for e in ends} == {("127.0.0.1", "127.0.0.1")}


def test_nodes_spread_and_placed_by_hand(tmp_path):
    topo = load_text(tmp_path, TWO_HOSTS)
    assert [n.host.name for n in topo.nodes] == ["here", "far", "here"]
    topo = load_text(tmp_path, TWO_HOSTS + '[node.node1]\nhost = "far"\n')
    assert [n.host.name for n in topo.nodes] == ["far", "here", "here"]
    # capacity weighs the spread and bounds it
    weighted = TWO_HOSTS.replace('address = "192.0.2.2"', 'address = "192.0.2.2"\ncapacity = 1')
    topo = load_text(tmp_path, weighted.replace("count = 3", "count = 4"))
    assert [n.host.name for n in topo.nodes] == ["here", "far", "here", "here"]


def test_links_between_hosts_use_the_hosts_addresses(tmp_path):
    topo = load_text(tmp_path, TWO_HOSTS)
    ends = {e.peer: e for e in topology.link_ends(topo, "node1")}
    assert (ends["node2"].local_address, ends["node2"].peer_address) == ("192.0.2.1", "192.0.2.2")
    assert (ends["node3"].local_address, ends["node3"].peer_address) == ("127.0.0.1", "127.0.0.1")
    far = {e.peer: e for e in topology.link_ends(topo, "node2")}
    assert (far["node1"].local_address, far["node1"].peer_address) == ("192.0.2.2", "192.0.2.1")


def test_a_remote_hosts_cache_dir(tmp_path):
    topo = load_text(tmp_path, TWO_HOSTS)
    assert [h.cache_dir for h in topo.hosts] == [None, "/var/cache/storlab"]
    topo = load_text(tmp_path, TWO_HOSTS + 'cache_dir = "/srv/storlab cache"\n')
    assert topo.hosts[1].cache_dir == "/srv/storlab cache"


def test_ssh_target_comes_from_the_uri_alone():
    from storlab_cli.schema import hosts
    target = hosts.parse_ssh_uri("qemu+ssh://root@192.0.2.2:2222/system?keyfile=/k/id"
                                 "&no_verify=1&command=/opt/ssh")
    assert target.argv("-T") == ["/opt/ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
                                 "-p", "2222", "-i", "/k/id", "-o", "StrictHostKeyChecking=no",
                                 "-l", "root", "-T", "192.0.2.2"]


HOST_ERRORS = [
    (MINIMAL + '[[hosts]]\nname = "a"\nuri = "qemu+tcp://h/system"\n',
     "hosts[0].uri = 'qemu+tcp://h/system': not a qemu+ssh:// URI"),
    (MINIMAL + '[[hosts]]\nname = "a"\nuri = "qemu+ssh://h/session"\n',
     "hosts[0].uri = 'qemu+ssh://h/session': the path must be /system"),
    (MINIMAL + '[[hosts]]\nname = "a"\nuri = "qemu+ssh://h/system?pkipath=/x"\n',
     "hosts[0].uri = 'qemu+ssh://h/system?pkipath=/x': query parameter 'pkipath'"),
    (TWO_HOSTS.replace('address = "192.0.2.2"', 'address = "far.example"'),
     "hosts[1].address = 'far.example': not an IPv4 or IPv6 address"),
    (TWO_HOSTS.replace('address = "192.0.2.2"\n', ''),
     "hosts[1].address: missing: with several hosts each names the address"),
    (TWO_HOSTS.replace('name = "far"', 'name = "here"'),
     "hosts[1].name = 'here': the same as hosts[0]"),
    (TWO_HOSTS + '[node.node2]\nhost = "moon"\n',
     "node.node2.host = 'moon': unknown host (hosts) (known: here, far)"),
    (TWO_HOSTS.replace('address = "192.0.2.2"', 'address = "192.0.2.2"\ncapacity = 1')
     + '[node.node1]\nhost = "far"\n[node.node2]\nhost = "far"\n',
     "hosts: host 'far' has capacity 1 and 2 nodes placed on it"),
    (TWO_HOSTS.replace('address = "192.0.2.1"', 'address = "192.0.2.1"\ncapacity = 1')
     .replace('address = "192.0.2.2"', 'address = "192.0.2.2"\ncapacity = 1'),
     "hosts: 3 nodes do not fit: the hosts' capacity is 2"),
    (MINIMAL + '[[hosts]]\nname = "a"\nuri = "qemu:///system"\nport = 1\n',
     "hosts[0]: unknown key 'port' (known: name, uri, address, capacity, cache_dir)"),
    (TWO_HOSTS + 'cache_dir = "cache"\n',
     "hosts[1].cache_dir = 'cache': host 'far': must be an absolute path"),
    (TWO_HOSTS + 'cache_dir = "/srv/../cache"\n',
     "hosts[1].cache_dir = '/srv/../cache': host 'far': must be an absolute path without '.'"),
    (TWO_HOSTS + 'cache_dir = "/srv/cache/"\n',
     "hosts[1].cache_dir = '/srv/cache/': host 'far': must be an absolute path"),
    (TWO_HOSTS + 'cache_dir = 3\n', "hosts[1].cache_dir = 3: must be a string"),
    (TWO_HOSTS + 'cache_dir = "/srv/a\\tb"\n',
     "hosts[1].cache_dir = '/srv/a\\tb': host 'far': contains a control character"),
    (TWO_HOSTS.replace('address = "192.0.2.1"', 'address = "192.0.2.1"\ncache_dir = "/srv/c"'),
     "hosts[0].cache_dir = '/srv/c': host 'here' is this machine (qemu:///system), whose cache "
     "is STORLAB_CACHE_DIR's (default /var/cache/storlab): cache_dir is for a remote host"),
]


@pytest.mark.parametrize("text, expected", HOST_ERRORS, ids=[e for _, e in HOST_ERRORS])
def test_host_errors(tmp_path, text, expected):
    message = load_error(tmp_path, text)
    assert message.startswith(expected), message


# ---- labs larger than one host: 16 nodes a host, 64 in all ---------------------------

def hosts_text(count, address=None, capacity=None):
    """count [[hosts]]: the first this machine, the others over ssh; each its
    own address, or all the given one (one machine)."""
    text = ""
    for i in range(count):
        uri = "qemu:///system" if i == 0 else f"qemu+ssh://root@192.0.2.{i + 1}/system"
        text += (f'[[hosts]]\nname = "h{i}"\nuri = "{uri}"\n'
                 f'address = "{address or f"192.0.2.{i + 1}"}"\n')
        if capacity:
            text += f"capacity = {capacity}\n"
    return text


def pairs_text(pairs):
    return ('[links]\nmode = "pairs"\npairs = ['
            + ", ".join(f'["{a}", "{b}"]' for a, b in pairs) + "]\n")


def circulant(n, offsets):
    """node i linked to node i + o (mod n) for each offset, each pair once."""
    pairs, seen = [], set()
    for i in range(n):
        for o in offsets:
            pair = (f"node{i + 1}", f"node{(i + o) % n + 1}")
            if frozenset(pair) not in seen:
                seen.add(frozenset(pair))
                pairs.append(pair)
    return pairs


def fifteen_each(n):
    """n (even) nodes of 15 links each: the most a node may have."""
    return circulant(n, list(range(1, 8)) + [n // 2])


def slot_name(slot, prefix="lab"):
    return next(f"{prefix}{i}" for i in range(100000)
                if zlib.crc32(f"{prefix}{i}".encode()) % 396 == slot)


def check_big_lab(topo):
    """Every link end's udp port unique on the machine it binds on (its
    host's address) and inside the lab's 240 ports; MACs, guest addresses
    and prefixes unique; each end's peer port the peer's own."""
    crc = zlib.crc32(topo.name.encode())
    base = 40000 + (crc % 396) * 64
    bound, macs, addrs, networks = set(), set(), set(), set()
    for node in topo.nodes:
        ends = topology.link_ends(topo, node)
        assert len(ends) <= 15
        for end in ends:
            key = (node.host.address, end.port)
            assert key not in bound, key
            bound.add(key)
            assert base <= end.port < base + 240 and end.port <= 65535
            peer_end = next(e for e in topology.link_ends(topo, end.peer) if e.link == end.link)
            assert end.peer_port == peer_end.port
            assert end.peer_address == (topo.node(end.peer).host.address
                                        if end.local_address != "127.0.0.1" else "127.0.0.1")
        # the guest's kernel command line stays far below x86's 2048 bytes
        assert len(render.kernel_cmdline(topo, node, APPLIANCE)) < 1024
    for i, link in enumerate(topo.links):
        assert link.index == i
        assert (link.mac_a, link.mac_b) == (
            "52:54:00:%02x:%02x:%02x" % (crc & 0xFF, i & 0xFF, 2 * (i >> 8)),
            "52:54:00:%02x:%02x:%02x" % (crc & 0xFF, i & 0xFF, 2 * (i >> 8) + 1))
        net = ipaddress.IPv6Network("fd5c:%x:%x::/64" % (crc & 0xFFFF, i))
        assert (ipaddress.IPv6Interface(link.addr_a).ip, ipaddress.IPv6Interface(link.addr_b).ip) \
            == (net[1], net[2])
        macs |= {link.mac_a, link.mac_b}
        addrs |= {link.addr_a, link.addr_b}
        networks.add(net)
    assert len(bound) == 2 * len(topo.links)
    assert (len(macs), len(addrs), len(networks)) == (2 * len(topo.links),) * 2 + (len(topo.links),)


def test_a_48_node_lab_on_three_hosts(tmp_path):
    topo = load_text(tmp_path, mesh(48) + pairs_text(fifteen_each(48)) + hosts_text(3))
    assert len(topo.nodes) == 48 and len(topo.links) == 360
    assert collections.Counter(n.host.name for n in topo.nodes) == {"h0": 16, "h1": 16, "h2": 16}
    check_big_lab(topo)
    assert topo.lab_refusal() is None
    # what libvirt is told: each interface's own port, and its peer's
    node = topo.node("node17")
    root = ET.fromstring(render.domain_xml(topo, node, APPLIANCE, RUN_DIR, "tcg"))
    ends = topology.link_ends(topo, node)
    interfaces = root.findall("devices/interface[@type='udp']")
    assert len(interfaces) == len(ends) == 15
    for interface, end in zip(interfaces, ends):
        local = interface.find("source/local")
        assert (local.get("address"), local.get("port")) == (end.local_address, str(end.port))
        assert interface.find("source").get("port") == str(end.peer_port)


def test_the_biggest_lab_in_the_highest_port_slot_stays_below_65536(tmp_path):
    """64 nodes on 4 hosts, 15 links each: 480 links, link indexes past
    255 (MACs widened there only), every port within 65519."""
    name = slot_name(395)
    topo = load_text(tmp_path, mesh(64, name) + pairs_text(fifteen_each(64)) + hosts_text(4))
    assert len(topo.links) == 480
    check_big_lab(topo)
    assert max(max(l.port_a, l.port_b) for l in topo.links) <= 40000 + 395 * 64 + 239
    lab_byte = zlib.crc32(name.encode()) & 0xFF
    assert topo.links[255].mac_b == f"52:54:00:{lab_byte:02x}:ff:01"
    assert topo.links[256].mac_a == f"52:54:00:{lab_byte:02x}:00:02"


def test_up_to_120_links_ports_stay_by_link_index_on_any_hosts(tmp_path):
    """Every lab of up to 16 nodes, on one host or several (two hosts at one
    address: one machine, as tests/test_lab_multihost.py runs them), keeps
    P = base + 2 I: what a running lab was built with."""
    for text in (mesh(16) + hosts_text(2), mesh(16) + hosts_text(2, "127.0.0.1"),
                 mesh(40) + pairs_text(circulant(40, [1, 2, 3])) + hosts_text(3)):
        topo = load_text(tmp_path, text)
        assert len(topo.links) <= 120
        check_links(topo)


def test_shipped_labs_keep_their_ports_macs_and_addresses():
    """Known values of shipped labs, as running labs have them."""
    link = topology.load(os.path.join(SOURCE, "topologies", "default.toml")).links[2]
    assert (link.a, link.b, link.port_a, link.port_b, link.mac_a, link.mac_b, link.addr_a) == (
        "node2", "node3", 55044, 55045, "52:54:00:df:02:00", "52:54:00:df:02:01",
        "fd5c:df:2::1/64")
    link = topology.load(os.path.join(SOURCE, "topologies", "hybrid-4node.toml")).links[3]
    assert (link.port_a, link.port_b, link.mac_b, link.addr_b) == (
        51014, 51015, "52:54:00:60:03:01", "fd5c:6360:3::2/64")


def test_a_lab_past_one_host_takes_16_a_host(tmp_path):
    # hosts without capacity take 16 each; beyond every host's room, refused
    assert load_error(tmp_path, mesh(40) + '[links]\nmode = "none"\n' + hosts_text(2)) == (
        "hosts: 40 nodes do not fit: the hosts' capacity is 32 (a host without capacity "
        "holds 16)")
    topo = load_text(tmp_path, mesh(40) + '[links]\nmode = "none"\n' + hosts_text(3))
    assert collections.Counter(n.host.name for n in topo.nodes) == {"h0": 14, "h1": 13, "h2": 13}
    # placed by hand: a host past 16, one line naming it
    by_hand = "".join(f'[node.node{i}]\nhost = "h1"\n' for i in range(1, 18))
    assert load_error(tmp_path, mesh(20) + '[links]\nmode = "none"\n' + hosts_text(2)
                      + by_hand) == (
        "hosts: host 'h1' has 17 nodes placed on it with host =: a host holds at most 16")
    assert load_error(tmp_path, mesh(17) + '[links]\nmode = "none"\n' + hosts_text(1)) \
        .startswith("hosts: 17 nodes do not fit: the hosts' capacity is 16")


def test_more_than_16_nodes_on_one_host_or_64_in_all_refused(tmp_path):
    assert load_error(tmp_path, mesh(17)) == "nodes.count = 17: must be 1..16"
    assert load_error(tmp_path, mesh(65) + hosts_text(5)) == (
        "nodes.count = 65: must be 1..64: a lab on several hosts holds at most 64 nodes, "
        "16 a host")
    names = ", ".join(f'"n{i}"' for i in range(65))
    assert load_error(tmp_path, f'name = "x"\n[nodes]\nnames = [{names}]\n' + hosts_text(5)) \
        .endswith(": must be a list of 1..64 node names: a lab on several hosts holds at "
                  "most 64 nodes, 16 a host")


def test_a_full_mesh_past_16_nodes_and_a_node_past_15_links_refused(tmp_path):
    expected = ("links.mode: full-mesh of 40 nodes needs 780 links, 39 a node; a node has at "
                "most 15 (a full mesh at most 16 nodes, 120 links): give the links with "
                "mode = 'pairs'")
    assert load_error(tmp_path, mesh(40) + hosts_text(3)) == expected
    assert load_error(tmp_path, mesh(40) + '[links]\nmode = "full-mesh"\n' + hosts_text(3)) \
        == expected
    star = [("node1", f"node{i}") for i in range(2, 19)]            # node1: 17 links
    assert load_error(tmp_path, mesh(18) + pairs_text(star) + hosts_text(2)) == (
        "links.pairs[15] = ['node1', 'node17']: node 'node1' has 17 links; a node has at "
        "most 15")


def test_hosts_at_one_address_share_one_machines_ports(tmp_path):
    """Hosts that give one address are one machine: a lab past 120 links
    counts their ends together, and refuses more than its 240 ports there."""
    shared = hosts_text(3).replace('address = "192.0.2.2"', 'address = "192.0.2.1"')
    topo = load_text(tmp_path, mesh(48) + pairs_text(circulant(48, [1, 2, 3])) + shared)
    assert len(topo.links) == 144
    check_big_lab(topo)         # h0's and h1's 32 nodes: 192 ends, 192 ports of 192.0.2.1
    assert len({e.port for n in topo.nodes if n.host.address == "192.0.2.1"
                for e in topology.link_ends(topo, n)}) == 192
    assert load_error(tmp_path, mesh(48) + pairs_text(fifteen_each(48))
                      + hosts_text(3, "127.0.0.1")) == (
        "hosts: hosts h0, h1, h2 share address 127.0.0.1 (one machine): their nodes' 720 "
        "link ends need a udp port each there; a lab has 240 on one machine (16 nodes of 15 "
        "links)")


def test_a_sim_cluster_past_a_labs_size_is_refused_as_a_lab(tmp_path):
    """A [sim] topology may be larger than a lab on any hosts; `up` (lab_refusal)
    says what a lab cannot hold, in one line."""
    sim = '[sim]\nhost = "bare-metal"\n'
    topo = load_text(tmp_path, mesh(64) + hosts_text(4) + sim)
    assert topo.lab_refusal() == (
        f"{topo.path}: links.mode: full-mesh of 64 nodes needs 2016 links, 63 a node; a node "
        "has at most 15 (a full mesh at most 16 nodes, 120 links): give the links with "
        "mode = 'pairs' (a topology this large is for the simulator: storlab sweep "
        "--backend sim)")
    topo = load_text(tmp_path, mesh(64) + pairs_text(fifteen_each(64)) + hosts_text(4) + sim)
    assert topo.lab_refusal() is None
    topo = load_text(tmp_path, mesh(64) + '[links]\nmode = "none"\n' + hosts_text(2) + sim)
    assert topo.lab_refusal().endswith(": host 'h0' has 32 nodes: a host holds at most 16 (a "
                                       "topology this large is for the simulator: storlab "
                                       "sweep --backend sim)")
    topo = load_text(tmp_path, mesh(65) + '[links]\nmode = "none"\n' + hosts_text(5) + sim)
    assert topo.lab_refusal().endswith(": 65 nodes: a lab holds at most 64, 16 a host (a "
                                       "topology this large is for the simulator: storlab "
                                       "sweep --backend sim)")


def test_a_guest_too_small_for_its_checksummed_components_is_refused_as_a_lab(tmp_path):
    """Each checksummed component is a dm-integrity device, about 20 MiB of
    its guest's memory with its export and md member: a lab whose node would run out building them is refused
    before anything starts, naming the node, memory_mib and what it needs."""
    with open(os.path.join(SOURCE, "topologies", "profile-policy.toml"), encoding="utf-8") as f:
        text = f.read()
    assert text.count("memory_mib = 512") == 1
    topo = load_text(tmp_path, text)
    # a piece of node1's and of node2's RAID-5 volume on every node, and a
    # copy of node3's checksummed mirror on node3 and node4
    assert [topo.profile.checksummed_components(f"node{n}") for n in range(1, 5)] == [2, 2, 3, 3]
    assert topo.lab_refusal() is None
    topo = load_text(tmp_path, text.replace("memory_mib = 512", "memory_mib = 400"))
    assert topo.lab_refusal() == (
        f"{topo.path}: node node1: memory_mib = 400 is too little for its 2 checksummed "
        "components (20 MiB of the guest's memory each, most of it dm-integrity's): give "
        "it at least 424 ([defaults] memory_mib)")
    # enough for node1's two is too little for node3's three
    topo = load_text(tmp_path, text.replace("memory_mib = 512", "memory_mib = 424"))
    assert topo.lab_refusal() == (
        f"{topo.path}: node node3: memory_mib = 424 is too little for its 3 checksummed "
        "components (20 MiB of the guest's memory each, most of it dm-integrity's): give "
        "it at least 444 ([defaults] memory_mib)")
    assert load_text(tmp_path, text.replace("memory_mib = 512", "memory_mib = 444")
                     ).lab_refusal() is None
