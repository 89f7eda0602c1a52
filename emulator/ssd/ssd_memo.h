/* ssd_memo.h — results of the steady-state syntheses (ssd_precondition.c,
 * ssd_written_region.c), kept by their arguments.  Each synthesis is
 * deterministic in them and takes 0.1-1 s; a cluster builds dozens of
 * drives of a few kinds, and builds them all twice when it probes its
 * warm state first, so each kind's runs once a process. */
#ifndef STORLAB_SSD_MEMO_H
#define STORLAB_SSD_MEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A key: the synthesis (its first word) and its arguments, unused words 0. */
#define SSD_MEMO_KEY_WORDS 8u
enum ssd_memo_synthesis {
  SSD_MEMO_POPULATION = 1,             /* uniform overwrite's spread of valid counts */
  SSD_MEMO_WRITTEN_REGION,             /* a written region's miniature, settled */
};

/* The value kept for key: a malloc'd copy in *value (*bytes long) and its
 * figure in *figure; false when none is kept. */
bool ssd_memo_get (const uint64_t key[SSD_MEMO_KEY_WORDS], void **value, size_t *bytes,
                   double *figure);
/* Keeps a copy of value for key (while there is room; else nothing). */
void ssd_memo_put (const uint64_t key[SSD_MEMO_KEY_WORDS], const void *value, size_t bytes,
                   double figure);

#endif
