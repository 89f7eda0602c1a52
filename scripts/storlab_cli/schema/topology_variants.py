"""The topologies a structural sweep runs on: its base topology file with
the `topology.PATH` keys of a point set, one variant per combination.

A PATH walks the topology file's tables by key ("nodes.count",
"profile.volumes.ftt", "node.node2.memory_mib"); where it meets an array of
tables with names (devices), the next part is a name ("node.node2.devices.
disk.params.size"). "devices.NAME..." sets the key in every device table of
that name: the defaults' and each node's own. The last part may be a key the
file leaves out (its default until then); every table before it must exist.

A sweep's scale (schema/scale.py) applies to every variant, the base
topology's too. Each variant is validated as a topology file of its own
before anything starts, and written into the results directory (its own path: a lab is up
from exactly one file) when its points run."""
import copy
import json
import os

from storlab_cli.common import toml_file
from storlab_cli.errors import UserError
from storlab_cli.schema import scale, sim_host_file, topology

DEVICES_ALIAS = "devices"


class PathError(Exception):
    """Why a PATH cannot be set in a topology's data."""


def _named(items, name, where):
    """The table named name of an array of tables."""
    for item in items:
        if isinstance(item, dict) and item.get("name") == name:
            return item
    names = ", ".join(str(i.get("name")) for i in items if isinstance(i, dict))
    raise PathError(f"{where} has no table named '{name}' (names: {names or 'none'})")


def _set(container, parts, value, where):
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        here = f"{where}.{part}" if where else part
        if isinstance(container, list):
            container = _named(container, part, where)
            if last:
                raise PathError(f"{here} is a table: set one of its keys")
        elif isinstance(container, dict):
            if last:
                if isinstance(container.get(part), dict):
                    raise PathError(f"{here} is a table: set one of its keys")
                container[part] = copy.deepcopy(value)
                return
            if part not in container:
                raise PathError(f"the topology has no '{here}'")
            container = container[part]
        else:
            raise PathError(f"{where} is a value, not a table")
        where = here


def apply(data, path, value):
    """data (a topology file's tables) with PATH set to value, in place."""
    parts = path.split(".")
    if parts[0] != DEVICES_ALIAS:
        _set(data, parts, value, "")
        return
    if len(parts) < 3:
        raise PathError("devices.NAME.KEY: a device's name, then its key")
    tables = []
    defaults = data.get("defaults", {}).get("devices", [])
    tables += [("defaults.devices", defaults)]
    for node, table in sorted(data.get("node", {}).items()):
        if isinstance(table, dict) and "devices" in table:
            tables.append((f"node.{node}.devices", table["devices"]))
    hits = 0
    for where, devices in tables:
        if any(isinstance(d, dict) and d.get("name") == parts[1] for d in devices):
            _set(devices, parts[1:], value, where)
            hits += 1
    if hits == 0:
        raise PathError(f"no device table is named '{parts[1]}'")


def _toml_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)    # a TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}"
                               for k, v in value.items()) + "}"
    raise TypeError(f"no TOML for {type(value).__name__}")


def to_toml(data, comment):
    """A topology's data as a TOML file (each top-level key on a line of its
    own, tables inline); comment heads it."""
    lines = [f"# {line}" for line in comment.splitlines()]
    lines += [f"{json.dumps(k)} = {_toml_value(v)}" for k, v in data.items()]
    return "\n".join(lines) + "\n"


class Variant:
    """The base topology with one combination of a sweep's topology keys,
    at the sweep's scale."""

    def __init__(self, index, structure, factor, data, topo):
        self.index, self.structure, self.scale = index, structure, factor
        self.data, self.topology = data, topo

    @property
    def needs_file(self):
        """Whether it differs from the base topology's file."""
        return bool(self.structure) or self.scale != 1

    def describe(self):
        words = [f"{k} = {v!r}" for k, v in self.structure.items()]
        return ", ".join(words + ([f"scale {self.scale:g}"] if self.scale != 1 else []))

    def write(self, directory):
        """Writes the variant's file into directory; returns it loaded from there."""
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, f"topology-{self.index:02d}.toml")
        comment = (f"{os.path.basename(self.topology.path)} with {self.describe()}\n"
                   "(written by storlab sweep: a structural or scaled sweep's topology)")
        text = to_toml(self.data, comment)
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(path + ".tmp", path)
        return topology.load(path)


def variants(sweep):
    """Every structure of sweep's points, in the order points first reach
    it: [(Variant, [points])]. Each is validated as a topology here, so a
    combination that cannot be built is refused before anything runs."""
    base = toml_file.read(sweep.topology_path)
    groups = {}
    for point in sweep.points:
        structure = point.structure()
        key = json.dumps(structure, sort_keys=True)
        if key not in groups:
            groups[key] = (_variant(sweep, base, len(groups), structure), [])
        groups[key][1].append(point)
    return list(groups.values())


def _variant(sweep, base, index, structure):
    data = copy.deepcopy(base)
    here = os.path.dirname(os.path.abspath(sweep.topology_path))
    sim = data.get("sim")
    if isinstance(sim, dict) and isinstance(sim.get("host"), str) \
            and sim_host_file.is_file_name(sim["host"]):
        # the variant is written elsewhere (its where has no directory): the
        # host file named from anywhere
        sim["host"] = os.path.join(here, sim["host"])
    for path, value in structure.items():
        try:
            apply(data, path, value)
        except PathError as e:
            raise UserError(f"{sweep.path}: sweep.topology.{path} = {value!r}: {e}") from None
    scale.topology_data(data, sweep.scale)
    variant = Variant(index, structure, sweep.scale, data, None)
    if not variant.needs_file:
        variant.topology = topology.load(sweep.topology_path)
        return variant
    where = f"{sweep.topology_path} with {variant.describe()}"
    try:
        variant.topology = topology.from_data(data, where)
    except UserError as e:
        raise UserError(f"{sweep.path}: sweep topology keys: {e}" if structure
                        else f"{sweep.path}: scale {sweep.scale:g}: {e}") from None
    variant.topology.path = sweep.topology_path          # until written (Variant.write)
    return variant
