/* cluster_spec.c — building a cluster from its spec: one statement a line,
 * '#' to the end of a line is a comment, words separated by blanks.
 *
 *   storlab-cluster 1                          first line: the format
 *   pool cores=N                               optional, first: every node runs on one
 *                                              host of N cores (a lab's guests)
 *   node NAME [host=PRESET] [cores=N] [per-io-us=X] [per-remote-io-us=X]
 *   device NODE NAME KIND [KEY=VALUE ...]      KIND hdd | ssd | raid: the plugin's keys
 *   link NODE NODE [preset=P] [latency-us=X] [bandwidth-mb-s=X]
 *   local NODE disk DEVICE                     the node's local volume, one of:
 *   local NODE raid level=L chunk=SIZE [data-offset=SIZE] DEVICE ...
 *   local NODE disk-group mode=hybrid|all-flash cache=DEVICE [cache-size=SIZE]
 *         [read-cache-percent=P] [stripe-width=N] [stripe=SIZE]
 *         [volume-group=one|per-device] DEVICE ...   per-device: the node's LVs
 *                                              lie on the capacity devices they
 *                                              name (stripe-width=1 only)
 *         [space-efficiency=none|dedup-compression|compression]   all-flash: data
 *         [dedupe-percent=P] [compress-percent=P]   reduction at destage, the data
 *                                              as the workload's fio keys say
 *   volume NODE NAME SIZE [devices=DEV+...]    an LV on NODE's local volume, or with
 *         [method=mirror|raid5|raid6 on=NODE[:DEV+...],...]  a storage policy: md
 *         [checksum=on|off] [chunk=SIZE]       RAID-1/5/6 on NODE over components on
 *                                              the nodes listed (NVMe/TCP to all but
 *                                              NODE's own), dm-integrity on each if
 *                                              checksummed
 *         [snapshots=redo-log|redirect-on-write depth=N room=SIZE]   snapshots taken
 *                                              by events; the base holds their room
 *   replica NAME SIZE NODE[:DEV+...] ...       an LV on each node, md RAID-1 on
 *                                              the first over NVMe/TCP legs
 *
 * An LV on a node whose volume group is per-device names its devices
 * (devices=, NODE:DEV+...): it is striped over them, as lvcreate -i over
 * those PVs, by the disk group's stripe unit.
 *   export NODE at=OFFSET size=SIZE volume=NAME   NODE's VMs drive volume NAME
 *   export NODE at=OFFSET size=SIZE share=NAME    ... files on replica NAME over NFS
 *
 * Sizes take nbdkit's suffixes (k, M, G, T: powers of 1024).  Nodes, then
 * their devices, links and local volumes, then LVs (allocated in the order
 * they come, as the lab's lvcreate calls are), then exports in ascending
 * order.  Host presets and link presets: fabric.c.  Every error names the
 * spec, the line and the word. */
#define _GNU_SOURCE
#include "cluster_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog/kinds.h"
#include "device/device.h"
#include "device/driver_keys.h"
#include "device/params.h"
#include "layers.h"
#include "raid/raid.h"

#define SPEC_MAX_BYTES (16u * 1024u * 1024u)
#define MAX_WORDS 256u
/* LVM: the first physical extent starts 1 MiB in; extents of 4 MiB (the
 * lab's vgcreate -s 4m). */
#define LVM_PE_START_BYTES (1u * 1024u * 1024u)
#define LVM_EXTENT_BYTES (4u * 1024u * 1024u)
#define DEFAULT_READ_CACHE_PERCENT 70
#define DEFAULT_STRIPE_BYTES (64u * 1024u)
/* volume-group.sh leaves out the first MiB of each capacity device's region */
#define REGION_SKIP_BYTES (1u * 1024u * 1024u)

struct spec {
  struct cluster *c;
  const char *name;
  unsigned line;
  char *err;
  size_t err_bytes;
  bool failed;
  unsigned stage;                      /* statements come in order */
  uint64_t budget_bytes;               /* 0: no limit */
  uint64_t heap_start_bytes;
};

/* What the process has allocated (mapped large blocks included). */
static uint64_t
heap_bytes (void)
{
  struct mallinfo2 mi = mallinfo2 ();
  return (uint64_t) mi.uordblks + (uint64_t) mi.hblkhd;
}

static int
fail (struct spec *s, const char *fmt, ...)
{
  if (s->failed)
    return -1;
  int used = snprintf (s->err, s->err_bytes, "%s:%u: ", s->name, s->line);
  va_list ap;
  va_start (ap, fmt);
  if (used >= 0 && (size_t) used < s->err_bytes)
    vsnprintf (s->err + used, s->err_bytes - used, fmt, ap);
  va_end (ap);
  s->failed = true;
  return -1;
}

static int
size_value (struct spec *s, const char *key, const char *value, uint64_t *out)
{
  if (sl_parse_size_bytes (value, out) != 0)
    return fail (s, "%s=%s: not a size (bytes, or with k, M, G, T)", key, value);
  return 0;
}

static int
number_value (struct spec *s, const char *key, const char *value, double lo, double hi,
              double *out)
{
  char *end;
  errno = 0;
  double v = strtod (value, &end);
  if (value[0] == '\0' || *end != '\0' || errno || !(v >= lo && v <= hi))
    return fail (s, "%s=%s: not a number in %g..%g", key, value, lo, hi);
  *out = v;
  return 0;
}

/* KEY=VALUE word: splits it in place; false if the word has no '='. */
static bool
split_pair (char *word, char **key, char **value)
{
  char *eq = strchr (word, '=');
  if (eq == NULL || eq == word)
    return false;
  *eq = '\0';
  *key = word;
  *value = eq + 1;
  return true;
}

static int
node_of (struct spec *s, const char *name)
{
  int n = cl_node_find (s->c, name);
  if (n < 0)
    fail (s, "no node '%s' (nodes come first, each in a node statement)", name);
  return n;
}

static struct cl_target *
device_of (struct spec *s, unsigned node, const char *name)
{
  char full[96];
  snprintf (full, sizeof full, "%s/%s", s->c->node[node].name, name);
  struct cl_target *t = cl_target_find (s->c, full);
  if (t == NULL || strcmp (t->ops->kind, "device") != 0)
    fail (s, "node %s has no device '%s'", s->c->node[node].name, name);
  return t;
}

static int
check_stage (struct spec *s, const char *what, unsigned stage, const char *before)
{
  if (stage < s->stage)
    return fail (s, "%s after %s: statements come in the order node, device, link, local, "
                 "volume/replica, export", what, before);
  s->stage = stage;
  return 0;
}

/* -------------------------------------------------------------- pool -- */

static int
st_pool (struct spec *s, char **w, unsigned n)
{
  if (s->stage > 0 || s->c->node_count > 0 || s->c->has_pool)
    return fail (s, "pool: once, before the nodes");
  char *key, *value;
  double cores;
  if (n != 2 || !split_pair (w[1], &key, &value) || strcmp (key, "cores") != 0)
    return fail (s, "pool: cores=N (the cores of the one host every node runs on)");
  if (number_value (s, key, value, 1, 4096, &cores) < 0)
    return -1;
  struct cl_host_config config = { .cores = (uint32_t) cores };
  cl_cpu_init (&s->c->pool, &config);
  s->c->has_pool = true;
  return 0;
}

/* ------------------------------------------------------------- nodes -- */

static int
st_node (struct spec *s, char **w, unsigned n)
{
  if (check_stage (s, "node", 0, "devices") < 0)
    return -1;
  if (n < 2)
    return fail (s, "node: missing its NAME");
  struct cluster *c = s->c;
  if (strlen (w[1]) >= CL_NAME_BYTES || strchr (w[1], '/'))
    return fail (s, "node %s: a name of at most %u characters without '/'", w[1],
                 CL_NAME_BYTES - 1);
  if (cl_node_find (c, w[1]) >= 0)
    return fail (s, "node %s: named twice", w[1]);
  if (c->node_count == CL_MAX_NODES)
    return fail (s, "node %s: more than %u nodes", w[1], CL_MAX_NODES);
  struct cl_host_config host;
  char why[256];
  cl_host_preset (CL_HOST_PRESET_DEFAULT, &host, why, sizeof why);
  for (unsigned i = 2; i < n; i++) {
    char *key, *value;
    double v;
    if (!split_pair (w[i], &key, &value))
      return fail (s, "node %s: '%s' is not KEY=VALUE", w[1], w[i]);
    if (strcmp (key, "host") == 0) {
      if (cl_host_preset (value, &host, why, sizeof why) < 0)
        return fail (s, "node %s: %s", w[1], why);
    }
    else if (strcmp (key, "cores") == 0) {
      if (number_value (s, key, value, 1, 4096, &v) < 0)
        return -1;
      host.cores = (uint32_t) v;
    }
    else if (strcmp (key, "per-io-us") == 0 || strcmp (key, "per-remote-io-us") == 0) {
      if (number_value (s, key, value, 0, 1e6, &v) < 0)
        return -1;
      *(strcmp (key, "per-io-us") == 0 ? &host.per_io_ns : &host.per_remote_io_ns)
        = (uint64_t) (v * NS_PER_US);
    }
    else
      return fail (s, "node %s: unknown key '%s' (known: host, cores, per-io-us, "
                   "per-remote-io-us)", w[1], key);
  }
  struct cl_node *node = &c->node[c->node_count++];
  snprintf (node->name, sizeof node->name, "%s", w[1]);
  cl_cpu_init (&node->cpu, &host);
  if (c->has_pool)
    node->cpu.pool = &c->pool;
  return 0;
}

/* ----------------------------------------------------------- devices -- */

static struct sl_model
build_device (struct spec *s, const struct sl_device_kind *kind, char **w, unsigned n)
{
  struct sl_model model = { 0 };
  struct sl_driver_settings driver;
  struct sl_device_builder b;
  char why[1024];
  sl_driver_settings_defaults (&driver);
  sl_device_builder_init (&b, kind);
  for (unsigned i = 4; i < n; i++) {
    char *key, *value;
    if (!split_pair (w[i], &key, &value)) {
      fail (s, "device %s: '%s' is not KEY=VALUE", w[2], w[i]);
      goto out;
    }
    const struct sl_driver_key *dk = strcmp (key, "preset") ? sl_driver_key_find (key) : NULL;
    int rc = dk ? sl_driver_settings_set (&driver, key, value, why, sizeof why)
      : sl_device_builder_add (&b, key, value, why, sizeof why);
    if (rc != 0) {
      fail (s, "device %s: %s", w[2], why);
      goto out;
    }
  }
  void *config = cl_xcalloc (1, kind->config_bytes);
  if (sl_device_builder_build (&b, config, why, sizeof why) == 0)
    model = kind->create (config, why, sizeof why);
  free (config);
  if (model.ops == NULL)
    fail (s, "device %s: %s", w[2], why);
  else
    model = sl_driver_settings_model (&driver, model);
 out:
  sl_device_builder_free (&b);
  return model;
}

static int
st_device (struct spec *s, char **w, unsigned n)
{
  if (check_stage (s, "device", 1, "links") < 0)
    return -1;
  if (n < 4)
    return fail (s, "device: NODE NAME KIND [KEY=VALUE ...]");
  int node = node_of (s, w[1]);
  if (node < 0)
    return -1;
  const struct sl_device_kind *kind = sl_device_kind_find (w[3]);
  if (kind == NULL)
    return fail (s, "device %s: unknown kind '%s' (known: %s)", w[2], w[3],
                 sl_device_kind_names ());
  char full[96];
  snprintf (full, sizeof full, "%s/%s", w[1], w[2]);
  if (strlen (w[2]) >= CL_NAME_BYTES || strchr (w[2], '/') || cl_target_find (s->c, full))
    return fail (s, "device %s: a new name of at most %u characters without '/'", w[2],
                 CL_NAME_BYTES - 1);
  struct sl_model model = build_device (s, kind, w, n);
  if (model.ops == NULL)
    return -1;
  char why[256];
  if (cl_device_new (s->c, w[1], full, model, why, sizeof why) == NULL)
    return fail (s, "device %s: %s", w[2], why);
  return 0;
}

/* ------------------------------------------------------------- links -- */

static int
st_link (struct spec *s, char **w, unsigned n)
{
  if (check_stage (s, "link", 2, "local volumes") < 0)
    return -1;
  if (n < 3)
    return fail (s, "link: NODE NODE [preset=P] [latency-us=X] [bandwidth-mb-s=X]");
  int a = node_of (s, w[1]), b = a < 0 ? -1 : node_of (s, w[2]);
  if (a < 0 || b < 0)
    return -1;
  bool dir;
  if (a == b || cl_link_find (s->c, (unsigned) a, (unsigned) b, &dir))
    return fail (s, "link %s %s: a link joins two nodes, once", w[1], w[2]);
  struct cl_link_config config;
  char why[256];
  cl_link_preset (CL_LINK_PRESET_DEFAULT, &config, why, sizeof why);
  for (unsigned i = 3; i < n; i++) {
    char *key, *value;
    double v;
    if (!split_pair (w[i], &key, &value))
      return fail (s, "link %s %s: '%s' is not KEY=VALUE", w[1], w[2], w[i]);
    if (strcmp (key, "preset") == 0) {
      if (cl_link_preset (value, &config, why, sizeof why) < 0)
        return fail (s, "link %s %s: %s", w[1], w[2], why);
    }
    else if (strcmp (key, "latency-us") == 0) {
      if (number_value (s, key, value, 0, 1e7, &v) < 0)
        return -1;
      config.latency_ns = (uint64_t) (v * NS_PER_US);
    }
    else if (strcmp (key, "bandwidth-mb-s") == 0) {
      if (number_value (s, key, value, 0.001, 1e7, &v) < 0)
        return -1;
      config.bytes_per_s = (uint64_t) (v * 1e6);
    }
    else
      return fail (s, "link %s %s: unknown key '%s' (known: preset, latency-us, "
                   "bandwidth-mb-s)", w[1], w[2], key);
  }
  struct cluster *c = s->c;
  if (c->link_count % 64 == 0) {
    struct cl_link *grown = realloc (c->links, (c->link_count + 64) * sizeof *grown);
    if (grown == NULL)
      abort ();
    c->links = grown;
    c->memory_bytes += 64 * sizeof *grown;
  }
  struct cl_link *l = &c->links[c->link_count++];
  memset (l, 0, sizeof *l);
  snprintf (l->name, sizeof l->name, "%s-%s", w[1], w[2]);
  l->a = (unsigned) a;
  l->b = (unsigned) b;
  l->config = config;
  return 0;
}

/* ------------------------------------------------------ local volumes -- */

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
    if (split_pair (w[i], &key, &value)) {
      if (a->pairs == 16)
        return fail (s, "local %s: too many KEY=VALUE words", w[1]);
      a->key[a->pairs] = key;
      a->value[a->pairs++] = value;
      continue;
    }
    if (a->devices == 64)
      return fail (s, "local %s: more than 64 devices", w[1]);
    struct cl_target *t = device_of (s, node, w[i]);
    if (t == NULL)
      return -1;
    for (unsigned k = 0; k < a->devices; k++)
      if (a->device[k] == t)
        return fail (s, "local %s: device '%s' listed twice", w[1], w[i]);
    a->device[a->devices++] = t;
  }
  if (a->devices == 0)
    return fail (s, "local %s: names no device", w[1]);
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
      return fail (s, "%s: unknown key '%s'", what, a->key[i]);
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
    fail (s, "local raid: needs level= and chunk=");
    return NULL;
  }
  double l;
  uint64_t chunk_bytes, offset_bytes = 0;
  if (number_value (s, "level", level, 0, 10, &l) < 0 || size_value (s, "chunk", chunk, &chunk_bytes) < 0
      || (arg (a, "data-offset") && size_value (s, "data-offset", arg (a, "data-offset"),
                                                &offset_bytes) < 0))
    return NULL;
  char name[96], why[256];
  snprintf (name, sizeof name, "%s/md0", s->c->node[node].name);
  struct cl_target *t = cl_md_new (s->c, s->c->node[node].name, name, (unsigned) l, chunk_bytes,
                                   offset_bytes, a->device, a->devices, why, sizeof why);
  if (t == NULL)
    fail (s, "local raid: %s", why);
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
  if ((arg (a, "dedupe-percent") && number_value (s, "dedupe-percent", arg (a, "dedupe-percent"),
                                                  0, 100, &dedupe) < 0)
      || (arg (a, "compress-percent") && number_value (s, "compress-percent",
                                                       arg (a, "compress-percent"), 0, 100,
                                                       &compress) < 0))
    return -1;
  if (mode == NULL || strcmp (mode, "none") == 0) {
    if (arg (a, "dedupe-percent") || arg (a, "compress-percent"))
      return fail (s, "local disk-group: dedupe-percent= and compress-percent= need "
                   "space-efficiency=");
    return 0;
  }
  bool dedup = strcmp (mode, "dedup-compression") == 0;
  if (!dedup && strcmp (mode, "compression") != 0)
    return fail (s, "local disk-group: space-efficiency=%s (known: none, dedup-compression, "
                 "compression)", mode);
  if (hybrid)
    return fail (s, "local disk-group: space-efficiency=%s needs mode=all-flash (a hybrid "
                 "group's capacity devices are disks)", mode);
  char name[96], why[256];
  snprintf (name, sizeof name, "%s/data-reduction", s->c->node[node].name);
  *data = cl_data_reduction_new (s->c, s->c->node[node].name, name, *data, &s->c->node[node].cpu,
                                 dedup, (unsigned) dedupe, (unsigned) compress, why, sizeof why);
  if (*data == NULL)
    return fail (s, "local disk-group: %s", why);
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
    fail (s, "local disk-group: needs mode= and cache=");
    return NULL;
  }
  bool hybrid = strcmp (mode, "hybrid") == 0;
  if (!hybrid && strcmp (mode, "all-flash") != 0) {
    fail (s, "local disk-group: mode=%s (known: hybrid, all-flash)", mode);
    return NULL;
  }
  const char *node_name = s->c->node[node].name;
  struct cl_target *cache = device_of (s, node, cache_name);
  if (cache == NULL)
    return NULL;
  for (unsigned i = 0; i < a->devices; i++)
    if (a->device[i] == cache) {
      fail (s, "local disk-group: the cache device '%s' is also a capacity device", cache_name);
      return NULL;
    }
  double percent = DEFAULT_READ_CACHE_PERCENT, width = 1;
  uint64_t cache_bytes = cache->capacity_bytes - LVM_PE_START_BYTES, stripe_bytes = DEFAULT_STRIPE_BYTES;
  if ((arg (a, "read-cache-percent") && number_value (s, "read-cache-percent",
                                                      arg (a, "read-cache-percent"), 1, 99, &percent) < 0)
      || (arg (a, "stripe-width") && number_value (s, "stripe-width", arg (a, "stripe-width"), 1,
                                                   a->devices, &width) < 0)
      || (arg (a, "stripe") && size_value (s, "stripe", arg (a, "stripe"), &stripe_bytes) < 0)
      || (arg (a, "cache-size") && size_value (s, "cache-size", arg (a, "cache-size"),
                                               &cache_bytes) < 0))
    return NULL;
  if (cache_bytes + LVM_PE_START_BYTES > cache->capacity_bytes) {
    fail (s, "local disk-group: cache-size=%s larger than %s (%" PRIu64 " bytes)",
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
    fail (s, "local disk-group: capacity devices of less than two LVM extents (%u MiB)",
          LVM_EXTENT_BYTES >> 20);
    return NULL;
  }
  struct cl_target *extents_of[64];
  for (unsigned i = 0; i < a->devices; i++) {
    snprintf (name, sizeof name, "%s/extents", a->device[i]->name);
    extents_of[i] = cl_slice_new (s->c, node_name, name, a->device[i], LVM_PE_START_BYTES,
                                  extents * LVM_EXTENT_BYTES, false, why, sizeof why);
    if (extents_of[i] == NULL) {
      fail (s, "local disk-group: %s", why);
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
      fail (s, "local disk-group: %s", why);
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
    fail (s, "local disk-group: %s", why);
    return NULL;
  }
  const char *vg = arg (a, "volume-group");
  if (vg && strcmp (vg, "per-device") == 0) {
    /* the node's volume group made of each capacity device's region of the
     * group (volume-group.sh): the capacity is one device after another;
     * each region less its first MiB (so the group's own first sectors
     * carry no PV label) */
    if (width != 1) {
      fail (s, "local disk-group: volume-group=per-device needs stripe-width=1 (each "
            "device's region one range of the group)");
      return NULL;
    }
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
      if (nd->pv[i].size_bytes < LVM_PE_START_BYTES) {
        fail (s, "local disk-group: device %s's region holds nothing", device);
        return NULL;
      }
    }
  }
  else if (vg && strcmp (vg, "one") != 0) {
    fail (s, "local disk-group: volume-group=%s (known: one, per-device)", vg);
    return NULL;
  }
  return group;
}

static int
st_local (struct spec *s, char **w, unsigned n)
{
  if (check_stage (s, "local", 3, "volumes") < 0)
    return -1;
  if (n < 4)
    return fail (s, "local: NODE disk|raid|disk-group ... DEVICE ...");
  int node = node_of (s, w[1]);
  if (node < 0)
    return -1;
  if (s->c->node[node].local)
    return fail (s, "local %s: the node has its local volume already", w[1]);
  struct local_args a;
  if (local_args (s, (unsigned) node, w, n, 3, &a) < 0)
    return -1;
  struct cl_target *local = NULL;
  if (strcmp (w[2], "disk") == 0) {
    if (a.devices != 1 || a.pairs)
      return fail (s, "local %s disk: names exactly one device", w[1]);
    local = a.device[0];
  }
  else if (strcmp (w[2], "raid") == 0)
    local = local_raid (s, (unsigned) node, &a);
  else if (strcmp (w[2], "disk-group") == 0)
    local = local_disk_group (s, (unsigned) node, &a);
  else
    return fail (s, "local %s: unknown kind '%s' (known: disk, raid, disk-group)", w[1], w[2]);
  if (local == NULL)
    return -1;
  s->c->node[node].local = local;
  s->c->node[node].local_used_bytes = LVM_PE_START_BYTES;
  return 0;
}

/* ---------------------------------------------------------- LVs, etc. -- */

/* An LV of size_bytes on node's local volume, after those before it; on a
 * volume group made of the node's capacity devices (volume-group=
 * per-device), on the ones devices names ("disk0+disk1"): striped over
 * them by the group's stripe unit when several, each holding its share
 * after the LVs before it there, as lvcreate -i over those PVs does. */
static struct cl_target *
new_lv (struct spec *s, unsigned node, const char *name, uint64_t size_bytes, bool listed,
        const char *devices)
{
  struct cl_node *nd = &s->c->node[node];
  if (nd->local == NULL) {
    fail (s, "%s: node %s has no local volume (a local statement comes first)", name, nd->name);
    return NULL;
  }
  uint64_t extents_bytes = (size_bytes + LVM_EXTENT_BYTES - 1) / LVM_EXTENT_BYTES * LVM_EXTENT_BYTES;
  char why[256];
  if (nd->pv == NULL) {
    if (devices) {
      fail (s, "%s: on devices %s, but node %s's volume group is its local volume (its local "
            "statement has no volume-group=per-device)", name, devices, nd->name);
      return NULL;
    }
    struct cl_target *lv = cl_slice_new (s->c, nd->name, name, nd->local, nd->local_used_bytes,
                                         extents_bytes, listed, why, sizeof why);
    if (lv == NULL) {
      fail (s, "%s: node %s's local volume is full: %s", name, nd->name, why);
      return NULL;
    }
    nd->local_used_bytes += extents_bytes;
    return lv;
  }
  if (devices == NULL) {
    fail (s, "%s: node %s's volume group is made of its capacity devices: name the LV's "
          "(devices=, or NODE:DEVICE+...)", name, nd->name);
    return NULL;
  }
  struct cl_pv *on[64];
  unsigned count = 0;
  char list[256];
  snprintf (list, sizeof list, "%s", devices);
  for (char *save = NULL, *device = strtok_r (list, "+", &save); device;
       device = strtok_r (NULL, "+", &save)) {
    struct cl_pv *pv = NULL;
    for (unsigned i = 0; i < nd->pv_count && pv == NULL; i++)
      if (strcmp (nd->pv[i].device, device) == 0)
        pv = &nd->pv[i];
    for (unsigned k = 0; k < count && pv; k++)
      if (on[k] == pv) {
        fail (s, "%s: device %s named twice", name, device);
        return NULL;
      }
    if (pv == NULL) {
      fail (s, "%s: node %s has no capacity device '%s' in its volume group", name, nd->name,
            device);
      return NULL;
    }
    on[count++] = pv;
  }
  if (count == 0) {
    fail (s, "%s: names no device", name);
    return NULL;
  }
  /* lvcreate -i: whole extents, the same on every stripe */
  uint64_t extents = extents_bytes / LVM_EXTENT_BYTES;
  uint64_t share_bytes = (extents + count - 1) / count * LVM_EXTENT_BYTES;
  for (unsigned k = 0; k < count; k++) {
    /* the region's whole extents after its own PV header */
    uint64_t usable = (on[k]->size_bytes - LVM_PE_START_BYTES) / LVM_EXTENT_BYTES * LVM_EXTENT_BYTES;
    if (on[k]->used_bytes + share_bytes > usable) {
      fail (s, "%s: node %s's device %s has %" PRIu64 " MiB free, the LV needs %" PRIu64
            " MiB there", name, nd->name, on[k]->device, (usable - on[k]->used_bytes) >> 20,
            share_bytes >> 20);
      return NULL;
    }
  }
  struct cl_target *part[64];
  for (unsigned k = 0; k < count; k++) {
    char part_name[160];
    snprintf (part_name, sizeof part_name, "%s/on-%s", name, on[k]->device);
    part[k] = cl_slice_new (s->c, nd->name, count == 1 ? name : part_name, nd->local,
                            on[k]->base_bytes + LVM_PE_START_BYTES + on[k]->used_bytes,
                            share_bytes, count == 1 && listed, why, sizeof why);
    if (part[k] == NULL) {
      fail (s, "%s: %s", name, why);
      return NULL;
    }
    on[k]->used_bytes += share_bytes;
  }
  if (count == 1)
    return part[0];
  struct cl_target *lv = cl_stripe_new (s->c, nd->name, name, nd->pv_stripe_bytes, part, count,
                                        why, sizeof why);
  if (lv == NULL)
    fail (s, "%s: %s", name, why);
  return lv;
}

/* size_bytes of data on node holder: the LV lv_name, or when checksummed
 * dm-integrity named integrity_name over an LV that also holds its tags. */
static struct cl_target *
data_lv (struct spec *s, const char *what, unsigned holder, const char *lv_name,
         const char *integrity_name, uint64_t size_bytes, bool checksum, const char *devices)
{
  char why[256];
  struct cl_target *lv = new_lv (s, holder, lv_name, checksum
                                 ? cl_integrity_backing_bytes (size_bytes) : size_bytes, false,
                                 devices);
  if (lv == NULL || !checksum)
    return lv;
  struct cl_target *t = cl_integrity_new (s->c, s->c->node[holder].name, integrity_name, lv,
                                          why, sizeof why);
  if (t == NULL)
    fail (s, "%s: %s", what, why);
  return t;
}

/* A copy or piece of a volume homed on node home, held on node holder: an
 * LV there (under dm-integrity when checksummed), reached from home over
 * NVMe/TCP unless it is home's own. */
static struct cl_target *
leg_to (struct spec *s, const char *what, unsigned home, unsigned holder, const char *lv_name,
        const char *hop_name, uint64_t size_bytes, bool checksum, const char *devices)
{
  char why[256], name[128];
  snprintf (name, sizeof name, "%s/integrity", lv_name);
  struct cl_target *leg = data_lv (s, what, holder, lv_name, name, size_bytes, checksum,
                                   devices);
  if (leg == NULL || holder == home)
    return leg;
  bool a_to_b;
  struct cl_link *link = cl_link_find (s->c, home, holder, &a_to_b);
  if (link == NULL) {
    fail (s, "%s: no link between %s and %s", what, s->c->node[home].name,
          s->c->node[holder].name);
    return NULL;
  }
  leg = cl_remote_new (s->c, s->c->node[home].name, hop_name, "nvme-tcp", link, a_to_b,
                       &s->c->node[holder].cpu, leg, why, sizeof why);
  if (leg == NULL)
    fail (s, "%s: %s", what, why);
  return leg;
}

/* NODE, or NODE:DEVICE+DEVICE... (where the LV it holds lies: new_lv),
 * split in place: the devices, or NULL. */
static char *
holder_devices (char *word)
{
  char *colon = strchr (word, ':');
  if (colon == NULL)
    return NULL;
  *colon = '\0';
  return colon + 1;
}

/* The nodes of an on=NODE[:DEVICES],... list, each once, and the devices
 * each names (or NULL). */
static int
holders_of (struct spec *s, const char *what, char *list, unsigned *holder, char **devices,
            unsigned max, unsigned *count)
{
  *count = 0;
  for (char *save = NULL, *name = strtok_r (list, ",", &save); name;
       name = strtok_r (NULL, ",", &save)) {
    char *on = holder_devices (name);
    int node = node_of (s, name);
    if (node < 0)
      return -1;
    for (unsigned k = 0; k < *count; k++)
      if (holder[k] == (unsigned) node)
        return fail (s, "%s: node %s holds two components", what, name);
    if (*count == max)
      return fail (s, "%s: on= lists more than %u nodes", what, max);
    devices[*count] = on;
    holder[(*count)++] = (unsigned) node;
  }
  return 0;
}

/* The snapshot layer named name over a volume's base, when it takes
 * snapshots (depth > 0). */
static int
snapshots_over (struct spec *s, const char *what, const char *node, const char *name,
                struct cl_target *base, bool redo_log, uint64_t volume_bytes, unsigned depth,
                uint64_t room_bytes)
{
  if (depth == 0)
    return 0;
  char why[256];
  if (cl_snapshot_new (s->c, node, name, base, redo_log, volume_bytes, depth, room_bytes, why,
                       sizeof why) == NULL)
    return fail (s, "%s: %s", what, why);
  return 0;
}

/* A workload volume and its storage policy:
 *   no method: an LV on the node's local volume (the node's own stack);
 *   method=mirror: md RAID-1 on the node over ftt + 1 copies, one per node
 *     of on= (the first serves reads: the node's own copy, as the lab's
 *     write-mostly legs make it);
 *   method=raid5 | raid6: md RAID-5 (3 + 1) or RAID-6 (4 + 2) over pieces of
 *     size / data members, one per node of on=, chunk= (mdadm's 512 KiB);
 *   checksum=on: dm-integrity on every component, on its holder. */
static int
st_volume (struct spec *s, char **w, unsigned n)
{
  if (check_stage (s, "volume", 4, "exports") < 0)
    return -1;
  if (n < 4)
    return fail (s, "volume: NODE NAME SIZE [method=mirror|raid5|raid6 on=NODE,...] "
                 "[checksum=on|off] [chunk=SIZE]");
  int node = node_of (s, w[1]);
  uint64_t size;
  if (node < 0 || size_value (s, "size", w[3], &size) < 0)
    return -1;
  char name[96], what[128];
  snprintf (name, sizeof name, "%s/volume/%s", w[1], w[2]);
  snprintf (what, sizeof what, "volume %s %s", w[1], w[2]);
  if (cl_target_find (s->c, name))
    return fail (s, "%s: named twice", what);
  const char *method = NULL, *snapshots = NULL, *devices = NULL;
  char *on = NULL;
  bool checksum = false;
  uint64_t chunk_bytes = 512 * 1024, room_bytes = 0, depth = 0;
  for (unsigned i = 4; i < n; i++) {
    char *key, *value;
    if (!split_pair (w[i], &key, &value))
      return fail (s, "%s: '%s' is not KEY=VALUE", what, w[i]);
    if (strcmp (key, "method") == 0)
      method = value;
    else if (strcmp (key, "snapshots") == 0 && (strcmp (value, "redo-log") == 0
                                                || strcmp (value, "redirect-on-write") == 0))
      snapshots = value;
    else if (strcmp (key, "snapshots") == 0)
      return fail (s, "%s: snapshots=%s (redo-log or redirect-on-write)", what, value);
    else if (strcmp (key, "depth") == 0) {
      char *end;
      depth = strtoull (value, &end, 10);
      if (*end || depth < 1 || depth > 8)
        return fail (s, "%s: depth=%s (1 to 8 snapshots)", what, value);
    }
    else if (strcmp (key, "room") == 0) {
      if (size_value (s, "room", value, &room_bytes) < 0)
        return -1;
    }
    else if (strcmp (key, "on") == 0)
      on = value;
    else if (strcmp (key, "devices") == 0)
      devices = value;
    else if (strcmp (key, "checksum") == 0 && (strcmp (value, "on") == 0 || strcmp (value, "off") == 0))
      checksum = strcmp (value, "on") == 0;
    else if (strcmp (key, "checksum") == 0)
      return fail (s, "%s: checksum=%s (on or off)", what, value);
    else if (strcmp (key, "chunk") == 0) {
      if (size_value (s, "chunk", value, &chunk_bytes) < 0)
        return -1;
    }
    else
      return fail (s, "%s: unknown key '%s' (known: method, on, devices, checksum, chunk, "
                   "snapshots, depth, room)", what, key);
  }
  if ((depth || room_bytes) && snapshots == NULL)
    return fail (s, "%s: depth= and room= need snapshots=", what);
  if (snapshots && (depth == 0 || room_bytes == 0))
    return fail (s, "%s: snapshots=%s needs depth= and room=", what, snapshots);
  /* with snapshots, the volume's base holds it and their room: the
   * snapshot layer goes on top under the volume's name */
  bool redo_log = snapshots && strcmp (snapshots, "redo-log") == 0;
  uint64_t volume_bytes = size;
  char base_name[112];
  snprintf (base_name, sizeof base_name, snapshots ? "%s/base" : "%s", name);
  if (snapshots)
    size = cl_snapshot_base_bytes (redo_log, volume_bytes, (unsigned) depth, room_bytes);
  struct cl_target *base;
  if (method == NULL) {
    if (on)
      return fail (s, "%s: on= needs method=", what);
    char lv_name[120];
    snprintf (lv_name, sizeof lv_name, "%s/lv", base_name);
    base = data_lv (s, what, (unsigned) node, checksum ? lv_name : base_name, base_name, size,
                    checksum, devices);
    if (base == NULL)
      return -1;
    return snapshots_over (s, what, w[1], name, base, redo_log, volume_bytes, (unsigned) depth,
                           room_bytes);
  }
  unsigned level, data;
  if (strcmp (method, "mirror") == 0)
    level = 1;
  else if (strcmp (method, "raid5") == 0)
    level = 5;
  else if (strcmp (method, "raid6") == 0)
    level = 6;
  else
    return fail (s, "%s: method=%s (known: mirror, raid5, raid6)", what, method);
  if (on == NULL)
    return fail (s, "%s: method=%s needs on=NODE,... (a node per component)", what, method);
  if (devices)
    return fail (s, "%s: devices= is for a volume without method= (a component's devices "
                 "follow its node in on=NODE:DEVICE+...)", what);
  unsigned holder[SL_RAID_MAX_MEMBERS], count;
  char *on_devices[SL_RAID_MAX_MEMBERS];
  if (holders_of (s, what, on, holder, on_devices, SL_RAID_MAX_MEMBERS, &count) < 0)
    return -1;
  /* the studies' erasure codes: RAID-5 3 + 1, RAID-6 4 + 2 */
  unsigned want = level == 5 ? 4 : level == 6 ? 6 : 0;
  if (want && count != want)
    return fail (s, "%s: method=%s places %u components (one per node), on= lists %u", what,
                 method, want, count);
  if (level == 1 && (count < 1 || count > 4))
    return fail (s, "%s: method=mirror keeps 1 to 4 copies (ftt 0-3), on= lists %u", what, count);
  if (level != 1 && (chunk_bytes == 0 || chunk_bytes % 4096))
    return fail (s, "%s: chunk of %" PRIu64 " bytes (a multiple of 4 KiB)", what, chunk_bytes);
  data = level == 1 ? 1 : count - (level == 5 ? 1 : 2);
  /* each piece: its share of the volume, whole chunks */
  uint64_t piece = level == 1 ? size
    : (size / data + chunk_bytes - 1) / chunk_bytes * chunk_bytes;
  struct cl_target *leg[SL_RAID_MAX_MEMBERS];
  for (unsigned i = 0; i < count; i++) {
    char lv_name[128], hop_name[160];
    snprintf (lv_name, sizeof lv_name, "%s/component/%s@%s", s->c->node[holder[i]].name, w[2], w[1]);
    snprintf (hop_name, sizeof hop_name, "%s/nvme-tcp/%s", w[1], lv_name);
    leg[i] = leg_to (s, what, (unsigned) node, holder[i], lv_name, hop_name, piece, checksum,
                     on_devices[i]);
    if (leg[i] == NULL)
      return -1;
  }
  char why[256];
  base = level == 1
    ? cl_volume_mirror_new (s->c, w[1], base_name, leg, count, holder[0] == (unsigned) node, why,
                            sizeof why)
    : cl_volume_md_new (s->c, w[1], base_name, level, chunk_bytes, leg, count, why, sizeof why);
  if (base == NULL)
    return fail (s, "%s: %s", what, why);
  cl_md_set_member_nodes (base, holder);
  return snapshots_over (s, what, w[1], name, base, redo_log, volume_bytes, (unsigned) depth,
                         room_bytes);
}

/* A replicated volume (replica-mirror.sh): the first node's md RAID-1 over
 * its own copy and every other node's, reached over NVMe/TCP. */
static int
st_replica (struct spec *s, char **w, unsigned n)
{
  if (check_stage (s, "replica", 4, "exports") < 0)
    return -1;
  if (n < 4 || n - 3 > 4)
    return fail (s, "replica: NAME SIZE NODE [NODE ...] (1 to 4 copies)");
  uint64_t size;
  if (size_value (s, "size", w[2], &size) < 0)
    return -1;
  char name[96], why[256], what[112];
  snprintf (name, sizeof name, "replica/%s", w[1]);
  snprintf (what, sizeof what, "replica %s", w[1]);
  if (cl_target_find (s->c, name))
    return fail (s, "%s: named twice", what);
  struct cl_target *legs[4];
  unsigned holders[4];
  char *devices[4 + 3];
  for (unsigned i = 3; i < n; i++)
    devices[i] = holder_devices (w[i]);
  int primary = node_of (s, w[3]);
  if (primary < 0)
    return -1;
  for (unsigned i = 3; i < n; i++) {
    int holder = node_of (s, w[i]);
    if (holder < 0)
      return -1;
    for (unsigned k = 3; k < i; k++)
      if (strcmp (w[k], w[i]) == 0)
        return fail (s, "%s: node %s holds two copies", what, w[i]);
    char lv_name[96], hop_name[128];
    snprintf (lv_name, sizeof lv_name, "%s/replica-%s", w[i], w[1]);
    snprintf (hop_name, sizeof hop_name, "%s/nvme-tcp/%s/replica-%s", w[3], w[i], w[1]);
    legs[i - 3] = leg_to (s, what, (unsigned) primary, (unsigned) holder, lv_name, hop_name, size,
                          false, devices[i]);
    if (legs[i - 3] == NULL)
      return -1;
    holders[i - 3] = (unsigned) holder;
  }
  struct cl_target *mirror = cl_mirror_new (s->c, w[3], name, 0, legs, n - 3, why, sizeof why);
  if (mirror == NULL)
    return fail (s, "%s: %s", what, why);
  cl_md_set_member_nodes (mirror, holders);
  return 0;
}

static int
st_export (struct spec *s, char **w, unsigned n)
{
  if (check_stage (s, "export", 5, "") < 0)
    return -1;
  if (n != 5)
    return fail (s, "export: NODE at=OFFSET size=SIZE volume=NAME|share=NAME");
  int node = node_of (s, w[1]);
  if (node < 0)
    return -1;
  uint64_t at = UINT64_MAX, size = 0;
  char *key, *value, *target_kind = NULL, *target_name = NULL;
  for (unsigned i = 2; i < n; i++) {
    if (!split_pair (w[i], &key, &value))
      return fail (s, "export %s: '%s' is not KEY=VALUE", w[1], w[i]);
    if (strcmp (key, "at") == 0) {
      if (size_value (s, key, value, &at) < 0)
        return -1;
    }
    else if (strcmp (key, "size") == 0) {
      if (size_value (s, key, value, &size) < 0)
        return -1;
    }
    else if (strcmp (key, "volume") == 0 || strcmp (key, "share") == 0) {
      target_kind = key;
      target_name = value;
    }
    else
      return fail (s, "export %s: unknown key '%s' (known: at, size, volume, share)", w[1], key);
  }
  if (at == UINT64_MAX || size == 0 || target_kind == NULL)
    return fail (s, "export %s: needs at=, size= and volume= or share=", w[1]);
  struct cluster *c = s->c;
  struct cl_node *nd = &c->node[node];
  char name[96], why[256];
  struct cl_target *below;
  if (strcmp (target_kind, "volume") == 0) {
    snprintf (name, sizeof name, "%s/volume/%s", w[1], target_name);
    below = cl_target_find (c, name);
    if (below == NULL)
      return fail (s, "export %s: no volume %s on %s", w[1], target_name, w[1]);
  }
  else {
    snprintf (name, sizeof name, "replica/%s", target_name);
    struct cl_target *volume = cl_target_find (c, name);
    if (volume == NULL)
      return fail (s, "export %s: no replica %s", w[1], target_name);
    int server = cl_node_find (c, volume->node);
    bool a_to_b = true;
    struct cl_link *link = server == node ? NULL
      : cl_link_find (c, (unsigned) node, (unsigned) server, &a_to_b);
    if (server != node && link == NULL)
      return fail (s, "export %s: no link to %s, which serves %s", w[1], volume->node,
                   target_name);
    /* the node serving the share mounts it directly (the lab's bind mount,
     * nfs-export.sh): NFS only from the other nodes */
    snprintf (name, sizeof name, "%s/nfs/%s", w[1], target_name);
    below = server == node ? volume : cl_target_find (c, name);
    if (below == NULL)
      below = cl_remote_new (c, w[1], name, "nfs", link, a_to_b, &c->node[server].cpu, volume,
                             why, sizeof why);
    if (below == NULL)
      return fail (s, "export %s: %s", w[1], why);
  }
  /* the node's VMs reach each volume or share through their host */
  snprintf (name, sizeof name, "%s/front/%s/%s", w[1], target_kind, target_name);
  struct cl_target *front = cl_target_find (c, name);
  if (front == NULL)
    front = cl_front_new (c, w[1], name, &nd->cpu, below, why, sizeof why);
  if (front == NULL || cl_export_add (c, (unsigned) node, front, at, size, why, sizeof why) < 0)
    return fail (s, "export %s: %s", w[1], why);
  return 0;
}

/* ------------------------------------------------------------ parsing -- */

static int
statement (struct spec *s, char **w, unsigned n)
{
  static const struct {
    const char *word;
    int (*fn) (struct spec *, char **, unsigned);
  } table[] = {
    { "pool", st_pool }, { "node", st_node }, { "device", st_device }, { "link", st_link }, { "local", st_local },
    { "volume", st_volume }, { "replica", st_replica }, { "export", st_export },
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (strcmp (w[0], table[i].word) == 0)
      return table[i].fn (s, w, n);
  return fail (s, "unknown statement '%s' (known: pool, node, device, link, local, volume, "
               "replica, export)", w[0]);
}

static int
parse (struct spec *s, char *text)
{
  bool header = false;
  char *save = NULL;
  s->line = 0;
  for (char *line = text, *next; line && !s->failed; line = next) {
    next = strchr (line, '\n');
    if (next)
      *next++ = '\0';
    s->line++;
    char *hash = strchr (line, '#');
    if (hash)
      *hash = '\0';
    char *w[MAX_WORDS];
    unsigned n = 0;
    for (char *word = strtok_r (line, " \t\r", &save); word; word = strtok_r (NULL, " \t\r", &save)) {
      if (n == MAX_WORDS)
        return fail (s, "more than %u words on a line", MAX_WORDS);
      w[n++] = word;
    }
    if (n == 0)
      continue;
    if (!header) {
      if (n != 2 || strcmp (w[0], "storlab-cluster") != 0 || strcmp (w[1], "1") != 0)
        return fail (s, "not a cluster spec: the first statement is 'storlab-cluster 1'");
      header = true;
      continue;
    }
    if (statement (s, w, n) < 0)
      return -1;
    uint64_t used = heap_bytes () - s->heap_start_bytes;
    if (s->budget_bytes && used > s->budget_bytes)
      return fail (s, "the cluster's models need more than %" PRIu64 " MiB by this line (%"
                   PRIu64 " MiB); this host has %" PRIu64 " MiB for them: fewer nodes, or"
                   " smaller devices", s->budget_bytes >> 20, used >> 20, s->budget_bytes >> 20);
  }
  if (!header)
    return fail (s, "empty: the first statement is 'storlab-cluster 1'");
  if (s->c->export_count == 0) {
    s->line++;
    return fail (s, "no export: nothing for a workload to drive");
  }
  return 0;
}

struct sl_model
sl_cluster_model_from_text (const char *text, const char *name, uint64_t budget_bytes,
                            char *err, size_t err_bytes)
{
  struct sl_model none = { 0 };
  char *copy = strdup (text);
  if (copy == NULL) {
    snprintf (err, err_bytes, "%s: out of memory", name);
    return none;
  }
  struct spec s = { .c = cl_cluster_new (), .name = name, .err = err, .err_bytes = err_bytes,
                    .budget_bytes = budget_bytes, .heap_start_bytes = heap_bytes () };
  int rc = parse (&s, copy);
  free (copy);
  if (rc < 0) {
    cl_cluster_free (s.c);
    return none;
  }
  return cl_cluster_model (s.c);
}

struct sl_model
sl_cluster_model_from_file (const char *path, uint64_t budget_bytes, char *err,
                            size_t err_bytes)
{
  struct sl_model none = { 0 };
  int fd = open (path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat (fd, &st) != 0) {
    snprintf (err, err_bytes, "%s: %s", path, strerror (errno));
    if (fd >= 0)
      close (fd);
    return none;
  }
  if (!S_ISREG (st.st_mode) || st.st_size > SPEC_MAX_BYTES) {
    snprintf (err, err_bytes, "%s: not a regular file of at most %u bytes", path, SPEC_MAX_BYTES);
    close (fd);
    return none;
  }
  char *text = cl_xcalloc (1, (size_t) st.st_size + 1);
  ssize_t got = read (fd, text, (size_t) st.st_size);
  close (fd);
  if (got != st.st_size) {
    snprintf (err, err_bytes, "%s: short read", path);
    free (text);
    return none;
  }
  struct sl_model model = sl_cluster_model_from_text (text, path, budget_bytes, err, err_bytes);
  free (text);
  return model;
}
