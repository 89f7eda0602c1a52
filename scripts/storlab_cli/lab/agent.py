"""The qemu guest agent: host-to-guest control without any host network."""
import base64
import json
import time

from storlab_cli.common.last_line import last_line
from storlab_cli.errors import UserError
from storlab_cli.lab.each_node import raise_if_stopped

EXEC_POLL_S = 0.05
# A guest busy under TCG (tens of fio processes on one vCPU) can leave its
# agent's reply late; libvirt then calls the agent unavailable until it
# answers again. A question that changes nothing (how a command is doing)
# is asked again for this long before the agent is given up on.
AGENT_PATIENCE_S = 60
AGENT_RETRY_S = 1


class AgentError(UserError):
    """The guest agent did not answer a command."""


class StatusLost(AgentError):
    """A command ended, but the agent's reply saying so came too late and
    was dropped: the agent forgets a command once it has reported its end,
    so asked again it no longer knows the pid."""


def _qemu():
    import libvirt_qemu  # noqa: PLC0415
    return libvirt_qemu


def _libvirt():
    import libvirt  # noqa: PLC0415
    return libvirt


def _domain_name(domain):
    try:
        return domain.name()
    except Exception:  # noqa: BLE001 - only for the message
        return "the guest"


def command(domain, execute, arguments=None, timeout_s=10):
    """One agent command; returns its "return" member, or raises AgentError
    naming the domain and the command."""
    message = {"execute": execute}
    if arguments is not None:
        message["arguments"] = arguments
    try:
        reply = _qemu().qemuAgentCommand(domain, json.dumps(message), int(timeout_s), 0)
    except _libvirt().libvirtError as e:
        raise AgentError(f"{_domain_name(domain)}: the guest agent did not answer {execute}: "
                         f"{e.get_error_message()}") from None
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
    raise_if_stopped()
    arguments = {"path": argv[0], "arg": list(argv[1:]), "capture-output": True}
    if stdin_bytes is not None:
        arguments["input-data"] = base64.b64encode(stdin_bytes).decode("ascii")
    return command(domain, "guest-exec", arguments)["pid"]


def poll(domain, pid, patience_s=AGENT_PATIENCE_S):
    """(exit_code, stdout_bytes, stderr_bytes) once a started command has
    exited, else None. An agent that does not answer is asked again for up
    to patience_s (the question changes nothing in the guest)."""
    deadline = time.monotonic() + patience_s
    unanswered = False
    while True:
        try:
            status = command(domain, "guest-exec-status", {"pid": pid})
            break
        except AgentError as e:
            forgotten = "'pid'" in str(e)              # qemu-ga: "Invalid parameter 'pid'"
            if forgotten and unanswered:
                raise StatusLost(f"{_domain_name(domain)}: guest command {pid} ended, but the "
                                 "agent's late reply saying how was lost") from None
            unanswered = unanswered or not forgotten
            if time.monotonic() >= deadline:
                raise
            raise_if_stopped()
            time.sleep(AGENT_RETRY_S)
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
        raise_if_stopped()          # the guest's command runs on; up rolls back
        time.sleep(EXEC_POLL_S)


def run(domain, argv, timeout_s=600, stdin_bytes=None, again_if_lost=False):
    """Runs argv in the guest; returns (exit_code, stdout_bytes, stderr_bytes).
    again_if_lost: a command that can run twice (it reads, or writes the
    same again) is run once more when its result was lost (StatusLost)."""
    pid = start(domain, argv, stdin_bytes)
    try:
        return wait(domain, pid, timeout_s, f"guest command {argv[0]}")
    except StatusLost:
        if not again_if_lost:
            raise
    return wait(domain, start(domain, argv, stdin_bytes), timeout_s, f"guest command {argv[0]}")


def run_checked(domain, argv, what, timeout_s=600, stdin_bytes=None, again_if_lost=False):
    """run(), and its stdout (bytes) when it exits 0; else a UserError
    "WHAT: the command's last stderr line"."""
    code, out, err = run(domain, argv, timeout_s=timeout_s, stdin_bytes=stdin_bytes,
                         again_if_lost=again_if_lost)
    if code != 0:
        raise UserError(f"{what}: {last_line(err, f'exit status {code}')}")
    return out
