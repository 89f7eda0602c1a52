"""Whether a process still runs, by its PID.

A process that has exited stays in /proc as a zombie until its parent
reaps it. A daemon's parent is PID 1, and some hosts' PID 1 (a sandbox's
init) reaps only every couple of seconds: waiting for the /proc entry of a
stopped nbdkit or libvirtd to vanish cost 2 s each. A zombie holds no
socket, file or memory: it counts as gone."""


def running(pid, comm=None):
    """True when pid is a live process (not a zombie), and, with comm, one
    whose command name (/proc/PID/comm, at most 15 characters) is comm."""
    try:
        with open(f"/proc/{int(pid)}/stat", encoding="utf-8", errors="replace") as f:
            stat = f.read()
    except (OSError, ValueError):
        return False
    # "PID (COMM) STATE ...": COMM may hold spaces and parentheses
    name, after = stat[stat.find("(") + 1:stat.rfind(")")], stat[stat.rfind(")") + 1:].split()
    if not after or after[0] in ("Z", "X"):
        return False
    return comm is None or name == comm
