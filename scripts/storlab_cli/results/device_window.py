"""Device-layer figures of one measured window, from two snapshots of an
emulated device's stats (the JSON `build/emulator/storlab-stats FILE`
prints: "devices" = the front end the guest sees, then for a RAID
controller one record per member disk).

delta(before, after) is the window as a document (what a sweep keeps as
device-<node>-<dev>.json); window() turns it into the points.csv figures;
combine() sums several devices' windows.  layers() gives every record's
figures (front end, then each member) and cache() the RAID controller's
cache in the window: what `storlab top` shows.
"""
import json
from dataclasses import dataclass

from storlab_cli.results import latency_buckets
from storlab_cli.errors import UserError

FRONT_OPS = ("read", "write")       # what fio counts as IOs; flush/trim left out
MB = 1_000_000
RAID = "raid"
LUN = "lun"  # the raid plugin's lun=NAME:SIZE records: lun:NAME

METRIC_COLUMNS = ("dev_iops", "dev_lat_mean_us", "member_iops", "cache_hit_pct", "dirty_mb",
                  "dev_qd_mean", "release_late_p99_us")


@dataclass(frozen=True)
class DeviceWindow:
    name: str
    kind: str
    window_s: float
    ios: int                    # front-end reads + writes completed in the window
    dev_iops: float
    dev_lat_mean_us: float | None   # IO-weighted over reads and writes
    member_iops: float | None       # RAID members summed; None without RAID
    cache_read_hits: int | None     # RAID controller cache, in the window
    cache_read_misses: int | None
    dirty_bytes: int | None         # RAID controller cache at the window's end
    # The host path (real time only; None in the simulator):
    mean_queue_depth: float = 0.0   # front end, Little's law: time IOs spent in it / window
    release_late_p99_us: float | None = None    # how late the plugin released its replies

    @property
    def cache_hit_pct(self):
        if self.cache_read_hits is None:
            return None
        reads = self.cache_read_hits + self.cache_read_misses
        return 100.0 * self.cache_read_hits / reads if reads else None

    @property
    def dirty_mb(self):
        return None if self.dirty_bytes is None else self.dirty_bytes / MB

    def metrics(self):
        """The points.csv device columns (METRIC_COLUMNS); None = n/a."""
        return {"dev_iops": self.dev_iops, "dev_lat_mean_us": self.dev_lat_mean_us,
                "member_iops": self.member_iops, "cache_hit_pct": self.cache_hit_pct,
                "dirty_mb": self.dirty_mb, "dev_qd_mean": self.mean_queue_depth,
                "release_late_p99_us": self.release_late_p99_us}


def _uint(value, where):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UserError(f"{where}: not a count ({value!r})")
    return value


def _records(doc, source):
    devices = doc.get("devices") if isinstance(doc, dict) else None
    if not isinstance(devices, list) or not devices:
        raise UserError(f"{source}: no 'devices' list (not storlab-stats JSON?)")
    for i, record in enumerate(devices):
        if not isinstance(record, dict) or not all(k in record for k in ("name", "kind", "now_ns", "ops")):
            raise UserError(f"{source}: devices[{i}] lacks name/kind/now_ns/ops")
    return devices


def load(path):
    """A storlab-stats snapshot (or a delta() document) from a file."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise UserError(f"{path}: cannot read device stats ({e.strerror})") from None
    except json.JSONDecodeError as e:
        raise UserError(f"{path}: not JSON ({e.msg} at line {e.lineno})") from None


def _op_totals(record, op, where):
    """(count, bytes, latency sum ns) of one op so far; an absent op is idle."""
    o = record["ops"].get(op)
    if o is None:
        return 0, 0, 0.0
    try:
        count = _uint(o["count"], f"{where}.ops.{op}.count")
        nbytes = _uint(o["bytes"], f"{where}.ops.{op}.bytes")
        mean = o["latency_ns"]["mean"]
    except (KeyError, TypeError) as e:
        raise UserError(f"{where}.ops.{op}: no {e} in it") from None
    if isinstance(mean, bool) or not isinstance(mean, (int, float)) or mean < 0:
        raise UserError(f"{where}.ops.{op}.latency_ns.mean: not a latency ({mean!r})")
    return count, nbytes, count * float(mean)


def delta(before, after, source="device stats", window_s=None):
    """The window between two snapshots of one device as a document:
    per record the reads/writes completed (count, bytes, latency sum), the
    model counters at the end and their change. The window is window_s when
    given (the runner's wall clock), else how far the front end's clock
    moved (its time of last activity: shorter when the device idled)."""
    old, new = _records(before, f"{source} (before)"), _records(after, f"{source} (after)")
    if [r["name"] for r in old] != [r["name"] for r in new]:
        raise UserError(f"{source}: before and after hold different devices "
                        f"({[r['name'] for r in old]} vs {[r['name'] for r in new]})")
    if window_s is None:
        window_ns = _uint(new[0]["now_ns"], f"{source}: now_ns") - _uint(old[0]["now_ns"], f"{source}: now_ns")
    else:
        window_ns = round(window_s * 1e9)
    if window_ns <= 0:
        raise UserError(f"{source}: no time passed between the snapshots of {new[0]['name']}")
    out = []
    for b, a in zip(old, new):
        where = f"{source}: {a['name']}"
        ops = {}
        for op in FRONT_OPS:
            (c0, b0, l0), (c1, b1, l1) = _op_totals(b, op, where), _op_totals(a, op, where)
            if c1 < c0 or b1 < b0:
                raise UserError(f"{where}: {op} count went backwards (device restarted between snapshots?)")
            ops[op] = {"count": c1 - c0, "bytes": b1 - b0, "lat_sum_ns": max(l1 - l0, 0.0)}
        counters_b, counters_a = b.get("counters", {}), a.get("counters", {})
        if not isinstance(counters_a, dict) or not isinstance(counters_b, dict):
            raise UserError(f"{where}: 'counters' is not an object")
        record = {"name": a["name"], "kind": a["kind"], "ops": ops}
        if isinstance(a.get("queue_depth"), int):
            record["queue_depth"] = a["queue_depth"]           # at the window's end
        if "busy_ns" in a and "busy_ns" in b:                  # time with I/O queued, in the window
            record["busy_ns"] = max(_uint(a["busy_ns"], f"{where}.busy_ns")
                                    - _uint(b["busy_ns"], f"{where}.busy_ns"), 0)
        if isinstance(a.get("utilization"), (int, float)):
            record["utilization"] = a["utilization"]           # busy share since the start
        release = _release_window(b, a, where)
        if release is not None:
            record["release_lateness_buckets"] = release
        out.append({**record, "counters": counters_a,
                    "counter_deltas": {k: v - counters_b.get(k, 0) for k, v in counters_a.items()
                                       if isinstance(v, int) and isinstance(counters_b.get(k, 0), int)}})
    return {"window_ns": window_ns, "devices": out}


def _release_window(before, after, where):
    """{bucket: count} of the replies released in the window and how late
    (real-time plugins); None when the snapshots do not say (older ones)."""
    try:
        histograms = [r["realtime"]["release_lateness_histogram"] for r in (before, after)]
    except (KeyError, TypeError):
        return None
    old, new = (latency_buckets.counts(h, f"{where}.realtime") for h in histograms)
    return {str(i): c for i, c in sorted(latency_buckets.difference(new, old).items())}


def window(doc, source="device window"):
    """DeviceWindow of a delta() document: front-end IOPS and mean latency;
    for a RAID controller also its members' IOPS, its cache read hit share
    and dirty bytes at the window's end."""
    try:
        window_ns = doc["window_ns"]
        devices = doc["devices"]
        front = devices[0]
        ops = [front["ops"][op] for op in FRONT_OPS]
        ios = sum(_uint(o["count"], f"{source}: count") for o in ops)
        lat_sum_ns = sum(float(o["lat_sum_ns"]) for o in ops)
    except (KeyError, TypeError, IndexError) as e:
        raise UserError(f"{source}: not a device window document (no {e})") from None
    if isinstance(window_ns, bool) or not isinstance(window_ns, int) or window_ns <= 0:
        raise UserError(f"{source}: window_ns must be a positive integer ({window_ns!r})")
    window_s = window_ns / 1e9
    member_iops = hits = misses = dirty = None
    if front["kind"] == RAID:
        try:
            # the controller's LUNs (kind "lun", after the members) are front ends
            members = [m for m in devices[1:] if m["kind"] != LUN]
            deltas, counters = front["counter_deltas"], front["counters"]
            if members:
                member_ios = sum(_uint(m["ops"][op]["count"], f"{source}: {m['name']}")
                                 for m in members for op in FRONT_OPS)
            else:
                # a controller without its members' records (a cluster's raid
                # layer): its own count of the I/O it gave them
                member_ios = sum(_uint(deltas[k], f"{source}: {k} in the window")
                                 for k in ("member_reads", "member_writes"))
            hits = _uint(deltas["cache_read_hits"], f"{source}: cache_read_hits in the window")
            misses = _uint(deltas["cache_read_misses"], f"{source}: cache_read_misses in the window")
            dirty = _uint(counters["dirty_bytes"], f"{source}: dirty_bytes")
        except (KeyError, TypeError) as e:
            raise UserError(f"{source}: RAID record without {e}") from None
        member_iops = member_ios / window_s
    return DeviceWindow(name=front["name"], kind=front["kind"], window_s=window_s, ios=ios,
                        dev_iops=ios / window_s,
                        dev_lat_mean_us=lat_sum_ns / ios / 1000.0 if ios else None,
                        member_iops=member_iops, cache_read_hits=hits,
                        cache_read_misses=misses, dirty_bytes=dirty,
                        mean_queue_depth=lat_sum_ns / window_ns,
                        release_late_p99_us=_release_late_p99_us(front))


def _release_late_p99_us(record):
    """The p99 of how late a delta() record's replies were released, or None
    (the simulator; snapshots without it; no release in the window)."""
    late = record.get("release_lateness_buckets")
    late_p99_ns = None if late is None else latency_buckets.percentile(
        {int(i): c for i, c in late.items()}, 99.0)
    return None if late_p99_ns is None else late_p99_ns / 1000.0


@dataclass(frozen=True)
class LayerWindow:
    """One record of a window: the front end or one RAID member."""
    name: str
    kind: str
    window_s: float
    reads: int
    writes: int
    read_bytes: int
    write_bytes: int
    read_lat_sum_ns: float
    write_lat_sum_ns: float
    queue_depth: int | None         # in flight at the window's end
    busy_ns: int | None             # time with I/O in flight, in the window
    utilization: float | None       # busy share since the device started (older snapshots)
    release_late_p99_us: float | None = None    # real time: how late replies left (p99)

    @property
    def read_iops(self):
        return self.reads / self.window_s

    @property
    def write_iops(self):
        return self.writes / self.window_s

    @property
    def iops(self):
        return (self.reads + self.writes) / self.window_s

    @property
    def read_mb_s(self):
        return self.read_bytes / MB / self.window_s

    @property
    def write_mb_s(self):
        return self.write_bytes / MB / self.window_s

    @property
    def mb_s(self):
        return (self.read_bytes + self.write_bytes) / MB / self.window_s

    @staticmethod
    def _mean_us(lat_sum_ns, count):
        return lat_sum_ns / count / 1000.0 if count else None

    @property
    def read_lat_mean_us(self):
        return self._mean_us(self.read_lat_sum_ns, self.reads)

    @property
    def write_lat_mean_us(self):
        return self._mean_us(self.write_lat_sum_ns, self.writes)

    @property
    def lat_mean_us(self):
        return self._mean_us(self.read_lat_sum_ns + self.write_lat_sum_ns, self.reads + self.writes)

    @property
    def mean_queue_depth(self):
        """Little's law over the IOs completed in the window: their time in
        the device / the window."""
        return (self.read_lat_sum_ns + self.write_lat_sum_ns) / (self.window_s * 1e9)

    @property
    def busy_pct(self):
        """Share of the window with I/O in flight (busy_ns), else the share
        since the start (utilization); None when the stats have neither."""
        if self.busy_ns is not None:
            return min(100.0, 100.0 * self.busy_ns / (self.window_s * 1e9))
        return None if self.utilization is None else 100.0 * self.utilization


def layers(doc, source="device window"):
    """LayerWindow of every record of a delta() document, front end first."""
    try:
        window_ns, devices = doc["window_ns"], doc["devices"]
        out = []
        for r in devices:
            where = f"{source}: {r['name']}"
            rd, wr = r["ops"]["read"], r["ops"]["write"]
            out.append(LayerWindow(
                name=r["name"], kind=r["kind"], window_s=window_ns / 1e9,
                reads=_uint(rd["count"], f"{where}: read count"),
                writes=_uint(wr["count"], f"{where}: write count"),
                read_bytes=_uint(rd["bytes"], f"{where}: read bytes"),
                write_bytes=_uint(wr["bytes"], f"{where}: write bytes"),
                read_lat_sum_ns=float(rd["lat_sum_ns"]), write_lat_sum_ns=float(wr["lat_sum_ns"]),
                queue_depth=r.get("queue_depth"), busy_ns=r.get("busy_ns"),
                utilization=r.get("utilization"), release_late_p99_us=_release_late_p99_us(r)))
    except (KeyError, TypeError) as e:
        raise UserError(f"{source}: not a device window document (no {e})") from None
    if isinstance(window_ns, bool) or not isinstance(window_ns, int) or window_ns <= 0:
        raise UserError(f"{source}: window_ns must be a positive integer ({window_ns!r})")
    return out


@dataclass(frozen=True)
class CacheWindow:
    """A RAID controller's cache in a window (counts) and at its end (state)."""
    window_s: float
    read_hits: int
    read_misses: int
    writes_cached: int              # acknowledged from the cache
    writes_through: int             # waited for the members
    destaged_bytes: int             # written from the cache to the members
    dirty_bytes: int                # at the window's end
    battery_state: int              # at the end: counter value (0 ok, 1 learning, 2 failed, 3 absent)
    write_back_effective: bool      # at the end

    @property
    def hit_pct(self):
        reads = self.read_hits + self.read_misses
        return 100.0 * self.read_hits / reads if reads else None

    @property
    def dirty_mb(self):
        return self.dirty_bytes / MB

    @property
    def destage_mb_s(self):
        return self.destaged_bytes / MB / self.window_s


def cache(doc, source="device window"):
    """CacheWindow of a delta() document's RAID front end; None for other kinds."""
    try:
        front = doc["devices"][0]
        if front["kind"] != RAID:
            return None
        deltas, counters = front["counter_deltas"], front["counters"]

        def in_window(key):
            return _uint(deltas[key], f"{source}: {key} in the window")

        return CacheWindow(
            window_s=doc["window_ns"] / 1e9,
            read_hits=in_window("cache_read_hits"), read_misses=in_window("cache_read_misses"),
            writes_cached=in_window("writes_cached"), writes_through=in_window("writes_through"),
            destaged_bytes=in_window("destaged_bytes"),
            dirty_bytes=_uint(counters["dirty_bytes"], f"{source}: dirty_bytes"),
            battery_state=_uint(counters["battery_state"], f"{source}: battery_state"),
            write_back_effective=bool(counters["write_back_effective"]))
    except (KeyError, TypeError, IndexError) as e:
        raise UserError(f"{source}: RAID record without {e}") from None


def window_between(before, after, source="device stats", window_s=None):
    return window(delta(before, after, source, window_s), source)


def combine(windows):
    """Several devices' windows as one: IOPS summed, latency weighted by IOs,
    RAID figures summed over the RAID devices (None when there is none)."""
    if not windows:
        raise UserError("no device windows to combine")
    ios = sum(w.ios for w in windows)
    weighted = sum(w.dev_lat_mean_us * w.ios for w in windows if w.ios)
    raid = [w for w in windows if w.member_iops is not None]

    def raid_sum(field):
        return sum(getattr(w, field) for w in raid) if raid else None

    return DeviceWindow(
        name="+".join(w.name for w in windows), kind="+".join(sorted({w.kind for w in windows})),
        window_s=max(w.window_s for w in windows), ios=ios,
        dev_iops=sum(w.dev_iops for w in windows),
        dev_lat_mean_us=weighted / ios if ios else None,
        member_iops=raid_sum("member_iops"), cache_read_hits=raid_sum("cache_read_hits"),
        cache_read_misses=raid_sum("cache_read_misses"), dirty_bytes=raid_sum("dirty_bytes"),
        mean_queue_depth=sum(w.mean_queue_depth for w in windows) / len(windows),
        release_late_p99_us=max((w.release_late_p99_us for w in windows
                                 if w.release_late_p99_us is not None), default=None))
