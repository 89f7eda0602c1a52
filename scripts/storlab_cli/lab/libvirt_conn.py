"""libvirt through its Python binding: the daemons, the connection.

There is no systemd here: when no libvirtd answers, storlab starts virtlogd
and libvirtd itself (daemonised), and says which PIDs it started so a test
can stop exactly those.
"""
import os
import shutil
import subprocess
import time

from storlab_cli.common import process
from storlab_cli.errors import UserError

URI = "qemu:///system"
DAEMONS = (("virtlogd", "/run/virtlogd.pid"), ("libvirtd", "/run/libvirtd.pid"))


def _libvirt():
    try:
        import libvirt  # noqa: PLC0415 - optional until a lab is used
    except ImportError:
        raise UserError("python3-libvirt is not installed "
                        "(scripts/storlab installs it; run it as root)") from None
    # The binding prints every libvirt error on stderr by default; storlab
    # reports the ones that matter itself.
    libvirt.registerErrorHandler(lambda _ctx, _err: None, None)
    return libvirt


def _pid_alive(pidfile):
    """The PID in pidfile when that process runs (a stopped daemon not yet
    reaped does not), else None."""
    try:
        with open(pidfile, encoding="ascii") as f:
            pid = int(f.read().strip())
    except (OSError, ValueError):
        return None
    return pid if process.running(pid) else None


def ensure_daemons(timeout_s=20):
    """Starts virtlogd and libvirtd when they are not running. Returns the
    PIDs this call started (empty when both were already up)."""
    started = []
    for name, pidfile in DAEMONS:
        if _pid_alive(pidfile):
            continue
        binary = shutil.which(name) or f"/usr/sbin/{name}"
        if not os.path.exists(binary):
            raise UserError(f"{name} is not installed (package libvirt-daemon-system)")
        result = subprocess.run([binary, "-d"], capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise UserError(f"could not start {name}: {result.stderr.strip() or 'exit ' + str(result.returncode)}")
        deadline = time.monotonic() + timeout_s
        while not (pid := _pid_alive(pidfile)):
            if time.monotonic() > deadline:
                raise UserError(f"{name} started but wrote no pidfile {pidfile} within {timeout_s} s")
            time.sleep(0.1)
        started.append(pid)
    return started


def connect(uri=URI):
    """A connection to the system QEMU driver, retrying while the local
    libvirtd starts (a remote one is up or not: no retry)."""
    libvirt = _libvirt()
    deadline = time.monotonic() + (20 if uri == URI else 0)
    while True:
        try:
            return libvirt.open(uri)
        except libvirt.libvirtError as e:
            if time.monotonic() >= deadline:
                raise UserError(f"cannot connect to libvirt at {uri}: {e.get_error_message()}") from None
            time.sleep(0.2)


def error_type():
    return _libvirt().libvirtError


def stop_daemons(pids):
    """Stops daemons this process started (by PID, newest first)."""
    for pid in reversed(pids):
        try:
            os.kill(pid, 15)
        except ProcessLookupError:
            continue
        for _ in range(100):
            if not process.running(pid):       # gone, or exited and not yet reaped
                break
            time.sleep(0.05)
