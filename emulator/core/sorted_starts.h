/* sorted_starts.h — where a position falls among consecutive pieces given
 * by their ascending first positions (a volume's parts, a layout's blocks). */
#ifndef STORLAB_SORTED_STARTS_H
#define STORLAB_SORTED_STARTS_H

#include <stddef.h>
#include <stdint.h>

/* The last piece i of count (>= 1) with starts[i] <= at; 0 when at is
 * before every piece's start but the first's. */
static inline size_t
sl_piece_at (const uint64_t *starts, size_t count, uint64_t at)
{
  size_t lo = 0, hi = count;
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (starts[mid] <= at)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

#endif
