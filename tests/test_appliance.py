"""pytest for the guest appliance: the inputs hash (no build), and a real boot
under QEMU (TCG, no host networking) talking to the guest agent.

The boot test builds or reuses the appliance in the default cache (building
twice would be slow); select it with -k test_appliance_boots_and_agent_answers."""
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts")

from storlab_cli.lab import appliance

QEMU = "qemu-system-x86_64"
GUEST_MAC = "52:54:00:5c:00:00"
GUEST_ADDR = "fd5c:1234:0::1/64"
BOOT_TIMEOUT_S = 120


# ------------------------------------------------------------------ the hash

@pytest.fixture(scope="module")
def original_hash():
    return appliance.make_plan().content_hash


def copy_guest_dir(tmp_path):
    copy = tmp_path / "appliance"
    shutil.copytree(appliance.GUEST_DIR, copy)
    return copy


def test_hash_is_stable_and_independent_of_where_the_guest_files_are(tmp_path, original_hash):
    assert appliance.make_plan().content_hash == original_hash
    assert appliance.make_plan(str(copy_guest_dir(tmp_path))).content_hash == original_hash
    assert len(original_hash) == 16 and int(original_hash, 16) >= 0


def test_hash_changes_when_a_guest_file_changes(tmp_path, original_hash):
    copy = copy_guest_dir(tmp_path)
    with open(copy / "rcS", "a", encoding="utf-8") as f:
        f.write("# one more line\n")
    changed = appliance.make_plan(str(copy)).content_hash
    assert changed != original_hash
    # Same change, same hash: nothing else (time, temp paths) goes in.
    again = tmp_path / "again"
    shutil.copytree(copy, again)
    assert appliance.make_plan(str(again)).content_hash == changed


def test_hash_changes_when_a_file_is_added_to_the_guest_dir(tmp_path, original_hash):
    copy = copy_guest_dir(tmp_path)
    (copy / "extra.conf").write_text("x = 1\n")
    assert appliance.make_plan(str(copy)).content_hash != original_hash


def test_missing_guest_file_is_a_user_error(tmp_path):
    copy = copy_guest_dir(tmp_path)
    os.remove(copy / "inittab")
    with pytest.raises(appliance.UserError, match="inittab is missing"):
        appliance.make_plan(str(copy))


def test_plan_holds_the_contracted_tools():
    entries = appliance.make_plan().entries
    for path in ("/usr/bin/fio", "/usr/sbin/mdadm", "/usr/sbin/lvm", "/usr/sbin/lvcreate",
                 "/usr/sbin/thin_check", "/usr/sbin/make-bcache", "/usr/sbin/drbdadm",
                 "/usr/sbin/drbdsetup", "/usr/sbin/drbdmeta", "/usr/sbin/rpc.nfsd",
                 "/usr/sbin/rpc.mountd", "/usr/sbin/exportfs", "/usr/sbin/rpcbind",
                 "/usr/sbin/mount.nfs", "/usr/sbin/mount.nfs4", "/usr/sbin/ip",
                 "/usr/sbin/mkfs.ext4", "/usr/sbin/modprobe", "/usr/sbin/qemu-ga",
                 "/usr/bin/mount", "/usr/sbin/blkid", "/usr/bin/lsblk", "/init",
                 "/etc/inittab", "/etc/lvm/lvm.conf"):
        assert path in entries, path
    # Real tools win over busybox applets of the same name.
    assert entries["/usr/bin/mount"][0] == "file"
    assert entries["/usr/sbin/modprobe"] == ("symlink", "/bin/kmod")
    assert entries["/usr/bin/ls"] == ("symlink", "/usr/bin/busybox")
    assert entries["/lib"] == ("symlink", "usr/lib")


def test_missing_host_package_is_a_user_error_naming_it(monkeypatch):
    monkeypatch.setattr(appliance, "APPLIANCE_PACKAGES",
                        appliance.APPLIANCE_PACKAGES + ["storlab-no-such-package"])
    with pytest.raises(appliance.UserError, match="not installed: storlab-no-such-package$"):
        appliance.make_plan()


# ------------------------------------------------------------------ the cache
# The heavy steps are stubbed: these check the caching, not the contents.

def fake_kernel(bzimage, dest):
    with open(dest, "wb") as f:
        f.write(b"\x7fELF kernel")


def fake_cpio(entries, dest):
    with open(dest, "wb") as f:
        f.write(b"070701 cpio " + str(len(entries)).encode())


@pytest.fixture
def cheap_build(monkeypatch):
    monkeypatch.setattr(appliance, "_extract_kernel", fake_kernel)
    monkeypatch.setattr(appliance, "_stage_modules",
                        lambda plan, stage_dir: os.makedirs(stage_dir) or {})
    monkeypatch.setattr(appliance, "_write_cpio", fake_cpio)


def test_build_then_reuse_with_readable_modes(tmp_path, cheap_build, original_hash):
    cache = tmp_path / "cache" / "appliance"
    lines = []
    first = appliance.ensure(str(cache), progress=lines.append)
    assert first.content_hash == original_hash
    assert first.kernel_path == str(cache / original_hash / "vmlinux")
    assert first.initrd_path == str(cache / original_hash / "initramfs.cpio")
    assert first.cmdline == appliance.CMDLINE
    assert any("building" in line for line in lines)
    assert lines[-1].startswith("appliance: built in")
    for directory in (tmp_path / "cache", cache, cache / original_hash):
        assert os.stat(directory).st_mode & 0o777 == 0o755
    for name in ("vmlinux", "initramfs.cpio", "manifest.json"):
        assert os.stat(cache / original_hash / name).st_mode & 0o777 == 0o644
    with open(cache / original_hash / "manifest.json", encoding="utf-8") as f:
        manifest = json.load(f)
    assert manifest["content_hash"] == original_hash
    assert manifest["kernel_bytes"] == len(b"\x7fELF kernel")
    assert sorted(os.listdir(cache)) == [".lock", original_hash]

    lines.clear()
    assert appliance.ensure(str(cache), progress=lines.append) == first
    assert lines == []


def test_incomplete_results_are_rebuilt(tmp_path, cheap_build, original_hash):
    cache = tmp_path / "appliance"
    os.makedirs(cache / original_hash)          # renamed, but no manifest yet
    (cache / original_hash / "vmlinux").write_bytes(b"half")
    os.makedirs(cache / ".build-0123-interrupted")
    lines = []
    app = appliance.ensure(str(cache), progress=lines.append)
    assert any("building" in line for line in lines)
    with open(app.kernel_path, "rb") as f:
        assert f.read() == b"\x7fELF kernel"
    assert sorted(os.listdir(cache)) == [".lock", original_hash]


def test_failed_build_leaves_nothing_behind(tmp_path, cheap_build, monkeypatch):
    def disk_full(entries, dest):
        with open(dest, "wb") as f:
            f.write(b"070701 partial")
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(appliance, "_write_cpio", disk_full)
    cache = tmp_path / "appliance"
    with pytest.raises(appliance.UserError, match="No space left on device"):
        appliance.ensure(str(cache), progress=lambda line: None)
    assert os.listdir(cache) == [".lock"]


def test_cache_dir_follows_storlab_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("STORLAB_CACHE_DIR", str(tmp_path))
    assert appliance.default_cache_dir() == str(tmp_path / "appliance")
    monkeypatch.delenv("STORLAB_CACHE_DIR")
    assert appliance.default_cache_dir() == "/var/cache/storlab/appliance"


def test_kernel_extraction_finds_the_xz_stream_after_decoys(tmp_path):
    import lzma
    elf = b"\x7fELF" + bytes(range(256)) * 64
    stream = lzma.compress(elf, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC32)
    # A bzImage-like file: setup code, a false magic, the stream, a trailer.
    image = tmp_path / "vmlinuz"
    image.write_bytes(b"MZ setup" * 100 + appliance.XZ_MAGIC + b"junk" + stream
                      + b"\x00\x10\x00\x00")
    dest = tmp_path / "vmlinux"
    appliance._extract_kernel(str(image), str(dest))
    assert dest.read_bytes() == elf
    image.write_bytes(b"no kernel here")
    with pytest.raises(appliance.UserError, match="no XZ-compressed ELF kernel"):
        appliance._extract_kernel(str(image), str(dest))


def test_cpio_is_newc_and_readable_by_cpio(tmp_path):
    source = tmp_path / "src.bin"
    source.write_bytes(b"abcde")
    entries = {"/usr/bin/tool": ("file", str(source), 0o755),
               "/bin": ("symlink", "usr/bin"),
               "/etc/x.conf": ("data", b"k = v\n", 0o644),
               "/dev/console": ("chardev", 0o600, 5, 1)}
    archive = tmp_path / "out.cpio"
    appliance._write_cpio(entries, str(archive))
    data = archive.read_bytes()
    assert data.startswith(b"070701") and len(data) % 4 == 0
    if shutil.which("cpio") is None:
        return
    listing = subprocess.run(["cpio", "-itv", "--quiet"], input=data, capture_output=True,
                             check=True).stdout.decode()
    lines = {line.split()[-1] if "->" not in line else line.split()[-3]: line
             for line in listing.splitlines()}
    assert set(lines) == {"bin", "dev", "dev/console", "etc", "etc/x.conf", "usr", "usr/bin",
                          "usr/bin/tool"}
    assert lines["usr/bin/tool"].startswith("-rwxr-xr-x") and " 5 " in lines["usr/bin/tool"]
    assert lines["bin"].startswith("lrwxrwxrwx") and lines["bin"].endswith("-> usr/bin")
    assert lines["dev/console"].startswith("crw-------")
    assert lines["usr"].startswith("drwxr-xr-x")


# ------------------------------------------------------------------ the boot

class Agent:
    """qemu-ga over the unix socket QEMU serves for the virtio port."""

    def __init__(self, path):
        self.path = path
        self.sock = None
        self.buffer = b""
        self.sync_id = int(time.time()) % 100000 * 1000

    def connect(self):
        """False while QEMU's socket is not listening yet (it exists from
        bind() on, before listen())."""
        self.close()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.sock.connect(self.path)
        except (FileNotFoundError, ConnectionRefusedError):
            self.close()
            return False
        return True

    def close(self):
        if self.sock:
            self.sock.close()
            self.sock = None

    def _send(self, command):
        self.sock.sendall(json.dumps(command).encode() + b"\n")

    def _reply(self, timeout_s):
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no reply from the guest agent")
            self.sock.settimeout(remaining)
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("agent socket closed")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line.lstrip(b"\xff"))

    def sync(self, timeout_s=1.0):
        """True once the agent echoes a fresh id (older replies are skipped)."""
        self.sync_id += 1
        self._send({"execute": "guest-sync", "arguments": {"id": self.sync_id}})
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                reply = self._reply(max(0.01, deadline - time.monotonic()))
            except TimeoutError:
                return False
            if reply.get("return") == self.sync_id:
                return True

    def command(self, execute, arguments=None, timeout_s=30):
        message = {"execute": execute}
        if arguments is not None:
            message["arguments"] = arguments
        self._send(message)
        reply = self._reply(timeout_s)
        if "error" in reply:
            raise RuntimeError(f"{execute}: {reply['error']}")
        return reply["return"]

    def run(self, argv, timeout_s=60):
        """(exit code, stdout, stderr) of argv run in the guest."""
        pid = self.command("guest-exec", {"path": argv[0], "arg": argv[1:],
                                          "capture-output": True})["pid"]
        deadline = time.monotonic() + timeout_s
        while True:
            status = self.command("guest-exec-status", {"pid": pid})
            if status["exited"]:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"{argv} still running after {timeout_s} s")
            time.sleep(0.05)
        def decode(key):
            return base64.b64decode(status.get(key, "")).decode(errors="replace")
        return status.get("exitcode", -1), decode("out-data"), decode("err-data")


class Guest:
    """The appliance booted by qemu-system-x86_64 directly: TCG, one virtio NIC
    on unix datagram sockets nobody listens to, the agent on a unix socket."""

    def __init__(self, app, work_dir, node="applnode", extra_args=()):
        self.work_dir = work_dir
        self.console = os.path.join(work_dir, "console.log")
        self.agent = Agent(os.path.join(work_dir, "qga.sock"))
        cmdline = (f"{app.cmdline} storlab.node={node} "
                   f"storlab.net={GUEST_MAC.upper()}@{GUEST_ADDR}")
        self.argv = [
            QEMU, "-accel", "tcg", "-m", "768", "-smp", "1", "-nodefaults",
            "-display", "none", "-monitor", "none", "-no-reboot",
            "-serial", f"file:{self.console}",
            "-kernel", app.kernel_path, "-initrd", app.initrd_path, "-append", cmdline,
            "-device", "virtio-serial-pci",
            "-chardev", f"socket,id=qga,path={self.agent.path},server=on,wait=off",
            "-device", "virtserialport,chardev=qga,name=org.qemu.guest_agent.0",
            "-netdev", (f"dgram,id=net0,local.type=unix,local.path={work_dir}/net-a,"
                        f"remote.type=unix,remote.path={work_dir}/net-b"),
            "-device", f"virtio-net-pci,netdev=net0,mac={GUEST_MAC}",
        ] + list(extra_args)
        self.process = None
        self.boot_seconds = None

    def start(self, timeout_s=BOOT_TIMEOUT_S):
        started = time.monotonic()
        self.process = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL,
                                        stderr=open(os.path.join(self.work_dir, "qemu.err"), "w"))
        deadline = started + timeout_s
        while not self.agent.connect():
            self._check_alive(deadline)
            time.sleep(0.02)
        while not self.agent.sync(timeout_s=0.5):
            self._check_alive(deadline)
        self.boot_seconds = time.monotonic() - started

    def _check_alive(self, deadline):
        if self.process.poll() is not None:
            raise RuntimeError(f"qemu exited ({self.process.returncode}): {self.tail()}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"the guest agent did not answer in time: {self.tail()}")

    def tail(self):
        text = ""
        for name in ("qemu.err", "console.log"):
            try:
                with open(os.path.join(self.work_dir, name), errors="replace") as f:
                    text += f"[{name}] " + f.read()[-1500:]
            except OSError:
                pass
        return text

    def stop(self):
        self.agent.close()
        if self.process and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()


@pytest.mark.skipif(shutil.which(QEMU) is None, reason="qemu-system-x86_64 is not installed")
def test_appliance_boots_and_agent_answers():
    app = appliance.ensure()
    for path in (app.kernel_path, app.initrd_path):
        assert os.stat(path).st_mode & 0o777 == 0o644
    work_dir = tempfile.mkdtemp(prefix="storlab-appliance-test-")
    guest = Guest(app, work_dir)
    try:
        guest.start()
        print(f"agent answered {guest.boot_seconds:.1f} s after qemu started")
        code, out, _ = guest.agent.run(["hostname"])
        assert (code, out.strip()) == (0, "applnode")
        code, out, err = guest.agent.run(["fio", "--version"])
        assert code == 0 and out.startswith("fio-"), (out, err)
        code, out, err = guest.agent.run(["sh", "-c", "modprobe raid10 && cat /proc/mdstat"])
        assert code == 0 and "[raid10]" in out, (out, err)
        code, out, err = guest.agent.run(["ip", "-6", "addr", "show"])
        assert code == 0 and GUEST_ADDR.replace(":0::", "::") in out, (out, err)
        with open(guest.console, errors="replace") as f:
            assert "storlab: ready" in f.read()
    finally:
        guest.stop()
        shutil.rmtree(work_dir, ignore_errors=True)
