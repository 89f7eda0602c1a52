#!/usr/bin/python3
"""The wire of the lab's guest links: a UDP datagram's round trip over
127.0.0.1 between two processes, as a lab's two QEMUs exchange their
guests' packets on a libvirt udp link (the `tcg-udp` link preset,
emulator/cluster/fabric.c). What the guests and QEMU spend on a message
is not in it: the cluster model charges that as their CPU (host_cpu.c).

usage: scripts/bench/udp_loopback_rtt.py [--count N] [--bytes B]
"""
import argparse
import os
import socket
import time

WARM_UP = 100


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20000, help="round trips (default 20000)")
    parser.add_argument("--bytes", type=int, default=100, help="datagram size (default 100)")
    args = parser.parse_args()
    if args.count < 100 or not 1 <= args.bytes <= 65000:
        parser.error("--count: at least 100; --bytes: 1 to 65000")
    ping = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    ping.bind(("127.0.0.1", 0))
    echo = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    echo.bind(("127.0.0.1", 0))
    child = os.fork()
    if child == 0:
        for _ in range(args.count + WARM_UP):
            data, peer = echo.recvfrom(65536)
            echo.sendto(data, peer)
        os._exit(0)
    message = b"x" * args.bytes
    rtt_ns = []
    for i in range(args.count + WARM_UP):
        start = time.perf_counter_ns()
        ping.sendto(message, echo.getsockname())
        ping.recvfrom(65536)
        if i >= WARM_UP:
            rtt_ns.append(time.perf_counter_ns() - start)
    os.waitpid(child, 0)
    rtt_ns.sort()

    def at(q):
        return rtt_ns[min(int(q * len(rtt_ns)), len(rtt_ns) - 1)] / 1000

    print("| datagram B | round trips | median µs | p90 µs | p99 µs | one way (median / 2) µs |")
    print("|---|---|---|---|---|---|")
    print(f"| {args.bytes} | {len(rtt_ns)} | {at(0.5):.1f} | {at(0.9):.1f} | {at(0.99):.1f} |"
          f" {at(0.5) / 2:.1f} |")


if __name__ == "__main__":
    main()
