/* snapshot_layer.h — the snapshot layer's state, shared by its target
 * (layer_snapshot.c) and its two mechanisms: redo-log (snapshot_redo_log.c,
 * dm-snapshot) and redirect-on-write (snapshot_thin.c, dm-thin), which write
 * through a shared copy path (snapshot_copy.c).  Every I/O
 * of the layer goes to its base: the volume, then its snapshots' room. */
#ifndef STORLAB_CLUSTER_SNAPSHOT_LAYER_H
#define STORLAB_CLUSTER_SNAPSHOT_LAYER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

struct snapshot_layer;

/* Where unit (a redo chunk, a thin block) of the volume is on the base now,
 * or SNAPSHOT_NOWHERE: never written, it reads as zeros without I/O. */
typedef uint64_t (*snapshot_place_fn) (const struct snapshot_layer *s, uint64_t unit);
#define SNAPSHOT_NOWHERE UINT64_MAX

struct snapshot_layer {
  struct cl_target *below;             /* the base */
  enum mechanism mechanism;
  uint32_t unit_bytes;                 /* what a place holds and a copy moves */
  snapshot_place_fn place;
  cl_done_fn fresh_done;               /* a write to a new place is done (redo-log:
                                        * its exception waits for the commit) */
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

/* snapshot_copy.c.  A done callback for the layer's own background I/O:
 * frees it. */
void cl_snapshot_io_free (struct cl_io *io);
/* A completed read of the layer's own (its owner the snapshot target) sent
 * below again as a write of the same length at offset, done with done (a
 * copy's second half). */
void cl_snapshot_write_back (struct cl_io *io, uint64_t offset, cl_done_fn done);
/* A write's piece (length at within of its unit) to a unit's new place to:
 * when copy and the piece does not cover the unit, the unit copied from
 * from first (a read, a write); done with s->fresh_done. */
void cl_snapshot_write_fresh (struct cl_target *t, struct cl_io *io, bool copy, uint64_t from,
                              uint64_t to, uint64_t within, uint64_t length);

/* redo-log (snapshot_redo_log.c): a chunk's place in the chain, a write's
 * piece in one chunk, a write's exception committed (fresh_done), a
 * snapshot taken, the oldest deleted. */
uint64_t cl_redo_place (const struct snapshot_layer *s, uint64_t chunk);
void cl_redo_exception_written (struct cl_io *child);
void cl_redo_write_chunk (struct cl_target *t, struct cl_io *io, uint64_t offset,
                          uint64_t length);
int cl_redo_take (struct cl_target *t, char *err, size_t err_bytes);
int cl_redo_delete (struct cl_target *t, char *err, size_t err_bytes);
void cl_redo_log_free (struct redo_log *log);

/* redirect-on-write (snapshot_thin.c): a block's place, a piece in one
 * block, the pool's commit (children of parent, or in the background when
 * NULL), a data block's place on the base, and the pool as preconditioned. */
uint64_t cl_thin_place (const struct snapshot_layer *s, uint64_t block);
void cl_thin_write_block (struct cl_target *t, struct cl_io *io, uint64_t offset,
                          uint64_t length);
void cl_thin_commit (struct cl_target *t, struct cl_io *parent);
int cl_thin_take (struct cl_target *t, char *err, size_t err_bytes);
int cl_thin_delete (struct cl_target *t, char *err, size_t err_bytes);
uint64_t cl_thin_block_offset (const struct snapshot_layer *s, uint32_t block_plus_one);
void cl_thin_init (struct cluster *c, struct snapshot_layer *s);

#endif
