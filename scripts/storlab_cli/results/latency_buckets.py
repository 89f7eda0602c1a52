"""The buckets of a storlab histogram (emulator/core/histogram.h) as storlab-stats
prints them: {"sub_bits": 7, "buckets": [[index, count], ...]}.  Values
below 2^sub_bits have a bucket each; above, each power-of-two octave is
split into 2^sub_bits linear buckets.  Two snapshots' buckets subtract into
a window's, whose percentiles are read as the C side reads them (the value
at rank ceil(p/100 x count), at its bucket's midpoint)."""
import math

from storlab_cli.errors import UserError


def counts(histogram, where):
    """{bucket index: count} of one printed histogram."""
    try:
        sub_bits = histogram["sub_bits"]
        pairs = histogram["buckets"]
        out = {int(i): int(c) for i, c in pairs}
    except (KeyError, TypeError, ValueError) as e:
        raise UserError(f"{where}: not a storlab histogram ({e})") from None
    if sub_bits != 7:
        raise UserError(f"{where}: histogram sub_bits {sub_bits}, this storlab reads 7")
    return out


def difference(after, before):
    return {i: c - before.get(i, 0) for i, c in after.items() if c - before.get(i, 0) > 0}


def bucket_midpoint(index, sub_bits=7):
    group, sub = index >> sub_bits, index & ((1 << sub_bits) - 1)
    if group == 0:
        return float(sub)
    width = 1 << (group - 1)
    lowest = ((1 << sub_bits) + sub) * width
    return float(lowest + (width - 1) // 2)


def percentile(buckets, percentile_pct):
    """The value at percentile_pct of a {index: count} window; None when empty."""
    total = sum(buckets.values())
    if total == 0:
        return None
    rank = max(1, math.ceil(percentile_pct / 100.0 * total))
    seen = 0
    for index in sorted(buckets):
        seen += buckets[index]
        if seen >= rank:
            return bucket_midpoint(index)
    return bucket_midpoint(max(buckets))
