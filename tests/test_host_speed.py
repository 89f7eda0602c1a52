"""host_speed.py without a lab: the calibration's bare read comes back out
of a prediction made on the host file the calibration wrote, and a host
file scaled to a slower host predicts every cost that much higher while
still reading back the same calibration."""
import json
import os
import subprocess
import sys

import pytest

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SOURCE, "scripts"))
sys.path.insert(0, os.path.join(SOURCE, "scripts", "bench"))

import host_speed  # noqa: E402
import tcg_calibrate  # noqa: E402
from storlab_cli.schema import sim_host_file  # noqa: E402

from test_tcg_calibrate import runs  # noqa: E402   the runs its figures are tested on


def predict(tmp_path, host, out):
    """A short simulator sweep of profile-raid's volumes on host: its directory."""
    sweep = tmp_path / "sweep.toml"
    sweep.write_text('name = "speed"\nbackend = "sim"\n'
                     f'topology = "{os.path.join(SOURCE, "topologies", "profile-raid.toml")}"\n'
                     '[workload]\ntarget = "volumes"\nnodes = ["node1"]\nbs = "4k"\n'
                     'size = "16M"\nrw = "randread"\niodepth = 8\n'
                     "[phases]\nramp_s = 1\nduration_s = 2\ninterval_s = 1\n")
    result = subprocess.run(["/usr/bin/python3", os.path.join(SOURCE, "scripts", "storlab"),
                             "sweep", str(sweep), "--out", str(tmp_path / out),
                             "--sim-host", host], capture_output=True, text=True, check=False,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    return tmp_path / out


def first_host(out):
    path = next((out / "points").glob("*/sim-cluster.json"))
    return json.loads(path.read_text())["storlab"]["device"]["model"]["hosts"][0]


def test_a_calibrations_bare_read_comes_back_and_survives_a_scale(tmp_path, monkeypatch):
    monkeypatch.setattr(tcg_calibrate, "switch_batching", lambda *_: None)
    calibrated = str(tmp_path / "host.toml")
    sim_host_file.update(calibrated, tcg_calibrate.host_file_figures([runs(timed=True)]), "test")
    as_calibrated = predict(tmp_path, calibrated, "as-calibrated")
    # the runs' bare disk read at 8 outstanding cost node1's vCPU 150 µs
    bare_us = runs(timed=True)["bare", host_speed.OP, host_speed.DEPTH].vcpu_us["node1"]
    assert host_speed.calibrated_us(as_calibrated) == pytest.approx(bare_us)

    slower = host_speed.scaled_host_file(calibrated, 1.5, str(tmp_path / "slower.toml"))
    assert sim_host_file.load(slower)[1][-1] == "cpu-time-scale=1.5"
    at_speed = predict(tmp_path, slower, "slower")
    assert host_speed.calibrated_us(at_speed) == pytest.approx(bare_us)
    before, after = first_host(as_calibrated), first_host(at_speed)
    assert after["cpu_time_scale"] == 1.5
    for key in ("per_volume_read_ns", "per_device_read_ns", "process_switch_ns", "idle_wake_ns"):
        assert after[key] == round(before[key] * 1.5), key


def test_a_preset_is_scaled_by_a_file_of_its_own(tmp_path):
    path = host_speed.scaled_host_file("tcg", 0.8, str(tmp_path / "tcg-at-speed.toml"))
    assert sim_host_file.load(path) == ("tcg", ("cpu-time-scale=0.8",))


def test_no_prediction_no_calibration(tmp_path):
    assert host_speed.calibrated_us(str(tmp_path)) is None
