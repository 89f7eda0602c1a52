"""pytest for sweep files (schema/sweep.py), their cross-checks against a
topology (sweep/plan.py) and the fio job files of a point (sweep/fio_jobfile.py).
No build, no VMs."""
import os

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(TESTS)

from storlab_cli.schema import sweep as sweep_schema, topology
from storlab_cli.sweep import fio_jobfile, plan as sweep_plan
from storlab_cli.errors import UserError

TOPOLOGY = '''
name = "lab"
[[defaults.devices]]
name = "lun"
plugin = "raid"
[defaults.devices.params]
preset = "vsa-raid10-8x-sas10k"
member-size = "256M"
[[defaults.devices]]
name = "disk"
plugin = "memory"
[defaults.devices.params]
size = "64M"
[nodes]
count = 2
'''

SWEEP = '''
name = "s"
topology = "lab.toml"
[workload]
target = "lun0"
rw = "randrw"
bs = "8k"
size = "64M"
[phases]
ramp_s = 1
duration_s = 30
[sweep]
iodepth = [1, 4, 16]
"device.battery" = ["ok", "failed"]
'''

EXTRA = '''
[[sweep.points]]
label = "fails at 10 s"
iodepth = 16
events = [{ at_s = 10, command = "battery failed" }]
'''


def write(tmp_path, sweep_text, topology_text=TOPOLOGY):
    (tmp_path / "lab.toml").write_text(topology_text)
    path = tmp_path / "s.toml"
    path.write_text(sweep_text)
    return str(path)


def load(tmp_path, sweep_text, backend=None, topology_text=TOPOLOGY):
    return sweep_schema.load(write(tmp_path, sweep_text, topology_text), backend)


def refused(tmp_path, sweep_text, needle, backend=None, topology_text=TOPOLOGY):
    with pytest.raises(UserError) as e:
        sweep = load(tmp_path, sweep_text, backend, topology_text)
        sweep_plan.make(sweep, topology.load(sweep.topology_path))
    assert needle in str(e.value), str(e.value)
    assert "\n" not in str(e.value)
    return str(e.value)


def test_grid_first_key_outermost_then_extras(tmp_path):
    sweep = load(tmp_path, SWEEP + EXTRA)
    assert sweep.swept == ["iodepth", "device.battery"]
    grid = [(p.params["iodepth"], p.params["device.battery"]) for p in sweep.points[:6]]
    assert grid == [(1, "ok"), (1, "failed"), (4, "ok"), (4, "failed"), (16, "ok"),
                    (16, "failed")]
    extra = sweep.points[6]
    assert extra.index == 6 and extra.label == "fails at 10 s"
    assert extra.params == {"iodepth": 16, "device.battery": "ok"}   # default: first value
    assert [(e.at_s, e.command, e.device) for e in extra.events] == [(10.0, "battery failed",
                                                                      "lun0")]
    assert (sweep.plot_x, sweep.plot_series) == ("iodepth", "device.battery")
    assert sweep.points[3].workload(sweep.workload)["iodepth"] == 4
    assert sweep.points[3].device_knobs() == {"battery": "failed"}


def test_no_sweep_table_is_one_point(tmp_path):
    text = SWEEP.split("[sweep]")[0]
    sweep = load(tmp_path, text)
    assert len(sweep.points) == 1 and sweep.points[0].params == {}
    assert sweep.plot_x is None


def test_topology_by_name_in_topologies_dir(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(SWEEP.replace('"lab.toml"', '"smoke"').replace('"device.battery" = ["ok", '
                                                                   '"failed"]', ""))
    sweep = sweep_schema.load(str(path))
    assert sweep.topology_path == os.path.join(SOURCE, "topologies", "smoke.toml")


@pytest.mark.parametrize("change, needle", [
    (("[phases]", "colour = 1\n[phases]"), "workload: unknown key 'colour'"),
    (('rw = "randrw"', 'rw = "trim"'), "workload.rw = 'trim': unknown rw mode"),
    (('bs = "8k"', 'bs = "eight"'), "workload.bs = 'eight': not a size"),
    # fio reads IEC prefixes as powers of ten (kb_base=1024): 4KiB would be 4000 bytes
    (('bs = "8k"', 'bs = "8KiB"'), "workload.bs = '8KiB': write 4k, 256M, 1G: fio reads 4KiB as 4000 bytes"),
    (("iodepth = [1, 4, 16]", "iodepth = [1, 4, 4]"), "sweep.iodepth = [1, 4, 4]: lists a value twice"),
    (("iodepth = [1, 4, 16]", "iodepth = [0]"), "sweep.iodepth[0] = 0: must be 1..1024"),
    (("iodepth = [1, 4, 16]", "iodepth = 4"), "sweep.iodepth = 4: must be a non-empty list"),
    (("iodepth = [1, 4, 16]", "target = [\"a\"]"), "sweep.target: cannot be swept"),
    (('"device.battery" = ["ok", "failed"]', '"device.write-cache" = ["a b"]'),
     "must be one word"),
    (('"device.battery" = ["ok", "failed"]', '"device.write cache" = ["on"]'),
     "sweep.device.write cache: not a device parameter key"),
    # a knob read as a storlab-sim option, or writing outside the results directory
    (('"device.battery" = ["ok", "failed"]', '"device.--interval-ms" = [5]'),
     "sweep.device.--interval-ms: not a device parameter key (a-z, then"),
    (('"device.battery" = ["ok", "failed"]', '"device.stats" = ["/tmp/x.stats"]'),
     "sweep.device.stats: names a file on the host"),
    (('"device.battery" = ["ok", "failed"]', '"device.file" = ["/etc/passwd"]'),
     "sweep.device.file: names a file on the host"),
    (('topology = "lab.toml"', 'topology = "nope.toml"'), "topology = 'nope.toml': no such file"),
    (('name = "s"', 'name = "S!"'), "name = 'S!': must be 1..40"),
    (("duration_s = 30", "duration_s = 0"), "phases.duration_s = 0: must be 1..86400"),
    (("duration_s = 30", "duration_s = 30\nstart_skew_s = -1"),
     "phases.start_skew_s = -1: must be 0..600"),
    # a lab point is counted over its window by interval
    (("duration_s = 30", "duration_s = 30\ninterval_s = 40"),
     "phases.interval_s = 40: longer than duration_s (30)"),
])
def test_bad_sweep_files(tmp_path, change, needle):
    refused(tmp_path, SWEEP.replace(*change), needle)


def test_bad_plot_and_extra_points(tmp_path):
    refused(tmp_path, SWEEP + '[plot]\nx = "bs"\n', "plot.x = 'bs': not a swept key")
    refused(tmp_path, SWEEP + EXTRA.replace('label = "fails at 10 s"', ""),
            "sweep.points[0].label: missing")
    refused(tmp_path, SWEEP + EXTRA.replace("battery failed", "explode"),
            "events[0].command = 'explode': not a live control command")
    refused(tmp_path, SWEEP + EXTRA.replace("at_s = 10", "at_s = 31"),
            "events[0].at_s = 31: must be 0..30")
    refused(tmp_path, SWEEP + EXTRA.replace("iodepth = 16", "bs = \"4k\""),
            "sweep.points[0]: unknown key 'bs'")


SIZE_SWEEP = SWEEP.replace("iodepth = [1, 4, 16]", 'size = ["16M", "32M"]')


def test_plot_names_of_swept_keys(tmp_path):
    sweep = load(tmp_path, SWEEP + '[plot.names]\n"device.battery" = "BBU state"\n')
    assert sweep.plot_names == {"device.battery": "BBU state"}
    assert load(tmp_path, SWEEP).plot_names == {}


def test_plot_axes_per_node_working_set_per_host_and_a_mark(tmp_path):
    sweep = load(tmp_path, SIZE_SWEEP)
    assert (sweep.plot_per_node, sweep.plot_x_per_host, sweep.plot_mark) == (False, False, None)
    sweep = load(tmp_path, SIZE_SWEEP + '[plot]\nper_node = true\nx_per_host = true\n'
                 'mark = "write-buffer"\n')
    assert (sweep.plot_x, sweep.plot_per_node, sweep.plot_x_per_host, sweep.plot_mark) == \
        ("size", True, True, "write-buffer")


@pytest.mark.parametrize("sweep_text, plot_lines, needle", [
    (SWEEP, 'per_node = "yes"', "s.toml: plot.per_node = 'yes': must be true or false"),
    (SWEEP, "x_per_host = 1", "s.toml: plot.x_per_host = 1: must be true or false"),
    (SWEEP, "x_per_host = true", "s.toml: plot.x_per_host = true: needs plot.x = \"size\" "
     "(the working set per worker), not 'iodepth'"),
    (SIZE_SWEEP, 'x_per_host = true\nmark = "l2"',
     "s.toml: plot.mark = 'l2': unknown mark (known: read-cache, write-buffer)"),
    (SIZE_SWEEP, "x_per_host = true\nmark = 1", "s.toml: plot.mark = 1: must be a string"),
    (SIZE_SWEEP, 'mark = "read-cache"', "s.toml: plot.mark = 'read-cache': marks a size per "
     "host on the working set axis: needs plot.x_per_host = true"),
    (SIZE_SWEEP, "per_nodes = true", "s.toml: plot: unknown key 'per_nodes' (known: x, series, "
     "per_node, x_per_host, mark, names)"),
    (SWEEP, '[plot.names]\nbs = "block size"',
     "s.toml: plot.names.\"bs\" = 'block size': not a swept key (swept: iodepth, device.battery)"),
    (SWEEP, '[plot.names]\niodepth = 4', "s.toml: plot.names.\"iodepth\" = 4: must be one line "
     "of 1..60 characters"),
    (SWEEP, '[plot.names]\niodepth = " "', "plot.names.\"iodepth\" = ' ': must be one line"),
    (SWEEP, '[plot.names]\niodepth = "' + "x" * 61 + '"', "must be one line of 1..60"),
    (SWEEP, 'names = "depth"', "s.toml: plot.names = 'depth': must be a table"),
])
def test_bad_plot_axes_are_one_line(tmp_path, sweep_text, plot_lines, needle):
    if plot_lines.startswith("[plot.names]"):          # a table of its own
        refused(tmp_path, sweep_text + plot_lines + "\n", needle)
        return
    refused(tmp_path, sweep_text + f"[plot]\n{plot_lines}\n", needle)


def test_extra_point_label_stands_in_x_without_a_series(tmp_path):
    text = SWEEP.replace('"device.battery" = ["ok", "failed"]', "") + EXTRA.replace(
        "iodepth = 16\n", "")
    sweep = load(tmp_path, text)
    assert (sweep.plot_x, sweep.plot_series, sweep.label_key) == ("iodepth", None, "iodepth")
    assert sweep.points[-1].params == {"iodepth": 1} and sweep.points[-1].label
    refused(tmp_path, SWEEP.split("[sweep]")[0] + "[sweep]\n" + EXTRA.replace("iodepth = 16\n", ""),
            "extra points need a swept key")


def test_not_valid_toml(tmp_path):
    refused(tmp_path, "name = ", "s.toml: not valid TOML")


def test_backend_limits(tmp_path):
    # a lab changes only battery and cache-policy, live
    refused(tmp_path, SWEEP.replace("device.battery", "device.member-size"),
            "sweep.device.member-size: a lab changes only device.battery, device.cache-policy")
    sweep = load(tmp_path, SWEEP.replace("device.battery", "device.member-size"), "sim")
    assert sweep.backend == "sim"
    # a profile target runs as a cluster in the simulator: no target device to take knobs
    refused(tmp_path, SWEEP.replace('"lun0"', '"volumes"'),
            "device knobs are parameters of the target device's model; workload.target = "
            "'volumes' names none", backend="sim",
            topology_text=TOPOLOGY + '[profile.volumes]\nsize = "64M"\n')
    # in the simulator a knob is a model parameter: one the raid plugin's tables list
    refused(tmp_path, SWEEP.replace("device.battery", "device.membr-size"),
            "device.membr-size: not a key of the raid plugin (did you mean member-size,",
            backend="sim")


def test_plan_cross_checks(tmp_path):
    refused(tmp_path, SWEEP.replace('target = "lun0"', 'target = "lun9"'),
            "workload.target = 'lun9': node1 has no such device (devices: lun0, disk0)")
    refused(tmp_path, SWEEP.replace('target = "lun0"', 'target = "lun0"\nnodes = ["node7"]'),
            "workload.nodes: no node 'node7'")
    refused(tmp_path, SWEEP.replace('size = "64M"', 'size = "2G"'),
            "1 units x 1 workers x size 2G = 2048 MiB does not fit node1's lun0 (1024 MiB)")
    # the memory disk: live control needs a raid device; the simulator has no model of it
    refused(tmp_path, SWEEP.replace('target = "lun0"', 'target = "disk0"'),
            "node1's disk0 is memory: live control")
    refused(tmp_path, SWEEP.replace('target = "lun0"', 'target = "disk0"')
            .replace('"device.battery" = ["ok", "failed"]', ""),
            "plugin 'memory' has no model for the simulator", backend="sim")
    refused(tmp_path, SWEEP.replace('target = "lun0"', 'target = "volumes"'),
            "has no [profile.volumes]")


def test_plan_of_a_good_sweep(tmp_path):
    sweep = load(tmp_path, SWEEP + EXTRA)
    plan = sweep_plan.make(sweep, topology.load(sweep.topology_path))
    assert plan.nodes == ["node1", "node2"]
    assert plan.devices["node2"].name == "lun0" and plan.devices["node2"].plugin == "raid"
    assert list(plan.event_devices["node1"]) == ["lun0"]


def test_job_files(tmp_path):
    sweep = load(tmp_path, SWEEP.replace('size = "64M"', 'size = "64M"\nunits = 2\nworkers = 2'))
    point = sweep.points[3]
    workload = point.workload(sweep.workload)
    workers = fio_jobfile.region_workers("node1", 2, workload, "/dev/sdb")
    # unit 2's workers own regions 2 and 3 of 64 MiB
    assert [(w.name, w.offset_bytes) for w in workers] == [("node1-u2w1", 2 << 26),
                                                           ("node1-u2w2", 3 << 26)]
    text = fio_jobfile.measured(workload, sweep.phases, workers, randseed=7, log_prefix="/t/x")
    lines = text.splitlines()
    for expected in ("rw=randrw", "bs=8k", "iodepth=4", "size=64M",
                     "time_based=1", "randseed=7", "write_lat_log=/t/x",
                     "log_avg_msec=1000", "[node1-u2w2]", "filename=/dev/sdb",
                     f"offset={3 << 26}",
                     # logged in the gate's clock (uptime); after fio's ramp, 3 s for threads
                     # that start late, the window, one interval past it
                     "log_alternate_epoch=1", "log_alternate_epoch_clock_id=7",
                     "ramp_time=1", "runtime=34"):
        assert expected in lines, expected
    assert fio_jobfile.window_start_s(sweep.phases) == 1 + 3
    # a sweep of a few threads a node may allow them less time to start
    few = load(tmp_path, SWEEP.replace("ramp_s = 1", "ramp_s = 1\nstart_skew_s = 1"))
    assert fio_jobfile.window_start_s(few.phases) == 1 + 1
    assert "runtime=32" in fio_jobfile.measured(workload, few.phases, workers, randseed=7,
                                                log_prefix="/t/x").splitlines()
    # unlogged (the simulator's), the window is the run
    unlogged = fio_jobfile.measured(workload, sweep.phases, workers, randseed=7).splitlines()
    assert "ramp_time=1" in unlogged and "runtime=30" in unlogged
    assert "log_alternate_epoch=1" not in unlogged
    assert fio_jobfile.logged_tail_s({"duration_s": 10, "interval_s": 4}) == 6   # to 12, +4
    # without a timeline a lab still logs, every second, for its figures
    assert fio_jobfile.logged_tail_s({"duration_s": 10, "interval_s": 0}) == 1
    no_timeline = fio_jobfile.measured(workload, dict(sweep.phases, interval_s=0), workers,
                                       randseed=7, log_prefix="/t/x").splitlines()
    assert "log_avg_msec=1000" in no_timeline and "runtime=34" in no_timeline
    fill = fio_jobfile.precondition(1 << 30, [fio_jobfile.Worker("f", "/dev/sdb", 0)])
    assert "rw=write" in fill.splitlines() and f"size={1 << 30}" in fill.splitlines()


def test_what_the_data_is_like_reaches_the_job_file(tmp_path):
    """fio's dedupe_percentage and buffer_compress_percentage: workload keys,
    swept like any, 0..100, in the job file only when not fio's default."""
    sweep = load(tmp_path, SWEEP.replace('"device.battery" = ["ok", "failed"]',
                                         "dedupe_percentage = [0, 50]\n"
                                         "buffer_compress_percentage = [60]"))
    texts = [fio_jobfile.measured(p.workload(sweep.workload), sweep.phases, [], randseed=1)
             for p in sweep.points[:4:3]]
    assert "dedupe_percentage=0" not in texts[0] and "buffer_compress_percentage=60" in texts[0]
    assert "dedupe_percentage=50" in texts[1]
    refused(tmp_path, SWEEP.replace('size = "64M"', 'size = "64M"\ndedupe_percentage = 101'),
            "workload.dedupe_percentage = 101: must be 0..100")


# Two replicated volumes (homes node1, node2) NFS-exported; node3 holds copies only.
SHARES_TOPOLOGY = TOPOLOGY.replace("count = 2", "count = 3") + '''
[profile.replicas]
ftt = 1
primaries = ["node1", "node2"]
size = "64M"
[profile.nfs]
'''
SHARE_SWEEP = SWEEP.replace('target = "lun0"', 'target = "share"\nnodes = ["node1", "node2"]') \
    .replace('size = "64M"', 'size = "16M"\nworkers = 2').replace('"device.battery" = ["ok", "failed"]', "")


def test_share_target_plan(tmp_path):
    """Each active node drives files on its own share; the stats of every
    node's devices frame a point, since the copies land on other nodes."""
    sweep = load(tmp_path, SHARE_SWEEP + EXTRA.replace("command", 'device = "lun0", command'),
                 topology_text=SHARES_TOPOLOGY)
    assert not sweep.target_is_device
    plan = sweep_plan.make(sweep, topology.load(sweep.topology_path))
    assert plan.nodes == ["node1", "node2"] and plan.devices == {"node1": None, "node2": None}
    assert plan.stats_devices == [(node, device) for node in ("node1", "node2", "node3")
                                  for device in ("disk0", "lun0")]
    assert list(plan.event_devices["node2"]) == ["lun0"]
    workers = fio_jobfile.file_workers("node2", 2, 2, "/mnt/storlab/node2")
    assert [(w.name, w.filename, w.offset_bytes) for w in workers] == [
        ("node2-u2w1", "/mnt/storlab/node2/node2-u2w1.fio", 0),
        ("node2-u2w2", "/mnt/storlab/node2/node2-u2w2.fio", 0)]


def test_share_target_refusals(tmp_path):
    assert "workload.target = 'share' but" in refused(
        tmp_path, SHARE_SWEEP, "has no [profile.nfs] (the shares are its replicated volumes")
    refused(tmp_path, SHARE_SWEEP.replace('nodes = ["node1", "node2"]', ""),
            "workload.target = 'share': node3 has no share of its own (replicated volumes: "
            "node1, node2", topology_text=SHARES_TOPOLOGY)
    refused(tmp_path, SHARE_SWEEP.replace('size = "16M"', 'size = "32M"'),
            "1 units x 2 workers x size 32M = 64 MiB does not fit a share (about 57 MiB of a "
            "64 MiB volume)", topology_text=SHARES_TOPOLOGY)
    # the simulator runs shares as a cluster (storlab-sim cluster): no live events there
    sweep = load(tmp_path, SHARE_SWEEP, "sim", SHARES_TOPOLOGY)
    assert sweep_plan.make(sweep, topology.load(sweep.topology_path)).nodes == ["node1", "node2"]
    refused(tmp_path, SHARE_SWEEP + EXTRA.replace("command", 'device = "lun0", command'),
            "event device 'lun0': the simulator's cluster takes no live events",
            backend="sim", topology_text=SHARES_TOPOLOGY)
    refused(tmp_path, SHARE_SWEEP + EXTRA, "needs the raid device's name",
            topology_text=SHARES_TOPOLOGY)


@pytest.mark.parametrize("path", sorted(
    os.path.join(SOURCE, "topologies", "sweeps", name)
    for name in os.listdir(os.path.join(SOURCE, "topologies", "sweeps"))), ids=os.path.basename)
def test_shipped_sweeps_plan_against_their_topologies(path):
    sweep = sweep_schema.load(path)
    plan = sweep_plan.make(sweep, topology.load(sweep.topology_path))
    assert plan.nodes and sweep.points


def test_active_nodes_is_a_sweepable_count(tmp_path):
    sweep = load(tmp_path, SWEEP.replace('"device.battery" = ["ok", "failed"]',
                                         "active_nodes = [1, 2]"))
    plan = sweep_plan.make(sweep, topology.load(sweep.topology_path))
    counts = [p.workload(sweep.workload) for p in sweep.points]
    assert [sweep_plan.point_nodes(plan, w) for w in counts[:2]] == [["node1"], ["node1", "node2"]]
    # unswept: every active node
    whole = load(tmp_path, SWEEP)
    assert sweep_plan.point_nodes(plan, whole.points[0].workload(whole.workload)) == \
        ["node1", "node2"]
    refused(tmp_path, SWEEP.replace('"device.battery" = ["ok", "failed"]', "active_nodes = [3]"),
            "point 0: active_nodes = 3 but the sweep has 2 active nodes (node1, node2)")
    refused(tmp_path, SWEEP.replace('rw = "randrw"', 'rw = "randrw"\nactive_nodes = 0'),
            "workload.active_nodes = 0: must be 1..64")


def test_volumes_target_needs_volumes_on_every_active_node(tmp_path):
    topo = TOPOLOGY + '[profile.volumes]\nsize = "8M"\nnodes = ["node2"]\n'
    sweep = SWEEP.replace('target = "lun0"', 'target = "volumes"').replace(
        'size = "64M"', 'size = "8M"').replace('"device.battery" = ["ok", "failed"]', "")
    refused(tmp_path, sweep, "workload.target = 'volumes': node1 has no workload volumes "
            "(profile.volumes.nodes: node2; see workload.nodes)", topology_text=topo)
    good = load(tmp_path, sweep.replace('target = "volumes"',
                                        'target = "volumes"\nnodes = ["node2"]'),
                topology_text=topo)
    plan = sweep_plan.make(good, topology.load(good.topology_path))
    assert plan.nodes == ["node2"]
    # the active node's devices hold its volumes: their stats frame each point
    assert plan.stats_devices == [("node2", "disk0"), ("node2", "lun0")]


def test_a_huge_grid_is_counted_before_it_is_built(tmp_path):
    """2 x 10^12 points: one line, at once (it was a MemoryError traceback)."""
    def hundred(form):
        return "[" + ", ".join(form.format(n) for n in range(1, 101)) + "]"
    axes = [("iodepth", hundred("{}")), ("bs", hundred('"{}k"')), ("size", hundred('"{}M"')),
            ("rwmixread", hundred("{}").replace("100]", "0]")),
            ("random_percent", hundred("{}").replace("100]", "0]")),
            ('"device.x"', hundred("{}"))]
    text = SWEEP.replace("iodepth = [1, 4, 16]", "\n".join(f"{k} = {v}" for k, v in axes))
    refused(tmp_path, text, "sweep: 2000000000000 points; at most 10000")


SNAPSHOT_TOPOLOGY = TOPOLOGY + '''
[profile.volume_sets.snap]
size = "16M"
snapshots = "redo-log"
snapshot_depth = 2
[profile.volume_sets.plain]
size = "16M"
'''
SNAPSHOT_SWEEP = SWEEP.replace('target = "lun0"', 'target = "volumes"\nvolume_set = "snap"') \
    .replace('size = "64M"', 'size = "8M"').replace('"device.battery" = ["ok", "failed"]', "")
SNAPSHOT_EVENTS = '''
[[sweep.points]]
label = "snapshots"
iodepth = 16
events = [{ at_s = 5, command = "snapshot" }, { at_s = 20, command = "snapshot delete" }]
'''


def test_snapshot_events(tmp_path):
    """A snapshot event names no device: it acts on the volumes the point drives."""
    sweep = load(tmp_path, SNAPSHOT_SWEEP + SNAPSHOT_EVENTS, topology_text=SNAPSHOT_TOPOLOGY)
    events = sweep.points[-1].events
    assert [(e.at_s, e.command, e.is_snapshot) for e in events] == [
        (5.0, "snapshot", True), (20.0, "snapshot delete", True)]
    plan = sweep_plan.make(sweep, topology.load(sweep.topology_path))
    assert plan.event_devices == {"node1": {}, "node2": {}}


@pytest.mark.parametrize("sweep_text, needle, backend", [
    (SNAPSHOT_SWEEP + SNAPSHOT_EVENTS.replace('"snapshot delete"', '"snapshot all"'),
     "events[1].command = 'snapshot all': a snapshot event is \"snapshot\"", None),
    (SNAPSHOT_SWEEP + SNAPSHOT_EVENTS.replace("command", 'device = "disk0", command', 1),
     "events[0].device = 'disk0': a snapshot event acts on the volumes the point drives", None),
    (SNAPSHOT_SWEEP.replace('target = "volumes"\nvolume_set = "snap"', 'target = "disk0"')
     + SNAPSHOT_EVENTS, "snapshots are of workload volumes: needs workload.target = \"volumes\"",
     None),
    (SNAPSHOT_SWEEP.replace('"snap"', '"plain"') + SNAPSHOT_EVENTS,
     "the volumes it drives (profile.volume_sets.plain) take no snapshots", None),
    (SNAPSHOT_SWEEP + SNAPSHOT_EVENTS.replace('"snapshot delete"', '"snapshot"')
     .replace("}]", '}, { at_s = 25, command = "snapshot" }]'),
     "3 snapshot events, more than profile.volume_sets.snap.snapshot_depth = 2", None),
])
def test_bad_snapshot_events(tmp_path, sweep_text, needle, backend):
    refused(tmp_path, sweep_text, needle, backend, SNAPSHOT_TOPOLOGY)


# node1's two volumes mirrored (ftt 1): u1v1 on node1 and node2, u1v2 on node1 and node3
NODE_TOPOLOGY = '''
name = "lab"
[[defaults.devices]]
name = "disk"
plugin = "memory"
[defaults.devices.params]
size = "256M"
[nodes]
count = 4
[links]
mode = "full-mesh"
[profile.volumes]
per_unit = 2
size = "8M"
ftt = 1
nodes = ["node1"]
'''
NODE_SWEEP = SWEEP.replace('target = "lun0"', 'target = "volumes"\nnodes = ["node1"]') \
    .replace('size = "64M"', 'size = "8M"').replace('"device.battery" = ["ok", "failed"]', "")


def node_events(*events):
    items = ", ".join(f'{{ at_s = {at}, command = "{command}" }}' for at, command in events)
    return f'\n[[sweep.points]]\nlabel = "a node fails"\niodepth = 16\nevents = [{items}]\n'


def test_node_events(tmp_path):
    """A node event names a node, no device; it may fail a node holding
    components and bring it back."""
    sweep = load(tmp_path, NODE_SWEEP + node_events((5, "node node2 down"),
                                                    (15, "node  node2 up")),
                 "sim", NODE_TOPOLOGY)
    events = sweep.points[-1].events
    assert [(e.command, e.is_node, e.is_profile, e.node) for e in events] == [
        ("node node2 down", True, True, ("node2", True)),
        ("node node2 up", True, True, ("node2", False))]
    plan = sweep_plan.make(sweep, topology.load(sweep.topology_path))
    assert plan.event_devices == {"node1": {}}


@pytest.mark.parametrize("events, needle, backend", [
    ([(5, "node node2 sideways")], 'a node event is "node NODE down" or "node NODE up"', "sim"),
    ([(5, "node node9 down")], "event 'node node9 down': no node 'node9'", "sim"),
    ([(5, "node node1 down")], "node1 runs the sweep's workload (workload.nodes)", "sim"),
    ([(5, "node node2 up")], "event 'node node2 up': node2 is up already then", "sim"),
    ([(5, "node node2 down"), (6, "node node2 down")], "node2 is down already then", "sim"),
    # each mirror loses one copy: tolerated
    ([(5, "node node2 down"), (6, "node node3 down")], None, "sim"),
    ([(5, "node node2 down"), (6, "node node2 up"), (7, "node node3 down")], None, "sim"),
    # node4 holds nothing: down and up do no harm
    ([(5, "node node4 down"), (6, "node node2 down")], None, "sim"),
])
def test_bad_node_events(tmp_path, events, needle, backend):
    text = NODE_SWEEP + node_events(*events)
    if needle is None:
        sweep = load(tmp_path, text, backend, NODE_TOPOLOGY)
        sweep_plan.make(sweep, topology.load(sweep.topology_path))
    else:
        refused(tmp_path, text, needle, backend, NODE_TOPOLOGY)


def test_node_events_keep_each_array_within_what_it_tolerates(tmp_path):
    """RAID-5 3+1 over all four nodes: one piece down is tolerated, two are
    not; the home's own array does no I/O once the home is down."""
    topo = NODE_TOPOLOGY.replace("ftt = 1", 'method = "raid5"')
    refused(tmp_path, NODE_SWEEP + node_events((5, "node node2 down"), (6, "node node3 down")),
            "event 'node node3 down': node1's array over node1, node2, node3, node4 would lose "
            "2 components (node2, node3); it tolerates 1", "sim", topo)


def test_node_events_need_a_profile_target_and_the_simulator(tmp_path):
    refused(tmp_path, SWEEP + node_events((5, "node node2 down")),
            'a node event fails a node of the storage profile: needs workload.target = '
            '"volumes" or "share"')
    topo = NODE_TOPOLOGY.replace("ftt = 1", 'ftt = 1\nsnapshots = "redo-log"')
    text = NODE_SWEEP + node_events((5, "node node2 down"), (6, "snapshot"))
    refused(tmp_path, text, "event 'node node2 down': a lab sweep takes no node events (in a "
            "lab: `storlab node LAB NODE down|up`; the simulator models them: --backend sim)",
            "lab", topo)
    sweep = load(tmp_path, text, "sim", topo)
    sweep_plan.make(sweep, topology.load(sweep.topology_path), "sim")
