"""Reading fio JSON (from fio itself or from storlab-sim, same format)."""
import json

from storlab_cli.errors import UserError


def load(path):
    """fio's JSON, tolerating the banner lines some engines print first."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    start = text.find("{")
    if start < 0:
        raise UserError(f"{path}: no fio JSON in it")
    try:
        return json.loads(text[start:])
    except json.JSONDecodeError as e:
        raise UserError(f"{path}: not fio JSON ({e.msg} at line {e.lineno})") from None


def direction_summary(doc, direction):
    """IOPS, mean and p99 completion latency (µs) of the first job."""
    job = doc["jobs"][0][direction]
    clat = job["clat_ns"]
    percentiles = clat.get("percentile", {})
    p99 = percentiles.get("99.000000", 0.0)
    return {
        "iops": float(job["iops"]),
        "mean_us": float(clat["mean"]) / 1000.0,
        "p99_us": float(p99) / 1000.0,
        "ios": int(job["total_ios"]),
    }
