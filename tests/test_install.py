"""pytest: `meson install` into a staging tree (--destdir): the plugins
where nbdkit looks for them, the programs, the catalog, the manual pages,
and a `storlab` that runs from there on the installed programs alone (a
simulator sweep end to end) and refuses `check`."""
import os
import shutil
import subprocess

import pytest

from storlab_cli import paths


@pytest.fixture(scope="module")
def stage(tmp_path_factory):
    if not os.path.exists(os.path.join(paths.BUILD_DIR, "build.ninja")):
        pytest.skip(f"{paths.BUILD_DIR}: not a meson build directory")
    root = tmp_path_factory.mktemp("stage")
    result = subprocess.run(["meson", "install", "-C", paths.BUILD_DIR, "--no-rebuild",
                             "--destdir", str(root)], capture_output=True, text=True,
                            timeout=300, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    info = subprocess.run(["meson", "introspect", "--buildoptions", paths.BUILD_DIR],
                          capture_output=True, text=True, check=True).stdout
    prefix = next(o["value"] for o in __import__("json").loads(info) if o["name"] == "prefix")
    yield root, root / prefix.lstrip("/")
    shutil.rmtree(root)


def nbdkit_plugindir():
    out = subprocess.run(["nbdkit", "--dump-config"], capture_output=True, text=True,
                         check=True).stdout
    return next(line.split("=", 1)[1] for line in out.splitlines()
                if line.startswith("plugindir="))


def test_everything_is_where_it_belongs(stage):
    root, prefix = stage
    for kind in ("hdd", "ssd", "raid"):
        # where `nbdkit KIND` finds it by name
        assert (root / nbdkit_plugindir().lstrip("/") / f"nbdkit-{kind}-plugin.so").is_file()
    for program in ("storlab", "storlab-sim", "storlab-stats", "storlab-catalog"):
        assert os.access(prefix / "bin" / program, os.X_OK), program
    share = prefix / "share"
    assert (share / "storlab" / "catalog.json").is_file()
    assert (share / "storlab" / "topologies" / "templates" / "domain.xml.j2").is_file()
    for page in ("man1/storlab.1", "man5/storlab-topology.5", "man5/storlab-sweep.5",
                 "man1/storlab-sim.1", "man1/storlab-stats.1", "man1/storlab-catalog.1",
                 "man1/nbdkit-hdd-plugin.1"):
        assert (share / "man" / page).is_file(), page
    assert not list((share / "storlab").rglob("__pycache__"))


def installed_storlab(stage, *args):
    _, prefix = stage
    env = {k: v for k, v in os.environ.items() if k != "STORLAB_BUILD_DIR"}
    return subprocess.run([str(prefix / "bin" / "storlab"), *args], capture_output=True,
                          text=True, timeout=600, check=False, env=env)


def test_the_installed_storlab_runs_a_sweep_on_the_installed_programs(stage, tmp_path):
    _, prefix = stage
    sweep = prefix / "share" / "storlab" / "topologies" / "sweeps" / "cache-disabled.toml"
    result = installed_storlab(stage, "sweep", str(sweep), "--backend", "sim",
                               "--out", str(tmp_path / "results"))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "results" / "points.csv").is_file()
    assert (tmp_path / "results" / "index.html").is_file()


def test_the_installed_storlab_refuses_check(stage):
    result = installed_storlab(stage, "check")
    assert result.returncode == 1
    assert "this storlab is installed" in result.stderr and "Traceback" not in result.stderr
