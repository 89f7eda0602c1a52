"""One nbdkit process serving on a private unix socket, stopped by its PID."""
import os
import shlex
import signal
import subprocess
import time

from storlab_cli import paths
from storlab_cli.common import process
from storlab_cli.errors import UserError

STORLAB_PLUGINS = ("hdd", "ssd", "raid")
# Plugins with a live control socket (ctl=PATH; `storlab ctl`).
CONTROL_PLUGINS = ("raid",)


def plugin_argument(plugin):
    """What nbdkit is told: the built .so for storlab's kinds, else the name."""
    return paths.plugin(plugin) if plugin in STORLAB_PLUGINS else plugin


class Nbdkit:
    def __init__(self, workdir, plugin, params, options=(), threads=64, wait_for=()):
        """plugin: a storlab kind ("hdd") or any installed nbdkit plugin name.
        wait_for: more paths the plugin creates once running (a ctl= socket),
        waited for like the NBD socket."""
        name = plugin
        self.socket = os.path.join(workdir, f"{name}.sock")
        self.stderr_path = os.path.join(workdir, f"{name}.stderr")
        target = plugin_argument(plugin)
        # "--": nbdkit's options end here; no parameter can be read as one
        cmd = (["nbdkit", "--foreground", "--exit-with-parent", f"--threads={threads}",
                "-U", self.socket] + list(options) + ["--", target] + list(params))
        self._stderr = open(self.stderr_path, "w", encoding="utf-8")
        self.process = subprocess.Popen(cmd, stderr=self._stderr)
        deadline = time.monotonic() + 10
        while not all(os.path.exists(path) for path in (self.socket, *wait_for)):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                with open(self.stderr_path, encoding="utf-8") as err:
                    raise UserError(f"nbdkit {plugin} did not start: {err.read().strip()}")
            time.sleep(0.05)

    @property
    def uri(self):
        return f"nbd+unix:///?socket={self.socket}"

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._stderr.close()
        if os.path.exists(self.socket):
            os.unlink(self.socket)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


# ---- daemonised servers for labs: outlive the CLI, stopped by pidfile ----

def start_daemon(plugin, params, socket_path, pidfile, socket_group_id, threads=64,
                 timeout_s=15, wait_for=()):
    """Starts a backgrounded nbdkit serving plugin on socket_path; the socket
    is made reachable by socket_group_id (libvirt's qemu user) and nobody else.
    wait_for: more paths the plugin creates once running (a ctl= socket),
    waited for like the socket. Raises UserError with nbdkit's own message
    when it refuses to start."""
    target = plugin_argument(plugin)
    cmd = ["nbdkit", f"--threads={threads}", "-U", socket_path, "-P", pidfile,
           "--", target] + list(params)
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        message = " ".join(result.stderr.strip().splitlines()) or f"exit {result.returncode}"
        raise UserError(f"nbdkit {plugin} {' '.join(params)}: {message}")
    deadline = time.monotonic() + timeout_s
    for path in (socket_path, pidfile, *wait_for):
        while not os.path.exists(path):
            if time.monotonic() > deadline:
                raise UserError(f"nbdkit {plugin}: no {path} after {timeout_s} s")
            time.sleep(0.02)
    os.chown(socket_path, 0, socket_group_id)
    os.chmod(socket_path, 0o660)
    return read_pid(pidfile)


def read_pid(pidfile):
    try:
        with open(pidfile, encoding="ascii") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def is_nbdkit(pid):
    """True when pid is a running nbdkit (an exited one waiting for its
    reaper is not: common/process.py)."""
    return process.running(pid, "nbdkit")


def stop_daemons(pidfiles, timeout_s=15):
    """Stops the nbdkits the pidfiles name (only those whose PID still is
    an nbdkit), all at once: each is sent SIGTERM first, then all are
    waited for together, each until it has exited (its zombie, waiting
    for a reaper that may come seconds later, counts as gone). Returns the
    pidfiles whose nbdkit was stopped."""
    pids = {p: read_pid(p) for p in pidfiles}
    pids = {p: pid for p, pid in pids.items() if pid is not None and is_nbdkit(pid)}
    for pid in pids.values():
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while any(is_nbdkit(pid) for pid in pids.values()):
        if time.monotonic() > deadline:
            for pid in pids.values():
                if is_nbdkit(pid):
                    os.kill(pid, signal.SIGKILL)
            break
        time.sleep(0.02)
    return list(pids)


# ---- the same on a lab's host (lab/hosts.py LabHost): here, or over ssh ----

def _alive_test(pid_expr):
    """sh: true when the process pid_expr names is an nbdkit (as is_nbdkit)."""
    return (f'{{ [ "$(cat /proc/{pid_expr}/comm 2>/dev/null)" = nbdkit ] && '
            f"! grep -qs '^State:[[:space:]]*Z' /proc/{pid_expr}/status; }}")


def start_on(host, plugin, target, params, socket_path, pidfile, socket_group_id, threads=64,
             timeout_s=15, wait_for=()):
    """start_daemon on host; target: the plugin as that host names it (its
    bundle's .so for storlab's kinds). Returns the server's PID."""
    if host.local:
        return start_daemon(plugin, params, socket_path, pidfile, socket_group_id, threads,
                            timeout_s, wait_for)
    cmd = shlex.join(["nbdkit", f"--threads={threads}", "-U", socket_path, "-P", pidfile,
                      "--", target] + list(params))
    waits = " && ".join(f"[ -e {shlex.quote(p)} ]" for p in (socket_path, pidfile, *wait_for))
    tries = int(timeout_s / 0.05)
    sock = shlex.quote(socket_path)
    script = (f"{cmd} || exit 1; i=0; until {waits}; do i=$((i+1)); "
              f"if [ $i -gt {tries} ]; then echo 'no socket after {timeout_s} s' >&2; exit 1; fi; "
              f"sleep 0.05; done; chown 0:{int(socket_group_id)} {sock} && chmod 0660 {sock} && "
              f"cat {shlex.quote(pidfile)}")
    return int(host.shell(script, f"nbdkit {plugin} {' '.join(params)}").strip())


def stop_all_on(host, pidfiles, timeout_s=15):
    """stop_daemons on host (one ssh for all). Returns the pidfiles whose
    nbdkit was stopped."""
    pidfiles = list(pidfiles)
    if host.local:
        return stop_daemons(pidfiles, timeout_s)
    if not pidfiles:
        return []
    tries = int(timeout_s / 0.02)
    # each: its pid if it is an nbdkit; all sent SIGTERM, then waited for together
    script = ("stopped=; for f in " + " ".join(shlex.quote(p) for p in pidfiles) + "; do "
              "pid=$(cat \"$f\" 2>/dev/null) && [ -n \"$pid\" ] || continue; "
              f"{_alive_test('$pid')} || continue; kill -TERM $pid; "
              "stopped=\"$stopped $pid:$f\"; done; i=0; "
              "while :; do alive=; for e in $stopped; do pid=${e%%:*}; "
              f"{_alive_test('$pid')} && alive=1; done; [ -z \"$alive\" ] && break; "
              f"i=$((i+1)); if [ $i -gt {tries} ]; then for e in $stopped; do "
              "kill -KILL ${e%%:*} 2>/dev/null; done; break; fi; sleep 0.02; done; "
              "for e in $stopped; do echo \"${e#*:}\"; done")
    return host.shell(script, "stopping the lab's nbdkits").split()


def running_on(host, pidfiles):
    """pidfile -> True when its nbdkit runs, for pidfiles on host (one ssh)."""
    if host.local:
        return {p: is_nbdkit(read_pid(p) or -1) for p in pidfiles}
    if not pidfiles:
        return {}
    script = "; ".join(f"pid=$(cat {shlex.quote(p)} 2>/dev/null); "
                       f"if [ -n \"$pid\" ] && {_alive_test('$pid')}; then echo 1; else echo 0; fi"
                       for p in pidfiles)
    answers = host.shell(script, "looking at the nbdkit servers").split()
    return {p: a == "1" for p, a in zip(pidfiles, answers)}
