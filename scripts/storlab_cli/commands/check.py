"""storlab check: install, build, run every test (meson test), summarise."""
import json
import os
import subprocess

from storlab_cli import build, deps, paths
from storlab_cli.lab import lifecycle
from storlab_cli.errors import UserError


def summarise(testlog_path):
    """(passed, failed, skipped) from meson's testlog.json (one JSON per line)."""
    passed = failed = skipped = 0
    with open(testlog_path, encoding="utf-8") as log:
        for number, line in enumerate(log, 1):
            line = line.strip()
            if not line:
                continue
            try:
                result = json.loads(line).get("result")
            except (json.JSONDecodeError, AttributeError):
                # two meson test runs in one build directory write it at once
                raise UserError(f"{testlog_path}: line {number} is not a meson test "
                                "record (was another meson test running in this build "
                                "directory?): see the results above") from None
            if result in ("OK", "EXPECTEDFAIL"):
                passed += 1
            elif result == "SKIP":
                skipped += 1
            else:
                failed += 1
    return passed, failed, skipped


def run(args):
    if paths.INSTALLED:
        raise UserError("check builds and tests a source checkout; this storlab is installed "
                        f"({paths.SOURCE_DIR}): run scripts/storlab check in a checkout")
    # the lab tests need what `up` needs (the multi-host one an sshd); the
    # plot and report tests gnuplot and a headless browser, a plugin test strace
    deps.ensure_packages(lifecycle.UP_PACKAGES + deps.PLOT_PACKAGES + deps.REPORT_CHECK_PACKAGES
                         + deps.MULTIHOST_CHECK_PACKAGES + deps.TRACE_CHECK_PACKAGES)
    build.build()
    cmd = ["meson", "test", "-C", paths.BUILD_DIR, "--print-errorlogs"] + list(args)
    code = subprocess.run(cmd, check=False).returncode
    testlog = os.path.join(paths.BUILD_DIR, "meson-logs", "testlog.json")
    if os.path.exists(testlog):
        passed, failed, skipped = summarise(testlog)
        print(f"storlab-check: {passed} passed, {failed} failed, {skipped} skipped")
        if failed and code == 0:
            code = 1
    return code
