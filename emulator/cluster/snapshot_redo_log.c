/* snapshot_redo_log.c — redo-log snapshots: dm-snapshot overlays
 * (drivers/md/dm-snap.c, dm-snap-persistent.c).  Snapshot k freezes what the volume maps to; its redo log (slot k's room
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
 *     committed after each; the log serves its chunks until they are merged. */
#define _GNU_SOURCE
#include "snapshot_layer.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "layers.h"

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
void
cl_redo_exception_written (struct cl_io *child)
{
  struct cl_target *t = child->owner;
  struct snapshot_layer *s = t->self;
  child->next = s->commit_waiting;
  s->commit_waiting = child;
  if (s->commit_batch == NULL)
    commit_start (t);
}

void
cl_redo_write_chunk (struct cl_target *t, struct cl_io *io, uint64_t offset, uint64_t length)
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
  /* a new exception in the newest log, the chunk copied there from where
   * the chain holds it unless the write covers it */
  struct redo_log *log = s->chain[level];
  uint64_t from = chunk_place (s, held, e, chunk);
  uint32_t fresh = new_exception (t, log, chunk);
  s->commit_log = log;
  cl_snapshot_write_fresh (t, io, true, from, exception_offset (s, log, fresh),
                           offset % REDO_CHUNK_BYTES, length);
}

/* A chunk is where the newest log holding it has it, else in the volume. */
uint64_t
cl_redo_place (const struct snapshot_layer *s, uint64_t chunk)
{
  uint32_t e;
  int held = holder_of (s, chunk, &e);
  return chunk_place (s, held, e, chunk);
}

/* ---- merging a deleted snapshot's log ---- */

static void merge_next (struct cl_target *t);

void
cl_redo_log_free (struct redo_log *log)
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
  cl_snapshot_write_back (io, io->scratch[1], merge_written);
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
    cl_redo_log_free (log);
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

int
cl_redo_take (struct cl_target *t, char *err, size_t err_bytes)
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
  block_hash_init (&log->map, 1024, 0, redo_key, log, &t->cluster->memory_bytes);
  s->chain[s->live++] = log;
  /* the new log's header zeroed, as the lab's snapshot.sh does */
  cl_submit_own (s->below, SL_OP_WRITE, 0, s->volume_bytes + log->slot * s->room_bytes,
                 1u << 20, cl_snapshot_io_free, NULL, 0, 0);
  return 0;
}

/* Deletes the oldest snapshot not being deleted: its log merges below. */
int
cl_redo_delete (struct cl_target *t, char *err, size_t err_bytes)
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
