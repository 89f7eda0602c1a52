"""pytest: the plugins' files and control socket, run as root beside other
devices and other users (real nbdkit, the built hdd and raid plugins).

- a stats=, file= or ctl= path another live device holds is refused, and
  the first device goes on serving (a second stats= once truncated the
  first's file under its mapping: SIGBUS);
- stats=, its .events log and file= never follow a symbolic link, never use
  a file of another user's or one with a second hard link (root once
  overwrote, truncated and served files through such links);
- the control socket serves many clients at once, an idle one or one that
  never reads its replies blocks nobody, a line too long is answered (it
  once reset the connection) and a NUL inside a line is an error;
- raid with timing=off has nothing to control: ctl= is refused at start.
"""
import concurrent.futures
import os
import socket
import subprocess
import time

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))

from storlab_cli import paths
from storlab_cli.lab.nbdkit import Nbdkit
from storlab_cli.live import ctl
from storlab_cli.errors import UserError

NOBODY_UID = 65534
RAID = ["level=1", "members=2", "member-preset=sas10k-300g", "member-size=32M",
        "cache-size=4M"]


@pytest.fixture(scope="module", autouse=True)
def built_plugins():
    for kind in ("hdd", "raid"):
        if not os.path.exists(paths.plugin(kind)):
            pytest.skip(f"{paths.plugin(kind)}: not built")


def refused(workdir, kind, params):
    """nbdkit must refuse to start; its one-line reason."""
    with pytest.raises(UserError) as error:
        Nbdkit(str(workdir), kind, params).stop()
    return str(error.value)


def read_block(server):
    """One 4 KiB read through the NBD socket (the device still serves)."""
    result = subprocess.run(
        ["/usr/bin/python3", "-m", "nbd", "-u", server.uri, "-c",
         "assert len(h.pread(4096, 0)) == 4096"],
        capture_output=True, text=True, timeout=30, check=False)
    assert result.returncode == 0, result.stderr


def victim(tmp_path, name="victim", content=b"root's own file\n"):
    path = tmp_path / name
    path.write_bytes(content)
    return path


# ---- a path another live device holds ----

def test_a_second_device_on_the_same_stats_file_is_refused(tmp_path):
    stats = tmp_path / "disk.stats"
    first_dir, second_dir = tmp_path / "first", tmp_path / "second"
    first_dir.mkdir()
    second_dir.mkdir()
    with Nbdkit(str(first_dir), "hdd", ["size=64M", "timing=off", f"stats={stats}"]) as first:
        size_before = stats.stat().st_size
        message = refused(second_dir, "hdd", ["size=64M", f"stats={stats}"])
        assert "in use by another running device" in message and str(stats) in message
        assert stats.stat().st_size == size_before, "the refused device truncated the file"
        read_block(first)        # the first device writes its record: no SIGBUS
        read_block(first)
        assert first.process.poll() is None
    # once the first has ended, the path is free again
    with Nbdkit(str(second_dir), "hdd", ["size=64M", "timing=off", f"stats={stats}"]) as again:
        read_block(again)


def test_a_second_device_on_the_same_data_file_is_refused(tmp_path):
    image = tmp_path / "disk.img"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with Nbdkit(str(tmp_path / "a"), "hdd", ["size=64M", "timing=off", f"file={image}"]) as first:
        message = refused(tmp_path / "b", "hdd", ["size=64M", f"file={image}"])
        assert "in use by another running device" in message and str(image) in message
        read_block(first)


def test_a_second_controller_on_the_same_ctl_socket_is_refused(tmp_path):
    sock = tmp_path / "raid.ctl"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with Nbdkit(str(tmp_path / "a"), "raid", RAID + [f"ctl={sock}"], wait_for=[str(sock)]):
        message = refused(tmp_path / "b", "raid", RAID + [f"ctl={sock}"])
        assert "in use by another running device" in message and str(sock) in message
        assert ctl.send_command(str(sock), "status").startswith("ok battery=ok")
    # a stale socket left by a run that ended is taken over
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(sock))
    stale.close()
    with Nbdkit(str(tmp_path / "b"), "raid", RAID + [f"ctl={sock}"]):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                assert ctl.send_command(str(sock), "status").startswith("ok ")
                break
            except UserError:
                time.sleep(0.05)
        else:
            pytest.fail("the new controller never answered on the stale socket's path")


# ---- file-sync= ----

def fdatasyncs_during_a_flush(workdir, kind, params):
    """fdatasync calls nbdkit makes while a client writes and flushes
    (strace attached to the running server), and the data read back."""
    with Nbdkit(str(workdir), kind, params) as server:
        log = workdir / "strace.log"
        tracer = subprocess.Popen(["strace", "-f", "-qq", "-e", "trace=fdatasync", "-o",
                                   str(log), "-p", str(server.process.pid)],
                                  stderr=subprocess.PIPE)
        try:
            time.sleep(1.0)         # attached to every thread before the client comes
            result = subprocess.run(
                ["/usr/bin/python3", "-m", "nbd", "-u", server.uri, "-c",
                 "h.pwrite(b'x' * 65536, 1 << 20); h.flush(); "
                 "assert h.pread(65536, 1 << 20) == b'x' * 65536"],
                capture_output=True, text=True, timeout=30, check=False)
            assert result.returncode == 0, result.stderr
        finally:
            tracer.terminate()
            tracer.wait(timeout=10)
        return log.read_text().count("fdatasync(")


@pytest.mark.parametrize("kind, params", [("hdd", ["size=64M"]), ("raid", RAID)])
def test_file_sync_off_keeps_flushes_off_the_host_disk(tmp_path, kind, params):
    """A lab's data files are scratch: with file-sync=off a flush does not
    wait for the host's disk, by default it does; the data is there either
    way, and still there when the device is started again on the file."""
    (tmp_path / "on").mkdir()
    (tmp_path / "off").mkdir()
    image = tmp_path / "disk.img"
    assert fdatasyncs_during_a_flush(tmp_path / "on", kind, params + [f"file={image}"]) >= 1
    assert fdatasyncs_during_a_flush(tmp_path / "off", kind,
                                     params + [f"file={image}", "file-sync=off"]) == 0
    with Nbdkit(str(tmp_path / "off"), kind, params + [f"file={image}", "file-sync=off"]) as again:
        result = subprocess.run(
            ["/usr/bin/python3", "-m", "nbd", "-u", again.uri, "-c",
             "assert h.pread(65536, 1 << 20) == b'x' * 65536"],
            capture_output=True, text=True, timeout=30, check=False)
        assert result.returncode == 0, result.stderr


def test_file_sync_takes_on_or_off(tmp_path):
    message = refused(tmp_path, "hdd", ["size=64M", f"file={tmp_path / 'd.img'}",
                                        "file-sync=maybe"])
    assert "file-sync=maybe" in message and "on or off" in message


# ---- links and other users' files ----

@pytest.mark.parametrize("key", ["stats", "file"])
def test_a_symbolic_link_is_never_followed(tmp_path, key):
    target = victim(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(target)
    message = refused(tmp_path, "hdd", ["size=64M", f"{key}={link}"])
    assert "symbolic link" in message and str(link) in message
    assert target.read_bytes() == b"root's own file\n"


def test_a_dangling_symbolic_link_creates_nothing(tmp_path):
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "would-be-created")
    message = refused(tmp_path, "hdd", ["size=64M", f"stats={link}"])
    assert "symbolic link" in message
    assert not (tmp_path / "would-be-created").exists()


def test_the_event_log_beside_the_stats_file_is_no_link_either(tmp_path):
    target = victim(tmp_path)
    stats = tmp_path / "raid.stats"
    (tmp_path / "raid.stats.events").symlink_to(target)
    message = refused(tmp_path, "raid", RAID + [f"stats={stats}"])
    assert "symbolic link" in message and "raid.stats.events" in message
    assert target.read_bytes() == b"root's own file\n"


@pytest.mark.parametrize("key", ["stats", "file"])
def test_another_users_file_is_refused(tmp_path, key):
    if os.geteuid() != 0:
        pytest.skip("needs root to give a file away")
    theirs = victim(tmp_path, "theirs", b"")
    os.chown(theirs, NOBODY_UID, NOBODY_UID)
    message = refused(tmp_path, "hdd", ["size=64M", f"{key}={theirs}"])
    assert f"belongs to uid {NOBODY_UID}" in message
    assert theirs.stat().st_size == 0


@pytest.mark.parametrize("key", ["stats", "file"])
def test_a_second_hard_link_is_refused(tmp_path, key):
    target = victim(tmp_path, "target", b"")
    other_name = tmp_path / "other-name"
    os.link(target, other_name)
    message = refused(tmp_path, "hdd", ["size=64M", f"{key}={other_name}"])
    assert "hard links" in message
    assert target.stat().st_size == 0


def test_a_fifo_is_refused_at_once(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    started = time.monotonic()
    message = refused(tmp_path, "hdd", ["size=64M", f"stats={fifo}"])
    assert "not a regular file" in message
    assert time.monotonic() - started < 5


# ---- the control socket ----

@pytest.fixture
def controller(tmp_path):
    sock = tmp_path / "raid.ctl"
    with Nbdkit(str(tmp_path), "raid", RAID + [f"ctl={sock}", f"stats={tmp_path / 'raid.stats'}"],
                wait_for=[str(sock)]) as server:
        yield str(sock), server


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)
    return s


def converse(s, payload):
    """Sends payload, returns the one reply line it gets."""
    s.sendall(payload)
    reply = b""
    while not reply.endswith(b"\n"):
        chunk = s.recv(4096)
        assert chunk, f"connection closed; got {reply!r}"
        reply += chunk
    return reply.decode().rstrip("\n")


def test_an_idle_client_blocks_nobody(controller):
    path, _ = controller
    idle = [connect(path) for _ in range(3)]
    try:
        started = time.monotonic()
        assert ctl.send_command(path, "status").startswith("ok ")
        assert time.monotonic() - started < 2, "a command waited for the idle clients"
    finally:
        for s in idle:
            s.close()


def test_twenty_concurrent_commands_are_all_answered(controller):
    path, _ = controller
    idle = connect(path)         # one client sits idle the whole time
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=20) as pool:
            replies = list(pool.map(lambda _: ctl.send_command(path, "status"), range(20)))
        assert all(r.startswith("ok battery=") for r in replies), replies
    finally:
        idle.close()


def test_commands_beyond_the_free_slots_wait_and_are_all_answered(controller):
    path, _ = controller
    idle = [connect(path) for _ in range(15)]     # one slot of sixteen left
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=20) as pool:
            replies = list(pool.map(lambda _: ctl.send_command(path, "status"), range(100)))
        assert all(r.startswith("ok battery=") for r in replies), replies
    finally:
        for s in idle:
            s.close()


def test_when_every_slot_idles_the_longest_idle_client_gives_its_up(controller):
    path, _ = controller
    idle = [connect(path) for _ in range(16)]     # every slot taken
    try:
        started = time.monotonic()
        assert ctl.send_command(path, "status").startswith("ok battery=")
        waited = time.monotonic() - started
        assert 9 < waited < 10 + 5, waited         # until the first idled 10 s
        told = 0
        for s in idle:
            s.setblocking(False)
            try:
                told += s.recv(4096).startswith(b"error closed: idle")
            except BlockingIOError:
                pass                               # still holds its slot
        assert told == 1
    finally:
        for s in idle:
            s.close()


def test_a_client_that_never_reads_does_not_stall_the_controller(controller, tmp_path):
    path, _ = controller
    hog = connect(path)
    hog.setblocking(False)
    sent = 0
    try:
        # commands whose replies it never reads, until its buffers fill
        for _ in range(20000):
            try:
                sent += hog.send(b"status\n" * 64)
            except BlockingIOError:
                break
            except (BrokenPipeError, ConnectionResetError):
                break           # the controller dropped it: also fine
        started = time.monotonic()
        assert ctl.send_command(path, "battery failed").startswith("ok")
        assert ctl.send_command(path, "battery ok").startswith("ok")
        assert time.monotonic() - started < 2
        # the event log kept up
        deadline = time.monotonic() + 5
        events = tmp_path / "raid.stats.events"
        while time.monotonic() < deadline and "battery set ok" not in events.read_text():
            time.sleep(0.05)
        log = events.read_text()
        assert "battery set failed" in log and "battery set ok" in log, log
    finally:
        hog.close()
    assert sent > 0


def test_a_line_too_long_is_answered_and_the_connection_goes_on(controller):
    path, _ = controller
    with connect(path) as s:
        for length in (512, 4000, 100000):
            assert converse(s, b"x" * length + b"\n") == \
                "error command line too long (at most 511 bytes)"
        assert converse(s, b"status\n").startswith("ok battery=ok")
        # the longest line taken: 511 bytes (here a command padded with blanks)
        assert converse(s, b"status" + b" " * 505 + b"\n").startswith("ok battery=ok")
        assert converse(s, b"x" * 511 + b"\n").startswith("error unknown command")


def test_a_nul_inside_a_command_is_an_error(controller):
    path, _ = controller
    with connect(path) as s:
        assert converse(s, b"battery failed\0junk\n") == "error command contains a NUL byte"
        assert converse(s, b"status\n").startswith("ok battery=ok")


def test_raid_with_timing_off_refuses_a_control_socket(tmp_path):
    for timing_key in ("timing=off", "fixed-latency-us=100"):
        message = refused(tmp_path, "raid", RAID + [timing_key, f"ctl={tmp_path / 'c'}"])
        assert "no battery, cache or members to control" in message
        assert "\n" not in message
    assert not (tmp_path / "c").exists()
    # without ctl= the fixed-latency array still serves
    with Nbdkit(str(tmp_path), "raid", RAID + ["timing=off"]) as server:
        read_block(server)
