/* ranges.h — a list of unit ranges (blocks, chunks) gathered one by one,
 * then sorted and merged: what a cache's warm-up is given, region after
 * region, before it settles on its share of all of them. */
#ifndef STORLAB_CLUSTER_RANGES_H
#define STORLAB_CLUSTER_RANGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cl_range {
  uint64_t first, end;                 /* units [first, end) */
  uint64_t start;                      /* after merging: units in the ranges before */
};

struct cl_ranges {
  struct cl_range *range;
  size_t count, capacity;
};

void cl_ranges_add (struct cl_ranges *r, uint64_t first, uint64_t end);
/* Sorts and merges overlapping or touching ranges; returns the units in all. */
uint64_t cl_ranges_merge (struct cl_ranges *r);
/* Takes [first, end) out of every range (one it splits becomes two). */
void cl_ranges_remove (struct cl_ranges *r, uint64_t first, uint64_t end);
/* The unit at index i of the merged ranges (i below what merge returned). */
uint64_t cl_ranges_at (const struct cl_ranges *r, uint64_t i);
/* The index of unit in the merged ranges (cl_ranges_at's inverse); false
 * where none holds it. */
bool cl_ranges_index_of (const struct cl_ranges *r, uint64_t unit, uint64_t *index);
void cl_ranges_free (struct cl_ranges *r);

#endif
