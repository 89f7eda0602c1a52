"""Fuzz test of the topology and sweep parsers: every shipped topology and
sweep file, mutated many ways (values of the wrong type or out of range,
keys lost, renamed or repeated, lines cut, bytes garbled, nesting driven
deep), must load or be refused with one line naming the file. Never a
traceback, never a hang, never an error of more than one line.

Seeded: a failure prints the mutated text, and reruns the same way.
STORLAB_FUZZ_CASES sets the number of mutants per file (default 300).
"""
import glob
import os
import random
import shutil
import subprocess

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(TESTS)
STORLAB = os.path.join(SOURCE, "scripts", "storlab")

from storlab_cli.schema import sweep as sweep_schema, topology
from storlab_cli.sweep import plan
from storlab_cli.errors import UserError

TOPOLOGIES = sorted(glob.glob(os.path.join(SOURCE, "topologies", "*.toml")))
SWEEPS = sorted(glob.glob(os.path.join(SOURCE, "topologies", "sweeps", "*.toml")))
CASES = int(os.environ.get("STORLAB_FUZZ_CASES", "300"))

# Values of every TOML kind, and the edges of each: what a careless edit writes.
ODD_VALUES = [
    "0", "-1", "1", "65536", "4294967297", "9" * 40, "-9" * 20, "1e308", "inf", "-inf", "nan",
    "0.5", "true", "false", '""', '" "', '"-"', '"--run=x"', '"../.."', '"/"', '"\\u0000"',
    '"a\\nb"', '"x" ', '"1G"', '"0"', '"-1G"', '"1.5G"', '"99999999999T"', '"ok"', '"raid"',
    '"memory"', '"hdd"', "[]", "[1, 2]", '["a", "b"]', "[[]]", "{}", "{ a = 1 }",
    '[{ at_s = 1, command = "battery failed" }]', "1979-05-27", "07:32:00",
]
ODD_KEYS = ["", "-", "--run", "a=b", "Name", "count", "name", "params", "devices", "level",
            "size", "nodes", "ftt", "\"a b\"", "x" * 80]


def _value_lines(lines):
    return [i for i, line in enumerate(lines)
            if "=" in line and not line.lstrip().startswith(("#", "["))]


def mutate(text, rng):
    """One malformed variant of a TOML text."""
    lines = text.splitlines()
    kind = rng.randrange(10)
    values = _value_lines(lines)
    if kind == 0 and values:                       # a value of another kind
        i = rng.choice(values)
        lines[i] = lines[i].split("=", 1)[0] + "= " + rng.choice(ODD_VALUES)
    elif kind == 1 and values:                     # a key renamed
        i = rng.choice(values)
        lines[i] = rng.choice(ODD_KEYS) + " =" + lines[i].split("=", 1)[1]
    elif kind == 2 and lines:                      # a line lost
        del lines[rng.randrange(len(lines))]
    elif kind == 3 and lines:                      # a line repeated (duplicate keys, tables)
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
    elif kind == 4:                                # cut anywhere
        return text[:rng.randrange(len(text) + 1)]
    elif kind == 5:                                # bytes garbled
        data = bytearray(text.encode())
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return data.decode("latin-1")
    elif kind == 6:                                # nested past any parser's stack
        depth = rng.choice([50, 1000, 100_000])
        opener, closer = rng.choice([("[", "]"), ("{ a = ", " }")])
        lines.append("deep = " + opener * depth + "1" + closer * depth)
    elif kind == 7 and values:                     # a value table where a scalar was
        i = rng.choice(values)
        key = lines[i].split("=", 1)[0].strip()
        lines[i] = f"[{key}]\nx = 1"
    elif kind == 8:                                # two mutations at once
        return mutate(mutate(text, rng), rng)
    else:                                          # a table header repeated or renamed
        headers = [i for i, line in enumerate(lines) if line.lstrip().startswith("[")]
        if headers:
            i = rng.choice(headers)
            lines.insert(i, rng.choice([lines[i], "[" + rng.choice(ODD_KEYS) + "]",
                                        "[[" + rng.choice(ODD_KEYS) + "]]"]))
    return "\n".join(lines) + "\n"


def refused_in_one_line(error, path, mutant):
    message = str(error)
    assert "\n" not in message, f"a multi-line error for:\n{mutant}\n---\n{message}"
    assert message.startswith(path) or path in message, f"the error names no file: {message}"


def _check_topology(path, mutant):
    try:
        topology.load(path)
    except UserError as e:
        refused_in_one_line(e, path, mutant)


@pytest.mark.parametrize("source", TOPOLOGIES, ids=os.path.basename)
def test_mutated_topologies_load_or_are_refused_in_one_line(tmp_path, source):
    original = open(source, encoding="utf-8").read()
    rng = random.Random(f"topology {os.path.basename(source)}")
    path = str(tmp_path / os.path.basename(source))
    for _ in range(CASES):
        mutant = mutate(original, rng)
        with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(mutant)
        try:
            _check_topology(path, mutant)
        except Exception as e:  # noqa: BLE001 - any other exception is the defect
            pytest.fail(f"{type(e).__name__}: {e}\nfor the topology:\n{mutant}")


@pytest.mark.parametrize("source", SWEEPS, ids=os.path.basename)
def test_mutated_sweeps_load_plan_or_are_refused_in_one_line(tmp_path, source):
    """The sweep file mutated (its topology intact, beside it), then planned
    against its topology, as `storlab sweep` does before anything starts."""
    original = open(source, encoding="utf-8").read()
    rng = random.Random(f"sweep {os.path.basename(source)}")
    for topo in TOPOLOGIES:
        shutil.copy(topo, tmp_path)
    path = str(tmp_path / os.path.basename(source))
    for _ in range(CASES):
        mutant = mutate(original, rng)
        with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(mutant)
        try:
            try:
                sweep = sweep_schema.load(path)
                topo = topology.load(sweep.topology_path)
                plan.make(sweep, topo)
            except UserError as e:
                message = str(e)
                assert "\n" not in message, f"a multi-line error for:\n{mutant}\n---\n{message}"
        except AssertionError:
            raise
        except Exception as e:  # noqa: BLE001
            pytest.fail(f"{type(e).__name__}: {e}\nfor the sweep:\n{mutant}")


@pytest.mark.parametrize("command, name", [("up", "deep.toml"), ("sweep", "deep.toml")])
def test_the_cli_says_one_line_for_a_file_nested_100000_deep(tmp_path, command, name):
    """Through the command itself: exit 1, one line on stderr, no traceback."""
    path = tmp_path / name
    path.write_text('name = "x"\ndeep = ' + "[" * 100_000 + "1" + "]" * 100_000 + "\n")
    result = subprocess.run(["/usr/bin/python3", STORLAB, command, str(path)],
                            capture_output=True, text=True, timeout=120, check=False,
                            env=dict(os.environ, STORLAB_RUN_DIR=str(tmp_path / "run")))
    assert result.returncode == 1, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "nested too deep" in lines[0] and "Traceback" not in result.stderr


@pytest.mark.parametrize("command", ["up", "sweep"])
def test_the_cli_refuses_a_fifo_or_a_device_as_its_file(tmp_path, command):
    fifo = tmp_path / "lab.toml"
    os.mkfifo(fifo)
    for path in (str(fifo), "/dev/zero"):
        result = subprocess.run(["/usr/bin/python3", STORLAB, command, path],
                                capture_output=True, text=True, timeout=60, check=False)
        assert result.returncode == 1, result
        assert result.stderr.strip() == f"storlab {command}: {path}: cannot read: not a regular file"
