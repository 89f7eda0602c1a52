"""Whether a point's window measured a steady state, judged as SNIA's Solid
State Storage Performance Test Specification (PTS) judges one: the window
cut in ROUNDS rounds of equal length, each round's IOPS the mean of its
intervals (timeline.csv); steady when the rounds' IOPS stay within
RANGE_MAX_PCT of their mean (the data excursion) and their least-squares
line moves by at most SLOPE_MAX_PCT of it from the first round to the last
(the slope excursion).

A window that is not steady holds a transient: a cache or an SSD's write
buffer filling, garbage collection catching up after a burst, the state
the point before left. Its IOPS then say as much about the window's length
as about the system, and two runs (a lab and its prediction) need not agree
on it. A longer ramp (`[phases] ramp_s`) lets the transient pass first."""
ROUNDS = 5
RANGE_MAX_PCT = 20.0
SLOPE_MAX_PCT = 10.0
COLUMNS = ("iops_range_pct", "iops_slope_pct")


def _rounds(iops):
    """The series cut in ROUNDS consecutive rounds as equal as they go."""
    n = len(iops)
    bounds = [round(i * n / ROUNDS) for i in range(ROUNDS + 1)]
    return [sum(iops[a:b]) / (b - a) for a, b in zip(bounds, bounds[1:])]


def metrics(timeline_rows):
    """{iops_range_pct, iops_slope_pct} of a point's timeline rows, or {}
    when the window has fewer intervals than ROUNDS or no I/O."""
    iops = [row["iops"] for row in timeline_rows if row.get("iops") is not None]
    if len(iops) < ROUNDS:
        return {}
    rounds = _rounds(iops)
    mean = sum(rounds) / ROUNDS
    if mean <= 0:
        return {}
    x_mean = (ROUNDS - 1) / 2
    slope = (sum((x - x_mean) * (y - mean) for x, y in enumerate(rounds))
             / sum((x - x_mean) ** 2 for x in range(ROUNDS)))
    return {"iops_range_pct": round(100.0 * (max(rounds) - min(rounds)) / mean, 1),
            "iops_slope_pct": round(100.0 * slope * (ROUNDS - 1) / mean, 1)}


def unsteady(range_pct, slope_pct):
    """Why a window with these figures (metrics'; None: not known) was not
    steady, or "" if it was or nothing is known."""
    why = []
    if range_pct is not None and range_pct > RANGE_MAX_PCT:
        why.append(f"its {ROUNDS} rounds' IOPS span {range_pct:.0f} % of their mean"
                   f" (steady: at most {RANGE_MAX_PCT:.0f} %)")
    if slope_pct is not None and abs(slope_pct) > SLOPE_MAX_PCT:
        why.append(f"IOPS {'rose' if slope_pct > 0 else 'fell'} {abs(slope_pct):.0f} % across the"
                   f" window (steady: at most {SLOPE_MAX_PCT:.0f} %)")
    return "; ".join(why)
