/* raid_power.c — what a power cut takes from the members' own write
 * caches, in logical (LUN) terms.
 *
 * A member whose write cache is on acknowledges a write once it is in its
 * buffer; the controller then counts it written (destaged, or a
 * write-through done) although it is not on the member's media until the
 * drive writes it back or is flushed.  At a power cut each member says
 * which of its byte ranges are still only in its buffer
 * (sl_model_ops.volatile_ranges); those are mapped back to logical ranges:
 *   - RAID 1 / 10: a block survives if any copy reached media, so a
 *     logical range is lost only where every live copy lost it;
 *   - RAID 0 / 5 / 6: a logical range is lost where the member holding its
 *     data lost it.  A lost parity (P/Q) piece alone loses no data: reads
 *     return the data chunk, which is on media; the row's parity is stale
 *     (the RAID-5 write hole) and a later resync would fix it.  We chose
 *     this because it is what a read after the cut returns; the array's
 *     redundancy for that row is not reported.
 * Failed members hold nothing and are skipped.  Then every member drops
 * its buffer (sl_model_ops.power_cut).
 */
#define _GNU_SOURCE
#include "raid_internal.h"
#include "core/units.h"

#include <stdlib.h>

struct collect {
  struct sl_extents *x;
  uint64_t bytes;
  int result;
};

static void
collect_range (void *arg, uint64_t offset_bytes, uint64_t length_bytes)
{
  struct collect *c = arg;
  c->bytes += length_bytes;
  if (c->result == 0)
    c->result = sl_extents_add (c->x, offset_bytes, offset_bytes + length_bytes);
}

/* The logical offset of member byte member_offset, or false for parity
 * (and beyond the used part of the member). */
static bool
member_to_logical (const struct sl_raid_layout *l, uint32_t member, uint64_t member_offset,
                   uint64_t *logical)
{
  if (member_offset >= l->member_bytes)
    return false;
  uint64_t row = member_offset / l->stripe_bytes;
  uint64_t within = member_offset % l->stripe_bytes;
  uint32_t n = l->members;
  uint64_t data = sl_raid_data_members (l->level, n);
  uint32_t d;
  switch (l->level) {
  case 0: d = member; break;
  case 1: d = 0; break;
  case 10: d = member / 2; break;
  case 5:
  case 6: {
    uint32_t p = n - 1 - (uint32_t) (row % n);
    uint32_t parity_count = l->level == 6 ? 2 : 1;
    uint32_t after_p = (member + n - p) % n;   /* 0: P, 1: Q (RAID 6) or data 0 */
    if (after_p < parity_count)
      return false;
    d = after_p - parity_count;
    break;
  }
  default: return false;
  }
  *logical = (row * data + d) * l->stripe_bytes + within;
  return true;
}

/* Member ranges -> logical ranges, strip by strip. */
static int
map_to_logical (const struct sl_raid_layout *l, uint32_t member, const struct sl_extents *in,
                struct sl_extents *out)
{
  for (size_t i = 0; i < in->count; i++) {
    uint64_t at = in->e[i].offset_bytes, end = at + in->e[i].length_bytes;
    while (at < end) {
      uint64_t strip_end = (at / l->stripe_bytes + 1) * l->stripe_bytes;
      uint64_t piece = sl_min_u64 (end, strip_end) - at;
      uint64_t logical;
      if (member_to_logical (l, member, at, &logical)
          && sl_extents_add (out, logical, logical + piece) < 0)
        return -1;
      at += piece;
    }
  }
  return 0;
}

/* x := x ∩ y (removes y's gaps from x). */
static int
intersect (struct sl_extents *x, const struct sl_extents *y, uint64_t capacity)
{
  uint64_t gap_start = 0;
  for (size_t i = 0; i < y->count; i++) {
    if (sl_extents_remove (x, gap_start, y->e[i].offset_bytes) < 0)
      return -1;
    gap_start = y->e[i].offset_bytes + y->e[i].length_bytes;
  }
  return sl_extents_remove (x, gap_start, capacity);
}

static int
add_all (struct sl_extents *to, const struct sl_extents *from)
{
  for (size_t i = 0; i < from->count; i++)
    if (sl_extents_add (to, from->e[i].offset_bytes,
                          from->e[i].offset_bytes + from->e[i].length_bytes) < 0)
      return -1;
  return 0;
}

/* Members sharing mirror group g: RAID 1 one group of all, RAID 10 pairs,
 * others one member per group. */
static uint32_t
group_of (uint32_t level, uint32_t member)
{
  return level == 1 ? 0 : level == 10 ? member / 2 : member;
}

int
raid_member_power_cut (struct raid_model *m, struct sl_extents *lost,
                       uint64_t *dropped_bytes)
{
  uint32_t n = m->config.members;
  struct sl_extents logical[SL_RAID_MAX_MEMBERS] = { { 0 } };
  bool live[SL_RAID_MAX_MEMBERS] = { false };
  int result = 0;
  *dropped_bytes = 0;
  for (uint32_t i = 0; i < n && result == 0; i++) {
    const struct sl_model *model = &m->member[i].model;
    live[i] = m->member[i].state != SL_RAID_MEMBER_FAILED;
    if (!live[i] || !model->volatile_write_cache || model->ops->volatile_ranges == NULL)
      continue;
    struct sl_extents member_ranges = { 0 };
    struct collect c = { .x = &member_ranges };
    model->ops->volatile_ranges (model->self, collect_range, &c);
    *dropped_bytes += c.bytes;
    result = c.result;
    if (result == 0)
      result = map_to_logical (&m->layout, i, &member_ranges, &logical[i]);
    sl_extents_free (&member_ranges);
  }
  /* per mirror group: the intersection of its live copies' losses */
  for (uint32_t g = 0; g < n && result == 0; g++) {
    struct sl_extents group = { 0 };
    bool first = true;
    for (uint32_t i = 0; i < n && result == 0; i++) {
      if (group_of (m->layout.level, i) != g || !live[i])
        continue;
      result = first ? add_all (&group, &logical[i])
        : intersect (&group, &logical[i], m->capacity_bytes);
      first = false;
    }
    if (result == 0)
      result = add_all (lost, &group);
    sl_extents_free (&group);
  }
  for (uint32_t i = 0; i < n; i++) {
    sl_extents_free (&logical[i]);
    const struct sl_model *model = &m->member[i].model;
    if (model->ops->power_cut)
      model->ops->power_cut (model->self);
  }
  return result;
}

uint64_t
raid_member_volatile_bytes (const struct raid_model *m)
{
  uint64_t total = 0;
  for (uint32_t i = 0; i < m->config.members; i++) {
    const struct sl_model *model = &m->member[i].model;
    if (m->member[i].state == SL_RAID_MEMBER_FAILED || !model->volatile_write_cache
        || model->ops->volatile_ranges == NULL)
      continue;
    struct collect c = { .x = NULL, .result = -1 };    /* count only */
    model->ops->volatile_ranges (model->self, collect_range, &c);
    total += c.bytes;
  }
  return total;
}
