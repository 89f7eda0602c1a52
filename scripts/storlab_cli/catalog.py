"""The C library's catalog: its kinds with their parameter tables, the
presets with their sources, and RAID level arithmetic, as storlab-catalog
writes them at build time (build/emulator/catalog.json). The CLI reads its
facts about the library here and never types them a second time."""
import functools
import json

from storlab_cli import build, paths
from storlab_cli.errors import UserError


@functools.lru_cache(maxsize=None)
def load():
    path = paths.catalog()
    build.ensure_built(path)
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise UserError(f"{path}: cannot read the library's catalog: {e}") from None


def param(kind, key):
    """The parameter table entry of kind's key ({key, syntax, type, min, max,
    default, help}), or None."""
    return next((p for p in load()["kinds"][kind]["params"] if p["key"] == key), None)


def default(kind, key):
    """The built-in default of kind's key, spelled as the plugins take it."""
    return param(kind, key)["default"]


def presets(kind):
    """name -> {summary, params (KEY -> VALUE), source, fitted} for one kind."""
    return {p["name"]: p for p in load()["presets"] if p["kind"] == kind}


def effective(kind, params):
    """The value of every key as the builder settles it: the kind's defaults,
    then the preset's parameters, then the keys given. (The preset's name
    must be known: presets(kind).)"""
    values = {p["key"]: p["default"] for p in load()["kinds"][kind]["params"]}
    if "preset" in params:
        values.update(presets(kind)[params["preset"]]["params"])
    values.update({k: v for k, v in params.items() if k != "preset"})
    return values


def raid_levels():
    """The RAID levels the controller model takes, as ints."""
    return sorted(int(level) for level in load()["raid"]["levels"])


def raid_min_members(level):
    return load()["raid"]["levels"][str(level)]["min_members"]


def raid_max_members():
    return load()["raid"]["max_members"]


def raid_data_members(level, members):
    """Members holding data in a row (RAID 1: 1, 10: n/2, 5: n-1, 6: n-2)."""
    return load()["raid"]["levels"][str(level)]["data_members"][str(members)]


def sim_hosts():
    """The cluster simulator's host presets: {name: the link preset its hosts have}."""
    return {name: entry["link"] for name, entry in load()["cluster"]["hosts"].items()}


def default_sim_host():
    return load()["cluster"]["default_host"]


def sim_links():
    """The cluster simulator's link presets, by name."""
    return tuple(load()["cluster"]["links"])
