"""How fast this host runs a lab's TCG guests now, against a calibration
(issue 14): the cpu-time-scale a prediction of a lab measured now takes.

The reading is the calibration's own base run, repeated: fio 4 KiB random
reads at 8 outstanding on node1's bare (untimed) disk of the calibration
lab (scripts/bench/calibrate-tcg.toml), node1's vCPU per I/O in the run's
window, as tcg_calibrate.py measures it (gated_fio.py). The calibration's
figure for the same run is its volume's read plus a device I/O
(tcg_calibrate.py takes the first as bare's read less the second), read
from a prediction's own hosts (sim-cluster.json) so that no key of the
library is resolved here.

Why a reading of the storage path and not of the guest's CPU: measured on
2026-12-07 on the 2-core development VM (scripts/bench/cluster_validation.md),
profile-hybrid's 4 KiB random reads at 8 outstanding cost its vCPU 138-245
µs an I/O within 15 minutes (its device I/Os and read hits the same
throughout) and neither a shell loop nor dd's 512-byte copies in the same
guest followed it; the bare read, alternated with it, did (bare 115-159
µs, their ratio 1.12-1.24 in 22 of 24 pairs). It does not follow every
mechanism: the lab's write paths and raid's two fio processes kept their
cost while the bare read fell by a fifth.
"""
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

from storlab_cli.errors import UserError  # noqa: E402
from storlab_cli.schema import sim_host_file  # noqa: E402

import tcg_calibrate  # noqa: E402

READINGS = 2            # runs a reading takes (their median)
OP, DEPTH = "randread", 8
KEY = "cpu-time-scale"


class Reference:
    """The calibration lab, up while in use (taken down after if it was not
    up before): read() takes a reading."""

    def __enter__(self):
        self.was_up = subprocess.run(["/usr/bin/python3", tcg_calibrate.STORLAB, "status",
                                      tcg_calibrate.LAB], capture_output=True,
                                     check=False).returncode == 0
        if not self.was_up:
            tcg_calibrate.storlab("up", tcg_calibrate.TOPOLOGY, timeout=1200)
        self.device = tcg_calibrate.guest(
            "node1", tcg_calibrate.MECHANISMS["bare"][0]).strip().splitlines()[-1]
        return self

    def __exit__(self, *exc):
        if not self.was_up:
            tcg_calibrate.storlab("down", tcg_calibrate.LAB, timeout=600)

    def read(self):
        """node1's vCPU µs per bare read now: the median of READINGS runs."""
        return statistics.median(
            tcg_calibrate.run_point(self.device, OP, DEPTH).vcpu_us.get("node1", 0.0)
            for _ in range(READINGS))


def calibrated_us(sim_dir):
    """The bare read's vCPU µs the hosts of a prediction (its sim-cluster.json
    of any point) were calibrated with, before any scale; None without one."""
    for path in sorted(glob.glob(os.path.join(sim_dir, "points", "*", "sim-cluster.json"))):
        with open(path, encoding="utf-8") as f:
            hosts = json.load(f).get("storlab", {}).get("device", {}).get("model", {}) \
                .get("hosts", [])
        if hosts:
            h = hosts[0]
            return (h["per_volume_read_ns"] + h["per_device_read_ns"]) \
                / h.get("cpu_time_scale", 1.0) / 1e3
    return None


def scaled_host_file(host, scale, path):
    """A host file at path: host (a preset's name or a host file) with every
    cost times scale."""
    if sim_host_file.is_file_name(host):
        shutil.copyfile(host, path)
    else:
        with open(path, "w", encoding="utf-8") as f:
            f.write(f'host = "{host}"\n')
    try:
        sim_host_file.update(path, {KEY: round(scale, 3)},
                             "the host's speed beside the run (scripts/bench/host_speed.py)")
    except UserError as e:
        raise SystemExit(f"host_speed: {e}") from None
    return path
