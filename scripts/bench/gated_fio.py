"""fio in a lab's guests as a lab sweep starts its units, measured as a lab
sweep's point is: what the calibration benches (tcg_calibrate.py,
tcg_crowding.py) run to learn what a guest's I/O costs the host's CPU.

Every fio thread waits at its node's start gate (the sweep's launcher,
storlab_cli/sweep/fio_launcher.py) until the host opens the gates. The
host's CPU (lab_cpu.py) and the devices' I/Os (their stats files, read on
the host) are taken in a window inside the run, from ramp_s after the gates
opened, window_s long. Outside it stay fio's start-up (a second or more of
vCPU under TCG, more on a crowded host), fio's end and the guest agent's
commands: counted in, as the benches did until 2026-11-29, they added 16 %
to a bare disk's read at 8 outstanding and 43 % at 1 on that day's machine.

The window's fio I/Os are its device I/Os over the run's device I/Os per
fio I/O (the I/Os of a direct 4 KiB random job map to device I/Os at a
steady ratio: 1 on a disk, 2 for a write to md RAID-1).

Beside every run the host's caches are read (host_probe.py): a run
measured in a slow spell of the host is run again once it reads steady,
up to host_probe.SPELL_RETRIES times; its Window says what the last one read."""
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

from storlab_cli.lab import state as lab_state  # noqa: E402
from storlab_cli.lab.each_node import each_node  # noqa: E402
from storlab_cli.live import stats_snapshot  # noqa: E402
from storlab_cli.sweep.fio_launcher import (LAUNCHER, gate_go_script,  # noqa: E402
                                            gate_state_script, inflight_script,
                                            job_files_script)

import host_probe  # noqa: E402
from lab_cpu import between, sample  # noqa: E402

STORLAB = os.path.join(ROOT, "scripts", "storlab")
GUEST_DIR = "/tmp/cal"
GATE = f"{GUEST_DIR}/gate"
GATE_WAIT_S = 300          # a fio slower than this to reach its gate is stuck
# A fio this long past its run's end is stuck: its requests were started
# in the guest and never answered (seen under TCG: the guest's virtio-scsi
# queue holds them while QEMU and the device servers have none in flight)
STUCK_S = 60


class Failed(Exception):
    """A guest command failed or gave no answer: the message says which."""


@dataclass
class FioJob:
    """One node's fio: processes fio processes at once, each of threads
    workers (fio threads) at depth outstanding, on device (a path)."""
    device: str
    op: str
    depth: int
    processes: int = 1
    threads: int = 1
    size: str = "64M"


@dataclass
class Window:
    """What a gated run did in its window: fio I/Os (all nodes'), the
    device I/Os by node, the lab's CPU (lab_cpu.between), and the host's
    caches over the window: their readings' mean over the lowest
    (host_probe.window_ratio; None: no reading)."""
    ios: float
    devices: dict
    used: dict
    cache_ratio: float | None = None
    # how late the devices' replies left past their model's completion, on
    # average over the window's releases (None: none waited)
    release_late_ns: float | None = None


def guest(lab, node, script, timeout=600):
    """script's output (sh, in node), or Failed naming the node."""
    try:
        result = subprocess.run(["/usr/bin/python3", STORLAB, "exec", lab, node, "--timeout",
                                 str(timeout), "--", "/bin/sh", "-c", script],
                                capture_output=True, text=True, timeout=timeout + 60, check=False)
    except subprocess.TimeoutExpired:
        raise Failed(f"{node}: no answer in {timeout + 60} s") from None
    if result.returncode != 0:
        raise Failed(f"{node}: {result.stderr.strip() or f'exit {result.returncode}'}")
    return result.stdout


@dataclass
class DeviceTotals:
    """What the lab's emulated devices have done so far: reads + writes by
    node, and their replies that waited for their time (releases) with
    how late those left, summed."""
    ios: dict
    releases: int
    release_late_ns: float

    def late_since(self, before):
        """The mean lateness of the releases since before, or None."""
        releases = self.releases - before.releases
        return (self.release_late_ns - before.release_late_ns) / releases if releases > 0 else None


def device_totals(devices):
    """DeviceTotals of the lab's devices now (their stats files)."""
    ios, releases, late_ns = {}, 0, 0.0
    for entry in devices:
        record = stats_snapshot.take(entry.stats)["devices"][0]
        ops, realtime = record["ops"], record["realtime"]
        ios[entry.node] = ios.get(entry.node, 0) + ops["read"]["count"] + ops["write"]["count"]
        releases += realtime["releases"]
        late_ns += realtime["releases"] * realtime["release_lateness_ns"]["mean"]
    return DeviceTotals(ios, releases, late_ns)


def fio_ios(fio_json):
    """The I/Os of fio's JSON documents one after another (one a process;
    a prerun's output lines before each are skipped)."""
    decoder, ios, at = json.JSONDecoder(), 0, 0
    while (at := fio_json.find("{", at)) >= 0:
        doc, at = decoder.raw_decode(fio_json, at)
        job = doc["jobs"][0]
        ios += job["read"]["total_ios"] + job["write"]["total_ios"]
    return ios


def _job_file(job, runtime_s):
    return "\n".join(["[global]", f"filename={job.device}", "ioengine=libaio", "direct=1",
                      f"rw={job.op}", "bs=4k", f"size={job.size}", f"iodepth={job.depth}",
                      "time_based", f"runtime={runtime_s}", "randrepeat=0", "thread",
                      "group_reporting", f"exec_prerun=/bin/sh {GATE}/wait", "", "[cal]",
                      f"numjobs={job.threads}"])


def _stems(job):
    return " ".join(f"{GUEST_DIR}/p{i}" for i in range(1, job.processes + 1))


def _start(lab, node, job, runtime_s):
    """The node's fio started, every thread waiting at its gate; Failed
    when a fio ends before it (its last words said) or never gets there."""
    stems = _stems(job)
    jobs = job_files_script(GUEST_DIR, {stem: _job_file(job, runtime_s)
                                        for stem in stems.split()}).decode()
    guest(lab, node, f"""rm -rf {GUEST_DIR} || exit 1
{jobs}
cat > {GUEST_DIR}/launch.sh <<'SCRIPT_END'
{LAUNCHER}
SCRIPT_END
cat > {GUEST_DIR}/state.sh <<'SCRIPT_END'
{gate_state_script(GATE)}
SCRIPT_END
setsid /bin/sh {GUEST_DIR}/launch.sh {GATE} {stems} </dev/null >/dev/null 2>&1 &
n=0
while set -- $(sh {GUEST_DIR}/state.sh 2>/dev/null); do
    if [ "$1" != - ]; then
        [ "$1" -lt {job.processes * job.threads} ] || exit 0
        [ "$2" -ge {job.processes} ] || {{
            echo "fio ended before its start gate: $(tail -q -n 3 {GUEST_DIR}/p*.err)" >&2
            exit 1
        }}
    fi
    sleep 0.5; n=$((n + 1))
    [ $n -lt {GATE_WAIT_S * 2} ] || {{
        echo "fio not at its start gate in {GATE_WAIT_S} s" >&2
        exit 1
    }}
done""")


def _stop(lab, node):
    """A node's fio stopped (its launcher killed, which kills them and
    opens the gate), after a failed run; nothing when none runs."""
    try:
        guest(lab, node, f"read -r l < {GATE}/launcher 2>/dev/null || exit 0; kill $l 2>/dev/null;"
                         " n=0; while kill -0 $l 2>/dev/null && [ $n -lt 60 ]; do sleep 0.5;"
                         " n=$((n + 1)); done", timeout=120)
    except Failed:
        pass


def _results(lab, node, job, runtime_s):
    """The node's fio JSON, once every process has ended; Failed when one
    runs on STUCK_S past its run, naming the guest's block devices with
    requests in flight (fio_launcher.inflight_script)."""
    limit = 2 * (runtime_s + STUCK_S)
    return guest(lab, node, f"""n=0
for s in {_stems(job)}; do
    until [ -e $s.rc ]; do
        sleep 0.5; n=$((n + 1))
        [ $n -lt {limit} ] && continue
        busy=$({inflight_script()})
        echo "fio still running {STUCK_S} s after its end;" $busy >&2
        exit 1
    done
done
cat {GUEST_DIR}/p*.json""", timeout=2 * (runtime_s + STUCK_S))


def run(lab, jobs, runtime_s, ramp_s, window_s):
    """jobs: {node: FioJob}, run at once (their gates opened one right
    after another); the Window of ramp_s .. ramp_s + window_s after the
    last gate opened (window_s + ramp_s well inside runtime_s, so every
    thread runs through it). Run again while it was measured in a slow
    spell of the host, at most host_probe.SPELL_RETRIES times."""
    def measure(_):
        sampler = host_probe.CacheSampler()
        sampler.start()
        try:
            window, t0_ns, t1_ns = _run_once(lab, jobs, runtime_s, ramp_s, window_s)
        finally:
            readings = sampler.stop()
        window.cache_ratio = host_probe.window_ratio(readings, t0_ns, t1_ns, host_probe.Lowest.ns)
        return window

    def spells(window):
        return f"a run (its caches read {host_probe.ratio_text(window.cache_ratio)} their lowest)" \
            if host_probe.in_spell(window.cache_ratio) else ""

    return host_probe.measured_steady(
        measure, spells, lambda text: print(f"gated_fio: {text}", file=sys.stderr, flush=True))


def _run_once(lab, jobs, runtime_s, ramp_s, window_s):
    """run's one run: (its Window, the window's start and end on the
    monotonic clock)."""
    devices = lab_state.load(lab).devices
    nodes = sorted(jobs)
    try:
        each_node(nodes, lambda node: _start(lab, node, jobs[node], runtime_s))
        run_before = device_totals(devices).ios
        each_node(nodes, lambda node: guest(lab, node, gate_go_script(GATE)))
        opened = time.monotonic()
        time.sleep(max(0.0, opened + ramp_s - time.monotonic()))
        a, window_before = sample(lab), device_totals(devices)
        time.sleep(max(0.0, opened + ramp_s + window_s - time.monotonic()))
        b, window_after = sample(lab), device_totals(devices)
        outputs = each_node(nodes, lambda node: _results(lab, node, jobs[node], runtime_s))
    except Failed:
        each_node(nodes, lambda node: _stop(lab, node))
        raise
    run_device_ios = sum(device_totals(devices).ios.values()) - sum(run_before.values())
    window = {node: window_after.ios[node] - window_before.ios.get(node, 0)
              for node in window_after.ios}
    ios = sum(window.values()) * sum(fio_ios(out) for out in outputs.values()) \
        / max(run_device_ios, 1)
    return (Window(ios=ios, devices=window, used=between(a, b, os.sysconf("SC_CLK_TCK")),
                   release_late_ns=window_after.late_since(window_before)),
            a["t_ns"], b["t_ns"])
