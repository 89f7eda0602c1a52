/* test_cluster_reduction.c — an all-flash disk group's deduplication and
 * compression (layer_data_reduction.c) in the cluster model: what reaches
 * the capacity devices for data of each kind, against the layer's rules
 * (a new 4 KiB block stored in 2 KiB when it shrinks by half or more, a
 * duplicate not written and read from its first copy, 16 bytes of
 * translation and 32 of hash a block logged in 4 KiB metadata writes),
 * the CPU its fingerprints and compression take, and what the spec
 * refuses.  A write larger than the 8 MiB write buffer goes around it to
 * the capacity at once, so each figure is exact. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_run.h"
#include "core/units.h"

#define BLOCKS 4096u                   /* a 16 MiB write */

/* One node, an all-flash group of an 8 MiB buffer and two disks, with
 * space-efficiency and the data's keys as given; a 64 MiB volume. */
static struct run
group (const char *keys)
{
  char spec[2048];
  snprintf (spec, sizeof spec, "storlab-cluster 1\nnode n1\n"
            "device n1 cache ssd preset=intel-s3700-400g size=1G fixed-latency-us=50\n"
            DISK ("n1", "d0") DISK ("n1", "d1")
            "local n1 disk-group mode=all-flash cache=cache cache-size=8M %s d0 d1\n"
            "volume n1 v 64M\nexport n1 at=0 size=64M volume=v\n", keys);
  return run_new (spec);
}

static uint64_t
capacity_bytes (struct run *r, enum sl_op op)
{
  return bytes_of (r, "n1/d0", op) + bytes_of (r, "n1/d1", op);
}

static uint64_t
capacity_ops (struct run *r, enum sl_op op)
{
  return ops_of (r, "n1/d0", op) + ops_of (r, "n1/d1", op);
}

/* New blocks that halve: half the bytes, plus the log (48 bytes a block:
 * 4096 x 48 / 4096 = 48 metadata writes); the 4096 fingerprints and
 * compressions (2.3 + 5.3 us each) on one core before the write goes down. */
static void
test_compressible_new_blocks (void **state)
{
  (void) state;
  struct run r = group ("space-efficiency=dedup-compression dedupe-percent=0 "
                        "compress-percent=60");
  uint64_t done = burst (&r, SL_OP_WRITE, 1, 0, 0, BLOCKS * 4 * KIB);
  assert_int_equal (capacity_bytes (&r, SL_OP_WRITE), BLOCKS * 2 * KIB + 48 * 4 * KIB);
  assert_int_equal (capacity_ops (&r, SL_OP_WRITE), 1 + 48);
  assert_true (done >= BLOCKS * (2300 + 5300));
  /* a read of 16 blocks: one I/O of 32 KiB, then 16 decompressions */
  run_free (&r);
  r = group ("space-efficiency=dedup-compression dedupe-percent=0 compress-percent=60");
  done = burst (&r, SL_OP_READ, 1, 0, 0, 64 * KIB);
  assert_int_equal (capacity_bytes (&r, SL_OP_READ), 32 * KIB);
  assert_int_equal (capacity_ops (&r, SL_OP_READ), 1);
  assert_true (done >= 16 * 800);
  run_free (&r);
}

/* Compressed blocks are packed: two writes of 4097 blocks each leave half
 * a sector after the first, filled by the second (no metadata yet: 8194 x
 * 48 bytes is 96 pages, both counted). */
static void
test_compressed_blocks_share_sectors (void **state)
{
  (void) state;
  struct run r = group ("space-efficiency=dedup-compression compress-percent=50");
  burst (&r, SL_OP_WRITE, 2, 0, 32 * MIB, (BLOCKS + 1) * 4 * KIB);
  assert_int_equal (capacity_bytes (&r, SL_OP_WRITE), 2 * (BLOCKS + 1) * 2 * KIB
                    + 96 * 4 * KIB);
  run_free (&r);
}

/* Data that does not compress (fio's default) is stored as it is. */
static void
test_incompressible_blocks (void **state)
{
  (void) state;
  struct run r = group ("space-efficiency=dedup-compression");
  burst (&r, SL_OP_WRITE, 1, 0, 0, BLOCKS * 4 * KIB);
  assert_int_equal (capacity_bytes (&r, SL_OP_WRITE), BLOCKS * 4 * KIB + 48 * 4 * KIB);
  run_free (&r);
}

/* Every block a duplicate: no data written, only the translations (16
 * writes); a read goes block by block to where each first copy lies. */
static void
test_duplicates (void **state)
{
  (void) state;
  struct run r = group ("space-efficiency=dedup-compression dedupe-percent=100");
  burst (&r, SL_OP_WRITE, 1, 0, 0, BLOCKS * 4 * KIB);
  assert_int_equal (capacity_bytes (&r, SL_OP_WRITE), 16 * 4 * KIB);
  run_free (&r);
  r = group ("space-efficiency=dedup-compression dedupe-percent=100");
  burst (&r, SL_OP_READ, 1, 0, 0, 16 * KIB);
  assert_int_equal (capacity_ops (&r, SL_OP_READ), 4);
  run_free (&r);
  /* half the blocks: about half not written (which ones: a hash) */
  r = group ("space-efficiency=dedup-compression dedupe-percent=50");
  burst (&r, SL_OP_WRITE, 1, 0, 0, BLOCKS * 4 * KIB);
  uint64_t data = capacity_bytes (&r, SL_OP_WRITE) - 32 * 4 * KIB;   /* log: 4096 x 16 + ~2048 x 32 */
  assert_true (data > BLOCKS * 4 * KIB * 40 / 100 && data < BLOCKS * 4 * KIB * 60 / 100);
  run_free (&r);
}

/* Compression alone: no fingerprints (no hash entries, no SHA-1 time). */
static void
test_compression_only (void **state)
{
  (void) state;
  struct run r = group ("space-efficiency=compression dedupe-percent=50 compress-percent=50");
  uint64_t done = burst (&r, SL_OP_WRITE, 1, 0, 0, BLOCKS * 4 * KIB);
  assert_int_equal (capacity_bytes (&r, SL_OP_WRITE), BLOCKS * 2 * KIB + 16 * 4 * KIB);
  assert_true (done >= BLOCKS * 5300 && done < BLOCKS * (2300 + 5300));
  run_free (&r);
}

static void
test_refused (void **state)
{
  (void) state;
  const char *base = "storlab-cluster 1\nnode n1\n"
    "device n1 cache ssd preset=intel-s3700-400g size=1G\n" DISK ("n1", "d0");
  char spec[1024];
  snprintf (spec, sizeof spec, "%slocal n1 disk-group mode=hybrid cache=cache "
            "space-efficiency=compression d0\n", base);
  assert_refused (spec, "bad.spec:5: local disk-group: space-efficiency=compression needs "
                  "mode=all-flash");
  snprintf (spec, sizeof spec, "%slocal n1 disk-group mode=all-flash cache=cache "
            "space-efficiency=zip d0\n", base);
  assert_refused (spec, "space-efficiency=zip (known: none, dedup-compression, compression)");
  snprintf (spec, sizeof spec, "%slocal n1 disk-group mode=all-flash cache=cache "
            "dedupe-percent=10 d0\n", base);
  assert_refused (spec, "dedupe-percent= and compress-percent= need space-efficiency=");
  snprintf (spec, sizeof spec, "%slocal n1 disk-group mode=all-flash cache=cache "
            "space-efficiency=compression compress-percent=101 d0\n", base);
  assert_refused (spec, "compress-percent=101: not a number in 0..100");
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_compressible_new_blocks),
    cmocka_unit_test (test_compressed_blocks_share_sectors),
    cmocka_unit_test (test_incompressible_blocks),
    cmocka_unit_test (test_duplicates),
    cmocka_unit_test (test_compression_only),
    cmocka_unit_test (test_refused),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
