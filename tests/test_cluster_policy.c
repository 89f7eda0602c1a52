/* test_cluster_policy.c — workload volumes with a storage policy in the
 * cluster model: the physical I/Os per guest I/O of each method against
 * the formulas (mirror: ftt + 1 writes, one read from the own copy;
 * RAID-5 3+1: a small write reads 2 and writes 2, a full stripe writes
 * 4/3 of its bytes; RAID-6 4+2: 3 and 3, 6/4), components on distinct
 * nodes reached over NVMe/TCP, dm-integrity's bitmap and tag writes, and
 * the policies the spec refuses. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_run.h"
#include "core/units.h"

#define CHUNK (512 * KIB)

/* n nodes (n1..nN), each one disk as its local volume, fully linked, and
 * one policy volume homed on n1 with the volume line's keys; n1's VMs
 * drive it.  The spec is built in a static buffer. */
static const char *
policy_spec (unsigned nodes, const char *size, const char *keys)
{
  static char spec[8192];
  size_t at = (size_t) snprintf (spec, sizeof spec, "storlab-cluster 1\n");
  for (unsigned i = 1; i <= nodes; i++)
    at += (size_t) snprintf (spec + at, sizeof spec - at, "node n%u\n", i);
  for (unsigned i = 1; i <= nodes; i++)
    at += (size_t) snprintf (spec + at, sizeof spec - at, DISK ("n%u", "d0"), i);
  for (unsigned i = 1; i <= nodes; i++)
    for (unsigned k = i + 1; k <= nodes; k++)
      at += (size_t) snprintf (spec + at, sizeof spec - at, "link n%u n%u preset=10gbe\n", i, k);
  for (unsigned i = 1; i <= nodes; i++)
    at += (size_t) snprintf (spec + at, sizeof spec - at, "local n%u disk d0\n", i);
  snprintf (spec + at, sizeof spec - at, "volume n1 v %s %s\nexport n1 at=0 size=%s volume=v\n",
            size, keys, size);
  return spec;
}

/* figure (ops_of or bytes_of) of op summed over every node's disk */
static uint64_t
disks_total (struct run *r, unsigned nodes, enum sl_op op,
             uint64_t (*figure) (struct run *, const char *, enum sl_op))
{
  uint64_t sum = 0;
  for (unsigned i = 1; i <= nodes; i++) {
    char name[16];
    snprintf (name, sizeof name, "n%u/d0", i);
    sum += figure (r, name, op);
  }
  return sum;
}

static uint64_t
device_sum (struct run *r, unsigned nodes, enum sl_op op)
{
  return disks_total (r, nodes, op, ops_of);
}

static uint64_t
device_bytes (struct run *r, unsigned nodes, enum sl_op op)
{
  return disks_total (r, nodes, op, bytes_of);
}

/* ftt 1 and 2: every copy's disk takes each guest write; reads come from
 * n1's own copy only; the remote copies' writes cross n1's links. */
static void
test_mirror_fan_out (void **state)
{
  (void) state;
  for (unsigned ftt = 1; ftt <= 2; ftt++) {
    const char *on = ftt == 1 ? "method=mirror on=n1,n3" : "method=mirror on=n1,n2,n4";
    struct run r = run_new (policy_spec (5, "32M", on));
    burst (&r, SL_OP_WRITE, 20, 0, 64 * KIB, 4 * KIB);
    assert_int_equal (device_sum (&r, 5, SL_OP_WRITE), (ftt + 1) * 20);
    assert_int_equal (ops_of (&r, "n1/d0", SL_OP_WRITE), 20);
    assert_int_equal (ops_of (&r, ftt == 1 ? "n3/d0" : "n4/d0", SL_OP_WRITE), 20);
    assert_int_equal (ops_of (&r, ftt == 1 ? "n2/d0" : "n3/d0", SL_OP_WRITE), 0);   /* no copy */
    burst (&r, SL_OP_READ, 20, 0, 64 * KIB, 4 * KIB);
    assert_int_equal (device_sum (&r, 5, SL_OP_READ), 20);
    assert_int_equal (ops_of (&r, "n1/d0", SL_OP_READ), 20);
    assert_non_null (cl_target_find (r.c, ftt == 1 ? "n1/nvme-tcp/n3/component/v@n1"
                                     : "n1/nvme-tcp/n4/component/v@n1"));
    run_free (&r);
  }
}

/* A copy away from home: reads go to the least busy copy, all remote. */
static void
test_mirror_without_a_home_copy (void **state)
{
  (void) state;
  struct run r = run_new (policy_spec (3, "32M", "method=mirror on=n2,n3"));
  burst (&r, SL_OP_READ, 20, 0, 64 * KIB, 4 * KIB);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_READ), 0);
  assert_int_equal (ops_of (&r, "n2/d0", SL_OP_READ) + ops_of (&r, "n3/d0", SL_OP_READ), 20);
  assert_true (ops_of (&r, "n2/d0", SL_OP_READ) >= 5 && ops_of (&r, "n3/d0", SL_OP_READ) >= 5);
  run_free (&r);
}

/* RAID-5 3+1 and RAID-6 4+2: a 4 KiB write in one chunk reads m + 1 and
 * writes m + 1 (data and parity: read-modify-write); a full stripe writes
 * every member once, (k + m) / k of its bytes, and reads nothing; a read
 * reads once. */
static void
test_erasure_coding_fan_out (void **state)
{
  (void) state;
  for (unsigned m = 1; m <= 2; m++) {
    unsigned nodes = m == 1 ? 4 : 6, k = nodes - m;
    struct run r = run_new (policy_spec (nodes, "48M", m == 1 ? "method=raid5 on=n1,n2,n3,n4"
                                         : "method=raid6 on=n1,n2,n3,n4,n5,n6"));
    /* one small write per stripe row, so no two share a parity chunk */
    burst (&r, SL_OP_WRITE, 4, 0, (uint64_t) k * CHUNK, 4 * KIB);
    assert_int_equal (device_sum (&r, nodes, SL_OP_READ), 4 * (m + 1));
    assert_int_equal (device_sum (&r, nodes, SL_OP_WRITE), 4 * (m + 1));
    uint64_t reads = device_sum (&r, nodes, SL_OP_READ);
    uint64_t written = device_bytes (&r, nodes, SL_OP_WRITE);
    uint64_t stripe = (uint64_t) k * CHUNK;
    burst (&r, SL_OP_WRITE, 2, 8 * stripe, stripe, stripe);
    assert_int_equal (device_sum (&r, nodes, SL_OP_READ), reads);
    assert_int_equal (device_bytes (&r, nodes, SL_OP_WRITE) - written, 2 * stripe * nodes / k);
    uint64_t before = device_sum (&r, nodes, SL_OP_READ);
    burst (&r, SL_OP_READ, 10, 0, 64 * KIB, 4 * KIB);
    assert_int_equal (device_sum (&r, nodes, SL_OP_READ) - before, 10);
    run_free (&r);
  }
}

/* dm-integrity on each copy: the first write to a 16 MiB region in a 10 s
 * bitmap epoch writes the bitmap first; tags stay in dm-bufio until the
 * bitmap flush at the epoch's end (one write per run of dirty tag blocks,
 * and the cleared bitmap), a FLUSH (before it goes down) or a FUA write
 * (its own, at once); a read reads a section's tags once. */
static void
test_checksum_metadata_io (void **state)
{
  (void) state;
  struct run r = run_new (policy_spec (2, "32M", "method=mirror on=n1,n2 checksum=on"));
  /* 10 writes in the first 16 MiB region (their tags in one tag block) */
  burst (&r, SL_OP_WRITE, 10, 0, 64 * KIB, 4 * KIB);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_WRITE), 10 + 1);
  assert_int_equal (ops_of (&r, "n2/d0", SL_OP_WRITE), 10 + 1);
  /* the same region again, same epoch: data only */
  burst (&r, SL_OP_WRITE, 10, 0, 64 * KIB, 4 * KIB);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_WRITE), 21);
  /* the epoch ends: the dirty tag block and the cleared bitmap */
  sl_engine_run_until (r.engine, 10 * NS_PER_S + 1);
  while (sl_engine_run_next (r.engine))
    ;
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_WRITE), 23);
  assert_int_equal (ops_of (&r, "n2/d0", SL_OP_WRITE), 23);
  /* a write in the second region (its bit set anew: bitmap, data), then a
   * FLUSH: its tag block goes down before the FLUSH does */
  burst (&r, SL_OP_WRITE, 1, 20 * MIB, 0, 4 * KIB);
  burst (&r, SL_OP_FLUSH, 1, 0, 0, 0);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_WRITE), 23 + 2 + 1);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_FLUSH), 1);
  /* a FUA write: its tags at once */
  struct sl_request fua = { .op = SL_OP_WRITE, .flags = SL_REQUEST_FUA,
                            .offset_bytes = 20 * MIB + 4 * KIB, .length_bytes = 4 * KIB };
  sl_engine_submit (r.engine, &fua);
  while (sl_engine_run_next (r.engine) && !fua.completion_known)
    ;
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_WRITE), 26 + 2);
  /* reads of the two sections: each one's 16 KiB of tags once, on n1 */
  burst (&r, SL_OP_READ, 8, 0, 4 * MIB, 4 * KIB);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_READ), 8 + 2);
  assert_int_equal (ops_of (&r, "n2/d0", SL_OP_READ), 0);
  burst (&r, SL_OP_READ, 8, 0, 4 * MIB, 4 * KIB);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_READ), 16 + 2);
  /* the volume holds what was asked: the copies' LVs hold the tags besides */
  assert_true (cl_target_find (r.c, "n1/volume/v")->capacity_bytes >= 32 * MIB);
  run_free (&r);
}

/* One copy with a checksum is dm-integrity over the node's own LV. */
static void
test_checksum_without_copies (void **state)
{
  (void) state;
  struct run r = run_new (policy_spec (1, "32M", "checksum=on"));
  burst (&r, SL_OP_WRITE, 4, 0, 64 * KIB, 4 * KIB);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_WRITE), 4 + 1);
  run_free (&r);
}

static void
node_event (struct run *r, const char *node, bool down)
{
  char err[256] = "";
  if (sl_cluster_node_event (r->c, node, down, err, sizeof err) != 0)
    fail_msg ("node %s %s refused: %s", node, down ? "down" : "up", err);
}

static void
run_to_idle (struct run *r)
{
  while (sl_engine_run_next (r->engine))
    ;
}

/* A node holding a copy goes down: writes go on to the other copy only,
 * md's bitmap marks the 64 MiB chunks they touched; back up, the copy is
 * written again and md resyncs the marked chunks alone (read from the
 * copy that stayed, written to the one back), at most 200000 KiB/s. */
static void
test_node_down_degrades_and_up_resyncs (void **state)
{
  (void) state;
  struct run r = run_new (policy_spec (3, "160M", "method=mirror on=n1,n2"));
  burst (&r, SL_OP_WRITE, 10, 0, 64 * KIB, 4 * KIB);
  assert_int_equal (ops_of (&r, "n2/d0", SL_OP_WRITE), 10);
  node_event (&r, "n2", true);
  /* writes in the first and third chunks; reads stay on n1's copy */
  burst (&r, SL_OP_WRITE, 10, 0, 64 * KIB, 4 * KIB);
  burst (&r, SL_OP_WRITE, 1, 130 * MIB, 0, 4 * KIB);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_WRITE), 21);
  assert_int_equal (ops_of (&r, "n2/d0", SL_OP_WRITE), 10);
  uint64_t up_ns = burst (&r, SL_OP_READ, 4, 0, 64 * KIB, 4 * KIB);
  assert_int_equal (ops_of (&r, "n2/d0", SL_OP_READ), 0);
  node_event (&r, "n2", false);
  /* written again at once; the resync runs in the background */
  burst (&r, SL_OP_WRITE, 1, 100 * MIB, 0, 4 * KIB);
  assert_int_equal (ops_of (&r, "n2/d0", SL_OP_WRITE), 11);
  uint64_t before = bytes_of (&r, "n2/d0", SL_OP_WRITE);
  run_to_idle (&r);
  /* chunk 0 (64 MiB) and chunk 2 (what the 160 MiB volume has of it) */
  uint64_t member = cl_target_find (r.c, "n1/volume/v")->capacity_bytes;
  uint64_t stale = 64 * MIB + (member - 128 * MIB);
  assert_int_equal (bytes_of (&r, "n2/d0", SL_OP_WRITE) - before, stale);
  assert_int_equal (bytes_of (&r, "n1/d0", SL_OP_READ), 4 * 4 * KIB + stale);
  /* no faster than sync_speed_max */
  /* (the last 64 KiB block may start one block's time before the rate's end) */
  if (cl_now_ns (r.c) - up_ns < (stale - 64 * KIB) * NS_PER_S / (200000ull * 1024))
    fail_msg ("resync of %" PRIu64 " bytes done in %" PRIu64 " ns", stale, cl_now_ns (r.c) - up_ns);
  run_free (&r);
}

/* RAID-5 with one piece's node down: a read of that piece is rebuilt from
 * the other three; a second node down would lose two pieces: refused,
 * nothing changed; so are a node running the workers and an unknown one. */
static void
test_node_down_erasure_coding (void **state)
{
  (void) state;
  struct run r = run_new (policy_spec (4, "96M", "method=raid5 on=n1,n2,n3,n4"));
  /* the second chunk of the first row is n2's */
  burst (&r, SL_OP_READ, 1, CHUNK, 0, 4 * KIB);
  assert_int_equal (ops_of (&r, "n2/d0", SL_OP_READ), 1);
  node_event (&r, "n2", true);
  burst (&r, SL_OP_READ, 1, CHUNK, 0, 4 * KIB);
  assert_int_equal (ops_of (&r, "n2/d0", SL_OP_READ), 1);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_READ) + ops_of (&r, "n3/d0", SL_OP_READ)
                    + ops_of (&r, "n4/d0", SL_OP_READ), 3);
  char err[256] = "";
  assert_int_equal (sl_cluster_node_event (r.c, "n3", true, err, sizeof err), -1);
  assert_string_equal (err, "node n3 down: n1/volume/v would lose 2 of its 4 components (it "
                       "tolerates 1)");
  assert_int_equal (sl_cluster_node_event (r.c, "n1", true, err, sizeof err), -1);
  assert_non_null (strstr (err, "node n1 runs workers of this run"));
  assert_int_equal (sl_cluster_node_event (r.c, "n9", true, err, sizeof err), -1);
  assert_string_equal (err, "no node 'n9'");
  assert_int_equal (sl_cluster_node_event (r.c, "n2", true, err, sizeof err), -1);
  assert_string_equal (err, "node n2 is down already");
  /* n3 stayed up: its piece is still read */
  burst (&r, SL_OP_READ, 1, 2 * CHUNK, 0, 4 * KIB);
  assert_int_equal (ops_of (&r, "n3/d0", SL_OP_READ), 2);
  run_free (&r);
}

static void
test_bad_policies (void **state)
{
  (void) state;
  assert_refused (policy_spec (3, "32M", "method=raid5 on=n1,n2,n3"),
                  "volume n1 v: method=raid5 places 4 components (one per node), on= lists 3");
  assert_refused (policy_spec (6, "32M", "method=raid6 on=n1,n2,n3,n4"), "places 6 components");
  assert_refused (policy_spec (3, "32M", "method=mirror on=n1,n2,n1"), "node n1 holds two components");
  assert_refused (policy_spec (3, "32M", "method=mirror"), "method=mirror needs on=");
  assert_refused (policy_spec (3, "32M", "on=n1,n2"), "on= needs method=");
  assert_refused (policy_spec (3, "32M", "method=raid7 on=n1"), "method=raid7 (known: mirror, raid5, raid6)");
  assert_refused (policy_spec (3, "32M", "method=mirror on=n1,n9"), "n9");
  assert_refused (policy_spec (3, "32M", "checksum=yes"), "checksum=yes (on or off)");
  assert_refused (policy_spec (3, "32M", "copies=2"), "unknown key 'copies'");
  assert_refused (policy_spec (4, "32M", "method=raid5 on=n1,n2,n3,n4 chunk=1000"), "multiple of 4 KiB");
  /* a component that does not fit its holder's local volume */
  assert_refused (policy_spec (2, "300M", "method=mirror on=n1,n2"), "local volume is full");
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_mirror_fan_out),
    cmocka_unit_test (test_mirror_without_a_home_copy),
    cmocka_unit_test (test_erasure_coding_fan_out),
    cmocka_unit_test (test_checksum_metadata_io),
    cmocka_unit_test (test_checksum_without_copies),
    cmocka_unit_test (test_node_down_degrades_and_up_resyncs),
    cmocka_unit_test (test_node_down_erasure_coding),
    cmocka_unit_test (test_bad_policies),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
