"""storlab ctl SOCKET COMMAND... — one command to a running raid plugin's
control socket (its ctl= parameter); prints the one-line reply and exits
non-zero when the reply is an error."""
import socket
import sys

from .errors import UserError

USAGE = ("usage: storlab ctl SOCKET COMMAND...  (battery ok|learning|failed|absent, "
         "policy write-back|write-through|forced-write-back, fail-member N, "
         "replace-member N, power-cut, status)")
TIMEOUT_S = 10.0


def send_command(path, command):
    """Sends one line, returns the reply line (without the newline)."""
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


def run(args):
    if len(args) < 2 or args[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr)
        return 2
    command = " ".join(args[1:])
    if "\n" in command:
        raise UserError("a command is one line")
    reply = send_command(args[0], command)
    print(reply)
    return 0 if reply.startswith("ok") else 1
