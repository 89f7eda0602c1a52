/* spec_local.c — a cluster spec's local statements: each node's local
 * volume as the lab builds it (the format: cluster_spec.c): one disk, md
 * RAID over disks, or a disk group (its capacity LV, read cache, write
 * buffer, deduplication and compression), and with volume-group=per-device
 * the volume group made of each capacity disk's region. */
#define _GNU_SOURCE
#include "spec_reader.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layers.h"

/* Splits the words of a local statement into KEY=VALUE options and device
 * names (in order). */
struct local_args {
  char *key[16], *value[16];
  unsigned pairs;
  struct cl_target *device[64];
  unsigned devices;
};

static int
local_args (struct spec *s, unsigned node, char **w, unsigned n, unsigned first,
            struct local_args *a)
{
  memset (a, 0, sizeof *a);
  for (unsigned i = first; i < n; i++) {
    char *key, *value;
    if (spec_split_pair (w[i], &key, &value)) {
      if (a->pairs == 16)
        return spec_fail (s, "local %s: too many KEY=VALUE words", w[1]);
      a->key[a->pairs] = key;
      a->value[a->pairs++] = value;
      continue;
    }
    if (a->devices == 64)
      return spec_fail (s, "local %s: more than 64 devices", w[1]);
    struct cl_target *t = spec_device_of (s, node, w[i]);
    if (t == NULL)
      return -1;
    for (unsigned k = 0; k < a->devices; k++)
      if (a->device[k] == t)
        return spec_fail (s, "local %s: device '%s' listed twice", w[1], w[i]);
    a->device[a->devices++] = t;
  }
  if (a->devices == 0)
    return spec_fail (s, "local %s: names no device", w[1]);
  return 0;
}

static const char *
arg (const struct local_args *a, const char *key)
{
  for (unsigned i = 0; i < a->pairs; i++)
    if (strcmp (a->key[i], key) == 0)
      return a->value[i];
  return NULL;
}

static int
known_args (struct spec *s, const struct local_args *a, const char *what,
            const char *const known[])
{
  for (unsigned i = 0; i < a->pairs; i++) {
    bool ok = false;
    for (unsigned k = 0; known[k] && !ok; k++)
      ok = strcmp (a->key[i], known[k]) == 0;
    if (!ok)
      return spec_fail (s, "%s: unknown key '%s'", what, a->key[i]);
  }
  return 0;
}

static struct cl_target *
local_raid (struct spec *s, unsigned node, const struct local_args *a)
{
  static const char *const known[] = { "level", "chunk", "data-offset", NULL };
  if (known_args (s, a, "local raid", known) < 0)
    return NULL;
  const char *level = arg (a, "level"), *chunk = arg (a, "chunk");
  if (level == NULL || chunk == NULL) {
    spec_fail (s, "local raid: needs level= and chunk=");
    return NULL;
  }
  double l;
  uint64_t chunk_bytes, offset_bytes = 0;
  if (spec_number (s, "level", level, 0, 10, &l) < 0 || spec_size (s, "chunk", chunk, &chunk_bytes) < 0
      || (arg (a, "data-offset") && spec_size (s, "data-offset", arg (a, "data-offset"),
                                               &offset_bytes) < 0))
    return NULL;
  char name[96], why[256];
  snprintf (name, sizeof name, "%s/md0", s->c->node[node].name);
  struct cl_target *t = cl_md_new (s->c, s->c->node[node].name, name, (unsigned) l, chunk_bytes,
                                   offset_bytes, a->device, a->devices, why, sizeof why);
  if (t == NULL)
    spec_fail (s, "local raid: %s", why);
  return t;
}

/* space-efficiency=dedup-compression|compression on an all-flash disk
 * group: the data reduction layer over its capacity (*data replaced), what
 * the data is like from dedupe-percent= and compress-percent= (0..100, the
 * workload's fio dedupe_percentage and buffer_compress_percentage). */
static int
reduction_over (struct spec *s, unsigned node, const struct local_args *a, bool hybrid,
                struct cl_target **data)
{
  const char *mode = arg (a, "space-efficiency");
  double dedupe = 0, compress = 0;
  if ((arg (a, "dedupe-percent") && spec_number (s, "dedupe-percent", arg (a, "dedupe-percent"),
                                                 0, 100, &dedupe) < 0)
      || (arg (a, "compress-percent") && spec_number (s, "compress-percent",
                                                      arg (a, "compress-percent"), 0, 100,
                                                      &compress) < 0))
    return -1;
  if (mode == NULL || strcmp (mode, "none") == 0) {
    if (arg (a, "dedupe-percent") || arg (a, "compress-percent"))
      return spec_fail (s, "local disk-group: dedupe-percent= and compress-percent= need "
                        "space-efficiency=");
    return 0;
  }
  bool dedup = strcmp (mode, "dedup-compression") == 0;
  if (!dedup && strcmp (mode, "compression") != 0)
    return spec_fail (s, "local disk-group: space-efficiency=%s (known: none, dedup-compression, "
                      "compression)", mode);
  if (hybrid)
    return spec_fail (s, "local disk-group: space-efficiency=%s needs mode=all-flash (a hybrid "
                      "group's capacity devices are disks)", mode);
  char name[96], why[256];
  snprintf (name, sizeof name, "%s/data-reduction", s->c->node[node].name);
  *data = cl_data_reduction_new (s->c, s->c->node[node].name, name, *data, &s->c->node[node].cpu,
                                 dedup, (unsigned) dedupe, (unsigned) compress, why, sizeof why);
  if (*data == NULL)
    return spec_fail (s, "local disk-group: %s", why);
  return 0;
}

/* volume-group=one (the group is the node's one PV) or per-device: the
 * node's volume group made of each capacity device's region of the group
 * (volume-group.sh), the capacity being one device after another; each
 * region less its first MiB (so the group's own first sectors carry no PV
 * label). */
static int
volume_group (struct spec *s, unsigned node, const struct local_args *a,
              const struct cl_target *group, double width, uint64_t extents,
              uint64_t stripe_bytes)
{
  const char *vg = arg (a, "volume-group");
  if (vg == NULL || strcmp (vg, "one") == 0)
    return 0;
  if (strcmp (vg, "per-device") != 0)
    return spec_fail (s, "local disk-group: volume-group=%s (known: one, per-device)", vg);
  if (width != 1)
    return spec_fail (s, "local disk-group: volume-group=per-device needs stripe-width=1 (each "
                      "device's region one range of the group)");
  struct cl_node *nd = &s->c->node[node];
  nd->pv = cl_xcalloc (a->devices, sizeof *nd->pv);
  nd->pv_count = a->devices;
  nd->pv_stripe_bytes = stripe_bytes;
  for (unsigned i = 0; i < a->devices; i++) {
    const char *device = strchr (a->device[i]->name, '/') + 1;
    snprintf (nd->pv[i].device, sizeof nd->pv[i].device, "%s", device);
    nd->pv[i].base_bytes = i * extents * LVM_EXTENT_BYTES + REGION_SKIP_BYTES;
    /* the last region ends with the group (less a data reduction's metadata) */
    nd->pv[i].size_bytes = sl_min_u64 (extents * LVM_EXTENT_BYTES - REGION_SKIP_BYTES,
                                       group->capacity_bytes > nd->pv[i].base_bytes
                                       ? group->capacity_bytes - nd->pv[i].base_bytes : 0);
    if (nd->pv[i].size_bytes < LVM_PE_START_BYTES)
      return spec_fail (s, "local disk-group: device %s's region holds nothing", device);
  }
  return 0;
}

/* The lab's disk group (disk-group.sh): the capacity devices as one LV of
 * whole striped segments, dm-cache (writethrough) on the read-cache part
 * of the cache device, dm-writecache on the rest, on top. */
static struct cl_target *
local_disk_group (struct spec *s, unsigned node, const struct local_args *a)
{
  static const char *const known[] = { "mode", "cache", "cache-size", "read-cache-percent",
                                       "stripe-width", "stripe", "volume-group",
                                       "space-efficiency", "dedupe-percent", "compress-percent",
                                       NULL };
  if (known_args (s, a, "local disk-group", known) < 0)
    return NULL;
  const char *mode = arg (a, "mode"), *cache_name = arg (a, "cache");
  if (mode == NULL || cache_name == NULL) {
    spec_fail (s, "local disk-group: needs mode= and cache=");
    return NULL;
  }
  bool hybrid = strcmp (mode, "hybrid") == 0;
  if (!hybrid && strcmp (mode, "all-flash") != 0) {
    spec_fail (s, "local disk-group: mode=%s (known: hybrid, all-flash)", mode);
    return NULL;
  }
  const char *node_name = s->c->node[node].name;
  struct cl_target *cache = spec_device_of (s, node, cache_name);
  if (cache == NULL)
    return NULL;
  for (unsigned i = 0; i < a->devices; i++)
    if (a->device[i] == cache) {
      spec_fail (s, "local disk-group: the cache device '%s' is also a capacity device", cache_name);
      return NULL;
    }
  double percent = DEFAULT_READ_CACHE_PERCENT, width = 1;
  uint64_t cache_bytes = cache->capacity_bytes - LVM_PE_START_BYTES, stripe_bytes = DEFAULT_STRIPE_BYTES;
  if ((arg (a, "read-cache-percent") && spec_number (s, "read-cache-percent",
                                                     arg (a, "read-cache-percent"), 1, 99, &percent) < 0)
      || (arg (a, "stripe-width") && spec_number (s, "stripe-width", arg (a, "stripe-width"), 1,
                                                  a->devices, &width) < 0)
      || (arg (a, "stripe") && spec_size (s, "stripe", arg (a, "stripe"), &stripe_bytes) < 0)
      || (arg (a, "cache-size") && spec_size (s, "cache-size", arg (a, "cache-size"),
                                              &cache_bytes) < 0))
    return NULL;
  if (cache_bytes + LVM_PE_START_BYTES > cache->capacity_bytes) {
    spec_fail (s, "local disk-group: cache-size=%s larger than %s (%" PRIu64 " bytes)",
               arg (a, "cache-size"), cache->name, cache->capacity_bytes);
    return NULL;
  }
  char name[96], why[256];
  /* capacity: LVM takes the same whole extents of every device after its
   * header, in whole striped segments one after another */
  uint64_t extents = UINT64_MAX;
  for (unsigned i = 0; i < a->devices; i++)
    extents = sl_min_u64 (extents, a->device[i]->capacity_bytes > LVM_PE_START_BYTES
                          ? (a->device[i]->capacity_bytes - LVM_PE_START_BYTES) / LVM_EXTENT_BYTES
                          : 0);
  if (extents < 2) {
    spec_fail (s, "local disk-group: capacity devices of less than two LVM extents (%u MiB)",
               LVM_EXTENT_BYTES >> 20);
    return NULL;
  }
  struct cl_target *extents_of[64];
  for (unsigned i = 0; i < a->devices; i++) {
    snprintf (name, sizeof name, "%s/extents", a->device[i]->name);
    extents_of[i] = cl_slice_new (s->c, node_name, name, a->device[i], LVM_PE_START_BYTES,
                                  extents * LVM_EXTENT_BYTES, false, why, sizeof why);
    if (extents_of[i] == NULL) {
      spec_fail (s, "local disk-group: %s", why);
      return NULL;
    }
  }
  unsigned sets = a->devices / (unsigned) width;
  struct cl_target *set[64];
  for (unsigned k = 0; k < sets; k++) {
    snprintf (name, sizeof name, "%s/stripe%u", node_name, k);
    set[k] = width == 1 ? extents_of[k]
      : cl_stripe_new (s->c, node_name, name, stripe_bytes, extents_of + k * (unsigned) width,
                       (unsigned) width, why, sizeof why);
    if (set[k] == NULL) {
      spec_fail (s, "local disk-group: %s", why);
      return NULL;
    }
  }
  snprintf (name, sizeof name, "%s/capacity", node_name);
  struct cl_target *data = cl_linear_new (s->c, node_name, name, set, sets, why, sizeof why);
  if (data && reduction_over (s, node, a, hybrid, &data) < 0)
    return NULL;
  uint64_t read_bytes = hybrid ? cache_bytes * (uint64_t) percent / 100 / LVM_EXTENT_BYTES
    * LVM_EXTENT_BYTES : 0;
  uint64_t write_bytes = (cache_bytes - read_bytes) / LVM_EXTENT_BYTES * LVM_EXTENT_BYTES;
  struct cl_target *origin = data;
  if (data && hybrid) {
    snprintf (name, sizeof name, "%s/readcache-region", node_name);
    struct cl_target *region = cl_slice_new (s->c, node_name, name, cache, LVM_PE_START_BYTES,
                                             read_bytes, false, why, sizeof why);
    struct cl_readcache_config rc;
    cl_readcache_defaults (&rc);
    snprintf (name, sizeof name, "%s/readcache", node_name);
    origin = region ? cl_readcache_new (s->c, node_name, name, data, region, &rc, why,
                                        sizeof why) : NULL;
  }
  struct cl_target *group = NULL;
  if (origin) {
    snprintf (name, sizeof name, "%s/writebuffer-region", node_name);
    struct cl_target *region = cl_slice_new (s->c, node_name, name, cache,
                                             LVM_PE_START_BYTES + read_bytes, write_bytes, false,
                                             why, sizeof why);
    struct cl_writecache_config wc;
    cl_writecache_defaults (&wc);
    snprintf (name, sizeof name, "%s/diskgroup", node_name);
    group = region ? cl_writecache_new (s->c, node_name, name, origin, region, &wc, why,
                                        sizeof why) : NULL;
  }
  if (group == NULL) {
    spec_fail (s, "local disk-group: %s", why);
    return NULL;
  }
  if (volume_group (s, node, a, group, width, extents, stripe_bytes) < 0)
    return NULL;
  return group;
}

int
spec_local (struct spec *s, char **w, unsigned n)
{
  if (spec_check_stage (s, "local", 3, "volumes") < 0)
    return -1;
  if (n < 4)
    return spec_fail (s, "local: NODE disk|raid|disk-group ... DEVICE ...");
  int node = spec_node_of (s, w[1]);
  if (node < 0)
    return -1;
  if (s->c->node[node].local)
    return spec_fail (s, "local %s: the node has its local volume already", w[1]);
  struct local_args a;
  if (local_args (s, (unsigned) node, w, n, 3, &a) < 0)
    return -1;
  struct cl_target *local = NULL;
  if (strcmp (w[2], "disk") == 0) {
    if (a.devices != 1 || a.pairs)
      return spec_fail (s, "local %s disk: names exactly one device", w[1]);
    local = a.device[0];
  }
  else if (strcmp (w[2], "raid") == 0)
    local = local_raid (s, (unsigned) node, &a);
  else if (strcmp (w[2], "disk-group") == 0)
    local = local_disk_group (s, (unsigned) node, &a);
  else
    return spec_fail (s, "local %s: unknown kind '%s' (known: disk, raid, disk-group)", w[1], w[2]);
  if (local == NULL)
    return -1;
  s->c->node[node].local = local;
  s->c->node[node].local_used_bytes = LVM_PE_START_BYTES;
  return 0;
}
