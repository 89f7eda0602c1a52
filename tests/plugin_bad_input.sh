#!/bin/bash
# plugin_bad_input.sh PLUGIN_SO — every bad parameter ends nbdkit with one
# clear error naming the key and value, a non-zero exit and no export; an
# out-of-range request gets an NBD error and the server keeps serving.
source "$(dirname "$0")/lib.sh"
PLUGIN=$1

# expect_refused "NEEDLE" ARGS... : nbdkit must exit non-zero, say NEEDLE,
# and never create its socket.
expect_refused () {
  local needle=$1; shift
  local sock="$TEST_DIR/bad.sock"
  if timeout 20 nbdkit --foreground -U "$sock" "$PLUGIN" "$@" 2>"$TEST_DIR/err"; then
    fail "accepted: $*"
  fi
  grep -qF -- "$needle" "$TEST_DIR/err" || { cat "$TEST_DIR/err" >&2; fail "error for '$*' does not mention '$needle'"; }
  [ "$(grep -c . "$TEST_DIR/err")" -le 2 ] || { cat "$TEST_DIR/err" >&2; fail "more than one error line for '$*'"; }
  [ ! -e "$sock" ] || fail "socket exported for '$*'"
  echo "ok: refused $* -> $(head -1 "$TEST_DIR/err")"
}

expect_refused "preset=no-such-drive" preset=no-such-drive
expect_refused "sas10k-300g" preset=no-such-drive              # lists the known ones
expect_refused "bogus-key" bogus-key=1
expect_refused "rpm=90000" rpm=90000
expect_refused "size=0" size=0
expect_refused "size=-5" size=-5
expect_refused "average-seek-ms=abc" average-seek-ms=abc
expect_refused "write-cache=maybe" write-cache=maybe
expect_refused "average-seek-ms" average-seek-ms=7.9            # above full stroke
expect_refused "latency-offset-us=soon" latency-offset-us=soon
expect_refused "fixed-latency-us=-3" fixed-latency-us=-3
expect_refused "release-cores=1.5" release-cores=1.5
expect_refused "release-cores=auto" release-cores=auto
expect_refused "timing=sometimes" timing=sometimes
expect_refused "file=/nonexistent/dir/disk.img" file=/nonexistent/dir/disk.img
expect_refused "stats=/nonexistent/dir/stats" stats=/nonexistent/dir/stats

# A file larger than size= is refused, never truncated.
truncate -s 64M "$TEST_DIR/big.img"
expect_refused "big.img" size=32M file="$TEST_DIR/big.img"
[ "$(stat -c %s "$TEST_DIR/big.img")" = 67108864 ] || fail "big.img was truncated"

# Out-of-range request: an NBD error, the server stays up.
start_nbdkit good "$PLUGIN" size=16M
# (nbdsh runs whatever python3 is first on PATH: call Debian's directly.)
if /usr/bin/python3 -m nbd -u "nbd+unix:///?socket=$TEST_DIR/good.sock" \
     -c 'h.pread(4096, 16*1024*1024)' 2>"$TEST_DIR/oor"; then
  fail "out-of-range read succeeded"
fi
grep -q "out of range\|Invalid argument\|EINVAL" "$TEST_DIR/oor" \
  || { cat "$TEST_DIR/oor" >&2; fail "out-of-range read failed for another reason"; }
/usr/bin/python3 -m nbd -u "nbd+unix:///?socket=$TEST_DIR/good.sock" -c 'assert h.pread(4096, 0) == bytes(4096)' \
  || fail "server not serving after an out-of-range request"
kill -0 "$LAST_PID" || fail "nbdkit died after an out-of-range request"
echo "ok: out-of-range request refused, server still serving"
echo "plugin-bad-input: all passed"
