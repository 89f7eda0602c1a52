"""A host file: one machine's own figures for the cluster model's hosts,
as scripts/bench/tcg_calibrate.py writes them for the machine it ran on.
`storlab sweep --sim-host FILE` and a topology's `[sim] host = "FILE"`
name one where they would name a preset.

    # what this machine's TCG guests spend per I/O (how it was measured)
    host = "tcg"                   # the preset it refines: links, and every
                                   # figure not given here
    batch-ios-max = 3.4            # any ratio key of the library's
    busy-host-share = 0.71
    per-volume-read-us = 236       # any cost key of the library's
    ...

The cost keys and the ratio keys (figures that count no time, with their
bounds) are the library's (the catalog's host_cost_keys and
host_ratio_keys: the keys a cluster spec's node line takes; those of
host_count_keys whole numbers), passed to every node line as given."""
import math
import os
import re

from storlab_cli import catalog
from storlab_cli.common import toml_file
from storlab_cli.schema.loader import Loader

SUFFIX = ".toml"
# keys of a node line besides the costs (cluster_spec.c st_node)
OTHER_KEYS = ("host", "cores")


def ratio_bounds(cluster=None):
    """{key: (lowest, highest)} of the library's figures that count no time
    (of the catalog's "cluster" table, read here if not given)."""
    cluster = cluster or catalog.load()["cluster"]
    return {key: tuple(b) for key, b in cluster["host_ratio_keys"].items()}


def is_file_name(value):
    """A --sim-host or [sim] host value naming a host file, not a preset."""
    return value.endswith(SUFFIX) or os.sep in value


def _is_number(value):
    return not isinstance(value, bool) and isinstance(value, (int, float)) \
        and math.isfinite(value)


class _HostFileLoader(Loader):
    def figures(self, data):
        cluster = catalog.load()["cluster"]
        bounds = ratio_bounds(cluster)
        known = OTHER_KEYS + tuple(bounds) + tuple(cluster["host_cost_keys"])
        self.check_keys(data, known, "")
        if "host" not in data:
            self.fail("host", "missing (the preset these figures refine: "
                      f"{', '.join(catalog.sim_hosts())})")
        preset = self.choice(data["host"], "host", tuple(catalog.sim_hosts()), "host preset")
        words = []
        for key, value in data.items():
            if key == "host":
                continue
            if key == "cores":
                value = self.integer(value, key, (1, 4096))
            elif key in cluster["host_count_keys"]:
                value = self.integer(value, key, tuple(int(b) for b in bounds[key]))
            elif key in bounds:
                low, high = bounds[key]
                if not _is_number(value) or not low <= value <= high:
                    self.fail(key, f"must be a number from {low:g} to {high:g}", value)
            elif not _is_number(value) or value < 0:
                self.fail(key, "must be a number of microseconds, at least 0", value)
            words.append(f"{key}={value:g}")
        return preset, tuple(words)


def load(path):
    """(the preset it refines, its node-line words "KEY=VALUE") of the host
    file at path; one line naming the file and key when it is wrong."""
    return _HostFileLoader(path).figures(toml_file.read(path))


def update(path, figures, source):
    """Sets figures ({cost key: µs}) in the host file at path, a tcg one
    made if there is none: a key already there takes its new value in
    place, a new one is added under a comment saying source. What the file
    held besides (another bench's figures, comments) stays; the file is
    checked before and after, and replaced whole (never half written)."""
    if os.path.exists(path):
        load(path)
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    else:
        lines = ['host = "tcg"']
    added = []
    for key, value in figures.items():
        line = f"{key} = {value:g}"
        at = [i for i, old in enumerate(lines) if re.match(rf"{re.escape(key)}\s*=", old)]
        if at:
            lines[at[0]] = line
        else:
            added.append(line)
    lines = [f"# {source}"] + lines if not added else lines + [f"# {source}"] + added
    with open(path + ".part", "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    try:
        load(path + ".part")
    except Exception:
        os.unlink(path + ".part")
        raise
    os.replace(path + ".part", path)
