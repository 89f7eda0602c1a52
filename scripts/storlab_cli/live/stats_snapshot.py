"""One snapshot of a live stats file: the JSON `storlab-stats PATH` prints
(paths.stats_tool()), or a UserError naming the file."""
import json
import os
import subprocess

from storlab_cli import paths
from storlab_cli.common.last_line import last_line
from storlab_cli.errors import UserError

TIMEOUT_S = 30


def take(path, host=None):
    """host: the LabHost the file is on (lab/hosts.py), None or local: here."""
    if host is not None and not host.local:
        return host.stats(path)
    tool = paths.stats_tool()
    if not os.access(tool, os.X_OK):
        raise UserError(f"{tool}: not built (meson setup build && ninja -C build)")
    try:
        result = subprocess.run([tool, path], capture_output=True, text=True, timeout=TIMEOUT_S,
                                check=False)
    except subprocess.TimeoutExpired:
        raise UserError(f"stats file {path}: storlab-stats gave no answer in {TIMEOUT_S} s") from None
    if result.returncode != 0:
        raise UserError(last_line(result.stderr, f"storlab-stats exited {result.returncode}")
                        .removeprefix("storlab-stats: "))
    try:
        return json.loads(result.stdout)
    except ValueError:
        raise UserError(f"stats file {path}: storlab-stats printed no JSON") from None
