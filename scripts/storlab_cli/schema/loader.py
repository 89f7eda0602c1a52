"""The strict reader every file format shares: typed getters that refuse
with one line naming the file, the key path and the value."""
from storlab_cli.errors import UserError


def show(value):
    """A value as the user wrote it in TOML (near enough for a message)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{...}"
    return repr(value)


class Loader:
    def __init__(self, path):
        self.path = path

    # ---- errors and typed getters -------------------------------------------------

    def fail(self, key_path, reason, *value):
        where = f"{key_path} = {show(value[0])}" if value else key_path
        raise UserError(f"{self.path}: {where}: {reason}")

    def check_keys(self, table, known, key_path):
        for key in table:
            if key not in known:
                prefix = f"{key_path}: " if key_path else ""
                raise UserError(f"{self.path}: {prefix}unknown key '{key}' "
                                f"(known: {', '.join(known)})")

    def table(self, value, key_path):
        if not isinstance(value, dict):
            self.fail(key_path, "must be a table", value)
        return value

    def string(self, value, key_path):
        if not isinstance(value, str):
            self.fail(key_path, "must be a string", value)
        return value

    def path_string(self, value, key_path, whose=""):
        """A string naming a file or directory: no control character (below
        a space, or DEL), which no path here should carry. whose: what the
        message says first ("host 'far': ")."""
        text = self.string(value, key_path)
        if any(ord(c) < 0x20 or c == "\x7f" for c in text):
            self.fail(key_path, f"{whose}contains a control character", text)
        return text

    def integer(self, value, key_path, bounds):
        lo, hi = bounds
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(key_path, "must be an integer", value)
        if not lo <= value <= hi:
            self.fail(key_path, f"must be {lo}..{hi}", value)
        return value

    def choice(self, value, key_path, choices, what):
        self.string(value, key_path)
        if value not in choices:
            self.fail(key_path, f"unknown {what} (known: {', '.join(choices)})", value)
        return value

    def name(self, value, key_path, pattern, rule):
        self.string(value, key_path)
        if not pattern.fullmatch(value):
            self.fail(key_path, f"must be {rule}", value)
        return value

    def array_of_tables(self, value, key_path):
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            self.fail(key_path, "must be an array of tables ([[...]])", value)
        return value
