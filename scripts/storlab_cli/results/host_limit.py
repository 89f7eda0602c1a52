"""When a lab point measured the host, not the device.

A TCG guest and the path from it to the plugin (the guest's block layer,
QEMU's NBD client, the host's CPU) can hold I/O back from an emulated
device, and then the point shows the host's limit, not the model's figures.
Five signs, each read from the point's own measurements:

  nbd-16        more I/Os outstanding per device than QEMU's NBD client keeps
                in flight (block/nbd.c MAX_NBD_REQUESTS): the rest wait in the
                guest, so the device never sees the depth the workload asks for
  host-queue    the device's own mean queue depth (Little's law over the
                window) below HOST_QUEUE_SHARE_MIN of the depth that reached
                it: the I/Os spent their time in the guest and the host path
  release-late  the plugin released its replies late: the p99 of its release
                lateness above RELEASE_LATE_SHARE_MAX of the device's mean
                latency (the host's CPU could not keep the model's timing)
  late-start    a fio thread's first completion came after the measured window
                began (later than the phases' start_skew_s after its node's
                gate): the guest did not start its threads in time, or their
                first I/Os took that long (long-io says which), and the window
                holds less than the whole load
  long-io       fio's mean latency over its run longer than the time from the
                gate to the window (ramp_s + start_skew_s): a closed loop is
                steady only once a round of its queue has completed, so the
                window began inside the start (a 4-node hybrid lab at 256 KiB,
                64 I/Os a thread in flight, took 12-15 s for its first
                completions and had none in its 14 s window)

The simulator has no host path: its points are never flagged.
"""
from dataclasses import dataclass

# QEMU's NBD client keeps at most this many requests in flight per disk;
# deeper queues wait in the guest (seen in the device stats: max queue depth
# 16 at guest QD32).
QEMU_NBD_IN_FLIGHT = 16
# Half the offered depth missing from the device: the guest and host path
# hold as much time as the device does.
HOST_QUEUE_SHARE_MIN = 0.5
# Lateness beyond a tenth of the device's latency changes what fio measures.
RELEASE_LATE_SHARE_MAX = 0.10

REASONS = {
    "nbd-16": "more I/Os outstanding per device than QEMU's NBD client keeps in flight "
              f"({QEMU_NBD_IN_FLIGHT}): the rest waited in the guest",
    "host-queue": "the device's mean queue depth stayed below "
                  f"{HOST_QUEUE_SHARE_MIN:.0%} of the depth offered to it: I/Os waited in the "
                  "guest and the host path, not in the device",
    "release-late": "the plugin released replies late (release lateness p99 above "
                    f"{RELEASE_LATE_SHARE_MAX:.0%} of the device's mean latency): the host's "
                    "CPU could not keep the model's timing",
    "late-start": "a fio thread's first I/O completed after the measured window had begun "
                  "(later than phases.start_skew_s after its node's gate: it started late, or "
                  "its first I/Os took that long): the window holds less than the whole load",
    "long-io": "the I/Os took longer than the time from the gate to the window (fio's mean "
               "latency above phases.ramp_s + start_skew_s): the window began before the "
               "threads' first I/Os had completed, so it measured the load's start, not a "
               "steady state",
}


@dataclass(frozen=True)
class DeviceLoad:
    """What one device of a point saw, and what the workload offered it."""
    offered_depth: int | None       # I/Os the guest kept outstanding on it (None: a stack between)
    mean_queue_depth: float         # the device's own, in the window
    mean_latency_us: float | None
    release_late_p99_us: float | None


def reasons(load):
    """The signs (REASONS keys, in that order) that this device was host-bound."""
    found = []
    if load.offered_depth is not None:
        if load.offered_depth > QEMU_NBD_IN_FLIGHT:
            found.append("nbd-16")
        reachable = min(load.offered_depth, QEMU_NBD_IN_FLIGHT)
        if load.mean_queue_depth < HOST_QUEUE_SHARE_MIN * reachable:
            found.append("host-queue")
    if (load.release_late_p99_us is not None and load.mean_latency_us
            and load.release_late_p99_us > RELEASE_LATE_SHARE_MAX * load.mean_latency_us):
        found.append("release-late")
    return found


def long_io(fio_mean_latency_us, window_start_s):
    """Whether fio's mean latency over its run (None: no I/O completed)
    outlasted the time from the gate to the window."""
    return fio_mean_latency_us is not None and fio_mean_latency_us > window_start_s * 1e6


def point_reasons(loads, late_start=False, long_io=False):
    """The union over a point's devices (and late-start when a thread
    started late, long-io when its I/Os outlasted the ramp), in REASONS
    order; "" when none."""
    seen = ({"late-start"} if late_start else set()) | ({"long-io"} if long_io else set())
    for load in loads:
        seen.update(reasons(load))
    return "+".join(r for r in REASONS if r in seen)


def explain(code):
    """Sentences for a points.csv host_limit value ("nbd-16+host-queue")."""
    return [REASONS.get(c, c) for c in code.split("+") if c]
