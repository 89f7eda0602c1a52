"""Sweep files: TOML in, a validated Sweep with its expanded points out.

    name = "cache-disabled"          [a-z0-9-]{1,40}
    description = "..."
    backend = "lab"                  lab | sim (`storlab sweep --backend` overrides)
    topology = "../vsa-raid.toml"    relative to this file (or a name in topologies/)
    predict = true                   lab: also run the simulator's prediction
    scale = 1                        divide capacities, cache sizes and working sets by
                                     this (timing kept): a study at full size in the
                                     simulator, at lab size in a lab (schema/scale.py;
                                     `storlab sweep --scale N` overrides)

    [study]                          a shipped study's: what it reproduces (schema/study.py)

    [workload]                       fio terms
    target = "lun0"                  a device of each active node, "volumes" (the profile's
                                     workload volumes) or "share" (files on the node's own
                                     replicated volume over NFS: <mount_point>/<node>)
    nodes = ["node1"]                active nodes (default: all)
    active_nodes = 2                 how many of them run the workload: the first N
                                     (default: all); sweep it for "one VM, then two, ..."
    units = 1                        workload units per active node (one fio each), 1..16
    workers = 1                      fio jobs per unit, 1..64 (target "volumes": one per volume)
    rw = "randrw"                    read write randread randwrite rw randrw
    rwmixread = 50                   0..100
    random_percent = 100             fio percentage_random, 0..100
    dedupe_percentage = 0            fio's: what the written data is like, 0..100 (a
    buffer_compress_percentage = 0   disk group's space_efficiency reduces it: simulator)
    bs = "8k"
    iodepth = 32                     outstanding I/O per worker, 1..1024
    size = "256M"                    working set per worker (its own region of the target)

    [phases]
    precondition = true              sequential fill of every worker's region before point 0
    ramp_s = 5                       warm-up, not measured
    duration_s = 30                  measured
    interval_s = 1                   timeline resolution; 0 = no timeline
    start_skew_s = 3                 lab: how late after its node's gate a fio thread may
                                     start and still be measured over the whole window
                                     (a point where one started later is flagged late-start)

    [sweep]                          a grid: every combination, the first key outermost
    iodepth = [1, 2, 4, 8, 16, 32]   any [workload] key except target/nodes
    "device.battery" = ["ok", "failed"]   device knobs: plugin keys of the target device
    "topology.nodes.count" = [4, 8]  structure: a key of the topology file by its dotted
                                     path; devices by their name ("topology.devices.disk.
                                     count": every device table named disk, in defaults
                                     and in nodes); each combination is a topology of
                                     its own (schema/topology_variants.py)

    [[sweep.points]]                 extra points after the grid, each with a label
    label = "battery fails at 20 s"  (shown as its series value, else its x value)
    "device.battery" = "ok"          values of swept keys (default: each key's first value)
    events = [ { at_s = 20, command = "battery failed" } ]   live control, raid targets
    events = [ { at_s = 60, command = "snapshot" } ]   target "volumes" whose set has
                                     snapshots: one of each volume the point drives
                                     ("snapshot delete": each one's oldest)
    events = [ { at_s = 10, command = "node node3 down" } ]   a profile target, the
                                     simulator: a node holding components or copies fails
                                     ("node NODE up": it comes back and resyncs)

    [plot]
    x = "iodepth"                    default: the first swept key
    series = "device.battery"        default: the second swept key, if any
    per_node = true                  IOPS and MB/s per node: each point's divided by its
                                     nodes (points.csv's nodes: the nodes whose fio ran)
    x_per_host = true                x = "size" only: the axis shows each point's working
                                     set per host, size x units x workers
    mark = "read-cache"              with x_per_host: a dashed line at the disk group's
                                     read cache ("write-buffer": its write buffer) per
                                     node, from the topology (sweep/parts.py; drawn by
                                     report/axes.py)
    [plot.names]                     what the figures call a swept key (axis, title,
    "topology.devices.disk.count" = "HDDs per node"    legend); default the key itself

Device knobs run as plugin parameters in the simulator; in a lab they can
only change live, through a raid device's control socket (battery,
cache-policy): anything else would need a new lab. A profile target
("volumes", "share") runs in the simulator as a whole cluster (storlab-sim
cluster, from the topology's [profile] and [sim]): no device knobs, no
events there.
"""
import itertools
import math
import os
import re
from dataclasses import dataclass, field

from storlab_cli import paths
from storlab_cli.common import toml_file
from storlab_cli.schema import scale, study as study_schema
from storlab_cli.schema.loader import Loader
from storlab_cli.schema.sizes import parse_size_bytes
from storlab_cli.schema.topology import LAB_NODES_MAX, PARAM_KEY_RE, PARAM_KEY_RULE
from storlab_cli.errors import UserError

NAME_RE = re.compile(r"[a-z0-9-]{1,40}")
STRUCTURE_PART_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")
BACKENDS = ("lab", "sim")
RW_MODES = ("read", "write", "randread", "randwrite", "rw", "randrw")
TOP_KEYS = ("name", "description", "backend", "topology", "predict", "scale", "workload",
            "phases", "sweep", "plot", "study")
SCALE_RANGE = (1, 1000000)
WORKLOAD_KEYS = ("target", "nodes", "active_nodes", "units", "workers", "rw", "rwmixread", "random_percent",
                 "bs", "iodepth", "size", "volume_set", "dedupe_percentage",
                 "buffer_compress_percentage")
SWEEPABLE = ("active_nodes", "units", "workers", "rw", "rwmixread", "random_percent", "bs", "iodepth", "size",
             "volume_set", "dedupe_percentage", "buffer_compress_percentage")
# fio's keys for what the written data is like (deduplication, compression)
DATA_KEYS = ("dedupe_percentage", "buffer_compress_percentage")
PHASE_KEYS = ("precondition", "ramp_s", "duration_s", "interval_s", "start_skew_s")
PLOT_KEYS = ("x", "series", "per_node", "x_per_host", "mark", "names")
PLOT_NAME_MAX_CHARS = 60
PLOT_MARKS = ("read-cache", "write-buffer")     # a disk group's cache parts (profile.py)
PER_HOST_X = "size"                  # x_per_host: the working set per worker, times a host's
EXTRA_KEYS = ("label", "events")
EVENT_KEYS = ("at_s", "command", "device")
# a point's snapshot events: of every workload volume it drives
SNAPSHOT_EVENTS = ("snapshot", "snapshot delete")
DEVICE_PREFIX = "device."
TOPOLOGY_PREFIX = "topology."
# Knobs a raid device's control socket changes live: knob -> ctl verb.
LIVE_KNOBS = {"battery": "battery", "cache-policy": "policy"}
TARGET_VOLUMES = "volumes"
TARGET_SHARE = "share"
PROFILE_TARGETS = (TARGET_VOLUMES, TARGET_SHARE)       # the guests' stack, not a device
MAX_POINTS = 10000
# Device keys whose value is a path on the host: never a knob.
HOST_PATH_KEYS = ("file", "stats", "ctl")

WORKLOAD_DEFAULTS = {"active_nodes": None, "units": 1, "workers": 1, "rw": "randread", "rwmixread": 50,
                     "random_percent": 100, "bs": "4k", "iodepth": 1, "size": "64M",
                     # target "volumes": which set ("": profile.volumes, else a profile.volume_sets key)
                     "volume_set": "", "dedupe_percentage": 0, "buffer_compress_percentage": 0}
# start_skew_s: under TCG a node's 64 threads went through the gate in up
# to 1.2 s and began their I/O 1-2 s after that (a hybrid lab at 8 units x 8
# workers a node); a few threads a node start within a fraction of that.
PHASE_DEFAULTS = {"precondition": True, "ramp_s": 2, "duration_s": 10, "interval_s": 1,
                  "start_skew_s": 3}


@dataclass
class Event:
    at_s: float
    command: str
    device: str | None         # None: a profile's event (snapshot, node)

    @property
    def is_snapshot(self):
        return self.command in SNAPSHOT_EVENTS

    @property
    def is_node(self):
        return self.command.split()[0] == "node"

    @property
    def is_profile(self):
        """An event of the profile's stack (snapshot, node), not of a device."""
        return self.device is None

    @property
    def node(self):
        """A node event's node and whether it goes down: ("node3", True)."""
        _, name, state = self.command.split()
        return name, state == "down"


@dataclass
class Point:
    index: int
    params: dict             # swept key -> value (the grid's, or an extra point's)
    label: str | None = None
    events: list = field(default_factory=list)
    scale: float = 1         # the sweep's: the working set runs divided by it

    def workload(self, base):
        """The resolved workload of this point: base with the swept workload
        keys, its working set at the sweep's scale."""
        merged = dict(base)
        merged.update({k: v for k, v in self.params.items()
                       if not k.startswith((DEVICE_PREFIX, TOPOLOGY_PREFIX))})
        merged["size"] = scale.workload_size(merged["size"], self.scale)
        return merged

    def structure(self):
        """The topology keys this point sets: dotted path -> value."""
        return {k[len(TOPOLOGY_PREFIX):]: v for k, v in self.params.items()
                if k.startswith(TOPOLOGY_PREFIX)}

    def device_knobs(self):
        return {k[len(DEVICE_PREFIX):]: v for k, v in self.params.items()
                if k.startswith(DEVICE_PREFIX)}


@dataclass
class Sweep:
    name: str
    description: str
    path: str
    backend: str
    topology_path: str
    predict: bool
    workload: dict           # resolved defaults; target, nodes (None = all) included
    phases: dict
    swept: list              # swept keys in file order
    points: list
    plot_x: str | None
    plot_series: str | None
    scale: float = 1
    study: study_schema.Study | None = None   # a shipped study's [study] table
    plot_per_node: bool = False
    plot_x_per_host: bool = False
    plot_mark: str | None = None     # one of PLOT_MARKS
    plot_names: dict = field(default_factory=dict)   # swept key -> what figures call it

    @property
    def label_key(self):
        """The column an extra point's label stands in: its series, else its x."""
        return self.plot_series or self.plot_x

    @property
    def target_is_device(self):
        return self.workload["target"] not in PROFILE_TARGETS


def load(path, backend=None, scale_override=None, topology_dir=None):
    """The sweep file at path. topology_dir: where its relative topology
    path starts, when not beside it (a results directory's copy of the
    file: where the original was)."""
    path = os.fspath(path)
    sweep = _SweepLoader(path, topology_dir).sweep(toml_file.read(path))
    if backend is not None:
        if backend not in BACKENDS:
            raise UserError(f"--backend {backend}: unknown backend (known: lab, sim)")
        sweep.backend = backend
    if scale_override is None and sweep.backend == "lab" and sweep.study and \
            sweep.study.lab_scale:
        scale_override = sweep.study.lab_scale       # a study at lab size in a lab
    if scale_override is not None:
        lo, hi = SCALE_RANGE
        if not lo <= scale_override <= hi:
            raise UserError(f"--scale {scale_override:g}: must be {lo}..{hi}")
        sweep.scale = scale_override
    for point in sweep.points:
        point.scale = sweep.scale
    check_backend(sweep)
    return sweep


def check_backend(sweep):
    """What a backend cannot do, refused before anything runs. (The
    simulator runs a profile target as a cluster: storlab-sim cluster.)"""
    if sweep.backend == "lab":
        for key in sweep.swept:
            knob = key[len(DEVICE_PREFIX):]
            if key.startswith(DEVICE_PREFIX) and knob not in LIVE_KNOBS:
                raise UserError(f"{sweep.path}: sweep.{key}: a lab changes only "
                                f"{', '.join(DEVICE_PREFIX + k for k in LIVE_KNOBS)} live "
                                "(raid devices); other device keys need backend sim")


def resolve_topology(sweep_path, value, directory=None):
    """A topology path relative to the sweep file (or directory), else a
    name in topologies/."""
    candidates = [os.path.join(directory or os.path.dirname(os.path.abspath(sweep_path)), value)]
    if "/" not in value:
        name = value if value.endswith(".toml") else value + ".toml"
        candidates.append(os.path.join(paths.SOURCE_DIR, "topologies", name))
    for candidate in candidates:
        if os.path.isfile(candidate):
            return os.path.normpath(candidate)
    raise UserError(f"{sweep_path}: topology = {value!r}: no such file "
                    f"(looked at {', '.join(candidates)})")


class _SweepLoader(Loader):
    def __init__(self, path, topology_dir=None):
        super().__init__(path)
        self.topology_dir = topology_dir

    def boolean(self, value, key_path):
        if not isinstance(value, bool):
            self.fail(key_path, "must be true or false", value)
        return value

    def number(self, value, key_path, lo, hi):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(key_path, "must be a number", value)
        if not lo <= value <= hi:
            self.fail(key_path, f"must be {lo}..{hi}", value)
        return value

    def size(self, value, key_path):
        self.string(value, key_path)
        size_bytes = parse_size_bytes(value)
        if size_bytes is None or size_bytes <= 0:
            self.fail(key_path, "not a size (e.g. 4k, 256M, 1G)", value)
        if "i" in value.lower():
            # fio's default kb_base=1024 reads IEC prefixes as powers of 10
            # (4KiB = 4000 bytes), the reverse of what they mean elsewhere
            self.fail(key_path, "write 4k, 256M, 1G: fio reads 4KiB as 4000 bytes", value)
        return value

    def workload_value(self, key, value, key_path):
        if key == "units":
            return self.integer(value, key_path, (1, 16))
        if key == "active_nodes":       # at most the sweep's active nodes (sweep/plan.py)
            return self.integer(value, key_path, (1, LAB_NODES_MAX))
        if key == "workers":
            return self.integer(value, key_path, (1, 64))
        if key == "iodepth":
            return self.integer(value, key_path, (1, 1024))
        if key in ("rwmixread", "random_percent") + DATA_KEYS:
            return self.integer(value, key_path, (0, 100))
        if key == "rw":
            return self.choice(value, key_path, RW_MODES, "rw mode")
        if key in ("bs", "size"):
            return self.size(value, key_path)
        if key == "volume_set":
            return self.string(value, key_path)        # the topology's sets: sweep/plan.py
        raise AssertionError(key)

    def device_value(self, value, key_path):
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            self.fail(key_path, "must be a string or a number", value)
        text = str(value)
        if not text or any(c.isspace() for c in text) or "=" in text:
            self.fail(key_path, "must be one word without '='", value)
        return value

    def device_key(self, knob, key_path):
        if not knob:
            self.fail(key_path, "names no device key")
        if not PARAM_KEY_RE.fullmatch(knob):
            self.fail(key_path, f"not a device parameter key ({PARAM_KEY_RULE})")
        if knob in HOST_PATH_KEYS:
            self.fail(key_path, "names a file on the host: a sweep keeps every file it writes "
                      "in its results directory (device stats included)")

    def structure_value(self, value, key_path):
        if isinstance(value, dict):
            self.fail(key_path, "must be a value, not a table (set its keys one by one)", value)
        return value

    def structure_key(self, path, key_path):
        parts = path.split(".")
        if not path or not all(STRUCTURE_PART_RE.fullmatch(part) for part in parts):
            self.fail(key_path, "names no topology key (topology.TABLE.KEY, e.g. "
                      "topology.nodes.count, topology.devices.disk.count)")

    def value(self, key, value, key_path):
        if key.startswith(DEVICE_PREFIX):
            return self.device_value(value, key_path)
        if key.startswith(TOPOLOGY_PREFIX):
            return self.structure_value(value, key_path)
        return self.workload_value(key, value, key_path)

    def sweep(self, data):
        self.check_keys(data, TOP_KEYS, "")
        if "name" not in data:
            self.fail("name", "missing (1..40 of a-z, 0-9, '-')")
        name = self.name(data["name"], "name", NAME_RE, "1..40 of a-z, 0-9, '-'")
        description = self.string(data.get("description", ""), "description")
        backend = self.choice(data.get("backend", "lab"), "backend", BACKENDS, "backend")
        if "topology" not in data:
            self.fail("topology", "missing (the lab topology file the sweep runs on)")
        topology_value = self.path_string(data["topology"], "topology")
        topology_path = resolve_topology(self.path, topology_value, self.topology_dir)
        predict = self.boolean(data.get("predict", True), "predict")
        factor = self.number(data.get("scale", 1), "scale", *SCALE_RANGE)
        workload = self.workload(self.table(data.get("workload", {}), "workload"))
        phases = self.phases(self.table(data.get("phases", {}), "phases"))
        swept, grid, extras = self.grid(self.table(data.get("sweep", {}), "sweep"), workload)
        # counted before anything is built: a grid of 10^12 points is an error, not a MemoryError
        count = math.prod(len(values) for values in grid.values()) + len(extras)
        if count > MAX_POINTS:
            self.fail("sweep", f"{count} points; at most {MAX_POINTS}")
        points = [Point(i, dict(zip(swept, values)))
                  for i, values in enumerate(itertools.product(*grid.values()))]
        plot_table = self.table(data.get("plot", {}), "plot")
        plot_x, plot_series = self.plot(plot_table, swept)
        for n, extra in enumerate(extras):
            points.append(self.extra_point(extra, f"sweep.points[{n}]", len(points), swept, grid,
                                           workload, phases, plot_series or plot_x))
        study = None
        if "study" in data:
            study = study_schema.read(self, self.table(data["study"], "study"), SCALE_RANGE)
        return Sweep(name, description, self.path, backend, topology_path, predict, workload,
                     phases, swept, points, plot_x, plot_series, factor, study,
                     *self.plot_axes(plot_table, plot_x), self.plot_names(plot_table, swept))

    def workload(self, table):
        self.check_keys(table, WORKLOAD_KEYS, "workload")
        workload = dict(WORKLOAD_DEFAULTS)
        for key in SWEEPABLE:
            if key in table:
                workload[key] = self.workload_value(key, table[key], f"workload.{key}")
        if "target" not in table:
            self.fail("workload.target", "missing (a device name of each node, 'volumes' "
                      "or 'share')")
        workload["target"] = self.string(table["target"], "workload.target")
        nodes = table.get("nodes")
        if nodes is not None:
            if not isinstance(nodes, list) or not nodes or not all(isinstance(n, str) for n in nodes):
                self.fail("workload.nodes", "must be a non-empty list of node names", nodes)
            if len(set(nodes)) != len(nodes):
                self.fail("workload.nodes", "lists a node twice", nodes)
        workload["nodes"] = nodes
        return workload

    def phases(self, table):
        self.check_keys(table, PHASE_KEYS, "phases")
        phases = dict(PHASE_DEFAULTS)
        if "precondition" in table:
            phases["precondition"] = self.boolean(table["precondition"], "phases.precondition")
        if "ramp_s" in table:
            phases["ramp_s"] = self.integer(table["ramp_s"], "phases.ramp_s", (0, 3600))
        if "duration_s" in table:
            phases["duration_s"] = self.integer(table["duration_s"], "phases.duration_s",
                                                (1, 86400))
        if "interval_s" in table:
            phases["interval_s"] = self.integer(table["interval_s"], "phases.interval_s",
                                                (0, 3600))
        if "start_skew_s" in table:
            phases["start_skew_s"] = self.integer(table["start_skew_s"], "phases.start_skew_s",
                                                  (0, 600))
        if phases["interval_s"] > phases["duration_s"]:
            # a lab point's figures are counted over the window by interval
            self.fail("phases.interval_s", f"longer than duration_s ({phases['duration_s']}): "
                      "no interval would lie in the measured window", phases["interval_s"])
        return phases

    def grid(self, table, workload):
        grid, extras = {}, []
        for key, values in table.items():
            key_path = f"sweep.{key}"
            if key == "points":
                extras = self.array_of_tables(values, key_path)
                continue
            if not key.startswith((DEVICE_PREFIX, TOPOLOGY_PREFIX)) and key not in SWEEPABLE:
                self.fail(key_path, "cannot be swept (sweepable: "
                          f"{', '.join(SWEEPABLE)}, {DEVICE_PREFIX}KEY for a device key, or "
                          f"{TOPOLOGY_PREFIX}PATH for a key of the topology)")
            if key.startswith(DEVICE_PREFIX):
                self.device_key(key[len(DEVICE_PREFIX):], key_path)
            if key.startswith(TOPOLOGY_PREFIX):
                self.structure_key(key[len(TOPOLOGY_PREFIX):], key_path)
            if not isinstance(values, list) or not values:
                self.fail(key_path, "must be a non-empty list of values", values)
            checked = [self.value(key, v, f"{key_path}[{i}]") for i, v in enumerate(values)]
            if len(set(map(str, checked))) != len(checked):
                self.fail(key_path, "lists a value twice", values)
            grid[key] = checked
        return list(grid), grid, extras

    def plot(self, table, swept):
        self.check_keys(table, PLOT_KEYS, "plot")
        x = table.get("x", swept[0] if swept else None)
        series = table.get("series", swept[1] if len(swept) > 1 else None)
        for key, value in (("x", x), ("series", series)):
            if value is not None and value not in swept:
                self.fail(f"plot.{key}", f"not a swept key (swept: {', '.join(swept) or 'none'})",
                          value)
        if x is not None and x == series:
            self.fail("plot.series", "is the same key as plot.x", series)
        return x, series

    def plot_names(self, table, swept):
        """[plot.names]: a name for a swept key in the figures, one line of at
        most PLOT_NAME_MAX_CHARS characters."""
        names = self.table(table.get("names", {}), "plot.names")
        for key, name in names.items():
            key_path = f'plot.names."{key}"'
            if key not in swept:
                self.fail(key_path, f"not a swept key (swept: {', '.join(swept) or 'none'})",
                          name)
            if not isinstance(name, str) or not name.strip() or "\n" in name \
                    or len(name) > PLOT_NAME_MAX_CHARS:
                self.fail(key_path, f"must be one line of 1..{PLOT_NAME_MAX_CHARS} characters",
                          name)
        return dict(names)

    def plot_axes(self, table, x):
        """(per_node, x_per_host, mark) of the [plot] table; x is plot.x."""
        per_node = self.boolean(table.get("per_node", False), "plot.per_node")
        x_per_host = self.boolean(table.get("x_per_host", False), "plot.x_per_host")
        if x_per_host and x != PER_HOST_X:
            self.fail("plot.x_per_host", f"needs plot.x = \"{PER_HOST_X}\" (the working set "
                      f"per worker), not {x!r}", x_per_host)
        mark = table.get("mark")
        if mark is not None:
            self.choice(mark, "plot.mark", PLOT_MARKS, "mark")
            if not x_per_host:
                self.fail("plot.mark", "marks a size per host on the working set axis: needs "
                          "plot.x_per_host = true", mark)
        return per_node, x_per_host, mark

    def extra_point(self, table, key_path, index, swept, grid, workload, phases, label_key):
        for key in table:
            if key not in EXTRA_KEYS and key not in swept:
                raise UserError(f"{self.path}: {key_path}: unknown key '{key}' (known: "
                                f"{', '.join(EXTRA_KEYS + tuple(swept))})")
        if "label" not in table:
            self.fail(f"{key_path}.label", "missing (how plots tell this point apart)")
        label = self.string(table["label"], f"{key_path}.label")
        if not label.strip() or "\n" in label:
            self.fail(f"{key_path}.label", "must be one non-empty line", label)
        if label_key is None:
            self.fail(key_path, "extra points need a swept key (their label is shown as the "
                      "value of the plot's series, or of its x when there is no series)")
        params = {key: self.value(key, table[key], f"{key_path}.{key}") if key in table
                  else grid[key][0] for key in swept}
        events = [self.event(e, f"{key_path}.events[{i}]", workload, phases)
                  for i, e in enumerate(self.array_of_tables(table.get("events", []),
                                                             f"{key_path}.events"))]
        return Point(index, params, label, events)

    def event(self, table, key_path, workload, phases):
        self.check_keys(table, EVENT_KEYS, key_path)
        if "at_s" not in table or "command" not in table:
            self.fail(key_path, "needs at_s and command")
        at_s = self.number(table["at_s"], f"{key_path}.at_s", 0, phases["duration_s"])
        command = self.string(table["command"], f"{key_path}.command").strip()
        verb = command.split()[0] if command else ""
        if verb == "snapshot":
            if command not in SNAPSHOT_EVENTS:
                self.fail(f"{key_path}.command", "a snapshot event is \"snapshot\" (take one "
                          "of every volume the point drives) or \"snapshot delete\" (delete "
                          "each one's oldest)", command)
            if "device" in table:
                self.fail(f"{key_path}.device", "a snapshot event acts on the volumes the "
                          "point drives, not on a device", table["device"])
            if workload["target"] != TARGET_VOLUMES:
                self.fail(f"{key_path}.command", "snapshots are of workload volumes: needs "
                          f"workload.target = \"{TARGET_VOLUMES}\"", command)
            return Event(float(at_s), command, None)
        if verb == "node":
            words = command.split()
            if len(words) != 3 or words[2] not in ("down", "up"):
                self.fail(f"{key_path}.command", "a node event is \"node NODE down\" or "
                          "\"node NODE up\"", command)
            if "device" in table:
                self.fail(f"{key_path}.device", "a node event acts on a node, not on a device",
                          table["device"])
            if workload["target"] not in PROFILE_TARGETS:
                self.fail(f"{key_path}.command", "a node event fails a node of the storage "
                          "profile: needs workload.target = \"volumes\" or \"share\"", command)
            return Event(float(at_s), " ".join(words), None)
        if verb not in ("battery", "policy", "fail-member", "replace-member"):
            self.fail(f"{key_path}.command", "not a live control command (battery STATE, "
                      "policy POLICY, fail-member N, replace-member N), a snapshot event "
                      "(snapshot, snapshot delete) or a node event (node NODE down|up)",
                      command)
        device = self.string(table.get("device", workload["target"]), f"{key_path}.device")
        if device in PROFILE_TARGETS:
            self.fail(f"{key_path}.device", "needs the raid device's name", device)
        return Event(float(at_s), command, device)
