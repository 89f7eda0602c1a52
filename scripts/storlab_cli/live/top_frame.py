"""One `storlab top` frame: two storlab-stats snapshots of a device (and a
raid controller's event log) in, plain text out. No terminal, no clock:
render() is what the tests call.

    header     device, kind, capacity, uptime, refresh interval, window;
               raid: level, members, stripe, cache, policy, battery,
               whether write-back is in effect, the last events
    front end  read/write IOPS, MB/s and mean latency, queue depth, and how
               late the plugin released its replies (p99); a line says so
               when that passes the share of the mean latency a sweep flags
               (host_limit: release-late)
    cache      (raid) read hit %, dirty MB of the cache MB, destage MB/s,
               writes acknowledged from the cache / written through
    members    (raid) one row each: state, IOPS, MB/s, busy %, mean latency

Rates are over the window between the snapshots (device_window).
"""
import datetime

from storlab_cli.common import text_table
from storlab_cli.live import raid_events
from storlab_cli.results import device_window, host_limit
from storlab_cli.schema.sizes import binary_text as size

EVENTS_SHOWN = 5
MB = device_window.MB


def number(value, decimals):
    """A cell: fixed decimals, '-' for n/a."""
    return "-" if value is None else f"{value:.{decimals}f}"


def duration(seconds):
    whole = int(seconds)
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


def _front_table(fronts):
    """The front end, then each LUN of a controller on its own row."""
    headers = ["front end", "read IOPS", "write IOPS", "read MB/s", "write MB/s",
               "read lat us", "write lat us", "mean lat us", "QD now", "QD mean",
               "late p99 us"]
    rows = [[f.name, number(f.read_iops, 1), number(f.write_iops, 1),
             number(f.read_mb_s, 2), number(f.write_mb_s, 2),
             number(f.read_lat_mean_us, 1), number(f.write_lat_mean_us, 1),
             number(f.lat_mean_us, 1), "-" if f.queue_depth is None else str(f.queue_depth),
             number(f.mean_queue_depth, 2), number(f.release_late_p99_us, 1)] for f in fronts]
    return text_table.lines(headers, rows)


def _late_lines(fronts):
    """A warning per front end whose replies left too late for its latency."""
    return [f"{f.name}: release-late, {f.release_late_p99_us:.0f} us p99 against "
            f"{f.lat_mean_us:.0f} us mean: {host_limit.REASONS['release-late']}"
            for f in fronts
            if f.release_late_p99_us is not None and f.lat_mean_us
            and f.release_late_p99_us > host_limit.RELEASE_LATE_SHARE_MAX * f.lat_mean_us]


def _cache_table(name, cache, controller):
    headers = ["cache", "read hit %", "dirty MB", "cache MB", "destage MB/s",
               "writes cached", "writes through"]
    cache_mb = None if controller.cache_bytes is None else controller.cache_bytes / MB
    row = [name, number(cache.hit_pct, 1), number(cache.dirty_mb, 2), number(cache_mb, 2),
           number(cache.destage_mb_s, 2), str(cache.writes_cached), str(cache.writes_through)]
    return text_table.lines(headers, [row])


def _member_table(members, controller):
    headers = ["member", "state", "IOPS", "MB/s", "busy %", "mean lat us", "QD now"]
    rows = [[m.name, controller.member_state(i), number(m.iops, 1), number(m.mb_s, 2),
             number(m.busy_pct, 1), number(m.lat_mean_us, 1),
             "-" if m.queue_depth is None else str(m.queue_depth)]
            for i, m in enumerate(members)]
    return text_table.lines(headers, rows, align="ll" + "r" * (len(headers) - 2))


def _event_lines(events):
    shown = events[-EVENTS_SHOWN:]
    out = [f"events (last {len(shown)} of {len(events)}):" if events else "events: none logged"]
    rows = [["-" if ev.realtime_ns is None else datetime.datetime.fromtimestamp(
                ev.realtime_ns / 1e9).strftime("%H:%M:%S.%f")[:-3],
             f"+{ev.time_ns / 1e9:.3f}", ev.text] for ev in shown]
    if rows:
        table = text_table.lines(["wall clock", "device s", "event"], rows, align="lrl")
        out += ["  " + line for line in table]
    return out


def render(before, after, events=(), window_s=None, interval_s=None, source="device stats"):
    """The frame for the window between two snapshots (storlab-stats
    documents). window_s: the wall time between them (live use); None: how
    far the device's clock moved. events: raid_events.load() of its log."""
    doc = device_window.delta(before, after, source, window_s)
    layers = device_window.layers(doc, source)
    # a controller's LUNs (records of kind "lun") follow its members
    front = layers[0]
    members = [layer for layer in layers[1:] if layer.kind != "lun"]
    luns = [layer for layer in layers[1:] if layer.kind == "lun"]
    record = after["devices"][0]
    uptime_ns = after.get("uptime_ns", record.get("elapsed_ns", record["now_ns"]))
    head = [f"{front.name} ({front.kind})", f"capacity {size(record.get('capacity_bytes', 0))}",
            f"up {duration(uptime_ns / 1e9)}"]
    if interval_s is not None:
        head.append(f"refresh {interval_s:g} s")
    head.append(f"window {front.window_s:.2f} s")
    lines = ["  ".join(head)]
    cache = device_window.cache(doc, source)
    if cache is not None:
        c = raid_events.controller(events)
        level = "raid ?" if c.level is None else f"raid {c.level}"
        stripe = "" if c.stripe_bytes is None else f", stripe {size(c.stripe_bytes)}"
        lines.append(f"{level}, {len(members)} members{stripe}  "
                     f"policy {c.policy or '?'}  battery {raid_events.battery_name(cache.battery_state)}  "
                     f"write-back {'on' if cache.write_back_effective else 'off'}")
        lines += _event_lines(list(events))
    lines += [""] + _front_table([front] + luns)
    late = _late_lines([front] + luns)
    if late:
        lines += [""] + late
    if cache is not None:
        lines += [""] + _cache_table(front.name, cache, c)
        lines += [""] + _member_table(members, c)
    return "\n".join(lines) + "\n"
