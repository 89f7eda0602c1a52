#!/usr/bin/python3
"""The host's caches beside each lab measurement: is this a slow spell?

This machine is a VM sharing its host's L3 and memory with other tenants.
Now and then, for minutes, they take the L3: a lab's costs then double
(cluster_validation.md, 2026-12-03), and a measurement taken in such a
spell says nothing about the lab. host-cache-probe (host_cache_probe.c,
built with the rest) times a chase of dependent loads over 4 MiB, which
fits the L3 when the host is steady: in a spell it ran 5-8 times slower.

A reading is either near the lowest (~20 ns a load here) or 5-8 times
that, and a host in a spell flips between the two within seconds: the
mean of a window's readings over the lowest is the share of its time the
caches were taken, weighted by how slow they were. A CacheSampler reads
every PROBE_S while a lab runs; a measurement whose window's mean is more
than SPELL_RATIO times the lowest reading seen was taken in a spell. The
benches repeat it once the host reads steady again (wait_steady), and
flag it if it never does.

A lab's own guests take the L3 too, so a reading taken while a lab runs
cannot tell other tenants from the lab itself: on 2026-12-07 (06:40 UTC,
the host otherwise quiet, 15-25 ns between runs) one guest of
profile-replicas running fio 4K randread at 8 outstanding alone took the
readings to 16-144 ns (half of them over 40), and a process reading
256 MiB at random, at nice 19, to 17-50 (most 35-50). A slow spell flagged during a lab's
point says the caches were taken, by whom it does not say; the
lab's cost per I/O rises with it either way."""
import json
import os
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

from storlab_cli import build, paths  # noqa: E402
from storlab_cli.errors import UserError  # noqa: E402
from storlab_cli.lab import state as lab_state  # noqa: E402

PROBE_S = 2.0            # ~25 ms of one core a reading: about 1 % of it
SPELL_RATIO = 1.5        # more than a tenth of the time at 6x the lowest
STEADY_RATIO = 1.25      # wait_steady: STEADY_READINGS in a row within this of the lowest
STEADY_READINGS = 5
WAIT_STEADY_S = 600
WAIT_BUDGET_S = 1200     # a process's waits in all: a host that stays in a spell is flagged
SPELL_RETRIES = 2        # measured_steady: times a measurement is taken again
PROBE_FILE = "host-probe.json"


class ProbeError(Exception):
    """host-cache-probe missing or failing: the message says which."""


def program():
    """The probe, built first on a fresh checkout."""
    path = paths.built("scripts", "bench", "host-cache-probe")
    try:
        build.ensure_built(path)
    except UserError as e:
        raise ProbeError(str(e)) from None
    return path


def read():
    """One reading now: ns a dependent load over 4 MiB (the median chunk)."""
    path = program()
    try:
        out = subprocess.run([path], capture_output=True, text=True, timeout=60,
                             check=True).stdout
        return json.loads(out)["ns_per_load"]
    except (OSError, subprocess.SubprocessError, ValueError, KeyError) as e:
        raise ProbeError(f"{path}: {e}") from None


class Waited:
    """Seconds this process has waited for a steady host."""
    s = 0.0


class Lowest:
    """The lowest reading seen on this machine since it booted (kept in
    LOWEST_FILE, so every bench process of a run judges by the same one,
    whichever started in a spell): the host when steady."""
    ns = None

    @classmethod
    def note(cls, ns):
        if cls.ns is None:
            cls.ns = _kept_lowest()
        if cls.ns is None or ns < cls.ns:
            cls.ns = ns
            _keep_lowest(ns)


LOWEST_FILE = os.path.join(lab_state.RUN_BASE, "host-cache-lowest.json")   # gone at reboot


def _kept_lowest():
    try:
        with open(LOWEST_FILE, encoding="utf-8") as f:
            return float(json.load(f)["ns_per_load"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _keep_lowest(ns):
    try:
        os.makedirs(os.path.dirname(LOWEST_FILE), exist_ok=True)
        with open(LOWEST_FILE + ".tmp", "w", encoding="utf-8") as f:
            json.dump({"ns_per_load": ns, "program": "host-cache-probe", "mib": 4}, f)
        os.replace(LOWEST_FILE + ".tmp", LOWEST_FILE)
    except OSError:
        pass                   # this process keeps its own then


def reading():
    """{"t_ns": monotonic, "ns_per_load": x}, noted in Lowest."""
    t_ns = time.monotonic_ns()
    ns = read()
    Lowest.note(ns)
    return {"t_ns": t_ns, "ns_per_load": ns}


class CacheSampler(threading.Thread):
    """A reading every PROBE_S until stop(); readings kept in order."""

    def __init__(self):
        super().__init__(daemon=True)
        self.readings, self.done, self.error = [], threading.Event(), None

    def run(self):
        try:
            self.readings.append(reading())
            while not self.done.wait(PROBE_S):
                self.readings.append(reading())
        except ProbeError as e:
            self.error = e

    def stop(self, path=None):
        """Stops; with path, writes the readings there (after those a
        resumed run wrote before). Raises the sampler's ProbeError."""
        self.done.set()
        self.join()
        if path:
            earlier = load(path) if os.path.exists(path) else []
            lowest = [ns for ns in (lowest_of(path) if earlier else None, Lowest.ns) if ns]
            with open(path, "w", encoding="utf-8") as f:
                json.dump({"program": "host-cache-probe", "mib": 4,
                           "wall_minus_monotonic_ns": time.time_ns() - time.monotonic_ns(),
                           "lowest_ns": min(lowest) if lowest else None,
                           "readings": earlier + self.readings}, f)
        if self.error:
            raise self.error
        return self.readings


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)["readings"]


def lowest_of(path):
    """The machine's lowest reading when path was written (None before
    2026-12-03 09:00, when each run judged by its own)."""
    with open(path, encoding="utf-8") as f:
        return json.load(f).get("lowest_ns")


def window_ratio(readings, t0_ns, t1_ns, lowest_ns):
    """The mean of the readings from t0_ns to t1_ns (one PROBE_S either
    side, so a short window has some) over lowest_ns; None without any."""
    margin_ns = PROBE_S * 1e9
    inside = [r["ns_per_load"] for r in readings if t0_ns - margin_ns <= r["t_ns"] <= t1_ns + margin_ns]
    return statistics.fmean(inside) / lowest_ns if inside and lowest_ns else None


def in_spell(ratio):
    return ratio is not None and ratio > SPELL_RATIO


def ratio_text(ratio):
    return "–" if ratio is None else f"{ratio:.1f}x"


def measured_steady(measure, spells, say, retries=SPELL_RETRIES):
    """measure(spelled) taken again, once the host reads steady, while
    spells(its result) says what it measured in a slow spell (a text;
    empty: nothing), at most retries times; its last result.
    spelled is None the first time, then what spells said."""
    result = measure(None)
    for _ in range(retries):
        spelled = spells(result)
        if not spelled:
            break
        say(f"{spelled} measured in a slow spell of the host: again once it reads steady")
        if not wait_steady(say):
            break
        result = measure(spelled)
    return result


def wait_steady(say, timeout_s=WAIT_STEADY_S):
    """Reads every PROBE_S until STEADY_READINGS in a row are within
    STEADY_RATIO of the lowest; True then, False after timeout_s or once
    the process has waited WAIT_BUDGET_S in all (then the caller goes on
    and flags what it measures)."""
    timeout_s = min(timeout_s, WAIT_BUDGET_S - Waited.s)
    if timeout_s <= 0:
        say(f"waited {WAIT_BUDGET_S} s for a steady host already: going on, flagged")
        return False
    start, steady = time.monotonic(), 0
    say(f"waiting up to {timeout_s:.0f} s for a steady host")
    try:
        while time.monotonic() - start < timeout_s:
            steady = steady + 1 if reading()["ns_per_load"] <= STEADY_RATIO * Lowest.ns else 0
            if steady == STEADY_READINGS:
                say(f"the host read steady after {time.monotonic() - start:.0f} s")
                return True
            time.sleep(PROBE_S)
    finally:
        Waited.s += time.monotonic() - start
    say(f"the host did not read steady in {timeout_s:.0f} s: going on, flagged")
    return False


def main():
    """usage: scripts/bench/host_probe.py [--seconds S]: reads the host's
    caches every PROBE_S for S seconds (default 30) and says whether the
    host is in a slow spell now, before a bench is started."""
    import argparse
    parser = argparse.ArgumentParser(description=main.__doc__.split(":", 1)[1].strip())
    parser.add_argument("--seconds", type=float, default=30.0, metavar="S")
    args = parser.parse_args()
    if not 0 < args.seconds <= 86400:
        parser.error(f"--seconds: {args.seconds:g}: not a number of seconds (0-86400)")
    try:
        sampler = CacheSampler()
        sampler.start()
        time.sleep(args.seconds)
        taken = sampler.stop()
    except ProbeError as e:
        sys.exit(f"host_probe: {e}")
    values = [r["ns_per_load"] for r in taken]
    ratio = window_ratio(taken, taken[0]["t_ns"], taken[-1]["t_ns"], Lowest.ns)
    print(f"{len(values)} readings over {args.seconds:g} s: {min(values):.1f}-{max(values):.1f} ns"
          f" a load (median {statistics.median(values):.1f}); this machine's lowest"
          f" {Lowest.ns:.1f}; mean {ratio:.2f}x it: "
          + ("a slow spell" if in_spell(ratio) else "steady"))


if __name__ == "__main__":
    main()
