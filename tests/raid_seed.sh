#!/bin/bash
# raid_seed.sh STORLAB_SIM — the seed controller in the simulator: 8K
# random 50/50 at 32 outstanding over the whole 1.2 TB array (far beyond the
# 512 MB cache).  Once the cache is in steady state every front read is one
# member read and every front write two member writes (RAID 10), so member
# IOPS = reads + 2 x writes within 5 %.  Also: bad raid input is one line.
source "$(dirname "$0")/lib.sh"
SIM=$1
[ -x "$SIM" ] || fail "usage: raid_seed.sh PATH_TO_STORLAB_SIM"

printf '[seed]\nioengine=nbd\nrw=randrw\nrwmixread=50\nbs=8k\niodepth=32\ntime_based\nruntime=1200\n' \
  > "$TEST_DIR/seed.fio"
"$SIM" raid preset=vsa-raid10-8x-sas10k "$TEST_DIR/seed.fio" > "$TEST_DIR/seed.json" \
  2> "$TEST_DIR/seed.stderr" || { cat "$TEST_DIR/seed.stderr" >&2; fail "storlab-sim raid exited non-zero"; }
/usr/bin/python3 - "$TEST_DIR/seed.json" <<'PY' || fail "seed scenario: member IOPS != reads + 2 x writes"
import json, sys
d = json.load(open(sys.argv[1]))
job = d["jobs"][0]
runtime_s = job["read"]["runtime"] / 1000.0
model = d["storlab"]["device"]["model"]
member_ios = sum(m["stats"]["ops"][op]["count"] for m in model["member_layer"] for op in ("read", "write"))
front = job["read"]["iops"] + 2 * job["write"]["iops"]
member = member_ios / runtime_s
# the cache ends as full as it was in steady state: its dirty blocks are
# writes not destaged yet (2 member writes each) -- shown, not corrected
pending = 2 * model["dirty_bytes"] / 8192 / runtime_s
print("seed raid10: reads %.0f + 2 x writes %.0f = %.0f IOPS; members %.0f IOPS (%.2f %%; "
      "dirty at end worth %.0f IOPS); write latency %.3f ms, read %.1f ms"
      % (job["read"]["iops"], job["write"]["iops"], front, member, 100 * (member / front - 1),
         pending, job["write"]["clat_ns"]["mean"] / 1e6, job["read"]["clat_ns"]["mean"] / 1e6))
sys.exit(0 if abs(member / front - 1) <= 0.05 else 1)
PY

# bad input: one line naming the key, exit 1
for bad in "level=7" "stripe-size=96k" "members=5" "member-preset=nope" "cache-policy=maybe"; do
  "$SIM" raid "$bad" "$TEST_DIR/seed.fio" > "$TEST_DIR/bad.out" 2> "$TEST_DIR/bad.err" \
    && fail "storlab-sim raid $bad succeeded"
  key=${bad%%=*}
  grep -q "$key" "$TEST_DIR/bad.err" || fail "storlab-sim raid $bad: error does not name $key: $(cat "$TEST_DIR/bad.err")"
  [ "$(wc -l < "$TEST_DIR/bad.err")" -eq 1 ] || fail "storlab-sim raid $bad: more than one error line"
  [ -s "$TEST_DIR/bad.out" ] && fail "storlab-sim raid $bad: wrote to stdout"
done
echo "raid seed scenario: ok"
