"""Per-interval series of one point (timeline.csv) and its live events
(events.csv).

Two sources, one shape of sample (t_ms, direction, IOPS, mean latency):
  - fio logs written in a guest with write_iops_log=P write_lat_log=P
    log_avg_msec=1000: P_iops.N.log and P_clat.N.log per job N, lines
    "time_ms, value, direction, block size, offset[, priority]" (direction
    0 read, 1 write; IOPS and clat averaged over the interval, clat in ns).
    Times are rounded to the interval. fio writes no IOPS line for an
    interval without IO, and often none for the last, partial one: a job
    without an IOPS line counts 0 there, and the series ends at the
    earliest last IOPS line among the jobs. A latency weighs by its job's
    IOPS in that interval, so a latency line without an IOPS line is left
    out.
  - storlab-sim's `storlab.timeline`: [{"t_ms", "read": {"ios", "bytes",
    "lat_sum_ns"}, "write": {...}}, ...], t_ms the end of each interval, the
    first starting at 0.
rows() sums IOPS over jobs/units per interval and weighs latency by IOs.
"""
import glob
import math
import os
import re
from dataclasses import dataclass

from storlab_cli.common import csv_out
from storlab_cli.errors import UserError

COLUMNS = ("t_s", "iops", "read_iops", "write_iops",
           "lat_mean_us", "read_lat_mean_us", "write_lat_mean_us")
EVENT_COLUMNS = ("t_s", "what")
DIRECTIONS = {0: "read", 1: "write"}


@dataclass(frozen=True)
class Sample:
    t_ms: int               # interval end, since the measured phase began
    direction: str          # "read" | "write"
    iops: float | None      # None: latency only (no IOPS known for it)
    lat_mean_ns: float | None


def fio_log_fields(path, kind):
    """(line number, [fields]) of each line of a fio log, blank lines
    skipped; kind names the log where it cannot be read."""
    try:
        with open(path, encoding="utf-8") as f:
            for line_no, line in enumerate(f, start=1):
                if line.strip():
                    yield line_no, [x.strip() for x in line.split(",")]
    except OSError as e:
        raise UserError(f"{path}: cannot read {kind} ({e.strerror})") from None


def read_fio_log(path):
    """[(time_ms, value, direction)] of a fio log (trim lines dropped)."""
    out = []
    for line_no, fields in fio_log_fields(path, "fio log"):
        try:
            if len(fields) < 3:
                raise ValueError
            t_ms, value, ddir = int(fields[0]), float(fields[1]), int(fields[2])
        except ValueError:
            raise UserError(f"{path}: line {line_no}: not a fio log line "
                            "(time_ms, value, direction, ...)") from None
        if t_ms < 0 or value < 0 or ddir not in (0, 1, 2):
            raise UserError(f"{path}: line {line_no}: time, value or direction out of range")
        if ddir in DIRECTIONS:
            out.append((t_ms, value, DIRECTIONS[ddir]))
    return out


def fio_log_pairs(prefix):
    """[(iops log, clat log)] of every job fio logged under PREFIX
    (PREFIX_iops.N.log, or PREFIX_iops.log without per_job_logs)."""
    pairs = []
    for iops in sorted(glob.glob(glob.escape(prefix) + "_iops*.log")):
        m = re.fullmatch(re.escape(prefix) + r"_iops(\.\d+)?\.log", iops)
        if not m:
            continue
        clat = f"{prefix}_clat{m.group(1) or ''}.log"
        if not os.path.exists(clat):
            raise UserError(f"{iops}: no completion latency log {os.path.basename(clat)} beside it "
                            "(fio needs write_lat_log with the same prefix)")
        pairs.append((iops, clat))
    if not pairs:
        raise UserError(f"{prefix}: no fio IOPS logs ({os.path.basename(prefix)}_iops.N.log)")
    return pairs


def _interval(t_ms, start_ms, interval_ms):
    return math.floor((t_ms - start_ms) / interval_ms + 0.5) * interval_ms


def fio_job_samples(iops_log, clat_log, interval_ms=1000, start_ms=0):
    """Samples of one fio job from its IOPS and clat logs. start_ms: log time
    at which the measured phase began (earlier intervals are dropped)."""
    if interval_ms <= 0:
        raise UserError(f"{iops_log}: interval must be positive ({interval_ms} ms)")
    iops = {}
    for t_ms, value, direction in read_fio_log(iops_log):
        t = _interval(t_ms, start_ms, interval_ms)
        if t > 0:
            iops[(t, direction)] = iops.get((t, direction), 0.0) + value
    lat = {}
    for t_ms, value, direction in read_fio_log(clat_log):
        t = _interval(t_ms, start_ms, interval_ms)
        if t > 0:
            lat.setdefault((t, direction), []).append(value)
    samples = []
    for key in sorted(set(iops) | set(lat)):
        t, direction = key
        values = lat.get(key)
        samples.append(Sample(t, direction, iops.get(key),
                              sum(values) / len(values) if values else None))
    return samples


def fio_samples(pairs, interval_ms=1000, start_ms=0, end_ms=None):
    """Samples of several jobs (fio_log_pairs of every unit, concatenated),
    up to end_ms (since start_ms) when given: the caller knows fio ran past
    it, so a job without a line there did no I/O (a lab's window). Else up
    to the last interval every job logged IOPS for (fio may not log the
    interval it exits in)."""
    out, ends = [], []
    for iops_log, clat_log in pairs:
        samples = fio_job_samples(iops_log, clat_log, interval_ms, start_ms)
        logged = [s.t_ms for s in samples if s.iops is not None]
        if logged:
            ends.append(max(logged))
        out.extend(samples)
    end = min(ends, default=0) if end_ms is None else end_ms
    return [s for s in out if s.t_ms <= end]


def sim_samples(doc, source):
    """Samples of storlab-sim's JSON `storlab.timeline`."""
    try:
        timeline = doc["storlab"]["timeline"]
    except (KeyError, TypeError):
        raise UserError(f"{source}: no storlab.timeline in the simulator's JSON") from None
    if not isinstance(timeline, list):
        raise UserError(f"{source}: storlab.timeline is not a list")
    samples, previous = [], 0
    for i, entry in enumerate(timeline):
        where = f"{source}: storlab.timeline[{i}]"
        try:
            t_ms = entry["t_ms"]
            sides = {d: (entry[d]["ios"], entry[d]["lat_sum_ns"]) for d in DIRECTIONS.values()}
        except (KeyError, TypeError) as e:
            raise UserError(f"{where}: no {e} in it") from None
        numbers = [t_ms] + [x for pair in sides.values() for x in pair]
        if any(isinstance(x, bool) or not isinstance(x, (int, float)) or x < 0 for x in numbers):
            raise UserError(f"{where}: t_ms, ios and lat_sum_ns must be numbers >= 0")
        if t_ms <= previous:
            raise UserError(f"{where}: t_ms {t_ms} does not follow {previous}")
        seconds = (t_ms - previous) / 1000.0
        for direction, (ios, lat_sum_ns) in sides.items():
            samples.append(Sample(round(t_ms), direction, ios / seconds,
                                  lat_sum_ns / ios if ios else None))
        previous = t_ms
    return samples


def rows(samples):
    """timeline.csv rows (dicts of COLUMNS), one per interval that has IOPS."""
    acc = {}
    for s in samples:
        slot = acc.setdefault(s.t_ms, {d: [0.0, 0.0, 0.0, False] for d in DIRECTIONS.values()})
        d = slot[s.direction]       # iops, latency * weight, weight, IOPS seen
        if s.iops is None:
            continue
        d[0] += s.iops
        d[3] = True
        if s.lat_mean_ns is not None and s.iops > 0:
            d[1] += s.lat_mean_ns * s.iops
            d[2] += s.iops

    def mean_us(weighted, weight):
        return weighted / weight / 1000.0 if weight else None

    out = []
    for t_ms in sorted(acc):
        r, w = acc[t_ms]["read"], acc[t_ms]["write"]
        if not (r[3] or w[3]):
            continue
        out.append({"t_s": t_ms / 1000.0, "iops": r[0] + w[0], "read_iops": r[0], "write_iops": w[0],
                    "lat_mean_us": mean_us(r[1] + w[1], r[2] + w[2]),
                    "read_lat_mean_us": mean_us(r[1], r[2]),
                    "write_lat_mean_us": mean_us(w[1], w[2])})
    return out


def write_timeline(path, timeline_rows):
    csv_out.write(path, COLUMNS, [[row[c] for c in COLUMNS] for row in timeline_rows])


def write_events(path, events):
    """events: [(t_s, what)], e.g. (10.0, "battery failed"); written by time."""
    for t_s, what in events:
        if isinstance(t_s, bool) or not isinstance(t_s, (int, float)) or not isinstance(what, str):
            raise UserError(f"{path}: event ({t_s!r}, {what!r}) is not (seconds, text)")
    csv_out.write(path, EVENT_COLUMNS, sorted(([float(t), w] for t, w in events), key=lambda e: e[0]))
