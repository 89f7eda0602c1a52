"""The one argument parser of storlab's subcommands."""
import argparse

from storlab_cli.errors import UserError


class Parser(argparse.ArgumentParser):
    """argparse that raises UserError (one line, exit 1) instead of exiting."""

    def error(self, message):
        usage = " ".join(self.format_usage().split()[1:])      # one line, without "usage:"
        raise UserError(f"{message} (usage: {usage})")
