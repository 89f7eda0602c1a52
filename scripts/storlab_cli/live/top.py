"""storlab top — a live, per-layer view of a running emulated device.

    storlab top STATS [--interval S] [--once] [--count N]
    storlab top LAB NODE DEVICE [--interval S] [--once] [--count N]

STATS is the stats= file of any storlab plugin; LAB NODE DEVICE finds it in
the lab's state. Every S seconds (default 1) it takes a snapshot with
storlab-stats and shows the window since the last one (top_frame.render):
on a terminal redrawn in place until Ctrl-C (or N frames); with --once, or
when stdout is not a terminal, one plain-text frame per interval, stopping
after N frames (--once alone: 1). Ctrl-C exits 0.
"""
import math
import os
import sys
import time

from storlab_cli.common import cli_args, regular_file
from storlab_cli.lab import device
from storlab_cli.live import raid_events, stats_snapshot, top_frame
from storlab_cli.errors import UserError

HOME = "\x1b[H"                 # cursor home
CLEAR_LINE_END = "\x1b[K"
CLEAR_BELOW = "\x1b[J"
MAX_INTERVAL_S = 3600.0


def _parser():
    p = cli_args.Parser(prog="storlab top", description="live per-layer view of a running device")
    p.add_argument("target", nargs="+", metavar="STATS | LAB NODE DEVICE",
                   help="a plugin's stats= file, or a lab's device")
    p.add_argument("--interval", default="1", metavar="S", help="seconds between frames (default 1)")
    p.add_argument("--once", action="store_true",
                   help="plain frames, one per interval, not redrawn (default --count 1)")
    p.add_argument("--count", metavar="N", help="stop after N frames")
    return p


def _interval_s(text):
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (0 < value <= MAX_INTERVAL_S):       # also NaN
        raise UserError(f"--interval {text}: expected seconds > 0 and <= {MAX_INTERVAL_S:g}")
    return value


def _count(text):
    if text is None:
        return None
    if not text.isdigit() or int(text) < 1:
        raise UserError(f"--count {text}: expected a whole number of frames >= 1")
    return int(text)


def stats_path(target):
    """[STATS] or [LAB, NODE, DEVICE] -> (the stats file's path, the LabHost
    it is on or None: here). A file here must be a regular file: a FIFO would
    block the reader forever."""
    if len(target) == 1:
        regular_file.check_regular(target[0], "stats file")
        return target[0], None
    if len(target) == 3:
        return device.located(*target, "stats", "stats file", "storlab plugins have one")
    raise UserError(f"expected STATS or LAB NODE DEVICE, got {len(target)} arguments "
                    f"({' '.join(target)})")


def frames(path, interval_s, count=None, host=None):
    """Yields one rendered frame per interval (the window since the last
    snapshot), count frames or forever. host: where the file is (lab/hosts.py)."""
    before, taken_s = stats_snapshot.take(path, host), time.monotonic()
    shown = 0
    while count is None or shown < count:
        time.sleep(max(0.0, taken_s + interval_s - time.monotonic()))
        after, now_s = stats_snapshot.take(path, host), time.monotonic()
        events = raid_events.load(raid_events.events_path(path), host)
        yield top_frame.render(before, after, events, window_s=now_s - taken_s,
                               interval_s=interval_s, source=f"stats file {path}")
        before, taken_s = after, now_s
        shown += 1


def _show(frame, live):
    if live:
        text = "".join(line + CLEAR_LINE_END + "\n" for line in frame.rstrip("\n").split("\n"))
        sys.stdout.write(HOME + text + CLEAR_BELOW)
    else:
        sys.stdout.write(frame + "\n")
    sys.stdout.flush()


def run(argv):
    a = _parser().parse_args(argv)
    interval_s, count = _interval_s(a.interval), _count(a.count)
    path, host = stats_path(a.target)
    live = sys.stdout.isatty() and not a.once
    if a.once and count is None:
        count = 1
    try:
        if live:
            sys.stdout.write(f"{HOME}\x1b[2J{path}: first window in {interval_s:g} s ...\n")
            sys.stdout.flush()
        for frame in frames(path, interval_s, count, host):
            _show(frame, live)
    except KeyboardInterrupt:
        if live:
            sys.stdout.write("\n")
    except BrokenPipeError:             # storlab top ... | head
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
