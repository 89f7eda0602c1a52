"""pytest for `storlab top` (scripts/storlab_cli/live/top.py, live/top_frame.py).

Frames rendered from the committed storlab-stats snapshots
(tests/data/stats-*.json, see test_device_window.py) are checked number by
number against values computed here from the raw JSON; then a real raid
plugin under fio: `storlab top STATS --once` shows its front end and its 8
members, the battery failing live, the lab form, the terminal redraw and
Ctrl-C. Needs the build (nbdkit-raid-plugin.so, storlab-stats), nbdkit, fio.
"""
import copy
import json
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(TESTS, "data")
SCRIPTS = os.path.join(os.path.dirname(TESTS), "scripts")
STORLAB = os.path.join(SCRIPTS, "storlab")

from storlab_cli import paths
from storlab_cli.live import top_frame
from storlab_cli.live.raid_events import Event

ARRAY_EVENTS = [Event(0, None, "array: raid 10, 8 members, stripe 64 KiB, cache 512 MiB"),
                Event(0, None, "start: policy write-back, battery ok"),
                Event(0, None, "cache now write-back")]

def storlab_argv(*args):
    return ["/usr/bin/python3", STORLAB, *args]


def storlab(*args, env=None, timeout=60):
    return subprocess.run(storlab_argv(*args), capture_output=True, text=True, check=False,
                          timeout=timeout, env=dict(os.environ, **(env or {})))


def snapshot(name):
    with open(os.path.join(DATA, f"stats-{name}.json"), encoding="utf-8") as f:
        return json.load(f)


# ---- reading a frame back ----------------------------------------------------------------

def table(frame, first_header, left=1):
    """{row name: {header: cell}} of the table whose header starts with
    first_header; asserts its columns line up: the first `left` flush left
    under their header, the rest flush right."""
    lines = frame.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(first_header + "  "))
    columns = list(re.finditer(r"\S+(?: \S+)*", lines[start]))
    rows = {}
    for line in lines[start + 1:]:
        if not line:
            break
        cells = list(re.finditer(r"\S+", line))
        assert len(cells) == len(columns), (lines[start], line)
        for i, (column, cell) in enumerate(zip(columns, cells)):
            if i < left:
                assert cell.start() == column.start(), (column.group(), line)
            else:
                assert cell.end() == column.end(), (column.group(), line)
        rows[cells[0].group()] = {c.group(): v.group() for c, v in zip(columns, cells)}
    return rows


def has_table(frame, first_header):
    return any(line.startswith(first_header + "  ") for line in frame.split("\n"))


# ---- independent arithmetic on the raw snapshots ----------------------------------------

def op_delta(b, a, op):
    ob, oa = b["ops"][op], a["ops"][op]
    count = oa["count"] - ob["count"]
    lat_sum = oa["count"] * oa["latency_ns"]["mean"] - ob["count"] * ob["latency_ns"]["mean"]
    return count, oa["bytes"] - ob["bytes"], lat_sum


def f(value, decimals):
    return "-" if value is None else f"{value:.{decimals}f}"


def expected_front(b, a, window_s):
    (r, rb, rl), (w, wb, wl) = op_delta(b, a, "read"), op_delta(b, a, "write")
    return {"read IOPS": f(r / window_s, 1), "write IOPS": f(w / window_s, 1),
            "read MB/s": f(rb / 1e6 / window_s, 2), "write MB/s": f(wb / 1e6 / window_s, 2),
            "read lat us": f(rl / r / 1000 if r else None, 1),
            "write lat us": f(wl / w / 1000 if w else None, 1),
            "mean lat us": f((rl + wl) / (r + w) / 1000 if r + w else None, 1),
            "QD now": str(a["queue_depth"]), "QD mean": f((rl + wl) / (window_s * 1e9), 2),
            # these snapshots predate release lateness
            "late p99 us": "-"}


def expected_member(b, a, window_s):
    (r, rb, rl), (w, wb, wl) = op_delta(b, a, "read"), op_delta(b, a, "write")
    return {"IOPS": f((r + w) / window_s, 1), "MB/s": f((rb + wb) / 1e6 / window_s, 2),
            "mean lat us": f((rl + wl) / (r + w) / 1000 if r + w else None, 1),
            "busy %": "-", "QD now": str(a["queue_depth"])}


# ---- frames from the fixtures -----------------------------------------------------------

def test_raid_frame_shows_the_snapshots_numbers():
    before, after = snapshot("raid-before"), snapshot("raid-after")
    events = ARRAY_EVENTS + [Event(10**9, None, "member 3 failed"),
                             Event(2 * 10**9, None, "member 3 replaced, rebuilding")]
    frame = top_frame.render(before, after, events, interval_s=1.0)
    window_s = (3556622024 - 1550277977) / 1e9          # the front end's clock moved this far
    head = frame.split("\n")
    assert head[0] == f"raid (raid)  capacity 4 GiB  up 0:00:03  refresh 1 s  window {window_s:.2f} s"
    assert head[1] == ("raid 10, 8 members, stripe 64 KiB  policy write-back  battery ok  "
                       "write-back on")
    assert head[2] == "events (last 5 of 5):"
    assert head[3].split() == ["wall", "clock", "device", "s", "event"]
    assert head[4].split() == ["-", "+0.000", "array:", "raid", "10,", "8", "members,", "stripe",
                               "64", "KiB,", "cache", "512", "MiB"]
    assert head[8].split() == ["-", "+2.000", "member", "3", "replaced,", "rebuilding"]
    assert head[9] == "" and head[-1] == ""

    front = table(frame, "front end")
    b0, a0 = before["devices"][0], after["devices"][0]
    assert list(front) == ["raid"]
    assert front["raid"] == {"front end": "raid", **expected_front(b0, a0, window_s)}
    assert front["raid"]["read IOPS"] == "3980.9"         # (10105 - 2118) / 2.006 s

    cache = table(frame, "cache")["raid"]
    hits, misses = 4653 - 0, 5454 - 2122
    assert cache == {"cache": "raid", "read hit %": f(100 * hits / (hits + misses), 1),
                     "dirty MB": f(44834816 / 1e6, 2), "cache MB": f(512 * 2**20 / 1e6, 2),
                     "destage MB/s": "0.00", "writes cached": str(10095 - 2240),
                     "writes through": "0"}

    members = table(frame, "member", left=2)
    assert list(members) == [f"member{i}" for i in range(8)]
    for i, (b, a) in enumerate(zip(before["devices"][1:], after["devices"][1:])):
        state = "rebuilding" if i == 3 else "ok"
        assert members[f"member{i}"] == {"member": f"member{i}", "state": state,
                                         **expected_member(b, a, window_s)}


def test_raid_frame_over_a_wall_clock_window_with_the_battery_failed():
    before, after = snapshot("raid-before"), copy.deepcopy(snapshot("raid-after"))
    after["devices"][0]["counters"].update(battery_state=2, write_back_effective=0)
    after["uptime_ns"] = 3723 * 10**9
    events = ARRAY_EVENTS + [Event(i * 10**9, 1_700_000_000_000_000_000 + i, f"battery set {s}")
                             for i, s in enumerate(("failed", "ok", "failed"), 1)]
    frame = top_frame.render(before, after, events, window_s=2.5, interval_s=2.5)
    head = frame.split("\n")
    assert head[0] == "raid (raid)  capacity 4 GiB  up 1:02:03  refresh 2.5 s  window 2.50 s"
    assert "  battery failed  write-back off" in head[1]
    assert head[2] == "events (last 5 of 6):" and "array: raid 10" not in frame
    assert frame.count("battery set ") == 3
    front = table(frame, "front end")["raid"]
    assert front == {"front end": "raid", **expected_front(before["devices"][0],
                                                           after["devices"][0], 2.5)}
    assert front["write IOPS"] == f((10095 - 2240) / 2.5, 1)


def test_raid_frame_without_an_event_log():
    frame = top_frame.render(snapshot("raid-before"), snapshot("raid-after"), [])
    assert frame.split("\n")[1].startswith("raid ?, 8 members  policy ?  battery ok")
    assert "events: none logged" in frame
    assert table(frame, "cache")["raid"]["cache MB"] == "-"


def test_hdd_frame_has_the_front_end_only():
    before, after = snapshot("hdd-before"), snapshot("hdd-after")
    frame = top_frame.render(before, after, interval_s=0.5)
    window_s = (3557339569 - 1552625125) / 1e9
    assert frame.split("\n")[0] == (f"hdd (hdd)  capacity {300e9 / 2**30:.2f} GiB  up 0:00:03  "
                                    f"refresh 0.5 s  window {window_s:.2f} s")
    front = table(frame, "front end")
    assert front == {"hdd": {"front end": "hdd", **expected_front(before["devices"][0],
                                                                  after["devices"][0], window_s)}}
    assert front["hdd"]["QD mean"] == f((2280 * 10973523.6 - 998 * 9505399.26
                                         + (2397 - 1062) * 213654) / (window_s * 1e9), 2)
    assert not has_table(frame, "cache") and not has_table(frame, "member")
    assert "events" not in frame


def with_release_lateness(snapshot_doc, buckets):
    doc = copy.deepcopy(snapshot_doc)
    doc["devices"][0]["realtime"] = {"release_lateness_histogram": {
        "sub_bits": 7, "buckets": [[i, c] for i, c in sorted(buckets.items())]}}
    return doc


def test_frame_shows_release_lateness_and_says_when_it_is_late():
    # histogram buckets (sub_bits 7): index 768 holds 4096..4127 ns
    # (midpoint 4111), index 1975 holds 2998272..3014655 ns (midpoint 3006463)
    before = with_release_lateness(snapshot("hdd-before"), {768: 100})
    on_time = with_release_lateness(snapshot("hdd-after"), {768: 100 + 1000})
    late = with_release_lateness(snapshot("hdd-after"), {768: 100 + 980, 1975: 20})
    frame = top_frame.render(before, on_time)
    assert table(frame, "front end")["hdd"]["late p99 us"] == "4.1"
    assert "release-late" not in frame
    # 1000 releases in the window: the 990th is in the 3 ms bucket, beyond a
    # tenth of the drive's mean latency
    frame = top_frame.render(before, late)
    front = table(frame, "front end")["hdd"]
    assert front["late p99 us"] == "3006.5"
    assert 3006.5 > 0.1 * float(front["mean lat us"])
    warning = [line for line in frame.split("\n") if "release-late" in line]
    assert len(warning) == 1
    said = re.fullmatch(r"hdd: release-late, 3006 us p99 against (\d+) us mean: (.*)", warning[0])
    assert abs(int(said.group(1)) - float(front["mean lat us"])) <= 1
    assert said.group(2) == ("the plugin released replies late (release lateness p99 above 10% "
                             "of the device's mean latency): the host's CPU could not keep the "
                             "model's timing")


# ---- bad input ---------------------------------------------------------------------------

def fake_lab(run_base):
    directory = run_base / "tlab"
    directory.mkdir()
    devices = [{"node": "node1", "device": "lun0", "plugin": "raid", "socket": "x.sock",
                "pidfile": "x.pid", "stats": str(directory / "node1-lun0.stats"), "ctl": "x.ctl"},
               {"node": "node1", "device": "ext0", "plugin": "file", "socket": "y.sock",
                "pidfile": "y.pid", "stats": None, "ctl": None}]
    (directory / "lab.json").write_text(json.dumps({
        "name": "tlab", "topology": "/x.toml", "accel": "tcg", "appliance": "0", "created": 0,
        "phase": "ready", "domains": ["storlab-tlab-node1"], "devices": devices}))
    return directory / "node1-lun0.stats"


@pytest.mark.parametrize("args, message", [
    (("{tmp}/none.stats", "--once"), "stats file {tmp}/none.stats: cannot open: No such file"),
    (("{tmp}/small.stats", "--once"), "stats file {tmp}/small.stats: too small"),
    (("{tmp}/small.stats", "--interval", "0"), "--interval 0: expected seconds > 0"),
    (("{tmp}/small.stats", "--interval", "fast"), "--interval fast: expected seconds > 0"),
    (("{tmp}/small.stats", "--interval", "nan"), "--interval nan: expected seconds > 0"),
    (("{tmp}/small.stats", "--interval=-1"), "--interval -1: expected seconds > 0"),
    (("{tmp}/small.stats", "--count", "0"), "--count 0: expected a whole number of frames >= 1"),
    (("nolab", "node1", "lun0"), "no lab named 'nolab' is up (known: tlab)"),
    (("tlab", "node9", "lun0"), "lab 'tlab' has no node 'node9' (nodes: node1)"),
    (("tlab", "node1", "lun7"), "lab 'tlab' node 'node1' has no device 'lun7' (devices: lun0, ext0)"),
    (("tlab", "node1", "ext0"), "lab 'tlab' node 'node1' device 'ext0' (file) has no stats file "
                                "(storlab plugins have one: node1 lun0)"),
    (("tlab", "node1", "lun0"), "stats file {tmp}/tlab/node1-lun0.stats: cannot open"),
    (("tlab", "node1"), "expected STATS or LAB NODE DEVICE, got 2 arguments (tlab node1)"),
    # a FIFO once blocked top forever; a directory or a device is no stats file either
    (("{tmp}/fifo.stats", "--once"), "stats file {tmp}/fifo.stats: not a regular file"),
    (("/dev/zero", "--once"), "stats file /dev/zero: not a regular file"),
    (("{tmp}", "--once"), "stats file {tmp}: not a regular file"),
])
def test_bad_input_is_one_line_and_exit_1(tmp_path, args, message):
    fake_lab(tmp_path)
    (tmp_path / "small.stats").write_text("x")
    os.mkfifo(tmp_path / "fifo.stats")
    result = storlab("top", *(a.format(tmp=tmp_path) for a in args),
                     env={"STORLAB_RUN_DIR": str(tmp_path)})
    assert result.returncode == 1, result
    assert result.stderr.startswith("storlab top: "), result.stderr
    assert message.format(tmp=tmp_path) in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and result.stdout == ""


# ---- a real raid plugin ------------------------------------------------------------------

@pytest.fixture(scope="module")
def live_raid():
    """nbdkit serving the raid plugin (8 x 10k SAS, RAID 10) with stats= and
    ctl=, and fio 8K randrw at QD16 against it for the module's tests."""
    for need in (paths.plugin("raid"), paths.stats_tool()):
        assert os.path.exists(need), f"{need}: not built (meson setup build && ninja -C build)"
    directory = tempfile.mkdtemp(prefix="storlab-top.")
    sock, ctl, stats = (os.path.join(directory, n) for n in ("raid.sock", "raid.ctl", "raid.stats"))
    err_path = os.path.join(directory, "nbdkit.err")
    with open(err_path, "w") as err:
        nbdkit = subprocess.Popen(
            ["nbdkit", "--foreground", "--exit-with-parent", "--threads=64", "-U", sock,
             paths.plugin("raid"), "preset=vsa-raid10-8x-sas10k", "member-size=64M",
             f"stats={stats}", f"ctl={ctl}"], stderr=err)
    fio = None
    try:
        for _ in range(100):
            if os.path.exists(sock) and os.path.exists(ctl):
                break
            assert nbdkit.poll() is None, open(err_path).read()
            time.sleep(0.05)
        fio = subprocess.Popen(
            ["fio", "--name=top", "--ioengine=nbd", f"--uri=nbd+unix:///?socket={sock}",
             "--rw=randrw", "--bs=8k", "--iodepth=16", "--size=48M", "--time_based",
             "--runtime=10", "--output-format=json", f"--output={directory}/fio.json"],
            cwd=directory, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        yield {"dir": directory, "sock": sock, "ctl": ctl, "stats": stats}
    finally:
        for proc in (fio, nbdkit):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=30)
        shutil.rmtree(directory, ignore_errors=True)


def frames_of(stdout):
    return re.split(r"\n(?=raid \(raid\)  )", stdout.rstrip("\n"))


def test_live_frames_then_the_battery_fails(live_raid):
    result = storlab("top", live_raid["stats"], "--once", "--count", "2", "--interval", "1")
    assert (result.returncode, result.stderr) == (0, "")
    frames = frames_of(result.stdout)
    assert len(frames) == 2
    for frame in frames:
        assert frame.startswith("raid (raid)  capacity 256 MiB  up ")
        front = table(frame, "front end")["raid"]
        assert float(front["read IOPS"]) > 0 and float(front["write IOPS"]) > 0
        assert list(table(frame, "member", left=2)) == [f"member{i}" for i in range(8)]
        assert "battery ok  write-back on" in frame
        assert "array: raid 10, 8 members, stripe 64 KiB, cache 512 MiB" in frame
    members = table(frames[-1], "member", left=2)
    assert all(float(m["IOPS"]) > 0 and 0 < float(m["busy %"]) <= 100 for m in members.values())

    flip = subprocess.run(["/usr/bin/python3", STORLAB, "ctl", live_raid["ctl"], "battery", "failed"],
                          capture_output=True, text=True, timeout=30, check=False)
    assert flip.stdout == "ok battery failed; write-back off\n", flip
    after = storlab("top", live_raid["stats"], "--once", "--interval", "1")
    assert after.returncode == 0, after.stderr
    [frame] = frames_of(after.stdout)
    assert "policy write-back  battery failed  write-back off" in frame
    assert "battery set failed" in frame and "cache now write-through" in frame
    cache = table(frame, "cache")["raid"]
    assert int(cache["writes through"]) > 0 and cache["writes cached"] == "0"


def test_lab_form_reads_the_devices_stats_file(live_raid, tmp_path):
    directory = tmp_path / "tlab"
    directory.mkdir()
    (directory / "lab.json").write_text(json.dumps({
        "name": "tlab", "topology": "/x.toml", "accel": "tcg", "appliance": "0", "created": 0,
        "phase": "ready", "domains": ["storlab-tlab-node1"],
        "devices": [{"node": "node1", "device": "lun0", "plugin": "raid",
                     "stats": live_raid["stats"], "ctl": live_raid["ctl"]}]}))
    result = storlab("top", "tlab", "node1", "lun0", "--once", "--interval", "0.5",
                     env={"STORLAB_RUN_DIR": str(tmp_path)})
    assert (result.returncode, result.stderr) == (0, "")
    assert len(table(result.stdout, "member", left=2)) == 8


def test_terminal_redraws_in_place_and_ctrl_c_exits_0(live_raid):
    import pty
    leader, follower = pty.openpty()
    proc = subprocess.Popen(storlab_argv("top", live_raid["stats"], "--interval", "0.3"),
                            stdout=follower, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    os.close(follower)
    seen = b""
    deadline = time.monotonic() + 20
    while seen.count(b"\x1b[Hraid (raid)") < 2 and time.monotonic() < deadline:
        if select.select([leader], [], [], 1.0)[0]:
            seen += os.read(leader, 65536)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=10) == 0
    assert proc.stderr.read() == ""
    os.close(leader)
    assert seen.count(b"\x1b[Hraid (raid)") >= 2        # the second frame over the first
    assert b"\x1b[J" in seen and b"member7" in seen


def test_a_controllers_luns_are_front_end_rows_not_members():
    before, after = snapshot("raid-before"), snapshot("raid-after")
    for doc in (before, after):       # one LUN carrying all of the controller's I/O
        lun = copy.deepcopy(doc["devices"][0])
        lun.update(name="lun:data", kind="lun", counters={})
        doc["devices"].append(lun)
    frame = top_frame.render(before, after, [], interval_s=1.0)
    assert ", 8 members" in frame
    front = table(frame, "front end")
    assert list(front) == ["raid", "lun:data"]
    assert front["lun:data"]["read IOPS"] == front["raid"]["read IOPS"]
    assert "lun:data" not in table(frame, "member", left=2)
