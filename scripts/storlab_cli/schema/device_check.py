"""A topology's emulated devices checked by the C library itself
(`storlab-catalog --check`) as a plugin would build them, before anything
starts: a value can be in range and still break a rule across keys (a
scaled disk's buffer smaller than its read-ahead). One run for every
device of every topology a sweep or `up` is about to use."""
import subprocess

from storlab_cli import build, catalog, paths
from storlab_cli.errors import UserError
from storlab_cli.lab.nbdkit import STORLAB_PLUGINS

CHECK_TIMEOUT_S = 60


def _line(device, driver_keys):
    """"KIND KEY=VALUE ..." of the model's keys: the driver's (timing=,
    stats=...) are the plugin's business, not the model's."""
    pairs = [f"{k}={v}" for k, v in sorted(device.params.items()) if k not in driver_keys]
    return " ".join([device.plugin] + pairs)


def check(topologies):
    """Raises a UserError naming the first device the library refuses:
    topologies is a list of (topology, where it comes from, for the error)."""
    driver_keys = {k["key"] for k in catalog.load()["driver_keys"]} - {"preset"}
    lines, first_use = [], {}
    for topo, where in topologies:
        for node in topo.nodes:
            for device in node.devices:
                if device.plugin not in STORLAB_PLUGINS:
                    continue
                line = _line(device, driver_keys)
                if line not in first_use:
                    first_use[line] = f"{where}: node {node.name} device {device.name}"
                    lines.append(line)
    if not lines:
        return
    tool = paths.catalog_tool()
    build.ensure_built(tool)
    try:
        result = subprocess.run([tool, "--check"], input="\n".join(lines) + "\n",
                                capture_output=True, text=True, timeout=CHECK_TIMEOUT_S,
                                check=False)
    except OSError as e:
        raise UserError(f"{tool}: {e.strerror or e}") from None
    verdicts = result.stdout.splitlines()
    if result.returncode != 0 or len(verdicts) != len(lines):
        raise UserError(f"{tool} --check failed: {' '.join(result.stderr.split())[:200]}")
    for line, verdict in zip(lines, verdicts):
        if verdict != "ok":
            raise UserError(f"{first_use[line]} ({line.split()[0]}): {verdict}")
