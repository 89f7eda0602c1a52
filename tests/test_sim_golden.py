"""pytest: storlab-sim's figures for a fixed set of job files stay what they
were (the simulator is deterministic): IOPS, bandwidth, mean latency and
every latency percentile per direction, and the replies to live events.
It keeps a refactoring honest: moving the library's files must not move a
figure.

Golden files: tests/golden/sim/CASE.json, written by
STORLAB_REGENERATE_GOLDEN=1 (only when a model change is meant to move
them: say so in the commit).
"""
import json
import os
import subprocess

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))

from storlab_cli import paths

GOLDEN = os.path.join(TESTS, "golden", "sim")
REGENERATE = os.environ.get("STORLAB_REGENERATE_GOLDEN") == "1"

# case -> (plugin, parameters, options, job file)
CASES = {
    "hdd-sas10k-randread-qd1": ("hdd", ["preset=sas10k-300g"], [], "randread-qd1.fio"),
    "hdd-sas10k-randread-qd32": ("hdd", ["preset=sas10k-300g"], [], "randread-qd32.fio"),
    "hdd-sata7200-randwrite-qd32-cache-on": ("hdd", ["preset=sata7200-2t", "write-cache=on"],
                                             [], "randwrite-qd32.fio"),
    "ssd-s3700-randread-qd1": ("ssd", ["preset=intel-s3700-400g"], [], "randread-qd1.fio"),
    "ssd-s3700-randwrite-qd32": ("ssd", ["preset=intel-s3700-400g"], [], "randwrite-qd32.fio"),
    "ssd-840evo-randwrite-qd32-fob": ("ssd", ["preset=samsung-840evo-120g", "precondition=fob"],
                                      [], "randwrite-qd32.fio"),
    "raid-vsa-randrw-qd32-battery-fails": (
        "raid", ["preset=vsa-raid10-8x-sas10k", "member-size=4G"],
        ["--event", "2:battery failed", "--event", "4:battery ok"], "randrw-8k-qd32.fio"),
    "raid5-randrw-qd32": ("raid", ["level=5", "members=5", "member-size=4G",
                                   "cache-policy=write-through"], [], "randrw-8k-qd32.fio"),
}


def figures(report):
    """What must not move: per job and direction, and the events' replies."""
    jobs = {}
    for job in report["jobs"]:
        per_direction = {}
        for direction in ("read", "write"):
            d = job[direction]
            clat = d["clat_ns"]
            per_direction[direction] = {
                "total_ios": d["total_ios"], "iops": d["iops"], "bw_bytes": d["bw_bytes"],
                "clat_mean_ns": clat["mean"], "clat_max_ns": clat["max"],
                "clat_percentiles_ns": clat.get("percentile", {}),
            }
        jobs[job["jobname"]] = per_direction
    events = [(e["t_ms"], e["command"], e["reply"])
              for e in report.get("storlab", {}).get("events", [])]
    return {"jobs": jobs, "events": events}


@pytest.mark.parametrize("case", sorted(CASES))
def test_simulator_figures_are_unchanged(case):
    simulator = paths.simulator()
    if not os.path.exists(simulator):
        pytest.skip(f"{simulator}: not built")
    plugin, params, options, job = CASES[case]
    result = subprocess.run([simulator, plugin, *params, *options, os.path.join(GOLDEN, job)],
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    got = figures(json.loads(result.stdout))
    path = os.path.join(GOLDEN, f"{case}.json")
    if REGENERATE:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(got, f, indent=1, sort_keys=True)
            f.write("\n")
    with open(path, encoding="utf-8") as f:
        expected = json.load(f)
    # JSON round trip: tuples become lists
    assert json.loads(json.dumps(got)) == expected, \
        f"{case}: storlab-sim's figures moved (STORLAB_REGENERATE_GOLDEN=1 rewrites them)"
