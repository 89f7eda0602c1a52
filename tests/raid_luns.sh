#!/bin/bash
# raid_luns.sh RAID_PLUGIN_SO STATS_TOOL STORLAB — several LUNs of one
# controller (lun=NAME:SIZE, served as export names): bad lun= values are
# refused at start with one clear line; without lun= there is one export,
# the whole array, under any name; with two LUNs nbdinfo --list shows both
# with their sizes, fio verify=crc32c runs on both at once (QD16 each)
# while the shared cache destages, with zero mismatches; writing one LUN
# never changes the other; each LUN's I/O reaches the shared members and
# its own lun:NAME stats record; an unknown export and `status nosuch`
# are errors naming the LUNs, and the exports keep serving.
source "$(dirname "$0")/lib.sh"
PLUGIN=$1
STATS_TOOL=$2
STORLAB=$3
SOCK="$TEST_DIR/luns.sock"
CTL="$TEST_DIR/luns.ctl"
STATS="$TEST_DIR/stats"
uri () { echo "nbd+unix:///${1-}?socket=$SOCK"; }

# RAID 5 of 4 small members: 192 MiB (201326592 bytes), strips of 64 KiB.
ARRAY=(level=5 members=4 stripe-size=64k member-preset=sas10k-300g member-size=64M
       cache-size=16M)
# a is not a whole number of strips: b starts on the next strip boundary.
A_BYTES=24577024                 # 24001k
B_BYTES=67108864                 # 64M
B_OFFSET=24641536                # 376 strips of 64 KiB

ctl () { "$STORLAB" ctl "$CTL" "$@"; }
ctl_ok () { ctl "$@" > "$TEST_DIR/ctl.out" || fail "ctl $*: $(cat "$TEST_DIR/ctl.out")"; }
ctl_field () {  # FIELD : its value in the last reply
  tr ' ' '\n' < "$TEST_DIR/ctl.out" | sed -n "s/^$1=//p"
}

# --- bad lun= values: nbdkit refuses to start, one line naming the problem ---
refused () {  # EXPECTED_TEXT LUN_ARGS...
  local expected=$1; shift
  local rc=0
  # A socket in the test's directory, not -U -: nbdkit 1.32 leaves the
  # /tmp/nbdkitXXXXXX directory of -U - behind when it refuses to start.
  nbdkit -U "$TEST_DIR/bad.sock" "$PLUGIN" "${ARRAY[@]}" "$@" --run true > "$TEST_DIR/bad.out" 2>&1 || rc=$?
  [ $rc != 0 ] || fail "$*: accepted"
  grep -qF -- "$expected" "$TEST_DIR/bad.out" \
    || fail "$*: expected '$expected' in: $(cat "$TEST_DIR/bad.out")"
  [ "$(grep -c 'error' "$TEST_DIR/bad.out")" = 1 ] || fail "$*: not one error line: $(cat "$TEST_DIR/bad.out")"
}
refused "lun=b:104857600: does not fit: the array holds 201326592 bytes, LUNs before it use 104857600 (stripe-aligned), 96468992 bytes left" \
  lun=a:100M lun=b:100M
refused "lun=big:1073741824: does not fit: the array holds 201326592 bytes, LUNs before it use 0" \
  lun=big:1G
# 512 bytes of a push b to the next strip: 192M no longer fits after it
refused "lun=b:201326592: does not fit" lun=a:512 lun=b:192M
refused "lun=Bad:1M: name 'Bad' must be 1 to 32 characters of a-z, 0-9, '_' and '-'" lun=Bad:1M
refused "lun=a/b:1M: name 'a/b'" lun=a/b:1M
refused "lun=:1M: name ''" lun=:1M
refused "name 'abcdefghijklmnopqrstuvwxyz0123456' must be 1 to 32" \
  lun=abcdefghijklmnopqrstuvwxyz0123456:1M
refused "lun=a:2M: duplicate LUN name 'a'" lun=a:1M lun=a:2M
refused "lun=a:1000: size 1000 bytes is not a positive multiple of 512" lun=a:1000
refused "lun=a:0: size 0 bytes" lun=a:0
refused "lun=a:lots: 'lots' is not a size" lun=a:lots
refused "lun=a: expected NAME:SIZE" lun=a
# the exact fit is fine (the positive control of the checks above)
nbdkit -U - "$PLUGIN" "${ARRAY[@]}" lun=a:96M lun=b:96M --run 'nbdinfo --size "$uri"' \
  > "$TEST_DIR/fit.out" 2>&1 || fail "two LUNs filling the array refused: $(cat "$TEST_DIR/fit.out")"
[ "$(cat "$TEST_DIR/fit.out")" = 100663296 ] || fail "exact fit: default export size $(cat "$TEST_DIR/fit.out")"
echo "ok: bad lun= values refused, one line each"

# --- without lun=: one export, the whole array, any name accepted ---
start_nbdkit luns "$PLUGIN" "${ARRAY[@]}" ctl="$CTL" stats="$STATS"
pid=$LAST_PID
nbdinfo --list --json "$(uri)" > "$TEST_DIR/list0.json"
[ "$(json_get "$TEST_DIR/list0.json" '[(e["export-name"], e["export-size"]) for e in d["exports"]]')" \
  = "[('', 201326592)]" ] || fail "no lun=: export list $(cat "$TEST_DIR/list0.json")"
[ "$(nbdinfo --size "$(uri whatever)")" = 201326592 ] || fail "no lun=: a named export refused"
"$STATS_TOOL" "$STATS" > "$TEST_DIR/stats0.json"
[ "$(json_get "$TEST_DIR/stats0.json" '[x["name"] for x in d["devices"]]')" \
  = "['raid', 'member0', 'member1', 'member2', 'member3']" ] || fail "no lun=: stats records"
ctl_ok status
grep -q 'luns=' "$TEST_DIR/ctl.out" && fail "no lun=: status lists LUNs: $(cat "$TEST_DIR/ctl.out")"
stop_nbdkit "$pid"
echo "ok: without lun= one export of the whole array, under any name"

# --- two LUNs in one nbdkit ---
start_nbdkit luns "$PLUGIN" "${ARRAY[@]}" lun=a:24001k lun=b:64M ctl="$CTL" stats="$STATS"
pid=$LAST_PID
nbdinfo --list --json "$(uri)" > "$TEST_DIR/list.json"
[ "$(json_get "$TEST_DIR/list.json" '[(e["export-name"], e["export-size"]) for e in d["exports"]]')" \
  = "[('a', $A_BYTES), ('b', $B_BYTES)]" ] || fail "export list: $(cat "$TEST_DIR/list.json")"
[ "$(nbdinfo --size "$(uri)")" = $A_BYTES ] || fail "the default export is not the first LUN"
ctl_ok status
[ "$(ctl_field luns)" = "a:0+$A_BYTES,b:$B_OFFSET+$B_BYTES" ] \
  || fail "status LUNs: $(cat "$TEST_DIR/ctl.out")"
echo "ok: nbdinfo --list shows a ($A_BYTES bytes) and b ($B_BYTES bytes); b at $B_OFFSET"

# --- an unknown export: refused at connect, naming the LUNs ---
rc=0
nbdinfo "$(uri nosuch)" > "$TEST_DIR/nosuch.out" 2>&1 || rc=$?
[ $rc != 0 ] || fail "nbdinfo on export nosuch succeeded"
grep -q 'nosuch' "$TEST_DIR/nosuch.out" || fail "nbdinfo nosuch: $(cat "$TEST_DIR/nosuch.out")"
grep -qF "export 'nosuch': no such LUN (known: a, b)" "$TEST_DIR/luns.stderr" \
  || fail "nbdkit did not log the unknown export: $(cat "$TEST_DIR/luns.stderr")"
echo "ok: export nosuch refused: $(head -1 "$TEST_DIR/nosuch.out")"

# --- fio verify on both LUNs at once (QD16 each), 55 MiB through a 16 MiB cache ---
fio_lun () {  # NAME LUN SIZE
  (cd "$TEST_DIR" && fio --name="$1" --ioengine=nbd --uri="$(uri "$2")" --output-format=json \
     --output="$TEST_DIR/$1.json" --rw=randwrite --bs=4k --iodepth=16 --size="$3" \
     --verify=crc32c --do_verify=1 --verify_fatal=1 --verify_backlog=512 \
     > "$TEST_DIR/$1.stdout" 2> "$TEST_DIR/$1.stderr")
}
fio_lun verify-a a 24000k & fio_a=$!
fio_lun verify-b b 32M & fio_b=$!
max_dirty=0
while kill -0 $fio_a 2>/dev/null || kill -0 $fio_b 2>/dev/null; do
  ctl_ok status
  dirty=$(ctl_field dirty-bytes)
  [ "$dirty" -gt "$max_dirty" ] && max_dirty=$dirty
  sleep 0.2
done
wait $fio_a || { cat "$TEST_DIR/verify-a.stderr" >&2; fail "fio verify on LUN a failed"; }
wait $fio_b || { cat "$TEST_DIR/verify-b.stderr" >&2; fail "fio verify on LUN b failed"; }
for job in verify-a:6000 verify-b:8192; do
  name=${job%:*} blocks=${job#*:}
  [ "$(json_get "$TEST_DIR/$name.json" 'd["jobs"][0]["error"]')" = 0 ] || fail "$name: job error"
  verified=$(json_get "$TEST_DIR/$name.json" 'd["jobs"][0]["read"]["total_ios"]')
  [ "$verified" -ge "$blocks" ] || fail "$name: only $verified blocks verified, expected $blocks"
done
ctl_ok status
destaged=$(ctl_field destaged-bytes)
# 55.4 MiB written once each through a 16 MiB cache: at least 39 MiB destaged
[ "$destaged" -ge 40894464 ] || fail "only $destaged bytes destaged during the verify runs"
echo "ok: fio verify on a and b at once: 0 mismatches; cache up to $max_dirty dirty bytes, $destaged destaged"

# --- writes to one LUN never change the other ---
wait_clean () {
  for i in $(seq 100); do
    ctl_ok status
    [ "$(ctl_field dirty-bytes)" = 0 ] && return 0
    sleep 0.1
  done
  fail "cache did not drain: $(cat "$TEST_DIR/ctl.out")"
}
member_write_bytes () {
  "$STATS_TOOL" "$STATS" > "$TEST_DIR/mw.json"
  json_get "$TEST_DIR/mw.json" 'sum(x["ops"]["write"]["bytes"] for x in d["devices"] if x["name"].startswith("member"))'
}
lun_sum () { nbdcopy "$(uri "$1")" - | sha256sum | cut -d' ' -f1; }
pattern () { head -c "$1" /dev/zero | tr '\0' "$2" > "$3"; }
pattern $A_BYTES '\252' "$TEST_DIR/pattern-a"
pattern $B_BYTES '\125' "$TEST_DIR/pattern-b"

wait_clean
b_before=$(lun_sum b)
members_before=$(member_write_bytes)
nbdcopy "$TEST_DIR/pattern-a" "$(uri a)"
wait_clean
members_after_a=$(member_write_bytes)
[ "$(lun_sum b)" = "$b_before" ] || fail "writing all of LUN a changed LUN b"
cmp -s <(nbdcopy "$(uri a)" -) "$TEST_DIR/pattern-a" || fail "LUN a does not read back its pattern"
# b's fio blocks are all still there, checksums and all
(cd "$TEST_DIR" && fio --name=reverify-b --ioengine=nbd --uri="$(uri b)" --rw=randwrite --bs=4k \
   --iodepth=16 --size=32M --verify=crc32c --verify_only=1 --verify_fatal=1 \
   > "$TEST_DIR/reverify-b.out" 2>&1) || { cat "$TEST_DIR/reverify-b.out" >&2; fail "LUN b's data changed"; }

a_sum=$(sha256sum < "$TEST_DIR/pattern-a" | cut -d' ' -f1)
nbdcopy "$TEST_DIR/pattern-b" "$(uri b)"
wait_clean
members_after_b=$(member_write_bytes)
[ "$(lun_sum a)" = "$a_sum" ] || fail "writing all of LUN b changed LUN a"
cmp -s <(nbdcopy "$(uri b)" -) "$TEST_DIR/pattern-b" || fail "LUN b does not read back its pattern"
# each LUN's writes reached the shared members (RAID 5 adds parity on top)
[ $(( members_after_a - members_before )) -ge $A_BYTES ] \
  || fail "LUN a's $A_BYTES bytes: members wrote only $(( members_after_a - members_before ))"
[ $(( members_after_b - members_after_a )) -ge $B_BYTES ] \
  || fail "LUN b's $B_BYTES bytes: members wrote only $(( members_after_b - members_after_a ))"
echo "ok: all of a written: b unchanged; all of b written: a unchanged; both reached the members"

# --- control: status LUN, an unknown LUN is an error, exports unharmed ---
ctl_ok status b
[ "$(ctl_field lun)" = b ] && [ "$(ctl_field offset)" = $B_OFFSET ] && [ "$(ctl_field size)" = $B_BYTES ] \
  || fail "status b: $(cat "$TEST_DIR/ctl.out")"
[ "$(ctl_field writes)" -ge 8192 ] || fail "status b: writes $(ctl_field writes)"
rc=0
ctl status nosuch > "$TEST_DIR/ctl.out" || rc=$?
[ $rc = 1 ] || fail "ctl status nosuch: exit $rc"
[ "$(cat "$TEST_DIR/ctl.out")" = "error lun nosuch: no such LUN (known: a, b)" ] \
  || fail "ctl status nosuch: $(cat "$TEST_DIR/ctl.out")"
rc=0
ctl status a b > "$TEST_DIR/ctl.out" || rc=$?
[ $rc = 1 ] && grep -q '^error ' "$TEST_DIR/ctl.out" || fail "ctl status a b: $(cat "$TEST_DIR/ctl.out")"
[ "$(lun_sum a)" = "$a_sum" ] || fail "LUN a after the bad commands"
cmp -s <(nbdcopy "$(uri b)" -) "$TEST_DIR/pattern-b" || fail "LUN b after the bad commands"
echo "ok: status b; status nosuch is an error naming the LUNs; exports still serving"

# --- stats: the controller first, members, then lun:a and lun:b ---
"$STATS_TOOL" "$STATS" > "$TEST_DIR/stats.json"
/usr/bin/python3 - "$TEST_DIR/stats.json" "$A_BYTES" "$B_BYTES" <<'PY' || fail "stats records"
import json, sys
d = json.load(open(sys.argv[1]))
a_bytes, b_bytes = int(sys.argv[2]), int(sys.argv[3])
devs = d["devices"]
names = [x["name"] for x in devs]
assert names == ["raid", "member0", "member1", "member2", "member3", "lun:a", "lun:b"], names
front, luns = devs[0], {x["name"]: x for x in devs[5:]}
assert [(x["kind"], x["capacity_bytes"]) for x in devs[5:]] == [("lun", a_bytes), ("lun", b_bytes)]
for op in ("read", "write"):
    total = sum(x["ops"][op]["count"] for x in luns.values())
    assert front["ops"][op]["count"] == total, (op, front["ops"][op]["count"], total)
    total_bytes = sum(x["ops"][op]["bytes"] for x in luns.values())
    assert front["ops"][op]["bytes"] == total_bytes, (op, front["ops"][op]["bytes"], total_bytes)
# fio's blocks plus each pattern written once
assert luns["lun:a"]["ops"]["write"]["bytes"] >= 24000 * 1024 + a_bytes, luns["lun:a"]["ops"]["write"]
assert luns["lun:b"]["ops"]["write"]["bytes"] >= 32 * 2**20 + b_bytes, luns["lun:b"]["ops"]["write"]
assert luns["lun:a"]["ops"]["write"]["count"] >= 6000 and luns["lun:b"]["ops"]["write"]["count"] >= 8192
for x in luns.values():
    assert x["queue_depth"] == 0 and x["max_queue_depth"] >= 8, x["max_queue_depth"]
    assert x["ops"]["write"]["latency_ns"]["mean"] > 0
members = devs[1:5]
assert all(m["ops"]["write"]["count"] > 0 and m["ops"]["read"]["count"] > 0 for m in members)
print("ok: stats records %s; lun:a %d writes, lun:b %d writes, controller %d"
      % (names, luns["lun:a"]["ops"]["write"]["count"], luns["lun:b"]["ops"]["write"]["count"],
         front["ops"]["write"]["count"]))
PY
stop_nbdkit "$pid"
echo "raid-luns: all passed"
