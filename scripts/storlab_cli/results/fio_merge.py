"""One cluster summary from the fio JSON of workload units that ran at the
same time (fio --output-format=json+, or storlab-sim's JSON of the same
shape).

IOPS and bandwidth are sums over units and over the jobs inside a unit;
the mean completion latency is weighted by IOs; percentiles come from the
merged `clat_ns.bins` histograms, found the way fio finds them for its
client-mode "All clients" entry (stat.c calc_clat_percentiles): walk the
buckets in order and take the first whose running count reaches
p / 100 * total, that product computed in x87 long double as fio does.
"""
from dataclasses import dataclass
from fractions import Fraction

from storlab_cli.results import fio_results
from storlab_cli.errors import UserError

DIRECTIONS = ("read", "write")
MB = 1_000_000

# The points.csv columns this module fills, in the contract's order.
METRIC_COLUMNS = (
    "units_run", "iops", "read_iops", "write_iops", "mb_s", "read_mb_s", "write_mb_s",
    "lat_mean_us", "lat_p50_us", "lat_p99_us", "lat_p99_9_us",
    "read_lat_mean_us", "read_lat_p99_us", "write_lat_mean_us", "write_lat_p99_us",
)


@dataclass(frozen=True)
class Direction:
    """One direction (or reads and writes together) summed over jobs/units."""
    ios: int
    io_bytes: int
    iops: float
    bytes_per_s: float
    clat_sum_ns: float          # mean * samples, summed: the IO-weighted mean's numerator
    clat_samples: int
    bins: tuple                 # ((bucket value ns, count), ...) ascending

    @property
    def lat_mean_us(self):
        if not self.clat_samples:
            return None
        return self.clat_sum_ns / self.clat_samples / 1000.0

    @property
    def mb_s(self):
        return self.bytes_per_s / MB

    def percentile_ns(self, p):
        """fio's percentile p (0 < p <= 100) of the bins, in ns; None without samples."""
        return percentiles_ns(self.bins, [p])[p]

    def percentile_us(self, p):
        value = self.percentile_ns(p)
        return None if value is None else value / 1000.0


@dataclass(frozen=True)
class Summary:
    """Units that ran concurrently, summed: read, write, and both together."""
    units: int
    read: Direction
    write: Direction
    total: Direction


def _long_double(x):
    """x (a Fraction) rounded to the x87 80-bit format: 64-bit significand,
    round half to even. fio compares its running count with a long double."""
    if x == 0:
        return x
    exponent = x.numerator.bit_length() - x.denominator.bit_length() - 63
    scaled = x / Fraction(2) ** exponent
    while scaled >= 1 << 64:
        exponent += 1
        scaled /= 2
    while scaled < 1 << 63:
        exponent -= 1
        scaled *= 2
    return Fraction(round(scaled)) * Fraction(2) ** exponent


def _threshold(p, total):
    """fio: (long double) p / 100.0 * nr, each step rounded to long double."""
    return _long_double(_long_double(Fraction(float(p)) / 100) * total)


def percentiles_ns(bins, percentiles):
    """{p: bucket value} for each p, from bins {value: count} or ((value,
    count), ...) in any order: the first bucket (ascending) whose running
    count reaches p/100 * total. None for every p when the bins are empty."""
    ordered = sorted(bins.items() if isinstance(bins, dict) else bins)
    total = sum(count for _, count in ordered)
    out = {p: None for p in percentiles}
    if not total:
        return out
    for p in percentiles:
        if not 0 < float(p) <= 100:
            raise ValueError(f"percentile {p} is not in (0, 100]")
        need = _threshold(p, total)
        running = 0
        for value, count in ordered:
            running += count
            if running >= need:
                out[p] = value
                break
    return out


def _number(value, where, integer=False):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UserError(f"{where}: not a number ({value!r})")
    if integer and value != int(value):
        raise UserError(f"{where}: not an integer ({value!r})")
    if value < 0:
        raise UserError(f"{where}: negative ({value!r})")
    return int(value) if integer else float(value)


def _bins(clat, where):
    bins = clat.get("bins")
    if not isinstance(bins, dict):
        raise UserError(f"{where}.clat_ns has no latency bins "
                        "(fio needs --output-format=json+)")
    out = {}
    for key, count in bins.items():
        try:
            value = int(key)
        except ValueError:
            raise UserError(f"{where}.clat_ns.bins: key {key!r} is not a value in ns") from None
        if value < 0:
            raise UserError(f"{where}.clat_ns.bins: negative key {key!r}")
        out[value] = out.get(value, 0) + _number(count, f"{where}.clat_ns.bins[{key}]", True)
    return out


def _job_direction(job, direction, where):
    """(ios, bytes, runtime ms, clat sum, clat samples, bins) of one job's direction."""
    where = f"{where}.{direction}"
    d = job.get(direction)
    if not isinstance(d, dict):
        raise UserError(f"{where}: missing")
    try:
        ios = _number(d["total_ios"], f"{where}.total_ios", True)
        io_bytes = _number(d["io_bytes"], f"{where}.io_bytes", True)
        runtime_ms = _number(d["runtime"], f"{where}.runtime", True)
        clat = d["clat_ns"]
        samples = _number(clat["N"], f"{where}.clat_ns.N", True)
        mean_ns = _number(clat["mean"], f"{where}.clat_ns.mean") if samples else 0.0
    except (KeyError, TypeError) as e:
        raise UserError(f"{where}: no {e} in it (not fio JSON?)") from None
    bins = _bins(clat, where) if samples else {}
    if sum(bins.values()) != samples:
        raise UserError(f"{where}.clat_ns: bins hold {sum(bins.values())} samples, N says {samples}")
    return ios, io_bytes, runtime_ms, mean_ns * samples, samples, bins


def _direction(parts):
    """Sum of (ios, bytes, runtime, clat sum, samples, bins) parts; rates per part."""
    ios = io_bytes = samples = 0
    iops = bytes_per_s = clat_sum = 0.0
    bins = {}
    for part_ios, part_bytes, runtime_ms, part_clat, part_samples, part_bins in parts:
        ios += part_ios
        io_bytes += part_bytes
        if runtime_ms:
            iops += part_ios * 1000.0 / runtime_ms
            bytes_per_s += part_bytes * 1000.0 / runtime_ms
        clat_sum += part_clat
        samples += part_samples
        for value, count in part_bins.items():
            bins[value] = bins.get(value, 0) + count
    return Direction(ios, io_bytes, iops, bytes_per_s, clat_sum, samples, tuple(sorted(bins.items())))


def merge_directions(directions):
    """Directions already summed (e.g. read and write) put together."""
    bins = {}
    for d in directions:
        for value, count in d.bins:
            bins[value] = bins.get(value, 0) + count
    return Direction(
        ios=sum(d.ios for d in directions),
        io_bytes=sum(d.io_bytes for d in directions),
        iops=sum(d.iops for d in directions),
        bytes_per_s=sum(d.bytes_per_s for d in directions),
        clat_sum_ns=sum(d.clat_sum_ns for d in directions),
        clat_samples=sum(d.clat_samples for d in directions),
        bins=tuple(sorted(bins.items())))


def unit_parts(doc, source):
    """{direction: [per-job parts]} of one unit's fio JSON document."""
    jobs = doc.get("jobs") if isinstance(doc, dict) else None
    if not isinstance(jobs, list) or not jobs:
        raise UserError(f"{source}: no 'jobs' list in the fio JSON")
    parts = {d: [] for d in DIRECTIONS}
    for i, job in enumerate(jobs):
        if not isinstance(job, dict):
            raise UserError(f"{source}: jobs[{i}] is not an object")
        for d in DIRECTIONS:
            parts[d].append(_job_direction(job, d, f"{source}: jobs[{i}]"))
    return parts


def merge_docs(docs):
    """Summary of [(doc, source), ...]: one fio JSON document per unit."""
    if not docs:
        raise UserError("no fio results to merge")
    parts = {d: [] for d in DIRECTIONS}
    for doc, source in docs:
        for d, unit in unit_parts(doc, source).items():
            parts[d].extend(unit)
    read, write = _direction(parts["read"]), _direction(parts["write"])
    return Summary(units=len(docs), read=read, write=write,
                   total=merge_directions([read, write]))


def load_files(paths):
    """[(fio's JSON, its path)] of the units' fio JSON files `paths`."""
    docs = []
    for path in paths:
        try:
            docs.append((fio_results.load(path), str(path)))
        except OSError as e:
            raise UserError(f"{path}: cannot read fio results ({e.strerror})") from None
    return docs


def merge_files(paths):
    """Summary of the units whose fio JSON files are `paths`."""
    return merge_docs(load_files(paths))


def point_metrics(summary):
    """The points.csv metric columns (METRIC_COLUMNS) of one point; None = n/a."""
    t, r, w = summary.total, summary.read, summary.write
    p = percentiles_ns(t.bins, [50, 99, 99.9])

    def us(ns):
        return None if ns is None else ns / 1000.0

    return {
        "units_run": summary.units,
        "iops": t.iops, "read_iops": r.iops, "write_iops": w.iops,
        "mb_s": t.mb_s, "read_mb_s": r.mb_s, "write_mb_s": w.mb_s,
        "lat_mean_us": t.lat_mean_us,
        "lat_p50_us": us(p[50]), "lat_p99_us": us(p[99]), "lat_p99_9_us": us(p[99.9]),
        "read_lat_mean_us": r.lat_mean_us, "read_lat_p99_us": r.percentile_us(99),
        "write_lat_mean_us": w.lat_mean_us, "write_lat_p99_us": w.percentile_us(99),
    }
