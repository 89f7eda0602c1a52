"""The parameter keys a storlab plugin takes, as the plugin itself lists
them (`nbdkit PLUGIN --dump-plugin`: storlab_key_* for the driver's keys,
storlab_default_* for the model's parameter table), so a topology is checked
against the C library's own tables, never a copy of them."""
import difflib
import functools
import subprocess

from storlab_cli import build, paths
from storlab_cli.errors import UserError

KEY_PREFIXES = ("storlab_key_", "storlab_default_")


@functools.lru_cache(maxsize=None)
def known(kind):
    """The keys of storlab plugin `kind` ("hdd", "ssd", "raid"), sorted."""
    plugin = paths.plugin(kind)
    build.ensure_built(plugin)
    try:
        result = subprocess.run(["nbdkit", plugin, "--dump-plugin"], capture_output=True,
                                text=True, timeout=30, check=False)
    except OSError as e:
        raise UserError(f"nbdkit: {e.strerror or e} (run scripts/storlab check to build "
                        "and install what storlab needs)") from None
    if result.returncode != 0:
        raise UserError(f"{plugin}: cannot list its keys (not built? run scripts/storlab "
                        f"check): {' '.join(result.stderr.split())[:200]}")
    keys = set()
    for line in result.stdout.splitlines():
        name = line.split("=", 1)[0]
        for prefix in KEY_PREFIXES:
            if name.startswith(prefix):
                keys.add(name[len(prefix):])
    return tuple(sorted(keys))


def unknown_key_reason(kind, key):
    """None when `kind` takes `key`; else why not, with the nearest keys."""
    keys = known(kind)
    if key in keys:
        return None
    near = difflib.get_close_matches(key, keys, n=3)
    hint = f"did you mean {', '.join(near)}? " if near else ""
    return f"not a key of the {kind} plugin ({hint}known: {', '.join(keys)})"
