#!/usr/bin/python3
"""nbd_trim_check.py SOCKET OPS — writes and trims at queue depth 16 through
an NBD server, keeping a model of what every 4 KiB block must hold, then
reads the whole export back: written blocks must hold their last data,
trimmed blocks zeroes.  Exits 1 on the first mismatch."""
import random
import sys

import nbd

BLOCK = 4096
DEPTH = 16


def main():
    sock, ops = sys.argv[1], int(sys.argv[2])
    h = nbd.NBD()
    h.connect_unix(sock)
    blocks = h.get_size() // BLOCK
    rng = random.Random(7)
    expect = {}                       # block -> generation (0: zeroes)
    buffers = []                      # keep write buffers alive until reaped

    busy = set()                      # blocks with a command in flight: no overlap
    failures = []

    def completion(span):
        def done(error):
            if error:
                failures.append(error)
            busy.difference_update(span)
            return 1                  # retire the command
        return done

    for generation in range(1, ops + 1):
        while h.aio_in_flight() >= DEPTH:
            h.poll(-1)
        start = rng.randrange(0, blocks - 16)
        count = rng.randint(1, 16) if rng.random() < 0.2 else 1
        span = set(range(start, start + count))
        if span & busy:
            continue
        busy |= span
        if count > 1:
            h.aio_trim(count * BLOCK, start * BLOCK, completion=completion(span))
            for b in span:
                expect[b] = 0
        else:
            data = nbd.Buffer.from_bytearray(
                bytearray(generation.to_bytes(8, "little") * (BLOCK // 8)))
            buffers.append(data)
            h.aio_pwrite(data, start * BLOCK, completion=completion(span))
            expect[start] = generation
    while h.aio_in_flight() > 0:
        h.poll(-1)
    if failures:
        print(f"nbd_trim_check: {len(failures)} commands failed (errno {failures[0]})",
              file=sys.stderr)
        return 1
    for block, generation in sorted(expect.items()):
        got = h.pread(BLOCK, block * BLOCK)
        want = bytes(BLOCK) if generation == 0 else generation.to_bytes(8, "little") * (BLOCK // 8)
        if got != want:
            print(f"mismatch at block {block}: expected generation {generation}", file=sys.stderr)
            return 1
    trimmed = sum(1 for g in expect.values() if g == 0)
    print(f"nbd_trim_check: {len(expect)} blocks verified ({trimmed} trimmed)")
    h.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
