#!/bin/bash
# ssd_verify.sh PLUGIN_SO STATS_TOOL — data integrity through the ssd plugin
# while garbage collection runs: a small drive with little spare area is
# overwritten several times at QD1..QD64 with fio verify=crc32c (and trims
# that must read back as zeroes); zero mismatches, and GC must have moved
# pages (write amplification > 1).
source "$(dirname "$0")/lib.sh"
PLUGIN=$1
STATS_TOOL=$2
SOCK="$TEST_DIR/ssd.sock"

# 64 MiB logical on 4 dies, 12 % spare, fast NAND so the test stays short.
DRIVE=(preset=intel-s3700-400g size=64M channels=2 dies-per-channel=2 planes-per-die=1
       page-size=4k pages-per-block=32 over-provisioning-pct=12 program-latency-us=100
       read-latency-us=20 erase-latency-ms=1 precondition=fob)

start_nbdkit ssd "$PLUGIN" "${DRIVE[@]}" stats="$TEST_DIR/stats"
for qd in 1 8 64; do
  size=$([ "$qd" = 1 ] && echo 4M || echo 56M)
  run_fio "ssd-qd$qd" "$SOCK" "$TEST_DIR/qd$qd.json" --rw=randwrite --bs=4k --iodepth=$qd \
    --size=$size --loops=2 --verify=crc32c --do_verify=1 --verify_fatal=1 --verify_backlog=512
  [ "$(json_get "$TEST_DIR/qd$qd.json" 'd["jobs"][0]["error"]')" = 0 ] || fail "QD$qd: fio error"
  echo "ok: QD$qd random overwrite verified"
done
# Writes and trims at QD16: trimmed blocks must read back as zeroes, every
# other block as its last write.
/usr/bin/python3 "$(dirname "$0")/nbd_trim_check.py" "$SOCK" 20000 \
  || fail "trim check: data mismatch"
echo "ok: trimmed blocks read as zeroes, written blocks as their last write"

"$STATS_TOOL" "$TEST_DIR/stats" > "$TEST_DIR/stats.json"
moved=$(json_get "$TEST_DIR/stats.json" 'd["devices"][0]["counters"]["gc_pages_moved"]')
host=$(json_get "$TEST_DIR/stats.json" 'd["devices"][0]["counters"]["host_pages_written"]')
nand=$(json_get "$TEST_DIR/stats.json" 'd["devices"][0]["counters"]["nand_pages_programmed"]')
[ "$moved" -gt 0 ] || fail "garbage collection moved no pages (host $host, nand $nand)"
echo "ok: GC active during the run: host pages $host, NAND pages $nand, moved $moved"
echo "ssd-verify: all passed"
