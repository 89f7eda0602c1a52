"""The hosts a lab runs on: where a command runs, where the lab's files
live, and which libvirt holds a node's domain.

The local host is this machine: its commands run here, its run directory is
RUN_BASE/<lab> (with lab.json). A remote host (a qemu+ssh URI) is reached
through storlab's own ssh, taking everything from that URI
(schema/hosts.py SshTarget); its run directory is RUN_BASE/<lab>.<host>
there (a '.' no lab name has: on a machine that is both, `storlab status`
never takes it for a lab). On a remote host storlab needs only a shell,
tar, nbdkit, QEMU and libvirtd: the plugins and storlab-stats go there as a
bundle, and the guest appliance by the same content hash as here, both
under that host's cache directory (its [[hosts]] cache_dir), each copied
once per host and found again by its hash.

Every remote step is one ssh command; they share one connection a host
(OpenSSH's ControlMaster, its socket in the lab's local run directory), so
`up` pays ssh's handshake once a host, not once a step. A master lives
CONTROL_PERSIST_S after its last use and no longer than the lab: `down`,
and a failed `up`'s rollback, ask it to exit before the run directory goes.
"""
import contextlib
import hashlib
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import tempfile
import threading
import time

from storlab_cli import paths
from storlab_cli.common.last_line import last_line
from storlab_cli.errors import UserError
from storlab_cli.lab import appliance, libvirt_conn, nbdkit, state as lab_state
from storlab_cli.schema import hosts as hosts_schema

BUNDLE_SUBDIR = "bundle"               # of a host's cache directory: bundles, by hash
COMPLETE_MARK = ".complete"
SSH_TIMEOUT_S = 120
QEMU_GROUP = "libvirt-qemu"
# What a remote host must have before a lab goes there (docs: storlab-topology(5)).
REMOTE_PROGRAMS = ("nbdkit", "qemu-system-x86_64", "tar")
# A shared ssh connection's master stays this long after its last client
# (the steps of one `up` come well within it).
CONTROL_PERSIST_S = 120
# A unix socket's path holds 108 bytes with its NUL, and ssh binds the
# master's socket first under its path + ".XXXXXXXXXXXXXXXX" (17 more).
CONTROL_PATH_MAX_BYTES = 108 - 1 - 17
# What ssh reads as a ControlPath unquoted and without %-tokens.
CONTROL_PATH_RE = re.compile(r"[A-Za-z0-9/._+-]+")
CLOSE_TIMEOUT_S = 10                   # for `ssh -O exit`, then for the master to leave


class LabHost:
    """One host of one lab."""

    def __init__(self, lab, name, uri, address, bundle=None, cache_dir=None):
        self.lab, self.name, self.uri, self.address = lab, name, uri, address
        self.local = uri == hosts_schema.LOCAL_URI
        self.ssh = None if self.local else hosts_schema.parse_ssh_uri(uri)
        self.bundle = bundle           # a remote host's plugins and storlab-stats
        # where a remote host's bundle and appliance go (None here: STORLAB_CACHE_DIR's)
        self.cache_dir = None if self.local else cache_dir or hosts_schema.DEFAULT_CACHE_DIR
        self._conn = None
        self._conn_lock = threading.Lock()    # nodes of a host looked at at once

    def _lab_dir(self, base):
        """The lab's directory under base on this host."""
        return lab_state.lab_dir(base, self.lab, None if self.local else self.name)

    @property
    def run_dir(self):
        return self._lab_dir(lab_state.RUN_BASE)

    @property
    def data_dir(self):
        """Where the lab's device data files go on this host (device_data = "disk")."""
        return self._lab_dir(lab_state.DATA_BASE)

    def describe(self):
        return f"host '{self.name}' ({self.uri})"

    # ---- the shared ssh connection -------------------------------------------------

    @property
    def control_path(self):
        """The socket of this remote host's shared ssh connection, in the
        lab's local run directory; None (no sharing) for the local host,
        before that directory is made, and for a path ssh cannot take
        (too long for a unix socket, or characters it would read apart)."""
        if self.local:
            return None
        directory = lab_state.run_dir(self.lab)
        path = os.path.join(directory, f"ssh-{self.name}")
        if (not os.path.isdir(directory) or len(os.fsencode(path)) > CONTROL_PATH_MAX_BYTES
                or not CONTROL_PATH_RE.fullmatch(path)):
            return None
        return path

    def _ssh_argv(self, *options):
        """ssh ... DESTINATION through the shared connection, when there is one."""
        path = self.control_path
        sharing = [] if path is None else [
            "-o", "ControlMaster=auto", "-o", f"ControlPath={path}",
            "-o", f"ControlPersist={CONTROL_PERSIST_S}"]
        return self.ssh.argv(*sharing, *options)

    def close_connection(self):
        """Asks this host's shared ssh master to exit (the same options, -O
        exit), waits till it has gone (a master removes its socket as it
        leaves) and removes the socket; nothing to do when there is none."""
        path = self.control_path
        if path is None or not os.path.lexists(path):
            return
        try:
            asked = subprocess.run(self._ssh_argv("-O", "exit"), stdin=subprocess.DEVNULL,
                                   capture_output=True, timeout=CLOSE_TIMEOUT_S,
                                   check=False).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            asked = False
        # refused: no master listens (one that died left only its socket)
        deadline = time.monotonic() + CLOSE_TIMEOUT_S
        while asked and os.path.lexists(path) and time.monotonic() < deadline:
            time.sleep(0.02)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)

    # ---- commands -----------------------------------------------------------------

    def run(self, argv, input_bytes=None, timeout_s=SSH_TIMEOUT_S):
        """(exit code, stdout, stderr) of argv run on this host."""
        if not self.local:
            argv = self._ssh_argv("-T") + ["--", shlex.join(argv)]
        try:
            done = subprocess.run(argv, input=input_bytes, capture_output=True,
                                  timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired:
            raise UserError(f"{self.describe()}: {shlex.join(argv[-1:])[:80]}: "
                            f"no answer in {timeout_s} s") from None
        except FileNotFoundError as e:
            raise UserError(f"{self.describe()}: {e.filename}: not installed") from None
        return done.returncode, done.stdout, done.stderr

    def shell(self, script, what, input_bytes=None, timeout_s=SSH_TIMEOUT_S):
        """Runs a /bin/sh script here; its stdout, or a UserError naming the
        host, what was done and the script's last line of stderr."""
        code, out, err = self.run(["/bin/sh", "-c", script], input_bytes, timeout_s)
        if code != 0:
            # ssh itself exits 255 when it cannot reach or log in to the host
            fallback = "ssh could not reach it" if code == 255 and not self.local else f"exit {code}"
            raise UserError(f"{self.describe()}: {what}: {last_line(err, fallback)}")
        return out.decode(errors="replace")

    # ---- libvirt ------------------------------------------------------------------

    def libvirt(self):
        """This host's libvirt connection (opened once)."""
        with self._conn_lock:
            if self._conn is None:
                if self.local:
                    libvirt_conn.ensure_daemons()
                self._conn = libvirt_conn.connect(self.uri)
            return self._conn

    # ---- preparing a remote host ---------------------------------------------------

    def prepare(self):
        """Checks a remote host has what a lab needs and makes the lab's run
        directory there; returns libvirt's qemu group id on that host."""
        checks = " && ".join(
            f"{{ command -v {p} >/dev/null || {{ echo 'no {p} (install it there)' >&2; exit 1; }}; }}"
            for p in REMOTE_PROGRAMS)
        directory = shlex.quote(self.run_dir)
        out = self.shell(
            f"{checks} && gid=$(getent group {QEMU_GROUP} | cut -d: -f3) && "
            f"[ -n \"$gid\" ] || {{ echo 'no group {QEMU_GROUP} (install libvirt-daemon-system "
            f"there)' >&2; exit 1; }}; "
            f"if [ -e {directory} ]; then echo '{self.run_dir} exists: another lab of this name "
            f"is up there' >&2; exit 1; fi; "
            f"mkdir -p {shlex.quote(lab_state.RUN_BASE)} && mkdir -m 0750 {directory} && "
            f"chown 0:$gid {directory} && echo $gid", "preparing the lab's run directory")
        return int(out.strip())

    def _copy_tree(self, source_dir, names, final_dir, what, complete_test):
        """names of source_dir into final_dir on this host, unless the shell
        test complete_test says a complete copy is there already; whole or
        not at all (a temporary directory renamed into place)."""
        final = shlex.quote(final_dir)
        tmp = shlex.quote(final_dir + ".tmp")
        # umask: the directories made on the way let libvirt's qemu user through;
        # a copy cut short (tar finds its input truncated) leaves nothing
        script = (f"if {complete_test}; then cat > /dev/null; exit 0; fi; umask 022; "
                  f"rm -rf {tmp} && mkdir -p {tmp} || exit 1; "
                  f"if tar -C {tmp} -xf - && touch {tmp}/{COMPLETE_MARK}; then "
                  f"rm -rf {final} && mv {tmp} {final}; else rm -rf {tmp}; exit 1; fi")
        # -h: the staging directory's links packed as the files they name
        packed = subprocess.run(["tar", "-h", "-C", source_dir, "-cf", "-", *names],
                                capture_output=True, check=True).stdout
        self.shell(script, f"copying {what} to {final_dir}", input_bytes=packed, timeout_s=600)

    def plugin_argument(self, plugin):
        """What nbdkit there is told: a remote host's bundle .so for storlab's
        kinds, else as here (nbdkit.plugin_argument)."""
        if self.bundle and plugin in nbdkit.STORLAB_PLUGINS:
            return os.path.join(self.bundle, os.path.basename(nbdkit.plugin_argument(plugin)))
        return nbdkit.plugin_argument(plugin)

    def ensure_bundle(self):
        """The directory on this host holding the plugins and storlab-stats
        of this build (copied once, by content hash)."""
        if self.local:
            return None
        files = [paths.plugin(kind) for kind in nbdkit.STORLAB_PLUGINS] + [paths.stats_tool()]
        digest = hashlib.sha256()
        for path in files:
            with open(path, "rb") as f:
                digest.update(os.path.basename(path).encode() + b"\0" + f.read())
        final_dir = os.path.join(self.cache_dir, BUNDLE_SUBDIR, digest.hexdigest()[:32])
        staging = _staging_dir(files)
        try:
            self._copy_tree(staging, [os.path.basename(p) for p in files], final_dir,
                            "storlab's plugins",
                            f"[ -e {shlex.quote(os.path.join(final_dir, COMPLETE_MARK))} ]")
        finally:
            for name in os.listdir(staging):
                os.unlink(os.path.join(staging, name))
            os.rmdir(staging)
        return final_dir

    def appliance_there(self, image):
        """The guest appliance image (as here) where this host holds it."""
        return image if self.local else appliance.under(image, self.cache_dir)

    def ensure_appliance(self, image):
        """The guest appliance on this host (appliance_there), copied there
        whole unless a complete copy is there already."""
        there = self.appliance_there(image)
        if self.local:
            return there
        source = os.path.dirname(image.kernel_path)
        directory = os.path.dirname(there.kernel_path)
        # complete as appliance.ensure finds it there: its manifest names its hash
        manifest = shlex.quote(os.path.join(directory, appliance.MANIFEST_NAME))
        self._copy_tree(source, sorted(os.listdir(source)), directory,
                        f"the guest appliance {image.content_hash[:12]}",
                        f"grep -qs {image.content_hash} {manifest}")
        return there

    # ---- a device's files there ---------------------------------------------------

    def stats(self, path):
        """storlab-stats' JSON of a (remote) stats file, read there by the
        bundle's own storlab-stats (the file is a live seqlocked map)."""
        tool = os.path.join(self.bundle or os.path.join(self.cache_dir, BUNDLE_SUBDIR),
                            os.path.basename(paths.stats_tool()))
        out = self.shell(shlex.join([tool, path]), f"storlab-stats {path}", timeout_s=30)
        try:
            return json.loads(out)
        except ValueError:
            raise UserError(f"{self.describe()}: stats file {path}: storlab-stats printed "
                            "no JSON") from None

    def read_text(self, path, max_bytes, from_end=False):
        """The first (from_end: last) max_bytes of a (remote) file, or None
        when it is absent."""
        cut = "tail" if from_end else "head"
        code, out, _ = self.run(["/bin/sh", "-c", f"[ -f {shlex.quote(path)} ] || exit 3; "
                                 f"{cut} -c {int(max_bytes)} {shlex.quote(path)}"])
        if code == 3:
            return None
        if code != 0:
            raise UserError(f"{self.describe()}: cannot read {path}")
        return out.decode("utf-8", errors="replace")

    def write_text(self, path, text):
        """A small file on this host, written whole (a new file renamed
        over the old one), its directory made if missing."""
        tmp = shlex.quote(path + ".tmp")
        self.shell(f"mkdir -p {shlex.quote(os.path.dirname(path))} && cat > {tmp} && "
                   f"mv {tmp} {shlex.quote(path)}", f"writing {path}",
                   input_bytes=text.encode())

    @contextlib.contextmanager
    def forwarded(self, socket_path, timeout_s=10):
        """A local unix socket that reaches socket_path on this host (ssh's
        own stream forwarding: nothing needed there but sshd)."""
        if self.local:
            yield socket_path
            return
        with tempfile.TemporaryDirectory(prefix="storlab-ctl-") as directory:
            local = os.path.join(directory, "ctl")
            # a connection of its own: through a shared master the forwarding
            # would be the master's, and outlive this tunnel
            tunnel = subprocess.Popen(
                self.ssh.argv("-N", "-o", "ExitOnForwardFailure=yes",
                              "-L", f"{local}:{socket_path}"),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            try:
                deadline = time.monotonic() + timeout_s
                while not os.path.exists(local):
                    if tunnel.poll() is not None or time.monotonic() > deadline:
                        err = tunnel.stderr.read() if tunnel.poll() is not None else b""
                        raise UserError(f"{self.describe()}: no way to {socket_path}: "
                                        f"{last_line(err, 'ssh forwarding did not start')}")
                    time.sleep(0.02)
                yield local
            finally:
                tunnel.terminate()
                tunnel.wait()
                tunnel.stderr.close()

    def udp_ports_in_use(self, ports):
        """Those of ports, in their order, taken there: here those 127.0.0.1
        cannot bind, on a remote host those `ss` lists (udp, any address)."""
        if self.local:
            return [p for p in ports if not _udp_port_free(p)]
        if not ports:
            return []
        out = self.shell("ss -Hlun", "listing its udp ports")
        taken = {line.split()[3].rsplit(":", 1)[-1] for line in out.splitlines()
                 if len(line.split()) > 3}
        return [p for p in ports if str(p) in taken]

    def remove_run_dir(self):
        """The lab's run directory on this (remote) host, if it is one."""
        self._remove_dir(self.run_dir, "the run directory")

    def make_data_dir(self):
        """Makes the lab's device data directory on this host (root's only:
        the data is the guests'), replacing one an earlier lab of this name
        left (its `up` has checked no such lab is up here); returns the MiB
        free there."""
        base, directory = lab_state.DATA_BASE, self.data_dir
        if self.local:
            os.makedirs(base, mode=0o755, exist_ok=True)
            self._remove_dir(directory, "an earlier lab's device data")
            os.mkdir(directory, mode=0o700)
            return free_disk_mib(directory)
        quoted = shlex.quote(directory)
        out = self.shell(
            f"if [ -L {quoted} ]; then echo '{directory}: a symbolic link: left alone' >&2; "
            f"exit 1; fi; rm -rf {quoted} && mkdir -p {shlex.quote(base)} && "
            f"mkdir -m 0700 {quoted} && df -Pk {quoted} | tail -n 1",
            "making the lab's device data directory")
        return int(out.split()[3]) // 1024

    def remove_data_dir(self):
        """The lab's device data directory on this host, if it is one."""
        self._remove_dir(self.data_dir, "the device data directory")

    def _remove_dir(self, directory, what):
        """Removes directory (one of the lab's) here or there; a symbolic
        link is left alone, an error."""
        if self.local:
            remove_local_dir(directory, what)
            return
        quoted = shlex.quote(directory)
        self.shell(f"if [ -L {quoted} ]; then echo '{directory}: a symbolic link: left "
                   f"alone' >&2; exit 1; fi; rm -rf {quoted}", f"removing {what}")


def check_not_a_link(directory, what):
    """A lab never follows a symbolic link where its own directory should be."""
    if os.path.islink(directory):
        raise UserError(f"{directory}: a symbolic link, not {what}: left alone")


def remove_local_dir(directory, what):
    """Removes directory (one of a lab's, on this machine), if it is one."""
    check_not_a_link(directory, what)
    if os.path.isdir(directory):
        shutil.rmtree(directory)


def free_disk_mib(directory):
    """MiB free to an unprivileged writer on directory's filesystem, here."""
    stat = os.statvfs(directory)
    return stat.f_bavail * stat.f_frsize // (1024 * 1024)


def _udp_port_free(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def _staging_dir(files):
    """A temporary directory of links to files, for tar to pack by name."""
    staging = tempfile.mkdtemp(prefix="storlab-bundle-")
    for path in files:
        os.symlink(os.path.abspath(path), os.path.join(staging, os.path.basename(path)))
    return staging


# ---- a lab's hosts, from its topology or its state ------------------------------

def from_topology(topo):
    return {h.name: LabHost(topo.name, h.name, h.uri, h.address, cache_dir=h.cache_dir)
            for h in topo.hosts}


def from_state(state):
    """The hosts lab.json lists; a lab from before hosts runs on the local one."""
    hosts = state.hosts or [{"name": hosts_schema.LOCAL_HOST, "uri": hosts_schema.LOCAL_URI,
                             "address": hosts_schema.LOCAL_ADDRESS}]
    return {h["name"]: LabHost(state.name, h["name"], h["uri"], h["address"],
                               state.bundles.get(h["name"]), h.get("cache_dir"))
            for h in hosts}


def host_of_node(state, hosts, node):
    return hosts[state.placement.get(node, next(iter(hosts)))]


def state_entries(hosts):
    """The hosts as lab.json lists them (a remote one with its cache directory)."""
    return [{"name": h.name, "uri": h.uri, "address": h.address,
             **({} if h.local else {"cache_dir": h.cache_dir})} for h in hosts.values()]
