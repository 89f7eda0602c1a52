"""Choosing the accelerator: KVM only when a real probe boot under KVM
works (here /dev/kvm exists but a KVM guest never runs), else TCG.

The probe boots the appliance kernel with no root file system: it prints
its banner and panics, and panic=-1 with -no-reboot ends QEMU.  Under a
working KVM that takes a second or two; a hung KVM times out.  The answer
is kept in the run directory (a tmpfs: it is forgotten at host reboot).
"""
import json
import os
import subprocess

from storlab_cli.common.last_line import last_line
from storlab_cli.errors import UserError

PROBE_TIMEOUT_S = 15
CHOICES = ("auto", "kvm", "tcg")


def probe_kvm(kernel_path):
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False, "/dev/kvm is missing or not accessible"
    cmd = ["qemu-system-x86_64", "-accel", "kvm", "-machine", "pc", "-m", "128",
           "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
           "-kernel", kernel_path, "-append", "console=ttyS0 panic=-1", "-serial", "stdio"]
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                                timeout=PROBE_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return False, f"a probe boot under KVM did not finish in {PROBE_TIMEOUT_S} s"
    if "Linux version" in result.stdout:
        return True, "a probe boot under KVM ran the kernel"
    return False, "a probe boot under KVM failed: " + last_line(result.stderr, "no output")


def choose(requested, kernel_path, cache_path):
    """Returns ("kvm"|"tcg", reason)."""
    if requested not in CHOICES:
        raise UserError(f"--accel {requested}: expected one of {', '.join(CHOICES)}")
    if requested != "auto":
        return requested, f"forced with {requested}"
    try:
        with open(cache_path, encoding="utf-8") as f:
            cached = json.load(f)
        if cached.get("kernel") == kernel_path:
            return cached["accel"], cached["reason"] + " (probed earlier this boot)"
    except (OSError, ValueError, KeyError):
        pass
    works, reason = probe_kvm(kernel_path)
    accel = "kvm" if works else "tcg"
    os.makedirs(os.path.dirname(cache_path), exist_ok=True)
    with open(cache_path, "w", encoding="utf-8") as f:
        json.dump({"kernel": kernel_path, "accel": accel, "reason": reason}, f)
    return accel, reason
