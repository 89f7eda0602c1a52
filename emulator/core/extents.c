/* extents.c — see extents.h. */
#include "extents.h"

#include <stdlib.h>
#include <string.h>

#include "units.h"

size_t
sl_extents_lower_bound (const struct sl_extents *x, uint64_t offset)
{
  size_t lo = 0, hi = x->count;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (x->e[mid].offset_bytes + x->e[mid].length_bytes > offset)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

static int
reserve (struct sl_extents *x, size_t more)
{
  if (x->count + more <= x->capacity)
    return 0;
  size_t capacity = x->capacity ? 2 * x->capacity : 256;
  while (capacity < x->count + more)
    capacity *= 2;
  struct sl_extent *grown = realloc (x->e, capacity * sizeof *grown);
  if (grown == NULL)
    return -1;
  x->e = grown;
  x->capacity = capacity;
  return 0;
}

static inline uint64_t
extent_end (const struct sl_extent *e)
{
  return e->offset_bytes + e->length_bytes;
}

int
sl_extents_add (struct sl_extents *x, uint64_t start, uint64_t end)
{
  if (start >= end)
    return 0;
  if (reserve (x, 1) < 0)
    return -1;
  /* extents ending at >= start touch or overlap on the left */
  size_t i = start > 0 ? sl_extents_lower_bound (x, start - 1) : 0;
  size_t j = i;
  uint64_t merged_start = start, merged_end = end, absorbed = 0;
  while (j < x->count && x->e[j].offset_bytes <= end) {
    merged_start = sl_min_u64 (merged_start, x->e[j].offset_bytes);
    merged_end = sl_max_u64 (merged_end, extent_end (&x->e[j]));
    absorbed += x->e[j].length_bytes;
    j++;
  }
  if (j == i) {
    memmove (&x->e[i + 1], &x->e[i], (x->count - i) * sizeof *x->e);
    x->count++;
  }
  else {
    memmove (&x->e[i + 1], &x->e[j], (x->count - j) * sizeof *x->e);
    x->count -= j - i - 1;
  }
  x->e[i] = (struct sl_extent) { merged_start, merged_end - merged_start };
  x->bytes += (merged_end - merged_start) - absorbed;
  return 0;
}

/* Cuts [start, end) out of x; with out, the cut parts are appended there. */
static int
cut (struct sl_extents *x, uint64_t start, uint64_t end, struct sl_extents *out)
{
  if (start >= end)
    return 0;
  size_t i = sl_extents_lower_bound (x, start);
  while (i < x->count && x->e[i].offset_bytes < end) {
    struct sl_extent *e = &x->e[i];
    uint64_t s = sl_max_u64 (start, e->offset_bytes);
    uint64_t t = sl_min_u64 (end, extent_end (e));
    if (out && sl_extents_add (out, s, t) < 0)
      return -1;
    uint64_t e_start = e->offset_bytes, e_end = extent_end (e);
    x->bytes -= t - s;
    if (s > e_start && t < e_end) {
      /* a hole in the middle: split in two */
      if (reserve (x, 1) < 0)
        return -1;
      e = &x->e[i];
      memmove (&x->e[i + 1], &x->e[i], (x->count - i) * sizeof *x->e);
      x->count++;
      x->e[i] = (struct sl_extent) { e_start, s - e_start };
      x->e[i + 1] = (struct sl_extent) { t, e_end - t };
      return 0;
    }
    if (s > e_start) {
      e->length_bytes = s - e_start;
      i++;
    }
    else if (t < e_end) {
      *e = (struct sl_extent) { t, e_end - t };
      i++;
    }
    else {
      memmove (&x->e[i], &x->e[i + 1], (x->count - i - 1) * sizeof *x->e);
      x->count--;
    }
  }
  return 0;
}

int
sl_extents_remove (struct sl_extents *x, uint64_t start, uint64_t end)
{
  return cut (x, start, end, NULL);
}

int
sl_extents_take (struct sl_extents *x, uint64_t start, uint64_t end,
                   struct sl_extents *out)
{
  return cut (x, start, end, out);
}

bool
sl_extents_covers (const struct sl_extents *x, uint64_t start, uint64_t end)
{
  size_t i = sl_extents_lower_bound (x, start);
  return i < x->count && x->e[i].offset_bytes <= start && extent_end (&x->e[i]) >= end;
}

bool
sl_extents_overlaps (const struct sl_extents *x, uint64_t start, uint64_t end)
{
  size_t i = sl_extents_lower_bound (x, start);
  return i < x->count && x->e[i].offset_bytes < end;
}

void
sl_extents_clear (struct sl_extents *x)
{
  x->count = 0;
  x->bytes = 0;
}

void
sl_extents_free (struct sl_extents *x)
{
  free (x->e);
  *x = (struct sl_extents) { 0 };
}
