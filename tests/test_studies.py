"""pytest: `storlab studies` lists every shipped study from its [study]
table; every seed scenario has one; a bad [study] table is refused in one
line naming the key."""
import json
import os
import re
import subprocess
import tomllib

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(TESTS)
STORLAB = os.path.join(SOURCE, "scripts", "storlab")
STUDIES = os.path.join(SOURCE, "topologies", "studies")


def storlab(*args):
    return subprocess.run(["/usr/bin/python3", STORLAB, *args], capture_output=True, text=True,
                          check=False, timeout=120)


def test_every_study_file_is_listed_with_what_it_reproduces():
    result = storlab("studies", "--json")
    assert result.returncode == 0, result.stderr
    listed = json.loads(result.stdout)
    files = sorted(f for f in os.listdir(STUDIES) if f.endswith(".toml"))
    assert sorted(os.path.basename(s["file"]) for s in listed) == files
    for study in listed:
        # a study's name is its file's
        assert study["file"] == f"topologies/studies/{study['name']}.toml"
        assert study["points"] >= 1 and study["figure"]
        assert study["sim_wall_s"] is None or study["sim_wall_s"] >= 1
        # what its lab needs of a host: only where a lab can run it
        assert (study["lab_memory_mib"] is None) == (study["lab_scale"] is None)
        assert (study["lab_disk_mib"] is None) == (study["lab_scale"] is None)
    # the all-flash labs keep their device data on disk (device_data = "disk")
    by_name = {s["name"]: s for s in listed}
    assert by_name["allflash-write-buffer"]["lab_disk_mib"] > 8 * 1024
    assert by_name["hybrid-read-cache"]["lab_disk_mib"] == 0
    assert sorted({s["scenario"] for s in listed}) == [1, 2, 3, 4, 5, 6]
    # scenario 2's families, each a file of its own
    swept = {s["name"]: s["swept"] for s in listed if s["scenario"] == 2}
    assert swept["hybrid-cluster-size"] == ["topology.nodes.count"]
    assert swept["hybrid-outstanding-io"] == ["iodepth", "rw"]
    assert "topology.devices.disk.count" in swept["hybrid-hdds-per-disk-group"]
    assert "topology.profile.volumes.ftt" in swept["hybrid-ftt"]
    assert "topology.profile.disk_group.groups" in swept["hybrid-disk-groups"]


def test_every_study_runs_in_the_simulator_unless_told_otherwise():
    """`storlab sweep topologies/studies/NAME.toml` is the simulator at full
    size, as `storlab studies` says; a lab only with --backend lab."""
    for name in sorted(f for f in os.listdir(STUDIES) if f.endswith(".toml")):
        with open(os.path.join(STUDIES, name), "rb") as f:
            assert tomllib.load(f).get("backend") == "sim", name


def test_the_table_gives_scenario_points_wall_time_and_lab_scale():
    result = storlab("studies")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split()[:3] == ["study", "scenario", "figure"]
    row = next(line for line in lines if line.startswith("hybrid-cluster-size "))
    assert row.split()[1] == "2" and row.rstrip().endswith("no")   # 64 nodes: no lab
    # a lab's memory at its scale (lab/host_fit.py), and its disk where the
    # devices keep their data there: hybrid-ftt's 7 nodes at ftt 3 sweep it
    row = next(line for line in lines if line.startswith("hybrid-vms "))
    assert re.search(r"scale 1000, [0-9]+ GiB(, [0-9]+ (s|min))?$", row.rstrip())
    row = next(line for line in lines if line.startswith("hybrid-ftt "))
    assert re.search(r"scale 500, [0-9]+ GiB \+ [0-9]+ GiB on disk(, [0-9]+ (s|min))?$",
                     row.rstrip())
    row = next(line for line in lines if line.startswith("allflash-write-buffer "))
    assert re.search(r"scale 500, [0-9]+ GiB \+ [0-9]+ GiB on disk(, [0-9]+ (s|min))?$", row.rstrip())
    assert any(line.startswith("this host has ") for line in lines)


BAD_STUDIES = [
    ('scenario = 7\nfigure = "x"\nsim_wall_s = 5', "study.scenario = 7: must be 1..6"),
    ('scenario = 2\nsim_wall_s = 5', "study.figure: missing (a study says what it reproduces)"),
    ('scenario = 2\nfigure = "x"\nsim_wall_s = 5\ncolour = "red"', "study: unknown key 'colour' (known: scenario, figure, sim_wall_s, lab_scale, "
     "lab_wall_s, deviation)"),
    ('scenario = 2\nfigure = "x"\nsim_wall_s = "fast"', "study.sim_wall_s = 'fast': must be an integer"),
    ('scenario = 2\nfigure = "x"\nsim_wall_s = 5\nlab_scale = 0', "study.lab_scale = 0: must be 1..1000000"),
    ('scenario = 2\nfigure = "x"\nlab_wall_s = 0\nlab_scale = 10', "study.lab_wall_s = 0: must be 1..86400"),
    ('scenario = 2\nfigure = "x"\nlab_wall_s = 60',
     "study.lab_wall_s: a lab's wall time needs the lab_scale it ran at"),
]


@pytest.mark.parametrize("table,message", BAD_STUDIES)
def test_a_bad_study_table_is_one_line(tmp_path, table, message):
    sweep = tmp_path / "bad.toml"
    sweep.write_text(f'name = "bad"\nbackend = "sim"\ntopology = "vsa-raid"\n[study]\n{table}\n'
                     '[workload]\ntarget = "lun0"\n')
    result = storlab("sweep", str(sweep), "--out", str(tmp_path / "out"))
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [f"storlab sweep: {sweep}: {message}"]
    assert not (tmp_path / "out").exists()
