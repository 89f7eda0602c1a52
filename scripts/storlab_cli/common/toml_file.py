"""Reads a TOML file a user gave (a topology, a sweep) into plain data, or
raises one UserError line naming the file: never a traceback, never a hang
on a FIFO or a device, never a parser driven out of its stack."""
import tomllib

from storlab_cli.common import regular_file
from storlab_cli.errors import UserError

# Topologies and sweeps are a few KiB; a file this large is a mistake.
MAX_FILE_BYTES = 4 << 20


def read(path):
    try:
        raw = regular_file.read_bytes(path, MAX_FILE_BYTES)
    except FileNotFoundError as e:
        raise UserError(f"{path}: cannot read: {e.strerror}") from None
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise UserError(f"{path}: not valid TOML: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{path}: not valid TOML: {e}") from None
    except RecursionError:
        raise UserError(f"{path}: not valid TOML here: arrays or tables nested too deep") from None
