/* test_cluster.c — the cluster model's plumbing and its layers other than
 * the disk group's caches (test_cluster_cache.c): the spec and its errors,
 * md RAID and LVM striping mapped onto the devices, a replicated volume's
 * fan-out (device writes = copies x guest writes, reads once, locally), a
 * link's bandwidth as the limit, the host's CPU per I/O, and the same run
 * twice giving the same figures.  Devices have fixed latencies (the
 * driver key fixed-latency-us) so every figure is exact. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_run.h"
#include "core/units.h"

/* ------------------------------------------------------------ spec -- */

static void
test_spec_errors (void **state)
{
  (void) state;
  assert_refused ("", "bad.spec:1: empty");
  assert_refused ("node n1\n", "bad.spec:1: not a cluster spec");
  assert_refused ("storlab-cluster 1\nnode n1 host=kvm\n", "bad.spec:2: node n1: host=kvm: no such"
                  " host preset (known: bare-metal, tcg)");
  assert_refused ("storlab-cluster 1\nnode n1\ndevice n1 d0 tape\n",
                  "bad.spec:3: device d0: unknown kind 'tape'");
  assert_refused ("storlab-cluster 1\nnode n1\ndevice n1 d0 hdd rmp=7200\n", "bad.spec:3: device d0:");
  assert_refused ("storlab-cluster 1\nnode n1\nnode n2\nlink n1 n2 preset=100gbe\n",
                  "bad.spec:4: link n1 n2: preset=100gbe: no such link preset");
  assert_refused ("storlab-cluster 1\nnode n1\n" DISK ("n1", "d0")
                  "local n1 disk d0\nvolume n1 v 16M\nexport n1 at=16M size=16M volume=v\n"
                  "export n1 at=0 size=16M volume=v\n", "bad.spec:7: export n1: export at 0 overlaps");
  assert_refused ("storlab-cluster 1\nnode n1\n" DISK ("n1", "d0")
                  "local n1 disk d0\nvolume n1 v 1G\n", "bad.spec:5: n1/volume/v: node n1's local"
                  " volume is full");
  assert_refused ("storlab-cluster 1\nnode n1\n" DISK ("n1", "d0") "local n1 disk d0\n",
                  "no export");
  assert_refused ("storlab-cluster 1\nnode n1\nnode n2\n" DISK ("n1", "d0") DISK ("n2", "d0")
                  "local n1 disk d0\nlocal n2 disk d0\nreplica r 16M n1 n2\n",
                  "bad.spec:8: replica r: no link between n1 and n2");
  assert_refused ("storlab-cluster 1\nnode n1\n" DISK ("n1", "d0")
                  "local n1 raid level=5 chunk=64k d0\n", "RAID 5 of 1 members");
  assert_refused ("storlab-cluster 1\nnode n1\n" DISK ("n1", "d0") "node n2\n",
                  "bad.spec:4: node after devices");
}

/* A cluster larger than its memory budget is refused at the line where
 * its models outgrow it, in one line, before the host runs out. */
static void
test_spec_over_memory_budget (void **state)
{
  (void) state;
  char spec[8192] = "storlab-cluster 1\n", err[1024] = "";
  for (int n = 1; n <= 8; n++)
    snprintf (spec + strlen (spec), sizeof spec - strlen (spec), "node n%d\n", n);
  for (int n = 1; n <= 8; n++)
    snprintf (spec + strlen (spec), sizeof spec - strlen (spec),
              "device n%d c ssd preset=intel-s3700-400g\n", n);
  struct sl_model model = sl_cluster_model_from_text (spec, "big.spec", 4 * MIB, err,
                                                      sizeof err);
  assert_null (model.ops);
  if (strstr (err, "big.spec:") != err || strstr (err, "need more than 4 MiB") == NULL)
    fail_msg ("error '%s'", err);
  assert_null (strchr (err, '\n'));
}

/* ------------------------------------------------------- md, stripes -- */

/* RAID 10 of four: a chunk-sized write lands on both copies; a read on
 * one; a full-row write on every member.  md's data offset shifts every
 * member I/O. */
static void
test_md_raid10_mapping (void **state)
{
  (void) state;
  struct run r = run_new ("storlab-cluster 1\nnode n1\n" DISK ("n1", "d0") DISK ("n1", "d1")
                          DISK ("n1", "d2") DISK ("n1", "d3")
                          "local n1 raid level=10 chunk=64k data-offset=4M d0 d1 d2 d3\n"
                          "volume n1 v 64M\nexport n1 at=0 size=64M volume=v\n");
  burst (&r, SL_OP_WRITE, 1, 0, 0, 64 * KIB);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_WRITE) + ops_of (&r, "n1/d1", SL_OP_WRITE), 2);
  assert_int_equal (ops_of (&r, "n1/d2", SL_OP_WRITE) + ops_of (&r, "n1/d3", SL_OP_WRITE), 0);
  burst (&r, SL_OP_READ, 1, 0, 0, 64 * KIB);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_READ) + ops_of (&r, "n1/d1", SL_OP_READ), 1);
  burst (&r, SL_OP_WRITE, 1, 128 * KIB, 0, 128 * KIB);
  for (int i = 0; i < 4; i++) {
    char name[16];
    snprintf (name, sizeof name, "n1/d%d", i);
    assert_true (ops_of (&r, name, SL_OP_WRITE) >= 1);
  }
  assert_int_equal (ops_of (&r, "n1/md0", SL_OP_WRITE), 2);
  run_free (&r);
}

/* RAID 5 of three, a 4 KiB write: md reconstructs (reads the row's other
 * data chunk: one read, cheaper than old data + old parity), then writes
 * data and parity. */
static void
test_md_raid5_small_write (void **state)
{
  (void) state;
  struct run r = run_new ("storlab-cluster 1\nnode n1\n" DISK ("n1", "d0") DISK ("n1", "d1")
                          DISK ("n1", "d2") "local n1 raid level=5 chunk=64k d0 d1 d2\n"
                          "volume n1 v 64M\nexport n1 at=0 size=64M volume=v\n");
  uint64_t done = burst (&r, SL_OP_WRITE, 1, 0, 0, 4 * KIB);
  uint64_t reads = 0, writes = 0;
  for (int i = 0; i < 3; i++) {
    char name[16];
    snprintf (name, sizeof name, "n1/d%d", i);
    reads += ops_of (&r, name, SL_OP_READ);
    writes += ops_of (&r, name, SL_OP_WRITE);
  }
  assert_int_equal (reads, 1);
  assert_int_equal (writes, 2);
  /* two phases of 100 us each, after the host's 10 us */
  assert_int_equal (done, 10000 + 2 * 100000);
  run_free (&r);
}

/* LVM's striped LV over two of four devices per segment, segments one after
 * the other: a 128 KiB write at 0 puts 64 KiB on each of the first two
 * devices; the second segment starts after the first is full. */
static void
test_disk_group_stripe_mapping (void **state)
{
  (void) state;
  struct run r = run_new ("storlab-cluster 1\nnode n1\n"
                          "device n1 cache ssd preset=intel-s3700-400g size=1G fixed-latency-us=50\n"
                          DISK ("n1", "d0") DISK ("n1", "d1") DISK ("n1", "d2") DISK ("n1", "d3")
                          "local n1 disk-group mode=all-flash cache=cache stripe-width=2 stripe=64k"
                          " d0 d1 d2 d3\n"
                          "volume n1 v 64M\nexport n1 at=0 size=64M volume=v\n");
  struct cl_target *capacity = cl_target_find (r.c, "n1/capacity");
  assert_non_null (capacity);
  /* each device's whole extents after LVM's 1 MiB header: 63 of 4 MiB */
  assert_int_equal (capacity->capacity_bytes, 4 * 63 * 4 * MIB);
  burst (&r, SL_OP_READ, 1, 0, 0, 128 * KIB);      /* reads pass the empty write buffer */
  assert_int_equal (bytes_of (&r, "n1/d0", SL_OP_READ), 64 * KIB);
  assert_int_equal (bytes_of (&r, "n1/d1", SL_OP_READ), 64 * KIB);
  assert_int_equal (ops_of (&r, "n1/d2", SL_OP_READ) + ops_of (&r, "n1/d3", SL_OP_READ), 0);
  run_free (&r);
}

/* A read goes down as itself through the layers that only pass it on (the
 * front end after its CPU, the write buffer it misses): each still counts
 * it, with the time from its own arrival, as it would a child of its own;
 * the volume (an offset, no record) counts nothing. */
static void
test_a_read_passed_down_counts_at_every_layer (void **state)
{
  (void) state;
  struct run r = run_new ("storlab-cluster 1\nnode n1 per-io-us=263\n"
                          "device n1 cache ssd preset=intel-s3700-400g size=1G fixed-latency-us=50\n"
                          DISK ("n1", "d0")
                          "local n1 disk-group mode=all-flash cache=cache stripe-width=1 stripe=64k"
                          " d0\nvolume n1 v 64M\nexport n1 at=0 size=64M volume=v\n");
  assert_int_equal (burst (&r, SL_OP_READ, 1, 0, 0, 4 * KIB), 263000 + 100000);
  const char *names[] = { "n1/front/volume/v", "n1/diskgroup", "n1/d0" };
  const uint64_t latency_ns[] = { 263000 + 100000, 100000, 100000 };
  for (unsigned i = 0; i < 3; i++) {
    const struct cl_target_stats *s = layer (&r, names[i]);
    assert_int_equal (s->op[SL_OP_READ].count, 1);
    assert_int_equal (s->op[SL_OP_READ].bytes, 4 * KIB);
    assert_int_equal (s->op[SL_OP_READ].latency_sum_ns, latency_ns[i]);
    assert_int_equal (s->queue_depth, 0);
  }
  assert_int_equal (ops_of (&r, "n1/volume/v", SL_OP_READ), 0);
  run_free (&r);
}

/* A volume group made of the capacity devices' regions of the disk group
 * (volume-group=per-device, a volume set's stripe_width): an LV lies on the
 * devices it names, striped by the group's stripe unit over several, each
 * taking its share after the LVs before it there. */
#define PER_DEVICE_GROUP(volumes) PER_DEVICE_GROUP_ON ("n1", volumes)
#define PER_DEVICE_GROUP_ON(node_line, volumes) \
  "storlab-cluster 1\nnode " node_line "\n" \
  "device n1 cache ssd preset=intel-s3700-400g size=1G fixed-latency-us=50\n" \
  DISK ("n1", "d0") DISK ("n1", "d1") DISK ("n1", "d2") \
  "local n1 disk-group mode=all-flash cache=cache stripe=64k volume-group=per-device d0 d1 d2\n" \
  volumes

static void
test_volumes_on_capacity_devices (void **state)
{
  (void) state;
  struct run r = run_new (PER_DEVICE_GROUP ("volume n1 a 64M devices=d1+d2\n"
                                            "volume n1 b 64M devices=d1\n"
                                            "export n1 at=0 size=64M volume=a\n"
                                            "export n1 at=64M size=64M volume=b\n"));
  /* a: 32 MiB on each of d1 and d2, stripes of 64 KiB (reads pass the
   * empty write buffer) */
  burst (&r, SL_OP_READ, 1, 0, 0, 128 * KIB);
  assert_int_equal (bytes_of (&r, "n1/d1", SL_OP_READ), 64 * KIB);
  assert_int_equal (bytes_of (&r, "n1/d2", SL_OP_READ), 64 * KIB);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_READ), 0);
  /* b: the whole of it on d1, after a's share there */
  burst (&r, SL_OP_READ, 4, 64 * MIB, 16 * MIB, 64 * KIB);
  assert_int_equal (bytes_of (&r, "n1/d1", SL_OP_READ), 64 * KIB + 4 * 64 * KIB);
  assert_int_equal (bytes_of (&r, "n1/d2", SL_OP_READ), 64 * KIB);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_READ), 0);
  run_free (&r);
  /* what the spec cannot say: devices on a plain volume group, none on a
   * per-device one, a device twice or unknown, more than fits */
  assert_refused ("storlab-cluster 1\nnode n1\n" DISK ("n1", "d0")
                  "local n1 disk d0\nvolume n1 v 16M devices=d0\n",
                  "bad.spec:5: n1/volume/v: on devices d0, but node n1's volume group is its "
                  "local volume");
  assert_refused (PER_DEVICE_GROUP ("volume n1 v 16M\n"), "bad.spec:8: n1/volume/v: node n1's "
                  "volume group is made of its capacity devices: name the LV's");
  assert_refused (PER_DEVICE_GROUP ("volume n1 v 16M devices=d0+d0\n"), "device d0 named twice");
  assert_refused (PER_DEVICE_GROUP ("volume n1 v 16M devices=d9\n"),
                  "node n1 has no capacity device 'd9' in its volume group");
  assert_refused (PER_DEVICE_GROUP ("volume n1 v 200M devices=d0+d1\nvolume n1 w 200M "
                                    "devices=d1\n"), "bad.spec:9: n1/volume/w: node n1's device "
                  "d1 has 148 MiB free, the LV needs 200 MiB there");
  assert_refused (PER_DEVICE_GROUP ("volume n1 v 16M method=mirror on=n1:d0+d9\n"),
                  "no capacity device 'd9'");
}

/* The engine's JSON record of the run (malloc'd). */
static char *
json_of (struct run *r)
{
  char *json = NULL;
  size_t bytes = 0;
  FILE *out = open_memstream (&json, &bytes);
  sl_engine_write_json (r->engine, out);
  fclose (out);
  return json;
}

/* A counter of the named layer's record in json; -1 when absent. */
static long long
counter_of (const char *json, const char *layer_name, const char *key)
{
  char name[96], wanted[96];
  snprintf (name, sizeof name, "\"name\": \"%s\"", layer_name);
  snprintf (wanted, sizeof wanted, "\"%s\": ", key);
  const char *record = strstr (json, name);
  if (record == NULL)
    return -1;
  const char *next = strstr (record + 1, "\"name\": ");
  const char *at = strstr (record, wanted);
  return at == NULL || (next != NULL && at > next) ? -1 : atoll (at + strlen (wanted));
}

/* A run of spec, warmed over [0, bytes) under load. */
static struct run
warm_run (const char *spec, uint64_t bytes, enum sl_warm_load load)
{
  struct run r = run_new (spec);
  sl_cluster_warm (r.c, 0, bytes, load);
  char err[256] = "";
  if (sl_cluster_warm_finish (r.c, 0, err, sizeof err) != 0)
    fail_msg ("warm: %s", err);
  return r;
}

/* A warm start lays the write buffer's cache SSD out as the log its slots
 * are written as (cl_device_written_as_log): writes landing in the buffer
 * overwrite its oldest blocks whole, and garbage collection moves nothing.
 * Not warm, the SSD starts in uniform random overwrite's steady state and
 * its collection moves units from the first write on. */
static void
test_warm_write_buffer_lays_its_ssd_out_as_a_log (void **state)
{
  (void) state;
  const char *spec = "storlab-cluster 1\nnode n1\n"
    "device n1 cache ssd preset=intel-s3700-400g size=1G\n" DISK ("n1", "d0")
    "local n1 disk-group mode=all-flash cache=cache stripe-width=1 stripe=64k d0\n"
    "volume n1 v 64M\nexport n1 at=0 size=64M volume=v\n";
  long long moved[2], written[2];
  for (int warm = 1; warm >= 0; warm--) {
    struct run r = warm ? warm_run (spec, 64 * MIB, SL_WARM_RANDOM_WRITES) : run_new (spec);
    for (unsigned i = 0; i < 64; i++)
      burst (&r, SL_OP_WRITE, 256, i * MIB, 4 * KIB, 4 * KIB);
    char *json = json_of (&r);
    long long laid_out = counter_of (json, "n1/cache", "log_layout_bytes");
    struct cl_target *buffer = cl_target_find (r.c, "n1/diskgroup");
    assert_non_null (buffer);
    if (warm)   /* the buffer's whole data area: the SSD after LVM's header */
      assert_true (laid_out > 0 && laid_out <= (long long) (GIB - MIB));
    else
      assert_int_equal (laid_out, -1);
    moved[warm] = counter_of (json, "n1/cache", "gc_pages_moved");
    written[warm] = counter_of (json, "n1/cache", "host_pages_written");
    free (json);
    run_free (&r);
  }
  printf ("cache SSD under the write buffer: %lld units moved for %lld written warm, %lld for"
          " %lld cold\n", moved[1], written[1], moved[0], written[0]);
  assert_true (written[1] >= 16384 && written[0] >= 16384);
  assert_int_equal (moved[1], 0);
  assert_true (moved[0] > written[0] / 10);
}

static void
count_write_done (struct sl_engine *e, struct sl_request *req)
{
  (void) e;
  ++*(unsigned *) req->driver_data;
}

/* count 4 KiB writes at once at random units of [0, span); run to the end. */
static void
random_writes (struct run *r, unsigned count, uint64_t span, uint64_t *rng)
{
  struct sl_request *req = calloc (count, sizeof *req);
  unsigned done = 0;
  for (unsigned i = 0; i < count; i++) {
    *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
    req[i] = (struct sl_request) { .op = SL_OP_WRITE, .length_bytes = 4 * KIB,
                                   .offset_bytes = (*rng >> 33) % (span / (4 * KIB)) * 4 * KIB,
                                   .on_complete = count_write_done, .driver_data = &done };
    sl_engine_submit (r->engine, &req[i]);
  }
  while (done < count && sl_engine_run_next (r->engine))
    ;
  assert_int_equal (done, count);
  free (req);
}

/* A warm start under random writes gives an SSD whose workload writes only
 * part of it (an md member's share of the volume) the state that region's
 * writes settle it at (sl_ssd_model_lay_out_written_region): the region in
 * blocks of its own, the rest compacted.  Its collection then moves far
 * fewer units per write than the uniform steady state's a cold start
 * keeps; a read-only warm-up leaves the drive as it is. */
static void
test_warm_random_writes_settle_the_region_they_write (void **state)
{
  (void) state;
  const char *spec = "storlab-cluster 1\nnode n1\n"
    "device n1 s0 ssd preset=intel-s3700-400g size=256M\n"
    "device n1 s1 ssd preset=intel-s3700-400g size=256M\n"
    "local n1 raid level=1 chunk=64k data-offset=4M s0 s1\n"
    "volume n1 v 64M\nexport n1 at=0 size=64M volume=v\n";
  double per_write[2];
  for (int warm = 1; warm >= 0; warm--) {
    struct run r = warm ? warm_run (spec, 64 * MIB, SL_WARM_RANDOM_WRITES) : run_new (spec);
    uint64_t rng = 11;
    for (unsigned i = 0; i < 160; i++)
      random_writes (&r, 256, 64 * MIB, &rng);
    char *json = json_of (&r);
    long long region = counter_of (json, "n1/s0", "written_region_bytes");
    if (warm)   /* the volume, in whole units, after md's data offset */
      assert_true (region >= (long long) (64 * MIB) && region <= (long long) (65 * MIB));
    else
      assert_int_equal (region, -1);
    long long moved = counter_of (json, "n1/s0", "gc_pages_moved");
    long long written = counter_of (json, "n1/s0", "host_pages_written");
    assert_true (written >= 30000);
    per_write[warm] = (double) moved / (double) written;
    free (json);
    run_free (&r);
  }
  printf ("md member written over a quarter: %.2f units moved per unit written warm, %.2f cold\n",
          per_write[1], per_write[0]);
  assert_true (per_write[1] < per_write[0] * 0.7);

  struct run r = warm_run (spec, 64 * MIB, SL_WARM_READS);
  burst (&r, SL_OP_READ, 16, 0, 4 * KIB, 4 * KIB);
  char *json = json_of (&r);
  assert_int_equal (counter_of (json, "n1/s0", "written_region_bytes"), -1);
  free (json);
  run_free (&r);

  /* the layout's memory is counted before it is built: over a budget of
   * a few KiB, refused, the drives as they were */
  r = run_new (spec);
  sl_cluster_warm (r.c, 0, 64 * MIB, SL_WARM_RANDOM_WRITES);
  char err[256] = "";
  assert_int_equal (sl_cluster_warm_finish (r.c, 4096, err, sizeof err), -1);
  assert_non_null (strstr (err, "--warm: the write buffers' and SSDs' steady state needs 1 MiB"));
  json = json_of (&r);
  assert_int_equal (counter_of (json, "n1/s0", "written_region_bytes"), -1);
  free (json);
  run_free (&r);
}

/* The warm probe (storlab-sim cluster --warm runs it): a write buffer
 * over a slow disk, warmed one short of its high watermark, still filling
 * through the probe's second half (writes arriving at SSD speed, leaving
 * at the disk's) gives a fill to start at, here all of it (the regions
 * are twice the buffer, writeback next to nothing); the same buffer with
 * no writes in its second half (writeback draining it, still past the
 * watermark) gives none.  A run's cluster given the fill starts with
 * every slot dirty; fills of another cluster (another count) are refused
 * in one line. */
#define SLOW_ORIGIN_WB_SPEC \
  "storlab-cluster 1\nnode n1\n" \
  "device n1 cache ssd preset=intel-s3700-400g size=64M fixed-latency-us=50\n" \
  "device n1 d0 hdd preset=sas10k-300g size=256M fixed-latency-us=20000\n" \
  "local n1 disk-group mode=all-flash cache=cache stripe-width=1 stripe=64k d0\n" \
  "volume n1 v 128M\nexport n1 at=0 size=128M volume=v\n"

static uint64_t
probe_fill (bool writes_in_second_half)
{
  struct run r = run_new (SLOW_ORIGIN_WB_SPEC);
  sl_cluster_warm (r.c, 0, 128 * MIB, SL_WARM_RANDOM_WRITES);
  assert_int_equal (sl_cluster_warm_finish (r.c, 0, NULL, 0), 0);
  assert_int_equal (sl_cluster_warm_probe_layers (r.c), 1);
  uint64_t block = 7;
  for (int half = 0; half < 2; half++) {
    if (half == 1)
      sl_cluster_warm_probe_mark (r.c);
    if (half == 0 || writes_in_second_half)
      for (unsigned i = 0; i < 8; i++)
        burst (&r, SL_OP_WRITE, 64, (block = (block * 1103515245u + 12345u) % 2048) * 64 * KIB,
               4 * KIB, 4 * KIB);
    /* the second half short: a buffer draining is still past its high
     * watermark at the end, and only its trend tells */
    sl_engine_run_until (r.engine, sl_engine_now_ns (r.engine) + (half ? 20 : 100) * 1000000ull);
  }
  uint64_t fill = 0;
  assert_int_equal (sl_cluster_warm_probe_verdicts (r.c, &fill, 1), 1);
  run_free (&r);
  return fill;
}

static void
test_warm_probe_finds_a_buffer_its_writeback_cannot_keep (void **state)
{
  (void) state;
  uint64_t fill = probe_fill (true);
  assert_int_equal (probe_fill (false), 0);
  long long warmed[2], blocks = 0;
  for (int full = 0; full < 2; full++) {
    struct run r = run_new (SLOW_ORIGIN_WB_SPEC);
    uint64_t verdict = full ? fill : 0;
    char err[256] = "";
    assert_int_equal (sl_cluster_warm_start_from (r.c, &verdict, 1, err, sizeof err), 0);
    sl_cluster_warm (r.c, 0, 128 * MIB, SL_WARM_RANDOM_WRITES);
    assert_int_equal (sl_cluster_warm_finish (r.c, 0, NULL, 0), 0);
    char *json = json_of (&r);
    warmed[full] = counter_of (json, "n1/diskgroup", "warmed_blocks");
    blocks = counter_of (json, "n1/diskgroup", "buffer_blocks");
    assert_int_equal (counter_of (json, "n1/diskgroup", "warm_full"), full);
    free (json);
    if (full)
      assert_int_equal (sl_cluster_warm_start_from (r.c, &verdict, 2, err, sizeof err), -1);
    if (full && strstr (err, "--warm: the probe's cluster has 2 write buffers, the run's 1") == NULL)
      fail_msg ("error '%s'", err);
    run_free (&r);
  }
  assert_int_equal (warmed[1], blocks);
  assert_true (warmed[0] > 0 && warmed[0] < blocks / 2 + 1);
}

/* A node of two disk groups (group=2, a vSAN host's second), each its own
 * cache in front of its own capacity devices, the node's volume group made
 * of all four devices' regions: d0, d1 in group 1, d2, d3 in group 2. */
#define CACHE(node, name) \
  "device " node " " name " ssd preset=intel-s3700-400g size=1G fixed-latency-us=50\n"
#define TWO_GROUPS(mode, first_keys, second_keys, volumes) \
  "storlab-cluster 1\nnode n1\n" CACHE ("n1", "cache") CACHE ("n1", "cache2") \
  DISK ("n1", "d0") DISK ("n1", "d1") DISK ("n1", "d2") DISK ("n1", "d3") \
  "local n1 disk-group mode=" mode " cache=cache stripe=64k " first_keys " d0 d1\n" \
  "local n1 disk-group mode=" mode " cache=cache2 stripe=64k " second_keys " d2 d3\n" \
  volumes
#define PER_DEVICE "volume-group=per-device"

/* An LV lies on its devices whichever group holds them: a's on d3 (group
 * 2), b striped over d0 (group 1) and d2 (group 2), each share a slice of
 * its own group, so a write goes to that group's write buffer (its cache
 * device) and a read that misses it to that device. */
static void
test_volumes_on_two_disk_groups (void **state)
{
  (void) state;
  struct run r = run_new (TWO_GROUPS ("all-flash", PER_DEVICE, "group=2 " PER_DEVICE,
                                      "volume n1 a 64M devices=d3\n"
                                      "volume n1 b 64M devices=d0+d2\n"
                                      "export n1 at=0 size=64M volume=a\n"
                                      "export n1 at=64M size=64M volume=b\n"));
  /* group 1 keeps the names of a node of one group; group 2's carry its number */
  const char *names[] = { "n1/diskgroup", "n1/capacity", "n1/diskgroup2", "n1/capacity2" };
  for (unsigned i = 0; i < 4; i++)
    assert_non_null (cl_target_find (r.c, names[i]));
  assert_ptr_equal (r.c->node[0].local, cl_target_find (r.c, "n1/diskgroup"));
  assert_int_equal (r.c->node[0].pv_count, 4);
  assert_ptr_equal (r.c->node[0].pv[3].group, cl_target_find (r.c, "n1/diskgroup2"));
  /* d3's region: the second of its group, after d2's extents */
  assert_int_equal (r.c->node[0].pv[3].base_bytes, 63 * 4 * MIB + MIB);
  /* reads pass the empty write buffers: a on d3 alone, b 64 KiB on each */
  burst (&r, SL_OP_READ, 1, 0, 0, 64 * KIB);
  burst (&r, SL_OP_READ, 1, 64 * MIB, 0, 128 * KIB);
  assert_int_equal (bytes_of (&r, "n1/d3", SL_OP_READ), 64 * KIB);
  assert_int_equal (bytes_of (&r, "n1/d0", SL_OP_READ), 64 * KIB);
  assert_int_equal (bytes_of (&r, "n1/d2", SL_OP_READ), 64 * KIB);
  assert_int_equal (ops_of (&r, "n1/d1", SL_OP_READ), 0);
  assert_int_equal (ops_of (&r, "n1/diskgroup", SL_OP_READ), 1);
  assert_int_equal (ops_of (&r, "n1/diskgroup2", SL_OP_READ), 2);
  /* writes: a's into group 2's buffer only; b's halves one into each */
  burst (&r, SL_OP_WRITE, 1, MIB, 0, 4 * KIB);
  assert_int_equal (ops_of (&r, "n1/cache2", SL_OP_WRITE), 1);
  assert_int_equal (ops_of (&r, "n1/cache", SL_OP_WRITE), 0);
  burst (&r, SL_OP_WRITE, 1, 65 * MIB, 0, 128 * KIB);
  assert_int_equal (bytes_of (&r, "n1/cache", SL_OP_WRITE), 64 * KIB);
  assert_int_equal (bytes_of (&r, "n1/cache2", SL_OP_WRITE), 4 * KIB + 64 * KIB);
  assert_int_equal (ops_of (&r, "n1/diskgroup", SL_OP_WRITE), 1);
  assert_int_equal (ops_of (&r, "n1/diskgroup2", SL_OP_WRITE), 2);
  char *json = json_of (&r);
  assert_non_null (strstr (json, "\"name\": \"n1/diskgroup\""));
  assert_non_null (strstr (json, "\"name\": \"n1/diskgroup2\""));
  free (json);
  run_free (&r);
  /* a hybrid second group has its own read cache */
  r = run_new (TWO_GROUPS ("hybrid", PER_DEVICE, "group=2 " PER_DEVICE,
                           "volume n1 a 64M devices=d2\nexport n1 at=0 size=64M volume=a\n"));
  assert_non_null (cl_target_find (r.c, "n1/readcache"));
  burst (&r, SL_OP_READ, 1, 0, 0, 4 * KIB);
  assert_int_equal (ops_of (&r, "n1/readcache2", SL_OP_READ), 1);
  assert_int_equal (ops_of (&r, "n1/readcache", SL_OP_READ), 0);
  assert_int_equal (ops_of (&r, "n1/d2", SL_OP_READ), 1);
  run_free (&r);
}

#define ONE_LV "volume n1 v 16M devices=d0\nexport n1 at=0 size=16M volume=v\n"

/* What a node's disk groups cannot be: out of order or numbered twice, out
 * of 1..8, without the volume group made of their devices, sharing a
 * device; nor after a local volume of another kind. */
static void
test_disk_group_numbers (void **state)
{
  (void) state;
  assert_refused (TWO_GROUPS ("all-flash", "group=2 " PER_DEVICE, "group=3 " PER_DEVICE, ""),
                  "bad.spec:9: local n1 disk-group: group=2, but node n1's next disk group is "
                  "group=1");
  assert_refused (TWO_GROUPS ("all-flash", PER_DEVICE, "group=1 " PER_DEVICE, ""),
                  "bad.spec:10: local n1 disk-group: group=1, but node n1's next disk group is "
                  "group=2");
  assert_refused (TWO_GROUPS ("all-flash", PER_DEVICE, PER_DEVICE, ""),
                  "group=1, but node n1's next disk group is group=2");
  assert_refused (TWO_GROUPS ("all-flash", PER_DEVICE, "group=2", ONE_LV),
                  "bad.spec:10: local n1 disk-group: group=2: a node of several disk groups needs "
                  "volume-group=per-device on each");
  assert_refused (TWO_GROUPS ("all-flash", "", "group=2 " PER_DEVICE, ONE_LV),
                  "needs volume-group=per-device on each");
  assert_refused (TWO_GROUPS ("all-flash", PER_DEVICE, "group=0 " PER_DEVICE, ONE_LV),
                  "bad.spec:10: local n1 disk-group: group=0 (1 to 8)");
  assert_refused (TWO_GROUPS ("all-flash", PER_DEVICE, "group=9 " PER_DEVICE, ONE_LV),
                  "local n1 disk-group: group=9 (1 to 8)");
  assert_refused (TWO_GROUPS ("all-flash", PER_DEVICE, "group=2 " PER_DEVICE " d1", ONE_LV),
                  "bad.spec:10: local n1 disk-group: device 'd1' is in another of the node's "
                  "disk groups already");
  assert_refused ("storlab-cluster 1\nnode n1\n" CACHE ("n1", "cache") DISK ("n1", "d0")
                  DISK ("n1", "d1")
                  "local n1 disk-group mode=all-flash cache=cache volume-group=per-device d0\n"
                  "local n1 disk-group group=2 mode=all-flash cache=cache volume-group=per-device"
                  " d1\n", "device 'cache' is in another of the node's disk groups already");
  assert_refused ("storlab-cluster 1\nnode n1\n" CACHE ("n1", "cache") DISK ("n1", "d0")
                  DISK ("n1", "d1") "local n1 disk d0\n"
                  "local n1 disk-group group=2 mode=all-flash cache=cache volume-group=per-device"
                  " d1\n", "bad.spec:7: local n1: the node has its local volume already");
  assert_refused (TWO_GROUPS ("all-flash", PER_DEVICE, "group=2 " PER_DEVICE,
                              "local n1 disk d9\n"), "local n1: the node has its local volume "
                  "already");
}

/* -------------------------------------------------------- replicas -- */

#define THREE_NODES_REPLICA(link_keys) \
  "storlab-cluster 1\nnode n1\nnode n2\nnode n3\n" DISK ("n1", "d0") DISK ("n2", "d0") \
  DISK ("n3", "d0") "link n1 n2 " link_keys "\nlink n1 n3 " link_keys "\nlink n2 n3\n" \
  "local n1 disk d0\nlocal n2 disk d0\nlocal n3 disk d0\nreplica r 64M n1 n2 n3\n" \
  "export n1 at=0 size=64M share=r\n"

/* ftt 2: a guest write becomes a write on every holder's disk and is done
 * when the slowest copy is; a read is served by the local copy only. */
static void
test_replica_fan_out (void **state)
{
  (void) state;
  struct run r = run_new (THREE_NODES_REPLICA ("preset=10gbe"));
  burst (&r, SL_OP_WRITE, 10, 0, 64 * KIB, 4 * KIB);
  for (int n = 1; n <= 3; n++) {
    char name[16];
    snprintf (name, sizeof name, "n%d/d0", n);
    assert_int_equal (ops_of (&r, name, SL_OP_WRITE), 10);
  }
  assert_int_equal (ops_of (&r, "replica/r", SL_OP_WRITE), 10);
  burst (&r, SL_OP_READ, 10, 0, 64 * KIB, 4 * KIB);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_READ), 10);
  assert_int_equal (ops_of (&r, "n2/d0", SL_OP_READ) + ops_of (&r, "n3/d0", SL_OP_READ), 0);
  /* the share is served by n1 itself: mounted directly (the lab's bind
   * mount), no NFS; the two remote copies cross their links (n1 -> n2, n1 -> n3) */
  assert_null (cl_target_find (r.c, "n1/nfs/r"));
  assert_int_equal (r.c->links[0].dir[0].messages, 10);
  assert_int_equal (r.c->links[2].dir[0].messages + r.c->links[2].dir[1].messages, 0);
  run_free (&r);
}

/* A write's data crosses the link once per remote copy: 64 writes of 1 MiB
 * at once over 100 MB/s take 64 x 1 MiB / 100 MB/s (plus headers), the
 * disks' 100 us and the host's CPU being far smaller. */
static void
test_link_bandwidth_saturates (void **state)
{
  (void) state;
  struct run r = run_new (THREE_NODES_REPLICA ("bandwidth-mb-s=100 latency-us=0"));
  uint64_t done = burst (&r, SL_OP_WRITE, 64, 0, MIB, MIB);
  double wire_ns = 64.0 * (MIB + 128) / 100e6 * 1e9;
  assert_true ((double) done >= wire_ns);
  assert_true ((double) done <= wire_ns * 1.02);
  assert_int_equal (r.c->links[0].dir[0].bytes, 64 * (MIB + 128));
  assert_int_equal (r.c->links[0].dir[0].busy_ns, (uint64_t) (64 * ((MIB + 128) * 1e9 / 100e6)));
  run_free (&r);
}

/* ------------------------------------------------------------- hosts -- */

/* 263 us of one core per I/O: at QD1 that adds to the device's 100 us;
 * eight at once queue on the one core. */
static void
test_host_cpu_per_io (void **state)
{
  (void) state;
  struct run r = run_new ("storlab-cluster 1\nnode n1 cores=1 per-io-us=263\n" DISK ("n1", "d0")
                          "local n1 disk d0\nvolume n1 v 64M\nexport n1 at=0 size=64M volume=v\n");
  assert_int_equal (burst (&r, SL_OP_READ, 1, 0, 0, 4 * KIB), 263000 + 100000);
  uint64_t start = sl_engine_now_ns (r.engine);
  assert_int_equal (burst (&r, SL_OP_READ, 8, 0, 64 * KIB, 4 * KIB) - start, 8 * 263000 + 100000);
  run_free (&r);
}

/* A guest pays for each step of an I/O (the tcg preset's figures, by
 * step): its front end 10 us, the request it sends its disk 20 us and
 * the hypervisor's 30 us before the disk sees it (the disk's own latency
 * stays its 100 us), and 40 us to wake a vCPU that was idle when the next
 * I/O came; with a pool, the hypervisor's work takes a host core. */
static void
test_host_costs_by_step (void **state)
{
  (void) state;
  const char *node = "node n1 cores=1 per-io-us=10 per-device-io-us=20 idle-wake-us=40"
    " hypervisor-per-device-io-us=30\n" DISK ("n1", "d0")
    "local n1 disk d0\nvolume n1 v 64M\nexport n1 at=0 size=64M volume=v\n";
  char spec[1024];
  for (int pooled = 0; pooled < 2; pooled++) {
    snprintf (spec, sizeof spec, "storlab-cluster 1\n%s%s", pooled ? "pool cores=1\n" : "", node);
    struct run r = run_new (spec);
    /* at 0 the core has done nothing yet: nothing to wake from */
    assert_int_equal (burst (&r, SL_OP_READ, 1, 0, 0, 4 * KIB), 10000 + 20000 + 30000 + 100000);
    uint64_t start = sl_engine_now_ns (r.engine);
    assert_int_equal (burst (&r, SL_OP_READ, 1, 0, 0, 4 * KIB) - start,
                      40000 + 10000 + 20000 + 30000 + 100000);
    assert_int_equal (layer (&r, "n1/d0")->op[SL_OP_READ].latency_sum_ns, 2 * 100000);
    assert_int_equal (r.c->node[0].cpu.busy_ns, 10000 + 20000 + 40000 + 10000 + 20000);
    /* the pool runs the vCPU's work and the hypervisor's */
    assert_int_equal (r.c->pool.busy_ns, pooled ? 100000 + 2 * 30000 : 0);
    run_free (&r);
  }
}

/* A lab's device replies 25 us after its model is done (the plugin's
 * release path): the volume's I/O sees it, the disk's own record (as a
 * plugin's stats) does not, and no core is taken for it; several I/Os
 * released together are not queued behind each other. */
static void
test_host_device_release (void **state)
{
  (void) state;
  struct run r = run_new ("storlab-cluster 1\nnode n1 cores=1 per-io-us=0 device-release-us=25\n"
                          DISK ("n1", "d0")
                          "local n1 disk d0\nvolume n1 v 64M\nexport n1 at=0 size=64M volume=v\n");
  assert_int_equal (burst (&r, SL_OP_READ, 1, 0, 0, 4 * KIB), 100000 + 25000);
  assert_int_equal (layer (&r, "n1/d0")->op[SL_OP_READ].latency_sum_ns, 100000);
  assert_int_equal (r.c->node[0].cpu.busy_ns, 0);
  uint64_t start = sl_engine_now_ns (r.engine);
  assert_int_equal (burst (&r, SL_OP_READ, 8, 0, 64 * KIB, 4 * KIB) - start, 100000 + 25000);
  run_free (&r);
}

/* The hypervisor's work for a device I/O is what the device's server
 * does for a request: a timed disk (hold the reply for the model's time,
 * a RAID LUN's too) 30 us, an untimed disk (timing=off: the reply at once)
 * 10 us.  A reply that finds the guest asleep costs the hypervisor more,
 * as load on the pool, not as delay: a timed one 40 us, an untimed one 15
 * (QEMU's threads take each request alone either way); the untimed one has
 * no release path to be late on (25 us for the others).  One read of
 * each, from idle, on a pool of one core: the read takes the hypervisor's,
 * the device's own and the release. */
static void
test_host_hypervisor_cost_by_device_server (void **state)
{
  (void) state;
  static const struct {
    const char *device;
    uint64_t hypervisor_ns, idle_ns, release_ns;
  } cases[] = {
    { "hdd preset=sas10k-300g size=256M fixed-latency-us=100", 30000, 40000, 25000 },
    { "hdd preset=sas10k-300g size=256M timing=off", 10000, 15000, 0 },
    { "raid preset=vsa-raid10-8x-sas10k member-size=64M", 30000, 40000, 25000 },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char spec[1024];
    snprintf (spec, sizeof spec, "storlab-cluster 1\npool cores=1\nnode n1 cores=1 per-io-us=0"
              " device-release-us=25 hypervisor-per-device-io-us=30"
              " hypervisor-per-untimed-io-us=10 hypervisor-idle-device-io-us=40"
              " hypervisor-idle-untimed-io-us=15\n"
              "device n1 d0 %s\n"
              "local n1 disk d0\nvolume n1 v 64M\nexport n1 at=0 size=64M volume=v\n",
              cases[i].device);
    struct run r = run_new (spec);
    uint64_t done_ns = burst (&r, SL_OP_READ, 1, 0, 0, 4 * KIB);
    uint64_t device_ns = layer (&r, "n1/d0")->op[SL_OP_READ].latency_sum_ns;
    assert_int_equal (done_ns, cases[i].hypervisor_ns + device_ns + cases[i].release_ns);
    assert_int_equal (r.c->pool.busy_ns, cases[i].hypervisor_ns + cases[i].idle_ns);
    run_free (&r);
  }
}

/* A timed reply that finds its guest at work costs the hypervisor nothing
 * more: eight reads at once on a core that takes 100 us a read, a disk of
 * 10 us: the first seven replies come while the core still works through
 * the reads (the eighth's done at 800 us, the disk's reply at 810), so
 * only the last finds it asleep. */
static void
test_host_hypervisor_idle_only_where_the_guest_sleeps (void **state)
{
  (void) state;
  struct run r = run_new ("storlab-cluster 1\npool cores=2\nnode n1 cores=1 per-io-us=100"
                          " hypervisor-per-device-io-us=0 hypervisor-idle-device-io-us=40\n"
                          "device n1 d0 hdd preset=sas10k-300g size=256M fixed-latency-us=10\n"
                          "local n1 disk d0\nvolume n1 v 64M\nexport n1 at=0 size=64M volume=v\n");
  burst (&r, SL_OP_READ, 8, 0, 64 * KIB, 4 * KIB);
  assert_int_equal (r.c->pool.busy_ns, 8 * 100000 + 40000);
  run_free (&r);
}

/* QEMU's threads woken by a reply to a sleeping guest take every reply
 * ready in the same wake-up: a write to md RAID-1 over two untimed disks
 * (both replies at once) costs the idle figure once, a read (one reply)
 * once too, so the write costs the hypervisor 2 x 10 + 15 us and the
 * read 10 + 15. */
static void
test_host_replies_together_wake_the_hypervisor_once (void **state)
{
  (void) state;
  struct run r = run_new ("storlab-cluster 1\npool cores=1\nnode n1 cores=1 per-io-us=0"
                          " hypervisor-per-untimed-io-us=10 hypervisor-idle-untimed-io-us=15\n"
                          "device n1 d0 hdd preset=sas10k-300g size=256M timing=off\n"
                          "device n1 d1 hdd preset=sas10k-300g size=256M timing=off\n"
                          "local n1 raid level=1 chunk=64k d0 d1\nvolume n1 v 64M\n"
                          "export n1 at=0 size=64M volume=v\n");
  burst (&r, SL_OP_WRITE, 1, 0, 0, 4 * KIB);
  assert_int_equal (r.c->pool.busy_ns, 2 * 10000 + 15000);
  burst (&r, SL_OP_READ, 1, 0, 0, 4 * KIB);
  assert_int_equal (r.c->pool.busy_ns, 2 * 10000 + 15000 + 10000 + 15000);
  run_free (&r);
}

/* One node of one core, 10 us a front-end I/O besides node_keys, over a
 * volume of one disk. */
static struct run
one_core_volume (const char *node_keys)
{
  char spec[1024];
  snprintf (spec, sizeof spec, "storlab-cluster 1\nnode n1 cores=1 per-io-us=10 %s\n"
            DISK ("n1", "d0")
            "local n1 disk d0\nvolume n1 v 64M\nexport n1 at=0 size=64M volume=v\n", node_keys);
  return run_new (spec);
}

/* Front-end I/Os of several processes on one core: each pays, besides
 * its own 10 us, the switches between them it brings on average (80 us
 * a switch, (processes - 1) / processes of the I/Os): one process none,
 * two 40 us, four 60 us; another node's processes are not this core's. */
static void
test_host_cost_of_switching_processes (void **state)
{
  (void) state;
  const unsigned processes[] = { 0, 1, 2, 4 };
  const uint64_t switching_ns[] = { 0, 0, 40000, 60000 };
  char keys[64];
  for (size_t i = 0; i < sizeof processes / sizeof processes[0]; i++) {
    snprintf (keys, sizeof keys, "process-switch-us=80 processes=%u", processes[i]);
    struct run r = one_core_volume (keys);
    assert_int_equal (burst (&r, SL_OP_READ, 1, 0, 0, 4 * KIB), 10000 + switching_ns[i] + 100000);
    assert_int_equal (r.c->node[0].cpu.busy_ns, 10000 + switching_ns[i]);
    run_free (&r);
  }
  assert_refused ("storlab-cluster 1\nnode n1 processes=-1\n", "processes");
  assert_refused ("storlab-cluster 1\nnode n1 procs=2\n", "bad.spec:2: node n1: unknown key "
                  "'procs' (known: host, cores, processes, threads, worker-depth, "
                  "batch-ios-max, busy-host-share, calibrated-utilisation, device-inflight-max, "
                  "cpu-time-scale, per-io-us,");
}

/* cpu-time-scale multiplies every cost a node pays, each once (per-io-us
 * sets the front end's four, process-switch-us its own): a host that reads
 * twice as slow pays 20 us an I/O and 80 us of switching for 100 us of its
 * device; out of its bounds it is refused. */
static void
test_cpu_time_scale_multiplies_every_cost_once (void **state)
{
  (void) state;
  const char *scales[] = { "1", "2", "0.5" };
  const uint64_t cpu_ns[] = { 10000 + 40000, 20000 + 80000, 5000 + 20000 };
  char keys[96];
  for (size_t i = 0; i < sizeof scales / sizeof scales[0]; i++) {
    snprintf (keys, sizeof keys, "process-switch-us=80 processes=2 cpu-time-scale=%s", scales[i]);
    struct run r = one_core_volume (keys);
    assert_int_equal (burst (&r, SL_OP_READ, 1, 0, 0, 4 * KIB), cpu_ns[i] + 100000);
    assert_int_equal (r.c->node[0].cpu.busy_ns, cpu_ns[i]);
    assert_int_equal (r.c->node[0].cpu.config.per_file_io.write_ns,
                      (uint64_t) (10000 * strtod (scales[i], NULL)));
    run_free (&r);
  }
  assert_refused ("storlab-cluster 1\nnode n1 cpu-time-scale=0\n", "cpu-time-scale");
  assert_refused ("storlab-cluster 1\nnode n1 cpu-time-scale=11\n", "cpu-time-scale");
}

/* A switch to a process serves a batch of its threads' I/Os: as many as
 * it has threads and a thread keeps in flight (worker-depth), at most
 * batch-ios-max. Four processes of 16 threads, 80 us a switch, 3/4 of
 * the time to another: 60 us an I/O at depth 1, 30 at depth 2, 15 at
 * depth 16 with batches of at most 4, 3.75 with no such bound (the
 * bare-metal preset's none); one thread a process: 60 at any depth. */
static void
test_host_cost_of_a_switch_shared_by_a_batch (void **state)
{
  (void) state;
  const char *keys[] = { "threads=16 worker-depth=0", "threads=16 worker-depth=1",
                         "threads=16 worker-depth=2",
                         "threads=16 worker-depth=16 batch-ios-max=4",
                         "threads=16 worker-depth=16", "threads=1 worker-depth=16", "" };
  const uint64_t switching_ns[] = { 60000, 60000, 30000, 15000, 3750, 60000, 60000 };
  char node_keys[128];
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    snprintf (node_keys, sizeof node_keys, "process-switch-us=80 processes=4 %s", keys[i]);
    struct run r = one_core_volume (node_keys);
    burst (&r, SL_OP_READ, 1, 0, 0, 4 * KIB);
    assert_int_equal (r.c->node[0].cpu.busy_ns, 10000 + switching_ns[i]);
    run_free (&r);
  }
  assert_refused ("storlab-cluster 1\nnode n1 worker-depth=-1\n", "worker-depth");
  assert_refused ("storlab-cluster 1\nnode n1 batch-ios-max=0.5\n", "batch-ios-max");
}

/* A thread woken for its I/O's completion: 60 us a wake-up, which serves
 * up to 3 I/Os (batch-ios-max) and the per-I/O figures hold at that: two
 * I/Os at once on a busy core pay 40 us more each at depth 1 (60 x (1 -
 * 1/3)), 10 at depth 2, none at 3 or deeper; an I/O that finds the core
 * idle pays its idle wake-up instead (here none). */
static void
test_host_cost_of_a_thread_woken_an_io (void **state)
{
  (void) state;
  const unsigned depths[] = { 1, 2, 3, 16 };
  const uint64_t wake_ns[] = { 40000, 10000, 0, 0 };
  char keys[128];
  for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++) {
    snprintf (keys, sizeof keys, "thread-wake-us=60 batch-ios-max=3 worker-depth=%u", depths[i]);
    struct run r = one_core_volume (keys);
    burst (&r, SL_OP_READ, 2, 0, 4 * KIB, 4 * KIB);
    assert_int_equal (r.c->node[0].cpu.busy_ns, 2 * (10000 + wake_ns[i]));
    burst (&r, SL_OP_READ, 1, 0, 0, 4 * KIB);        /* later, on an idle core */
    assert_int_equal (r.c->node[0].cpu.busy_ns, 2 * (10000 + wake_ns[i]) + 10000);
    run_free (&r);
  }
}

/* Costs by direction: a read's device I/O 30 us and a write's 20
 * (per-device-io-us sets both); an NVMe/TCP or NFS request sent 50 us a
 * read and 60 a write, served 70 and 90. */
static void
test_host_costs_by_direction (void **state)
{
  (void) state;
  const char *local = DISK ("n1", "d0") "local n1 disk d0\nvolume n1 v 64M\n"
    "export n1 at=0 size=64M volume=v\n";
  char spec[1024];
  snprintf (spec, sizeof spec, "storlab-cluster 1\nnode n1 cores=1 per-io-us=10"
            " per-device-read-us=30 per-device-write-us=20\n%s", local);
  struct run r = run_new (spec);
  assert_int_equal (burst (&r, SL_OP_READ, 1, 0, 0, 4 * KIB), 10000 + 30000 + 100000);
  uint64_t start = sl_engine_now_ns (r.engine);
  assert_int_equal (burst (&r, SL_OP_WRITE, 1, 0, 0, 4 * KIB) - start, 10000 + 20000 + 100000);
  run_free (&r);
  snprintf (spec, sizeof spec, "storlab-cluster 1\nnode n1 cores=1 per-io-us=10"
            " per-device-read-us=30 per-device-io-us=25\n%s", local);
  r = run_new (spec);
  assert_int_equal (burst (&r, SL_OP_READ, 1, 0, 0, 4 * KIB), 10000 + 25000 + 100000);
  run_free (&r);

  r = run_new ("storlab-cluster 1\n"
               "node n1 per-io-us=0 per-remote-read-us=70 per-remote-write-us=90\n"
               "node n2 per-io-us=0 per-hop-read-us=50 per-hop-write-us=60\n"
               DISK ("n1", "d0") DISK ("n2", "d0")
               "link n1 n2 latency-us=1000 bandwidth-mb-s=1e7\n"
               "local n1 disk d0\nlocal n2 disk d0\nreplica r 64M n1 n2\n"
               "export n2 at=0 size=64M share=r\n");
  /* n1 serves the share (the replica's first node): n2's I/Os cross the
   * link over NFS (sent, link, served, disk, link back); a write's copy on
   * n2 crosses it again from n1, n2 serving it at its preset's 10 us */
  assert_int_equal (burst (&r, SL_OP_READ, 1, 0, 0, 4 * KIB),
                    50000 + 1000000 + 70000 + 100000 + 1000000);
  start = sl_engine_now_ns (r.engine);
  assert_int_equal (burst (&r, SL_OP_WRITE, 1, 0, 0, 4 * KIB) - start,
                    60000 + 1000000 + 90000 + (1000000 + 10000 + 100000 + 1000000) + 1000000);
  assert_int_equal (r.c->node[1].cpu.busy_ns, 50000 + 60000 + 10000);
  assert_int_equal (r.c->node[0].cpu.busy_ns, 70000 + 90000);
  run_free (&r);
}

/* A VM's I/O on a volume's block device and on a file of a share cost the
 * front end apiece, by direction (per-io-us sets all four). */
static void
test_host_costs_of_the_front_end (void **state)
{
  (void) state;
  struct run r = run_new ("storlab-cluster 1\n"
                          "node n1 per-io-us=99 per-volume-read-us=11 per-volume-write-us=12"
                          " per-file-read-us=13 per-file-write-us=14\nnode n2\n"
                          DISK ("n1", "d0") DISK ("n1", "d1") DISK ("n2", "d0")
                          "link n1 n2 latency-us=1000 bandwidth-mb-s=1e7\n"
                          "local n1 disk d0\nlocal n2 disk d0\nvolume n1 v 64M\n"
                          "replica r 64M n1 n2\nexport n1 at=0 size=64M volume=v\n"
                          "export n1 at=64M size=64M share=r\n");
  const struct { enum sl_op op; uint64_t offset_bytes; uint64_t front_ns; } ios[] = {
    { SL_OP_READ, 0, 11000 }, { SL_OP_WRITE, 0, 12000 },
    { SL_OP_READ, 64 * MIB, 13000 }, { SL_OP_WRITE, 64 * MIB, 14000 },
  };
  uint64_t busy_ns = 0;
  for (unsigned i = 0; i < 4; i++) {
    burst (&r, ios[i].op, 1, ios[i].offset_bytes, 0, 4 * KIB);
    busy_ns += ios[i].front_ns;
    assert_int_equal (r.c->node[0].cpu.busy_ns, busy_ns);
  }
  run_free (&r);
}

/* md's own code costs its node for every I/O the md takes (7 us), once
 * however many members the I/O goes to. */
static void
test_host_costs_of_md (void **state)
{
  (void) state;
  struct run r = run_new ("storlab-cluster 1\nnode n1 cores=1 per-io-us=10 per-md-io-us=7\n"
                          DISK ("n1", "d0") DISK ("n1", "d1")
                          "local n1 raid level=1 chunk=64k d0 d1\nvolume n1 v 64M\n"
                          "export n1 at=0 size=64M volume=v\n");
  assert_int_equal (burst (&r, SL_OP_READ, 1, 0, 0, 4 * KIB), 10000 + 7000 + 100000);
  burst (&r, SL_OP_WRITE, 1, 0, 0, 4 * KIB);
  assert_int_equal (ops_of (&r, "n1/d0", SL_OP_WRITE) + ops_of (&r, "n1/d1", SL_OP_WRITE), 2);
  assert_int_equal (r.c->node[0].cpu.busy_ns, 2 * (10000 + 7000));
  run_free (&r);
}

/* Every LV is a device-mapper target: its remap costs its node for each
 * I/O it takes (3 us), an LV on an md as one on a disk; once for an LV
 * striped over several devices, however many it splits an I/O over.  The
 * tcg preset charges it, bare metal does not. */
static void
test_host_costs_of_an_lv (void **state)
{
  (void) state;
  struct run r = run_new ("storlab-cluster 1\nnode n1 cores=1 per-io-us=10 per-md-io-us=7"
                          " per-linear-io-us=3\n" DISK ("n1", "d0") DISK ("n1", "d1")
                          "local n1 raid level=1 chunk=64k d0 d1\nvolume n1 v 64M\n"
                          "export n1 at=0 size=64M volume=v\n");
  assert_int_equal (burst (&r, SL_OP_READ, 1, 0, 0, 4 * KIB), 10000 + 3000 + 7000 + 100000);
  assert_int_equal (r.c->node[0].cpu.busy_ns, 10000 + 3000 + 7000);
  run_free (&r);

  struct run striped = run_new (PER_DEVICE_GROUP_ON ("n1 cores=1 per-io-us=10 per-linear-io-us=3",
                                                     "volume n1 a 64M devices=d1+d2\n"
                                                     "export n1 at=0 size=64M volume=a\n"));
  burst (&striped, SL_OP_READ, 1, 0, 0, 128 * KIB);
  assert_int_equal (bytes_of (&striped, "n1/d1", SL_OP_READ), 64 * KIB);
  assert_int_equal (bytes_of (&striped, "n1/d2", SL_OP_READ), 64 * KIB);
  assert_int_equal (striped.c->node[0].cpu.busy_ns, 10000 + 3000);
  run_free (&striped);

  struct cl_host_config tcg, bare;
  char err[256];
  assert_int_equal (cl_host_preset ("tcg", &tcg, err, sizeof err), 0);
  assert_int_equal (cl_host_preset ("bare-metal", &bare, err, sizeof err), 0);
  assert_true (tcg.per_linear_io_ns > 0);
  assert_int_equal (bare.per_linear_io_ns, 0);
}

/* The disk group's caches cost the node's kernel for each I/O they take:
 * a read passes the write buffer (7 us) and the read cache (3 us); a write
 * stays in the buffer (7 us).  An all-flash group has no read cache. */
static void
test_host_costs_of_the_disk_group (void **state)
{
  (void) state;
  const char *modes[] = { "hybrid", "all-flash" };
  const uint64_t read_ns[] = { 10000 + 7000 + 3000, 10000 + 7000 };
  char spec[2048];
  for (int i = 0; i < 2; i++) {
    snprintf (spec, sizeof spec, "storlab-cluster 1\nnode n1 cores=1 per-io-us=10"
              " per-write-buffer-io-us=7 per-read-cache-io-us=3\n"
              "device n1 cache ssd preset=intel-s3700-400g size=1G fixed-latency-us=50\n"
              DISK ("n1", "d0") "local n1 disk-group mode=%s cache=cache stripe-width=1"
              " stripe=64k d0\nvolume n1 v 64M\nexport n1 at=0 size=64M volume=v\n", modes[i]);
    struct run r = run_new (spec);
    burst (&r, SL_OP_READ, 1, 0, 0, 4 * KIB);
    assert_int_equal (r.c->node[0].cpu.busy_ns, read_ns[i]);
    burst (&r, SL_OP_WRITE, 1, 0, 64 * KIB, 4 * KIB);
    assert_int_equal (r.c->node[0].cpu.busy_ns, read_ns[i] + 10000 + 7000);
    run_free (&r);
  }
}

/* A share on a peer: the client's kernel sends the NFS request (50 us),
 * each message passes the sender's hypervisor (5 us) and the link (1 ms),
 * the server serves it (70 us) on its disk (100 us). */
static void
test_host_costs_of_a_hop (void **state)
{
  (void) state;
  struct run r = run_new ("storlab-cluster 1\n"
                          "node n1 per-io-us=0 per-remote-io-us=70 hypervisor-per-message-us=5\n"
                          "node n2 per-io-us=0 per-hop-io-us=50 hypervisor-per-message-us=5\n"
                          DISK ("n1", "d0") DISK ("n2", "d0")
                          "link n1 n2 latency-us=1000 bandwidth-mb-s=1e7\n"
                          "local n1 disk d0\nlocal n2 disk d0\nreplica r 64M n1 n2\n"
                          "export n2 at=0 size=64M share=r\n");
  assert_int_equal (burst (&r, SL_OP_READ, 1, 0, 0, 4 * KIB),
                    50000 + 5000 + 1000000 + 70000 + 100000 + 5000 + 1000000);
  assert_int_equal (r.c->node[1].cpu.busy_ns, 50000);
  assert_int_equal (r.c->node[0].cpu.busy_ns, 70000);
  run_free (&r);
}

/* A message that finds its node asleep (its one vCPU idle, as a tcg
 * guest's) wakes it: the hypervisor hands it over (8 us) before the node
 * takes it alone (30 us) and wakes (40 us).
 * The request wakes the server, the reply the client (whose next I/O then
 * finds its core awake); a request that comes while the server works on
 * another costs nothing more. */
static void
test_a_message_wakes_a_sleeping_node (void **state)
{
  (void) state;
  struct run r = run_new ("storlab-cluster 1\n"
                          "node n1 cores=1 per-io-us=0 per-remote-io-us=70 hypervisor-per-message-us=5"
                          " idle-wake-us=40 idle-message-us=30 hypervisor-idle-message-us=8\n"
                          "node n2 cores=1 per-io-us=0 per-hop-io-us=50 hypervisor-per-message-us=5"
                          " idle-wake-us=40 idle-message-us=30 hypervisor-idle-message-us=8\n"
                          DISK ("n1", "d0") DISK ("n2", "d0")
                          "link n1 n2 latency-us=1000 bandwidth-mb-s=1e7\n"
                          "local n1 disk d0\nlocal n2 disk d0\nreplica r 64M n1 n2\n"
                          "export n2 at=0 size=64M share=r\n");
  const uint64_t wake_ns = 8000 + 30000 + 40000;
  assert_int_equal (burst (&r, SL_OP_READ, 1, 0, 0, 4 * KIB),
                    50000 + 5000 + 1000000 + wake_ns + 70000 + 100000 + 5000 + 1000000 + wake_ns);
  assert_int_equal (r.c->node[1].cpu.busy_ns, 50000 + 30000 + 40000);
  assert_int_equal (r.c->node[0].cpu.busy_ns, 30000 + 40000 + 70000);
  /* two at once: the second request reaches a server busy with the first,
   * the second reply a client still waking for the first */
  uint64_t start = sl_engine_now_ns (r.engine);
  burst (&r, SL_OP_READ, 2, 0, 0, 4 * KIB);
  assert_int_equal (r.c->node[0].cpu.busy_ns, 2 * (30000 + 40000 + 70000) + 70000);
  assert_int_equal (r.c->node[1].cpu.busy_ns, 2 * (50000 + 30000 + 40000) + 50000);
  assert_true (sl_engine_now_ns (r.engine) > start);
  run_free (&r);
}

/* A lab's guests share their host's cores: two tcg nodes on a host of one
 * core take turns, where each alone had its vCPU to itself. */
static void
test_host_pool_is_shared (void **state)
{
  (void) state;
  const char *two = "node n1 cores=1 per-io-us=263\nnode n2 cores=1 per-io-us=263\n" DISK ("n1", "d0") DISK ("n2", "d0")
    "local n1 disk d0\nlocal n2 disk d0\nvolume n1 v 64M\nvolume n2 v 64M\n"
    "export n1 at=0 size=64M volume=v\nexport n2 at=64M size=64M volume=v\n";
  char spec[2048];
  for (int pooled = 0; pooled < 2; pooled++) {
    snprintf (spec, sizeof spec, "storlab-cluster 1\n%s%s", pooled ? "pool cores=1\n" : "", two);
    struct run r = run_new (spec);
    /* 4 reads on each node's volume at once */
    uint64_t done = burst (&r, SL_OP_READ, 8, 0, 16 * MIB, 4 * KIB);
    assert_int_equal (done, (pooled ? 8 : 4) * 263000 + 100000);
    run_free (&r);
  }
  assert_refused ("storlab-cluster 1\nnode n1\npool cores=2\n", "bad.spec:3: pool: once, before the nodes");
  assert_refused ("storlab-cluster 1\npool threads=2\n", "bad.spec:2: pool: cores=N");
}

/* Busy guests that outnumber the pool's cores come back cold from idle:
 * four busy vCPUs on two cores are one beyond one a core, so a wake-up
 * costs crowded-wake-us more (50 us) besides idle-wake-us (40); two vCPUs
 * on two cores, or a vCPU that was not idle, pay none of it.  Before the
 * pool's first window ends every guest counts as busy; from then on only
 * those whose vCPU was busy in the last window (an idle guest's vCPU
 * takes a few % of a core, and does not crowd the others). */
static void
test_crowded_pool_wakes_cost_more (void **state)
{
  (void) state;
  char spec[4096];
  struct { unsigned nodes; uint64_t wake_ns; } cases[] = { { 4, 40000 + 50000 }, { 2, 40000 } };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    int used = snprintf (spec, sizeof spec, "storlab-cluster 1\npool cores=2\n");
    for (unsigned i = 1; i <= cases[k].nodes; i++)
      used += snprintf (spec + used, sizeof spec - used, "node n%u cores=1 per-io-us=100"
                        " per-device-io-us=20 idle-wake-us=40 crowded-wake-us=50\n", i);
    for (unsigned i = 1; i <= cases[k].nodes; i++)
      used += snprintf (spec + used, sizeof spec - used, DISK ("n%u", "d0"), i);
    for (unsigned i = 1; i <= cases[k].nodes; i++)
      used += snprintf (spec + used, sizeof spec - used, "local n%u disk d0\n", i);
    for (unsigned i = 1; i <= cases[k].nodes; i++)
      used += snprintf (spec + used, sizeof spec - used, "volume n%u v 64M\n", i);
    for (unsigned i = 1; i <= cases[k].nodes; i++)
      used += snprintf (spec + used, sizeof spec - used, "export n%u at=%uM size=64M volume=v\n",
                        i, 64 * (i - 1));
    struct run r = run_new (spec);
    assert_int_equal (r.c->pool.guest_vcpus, cases[k].nodes);
    /* the first I/O finds a core that has done nothing yet: nothing to wake from */
    burst (&r, SL_OP_READ, 1, 0, 0, 4 * KIB);
    assert_int_equal (r.c->node[0].cpu.busy_ns, 120000);
    /* the next comes to an idle vCPU */
    burst (&r, SL_OP_READ, 1, 0, 0, 4 * KIB);
    assert_int_equal (r.c->node[0].cpu.busy_ns, 2 * 120000 + cases[k].wake_ns);
    /* two at once: the second finds the vCPU busy with the first */
    burst (&r, SL_OP_READ, 2, 0, 0, 4 * KIB);
    assert_int_equal (r.c->node[0].cpu.busy_ns, 4 * 120000 + 2 * cases[k].wake_ns);
    /* n1 alone at work for two windows: the idle guests crowd nobody */
    uint64_t start = sl_engine_now_ns (r.engine);
    while (sl_engine_now_ns (r.engine) < start + 2 * CL_POOL_WINDOW_NS)
      burst (&r, SL_OP_READ, 1, 0, 0, 4 * KIB);
    uint64_t before = r.c->node[0].cpu.busy_ns;
    burst (&r, SL_OP_READ, 1, 0, 0, 4 * KIB);
    assert_int_equal (r.c->node[0].cpu.busy_ns - before, 120000 + 40000);
    /* every guest at work for two windows: crowded again */
    start = sl_engine_now_ns (r.engine);
    while (sl_engine_now_ns (r.engine) < start + 2 * CL_POOL_WINDOW_NS)
      burst (&r, SL_OP_READ, cases[k].nodes, 0, 64 * MIB, 4 * KIB);
    before = r.c->node[0].cpu.busy_ns;
    burst (&r, SL_OP_READ, 1, 0, 0, 4 * KIB);
    assert_int_equal (r.c->node[0].cpu.busy_ns - before, 120000 + cases[k].wake_ns);
    run_free (&r);
  }
}

/* A guest's work on a shared host (the pool) whose cores were busy over
 * the last window costs busy-host-share of its figures: 400 reads at once
 * on a node of 100 us an I/O, its pool one core.  The first window (20 ms)
 * has no past: 200 reads at 100 us; from then on the pool was wholly busy,
 * so at a share of 0.5 the other 200 cost 50 us.  Figures calibrated on a
 * wholly busy host (calibrated-utilisation=1), or no pool: no share. */
static void
test_busy_pool_charges_its_share (void **state)
{
  (void) state;
  const char *one = DISK ("n1", "d0") "local n1 disk d0\nvolume n1 v 64M\n"
    "export n1 at=0 size=64M volume=v\n";
  struct { const char *pool, *calibrated; uint64_t busy_ns; } cases[] = {
    { "pool cores=1\n", "0.5", 200 * 100000 + 200 * 50000 },
    { "pool cores=1\n", "1", 400 * 100000 },
    { "", "0.5", 400 * 100000 },
  };
  char spec[2048];
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    snprintf (spec, sizeof spec, "storlab-cluster 1\n%snode n1 cores=1 per-io-us=100"
              " busy-host-share=0.5 calibrated-utilisation=%s\n%s", cases[k].pool,
              cases[k].calibrated, one);
    struct run r = run_new (spec);
    burst (&r, SL_OP_READ, 400, 0, 4 * KIB, 4 * KIB);
    assert_int_equal (r.c->node[0].cpu.busy_ns, cases[k].busy_ns);
    run_free (&r);
  }
  assert_refused ("storlab-cluster 1\nnode n1 busy-host-share=0\n", "busy-host-share");
  assert_refused ("storlab-cluster 1\nnode n1 busy-host-share=5\n", "busy-host-share");
  assert_refused ("storlab-cluster 1\nnode n1 calibrated-utilisation=1.5\n",
                  "calibrated-utilisation");
}

/* Between the calibration's utilisation and a wholly busy host the share
 * goes linearly: calibrated at 0.5 of the cores, 0.5 when all are busy;
 * a pool of two cores 0.75 busy over the last window gives 0.75, one 0.4
 * busy 1 (below the calibration's). */
static void
test_busy_host_share_is_linear_in_utilisation (void **state)
{
  (void) state;
  struct cl_host_config config;
  char why[128];
  assert_int_equal (cl_host_preset ("tcg", &config, why, sizeof why), 0);
  assert_int_equal (cl_host_ratio_set (&config, "busy-host-share", 0.5), 0);
  assert_int_equal (cl_host_ratio_set (&config, "calibrated-utilisation", 0.5), 0);
  assert_int_equal (cl_host_ratio_set (&config, "busy-host-share", 0.01), -1);
  const double busy[] = { 0.75, 0.4, 1.0 }, share[] = { 0.75, 1.0, 0.5 };
  for (size_t k = 0; k < sizeof busy / sizeof busy[0]; k++) {
    struct cl_cpu pool, node;
    struct cl_host_config two = config;
    two.cores = 2;
    assert_int_equal (cl_cpu_init (&pool, &two), 0);
    assert_int_equal (cl_cpu_init (&node, &config), 0);
    assert_true (fabs (cl_busy_host_share (&node, CL_POOL_WINDOW_NS) - 1.0) < 1e-9);  /* no pool */
    node.pool = &pool;
    pool.busy_ns = (uint64_t) (busy[k] * 2 * CL_POOL_WINDOW_NS);
    assert_true (fabs (cl_busy_host_share (&node, CL_POOL_WINDOW_NS) - share[k]) < 1e-9);
    cl_cpu_free (&pool);
    cl_cpu_free (&node);
  }
}

/* The host's scheduler gives a runnable thread an idle core: work booked
 * on the pool ahead of time (a vCPU's next step, booked when its vCPU is
 * free) leaves the time before it to work that is runnable earlier and
 * booked after, where it fits.  One pool core: 100 us booked at 500, then
 * 100 us runnable at 0 runs at once, 450 us runnable at 50 does not fit
 * before 500 and runs after 600, 400 us runnable at 0 fills 100-500. */
static void
test_host_pool_fills_the_time_before_work_booked_ahead (void **state)
{
  (void) state;
  struct cl_host_config config;
  char why[128];
  assert_int_equal (cl_host_preset ("tcg", &config, why, sizeof why), 0);
  struct cl_host_config one = config;
  one.cores = 1;
  struct cl_cpu pool, node;
  assert_int_equal (cl_cpu_init (&pool, &one), 0);
  assert_int_equal (cl_cpu_init (&node, &config), 0);
  node.pool = &pool;
  assert_int_equal (cl_hypervisor_run (&node, 500000, 100000), 600000);
  assert_int_equal (cl_hypervisor_run (&node, 0, 100000), 100000);
  assert_int_equal (cl_hypervisor_run (&node, 50000, 450000), 1050000);
  assert_int_equal (cl_hypervisor_run (&node, 0, 400000), 500000);
  assert_int_equal (pool.busy_ns, 100000 + 100000 + 450000 + 400000);
  cl_cpu_free (&pool);
  cl_cpu_free (&node);
}

/* A lab device behind QEMU's NBD client sees at most device-inflight-max
 * of its I/Os at once; the rest wait before it, in order, outside its
 * latency and depth (what the lab's plugin counts).  Eight reads at once
 * of a 100 µs device: four rounds of two with a cap of 2, one round
 * without. */
static void
test_device_inflight_max_holds_the_rest_before_the_device (void **state)
{
  (void) state;
  const char *caps[] = { "2", "0" };
  const uint64_t last_ns[] = { 400000, 100000 };
  char spec[1024];
  for (size_t k = 0; k < 2; k++) {
    snprintf (spec, sizeof spec, "storlab-cluster 1\nnode n1 per-io-us=0 device-inflight-max=%s\n"
              DISK ("n1", "d0") "local n1 disk d0\nvolume n1 v 64M\n"
              "export n1 at=0 size=64M volume=v\n", caps[k]);
    struct run r = run_new (spec);
    uint64_t last = burst (&r, SL_OP_READ, 8, 0, 4 * KIB, 4 * KIB);
    assert_int_equal (last, last_ns[k]);
    const struct cl_target_stats *d = layer (&r, "n1/d0");
    assert_int_equal (d->op[SL_OP_READ].count, 8);
    assert_int_equal (d->op[SL_OP_READ].latency_sum_ns, 8 * 100000);   /* no wait in it */
    /* its mean depth while busy: the cap, or all eight at once */
    assert_int_equal (d->queue_depth_integral_ns / d->busy_ns, k == 0 ? 2 : 8);
    run_free (&r);
  }
  assert_refused ("storlab-cluster 1\nnode n1 device-inflight-max=2.5\n",
                  "device-inflight-max=2.5: not a whole number");
  assert_refused ("storlab-cluster 1\nnode n1 device-inflight-max=-1\n", "device-inflight-max");
}

/* --------------------------------------------------------- determinism -- */

static char *
run_json (void)
{
  struct run r = run_new ("storlab-cluster 1\nnode n1\nnode n2\n"
                          "device n1 cache ssd preset=intel-s3700-400g size=1G\n"
                          "device n1 d0 hdd preset=sas10k-300g size=1G\n"
                          "device n1 d1 hdd preset=sas10k-300g size=1G\n"
                          "device n2 d0 hdd preset=sas10k-300g size=1G\nlink n1 n2\n"
                          "local n1 disk-group mode=hybrid cache=cache stripe-width=2 d0 d1\n"
                          "local n2 disk d0\nvolume n1 v 256M\nreplica r 128M n1 n2\n"
                          "export n1 at=0 size=256M volume=v\nexport n2 at=256M size=128M share=r\n");
  for (int round = 0; round < 20; round++) {
    burst (&r, SL_OP_WRITE, 16, (uint64_t) round * 1237 * 4096 % (200 * MIB), 9 * MIB, 4 * KIB);
    burst (&r, SL_OP_READ, 16, (uint64_t) round * 977 * 4096 % (200 * MIB), 11 * MIB, 4 * KIB);
    burst (&r, SL_OP_WRITE, 4, 256 * MIB + (uint64_t) round * 64 * KIB, MIB, 64 * KIB);
  }
  char *json = json_of (&r);
  run_free (&r);
  return json;
}

static void
test_same_run_same_figures (void **state)
{
  (void) state;
  char *a = run_json (), *b = run_json ();
  assert_string_equal (a, b);
  assert_non_null (strstr (a, "\"kind\": \"writecache\""));
  assert_non_null (strstr (a, "\"kind\": \"readcache\""));
  assert_non_null (strstr (a, "\"kind\": \"nfs\""));
  assert_non_null (strstr (a, "\"kind\": \"nvme-tcp\""));
  free (a);
  free (b);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_spec_errors),
    cmocka_unit_test (test_spec_over_memory_budget),
    cmocka_unit_test (test_md_raid10_mapping),
    cmocka_unit_test (test_md_raid5_small_write),
    cmocka_unit_test (test_disk_group_stripe_mapping),
    cmocka_unit_test (test_a_read_passed_down_counts_at_every_layer),
    cmocka_unit_test (test_volumes_on_capacity_devices),
    cmocka_unit_test (test_volumes_on_two_disk_groups),
    cmocka_unit_test (test_disk_group_numbers),
    cmocka_unit_test (test_replica_fan_out),
    cmocka_unit_test (test_link_bandwidth_saturates),
    cmocka_unit_test (test_host_cpu_per_io),
    cmocka_unit_test (test_host_costs_by_step),
    cmocka_unit_test (test_host_device_release),
    cmocka_unit_test (test_host_hypervisor_cost_by_device_server),
    cmocka_unit_test (test_host_hypervisor_idle_only_where_the_guest_sleeps),
    cmocka_unit_test (test_host_replies_together_wake_the_hypervisor_once),
    cmocka_unit_test (test_host_cost_of_switching_processes),
    cmocka_unit_test (test_host_cost_of_a_switch_shared_by_a_batch),
    cmocka_unit_test (test_host_cost_of_a_thread_woken_an_io),
    cmocka_unit_test (test_host_costs_by_direction),
    cmocka_unit_test (test_host_costs_of_the_front_end),
    cmocka_unit_test (test_host_costs_of_md),
    cmocka_unit_test (test_host_costs_of_an_lv),
    cmocka_unit_test (test_host_costs_of_the_disk_group),
    cmocka_unit_test (test_warm_write_buffer_lays_its_ssd_out_as_a_log),
    cmocka_unit_test (test_warm_random_writes_settle_the_region_they_write),
    cmocka_unit_test (test_warm_probe_finds_a_buffer_its_writeback_cannot_keep),
    cmocka_unit_test (test_host_costs_of_a_hop),
    cmocka_unit_test (test_a_message_wakes_a_sleeping_node),
    cmocka_unit_test (test_host_pool_is_shared),
    cmocka_unit_test (test_crowded_pool_wakes_cost_more),
    cmocka_unit_test (test_host_pool_fills_the_time_before_work_booked_ahead),
    cmocka_unit_test (test_busy_pool_charges_its_share),
    cmocka_unit_test (test_busy_host_share_is_linear_in_utilisation),
    cmocka_unit_test (test_device_inflight_max_holds_the_rest_before_the_device),
    cmocka_unit_test (test_cpu_time_scale_multiplies_every_cost_once),
    cmocka_unit_test (test_same_run_same_figures),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
