"""Structural sweeps: a swept `topology.PATH` key makes each combination a
topology of its own (schema/topology_variants.py). Setting a key by its
path, devices by name; every combination validated before anything runs,
with one line naming the sweep key and value; and a simulator sweep over
failures to tolerate on topologies/profile-replicas.toml, whose device
writes follow (ftt + 1) x the guests' at every point."""
import csv
import json
import os
import subprocess
import tomllib

import pytest

from storlab_cli import paths
from storlab_cli.schema import topology, topology_variants

TESTS = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(TESTS)
STORLAB = os.path.join(SOURCE, "scripts", "storlab")
TOPOLOGIES = os.path.join(SOURCE, "topologies")
REPLICAS = os.path.join(TOPOLOGIES, "profile-replicas.toml")

SHARE = 'target = "share"\nnodes = ["node1"]\nrw = "randwrite"\nbs = "4k"\nsize = "4M"'


def storlab(*args, timeout=600):
    return subprocess.run(["/usr/bin/python3", STORLAB, *args], capture_output=True,
                          text=True, check=False, timeout=timeout)


def sweep_file(tmp_path, sweep_lines, topology_file=REPLICAS, workload=SHARE, extra=""):
    path = tmp_path / "sweep.toml"
    path.write_text(f'name = "structure"\nbackend = "sim"\ntopology = "{topology_file}"\n'
                    f"[workload]\n{workload}\n"
                    "[phases]\nramp_s = 1\nduration_s = 2\ninterval_s = 0\n"
                    f"[sweep]\n{sweep_lines}\n{extra}")
    return path


def rows(out):
    with open(out / "points.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def written_bytes(point_dir):
    doc = json.loads((point_dir / "sim-cluster.json").read_text())
    return {layer["name"]: layer["ops"]["write"]["bytes"]
            for layer in doc["storlab"]["device"]["model"]["layers"]}


# ---- a key by its path ----------------------------------------------------------

def base_data():
    with open(os.path.join(TOPOLOGIES, "profile-raid.toml"), "rb") as f:
        return tomllib.load(f)


def test_a_path_sets_a_key_and_names_devices():
    data = base_data()
    topology_variants.apply(data, "nodes.count", 3)
    topology_variants.apply(data, "profile.raid.chunk_kib", 128)
    topology_variants.apply(data, "profile.volumes.per_unit", 1)      # a key left out so far
    topology_variants.apply(data, "devices.ssd.params.size", "128M")   # defaults' and nodes'
    topology_variants.apply(data, "node.node2.devices.disk.params.size", "256M")
    assert data["nodes"]["count"] == 3 and data["profile"]["raid"]["chunk_kib"] == 128
    ssd = next(d for d in data["defaults"]["devices"] if d["name"] == "ssd")
    assert ssd["params"]["size"] == "128M"
    assert data["node"]["node2"]["devices"][0]["params"]["size"] == "256M"


@pytest.mark.parametrize("path, value, needle", [
    ("profile.nosuch.x", 1, "the topology has no 'profile.nosuch'"),
    ("devices.tape.count", 2, "no device table is named 'tape'"),
    ("node.node2.devices.tape.count", 2, "node.node2.devices has no table named 'tape' "
     "(names: disk)"),
    ("profile.raid", 1, "profile.raid is a table: set one of its keys"),
    ("nodes.count.x", 1, "nodes.count is a value, not a table"),
])
def test_a_path_that_goes_nowhere_says_where(path, value, needle):
    with pytest.raises(topology_variants.PathError, match="^" + needle.replace("(", r"\(")
                       .replace(")", r"\)")):
        topology_variants.apply(base_data(), path, value)


def test_a_variant_written_reads_back_as_the_same_topology(tmp_path):
    data = base_data()
    topology_variants.apply(data, "profile.raid.chunk_kib", 128)
    text = topology_variants.to_toml(data, "a comment\non two lines")
    assert tomllib.loads(text) == data
    path = tmp_path / "t.toml"
    path.write_text(text)
    assert topology.load(path).profile.raid.chunk_kib == 128


# ---- refused before anything runs ----------------------------------------------------

@pytest.mark.parametrize("sweep_lines, needle", [
    ('"topology.profile.replicas.ftt" = [1, 7]',
     "sweep.toml: sweep topology keys: "),
    ('"topology.profile.nosuch.ftt" = [1]',
     "sweep.toml: sweep.topology.profile.nosuch.ftt = 1: the topology has no 'profile.nosuch'"),
    ('"topology.profile.replicas" = [{ ftt = 1 }]',
     "sweep.toml: sweep.topology.profile.replicas[0] = {...}: must be a value, not a table"),
    ('"topology." = [1]', "sweep.toml: sweep.topology.: names no topology key"),
])
def test_a_bad_structure_is_one_line_before_anything_runs(tmp_path, sweep_lines, needle):
    out = tmp_path / "out"
    result = storlab("sweep", str(sweep_file(tmp_path, sweep_lines)), "--out", str(out),
                     timeout=120)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], result.stderr
    if "7" in sweep_lines:             # the topology's own rule, and which combination broke it
        assert "ftt = 7" in lines[0] and "profile.replicas.ftt" in lines[0]
    assert not (out / "points").exists()


# ---- a simulator sweep over the structure ------------------------------------------

def test_failures_to_tolerate_swept_in_the_simulator(tmp_path):
    """ftt 0, 1, 2 x two depths: three topologies, each point's device
    writes (ftt + 1) x its guest writes; points.csv and the manifest say
    the structure of every point; the parts run at once as one at a time."""
    out = tmp_path / "out"
    path = sweep_file(tmp_path, '"topology.profile.replicas.ftt" = [0, 1, 2]\niodepth = [1, 4]')
    result = storlab("sweep", str(path), "--out", str(out), "--jobs", "4")
    assert result.returncode == 0, result.stderr
    table = rows(out)
    assert [(r["topology.profile.replicas.ftt"], r["iodepth"]) for r in table] == [
        (f, d) for f in ("0", "1", "2") for d in ("1", "4")]
    for row in table:
        ftt = int(row["topology.profile.replicas.ftt"])
        layers = written_bytes(out / "points" / f"{int(row['point']):03d}")
        guest = layers["node1/front/share/node1"]
        disks = sum(v for k, v in layers.items() if k.endswith("/disk0"))
        assert guest > 0 and disks == (ftt + 1) * guest, (row, layers)
    manifest = json.loads((out / "manifest.json").read_text())
    structures = manifest["structures"]
    assert [s["params"] for s in structures] == [
        {"profile.replicas.ftt": f} for f in (0, 1, 2)]
    assert [s["points"] for s in structures] == [[0, 1], [2, 3], [4, 5]]
    for s in structures:
        written = topology.load(s["topology"])
        assert written.profile.replicas.ftt == s["params"]["profile.replicas.ftt"]
        assert written.name == "profile-replicas"
    # a remote copy puts a link's round trip in every write: ftt 0 is the fastest
    iops = {(r["topology.profile.replicas.ftt"], r["iodepth"]): float(r["iops"]) for r in table}
    assert iops["0", "1"] > 2 * iops["1", "1"]
    assert "topology.profile.replicas.ftt" in (out / "index.html").read_text()
    # the three topologies' points ran side by side (one progress line for
    # all, with --jobs 4); one at a time they give the same figures
    assert "sweep [" in result.stderr and "sweep [1/3" not in result.stderr
    serial = tmp_path / "serial"
    result = storlab("sweep", str(path), "--out", str(serial), "--jobs", "1")
    assert result.returncode == 0, result.stderr
    assert (serial / "points.csv").read_text() == (out / "points.csv").read_text()


# ---- nodes per point, and a cache marked on the working set per host ---------------------

HYBRID = os.path.join(TOPOLOGIES, "profile-hybrid.toml")
ALLFLASH = os.path.join(TOPOLOGIES, "dedup-allflash-4node.toml")
VOLUMES = 'target = "volumes"\nworkers = 2\nrw = "randread"\nbs = "4k"\niodepth = 4'
AXES = '[plot]\nx = "size"\nper_node = true\nx_per_host = true\nmark = "{mark}"\n'
MIB = 1 << 20


def axes_sweep(tmp_path, sweep_lines, mark="read-cache", topology_file=HYBRID):
    return sweep_file(tmp_path, sweep_lines, topology_file, VOLUMES, AXES.format(mark=mark))


def test_nodes_per_point_and_the_read_cache_marked_in_the_simulator(tmp_path):
    """topology.nodes.count 1, 2 x size 8M, 16M on profile-hybrid with a 30 %
    read cache (16.8 MiB of its 56 MiB cache): each point's nodes is its
    node count; IOPS per node; the working set per host 16 and 32 MiB
    (2 workers), the read cache marked 5 % of the way from one to the other."""
    out = tmp_path / "out"
    path = axes_sweep(tmp_path, 'size = ["8M", "16M"]\n"topology.nodes.count" = [1, 2]\n'
                      '"topology.profile.disk_group.read_cache_percent" = [30]')
    result = storlab("sweep", str(path), "--out", str(out))
    assert result.returncode == 0, result.stderr
    table = rows(out)
    assert [(r["size"], r["topology.nodes.count"], r["nodes"], r["units_run"]) for r in table] == [
        (s, n, n, n) for s in ("8M", "16M") for n in ("1", "2")]
    manifest = json.loads((out / "manifest.json").read_text())
    read_cache = 56 * MIB * 30 // 100
    assert manifest["plot"] == {"x": "size", "series": "topology.nodes.count", "per_node": True,
                                "x_per_host": True, "mark": "read-cache",
                                "mark_bytes": read_cache, "names": {}}
    script = (out / "plots" / "iops-latency.gp").read_text()
    assert "set xtics ('16 MiB' 0, '32 MiB' 1)" in script
    assert "set arrow from first 0.05, graph 0 to first 0.05, graph 1 nohead dt 2" in script
    assert "set label 'read cache 16.80 MiB per host' at first 0.05, graph 0.96" in script
    # the bars: each point's IOPS over its nodes
    bars = [float(line.split()[1]) for line in script.split("EOD\n")[1].splitlines()[:2]] \
        + [float(line.split()[1]) for line in script.split("EOD\n")[3].splitlines()[:2]]
    assert bars == pytest.approx([float(r["iops"]) / int(r["nodes"]) for r in
                                  (table[0], table[2], table[1], table[3])])
    assert "set ylabel 'IOPS per node'" in script


def test_the_mark_comes_from_the_topology_at_the_sweeps_scale(tmp_path):
    """A hybrid group's write buffer is the rest of its cache (here half); at
    scale 2 the run's 24 MiB cache (32 MiB less LVM's 8), times 2 in the
    study's sizes."""
    from storlab_cli.schema import sweep as sweep_schema
    from storlab_cli.sweep import parts as sweep_parts
    path = str(axes_sweep(tmp_path, 'size = ["8M"]\n'
                          '"topology.profile.disk_group.read_cache_percent" = [50]',
                          mark="write-buffer"))
    sweep = sweep_schema.load(path)
    assert sweep_parts.plot_mark_bytes(sweep, sweep_parts.split(sweep, "sim")) == 28 * MIB
    sweep = sweep_schema.load(path, scale_override=2)
    assert sweep_parts.plot_mark_bytes(sweep, sweep_parts.split(sweep, "sim")) == 2 * 12 * MIB


@pytest.mark.parametrize("topology_file, sweep_lines, mark, needle", [
    (REPLICAS, 'size = ["4M"]', "read-cache",
     "plot.mark = 'read-cache': " + REPLICAS + " has no disk group ([profile.disk_group]) "
     "whose cache it would mark"),
    (ALLFLASH, 'size = ["4M"]', "read-cache",
     "plot.mark = 'read-cache': " + ALLFLASH + "'s disk group is all-flash: it has no read "
     "cache (\"write-buffer\" marks its write buffer)"),
    (HYBRID, 'size = ["4M"]\n"topology.profile.disk_group.read_cache_percent" = [50, 70]',
     "read-cache", "plot.mark = 'read-cache': the nodes' read caches differ (28 MiB, "
     "39.20 MiB, between nodes or the sweep's topologies): no one size per host to mark"),
])
def test_a_mark_the_topology_cannot_give_is_one_line(tmp_path, topology_file, sweep_lines,
                                                     mark, needle):
    from storlab_cli.errors import UserError
    from storlab_cli.schema import sweep as sweep_schema
    from storlab_cli.sweep import parts as sweep_parts
    sweep = sweep_schema.load(str(axes_sweep(tmp_path, sweep_lines, mark, topology_file)))
    with pytest.raises(UserError) as error:
        sweep_parts.split(sweep, "sim")
    assert str(error.value) == f"{tmp_path / 'sweep.toml'}: {needle}"
    # an all-flash group's write buffer is its whole cache (4 GiB less LVM's 8 MiB)
    if topology_file == ALLFLASH:
        sweep.plot_mark = "write-buffer"
        assert sweep_parts.plot_mark_bytes(sweep, sweep_parts.split(sweep, "sim")) == \
            4096 * MIB - 8 * MIB


# ---- scale -------------------------------------------------------------------------

def test_scale_divides_capacities_and_caches_and_keeps_the_rest():
    """At scale 8 seed scenario 2's full-size topology: every capacity and
    cache the C library marks as one (the presets' too) and the profile's
    sizes divided; geometry and transfer units kept."""
    with open(os.path.join(TOPOLOGIES, "hybrid-4node-full.toml"), "rb") as f:
        data = tomllib.load(f)
    topology_variants.scale.topology_data(data, 8)
    cache, disk = data["defaults"]["devices"]
    assert cache["params"]["size"] == f"{400088457216 // 8 // (1 << 20)}M"
    assert "buffer-size" not in cache["params"]       # DRAM staging program units: kept
    assert "page-size" not in cache["params"]               # a unit of the NAND: kept
    assert disk["params"]["size"] == f"{900185481216 // 8 // (1 << 20)}M"
    assert "cache-size" not in disk["params"]         # segments of read-ahead: kept
    assert "read-ahead" not in disk["params"]
    assert data["profile"]["volumes"]["size"] == "1024M"    # 8G
    path_less = dict(data)
    assert topology.from_data(path_less, "scaled").nodes[0].devices[1].size_bytes == \
        900185481216 // 8 // (1 << 20) * (1 << 20)


def test_a_sweep_at_scale_runs_the_study_at_lab_size(tmp_path):
    """scale = 4 on profile-replicas (disks 256M, replicated volumes 64M,
    4M per worker; --scale overrides the file): the cluster the simulator
    runs has a quarter of each, the points keep the study's sizes, the
    manifest and the report say the scale."""
    out = tmp_path / "out"
    path = sweep_file(tmp_path, 'size = ["4M", "8M"]')
    path.write_text(path.read_text().replace('backend = "sim"\n', 'backend = "sim"\nscale = 2\n'))
    result = storlab("sweep", str(path), "--out", str(out), "--scale", "4")
    assert result.returncode == 0, result.stderr
    assert [r["size"] for r in rows(out)] == ["4M", "8M"]
    for point, mib in (("000", 1), ("001", 2)):
        spec = (out / "points" / point / "cluster.spec").read_text().splitlines()
        # 256M disks (their buffer kept), 64M replicas, 16M volumes: a quarter
        assert "device node1 disk0 hdd preset=sas10k-300g size=64M timing=off" in spec, spec
        assert "replica node1 16M node1 node2 node3" in spec and "volume node1 u1v1 4M" in spec
        job = (out / "points" / point / "job-cluster.fio").read_text()
        assert f"size={mib << 20}" in job.split(), job
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["scale"] == 4
    written = topology.load(manifest["structures"][0]["topology"])
    assert written.nodes[0].devices[0].size_bytes == 64 << 20
    assert written.profile.replicas.size_mib == 16
    assert "1/4: capacities, cache sizes and working sets divided by 4" in \
        (out / "index.html").read_text()


@pytest.mark.parametrize("where, needle", [
    ("--scale", "--scale 0: must be 1..1000000"),
    ("file", "sweep.toml: scale = 0: must be 1..1000000"),
    # a quarter of an 8 GiB SSD cache is fine; 1/1000000 of a 256M disk is not a disk
    ("huge", "sweep.toml: scale 1e+06: "),
])
def test_a_bad_scale_is_one_line(tmp_path, where, needle):
    path = sweep_file(tmp_path, 'iodepth = [1]')
    text = path.read_text()
    args = []
    if where == "--scale":
        args = ["--scale", "0"]
    elif where == "file":
        path.write_text(text.replace('backend = "sim"\n', 'backend = "sim"\nscale = 0\n'))
    else:
        path.write_text(text.replace('backend = "sim"\n', 'backend = "sim"\nscale = 1000000\n'))
    result = storlab("sweep", str(path), "--out", str(tmp_path / "out"), *args, timeout=120)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], result.stderr


# ---- the shipped studies -------------------------------------------------------------

STUDIES = os.path.join(TOPOLOGIES, "studies")


@pytest.mark.parametrize("name", sorted(os.listdir(STUDIES)))
def test_a_shipped_study_builds_every_topology_it_sweeps(name, monkeypatch):
    """Every combination of a shipped study is a topology the sweep can
    run (checked as `storlab sweep` does before anything starts), at full
    size and at its lab scale; it says what it reproduces. (Whether this
    host's memory holds the lab is the host's matter: test_host_fit.py.)"""
    from storlab_cli.lab import host_fit
    from storlab_cli.schema import sweep as sweep_schema
    from storlab_cli.sweep import parts as sweep_parts
    monkeypatch.setattr(host_fit, "check_before_sweep", lambda topo: None)
    sweep = sweep_schema.load(os.path.join(STUDIES, name))
    assert sweep.study is not None and 1 <= sweep.study.scenario <= 6 and sweep.study.figure
    parts = sweep_parts.split(sweep, sweep.backend)
    structures = {json.dumps(p.structure(), sort_keys=True) for p in sweep.points}
    assert len(parts) == len(structures) >= 1
    if sweep.study.lab_scale:                   # a study a lab can run, at lab size
        lab = sweep_schema.load(os.path.join(STUDIES, name), backend="lab")
        assert lab.scale == sweep.study.lab_scale
        sweep_parts.split(lab, "lab")
    for part in parts:
        for path, value in part.variant.structure.items():
            if path == "nodes.count":
                assert len(part.topo.nodes) == value


# ---- every device checked by the library before anything runs ---------------------

def one_device_topology(tmp_path, plugin, params):
    path = tmp_path / "one.toml"
    path.write_text('name = "one"\n[nodes]\ncount = 1\n[[defaults.devices]]\nname = "disk"\n'
                    f'plugin = "{plugin}"\n[defaults.devices.params]\n{params}\n')
    return path


def test_a_device_the_library_refuses_stops_sweep_and_up_before_anything_runs(tmp_path):
    """Each value in range, the pair not: read-ahead beyond the drive's
    buffer. The topology loads; the sweep and `up` ask the library about
    every device first and say which one, in one line."""
    topo = one_device_topology(tmp_path, "hdd",
                               'preset = "sas10k-300g"\nsize = "64M"\ncache-size = "1M"\n'
                               'read-ahead = "2M"')
    reason = (f"{topo}: node node1 device disk0 (hdd): read-ahead=2097152: must be <= "
              "cache-size=1048576 (read-ahead fills the cache)")
    path = sweep_file(tmp_path, "iodepth = [1, 2]", topology_file=topo,
                      workload='target = "disk0"\nrw = "randread"\nbs = "4k"\nsize = "4M"')
    result = storlab("sweep", str(path), "--out", str(tmp_path / "out"))
    assert (result.returncode, result.stderr.strip()) == (1, f"storlab sweep: {reason}")
    assert not (tmp_path / "out").exists()
    result = storlab("up", str(topo))
    assert (result.returncode, result.stderr.strip()) == (1, f"storlab up: {reason}")
    assert not os.path.exists("/run/storlab/one")


def test_a_scale_that_shrinks_a_device_below_its_smallest_is_refused(tmp_path):
    """A 400 GB SSD at scale 100000 would be 4 MiB, under the 16 MiB the
    model builds: the combination and the scale are named."""
    topo = one_device_topology(tmp_path, "ssd", 'preset = "intel-s3700-400g"')
    path = sweep_file(tmp_path, "iodepth = [1, 2]", topology_file=topo,
                      workload='target = "disk0"\nrw = "randread"\nbs = "4k"\nsize = "1M"')
    result = storlab("sweep", str(path), "--out", str(tmp_path / "out"), "--scale", "100000")
    assert result.returncode == 1
    line, = result.stderr.strip().splitlines()
    assert line.startswith(f"storlab sweep: {topo} with scale 100000: node node1 device "
                           "disk0 (ssd): size=") and "16" in line, line
    assert not (tmp_path / "out").exists()


def test_the_library_checks_device_lines_one_verdict_each():
    tool = paths.catalog_tool()
    lines = ["hdd preset=wd-xe-900g size=858M", "hdd cache-size=32k read-ahead=512k",
             "ssd rpm=7200", "tape size=1G", "hdd rpm"]
    result = subprocess.run([tool, "--check"], input="\n".join(lines) + "\n",
                            capture_output=True, text=True, check=False, timeout=30)
    assert result.returncode == 0, result.stderr
    verdicts = result.stdout.splitlines()
    assert verdicts[0] == "ok"
    assert verdicts[1] == "read-ahead=524288: must be <= cache-size=32768 " \
        "(read-ahead fills the cache)"
    assert verdicts[2].startswith("unknown key 'rpm' for ssd")
    assert verdicts[3] == "unknown kind 'tape' (known: hdd, ssd, raid)"
    assert verdicts[4] == "'rpm': not KEY=VALUE"
