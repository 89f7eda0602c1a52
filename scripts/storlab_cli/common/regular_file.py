"""Reads a file a user named without hanging or following it anywhere odd:
a FIFO, a device or a directory is an error naming the path, not a read
that waits forever (a FIFO) or never ends (/dev/zero)."""
import os
import stat

from storlab_cli.errors import UserError


def read_bytes(path, max_bytes):
    """The file's bytes; UserError "PATH: cannot read: ..." otherwise.
    FileNotFoundError passes through for callers to whom absence is normal."""
    path = os.fspath(path)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as e:
        raise UserError(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UserError(f"{path}: cannot read: not a regular file")
        if info.st_size > max_bytes:
            raise UserError(f"{path}: cannot read: {info.st_size} bytes, more than the "
                            f"{max_bytes} bytes such a file can be")
        chunks, left = [], max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as e:
        raise UserError(f"{path}: cannot read: {e.strerror or e}") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > max_bytes:
        raise UserError(f"{path}: cannot read: more than the {max_bytes} bytes such a file can be")
    return data


def check_regular(path, what):
    """UserError unless path names a regular file (for files another program reads)."""
    try:
        info = os.stat(path)
    except OSError as e:
        raise UserError(f"{what} {path}: cannot open: {e.strerror or e}") from None
    if not stat.S_ISREG(info.st_mode):
        raise UserError(f"{what} {path}: not a regular file")
