"""fio job files of a sweep point: the same text for a guest's fio and for
storlab-sim (which ignores the options that only say how fio reaches the
device). One job section per worker, each on its own region or volume, so
workers never share blocks and the working set is exactly what the sweep
file says."""
import re
from dataclasses import dataclass

from storlab_cli.schema.sizes import parse_size_bytes
from storlab_cli.schema.sweep import DATA_KEYS

# fio's own percentiles are not used (cluster figures come from merged
# bins), but these make a single unit's JSON readable on its own.
PERCENTILES = "50:90:99:99.9:99.99"
PRECONDITION_BS = "1M"
PRECONDITION_IODEPTH = 8
# A worker's name: NODE-uUNIT{w|v}N (region, file and volume workers); its
# section is [NAME].
_WORKER_NAME = re.compile(r"(?P<node>.+)-u(?P<unit>[0-9]+)[wv][0-9]+")


@dataclass
class Worker:
    name: str           # fio job name
    filename: str | None  # guest path; None in the simulator (its one device)
    offset_bytes: int
    # A cluster's one job file holds every unit's workers: each section then
    # says its own size and the seed its unit's fio would have had.
    size_bytes: int | None = None   # None: the [global] size
    randseed: int | None = None     # None: the [global] randseed


def _section(worker):
    lines = [f"[{worker.name}]"]
    if worker.filename is not None:
        lines.append(f"filename={worker.filename}")
    lines.append(f"offset={worker.offset_bytes}")
    if worker.size_bytes is not None:
        lines.append(f"size={worker.size_bytes}")
    if worker.randseed is not None:
        lines.append(f"randseed={worker.randseed}")
    return lines


# The clock of a lab's interval logs: CLOCK_BOOTTIME, the guest's uptime,
# in which the start gate records each thread's pass (fio_launcher).
LOG_CLOCK_ID = 7
GATE_CLOCK_LINE = "log_alternate_epoch=1"


def logs_in_gate_clock(job_text):
    """Whether a lab job file (measured, logged) stamps its logs in the
    gate's clock; an earlier storlab's logs count from each thread's own
    start: no common window."""
    return GATE_CLOCK_LINE in job_text.splitlines()


def log_interval_s(phases):
    """The interval of a lab's logs: the timeline's, or 1 s without one (a
    lab point's figures are counted from them, results.fio_window)."""
    return phases["interval_s"] or 1


def window_start_s(phases):
    """When a lab point's measured window begins, in seconds after its
    node's gate opened: a thread's own ramp (fio's ramp_time, so its
    percentiles leave the warm-up out) ends by then if it started within
    start_skew_s (how late a thread may start, schema/sweep.py)."""
    return phases["ramp_s"] + phases["start_skew_s"]


def logged_tail_s(phases):
    """How long a logged job runs past its window: up to the interval that
    holds the window's end, and one more (fio may not log the interval it
    exits in). fio's end-of-run drain, which stamps every I/O still queued
    with the last one's completion, falls after the window."""
    interval_s, duration_s = log_interval_s(phases), phases["duration_s"]
    return -(-duration_s // interval_s) * interval_s - duration_s + interval_s


def measured(workload, phases, workers, randseed, log_prefix=None, start_gate=None):
    """A point's job: ramp_s of warm-up, then duration_s measured. A lab's
    fio threads first run start_gate (a shell script's path), which holds
    them until every unit's threads are ready. With log_prefix, per-interval
    logs (IOPS, mean completion latency, latency histogram) stamped in the
    guest's uptime clock (results.fio_window reads the window from them), and
    fio measures start_skew_s + duration_s + logged_tail_s after its ramp: a
    thread that started late still covers the window."""
    logged = log_prefix is not None
    runtime_s = phases["duration_s"] + (phases["start_skew_s"] + logged_tail_s(phases)
                                        if logged else 0)
    lines = ["[global]", "ioengine=libaio", "direct=1", "thread=1", "group_reporting=1",
             f"rw={workload['rw']}", f"rwmixread={workload['rwmixread']}",
             f"percentage_random={workload['random_percent']}", f"bs={workload['bs']}",
             f"iodepth={workload['iodepth']}", f"size={workload['size']}",
             "time_based=1", f"ramp_time={phases['ramp_s']}", f"runtime={runtime_s}",
             f"randseed={randseed}", f"percentile_list={PERCENTILES}"]
    # what the data is like, when it is not fio's default (random, unique)
    lines += [f"{key}={workload[key]}" for key in DATA_KEYS if workload.get(key)]
    if start_gate is not None:
        lines.append(f"exec_prerun=/bin/sh {start_gate}")
    if logged:
        # fio holds each histogram line (1856 bins, about 15 KB) until the
        # job ends: 64 threads a node for 60 s of reads, about 60 MB of a
        # 768 MiB guest.
        interval_ms = log_interval_s(phases) * 1000
        lines += [f"write_iops_log={log_prefix}", f"write_lat_log={log_prefix}",
                  f"write_hist_log={log_prefix}", f"log_avg_msec={interval_ms}",
                  f"log_hist_msec={interval_ms}",
                  GATE_CLOCK_LINE, f"log_alternate_epoch_clock_id={LOG_CLOCK_ID}"]
    for worker in workers:
        lines += [""] + _section(worker)
    return "\n".join(lines) + "\n"


def precondition(size_bytes, workers):
    """Sequential fill of every worker's region, once, so reads never hit
    never-written blocks and every cache below has seen the data."""
    lines = ["[global]", "ioengine=libaio", "direct=1", "thread=1", "group_reporting=1",
             "rw=write", f"bs={PRECONDITION_BS}", f"iodepth={PRECONDITION_IODEPTH}",
             f"size={size_bytes}"]
    for worker in workers:
        lines += [""] + _section(worker)
    return "\n".join(lines) + "\n"


def unit_randseed(unit, started_before):
    """The randseed of a unit's fio: a lab starts one fio per (node, unit),
    started_before of them before this one; the simulator seeds each
    worker as its unit's fio would be."""
    return 1000 * unit + started_before


def units_of(job_text):
    """{(node, unit)} whose workers a job file's sections are: the workload
    units the sections stand for (names as the *_workers functions give)."""
    sections = (line.strip() for line in job_text.splitlines())
    return {unit for s in sections if s.startswith("[") and s.endswith("]")
            if (unit := _unit_of(s[1:-1])) is not None}


def _unit_of(name):
    """(node, unit) of a worker's name, or None."""
    match = _WORKER_NAME.fullmatch(name)
    return (match["node"], int(match["unit"])) if match else None


def threads_of(job_text):
    """How many fio threads (job sections, no numjobs) a job file starts."""
    return sum(1 for line in job_text.splitlines()
               if line.startswith("[") and line.strip() != "[global]")


def _workers_per_unit(workers):
    """{(node, unit): how many of the workers are that unit's}."""
    counts = {}
    for w in workers:
        if (unit := _unit_of(w.name)) is not None:
            counts[unit] = counts.get(unit, 0) + 1
    return counts


def processes_per_node(workers):
    """{node: the fio processes its workers run in}: as a lab runs them, one
    fio a unit, its workers threads (thread=1)."""
    counts = {}
    for node, _ in _workers_per_unit(workers):
        counts[node] = counts.get(node, 0) + 1
    return counts


def threads_per_process(workers):
    """{node: the threads each of its fio processes runs} (the most of any
    of its units: a unit's workers)."""
    threads = {}
    for (node, _), count in _workers_per_unit(workers).items():
        threads[node] = max(threads.get(node, 0), count)
    return threads


def region_workers(node, unit, workload, filename):
    """Workers of one unit on a raw device: unit u's worker w owns region
    (u-1)*workers + (w-1), each `size` bytes, in order from offset 0."""
    size_bytes = parse_size_bytes(workload["size"])
    workers = []
    for w in range(1, workload["workers"] + 1):
        region = (unit - 1) * workload["workers"] + (w - 1)
        workers.append(Worker(f"{node}-u{unit}w{w}", filename, region * size_bytes))
    return workers


def file_workers(node, unit, workers, directory):
    """Workers of one unit on a file system: worker w owns its own file."""
    return [Worker(f"{node}-u{unit}w{w}", f"{directory}/{node}-u{unit}w{w}.fio", 0)
            for w in range(1, workers + 1)]


def volume_workers(node, unit, volumes):
    """Workers of one unit on the profile's volumes: one per volume."""
    return [Worker(f"{node}-u{unit}v{n}", path, 0) for n, path in enumerate(volumes, start=1)]
