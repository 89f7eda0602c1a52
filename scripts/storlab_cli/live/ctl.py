"""storlab ctl — one command to a running raid plugin's control socket (its
ctl= parameter); prints the one-line reply and exits non-zero when the reply
is an error.

    storlab ctl SOCKET COMMAND...             any raid plugin, by its socket
    storlab ctl LAB NODE DEVICE COMMAND...    a lab's device, found in lab state

From Python (scenarios, tests):
    send_to_device(lab, node, device, command) -> "ok ..." reply line
        raises UserError on an "error ..." reply and when the lab, node or
        device does not exist or the device has no control socket.
    device_ctl_path(lab, node, device) -> the control socket's path
    send_command(path, command) -> the reply line, whatever it says
"""
import os
import socket
import sys

from storlab_cli.lab import device as lab_device
from storlab_cli.errors import UserError

USAGE = ("usage: storlab ctl SOCKET COMMAND...  or  storlab ctl LAB NODE DEVICE COMMAND...  "
         "(battery ok|learning|failed|absent, policy write-back|write-through|forced-write-back, "
         "fail-member N, replace-member N, power-cut, status [LUN])")
# Longer than the plugin's wait before it takes a slot from its longest
# idle client (raid_ctl.c, 10 s): with every slot held, a command is
# answered then, and a 10 s timeout gave up just as it was.
TIMEOUT_S = 30.0


def send_command(path, command):
    """Sends one line, returns the reply line (without the newline)."""
    if "\n" in command:
        raise UserError("a command is one line")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(TIMEOUT_S)
            s.connect(path)
            s.sendall(command.encode() + b"\n")
            reply = b""
            while not reply.endswith(b"\n"):
                chunk = s.recv(4096)
                if not chunk:
                    break
                reply += chunk
    except OSError as e:
        raise UserError(f"{path}: {e.strerror or e}") from None
    if not reply:
        raise UserError(f"{path}: the plugin closed the connection without a reply")
    return reply.decode(errors="replace").rstrip("\n")


def device_ctl_path(lab, node, device):
    """The control socket of a lab's device, from the lab's state (lab.json)."""
    return device_ctl(lab, node, device)[0]


def device_ctl(lab, node, device):
    """(control socket path, the LabHost it is on)."""
    return lab_device.located(lab, node, device, "ctl", "control socket",
                              "raid devices have one")


def send_to_host_device(lab, node, device, command):
    """The reply line of a lab device's controller, wherever its host is."""
    path, host = device_ctl(lab, node, device)
    with host.forwarded(path) as reachable:
        return send_command(reachable, command)


def send_to_device(lab, node, device, command):
    """Sends command to a lab device's controller; returns its "ok ..." reply.
    An "error ..." reply is a UserError naming the device."""
    reply = send_to_host_device(lab, node, device, command)
    if not reply.startswith("ok"):
        raise UserError(f"lab '{lab}' node '{node}' device '{device}': {command}: {reply}")
    return reply


def _is_socket_argument(first):
    """SOCKET form when the first argument names an existing file or is a path
    (lab names are [a-z0-9-] only, so they never contain '/' or '.')."""
    return os.path.exists(first) or "/" in first or "." in first


def run(args):
    if len(args) < 2 or args[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr)
        return 2
    if _is_socket_argument(args[0]):
        reply = send_command(args[0], " ".join(args[1:]))
    else:
        if len(args) < 4:
            raise UserError("usage: storlab ctl LAB NODE DEVICE COMMAND... (no COMMAND given; "
                            "e.g. status, battery failed)")
        reply = send_to_host_device(*args[:3], " ".join(args[3:]))
    print(reply)
    return 0 if reply.startswith("ok") else 1
