"""Configures and builds the C side with meson."""
import os
import subprocess

from storlab_cli import paths
from storlab_cli.errors import UserError


def _run(cmd, what):
    # Quiet when it works; the whole log when it does not.
    result = subprocess.run(cmd, check=False, capture_output=True, text=True)
    if result.returncode != 0:
        print(result.stdout + result.stderr, end="")
        raise UserError(f"{what} failed (exit {result.returncode}): {' '.join(cmd)}")


def build():
    if not os.path.exists(os.path.join(paths.BUILD_DIR, "build.ninja")):
        _run(["meson", "setup", paths.BUILD_DIR, paths.SOURCE_DIR], "meson setup")
    _run(["meson", "compile", "-C", paths.BUILD_DIR], "meson compile")
