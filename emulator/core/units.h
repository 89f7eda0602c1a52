/* units.h — the units every file counts in: sizes in bytes, times in
 * nanoseconds (design.md), and the conversions a datasheet's figures need. */
#ifndef STORLAB_UNITS_H
#define STORLAB_UNITS_H

#include <stdint.h>

/* Binary multiples, as nbdkit's size syntax (4k, 1G) reads them. */
#define KIB UINT64_C (1024)
#define MIB (KIB * KIB)
#define GIB (MIB * KIB)
#define TIB (GIB * KIB)

/* Doubles: models work a datasheet's ms and µs figures in floating ns. */
#define NS_PER_US 1e3
#define NS_PER_MS 1e6
#define NS_PER_S 1e9

static inline uint64_t
sl_min_u64 (uint64_t a, uint64_t b)
{
  return a < b ? a : b;
}

static inline uint64_t
sl_max_u64 (uint64_t a, uint64_t b)
{
  return a > b ? a : b;
}

#endif
