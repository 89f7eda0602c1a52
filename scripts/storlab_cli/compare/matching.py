"""Which points of the directories are the same point: they are matched by
the values of the swept keys (the points.csv columns between `point` and the
metrics; an extra point's label stands in its label key's column, so it
matches too). Directories need not have the same grid: a point missing from
one is None there. A key each directory holds at one value of its own (the
battery ok in one, failed in the other) is what is being compared, not
matched on; the note says so."""
from dataclasses import dataclass

from storlab_cli.common import csv_out
from storlab_cli.errors import UserError


@dataclass
class MatchedPoint:
    key: tuple              # the matched keys' values
    rows: list              # per run: its points.csv row, or None


@dataclass
class Comparison:
    runs: list              # [runs.Run], the baseline first
    keys: list              # the swept keys points are matched on
    points: list            # [MatchedPoint], in key order
    note: str | None        # which swept keys are not matched on, and why

    @property
    def baseline(self):
        return self.runs[0]


def _values_of(run, key):
    return {row[key] for row in run.table.rows}


def _tells_runs_apart(runs, key):
    """A key each directory holds at one value, not the same one: the thing
    being compared (battery ok vs failed), not a point."""
    values = [_values_of(run, key) for run in runs]
    return all(len(v) == 1 for v in values) and len(set().union(*values)) > 1


def _not_matched_note(runs, keys, apart):
    reasons = [f"{key} holds one value per directory "
               f"({'/'.join(csv_out.cell(next(iter(_values_of(r, key)))) for r in runs)})"
               for key in apart]
    for key in dict.fromkeys(k for run in runs for k in run.table.swept):
        missing = [run.label for run in runs if key not in run.table.swept]
        if missing:
            reasons.append(f"{key} is not swept in {', '.join(missing)}")
    if not reasons:
        return None
    return f"matching points on {', '.join(keys)} only: {'; '.join(reasons)}"


def match_keys(runs):
    """(keys to match on, a note on the swept keys left out or None)."""
    common = [k for k in runs[0].table.swept if all(k in r.table.swept for r in runs[1:])]
    apart = [k for k in common if _tells_runs_apart(runs, k)]
    keys = [k for k in common if k not in apart]
    if not keys:
        sweeps = "; ".join(f"{run.path} sweeps {', '.join(run.table.swept) or 'nothing'}"
                           for run in runs)
        held = f" ({', '.join(apart)}: one value in each)" if apart else ""
        raise UserError(f"no swept key in common to match points on: {sweeps}{held}")
    return keys, _not_matched_note(runs, keys, apart)


def _describe_key(keys, key):
    return ", ".join(f"{k}={csv_out.cell(v)}" for k, v in zip(keys, key))


def _rows_by_key(run, keys):
    """{key values: row}; two points of one directory at the same key are
    refused: nothing would tell them apart."""
    by_key = {}
    for row in run.table.rows:
        key = tuple(row[k] for k in keys)
        if key in by_key:
            others = [k for k in run.table.swept if k not in keys]
            differ = f" (they differ in {', '.join(others)}, not matched on)" if others else ""
            raise UserError(f"{run.path}: points {by_key[key]['point']} and {row['point']} both "
                            f"have {_describe_key(keys, key)}{differ}: nothing tells them apart")
        by_key[key] = row
    return by_key


def _point_order(keys_seen):
    """Sort key of the points: number values ascending, words in the order
    they were first seen (a grid's order, then extra points' labels)."""
    first_seen = {}
    for key in keys_seen:
        for position, value in enumerate(key):
            first_seen.setdefault((position, value), len(first_seen))

    def order(key):
        return tuple((0, value, 0) if isinstance(value, float)
                     else (1, 0, first_seen[(position, value)])
                     for position, value in enumerate(key))
    return order


def compare(runs):
    """The Comparison of [runs.Run] (runs.load_runs), the baseline first."""
    keys, note = match_keys(runs)
    by_key = [_rows_by_key(run, keys) for run in runs]
    seen = list(dict.fromkeys(key for rows in by_key for key in rows))
    points = [MatchedPoint(key, [rows.get(key) for rows in by_key])
              for key in sorted(seen, key=_point_order(seen))]
    return Comparison(runs, keys, points, note)
