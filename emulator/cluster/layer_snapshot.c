/* layer_snapshot.c — a workload volume's snapshots, taken while it runs, as
 * the lab takes them (scripts/profiles/snapshot.sh).  The volume's base (its
 * LV or its policy's md) holds the volume, then the room its snapshots may
 * fill; every I/O of this layer goes to the base.
 *
 * redo-log: dm-snapshot overlays (drivers/md/dm-snap.c, dm-snap-persistent.c).
 * Snapshot k freezes what the volume maps to; its redo log (slot k's room
 * after the volume) takes every later write, in 4 KiB chunks:
 *   - a write to a chunk the newest log holds: in place, in the log;
 *   - else a new exception, at the log's next chunk (the store lays out an
 *     area of 256 exceptions' metadata, then their 256 chunks): a write
 *     covering the chunk goes there at once, a partial one first copies the
 *     chunk from where the chain holds it (a read, a write); the exception
 *     is committed (the area, 4 KiB, written with FLUSH and FUA) before the
 *     write completes, one commit for every exception that finished while
 *     the previous commit was in flight;
 *   - a read: each chunk from the newest log holding it, else the base (the
 *     chain is looked up in memory: no I/O for the lookup);
 *   - deleting snapshot k merges its log into what is below it (the previous
 *     log, or the volume) in the background, as the lab's delete waits for:
 *     a chunk at a time, read from the log, written below, the area
 *     committed after each; the log serves its chunks until they are merged.
 * redirect-on-write: dm-thin (drivers/md/dm-thin.c).  The volume is thin
 * device 0 of a pool on the base (metadata first, then 64 KiB data blocks);
 * a snapshot shares every block; the first write to a shared block goes to
 * a newly allocated block, the old one copied there first (kcopyd, the whole
 * block) unless the write covers it; other writes land in place.  Mapping
 * changes are committed every second, on a FLUSH and for a FUA write: a
 * metadata block per b-tree leaf changed (126 mappings a leaf), twice
 * (mapping and space map), and the superblock.  Deleting a snapshot drops
 * its references in the metadata: one commit.  New blocks are taken in
 * order from the pool's data, wrapping (freed blocks are not tracked).
 * Neither mechanism has snapshots at the start: the layer passes I/O to the
 * volume's place in the base until the first is taken (an event). */
#define _GNU_SOURCE
#include "layers.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "block_hash.h"
#include "cluster_internal.h"

#define REDO_CHUNK_BYTES 4096u
#define REDO_EXCEPTIONS_PER_AREA 256u  /* 4096 / 16-byte exceptions */
#define THIN_BLOCK_BYTES (64u * 1024u)
#define THIN_MAPPINGS_PER_LEAF 126u
#define THIN_COMMIT_PERIOD_NS NS_PER_S
#define METADATA_BLOCK_BYTES 4096u
#define MAX_DEPTH 8u

enum mechanism { REDO_LOG, REDIRECT_ON_WRITE };

struct redo_log {
  unsigned slot;                       /* its room on the base, 0-based */
  struct block_hash map;               /* volume chunk -> exception */
  uint32_t *chunk_of;                  /* exception -> volume chunk */
  uint32_t used, capacity;
  bool merging;
  uint32_t merged;                     /* exceptions merged so far, in order */
};

struct snapshot_layer {
  struct cl_target *below;             /* the base */
  enum mechanism mechanism;
  unsigned depth;
  uint64_t volume_bytes;
  uint64_t room_bytes;                 /* redo-log: one log's; redirect-on-write: metadata */
  /* redo-log */
  struct redo_log *chain[MAX_DEPTH];   /* oldest first */
  unsigned live;
  unsigned deletes_waiting;            /* deletes asked while a merge runs */
  struct cl_io *commit_waiting;        /* exception writes done, not committed */
  struct cl_io *commit_batch;          /* ... in the commit now in flight */
  struct redo_log *commit_log;
  /* redirect-on-write */
  uint32_t *block_at;                  /* per volume block: its data block + 1, 0 none */
  uint8_t *written_in;                 /* per volume block: generation of its last write */
  uint8_t generation;                  /* snapshots taken so far, mod 256 */
  uint8_t snap_generation[MAX_DEPTH];  /* the live snapshots', oldest first */
  uint64_t data_blocks, next_block;
  uint8_t *leaf_dirty;                 /* a bit per b-tree leaf changed since the commit */
  uint64_t dirty_leaves;
  bool commit_scheduled;
  /* figures */
  uint64_t snapshots_taken, snapshots_deleted;
  uint64_t copy_reads, copy_writes, metadata_writes, exceptions;
  uint64_t merge_reads, merge_writes;
};

static void
background_done (struct cl_io *io)
{
  cl_io_free (io->target->cluster, io);
}

/* ---------------------------------------------------------- redo-log -- */

static uint64_t
redo_key (const void *owner, uint32_t slot)
{
  return ((const struct redo_log *) owner)->chunk_of[slot];
}

/* Where exception e of log sits on the base. */
static uint64_t
exception_offset (const struct snapshot_layer *s, const struct redo_log *log, uint32_t e)
{
  uint64_t area = e / REDO_EXCEPTIONS_PER_AREA;
  uint64_t chunk = 1 + area * (REDO_EXCEPTIONS_PER_AREA + 1) + 1 + e % REDO_EXCEPTIONS_PER_AREA;
  return s->volume_bytes + log->slot * s->room_bytes + chunk * REDO_CHUNK_BYTES;
}

static uint64_t
area_offset (const struct snapshot_layer *s, const struct redo_log *log, uint32_t e)
{
  uint64_t area = e / REDO_EXCEPTIONS_PER_AREA;
  return s->volume_bytes + log->slot * s->room_bytes
    + (1 + area * (REDO_EXCEPTIONS_PER_AREA + 1)) * REDO_CHUNK_BYTES;
}

static uint32_t
redo_find (const struct redo_log *log, uint64_t chunk)
{
  return log->used ? block_hash_find (&log->map, chunk) : BLOCK_HASH_NONE;
}

/* The newest level holding chunk (its exception in *e), -1: the volume. */
static int
holder_of (const struct snapshot_layer *s, uint64_t chunk, uint32_t *e)
{
  for (int k = (int) s->live - 1; k >= 0; k--) {
    *e = redo_find (s->chain[k], chunk);
    if (*e != BLOCK_HASH_NONE)
      return k;
  }
  return -1;
}

static uint64_t
chunk_place (const struct snapshot_layer *s, int level, uint32_t e, uint64_t chunk)
{
  return level < 0 ? chunk * REDO_CHUNK_BYTES : exception_offset (s, s->chain[level], e);
}

/* The level new writes allocate in: the newest not merging, -1 none. */
static int
write_level (const struct snapshot_layer *s)
{
  for (int k = (int) s->live - 1; k >= 0; k--)
    if (!s->chain[k]->merging)
      return k;
  return -1;
}

static uint32_t
new_exception (struct cl_target *t, struct redo_log *log, uint64_t chunk)
{
  struct snapshot_layer *s = t->self;
  if (log->used == log->capacity) {
    uint32_t grown = log->capacity ? 2 * log->capacity : 1024;
    uint32_t *more = realloc (log->chunk_of, grown * sizeof *more);
    if (more == NULL)
      abort ();
    t->cluster->memory_bytes += (uint64_t) (grown - log->capacity) * sizeof *more;
    log->chunk_of = more;
    log->capacity = grown;
  }
  uint32_t e = log->used++;
  log->chunk_of[e] = (uint32_t) chunk;
  block_hash_insert (&log->map, e);
  s->exceptions++;
  return e;
}

static void commit_start (struct cl_target *t);

static void
commit_done (struct cl_io *io)
{
  struct cl_target *t = io->owner;
  struct snapshot_layer *s = t->self;
  cl_io_free (t->cluster, io);
  struct cl_io *batch = s->commit_batch;
  s->commit_batch = NULL;
  while (batch) {
    struct cl_io *next = batch->next;
    cl_part_done (batch);
    batch = next;
  }
  if (s->commit_waiting)
    commit_start (t);
}

/* The exceptions finished since the last commit, committed in one area write
 * (they are in the newest area of the log they were made in). */
static void
commit_start (struct cl_target *t)
{
  struct snapshot_layer *s = t->self;
  s->commit_batch = s->commit_waiting;
  s->commit_waiting = NULL;
  struct redo_log *log = s->commit_log;
  s->metadata_writes++;
  cl_submit_own (s->below, SL_OP_WRITE, SL_REQUEST_FUA,
                 area_offset (s, log, log->used ? log->used - 1 : 0), METADATA_BLOCK_BYTES,
                 commit_done, t, 0, 0);
}

/* A new exception's data is written: its parent waits for the commit. */
static void
exception_written (struct cl_io *child)
{
  struct cl_target *t = child->owner;
  struct snapshot_layer *s = t->self;
  child->next = s->commit_waiting;
  s->commit_waiting = child;
  if (s->commit_batch == NULL)
    commit_start (t);
}

/* A partial write's copy: the chunk read from where the chain held it,
 * written to the new exception (scratch[1]), then the write itself
 * (scratch[0]: its offset in the chunk << 32 | its length), then the commit. */
static void
copy_written (struct cl_io *io)
{
  struct cl_io *parent = io->parent;
  struct cl_target *t = io->owner;
  struct snapshot_layer *s = t->self;
  uint64_t at = io->scratch[1] + (io->scratch[0] >> 32);
  uint64_t length = io->scratch[0] & 0xffffffffu;
  cl_io_free (t->cluster, io);
  parent->pending--;                   /* the copy's part, replaced by the write's */
  cl_submit_child (s->below, parent, SL_OP_WRITE, parent->flags, at, length, exception_written,
                   t);
}

static void
copy_read (struct cl_io *io)
{
  struct cl_target *t = io->owner;
  struct snapshot_layer *s = t->self;
  s->copy_writes++;
  io->op = SL_OP_WRITE;
  io->offset_bytes = io->scratch[1];
  io->length_bytes = REDO_CHUNK_BYTES;
  io->done = copy_written;
  cl_submit (s->below, io);
}

static void
redo_write_chunk (struct cl_target *t, struct cl_io *io, uint64_t offset, uint64_t length)
{
  struct snapshot_layer *s = t->self;
  uint64_t chunk = offset / REDO_CHUNK_BYTES;
  uint32_t e;
  int held = holder_of (s, chunk, &e);
  int level = write_level (s);
  if (held >= level && (held >= 0 || level < 0)) {
    /* in place: the newest log holds it, a merging log above it, or no log */
    cl_submit_child (s->below, io, SL_OP_WRITE, io->flags,
                     chunk_place (s, held, e, chunk) + offset % REDO_CHUNK_BYTES, length,
                     cl_part_done, NULL);
    return;
  }
  struct redo_log *log = s->chain[level];
  uint64_t from = chunk_place (s, held, e, chunk);
  uint32_t fresh = new_exception (t, log, chunk);
  s->commit_log = log;
  uint64_t to = exception_offset (s, log, fresh);
  if (length == REDO_CHUNK_BYTES) {
    cl_submit_child (s->below, io, SL_OP_WRITE, io->flags, to, length, exception_written, t);
    return;
  }
  s->copy_reads++;
  io->pending++;
  struct cl_io *copy = cl_io_new (t->cluster);
  copy->op = SL_OP_READ;
  copy->offset_bytes = from;
  copy->length_bytes = REDO_CHUNK_BYTES;
  copy->done = copy_read;
  copy->owner = t;
  copy->parent = io;
  copy->scratch[0] = (offset % REDO_CHUNK_BYTES) << 32 | length;
  copy->scratch[1] = to;
  cl_submit (s->below, copy);
}

/* Reads: runs of chunks whose places follow each other go down as one. */
static void
redo_read (struct cl_target *t, struct cl_io *io, uint64_t offset, uint64_t end)
{
  struct snapshot_layer *s = t->self;
  uint64_t run_at = 0, run_length = 0;
  while (offset < end) {
    uint64_t chunk = offset / REDO_CHUNK_BYTES;
    uint64_t piece = sl_min_u64 (end, (chunk + 1) * REDO_CHUNK_BYTES) - offset;
    uint32_t e;
    int held = holder_of (s, chunk, &e);
    uint64_t at = chunk_place (s, held, e, chunk) + offset % REDO_CHUNK_BYTES;
    if (run_length && at == run_at + run_length)
      run_length += piece;
    else {
      if (run_length)
        cl_submit_child (s->below, io, SL_OP_READ, io->flags, run_at, run_length, cl_part_done,
                         NULL);
      run_at = at;
      run_length = piece;
    }
    offset += piece;
  }
  if (run_length)
    cl_submit_child (s->below, io, SL_OP_READ, io->flags, run_at, run_length, cl_part_done, NULL);
}

/* ---- merging a deleted snapshot's log ---- */

static void merge_next (struct cl_target *t);

static void
redo_log_free (struct redo_log *log)
{
  block_hash_free (&log->map);
  free (log->chunk_of);
  free (log);
}

static void
merge_committed (struct cl_io *io)
{
  struct cl_target *t = io->owner;
  cl_io_free (t->cluster, io);
  merge_next (t);
}

/* A merged chunk's copy is below: the area records it, then the next. */
static void
merge_written (struct cl_io *io)
{
  struct cl_target *t = io->owner;
  struct snapshot_layer *s = t->self;
  cl_io_free (t->cluster, io);
  struct redo_log *log = NULL;
  for (unsigned k = 0; k < s->live; k++)
    if (s->chain[k]->merging)
      log = s->chain[k];
  uint32_t e = log->merged++;
  block_hash_remove (&log->map, e);
  s->metadata_writes++;
  cl_submit_own (s->below, SL_OP_WRITE, SL_REQUEST_FUA, area_offset (s, log, e),
                 METADATA_BLOCK_BYTES, merge_committed, t, 0, 0);
}

static void
merge_read (struct cl_io *io)
{
  struct cl_target *t = io->owner;
  struct snapshot_layer *s = t->self;
  s->merge_writes++;
  io->op = SL_OP_WRITE;
  io->offset_bytes = io->scratch[1];
  io->done = merge_written;
  cl_submit (s->below, io);
}

static void
merge_next (struct cl_target *t)
{
  struct snapshot_layer *s = t->self;
  unsigned k = 0;
  while (k < s->live && !s->chain[k]->merging)
    k++;
  struct redo_log *log = s->chain[k];
  if (log->merged == log->used) {
    /* merged: the level is gone from the chain */
    redo_log_free (log);
    memmove (&s->chain[k], &s->chain[k + 1], (s->live - k - 1) * sizeof s->chain[0]);
    s->live--;
    if (s->deletes_waiting) {
      s->deletes_waiting--;
      s->chain[0]->merging = true;
      merge_next (t);
    }
    return;
  }
  uint64_t chunk = log->chunk_of[log->merged];
  /* below the merging log: the previous log (in place, or a new exception
   * there), or the volume */
  uint64_t to;
  if (k == 0)
    to = chunk * REDO_CHUNK_BYTES;
  else {
    struct redo_log *under = s->chain[k - 1];
    uint32_t e = redo_find (under, chunk);
    if (e == BLOCK_HASH_NONE)
      e = new_exception (t, under, chunk);
    to = exception_offset (s, under, e);
  }
  s->merge_reads++;
  cl_submit_own (s->below, SL_OP_READ, 0, exception_offset (s, log, log->merged),
                 REDO_CHUNK_BYTES, merge_read, t, 0, to);
}

static int
redo_take (struct cl_target *t, char *err, size_t err_bytes)
{
  struct snapshot_layer *s = t->self;
  if (s->live == s->depth) {
    snprintf (err, err_bytes, "%s has %u snapshots, its depth", t->name, s->live);
    return -1;
  }
  struct redo_log *log = cl_xcalloc (1, sizeof *log);
  bool used[MAX_DEPTH] = { false };
  for (unsigned k = 0; k < s->live; k++)
    used[s->chain[k]->slot] = true;
  while (used[log->slot])
    log->slot++;
  block_hash_init (&log->map, 10, redo_key, log, &t->cluster->memory_bytes);
  s->chain[s->live++] = log;
  /* the new log's header zeroed, as the lab's snapshot.sh does */
  cl_submit_own (s->below, SL_OP_WRITE, 0, s->volume_bytes + log->slot * s->room_bytes,
                 1u << 20, background_done, NULL, 0, 0);
  return 0;
}

/* Deletes the oldest snapshot not being deleted: its log merges below. */
static int
redo_delete (struct cl_target *t, char *err, size_t err_bytes)
{
  struct snapshot_layer *s = t->self;
  unsigned merging = 0;
  for (unsigned k = 0; k < s->live; k++)
    merging += s->chain[k]->merging;
  if (s->live == merging + s->deletes_waiting) {
    snprintf (err, err_bytes, "%s has no snapshot to delete", t->name);
    return -1;
  }
  if (merging) {
    s->deletes_waiting++;              /* the lab deletes one at a time too */
    return 0;
  }
  s->chain[0]->merging = true;
  merge_next (t);
  return 0;
}

/* ------------------------------------------------ redirect-on-write -- */

static uint64_t
thin_block_offset (const struct snapshot_layer *s, uint32_t block_plus_one)
{
  return s->room_bytes + (uint64_t) (block_plus_one - 1) * THIN_BLOCK_BYTES;
}

static bool
thin_shared (const struct snapshot_layer *s, uint64_t block)
{
  /* written before the newest live snapshot was taken: that snapshot has it */
  if (s->live == 0)
    return false;
  return (uint8_t) (s->snap_generation[s->live - 1] - s->written_in[block] - 1) < 128;
}

static void
thin_touch (struct cl_target *t, uint64_t block)
{
  struct snapshot_layer *s = t->self;
  uint64_t leaf = block / THIN_MAPPINGS_PER_LEAF;
  if (!(s->leaf_dirty[leaf / 8] & (1u << (leaf % 8)))) {
    s->leaf_dirty[leaf / 8] |= (uint8_t) (1u << (leaf % 8));
    s->dirty_leaves++;
  }
}

/* A commit's metadata writes: every changed leaf of the mapping and of the
 * space map, and the superblock; children of parent, or in the background. */
static void
thin_commit (struct cl_target *t, struct cl_io *parent)
{
  struct snapshot_layer *s = t->self;
  uint64_t meta_blocks = s->room_bytes / METADATA_BLOCK_BYTES;
  uint64_t leaves = (s->volume_bytes / THIN_BLOCK_BYTES + THIN_MAPPINGS_PER_LEAF - 1)
    / THIN_MAPPINGS_PER_LEAF;
  uint64_t writes = 0;
  for (uint64_t leaf = 0; leaf < leaves && s->dirty_leaves; leaf++) {
    if (!(s->leaf_dirty[leaf / 8] & (1u << (leaf % 8))))
      continue;
    s->leaf_dirty[leaf / 8] &= (uint8_t) ~(1u << (leaf % 8));
    s->dirty_leaves--;
    for (unsigned tree = 0; tree < 2; tree++) {
      uint64_t at = (1 + (2 * leaf + tree) % (meta_blocks - 1)) * METADATA_BLOCK_BYTES;
      if (parent)
        cl_submit_child (s->below, parent, SL_OP_WRITE, 0, at, METADATA_BLOCK_BYTES,
                         cl_part_done, NULL);
      else
        cl_submit_own (s->below, SL_OP_WRITE, 0, at, METADATA_BLOCK_BYTES, background_done,
                       NULL, 0, 0);
      writes++;
    }
  }
  s->metadata_writes += writes + 1;
  if (parent)
    cl_submit_child (s->below, parent, SL_OP_WRITE, SL_REQUEST_FUA, 0, METADATA_BLOCK_BYTES,
                     cl_part_done, NULL);
  else
    cl_submit_own (s->below, SL_OP_WRITE, SL_REQUEST_FUA, 0, METADATA_BLOCK_BYTES,
                   background_done, NULL, 0, 0);
}

static void
thin_commit_event (struct sl_engine *e, void *arg, uint64_t unused)
{
  (void) e;
  (void) unused;
  struct cl_target *t = arg;
  struct snapshot_layer *s = t->self;
  s->commit_scheduled = false;
  if (s->dirty_leaves)
    thin_commit (t, NULL);
}

static void
thin_changed (struct cl_target *t, uint64_t block)
{
  struct snapshot_layer *s = t->self;
  thin_touch (t, block);
  if (!s->commit_scheduled) {
    s->commit_scheduled = true;
    cl_schedule (t->cluster, cl_now_ns (t->cluster) + THIN_COMMIT_PERIOD_NS, thin_commit_event,
                 t, 0);
  }
}

static uint32_t
thin_allocate (struct snapshot_layer *s)
{
  uint32_t block = (uint32_t) (s->next_block + 1);
  s->next_block = (s->next_block + 1) % s->data_blocks;
  return block;
}

/* A block's copy read (scratch[0]: the write's offset in the new block and
 * length, scratch[1]: the new block's place), written whole, then the write. */
static void
thin_copy_written (struct cl_io *io)
{
  struct cl_io *parent = io->parent;
  struct cl_target *t = io->owner;
  struct snapshot_layer *s = t->self;
  uint64_t at = io->scratch[1] + (io->scratch[0] >> 32);
  uint64_t length = io->scratch[0] & 0xffffffffu;
  cl_io_free (t->cluster, io);
  parent->pending--;
  cl_submit_child (s->below, parent, SL_OP_WRITE, parent->flags, at, length, cl_part_done, NULL);
}

static void
thin_copy_read (struct cl_io *io)
{
  struct cl_target *t = io->owner;
  struct snapshot_layer *s = t->self;
  s->copy_writes++;
  io->op = SL_OP_WRITE;
  io->offset_bytes = io->scratch[1];
  io->done = thin_copy_written;
  cl_submit (s->below, io);
}

static void
thin_write_block (struct cl_target *t, struct cl_io *io, uint64_t offset, uint64_t length)
{
  struct snapshot_layer *s = t->self;
  uint64_t block = offset / THIN_BLOCK_BYTES, within = offset % THIN_BLOCK_BYTES;
  uint32_t old = s->block_at[block];
  if (old && !thin_shared (s, block)) {
    cl_submit_child (s->below, io, SL_OP_WRITE, io->flags, thin_block_offset (s, old) + within,
                     length, cl_part_done, NULL);
    return;
  }
  /* a new block: provisioned, or sharing broken */
  uint32_t fresh = thin_allocate (s);
  s->block_at[block] = fresh;
  s->written_in[block] = s->generation;
  thin_changed (t, block);
  if (!old || length == THIN_BLOCK_BYTES) {
    cl_submit_child (s->below, io, SL_OP_WRITE, io->flags, thin_block_offset (s, fresh) + within,
                     length, cl_part_done, NULL);
    return;
  }
  s->copy_reads++;
  io->pending++;
  struct cl_io *copy = cl_io_new (t->cluster);
  copy->op = SL_OP_READ;
  copy->offset_bytes = thin_block_offset (s, old);
  copy->length_bytes = THIN_BLOCK_BYTES;
  copy->done = thin_copy_read;
  copy->owner = t;
  copy->parent = io;
  copy->scratch[0] = (within << 32) | length;
  copy->scratch[1] = thin_block_offset (s, fresh);
  cl_submit (s->below, copy);
}

static void
thin_read (struct cl_target *t, struct cl_io *io, uint64_t offset, uint64_t end)
{
  struct snapshot_layer *s = t->self;
  uint64_t run_at = 0, run_length = 0;
  while (offset < end) {
    uint64_t block = offset / THIN_BLOCK_BYTES;
    uint64_t piece = sl_min_u64 (end, (block + 1) * THIN_BLOCK_BYTES) - offset;
    offset += piece;
    if (s->block_at[block] == 0)
      continue;                        /* never written: zeros, no I/O */
    uint64_t at = thin_block_offset (s, s->block_at[block]) + (offset - piece) % THIN_BLOCK_BYTES;
    if (run_length && at == run_at + run_length)
      run_length += piece;
    else {
      if (run_length)
        cl_submit_child (s->below, io, SL_OP_READ, io->flags, run_at, run_length, cl_part_done,
                         NULL);
      run_at = at;
      run_length = piece;
    }
  }
  if (run_length)
    cl_submit_child (s->below, io, SL_OP_READ, io->flags, run_at, run_length, cl_part_done, NULL);
}

static int
thin_take (struct cl_target *t, char *err, size_t err_bytes)
{
  struct snapshot_layer *s = t->self;
  if (s->live == s->depth) {
    snprintf (err, err_bytes, "%s has %u snapshots, its depth", t->name, s->live);
    return -1;
  }
  /* every block written so far is the snapshot's too */
  s->generation++;
  s->snap_generation[s->live++] = s->generation;
  thin_changed (t, 0);
  return 0;
}

static int
thin_delete (struct cl_target *t, char *err, size_t err_bytes)
{
  struct snapshot_layer *s = t->self;
  if (s->live == 0) {
    snprintf (err, err_bytes, "%s has no snapshot to delete", t->name);
    return -1;
  }
  memmove (&s->snap_generation[0], &s->snap_generation[1], (s->live - 1));
  s->live--;
  thin_changed (t, 0);
  return 0;
}

/* ------------------------------------------------------------ target -- */

static void
snapshot_submit (struct cl_target *t, struct cl_io *io)
{
  struct snapshot_layer *s = t->self;
  if (io->op == SL_OP_FLUSH) {
    if (s->mechanism == REDIRECT_ON_WRITE && s->dirty_leaves)
      thin_commit (t, io);
    cl_submit_child (s->below, io, SL_OP_FLUSH, 0, 0, 0, cl_part_done, NULL);
    return;
  }
  uint64_t offset = io->offset_bytes, end = sl_min_u64 (io->offset_bytes + io->length_bytes,
                                                        t->capacity_bytes);
  if (offset >= end) {
    cl_io_complete_at (io, cl_now_ns (t->cluster));
    return;
  }
  io->pending++;                       /* held while the pieces go out */
  if (io->op != SL_OP_WRITE) {
    if (s->mechanism == REDO_LOG)
      redo_read (t, io, offset, end);
    else
      thin_read (t, io, offset, end);
  }
  else if (s->mechanism == REDO_LOG && s->live == 0)
    cl_submit_child (s->below, io, SL_OP_WRITE, io->flags, offset, end - offset, cl_part_done,
                     NULL);
  else {
    unsigned unit = s->mechanism == REDO_LOG ? REDO_CHUNK_BYTES : THIN_BLOCK_BYTES;
    while (offset < end) {
      uint64_t piece = sl_min_u64 (end, (offset / unit + 1) * unit) - offset;
      if (s->mechanism == REDO_LOG)
        redo_write_chunk (t, io, offset, piece);
      else
        thin_write_block (t, io, offset, piece);
      offset += piece;
    }
    if (s->mechanism == REDIRECT_ON_WRITE && (io->flags & SL_REQUEST_FUA) && s->dirty_leaves)
      thin_commit (t, io);
  }
  if (--io->pending == 0)
    cl_io_complete_at (io, cl_now_ns (t->cluster));
}

static void
snapshot_warm (struct cl_target *t, uint64_t offset_bytes, uint64_t length_bytes)
{
  struct snapshot_layer *s = t->self;
  if (s->mechanism == REDO_LOG) {
    cl_warm (s->below, offset_bytes, length_bytes);
    return;
  }
  uint64_t first = offset_bytes / THIN_BLOCK_BYTES;
  uint64_t last = (sl_min_u64 (offset_bytes + length_bytes, s->volume_bytes) - 1)
    / THIN_BLOCK_BYTES;
  cl_warm (s->below, thin_block_offset (s, s->block_at[first]),
           (last - first + 1) * THIN_BLOCK_BYTES);
}

static void
snapshot_write_counters (struct cl_target *t, FILE *out)
{
  struct snapshot_layer *s = t->self;
  fprintf (out, "\"snapshots\": %u, \"snapshots_taken\": %" PRIu64 ", \"snapshots_deleted\": %"
           PRIu64 ", \"copy_reads\": %" PRIu64 ", \"copy_writes\": %" PRIu64
           ", \"metadata_writes\": %" PRIu64 ", \"exceptions\": %" PRIu64
           ", \"merge_reads\": %" PRIu64 ", \"merge_writes\": %" PRIu64, s->live,
           s->snapshots_taken, s->snapshots_deleted, s->copy_reads, s->copy_writes,
           s->metadata_writes, s->exceptions, s->merge_reads, s->merge_writes);
}

static void
snapshot_destroy (struct cl_target *t)
{
  struct snapshot_layer *s = t->self;
  for (unsigned k = 0; k < s->live && s->mechanism == REDO_LOG; k++)
    redo_log_free (s->chain[k]);
  free (s->block_at);
  free (s->written_in);
  free (s->leaf_dirty);
  free (s);
}

static const struct cl_target_ops redo_ops = {
  .kind = "redo-log", .submit = snapshot_submit, .warm = snapshot_warm,
  .write_counters = snapshot_write_counters, .destroy = snapshot_destroy,
};
static const struct cl_target_ops thin_ops = {
  .kind = "redirect-on-write", .submit = snapshot_submit, .warm = snapshot_warm,
  .write_counters = snapshot_write_counters, .destroy = snapshot_destroy,
};

bool
cl_is_snapshot_layer (const struct cl_target *t)
{
  return t->ops == &redo_ops || t->ops == &thin_ops;
}

int
cl_snapshot_event (struct cl_target *t, bool take, char *err, size_t err_bytes)
{
  struct snapshot_layer *s = t->self;
  int rc = s->mechanism == REDO_LOG
    ? (take ? redo_take (t, err, err_bytes) : redo_delete (t, err, err_bytes))
    : (take ? thin_take (t, err, err_bytes) : thin_delete (t, err, err_bytes));
  if (rc == 0) {
    if (take)
      s->snapshots_taken++;
    else
      s->snapshots_deleted++;
  }
  return rc;
}

uint64_t
cl_snapshot_base_bytes (bool redo_log, uint64_t volume_bytes, unsigned depth, uint64_t room_bytes)
{
  return redo_log ? volume_bytes + depth * room_bytes
    : room_bytes + volume_bytes * (1 + depth);
}

struct cl_target *
cl_snapshot_new (struct cluster *c, const char *node, const char *name, struct cl_target *base,
                 bool redo_log, uint64_t volume_bytes, unsigned depth, uint64_t room_bytes,
                 char *err, size_t err_bytes)
{
  if (depth < 1 || depth > MAX_DEPTH) {
    snprintf (err, err_bytes, "%s: depth %u (1 to %u snapshots)", name, depth, MAX_DEPTH);
    return NULL;
  }
  if (base->capacity_bytes < cl_snapshot_base_bytes (redo_log, volume_bytes, depth, room_bytes)) {
    snprintf (err, err_bytes, "%s: its base holds %" PRIu64 " bytes, not the %" PRIu64
              " the volume and its snapshots' room need", name, base->capacity_bytes,
              cl_snapshot_base_bytes (redo_log, volume_bytes, depth, room_bytes));
    return NULL;
  }
  if (redo_log && room_bytes < volume_bytes + volume_bytes / 128) {
    snprintf (err, err_bytes, "%s: a redo log of %" PRIu64 " bytes cannot take a rewrite of "
              "the %" PRIu64 "-byte volume", name, room_bytes, volume_bytes);
    return NULL;
  }
  if (!redo_log && room_bytes < 2 * METADATA_BLOCK_BYTES) {
    snprintf (err, err_bytes, "%s: %" PRIu64 " bytes of thin-pool metadata", name, room_bytes);
    return NULL;
  }
  struct snapshot_layer *s = cl_xcalloc (1, sizeof *s);
  s->below = base;
  s->mechanism = redo_log ? REDO_LOG : REDIRECT_ON_WRITE;
  s->depth = depth;
  s->volume_bytes = volume_bytes;
  s->room_bytes = room_bytes;
  c->memory_bytes += sizeof *s;
  if (!redo_log) {
    /* provisioned in order by the volume's first write (the lab's
     * precondition): block b is data block b */
    uint64_t blocks = (volume_bytes + THIN_BLOCK_BYTES - 1) / THIN_BLOCK_BYTES;
    uint64_t leaves = (blocks + THIN_MAPPINGS_PER_LEAF - 1) / THIN_MAPPINGS_PER_LEAF;
    s->block_at = cl_xcalloc (blocks, sizeof *s->block_at);
    s->written_in = cl_xcalloc (blocks, sizeof *s->written_in);
    s->leaf_dirty = cl_xcalloc ((leaves + 7) / 8, 1);
    for (uint64_t b = 0; b < blocks; b++)
      s->block_at[b] = (uint32_t) (b + 1);
    s->data_blocks = (base->capacity_bytes - room_bytes) / THIN_BLOCK_BYTES;
    s->next_block = blocks % s->data_blocks;
    c->memory_bytes += blocks * (sizeof *s->block_at + sizeof *s->written_in) + (leaves + 7) / 8;
  }
  return cl_target_new (c, redo_log ? &redo_ops : &thin_ops, s, node, name, volume_bytes, true);
}
