"""The subcommands: each parses its arguments and calls into the packages beside it."""
