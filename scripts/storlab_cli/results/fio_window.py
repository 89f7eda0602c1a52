"""A lab point's IOPS, bandwidth and mean latency over its measured window,
read from fio's per-interval logs, instead of each fio thread's figures
over its own run summed.

Why: a lab's units start at one gate, but under TCG a thread may do its
first I/O seconds after the others (14-18 s seen in 4-node hybrid labs)
and run its whole runtime from there; fio's JSON counts its work as if it
had run beside the others. And at a deep queue fio's end of run stamps
every I/O still queued with the last one's completion. A window the same
for every thread of a node counts what the node did in it, as the device
windows do.

The window: a node's gate opened at the earliest pass any of its threads
recorded (gate-NODE.txt, lines "JOB.prerun.txt:UPTIME_S", the guest's
uptime); the window starts fio_jobfile.window_start_s after it (the ramp
and the phases' start_skew_s for threads that start late) and lasts
duration_s; a thread whose first logged I/O came later still is counted
from there, and the point says so (late_starters, host_limit's late-start). fio
logs in the same clock (fio_jobfile.LOG_CLOCK_ID) and measures long enough
that each thread's logs cover the window.

The counts come from fio's histogram logs (results.fio_hist_log): a line
holds the completions since its direction's last one, counted by the part
of that span inside the window; IOPS, the mean latency (each bin at its
value: within 1 % of fio's own mean) and the percentiles all from them.
fio writes those lines as I/Os complete. Its IOPS log it writes from a
helper thread, which a busy guest starves: a line then stands for several
seconds, or none is written for a thread that did I/O. Measured in 8
points of four 4-node labs (184 units of 2-8 threads): a unit's IOPS lines
summed to a median 0.60-0.82 of the I/Os its JSON counts (0.01 at worst),
its histogram lines to 0.73-1.90 of them, 133 units within 5 % (the JSON counts
I/Os as submitted, the histograms as completed: those in flight at the
ramp's end and at the run's end part them).
Results of an earlier storlab without histogram logs are counted from the
IOPS logs, a line (time t, rate r) taken as the interval (t - interval, t]
at its rate, and keep fio's percentiles, each thread's over its own run.
"""
import bisect
import os
import re
from dataclasses import dataclass, replace

from storlab_cli.results import fio_hist_log, timeline
from storlab_cli.results.fio_merge import DIRECTIONS, Summary, merge_directions
from storlab_cli.sweep import fio_jobfile
from storlab_cli.errors import UserError

# fio's prerun output of one job, as `grep -H . GATE/*.prerun.txt` lists it
_GATE_PASS = re.compile(r"(?P<job>[^:]+)\.prerun\.txt:(?P<uptime_s>[0-9]+(\.[0-9]+)?)")


@dataclass(frozen=True)
class Window:
    start_ms: float     # the node's clock (guest uptime, ms)
    end_ms: float


def gate_opened_ms(path):
    """When a node's gate opened (ms of its uptime): the earliest pass of
    its threads in gate-NODE.txt."""
    passes = []
    try:
        with open(path, encoding="utf-8") as f:
            for line_no, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                match = _GATE_PASS.fullmatch(line.strip())
                if not match:
                    raise UserError(f"{path}: line {line_no}: not JOB.prerun.txt:UPTIME_S")
                passes.append(float(match["uptime_s"]) * 1000.0)
    except OSError as e:
        raise UserError(f"{path}: cannot read the gate's passes ({e.strerror})") from None
    if not passes:
        raise UserError(f"{path}: no thread passed the gate")
    return min(passes)


def node_window(gate_path, phases):
    start_ms = gate_opened_ms(gate_path) + fio_jobfile.window_start_s(phases) * 1000.0
    return Window(start_ms, start_ms + phases["duration_s"] * 1000.0)


@dataclass
class _Count:
    ios: float = 0.0
    clat_sum_ns: float = 0.0      # mean latency x IOs, where a latency is known
    clat_ios: float = 0.0


def _overlap_ms(t_ms, interval_ms, window):
    return max(0.0, min(t_ms, window.end_ms) - max(t_ms - interval_ms, window.start_ms))


def _share_in_window(t_ms, span_ms, window):
    """The part of the span (t_ms - span_ms, t_ms] inside the window."""
    if span_ms <= 0:
        return 1.0 if window.start_ms < t_ms <= window.end_ms else 0.0
    return _overlap_ms(t_ms, span_ms, window) / span_ms


def _interval_latency(clat_lines, t_ms, interval_ms):
    """The mean latency fio logged for the interval ending near t_ms
    (clat_lines: [(t_ms, ns)] of one direction, by time): its clat line is
    stamped a millisecond or so apart from the IOPS line."""
    i = bisect.bisect_left(clat_lines, (t_ms,))
    near = [clat_lines[j] for j in (i - 1, i) if 0 <= j < len(clat_lines)
            and abs(clat_lines[j][0] - t_ms) < interval_ms / 2]
    return min(near, key=lambda line: abs(line[0] - t_ms))[1] if near else None


def count_job(iops_log, clat_log, interval_ms, window, counts):
    """Adds one job's I/Os inside the window to counts {direction: _Count}."""
    clat_lines = {d: [] for d in DIRECTIONS}
    for t_ms, value, direction in timeline.read_fio_log(clat_log):
        clat_lines[direction].append((t_ms, value))
    for lines in clat_lines.values():
        lines.sort()
    for t_ms, rate, direction in timeline.read_fio_log(iops_log):
        ios = rate * _overlap_ms(t_ms, interval_ms, window) / 1000.0
        if ios <= 0:
            continue
        count = counts[direction]
        count.ios += ios
        latency_ns = _interval_latency(clat_lines[direction], t_ms, interval_ms)
        if latency_ns is not None:
            count.clat_sum_ns += ios * latency_ns
            count.clat_ios += ios


def started_late(iops_log, interval_ms, window, hist_log=None):
    """Whether the job's first logged interval began after the window did:
    it started later than the start skew allows (its ramp ended inside the
    window), so the window misses its I/O before then. Its first line ends
    an interval that began at its ramp's end or before. Read from its
    histogram log where it has one (its IOPS log's first line can come late
    on a busy guest, or never)."""
    if hist_log is not None:
        first_ms = min((e.t_ms for e in fio_hist_log.read(hist_log)), default=None)
    else:
        first_ms = min((t_ms for t_ms, _, _ in timeline.read_fio_log(iops_log)), default=None)
    return first_ms is not None and first_ms - interval_ms > window.start_ms


def late_starters(jobs, interval_ms):
    """How many of the jobs ([(iops log, clat log, histogram log, Window)],
    as over_window's) started too late to be measured over the whole window."""
    return sum(started_late(iops_log, interval_ms, window, hist_log)
               for iops_log, _, hist_log, window in jobs)


def _line_spans(hist_log, interval_ms):
    """(entry, span_ms) of each line of one job's histogram log: a line
    holds the completions since its direction's last line (interval_ms
    before, for the first)."""
    last_ms = {}
    for entry in fio_hist_log.read(hist_log):
        yield entry, entry.t_ms - last_ms.get(entry.direction, entry.t_ms - interval_ms)
        last_ms[entry.direction] = entry.t_ms


def _latency_sum_ns(bins):
    """{bin value ns: completions} -> the completions' latencies summed."""
    return sum(value * count for value, count in bins.items())


def count_hist(hist_log, interval_ms, window, bins):
    """Adds one job's histogram lines inside the window to bins {direction:
    {bin value: completions}}: each line by the part of its span
    (_line_spans) inside the window."""
    for entry, span_ms in _line_spans(hist_log, interval_ms):
        share = _share_in_window(entry.t_ms, span_ms, window)
        if share <= 0:
            continue
        into = bins[entry.direction]
        for value, count in entry.bins.items():
            into[value] = into.get(value, 0.0) + count * share


def hist_samples(hist_log, interval_ms, start_ms, duration_ms):
    """Timeline samples (timeline.Sample) of one job from its histogram log:
    intervals of interval_ms from start_ms (log time) for duration_ms, each
    line's completions counted in each interval by the part of its span
    there (as in a window). An interval without any is 0 IOPS: the caller
    knows fio ran past the last."""
    slots = {k: Window(start_ms + (k - 1) * interval_ms, start_ms + k * interval_ms)
             for k in range(1, round(duration_ms / interval_ms) + 1)}
    ios = {(k, d): 0.0 for k in slots for d in DIRECTIONS}
    latency_ns = dict.fromkeys(ios, 0.0)
    for entry, span_ms in _line_spans(hist_log, interval_ms):
        completions = sum(entry.bins.values())
        weighted_ns = _latency_sum_ns(entry.bins)
        for k, slot in slots.items():
            share = _share_in_window(entry.t_ms, span_ms, slot)
            ios[(k, entry.direction)] += completions * share
            latency_ns[(k, entry.direction)] += weighted_ns * share
    return [timeline.Sample(k * interval_ms, d, count * 1000.0 / interval_ms,
                            latency_ns[(k, d)] / count if count else None)
            for (k, d), count in sorted(ios.items())]


def _window_bins(jobs, interval_ms):
    """{direction: {bin value: completions}} in the window (a line's part
    counted as a fraction), or None when a job has no histogram log
    (results of an earlier storlab)."""
    if any(hist_log is None for _, _, hist_log, _ in jobs):
        return None
    bins = {d: {} for d in DIRECTIONS}
    for _, _, hist_log, window in jobs:
        count_hist(hist_log, interval_ms, window, bins)
    return bins


def _counts_of_bins(bins):
    """{direction: _Count} of the window's histograms, each bin at its value."""
    return {d: _Count(ios=sum(bins[d].values()),
                      clat_sum_ns=_latency_sum_ns(bins[d]),
                      clat_ios=sum(bins[d].values()))
            for d in DIRECTIONS}


def _whole_bins(bins):
    """((bin value, completions), ...) ascending, each count rounded."""
    return tuple(sorted((value, whole) for value, count in bins.items()
                        if (whole := round(count))))


def over_window(summary, jobs, interval_ms, duration_s):
    """summary (fio_merge's, every thread over its own run) with IOPS,
    bandwidth, mean latency and percentiles over the window: from the
    histogram logs, or where a job has none from the IOPS and clat logs
    with fio's percentiles kept. jobs: [(iops log, clat log, histogram log
    or None, Window of its node)]."""
    window_bins = _window_bins(jobs, interval_ms)
    if window_bins is None:
        counts = {d: _Count() for d in DIRECTIONS}
        for iops_log, clat_log, _, window in jobs:
            count_job(iops_log, clat_log, interval_ms, window, counts)
    else:
        counts = _counts_of_bins(window_bins)
    directions = {}
    for d in DIRECTIONS:
        whole, count = getattr(summary, d), counts[d]
        bytes_per_io = whole.io_bytes / whole.ios if whole.ios else 0.0
        directions[d] = replace(
            whole, iops=count.ios / duration_s, bytes_per_s=count.ios * bytes_per_io / duration_s,
            clat_sum_ns=count.clat_sum_ns, clat_samples=count.clat_ios,
            bins=whole.bins if window_bins is None else _whole_bins(window_bins[d]))
    return Summary(units=summary.units, read=directions["read"], write=directions["write"],
                   total=merge_directions([directions["read"], directions["write"]]))


def gate_file(directory, node):
    return os.path.join(directory, f"gate-{node}.txt")
