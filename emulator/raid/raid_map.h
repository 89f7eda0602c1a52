/* raid_map.h — member I/O plans of a RAID layout (raid_map.c): which
 * member I/Os a logical read, write or rebuild takes, in two phases (reads
 * of old data and parity first, then writes).  The RAID controller model
 * and the cluster's md RAID layer both plan with it. */
#ifndef STORLAB_RAID_MAP_H
#define STORLAB_RAID_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/request.h"
#include "raid.h"

/* One member I/O of a plan.  Phase 0 (reads: old data, parity, survivors)
 * completes before phase 1 (writes) is issued. */
struct raid_io {
  uint32_t member;
  enum sl_op op;
  uint32_t phase;
  uint64_t offset_bytes;
  uint64_t length_bytes;
};

struct raid_plan {
  struct raid_io *io;
  size_t count, capacity;
  uint32_t degraded_pieces;            /* reads reconstructed from survivors */
};

/* Which members can serve what, at planning time. */
struct raid_member_view {
  uint32_t failed_mask;
  int rebuilding;                      /* member being rebuilt, or -1 */
  uint64_t rebuild_frontier_bytes;     /* rebuilt below this member offset */
};

/* Picks one of the readable copies first..first+copies-1 (bit set in
 * readable_mask) for a mirrored read. */
typedef uint32_t (*raid_pick_fn) (void *arg, uint32_t first, uint32_t copies,
                                  uint32_t readable_mask);

bool raid_member_readable (const struct raid_member_view *v, uint32_t member,
                           uint64_t member_end_bytes);
bool raid_member_writable (const struct raid_member_view *v, uint32_t member);

/* Each returns 0, or -1 when out of memory.  Plans accumulate: several
 * extents can go into one plan; raid_plan_finish then sorts each phase by
 * (member, offset) and merges adjacent I/Os of the same kind. */
int raid_plan_add (struct raid_plan *p, uint32_t member, enum sl_op op, uint32_t phase,
                   uint64_t offset_bytes, uint64_t length_bytes);
int raid_plan_read (struct raid_plan *p, const struct sl_raid_layout *l,
                    const struct raid_member_view *v, raid_pick_fn pick, void *pick_arg,
                    uint64_t offset_bytes, uint64_t length_bytes);
int raid_plan_write (struct raid_plan *p, const struct sl_raid_layout *l,
                     const struct raid_member_view *v,
                     uint64_t offset_bytes, uint64_t length_bytes);
/* Rebuilds member's [member_offset, +length): reads from survivors, writes it. */
int raid_plan_rebuild (struct raid_plan *p, const struct sl_raid_layout *l,
                       const struct raid_member_view *v, raid_pick_fn pick, void *pick_arg,
                       uint32_t member, uint64_t member_offset_bytes, uint64_t length_bytes);
void raid_plan_finish (struct raid_plan *p);
/* Index of the first phase-1 I/O (after finish). */
size_t raid_plan_phase1_start (const struct raid_plan *p);
void raid_plan_reset (struct raid_plan *p);
void raid_plan_free (struct raid_plan *p);

#endif
