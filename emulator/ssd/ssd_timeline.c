/* ssd_timeline.c — busy intervals of a channel or link, with gap filling
 * (ssd_timeline.h).  The intervals live in an array window [first,
 * first + count); dropping the past moves `first`, and the window slides
 * back to the array's start when it reaches the end.  Most reservations
 * land at or near the end, so inserting is a short memmove. */
#include "ssd_timeline.h"

#include <stdlib.h>
#include <string.h>

int
ssd_timeline_init (struct ssd_timeline *t, uint32_t capacity)
{
  t->items = malloc ((size_t) capacity * sizeof *t->items);
  t->first = t->count = 0;
  t->capacity = capacity;
  return t->items ? 0 : -1;
}

void
ssd_timeline_free (struct ssd_timeline *t)
{
  free (t->items);
  t->items = NULL;
  t->count = t->capacity = 0;
}

uint64_t
ssd_timeline_last_end (const struct ssd_timeline *t)
{
  return t->count ? t->items[t->first + t->count - 1].end_ns : 0;
}

/* Room for one more at the window's end; false when memory ran out. */
static int
make_room (struct ssd_timeline *t)
{
  if (t->first + t->count < t->capacity)
    return 0;
  if (t->first > 0) {
    memmove (t->items, t->items + t->first, t->count * sizeof *t->items);
    t->first = 0;
    return 0;
  }
  uint32_t capacity = t->capacity * 2;
  struct ssd_interval *grown = realloc (t->items, (size_t) capacity * sizeof *grown);
  if (grown == NULL)
    return -1;
  t->items = grown;
  t->capacity = capacity;
  return 0;
}

uint64_t
ssd_timeline_reserve (struct ssd_timeline *t, uint64_t now_ns, uint64_t ready_ns,
                      uint64_t duration_ns)
{
  /* the past: intervals are disjoint and sorted, so ends are sorted too */
  while (t->count > 0 && t->items[t->first].end_ns <= now_ns) {
    t->first++;
    t->count--;
  }
  if (t->count == 0)
    t->first = 0;
  struct ssd_interval *v = t->items + t->first;
  /* first interval ending after ready (binary search) */
  uint32_t lo = 0, hi = t->count;
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (v[mid].end_ns <= ready_ns)
      lo = mid + 1;
    else
      hi = mid;
  }
  uint64_t start = ready_ns;
  uint32_t i = lo;
  for (; i < t->count; i++) {
    if (v[i].start_ns >= start + duration_ns)
      break;                   /* fits in the gap before interval i */
    if (v[i].end_ns > start)
      start = v[i].end_ns;
  }
  if (duration_ns == 0)
    return start;
  if (make_room (t) < 0)
    abort ();                  /* out of memory mid-model, as the engine's queue */
  v = t->items + t->first;
  memmove (&v[i + 1], &v[i], (t->count - i) * sizeof *v);
  v[i] = (struct ssd_interval) { start, start + duration_ns };
  t->count++;
  return start;
}
