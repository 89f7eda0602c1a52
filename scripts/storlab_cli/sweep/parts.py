"""A sweep in parts, one per topology it runs on: the sweep's own, or
each combination of a structural sweep's `topology.PATH` keys
(schema/topology_variants.py). `storlab sweep` runs them one after
another: on a lab, each part's lab comes up and goes down in turn."""
import dataclasses
import os

from storlab_cli.errors import UserError
from storlab_cli.results import directory as results
from storlab_cli.schema import topology_variants
from storlab_cli.sweep import plan as sweep_plan

STRUCTURES_DIR = "structures"      # a structural sweep's topology files, in its results


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
        if backend == "lab" and part.topo.lab_refusal():
            raise UserError(part.topo.lab_refusal() + (f" ({part.variant.describe()})"
                                                       if part.variant.needs_file else ""))
        part.plan = sweep_plan.make(part.sweep, part.topo, backend)
    return parts


def structures(parts):
    """The manifest's record of a structural sweep's topologies."""
    return [{"index": p.variant.index, "params": p.variant.structure, "topology": p.topo.path,
             "points": [q.index for q in p.points]} for p in parts if p.variant.needs_file]


def manifest(sweep, parts, backend, facts, done):
    """results.manifest, with its scale and a structural or scaled sweep's
    topologies."""
    doc = results.manifest(sweep, parts[0].topo, backend, facts, done)
    doc["scale"] = sweep.scale
    if any(p.variant.needs_file for p in parts):
        doc["structures"] = structures(parts)
    return doc
