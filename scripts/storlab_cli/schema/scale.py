"""A sweep's scale: one study file at full size in the simulator and at lab
size in a lab. Scale N divides by N every capacity and cache size of the
topology and every working set, and keeps everything that is timing or a
unit of a device's geometry or transfers:

  - devices (hdd, ssd, raid): each parameter the C library marks as a
    capacity (its catalog type capacity_bytes: a disk's size, an SSD's SLC
    cache, a RAID member's size and the controller's cache), as the device
    settles it (the preset's when the file leaves it out). A drive's DRAM
    buffer is a size of its transfers (the C library says why) and stays:
    at lab size a disk's buffer covers more of the disk;
  - the storage profile's sizes: workload volumes, replicated volumes, the
    disk group's cache;
  - the workload's size (each worker's working set): in the fio jobs; the
    points keep the study's values, so a lab's points and the simulator's
    line up on the same axis.

A value is rounded down to whole MiB (to 4 KiB below 1 MiB). An SSD smaller
than its preset keeps its NAND timings but fits fewer dies (the model's
note says which): its peak IOPS is a lab-size drive's."""
from storlab_cli import catalog
from storlab_cli.lab.nbdkit import STORLAB_PLUGINS
from storlab_cli.schema.sizes import parse_size_bytes

MIB = 1 << 20
KIB4 = 4096
CAPACITY_TYPE = "capacity_bytes"
# the profile's sizes (schema/profile.py, schema/volumes.py)
PROFILE_SIZES = (("volumes", "size"), ("replicas", "size"), ("disk_group", "cache_size"))


def divided(size_bytes, factor):
    """size_bytes / factor, rounded down to whole MiB (4 KiB below 1 MiB)."""
    value = int(size_bytes / factor)
    unit = MIB if value >= MIB else KIB4
    return value // unit * unit


def size_text(size_bytes):
    return f"{size_bytes // MIB}M" if size_bytes % MIB == 0 and size_bytes else str(size_bytes)


def workload_size(text, factor):
    """A working set (fio size) at scale: the study's value, divided."""
    if factor == 1:
        return text
    return size_text(max(divided(parse_size_bytes(text), factor), KIB4))


def _device(table, factor):
    plugin = table.get("plugin")
    params = table.get("params")
    if plugin not in STORLAB_PLUGINS or not isinstance(params, dict):
        return
    kind_params = catalog.load()["kinds"][plugin]["params"]
    text_params = {k: str(v) for k, v in params.items()}
    if "preset" in text_params and text_params["preset"] not in catalog.presets(plugin):
        return                            # the topology's own check names it
    effective = catalog.effective(plugin, text_params)
    for p in kind_params:
        if p["type"] != CAPACITY_TYPE:
            continue
        size_bytes = parse_size_bytes(str(effective.get(p["key"], "0")))
        if size_bytes:
            params[p["key"]] = size_text(divided(size_bytes, factor))


def _device_tables(data):
    yield from data.get("defaults", {}).get("devices", [])
    for node in data.get("node", {}).values():
        if isinstance(node, dict):
            yield from node.get("devices", [])


def _profile(profile, factor):
    tables = [(profile.get(t), key) for t, key in PROFILE_SIZES]
    tables += [(v, "size") for v in profile.get("volume_sets", {}).values()]
    for table, key in tables:
        if isinstance(table, dict) and isinstance(table.get(key), str):
            size_bytes = parse_size_bytes(table[key])
            if size_bytes:
                table[key] = size_text(divided(size_bytes, factor))


def topology_data(data, factor):
    """A topology file's tables at scale, in place (unknown shapes are left
    for the topology's own checks to name)."""
    if factor == 1:
        return
    for table in _device_tables(data):
        if isinstance(table, dict):
            _device(table, factor)
    if isinstance(data.get("profile"), dict):
        _profile(data["profile"], factor)
