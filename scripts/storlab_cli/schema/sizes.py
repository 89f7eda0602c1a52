"""Sizes and counts as the plugins read them: nbdkit's size syntax ("512",
"4k", "2G", "1GiB"; powers of 1024) and whole numbers ("8", "8.0")."""
import math
import re

SIZE_RE = re.compile(r"([0-9]+)(?:([kKmMgGtTpPeE])(?:i(?=[bB]))?)?[bB]?")
SIZE_SHIFTS = {"k": 10, "m": 20, "g": 30, "t": 40, "p": 50, "e": 60}


def parse_size_bytes(text):
    """nbdkit-style size ("512", "4k", "2G", "1GiB"; powers of 1024) -> bytes, or None."""
    match = SIZE_RE.fullmatch(text)
    if match is None:
        return None
    shift = SIZE_SHIFTS[match.group(2).lower()] if match.group(2) else 0
    return int(match.group(1)) << shift


def size_text(size_bytes):
    """4096 -> "4k", 16777216 -> "16M": the largest whole unit."""
    for suffix, shift in (("T", 40), ("G", 30), ("M", 20), ("k", 10)):
        if size_bytes >= 1 << shift and size_bytes % (1 << shift) == 0:
            return f"{size_bytes >> shift}{suffix}"
    return str(size_bytes)


def binary_text(nbytes):
    """Binary units for people: exact ones whole ("64 KiB"), others to 2
    decimals ("260.84 GiB")."""
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes // scale} {unit}" if nbytes % scale == 0 else f"{nbytes / scale:.2f} {unit}"
    return f"{nbytes} B"


def count(text):
    """A whole number as the plugins parse counts ("8", "8.0", "8e0"), or None."""
    if not text or any(c not in "0123456789.eE+-" for c in text):
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    if not math.isfinite(value) or value != int(value) or value < 0:
        return None
    return int(value)
