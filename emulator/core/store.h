/* store.h — device contents, kept apart from timing.
 *
 * Memory backing is sparse (4 KiB pages allocated on first write; unwritten
 * ranges read as zeroes).  File backing (file=PATH) uses a sparse file of
 * the device's size, so capacity may exceed host RAM and data survives a
 * restart.
 *
 * Volatility: a write made with volatile_write=true sits in a (modelled)
 * volatile cache.  The store keeps the durable contents of every page such
 * a write touched (a shadow, taken on the first volatile write to a page)
 * until sl_store_persist_all() (FLUSH, or the model destaging) makes it
 * durable.  sl_store_power_loss() discards every volatile write: reads then
 * return the durable contents again.  A non-volatile write (FUA, or write
 * cache off) is durable at once (also for the pages it overwrites: their
 * shadows are updated for the bytes it covers).
 *
 * All functions are thread safe.  Return 0 on success, -1 with errno.
 */
#ifndef STORLAB_STORE_H
#define STORLAB_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL_STORE_PAGE_BYTES 4096u

struct sl_store;

struct sl_store *sl_store_new_memory (uint64_t size_bytes);
/* Opens or creates path; an existing file shorter than size is extended
 * (sparse), a longer one is an error (so a wrong size= never truncates
 * data).  NULL with a one-line reason in err on failure. */
struct sl_store *sl_store_open_file (const char *path, uint64_t size_bytes,
                                     char *err, size_t err_bytes);
/* Whether persisting (and closing) a file store waits for the host's disk
 * (fdatasync); true when opened.  A memory store ignores it. */
void sl_store_set_file_sync (struct sl_store *s, bool sync_to_disk);
/* Flushes a file store (fdatasync unless turned off) and frees everything.
 * Returns 0 or -1. */
int sl_store_close (struct sl_store *s);

uint64_t sl_store_size_bytes (const struct sl_store *s);

int sl_store_read (struct sl_store *s, void *buf, uint64_t length_bytes,
                   uint64_t offset_bytes);
int sl_store_write (struct sl_store *s, const void *buf, uint64_t length_bytes,
                    uint64_t offset_bytes, bool volatile_write);
/* Writes zeroes (also used for trim: the range then reads as zeroes; memory
 * pages wholly inside the range are freed, file ranges are hole-punched). */
int sl_store_zero (struct sl_store *s, uint64_t length_bytes,
                   uint64_t offset_bytes, bool volatile_write);

/* Makes every volatile write durable (drops shadows; fdatasync for files
 * unless turned off). */
int sl_store_persist_all (struct sl_store *s);
/* Simulated power cut: every volatile write is lost. */
int sl_store_power_loss (struct sl_store *s);
/* A power cut that loses only the volatile writes in [offset, +length)
 * (what a controller reports lost): those bytes read their durable
 * contents again; volatile writes elsewhere stay volatile. */
int sl_store_power_loss_range (struct sl_store *s, uint64_t length_bytes,
                               uint64_t offset_bytes);
/* Bytes of pages currently holding volatile (unflushed) data. */
uint64_t sl_store_volatile_bytes (struct sl_store *s);
/* Bytes of host memory held by page data (for reports). */
uint64_t sl_store_resident_bytes (struct sl_store *s);

#endif
