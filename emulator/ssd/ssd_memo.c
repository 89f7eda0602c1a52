/* ssd_memo.c — the syntheses' results by their arguments (ssd_memo.h). */
#include "ssd_memo.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Kinds of drive a process builds, times the syntheses a kind needs. */
#define MEMO_ENTRIES 32u

struct memo_entry {
  uint64_t key[SSD_MEMO_KEY_WORDS];
  double figure;
  size_t bytes;
  unsigned char value[];
};

static struct {
  pthread_mutex_t lock;
  struct memo_entry *entry[MEMO_ENTRIES];
  unsigned count;
} memo = { .lock = PTHREAD_MUTEX_INITIALIZER };

bool
ssd_memo_get (const uint64_t key[SSD_MEMO_KEY_WORDS], void **value, size_t *bytes, double *figure)
{
  bool found = false;
  pthread_mutex_lock (&memo.lock);
  for (unsigned i = 0; i < memo.count && !found; i++) {
    const struct memo_entry *e = memo.entry[i];
    if (memcmp (e->key, key, sizeof e->key) != 0)
      continue;
    *value = malloc (e->bytes ? e->bytes : 1);
    if (*value != NULL) {
      memcpy (*value, e->value, e->bytes);
      *bytes = e->bytes;
      *figure = e->figure;
      found = true;
    }
  }
  pthread_mutex_unlock (&memo.lock);
  return found;
}

void
ssd_memo_put (const uint64_t key[SSD_MEMO_KEY_WORDS], const void *value, size_t bytes,
              double figure)
{
  struct memo_entry *e = malloc (sizeof *e + bytes);
  if (e == NULL)
    return;
  memcpy (e->key, key, sizeof e->key);
  e->figure = figure;
  e->bytes = bytes;
  memcpy (e->value, value, bytes);
  pthread_mutex_lock (&memo.lock);
  if (memo.count < MEMO_ENTRIES)
    memo.entry[memo.count++] = e;
  else
    free (e);
  pthread_mutex_unlock (&memo.lock);
}
