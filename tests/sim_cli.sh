#!/bin/bash
# sim_cli.sh STORLAB_SIM — storlab-sim end to end: fio job files in,
# fio-layout JSON out, figures that match the hdd model, and one clear
# error line (exit 1, empty stdout) for every kind of bad input.
source "$(dirname "$0")/lib.sh"
SIM=$1
[ -x "$SIM" ] || fail "usage: sim_cli.sh PATH_TO_STORLAB_SIM"

# job NAME BODY : writes $TEST_DIR/NAME.fio
job () { printf '%b' "$2" > "$TEST_DIR/$1.fio"; }

# run_sim OUT ARGS... : must succeed and print valid JSON
run_sim () {
  local out=$1; shift
  "$SIM" "$@" >"$out" 2>"$TEST_DIR/sim.stderr" \
    || { cat "$TEST_DIR/sim.stderr" >&2; fail "storlab-sim $* exited non-zero"; }
  /usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$out" \
    || fail "storlab-sim $*: stdout is not JSON"
}

# check FILE PYTHON_BOOL_EXPR MESSAGE : d is the parsed document
check () {
  local ok
  ok=$(json_get "$1" "$2") || fail "$3 (could not evaluate: $2)"
  [ "$ok" = True ] || fail "$3 ($2 is $ok)"
}

# bins_check FILE : fio json+'s clat_ns.bins in every direction with I/O:
# keys ascending, counts summing to total_ios, and a percentile recomputed
# from the bins (fio's method: first bin whose cumulative count reaches
# ceil(p/100 * N)) within one bucket of clat_ns.percentile
bins_check () {
  /usr/bin/python3 - "$1" <<'PY' || fail "clat_ns.bins wrong in $1"
import json, math, sys
d = json.load(open(sys.argv[1]))
checked = 0
for j in d['jobs']:
    for k in ('read', 'write', 'trim'):
        r = j[k]
        c = r['clat_ns']
        if r['total_ios'] == 0:
            assert 'bins' not in c, (k, 'bins without I/O (fio prints none)')
            continue
        assert list(c) == ['min', 'max', 'mean', 'stddev', 'N', 'percentile', 'bins'], list(c)
        keys = [int(v) for v in c['bins']]
        assert keys == sorted(set(keys)) and all(str(v) == s for v, s in zip(keys, c['bins'])), 'keys'
        counts = list(c['bins'].values())
        assert all(n > 0 for n in counts), 'zero bucket printed'
        assert sum(counts) == r['total_ios'] == c['N'], (sum(counts), r['total_ios'])
        assert c['min'] - c['min'] // 128 - 1 <= keys[0] <= c['min'] + c['min'] // 128 + 1, (keys[0], c['min'])
        for p in ('50.000000', '99.000000', '99.900000'):
            rank = max(1, math.ceil(float(p) / 100 * c['N']))
            seen = 0
            for i, (v, n) in enumerate(zip(keys, counts)):
                seen += n
                if seen >= rank:
                    break
            lo, hi = keys[max(i - 1, 0)], keys[min(i + 1, len(keys) - 1)]
            assert lo <= c['percentile'][p] <= hi, (k, p, c['percentile'][p], v, lo, hi)
        checked += 1
assert checked > 0, 'no direction with I/O'
print(f'bins ok: {checked} directions')
PY
}

# --- QD1 random reads on the default drive: ~1 / (seek + half a turn + overhead)
job qd1 "[global]\nioengine=nbd\nrw=randread\nbs=4k\ntime_based\nruntime=10\n[qd1]\niodepth=1\n"
run_sim "$TEST_DIR/qd1.json" hdd "$TEST_DIR/qd1.fio"
iops1=$(json_get "$TEST_DIR/qd1.json" "d['jobs'][0]['read']['iops']")
echo "hdd QD1 randread 4k: $iops1 IOPS"
check "$TEST_DIR/qd1.json" "125 <= d['jobs'][0]['read']['iops'] <= 160" "QD1 IOPS outside 125..160"
# fio's layout and units
check "$TEST_DIR/qd1.json" "d['fio version'] == 'storlab-sim-0.1' and d['global options']['rw'] == 'randread'" "header"
check "$TEST_DIR/qd1.json" "d['jobs'][0]['jobname'] == 'qd1' and d['jobs'][0]['job options'] == {'iodepth': '1'}" "job options"
check "$TEST_DIR/qd1.json" "d['jobs'][0]['read']['runtime'] == 10000" "runtime in ms"
check "$TEST_DIR/qd1.json" "(lambda r: r['io_bytes'] == 4096 * r['total_ios'] and r['io_kbytes'] == 4 * r['total_ios'])(d['jobs'][0]['read'])" "io_bytes"
check "$TEST_DIR/qd1.json" "(lambda r: abs(r['iops'] - r['total_ios'] / 10.0) < 1e-3 and r['bw'] == r['bw_bytes'] // 1024)(d['jobs'][0]['read'])" "iops/bw"
check "$TEST_DIR/qd1.json" "(lambda c: c['N'] == d['jobs'][0]['read']['total_ios'] and c['min'] <= c['percentile']['50.000000'] <= c['percentile']['99.000000'] <= c['max'])(d['jobs'][0]['read']['clat_ns'])" "clat_ns percentiles"
check "$TEST_DIR/qd1.json" "abs(d['jobs'][0]['read']['clat_ns']['mean'] * d['jobs'][0]['read']['iops'] - 1e9) < 0.01e9" "QD1: mean latency * IOPS == 1 s"
check "$TEST_DIR/qd1.json" "len(d['jobs'][0]['read']['clat_ns']['percentile']) == 17 and '99.990000' in d['jobs'][0]['read']['clat_ns']['percentile']" "fio's default percentile list"
check "$TEST_DIR/qd1.json" "d['jobs'][0]['read']['lat_ns']['mean'] == d['jobs'][0]['read']['clat_ns']['mean'] and d['jobs'][0]['read']['slat_ns']['N'] == 0" "lat == clat, slat 0"
check "$TEST_DIR/qd1.json" "d['jobs'][0]['write']['total_ios'] == 0 and d['jobs'][0]['write']['iops'] == 0 and d['jobs'][0]['trim']['io_bytes'] == 0 and d['jobs'][0]['sync']['total_ios'] == 0" "empty directions present"
check "$TEST_DIR/qd1.json" "abs(sum(d['jobs'][0]['latency_ms'].values()) - 100) < 1e-3" "latency_ms sums to 100 %"
check "$TEST_DIR/qd1.json" "d['storlab']['backend'] == 'sim' and d['storlab']['simulated_ns'] >= 10 * 10**9" "storlab.simulated_ns"
check "$TEST_DIR/qd1.json" "sum(c for i, c in d['storlab']['jobs'][0]['read']['buckets']) == d['jobs'][0]['read']['total_ios']" "storlab histogram buckets"
check "$TEST_DIR/qd1.json" "d['storlab']['device']['stats']['ops']['read']['count'] >= d['jobs'][0]['read']['total_ios']" "device stats"

# --- QD32: NCQ reorders, so the same drive does clearly more
job qd32 "[qd32]\nrw=randread\nbs=4k\niodepth=32\ntime_based\nruntime=10\n"
run_sim "$TEST_DIR/qd32.json" hdd "$TEST_DIR/qd32.fio"
iops32=$(json_get "$TEST_DIR/qd32.json" "d['jobs'][0]['read']['iops']")
echo "hdd QD32 randread 4k: $iops32 IOPS"
check "$TEST_DIR/qd32.json" "d['jobs'][0]['read']['iops'] > 1.5 * $iops1" "QD32 not clearly faster than QD1"
check "$TEST_DIR/qd32.json" "d['jobs'][0]['iodepth_level']['32'] == 100.0 and d['jobs'][0]['latency_depth'] == 32" "iodepth_level"

# --- mixed: rwmixread=70 splits ~70/30 per I/O
job mix "[mix]\nrw=randrw\nrwmixread=70\nbs=4k\niodepth=4\ntime_based\nruntime=20\n"
run_sim "$TEST_DIR/mix.json" hdd "$TEST_DIR/mix.fio"
check "$TEST_DIR/mix.json" "(lambda j: 0.65 <= j['read']['total_ios'] / (j['read']['total_ios'] + j['write']['total_ios']) <= 0.75)(d['jobs'][0])" "randrw 70/30 split"
check "$TEST_DIR/mix.json" "d['jobs'][0]['write']['runtime'] == 20000 and d['jobs'][0]['write']['clat_ns']['N'] > 0" "write direction"
bins_check "$TEST_DIR/mix.json"
bins_check "$TEST_DIR/qd1.json"

# --- numjobs + group_reporting: one entry, sums of the clones
job group "[global]\nrw=randread\nnumjobs=4\nnumber_ios=50\n[g]\ngroup_reporting\n[alone]\nnumjobs=2\n"
run_sim "$TEST_DIR/group.json" hdd "$TEST_DIR/group.fio"
check "$TEST_DIR/group.json" "[j['jobname'] for j in d['jobs']] == ['g', 'alone', 'alone']" "group_reporting entries"
check "$TEST_DIR/group.json" "[j['read']['total_ios'] for j in d['jobs']] == [200, 50, 50]" "number_ios per clone"
bins_check "$TEST_DIR/group.json"

# --- size-limited jobs stop where fio 3.33 stops (checked against fio's
# null engine): no partial block at the region end, new passes while at
# least one block of io_size is left, random offsets as with norandommap
for case in "rw=read:2" "rw=read\nio_size=9k:2" "rw=read\nio_size=20k:5" "rw=read\nio_size=6k:2" "rw=randread:3"; do
  job limit "[x]\nsize=10k\nbs=4k\n${case%:*}\n"
  run_sim "$TEST_DIR/limit.json" hdd "$TEST_DIR/limit.fio"
  check "$TEST_DIR/limit.json" "d['jobs'][0]['read']['total_ios'] == ${case##*:}" "size=10k bs=4k ${case%:*}: I/O count"
done

# --- deterministic: same job, same numbers
run_sim "$TEST_DIR/qd1b.json" hdd "$TEST_DIR/qd1.fio"
check "$TEST_DIR/qd1b.json" "d['jobs'][0]['read']['total_ios'] == $(json_get "$TEST_DIR/qd1.json" "d['jobs'][0]['read']['total_ios']")" "run is not deterministic"

# --- timing=off: the fixed zero-latency model, fast; stats= writes a stats file
job fast "[fast]\nrw=randrw\niodepth=16\nnumber_ios=2000000\n"
start_ns=$(date +%s%N)
run_sim "$TEST_DIR/fast.json" hdd timing=off stats="$TEST_DIR/fast.stats" "$TEST_DIR/fast.fio"
wall_ms=$(( ($(date +%s%N) - start_ns) / 1000000 ))
echo "timing=off: 2M I/Os in $wall_ms ms; sim loop $(json_get "$TEST_DIR/fast.json" "int(d['storlab']['simulated_ios_per_wall_s'])") I/Os per wall second"
check "$TEST_DIR/fast.json" "d['jobs'][0]['read']['total_ios'] + d['jobs'][0]['write']['total_ios'] == 2000000" "timing=off I/O count"
check "$TEST_DIR/fast.json" "d['storlab']['device']['model']['kind'] == 'fixed'" "timing=off model"
[ "$wall_ms" -lt 20000 ] || fail "timing=off: 2M I/Os took $wall_ms ms"
[ -s "$TEST_DIR/fast.stats" ] || fail "stats= wrote no file"

# --- fixed-latency-us: a calibration device, exactly that latency, any depth
job fixed "[fixed]\nrw=randread\nbs=4k\niodepth=8\ntime_based\nruntime=2\n"
run_sim "$TEST_DIR/fixed.json" hdd fixed-latency-us=1000 "$TEST_DIR/fixed.fio"
check "$TEST_DIR/fixed.json" "d['jobs'][0]['read']['clat_ns']['min'] == d['jobs'][0]['read']['clat_ns']['max'] == 1000000" "fixed-latency-us=1000 latency"
check "$TEST_DIR/fixed.json" "abs(d['jobs'][0]['read']['iops'] - 8000) < 8" "fixed-latency-us=1000 QD8 IOPS"

# --- raid with a live event in virtual time, and the per-interval timeline
job raid "[global]\nrw=randrw\nrwmixread=50\nbs=8k\niodepth=32\ntime_based\nruntime=20s\nramp_time=2s\n[raid]\n"
RAID=(raid preset=vsa-raid10-8x-sas10k member-size=1G)
start_ns=$(date +%s%N)
run_sim "$TEST_DIR/raid.json" "${RAID[@]}" --interval-ms 1000 --event 10s:'battery failed' "$TEST_DIR/raid.fio"
wall_ms=$(( ($(date +%s%N) - start_ns) / 1000000 ))
echo "raid 20 s randrw QD32 with --event and --interval-ms: $wall_ms ms wall"
[ "$wall_ms" -lt 3000 ] || fail "raid 20 s run took $wall_ms ms (want well under 1 s)"
bins_check "$TEST_DIR/raid.json"
check "$TEST_DIR/raid.json" "d['storlab']['events'] == [{'t_ms': 10000.0, 'command': 'battery failed', 'reply': 'ok battery failed; write-back off'}]" "storlab.events"
# the controller's own log: 10 s after the 2 s ramp, in engine time
check "$TEST_DIR/raid.json" "{'time_ns': 12 * 10**9, 'what': 'battery set failed'} in d['storlab']['device']['model']['events']" "model event at 12 s engine time"
check "$TEST_DIR/raid.json" "d['storlab']['timeline_interval_ms'] == 1000 and [t['t_ms'] for t in d['storlab']['timeline']] == list(range(1000, 20001, 1000)) and all(t['duration_ms'] == 1000.0 for t in d['storlab']['timeline'])" "one timeline entry per second of the 20 s measured phase"
for k in read write; do
  check "$TEST_DIR/raid.json" "sum(t['$k']['ios'] for t in d['storlab']['timeline']) == d['jobs'][0]['$k']['total_ios'] and sum(t['$k']['bytes'] for t in d['storlab']['timeline']) == d['jobs'][0]['$k']['io_bytes']" "timeline $k ios/bytes sum to the job's"
  check "$TEST_DIR/raid.json" "abs(sum(t['$k']['lat_sum_ns'] for t in d['storlab']['timeline']) / d['jobs'][0]['$k']['total_ios'] - d['jobs'][0]['$k']['clat_ns']['mean']) < 1" "timeline $k latency sum matches clat mean"
done
# mean write latency (interval sums) before and after the battery failed
mean_w () { json_get "$TEST_DIR/raid.json" "(lambda ts: sum(t['write']['lat_sum_ns'] for t in ts) / sum(t['write']['ios'] for t in ts) / 1000)([t for t in d['storlab']['timeline'] if t['t_ms'] $1 10000])"; }
before_us=$(mean_w '<=') after_us=$(mean_w '>')
echo "raid write latency: ${before_us} us before the battery failed, ${after_us} us after"
check "$TEST_DIR/raid.json" "$after_us >= 5 * $before_us" "write latency after 'battery failed' not >= 5x before"
# same run without the event: no slowdown, events [], no timeline unless asked
run_sim "$TEST_DIR/raid0.json" "${RAID[@]}" "$TEST_DIR/raid.fio"
check "$TEST_DIR/raid0.json" "d['storlab']['events'] == [] and 'timeline' not in d['storlab']" "no events, no timeline by default"
check "$TEST_DIR/raid0.json" "d['jobs'][0]['write']['clat_ns']['mean'] < 2 * $before_us * 1000" "without the event writes stay cached"
# several jobs, different ramps: the phase starts at the first ramp's end
# (1 s), ends at the last runtime (4 s); 700 ms intervals, the last cut short
job multi "[global]\nrw=randrw\nbs=4k\ntime_based\nruntime=3\n[a]\nramp_time=1\niodepth=4\n[b]\nstartdelay=2\nramp_time=500ms\nnumjobs=2\nruntime=1500ms\n"
run_sim "$TEST_DIR/multi.json" hdd --interval-ms=700 "$TEST_DIR/multi.fio"
check "$TEST_DIR/multi.json" "[(t['t_ms'], t['duration_ms']) for t in d['storlab']['timeline']] == [(700, 700.0), (1400, 700.0), (2100, 700.0), (2800, 700.0), (3500, 200.0)]" "multi-job timeline intervals"
check "$TEST_DIR/multi.json" "all(sum(t[k]['ios'] for t in d['storlab']['timeline']) == sum(j[k]['total_ios'] for j in d['jobs']) for k in ('read', 'write'))" "multi-job timeline sums"
# fail-member / replace-member at their times, an event at the phase start
run_sim "$TEST_DIR/members.json" "${RAID[@]}" --event=0:'policy write-through' --event '5s: fail-member 3' --event '15s:replace-member 3' "$TEST_DIR/raid.fio"
check "$TEST_DIR/members.json" "[(e['t_ms'], e['reply']) for e in d['storlab']['events']] == [(0.0, 'ok policy write-through; write-back off'), (5000.0, 'ok fail-member 3; write-back off'), (15000.0, 'ok replace-member 3; write-back off')]" "member events"

# --- bad input: exit 1, one line naming the culprit, nothing on stdout
# expect_error NEEDLE ARGS...
expect_error () {
  local needle=$1; shift
  local rc=0
  timeout 10 "$SIM" "$@" >"$TEST_DIR/err.out" 2>"$TEST_DIR/err.txt" || rc=$?   # 124: it hung
  [ "$rc" = 1 ] || { cat "$TEST_DIR/err.txt" >&2; fail "exit $rc (want 1) for: $*"; }
  [ ! -s "$TEST_DIR/err.out" ] || fail "stdout not empty for: $*"
  grep -qF -- "$needle" "$TEST_DIR/err.txt" || { cat "$TEST_DIR/err.txt" >&2; fail "error for '$*' does not mention '$needle'"; }
  [ "$(grep -c . "$TEST_DIR/err.txt")" = 1 ] || { cat "$TEST_DIR/err.txt" >&2; fail "not one error line for: $*"; }
  grep -q '^storlab-sim: ' "$TEST_DIR/err.txt" || fail "error not prefixed 'storlab-sim: ' for: $*"
  echo "ok: $* -> $(cat "$TEST_DIR/err.txt")"
}
job unknown_opt "[global]\nrw=randread\n\n[j]\nfrobnicate=3\n"
job bad_bs "[j]\nbs=4x\n"
job far "[j]\noffset=100t\n"
expect_error "floppy" floppy "$TEST_DIR/qd1.fio"
expect_error "hdd" floppy "$TEST_DIR/qd1.fio"                   # lists the known plugins
expect_error "bogus-key" hdd bogus-key=1 "$TEST_DIR/qd1.fio"
expect_error "rpm=abc" hdd rpm=abc "$TEST_DIR/qd1.fio"
expect_error "preset=no-such" hdd preset=no-such "$TEST_DIR/qd1.fio"
expect_error "timing=maybe" hdd timing=maybe "$TEST_DIR/qd1.fio"
expect_error "JOBFILE" hdd rpm=7200
expect_error "PLUGIN"
expect_error "nonexistent.fio" hdd "$TEST_DIR/nonexistent.fio"
expect_error "unknown_opt.fio:5: unknown or unsupported fio option 'frobnicate'" hdd "$TEST_DIR/unknown_opt.fio"
expect_error "bad_bs.fio:2: bs=4x" hdd "$TEST_DIR/bad_bs.fio"
expect_error "offset" hdd "$TEST_DIR/far.fio"
job tb "[j]\ntime_based\nruntime=1\n"
expect_error "timing=off" hdd timing=off "$TEST_DIR/tb.fio"
expect_error "fixed-latency-us=-3" hdd fixed-latency-us=-3 "$TEST_DIR/tb.fio"
# live events and the timeline
job sized "[j]\nrw=randwrite\nbs=8k\nsize=16m\n"
expect_error "--event '10x:battery failed': AT '10x': not a time" "${RAID[@]}" --event '10x:battery failed' "$TEST_DIR/raid.fio"
expect_error "--event 'battery failed': expected AT:COMMAND" "${RAID[@]}" --event 'battery failed' "$TEST_DIR/raid.fio"
expect_error "--event '10s:frob 1': unknown command 'frob'" "${RAID[@]}" --event '10s:frob 1' "$TEST_DIR/raid.fio"
expect_error "--event '10s:status': 'status' is for the raid plugin's live control socket only" "${RAID[@]}" --event 10s:status "$TEST_DIR/raid.fio"
expect_error "--event '1s:power-cut'" "${RAID[@]}" --event 1s:power-cut "$TEST_DIR/raid.fio"
expect_error "--event '10s:battery dead': battery dead: unknown state" "${RAID[@]}" --event '10s:battery dead' "$TEST_DIR/raid.fio"
expect_error "--event '10s:battery': battery: missing argument" "${RAID[@]}" --event 10s:battery "$TEST_DIR/raid.fio"
expect_error "--event '10s:fail-member 99': refused at 10 s" "${RAID[@]}" --event '10s:fail-member 99' "$TEST_DIR/raid.fio"
expect_error "--event '20001ms:battery failed': at 20.001 s, beyond the end of the run" "${RAID[@]}" --event '20001ms:battery failed' "$TEST_DIR/raid.fio"
expect_error "--event '5s:battery failed': at 5 s, beyond the end of the run" "${RAID[@]}" --event '5s:battery failed' "$TEST_DIR/sized.fio"
expect_error "--event '1s:battery ok': live events need the raid plugin, not hdd" hdd --event '1s:battery ok' "$TEST_DIR/qd1.fio"
expect_error "--event '1s:battery ok': live events need the raid model" raid timing=off --event '1s:battery ok' "$TEST_DIR/sized.fio"
expect_error "--interval-ms 0" hdd --interval-ms 0 "$TEST_DIR/qd1.fio"
expect_error "--interval-ms 60001" hdd --interval-ms 60001 "$TEST_DIR/qd1.fio"
expect_error "--interval-ms: missing value" hdd --interval-ms
expect_error "unknown option '--bogus'" hdd --bogus "$TEST_DIR/qd1.fio"
# job files that are not regular files: refused at once, never read (a
# FIFO without a writer must not block, /dev/zero must not be read forever)
mkfifo "$TEST_DIR/fifo.fio"
expect_error "/dev/zero: job file is a character device; a regular file is needed" hdd /dev/zero
expect_error "fifo.fio: job file is a FIFO; a regular file is needed" hdd "$TEST_DIR/fifo.fio"
expect_error "$TEST_DIR: job file is a directory" hdd "$TEST_DIR"
{ printf '[j]\n'; head -c 1048573 /dev/zero | tr '\0' '\n'; } > "$TEST_DIR/big.fio"
expect_error "big.fio: job file is 1048577 bytes; at most 1048576 (1 MiB)" hdd "$TEST_DIR/big.fio"
# absurd times (3 years of simulated time would run silently for days) and
# block sizes fio's I/O to a 512-byte-sector device fails on
job forever "[j]\nrw=randread\ntime_based\nruntime=100000000\n"
expect_error "forever.fio:4: runtime=100000000: above storlab-sim's limit of 30 days" hdd "$TEST_DIR/forever.fio"
# 30 days at 1 ms would be 2.6e9 timeline entries: refused before the run (it once ran out of memory)
job month "[j]\nrw=randread\ntime_based\nruntime=30d\n"
expect_error "--interval-ms 1: the measured phase would give 2592000001 timeline entries, at most 10000000" hdd --interval-ms 1 "$TEST_DIR/month.fio"
job bs513 "[j]\nrw=randread\nbs=513\n"
expect_error "bs513.fio:1: job 'j': bs=513: not a multiple of 512 bytes" hdd "$TEST_DIR/bs513.fio"
# '--' ends the options: a device key that looks like one is refused as a key
expect_error "unknown key '--interval-ms' for hdd" hdd -- --interval-ms=5 "$TEST_DIR/group.fio"
expect_error "--help: cannot open job file" hdd rpm=7200 -- --help
run_sim "$TEST_DIR/dashdash.json" hdd --interval-ms 1000 -- rpm=15000 "$TEST_DIR/qd1.fio"
check "$TEST_DIR/dashdash.json" "len(d['storlab']['timeline']) == 10 and d['storlab']['device']['model']['revolution_ns'] == 4000000" "options before '--', keys after it"

# --- progress: on stderr after 2 s of wall time, with --progress even when
# stderr is not a terminal; never on stdout (it carries the JSON)
for hours in 4 16; do              # 16: a machine fast enough to simulate 4 h in 2 s
  job progress "[j]\nrw=randread\nbs=4k\niodepth=32\ntime_based\nruntime=${hours}h\n"
  "$SIM" hdd --progress "$TEST_DIR/progress.fio" 2>"$TEST_DIR/progress.err" \
    | tee "$TEST_DIR/progress.json" | /usr/bin/python3 -c 'import json,sys; json.load(sys.stdin)' \
    || fail "--progress: stdout is not JSON"
  grep -q "progress" "$TEST_DIR/progress.json" && fail "--progress wrote to stdout"
  running="^storlab-sim: progress: .* of $hours h 0 min simulated ([0-9]*%), .* wall, about .* left$"
  grep -q "$running" "$TEST_DIR/progress.err" && break
done
cat "$TEST_DIR/progress.err"
grep -q "$running" "$TEST_DIR/progress.err" || fail "--progress: no progress line on stderr"
tail -n 1 "$TEST_DIR/progress.err" \
  | grep -q "^storlab-sim: progress: $hours h 0 min of $hours h 0 min simulated (100%), .* wall$" \
  || fail "--progress: no last line at 100 %"
run_sim "$TEST_DIR/progress.json" hdd "$TEST_DIR/progress.fio"
[ ! -s "$TEST_DIR/sim.stderr" ] || { cat "$TEST_DIR/sim.stderr"; fail "progress printed to a stderr that is no terminal without --progress"; }

# plugin-only keys are accepted with a note
run_sim "$TEST_DIR/note.json" hdd file=/nonexistent/disk.img latency-offset-us=auto "$TEST_DIR/group.fio"
grep -q "file= is a plugin-only key" "$TEST_DIR/sim.stderr" || fail "no note for file="

# a preset at a lab size scales its geometry itself and says what it chose
job ssd_small "[j]\nrw=randwrite\nbs=4k\niodepth=32\nnumber_ios=20000\n"
run_sim "$TEST_DIR/ssd_small.json" ssd preset=intel-s3700-400g size=1G "$TEST_DIR/ssd_small.fio"
note=$(grep "^storlab-sim: note: preset=intel-s3700-400g scaled to size=1G: channels=[0-9]* dies-per-channel=[0-9]* pages-per-block=[0-9]* (" "$TEST_DIR/sim.stderr") \
  || { cat "$TEST_DIR/sim.stderr" >&2; fail "preset=intel-s3700-400g size=1G: no note on the scaled geometry"; }
echo "ok: ${note#storlab-sim: }"
dies=$(sed 's/.*(\([0-9]*\) of the preset.s 64 dies.*/\1/' <<<"$note")
check "$TEST_DIR/ssd_small.json" "(lambda m: m['kind'] == 'ssd' and m['logical_bytes'] == 2**30 and m['dies'] == $dies < 64 and m['page_bytes'] == 8192)(d['storlab']['device']['model'])" "scaled s3700: the model has the noted geometry"
check "$TEST_DIR/ssd_small.json" "d['jobs'][0]['write']['total_ios'] == 20000" "scaled s3700: the job ran"
expect_error "does not fit the geometry" ssd preset=intel-s3700-400g size=1G channels=8 "$TEST_DIR/ssd_small.fio"
expect_error "too small even scaled down to one die" ssd preset=micron-7300pro-3840g size=16M "$TEST_DIR/ssd_small.fio"

# storlab-sim cluster: the spec and its arguments, each error one line
printf 'storlab-cluster 1\nnode n1\ndevice n1 d0 hdd preset=sas10k-300g size=1G\nlocal n1 disk d0\nvolume n1 v 64M\nexport n1 at=0 size=64M volume=v\n' > "$TEST_DIR/c.spec"
printf '[global]\nrw=randread\nbs=4k\niodepth=4\nruntime=1\ntime_based=1\n[w]\noffset=0\nsize=64M\n' > "$TEST_DIR/c.fio"
run_sim "$TEST_DIR/cluster.json" cluster --warm -- "$TEST_DIR/c.spec" "$TEST_DIR/c.fio"
check "$TEST_DIR/cluster.json" "(lambda m: m['start_state'] == 'warm' and [l['name'] for l in m['layers']] == ['n1/d0', 'n1/front/volume/v'])(d['storlab']['device']['model']) and d['jobs'][0]['read']['total_ios'] > 0" "cluster: one node's volume on its disk"
# --warm: a write buffer starts as full as its writeback lets it stay,
# found by a probe run of the workload: over a disk it cannot keep up with
# random writes arriving at SSD speed (full, the misses going around it);
# over an SSD it can (one short of the high watermark, 50 %)
printf 'storlab-cluster 1\nnode n1\ndevice n1 c ssd preset=intel-s3700-400g size=1G\ndevice n1 d hdd preset=sas10k-300g size=4G\nlocal n1 disk-group mode=all-flash cache=c volume-group=per-device d\nvolume n1 v 2G devices=d\nexport n1 at=0 size=2G volume=v\n' > "$TEST_DIR/wb-disk.spec"
sed 's/device n1 d hdd preset=sas10k-300g/device n1 d ssd preset=intel-s3700-400g/' "$TEST_DIR/wb-disk.spec" > "$TEST_DIR/wb-ssd.spec"
printf '[global]\nrw=randwrite\nbs=4k\niodepth=16\nruntime=2\ntime_based=1\n[w]\noffset=0\nsize=2G\n' > "$TEST_DIR/wb.fio"
for origin in disk ssd; do
  run_sim "$TEST_DIR/wb-$origin.json" cluster --warm -- "$TEST_DIR/wb-$origin.spec" "$TEST_DIR/wb.fio"
  [ "$(grep -c 'note: preset=intel-s3700-400g scaled to size=1G' "$TEST_DIR/sim.stderr")" = 1 ] \
    || fail "--warm over a $origin: the probe's build repeated the notes"
done
wb='[x for x in d["storlab"]["device"]["model"]["layers"] if x["kind"] == "writecache"][0]["counters"]'
check "$TEST_DIR/wb-disk.json" "(lambda c: c['warm_full'] == 1 and c['warmed_blocks'] == c['buffer_blocks'] and c['fill_pct'] > 99 and c['writes_around'] > 0)($wb)" "--warm: a write buffer over a disk starts full"
check "$TEST_DIR/wb-ssd.json" "(lambda c: c['warm_full'] == 0 and c['warmed_blocks'] == c['buffer_blocks'] // 2 - 1 and c['fill_pct'] < 51)($wb)" "--warm: a write buffer over an SSD starts at its high watermark"
# a node of two disk groups (group=2, each its own cache): an LV on the second's device
printf 'storlab-cluster 1\nnode n1\ndevice n1 c1 ssd preset=intel-s3700-400g size=1G\ndevice n1 c2 ssd preset=intel-s3700-400g size=1G\ndevice n1 d0 hdd preset=sas10k-300g size=1G\ndevice n1 d1 hdd preset=sas10k-300g size=1G\nlocal n1 disk-group mode=all-flash cache=c1 volume-group=per-device d0\nlocal n1 disk-group group=2 mode=all-flash cache=c2 volume-group=per-device d1\nvolume n1 v 64M devices=d1\nexport n1 at=0 size=64M volume=v\n' > "$TEST_DIR/groups.spec"
run_sim "$TEST_DIR/groups.json" cluster -- "$TEST_DIR/groups.spec" "$TEST_DIR/c.fio"
check "$TEST_DIR/groups.json" "(lambda l: l['n1/diskgroup']['ops']['read']['count'] == 0 and l['n1/d0']['ops']['read']['count'] == 0 and l['n1/diskgroup2']['ops']['read']['count'] == l['n1/d1']['ops']['read']['count'] >= d['jobs'][0]['read']['total_ios'] > 0)({x['name']: x for x in d['storlab']['device']['model']['layers']})" "cluster: a node's second disk group serves the LV on its device"
expect_error "missing SPEC and JOBFILE" cluster
expect_error "missing JOBFILE" cluster "$TEST_DIR/c.spec"
expect_error "unknown option '--event-ms'" cluster --event-ms 5 "$TEST_DIR/c.spec" "$TEST_DIR/c.fio"
expect_error "a cluster takes its own events only (snapshot, snapshot delete, node NODE down|up)" cluster --event 1s:battery\ ok "$TEST_DIR/c.spec" "$TEST_DIR/c.fio"
expect_error "snapshot and node events are a cluster's" raid preset=vsa-raid10-8x-sas10k member-size=1G --event 1s:snapshot "$TEST_DIR/raid.fio"
expect_error "--event '1s:node n1 sideways': node NODE down|up" cluster --event "1s:node n1 sideways" "$TEST_DIR/c.spec" "$TEST_DIR/c.fio"
expect_error "--event '1s:node n9 down': refused at 1 s: no node 'n9'" cluster --event "1s:node n9 down" "$TEST_DIR/c.spec" "$TEST_DIR/c.fio"
expect_error "--warm: only for 'storlab-sim cluster'" hdd --warm "$TEST_DIR/qd1.fio"
# a warm state larger than the host's memory (64 write buffers of 2 TiB,
# each 3413 MiB of dirty blocks' state at its watermark) is refused before
# it is built, in seconds, saying how much it needs
nodes=$(seq 1 64)
{ echo 'storlab-cluster 1'
  for n in $nodes; do echo "node n$n"; done
  for n in $nodes; do echo "device n$n c hdd preset=sas10k-300g size=2T"
                      echo "device n$n d hdd preset=sas10k-300g size=7T"; done
  for n in $nodes; do echo "local n$n disk-group mode=all-flash cache=c volume-group=per-device d"; done
  for n in $nodes; do echo "volume n$n v$n 6T devices=d"; done
  for n in $nodes; do echo "export n$n at=$(( (n - 1) * 6 ))T size=6T volume=v$n"; done
} > "$TEST_DIR/huge-warm.spec"
{ printf '[global]\nrw=randwrite\nbs=4k\nruntime=1\ntime_based=1\nsize=6T\n'
  for n in $nodes; do printf '[w%s]\noffset=%sT\n' "$n" $(( (n - 1) * 6 )); done
} > "$TEST_DIR/huge-warm.fio"
if [ "$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)" -lt $((200 * 1024 * 1024)) ]; then
  expect_error "--warm: the write buffers' and SSDs' steady state needs 218454 MiB more memory" \
    cluster --warm "$TEST_DIR/huge-warm.spec" "$TEST_DIR/huge-warm.fio"
fi
expect_error "unexpected argument 'rpm=7200'" cluster "$TEST_DIR/c.spec" "$TEST_DIR/c.fio" rpm=7200
sed 's/^local n1 disk d0$/local n1 disk d9/' "$TEST_DIR/c.spec" > "$TEST_DIR/bad.spec"
expect_error "bad.spec:4: node n1 has no device 'd9'" cluster "$TEST_DIR/bad.spec" "$TEST_DIR/c.fio"
expect_error "not a regular file" cluster /dev/zero "$TEST_DIR/c.fio"
"$SIM" cluster --help >"$TEST_DIR/help.txt" || fail "cluster --help failed"
grep -qF "Host presets: bare-metal, tcg" "$TEST_DIR/help.txt" || fail "cluster --help lacks the host presets"

# --help and --list-presets
"$SIM" hdd --help >"$TEST_DIR/help.txt" || fail "--help failed"
grep -q "average-seek-ms" "$TEST_DIR/help.txt" || fail "--help lacks the hdd parameters"
for key in '--event AT:COMMAND' '--interval-ms N' '"lat_sum_ns"' 'storlab.events' 'clat_ns.bins'; do
  grep -qF -- "$key" "$TEST_DIR/help.txt" || fail "--help does not document $key"
done
"$SIM" --list-presets >"$TEST_DIR/presets.txt" || fail "--list-presets failed"
grep -q "hdd" "$TEST_DIR/presets.txt" || fail "--list-presets lacks hdd presets"

echo "sim_cli: all checks passed"
