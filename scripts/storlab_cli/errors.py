"""The one exception type that means "the user's input or environment is
wrong": main() prints it as a single line and exits non-zero."""


class UserError(Exception):
    pass
