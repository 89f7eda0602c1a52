#!/usr/bin/python3
"""Issue 4's acceptance through the raid plugin at full scale (nbdkit + fio, real time).

Prints markdown tables to paste (scripts/bench/raid_validation.md):
  1. steady state: the seed controller (preset vsa-raid10-8x-sas10k, 8 x 300 GB
     10k SAS in RAID 10 behind a 512 MB battery-backed cache), fio 8K randrw
     50/50 at QD32 over a span far beyond the cache; once the cache's dirty
     bytes have stopped growing and stopped drifting, one window between two
     stats snapshots: member IOPS vs front reads + 2 x writes (target within
     5 %), beside storlab-sim's figure for the same job and the same window;
  2. the battery fails in the same run (`battery failed` over the control
     socket, `battery ok` some seconds later): mean write latency before,
     in the first second after, 2-10 s after and after the recovery (fio's
     100 ms averaged latency log, aligned to host time, beside the model's
     own figure from the stats and storlab-sim's), IOPS, and the events log;
  3. RAID 5 (the same controller as 4 members, cache write-through): member
     I/Os per front write for 8K random writes (4) and full-stripe
     sequential writes (no member reads).
Everything runs back to back in one process on a shared machine: compare
within one run.

Time alignment: fio runs with log_unix_epoch=1, i.e. it stamps every log
sample with its job's start time (CLOCK_REALTIME, read when the job's clock
starts) plus the elapsed milliseconds; the host times of the control
commands are time.time() (CLOCK_REALTIME) read just before sending, and the
plugin's event log carries realtime_ns on the same clock. A 100 ms averaged
sample stamped t covers the completions in (t - 100 ms, t].

usage: scripts/bench/raid_seed_bench.py [--seconds N] [--span 64g] ...  (after ninja -C build)
"""
import argparse
import datetime
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from storlab_cli import paths  # noqa: E402
from storlab_cli.lab.nbdkit import Nbdkit  # noqa: E402
from storlab_cli.live.ctl import send_command  # noqa: E402
from storlab_cli.results import device_window, fio_results  # noqa: E402
from storlab_cli.errors import UserError  # noqa: E402

PRESET = "preset=vsa-raid10-8x-sas10k"
BLOCK = 8192
THREADS = 64
SEED_JOB = ["rw=randrw", "rwmixread=50", "bs=8k", "iodepth=32"]
# RAID 5 of 4 of the preset's members: a row holds 3 strips of 64 KiB
RAID5 = ["level=5", "members=4", "stripe-size=64k", "cache-policy=write-through"]
RAID5_ROW = 3 * 64 * 1024


# ------------------------------------------------------------- helpers --

def snapshot(stats_path):
    """(host time, storlab-stats document); the time is the call's midpoint."""
    t0 = time.time()
    result = subprocess.run([paths.stats_tool(), stats_path], capture_output=True, text=True,
                            check=False)
    t1 = time.time()
    if result.returncode != 0:
        raise UserError(f"storlab-stats {stats_path}: {result.stderr.strip()}")
    return (t0 + t1) / 2, json.loads(result.stdout)


def sleep_until(t):
    delay = t - time.time()
    if delay > 0:
        time.sleep(delay)


def rates(before, after):
    """Front and member rates of the window between two (time, doc) snapshots."""
    window_s = after[0] - before[0]
    doc = device_window.delta(before[1], after[1], "raid stats", window_s=window_s)
    front, members = doc["devices"][0], doc["devices"][1:]
    w = front["ops"]["write"]
    return {
        "window_s": window_s,
        "r": front["ops"]["read"]["count"] / window_s,
        "w": w["count"] / window_s,
        "writes": w["count"],
        "w_lat_us": w["lat_sum_ns"] / w["count"] / 1e3 if w["count"] else None,
        "mr": sum(m["ops"]["read"]["count"] for m in members) / window_s,
        "mw": sum(m["ops"]["write"]["count"] for m in members) / window_s,
        "read_misses": front["counter_deltas"]["cache_read_misses"] / window_s,
        "dirty_start": before[1]["devices"][0]["counters"]["dirty_bytes"],
        "dirty_end": after[1]["devices"][0]["counters"]["dirty_bytes"],
        "member_ios": sum(m["ops"][op]["count"] for m in members for op in ("read", "write")),
        "member_reads": sum(m["ops"]["read"]["count"] for m in members),
        "member_writes": sum(m["ops"]["write"]["count"] for m in members),
        "front_writes": w["count"],
    }


def accounting(x):
    """RAID 10 member IOPS the window should show: r + 2w, and the exact
    book-keeping (read misses + 2 x the writes that left the cache: w less
    the change in dirty bytes)."""
    front = x["r"] + 2 * x["w"]
    member = x["mr"] + x["mw"]
    drift = 2 * (x["dirty_end"] - x["dirty_start"]) / BLOCK / x["window_s"]
    booked = x["read_misses"] + 2 * x["w"] - drift
    return front, member, drift, booked


def pct(a, b):
    return 100.0 * (a / b - 1) if b else float("nan")


def fio_cmd(uri, name, options):
    return (["fio", f"--name={name}", "--ioengine=nbd", f"--uri={uri}"]
            + [f"--{o}" for o in options])


def fio(uri, workdir, name, options):
    out = os.path.join(workdir, name + ".json")
    cmd = fio_cmd(uri, name, options) + ["--output-format=json", f"--output={out}"]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=workdir)
    if result.returncode != 0:
        raise UserError(f"fio {name}: {result.stderr.strip()}")
    doc = fio_results.load(out)
    if doc["jobs"][0]["error"]:
        raise UserError(f"fio {name}: job error {doc['jobs'][0]['error']}")
    return doc


def simulate(workdir, params, job_options, extra=()):
    job = os.path.join(workdir, "sim.fio")
    with open(job, "w", encoding="utf-8") as f:
        f.write("\n".join(["[sim]", "ioengine=nbd"] + list(job_options)) + "\n")
    result = subprocess.run([paths.simulator(), "raid"] + params + list(extra) + [job],
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise UserError(f"storlab-sim: {result.stderr.strip()}")
    return json.loads(result.stdout)


def sim_snapshot(doc):
    """A simulator run's end state as a storlab-stats document (front, members)."""
    device = doc["storlab"]["device"]
    return {"devices": [device["stats"]] + [m["stats"] for m in device["model"]["member_layer"]]}


def store_params(args, workdir, name):
    return [f"file={os.path.join(workdir, name + '.img')}"] if args.store == "file" else []


# ------------------------------------------- parts 1 + 2: one long run --

def seed_run(args, workdir):
    stats = os.path.join(workdir, "seed.stats")
    ctl = os.path.join(workdir, "seed.ctl")
    params = [PRESET, f"stats={stats}", f"ctl={ctl}"] + store_params(args, workdir, "seed")
    job = SEED_JOB + [f"size={args.span}"]
    # runs until told to stop: warm-up, window, before, failed, recovered, margin
    budget = args.warmup_max + args.seconds + 5 + args.fail_seconds + args.after_seconds + 60
    out = {"params": params, "job": job}
    with Nbdkit(workdir, "raid", params, threads=THREADS, wait_for=[ctl]) as server:
        cmd = fio_cmd(server.uri, "seed", job + [
            "time_based=1", f"runtime={budget}", "write_lat_log=seed",
            f"log_avg_msec={args.log_msec}", "log_unix_epoch=1"])
        fio_err = open(os.path.join(workdir, "seed.fio.stderr"), "w", encoding="utf-8")
        out["fio_launch"] = time.time()
        proc = subprocess.Popen(cmd, cwd=workdir, stdout=subprocess.DEVNULL, stderr=fio_err)
        try:
            out.update(seed_schedule(args, stats, ctl, proc, workdir, out["fio_launch"]))
        finally:
            if proc.poll() is None:      # fio ends its jobs and writes its logs on SIGINT
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            fio_err.close()
        out["lateness_p99_us"] = snapshot(stats)[1]["devices"][0]["realtime"][
            "release_lateness_ns"]["percentiles"]["99"] / 1e3
    out["events"] = [json.loads(line) for line in open(stats + ".events", encoding="utf-8")]
    out["log"] = read_lat_log(os.path.join(workdir, "seed_clat.1.log"))
    return out


def check_fio(proc, workdir):
    if proc.poll() is not None:
        with open(os.path.join(workdir, "seed.fio.stderr"), encoding="utf-8") as f:
            raise UserError(f"fio ended early (exit {proc.returncode}): {f.read().strip()}")


def steady(args, snaps):
    now = snaps[-1][0]
    for back in (args.steady_window, args.steady_window / 2):
        old = [s for s in snaps if s[0] <= now - back]
        if not old:
            return False
        front_rate, _, drift, _ = accounting(rates(old[-1], snaps[-1]))
        if abs(drift) > args.steady_pct / 100 * front_rate:
            return False
    return True


def seed_schedule(args, stats, ctl, proc, workdir, launch):
    """Polls the stats each second until steady, measures, fails the battery."""
    trace = []                      # (seconds since fio's launch, dirty bytes)
    snaps = []
    peak_t = steady_t = None
    peak = 0
    while True:
        time.sleep(1.0)
        check_fio(proc, workdir)
        snap = snapshot(stats)
        snaps.append(snap)
        front = snap[1]["devices"][0]
        dirty = front["counters"]["dirty_bytes"]
        destaging = front["counters"]["destaged_bytes"] > 0
        trace.append((snap[0] - launch, dirty))
        if dirty > peak:
            peak, peak_t = dirty, snap[0] - launch
        # steady: destage running, and the dirty bytes' drift over the last
        # steady-window seconds, and over its second half, worth at most
        # steady-pct of r + 2w in member IOPS
        if destaging and steady(args, snaps):
            steady_t = snap[0] - launch
            break
        if snap[0] - launch >= args.warmup_max:
            break
        snaps = snaps[-(int(args.steady_window) + 5):]
    a = snaps[-1]
    # the measured window; keep polling to show the dirty bytes inside it
    while time.time() < a[0] + args.seconds - 1.0:
        time.sleep(1.0)
        check_fio(proc, workdir)
        snap = snapshot(stats)
        trace.append((snap[0] - launch, snap[1]["devices"][0]["counters"]["dirty_bytes"]))
    sleep_until(a[0] + args.seconds)
    b = snapshot(stats)
    # battery: 5 s before, fail, ok, recovered
    sleep_until(b[0] + 5)
    pre = snapshot(stats)
    t_fail = time.time()
    reply_fail = send_command(ctl, "battery failed")
    marks = {}
    for at in (1, 2, 10):
        if at < args.fail_seconds:
            sleep_until(t_fail + at)
            marks[at] = snapshot(stats)
    sleep_until(t_fail + args.fail_seconds)
    check_fio(proc, workdir)
    pre_ok = snapshot(stats)
    t_ok = time.time()
    reply_ok = send_command(ctl, "battery ok")
    sleep_until(t_ok + 2)
    r2 = snapshot(stats)
    sleep_until(t_ok + args.after_seconds)
    r_end = snapshot(stats)
    check_fio(proc, workdir)
    windows = {
        "before": (b, pre),
        "first 1 s": (pre, marks[1]),
        "2–10 s": (marks[2], marks.get(10, pre_ok)),
        "after recovery": (r2, r_end),
    }
    return {"trace": trace, "peak_t": peak_t, "peak": peak, "steady_t": steady_t,
            "window": (a, b), "window_rates": rates(a, b),
            "t_fail": t_fail, "t_ok": t_ok, "reply_fail": reply_fail, "reply_ok": reply_ok,
            "battery_windows": {k: (v[0][0], v[1][0], rates(*v)) for k, v in windows.items()}}


def read_lat_log(path):
    """fio latency log: (time s on the host clock, latency ns, direction)."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            fields = [x.strip() for x in line.split(",")]
            if len(fields) >= 3:
                rows.append((int(fields[0]) / 1e3, int(fields[1]), int(fields[2])))
    return rows


def log_mean_us(log, start, end, log_msec):
    """Mean of the averaged write samples whose 100 ms lie inside [start, end]."""
    values = [v for t, v, d in log if d == 1 and t - log_msec / 1e3 >= start and t <= end]
    return (sum(values) / len(values) / 1e3 if values else None), len(values)


# ----------------------------------------------------------- simulator --

def seed_sim(args, workdir, run):
    """The same job in virtual time: the steady window as the difference of
    two deterministic runs (to its start and to its end), and the battery
    failure at the same offset from the job's start, 100 ms timeline."""
    launch = run["fio_launch"]
    a, b = run["window"]
    job = SEED_JOB + [f"size={args.span}", "time_based=1"]
    params = [PRESET]
    ends = []
    for t in (a[0], b[0]):
        ms = round((t - launch) * 1000)
        doc = simulate(workdir, params, job + [f"runtime={ms}ms"])
        ends.append((t, sim_snapshot(doc)))
    window = rates(*ends)
    # battery: events on the 100 ms grid, windows as in the plugin run
    fail_ms = round((run["t_fail"] - launch) * 10) * 100
    ok_ms = fail_ms + round((run["t_ok"] - run["t_fail"]) * 10) * 100
    end_ms = ok_ms + args.after_seconds * 1000 + 1000
    doc = simulate(workdir, params, job + [f"runtime={end_ms}ms"],
                   ["--interval-ms", "100", "--event", f"{fail_ms}ms:battery failed",
                    "--event", f"{ok_ms}ms:battery ok"])
    timeline = doc["storlab"]["timeline"]
    f, o = fail_ms / 1e3, ok_ms / 1e3
    spans = {"before": (f - 5, f), "first 1 s": (f, f + 1),
             "2–10 s": (f + 2, f + min(10, args.fail_seconds)),
             "after recovery": (o + 2, o + args.after_seconds)}
    battery = {}
    for name, (s, e) in spans.items():
        cells = [c for c in timeline
                 if c["t_ms"] - c["duration_ms"] >= s * 1000 - 1 and c["t_ms"] <= e * 1000 + 1]
        secs = sum(c["duration_ms"] for c in cells) / 1e3
        ios = sum(c[d]["ios"] for c in cells for d in ("read", "write"))
        wios = sum(c["write"]["ios"] for c in cells)
        wlat = sum(c["write"]["lat_sum_ns"] for c in cells)
        battery[name] = {"iops": ios / secs if secs else None,
                         "w_lat_us": wlat / wios / 1e3 if wios else None}
    return window, battery


# --------------------------------------------------------------- RAID 5 --

def raid5_run(args, workdir):
    stats = os.path.join(workdir, "r5.stats")
    params = [PRESET] + RAID5 + [f"stats={stats}"] + store_params(args, workdir, "r5")
    jobs = {
        "8K random writes": ["rw=randwrite", "bs=8k", "iodepth=16", f"size={args.span}"],
        f"{RAID5_ROW // 1024}K sequential writes (full rows)":
            ["rw=write", f"bs={RAID5_ROW}", "iodepth=4", "offset=0", f"size={args.span}"],
    }
    rows = []
    with Nbdkit(workdir, "raid", params, threads=THREADS) as server:
        for label, job in jobs.items():
            s0 = snapshot(stats)
            fio(server.uri, workdir, "r5", job + ["time_based=1", f"runtime={args.raid5_seconds}"])
            s1 = snapshot(stats)
            doc = simulate(workdir, [PRESET] + RAID5,
                           job + ["time_based=1", f"runtime={args.raid5_seconds}"])
            end = sim_snapshot(doc)
            zero = {"devices": [dict(d, ops={}, counters={k: 0 for k in d["counters"]})
                                for d in end["devices"]]}
            sim = rates((0, zero), (args.raid5_seconds, end))
            rows.append((label, rates(s0, s1), sim))
    return rows


# -------------------------------------------------------------- tables --

def fmt(v, spec=".0f", none="–"):
    return none if v is None else format(v, spec)


def print_steady(args, run, sim):
    x = run["window_rates"]
    print(f"\n### 1. Steady state: 8K randrw 50/50, QD32, over {args.span} of the array\n")
    trace = run["trace"]
    a_t, b_t = (t - run["fio_launch"] for t in (run["window"][0][0], run["window"][1][0]))
    inside = [d for t, d in trace if a_t - 0.5 <= t <= b_t + 0.5]
    steady = (f"dirty stopped drifting (< {args.steady_pct:g} % of r + 2w over "
              f"{args.steady_window:g} s) at {run['steady_t']:.0f} s"
              if run["steady_t"] is not None else
              f"dirty still drifting at the warm-up cap ({args.warmup_max:g} s): NOT steady")
    print(f"Cache: dirty bytes peaked at {run['peak'] / 1e6:.0f} MB {run['peak_t']:.0f} s "
          f"after fio started (destage from the 80 % watermark); {steady}; window "
          f"{a_t:.0f}–{b_t:.0f} s, dirty {min(inside) / 1e6:.0f}–{max(inside) / 1e6:.0f} MB "
          f"inside it. Plugin release lateness p99 over the whole run: "
          f"{run['lateness_p99_us']:.0f} µs.\n")
    print("| run | window s | reads/s r | writes/s w | r + 2w | member IOPS | member vs r + 2w "
          "| Δdirty worth (member IOPS) | member vs misses + 2 × destaged | target ±5 % |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label, y in (("plugin (real time)", x), ("storlab-sim, same job and window", sim)):
        front, member, drift, booked = accounting(y)
        ok = "met" if abs(pct(member, front)) <= 5 else "**missed**"
        print(f"| {label} | {y['window_s']:.1f} | {y['r']:.0f} | {y['w']:.0f} | {front:.0f} | "
              f"{member:.0f} (r {y['mr']:.0f} + w {y['mw']:.0f}) | {pct(member, front):+.2f} % | "
              f"{drift:+.0f} | {pct(member, booked):+.2f} % | {ok} |")
    front_p, front_s = x["r"] + x["w"], sim["r"] + sim["w"]
    print(f"\nFront-end IOPS plugin/sim: {front_p:.0f} / {front_s:.0f} = {front_p / front_s:.3f}.")


def print_battery(args, run, sim_battery):
    log = run["log"]
    t_fail, t_ok = run["t_fail"], run["t_ok"]
    print(f"\n### 2. Battery failed mid-run (same run; `battery failed` at host "
          f"{iso(t_fail)}, `battery ok` {t_ok - t_fail:.1f} s later)\n")
    print(f"| window | fio mean write clat µs ({args.log_msec} ms samples) | samples "
          "| model mean write latency µs (stats) | front IOPS (stats) | sim write latency µs "
          "| sim IOPS |")
    print("|---|---|---|---|---|---|---|")
    spans = {"before": "5 s before the failure", "first 1 s": "first 1 s after",
             "2–10 s": "2–%g s after" % min(10, args.fail_seconds), "after recovery": "2–%d s after `battery ok`"
             % args.after_seconds}
    fio_means = {}
    for key, (s, e, x) in run["battery_windows"].items():
        if key == "first 1 s":
            s = t_fail             # samples from the command on (the snapshot was just before)
        mean, n = log_mean_us(log, s, e, args.log_msec)
        fio_means[key] = mean
        sb = sim_battery[key]
        print(f"| {spans[key]} | {fmt(mean)} | {n} | {fmt(x['w_lat_us'])} | "
              f"{x['r'] + x['w']:.0f} | {fmt(sb['w_lat_us'])} | {fmt(sb['iops'])} |")
    b = run["battery_windows"]
    rise = fio_means["first 1 s"] / fio_means["before"] if fio_means["first 1 s"] else None
    model_rise = b["first 1 s"][2]["w_lat_us"] / b["before"][2]["w_lat_us"]
    iops = {k: v[2]["r"] + v[2]["w"] for k, v in b.items()}
    print(f"\n| check | plugin | target |\n|---|---|---|")
    print(f"| write latency, first 1 s / before (fio) | {fmt(rise, '.0f')}× "
          f"(model {model_rise:.0f}×) | ≥ 5× {'met' if rise and rise >= 5 else '**missed**'} |")
    print(f"| IOPS 2–10 s after / before | {iops['2–10 s'] / iops['before']:.2f} | < 1 "
          f"{'met' if iops['2–10 s'] < iops['before'] else '**missed**'} |")
    rec = fio_means["after recovery"]
    print(f"| write latency after recovery / before (fio) | "
          f"{fmt(rec / fio_means['before'] if rec else None, '.2f')} | ≈ 1 (recovered) |")
    print("\nEvents log (`STATS.events`), against the host time the command was sent:\n")
    print("| event | realtime_ns (UTC) | after the command |\n|---|---|---|")
    for ev in run["events"]:
        t = ev["realtime_ns"] / 1e9
        if t < t_fail - 1:
            continue
        ref = t_ok if t >= t_ok - 0.001 else t_fail
        print(f"| {ev['event']} | {iso(t)} | {1e3 * (t - ref):+.1f} ms |")
    print(f"\nReplies: `{run['reply_fail']}`, `{run['reply_ok']}`. Alignment check: fio's first "
          f"{args.log_msec} ms sample is stamped {1e3 * (log[0][0] - run['fio_launch']):.0f} ms "
          "after the host launched fio (fio's start, on the same clock, lies between the launch "
          f"and that stamp less {args.log_msec} ms).")


def print_raid5(rows):
    print("\n### 3. RAID 5 of 4 members, cache write-through\n")
    print("| workload | run | front writes | member reads / write | member writes / write "
          "| member I/Os / write | target |")
    print("|---|---|---|---|---|---|---|")
    for label, plugin, sim in rows:
        for run, x in (("plugin", plugin), ("sim", sim)):
            n = x["front_writes"]
            per = x["member_ios"] / n
            if "random" in label:
                ok = "4: " + ("met" if abs(per - 4) <= 0.2 else "**missed**")
            else:
                ok = "no reads: " + ("met" if x["member_reads"] == 0 else "**missed**")
            print(f"| {label} | {run} | {n} | {x['member_reads'] / n:.3f} | "
                  f"{x['member_writes'] / n:.3f} | {per:.3f} | {ok} |")


def iso(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%H:%M:%S.%f")[:-3]


PARTS = ("seed", "raid5")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60,
                        help="steady-state window measured (default 60)")
    parser.add_argument("--span", default="64g", help="fio size= over the array (default 64g)")
    parser.add_argument("--warmup-max", type=float, default=150,
                        help="longest wait for the cache's steady state (default 150 s)")
    parser.add_argument("--steady-window", type=float, default=20,
                        help="steady: dirty drift looked at over this long (default 20 s)")
    parser.add_argument("--steady-pct", type=float, default=2.0,
                        help="steady: that drift worth at most this %% of r + 2w (default 2)")
    parser.add_argument("--fail-seconds", type=float, default=20,
                        help="battery failed this long (default 20)")
    parser.add_argument("--after-seconds", type=int, default=10,
                        help="measure until this long after battery ok (default 10)")
    parser.add_argument("--log-msec", type=int, default=100, help="fio log_avg_msec (default 100)")
    parser.add_argument("--raid5-seconds", type=int, default=15, help="per RAID 5 run (default 15)")
    parser.add_argument("--store", choices=("file", "memory"), default="file",
                        help="plugin data: a sparse file in the temp dir (default) or memory")
    parser.add_argument("--only", choices=PARTS, action="append",
                        help="seed (parts 1 and 2) or raid5 (part 3); repeatable")
    args = parser.parse_args()
    if args.fail_seconds < 3:
        parser.error("--fail-seconds must be at least 3")
    if args.after_seconds < 3:
        parser.error("--after-seconds must be at least 3")
    parts = args.only or PARTS
    started = time.time()
    print(f"`{shlex.join(['scripts/bench/raid_seed_bench.py'] + sys.argv[1:])}` — "
          f"{datetime.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z')}, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start")
    with tempfile.TemporaryDirectory(prefix="storlab-raid-bench-") as workdir:
        if "seed" in parts:
            run = seed_run(args, workdir)
            sim_window, sim_battery = seed_sim(args, workdir, run)
            print_steady(args, run, sim_window)
            print_battery(args, run, sim_battery)
        if "raid5" in parts:
            print_raid5(raid5_run(args, workdir))
    print(f"\n(total {time.time() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except UserError as e:
        print(f"raid_seed_bench: {e}", file=sys.stderr)
        sys.exit(1)
