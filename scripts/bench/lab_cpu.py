"""The lab's CPU on this host, read from /proc: the host's busy ticks, each
node's QEMU (all its threads, and apart its vCPU threads, "CPU 0/TCG" by
libvirt's debug-threads) and the lab's nbdkits. One sample (`sample`), a
thread that samples every SAMPLE_S while a lab runs (`CpuSampler`), and the
cores each part kept busy between two samples. Used by the benches that
compare a lab with the cluster model (cluster_validate.py, tcg_calibrate.py)."""
import glob
import json
import os
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

from storlab_cli.lab import state as lab_state  # noqa: E402

SAMPLE_S = 0.2


def _ticks(stat_path):
    """utime + stime of a process or thread, in clock ticks; None when gone."""
    try:
        with open(stat_path, encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None


def _vcpu_ticks(pid):
    """The ticks of a QEMU's vCPU threads ("CPU 0/TCG": libvirt's debug-threads)."""
    total = 0
    for task in glob.glob(f"/proc/{pid}/task/*"):
        try:
            with open(os.path.join(task, "comm"), encoding="ascii") as f:
                vcpu = f.read().startswith("CPU ")
        except OSError:
            continue
        total += (_ticks(os.path.join(task, "stat")) or 0) if vcpu else 0
    return total


def _pids(pattern, strip):
    """{name: pid} of the processes whose pid files match pattern."""
    out = {}
    for path in glob.glob(pattern):
        try:
            with open(path, encoding="ascii") as f:
                out[strip(os.path.basename(path))] = int(f.read().strip())
        except (OSError, ValueError):
            continue
    return out


def sample(lab):
    """The lab's CPU ticks now, on the monotonic clock the plugins' stats use."""
    prefix = f"{lab_state.DOMAIN_PREFIX}{lab}-"
    with open("/proc/stat", encoding="ascii") as f:
        ticks = [int(x) for x in f.readline().split()[1:]]
    qemu = _pids(f"/run/libvirt/qemu/{prefix}*.pid", lambda name: name[len(prefix):-len(".pid")])
    nbdkit = _pids(os.path.join(lab_state.RUN_BASE, lab, "*.pid"), str)
    return {"t_ns": time.monotonic_ns(),
            "host_busy": sum(ticks) - ticks[3] - ticks[4], "host_total": sum(ticks),
            "qemu": {node: _ticks(f"/proc/{pid}/stat") or 0 for node, pid in qemu.items()},
            "vcpu": {node: _vcpu_ticks(pid) for node, pid in qemu.items()},
            "nbdkit": sum(_ticks(f"/proc/{pid}/stat") or 0 for pid in nbdkit.values())}


class CpuSampler(threading.Thread):
    """Every SAMPLE_S, on the monotonic clock the plugins' stats use: the
    host's busy and total CPU ticks, each lab node's QEMU (all its threads,
    and its vCPU's) and the lab's nbdkits (summed)."""

    def __init__(self, lab):
        super().__init__(daemon=True)
        self.lab, self.samples, self.done = lab, [], threading.Event()

    def run(self):
        while not self.done.wait(SAMPLE_S):
            self.samples.append(sample(self.lab))

    def stop(self, path):
        self.done.set()
        self.join()
        earlier = load_cpu(path)["samples"] if os.path.exists(path) else []   # a resumed run
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"clk_tck": os.sysconf("SC_CLK_TCK"),
                       "wall_minus_monotonic_ns": time.time_ns() - time.monotonic_ns(),
                       "samples": earlier + self.samples}, f)


def load_cpu(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def between(a, b, clk_tck):
    """What the lab kept busy from sample a to sample b, in cores: each
    node's vCPU ("vcpu") and the rest of its QEMU ("qemu_io": NBD client,
    network), nbdkit, the host's busy and all its cores, over "seconds"."""
    seconds = (b["t_ns"] - a["t_ns"]) / 1e9
    ticks_per_s = clk_tck * seconds

    def per_node(key):
        return {n: (b[key][n] - a[key][n]) / ticks_per_s for n in b[key] if n in a[key]}

    vcpu, qemu = per_node("vcpu"), per_node("qemu")
    return {"seconds": seconds, "vcpu": vcpu,
            "qemu_io": {n: qemu[n] - vcpu.get(n, 0.0) for n in qemu},
            "nbdkit": (b["nbdkit"] - a["nbdkit"]) / ticks_per_s,
            "host_busy": (b["host_busy"] - a["host_busy"]) / ticks_per_s,
            "host_cores": (b["host_total"] - a["host_total"]) / ticks_per_s}


def cpu_in_window(cpu, t0_ns, t1_ns):
    """The lab's CPU between two monotonic times, in cores, as between()
    gives it, or None without samples there."""
    samples = cpu["samples"] if cpu else []
    if len(samples) < 2:
        return None
    a = min(samples, key=lambda s: abs(s["t_ns"] - t0_ns))
    b = min(samples, key=lambda s: abs(s["t_ns"] - t1_ns))
    if b["t_ns"] <= a["t_ns"] or abs(a["t_ns"] - t0_ns) > 2e9 or abs(b["t_ns"] - t1_ns) > 2e9:
        return None
    return between(a, b, cpu["clk_tck"])
