"""Writing the results' CSV files the one way the sweep contract asks:
comma separated, header row, RFC 4180 quoting, '.' decimals, empty = n/a;
written whole to a temporary file and renamed, so a crash never leaves half
a file behind."""
import csv
import math
import os

from storlab_cli.errors import UserError


def cell(value):
    """One value as CSV text: None and non-finite numbers are empty."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return ""
        if value == int(value) and abs(value) < 1e15:
            return str(int(value))
        return format(value, ".10g")
    if isinstance(value, str):
        return value
    raise TypeError(f"no CSV form for {value!r}")


def write(path, header, rows):
    """header, then each row (a sequence of values in header order)."""
    tmp = f"{path}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            out = csv.writer(f, lineterminator="\n")
            out.writerow(header)
            for row in rows:
                out.writerow([cell(v) for v in row])
        os.replace(tmp, path)
    except OSError as e:
        raise UserError(f"{path}: cannot write ({e.strerror})") from None
