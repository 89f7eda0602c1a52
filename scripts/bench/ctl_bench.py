#!/usr/bin/python3
"""The raid plugin's control socket under many clients, printed as a
markdown table: 200 `status` commands through storlab ctl's own client,
20 at a time, while N other clients hold connections open and idle (an
abandoned `nc`, a stuck script). With every slot idle the newcomers wait
for the longest-idle client to give its slot up (10 s).

usage: scripts/bench/ctl_bench.py [--plugin-dir DIR] [--idle N ...]
  DIR: where nbdkit-raid-plugin.so is (default: this checkout's build),
  so a build of another revision can be measured beside this one.
"""
import argparse
import concurrent.futures
import os
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

from storlab_cli import paths  # noqa: E402
from storlab_cli.live import ctl  # noqa: E402
from storlab_cli.errors import UserError  # noqa: E402

COMMANDS = 200
CONCURRENT = 20
ARRAY = ["level=1", "members=2", "member-preset=sas10k-300g", "member-size=32M", "cache-size=4M"]


def one_command(sock):
    started = time.monotonic()
    try:
        answered = ctl.send_command(sock, "status").startswith("ok ")
    except UserError:
        answered = False
    return answered, time.monotonic() - started


def measure(plugin, idle_clients):
    with tempfile.TemporaryDirectory(prefix="storlab-ctl-bench-") as work:
        sock = os.path.join(work, "raid.ctl")
        server = subprocess.Popen(["nbdkit", "--foreground", "-U", os.path.join(work, "nbd.sock"),
                                   "--", plugin, *ARRAY, f"ctl={sock}"],
                                  stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 10
            while not os.path.exists(sock):
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"{plugin}: nbdkit did not start")
                time.sleep(0.05)
            idle = []
            for _ in range(idle_clients):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.settimeout(5)            # a server that accepts no more leaves them queued
                try:
                    s.connect(sock)
                except OSError:
                    s.close()
                    break
                idle.append(s)
            started = time.monotonic()
            with concurrent.futures.ThreadPoolExecutor(max_workers=CONCURRENT) as pool:
                results = list(pool.map(lambda _: one_command(sock), range(COMMANDS)))
            wall_s = time.monotonic() - started
            for s in idle:
                s.close()
        finally:
            server.terminate()
            server.wait()
    latencies = sorted(t for _, t in results)
    return (len(idle), sum(ok for ok, _ in results), wall_s, latencies[len(latencies) // 2] * 1000,
            latencies[-1] * 1000)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plugin-dir", help="directory of nbdkit-raid-plugin.so")
    parser.add_argument("--idle", type=int, nargs="+", default=[0, 1, 15, 16],
                        help="idle clients held open during the run (default 0 1 15 16)")
    args = parser.parse_args()
    plugin = (os.path.join(args.plugin_dir, "nbdkit-raid-plugin.so") if args.plugin_dir
              else paths.plugin("raid"))
    print(f"{COMMANDS} `status` commands, {CONCURRENT} at a time ({plugin})\n")
    print("| idle clients (connected) | answered | wall s | p50 ms | max ms |")
    print("|---|---|---|---|---|")
    for idle in args.idle:
        connected, answered, wall_s, p50_ms, max_ms = measure(plugin, idle)
        print(f"| {idle} ({connected}) | {answered}/{COMMANDS} | {wall_s:.2f} | {p50_ms:.1f} "
              f"| {max_ms:.1f} |")


if __name__ == "__main__":
    main()
