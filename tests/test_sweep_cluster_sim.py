"""Profile targets ("volumes", "share") in the simulator: the cluster spec
sweep/cluster_spec.py writes for topologies/profile-raid.toml,
profile-hybrid.toml and profile-replicas.toml, then short `storlab sweep
--backend sim` runs of each through storlab-sim cluster (the real build:
STORLAB_BUILD_DIR), their figures, their determinism, and one-line
refusals of a bad [sim] table. No VMs."""
import csv
import json
import os
import subprocess

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(TESTS)
STORLAB = os.path.join(SOURCE, "scripts", "storlab")
TOPOLOGIES = os.path.join(SOURCE, "topologies")

from storlab_cli import catalog
from storlab_cli.commands import sweep as sweep_command
from storlab_cli.errors import UserError
from storlab_cli.schema import profile_common, sim_host_file, topology
from storlab_cli.sweep import cluster_spec, fio_jobfile

MIB = 1 << 20


def topo(name):
    return topology.load(os.path.join(TOPOLOGIES, f"{name}.toml"))


def workload(target, **keys):
    base = {"target": target, "units": 1, "workers": 1, "rw": "randwrite", "rwmixread": 50,
            "random_percent": 100, "bs": "4k", "iodepth": 4, "size": "4M", "volume_set": ""}
    return dict(base, **keys)


def spec_lines(t, laid_out, sim_host=None):
    return cluster_spec.text(t, laid_out, sim_host).splitlines()


def statements(lines, word):
    return [line for line in lines if line.split()[0] == word]


# ---- the spec ----------------------------------------------------------------------

def test_raid_profile_spec():
    t = topo("profile-raid")
    laid_out = cluster_spec.exports(t, workload("volumes", units=2, size="8M"),
                                    ["node1", "node2"])
    lines = spec_lines(t, laid_out)
    assert lines[0] == "storlab-cluster 1"
    # two units a node of two volumes each: two fio processes of two threads switching
    # on its cores, as in a lab
    assert statements(lines, "node") == ["node node1 host=bare-metal processes=2 threads=2",
                                         "node node2 host=bare-metal processes=2 threads=2"]
    # with the point's workload: the I/Os each worker keeps in flight, which a switch serves
    w = workload("volumes", units=2, size="8M", iodepth=16, volume_set="")
    with_workload = cluster_spec.text(t, cluster_spec.exports(t, w, ["node1", "node2"]),
                                      workload=w).splitlines()
    assert statements(with_workload, "node")[0] == \
        "node node1 host=bare-metal processes=2 threads=2 worker-depth=16"
    assert statements(lines, "link") == ["link node1 node2 preset=10gbe"]
    devices = statements(lines, "device")
    assert [d.split()[1:4] for d in devices] == [
        ["node1", "lun0", "raid"], ["node1", "lun1", "raid"], ["node1", "ssd0", "ssd"],
        ["node1", "ssd1", "ssd"], ["node2", "disk0", "hdd"]]
    assert "preset=vsa-raid10-8x-sas10k member-size=16M" in devices[0]
    # md's data offset where profile.raid_usable_bytes puts it (64 MiB members)
    offset = profile_common.md_data_offset_bytes(64 * MIB)
    assert statements(lines, "local") == [
        f"local node1 raid level=10 chunk=64k data-offset={offset} lun0 lun1 ssd0 ssd1",
        "local node2 disk disk0"]
    assert statements(lines, "volume") == [f"volume {node} u{u}v{v} 16M" for node in
                                           ("node1", "node2") for u in (1, 2) for v in (1, 2)]
    # one export per volume a worker drives, one after another
    assert statements(lines, "export") == [
        f"export {node} at={i * 16 * MIB} size={16 * MIB} volume=u{u}v{v}"
        for i, (node, u, v) in enumerate((n, u, v) for n in ("node1", "node2")
                                         for u in (1, 2) for v in (1, 2))]
    # statements in the reader's order: node, device, link, local, volume, export
    order = ["node", "device", "link", "local", "volume", "replica", "export"]
    words = [order.index(line.split()[0]) for line in lines[1:] if not line.startswith("#")]
    assert words == sorted(words)
    workers = cluster_spec.job_workers(laid_out)
    assert [(w.name, w.offset_bytes, w.size_bytes) for w in workers[:3]] == [
        ("node1-u1v1", 0, 8 * MIB), ("node1-u1v2", 16 * MIB, 8 * MIB),
        ("node1-u2v1", 32 * MIB, 8 * MIB)]
    # seeds as the lab's fio per (node, unit): 1000 x unit + fio processes started before
    assert [w.randseed for w in workers] == [1000, 1000, 2001, 2001, 1002, 1002, 2003, 2003]


def test_hybrid_profile_spec():
    t = topo("profile-hybrid")
    lines = spec_lines(t, cluster_spec.exports(t, workload("volumes"), ["node1"]))
    group = t.profile.disk_group
    assert statements(lines, "local") == [
        f"local node1 disk-group mode=hybrid cache=cache0 cache-size={group.cache_mib['node1']}M "
        "read-cache-percent=70 stripe-width=2 stripe=64k disk0 disk1"]
    assert statements(lines, "volume") == ["volume node1 u1v1 16M", "volume node1 u1v2 16M"]
    assert statements(lines, "export") == [
        f"export node1 at=0 size={16 * MIB} volume=u1v1",
        f"export node1 at={16 * MIB} size={16 * MIB} volume=u1v2"]
    assert statements(lines, "link") == []


def test_replicas_profile_spec_and_share_exports():
    t = topo("profile-replicas")
    laid_out = cluster_spec.exports(t, workload("share", units=2, workers=2),
                                    ["node1", "node2"])
    lines = spec_lines(t, laid_out)
    assert statements(lines, "local") == [f"local node{n} disk disk0" for n in (1, 2, 3)]
    assert all("timing=off" in d for d in statements(lines, "device"))
    assert len(statements(lines, "link")) == 3
    assert statements(lines, "replica") == ["replica node1 64M node1 node2 node3",
                                            "replica node2 64M node2 node3 node1"]
    # the lab creates the workload LVs before the replica copies
    assert lines.index("volume node3 u1v1 16M") < lines.index(statements(lines, "replica")[0])
    assert statements(lines, "export") == [f"export node1 at=0 size={64 * MIB} share=node1",
                                           f"export node2 at={64 * MIB} size={64 * MIB} "
                                           "share=node2"]
    # one export per node; its units' workers on regions of it, as the lab's files
    workers = cluster_spec.job_workers(laid_out)
    assert [(w.name, w.offset_bytes) for w in workers] == [
        ("node1-u1w1", 0), ("node1-u1w2", 4 * MIB), ("node1-u2w1", 8 * MIB),
        ("node1-u2w2", 12 * MIB), ("node2-u1w1", 64 * MIB), ("node2-u1w2", 68 * MIB),
        ("node2-u2w1", 72 * MIB), ("node2-u2w2", 76 * MIB)]
    job = fio_jobfile.measured(workload("share"), {"ramp_s": 1, "duration_s": 1,
                                                   "interval_s": 0}, workers, randseed=1000)
    assert fio_jobfile.units_of(job) == {("node1", 1), ("node1", 2), ("node2", 1),
                                         ("node2", 2)}
    assert "[node2-u2w2]\noffset=79691776\nsize=4194304\nrandseed=2003\n" in job


def test_sim_host_presets_by_name():
    t = topo("profile-replicas")
    laid_out = cluster_spec.exports(t, workload("share"), ["node1"])
    host = topology.SimHost("tcg", None, 2, 12.5).resolved()
    lines = spec_lines(t, laid_out, host)
    assert statements(lines, "node")[0] == "node node1 host=tcg cores=2 per-io-us=12.5"
    assert statements(lines, "link")[0] == "link node1 node2 preset=tcg-udp"
    lines = spec_lines(t, laid_out, topology.SimHost("tcg", "25gbe").resolved("bare-metal"))
    assert statements(lines, "node")[0] == "node node1 host=bare-metal"
    assert statements(lines, "link")[0] == "link node1 node2 preset=25gbe"


def write_topology(tmp_path, devices, extra=""):
    path = tmp_path / "t.toml"
    path.write_text('name = "t"\n' + devices + "[nodes]\ncount = 1\n" + extra
                    + '[profile.volumes]\nsize = "8M"\n')
    return topology.load(str(path))


def test_plugin_files_are_left_out_and_what_cannot_be_modelled_refused(tmp_path):
    disk = ('[[defaults.devices]]\nname = "disk"\nplugin = "hdd"\n'
            '[defaults.devices.params]\nsize = "64M"\nfile = "/var/tmp/disk.img"\n')
    memory = '[[defaults.devices]]\nname = "mem"\nplugin = "memory"\nparams = { size = "64M" }\n'
    # a memory disk outside the stack is never reached: left out
    t = write_topology(tmp_path, disk + memory)
    lines = spec_lines(t, cluster_spec.exports(t, workload("volumes"), ["node1"]))
    assert statements(lines, "device") == ["device node1 disk0 hdd size=64M"]
    # ... the one the node's volumes live on must be modelled
    t = write_topology(tmp_path, memory + disk)
    with pytest.raises(UserError, match="node node1's mem0: plugin = 'memory' has no "
                       "simulator model") as e:
        cluster_spec.text(t, cluster_spec.exports(t, workload("volumes"), ["node1"]))
    assert "\n" not in str(e.value)
    t = write_topology(tmp_path, disk)
    t.nodes[0].devices[0].params["preset"] = "a#b"
    with pytest.raises(UserError, match=r"node node1's disk0: params.preset = 'a#b': the "
                       "simulator's cluster spec cannot carry a value with blanks or '#'"):
        cluster_spec.text(t, cluster_spec.exports(t, workload("volumes"), ["node1"]))


def test_a_prediction_of_a_lab_runs_on_the_labs_hosts():
    """A TCG lab's guests are tcg hosts on udp links, sharing this
    machine's cores, also when the topology's [sim] describes the cluster a
    study ran on (a lab at a study's scale is still this host's lab);
    --sim-host asks for another."""
    cores = len(os.sched_getaffinity(0))
    lab_own = topology.SimHost("tcg", "tcg-udp", None, None, cores)
    t = topo("profile-replicas")
    assert sweep_command._predict_host(None, t, "tcg") == lab_own
    assert sweep_command._predict_host(None, t, "kvm").host == "bare-metal"
    assert sweep_command._predict_host("bare-metal", t, "tcg") == \
        topology.SimHost("bare-metal", "10gbe")
    t.sim = topology.SimHost("bare-metal", "1gbe")              # the study's cluster
    assert sweep_command._predict_host(None, t, "tcg") == lab_own
    assert sweep_command._predict_host(None, t, "kvm") == topology.SimHost("bare-metal", "1gbe")


def test_one_host_for_every_node():
    t = topo("profile-replicas")
    laid_out = cluster_spec.exports(t, workload("share"), ["node1"])
    lines = spec_lines(t, laid_out, topology.SimHost("tcg").resolved(None, 2))
    assert lines[2] == "pool cores=2" and statements(lines, "pool") == ["pool cores=2"]
    assert statements(spec_lines(t, laid_out, topology.SimHost().resolved()), "pool") == []


# ---- end to end: storlab sweep --backend sim ------------------------------------

def storlab(*args, timeout=600):
    return subprocess.run(["/usr/bin/python3", STORLAB, *args], capture_output=True,
                          text=True, check=False, timeout=timeout)


def run_sweep(tmp_path, topology_file, workload_lines, out="results", *options,
              sweep_lines="iodepth = [1, 4]"):
    sweep_file = tmp_path / "sweep.toml"
    sweep_file.write_text(f'name = "cluster-sim"\nbackend = "sim"\n'
                          f'topology = "{topology_file}"\n[workload]\n{workload_lines}\n'
                          "[phases]\nramp_s = 1\nduration_s = 2\ninterval_s = 1\n"
                          f"[sweep]\n{sweep_lines}\n")
    result = storlab("sweep", str(sweep_file), "--out", str(tmp_path / out), *options)
    assert result.returncode == 0, result.stderr
    return tmp_path / out


def rows(out):
    with open(out / "points.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def layers(point_dir):
    doc = json.loads((point_dir / "sim-cluster.json").read_text())
    return {layer["name"]: layer for layer in doc["storlab"]["device"]["model"]["layers"]}


def written(layer):
    return layer["ops"]["write"]["bytes"]


def test_volumes_on_md_raid10(tmp_path):
    out = run_sweep(tmp_path, os.path.join(TOPOLOGIES, "profile-raid.toml"),
                    'target = "volumes"\nnodes = ["node1"]\nunits = 2\nrw = "randrw"\n'
                    'bs = "4k"\nsize = "8M"')
    for row in rows(out):
        assert float(row["iops"]) > 0 and float(row["write_iops"]) > 0
        assert row["units_run"] == "2" and float(row["dev_iops"]) > 0
        # the RAID LUNs' figures: their members (from the controller's own
        # counters: the reads its cache missed) and its cache
        assert float(row["member_iops"]) > 0 and float(row["dirty_mb"]) > 0
        assert 0 < float(row["cache_hit_pct"]) <= 100
    for point in ("000", "001"):
        by_name = layers(out / "points" / point)
        guest = sum(written(x) for name, x in by_name.items()
                    if name.startswith("node1/front/"))
        devices = sum(written(by_name[f"node1/{d}"]) for d in ("lun0", "lun1", "ssd0", "ssd1"))
        assert guest > 0 and devices == 2 * guest          # RAID 10: two copies of each write
        assert written(by_name["node2/disk0"]) == 0       # node2 runs no workload


def test_volumes_on_a_hybrid_disk_group(tmp_path):
    out = run_sweep(tmp_path, os.path.join(TOPOLOGIES, "profile-hybrid.toml"),
                    'target = "volumes"\nrw = "randrw"\nbs = "4k"\nsize = "8M"')
    for row in rows(out):
        assert float(row["iops"]) > 0 and float(row["read_iops"]) > 0
        assert float(row["dev_iops"]) > 0
    for row in rows(out):
        # the cluster's own layers: the disk group's caches, the host, how it started
        assert 0 <= float(row["stack_cache_hit_pct"]) <= 100
        assert 0 <= float(row["write_buffer_fill_pct"]) <= 100
        assert float(row["destage_mb_s"]) >= 0 and 0 < float(row["cpu_util_pct"]) <= 100
        assert row["link_util_pct"] == "" and row["start_state"] == "warm"
    by_name = layers(out / "points" / "000")
    assert written(by_name["node1/cache0"]) > 0            # the write buffer takes the writes
    job = (out / "points" / "000" / "job-cluster.fio").read_text()
    assert "[node1-u1v1]" in job and "[node1-u1v2]" in job


SHARE = ('target = "share"\nnodes = ["node1", "node2"]\nworkers = 2\nrw = "randwrite"\n'
         'bs = "4k"\nsize = "4M"')


def figures(doc):
    """A sim-cluster.json without what the wall clock decides."""
    if isinstance(doc, dict):
        return {k: figures(v) for k, v in doc.items()
                if "wall" not in k and k not in ("timestamp", "timestamp_ms", "time")}
    if isinstance(doc, list):
        return [figures(v) for v in doc]
    return doc


def test_shares_write_every_copy_and_run_the_same_twice(tmp_path):
    """... and two points side by side (--jobs 2) give what one at a time gives."""
    path = os.path.join(TOPOLOGIES, "profile-replicas.toml")
    out = run_sweep(tmp_path, path, SHARE, "results", "--jobs", "2")
    copies = topo("profile-replicas").profile.replicas.ftt + 1
    for row in rows(out):
        assert float(row["iops"]) > 0 and row["units_run"] == "2"
        assert float(row["link_util_pct"]) > 0 and row["stack_cache_hit_pct"] == ""
    for point in ("000", "001"):
        by_name = layers(out / "points" / point)
        guest = {name.rsplit("/", 1)[-1]: written(x) for name, x in by_name.items()
                 if "/front/share/" in name}
        assert set(guest) == {"node1", "node2"} and all(guest.values())
        # every holder's disk got the writes of every share it holds a copy of
        for node in ("node1", "node2", "node3"):
            assert written(by_name[f"{node}/disk0"]) == guest["node1"] + guest["node2"]
        disks = sum(written(by_name[f"node{n}/disk0"]) for n in (1, 2, 3))
        assert disks == copies * sum(guest.values())
    again = run_sweep(tmp_path, path, SHARE, "again", "--jobs", "1")
    for point in ("000", "001"):
        first, second = (json.loads((o / "points" / point / "sim-cluster.json").read_text())
                         for o in (out, again))
        assert figures(first) == figures(second)
    assert (out / "points.csv").read_text() == (again / "points.csv").read_text()


def test_sim_host_override_reaches_the_spec(tmp_path):
    out = run_sweep(tmp_path, os.path.join(TOPOLOGIES, "profile-replicas.toml"), SHARE,
                    "results", "--sim-host", "tcg", sweep_lines='size = ["4M"]')
    spec = (out / "points" / "000" / "cluster.spec").read_text().splitlines()
    # the active nodes run fio: how deep each worker keeps its I/Os
    assert "node node1 host=tcg worker-depth=1" in spec and "node node3 host=tcg" in spec
    assert "link node1 node2 preset=tcg-udp" in spec
    doc = json.loads((out / "points" / "000" / "sim-cluster.json").read_text())
    assert doc["storlab"]["device"]["model"]["start_state"] == "warm"


# ---- a host file: one machine's own figures -------------------------------------

def host_file(tmp_path, lines, name="this-host.toml"):
    path = tmp_path / name
    path.write_text("# what this machine's guests spend per I/O\n" + lines)
    return str(path)


def test_a_host_files_figures_reach_every_node_line(tmp_path):
    path = host_file(tmp_path, 'host = "tcg"\nbatch-ios-max = 2.5\nper-volume-read-us = 236\n'
                     "process-switch-us = 1042\n")
    t = topo("profile-replicas")
    laid_out = cluster_spec.exports(t, workload("share"), ["node1"])
    host = topology.SimHost(None, None, 2).resolved(path)
    assert (host.host, host.link, host.host_file) == ("tcg", "tcg-udp", path)
    lines = spec_lines(t, laid_out, host)
    assert f"# host file {path}" in lines
    # the file's figures after its preset, the [sim] table's own after them (they win)
    assert statements(lines, "node")[0] == ("node node1 host=tcg batch-ios-max=2.5 "
                                            "per-volume-read-us=236 process-switch-us=1042 "
                                            "cores=2")


def test_a_host_file_of_the_presets_own_figures_predicts_what_the_preset_does(tmp_path):
    """Every figure of the tcg preset, by the keys the catalog lists, written
    into a host file over bare-metal: the same prediction to the I/O (each
    key sets the figure the preset's table has); one figure raised: a
    different one."""
    tcg = catalog.load()["cluster"]["hosts"]["tcg"]
    figures = "".join(f"{key} = {value}\n" for key, value in tcg["costs_us"].items())
    same = host_file(tmp_path, f'host = "bare-metal"\ncores = {tcg["cores"]}\n'
                     f'batch-ios-max = {tcg["batch-ios-max"]}\n{figures}', "same.toml")
    slower = host_file(tmp_path, 'host = "tcg"\nper-device-io-us = 400\n', "slower.toml")
    text = open(os.path.join(TOPOLOGIES, "profile-replicas.toml"), encoding="utf-8").read()
    (tmp_path / "t.toml").write_text(text + '[sim]\nlink = "tcg-udp"\n')    # tcg's links
    runs = {name: rows(run_sweep(tmp_path, str(tmp_path / "t.toml"), SHARE, name,
                                 "--sim-host", host, sweep_lines='size = ["4M"]'))[0]
            for name, host in (("preset", "tcg"), ("same", same), ("slower", slower))}
    figures_of = {name: {k: v for k, v in row.items() if "iops" in k or "lat" in k}
                  for name, row in runs.items()}
    assert figures_of["same"] == figures_of["preset"] and figures_of["preset"]
    iops = {name: float(row["iops"]) for name, row in runs.items()}
    assert iops["slower"] < iops["preset"] * 0.9, iops


@pytest.mark.parametrize("lines, needle", [
    ('host = "tcg"\nper-volume-red-us = 236\n', "unknown key 'per-volume-red-us' (known: host, "
     "cores, batch-ios-max, busy-host-share, calibrated-utilisation, device-inflight-max, "
     "cpu-time-scale, per-io-us, "),
    ('host = "tcg"\nper-md-io-us = -3\n', "per-md-io-us = -3: must be a number of "
     "microseconds, at least 0"),
    ('host = "tcg"\nbatch-ios-max = 0.5\n', "batch-ios-max = 0.5: must be a number from 1 to 1e+06"),
    ('host = "tcg"\nbusy-host-share = 0\n', "busy-host-share = 0: must be a number from 0.05 to 4"),
    ('host = "tcg"\nbusy-host-share = true\n', "busy-host-share = true: must be a number from"),
    ('host = "tcg"\ncores = 1.5\n', "cores = 1.5: must be an integer"),
    ('host = "tcg"\ndevice-inflight-max = 2.5\n', "device-inflight-max = 2.5: must be an integer"),
    ('host = "tcg"\ndevice-inflight-max = 70000\n', "device-inflight-max = 70000: must be 0..65536"),
    ('per-md-io-us = 3\n', "host: missing (the preset these figures refine: bare-metal, tcg)"),
    ('host = "kvm"\n', "host = 'kvm': unknown host preset (known: bare-metal, tcg)"),
    ('host = "tcg"\nper-md-io-us = "3"\n', "per-md-io-us = '3': must be a number"),
    ("host = \n", "not valid TOML"),
])
def test_a_bad_host_file_is_one_line_naming_it(tmp_path, lines, needle):
    path = host_file(tmp_path, lines)
    (tmp_path / "sweep.toml").write_text(f'name = "h"\nbackend = "sim"\ntopology = '
                                         f'"{os.path.join(TOPOLOGIES, "profile-replicas.toml")}"\n'
                                         f"[workload]\n{SHARE}\n")
    for how in ("option", "table"):
        if how == "option":
            result = storlab("sweep", str(tmp_path / "sweep.toml"), "--sim-host", path,
                             "--out", str(tmp_path / "out"), timeout=120)
        else:
            text = open(os.path.join(TOPOLOGIES, "profile-replicas.toml"), encoding="utf-8").read()
            (tmp_path / "t.toml").write_text(text + '[sim]\nhost = "this-host.toml"\n')
            (tmp_path / "sweep.toml").write_text(f'name = "h"\nbackend = "sim"\n'
                                                 f'topology = "t.toml"\n[workload]\n{SHARE}\n')
            result = storlab("sweep", str(tmp_path / "sweep.toml"), "--out",
                             str(tmp_path / "out"), timeout=120)
        assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
        lines_out = result.stderr.strip().splitlines()
        assert len(lines_out) == 1 and path in lines_out[0] and needle in lines_out[0], \
            (how, result.stderr)
        assert not (tmp_path / "out").exists()


def test_benches_set_their_figures_in_one_host_file(tmp_path):
    """tcg_calibrate.py's figures and tcg_crowding.py's crowded wake-up in
    one file, in either order: each sets its keys and leaves the other's;
    a broken file is refused and left as it was."""
    path = str(tmp_path / "this-host.toml")
    sim_host_file.update(path, {"per-device-io-us": 98, "batch-ios-max": 2.5}, "calibrated")
    sim_host_file.update(path, {"crowded-wake-us": 610}, "crowding")
    sim_host_file.update(path, {"per-device-io-us": 120}, "calibrated again")
    preset, words = sim_host_file.load(path)
    assert preset == "tcg"
    assert words == ("per-device-io-us=120", "batch-ios-max=2.5", "crowded-wake-us=610")
    text = open(path, encoding="utf-8").read()
    assert "# calibrated\n" in text and "# crowding\n" in text and "# calibrated again\n" in text
    (tmp_path / "broken.toml").write_text('host = "tcg"\nper-dvice-io-us = 1\n')
    with pytest.raises(UserError, match="unknown key 'per-dvice-io-us'"):
        sim_host_file.update(str(tmp_path / "broken.toml"), {"crowded-wake-us": 1}, "x")
    assert (tmp_path / "broken.toml").read_text() == 'host = "tcg"\nper-dvice-io-us = 1\n'
    assert sorted(os.listdir(tmp_path)) == ["broken.toml", "this-host.toml"]


def test_a_missing_host_file_is_one_line(tmp_path):
    missing = str(tmp_path / "nowhere.toml")
    result = storlab("sweep", "x.toml", "--sim-host", missing, timeout=120)
    lines = result.stderr.strip().splitlines()
    assert result.returncode != 0 and len(lines) == 1 and f"{missing}: cannot read" in lines[0], \
        result.stderr


# ---- refusals ------------------------------------------------------------------

@pytest.mark.parametrize("table, needle", [
    ('[sim]\nhots = "tcg"\n', "sim: unknown key 'hots' (known: host, link, cores, per_io_us, host_cores)"),
    ('[sim]\nhost = "kvm"\n', "sim.host = 'kvm': unknown host preset (known: bare-metal, tcg; "
     "or a host file, NAME.toml)"),
    # beyond what the simulator takes: its own refusal, naming the spec's line and word
    ('[sim]\ncores = 100000\n', "storlab-sim cluster (point 0): storlab-sim: "),
])
def test_a_bad_sim_table_is_one_line(tmp_path, table, needle):
    text = open(os.path.join(TOPOLOGIES, "profile-replicas.toml"), encoding="utf-8").read()
    (tmp_path / "t.toml").write_text(text + table)
    sweep_file = tmp_path / "sweep.toml"
    sweep_file.write_text(f'name = "bad"\ntopology = "t.toml"\n[workload]\n{SHARE}\n')
    result = storlab("sweep", str(sweep_file), "--backend", "sim", "--out",
                     str(tmp_path / "out"), timeout=120)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert needle in lines[-1], result.stderr
    if "storlab-sim:" in needle:         # after the sweep's progress lines: the error's one
        assert "cluster.spec:3: " in lines[-1] and "cores=100000" in lines[-1]
    else:                                # refused before anything starts
        assert len(lines) == 1, result.stderr


def test_an_unknown_sim_host_option_is_one_line(tmp_path):
    result = storlab("sweep", "x.toml", "--sim-host", "vax", timeout=120)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "--sim-host: invalid choice: 'vax'" in lines[0], result.stderr


# ---- storage policies ----------------------------------------------------------------

POLICY_TOPOLOGY = '''name = "policies"
[[defaults.devices]]
name = "disk"
plugin = "hdd"
[defaults.devices.params]
preset = "sas10k-300g"
size = "256M"
[nodes]
count = 4
[links]
mode = "full-mesh"
[profile.volumes]
units = 1
per_unit = 2
size = "8M"
'''


def device_ops(by_name, op):
    return sum(layer["ops"][op]["count"] for name, layer in by_name.items()
               if name.endswith("/disk0"))


@pytest.mark.parametrize("policy, writes_per_write, reads_per_write, holders_used", [
    ("ftt = 1\n", 2, 0, 3),                     # two copies: u1v1 on 1 and 2, u1v2 on 1 and 3
    ("ftt = 2\n", 3, 0, 4),                     # three copies (on 5 nodes: 2 x 2 + 1)
    ('method = "raid5"\n', 2, 2, 4),            # read-modify-write: data and parity
    ("ftt = 1\nchecksum = true\n", 2, 0, 3),    # tags wait for dm-integrity's 10 s flush
])
def test_policy_fan_out_in_the_simulator(tmp_path, policy, writes_per_write, reads_per_write,
                                         holders_used):
    """node1's VMs write 4 KiB at random through each policy: the disks of
    the nodes holding components take writes_per_write writes per guest
    write (checksums: and a bitmap write per 16 MiB region and 10 s), RAID-5 reads
    old data and parity first, and the components sit where the profile
    placed them."""
    path = tmp_path / "policies.toml"
    nodes = 5 if "ftt = 2" in policy else 4
    path.write_text(POLICY_TOPOLOGY.replace("count = 4", f"count = {nodes}") + policy)
    out = run_sweep(tmp_path, str(path), 'target = "volumes"\nnodes = ["node1"]\nworkers = 2\n'
                    'rw = "randwrite"\nbs = "4k"\nsize = "8M"', sweep_lines="iodepth = [4]")
    by_name = layers(out / "points" / "000")
    guest = sum(layer["ops"]["write"]["count"] for name, layer in by_name.items()
                if name.startswith("node1/front/"))
    assert guest > 100
    writes, reads = device_ops(by_name, "write"), device_ops(by_name, "read")
    bitmap = 2 * 2 if "checksum" in policy else 0    # copies x volumes (a 3 s run: one epoch)
    assert writes_per_write * guest <= writes <= writes_per_write * guest + bitmap
    assert reads == reads_per_write * guest
    holders = [name for name, layer in by_name.items()
               if name.endswith("/disk0") and layer["ops"]["write"]["count"]]
    assert len(holders) == holders_used


def test_policies_refused_where_they_cannot_be_built(tmp_path):
    """Too few nodes for the policy: refused by the sweep and by `up` before
    anything runs, naming the key."""
    path = tmp_path / "policies.toml"
    path.write_text(POLICY_TOPOLOGY + "ftt = 2\n")
    sweep_file = tmp_path / "sweep.toml"
    sweep_file.write_text(f'name = "p"\nbackend = "sim"\ntopology = "{path}"\n[workload]\n'
                          'target = "volumes"\n')
    result = storlab("sweep", str(sweep_file), "--out", str(tmp_path / "out"))
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "profile.volumes.ftt = 2: mirror with ftt 2 needs 5 nodes with disks linked to " \
        "node1, which has 4" in result.stderr
    assert not (tmp_path / "out").exists()
    result = storlab("up", str(path))
    assert result.returncode != 0 and len(result.stderr.strip().splitlines()) == 1
    assert "profile.volumes.ftt = 2: mirror with ftt 2 needs 5 nodes" in result.stderr


def test_volume_sets_compared_side_by_side(tmp_path):
    """Two sets, a mirror and RAID-5, swept as workload.volume_set: each
    point drives its own set's volumes, and the disks show each policy's
    fan-out (mirror: 2 writes a guest write, none read; RAID-5: 2 and 2)."""
    path = tmp_path / "sets.toml"
    path.write_text(POLICY_TOPOLOGY.replace("[profile.volumes]", "[profile.volume_sets.mirror]")
                    + "ftt = 1\n[profile.volume_sets.ec]\nunits = 1\nper_unit = 2\n"
                    'size = "8M"\nmethod = "raid5"\n')
    out = run_sweep(tmp_path, str(path), 'target = "volumes"\nnodes = ["node1"]\nworkers = 2\n'
                    'rw = "randwrite"\nbs = "4k"\nsize = "8M"',
                    sweep_lines='volume_set = ["mirror", "ec"]')
    assert [r["volume_set"] for r in rows(out)] == ["mirror", "ec"]
    for point, reads_per_write in (("000", 0), ("001", 2)):
        by_name = layers(out / "points" / point)
        fronts = {name: layer["ops"]["write"]["count"] for name, layer in by_name.items()
                  if name.startswith("node1/front/")}
        prefix = "mirror" if point == "000" else "ec"
        assert fronts and all(f"/{prefix}-u1v" in name for name, n in fronts.items() if n)
        guest = sum(fronts.values())
        assert device_ops(by_name, "write") == 2 * guest
        assert device_ops(by_name, "read") == reads_per_write * guest
    bad = tmp_path / "bad.toml"
    bad.write_text(f'name = "b"\nbackend = "sim"\ntopology = "{path}"\n[workload]\n'
                   'target = "volumes"\nvolume_set = "raid6"\n')
    result = storlab("sweep", str(bad), "--out", str(tmp_path / "bad"))
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "volume_set = 'raid6': " in result.stderr and "no such volume set (sets: mirror, ec" \
        in result.stderr


@pytest.mark.parametrize("mechanism", ["redo-log", "redirect-on-write"])
def test_snapshot_events_in_the_simulator(tmp_path, mechanism):
    """A snapshot taken at 1 s of a 2 s run of random 4 KiB writes on
    mirrored volumes: the spec carries the set's snapshot keys, the event
    reaches the model, and the volume's record shows the cost: redo-log, an
    exception (and commits) per chunk first written after it; redirect-on-
    write, a copy of each shared 64 KiB block first written; both copies'
    disks take the base's writes."""
    path = tmp_path / "snaps.toml"
    path.write_text(POLICY_TOPOLOGY.replace('size = "8M"\n', f'size = "8M"\nftt = 1\n'
                                            f'snapshots = "{mechanism}"\n'))
    out = run_sweep(tmp_path, str(path), 'target = "volumes"\nnodes = ["node1"]\nworkers = 2\n'
                    'rw = "randwrite"\nbs = "4k"\nsize = "8M"', sweep_lines="iodepth = [4]\n"
                    '[[sweep.points]]\nlabel = "snapshot at 1 s"\niodepth = 4\n'
                    'events = [{ at_s = 1, command = "snapshot" }]')
    spec = (out / "points" / "001" / "cluster.spec").read_text()
    room = "12M" if mechanism == "redo-log" else "4M"      # 8M + 1/128 + 1M; 4 MiB extents
    assert f"volume node1 u1v1 8M method=mirror on=node1,node2 snapshots={mechanism} " \
        f"depth=3 room={room}" in spec
    for point, snapshots in (("000", 0), ("001", 1)):
        by_name = layers(out / "points" / point)
        volume = by_name["node1/volume/u1v1"]
        assert volume["layer"] == mechanism
        counters = volume["counters"]
        assert counters["snapshots"] == snapshots
        if not snapshots:
            assert counters["copy_reads"] == counters["exceptions"] == 0
        elif mechanism == "redo-log":
            assert counters["exceptions"] > 20 and counters["metadata_writes"] > 5
        else:
            assert counters["copy_reads"] > 10 and counters["copy_writes"] == counters["copy_reads"]
    events = json.loads((out / "points" / "001" / "sim-cluster.json").read_text())
    assert events["storlab"]["events"] == [{"t_ms": 1000.0, "command": "snapshot", "reply": "ok"}]
    # the point's marks, as a lab's (its timeline's figure draws them)
    assert (out / "points" / "001" / "events.csv").read_text().splitlines() == \
        ["t_s,what", "1,snapshot"]
    assert not (out / "points" / "000" / "events.csv").exists()


def test_stripe_width_spreads_a_volumes_misses_over_its_disks(tmp_path):
    """The shipped study (topologies/sweeps/stripe-width.toml): random reads
    beyond the read cache on node1's mirrored volume whose components are
    striped over 1, 2, 4 disks. The reads the cache misses go to the local
    copy's disks only, that many of them, and the IOPS grow with them (the
    same cache hits at every point)."""
    out = tmp_path / "stripes"
    result = storlab("sweep", os.path.join(TOPOLOGIES, "sweeps", "stripe-width.toml"),
                     "--backend", "sim", "--out", str(out))
    assert result.returncode == 0, result.stderr
    points = rows(out)
    assert [r["volume_set"] for r in points] == ["sw1", "sw2", "sw4"]
    for point, width in (("000", 1), ("001", 2), ("002", 4)):
        by_name = layers(out / "points" / point)
        spec = (out / "points" / point / "cluster.spec").read_text()
        assert "volume-group=per-device disk0 disk1 disk2 disk3" in spec
        read = {name: layer["ops"]["read"]["count"] for name, layer in by_name.items()
                if "/disk" in name and name.split("/")[1].startswith("disk")
                and name.split("/")[1] != "diskgroup"}
        busy = [name for name, n in read.items() if n > 100]
        assert len(busy) == width and all(name.startswith("node1/") for name in busy)
    iops = [float(r["iops"]) for r in points]
    hits = [float(r["stack_cache_hit_pct"]) for r in points]
    assert max(hits) - min(hits) < 1
    assert iops[1] > 1.6 * iops[0] and iops[2] > 1.4 * iops[1]


def test_dedup_and_compression_in_the_simulator(tmp_path):
    """topologies/dedup-allflash-4node.toml (its disk groups deduplicate and
    compress at destage), random writes with all-unique data and with every
    block a duplicate, both compressible by 60 %: each node's data
    reduction layer counts the blocks the write buffer destaged, stores
    none of the duplicates and the new ones in 2 KiB each, and takes CPU
    for them. A lab refuses the topology in one line."""
    topology_file = os.path.join(TOPOLOGIES, "dedup-allflash-4node.toml")
    out = run_sweep(tmp_path, topology_file,
                    'target = "volumes"\nnodes = ["node1"]\nrw = "randwrite"\nbs = "4k"\n'
                    'size = "2G"\niodepth = 4\nbuffer_compress_percentage = 60',
                    sweep_lines="dedupe_percentage = [0, 100]")
    for point, duplicates in (("000", False), ("001", True)):
        spec = (out / "points" / point / "cluster.spec").read_text()
        assert (f"space-efficiency=dedup-compression dedupe-percent={100 if duplicates else 0} "
                "compress-percent=60") in spec
        reduction = layers(out / "points" / point)["node1/data-reduction"]
        assert reduction["layer"] == "data-reduction"
        counters = reduction["counters"]
        assert counters["blocks_written"] > 1000 and counters["cpu_ns"] > 0
        row = rows(out)[int(point)]
        if duplicates:
            assert float(row["data_reduction_pct"]) == 100
            assert counters["duplicates"] == counters["blocks_written"]
            assert counters["blocks_stored"] == counters["stored_bytes"] == 0
        else:
            assert 49 < float(row["data_reduction_pct"]) <= 50      # 2 KiB of 4, all nodes
            assert counters["duplicates"] == 0
            assert counters["stored_bytes"] == 2048 * counters["blocks_stored"] > 0
    result = storlab("up", topology_file)
    assert result.returncode != 0 and len(result.stderr.strip().splitlines()) == 1
    assert "space_efficiency = 'dedup-compression': a lab cannot build it" in result.stderr


def test_node_events_in_the_simulator(tmp_path):
    """node1's mirrored volumes (ftt 1: u1v1's copies on node1 and node2),
    random writes; node2 goes down at 1 s and comes back at 2 s of a 3 s
    run: its disk takes no writes while it is down, then md's resync of the
    64 MiB bitmap chunk those writes touched (all 8 MiB of the copy, read
    from node1's); the events are in the run's record."""
    path = tmp_path / "failures.toml"
    path.write_text(POLICY_TOPOLOGY.replace("count = 4", "count = 3") + "ftt = 1\n")
    workload = ('target = "volumes"\nnodes = ["node1"]\nworkers = 2\nrw = "randwrite"\n'
                'bs = "4k"\nsize = "8M"')
    out = run_sweep(tmp_path, str(path), workload, sweep_lines="iodepth = [4]\n"
                    '[[sweep.points]]\nlabel = "node2 fails"\niodepth = 4\n'
                    'events = [{ at_s = 1, command = "node node2 down" }, '
                    '{ at_s = 2, command = "node node2 up" }]')
    steady, failing = layers(out / "points" / "000"), layers(out / "points" / "001")
    doc = json.loads((out / "points" / "001" / "sim-cluster.json").read_text())
    assert [e["command"] for e in doc["storlab"]["events"]] == ["node node2 down",
                                                                "node node2 up"]
    # writes node2 missed (a third of the run) and its resync's 8 MiB
    guest = failing["node1/front/volume/u1v1"]["ops"]["write"]["count"]
    resync_blocks = (8 << 20) // (64 << 10)            # md's 64 KiB resync blocks
    assert failing["node1/disk0"]["ops"]["read"]["count"] == resync_blocks
    assert failing["node1/disk0"]["ops"]["read"]["bytes"] == 8 << 20
    assert failing["node2/disk0"]["ops"]["write"]["count"] - resync_blocks < 0.8 * guest
    assert steady["node2/disk0"]["ops"]["write"]["bytes"] < 8 << 20
    assert steady["node1/disk0"]["ops"]["read"]["count"] == 0


def test_a_host_file_takes_the_release_path_of_a_labs_devices(tmp_path):
    """The calibration's timed disk gives device-release-us (a lab plugin's
    reply past its model's completion); the library's keys are the file's."""
    path = str(tmp_path / "this-host.toml")
    sim_host_file.update(path, {"device-release-us": 31, "hypervisor-per-device-io-us": 130},
                         "calibrated")
    assert sim_host_file.load(path) == ("tcg", ("device-release-us=31",
                                                "hypervisor-per-device-io-us=130"))
