/* extents.h — a sorted list of byte ranges: what a write cache holds dirty
 * (the HDD's buffer, the RAID controller's cache) and what a power cut
 * lost.  Disjoint and non-touching, so a sequential stream of small writes
 * becomes one extent (coalescing); lookups are binary searches. */
#ifndef STORLAB_EXTENTS_H
#define STORLAB_EXTENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sl_extent {
  uint64_t offset_bytes;
  uint64_t length_bytes;
};

/* { 0 } is an empty list. */
struct sl_extents {
  struct sl_extent *e;
  size_t count, capacity;
  uint64_t bytes;                      /* sum of the lengths */
};

/* Adds [start, end), merging what it overlaps or touches.  -1: no memory. */
int sl_extents_add (struct sl_extents *x, uint64_t start, uint64_t end);
/* Removes [start, end) (an extent it splits becomes two).  -1: no memory. */
int sl_extents_remove (struct sl_extents *x, uint64_t start, uint64_t end);
/* Moves the parts of x inside [start, end) to out (added).  -1: no memory. */
int sl_extents_take (struct sl_extents *x, uint64_t start, uint64_t end,
                     struct sl_extents *out);
/* Does one extent hold all of [start, end)? */
bool sl_extents_covers (const struct sl_extents *x, uint64_t start, uint64_t end);
bool sl_extents_overlaps (const struct sl_extents *x, uint64_t start, uint64_t end);
/* Index of the first extent ending after offset (count if none). */
size_t sl_extents_lower_bound (const struct sl_extents *x, uint64_t offset);
void sl_extents_clear (struct sl_extents *x);
void sl_extents_free (struct sl_extents *x);

#endif
