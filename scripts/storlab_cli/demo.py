"""storlab demo: one HDD model, run in the simulator (virtual time) and served
by the nbdkit plugin to fio (real time), printed side by side."""
import os
import subprocess
import tempfile

from . import build, deps, fio_results, paths
from .nbdkit import Nbdkit
from .errors import UserError

DEVICE = ["preset=sas10k-300g"]
JOBS = [
    ("4K random read, QD1", "hdd-randread-qd1.fio", "read"),
    ("4K random read, QD32", "hdd-randread-qd32.fio", "read"),
    ("4K random write, QD1, write cache off", "hdd-randwrite-qd1.fio", "write"),
]


def _run_simulator(job, out_path):
    with open(out_path, "w", encoding="utf-8") as out:
        result = subprocess.run([paths.simulator(), "hdd"] + DEVICE + [job],
                                stdout=out, stderr=subprocess.PIPE, text=True, check=False)
    if result.returncode != 0:
        raise UserError(f"storlab-sim failed: {result.stderr.strip()}")


def _run_fio(uri, job, out_path):
    result = subprocess.run(
        ["fio", "--ioengine=nbd", f"--uri={uri}", "--output-format=json",
         f"--output={out_path}", job],
        capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise UserError(f"fio failed on {os.path.basename(job)}: {result.stderr.strip()}")


def format_table(rows):
    header = (f"{'workload':40} {'':6} {'IOPS':>9} {'mean µs':>10} {'p99 µs':>10}")
    lines = [header, "-" * len(header)]
    for label, sim, lab in rows:
        for name, s in (("sim", sim), ("plugin", lab)):
            lines.append(f"{label if name == 'sim' else '':40} {name:6} "
                         f"{s['iops']:9.1f} {s['mean_us']:10.0f} {s['p99_us']:10.0f}")
        ratio = lab["iops"] / sim["iops"] if sim["iops"] else 0.0
        lines.append(f"{'':40} {'ratio':6} {ratio:9.3f}")
    return "\n".join(lines)


def run(args):
    if args:
        raise UserError(f"demo takes no arguments (got {' '.join(args)})")
    deps.ensure_packages()
    build.build()
    rows = []
    with tempfile.TemporaryDirectory(prefix="storlab-demo-") as workdir:
        print("storlab demo: the sas10k-300g HDD model, simulated and served in real time")
        server = Nbdkit(workdir, "hdd", DEVICE)
        try:
            for label, job_name, direction in JOBS:
                job = paths.job_file(job_name)
                sim_json = os.path.join(workdir, "sim.json")
                lab_json = os.path.join(workdir, "lab.json")
                print(f"  {label}: simulator ...", end="", flush=True)
                _run_simulator(job, sim_json)
                print(" plugin + fio ...", flush=True)
                _run_fio(server.uri, job, lab_json)
                rows.append((label,
                             fio_results.direction_summary(fio_results.load(sim_json), direction),
                             fio_results.direction_summary(fio_results.load(lab_json), direction)))
        finally:
            server.stop()
    print()
    print(format_table(rows))
    return 0
