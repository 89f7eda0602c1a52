/* spec_lvs.c — a cluster spec's LVs (the format: cluster_spec.c): LVM's
 * allocation on a node's local volume (or on the capacity disks it names),
 * workload volumes with their storage policies (md over components on
 * other nodes, dm-integrity, snapshots) and replicated volumes. */
#define _GNU_SOURCE
#include "spec_reader.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layers.h"
#include "raid/raid.h"

/* The physical volumes devices names ("disk0+disk1") on node nd, each
 * once, into on (room for max); how many, or 0 (recorded) for a name it
 * has not. */
static unsigned
named_pvs (struct spec *s, struct cl_node *nd, const char *name, const char *devices,
           struct cl_pv **on, unsigned max)
{
  unsigned count = 0;
  char list[256];
  snprintf (list, sizeof list, "%s", devices);
  for (char *save = NULL, *device = strtok_r (list, "+", &save); device;
       device = strtok_r (NULL, "+", &save)) {
    struct cl_pv *pv = NULL;
    for (unsigned i = 0; i < nd->pv_count && pv == NULL; i++)
      if (strcmp (nd->pv[i].device, device) == 0)
        pv = &nd->pv[i];
    if (pv == NULL) {
      spec_fail (s, "%s: node %s has no capacity device '%s' in its volume group", name,
                 nd->name, device);
      return 0;
    }
    for (unsigned k = 0; k < count; k++)
      if (on[k] == pv) {
        spec_fail (s, "%s: device %s named twice", name, device);
        return 0;
      }
    /* several disk groups hold more PVs than an LV may stripe over */
    if (count == max) {
      spec_fail (s, "%s: on more than %u devices", name, max);
      return 0;
    }
    on[count++] = pv;
  }
  if (count == 0)
    spec_fail (s, "%s: names no device", name);
  return count;
}

/* Every LV is a device-mapper target (linear, or striped over several
 * PVs): its remap costs its node's kernel for each I/O it takes. */
static struct cl_target *
remapped (struct cl_node *nd, struct cl_target *lv)
{
  if (lv)
    cl_layer_runs_on (lv, &nd->cpu, nd->cpu.config.per_linear_io_ns);
  return lv;
}

/* An LV of size_bytes on node's local volume, after those before it; on a
 * volume group made of the node's capacity devices (volume-group=
 * per-device), on the ones devices names ("disk0+disk1"): striped over
 * them by the group's stripe unit when several, each holding its share
 * after the LVs before it there, as lvcreate -i over those PVs does.  Each
 * share is a slice of the disk group its device's region lies in (a node
 * may have several), so one LV may span groups. */
static struct cl_target *
new_lv (struct spec *s, unsigned node, const char *name, uint64_t size_bytes, bool listed,
        const char *devices)
{
  struct cl_node *nd = &s->c->node[node];
  if (nd->local == NULL) {
    spec_fail (s, "%s: node %s has no local volume (a local statement comes first)", name, nd->name);
    return NULL;
  }
  uint64_t extents_bytes = (size_bytes + LVM_EXTENT_BYTES - 1) / LVM_EXTENT_BYTES * LVM_EXTENT_BYTES;
  char why[256];
  if (nd->pv == NULL) {
    if (devices) {
      spec_fail (s, "%s: on devices %s, but node %s's volume group is its local volume (its local "
                 "statement has no volume-group=per-device)", name, devices, nd->name);
      return NULL;
    }
    struct cl_target *lv = cl_slice_new (s->c, nd->name, name, nd->local, nd->local_used_bytes,
                                         extents_bytes, listed, why, sizeof why);
    if (lv == NULL) {
      spec_fail (s, "%s: node %s's local volume is full: %s", name, nd->name, why);
      return NULL;
    }
    nd->local_used_bytes += extents_bytes;
    return remapped (nd, lv);
  }
  if (devices == NULL) {
    spec_fail (s, "%s: node %s's volume group is made of its capacity devices: name the LV's "
               "(devices=, or NODE:DEVICE+...)", name, nd->name);
    return NULL;
  }
  struct cl_pv *on[64];
  unsigned count = named_pvs (s, nd, name, devices, on, sizeof on / sizeof on[0]);
  if (count == 0)
    return NULL;
  /* lvcreate -i: whole extents, the same on every stripe */
  uint64_t extents = extents_bytes / LVM_EXTENT_BYTES;
  uint64_t share_bytes = (extents + count - 1) / count * LVM_EXTENT_BYTES;
  for (unsigned k = 0; k < count; k++) {
    /* the region's whole extents after its own PV header */
    uint64_t usable = (on[k]->size_bytes - LVM_PE_START_BYTES) / LVM_EXTENT_BYTES * LVM_EXTENT_BYTES;
    if (on[k]->used_bytes + share_bytes > usable) {
      spec_fail (s, "%s: node %s's device %s has %" PRIu64 " MiB free, the LV needs %" PRIu64
                 " MiB there", name, nd->name, on[k]->device, (usable - on[k]->used_bytes) >> 20,
                 share_bytes >> 20);
      return NULL;
    }
  }
  struct cl_target *part[64];
  for (unsigned k = 0; k < count; k++) {
    char part_name[160];
    snprintf (part_name, sizeof part_name, "%s/on-%s", name, on[k]->device);
    part[k] = cl_slice_new (s->c, nd->name, count == 1 ? name : part_name, on[k]->group,
                            on[k]->base_bytes + LVM_PE_START_BYTES + on[k]->used_bytes,
                            share_bytes, count == 1 && listed, why, sizeof why);
    if (part[k] == NULL) {
      spec_fail (s, "%s: %s", name, why);
      return NULL;
    }
    on[k]->used_bytes += share_bytes;
  }
  if (count == 1)
    return remapped (nd, part[0]);
  struct cl_target *lv = cl_stripe_new (s->c, nd->name, name, nd->pv_stripe_bytes, part, count,
                                        why, sizeof why);
  if (lv == NULL)
    spec_fail (s, "%s: %s", name, why);
  return remapped (nd, lv);
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
    spec_fail (s, "%s: %s", what, why);
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
    spec_fail (s, "%s: no link between %s and %s", what, s->c->node[home].name,
               s->c->node[holder].name);
    return NULL;
  }
  leg = cl_remote_new (s->c, s->c->node[home].name, hop_name, "nvme-tcp", link, a_to_b,
                       &s->c->node[home].cpu, &s->c->node[holder].cpu, leg, why, sizeof why);
  if (leg == NULL)
    spec_fail (s, "%s: %s", what, why);
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
    int node = spec_node_of (s, name);
    if (node < 0)
      return -1;
    for (unsigned k = 0; k < *count; k++)
      if (holder[k] == (unsigned) node)
        return spec_fail (s, "%s: node %s holds two components", what, name);
    if (*count == max)
      return spec_fail (s, "%s: on= lists more than %u nodes", what, max);
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
    return spec_fail (s, "%s: %s", what, why);
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
int
spec_volume (struct spec *s, char **w, unsigned n)
{
  if (spec_check_stage (s, "volume", 4, "exports") < 0)
    return -1;
  if (n < 4)
    return spec_fail (s, "volume: NODE NAME SIZE [method=mirror|raid5|raid6 on=NODE,...] "
                      "[checksum=on|off] [chunk=SIZE]");
  int node = spec_node_of (s, w[1]);
  uint64_t size;
  if (node < 0 || spec_size (s, "size", w[3], &size) < 0)
    return -1;
  char name[96], what[128];
  snprintf (name, sizeof name, "%s/volume/%s", w[1], w[2]);
  snprintf (what, sizeof what, "volume %s %s", w[1], w[2]);
  if (cl_target_find (s->c, name))
    return spec_fail (s, "%s: named twice", what);
  const char *method = NULL, *snapshots = NULL, *devices = NULL;
  char *on = NULL;
  bool checksum = false;
  uint64_t chunk_bytes = 512 * 1024, room_bytes = 0, depth = 0;
  for (unsigned i = 4; i < n; i++) {
    char *key, *value;
    if (!spec_split_pair (w[i], &key, &value))
      return spec_fail (s, "%s: '%s' is not KEY=VALUE", what, w[i]);
    if (strcmp (key, "method") == 0)
      method = value;
    else if (strcmp (key, "snapshots") == 0 && (strcmp (value, "redo-log") == 0
                                                || strcmp (value, "redirect-on-write") == 0))
      snapshots = value;
    else if (strcmp (key, "snapshots") == 0)
      return spec_fail (s, "%s: snapshots=%s (redo-log or redirect-on-write)", what, value);
    else if (strcmp (key, "depth") == 0) {
      char *end;
      depth = strtoull (value, &end, 10);
      if (*end || depth < 1 || depth > 8)
        return spec_fail (s, "%s: depth=%s (1 to 8 snapshots)", what, value);
    }
    else if (strcmp (key, "room") == 0) {
      if (spec_size (s, "room", value, &room_bytes) < 0)
        return -1;
    }
    else if (strcmp (key, "on") == 0)
      on = value;
    else if (strcmp (key, "devices") == 0)
      devices = value;
    else if (strcmp (key, "checksum") == 0 && (strcmp (value, "on") == 0 || strcmp (value, "off") == 0))
      checksum = strcmp (value, "on") == 0;
    else if (strcmp (key, "checksum") == 0)
      return spec_fail (s, "%s: checksum=%s (on or off)", what, value);
    else if (strcmp (key, "chunk") == 0) {
      if (spec_size (s, "chunk", value, &chunk_bytes) < 0)
        return -1;
    }
    else
      return spec_fail (s, "%s: unknown key '%s' (known: method, on, devices, checksum, chunk, "
                        "snapshots, depth, room)", what, key);
  }
  if ((depth || room_bytes) && snapshots == NULL)
    return spec_fail (s, "%s: depth= and room= need snapshots=", what);
  if (snapshots && (depth == 0 || room_bytes == 0))
    return spec_fail (s, "%s: snapshots=%s needs depth= and room=", what, snapshots);
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
      return spec_fail (s, "%s: on= needs method=", what);
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
    return spec_fail (s, "%s: method=%s (known: mirror, raid5, raid6)", what, method);
  if (on == NULL)
    return spec_fail (s, "%s: method=%s needs on=NODE,... (a node per component)", what, method);
  if (devices)
    return spec_fail (s, "%s: devices= is for a volume without method= (a component's devices "
                      "follow its node in on=NODE:DEVICE+...)", what);
  unsigned holder[SL_RAID_MAX_MEMBERS], count;
  char *on_devices[SL_RAID_MAX_MEMBERS];
  if (holders_of (s, what, on, holder, on_devices, SL_RAID_MAX_MEMBERS, &count) < 0)
    return -1;
  /* the studies' erasure codes: RAID-5 3 + 1, RAID-6 4 + 2 */
  unsigned want = level == 5 ? 4 : level == 6 ? 6 : 0;
  if (want && count != want)
    return spec_fail (s, "%s: method=%s places %u components (one per node), on= lists %u", what,
                      method, want, count);
  if (level == 1 && (count < 1 || count > 4))
    return spec_fail (s, "%s: method=mirror keeps 1 to 4 copies (ftt 0-3), on= lists %u", what, count);
  if (level != 1 && (chunk_bytes == 0 || chunk_bytes % 4096))
    return spec_fail (s, "%s: chunk of %" PRIu64 " bytes (a multiple of 4 KiB)", what, chunk_bytes);
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
    return spec_fail (s, "%s: %s", what, why);
  cl_md_set_member_nodes (base, holder);
  cl_md_runs_on (base, &s->c->node[node].cpu);
  return snapshots_over (s, what, w[1], name, base, redo_log, volume_bytes, (unsigned) depth,
                         room_bytes);
}

/* A replicated volume (replica-mirror.sh): the first node's md RAID-1 over
 * its own copy and every other node's, reached over NVMe/TCP. */
int
spec_replica (struct spec *s, char **w, unsigned n)
{
  if (spec_check_stage (s, "replica", 4, "exports") < 0)
    return -1;
  if (n < 4 || n - 3 > 4)
    return spec_fail (s, "replica: NAME SIZE NODE [NODE ...] (1 to 4 copies)");
  uint64_t size;
  if (spec_size (s, "size", w[2], &size) < 0)
    return -1;
  char name[96], why[256], what[112];
  snprintf (name, sizeof name, "replica/%s", w[1]);
  snprintf (what, sizeof what, "replica %s", w[1]);
  if (cl_target_find (s->c, name))
    return spec_fail (s, "%s: named twice", what);
  struct cl_target *legs[4];
  unsigned holders[4];
  char *devices[4 + 3];
  for (unsigned i = 3; i < n; i++)
    devices[i] = holder_devices (w[i]);
  int primary = spec_node_of (s, w[3]);
  if (primary < 0)
    return -1;
  for (unsigned i = 3; i < n; i++) {
    int holder = spec_node_of (s, w[i]);
    if (holder < 0)
      return -1;
    for (unsigned k = 3; k < i; k++)
      if (strcmp (w[k], w[i]) == 0)
        return spec_fail (s, "%s: node %s holds two copies", what, w[i]);
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
    return spec_fail (s, "%s: %s", what, why);
  cl_md_set_member_nodes (mirror, holders);
  cl_md_runs_on (mirror, &s->c->node[primary].cpu);
  return 0;
}
