"""lab/memory_fit.py: whether a lab fits in its hosts' memory, asked by
`up` before a guest starts and by a lab sweep before its first lab. Every
emulated device keeps its data in memory: a lab that outgrows its host is
killed a guest at a time by the host's OOM killer. No VMs here: a host's
/proc/meminfo is given."""
import os

import pytest

from storlab_cli.errors import UserError
from storlab_cli.lab import memory_fit
from storlab_cli.schema import sweep as sweep_schema, topology
from storlab_cli.sweep import parts as sweep_parts

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STUDIES = os.path.join(SOURCE, "topologies", "studies")

# 4 nodes, full mesh; each a 256 MiB write buffer in front of two 1 GiB disks
LAB = '''
name = "fit"
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
    """A LabHost as memory_fit uses it: its /proc/meminfo."""
    def __init__(self, available_mib, local=True):
        self.local, self.available_mib = local, available_mib

    def read_text(self, path, max_bytes):
        assert path == "/proc/meminfo"
        return (f"MemTotal:       99999999 kB\nMemFree:          1000 kB\n"
                f"MemAvailable:   {self.available_mib * 1024} kB\n")


def load(tmp_path, cache_file="", disk_file=""):
    path = tmp_path / "fit.toml"
    path.write_text(LAB.format(cache_file=cache_file, disk_file=disk_file))
    return topology.load(str(path))


def test_what_a_lab_needs(tmp_path):
    """Guests: memory_mib, QEMU's own and under TCG its code cache; devices:
    every LV the profile makes (8 volumes a node, each copy on two nodes:
    16 components a node) and the node's write buffer."""
    topo = load(tmp_path)
    component_mib = topo.profile.volumes.component_lv_mib()
    total, guests, device_mib, data = memory_fit.need_mib(topo, ["node1"], "tcg")
    assert guests == 512 + memory_fit.QEMU_OWN_MIB + memory_fit.TCG_CODE_CACHE_MIB
    cache_mib = topo.profile.disk_group.cache_mib["node1"]
    assert device_mib == 16 * component_mib + cache_mib and total == guests + device_mib
    assert data == [("node1", device_mib, f"16 volumes and components {16 * component_mib} "
                                          f"MiB, cache tier {cache_mib} MiB")]
    kvm_total, kvm_guests, _, _ = memory_fit.need_mib(topo, ["node1"], "kvm")
    assert kvm_guests == guests - memory_fit.TCG_CODE_CACHE_MIB
    assert kvm_total == total - memory_fit.TCG_CODE_CACHE_MIB


def test_file_backed_devices_keep_their_data_on_disk(tmp_path):
    topo = load(tmp_path, cache_file=f'\nfile = "{tmp_path}/cache.img"')
    _, _, device_mib, _ = memory_fit.need_mib(topo, ["node1"], "kvm")
    assert device_mib == 16 * topo.profile.volumes.component_lv_mib()   # the LVs still count
    topo = load(tmp_path, cache_file=f'\nfile = "{tmp_path}/cache.img"',
                disk_file=f'\nfile = "{tmp_path}/disk.img"')
    assert memory_fit.need_mib(topo, ["node1"], "kvm")[2] == 0


def test_up_refuses_a_lab_its_host_cannot_hold(tmp_path):
    topo = load(tmp_path)
    total = memory_fit.need_mib(topo, [n.name for n in topo.nodes], "tcg")[0]
    fits = total + memory_fit.HOST_RESERVE_MIB
    memory_fit.check(topo, {"local": Host(fits)}, {"local": "tcg"})
    with pytest.raises(UserError) as info:
        memory_fit.check(topo, {"local": Host(fits - 1)}, {"local": "tcg"})
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"lab 'fit' needs about {total / 1024:.1f} GiB of memory; this "
                              f"host has {(fits - 1) / 1024:.1f} GiB available")
    assert "4 guests" in message and "TCG code cache" in message
    assert "(node1: 16 volumes and components" in message and "--scale" in message
    # under KVM the same host holds it
    memory_fit.check(topo, {"local": Host(fits - 1)}, {"local": "kvm"})


def test_each_host_holds_its_own_nodes(tmp_path):
    """Nodes on another host count against that host only; the message names it."""
    topo = load(tmp_path)
    for node in topo.nodes[2:]:
        node.host = type(node.host)(name="far", uri="qemu+ssh://root@127.0.0.1/system",
                                    address="127.0.0.1", capacity=1)
    half = memory_fit.need_mib(topo, ["node1", "node2"], "tcg")[0] + memory_fit.HOST_RESERVE_MIB
    memory_fit.check(topo, {"local": Host(half), "far": Host(half, local=False)},
                     {"local": "tcg", "far": "tcg"})
    with pytest.raises(UserError, match="host 'far' has"):
        memory_fit.check(topo, {"local": Host(half), "far": Host(half - 1, local=False)},
                         {"local": "tcg", "far": "tcg"})


def test_a_lab_sweep_is_refused_before_any_lab_comes_up(tmp_path, monkeypatch):
    """An all-flash study at scale 500 (64 mirrored volumes a node) on a host
    with 16 GiB: refused while the sweep is split into parts, naming the
    scale, before a results directory or a lab exists."""
    monkeypatch.setattr(memory_fit.lab_hosts, "from_topology",
                        lambda topo: {"local": Host(16 * 1024)})
    sweep = sweep_schema.load(os.path.join(STUDIES, "allflash-write-buffer.toml"),
                              backend="lab", scale_override=500)
    with pytest.raises(UserError) as info:
        sweep_parts.split(sweep, "lab")
    message = str(info.value)
    assert message.startswith("lab 'allflash-4node-full' needs at least ")
    assert "TCG" not in message and message.endswith("(scale 500)")
    # the simulator needs no lab
    sweep_parts.split(sweep_schema.load(os.path.join(STUDIES, "allflash-write-buffer.toml"),
                                        backend="sim"), "sim")
