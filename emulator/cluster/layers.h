/* layers.h — the constructors of every kind of target a cluster is built
 * of (layer.h says what a target is).  Each returns NULL with a one-line
 * reason in err when its arguments cannot make one. */
#ifndef STORLAB_CLUSTER_LAYERS_H
#define STORLAB_CLUSTER_LAYERS_H

#include <stddef.h>
#include <stdint.h>

#include "core/model.h"
#include "layer.h"

struct cluster;

/* layer_device.c: a device model (hdd, ssd, raid) in the cluster's engine;
 * the target takes ownership of model. */
struct cl_target *cl_device_new (struct cluster *c, const char *node, const char *name,
                                 struct sl_model model, char *err, size_t err_bytes);
/* [offset, offset + length) of t (a device, or a slice of one) is written
 * as a circular log, next at oldest_bytes (a write buffer's data area): a
 * drive whose state depends on it (an SSD in steady state) starts in the
 * steady state of that pattern (sl_ssd_model_lay_out_log); other devices
 * and targets have nothing to change.  1 when laid out, 0 when not, -1
 * with err. */
int cl_device_written_as_log (struct cl_target *t, uint64_t offset_bytes, uint64_t length_bytes,
                              uint64_t oldest_bytes, char *err, size_t err_bytes);
/* ... and the memory that layout of length_bytes would take (0: none). */
uint64_t cl_device_log_bytes (const struct cl_target *t, uint64_t length_bytes);

/* layer_md.c: md RAID 0/1/10/5/6 over members, chunk_bytes per chunk, each
 * member's data starting data_offset_bytes in (md's superblock and bitmap).
 * RAID 0 with no data offset is also LVM's striped segment. */
struct cl_target *cl_md_new (struct cluster *c, const char *node, const char *name,
                             unsigned level, uint64_t chunk_bytes, uint64_t data_offset_bytes,
                             struct cl_target *const *members, unsigned count,
                             char *err, size_t err_bytes);

/* LVM's striped segment: RAID 0 of members without md's offset (one member:
 * the member itself).  Not listed: the disk group above it is. */
struct cl_target *cl_stripe_new (struct cluster *c, const char *node, const char *name,
                                 uint64_t stripe_bytes, struct cl_target *const *members,
                                 unsigned count, char *err, size_t err_bytes);
/* The nodes holding an md's members (one each, in order): a node going
 * down fails its members (cl_md_node_event), coming back resyncs what its
 * bitmap says they missed.  cl_md_node_check: -1 with err when node going
 * down would make the array lose more than it tolerates (whether its home
 * still runs is the caller's to weigh); 0 for a target that is no md. */
void cl_md_set_member_nodes (struct cl_target *t, const unsigned *nodes);
/* md's own code runs on cpu (its node's) for every I/O t takes, at the
 * host's per_md_io_ns; nothing when t is no md (a one-leg mirror). */
void cl_md_runs_on (struct cl_target *t, struct cl_cpu *cpu);
int cl_md_node_check (const struct cl_target *t, unsigned node, char *err, size_t err_bytes);
void cl_md_node_event (struct cl_target *t, unsigned node, bool down);

/* A replicated volume: md RAID-1 over legs, the first local, the others
 * write-mostly (reads always from the first). */
struct cl_target *cl_mirror_new (struct cluster *c, const char *node, const char *name,
                                 uint64_t data_offset_bytes, struct cl_target *const *legs,
                                 unsigned count, char *err, size_t err_bytes);

/* A workload volume's storage policy (not listed: one per volume): md
 * RAID-1 over copies (reads from the first when it is the node's own,
 * else from the least busy), or md RAID-5/6 over pieces. */
struct cl_target *cl_volume_mirror_new (struct cluster *c, const char *node, const char *name,
                                        struct cl_target *const *legs, unsigned count,
                                        bool first_is_local, char *err, size_t err_bytes);
struct cl_target *cl_volume_md_new (struct cluster *c, const char *node, const char *name,
                                    unsigned level, uint64_t chunk_bytes,
                                    struct cl_target *const *members, unsigned count,
                                    char *err, size_t err_bytes);

/* layer_linear.c: parts one after another (LVM's linear allocation over
 * segments), and a window [offset, offset + length) of one target (an LV,
 * a cache device's region). */
struct cl_target *cl_linear_new (struct cluster *c, const char *node, const char *name,
                                 struct cl_target *const *parts, unsigned count,
                                 char *err, size_t err_bytes);
struct cl_target *cl_slice_new (struct cluster *c, const char *node, const char *name,
                                struct cl_target *below, uint64_t offset_bytes,
                                uint64_t length_bytes, bool listed, char *err, size_t err_bytes);

/* layer_integrity.c: dm-integrity (bitmap mode, crc32c per 4 KiB block)
 * over below: each write also writes its tag blocks, each section's tags
 * are read once. */
struct cl_target *cl_integrity_new (struct cluster *c, const char *node, const char *name,
                                    struct cl_target *below, char *err, size_t err_bytes);
/* The bytes below that hold data_bytes of data and their metadata. */
uint64_t cl_integrity_backing_bytes (uint64_t data_bytes);

/* layer_data_reduction.c: an all-flash disk group's deduplication (dedup)
 * and compression at destage, over its capacity: dedupe_percent of the
 * blocks duplicates, every block shrinking by compress_percent; the CPU it
 * takes on cpu (the node's host).  Listed: its counters say what it saved. */
struct cl_cpu;
struct cl_target *cl_data_reduction_new (struct cluster *c, const char *node, const char *name,
                                         struct cl_target *below, struct cl_cpu *cpu, bool dedup,
                                         unsigned dedupe_percent, unsigned compress_percent,
                                         char *err, size_t err_bytes);

/* layer_writecache.c: dm-writecache: writes land in a buffer on the cache
 * region and go to the origin later (watermark writeback). */
struct cl_writecache_config {
  uint64_t block_bytes;                /* dm-writecache's block size: 4096 */
  uint32_t high_watermark_percent;     /* writeback starts above: 50 */
  uint32_t low_watermark_percent;      /* ... and stops below: 45 */
  uint32_t writeback_jobs;             /* passes start below this many copies in flight */
  uint64_t pause_writeback_ns;         /* no pass until writes around were idle this long, 0: none */
};
void cl_writecache_defaults (struct cl_writecache_config *config);
struct cl_target *cl_writecache_new (struct cluster *c, const char *node, const char *name,
                                     struct cl_target *origin, struct cl_target *buffer,
                                     const struct cl_writecache_config *config,
                                     char *err, size_t err_bytes);

/* layer_readcache.c: dm-cache in writethrough mode with a promotion policy
 * in the spirit of smq: reads of cached chunks come from the cache region,
 * chunks read often enough are promoted (copied in the background). */
struct cl_readcache_config {
  uint64_t chunk_bytes;                /* 0: as lvm picks it for the cache size */
  uint64_t migration_threshold_bytes;  /* promotion copies in flight at most */
  uint32_t promote_after_misses;       /* a chunk is promoted at this miss */
};
void cl_readcache_defaults (struct cl_readcache_config *config);
/* The data part of an lvm cache volume (--cachevol) of cachevol_bytes, its
 * dm-cache metadata first; 0 where the metadata takes it all. */
uint64_t cl_readcache_data_bytes (uint64_t cachevol_bytes,
                                  const struct cl_readcache_config *config,
                                  uint64_t extent_bytes);
struct cl_target *cl_readcache_new (struct cluster *c, const char *node, const char *name,
                                    struct cl_target *origin, struct cl_target *cache,
                                    const struct cl_readcache_config *config,
                                    char *err, size_t err_bytes);

/* A workload volume's snapshots (layer_snapshot.c): redo-log (dm-snapshot
 * overlays, room_bytes each log) or redirect-on-write (dm-thin, room_bytes of
 * pool metadata) over base, which holds the volume and that room; up to
 * depth snapshots, none at the start. */
struct cl_target *cl_snapshot_new (struct cluster *c, const char *node, const char *name,
                                   struct cl_target *base, bool redo_log, uint64_t volume_bytes,
                                   unsigned depth, uint64_t room_bytes, char *err,
                                   size_t err_bytes);
/* The base such a volume needs. */
uint64_t cl_snapshot_base_bytes (bool redo_log, uint64_t volume_bytes, unsigned depth,
                                 uint64_t room_bytes);
bool cl_is_snapshot_layer (const struct cl_target *t);
/* Takes a snapshot (take) or deletes the oldest; -1 with err when the
 * volume has depth snapshots already, or none. */
int cl_snapshot_event (struct cl_target *t, bool take, char *err, size_t err_bytes);

#endif
