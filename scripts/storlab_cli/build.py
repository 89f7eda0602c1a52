"""Configures and builds the C side with meson."""
import os
import subprocess

from storlab_cli import deps, paths
from storlab_cli.errors import UserError


def _run(cmd, what):
    # Quiet when it works; the whole log when it does not.
    result = subprocess.run(cmd, check=False, capture_output=True, text=True)
    if result.returncode != 0:
        print(result.stdout + result.stderr, end="")
        raise UserError(f"{what} failed (exit {result.returncode}): {' '.join(cmd)}")


def build():
    if paths.INSTALLED:
        return                 # an installed storlab: built by whoever installed it
    if not os.path.exists(os.path.join(paths.BUILD_DIR, "build.ninja")):
        _run(["meson", "setup", paths.BUILD_DIR, paths.SOURCE_DIR], "meson setup")
    _run(["meson", "compile", "-C", paths.BUILD_DIR], "meson compile")


def ensure_built(artifact):
    """artifact (a path in the build) exists: on a fresh machine the
    packages are installed and the C side built first, since the CLI asks
    the built library about itself (a plugin's keys) before anything runs."""
    if not os.path.exists(artifact) and not paths.INSTALLED:
        deps.ensure_packages(deps.BUILD_PACKAGES)
        build()
    if not os.path.exists(artifact):
        where = (f"not installed (meson install put storlab under {paths.SOURCE_DIR})"
                 if paths.INSTALLED else f"not built by meson compile -C {paths.BUILD_DIR}")
        raise UserError(f"{artifact}: {where}")
