/* ranges.c — see ranges.h. */
#include "ranges.h"

#include <stdlib.h>

#include "core/units.h"

void
cl_ranges_add (struct cl_ranges *r, uint64_t first, uint64_t end)
{
  if (end <= first)
    return;
  if (r->count == r->capacity) {
    size_t grown = r->capacity ? 2 * r->capacity : 16;
    struct cl_range *range = realloc (r->range, grown * sizeof *range);
    if (range == NULL)
      abort ();                /* out of memory mid-model */
    r->range = range;
    r->capacity = grown;
  }
  r->range[r->count++] = (struct cl_range) { .first = first, .end = end };
}

static int
by_first (const void *a, const void *b)
{
  const struct cl_range *x = a, *y = b;
  return x->first < y->first ? -1 : x->first > y->first;
}

uint64_t
cl_ranges_merge (struct cl_ranges *r)
{
  if (r->count == 0)
    return 0;
  qsort (r->range, r->count, sizeof *r->range, by_first);
  size_t merged = 0;
  for (size_t i = 0; i < r->count; i++) {
    if (merged > 0 && r->range[i].first <= r->range[merged - 1].end) {
      r->range[merged - 1].end = sl_max_u64 (r->range[merged - 1].end, r->range[i].end);
      continue;
    }
    r->range[merged++] = r->range[i];
  }
  r->count = merged;
  uint64_t total = 0;
  for (size_t i = 0; i < merged; i++) {
    r->range[i].start = total;
    total += r->range[i].end - r->range[i].first;
  }
  return total;
}

void
cl_ranges_remove (struct cl_ranges *r, uint64_t first, uint64_t end)
{
  size_t count = r->count;
  for (size_t i = 0; i < count; i++) {
    struct cl_range was = r->range[i];
    if (end <= was.first || first >= was.end)
      continue;
    r->range[i].end = sl_max_u64 (was.first, first);      /* the part before, maybe empty */
    if (end < was.end)
      cl_ranges_add (r, end, was.end);                      /* the part after */
  }
  size_t kept = 0;
  for (size_t i = 0; i < r->count; i++)
    if (r->range[i].end > r->range[i].first)
      r->range[kept++] = r->range[i];
  r->count = kept;
}

/* The last merged range whose first unit (by_index: whose index) is at
 * most key; the first where none is. */
static const struct cl_range *
last_from (const struct cl_ranges *r, uint64_t key, bool by_index)
{
  size_t lo = 0, hi = r->count;
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if ((by_index ? r->range[mid].start : r->range[mid].first) <= key)
      lo = mid;
    else
      hi = mid;
  }
  return &r->range[lo];
}

uint64_t
cl_ranges_at (const struct cl_ranges *r, uint64_t i)
{
  const struct cl_range *range = last_from (r, i, true);
  return range->first + (i - range->start);
}

bool
cl_ranges_index_of (const struct cl_ranges *r, uint64_t unit, uint64_t *index)
{
  if (r->count == 0)
    return false;
  const struct cl_range *range = last_from (r, unit, false);
  if (unit < range->first || unit >= range->end)
    return false;
  *index = range->start + (unit - range->first);
  return true;
}

void
cl_ranges_free (struct cl_ranges *r)
{
  free (r->range);
  *r = (struct cl_ranges) { 0 };
}
