"""What a failed command said: the last line of its stderr, the one that
names the problem (the rest is context), for a one-line error."""


def last_line(stderr, fallback):
    """stderr (bytes or str)'s last non-empty line, else fallback."""
    if isinstance(stderr, bytes):
        stderr = stderr.decode(errors="replace")
    lines = (stderr or "").strip().splitlines()
    return lines[-1].strip() if lines else fallback
