"""Does a report render? Loads DIR/index.html in headless Chromium (Debian's
chromium, as root too) and reads back what the page's own script recorded:
how many images loaded, which failed, and how many rows the points table has."""
import html.parser
import os
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass

from storlab_cli import deps
from storlab_cli.report.html import POINTS_TABLE_ID
from storlab_cli.errors import UserError

CHROMIUM_TIMEOUT_S = 60
VIRTUAL_TIME_BUDGET_MS = 5000


@dataclass(frozen=True)
class ReportCheck:
    checked: bool             # the page's load handler ran
    images_total: int
    images_loaded: int
    images_failed: list       # src of each image that did not load
    point_rows: int           # <tbody> rows of the points table


class _DomReader(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.body = {}
        self.rows = 0
        self._table_depth = 0     # > 0 inside the points table
        self._in_tbody = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "body":
            self.body = attrs
        elif tag == "table":
            if self._table_depth or attrs.get("id") == POINTS_TABLE_ID:
                self._table_depth += 1
        elif self._table_depth == 1 and tag == "tbody":
            self._in_tbody = True
        elif self._table_depth == 1 and self._in_tbody and tag == "tr":
            self.rows += 1

    def handle_endtag(self, tag):
        if tag == "table" and self._table_depth:
            self._table_depth -= 1
        elif tag == "tbody" and self._table_depth == 1:
            self._in_tbody = False


def parse_dom(dom):
    reader = _DomReader()
    reader.feed(dom)
    body = reader.body

    def count(name):
        value = body.get(f"data-images-{name}") or "0"
        return int(value) if value.isdigit() else 0

    return ReportCheck(checked=body.get("data-report-checked") == "yes",
                       images_total=count("total"), images_loaded=count("loaded"),
                       images_failed=(body.get("data-images-failed") or "").split(),
                       point_rows=reader.rows)


def dump_dom(html_path, timeout_s=CHROMIUM_TIMEOUT_S):
    """The DOM of the page after its load handlers ran (chromium --dump-dom),
    with a throw-away profile directory, killed whole after timeout_s."""
    chromium = shutil.which("chromium")
    if chromium is None:
        raise UserError("chromium is not installed (Debian: "
                        + " ".join(deps.REPORT_CHECK_PACKAGES) + ")")
    url = "file://" + os.path.abspath(html_path)
    with tempfile.TemporaryDirectory(prefix="storlab-chromium-") as profile:
        cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu",
               "--disable-dev-shm-usage", "--no-first-run", "--disable-extensions",
               f"--user-data-dir={profile}",
               f"--virtual-time-budget={VIRTUAL_TIME_BUDGET_MS}", "--dump-dom", url]
        process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, start_new_session=True)
        try:
            out, err = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise UserError(f"{html_path}: chromium did not finish in {timeout_s} s") from None
    if process.returncode != 0 or "<html" not in out:
        lines = [line for line in err.splitlines() if line.strip()]
        raise UserError(f"{html_path}: chromium failed (exit {process.returncode}): "
                        f"{lines[-1] if lines else 'no output'}")
    return out


def check(html_path, timeout_s=CHROMIUM_TIMEOUT_S, install=False):
    """Loads the report in headless Chromium; installs chromium first when
    install is true."""
    if install:
        deps.ensure_packages(deps.REPORT_CHECK_PACKAGES)
    return parse_dom(dump_dom(html_path, timeout_s))
