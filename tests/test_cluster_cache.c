/* test_cluster_cache.c — the disk group's caches as cluster layers: the
 * write buffer (dm-writecache, layer_writecache.c) and the read cache
 * (dm-cache writethrough, layer_readcache.c).  Each test builds a cluster
 * by hand: an origin and a cache device with fixed latencies (origin
 * 1 ms, cache 100 µs), a recorder over each (it logs what reaches the
 * device, in order), the layer on top as the one export.  So every
 * figure is exact: which device an I/O went to, in what order, when it
 * completed. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster.h"
#include "cluster/cluster_internal.h"
#include "cluster/ranges.h"
#include "cluster/layers.h"
#include "core/engine.h"
#include "core/units.h"

#define ORIGIN_NS 1000000u
#define CACHE_NS 100000u
#define BLOCK 4096u
#define PAUSE_NS UINT64_C (3000000000)  /* dm-writecache's pause_writeback */
#define CHUNK (64 * KIB)
#define ORIGIN_BYTES (64 * MIB)

/* ------------------------------------------------------------ recorder -- */

#define LOG_MAX 4096

struct record {
  enum sl_op op;
  uint32_t flags;
  uint64_t offset_bytes;
  uint64_t length_bytes;
};

/* A pass-through target that logs every I/O and warm-up it is given. */
struct recorder {
  struct cl_target *below;
  unsigned count;
  struct record log[LOG_MAX];
  unsigned warms;
  uint64_t warm_offset_bytes;
  uint64_t warm_length_bytes;
};

static void
recorder_done (struct cl_io *child)
{
  struct cl_io *io = child->parent;
  cl_io_free (child->target->cluster, child);
  cl_io_complete (io);
}

static void
recorder_submit (struct cl_target *t, struct cl_io *io)
{
  struct recorder *r = t->self;
  if (r->count < LOG_MAX)
    r->log[r->count++] = (struct record) { io->op, io->flags, io->offset_bytes, io->length_bytes };
  cl_submit_child (r->below, io, io->op, io->flags, io->offset_bytes, io->length_bytes,
                   recorder_done, NULL);
}

static void
recorder_warm (struct cl_target *t, uint64_t offset_bytes, uint64_t length_bytes)
{
  struct recorder *r = t->self;
  r->warms++;
  r->warm_offset_bytes = offset_bytes;
  r->warm_length_bytes = length_bytes;
}

static void
recorder_destroy (struct cl_target *t)
{
  free (t->self);
}

static struct cl_target *
recorder_new (struct cluster *c, const char *name, struct cl_target *below)
{
  static const struct cl_target_ops ops = {
    .kind = "recorder", .submit = recorder_submit, .warm = recorder_warm,
    .destroy = recorder_destroy,
  };
  struct recorder *r = calloc (1, sizeof *r);
  assert_non_null (r);
  r->below = below;
  return cl_target_new (c, &ops, r, "n1", name, below->capacity_bytes, false);
}

static struct recorder *
recorder_of (struct cl_target *t)
{
  return t->self;
}

/* The n-th logged I/O of op. */
static struct record
logged (struct cl_target *t, enum sl_op op, unsigned n)
{
  struct recorder *r = recorder_of (t);
  for (unsigned i = 0; i < r->count; i++)
    if (r->log[i].op == op && n-- == 0)
      return r->log[i];
  fail_msg ("fewer logged I/Os of op %d than asked", (int) op);
  return (struct record) { 0 };
}

/* ---------------------------------------------------------------- rig -- */

struct rig {
  struct sl_engine *e;
  struct sl_device_stats *stats;
  struct cluster *c;
  struct cl_target *origin_dev, *cache_dev;    /* the fixed-latency devices */
  struct cl_target *origin, *cache;            /* their recorders */
  struct cl_target *layer;
  uint64_t layer_memory_bytes;                 /* what the layer added */
};

static void
rig_devices (struct rig *g, uint64_t origin_bytes, uint64_t cache_bytes)
{
  char err[256] = "";
  g->c = cl_cluster_new ();
  g->origin_dev = cl_device_new (g->c, "n1", "n1/origin", sl_fixed_model_new (origin_bytes,
                                                                             ORIGIN_NS),
                                 err, sizeof err);
  g->cache_dev = cl_device_new (g->c, "n1", "n1/cache", sl_fixed_model_new (cache_bytes, CACHE_NS),
                                err, sizeof err);
  assert_non_null (g->origin_dev);
  assert_non_null (g->cache_dev);
  g->origin = recorder_new (g->c, "n1/origin-log", g->origin_dev);
  g->cache = recorder_new (g->c, "n1/cache-log", g->cache_dev);
}

static void
rig_start (struct rig *g, uint64_t memory_before)
{
  char err[256] = "";
  assert_non_null (g->layer);
  g->layer_memory_bytes = g->c->memory_bytes - memory_before - sizeof (struct cl_target);
  assert_int_equal (cl_export_add (g->c, 0, g->layer, 0, g->layer->capacity_bytes, err,
                                   sizeof err), 0);
  g->stats = calloc (1, sizeof *g->stats);
  assert_non_null (g->stats);
  g->e = sl_engine_new (SL_CLOCK_VIRTUAL, cl_cluster_model (g->c), g->stats, "cluster");
  assert_non_null (g->e);
}

static struct cl_writecache_config
wc_config (uint32_t high, uint32_t low, uint32_t jobs)
{
  struct cl_writecache_config config;
  cl_writecache_defaults (&config);
  config.high_watermark_percent = high;
  config.low_watermark_percent = low;
  config.writeback_jobs = jobs;
  return config;
}

/* A write buffer of buffer_blocks blocks over a 64 MiB origin. */
static struct rig
wc_rig (uint64_t buffer_blocks, struct cl_writecache_config config)
{
  struct rig g = { 0 };
  char err[256] = "";
  rig_devices (&g, ORIGIN_BYTES, buffer_blocks * BLOCK);
  uint64_t before = g.c->memory_bytes;
  g.layer = cl_writecache_new (g.c, "n1", "n1/diskgroup", g.origin, g.cache, &config, err,
                               sizeof err);
  if (g.layer == NULL)
    fail_msg ("writecache refused: %s", err);
  rig_start (&g, before);
  return g;
}

static struct cl_readcache_config
rc_config (uint64_t threshold_bytes)
{
  struct cl_readcache_config config;
  cl_readcache_defaults (&config);
  config.chunk_bytes = CHUNK;
  config.migration_threshold_bytes = threshold_bytes;
  return config;
}

/* A read cache of slots 64 KiB chunks over a 64 MiB origin (1024 chunks). */
static struct rig
rc_rig (uint64_t slots, struct cl_readcache_config config)
{
  struct rig g = { 0 };
  char err[256] = "";
  rig_devices (&g, ORIGIN_BYTES, slots * CHUNK);
  uint64_t before = g.c->memory_bytes;
  g.layer = cl_readcache_new (g.c, "n1", "n1/readcache", g.origin, g.cache, &config, err,
                              sizeof err);
  if (g.layer == NULL)
    fail_msg ("readcache refused: %s", err);
  rig_start (&g, before);
  return g;
}

static void
rig_free (struct rig *g)
{
  sl_engine_free (g->e);               /* frees the cluster */
  free (g->stats);
}

/* One of the layer's counters, read from its JSON record. */
static double
counter (const struct rig *g, const char *name)
{
  char *text = NULL;
  size_t bytes = 0;
  FILE *out = open_memstream (&text, &bytes);
  assert_non_null (out);
  g->layer->ops->write_counters (g->layer, out);
  fclose (out);
  char key[96];
  snprintf (key, sizeof key, "\"%s\": ", name);
  const char *at = strstr (text, key);
  if (at == NULL)
    fail_msg ("no counter %s in {%s}", name, text);
  double value = strtod (at + strlen (key), NULL);
  free (text);
  return value;
}

static uint64_t
ops (const struct cl_target *device, enum sl_op op)
{
  return device->stats.op[op].count;
}

static uint64_t
op_bytes (const struct cl_target *device, enum sl_op op)
{
  return device->stats.op[op].bytes;
}

/* -------------------------------------------------------------- driving -- */

struct req {
  struct sl_request r;
  bool done;
  uint64_t done_ns;
};

static void
req_done (struct sl_engine *e, struct sl_request *r)
{
  struct req *q = r->driver_data;
  q->done = true;
  q->done_ns = sl_engine_now_ns (e);
}

/* Hands q to the cluster now; it completes later. */
static void
submit (struct rig *g, struct req *q, enum sl_op op, uint32_t flags, uint64_t offset,
        uint64_t length)
{
  memset (q, 0, sizeof *q);
  q->r = (struct sl_request) { .op = op, .flags = flags, .offset_bytes = offset,
                               .length_bytes = length, .on_complete = req_done,
                               .driver_data = q };
  sl_engine_submit (g->e, &q->r);
}

/* One request, run until it completed (background work may go on);
 * returns its latency. */
static uint64_t
io (struct rig *g, enum sl_op op, uint32_t flags, uint64_t offset, uint64_t length)
{
  struct req q;
  uint64_t start = sl_engine_now_ns (g->e);
  submit (g, &q, op, flags, offset, length);
  while (!q.done && sl_engine_run_next (g->e))
    ;
  assert_true (q.done);
  return q.done_ns - start;
}

static uint64_t
read_block (struct rig *g, uint64_t block)
{
  return io (g, SL_OP_READ, 0, block * BLOCK, BLOCK);
}

static uint64_t
write_block (struct rig *g, uint64_t block)
{
  return io (g, SL_OP_WRITE, 0, block * BLOCK, BLOCK);
}

static void
drain (struct rig *g)
{
  while (sl_engine_run_next (g->e))
    ;
}

static void
run_until (struct rig *g, uint64_t when_ns)
{
  sl_engine_run_until (g->e, when_ns);
}

static void
flush_done (struct cl_io *io)
{
  *(bool *) io->owner = true;
  cl_io_free (io->target->cluster, io);
}

/* A FLUSH straight to the layer (the cluster's front completes a
 * whole-cluster FLUSH at once, as its exports have no one device). */
static void
flush_layer (struct rig *g)
{
  bool done = false;
  struct cl_io *f = cl_io_new (g->c);
  f->op = SL_OP_FLUSH;
  f->done = flush_done;
  f->owner = &done;
  cl_submit (g->layer, f);
  while (!done && sl_engine_run_next (g->e))
    ;
  assert_true (done);
}

/* ======================================================= write buffer == */

/* 100 blocks, high 50 % (50 blocks), low 45 % (45 blocks).  Writes land
 * in the buffer and complete at the cache's latency; below the high
 * watermark the origin sees nothing.  Writeback starts when the dirty
 * blocks reach it (the kernel starts at the watermark), takes the six
 * oldest (50 - 45 + 1: slots 0-5, read at once) and stops with 44 dirty,
 * under the low one. */
static void
test_wc_writes_land_in_buffer (void **state)
{
  (void) state;
  struct rig g = wc_rig (100, wc_config (50, 45, 64));
  assert_int_equal (counter (&g, "buffer_blocks"), 100);
  for (uint64_t i = 0; i < 49; i++)
    assert_int_equal (write_block (&g, 3 * i), CACHE_NS);
  assert_int_equal (counter (&g, "dirty_blocks"), 49);
  assert_int_equal (counter (&g, "writes_buffered"), 49);
  assert_true (counter (&g, "fill_pct") == 49.0);
  assert_int_equal (ops (g.cache_dev, SL_OP_WRITE), 49);
  /* an overwrite in place: no new slot */
  assert_int_equal (write_block (&g, 0), CACHE_NS);
  assert_int_equal (counter (&g, "write_hits"), 1);
  assert_int_equal (counter (&g, "dirty_blocks"), 49);
  /* FUA: the buffer is persistent, the write goes to it (with FUA) */
  assert_int_equal (io (&g, SL_OP_WRITE, SL_REQUEST_FUA, 3 * BLOCK, BLOCK), CACHE_NS);
  assert_int_equal (logged (g.cache, SL_OP_WRITE, 50).flags, SL_REQUEST_FUA);
  assert_int_equal (counter (&g, "write_hits"), 2);
  drain (&g);
  assert_int_equal (ops (g.origin_dev, SL_OP_WRITE), 0);
  assert_int_equal (ops (g.origin_dev, SL_OP_READ), 0);
  assert_int_equal (counter (&g, "writeback_blocks"), 0);
  /* the 50th block reaches the high watermark */
  assert_int_equal (write_block (&g, 1000), CACHE_NS);
  drain (&g);
  assert_int_equal (counter (&g, "writeback_blocks"), 6);
  assert_int_equal (counter (&g, "writeback_ios"), 6);       /* blocks 0, 3, ... 15 */
  assert_int_equal (counter (&g, "writeback_reads"), 1);
  assert_int_equal (ops (g.origin_dev, SL_OP_WRITE), 6);
  assert_int_equal (ops (g.cache_dev, SL_OP_READ), 1);
  assert_int_equal (logged (g.cache, SL_OP_READ, 0).offset_bytes, 0);
  assert_int_equal (logged (g.cache, SL_OP_READ, 0).length_bytes, 6 * BLOCK);
  assert_int_equal (counter (&g, "dirty_blocks"), 44);
  assert_true (counter (&g, "fill_pct") == 44.0);
  for (unsigned i = 0; i < 6; i++)
    assert_int_equal (logged (g.origin, SL_OP_WRITE, i).offset_bytes, 3 * i * BLOCK);
  rig_free (&g);
}

/* A pass takes the oldest blocks in age order; a run of them adjacent on
 * the origin and in the buffer is one copy (dm-writecache's SSD mode needs
 * both), and the pass's consecutive slots are one buffer read (the block
 * layer merges kcopyd's reads).  New blocks take the slots one after the
 * other.  Low 41 % makes the pass the ten oldest blocks:
 *   slots 0-2: blocks 10-12 (one write), 3: 100, 4-5: 5-6 (one write),
 *   6: 20, 7: 50, 8: 21, 9: 1000 (the first filler).
 * One read of slots 0-9, then seven copies in the buffer's order:
 * 10-12 | 100 | 5-6 | 20 | 50 | 21 (not after 20 in the buffer) | 1000
 * (a pass goes whole, though one copy at a time is allowed). */
static void
test_wc_writeback_oldest_first_reads_merged (void **state)
{
  (void) state;
  struct rig g = wc_rig (100, wc_config (50, 41, 1));
  io (&g, SL_OP_WRITE, 0, 10 * BLOCK, 3 * BLOCK);
  write_block (&g, 100);
  io (&g, SL_OP_WRITE, 0, 5 * BLOCK, 2 * BLOCK);
  write_block (&g, 20);
  write_block (&g, 50);
  write_block (&g, 21);
  for (uint64_t b = 1000; b < 1041; b++)
    write_block (&g, b);
  assert_int_equal (counter (&g, "dirty_blocks"), 50);
  drain (&g);
  assert_int_equal (counter (&g, "writeback_blocks"), 10);
  assert_int_equal (counter (&g, "writeback_ios"), 7);
  assert_int_equal (counter (&g, "dirty_blocks"), 40);
  static const uint64_t expect[7][2] = {
    { 10, 3 }, { 100, 1 }, { 5, 2 }, { 20, 1 }, { 50, 1 }, { 21, 1 }, { 1000, 1 },
  };
  assert_int_equal (ops (g.origin_dev, SL_OP_WRITE), 7);
  for (unsigned i = 0; i < 7; i++) {
    struct record r = logged (g.origin, SL_OP_WRITE, i);
    assert_int_equal (r.offset_bytes, expect[i][0] * BLOCK);
    assert_int_equal (r.length_bytes, expect[i][1] * BLOCK);
  }
  assert_int_equal (counter (&g, "writeback_reads"), 1);
  assert_int_equal (ops (g.cache_dev, SL_OP_READ), 1);
  assert_int_equal (logged (g.cache, SL_OP_READ, 0).offset_bytes, 0);
  assert_int_equal (logged (g.cache, SL_OP_READ, 0).length_bytes, 10 * BLOCK);
  /* the next new blocks take slots 50, 51, ...: not the freed 0-9 */
  write_block (&g, 2000);
  assert_int_equal (logged (g.cache, SL_OP_WRITE, (unsigned) ops (g.cache_dev, SL_OP_WRITE) - 1)
                    .offset_bytes, 50 * BLOCK);
  rig_free (&g);
}

/* A full buffer writes around it.  At time 0 a write of 80 blocks lands
 * (slots 0-79) and starts writeback (36 blocks down to the low watermark,
 * one copy: the buffer read ends at 100 µs, the origin write at 1100 µs).
 * Then, still at time 0:
 *   - blocks 200-229: 200-219 take the 20 free slots (80-99), 220-229 go
 *     to the origin, one I/O each; done with the origin's at 1 ms;
 *   - block 50 (dirty, slot 50): overwritten in place, 100 µs;
 *   - block 5, being written back: no slot free, so it waits (the
 *     kernel's one wait) until the copy frees slots 0-35 at 1100 µs,
 *     takes slot 0 (block 5 was written back, not redirtied) and is done
 *     100 µs later;
 *   - blocks 219-220: 219 overwritten in slot 99, 220 around: 1 ms.
 * Nothing buffered was dropped.  The writes around paused writeback: it
 * goes on 3 s after the last of them ended (1 ms + 3 s, pause_writeback),
 * from 65 dirty blocks, with the 21 oldest (36-56, one copy), and stops
 * at 44. */
static void
test_wc_full_buffer_writes_around (void **state)
{
  (void) state;
  struct rig g = wc_rig (100, wc_config (50, 45, 1));
  struct req first, second, third, fourth, fifth;
  submit (&g, &first, SL_OP_WRITE, 0, 0, 80 * BLOCK);
  submit (&g, &second, SL_OP_WRITE, 0, 200 * BLOCK, 30 * BLOCK);
  assert_int_equal (counter (&g, "writes_around"), 1);
  assert_int_equal (counter (&g, "writes_around_blocks"), 10);
  assert_int_equal (counter (&g, "room_waits"), 0);
  assert_true (counter (&g, "fill_pct") == 100.0);
  submit (&g, &third, SL_OP_WRITE, 0, 50 * BLOCK, BLOCK);
  submit (&g, &fourth, SL_OP_WRITE, 0, 5 * BLOCK, BLOCK);
  assert_int_equal (counter (&g, "room_waits"), 1);
  submit (&g, &fifth, SL_OP_WRITE, 0, 219 * BLOCK, 2 * BLOCK);
  assert_int_equal (counter (&g, "writes_around"), 2);
  assert_int_equal (counter (&g, "writes_around_blocks"), 11);
  assert_int_equal (counter (&g, "write_hits"), 2);
  assert_int_equal (counter (&g, "dirty_blocks"), 100);
  drain (&g);
  assert_int_equal (first.done_ns, CACHE_NS);
  assert_int_equal (second.done_ns, ORIGIN_NS);
  assert_int_equal (third.done_ns, CACHE_NS);
  assert_int_equal (fourth.done_ns, CACHE_NS + ORIGIN_NS + CACHE_NS);
  assert_int_equal (fifth.done_ns, ORIGIN_NS);
  assert_int_equal (counter (&g, "writes_buffered"), 5);
  assert_int_equal (counter (&g, "writes_bypassed"), 0);
  assert_int_equal (counter (&g, "room_waits"), 1);
  /* the origin: the two write-arounds (time 0), then the two copies */
  static const uint64_t origin_writes[4][2] = { { 220, 10 }, { 220, 1 }, { 0, 36 }, { 36, 21 } };
  assert_int_equal (ops (g.origin_dev, SL_OP_WRITE), 4);
  for (unsigned i = 0; i < 4; i++) {
    struct record r = logged (g.origin, SL_OP_WRITE, i);
    assert_int_equal (r.offset_bytes, origin_writes[i][0] * BLOCK);
    assert_int_equal (r.length_bytes, origin_writes[i][1] * BLOCK);
  }
  /* the buffer, in slots: 0-79, 80-99, 50, 99, then block 5 in slot 0 */
  static const uint64_t buffer_writes[5][2] = { { 0, 80 }, { 80, 20 }, { 50, 1 }, { 99, 1 },
                                                { 0, 1 } };
  assert_int_equal (ops (g.cache_dev, SL_OP_WRITE), 5);
  for (unsigned i = 0; i < 5; i++) {
    struct record r = logged (g.cache, SL_OP_WRITE, i);
    assert_int_equal (r.offset_bytes, buffer_writes[i][0] * BLOCK);
    assert_int_equal (r.length_bytes, buffer_writes[i][1] * BLOCK);
  }
  assert_int_equal (counter (&g, "writeback_blocks"), 57);
  assert_int_equal (counter (&g, "writeback_ios"), 2);
  assert_int_equal (counter (&g, "writeback_pauses"), 1);
  assert_int_equal (counter (&g, "dirty_blocks"), 44);
  assert_int_equal (sl_engine_now_ns (g.e), ORIGIN_NS + PAUSE_NS + CACHE_NS + ORIGIN_NS);
  /* where the data is: 5 and 219 in the buffer, 220-229 on the origin */
  assert_int_equal (read_block (&g, 5), CACHE_NS);
  assert_int_equal (read_block (&g, 219), CACHE_NS);
  assert_int_equal (read_block (&g, 220), ORIGIN_NS);
  assert_int_equal (read_block (&g, 229), ORIGIN_NS);
  rig_free (&g);
}

/* A buffer that filled stays full while writes go on: each write around
 * it restarts dm-writecache's pause, so no pass starts (the lab's
 * profile-hybrid after a write burst: 5100 of 5100 blocks used through a
 * 30 s randwrite, nothing written back).  100 blocks, high 50 %, low
 * 45 %, one copy at a time.  At time 0, 80 blocks (one pass of 36 starts)
 * and 30 more, of which 10 go around.  The pass frees 36 slots at
 * 1.1 ms, but the pause holds the next.  Then a new block every 2 ms for
 * 10 s: the first 36 take the freed slots, every later one goes around.
 * 3 s after the last write around ended, writeback drains the buffer to
 * the low watermark (56 blocks, one buffer read, two copies).  Without
 * the pause (0) the same writes keep the buffer under its high watermark
 * and none goes around after the first. */
static void
test_wc_full_buffer_stays_full_under_writes (void **state)
{
  (void) state;
  enum { WRITES = 5000 };
  static struct req w[WRITES];
  const uint64_t every_ns = 2 * ORIGIN_NS, last_write_ns = WRITES * every_ns;
  for (int paused = 1; paused >= 0; paused--) {
    struct cl_writecache_config config = wc_config (50, 45, 1);
    if (!paused)
      config.pause_writeback_ns = 0;
    struct rig g = wc_rig (100, config);
    struct req first, second;
    submit (&g, &first, SL_OP_WRITE, 0, 0, 80 * BLOCK);
    submit (&g, &second, SL_OP_WRITE, 0, 200 * BLOCK, 30 * BLOCK);
    for (unsigned i = 0; i < WRITES; i++) {
      run_until (&g, (i + 1) * every_ns);
      submit (&g, &w[i], SL_OP_WRITE, 0, (1000 + i) * BLOCK, BLOCK);
    }
    run_until (&g, last_write_ns + ORIGIN_NS);
    if (paused) {
      assert_true (counter (&g, "fill_pct") == 100.0);
      assert_int_equal (counter (&g, "writeback_blocks"), 36);
      assert_int_equal (counter (&g, "writes_around_blocks"), 10 + WRITES - 36);
      assert_int_equal (counter (&g, "writeback_pauses"), 1);
      run_until (&g, last_write_ns + ORIGIN_NS + PAUSE_NS - 1);
      assert_int_equal (counter (&g, "writeback_blocks"), 36);
      drain (&g);
      assert_int_equal (counter (&g, "writeback_blocks"), 36 + 56);
      assert_int_equal (counter (&g, "dirty_blocks"), 44);
      assert_int_equal (sl_engine_now_ns (g.e),
                        last_write_ns + ORIGIN_NS + PAUSE_NS + CACHE_NS + ORIGIN_NS);
    }
    else {
      assert_int_equal (counter (&g, "writes_around_blocks"), 10);
      assert_int_equal (counter (&g, "writeback_pauses"), 0);
      assert_true (counter (&g, "fill_pct") < 50.0);
      assert_true (counter (&g, "writeback_blocks") >= 100 + WRITES - 50);
    }
    for (unsigned i = 0; i < WRITES; i++)
      assert_true (w[i].done);
    rig_free (&g);
  }
}

/* A read is cut in runs: blocks 2-3 (slots 0-1) and 5 (slot 2) from the
 * buffer, 0-1, 4 and 6-7 from the origin; it completes with the slowest
 * part.  Partial blocks read just their bytes. */
static void
test_wc_reads_split (void **state)
{
  (void) state;
  struct rig g = wc_rig (100, wc_config (50, 45, 64));
  io (&g, SL_OP_WRITE, 0, 2 * BLOCK, 2 * BLOCK);
  write_block (&g, 5);
  assert_int_equal (io (&g, SL_OP_READ, 0, 0, 8 * BLOCK), ORIGIN_NS);
  assert_int_equal (counter (&g, "read_hits_blocks"), 3);
  assert_int_equal (counter (&g, "read_misses_blocks"), 5);
  assert_int_equal (ops (g.origin_dev, SL_OP_READ), 3);
  assert_int_equal (op_bytes (g.origin_dev, SL_OP_READ), 5 * BLOCK);
  assert_int_equal (ops (g.cache_dev, SL_OP_READ), 2);
  assert_int_equal (logged (g.cache, SL_OP_READ, 0).offset_bytes, 0);
  assert_int_equal (logged (g.cache, SL_OP_READ, 0).length_bytes, 2 * BLOCK);
  assert_int_equal (logged (g.cache, SL_OP_READ, 1).offset_bytes, 2 * BLOCK);
  assert_int_equal (logged (g.origin, SL_OP_READ, 1).offset_bytes, 4 * BLOCK);
  assert_int_equal (logged (g.origin, SL_OP_READ, 2).length_bytes, 2 * BLOCK);
  /* 1 KiB inside block 2: from its slot (0) */
  assert_int_equal (io (&g, SL_OP_READ, 0, 2 * BLOCK + 512, 1024), CACHE_NS);
  assert_int_equal (logged (g.cache, SL_OP_READ, 2).offset_bytes, 512);
  assert_int_equal (logged (g.cache, SL_OP_READ, 2).length_bytes, 1024);
  /* the second half of block 3 (slot 1) and the first of block 4 */
  assert_int_equal (io (&g, SL_OP_READ, 0, 3 * BLOCK + 2048, BLOCK), ORIGIN_NS);
  assert_int_equal (logged (g.cache, SL_OP_READ, 3).offset_bytes, BLOCK + 2048);
  assert_int_equal (logged (g.cache, SL_OP_READ, 3).length_bytes, 2048);
  assert_int_equal (logged (g.origin, SL_OP_READ, 3).offset_bytes, 4 * BLOCK);
  assert_int_equal (logged (g.origin, SL_OP_READ, 3).length_bytes, 2048);
  assert_int_equal (counter (&g, "read_hits_blocks"), 5);
  assert_int_equal (counter (&g, "read_misses_blocks"), 6);
  rig_free (&g);
}

/* Low 0 %: writeback empties the queue.  Blocks 0-49 are written one by
 * one (the last done at 5 ms); the 50th starts one copy of all 50 (buffer
 * read to 5.0 ms, origin write to 6.0 ms).  Block 2, written again at
 * 5.5 ms, stays dirty when the copy completes: back in the queue, read
 * from the buffer.  Writeback had emptied its queue and ended (as the
 * kernel's loop does when its list is empty), so block 2 goes with the
 * next episode: 49 new blocks (in the log's next slots, 50-98) reach the
 * high watermark again, and the pass, block 2 first (the oldest in the
 * queue), is written back: two reads (slot 2, slots 50-98), two copies. */
static void
test_wc_overwrite_during_writeback (void **state)
{
  (void) state;
  struct rig g = wc_rig (100, wc_config (50, 0, 4));
  for (uint64_t b = 0; b < 50; b++)
    write_block (&g, b);
  assert_int_equal (sl_engine_now_ns (g.e), 50 * CACHE_NS);
  assert_int_equal (counter (&g, "writeback_ios"), 1);
  run_until (&g, 5500000);
  assert_int_equal (write_block (&g, 2), CACHE_NS);
  assert_int_equal (counter (&g, "write_hits"), 1);
  drain (&g);
  assert_int_equal (sl_engine_now_ns (g.e), 6000000);
  assert_int_equal (ops (g.origin_dev, SL_OP_WRITE), 1);
  assert_int_equal (op_bytes (g.origin_dev, SL_OP_WRITE), 50 * BLOCK);
  assert_int_equal (counter (&g, "writeback_blocks"), 50);
  assert_int_equal (counter (&g, "dirty_blocks"), 1);        /* block 2 */
  assert_true (counter (&g, "fill_pct") == 1.0);
  assert_int_equal (read_block (&g, 2), CACHE_NS);            /* still from the buffer */
  for (uint64_t b = 100; b < 149; b++)
    write_block (&g, b);
  drain (&g);
  assert_int_equal (counter (&g, "dirty_blocks"), 0);
  assert_int_equal (counter (&g, "writeback_blocks"), 100);
  assert_int_equal (counter (&g, "writeback_ios"), 3);       /* 0-49, then 2 | 100-148 */
  assert_int_equal (counter (&g, "writeback_reads"), 3);
  assert_int_equal (ops (g.cache_dev, SL_OP_READ), 4);        /* with the read of block 2 */
  assert_int_equal (logged (g.cache, SL_OP_READ, 2).offset_bytes, 2 * BLOCK);
  assert_int_equal (logged (g.cache, SL_OP_READ, 2).length_bytes, BLOCK);
  assert_int_equal (logged (g.cache, SL_OP_READ, 3).offset_bytes, 50 * BLOCK);
  assert_int_equal (logged (g.cache, SL_OP_READ, 3).length_bytes, 49 * BLOCK);
  assert_int_equal (ops (g.origin_dev, SL_OP_WRITE), 3);
  assert_int_equal (logged (g.origin, SL_OP_WRITE, 1).offset_bytes, 2 * BLOCK);
  assert_int_equal (logged (g.origin, SL_OP_WRITE, 1).length_bytes, BLOCK);
  assert_int_equal (logged (g.origin, SL_OP_WRITE, 2).offset_bytes, 100 * BLOCK);
  assert_int_equal (logged (g.origin, SL_OP_WRITE, 2).length_bytes, 49 * BLOCK);
  assert_true (counter (&g, "fill_pct") == 0.0);
  assert_int_equal (read_block (&g, 2), ORIGIN_NS);           /* on the origin now */
  rig_free (&g);
}

/* FLUSH commits the buffer only; TRIM drops the blocks it covers whole
 * and goes to the origin; a write larger than the buffer goes around it. */
static void
test_wc_flush_trim_and_write_around (void **state)
{
  (void) state;
  struct rig g = wc_rig (100, wc_config (50, 45, 64));
  io (&g, SL_OP_WRITE, 0, 0, 4 * BLOCK);
  flush_layer (&g);
  assert_int_equal (ops (g.cache_dev, SL_OP_FLUSH), 1);
  assert_int_equal (ops (g.origin_dev, SL_OP_FLUSH), 0);
  /* blocks 1-2 whole, and half of block 3 (kept) */
  assert_int_equal (io (&g, SL_OP_TRIM, 0, BLOCK, 2 * BLOCK + 2048), ORIGIN_NS);
  assert_int_equal (ops (g.origin_dev, SL_OP_TRIM), 1);
  assert_int_equal (op_bytes (g.origin_dev, SL_OP_TRIM), 2 * BLOCK + 2048);
  assert_int_equal (counter (&g, "dirty_blocks"), 2);
  assert_true (counter (&g, "fill_pct") == 2.0);
  io (&g, SL_OP_READ, 0, 0, 4 * BLOCK);
  assert_int_equal (counter (&g, "read_hits_blocks"), 2);
  assert_int_equal (counter (&g, "read_misses_blocks"), 2);
  /* the trimmed slots are free again: 98 new blocks fit beside 0 and 3 */
  assert_int_equal (io (&g, SL_OP_WRITE, 0, 1000 * BLOCK, 98 * BLOCK), CACHE_NS);
  assert_int_equal (counter (&g, "room_waits"), 0);
  drain (&g);
  /* 101 blocks never fit in 100: to the origin, the buffer's copies dropped */
  uint64_t dirty = (uint64_t) counter (&g, "dirty_blocks");
  assert_int_equal (io (&g, SL_OP_WRITE, 0, 1000 * BLOCK, 101 * BLOCK), ORIGIN_NS);
  assert_int_equal (counter (&g, "writes_bypassed"), 1);
  assert_int_equal (logged (g.origin, SL_OP_WRITE, (unsigned) ops (g.origin_dev, SL_OP_WRITE) - 1)
                    .length_bytes, 101 * BLOCK);
  assert_true (counter (&g, "dirty_blocks") < (double) dirty);
  drain (&g);
  rig_free (&g);
}

/* The hash from origin block to slot against a plain map: random writes
 * and trims of single blocks (no writeback: high 100 %), then every block
 * read back, 64 at a time, hits exactly where the map says. */
static void
test_wc_hash_matches_map (void **state)
{
  (void) state;
  enum { SPAN = 16384, BUFFER = 4096 };     /* the 64 MiB origin's blocks */
  struct rig g = wc_rig (BUFFER, wc_config (100, 100, 64));
  uint8_t *in = calloc (SPAN, 1);
  assert_non_null (in);
  uint64_t x = 12345, dirty = 0;
  for (unsigned i = 0; i < 6000; i++) {
    x = x * UINT64_C (6364136223846793005) + UINT64_C (1442695040888963407);
    uint64_t b = (x >> 33) % SPAN;
    if (i % 3 == 2) {
      io (&g, SL_OP_TRIM, 0, b * BLOCK, BLOCK);
      dirty -= in[b];
      in[b] = 0;
    }
    else if (dirty < BUFFER - 1 || in[b]) {
      write_block (&g, b);
      dirty += !in[b];
      in[b] = 1;
    }
  }
  assert_int_equal (counter (&g, "dirty_blocks"), dirty);
  assert_int_equal (counter (&g, "room_waits"), 0);
  for (uint64_t b = 0; b < SPAN; b += 64) {
    double before = counter (&g, "read_hits_blocks");
    unsigned expect = 0;
    for (unsigned k = 0; k < 64; k++)
      expect += in[b + k];
    io (&g, SL_OP_READ, 0, b * BLOCK, 64 * BLOCK);
    assert_int_equal (counter (&g, "read_hits_blocks") - before, expect);
  }
  free (in);
  rig_free (&g);
}

/* Random traffic, eight requests at a time, with writeback running and
 * the buffer often full (writes go around it, overwrites of blocks being
 * written back wait): afterwards the buffer's own bookkeeping agrees with
 * what reads find (a hit for every dirty block and no other), and with
 * its fill.  Writeback starts only when the buffer is full (high 100 %):
 * a pass copies up to 64 blocks at once, which would otherwise keep it
 * from filling; and without the pause after writes around, which would
 * keep it from running while they go on. */
static void
test_wc_random_traffic_consistent (void **state)
{
  (void) state;
  enum { SPAN = 16384, BUFFER = 256, BURST = 8 };
  struct cl_writecache_config config = wc_config (100, 20, 2);
  config.pause_writeback_ns = 0;
  struct rig g = wc_rig (BUFFER, config);
  uint64_t x = 777;
  for (unsigned round = 0; round < 400; round++) {
    struct req q[BURST];
    for (unsigned i = 0; i < BURST; i++) {
      x = x * UINT64_C (6364136223846793005) + UINT64_C (1442695040888963407);
      uint64_t b = (x >> 33) % (SPAN - 8), n = 1 + (x >> 20) % 8;
      if (round % 4 == 0 && i < 2)
        b %= 64;                        /* a hot spot: overwrites, also during writeback */
      enum sl_op op = (x >> 16) % 10 < 6 ? SL_OP_WRITE : (x >> 16) % 10 < 9 ? SL_OP_READ
        : SL_OP_TRIM;
      submit (&g, &q[i], op, 0, b * BLOCK, n * BLOCK);
    }
    for (unsigned i = 0; i < BURST; i++)
      while (!q[i].done && sl_engine_run_next (g.e))
        ;
  }
  drain (&g);
  uint64_t dirty = (uint64_t) counter (&g, "dirty_blocks");
  assert_true (dirty <= BUFFER);
  assert_true (counter (&g, "writeback_blocks") > 0);
  assert_true (counter (&g, "writes_around") > 0);
  assert_true (counter (&g, "writes_around_blocks") >= counter (&g, "writes_around"));
  assert_true (counter (&g, "room_waits") > 0);     /* hot-spot blocks caught in writeback */
  double filled = counter (&g, "fill_pct") * BUFFER / 100.0;   /* nothing in flight */
  assert_true (filled > (double) dirty - 0.02 && filled < (double) dirty + 0.02);
  double before = counter (&g, "read_hits_blocks");
  for (uint64_t b = 0; b < SPAN; b += 256)
    io (&g, SL_OP_READ, 0, b * BLOCK, 256 * BLOCK);
  assert_int_equal (counter (&g, "read_hits_blocks") - before, dirty);
  rig_free (&g);
}

/* A buffer of 30 M blocks (a 120 GB write-buffer region) costs what its
 * used blocks do: under 1 MiB before any write (no per-block state yet),
 * then a chunk of slot words (65536 slots, 8 bytes each) with the first
 * block, a second with the 65537th, and the hash grown (from 1024
 * buckets) to hold the dirty blocks between 3/8 and 4/5 full.  The origin
 * is 64 TiB: block numbers past 32 bits go through the slot word. */
static void
test_wc_large_buffer (void **state)
{
  (void) state;
  struct rig g = { 0 };
  char err[256] = "";
  uint64_t blocks = 30000000, chunk_bytes = 65536 * 8;
  rig_devices (&g, 64 * TIB, blocks * BLOCK);
  uint64_t before = g.c->memory_bytes;
  struct cl_writecache_config config;
  cl_writecache_defaults (&config);
  g.layer = cl_writecache_new (g.c, "n1", "n1/diskgroup", g.origin, g.cache, &config, err,
                               sizeof err);
  rig_start (&g, before);
  assert_int_equal (counter (&g, "buffer_blocks"), blocks);
  assert_true (g.layer_memory_bytes < MIB);
  uint64_t last = 64 * TIB / BLOCK - 1;                     /* 2^34 - 1 */
  assert_int_equal (read_block (&g, last), ORIGIN_NS);      /* the cluster's cl_ios, first */
  uint64_t empty = g.c->memory_bytes;
  assert_int_equal (write_block (&g, last), CACHE_NS);
  assert_int_equal (read_block (&g, last), CACHE_NS);
  assert_int_equal (read_block (&g, last - (UINT64_C (1) << 32)), ORIGIN_NS);
  assert_int_equal (counter (&g, "dirty_blocks"), 1);
  uint64_t one = g.c->memory_bytes;
  /* (and the cache device's first block of model requests, 8 KiB) */
  assert_true (one >= empty + chunk_bytes && one < empty + chunk_bytes + 16384);
  /* 100000 more blocks (a 400 MB write): two chunks, the hash grown */
  assert_int_equal (io (&g, SL_OP_WRITE, 0, 0, 100000 * BLOCK), CACHE_NS);
  assert_int_equal (counter (&g, "dirty_blocks"), 100001);
  assert_int_equal (read_block (&g, last), CACHE_NS);
  uint64_t more = g.c->memory_bytes - empty - 2 * chunk_bytes;
  assert_true (more >= 100001 * 4 * 5 / 4 - 1024 * 4);
  assert_true (more < 100001 * 4 * 8 / 3 + 16384);
  rig_free (&g);
}

/* The log's chunks of slot state come and go with it: writeback that
 * empties the buffer releases them, and new blocks take the slots after
 * the last ones taken, wrapping at the buffer's end (the kernel's
 * current_free), not the slots just freed. */
static void
test_wc_log_chunks_released (void **state)
{
  (void) state;
  struct rig g = { 0 };
  char err[256] = "";
  uint64_t blocks = 2 * 65536 + 1000, chunk_bytes = 65536 * 8;
  rig_devices (&g, 4 * GIB, blocks * BLOCK);
  uint64_t before = g.c->memory_bytes;
  struct cl_writecache_config config = wc_config (50, 0, 64);
  g.layer = cl_writecache_new (g.c, "n1", "n1/diskgroup", g.origin, g.cache, &config, err,
                               sizeof err);
  if (g.layer == NULL)
    fail_msg ("writecache refused: %s", err);
  rig_start (&g, before);
  struct req first;
  submit (&g, &first, SL_OP_WRITE, 0, 0, 70000 * BLOCK);   /* slots 0-69999: two chunks */
  uint64_t full = g.c->memory_bytes;
  drain (&g);
  assert_int_equal (counter (&g, "dirty_blocks"), 0);       /* low 0 %: all written back */
  assert_int_equal (counter (&g, "writeback_blocks"), 70000);
  /* passes of 64 blocks, each one read of consecutive slots, one copy */
  assert_int_equal (counter (&g, "writeback_reads"), (70000 + 63) / 64);
  assert_int_equal (counter (&g, "writeback_ios"), (70000 + 63) / 64);
  uint64_t after = g.c->memory_bytes;
  assert_true (after + 2 * chunk_bytes <= full + 65536);   /* both chunks released */
  write_block (&g, 200000);
  assert_int_equal (logged (g.cache, SL_OP_WRITE, 1).offset_bytes, 70000 * BLOCK);
  io (&g, SL_OP_WRITE, 0, 300000 * BLOCK, (blocks - 70001) * BLOCK);   /* to the end */
  assert_int_equal (logged (g.cache, SL_OP_WRITE, 2).offset_bytes, 70001 * BLOCK);
  write_block (&g, 500000);
  assert_int_equal (logged (g.cache, SL_OP_WRITE, 3).offset_bytes, 0);   /* wrapped */
  assert_int_equal (counter (&g, "dirty_blocks"), blocks - 70000 + 1);
  rig_free (&g);
}

/* The slot word holds the origin block in the bits the buffer's slot
 * numbers leave: a buffer of 2^30 - 1 blocks (30 bits of link) leaves 31,
 * 8 TiB of origin at 4 KiB; a larger origin is refused by name and size,
 * one of exactly 2^31 blocks is not. */
static void
test_wc_origin_beyond_the_slot_word_refused (void **state)
{
  (void) state;
  struct cl_writecache_config config;
  cl_writecache_defaults (&config);
  uint64_t buffer_bytes = ((UINT64_C (1) << 30) - 1) * BLOCK;
  for (int fits = 0; fits < 2; fits++) {
    struct rig g = { 0 };
    char err[256] = "";
    rig_devices (&g, fits ? 8 * TIB : 8 * TIB + BLOCK, buffer_bytes);
    struct cl_target *wc = cl_writecache_new (g.c, "n1", "n1/diskgroup", g.origin, g.cache,
                                              &config, err, sizeof err);
    if (fits)
      assert_non_null (wc);
    else {
      assert_null (wc);
      assert_non_null (strstr (err, "n1/diskgroup: an origin of 2147483649 blocks (8192 GiB)"));
      assert_non_null (strstr (err, "below 2^31 (8192 GiB)"));
    }
    cl_cluster_free (g.c);
  }
}

static void
test_wc_config_refused (void **state)
{
  (void) state;
  struct rig g = { 0 };
  char err[256] = "";
  rig_devices (&g, ORIGIN_BYTES, 100 * BLOCK);
  struct cl_writecache_config config = wc_config (40, 45, 1);
  assert_null (cl_writecache_new (g.c, "n1", "wc", g.origin, g.cache, &config, err, sizeof err));
  assert_non_null (strstr (err, "watermarks"));
  config = wc_config (50, 45, 1);
  config.block_bytes = 1000;
  assert_null (cl_writecache_new (g.c, "n1", "wc", g.origin, g.cache, &config, err, sizeof err));
  assert_non_null (strstr (err, "block size"));
  config.block_bytes = 1 * MIB;
  assert_null (cl_writecache_new (g.c, "n1", "wc", g.origin, g.cache, &config, err, sizeof err));
  cl_cluster_free (g.c);
}

/* ========================================================= read cache == */

static uint64_t
read_chunk (struct rig *g, uint64_t chunk)
{
  return io (g, SL_OP_READ, 0, chunk * CHUNK, BLOCK);
}

/* Whether a 4 KiB read of chunk came from the cache. */
static bool
hit (struct rig *g, uint64_t chunk)
{
  uint64_t before = ops (g->cache_dev, SL_OP_READ);
  read_chunk (g, chunk);
  return ops (g->cache_dev, SL_OP_READ) == before + 1;
}

/* Promotes chunk: two misses, then the copy completes. */
static void
promote (struct rig *g, uint64_t chunk)
{
  read_chunk (g, chunk);
  read_chunk (g, chunk);
  drain (g);
}

/* The first miss of a chunk does not promote it, the second does, in the
 * background: the read that triggered it completes on its own origin
 * read (1 ms); the copy (a 64 KiB origin read, a cache write) ends
 * 100 µs later.  Then reads of the chunk come from the cache at slot
 * 0 + their offset in it. */
static void
test_rc_hits_misses_and_promotion (void **state)
{
  (void) state;
  struct rig g = rc_rig (8, rc_config (1 * MIB));
  assert_int_equal (counter (&g, "slots"), 8);
  assert_int_equal (counter (&g, "chunk_bytes"), CHUNK);
  assert_int_equal (read_chunk (&g, 3), ORIGIN_NS);
  drain (&g);
  assert_int_equal (counter (&g, "promotions"), 0);
  assert_int_equal (ops (g.origin_dev, SL_OP_READ), 1);
  assert_int_equal (ops (g.cache_dev, SL_OP_WRITE), 0);
  assert_int_equal (read_chunk (&g, 3), ORIGIN_NS);
  assert_int_equal (counter (&g, "promotions"), 1);
  assert_int_equal (counter (&g, "cached_chunks"), 0);       /* still being copied */
  drain (&g);
  assert_int_equal (counter (&g, "cached_chunks"), 1);
  assert_int_equal (ops (g.origin_dev, SL_OP_READ), 3);
  assert_int_equal (op_bytes (g.origin_dev, SL_OP_READ), 2 * BLOCK + CHUNK);
  assert_int_equal (logged (g.origin, SL_OP_READ, 2).offset_bytes, 3 * CHUNK);
  assert_int_equal (ops (g.cache_dev, SL_OP_WRITE), 1);
  assert_int_equal (logged (g.cache, SL_OP_WRITE, 0).offset_bytes, 0);
  assert_int_equal (logged (g.cache, SL_OP_WRITE, 0).length_bytes, CHUNK);
  assert_int_equal (io (&g, SL_OP_READ, 0, 3 * CHUNK + 8192, BLOCK), CACHE_NS);
  assert_int_equal (logged (g.cache, SL_OP_READ, 0).offset_bytes, 8192);
  assert_int_equal (counter (&g, "read_hits"), 1);
  assert_int_equal (counter (&g, "read_misses"), 2);
  assert_true (counter (&g, "hit_pct") == 33.33);
  /* across chunks 3 and 4: a hit and a miss, split at the boundary */
  assert_int_equal (io (&g, SL_OP_READ, 0, 4 * CHUNK - BLOCK, 2 * BLOCK), ORIGIN_NS);
  assert_int_equal (counter (&g, "read_hits"), 2);
  assert_int_equal (counter (&g, "read_misses"), 3);
  assert_int_equal (logged (g.origin, SL_OP_READ, 3).offset_bytes, 4 * CHUNK);
  assert_int_equal (logged (g.origin, SL_OP_READ, 3).length_bytes, BLOCK);
  drain (&g);
  assert_int_equal (counter (&g, "promotions"), 1);          /* chunk 4: first miss */
  rig_free (&g);
}

/* Threshold 256 KiB: four 64 KiB copies at a time.  Ten chunks missed
 * once, then all ten again at the same instant: four promotions start,
 * six are refused.  A refused chunk is promoted at its next miss. */
static void
test_rc_promotion_threshold (void **state)
{
  (void) state;
  struct rig g = rc_rig (16, rc_config (256 * KIB));
  for (uint64_t chunk = 0; chunk < 10; chunk++)
    read_chunk (&g, chunk);
  struct req q[10];
  for (uint64_t chunk = 0; chunk < 10; chunk++)
    submit (&g, &q[chunk], SL_OP_READ, 0, chunk * CHUNK, BLOCK);
  assert_int_equal (counter (&g, "promotions"), 4);
  assert_int_equal (counter (&g, "promotions_skipped"), 6);
  drain (&g);
  assert_int_equal (counter (&g, "cached_chunks"), 4);
  for (uint64_t chunk = 0; chunk < 10; chunk++)
    assert_true (hit (&g, chunk) == (chunk < 4));
  assert_int_equal (counter (&g, "promotions"), 10);
  assert_int_equal (counter (&g, "promotions_skipped"), 6);
  drain (&g);
  assert_int_equal (counter (&g, "cached_chunks"), 10);
  assert_int_equal (ops (g.cache_dev, SL_OP_WRITE), 10);
  rig_free (&g);
}

/* Four slots, chunks 0-3 in slots 0-3 (unreferenced), then hits on 0 and
 * 2.  Promoting chunk 10: the hand clears slot 0's bit and evicts chunk
 * 1 (slot 1).  Promoting chunk 11: the hand goes on from slot 2, clears
 * its bit and evicts chunk 3 (slot 3). */
static void
test_rc_clock_eviction (void **state)
{
  (void) state;
  struct rig g = rc_rig (4, rc_config (1 * MIB));
  for (uint64_t chunk = 0; chunk < 4; chunk++)
    promote (&g, chunk);
  assert_int_equal (counter (&g, "cached_chunks"), 4);
  assert_true (hit (&g, 0));
  assert_true (hit (&g, 2));
  promote (&g, 10);
  assert_int_equal (counter (&g, "evictions"), 1);
  assert_int_equal (counter (&g, "cached_chunks"), 4);
  assert_int_equal (logged (g.cache, SL_OP_WRITE, 4).offset_bytes, 1 * CHUNK);
  assert_false (hit (&g, 1));
  assert_true (hit (&g, 10));
  promote (&g, 11);
  assert_int_equal (counter (&g, "evictions"), 2);
  assert_int_equal (logged (g.cache, SL_OP_WRITE, 5).offset_bytes, 3 * CHUNK);
  assert_false (hit (&g, 3));
  assert_true (hit (&g, 0));
  assert_true (hit (&g, 2));
  assert_true (hit (&g, 10));
  assert_true (hit (&g, 11));
  rig_free (&g);
}

/* Writethrough: a write always goes to the origin, to the cache too when
 * its chunk is cached; a write across chunks is split.  A write to a
 * chunk being promoted cancels the promotion.  FLUSH goes to both; TRIM
 * to the origin, dropping the chunks it covers whole. */
static void
test_rc_writethrough (void **state)
{
  (void) state;
  struct rig g = rc_rig (8, rc_config (1 * MIB));
  promote (&g, 5);                                           /* slot 0 */
  assert_int_equal (io (&g, SL_OP_WRITE, 0, 5 * CHUNK + BLOCK, BLOCK), ORIGIN_NS);
  assert_int_equal (ops (g.origin_dev, SL_OP_WRITE), 1);
  assert_int_equal (ops (g.cache_dev, SL_OP_WRITE), 2);      /* the promotion's and this */
  assert_int_equal (logged (g.cache, SL_OP_WRITE, 1).offset_bytes, BLOCK);
  assert_int_equal (counter (&g, "write_hits"), 1);
  io (&g, SL_OP_WRITE, 0, 6 * CHUNK, BLOCK);
  assert_int_equal (ops (g.origin_dev, SL_OP_WRITE), 2);
  assert_int_equal (ops (g.cache_dev, SL_OP_WRITE), 2);
  io (&g, SL_OP_WRITE, SL_REQUEST_FUA, 5 * CHUNK + CHUNK / 2, CHUNK);
  assert_int_equal (ops (g.origin_dev, SL_OP_WRITE), 4);
  assert_int_equal (ops (g.cache_dev, SL_OP_WRITE), 3);
  assert_int_equal (logged (g.cache, SL_OP_WRITE, 2).offset_bytes, CHUNK / 2);
  assert_int_equal (logged (g.cache, SL_OP_WRITE, 2).length_bytes, CHUNK / 2);
  assert_int_equal (logged (g.cache, SL_OP_WRITE, 2).flags, SL_REQUEST_FUA);
  assert_int_equal (counter (&g, "write_hits"), 2);
  /* chunk 7: its copy's origin read ends with the triggering read; the
   * write comes while the copy is written to the cache */
  read_chunk (&g, 7);
  read_chunk (&g, 7);
  io (&g, SL_OP_WRITE, 0, 7 * CHUNK, BLOCK);
  drain (&g);
  assert_int_equal (counter (&g, "promotions"), 2);
  assert_int_equal (counter (&g, "promotions_cancelled"), 1);
  assert_int_equal (counter (&g, "cached_chunks"), 1);
  assert_false (hit (&g, 7));
  flush_layer (&g);
  assert_int_equal (ops (g.origin_dev, SL_OP_FLUSH), 1);
  assert_int_equal (ops (g.cache_dev, SL_OP_FLUSH), 1);
  io (&g, SL_OP_TRIM, 0, 5 * CHUNK + BLOCK, CHUNK);          /* no chunk whole */
  assert_int_equal (counter (&g, "cached_chunks"), 1);
  io (&g, SL_OP_TRIM, 0, 4 * CHUNK, 3 * CHUNK);
  assert_int_equal (counter (&g, "cached_chunks"), 0);
  assert_int_equal (ops (g.origin_dev, SL_OP_TRIM), 2);
  assert_false (hit (&g, 5));
  rig_free (&g);
}

/* Random traffic over a hot set, eight requests at a time: promotions,
 * evictions, refusals, cancellations and trims all happen.  Afterwards a
 * write to every chunk finds exactly the cached ones (write hits =
 * cached chunks), and no more are cached than there are slots. */
static void
test_rc_random_traffic_consistent (void **state)
{
  (void) state;
  enum { SLOTS = 64, BURST = 8 };
  struct rig g = rc_rig (SLOTS, rc_config (256 * KIB));
  uint64_t x = 4242;
  for (unsigned round = 0; round < 600; round++) {
    struct req q[BURST];
    for (unsigned i = 0; i < BURST; i++) {
      x = x * UINT64_C (6364136223846793005) + UINT64_C (1442695040888963407);
      uint64_t chunk = (x >> 40) % 10 < 8 ? (x >> 20) % 160 : (x >> 20) % 1023;
      uint64_t offset = chunk * CHUNK + ((x >> 8) % 16) * BLOCK;
      unsigned kind = (unsigned) ((x >> 30) % 20);
      if (kind < 14)
        submit (&g, &q[i], SL_OP_READ, 0, offset, BLOCK * (1 + (x >> 12) % 32));
      else if (kind < 19)
        submit (&g, &q[i], SL_OP_WRITE, 0, offset, BLOCK * (1 + (x >> 12) % 8));
      else
        submit (&g, &q[i], SL_OP_TRIM, 0, chunk * CHUNK, CHUNK * (1 + (x >> 12) % 3));
    }
    for (unsigned i = 0; i < BURST; i++)
      while (!q[i].done && sl_engine_run_next (g.e))
        ;
  }
  drain (&g);
  assert_true (counter (&g, "evictions") > 0);
  assert_true (counter (&g, "promotions_skipped") > 0);
  assert_true (counter (&g, "promotions_cancelled") > 0);
  assert_true (counter (&g, "read_hits") > 0);
  uint64_t cached = (uint64_t) counter (&g, "cached_chunks");
  assert_true (cached > 0 && cached <= SLOTS);
  double before = counter (&g, "write_hits");
  for (uint64_t chunk = 0; chunk < 1024; chunk++)
    io (&g, SL_OP_WRITE, 0, chunk * CHUNK, BLOCK);
  assert_int_equal (counter (&g, "write_hits") - before, cached);
  rig_free (&g);
}

/* cached chunks of a fresh cache after warm(offset, length); the hits of
 * one read in every chunk go to hits[]. */
static unsigned
warmed (uint64_t slots, uint64_t offset, uint64_t length, bool hits[1024])
{
  struct rig g = rc_rig (slots, rc_config (1 * MIB));
  sl_cluster_warm (g.c, offset, length, SL_WARM_READS);
  assert_int_equal (sl_cluster_warm_finish (g.c, 0, NULL, 0), 0);
  assert_int_equal (recorder_of (g.origin)->warms, 1);       /* passed on */
  assert_int_equal (recorder_of (g.origin)->warm_offset_bytes, offset);
  assert_int_equal (recorder_of (g.origin)->warm_length_bytes, length);
  unsigned cached = (unsigned) counter (&g, "cached_chunks");
  for (uint64_t chunk = 0; chunk < 1024; chunk++)
    hits[chunk] = hit (&g, chunk);
  rig_free (&g);
  return cached;
}

/* A mirrored volume's warm region reaches each leg as it is: a mirror's
 * one "chunk" is the whole leg, and rounding to it warmed every byte of
 * the volume (a 1 GiB working set of an 8 GiB volume filled the read
 * caches with 8 GiB). */
static void
test_mirror_warms_the_region_on_every_leg (void **state)
{
  (void) state;
  struct rig g = { 0 };
  char err[256] = "";
  rig_devices (&g, 64 * MIB, 64 * MIB);
  struct cl_target *legs[2] = { g.origin, g.cache };
  struct cl_target *mirror = cl_volume_mirror_new (g.c, "n1", "n1/v", legs, 2, true, err,
                                                   sizeof err);
  assert_non_null (mirror);
  cl_warm (mirror, 4 * MIB, 1 * MIB);
  for (unsigned i = 0; i < 2; i++) {
    assert_int_equal (recorder_of (legs[i])->warms, 1);
    assert_int_equal (recorder_of (legs[i])->warm_offset_bytes, 4 * MIB);
    assert_int_equal (recorder_of (legs[i])->warm_length_bytes, 1 * MIB);
  }
  cl_cluster_free (g.c);
}

/* A region that fits is cached whole; a larger one gets each chunk with
 * the chance free slots / chunks, the same chunks every time. */
static void
test_rc_warm (void **state)
{
  (void) state;
  bool a[1024], b[1024];
  assert_int_equal (warmed (100, 10 * CHUNK, 50 * CHUNK, a), 50);
  for (unsigned chunk = 0; chunk < 1024; chunk++)
    assert_true (a[chunk] == (chunk >= 10 && chunk < 60));
  unsigned cached = warmed (100, 0, ORIGIN_BYTES, a);
  assert_true (cached >= 85 && cached <= 100);
  assert_int_equal (warmed (100, 0, ORIGIN_BYTES, b), cached);
  unsigned hits = 0;
  for (unsigned chunk = 0; chunk < 1024; chunk++) {
    assert_true (a[chunk] == b[chunk]);
    hits += a[chunk];
  }
  assert_int_equal (hits, cached);
  unsigned late = 0;                   /* spread over the region, not its start */
  for (unsigned chunk = 512; chunk < 1024; chunk++)
    late += a[chunk];
  assert_true (late >= cached / 3);
}

/* Two regions that overflow the cache together, the first alone too: each
 * gets its share (the first given does not take every slot), and the
 * cache is full. */
static void
test_rc_warm_regions_share_the_cache (void **state)
{
  (void) state;
  struct rig g = rc_rig (100, rc_config (1 * MIB));
  sl_cluster_warm (g.c, 0, 200 * CHUNK, SL_WARM_READS);
  sl_cluster_warm (g.c, 512 * CHUNK, 200 * CHUNK, SL_WARM_READS);
  assert_int_equal (sl_cluster_warm_finish (g.c, 0, NULL, 0), 0);
  unsigned first = 0, second = 0;
  for (uint64_t chunk = 0; chunk < 200; chunk++)
    first += hit (&g, chunk);
  for (uint64_t chunk = 512; chunk < 712; chunk++)
    second += hit (&g, chunk);
  assert_true (first + second >= 85 && first + second <= 100);
  assert_true (first >= 30 && second >= 30);
  rig_free (&g);
}

/* A write load's steady state: the buffer one block short of its high
 * watermark, dirty with blocks of every written region, scattered (the
 * first writeback pass is not one sequential run), and the next write
 * starts writeback. */
static void
test_wc_warm_under_writes_fills_to_the_watermark (void **state)
{
  (void) state;
  struct rig g = wc_rig (100, wc_config (50, 45, 64));
  sl_cluster_warm (g.c, 0, 400 * BLOCK, SL_WARM_RANDOM_WRITES);
  sl_cluster_warm (g.c, 2000 * BLOCK, 400 * BLOCK, SL_WARM_RANDOM_WRITES);
  assert_int_equal (sl_cluster_warm_finish (g.c, 0, NULL, 0), 0);
  assert_int_equal (counter (&g, "dirty_blocks"), 49);
  assert_int_equal (counter (&g, "warmed_blocks"), 49);
  unsigned low = 0, high = 0;
  for (uint64_t block = 0; block < 400; block++)
    low += read_block (&g, block) < 1000000;                    /* buffer: 100 us */
  for (uint64_t block = 2000; block < 2400; block++)
    high += read_block (&g, block) < 1000000;
  assert_int_equal (low + high, 49);
  assert_true (low >= 15 && high >= 15);
  assert_int_equal (ops (g.origin, SL_OP_WRITE), 0);
  write_block (&g, 3000);                                      /* the 50th: writeback */
  while (sl_engine_run_next (g.e))
    ;
  assert_true (ops (g.origin, SL_OP_WRITE) >= 5);
  assert_true (counter (&g, "dirty_blocks") < 45);
  rig_free (&g);

  g = wc_rig (100, wc_config (50, 45, 64));                   /* a region that fits */
  sl_cluster_warm (g.c, 0, 20 * BLOCK, SL_WARM_RANDOM_WRITES);
  assert_int_equal (sl_cluster_warm_finish (g.c, 0, NULL, 0), 0);
  assert_int_equal (counter (&g, "dirty_blocks"), 20);
  rig_free (&g);
}

/* Blocks of [first, end) that a read finds in the buffer (100 us, not the
 * origin's 1 ms). */
static unsigned
buffered_blocks (struct rig *g, uint64_t first, uint64_t end)
{
  unsigned held = 0;
  for (uint64_t block = first; block < end; block++)
    held += read_block (g, block) < 1000000;
  return held;
}

/* A read load alone holds what the regions' fill when they were made
 * left: the end of it, one block short of the low watermark, where that
 * fill's writeback stopped.  Beside a writer, the writer's steady state. */
static void
test_wc_warm_under_reads_holds_the_fill_end (void **state)
{
  (void) state;
  struct rig g = wc_rig (100, wc_config (50, 45, 64));
  sl_cluster_warm (g.c, 0, 500 * BLOCK, SL_WARM_READS);
  sl_cluster_warm (g.c, 500 * BLOCK, 500 * BLOCK, SL_WARM_READS);  /* the next volume */
  assert_int_equal (sl_cluster_warm_finish (g.c, 0, NULL, 0), 0);
  assert_int_equal (counter (&g, "dirty_blocks"), 44);
  assert_int_equal (counter (&g, "warmed_sequential_blocks"), 44);
  assert_int_equal (buffered_blocks (&g, 956, 1000), 44);
  assert_int_equal (buffered_blocks (&g, 0, 956), 0);
  assert_int_equal (ops (g.origin, SL_OP_WRITE), 0);            /* below high: no writeback */
  /* written to after all: the fill's end is the oldest, written back first */
  for (uint64_t block = 2000; block < 2006; block++)
    write_block (&g, block);
  drain (&g);
  assert_int_equal (counter (&g, "writeback_blocks"), 6);
  assert_int_equal (buffered_blocks (&g, 956, 962), 0);
  assert_int_equal (buffered_blocks (&g, 962, 1000), 38);
  assert_int_equal (buffered_blocks (&g, 2000, 2006), 6);
  rig_free (&g);

  g = wc_rig (100, wc_config (50, 45, 64));
  sl_cluster_warm (g.c, 0, 1000 * BLOCK, SL_WARM_READS);
  sl_cluster_warm (g.c, 2000 * BLOCK, 400 * BLOCK, SL_WARM_RANDOM_WRITES);
  assert_int_equal (sl_cluster_warm_finish (g.c, 0, NULL, 0), 0);
  assert_int_equal (counter (&g, "dirty_blocks"), 49);
  assert_int_equal (buffered_blocks (&g, 2000, 2400), 49);
  assert_int_equal (buffered_blocks (&g, 0, 1000), 0);
  rig_free (&g);
}

/* The disk group's stack, a write buffer over a read cache: under a read
 * load the buffer holds the fill's end, and the read cache keeps its slots
 * for the rest, so every read is served by one or the other (profile-
 * hybrid's lab after `up`: dm-cache held 391 of its 448 chunks).  Taken
 * alike, the chunks would outnumber the slots and some reads would miss. */
static void
test_a_read_cache_under_a_buffer_leaves_it_the_fill_end (void **state)
{
  (void) state;
  char err[256] = "";
  struct rig g = { 0 };
  const uint64_t slots = 80, buffer_blocks = 800, region_chunks = 100;
  rig_devices (&g, ORIGIN_BYTES, slots * CHUNK + buffer_blocks * BLOCK);
  struct cl_target *rc_region = cl_slice_new (g.c, "n1", "n1/rc-region", g.cache, 0,
                                              slots * CHUNK, false, err, sizeof err);
  struct cl_target *wc_region = cl_slice_new (g.c, "n1", "n1/wc-region", g.cache, slots * CHUNK,
                                              buffer_blocks * BLOCK, false, err, sizeof err);
  assert_non_null (rc_region);
  assert_non_null (wc_region);
  struct cl_readcache_config rc = rc_config (1 * MIB);
  struct cl_target *read_cache = cl_readcache_new (g.c, "n1", "n1/readcache", g.origin,
                                                   rc_region, &rc, err, sizeof err);
  assert_non_null (read_cache);
  struct cl_writecache_config wc = wc_config (50, 45, 64);
  uint64_t before = g.c->memory_bytes;
  g.layer = cl_writecache_new (g.c, "n1", "n1/diskgroup", read_cache, wc_region, &wc, err,
                               sizeof err);
  assert_non_null (g.layer);
  rig_start (&g, before);
  sl_cluster_warm (g.c, 0, region_chunks * CHUNK, SL_WARM_READS);
  assert_int_equal (sl_cluster_warm_finish (g.c, 0, NULL, 0), 0);
  /* 359 blocks held: the region's last 22 chunks whole, and part of one */
  assert_int_equal (counter (&g, "dirty_blocks"), 359);
  uint64_t blocks = region_chunks * CHUNK / BLOCK;
  for (uint64_t block = 0; block < blocks; block++)
    read_block (&g, block);
  assert_int_equal (ops (g.origin, SL_OP_READ), 0);
  assert_int_equal (counter (&g, "read_hits_blocks"), 359);
  rig_free (&g);
}

/* A sequential writer about to start again at its region's start wrote
 * the region's end last: the buffer holds each region's end, its share,
 * in consecutive slots oldest first, so the writer's next write is a new
 * block and writeback copies the oldest run in one I/O. */
static void
test_wc_warm_under_sequential_writes_holds_the_ends (void **state)
{
  (void) state;
  struct rig g = wc_rig (100, wc_config (50, 45, 64));
  sl_cluster_warm (g.c, 0, 400 * BLOCK, SL_WARM_SEQUENTIAL_WRITES);
  sl_cluster_warm (g.c, 1000 * BLOCK, 400 * BLOCK, SL_WARM_SEQUENTIAL_WRITES);
  assert_int_equal (sl_cluster_warm_finish (g.c, 0, NULL, 0), 0);
  assert_int_equal (counter (&g, "dirty_blocks"), 49);
  assert_int_equal (counter (&g, "warmed_sequential_blocks"), 49);
  assert_int_equal (buffered_blocks (&g, 376, 400), 24);      /* 49 x 400 / 800 */
  assert_int_equal (buffered_blocks (&g, 1375, 1400), 25);    /* the rest */
  assert_int_equal (buffered_blocks (&g, 0, 376) + buffered_blocks (&g, 1000, 1375), 0);
  write_block (&g, 0);                                         /* new: the 50th */
  assert_int_equal (counter (&g, "write_hits"), 0);
  drain (&g);
  /* the 6 oldest (down to the low watermark) are 376..381: one copy */
  assert_int_equal (counter (&g, "writeback_ios"), 1);
  assert_int_equal (counter (&g, "writeback_blocks"), 6);
  assert_int_equal (ops (g.origin, SL_OP_WRITE), 1);
  assert_int_equal (op_bytes (g.origin, SL_OP_WRITE), 6 * BLOCK);
  assert_int_equal (buffered_blocks (&g, 376, 382), 0);
  rig_free (&g);
}

/* Random and sequential writers share the buffer by the size of their
 * regions; a block two regions both offer is placed once. */
static void
test_wc_warm_mixed_regions_place_each_block_once (void **state)
{
  (void) state;
  struct rig g = wc_rig (100, wc_config (50, 45, 64));
  sl_cluster_warm (g.c, 0, 400 * BLOCK, SL_WARM_SEQUENTIAL_WRITES);
  sl_cluster_warm (g.c, 2000 * BLOCK, 400 * BLOCK, SL_WARM_RANDOM_WRITES);
  assert_int_equal (sl_cluster_warm_finish (g.c, 0, NULL, 0), 0);
  assert_int_equal (counter (&g, "dirty_blocks"), 49);
  assert_int_equal (counter (&g, "warmed_sequential_blocks"), 24);
  assert_int_equal (buffered_blocks (&g, 376, 400), 24);
  unsigned scattered = buffered_blocks (&g, 2000, 2400);
  assert_int_equal (scattered, 25);
  assert_true (buffered_blocks (&g, 2200, 2400) >= 5);         /* drawn from all of it */
  rig_free (&g);

  g = wc_rig (100, wc_config (50, 45, 64));                   /* the same blocks twice */
  sl_cluster_warm (g.c, 0, 400 * BLOCK, SL_WARM_SEQUENTIAL_WRITES);
  sl_cluster_warm (g.c, 0, 400 * BLOCK, SL_WARM_RANDOM_WRITES);
  assert_int_equal (sl_cluster_warm_finish (g.c, 0, NULL, 0), 0);
  assert_int_equal (counter (&g, "dirty_blocks"), 49);
  assert_int_equal (counter (&g, "warmed_blocks"), 49);
  assert_int_equal (buffered_blocks (&g, 0, 400), 49);
  rig_free (&g);
}

/* A warm state is refused before it is built when the memory it needs
 * (the dirty blocks' state chunks and the hash reserved for them) is over
 * the budget, saying how much; within it, it takes what was announced
 * (the old hash's buckets freed after the new one is full). */
static void
test_wc_warm_memory_is_checked_first (void **state)
{
  (void) state;
  const uint64_t buffer_blocks = 20000, hash_min_bytes = 1024 * sizeof (uint32_t);
  struct rig g = wc_rig (buffer_blocks, wc_config (50, 45, 64));
  sl_cluster_warm (g.c, 0, ORIGIN_BYTES, SL_WARM_RANDOM_WRITES);      /* 16384 blocks */
  /* 9999 blocks (one short of 50 %): a 20000-slot chunk, 9999 x 4/3 + 1 buckets */
  uint64_t need = buffer_blocks * 8 + 13333 * sizeof (uint32_t);
  char err[512] = "";
  assert_int_equal (sl_cluster_warm_finish (g.c, need - 1, err, sizeof err), -1);
  assert_non_null (strstr (err, "--warm: the write buffers' and SSDs' steady state needs 1 MiB more"));
  assert_non_null (strstr (err, "smaller working set"));
  assert_int_equal (counter (&g, "dirty_blocks"), 0);                /* nothing built */
  uint64_t before = g.c->memory_bytes;
  assert_int_equal (sl_cluster_warm_finish (g.c, need, err, sizeof err), 0);
  assert_int_equal (counter (&g, "dirty_blocks"), 9999);
  assert_int_equal (g.c->memory_bytes - before, need - hash_min_bytes);
  rig_free (&g);

  /* reads: the fill's end, held as ranges, takes no memory a block */
  g = wc_rig (buffer_blocks, wc_config (50, 45, 64));
  sl_cluster_warm (g.c, 0, ORIGIN_BYTES, SL_WARM_READS);
  before = g.c->memory_bytes;
  assert_int_equal (sl_cluster_warm_finish (g.c, 1, err, sizeof err), 0);
  assert_int_equal (counter (&g, "dirty_blocks"), 8999);
  assert_true (g.c->memory_bytes - before < 4096);
  rig_free (&g);
}

/* Ranges: a piece taken out of the middle splits a range, out of an end
 * trims it; a unit's index is where cl_ranges_at finds it again. */
static void
test_ranges_remove_and_index_of (void **state)
{
  (void) state;
  struct cl_ranges r = { 0 };
  cl_ranges_add (&r, 10, 20);
  cl_ranges_add (&r, 30, 40);
  cl_ranges_remove (&r, 14, 16);                 /* split: 10-14, 16-20 */
  cl_ranges_remove (&r, 35, 50);                 /* trimmed: 30-35 */
  cl_ranges_remove (&r, 0, 5);                   /* none of it */
  assert_int_equal (cl_ranges_merge (&r), 4 + 4 + 5);
  uint64_t index;
  assert_false (cl_ranges_index_of (&r, 15, &index));
  assert_false (cl_ranges_index_of (&r, 9, &index));
  assert_false (cl_ranges_index_of (&r, 35, &index));
  for (uint64_t i = 0; i < 13; i++) {
    uint64_t unit = cl_ranges_at (&r, i);
    assert_true (cl_ranges_index_of (&r, unit, &index));
    assert_int_equal (index, i);
  }
  assert_int_equal (cl_ranges_at (&r, 4), 16);
  cl_ranges_free (&r);
}

/* An lvm cache volume's data: less dm-cache's metadata at its start, 4
 * MiB and 44 bytes a chunk rounded up to 4 MiB extents (lvm2
 * cache_vol_set_params), so profile-hybrid's 36 MiB read cache caches 28
 * (its lab's dmsetup table: cdata 57344 sectors, cmeta 16384). */
static void
test_rc_cache_volume_data_after_its_metadata (void **state)
{
  (void) state;
  struct cl_readcache_config config;
  cl_readcache_defaults (&config);
  const uint64_t extent = 4 * MIB;
  assert_int_equal (cl_readcache_data_bytes (36 * MIB, &config, extent), 28 * MIB);
  assert_int_equal (cl_readcache_data_bytes (44 * MIB, &config, extent), 36 * MIB);
  assert_int_equal (cl_readcache_data_bytes (8 * MIB, &config, extent), 0);
  /* a study's 280 GiB: 320 KiB chunks, 4 MiB + 917504 x 44 bytes -> 44 MiB */
  assert_int_equal (cl_readcache_data_bytes (280 * GIB, &config, extent), 280 * GIB - 44 * MIB);
}

/* lvm's chunk: 64 KiB up to 1,000,000 chunks, then the next multiple of
 * 32 KiB that keeps the count within it. */
static void
test_rc_lvm_chunk_size (void **state)
{
  (void) state;
  static const uint64_t cases[][3] = {        /* cache bytes, chunk, slots */
    { 1 * GIB, 64 * KIB, 16384 },
    { 1000000 * 64 * KIB, 64 * KIB, 1000000 },
    { 1000000 * 64 * KIB + 1, 96 * KIB, 666666 },
    { 100 * GIB, 128 * KIB, 819200 },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct rig g = { 0 };
    char err[256] = "";
    rig_devices (&g, ORIGIN_BYTES, cases[i][0]);
    uint64_t before = g.c->memory_bytes;
    struct cl_readcache_config config;
    cl_readcache_defaults (&config);
    g.layer = cl_readcache_new (g.c, "n1", "n1/readcache", g.origin, g.cache, &config, err,
                                sizeof err);
    rig_start (&g, before);
    assert_int_equal (counter (&g, "chunk_bytes"), cases[i][1]);
    assert_int_equal (counter (&g, "slots"), cases[i][2]);
    /* 9 bytes a slot; a slot number (4 bytes) and 2 bits an origin chunk */
    uint64_t origin_chunks = (ORIGIN_BYTES + cases[i][1] - 1) / cases[i][1];
    uint64_t expected = cases[i][2] * 9 + origin_chunks * 4 + (origin_chunks + 3) / 4;
    assert_true (g.layer_memory_bytes >= expected);
    assert_true (g.layer_memory_bytes <= expected + 4096);
    rig_free (&g);
  }
  struct rig g = { 0 };
  char err[256] = "";
  rig_devices (&g, ORIGIN_BYTES, 8 * CHUNK);
  struct cl_readcache_config config = rc_config (1 * MIB);
  config.chunk_bytes = 48 * KIB;
  assert_null (cl_readcache_new (g.c, "n1", "rc", g.origin, g.cache, &config, err, sizeof err));
  assert_non_null (strstr (err, "32 KiB"));
  config = rc_config (1 * MIB);
  config.promote_after_misses = 5;
  assert_null (cl_readcache_new (g.c, "n1", "rc", g.origin, g.cache, &config, err, sizeof err));
  config = rc_config (1 * MIB);
  config.chunk_bytes = 1 * MIB;                /* bigger than the cache */
  assert_null (cl_readcache_new (g.c, "n1", "rc", g.origin, g.cache, &config, err, sizeof err));
  cl_cluster_free (g.c);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_mirror_warms_the_region_on_every_leg),
    cmocka_unit_test (test_wc_writes_land_in_buffer),
    cmocka_unit_test (test_wc_writeback_oldest_first_reads_merged),
    cmocka_unit_test (test_wc_full_buffer_writes_around),
    cmocka_unit_test (test_wc_full_buffer_stays_full_under_writes),
    cmocka_unit_test (test_wc_reads_split),
    cmocka_unit_test (test_wc_overwrite_during_writeback),
    cmocka_unit_test (test_wc_flush_trim_and_write_around),
    cmocka_unit_test (test_wc_hash_matches_map),
    cmocka_unit_test (test_wc_random_traffic_consistent),
    cmocka_unit_test (test_wc_large_buffer),
    cmocka_unit_test (test_wc_log_chunks_released),
    cmocka_unit_test (test_wc_config_refused),
    cmocka_unit_test (test_wc_origin_beyond_the_slot_word_refused),
    cmocka_unit_test (test_rc_hits_misses_and_promotion),
    cmocka_unit_test (test_rc_promotion_threshold),
    cmocka_unit_test (test_rc_clock_eviction),
    cmocka_unit_test (test_rc_writethrough),
    cmocka_unit_test (test_rc_random_traffic_consistent),
    cmocka_unit_test (test_rc_warm),
    cmocka_unit_test (test_wc_warm_under_writes_fills_to_the_watermark),
    cmocka_unit_test (test_wc_warm_under_sequential_writes_holds_the_ends),
    cmocka_unit_test (test_wc_warm_mixed_regions_place_each_block_once),
    cmocka_unit_test (test_wc_warm_memory_is_checked_first),
    cmocka_unit_test (test_rc_warm_regions_share_the_cache),
    cmocka_unit_test (test_rc_lvm_chunk_size),
    cmocka_unit_test (test_ranges_remove_and_index_of),
    cmocka_unit_test (test_rc_cache_volume_data_after_its_metadata),
    cmocka_unit_test (test_wc_warm_under_reads_holds_the_fill_end),
    cmocka_unit_test (test_a_read_cache_under_a_buffer_leaves_it_the_fill_end),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
