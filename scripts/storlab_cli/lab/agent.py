"""The qemu guest agent: host-to-guest control without any host network."""
import base64
import json
import time

from storlab_cli.common.last_line import last_line
from storlab_cli.errors import UserError

EXEC_POLL_S = 0.05


def _qemu():
    import libvirt_qemu  # noqa: PLC0415
    return libvirt_qemu


def command(domain, execute, arguments=None, timeout_s=10):
    """One agent command; returns its "return" member."""
    message = {"execute": execute}
    if arguments is not None:
        message["arguments"] = arguments
    reply = _qemu().qemuAgentCommand(domain, json.dumps(message), int(timeout_s), 0)
    return json.loads(reply).get("return")


def answers(domain):
    """True when the agent replies to guest-ping now."""
    try:
        command(domain, "guest-ping", timeout_s=2)
        return True
    except Exception:  # noqa: BLE001 - any libvirt error means "not yet"
        return False


def start(domain, argv, stdin_bytes=None):
    """Starts argv in the guest (no shell: argv[0] is the program path);
    returns its guest pid for wait() (or for kill in the guest)."""
    if not argv:
        raise UserError("no command given")
    arguments = {"path": argv[0], "arg": list(argv[1:]), "capture-output": True}
    if stdin_bytes is not None:
        arguments["input-data"] = base64.b64encode(stdin_bytes).decode("ascii")
    return command(domain, "guest-exec", arguments)["pid"]


def poll(domain, pid):
    """(exit_code, stdout_bytes, stderr_bytes) once a started command has
    exited, else None."""
    status = command(domain, "guest-exec-status", {"pid": pid})
    if not status.get("exited"):
        return None
    out = base64.b64decode(status.get("out-data", ""))
    err = base64.b64decode(status.get("err-data", ""))
    return status.get("exitcode", 128 + status.get("signal", 0)), out, err


def wait(domain, pid, timeout_s=600, what="guest command"):
    """Waits for a started command; returns (exit_code, stdout_bytes, stderr_bytes)."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = poll(domain, pid)
        if result is not None:
            return result
        if time.monotonic() > deadline:
            raise UserError(f"{what} still running after {timeout_s} s")
        time.sleep(EXEC_POLL_S)


def run(domain, argv, timeout_s=600, stdin_bytes=None):
    """Runs argv in the guest; returns (exit_code, stdout_bytes, stderr_bytes)."""
    pid = start(domain, argv, stdin_bytes)
    return wait(domain, pid, timeout_s, f"guest command {argv[0]}")


def run_checked(domain, argv, what, timeout_s=600, stdin_bytes=None):
    """run(), and its stdout (bytes) when it exits 0; else a UserError
    "WHAT: the command's last stderr line"."""
    code, out, err = run(domain, argv, timeout_s=timeout_s, stdin_bytes=stdin_bytes)
    if code != 0:
        raise UserError(f"{what}: {last_line(err, f'exit status {code}')}")
    return out
