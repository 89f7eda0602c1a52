"""tcg_crowding_check.py: the model against saved crowding runs (no lab).
Each row of the runs comes back, lab and model side by side, the model's
from the simulator under test; a file that is not a crowding run is one
line naming it."""
import json
import os
import subprocess

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHECK = os.path.join(SOURCE, "scripts", "bench", "tcg_crowding_check.py")


def check(*args):
    return subprocess.run(["/usr/bin/python3", CHECK, *args], capture_output=True, text=True,
                          timeout=120, check=False)


def row(busy, iops, vcpu_us, hypervisor_us, run=1):
    return {"pass": run, "busy": busy, "op": "randread", "threads": 1, "depth": 1, "iops": iops,
            "vcpu_us": vcpu_us, "hypervisor_us": hypervisor_us, "host_busy_cores": 1.0,
            "host_cache_ratio": None}


def test_each_row_lab_and_model(tmp_path):
    runs = tmp_path / "crowding.json"
    # two passes of one guest alone (the median 3000 IOPS), four busy in one
    runs.write_text(json.dumps({"when": "x", "cores": 2, "idle_vcpu_cores": 0.01, "rows": [
        row(1, 2000, 200, 100), row(1, 4000, 200, 100, run=2), row(4, 4000, 300, 150)]}))
    host = tmp_path / "host.toml"
    host.write_text('host = "tcg"\nper-io-us = 100\ncrowded-wake-us = 200\n')
    result = check(str(runs), str(host))
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.startswith("| randread")]
    assert len(lines) == 2, result.stdout
    alone = [cell.strip() for cell in lines[0].split("|")[1:-1]]
    crowded = [cell.strip() for cell in lines[1].split("|")[1:-1]]
    assert alone[:4] == ["randread", "1x1", "1", "3000"] and alone[6] == "1.00"
    assert crowded[:4] == ["randread", "1x1", "4", "4000"] and crowded[6] == "1.50"
    # four guests on two cores, each woken for every I/O: the model charges
    # the crowded wake-up, so its vCPU per I/O grows against its own alone
    assert int(alone[4]) > 0 and float(crowded[8]) > 1.0


def test_not_a_crowding_run_is_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"rows": [{"op": "randread"}]}')
    host = tmp_path / "host.toml"
    host.write_text('host = "tcg"\n')
    result = check(str(bad), str(host))
    lines = result.stderr.strip().splitlines()
    assert result.returncode != 0 and len(lines) == 1 and "not a tcg_crowding.py --out file" in lines[0]
    result = check(str(tmp_path / "missing.json"), str(host))
    assert result.returncode != 0 and "cannot read" in result.stderr
