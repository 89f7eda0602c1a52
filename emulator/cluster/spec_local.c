/* spec_local.c — a cluster spec's local statements: each node's local
 * volume as the lab builds it (the format: cluster_spec.c): one disk, md
 * RAID over disks, or a disk group (its capacity LV, read cache, write
 * buffer, deduplication and compression), and with volume-group=per-device
 * the volume group made of each capacity disk's region.  A node may have
 * several disk groups (group=N, a vSAN host's 1..5): each its own cache in
 * front of its own capacity disks, as the lab's diskgroup, diskgroup2...,
 * the node's one volume group made of every group's regions. */
#define _GNU_SOURCE
#include "spec_reader.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layers.h"

/* group=N: a node's disk groups 1..8 */
#define MAX_DISK_GROUPS 8u

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
  else
    cl_md_runs_on (t, &s->c->node[node].cpu);
  return t;
}

/* The name of a target of disk group `group` on node: NODE/BASETAIL for
 * group 1 (a node of one group keeps the names the output's readers know),
 * NODE/BASEnTAIL for group n, so that no two groups' names meet. */
static void
group_target_name (char *name, size_t name_bytes, const char *node, const char *base,
                   unsigned group, const char *tail)
{
  if (group == 1)
    snprintf (name, name_bytes, "%s/%s%s", node, base, tail);
  else
    snprintf (name, name_bytes, "%s/%s%u%s", node, base, group, tail);
}

/* space-efficiency=dedup-compression|compression on an all-flash disk
 * group: the data reduction layer over its capacity (*data replaced), what
 * the data is like from dedupe-percent= and compress-percent= (0..100, the
 * workload's fio dedupe_percentage and buffer_compress_percentage). */
static int
reduction_over (struct spec *s, unsigned node, unsigned group, const struct local_args *a,
                bool hybrid, struct cl_target **data)
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
  group_target_name (name, sizeof name, s->c->node[node].name, "data-reduction", group, "");
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
 * label).  A further group's regions follow the earlier groups' in the
 * node's list; its LVs are striped by the first group's stripe unit (the
 * volume group's one -I). */
static int
volume_group (struct spec *s, unsigned node, const struct local_args *a,
              struct cl_target *group, double width, uint64_t extents,
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
  struct cl_pv *grown = realloc (nd->pv, (nd->pv_count + a->devices) * sizeof *grown);
  if (grown == NULL)
    abort ();
  nd->pv = grown;
  if (nd->pv_count == 0)
    nd->pv_stripe_bytes = stripe_bytes;
  for (unsigned i = 0; i < a->devices; i++) {
    struct cl_pv *pv = &nd->pv[nd->pv_count++];
    const char *device = strchr (a->device[i]->name, '/') + 1;
    memset (pv, 0, sizeof *pv);
    snprintf (pv->device, sizeof pv->device, "%s", device);
    pv->group = group;
    pv->base_bytes = i * extents * LVM_EXTENT_BYTES + REGION_SKIP_BYTES;
    /* the last region ends with the group (less a data reduction's metadata) */
    pv->size_bytes = sl_min_u64 (extents * LVM_EXTENT_BYTES - REGION_SKIP_BYTES,
                                 group->capacity_bytes > pv->base_bytes
                                 ? group->capacity_bytes - pv->base_bytes : 0);
    if (pv->size_bytes < LVM_PE_START_BYTES)
      return spec_fail (s, "local disk-group: device %s's region holds nothing", device);
  }
  return 0;
}

/* group=N (1..8, default 1): which of the node's disk groups the
 * statement builds.  They come in order, group 1 first, as the lab numbers
 * diskgroup, diskgroup2...; a node of several has one volume group made of
 * all their capacity devices, so every one of its statements says
 * volume-group=per-device. */
static int
group_number (struct spec *s, unsigned node, const struct local_args *a, unsigned *group)
{
  const struct cl_node *nd = &s->c->node[node];
  const char *value = arg (a, "group");
  *group = 1;
  if (value) {
    char *end;
    unsigned long n = strtoul (value, &end, 10);
    if (value[0] < '0' || value[0] > '9' || *end || n < 1 || n > MAX_DISK_GROUPS)
      return spec_fail (s, "local %s disk-group: group=%s (1 to %u)", nd->name, value,
                        MAX_DISK_GROUPS);
    *group = (unsigned) n;
  }
  if (*group != nd->disk_groups + 1)
    return spec_fail (s, "local %s disk-group: group=%u, but node %s's next disk group is "
                      "group=%u (a node's groups are 1, 2, 3... in the order of their "
                      "statements)", nd->name, *group, nd->name, nd->disk_groups + 1);
  const char *vg = arg (a, "volume-group");
  if (*group > 1 && (nd->pv == NULL || vg == NULL || strcmp (vg, "per-device") != 0))
    return spec_fail (s, "local %s disk-group: group=%u: a node of several disk groups needs "
                      "volume-group=per-device on each (its volume group is made of every "
                      "group's capacity devices)", nd->name, *group);
  return 0;
}

/* Whether an earlier disk group of the node took device: each slices its
 * devices (a capacity device's extents, the cache's regions), and nothing
 * else slices a device of a node with disk groups. */
static bool
in_earlier_group (const struct cluster *c, const struct cl_target *device)
{
  for (const struct cl_target *t = c->targets; t; t = t->next_all)
    if (t->slice_of == device)
      return true;
  return false;
}

static int
devices_free (struct spec *s, unsigned node, const struct local_args *a,
              const struct cl_target *cache)
{
  const struct cl_target *used = in_earlier_group (s->c, cache) ? cache : NULL;
  for (unsigned i = 0; i < a->devices && used == NULL; i++)
    if (in_earlier_group (s->c, a->device[i]))
      used = a->device[i];
  if (used)
    return spec_fail (s, "local %s disk-group: device '%s' is in another of the node's disk "
                      "groups already", s->c->node[node].name, strchr (used->name, '/') + 1);
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
                                       "group", NULL };
  unsigned group_no;
  if (known_args (s, a, "local disk-group", known) < 0 || group_number (s, node, a, &group_no) < 0)
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
  if (cache == NULL || devices_free (s, node, a, cache) < 0)
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
    char tail[16];
    snprintf (tail, sizeof tail, "%s%u", group_no == 1 ? "" : "-", k);
    group_target_name (name, sizeof name, node_name, "stripe", group_no, tail);
    set[k] = width == 1 ? extents_of[k]
      : cl_stripe_new (s->c, node_name, name, stripe_bytes, extents_of + k * (unsigned) width,
                       (unsigned) width, why, sizeof why);
    if (set[k] == NULL) {
      spec_fail (s, "local disk-group: %s", why);
      return NULL;
    }
  }
  group_target_name (name, sizeof name, node_name, "capacity", group_no, "");
  struct cl_target *data = cl_linear_new (s->c, node_name, name, set, sets, why, sizeof why);
  if (data && reduction_over (s, node, group_no, a, hybrid, &data) < 0)
    return NULL;
  uint64_t read_bytes = hybrid ? cache_bytes * (uint64_t) percent / 100 / LVM_EXTENT_BYTES
    * LVM_EXTENT_BYTES : 0;
  uint64_t write_bytes = (cache_bytes - read_bytes) / LVM_EXTENT_BYTES * LVM_EXTENT_BYTES;
  struct cl_target *origin = data;
  if (data && hybrid) {
    /* the read cache is an lvm cache volume: dm-cache's metadata, then its data */
    struct cl_readcache_config rc;
    cl_readcache_defaults (&rc);
    uint64_t data_bytes = cl_readcache_data_bytes (read_bytes, &rc, LVM_EXTENT_BYTES);
    if (data_bytes == 0) {
      spec_fail (s, "local disk-group: a read cache of %" PRIu64 " MiB holds only dm-cache's "
                 "metadata (read-cache-percent=%g of %" PRIu64 " MiB)", read_bytes >> 20, percent,
                 cache_bytes >> 20);
      return NULL;
    }
    group_target_name (name, sizeof name, node_name, "readcache", group_no, "-region");
    struct cl_target *region = cl_slice_new (s->c, node_name, name, cache,
                                             LVM_PE_START_BYTES + read_bytes - data_bytes,
                                             data_bytes, false, why, sizeof why);
    group_target_name (name, sizeof name, node_name, "readcache", group_no, "");
    origin = region ? cl_readcache_new (s->c, node_name, name, data, region, &rc, why,
                                        sizeof why) : NULL;
  }
  struct cl_target *group = NULL;
  if (origin) {
    group_target_name (name, sizeof name, node_name, "writebuffer", group_no, "-region");
    struct cl_target *region = cl_slice_new (s->c, node_name, name, cache,
                                             LVM_PE_START_BYTES + read_bytes, write_bytes, false,
                                             why, sizeof why);
    struct cl_writecache_config wc;
    cl_writecache_defaults (&wc);
    group_target_name (name, sizeof name, node_name, "diskgroup", group_no, "");
    group = region ? cl_writecache_new (s->c, node_name, name, origin, region, &wc, why,
                                        sizeof why) : NULL;
  }
  if (group == NULL) {
    spec_fail (s, "local disk-group: %s", why);
    return NULL;
  }
  /* the node's kernel runs both caches' code for every I/O they take */
  struct cl_cpu *cpu = &s->c->node[node].cpu;
  cl_layer_runs_on (group, cpu, cpu->config.per_write_buffer_io_ns);
  if (origin != data)
    cl_layer_runs_on (origin, cpu, cpu->config.per_read_cache_io_ns);
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
  struct cl_node *nd = &s->c->node[node];
  /* a disk group may follow the node's disk groups (group=N checks which) */
  bool more_groups = nd->disk_groups > 0 && strcmp (w[2], "disk-group") == 0;
  if (nd->local && !more_groups)
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
  if (strcmp (w[2], "disk-group") == 0)
    nd->disk_groups++;
  /* the first group stays the node's local volume; LVs on the others are
   * sliced from them through their regions (new_lv) */
  if (nd->local == NULL) {
    nd->local = local;
    nd->local_used_bytes = LVM_PE_START_BYTES;
  }
  return 0;
}
