/* cluster_spec.c — building a cluster from its spec: one statement a line,
 * '#' to the end of a line is a comment, words separated by blanks.
 *
 *   storlab-cluster 1                          first line: the format
 *   pool cores=N                               optional, first: every node runs on one
 *                                              host of N cores (a lab's guests)
 *   node NAME [host=PRESET] [cores=N] [per-io-us=X] [per-device-io-us=X]
 *        [per-hop-io-us=X] [per-remote-io-us=X] [idle-wake-us=X]
 *        [hypervisor-per-device-io-us=X] [hypervisor-per-message-us=X]
 *        [process-switch-us=X] [batch-ios-max=X] [crowded-wake-us=X]
 *        [busy-host-share=X] [calibrated-utilisation=X]
 *        [processes=N] [threads=T] [worker-depth=D]   N: the processes issuing
 *                                              its front-end I/Os (a lab's fio units),
 *                                              T: the threads of each (a unit's
 *                                              workers), D: the I/Os each thread
 *                                              keeps in flight (fio's iodepth)
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
 *         [group=N]                            a node's disk groups 1..8 (a vSAN
 *                                              host's), one statement each, 1, 2...
 *                                              in order, each its own cache and
 *                                              devices; several: each per-device,
 *                                              the volume group every group's
 *                                              regions; group N > 1's targets are
 *                                              named diskgroupN, capacityN...
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
 * those PVs, by the disk group's stripe unit (group 1's), whichever of the
 * node's disk groups each lies in.
 *   export NODE at=OFFSET size=SIZE volume=NAME   NODE's VMs drive volume NAME
 *   export NODE at=OFFSET size=SIZE share=NAME    ... files on replica NAME over NFS
 *
 * Sizes take nbdkit's suffixes (k, M, G, T: powers of 1024).  Nodes, then
 * their devices, links and local volumes, then LVs (allocated in the order
 * they come, as the lab's lvcreate calls are), then exports in ascending
 * order.  Host presets and link presets: fabric.c.  Every error names the
 * spec, the line and the word. */
#define _GNU_SOURCE
#include "spec_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdbool.h>
#include <stddef.h>
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

/* What the process has allocated (mapped large blocks included). */
static uint64_t
heap_bytes (void)
{
  struct mallinfo2 mi = mallinfo2 ();
  return (uint64_t) mi.uordblks + (uint64_t) mi.hblkhd;
}

int
spec_fail (struct spec *s, const char *fmt, ...)
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

int
spec_size (struct spec *s, const char *key, const char *value, uint64_t *out)
{
  if (sl_parse_size_bytes (value, out) != 0)
    return spec_fail (s, "%s=%s: not a size (bytes, or with k, M, G, T)", key, value);
  return 0;
}

int
spec_number (struct spec *s, const char *key, const char *value, double lo, double hi,
             double *out)
{
  char *end;
  errno = 0;
  double v = strtod (value, &end);
  if (value[0] == '\0' || *end != '\0' || errno || !(v >= lo && v <= hi))
    return spec_fail (s, "%s=%s: not a number in %g..%g", key, value, lo, hi);
  *out = v;
  return 0;
}

/* KEY=VALUE word: splits it in place; false if the word has no '='. */
bool
spec_split_pair (char *word, char **key, char **value)
{
  char *eq = strchr (word, '=');
  if (eq == NULL || eq == word)
    return false;
  *eq = '\0';
  *key = word;
  *value = eq + 1;
  return true;
}

int
spec_node_of (struct spec *s, const char *name)
{
  int n = cl_node_find (s->c, name);
  if (n < 0)
    spec_fail (s, "no node '%s' (nodes come first, each in a node statement)", name);
  return n;
}

struct cl_target *
spec_device_of (struct spec *s, unsigned node, const char *name)
{
  char full[96];
  snprintf (full, sizeof full, "%s/%s", s->c->node[node].name, name);
  struct cl_target *t = cl_target_find (s->c, full);
  if (t == NULL || strcmp (t->ops->kind, "device") != 0)
    spec_fail (s, "node %s has no device '%s'", s->c->node[node].name, name);
  return t;
}

int
spec_check_stage (struct spec *s, const char *what, unsigned stage, const char *before)
{
  if (stage < s->stage)
    return spec_fail (s, "%s after %s: statements come in the order node, device, link, local, "
                      "volume/replica, export", what, before);
  s->stage = stage;
  return 0;
}

/* -------------------------------------------------------------- pool -- */

static int
st_pool (struct spec *s, char **w, unsigned n)
{
  if (s->stage > 0 || s->c->node_count > 0 || s->c->has_pool)
    return spec_fail (s, "pool: once, before the nodes");
  char *key, *value;
  double cores;
  if (n != 2 || !spec_split_pair (w[1], &key, &value) || strcmp (key, "cores") != 0)
    return spec_fail (s, "pool: cores=N (the cores of the one host every node runs on)");
  if (spec_number (s, key, value, 1, 4096, &cores) < 0)
    return -1;
  struct cl_host_config config = { .cores = (uint32_t) cores };
  cl_cpu_init (&s->c->pool, &config);
  s->c->has_pool = true;
  return 0;
}

/* ------------------------------------------------------------- nodes -- */

/* What a node's workload is like: the processes issuing its I/Os, their
 * threads, each thread's depth (how its CPU's switches and wake-ups batch). */
struct workload_count {
  const char *key;
  uint32_t *value;
};

static uint32_t *
workload_count (struct workload_count *counts, const char *key)
{
  for (; counts->key != NULL; counts++)       /* up to the { NULL } that ends them */
    if (strcmp (counts->key, key) == 0)
      return counts->value;
  return NULL;
}

static int
st_node (struct spec *s, char **w, unsigned n)
{
  if (spec_check_stage (s, "node", 0, "devices") < 0)
    return -1;
  if (n < 2)
    return spec_fail (s, "node: missing its NAME");
  struct cluster *c = s->c;
  if (strlen (w[1]) >= CL_NAME_BYTES || strchr (w[1], '/'))
    return spec_fail (s, "node %s: a name of at most %u characters without '/'", w[1],
                      CL_NAME_BYTES - 1);
  if (cl_node_find (c, w[1]) >= 0)
    return spec_fail (s, "node %s: named twice", w[1]);
  if (c->node_count == CL_MAX_NODES)
    return spec_fail (s, "node %s: more than %u nodes", w[1], CL_MAX_NODES);
  struct cl_host_config host;
  char why[256];
  uint32_t processes = 0, threads = 0, worker_depth = 0, *count;
  struct workload_count counts[] = {
    { "processes", &processes }, { "threads", &threads }, { "worker-depth", &worker_depth },
    { NULL, NULL },
  };
  cl_host_preset (CL_HOST_PRESET_DEFAULT, &host, why, sizeof why);
  for (unsigned i = 2; i < n; i++) {
    char *key, *value;
    double v, lo, hi;
    const struct cl_host_cost *cost;
    if (!spec_split_pair (w[i], &key, &value))
      return spec_fail (s, "node %s: '%s' is not KEY=VALUE", w[1], w[i]);
    if (strcmp (key, "host") == 0) {
      if (cl_host_preset (value, &host, why, sizeof why) < 0)
        return spec_fail (s, "node %s: %s", w[1], why);
    }
    else if (strcmp (key, "cores") == 0) {
      if (spec_number (s, key, value, 1, 4096, &v) < 0)
        return -1;
      host.cores = (uint32_t) v;
    }
    else if ((count = workload_count (counts, key)) != NULL) {
      if (spec_number (s, key, value, 0, 1 << 20, &v) < 0)
        return -1;
      *count = (uint32_t) v;
    }
    else if (cl_host_ratio_find (key, &lo, &hi)) {
      if (spec_number (s, key, value, lo, hi, &v) < 0)
        return -1;
      if (cl_host_ratio_set (&host, key, v) < 0)          /* in bounds: a count's fraction */
        return spec_fail (s, "%s=%s: not a whole number", key, value);
    }
    else if ((cost = cl_host_cost_find (key)) != NULL) {
      if (spec_number (s, key, value, 0, 1e6, &v) < 0)
        return -1;
      cl_host_cost_set (&host, cost, (uint64_t) (v * NS_PER_US));
    }
    else {
      char ratios[256], keys[1024];
      return spec_fail (s, "node %s: unknown key '%s' (known: host, cores, processes, "
                        "threads, worker-depth, %s, %s)", w[1], key,
                        cl_host_ratio_keys (ratios, sizeof ratios),
                        cl_host_cost_keys (keys, sizeof keys));
    }
  }
  struct cl_node *node = &c->node[c->node_count++];
  snprintf (node->name, sizeof node->name, "%s", w[1]);
  cl_cpu_init (&node->cpu, &host);
  node->cpu.processes = processes;
  node->cpu.threads = threads;
  node->cpu.worker_depth = worker_depth;
  if (c->has_pool)
    cl_cpu_join_pool (&node->cpu, &c->pool);
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
    if (!spec_split_pair (w[i], &key, &value)) {
      spec_fail (s, "device %s: '%s' is not KEY=VALUE", w[2], w[i]);
      goto out;
    }
    const struct sl_driver_key *dk = strcmp (key, "preset") ? sl_driver_key_find (key) : NULL;
    int rc = dk ? sl_driver_settings_set (&driver, key, value, why, sizeof why)
      : sl_device_builder_add (&b, key, value, why, sizeof why);
    if (rc != 0) {
      spec_fail (s, "device %s: %s", w[2], why);
      goto out;
    }
  }
  void *config = cl_xcalloc (1, kind->config_bytes);
  if (sl_device_builder_build (&b, config, why, sizeof why) == 0)
    model = kind->create (config, why, sizeof why);
  free (config);
  if (model.ops == NULL)
    spec_fail (s, "device %s: %s", w[2], why);
  else
    model = sl_driver_settings_model (&driver, model);
 out:
  sl_device_builder_free (&b);
  return model;
}

static int
st_device (struct spec *s, char **w, unsigned n)
{
  if (spec_check_stage (s, "device", 1, "links") < 0)
    return -1;
  if (n < 4)
    return spec_fail (s, "device: NODE NAME KIND [KEY=VALUE ...]");
  int node = spec_node_of (s, w[1]);
  if (node < 0)
    return -1;
  const struct sl_device_kind *kind = sl_device_kind_find (w[3]);
  if (kind == NULL)
    return spec_fail (s, "device %s: unknown kind '%s' (known: %s)", w[2], w[3],
                      sl_device_kind_names ());
  char full[96];
  snprintf (full, sizeof full, "%s/%s", w[1], w[2]);
  if (strlen (w[2]) >= CL_NAME_BYTES || strchr (w[2], '/') || cl_target_find (s->c, full))
    return spec_fail (s, "device %s: a new name of at most %u characters without '/'", w[2],
                      CL_NAME_BYTES - 1);
  struct sl_model model = build_device (s, kind, w, n);
  if (model.ops == NULL)
    return -1;
  char why[256];
  if (cl_device_new (s->c, w[1], full, model, why, sizeof why) == NULL)
    return spec_fail (s, "device %s: %s", w[2], why);
  return 0;
}

/* ------------------------------------------------------------- links -- */

static int
st_link (struct spec *s, char **w, unsigned n)
{
  if (spec_check_stage (s, "link", 2, "local volumes") < 0)
    return -1;
  if (n < 3)
    return spec_fail (s, "link: NODE NODE [preset=P] [latency-us=X] [bandwidth-mb-s=X]");
  int a = spec_node_of (s, w[1]), b = a < 0 ? -1 : spec_node_of (s, w[2]);
  if (a < 0 || b < 0)
    return -1;
  bool dir;
  if (a == b || cl_link_find (s->c, (unsigned) a, (unsigned) b, &dir))
    return spec_fail (s, "link %s %s: a link joins two nodes, once", w[1], w[2]);
  struct cl_link_config config;
  char why[256];
  cl_link_preset (CL_LINK_PRESET_DEFAULT, &config, why, sizeof why);
  for (unsigned i = 3; i < n; i++) {
    char *key, *value;
    double v;
    if (!spec_split_pair (w[i], &key, &value))
      return spec_fail (s, "link %s %s: '%s' is not KEY=VALUE", w[1], w[2], w[i]);
    if (strcmp (key, "preset") == 0) {
      if (cl_link_preset (value, &config, why, sizeof why) < 0)
        return spec_fail (s, "link %s %s: %s", w[1], w[2], why);
    }
    else if (strcmp (key, "latency-us") == 0) {
      if (spec_number (s, key, value, 0, 1e7, &v) < 0)
        return -1;
      config.latency_ns = (uint64_t) (v * NS_PER_US);
    }
    else if (strcmp (key, "bandwidth-mb-s") == 0) {
      if (spec_number (s, key, value, 0.001, 1e7, &v) < 0)
        return -1;
      config.bytes_per_s = (uint64_t) (v * 1e6);
    }
    else
      return spec_fail (s, "link %s %s: unknown key '%s' (known: preset, latency-us, "
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

static int
st_export (struct spec *s, char **w, unsigned n)
{
  if (spec_check_stage (s, "export", 5, "") < 0)
    return -1;
  if (n != 5)
    return spec_fail (s, "export: NODE at=OFFSET size=SIZE volume=NAME|share=NAME");
  int node = spec_node_of (s, w[1]);
  if (node < 0)
    return -1;
  uint64_t at = UINT64_MAX, size = 0;
  char *key, *value, *target_kind = NULL, *target_name = NULL;
  for (unsigned i = 2; i < n; i++) {
    if (!spec_split_pair (w[i], &key, &value))
      return spec_fail (s, "export %s: '%s' is not KEY=VALUE", w[1], w[i]);
    if (strcmp (key, "at") == 0) {
      if (spec_size (s, key, value, &at) < 0)
        return -1;
    }
    else if (strcmp (key, "size") == 0) {
      if (spec_size (s, key, value, &size) < 0)
        return -1;
    }
    else if (strcmp (key, "volume") == 0 || strcmp (key, "share") == 0) {
      target_kind = key;
      target_name = value;
    }
    else
      return spec_fail (s, "export %s: unknown key '%s' (known: at, size, volume, share)", w[1], key);
  }
  if (at == UINT64_MAX || size == 0 || target_kind == NULL)
    return spec_fail (s, "export %s: needs at=, size= and volume= or share=", w[1]);
  struct cluster *c = s->c;
  struct cl_node *nd = &c->node[node];
  char name[96], why[256];
  struct cl_target *below;
  if (strcmp (target_kind, "volume") == 0) {
    snprintf (name, sizeof name, "%s/volume/%s", w[1], target_name);
    below = cl_target_find (c, name);
    if (below == NULL)
      return spec_fail (s, "export %s: no volume %s on %s", w[1], target_name, w[1]);
  }
  else {
    snprintf (name, sizeof name, "replica/%s", target_name);
    struct cl_target *volume = cl_target_find (c, name);
    if (volume == NULL)
      return spec_fail (s, "export %s: no replica %s", w[1], target_name);
    int server = cl_node_find (c, volume->node);
    bool a_to_b = true;
    struct cl_link *link = server == node ? NULL
      : cl_link_find (c, (unsigned) node, (unsigned) server, &a_to_b);
    if (server != node && link == NULL)
      return spec_fail (s, "export %s: no link to %s, which serves %s", w[1], volume->node,
                        target_name);
    /* the node serving the share mounts it directly (the lab's bind mount,
     * nfs-export.sh): NFS only from the other nodes */
    snprintf (name, sizeof name, "%s/nfs/%s", w[1], target_name);
    below = server == node ? volume : cl_target_find (c, name);
    if (below == NULL)
      below = cl_remote_new (c, w[1], name, "nfs", link, a_to_b, &nd->cpu, &c->node[server].cpu,
                             volume, why, sizeof why);
    if (below == NULL)
      return spec_fail (s, "export %s: %s", w[1], why);
  }
  /* the node's VMs reach each volume or share through their host */
  snprintf (name, sizeof name, "%s/front/%s/%s", w[1], target_kind, target_name);
  struct cl_target *front = cl_target_find (c, name);
  if (front == NULL)
    front = cl_front_new (c, w[1], name, &nd->cpu, below, strcmp (target_kind, "share") == 0,
                          why, sizeof why);
  if (front == NULL || cl_export_add (c, (unsigned) node, front, at, size, why, sizeof why) < 0)
    return spec_fail (s, "export %s: %s", w[1], why);
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
    { "pool", st_pool }, { "node", st_node }, { "device", st_device }, { "link", st_link },
    { "local", spec_local }, { "volume", spec_volume }, { "replica", spec_replica },
    { "export", st_export },
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (strcmp (w[0], table[i].word) == 0)
      return table[i].fn (s, w, n);
  return spec_fail (s, "unknown statement '%s' (known: pool, node, device, link, local, volume, "
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
        return spec_fail (s, "more than %u words on a line", MAX_WORDS);
      w[n++] = word;
    }
    if (n == 0)
      continue;
    if (!header) {
      if (n != 2 || strcmp (w[0], "storlab-cluster") != 0 || strcmp (w[1], "1") != 0)
        return spec_fail (s, "not a cluster spec: the first statement is 'storlab-cluster 1'");
      header = true;
      continue;
    }
    if (statement (s, w, n) < 0)
      return -1;
    uint64_t used = heap_bytes () - s->heap_start_bytes;
    if (s->budget_bytes && used > s->budget_bytes)
      return spec_fail (s, "the cluster's models need more than %" PRIu64 " MiB by this line (%"
                        PRIu64 " MiB); this host has %" PRIu64 " MiB for them: fewer nodes, or"
                        " smaller devices", s->budget_bytes >> 20, used >> 20, s->budget_bytes >> 20);
  }
  if (!header)
    return spec_fail (s, "empty: the first statement is 'storlab-cluster 1'");
  if (s->c->export_count == 0) {
    s->line++;
    return spec_fail (s, "no export: nothing for a workload to drive");
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
