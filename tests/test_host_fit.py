"""lab/host_fit.py: whether a lab fits in its hosts' memory (and, with
device_data = "disk", their disks), asked by `up` before a guest starts
and by a lab sweep before its first lab. An emulated device keeps its data
in memory unless told otherwise: a lab that outgrows its host is killed a
guest at a time by the host's OOM killer. No VMs here: a host's
/proc/meminfo and free space are given."""
import os

import pytest

from storlab_cli.errors import UserError
from storlab_cli.lab import host_fit
from storlab_cli.schema import sweep as sweep_schema, topology
from storlab_cli.sweep import parts as sweep_parts

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STUDIES = os.path.join(SOURCE, "topologies", "studies")

# 4 nodes, full mesh; each a 256 MiB write buffer in front of two 1 GiB disks
LAB = '''
name = "fit"{device_data}
[defaults]
memory_mib = 512
[[defaults.devices]]
name = "cache"
plugin = "hdd"
[defaults.devices.params]
preset = "sas10k-300g"
size = "256M"{cache_file}
[[defaults.devices]]
name = "disk"
plugin = "hdd"
count = 2
[defaults.devices.params]
preset = "sas10k-300g"
size = "1G"{disk_file}
[nodes]
count = 4
[links]
mode = "full-mesh"
[profile.disk_group]
mode = "all-flash"
cache = "cache0"
[profile.volumes]
units = 2
per_unit = 4
size = "40M"
ftt = 1
'''


class Host:
    """A LabHost as host_fit uses it: its /proc/meminfo."""
    def __init__(self, available_mib, local=True):
        self.local, self.available_mib = local, available_mib

    def read_text(self, path, max_bytes):
        assert path == "/proc/meminfo"
        return (f"MemTotal:       99999999 kB\nMemFree:          1000 kB\n"
                f"MemAvailable:   {self.available_mib * 1024} kB\n")


def load(tmp_path, cache_file="", disk_file="", device_data=None):
    path = tmp_path / "fit.toml"
    path.write_text(LAB.format(cache_file=cache_file, disk_file=disk_file,
                               device_data=f'\ndevice_data = "{device_data}"' if device_data
                               else ""))
    return topology.load(str(path))


def test_what_a_lab_needs(tmp_path):
    """Guests: memory_mib, QEMU's own and under TCG its code cache; devices:
    every LV the profile makes (8 volumes a node, each copy on two nodes:
    16 components a node) and the node's write buffer."""
    topo = load(tmp_path)
    component_mib = topo.profile.volumes.component_lv_mib()
    total, guests, device_mib, data = host_fit.need_mib(topo, ["node1"], "tcg")
    assert guests == 512 + host_fit.QEMU_OWN_MIB + host_fit.TCG_CODE_CACHE_MIB
    cache_mib = topo.profile.disk_group.cache_mib["node1"]
    assert device_mib == 16 * component_mib + cache_mib and total == guests + device_mib
    assert data == [("node1", device_mib, f"16 volumes and components {16 * component_mib} "
                                          f"MiB, cache tier {cache_mib} MiB")]
    kvm_total, kvm_guests, _, _ = host_fit.need_mib(topo, ["node1"], "kvm")
    assert kvm_guests == guests - host_fit.TCG_CODE_CACHE_MIB
    assert kvm_total == total - host_fit.TCG_CODE_CACHE_MIB


def test_file_backed_devices_keep_their_data_on_disk(tmp_path):
    topo = load(tmp_path, cache_file=f'\nfile = "{tmp_path}/cache.img"')
    _, _, device_mib, _ = host_fit.need_mib(topo, ["node1"], "kvm")
    assert device_mib == 16 * topo.profile.volumes.component_lv_mib()   # the LVs still count
    topo = load(tmp_path, cache_file=f'\nfile = "{tmp_path}/cache.img"',
                disk_file=f'\nfile = "{tmp_path}/disk.img"')
    assert host_fit.need_mib(topo, ["node1"], "kvm")[2] == 0


def test_device_data_on_disk_moves_the_devices_share_to_the_disk(tmp_path):
    """device_data = "disk": storlab's devices keep their data in files, so
    the host's memory holds the guests only and its disk the data."""
    in_memory = load(tmp_path)
    on_disk = load(tmp_path, device_data="disk")
    assert on_disk.device_data == "disk" and in_memory.device_data == "memory"
    nodes = [n.name for n in on_disk.nodes]
    total, guests, device_mib, _ = host_fit.need_mib(on_disk, nodes, "tcg")
    assert device_mib == 0 and total == guests
    memory_data = host_fit.need_mib(in_memory, nodes, "tcg")[2]
    disk_mib, data = host_fit.disk_need_mib(on_disk, nodes)
    assert disk_mib == memory_data > 0
    assert host_fit.disk_need_mib(in_memory, nodes)[0] == 0
    assert data[0][2].startswith("16 volumes and components")


class DataHost(Host):
    """A LabHost as check_disk uses it (and check, with 16 GiB available)."""
    name, data_dir = "local", "/var/lib/storlab/labs/fit"

    def __init__(self):
        super().__init__(16 * 1024)


def test_up_refuses_device_data_its_disk_cannot_hold(tmp_path):
    topo = load(tmp_path, device_data="disk")
    need = host_fit.disk_need_mib(topo, [n.name for n in topo.nodes])[0]
    hosts = {"local": DataHost()}
    host_fit.check_disk(topo, hosts, DataHost(), need + host_fit.DISK_RESERVE_MIB)
    with pytest.raises(UserError) as info:
        host_fit.check_disk(topo, hosts, DataHost(), need + host_fit.DISK_RESERVE_MIB - 1)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"lab 'fit' keeps about {need / 1024:.1f} GiB of device data in "
                              'files (device_data = "disk"; node1: 16 volumes')
    assert "free in /var/lib/storlab/labs/fit" in message


def test_device_data_takes_memory_or_disk(tmp_path):
    with pytest.raises(UserError) as info:
        load(tmp_path, device_data="tape")
    assert "device_data" in str(info.value) and "memory, disk" in str(info.value)


def test_up_refuses_a_lab_its_host_cannot_hold(tmp_path):
    topo = load(tmp_path)
    total = host_fit.need_mib(topo, [n.name for n in topo.nodes], "tcg")[0]
    fits = total + host_fit.HOST_RESERVE_MIB
    host_fit.check(topo, {"local": Host(fits)}, {"local": "tcg"})
    with pytest.raises(UserError) as info:
        host_fit.check(topo, {"local": Host(fits - 1)}, {"local": "tcg"})
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"lab 'fit' needs about {total / 1024:.1f} GiB of memory; this "
                              f"host has {(fits - 1) / 1024:.1f} GiB available")
    assert "4 guests" in message and "TCG code cache" in message
    assert "(node1: 16 volumes and components" in message and "--scale" in message
    assert 'device_data = "disk"' in message
    # under KVM the same host holds it
    host_fit.check(topo, {"local": Host(fits - 1)}, {"local": "kvm"})


def test_each_host_holds_its_own_nodes(tmp_path):
    """Nodes on another host count against that host only; the message names it."""
    topo = load(tmp_path)
    for node in topo.nodes[2:]:
        node.host = type(node.host)(name="far", uri="qemu+ssh://root@127.0.0.1/system",
                                    address="127.0.0.1", capacity=1)
    half = host_fit.need_mib(topo, ["node1", "node2"], "tcg")[0] + host_fit.HOST_RESERVE_MIB
    host_fit.check(topo, {"local": Host(half), "far": Host(half, local=False)},
                     {"local": "tcg", "far": "tcg"})
    with pytest.raises(UserError, match="host 'far' has"):
        host_fit.check(topo, {"local": Host(half), "far": Host(half - 1, local=False)},
                         {"local": "tcg", "far": "tcg"})


def test_a_lab_sweep_is_refused_before_any_lab_comes_up(tmp_path, monkeypatch):
    """A hybrid study at scale 500 (7 nodes at ftt 3, its devices' data in
    memory, as hybrid-ftt without its device_data axis) on a host with
    16 GiB, and an all-flash one (data on disk) on a
    host with 8 GiB of free disk: refused while the sweep is split into
    parts, naming the scale, before a results directory or a lab exists."""
    monkeypatch.setattr(host_fit.lab_hosts, "from_topology",
                        lambda topo: {"local": Host(16 * 1024)})
    study = open(os.path.join(STUDIES, "hybrid-ftt.toml"), encoding="utf-8").read()
    in_memory = tmp_path / "hybrid-ftt.toml"
    in_memory.write_text(study.replace('"topology.device_data" = ["disk"]\n', "").replace(
        'topology = "../', f'topology = "{os.path.dirname(STUDIES)}/'))
    assert '"topology.device_data"' not in in_memory.read_text()
    sweep = sweep_schema.load(in_memory, backend="lab", scale_override=500)
    with pytest.raises(UserError) as info:
        sweep_parts.split(sweep, "lab")
    message = str(info.value)
    assert message.startswith("lab 'hybrid-4node-full' needs at least ")
    assert "TCG" not in message and message.endswith(", scale 500)")

    monkeypatch.setattr(host_fit.lab_hosts, "from_topology",
                        lambda topo: {"local": DataHost()})
    monkeypatch.setattr(host_fit, "local_free_disk_mib", lambda: 8 * 1024)
    sweep = sweep_schema.load(os.path.join(STUDIES, "allflash-write-buffer.toml"),
                              backend="lab", scale_override=500)
    with pytest.raises(UserError) as info:
        sweep_parts.split(sweep, "lab")
    message = str(info.value)
    assert message.startswith("lab 'allflash-4node-full' keeps about ")
    assert 'in files (device_data = "disk"' in message and message.endswith("(scale 500)")
    # the simulator needs no lab
    sweep_parts.split(sweep_schema.load(os.path.join(STUDIES, "allflash-write-buffer.toml"),
                                        backend="sim"), "sim")
