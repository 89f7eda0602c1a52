"""Where things are.

From a source checkout: the tree (SOURCE_DIR) and its meson build directory
(STORLAB_BUILD_DIR, default SOURCE_DIR/build), built on demand.
Installed by `meson install`: the same tree's data under
PREFIX/share/storlab (SOURCE_DIR then), and the programs, plugins and
catalog where installed.json beside it says (written at install time);
nothing is built then."""
import json
import os

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
BUILD_DIR = os.environ.get("STORLAB_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))
INSTALLED_JSON = os.path.join(SOURCE_DIR, "installed.json")
# storlab's cache on a host: the appliance, a lab's plugin bundle (STORLAB_CACHE_DIR here)
DEFAULT_CACHE_DIR = "/var/cache/storlab"


def _installed():
    """{bindir, plugindir, datadir} of an installed storlab, else None (a
    checkout; STORLAB_BUILD_DIR always means a build directory).  In a
    staging tree (meson install --destdir T) every recorded path is read
    under T, found as what precedes the recorded datadir in SOURCE_DIR."""
    if "STORLAB_BUILD_DIR" in os.environ or not os.path.exists(INSTALLED_JSON):
        return None
    with open(INSTALLED_JSON, encoding="utf-8") as f:
        recorded = json.load(f)
    datadir = recorded["datadir"].rstrip("/")
    stage = SOURCE_DIR[:-len(datadir)] if SOURCE_DIR.endswith(datadir) else ""
    return {key: stage + path for key, path in recorded.items()}


INSTALLED = _installed()


def built(*parts):
    return os.path.join(BUILD_DIR, *parts)


def simulator():
    if INSTALLED:
        return os.path.join(INSTALLED["bindir"], "storlab-sim")
    return built("emulator", "storlab-sim")


def stats_tool():
    if INSTALLED:
        return os.path.join(INSTALLED["bindir"], "storlab-stats")
    return built("emulator", "storlab-stats")


def catalog_tool():
    if INSTALLED:
        return os.path.join(INSTALLED["bindir"], "storlab-catalog")
    return built("emulator", "storlab-catalog")


def plugin(kind):
    if INSTALLED:
        return os.path.join(INSTALLED["plugindir"], f"nbdkit-{kind}-plugin.so")
    return built("plugins", f"nbdkit-{kind}-plugin.so")


def catalog():
    """The library's catalog (storlab-catalog's JSON)."""
    if INSTALLED:
        return os.path.join(INSTALLED["datadir"], "catalog.json")
    return built("emulator", "catalog.json")


def job_file(name):
    return os.path.join(SOURCE_DIR, "scripts", "jobs", name)
