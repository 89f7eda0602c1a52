/* raid_map.c — RAID geometry: where a logical byte lives, and the member
 * I/Os a logical read, write or rebuild needs.
 *
 * Layouts (chunk c = offset / stripe, row r, n members):
 *   RAID 0   member c mod n, row c / n
 *   RAID 1   every member holds every byte at the same offset
 *   RAID 10  pair c mod (n/2) (members 2p, 2p+1), row c / (n/2)
 *   RAID 5   row c / (n-1); P on n-1-(r mod n); data chunk d on (P+1+d) mod n
 *            (left-symmetric, Linux md's default)
 *   RAID 6   row c / (n-2); P as RAID 5, Q on (P+1) mod n, data on (P+2+d) mod n
 */
#define _GNU_SOURCE
#include "raid_map.h"
#include "core/units.h"

#include <stdlib.h>
#include <string.h>

uint32_t
sl_raid_data_members (uint32_t level, uint32_t members)
{
  switch (level) {
  case 0: return members;
  case 1: return 1;
  case 10: return members / 2;
  case 5: return members > 1 ? members - 1 : 0;
  case 6: return members > 2 ? members - 2 : 0;
  default: return 0;
  }
}

uint32_t
sl_raid_min_members (uint32_t level)
{
  switch (level) {
  case 0: return 1;
  case 1: return 2;
  case 10: return 4;
  case 5: return 3;
  case 6: return 4;
  default: return 0;
  }
}

uint64_t
sl_raid_capacity_bytes (const struct sl_raid_layout *l)
{
  uint64_t rows = l->member_bytes / l->stripe_bytes;
  return rows * l->stripe_bytes * sl_raid_data_members (l->level, l->members);
}

void
sl_raid_map (const struct sl_raid_layout *l, uint64_t offset, struct sl_raid_location *loc)
{
  uint64_t chunk = offset / l->stripe_bytes;
  uint64_t within = offset % l->stripe_bytes;
  uint32_t n = l->members;
  uint32_t data = sl_raid_data_members (l->level, n);
  *loc = (struct sl_raid_location) { .parity_member = -1, .q_member = -1, .copies = 1 };
  loc->row = chunk / data;
  loc->data_index = (uint32_t) (chunk % data);
  loc->member_offset_bytes = loc->row * l->stripe_bytes + within;
  switch (l->level) {
  case 0:
    loc->member = loc->data_index;
    break;
  case 1:
    loc->member = 0;
    loc->copies = n;
    break;
  case 10:
    loc->member = 2 * loc->data_index;
    loc->copies = 2;
    break;
  case 5:
  case 6: {
    uint32_t p = n - 1 - (uint32_t) (loc->row % n);
    loc->parity_member = (int32_t) p;
    uint32_t first_data = p + 1;
    if (l->level == 6) {
      loc->q_member = (int32_t) ((p + 1) % n);
      first_data = p + 2;
    }
    loc->member = (first_data + loc->data_index) % n;
    break;
  }
  }
}

/* Member holding data chunk d of row (RAID 5/6). */
static uint32_t
data_member (const struct sl_raid_layout *l, uint64_t row, uint32_t d)
{
  uint32_t n = l->members;
  uint32_t p = n - 1 - (uint32_t) (row % n);
  return (p + (l->level == 6 ? 2 : 1) + d) % n;
}

bool
raid_member_readable (const struct raid_member_view *v, uint32_t member, uint64_t member_end)
{
  if (v->failed_mask & (1u << member))
    return false;
  if ((int) member == v->rebuilding)
    return member_end <= v->rebuild_frontier_bytes;
  return true;
}

bool
raid_member_writable (const struct raid_member_view *v, uint32_t member)
{
  return !(v->failed_mask & (1u << member));
}

/* ------------------------------------------------------------- plans -- */

int
raid_plan_add (struct raid_plan *p, uint32_t member, enum sl_op op, uint32_t phase,
               uint64_t offset, uint64_t length)
{
  if (length == 0 && op != SL_OP_FLUSH)
    return 0;
  if (p->count == p->capacity) {
    size_t capacity = p->capacity ? 2 * p->capacity : 16;
    struct raid_io *grown = realloc (p->io, capacity * sizeof *grown);
    if (grown == NULL)
      return -1;
    p->io = grown;
    p->capacity = capacity;
  }
  p->io[p->count++] = (struct raid_io) { member, op, phase, offset, length };
  return 0;
}

static int
push (struct raid_plan *p, uint32_t member, enum sl_op op, uint32_t phase,
      uint64_t offset, uint64_t length)
{
  return raid_plan_add (p, member, op, phase, offset, length);
}

/* Reads [off, off+len) of a row's chunk position from the survivors so
 * the chunk on `missing` can be computed: every other readable member of
 * the row, as many as there are data chunks. */
static int
push_reconstruct (struct raid_plan *p, const struct sl_raid_layout *l,
                  const struct raid_member_view *v, uint32_t missing,
                  uint64_t member_offset, uint64_t length, uint32_t phase)
{
  uint32_t need = sl_raid_data_members (l->level, l->members);
  for (uint32_t m = 0; m < l->members && need > 0; m++) {
    if (m == missing || !raid_member_readable (v, m, member_offset + length))
      continue;
    if (push (p, m, SL_OP_READ, phase, member_offset, length) < 0)
      return -1;
    need--;
  }
  return 0;
}

static uint32_t
readable_copies (const struct raid_member_view *v, uint32_t first, uint32_t copies,
                 uint64_t member_end)
{
  uint32_t mask = 0;
  for (uint32_t i = 0; i < copies; i++)
    if (raid_member_readable (v, first + i, member_end))
      mask |= 1u << (first + i);
  return mask;
}

int
raid_plan_read (struct raid_plan *p, const struct sl_raid_layout *l,
                const struct raid_member_view *v, raid_pick_fn pick, void *pick_arg,
                uint64_t offset, uint64_t length)
{
  while (length > 0) {
    struct sl_raid_location loc;
    sl_raid_map (l, offset, &loc);
    uint64_t piece = sl_min_u64 (length, l->stripe_bytes - offset % l->stripe_bytes);
    uint64_t member_end = loc.member_offset_bytes + piece;
    uint32_t member = loc.member;
    if (loc.copies > 1) {
      uint32_t mask = readable_copies (v, loc.member, loc.copies, member_end);
      if (mask == 0)
        mask = 1u << loc.member;       /* nothing readable: model the I/O anyway */
      member = pick (pick_arg, loc.member, loc.copies, mask);
      uint32_t all = (uint32_t) (((1ull << loc.copies) - 1) << loc.member);
      if (readable_copies (v, loc.member, loc.copies, member_end) != all)
        p->degraded_pieces++;          /* fewer copies to balance over */
      if (push (p, member, SL_OP_READ, 0, loc.member_offset_bytes, piece) < 0)
        return -1;
    }
    else if (raid_member_readable (v, member, member_end) || loc.parity_member < 0) {
      if (push (p, member, SL_OP_READ, 0, loc.member_offset_bytes, piece) < 0)
        return -1;
    }
    else {
      p->degraded_pieces++;
      if (push_reconstruct (p, l, v, member, loc.member_offset_bytes, piece, 0) < 0)
        return -1;
    }
    offset += piece;
    length -= piece;
  }
  return 0;
}

/* Parity write of one row: the chunks touched ([a, b) within the chunk,
 * a == b untouched) and the hull [lo, hi) the parity must cover. */
static int
plan_parity_row (struct raid_plan *p, const struct sl_raid_layout *l,
                 const struct raid_member_view *v, uint64_t row,
                 const uint64_t *a, const uint64_t *b)
{
  uint32_t n = l->members, data = sl_raid_data_members (l->level, n);
  uint64_t base = row * l->stripe_bytes;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (uint32_t d = 0; d < data; d++)
    if (a[d] < b[d]) {
      lo = sl_min_u64 (lo, a[d]);
      hi = sl_max_u64 (hi, b[d]);
    }
  if (lo >= hi)
    return 0;
  uint32_t pm = n - 1 - (uint32_t) (row % n);
  uint32_t parity[2] = { pm, (pm + 1) % n };
  uint32_t parity_count = l->level == 6 ? 2 : 1;

  /* read-modify-write: old data of the touched chunks and old parity */
  bool rmw_ok = true;
  uint32_t rmw_ios = 0;
  for (uint32_t d = 0; d < data; d++)
    if (a[d] < b[d]) {
      uint32_t m = data_member (l, row, d);
      if (!raid_member_readable (v, m, base + b[d]))
        rmw_ok = false;        /* old data gone: cannot subtract it out */
      rmw_ios += 2;
    }
  for (uint32_t i = 0; i < parity_count; i++)
    if (raid_member_writable (v, parity[i]) && raid_member_readable (v, parity[i], base + hi))
      rmw_ios += 2;
  /* reconstruct-write: the rest of the row's data over [lo, hi) */
  bool rcw_ok = true;
  uint32_t rcw_ios = 0;
  for (uint32_t d = 0; d < data; d++) {
    uint32_t m = data_member (l, row, d);
    bool covers = a[d] <= lo && b[d] >= hi;
    if (!covers) {
      if (!raid_member_readable (v, m, base + hi))
        rcw_ok = false;
      rcw_ios++;
    }
    if (a[d] < b[d] && raid_member_writable (v, m))
      rcw_ios++;
  }
  for (uint32_t i = 0; i < parity_count; i++)
    if (raid_member_writable (v, parity[i]))
      rcw_ios++;

  bool use_rmw = rmw_ok && (!rcw_ok || rmw_ios <= rcw_ios);
  for (uint32_t d = 0; d < data; d++) {
    uint32_t m = data_member (l, row, d);
    if (use_rmw) {
      if (a[d] < b[d] && push (p, m, SL_OP_READ, 0, base + a[d], b[d] - a[d]) < 0)
        return -1;
    }
    else if (!(a[d] <= lo && b[d] >= hi) && raid_member_readable (v, m, base + hi)) {
      /* the part of [lo, hi) this chunk's new data does not supply */
      if (push (p, m, SL_OP_READ, 0, base + lo, hi - lo) < 0)
        return -1;
    }
    if (a[d] < b[d] && raid_member_writable (v, m)
        && push (p, m, SL_OP_WRITE, 1, base + a[d], b[d] - a[d]) < 0)
      return -1;
  }
  for (uint32_t i = 0; i < parity_count; i++) {
    uint32_t m = parity[i];
    if (!raid_member_writable (v, m))
      continue;
    if (use_rmw && raid_member_readable (v, m, base + hi)
        && push (p, m, SL_OP_READ, 0, base + lo, hi - lo) < 0)
      return -1;
    if (push (p, m, SL_OP_WRITE, 1, base + lo, hi - lo) < 0)
      return -1;
  }
  return 0;
}

int
raid_plan_write (struct raid_plan *p, const struct sl_raid_layout *l,
                 const struct raid_member_view *v, uint64_t offset, uint64_t length)
{
  uint32_t data = sl_raid_data_members (l->level, l->members);
  uint64_t row_bytes = (uint64_t) data * l->stripe_bytes;
  while (length > 0) {
    if (l->level == 5 || l->level == 6) {
      /* one row at a time: what each chunk of the row receives */
      uint64_t row = offset / row_bytes;
      uint64_t row_end = (row + 1) * row_bytes;
      uint64_t piece_end = sl_min_u64 (offset + length, row_end);
      uint64_t a[SL_RAID_MAX_MEMBERS], b[SL_RAID_MAX_MEMBERS];
      for (uint32_t d = 0; d < data; d++) {
        uint64_t chunk_start = row * row_bytes + d * l->stripe_bytes;
        uint64_t s = sl_max_u64 (offset, chunk_start);
        uint64_t e = sl_min_u64 (piece_end, chunk_start + l->stripe_bytes);
        a[d] = s < e ? s - chunk_start : 0;
        b[d] = s < e ? e - chunk_start : 0;
      }
      if (plan_parity_row (p, l, v, row, a, b) < 0)
        return -1;
      length -= piece_end - offset;
      offset = piece_end;
      continue;
    }
    struct sl_raid_location loc;
    sl_raid_map (l, offset, &loc);
    uint64_t piece = sl_min_u64 (length, l->stripe_bytes - offset % l->stripe_bytes);
    for (uint32_t i = 0; i < loc.copies; i++)
      if ((raid_member_writable (v, loc.member + i) || l->level == 0)
          && push (p, loc.member + i, SL_OP_WRITE, 1, loc.member_offset_bytes, piece) < 0)
        return -1;
    offset += piece;
    length -= piece;
  }
  return 0;
}

int
raid_plan_rebuild (struct raid_plan *p, const struct sl_raid_layout *l,
                   const struct raid_member_view *v, raid_pick_fn pick, void *pick_arg,
                   uint32_t member, uint64_t member_offset, uint64_t length)
{
  uint64_t end = member_offset + length;
  if (l->level == 1 || l->level == 10) {
    uint32_t first = l->level == 1 ? 0 : member & ~1u;
    uint32_t copies = l->level == 1 ? l->members : 2;
    uint32_t mask = readable_copies (v, first, copies, end) & ~(1u << member);
    if (mask != 0 && push (p, pick (pick_arg, first, copies, mask), SL_OP_READ, 0,
                           member_offset, length) < 0)
      return -1;
  }
  else if (push_reconstruct (p, l, v, member, member_offset, length, 0) < 0)
    return -1;
  return push (p, member, SL_OP_WRITE, 1, member_offset, length);
}

static int
io_order (const void *x, const void *y)
{
  const struct raid_io *a = x, *b = y;
  if (a->phase != b->phase)
    return a->phase < b->phase ? -1 : 1;
  if (a->member != b->member)
    return a->member < b->member ? -1 : 1;
  if (a->offset_bytes != b->offset_bytes)
    return a->offset_bytes < b->offset_bytes ? -1 : 1;
  return (int) a->op - (int) b->op;
}

void
raid_plan_finish (struct raid_plan *p)
{
  if (p->count == 0)
    return;
  qsort (p->io, p->count, sizeof *p->io, io_order);
  size_t out = 0;
  for (size_t i = 1; i < p->count; i++) {
    struct raid_io *last = &p->io[out];
    const struct raid_io *next = &p->io[i];
    uint64_t last_end = last->offset_bytes + last->length_bytes;
    if (next->phase == last->phase && next->member == last->member && next->op == last->op
        && next->offset_bytes <= last_end) {
      /* adjacent or overlapping (a parity hull read twice): one I/O */
      uint64_t end = sl_max_u64 (last_end, next->offset_bytes + next->length_bytes);
      last->length_bytes = end - last->offset_bytes;
    }
    else
      p->io[++out] = *next;
  }
  p->count = out + 1;
}

size_t
raid_plan_phase1_start (const struct raid_plan *p)
{
  size_t i = 0;
  while (i < p->count && p->io[i].phase == 0)
    i++;
  return i;
}

void
raid_plan_reset (struct raid_plan *p)
{
  p->count = 0;
  p->degraded_pieces = 0;
}

void
raid_plan_free (struct raid_plan *p)
{
  free (p->io);
  *p = (struct raid_plan) { 0 };
}
