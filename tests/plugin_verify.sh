#!/bin/bash
# plugin_verify.sh PLUGIN_SO STATS_TOOL — data integrity through the hdd
# plugin: fio verify=crc32c at QD1 and QD32, random and sequential, with the
# drive's write cache destaging in the background; file= data survives a
# restart; the live stats file is readable while the device runs.
source "$(dirname "$0")/lib.sh"
PLUGIN=$1
STATS_TOOL=$2
SOCK="$TEST_DIR/hdd.sock"

# A small drive keeps seeks short so the test stays quick under real time.
DRIVE=(preset=sas10k-300g size=256M)

verify_pass () {
  local label=$1; shift
  run_fio "$label" "$SOCK" "$TEST_DIR/$label.json" --bs=4k --verify=crc32c \
    --do_verify=1 --verify_fatal=1 --verify_backlog=256 "$@"
  local errors
  errors=$(json_get "$TEST_DIR/$label.json" 'd["jobs"][0]["error"]')
  [ "$errors" = 0 ] || fail "$label: fio job error $errors"
  echo "ok: $label"
}

for cache in on off; do
  start_nbdkit hdd "$PLUGIN" "${DRIVE[@]}" write-cache=$cache stats="$TEST_DIR/stats"
  pid=$LAST_PID
  verify_pass "cache-$cache-randwrite-qd1" --rw=randwrite --iodepth=1 --size=2M --offset=0
  verify_pass "cache-$cache-randwrite-qd32" --rw=randwrite --iodepth=32 --size=8M --offset=64M
  verify_pass "cache-$cache-write-qd1" --rw=write --iodepth=1 --size=8M --offset=128M --bs=64k
  verify_pass "cache-$cache-write-qd32" --rw=write --iodepth=32 --size=16M --offset=160M --bs=16k
  # The model's own view while it is still running.
  "$STATS_TOOL" "$TEST_DIR/stats" > "$TEST_DIR/stats.json"
  writes=$(json_get "$TEST_DIR/stats.json" 'd["devices"][0]["ops"]["write"]["count"]')
  [ "$writes" -gt 2000 ] || fail "stats: only $writes writes recorded"
  stop_nbdkit "$pid"
done

# file= keeps data across a normal restart (write cache on: the data was
# acknowledged from the volatile cache, so exit must not lose it).
DATA="$TEST_DIR/disk.img"
start_nbdkit hdd "$PLUGIN" "${DRIVE[@]}" write-cache=on file="$DATA"
run_fio persist-write "$SOCK" "$TEST_DIR/pw.json" --rw=randwrite --bs=4k --iodepth=16 \
  --size=4M --verify=crc32c --do_verify=0 --verify_state_save=0
stop_nbdkit "$LAST_PID"
start_nbdkit hdd "$PLUGIN" "${DRIVE[@]}" write-cache=on file="$DATA"
run_fio persist-read "$SOCK" "$TEST_DIR/pr.json" --rw=randwrite --bs=4k --iodepth=16 \
  --size=4M --verify=crc32c --verify_only=1 --verify_fatal=1 --verify_state_load=0
reads=$(json_get "$TEST_DIR/pr.json" 'd["jobs"][0]["read"]["total_ios"]')
[ "$reads" -ge 1024 ] || fail "persist: verified only $reads blocks"
stop_nbdkit "$LAST_PID"
echo "ok: file= data survived a restart ($reads blocks verified)"
echo "plugin-verify: all passed"
