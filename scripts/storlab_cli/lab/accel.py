"""Choosing a host's accelerator: KVM only when a real probe boot under KVM
works on that host (here /dev/kvm exists but a KVM guest never runs), else
TCG.  Each host of a lab is asked on its own: a node runs under its host's.

The probe boots the appliance kernel with no root file system: it prints
its banner and panics, and panic=-1 with -no-reboot ends QEMU.  Under a
working KVM that takes a second or two; a hung KVM times out.  One command
line, run on the host through LabHost.run (here, or over its ssh, with the
kernel at its path there), ended by `timeout` on that host: a remote QEMU
never outlives its probe.  The answer is kept on that host, in RUN_BASE (a
tmpfs: forgotten when that host reboots).
"""
import json
import shlex

from storlab_cli.common.last_line import last_line
from storlab_cli.errors import UserError

PROBE_TIMEOUT_S = 15
PROBE_KILL_AFTER_S = 5                 # then `timeout` sends SIGKILL
TIMED_OUT_EXIT = 124                   # `timeout`'s exit code when time ran out
SSH_MARGIN_S = 30                      # reaching a remote host, on top of the probe
CHOICES = ("auto", "kvm", "tcg")
KVM_DEVICE = "/dev/kvm"
CACHE_NAME = "accel-probe.json"        # in RUN_BASE, on each host
CACHE_MAX_BYTES = 4096


def check_requested(requested):
    """requested (auto, kvm or tcg), or a UserError naming --accel."""
    if requested not in CHOICES:
        raise UserError(f"--accel {requested}: expected one of {', '.join(CHOICES)}")
    return requested


def probe_argv(kernel_path):
    """The probe boot's command line, for whichever host runs it."""
    return ["timeout", "-k", str(PROBE_KILL_AFTER_S), str(PROBE_TIMEOUT_S),
            "qemu-system-x86_64", "-accel", "kvm", "-machine", "pc", "-m", "128",
            "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
            "-kernel", kernel_path, "-append", "console=ttyS0 panic=-1", "-serial", "stdio"]


def _kvm_accessible(host):
    device = shlex.quote(KVM_DEVICE)
    out = host.shell(f"if [ -r {device} ] && [ -w {device} ]; then echo yes; fi",
                     f"looking at {KVM_DEVICE}")
    return out.strip() == "yes"


def probe_kvm(host, kernel_path):
    """(works, reason): a probe boot under KVM on host (a LabHost), with
    kernel_path as that host names it."""
    if not _kvm_accessible(host):
        return False, f"{KVM_DEVICE} is missing or not accessible"
    code, out, err = host.run(probe_argv(kernel_path),
                              timeout_s=PROBE_TIMEOUT_S + PROBE_KILL_AFTER_S + SSH_MARGIN_S)
    if code == TIMED_OUT_EXIT:
        return False, f"a probe boot under KVM did not finish in {PROBE_TIMEOUT_S} s"
    if b"Linux version" in out:
        return True, "a probe boot under KVM ran the kernel"
    return False, "a probe boot under KVM failed: " + last_line(err, "no output")


def _cached(host, kernel_path, cache_path):
    """(accel, reason) host kept for this kernel, or None."""
    text = host.read_text(cache_path, CACHE_MAX_BYTES)
    try:
        cached = json.loads(text) if text else {}
        if cached.get("kernel") == kernel_path:
            return cached["accel"], cached["reason"]
    except (ValueError, KeyError, AttributeError):
        pass                           # not one we wrote: probe again
    return None


def choose(requested, host, kernel_path, cache_path):
    """("kvm"|"tcg", reason) for host: forced, or the answer host kept for
    this kernel at cache_path there, or a probe boot there (kept)."""
    if check_requested(requested) != "auto":
        return requested, f"forced with {requested}"
    cached = _cached(host, kernel_path, cache_path)
    if cached:
        return cached[0], cached[1] + " (probed earlier this boot)"
    works, reason = probe_kvm(host, kernel_path)
    accel = "kvm" if works else "tcg"
    host.write_text(cache_path, json.dumps({"kernel": kernel_path, "accel": accel,
                                            "reason": reason}))
    return accel, reason
