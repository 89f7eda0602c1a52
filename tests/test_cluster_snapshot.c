/* test_cluster_snapshot.c — a workload volume's snapshots in the cluster
 * model (layer_snapshot.c), counted at the disk: redo-log (dm-snapshot): a
 * whole-chunk write after a snapshot writes the chunk to the redo log and
 * commits its exception, a partial one copies the chunk first (the extra
 * read traffic of a chain), a chunk the newest log holds is rewritten in
 * place, reads fall through the chain with no I/O of their own, a deleted
 * snapshot's log merges below (a read, a write and a commit a chunk);
 * redirect-on-write (dm-thin): the first write to a shared 64 KiB block
 * copies it whole to a new block unless it covers it, later ones land in
 * place, mapping changes are committed each second; and the events and
 * keys the model refuses. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "cluster_run.h"
#include "core/units.h"

static const char *
snapshot_spec (const char *keys)
{
  static char spec[1024];
  snprintf (spec, sizeof spec, "storlab-cluster 1\nnode n1\n" DISK ("n1", "d0")
            "local n1 disk d0\nvolume n1 v 16M %s\nexport n1 at=0 size=16M volume=v\n", keys);
  return spec;
}

static void
event (struct run *r, bool take)
{
  char err[256] = "";
  assert_int_equal (sl_cluster_snapshot_event (r->c, take, err, sizeof err), 0);
}

/* every engine event, background work included */
static void
settle (struct run *r)
{
  while (sl_engine_run_next (r->engine))
    ;
}

static void
test_redo_log_chain (void **state)
{
  (void) state;
  struct run r = run_new (snapshot_spec ("snapshots=redo-log depth=3 room=20M"));
  /* no snapshot yet: straight through */
  burst (&r, SL_OP_WRITE, 8, 0, 4 * KIB, 4 * KIB);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_WRITE), 8);
  event (&r, true);
  settle (&r);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_WRITE), 8 + 1);      /* the log's header */
  /* 8 whole chunks: each to the log, exceptions committed in batches */
  burst (&r, SL_OP_WRITE, 8, 0, 4 * KIB, 4 * KIB);
  uint64_t after_new = ops_of (&r, "n1/d0", SL_OP_WRITE);
  assert_true (after_new >= 9 + 8 + 1 && after_new <= 9 + 8 + 8);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_READ), 0);
  /* the same chunks again: in place in the log, no commit */
  burst (&r, SL_OP_WRITE, 8, 0, 4 * KIB, 4 * KIB);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_WRITE), after_new + 8);
  /* 8 KiB at 1 MiB + 2 KiB: two partial chunks, each copied first (a read,
   * a write), then the write's three pieces, then a commit or more */
  uint64_t before = ops_of (&r, "n1/d0", SL_OP_WRITE);
  burst (&r, SL_OP_WRITE, 1, MIB + 2 * KIB, 0, 8 * KIB);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_READ), 2);
  uint64_t partial = ops_of (&r, "n1/d0", SL_OP_WRITE) - before;
  assert_true (partial >= 2 + 3 + 1 && partial <= 2 + 3 + 3);
  /* a second snapshot: reads of chunks in log 1, and of chunks never
   * written since the first, each one read, no lookup I/O */
  event (&r, true);
  settle (&r);
  burst (&r, SL_OP_READ, 16, 0, 4 * KIB, 4 * KIB);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_READ), 2 + 16);
  /* a third, then a fourth is refused: the depth */
  event (&r, true);
  char err[256] = "";
  assert_int_equal (sl_cluster_snapshot_event (r.c, true, err, sizeof err), -1);
  assert_string_equal (err, "n1/volume/v has 3 snapshots, its depth");
  /* deleting the oldest merges its 11 chunks into the volume: a read, a
   * write and a commit each */
  settle (&r);
  uint64_t reads = ops_of (&r, "n1/d0", SL_OP_READ), writes = ops_of (&r, "n1/d0", SL_OP_WRITE);
  event (&r, false);
  settle (&r);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_READ) - reads, 11);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_WRITE) - writes, 11 + 11);
  /* room again for one */
  event (&r, true);
  run_free (&r);
}

static void
test_redirect_on_write (void **state)
{
  (void) state;
  struct run r = run_new (snapshot_spec ("snapshots=redirect-on-write depth=2 room=4M"));
  burst (&r, SL_OP_WRITE, 4, 0, 64 * KIB, 4 * KIB);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_WRITE), 4);         /* in place */
  event (&r, true);
  settle (&r);                                  /* the snapshot's commit */
  uint64_t writes = ops_of (&r, "n1/d0", SL_OP_WRITE);
  /* a 4 KiB write to each of 4 shared blocks: each block copied whole to a
   * new one first (a 64 KiB read, a 64 KiB write), then the write */
  burst (&r, SL_OP_WRITE, 4, 0, 64 * KIB, 4 * KIB);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_READ), 4);
  assert_int_equal (bytes_of (&r, "n1/d0", SL_OP_READ), 4 * 64 * KIB);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_WRITE) - writes, 4 + 4);
  /* the new blocks are the volume's own: in place, no copy */
  burst (&r, SL_OP_WRITE, 4, 8 * KIB, 64 * KIB, 4 * KIB);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_WRITE) - writes, 4 + 4 + 4);
  /* a write covering a shared block whole: a new block, no copy */
  burst (&r, SL_OP_WRITE, 1, MIB, 0, 64 * KIB);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_READ), 4);
  /* the second's mapping changes committed within a second: one leaf
   * (5 blocks, 126 mappings a leaf) twice, and the superblock */
  writes = ops_of (&r, "n1/d0", SL_OP_WRITE);
  settle (&r);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_WRITE) - writes, 2 + 1);
  /* reads: each block where it is now, one read each */
  burst (&r, SL_OP_READ, 4, 0, 64 * KIB, 4 * KIB);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_READ), 4 + 4);
  /* with the snapshot deleted, blocks written before it are the volume's alone */
  event (&r, false);
  settle (&r);
  uint64_t reads = ops_of (&r, "n1/d0", SL_OP_READ);
  burst (&r, SL_OP_WRITE, 1, 2 * MIB, 0, 4 * KIB);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_READ), reads);
  char err[256] = "";
  assert_int_equal (sl_cluster_snapshot_event (r.c, false, err, sizeof err), -1);
  assert_string_equal (err, "n1/volume/v has no snapshot to delete");
  run_free (&r);
}

/* A mirrored volume's snapshot room is on every copy: the redo log's writes
 * reach both disks. */
static void
test_snapshots_over_a_policy (void **state)
{
  (void) state;
  struct run r = run_new ("storlab-cluster 1\nnode n1\nnode n2\nnode n3\n"
                          DISK ("n1", "d0") DISK ("n2", "d0") DISK ("n3", "d0")
                          "link n1 n2\nlink n1 n3\nlink n2 n3\n"
                          "local n1 disk d0\nlocal n2 disk d0\nlocal n3 disk d0\n"
                          "volume n1 v 16M method=mirror on=n1,n2 snapshots=redo-log depth=1 "
                          "room=20M\nexport n1 at=0 size=16M volume=v\n");
  event (&r, true);
  settle (&r);
  burst (&r, SL_OP_WRITE, 4, 0, 4 * KIB, 4 * KIB);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_WRITE), ops_of (&r, "n2/d0", SL_OP_WRITE));
  assert_true (ops_of (&r, "n2/d0", SL_OP_WRITE) >= 1 + 4 + 1);
  assert_int_equal (ops_of (&r, "n3/d0", SL_OP_WRITE), 0);
  assert_non_null (cl_target_find (r.c, "n1/volume/v/base"));
  run_free (&r);
}

static void
test_refused (void **state)
{
  (void) state;
  assert_refused (snapshot_spec ("snapshots=clone depth=1 room=4M"),
                  "volume n1 v: snapshots=clone (redo-log or redirect-on-write)");
  assert_refused (snapshot_spec ("snapshots=redo-log depth=9 room=20M"),
                  "volume n1 v: depth=9 (1 to 8 snapshots)");
  assert_refused (snapshot_spec ("snapshots=redo-log"),
                  "volume n1 v: snapshots=redo-log needs depth= and room=");
  assert_refused (snapshot_spec ("depth=2"), "volume n1 v: depth= and room= need snapshots=");
  assert_refused (snapshot_spec ("snapshots=redo-log depth=1 room=8M"),
                  "a redo log of 8388608 bytes cannot take a rewrite of the 16777216-byte volume");
  /* a cluster without such a volume refuses the event */
  struct run r = run_new (snapshot_spec (""));
  char err[256] = "";
  assert_int_equal (sl_cluster_snapshot_event (r.c, true, err, sizeof err), -1);
  assert_non_null (strstr (err, "no volume of the cluster takes snapshots"));
  run_free (&r);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_redo_log_chain),
    cmocka_unit_test (test_redirect_on_write),
    cmocka_unit_test (test_snapshots_over_a_policy),
    cmocka_unit_test (test_refused),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
