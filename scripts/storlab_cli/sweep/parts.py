"""A sweep in parts, one per topology it runs on: the sweep's own, or
each combination of a structural sweep's `topology.PATH` keys
(schema/topology_variants.py). `storlab sweep` runs them one after
another: on a lab, each part's lab comes up and goes down in turn."""
import dataclasses
import os

from storlab_cli.errors import UserError
from storlab_cli.lab import host_fit
from storlab_cli.results import directory as results
from storlab_cli.schema import device_check, topology_variants
from storlab_cli.schema.sizes import binary_text
from storlab_cli.sweep import plan as sweep_plan

STRUCTURES_DIR = "structures"      # a structural sweep's topology files, in its results
# plot.mark -> which of profile.DiskGroup.cache_parts_bytes it marks
MARK_PARTS = {"read-cache": 0, "write-buffer": 1}


class Part:
    """The points of a sweep that run on one topology: the sweep's own, or
    one variant of a structural sweep (schema/topology_variants.py)."""

    def __init__(self, sweep, variant, points):
        self.sweep = dataclasses.replace(sweep, points=points)
        self.variant, self.points = variant, points
        self.topo = variant.topology

    def label(self, what, count):
        if count == 1:
            return what
        return f"{what} [{self.variant.index + 1}/{count}: {self.variant.describe()}]"

    def settle(self, out):
        """A variant's topology written where the sweep's results are: a lab
        is brought up from that file (schema/topology_variants.py)."""
        if self.variant.needs_file:
            self.topo = self.variant.write(os.path.join(out, STRUCTURES_DIR))


def split(sweep, backend):
    """The sweep's parts, each checked against its topology before anything
    runs."""
    parts = [Part(sweep, variant, points) for variant, points in topology_variants.variants(sweep)]
    for part in parts:
        if backend == "lab":
            which = f" ({part.variant.describe()})" if part.variant.needs_file else ""
            if part.topo.lab_refusal():
                raise UserError(part.topo.lab_refusal() + which)
            try:
                host_fit.check_before_sweep(part.topo)
            except UserError as e:
                raise UserError(f"{e}{which}") from None
        part.plan = sweep_plan.make(part.sweep, part.topo, backend)
    # every device of every part as the C library would build it, before any runs
    device_check.check([(p.topo, p.topo.path + (f" with {p.variant.describe()}"
                                                if p.variant.needs_file else ""))
                        for p in parts])
    plot_mark_bytes(sweep, parts)
    return parts


def plot_mark_bytes(sweep, parts):
    """The size plot.mark marks, per host, in the study's sizes (as the
    working sets on the axis): what the disk group of each part's topology
    (at the sweep's scale, as the run builds it) gives a node's read cache
    or write buffer, times the scale. None without plot.mark; refused when a
    topology has no such cache part, or two nodes or topologies differ."""
    if sweep.plot_mark is None:
        return None
    where = f"{sweep.path}: plot.mark = {sweep.plot_mark!r}"
    sizes = set()
    for part in parts:
        profile = part.topo.profile
        group = profile.disk_group if profile is not None else None
        if group is None:
            raise UserError(f"{where}: {part.topo.path} has no disk group "
                            "([profile.disk_group]) whose cache it would mark")
        if sweep.plot_mark == "read-cache" and group.mode != "hybrid":
            raise UserError(f"{where}: {part.topo.path}'s disk group is {group.mode}: it has "
                            "no read cache (\"write-buffer\" marks its write buffer)")
        # a node's: every one of its disk groups has its own
        sizes |= {group.cache_parts_bytes(node)[MARK_PARTS[sweep.plot_mark]] * group.groups
                  for node in group.cache_mib}
    if len(sizes) > 1:
        raise UserError(f"{where}: the nodes' {sweep.plot_mark.replace('-', ' ')}s differ "
                        f"({', '.join(binary_text(b) for b in sorted(sizes))}, between nodes "
                        "or the sweep's topologies): no one size per host to mark")
    return round(sizes.pop() * sweep.scale)


def structures(parts):
    """The manifest's record of a structural sweep's topologies."""
    return [{"index": p.variant.index, "params": p.variant.structure, "topology": p.topo.path,
             "points": [q.index for q in p.points]} for p in parts if p.variant.needs_file]


def manifest(sweep, parts, backend, facts, done):
    """results.manifest, with its scale and a structural or scaled sweep's
    topologies."""
    doc = results.manifest(sweep, parts[0].topo, backend, facts, done)
    doc["scale"] = sweep.scale
    doc["plot"]["mark_bytes"] = plot_mark_bytes(sweep, parts)
    if any(p.variant.needs_file for p in parts):
        doc["structures"] = structures(parts)
    return doc
