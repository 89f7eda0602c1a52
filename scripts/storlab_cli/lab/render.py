"""Topology node -> libvirt domain XML, through topologies/templates/domain.xml.j2.

The decisions (device names, sockets, ports, the kernel command line) are made
here in Python; the template only lays them out. Autoescape is on, so text that
reaches the XML (descriptions, paths, the appliance command line) cannot break it.
"""
import os
from dataclasses import dataclass

import jinja2

from storlab_cli.lab import state
from storlab_cli.paths import SOURCE_DIR
from storlab_cli.schema import topology as topology_mod

TEMPLATE_DIR = os.path.join(SOURCE_DIR, "topologies", "templates")
DOMAIN_TEMPLATE = "domain.xml.j2"
DOMAIN_TYPES = {"kvm": "kvm", "tcg": "qemu"}
# QEMU's buffer of translated code under TCG, a guest (libvirt <tb-cache>).
# QEMU's default is 1 GiB, and a guest fills what it gets: ~290 MB at the
# policy lab's boot and provisioning, then about 0.4 MB/s of new code while
# new programs run (1.6 GiB resident seen for a 768 MiB guest after 30
# minutes). 256 MiB flushed once during boot, `up` took 74 s against 70 and
# a 60 s fio 101 IOPS against 95 (one run each, 2026-11-28): a flush and
# retranslation now and then, and 768 MiB of host memory a guest saved.
TCG_CODE_CACHE_MIB = 256
# libvirt: rotation_rate is a property of SCSI (scsi-hd) and SATA (ide-hd) disks.
ROTATION_RATE_BUSES = ("scsi", "sata")
# Every SCSI disk sits on the one virtio-scsi controller as its own LUN. Left
# to itself libvirt fills units 0-6 (7 is a parallel SCSI initiator's) and
# then adds a controller of its default model, lsilogic, which the appliance
# has no driver for: a node's 8th SCSI disk would not be there.


@dataclass(frozen=True)
class DiskView:
    target_dev: str      # "sda", "vdb": a hint; the guest names disks in its own order
    bus: str
    socket: str          # nbdkit's unix socket for this disk
    serial: str          # the device name: how the guest tells its disks apart
    rotation_rate: int | None
    scsi_unit: int | None  # its LUN on the virtio-scsi controller (SCSI disks only)


@dataclass(frozen=True)
class InterfaceView:
    mac: str
    port: int
    peer_port: int
    peer: str
    local_address: str   # this host's, or 127.0.0.1 when the peer runs on it too
    peer_address: str


def environment():
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE_DIR),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def drive_letters(index):
    """0 -> "a", 25 -> "z", 26 -> "aa", as Linux names sd/vd disks."""
    letters = ""
    index += 1
    while index > 0:
        index, rest = divmod(index - 1, 26)
        letters = chr(ord("a") + rest) + letters
    return letters


def socket_path(run_dir, node, device):
    return os.path.join(run_dir, f"{node.name}-{device.name}.sock")


def console_log_path(run_dir, node):
    return os.path.join(run_dir, f"{node.name}.console.log")


def kernel_cmdline(topology, node, appliance):
    parts = [appliance.cmdline.strip(), f"storlab.node={node.name}"]
    ends = topology_mod.link_ends(topology, node)
    if ends:
        parts.append("storlab.net=" + ",".join(f"{e.mac}@{e.addr}" for e in ends))
    return " ".join(p for p in parts if p)


def disk_views(node, run_dir):
    disks = []
    used = {"sd": 0, "vd": 0}
    scsi_units = 0
    for device in node.devices:
        prefix = "vd" if device.bus == "virtio" else "sd"
        rotation_rate = device.rotation_rpm if device.bus in ROTATION_RATE_BUSES else None
        disks.append(DiskView(target_dev=prefix + drive_letters(used[prefix]), bus=device.bus,
                              socket=socket_path(run_dir, node, device), serial=device.name,
                              rotation_rate=rotation_rate,
                              scsi_unit=scsi_units if device.bus == "scsi" else None))
        used[prefix] += 1
        scsi_units += device.bus == "scsi"
    return disks


def domain_xml(topology, node, appliance, run_dir, accel):
    if accel not in DOMAIN_TYPES:
        raise ValueError(f"accel must be one of {', '.join(DOMAIN_TYPES)}, not {accel!r}")
    disks = disk_views(node, run_dir)
    interfaces = [InterfaceView(mac=e.mac, port=e.port, peer_port=e.peer_port, peer=e.peer,
                                local_address=e.local_address, peer_address=e.peer_address)
                  for e in topology_mod.link_ends(topology, node)]
    return environment().get_template(DOMAIN_TEMPLATE).render(
        domain_type=DOMAIN_TYPES[accel],
        kvm=accel == "kvm",
        tcg_code_cache_mib=TCG_CODE_CACHE_MIB if accel == "tcg" else None,
        name=state.domain_name(topology.name, node.name),
        topology=topology,
        node=node,
        appliance=appliance,
        cmdline=kernel_cmdline(topology, node, appliance),
        disks=disks,
        any_scsi=any(d.bus == "scsi" for d in disks),
        any_sata=any(d.bus == "sata" for d in disks),
        interfaces=interfaces,
        console_log=console_log_path(run_dir, node),
    )
