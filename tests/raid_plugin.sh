#!/bin/bash
# raid_plugin.sh RAID_PLUGIN_SO STATS_TOOL STORLAB — the raid plugin live:
# write latency through the plugin with the battery ok and failed; fio
# verify=crc32c at QD32 while the battery flips and a member fails and is
# rebuilt (zero mismatches); bad control commands are errors and the export
# stays up; the stats file has 1 + members records and the events are
# logged; a power cut keeps acknowledged data with the battery ok and loses
# exactly the dirty data with the battery failed under forced write-back;
# with the members' write caches on, what they had not flushed is lost.
source "$(dirname "$0")/lib.sh"
PLUGIN=$1
STATS_TOOL=$2
STORLAB=$3
SOCK="$TEST_DIR/raid.sock"
CTL="$TEST_DIR/raid.ctl"
STATS="$TEST_DIR/stats"
URI="nbd+unix:///?socket=$SOCK"

# RAID 5 of 4 small members (short seeks, a quick rebuild): 192 MiB.
ARRAY=(level=5 members=4 stripe-size=64k member-preset=sas10k-300g member-size=64M
       cache-size=16M rebuild-rate-mb-s=100)

ctl () { "$STORLAB" ctl "$CTL" "$@"; }
ctl_ok () { ctl "$@" > "$TEST_DIR/ctl.out" || fail "ctl $*: $(cat "$TEST_DIR/ctl.out")"; }
ctl_error () {
  local rc=0
  ctl "$@" > "$TEST_DIR/ctl.out" || rc=$?
  [ $rc = 1 ] || fail "ctl $*: exit $rc, expected 1"
  grep -q '^error ' "$TEST_DIR/ctl.out" || fail "ctl $*: reply not an error: $(cat "$TEST_DIR/ctl.out")"
  [ "$(wc -l < "$TEST_DIR/ctl.out")" = 1 ] || fail "ctl $*: more than one line"
}

start_nbdkit raid "$PLUGIN" "${ARRAY[@]}" ctl="$CTL" stats="$STATS"
pid=$LAST_PID
[ "$(stat -c %a "$CTL")" = 600 ] || fail "control socket mode $(stat -c %a "$CTL"), expected 600"

# --- write latency, battery ok vs failed (QD1, 4 MiB: stays in the cache) ---
write_latency_us () {
  run_fio "$1" "$SOCK" "$TEST_DIR/$1.json" --rw=randwrite --bs=4k --iodepth=1 --size=4M \
    --offset=128M --time_based --runtime=1
  json_get "$TEST_DIR/$1.json" 'round(d["jobs"][0]["write"]["clat_ns"]["mean"] / 1000, 1)'
}
lat_ok=$(write_latency_us lat-ok)
ctl_ok battery failed
lat_failed=$(write_latency_us lat-failed)
ctl_ok battery ok
lat_back=$(write_latency_us lat-back)
echo "write latency QD1: battery ok ${lat_ok} us, failed ${lat_failed} us, ok again ${lat_back} us"
/usr/bin/python3 -c "import sys; a,b,c=map(float,sys.argv[1:]); sys.exit(0 if b >= 5*a and b >= 5*c else 1)" \
  "$lat_ok" "$lat_failed" "$lat_back" || fail "battery failed: write latency did not rise >= 5x"

# --- fio verify at QD32 while the battery flips and member 2 fails, rebuilds ---
(cd "$TEST_DIR" && fio --name=flip --ioengine=nbd --uri="$URI" --output-format=json \
   --output="$TEST_DIR/flip.json" --rw=randwrite --bs=4k --iodepth=32 --size=24M --offset=0 \
   --verify=crc32c --do_verify=1 --verify_fatal=1 --verify_backlog=512 \
   > "$TEST_DIR/fio.stdout" 2> "$TEST_DIR/fio.stderr") &
fio_pid=$!
sleep 0.5; ctl_ok battery failed
sleep 0.5; ctl_ok fail-member 2
sleep 0.5; ctl_ok battery ok
ctl_ok replace-member 2
sleep 0.3; ctl_ok battery learning
sleep 0.3; ctl_ok battery ok
wait $fio_pid || { cat "$TEST_DIR/fio.stderr" >&2; fail "fio verify under control changes failed"; }
errors=$(json_get "$TEST_DIR/flip.json" 'd["jobs"][0]["error"]')
verified=$(json_get "$TEST_DIR/flip.json" 'd["jobs"][0]["read"]["total_ios"]')
[ "$errors" = 0 ] || fail "fio verify: job error $errors"
[ "$verified" -ge 6144 ] || fail "fio verify: only $verified blocks verified"
echo "ok: fio verify QD32, 24 MiB, battery flips + member 2 failed/replaced: $verified blocks, 0 mismatches"
# after the rebuild: every block again, read through the rebuilt member
for i in $(seq 100); do
  ctl_ok status
  grep -q 'members=ok,ok,ok,ok' "$TEST_DIR/ctl.out" && break
  sleep 0.1
done
grep -q 'members=ok,ok,ok,ok' "$TEST_DIR/ctl.out" || fail "rebuild did not finish: $(cat "$TEST_DIR/ctl.out")"
run_fio reverify "$SOCK" "$TEST_DIR/reverify.json" --rw=randwrite --bs=4k --iodepth=32 \
  --size=24M --offset=0 --verify=crc32c --verify_only=1 --verify_fatal=1
echo "ok: re-verified after the rebuild"

# --- bad commands: one error line each, export unharmed ---
ctl_error fail-member 9
ctl_error fail-member x
ctl_error battery sideways
ctl_error policy maybe
ctl_error replace-member 1
ctl_error frobnicate
ctl_error status extra
ctl_ok fail-member 1
ctl_error fail-member 3          # RAID 5 cannot lose a second member
ctl_ok replace-member 1
ctl_ok status
run_fio after-bad "$SOCK" "$TEST_DIR/after-bad.json" --rw=randread --bs=4k --iodepth=4 --size=24M \
  --offset=0 --verify=crc32c --verify_only=1 --verify_fatal=1 --number_ios=256
echo "ok: bad commands are errors; export still serving"

# --- stats: 1 + 4 records, events logged with timestamps ---
"$STATS_TOOL" "$STATS" > "$TEST_DIR/stats.json"
/usr/bin/python3 - "$TEST_DIR/stats.json" "$STATS.events" <<'PY' || fail "stats file / event log"
import json, sys
d = json.load(open(sys.argv[1]))
names = [x["name"] for x in d["devices"]]
assert len(names) == 5, names
member_ios = sum(x["ops"]["write"]["count"] for x in d["devices"][1:])
assert member_ios > 1000, member_ios
events = [json.loads(l) for l in open(sys.argv[2])]
what = [e["event"] for e in events]
for needed in ("battery set failed", "member 2 failed", "member 2 replaced, rebuilding",
               "battery set learning", "cache now write-through"):
    assert any(w.startswith(needed) for w in what), (needed, what)
assert all(e["monotonic_ns"] > 0 and e["time_ns"] >= 0 for e in events)
times = [e["time_ns"] for e in events]
assert times == sorted(times), times
print("ok: stats file holds %s; %d events logged" % (names, len(events)))
PY
stop_nbdkit "$pid"

# --- power cut ---
# idle destage far away: what is written stays dirty in the cache
start_nbdkit raid "$PLUGIN" "${ARRAY[@]}" idle-destage-delay-ms=60000 ctl="$CTL"
pid=$LAST_PID
write_pattern () {
  run_fio "$1" "$SOCK" "$TEST_DIR/$1.json" --rw=write --bs=64k --iodepth=8 --size=2M \
    --offset="$2" --verify=crc32c --do_verify=0 --verify_state_save=0
}
nonzero_bytes () {  # OFFSET_MIB : non-zero bytes in the 2 MiB there
  nbdcopy "$URI" - | tail -c +$(( $1 * 1048576 + 1 )) | head -c 2097152 | tr -d '\0' | wc -c
}
write_pattern cut-ok 0
ctl_ok power-cut
grep -q 'battery ok' "$TEST_DIR/ctl.out" || fail "power cut, battery ok: $(cat "$TEST_DIR/ctl.out")"
run_fio cut-ok-verify "$SOCK" "$TEST_DIR/cut-ok-verify.json" --rw=write --bs=64k --size=2M \
  --offset=0 --verify=crc32c --verify_only=1 --verify_fatal=1
echo "ok: power cut with battery ok lost nothing"

# write-through drains the cache; once clean, the plugin makes it durable
ctl_ok policy write-through
for i in $(seq 100); do
  ctl_ok status
  grep -q ' dirty-bytes=0 ' "$TEST_DIR/ctl.out" && break
  sleep 0.1
done
grep -q ' dirty-bytes=0 ' "$TEST_DIR/ctl.out" || fail "cache did not drain: $(cat "$TEST_DIR/ctl.out")"
sleep 0.05                       # one control tick: destaged data made durable
ctl_ok policy forced-write-back
ctl_ok battery failed
write_pattern cut-lost 32M
[ "$(nonzero_bytes 32)" -gt 1000000 ] || fail "pattern not readable before the cut"
ctl_ok power-cut
grep -q 'cache lost 2097152 dirty bytes' "$TEST_DIR/ctl.out" \
  || fail "power cut, battery failed: $(cat "$TEST_DIR/ctl.out")"
[ "$(nonzero_bytes 32)" = 0 ] || fail "power cut, battery failed: dirty data still readable"
[ "$(nonzero_bytes 0)" -gt 1000000 ] || fail "power cut, battery failed: destaged (durable) data lost"
echo "ok: power cut, battery failed + forced write-back: exactly the 2 MiB dirty lost"
stop_nbdkit "$pid"

# --- power cut with the members' own write caches on ---
# Write-through controller (battery ok), member write caches on and slow to
# write back: an acknowledged write sits in the members' buffers until a
# FLUSH.  Region 0 and 32M get a pattern and a FLUSH (durable); 32M is then
# overwritten with 0x55 and no FLUSH: the cut must bring its old pattern
# back and the reply must count those 2 MiB; region 0 stays intact.
start_nbdkit raid "$PLUGIN" "${ARRAY[@]}" cache-policy=write-through member-write-cache=on \
  member-options=idle-destage-delay-ms=10000 ctl="$CTL"
pid=$LAST_PID
count_55 () {  # OFFSET_MIB : 0x55 bytes in the 2 MiB there
  nbdcopy "$URI" - | tail -c +$(( $1 * 1048576 + 1 )) | head -c 2097152 | tr -cd '\125' | wc -c
}
for offset in 0 32M; do
  run_fio "mc-$offset" "$SOCK" "$TEST_DIR/mc-$offset.json" --rw=write --bs=64k --iodepth=8 \
    --size=2M --offset=$offset --verify=crc32c --do_verify=0 --verify_state_save=0 --end_fsync=1
done
ctl_ok status
grep -q ' member-volatile-bytes=0 ' "$TEST_DIR/ctl.out" \
  || fail "FLUSH left data in the members' caches: $(cat "$TEST_DIR/ctl.out")"
run_fio mc-over "$SOCK" "$TEST_DIR/mc-over.json" --rw=write --bs=64k --iodepth=8 --size=2M \
  --offset=32M --buffer_pattern=0x55
ctl_ok status
grep -q ' member-volatile-bytes=0 ' "$TEST_DIR/ctl.out" \
  && fail "the overwrite is not in the members' caches: $(cat "$TEST_DIR/ctl.out")"
[ "$(count_55 32)" = 2097152 ] || fail "overwrite not readable before the cut"
ctl_ok power-cut
grep -q 'battery ok, cache contents kept; member write caches lost 2097152 bytes in 1 extents' \
  "$TEST_DIR/ctl.out" || fail "power cut, member caches: $(cat "$TEST_DIR/ctl.out")"
# the old pattern is random: about 1/256 of its bytes are 0x55 by chance
[ "$(count_55 32)" -lt 65536 ] || fail "power cut, member caches: the lost overwrite is still readable"
for offset in 0 32M; do
  run_fio "mc-verify-$offset" "$SOCK" "$TEST_DIR/mc-verify-$offset.json" --rw=write --bs=64k \
    --size=2M --offset=$offset --verify=crc32c --verify_only=1 --verify_fatal=1
done
echo "ok: power cut, member write caches on: the unflushed 2 MiB read old data again; flushed data kept"
stop_nbdkit "$pid"
echo "raid-plugin: all passed"
