/* raid_lun.c — lun=NAME:SIZE parsing and layout (see raid_lun.h). */
#define _GNU_SOURCE
#include "raid_lun.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "device/params.h"

static bool
name_is_valid (const char *name, size_t len)
{
  if (len == 0 || len > RAID_LUN_NAME_MAX)
    return false;
  for (size_t i = 0; i < len; i++) {
    char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
      return false;
  }
  return true;
}

int
raid_lun_table_add (struct raid_lun_table *t, const char *value, char *err, size_t err_bytes)
{
  const char *colon = strchr (value, ':');
  if (colon == NULL) {
    snprintf (err, err_bytes, "lun=%s: expected NAME:SIZE (e.g. lun=db:4G)", value);
    return -1;
  }
  size_t name_len = (size_t) (colon - value);
  if (!name_is_valid (value, name_len)) {
    snprintf (err, err_bytes, "lun=%s: name '%.*s' must be 1 to %u characters of a-z, 0-9, "
              "'_' and '-'", value, (int) name_len, value, RAID_LUN_NAME_MAX);
    return -1;
  }
  uint64_t size_bytes;
  if (sl_parse_size_bytes (colon + 1, &size_bytes) == -1) {
    snprintf (err, err_bytes, "lun=%s: '%s' is not a size (examples: 512, 64M, 10G)",
              value, colon + 1);
    return -1;
  }
  if (size_bytes == 0 || size_bytes % RAID_LUN_SECTOR_BYTES != 0) {
    snprintf (err, err_bytes, "lun=%s: size %llu bytes is not a positive multiple of %u "
              "(the sector size)", value, (unsigned long long) size_bytes,
              RAID_LUN_SECTOR_BYTES);
    return -1;
  }
  char name[RAID_LUN_NAME_MAX + 1];
  memcpy (name, value, name_len);
  name[name_len] = '\0';
  if (raid_lun_find (t, name)) {
    snprintf (err, err_bytes, "lun=%s: duplicate LUN name '%s'", value, name);
    return -1;
  }
  if (t->count == RAID_LUN_MAX) {
    snprintf (err, err_bytes, "lun=%s: too many LUNs (at most %u)", value, RAID_LUN_MAX);
    return -1;
  }
  struct raid_lun *lun = &t->lun[t->count++];
  memset (lun, 0, sizeof *lun);
  memcpy (lun->name, name, name_len + 1);
  lun->size_bytes = size_bytes;
  return 0;
}

int
raid_lun_table_carve (struct raid_lun_table *t, uint64_t capacity_bytes,
                      uint64_t stripe_bytes, char *err, size_t err_bytes)
{
  if (stripe_bytes == 0)
    stripe_bytes = 1;
  uint64_t next_bytes = 0;             /* end of the LUN before */
  for (unsigned i = 0; i < t->count; i++) {
    struct raid_lun *lun = &t->lun[i];
    /* A LUN never starts mid-strip: its I/O maps to members as the same
     * I/O to a one-LUN array would. */
    uint64_t start_bytes = next_bytes % stripe_bytes
      ? next_bytes + (stripe_bytes - next_bytes % stripe_bytes) : next_bytes;
    if (start_bytes > capacity_bytes || lun->size_bytes > capacity_bytes - start_bytes) {
      uint64_t left_bytes = start_bytes < capacity_bytes ? capacity_bytes - start_bytes : 0;
      snprintf (err, err_bytes, "lun=%s:%llu: does not fit: the array holds %llu bytes, "
                "LUNs before it use %llu (stripe-aligned), %llu bytes left",
                lun->name, (unsigned long long) lun->size_bytes,
                (unsigned long long) capacity_bytes, (unsigned long long) start_bytes,
                (unsigned long long) left_bytes);
      return -1;
    }
    lun->offset_bytes = start_bytes;
    next_bytes = start_bytes + lun->size_bytes;
  }
  return 0;
}

struct raid_lun *
raid_lun_find (struct raid_lun_table *t, const char *name)
{
  for (unsigned i = 0; i < t->count; i++)
    if (strcmp (t->lun[i].name, name) == 0)
      return &t->lun[i];
  return NULL;
}

void
raid_lun_names (const struct raid_lun_table *t, char *out, size_t out_bytes)
{
  if (out_bytes == 0)
    return;
  int used = snprintf (out, out_bytes, "%s", t->count ? "" : "none");
  for (unsigned i = 0; i < t->count && used >= 0 && (size_t) used < out_bytes; i++)
    used += snprintf (out + used, out_bytes - (size_t) used, "%s%s", i ? ", " : "",
                      t->lun[i].name);
}
