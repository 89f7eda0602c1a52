"""Subcommand dispatch; user errors become one line and exit status 1."""
import sys

from . import check, demo
from .errors import UserError

COMMANDS = {
    "demo": (demo.run, "run the HDD model in the simulator and through the plugin, side by side"),
    "check": (check.run, "install what is missing, build, and run every test"),
}


def usage():
    lines = ["usage: storlab COMMAND [ARGS...]", "", "commands:"]
    lines += [f"  {name:8} {help_text}" for name, (_, help_text) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv):
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0 if argv else 2
    command = COMMANDS.get(argv[0])
    if command is None:
        print(f"storlab: unknown command '{argv[0]}' (known: {', '.join(COMMANDS)})",
              file=sys.stderr)
        return 2
    try:
        return command[0](argv[1:])
    except UserError as e:
        print(f"storlab {argv[0]}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"storlab {argv[0]}: interrupted", file=sys.stderr)
        return 130
