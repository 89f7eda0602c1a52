"""host-cache-probe (scripts/bench/host_cache_probe.c) and host_probe.py:
the reading of the host's caches the lab benches take beside every
measurement to tell a slow spell of the host from the lab. The program is
the real one of the build under test; the spell rule is given readings."""
import json
import os
import subprocess
import sys

import pytest

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SOURCE, "scripts", "bench"))

import host_probe  # noqa: E402

PROBE = host_probe.program()


def probe(*args):
    return subprocess.run([PROBE, *args], capture_output=True, text=True, timeout=120, check=False)


def test_one_json_reading_a_line():
    result = probe("--mib", "2", "--loads", "65536", "--repeat", "3")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert len(lines) == 3
    for line in lines:
        doc = json.loads(line)
        assert doc["mib"] == 2 and doc["loads"] == 65536
        # a load from any cache or memory takes between a nanosecond and a few microseconds
        assert 0.5 < doc["ns_per_load"] < 5000
        assert doc["p90_ns_per_load"] >= doc["ns_per_load"]


def test_loads_are_whole_chunks():
    doc = json.loads(probe("--loads", "40000").stdout)
    assert doc["loads"] == 32768          # two chunks of 16384: what was timed


@pytest.mark.parametrize("args, key, value", [
    (["--mib", "0"], "--mib", "'0'"),
    (["--mib", "4097"], "--mib", "'4097'"),
    (["--mib", "4M"], "--mib", "'4M'"),
    (["--loads", "100"], "--loads", "'100'"),
    (["--repeat", "-1"], "--repeat", "'-1'"),
    (["--repeat"], "--repeat", "no value"),
])
def test_bad_values_refused_in_one_line(args, key, value):
    result = probe(*args)
    assert result.returncode == 2
    assert result.stdout == ""
    message = result.stderr.strip()
    assert "\n" not in message
    assert message.startswith(f"host-cache-probe: {key}: ") and value in message
    assert "expected" in message


def test_unknown_argument_refused():
    result = probe("--size", "4")
    assert result.returncode == 2 and result.stdout == ""
    assert "unknown argument '--size'" in result.stderr and "usage:" in result.stderr


def readings(*values, step_ns=int(1e9)):
    return [{"t_ns": i * step_ns, "ns_per_load": v} for i, v in enumerate(values)]


def test_window_ratio_is_the_mean_inside_the_window_and_its_margin():
    r = readings(20, 20, 120, 20, 20, 500, 500, step_ns=int(host_probe.PROBE_S * 1e9))
    step = int(host_probe.PROBE_S * 1e9)
    # window = readings 1..3; a margin of one PROBE_S takes in readings 0 and 4
    assert host_probe.window_ratio(r, 1 * step, 3 * step, 20) == pytest.approx(200 / 5 / 20)
    assert host_probe.window_ratio(r, 100 * step, 101 * step, 20) is None
    assert host_probe.window_ratio(r, 0, step, None) is None


def test_spell_rule():
    # more than a tenth of the window at 6x the lowest is a spell; less, or the lab's
    # own traffic (1.1x), is not
    assert host_probe.in_spell(host_probe.window_ratio(readings(*[20] * 9, 140), 0, 9e9, 20))
    assert not host_probe.in_spell(host_probe.window_ratio(readings(*[20] * 9, 100), 0, 9e9, 20))
    assert not host_probe.in_spell(host_probe.window_ratio(readings(*[22] * 10), 0, 9e9, 20))
    assert not host_probe.in_spell(None)


@pytest.fixture
def own_lowest(tmp_path, monkeypatch):
    """The machine's lowest reading kept in a file of the test's own."""
    monkeypatch.setattr(host_probe, "LOWEST_FILE", str(tmp_path / "lowest.json"))
    monkeypatch.setattr(host_probe.Lowest, "ns", None)
    return tmp_path / "lowest.json"


def test_the_lowest_reading_is_kept_for_the_next_process(own_lowest):
    host_probe.Lowest.note(30.0)
    host_probe.Lowest.note(25.0)
    host_probe.Lowest.note(40.0)
    assert json.loads(own_lowest.read_text())["ns_per_load"] == 25.0
    host_probe.Lowest.ns = None            # another process: starts from the kept one
    host_probe.Lowest.note(35.0)
    assert host_probe.Lowest.ns == 25.0


def test_sampler_writes_its_readings_after_earlier_ones(tmp_path, own_lowest):
    path = tmp_path / host_probe.PROBE_FILE
    for _ in range(2):                    # the second: a resumed run
        sampler = host_probe.CacheSampler()
        sampler.start()
        taken = sampler.stop(str(path))
        assert len(taken) >= 1
    kept = host_probe.load(str(path))
    assert len(kept) >= 2
    assert all(r["ns_per_load"] > 0 for r in kept)
    assert [r["t_ns"] for r in kept] == sorted(r["t_ns"] for r in kept)
    assert host_probe.Lowest.ns == min(r["ns_per_load"] for r in kept)
    assert host_probe.lowest_of(str(path)) == host_probe.Lowest.ns


@pytest.mark.parametrize("in_spell_for, steady, taken", [
    (0, True, 1),            # steady the first time: measured once
    (1, True, 2),            # once in a spell: again, then steady
    (9, True, 1 + host_probe.SPELL_RETRIES),   # always in a spell: at most the retries
    (9, False, 1),           # the host never read steady: no point measuring again
])
def test_measured_again_after_a_spell(monkeypatch, in_spell_for, steady, taken):
    # wait_steady reads the real host: here it answers as told
    monkeypatch.setattr(host_probe, "wait_steady", lambda say: steady)
    calls, said = [], []

    def measure(spelled):
        calls.append(spelled)
        return len(calls)

    result = host_probe.measured_steady(
        measure, lambda n: f"run {n}" if n <= in_spell_for else "", said.append)
    assert len(calls) == taken and result == taken
    assert calls[0] is None and calls[1:] == [f"run {n}" for n in range(1, taken)]
    assert all("slow spell" in text for text in said)
