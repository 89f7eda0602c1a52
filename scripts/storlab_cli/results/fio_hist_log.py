"""fio's completion latency histogram logs (write_hist_log=PREFIX with
log_hist_msec=MS: PREFIX_clat_hist.N.log per job), from which a lab
point's percentiles are counted over its measured window
(results.fio_window), as its IOPS are from the IOPS logs.

fio writes a line "time_ms, direction, block size, c0, c1, ..., c1855" at
the first completion log_hist_msec or more after the direction's last
line: cI is how many completions since that line (since the ramp ended,
for the first) fell in latency bin I, the bins json+ reports as
clat_ns.bins keyed by each bin's value (bin_value_ns). Nearly every bin is
0 (a line is about 4 KB), so a lab fetches these logs with the zero bins
left out: "I:COUNT" fields after the first three
(fio_launcher.SPARSE_HIST_AWK). Both forms are read here.
"""
import os
from dataclasses import dataclass

from storlab_cli.errors import UserError
from storlab_cli.results import timeline

# fio stat.h: 64 bins per power of two of ns, 29 groups.
PLAT_BITS = 6
PLAT_VAL = 1 << PLAT_BITS
PLAT_NR = 29 * PLAT_VAL


def bin_value_ns(index):
    """The value fio gives bin `index` (its key in json+'s bins): the
    latency itself below 128 ns, the middle of the bin above."""
    if index < PLAT_VAL << 1:
        return index
    error_bits = (index >> PLAT_BITS) - 1
    return (1 << (error_bits + PLAT_BITS)) + ((2 * (index % PLAT_VAL) + 1) << error_bits) // 2


@dataclass(frozen=True)
class Entry:
    t_ms: int
    direction: str              # "read" | "write"
    bins: dict                  # {bin value ns: completions}


def path_beside(clat_log):
    """The histogram log of the job whose completion latency log is
    PREFIX_clat.N.log, or None when that job wrote none."""
    head, dot, tail = os.path.basename(clat_log).partition("_clat.")
    if not dot:
        return None
    path = os.path.join(os.path.dirname(clat_log), f"{head}_clat_hist.{tail}")
    return path if os.path.exists(path) else None


def _bins(fields):
    """{bin value: count} of a line's fields after the first three, full
    (one count a bin) or sparse (INDEX:COUNT)."""
    sparse = any(":" in field for field in fields)
    if not sparse and len(fields) != PLAT_NR:
        raise ValueError
    bins = {}
    for position, field in enumerate(fields):
        index, count = (field.split(":") if sparse else (position, field))
        index, count = int(index), int(count)
        if not 0 <= index < PLAT_NR or count < 0:
            raise ValueError
        if count:
            value = bin_value_ns(index)
            bins[value] = bins.get(value, 0) + count
    return bins


def read(path):
    """[Entry] of one job's histogram log, in the file's order (trim lines
    dropped)."""
    entries = []
    for line_no, fields in timeline.fio_log_fields(path, "fio histogram log"):
        try:
            if len(fields) < 3:
                raise ValueError
            t_ms, ddir = int(fields[0]), int(fields[1])
            bins = _bins(fields[3:])
            if t_ms < 0 or ddir not in (0, 1, 2):
                raise ValueError
        except ValueError:
            raise UserError(f"{path}: line {line_no}: not a fio histogram log line "
                            f"(time_ms, direction, bs, then {PLAT_NR} bin counts "
                            "or INDEX:COUNT fields)") from None
        if ddir in timeline.DIRECTIONS:
            entries.append(Entry(t_ms, timeline.DIRECTIONS[ddir], bins))
    return entries
