"""Installs the Debian packages storlab needs, only those missing."""
import os
import shutil
import subprocess

from storlab_cli.errors import UserError

# What building and testing need; one list so demo and check agree.
BUILD_PACKAGES = [
    "gcc", "meson", "ninja-build", "pkg-config", "libcmocka-dev", "perl",
    "nbdkit", "nbdkit-plugin-dev", "fio", "libnbd-bin", "python3-libnbd",
    "python3-pytest", "python3-jinja2", "libxml2-utils",
]
# Python modules the CLI imports at start-up (module -> Debian package): they
# are installed before anything of storlab_cli beyond this file is imported,
# so a fresh machine gets an install, not a traceback.
STARTUP_MODULES = {"jinja2": "python3-jinja2"}
# Drawing a results directory's figures (storlab plot) and checking its report
# renders (the report test runs headless Chromium).
PLOT_PACKAGES = ["gnuplot-nox"]
REPORT_CHECK_PACKAGES = ["chromium"]
# The multi-host lab test's second host: this machine again, through an sshd
# the test starts on loopback (openssh-server; the client is a lab package).
MULTIHOST_CHECK_PACKAGES = ["openssh-server"]
# The plugins' file-sync= test counts a server's fdatasync calls with strace.
TRACE_CHECK_PACKAGES = ["strace"]


def missing_packages(packages):
    missing = []
    for package in packages:
        result = subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}", package],
            capture_output=True, text=True, check=False)
        if result.returncode != 0 or "install ok installed" not in result.stdout:
            missing.append(package)
    return missing


def _privileged(cmd):
    if os.geteuid() == 0:
        return cmd
    if shutil.which("sudo"):
        return ["sudo"] + cmd
    raise UserError("need root (or sudo) to install: " + " ".join(cmd[3:]))


def ensure_packages(packages=BUILD_PACKAGES):
    if shutil.which("dpkg-query") is None:
        raise UserError("this machine has no dpkg: storlab's set-up needs Debian 12")
    missing = missing_packages(packages)
    if not missing:
        return []
    print(f"storlab: installing Debian packages: {' '.join(missing)}", flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-qq"],
                ["apt-get", "install", "-y", "-qq", "--no-install-recommends"] + missing):
        result = subprocess.run(_privileged(cmd), env=env, check=False,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if result.returncode != 0:
            tail = result.stderr.strip().splitlines()[-1:] or ["(no output)"]
            raise UserError(f"'{' '.join(cmd[:2])}' failed: {tail[0]}")
    still = missing_packages(missing)
    if still:
        raise UserError("packages still missing after apt-get: " + " ".join(still))
    return missing


def ensure_startup_modules():
    import importlib.util  # noqa: PLC0415 - only here
    missing = [package for module, package in STARTUP_MODULES.items()
               if importlib.util.find_spec(module) is None]
    if missing:
        ensure_packages(missing)
