/* raid_lun.h — the raid plugin's LUNs: lun=NAME:SIZE keys carving one
 * controller's capacity into consecutive exports, as a real controller
 * carves virtual drives out of one array.  Every LUN shares the
 * controller's cache and members; only its window of the capacity is its
 * own.  Pure bookkeeping (no nbdkit), so the unit tests can drive it. */
#ifndef STORLAB_RAID_LUN_H
#define STORLAB_RAID_LUN_H

#include <stddef.h>
#include <stdint.h>

#define RAID_LUN_MAX 32u
#define RAID_LUN_NAME_MAX 32u            /* [a-z0-9_-]{1,32} */
/* Exports are whole logical sectors (the block size the plugin reports). */
#define RAID_LUN_SECTOR_BYTES 512u

struct sl_device_stats;

struct raid_lun {
  char name[RAID_LUN_NAME_MAX + 1];
  uint64_t size_bytes;
  uint64_t offset_bytes;                 /* set by raid_lun_table_carve */
  struct sl_device_stats *stats;         /* its front-end record (the plugin's) */
};

struct raid_lun_table {
  unsigned count;
  struct raid_lun lun[RAID_LUN_MAX];
};

/* Adds one lun= value ("NAME:SIZE"), in command-line order.  -1 with a
 * line naming the value and the reason (bad name, bad size, duplicate,
 * too many). */
int raid_lun_table_add (struct raid_lun_table *t, const char *value,
                        char *err, size_t err_bytes);
/* Lays the LUNs out one after another, each starting on a stripe_bytes
 * boundary.  -1 with a line naming the first LUN that does not fit,
 * its size and what was left of capacity_bytes. */
int raid_lun_table_carve (struct raid_lun_table *t, uint64_t capacity_bytes,
                          uint64_t stripe_bytes, char *err, size_t err_bytes);
/* The LUN called name, or NULL. */
struct raid_lun *raid_lun_find (struct raid_lun_table *t, const char *name);
/* "a, b, c" ("none" without LUNs), cut to fit out_bytes. */
void raid_lun_names (const struct raid_lun_table *t, char *out, size_t out_bytes);

#endif
