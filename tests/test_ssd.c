/* test_ssd.c — the SSD model: parameters and geometry, the FTL (mapping
 * consistency, garbage collection), write amplification, the write buffer's
 * flush semantics, die and channel timelines, the presets.
 *
 * FTL tests drive ssd_ftl.h directly and keep a shadow map of what must be
 * mapped; model tests run the model in virtual time with a small closed-loop
 * driver and compare with figures computed here from the configuration.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "catalog/kinds.h"
#include "core/engine.h"
#include "core/stats.h"
#include "device/device.h"
#include "device/params.h"
#include "device/presets.h"
#include "ssd/ssd.h"
#include "ssd/ssd_ftl.h"
#include "ssd/ssd_memo.h"
#include "core/units.h"

#include "closed_loop.h"

#define US 1000ull

/* 64 MiB, 4 dies on 2 channels, 1 plane of 8 KiB pages, 16 pages per block:
 * 32 units (128 KiB) per block, 2 units per program. */
static struct sl_ssd_config
small_config (void)
{
  struct sl_ssd_config c;
  sl_ssd_config_defaults (&c);
  c.capacity_bytes = 64 * MIB;
  c.channels = 2;
  c.dies_per_channel = 2;
  c.planes_per_die = 1;
  c.page_bytes = 8 * KIB;
  c.pages_per_block = 16;
  c.read_latency_ns = 50 * US;
  c.program_latency_ns = 500 * US;
  c.erase_latency_ns = 2000 * US;
  c.channel_rate_bytes_per_s = 200000000;
  c.over_provisioning_pct = 25;
  c.gc_low_watermark_pct = 5;
  c.gc_high_watermark_pct = 10;
  c.buffer_bytes = 256 * KIB;
  c.plp = true;
  c.slc_cache_bytes = 0;
  c.interface = SL_SSD_SATA;
  c.queue_depth = 32;
  c.read_overhead_ns = 5 * US;
  c.write_overhead_ns = 10 * US;
  c.controller_rate_bytes_per_s = 0;
  c.precondition = SL_SSD_FOB;
  c.exact_map_bytes = 1 * GIB;
  return c;
}

static struct sl_ssd_geometry
geometry_of (const struct sl_ssd_config *c)
{
  struct sl_ssd_geometry g;
  char err[512] = "";
  if (sl_ssd_geometry_build (c, &g, err, sizeof err) != 0)
    fail_msg ("geometry: %s", err);
  return g;
}

/* ------------------------------------------------------------- params -- */

static void
test_params_table (void **state)
{
  (void) state;
  static const char *const keys[] = {
    "size", "channels", "dies-per-channel", "planes-per-die", "page-size",
    "pages-per-block", "read-latency-us", "program-latency-us", "erase-latency-ms",
    "channel-mb-s", "over-provisioning-pct", "gc-low-watermark-pct",
    "gc-high-watermark-pct", "buffer-size", "plp", "slc-cache-size",
    "slc-program-latency-us", "interface", "pcie-lanes", "queue-depth",
    "read-overhead-us", "write-overhead-us", "controller-mb-s", "precondition",
    "exact-map-size",
  };
  assert_int_equal (sl_ssd_param_count, sizeof keys / sizeof keys[0]);
  for (size_t i = 0; i < sl_ssd_param_count; i++) {
    assert_string_equal (sl_ssd_params[i].key, keys[i]);
    size_t n = strlen (sl_ssd_params[i].help);
    assert_true (n > 10);
    assert_true (sl_ssd_params[i].help[n - 1] != '.');
  }
  struct sl_ssd_config c;
  sl_ssd_config_defaults (&c);
  char err[512] = "";
  if (sl_ssd_config_validate (&c, err, sizeof err) != 0)
    fail_msg ("defaults: %s", err);
  assert_string_equal (sl_ssd_kind.kind, "ssd");
  assert_ptr_equal (sl_device_kind_find ("ssd"), &sl_ssd_kind);
  assert_string_equal (sl_device_kind_names (), "hdd, ssd, raid");
  assert_int_equal (sl_ssd_kind.config_bytes, sizeof (struct sl_ssd_config));

  /* the dump spells choices and percentages back as given */
  char *text = NULL;
  size_t text_bytes = 0;
  FILE *mem = open_memstream (&text, &text_bytes);
  sl_params_dump (sl_ssd_params, sl_ssd_param_count, &c, "", mem);
  fclose (mem);
  assert_non_null (strstr (text, "interface=sata\n"));
  assert_non_null (strstr (text, "precondition=steady\n"));
  assert_non_null (strstr (text, "over-provisioning-pct=32\n"));
  assert_non_null (strstr (text, "plp=on\n"));
  free (text);
  text = NULL;
  mem = open_memstream (&text, &text_bytes);
  sl_params_help (sl_ssd_params, sl_ssd_param_count, &c, mem);
  fclose (mem);
  assert_non_null (strstr (text, "interface=<sata|nvme>"));
  assert_non_null (strstr (text, "over-provisioning-pct=<%>"));
  assert_null (strstr (text, "sata|nvme: "));   /* the list is not repeated as help */
  free (text);

  struct sl_model model = sl_ssd_kind.create (&c, err, sizeof err);
  assert_non_null (model.ops);
  assert_string_equal (model.ops->kind, "ssd");
  assert_int_equal (model.capacity_bytes, c.capacity_bytes);
  assert_false (model.volatile_write_cache);    /* plp=on */
  model.ops->destroy (model.self);
}

static void
builder_fails (const char *key, const char *value, const char *expected)
{
  struct sl_device_builder b;
  sl_device_builder_init (&b, &sl_ssd_kind);
  char err[1024] = "";
  assert_int_equal (sl_device_builder_add (&b, key, value, err, sizeof err), -1);
  if (strstr (err, expected) == NULL)
    fail_msg ("%s=%s: error '%s' lacks '%s'", key, value, err, expected);
  sl_device_builder_free (&b);
}

static void
test_builder_values (void **state)
{
  (void) state;
  struct sl_device_builder b;
  sl_device_builder_init (&b, &sl_ssd_kind);
  char err[1024] = "";
  const char *pairs[][2] = {
    { "preset", "samsung-840evo-120g" }, { "interface", "nvme" },
    { "over-provisioning-pct", "7.5" }, { "precondition", "fob" }, { "pcie-lanes", "8" },
    { "queue-depth", "256" },
  };
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
    if (sl_device_builder_add (&b, pairs[i][0], pairs[i][1], err, sizeof err) != 0)
      fail_msg ("%s=%s: %s", pairs[i][0], pairs[i][1], err);
  struct sl_ssd_config c;
  if (sl_device_builder_build (&b, &c, err, sizeof err) != 0)
    fail_msg ("build: %s", err);
  assert_int_equal (c.interface, SL_SSD_NVME);
  assert_true (c.over_provisioning_pct == 7.5);
  assert_int_equal (c.precondition, SL_SSD_FOB);
  assert_int_equal (c.slc_cache_bytes, 3 * GIB);         /* from the preset */
  assert_false (c.plp);
  sl_device_builder_free (&b);

  builder_fails ("interface", "scsi", "interface=scsi: expected one of sata|nvme");
  builder_fails ("precondition", "dirty", "precondition=dirty: expected one of fob|steady");
  builder_fails ("over-provisioning-pct", "lots", "over-provisioning-pct=lots: not a number");
  builder_fails ("over-provisioning-pct", "-3", "over-provisioning-pct=-3: out of range");
  builder_fails ("preset", "sas10k-300g", "unknown ssd preset");
  builder_fails ("rpm", "7200", "unknown key 'rpm' for ssd");
}

static void
expect_invalid (struct sl_ssd_config c, const char *const *words)
{
  char err[1024] = "";
  assert_int_equal (sl_ssd_config_validate (&c, err, sizeof err), -1);
  for (; *words; words++)
    if (strstr (err, *words) == NULL)
      fail_msg ("error \"%s\" does not mention %s", err, *words);
  struct sl_model m = sl_ssd_model_new (&c, err, sizeof err);
  assert_null (m.ops);
}

static void
test_validate_rejects (void **state)
{
  (void) state;
  struct sl_ssd_config c = small_config ();
  c.over_provisioning_pct = 0;
  expect_invalid (c, (const char *[]) { "over-provisioning-pct=0", "> 0", NULL });

  c = small_config ();
  c.pages_per_block = 0;
  expect_invalid (c, (const char *[]) { "pages-per-block=0", "page-size", "larger than the block", NULL });

  c = small_config ();
  c.page_bytes = 6 * KIB;
  expect_invalid (c, (const char *[]) { "page-size=6144", "4096", NULL });

  c = small_config ();
  c.capacity_bytes = 64 * MIB + 512;
  expect_invalid (c, (const char *[]) { "size=", "multiple of 4096", NULL });

  /* capacity not matching geometry: 1 % spare cannot hold GC's blocks */
  c = small_config ();
  c.over_provisioning_pct = 1;
  expect_invalid (c, (const char *[]) { "size=67108864", "over-provisioning-pct=1",
                                        "does not fit", "gc-high-watermark-pct", NULL });

  c = small_config ();
  c.buffer_bytes = 128 * MIB;
  expect_invalid (c, (const char *[]) { "buffer-size=134217728", "larger than size", NULL });

  c = small_config ();
  c.buffer_bytes = 4 * KIB;
  expect_invalid (c, (const char *[]) { "buffer-size=4096", "program unit", NULL });

  c = small_config ();
  c.gc_high_watermark_pct = 5;
  expect_invalid (c, (const char *[]) { "gc-high-watermark-pct=5", "gc-low-watermark-pct=5", NULL });

  c = small_config ();
  c.slc_cache_bytes = 4 * MIB;
  c.slc_program_latency_ns = c.program_latency_ns;
  expect_invalid (c, (const char *[]) { "slc-program-latency-us=500", "program-latency-us", NULL });

  c = small_config ();
  c.queue_depth = 64;
  expect_invalid (c, (const char *[]) { "queue-depth=64", "interface=sata", NULL });

  c = small_config ();
  c.channels = 0;
  expect_invalid (c, (const char *[]) { "channels=0", "out of range", NULL });
}

static void
test_geometry (void **state)
{
  (void) state;
  struct sl_ssd_config c = small_config ();
  struct sl_ssd_geometry g = geometry_of (&c);
  uint64_t logical = 64 * MIB / 4096;                   /* 16384 */
  uint64_t per_block = 16 * 2;                          /* pages x units per page */
  uint64_t blocks = (uint64_t) ceil (ceil (logical * 1.25) / per_block);
  uint64_t per_die = (blocks + 3) / 4;
  assert_int_equal (g.dies, 4);
  assert_int_equal (g.units_per_page, 2);
  assert_int_equal (g.program_units, 2);
  assert_int_equal (g.units_per_block, per_block);
  assert_int_equal (g.logical_units, logical);
  assert_int_equal (g.blocks_per_die, per_die);
  assert_int_equal (g.physical_units, per_die * 4 * per_block);
  assert_int_equal (g.gc_low_blocks, (uint32_t) ceil (per_die * 0.05));
  assert_int_equal (g.gc_high_blocks, (uint32_t) ceil (per_die * 0.10));
  assert_within (g.effective_over_provisioning, 0.25, 0.02);

  /* multi-plane: a program and a block span the planes */
  c.planes_per_die = 4;
  c.page_bytes = 16 * KIB;
  c.pages_per_block = 4;
  g = geometry_of (&c);
  assert_int_equal (g.program_units, 16);
  assert_int_equal (g.units_per_block, 64);
  assert_int_equal (g.block_bytes, 256 * KIB);
}

static void
test_greedy_fraction (void **state)
{
  (void) state;
  /* u = 1/2 solves ln(u)/(u-1) = 2 ln 2 */
  assert_within (sl_ssd_greedy_victim_valid_fraction (2 * log (2.0)), 0.5, 1e-9);
  static const double alphas[] = { 1.02, 1.07, 1.28, 2.0, 5.0 };
  double previous = 1;
  for (size_t i = 0; i < sizeof alphas / sizeof alphas[0]; i++) {
    double u = sl_ssd_greedy_victim_valid_fraction (alphas[i]);
    assert_true (u > 0 && u < previous);               /* more spare, emptier victims */
    assert_within (log (u) / (u - 1), alphas[i], 1e-9);
    previous = u;
  }
  assert_true (sl_ssd_greedy_victim_valid_fraction (1.0) == 1.0);
}

/* ---------------------------------------------------------------- FTL -- */

struct ftl_run {
  struct ssd_ftl *f;
  struct sl_ssd_geometry g;
  uint8_t *shadow;             /* 1: must be mapped */
  uint64_t rng;
  uint32_t next_die;
  uint64_t gc_moved, erased;
};

static void
ftl_run_init (struct ftl_run *r, const struct sl_ssd_config *c, uint64_t exact_units)
{
  memset (r, 0, sizeof *r);
  r->g = geometry_of (c);
  r->f = ssd_ftl_new (&r->g, exact_units, 42);
  assert_non_null (r->f);
  r->shadow = calloc (r->g.logical_units, 1);
  assert_non_null (r->shadow);
  r->rng = 0x9e3779b97f4a7c15ull;
}

static void
ftl_run_free (struct ftl_run *r)
{
  ssd_ftl_free (r->f);
  free (r->shadow);
}

static void
ftl_check_ok (const struct ftl_run *r)
{
  char err[512] = "";
  if (ssd_ftl_check (r->f, err, sizeof err) != 0)
    fail_msg ("FTL inconsistent: %s", err);
}

/* Garbage-collects die until the host can program it again (or up to the
 * high watermark when `to_high`), as the drive would. */
static void
collect (struct ftl_run *r, uint32_t die, bool to_high)
{
  while (!ssd_ftl_host_can_program (r->f, die) || ssd_ftl_free_blocks (r->f, die) < r->g.gc_low_blocks
         || (to_high && ssd_ftl_free_blocks (r->f, die) < r->g.gc_high_blocks)) {
    struct ssd_gc_step step;
    int rc = ssd_ftl_gc_step (r->f, die, &step);
    if (rc != 1)
      fail_msg ("die %" PRIu32 ": GC step returned %d with %" PRIu32 " free blocks", die, rc,
                ssd_ftl_free_blocks (r->f, die));
    r->gc_moved += step.moved;
    r->erased += step.erased;
  }
}

static void
ftl_write_units (struct ftl_run *r, const uint32_t *lbas, uint32_t n)
{
  uint32_t die = r->next_die++ % r->g.dies;
  collect (r, die, false);
  assert_int_equal (ssd_ftl_program_host (r->f, die, lbas, n), 0);
  for (uint32_t i = 0; i < n; i++)
    r->shadow[lbas[i]] = 1;
}

static void
ftl_write_random (struct ftl_run *r)
{
  uint32_t lbas[64], n = r->g.program_units;
  for (uint32_t i = 0; i < n; i++)
    lbas[i] = (uint32_t) (test_rng_next (&r->rng) % r->g.logical_units);
  ftl_write_units (r, lbas, n);
}

static void
ftl_trim (struct ftl_run *r, uint64_t first, uint64_t count)
{
  if (first + count > r->g.logical_units)
    count = r->g.logical_units - first;
  ssd_ftl_trim (r->f, first, count);
  memset (r->shadow + first, 0, count);
}

/* Every unit the shadow says is mapped is located, every other one is not;
 * the valid counts add up to the mapped units. */
static void
ftl_compare_shadow (struct ftl_run *r)
{
  uint64_t mapped = 0;
  for (uint64_t lba = 0; lba < r->g.logical_units; lba++) {
    uint32_t die;
    uint64_t group;
    bool located = ssd_ftl_locate (r->f, (uint32_t) lba, &die, &group);
    if (located != (r->shadow[lba] != 0))
      fail_msg ("lba %" PRIu64 ": located %d, shadow says %d", lba, located, r->shadow[lba]);
    if (located)
      assert_true (die < r->g.dies);
    mapped += r->shadow[lba];
  }
  uint64_t valid = 0;
  for (uint32_t b = 0; b < r->f->block_count; b++)
    valid += ssd_ftl_block_valid (r->f, b);
  assert_int_equal (valid, mapped);
}

static void
test_ftl_overwrite_trim_consistent (void **state)
{
  (void) state;
  struct sl_ssd_config c = small_config ();
  struct ftl_run r;
  ftl_run_init (&r, &c, UINT64_MAX);
  for (int op = 0; op < 60000; op++) {
    uint64_t dice = test_rng_next (&r.rng) % 1000;
    if (dice < 900)
      ftl_write_random (&r);
    else if (dice < 995)
      ftl_trim (&r, test_rng_next (&r.rng) % r.g.logical_units, 1 + test_rng_next (&r.rng) % 300);
    else                       /* whole regions at once */
      ftl_trim (&r, (test_rng_next (&r.rng) % 4) * SSD_REGION_UNITS, 2 * SSD_REGION_UNITS);
    if (op % 5000 == 4999) {
      ftl_check_ok (&r);
      ftl_compare_shadow (&r);
    }
  }
  assert_true (r.erased > 0);  /* the drive went round several times */
  assert_int_equal (r.f->evictions, 0);
  ftl_check_ok (&r);
  ftl_compare_shadow (&r);
  ftl_run_free (&r);
}

/* A circular log over [first, first + count), next at oldest, taking
 * per_mille of the operations of ftl_mixed_traffic. */
struct log_writes {
  uint64_t first, count, oldest;
  unsigned per_mille;
};

static void ftl_write_log (struct ftl_run *r, uint64_t first, uint64_t count, uint64_t oldest,
                           uint64_t from, uint64_t units);

/* ops operations: writes of the log if any, random writes (up to 95 %),
 * trims of up to 200 units, whole-region trims (0.2 %); the FTL checked
 * every 5000. */
static void
ftl_mixed_traffic (struct ftl_run *r, int ops, const struct log_writes *log)
{
  for (int op = 0; op < ops; op++) {
    uint64_t dice = test_rng_next (&r->rng) % 1000;
    if (log != NULL && dice < log->per_mille)
      ftl_write_log (r, log->first, log->count, log->oldest, (uint64_t) op * r->g.program_units,
                     r->g.program_units);
    else if (dice < 950)
      ftl_write_random (r);
    else if (dice < 998)
      ftl_trim (r, test_rng_next (&r->rng) % r->g.logical_units, 1 + test_rng_next (&r->rng) % 200);
    else
      ftl_trim (r, SSD_REGION_UNITS, SSD_REGION_UNITS);
    if (op % 5000 == 4999)
      ftl_check_ok (r);
  }
}

/* With a tiny exact map, units keep falling back to statistical ones: the
 * bookkeeping must stay consistent (which unit is where is approximate). */
static void
test_ftl_statistical_consistent (void **state)
{
  (void) state;
  struct sl_ssd_config c = small_config ();
  struct ftl_run r;
  ftl_run_init (&r, &c, 500);
  double u = ssd_ftl_precondition_steady (r.f);
  assert_true (u > 0 && u < 1);
  ftl_check_ok (&r);
  assert_int_equal (r.f->stat_total, r.g.logical_units);      /* everything mapped */
  ftl_mixed_traffic (&r, 40000, NULL);
  assert_true (r.f->evictions > 0);
  assert_true (r.f->entry_live <= 500);
  ftl_check_ok (&r);
  ftl_run_free (&r);
}

/* Small spare area, the drive overwritten many times: GC keeps finding
 * space, never loses a live unit, and can always reach the high mark. */
static void
test_gc_reclaims_never_loses (void **state)
{
  (void) state;
  struct sl_ssd_config c = small_config ();
  c.over_provisioning_pct = 15;
  struct ftl_run r;
  ftl_run_init (&r, &c, UINT64_MAX);
  uint32_t lbas[64];
  for (uint64_t lba = 0; lba < r.g.logical_units; lba += r.g.program_units) {
    for (uint32_t i = 0; i < r.g.program_units; i++)
      lbas[i] = (uint32_t) (lba + i);
    ftl_write_units (&r, lbas, r.g.program_units);
  }
  ftl_compare_shadow (&r);
  uint64_t writes = 5 * r.g.logical_units / r.g.program_units;
  for (uint64_t i = 0; i < writes; i++)
    ftl_write_random (&r);
  assert_true (r.erased > 4 * r.f->block_count / 2);
  assert_true (r.gc_moved > 0);
  for (uint32_t d = 0; d < r.g.dies; d++) {
    collect (&r, d, true);
    assert_true (ssd_ftl_free_blocks (r.f, d) >= r.g.gc_high_blocks);
  }
  ftl_check_ok (&r);
  ftl_compare_shadow (&r);     /* every unit ever written is still there */
  uint32_t max_erases = 0;
  for (uint32_t b = 0; b < r.f->block_count; b++)
    if (r.f->erase_count[b] > max_erases)
      max_erases = r.f->erase_count[b];
  assert_true (max_erases > 1);
  ftl_run_free (&r);
}

/* ------------------------------------------------------- log layout -- */

/* Writes the log's units in the order a circular log does, from age
 * position `from` (0 = the oldest), `units` of them. */
static void
ftl_write_log (struct ftl_run *r, uint64_t first, uint64_t count, uint64_t oldest,
               uint64_t from, uint64_t units)
{
  uint32_t lbas[64], n = r->g.program_units;
  for (uint64_t done = 0; done < units; done += n) {
    for (uint32_t i = 0; i < n; i++)
      lbas[i] = (uint32_t) (first + (oldest + from + done + i) % count);
    ftl_write_units (r, lbas, n);
  }
}

/* The log's units fill whole blocks, oldest first, every one valid; the
 * rest of the drive holds the other units as a uniform steady state does;
 * free blocks at the low watermark; everything mapped. */
static void
test_ftl_log_layout_state (void **state)
{
  (void) state;
  struct sl_ssd_config c = small_config ();
  struct ftl_run r;
  ftl_run_init (&r, &c, UINT64_MAX);
  uint64_t first = r.g.logical_units / 4, count = r.g.logical_units / 2, oldest = count / 3;
  double u = -1;
  assert_int_equal (ssd_ftl_precondition_log (r.f, first, count, oldest, &u), 0);
  assert_true (u > 0 && u < 1);
  ftl_check_ok (&r);
  assert_int_equal (r.f->stat_total, r.g.logical_units);
  uint32_t upb = r.g.units_per_block;
  assert_int_equal (r.f->log_block_count, (count + upb - 1) / upb);
  for (uint32_t k = 0; k + 1 < r.f->log_block_count; k++)
    assert_int_equal (r.f->valid_stat[r.f->log_block[k]], upb);
  for (uint32_t d = 0; d < r.g.dies; d++)
    assert_int_equal (ssd_ftl_free_blocks (r.f, d), r.g.gc_low_blocks);

  /* the unit the log writes next lives in its oldest block, the one
   * written last in its newest: overwriting each invalidates exactly there */
  uint32_t oldest_block = r.f->log_block[0];
  uint32_t newest_block = r.f->log_block[(count - 1) / upb];
  uint32_t lba = (uint32_t) (first + oldest);
  ftl_write_units (&r, &lba, 1);
  assert_int_equal (r.f->valid_stat[oldest_block], upb - 1);
  lba = (uint32_t) (first + (oldest + count - 1) % count);
  uint32_t before = r.f->valid_stat[newest_block];
  ftl_write_units (&r, &lba, 1);
  assert_int_equal (r.f->valid_stat[newest_block], before - 1);
  /* written again: now exact, its laid-out block is left alone */
  before = r.f->valid_stat[oldest_block];
  lba = (uint32_t) (first + oldest);
  ftl_write_units (&r, &lba, 1);
  assert_int_equal (r.f->valid_stat[oldest_block], before);
  ftl_check_ok (&r);

  /* bad layouts are refused, the FTL untouched */
  struct ftl_run bad;
  ftl_run_init (&bad, &c, UINT64_MAX);
  assert_int_equal (ssd_ftl_precondition_log (bad.f, 0, 0, 0, &u), -2);
  assert_int_equal (ssd_ftl_precondition_log (bad.f, first, count, count, &u), -2);
  assert_int_equal (ssd_ftl_precondition_log (bad.f, first, r.g.logical_units, 0, &u), -2);
  assert_int_equal (bad.f->stat_total, 0);
  ftl_run_free (&bad);
  ftl_run_free (&r);
}

/* A drive written as one circular log comes round to blocks whose every
 * unit it has overwritten: garbage collection erases them without moving
 * a unit (write amplification 1), with an exact map far smaller than the
 * log (as a full-size write buffer's is).  The same writes on the uniform
 * steady state find valid units everywhere and move many: the state a
 * warm start picks decides the drive's write rate. */
static void
test_ftl_log_written_in_order_moves_nothing (void **state)
{
  (void) state;
  struct sl_ssd_config c = small_config ();
  uint64_t moved[2], writes = 0;
  for (int layout = 0; layout < 2; layout++) {
    struct ftl_run r;
    ftl_run_init (&r, &c, 1000);       /* an exact map far smaller than the log */
    uint64_t count = r.g.logical_units, oldest = count / 5;
    double u;
    if (layout == 0)
      assert_int_equal (ssd_ftl_precondition_log (r.f, 0, count, oldest, &u), 0);
    else
      assert_true (ssd_ftl_precondition_steady (r.f) > 0);
    writes = count;
    ftl_write_log (&r, 0, count, oldest, 0, writes);          /* once round */
    assert_true (r.erased > r.f->block_count / 2);
    ftl_check_ok (&r);
    moved[layout] = r.gc_moved;
    ftl_run_free (&r);
  }
  printf ("one round of a circular log: %" PRIu64 " units moved from the log layout, %" PRIu64
          " from the uniform one, for %" PRIu64 " written\n", moved[0], moved[1], writes);
  if (moved[0] > writes / 100)
    fail_msg ("log layout: %" PRIu64 " units moved for %" PRIu64 " written", moved[0], writes);
  if (moved[1] < writes / 4)
    fail_msg ("uniform layout: only %" PRIu64 " units moved for %" PRIu64 " written", moved[1],
              writes);
}

/* Random writes over [first, end) only, units at a time; the units GC
 * moved meanwhile. */
static uint64_t
ftl_write_region (struct ftl_run *r, uint64_t first, uint64_t end, uint64_t units)
{
  uint64_t moved = r->gc_moved;
  uint32_t lbas[64], n = r->g.program_units;
  for (uint64_t done = 0; done < units; done += n) {
    for (uint32_t i = 0; i < n; i++)
      lbas[i] = (uint32_t) (first + test_rng_next (&r->rng) % (end - first));
    ftl_write_units (r, lbas, n);
  }
  return r->gc_moved - moved;
}

/* The syntheses' memo gives back what was kept, by the whole key: a
 * second drive of a kind gets its first's state, another kind its own. */
static void
test_memo_keeps_by_key (void **state)
{
  (void) state;
  uint64_t key[SSD_MEMO_KEY_WORDS] = { 99, 1, 2, 3 }, other[SSD_MEMO_KEY_WORDS] = { 99, 1, 2, 4 };
  const double kept_values[3] = { 0.25, 0.5, 0.75 };
  void *value = NULL;
  size_t bytes = 0;
  double figure = 0;
  assert_false (ssd_memo_get (key, &value, &bytes, &figure));
  ssd_memo_put (key, kept_values, sizeof kept_values, 0.9);
  assert_true (ssd_memo_get (key, &value, &bytes, &figure));
  assert_int_equal (bytes, sizeof kept_values);
  assert_memory_equal (value, kept_values, sizeof kept_values);
  assert_true (figure == 0.9);
  free (value);
  assert_false (ssd_memo_get (other, &value, &bytes, &figure));
}

/* The harness's history of a written region: filled in order once (a
 * lab's volumes written when made), then rounds of random writes. */
static void
ftl_fill_and_write_region (struct ftl_run *r, uint64_t first, uint64_t count, unsigned rounds)
{
  ftl_write_log (r, first, count, 0, 0, count);
  ftl_write_region (r, first, first + count, rounds * count);
}

/* The write amplification of `window` random writes over [first, first +
 * count); the FTL checked, the run freed. */
static double
ftl_region_wa_then_free (struct ftl_run *r, uint64_t first, uint64_t count, uint64_t window)
{
  double wa = 1 + (double) ftl_write_region (r, first, first + count, window) / (double) window;
  ftl_check_ok (r);
  ftl_run_free (r);
  return wa;
}

/* A drive in the uniform steady state whose workload then fills half of
 * its units in order (a lab's volumes written when made) and from then on
 * writes them at random: the fill puts that half in blocks of its own and
 * GC compacts the other half's data, so the drive settles at a write
 * amplification well under the one random writes on the uniform state
 * keep (the halves mixed).  ssd_ftl_settle_written_region gives that
 * state: its next rounds write as this harness's own fill and eight rounds
 * do, every unit of the region exact; so does the layout of
 * ssd_ftl_precondition_written_region, settled on a one-die miniature.
 * Regions it cannot settle are refused, the FTL untouched. */
static void
test_ftl_written_region_settles_after_its_fill (void **state)
{
  (void) state;
  struct sl_ssd_config c = small_config ();
  c.over_provisioning_pct = 12;
  c.gc_low_watermark_pct = 2;
  c.gc_high_watermark_pct = 4;
  double wa[4];
  uint64_t n = 0;
  for (int run = 0; run < 4; run++) {
    struct ftl_run r;
    ftl_run_init (&r, &c, UINT64_MAX);
    n = r.g.logical_units;
    uint64_t first = n / 4, count = n / 2, window = 4 * count;
    double u;
    if (run == 3)
      assert_int_equal (ssd_ftl_precondition_written_region (r.f, first, count, &u), 0);
    else
      assert_true (ssd_ftl_precondition_steady (r.f) > 0);
    if (run == 0) {
      assert_int_equal (ssd_ftl_settle_written_region (r.f, first, count, 3, NULL), 0);
      assert_int_equal (r.f->entry_live, count);
      for (uint32_t d = 0; d < r.g.dies; d++)
        assert_true (ssd_ftl_free_blocks (r.f, d) >= r.g.gc_low_blocks);
      ftl_check_ok (&r);
    }
    else if (run == 1)
      ftl_fill_and_write_region (&r, first, count, 8);
    wa[run] = ftl_region_wa_then_free (&r, first, count, window);
  }
  printf ("random writes over half the drive: write amplification %.2f settled by "
          "ssd_ftl_settle_written_region, %.2f laid out from its miniature, %.2f after a fill "
          "and 8 rounds, %.2f from the uniform steady state\n", wa[0], wa[3], wa[1], wa[2]);
  if (fabs (wa[0] / wa[1] - 1) > 0.05 || fabs (wa[3] / wa[1] - 1) > 0.05)
    fail_msg ("settled %.2f, laid out %.2f, the harness's fill and rounds %.2f", wa[0], wa[3],
              wa[1]);
  if (wa[2] < wa[1] * 1.10)
    fail_msg ("without the fill (%.2f) no worse than with it (%.2f)", wa[2], wa[1]);

  struct ftl_run bad;
  ftl_run_init (&bad, &c, 100);
  assert_true (ssd_ftl_precondition_steady (bad.f) > 0);
  assert_int_equal (ssd_ftl_settle_written_region (bad.f, n / 2, n, 3, NULL), -2);
  assert_int_equal (ssd_ftl_settle_written_region (bad.f, 0, 0, 3, NULL), -2);
  assert_int_equal (ssd_ftl_settle_written_region (bad.f, 0, 101, 3, NULL), -3);
  assert_int_equal (bad.f->entry_live, 0);
  ftl_check_ok (&bad);
  ftl_run_free (&bad);
}

/* ssd_ftl_precondition_written_region at a size where it cannot just
 * settle the drive: a 2 GiB drive (~18k blocks, 8k in its miniature)
 * written at random in half of its units.  Laid out, the region's
 * units are held in their blocks (an overwrite of one takes its own
 * block's count, an overwrite of another unit none of theirs) and the
 * drive writes as the same drive does after the harness's fill and four
 * rounds.  (At this size the uniform state writes about as much: its
 * halves stay as mixed as the fill leaves them.  On the 64 MiB drive of
 * the test above, whose few blocks the fill sorts, it does not.) */
static void
test_ftl_written_region_layout_at_scale (void **state)
{
  (void) state;
  struct sl_ssd_config c = small_config ();
  c.capacity_bytes = 2 * GIB;
  c.over_provisioning_pct = 12;
  c.gc_low_watermark_pct = 2;
  c.gc_high_watermark_pct = 4;
  double wa[3];
  for (int run = 0; run < 3; run++) {
    struct ftl_run r;
    ftl_run_init (&r, &c, UINT64_MAX);
    uint64_t n = r.g.logical_units, first = n / 4, count = n / 2, window = 2 * count;
    if (run == 0) {
      double u = 0;
      assert_int_equal (ssd_ftl_precondition_written_region (r.f, first, count, &u), 0);
      assert_true (u > 0 && u < 1);
      ftl_check_ok (&r);
      uint64_t held = 0;
      for (uint32_t b = 0; b < r.f->block_count; b++)
        held += r.f->log_held[b];
      assert_int_equal (held, count);
      assert_int_equal (r.f->stat_total, n);
      for (uint32_t d = 0; d < r.g.dies; d++)
        assert_int_equal (ssd_ftl_free_blocks (r.f, d), r.g.gc_low_blocks);
      /* a unit of the region, then one outside it: only the first takes
       * a held unit (from its own block) */
      uint32_t lba = (uint32_t) (first + count / 3);
      ftl_write_units (&r, &lba, 1);
      held = 0;
      for (uint32_t b = 0; b < r.f->block_count; b++)
        held += r.f->log_held[b];
      assert_int_equal (held, count - 1);
      lba = 5;
      ftl_write_units (&r, &lba, 1);
      held = 0;
      for (uint32_t b = 0; b < r.f->block_count; b++)
        held += r.f->log_held[b];
      assert_int_equal (held, count - 1);
    }
    else {
      assert_true (ssd_ftl_precondition_steady (r.f) > 0);
      if (run == 1)
        ftl_fill_and_write_region (&r, first, count, 4);
    }
    wa[run] = ftl_region_wa_then_free (&r, first, count, window);
  }
  printf ("half of a 2 GiB drive written at random: write amplification %.2f laid out, "
          "%.2f after the fill and 4 rounds, %.2f from the uniform steady state\n",
          wa[0], wa[1], wa[2]);
  if (fabs (wa[0] / wa[1] - 1) > 0.05)
    fail_msg ("laid out %.2f, after the fill and rounds %.2f", wa[0], wa[1]);
}

/* Random writes, trims and whole-region trims over a log layout with a
 * tiny exact map: units leave the layout and come back as statistical
 * ones, and the bookkeeping stays consistent. */
static void
test_ftl_log_layout_statistical_consistent (void **state)
{
  (void) state;
  struct sl_ssd_config c = small_config ();
  struct ftl_run r;
  ftl_run_init (&r, &c, 300);
  uint64_t count = r.g.logical_units - SSD_REGION_UNITS;
  double u;
  assert_int_equal (ssd_ftl_precondition_log (r.f, SSD_REGION_UNITS / 2, count, 77, &u), 0);
  const struct log_writes log = { SSD_REGION_UNITS / 2, count, 77, 600 };
  ftl_mixed_traffic (&r, 30000, &log);
  assert_true (r.f->evictions > 0);
  ftl_check_ok (&r);
  ftl_run_free (&r);
}

/* -------------------------------------------------------------- driver -- */

static struct sl_engine *
new_engine (const struct sl_ssd_config *c, struct sl_device_stats **stats)
{
  char err[512] = "";
  struct sl_model model = sl_ssd_model_new (c, err, sizeof err);
  if (model.ops == NULL)
    fail_msg ("model: %s", err);
  *stats = calloc (1, sizeof **stats);
  assert_non_null (*stats);
  struct sl_engine *e = sl_engine_new (SL_CLOCK_VIRTUAL, model, *stats, "ssd0");
  assert_non_null (e);
  return e;
}

/* A closed loop over [0, region_bytes) of e; it stops at the last
 * completion (background work may go on: what comes after stays pending). */
static void
driver_init (struct test_driver *d, struct sl_engine *e, uint64_t region_bytes, unsigned depth,
             enum sl_op op, enum test_pattern pattern, uint64_t length_bytes, uint64_t target)
{
  test_driver_init (d, e, region_bytes, depth, op, pattern, length_bytes, target,
                    0x2545f4914f6cdd1dull);
}

static void
model_check_ok (struct sl_engine *e)
{
  char err[512] = "";
  if (sl_ssd_model_check (sl_engine_model (e), err, sizeof err) != 0)
    fail_msg ("model inconsistent: %s", err);
}

/* Write amplification of `host_units` random 4 KiB writes, from the
 * counters' change: NAND pages programmed per host page that left the
 * buffer (what is still queued there has cost nothing yet). */
static double
random_write_wa (struct sl_engine *e, struct sl_device_stats *stats, uint64_t capacity,
                 uint64_t host_units)
{
  struct sl_ssd_status before, after;
  sl_ssd_model_status (sl_engine_model (e), &before);
  uint64_t nand0 = test_model_counter (stats, "nand_pages_programmed");
  uint64_t host0 = test_model_counter (stats, "host_pages_written");
  struct test_driver d;
  driver_init (&d, e, capacity, 32, SL_OP_WRITE, TEST_RANDOM, 4 * KIB, host_units);
  test_driver_run (&d);
  test_driver_free (&d);
  sl_ssd_model_status (sl_engine_model (e), &after);
  uint64_t host = test_model_counter (stats, "host_pages_written") - host0;
  assert_int_equal (host, host_units);
  assert_int_equal (after.nand_units_programmed - before.nand_units_programmed,
                    test_model_counter (stats, "nand_pages_programmed") - nand0);
  double out = (double) host + (double) before.queued_units - (double) after.queued_units;
  return (double) (test_model_counter (stats, "nand_pages_programmed") - nand0) / out;
}

/* ------------------------------------------------------------------ WA -- */

/* 256 MiB with 1 MiB blocks: large enough blocks for the steady-state
 * formula to hold. */
static struct sl_ssd_config
wa_config (double op_pct, enum sl_ssd_precondition precondition)
{
  struct sl_ssd_config c = small_config ();
  c.capacity_bytes = 256 * MIB;
  c.pages_per_block = 128;
  c.over_provisioning_pct = op_pct;
  c.gc_low_watermark_pct = 2;
  c.gc_high_watermark_pct = 4;
  c.precondition = precondition;
  c.program_latency_ns = 200 * US;
  return c;
}

static void
test_wa_rises_as_op_falls (void **state)
{
  (void) state;
  static const double ops[] = { 60, 35, 20, 12 };
  double previous = 0;
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    struct sl_ssd_config c = wa_config (ops[i], SL_SSD_FOB);
    struct sl_device_stats *stats;
    struct sl_engine *e = new_engine (&c, &stats);
    uint64_t units = c.capacity_bytes / 4096;
    double fill = random_write_wa (e, stats, c.capacity_bytes, 6 * units);
    double wa = random_write_wa (e, stats, c.capacity_bytes, 2 * units);
    model_check_ok (e);
    /* the analytic steady state of this geometry, computed here */
    struct sl_ssd_geometry g = geometry_of (&c);
    double alpha = (double) (g.blocks_per_die - g.gc_low_blocks) * g.dies * g.units_per_block
      / (double) units;
    double u = sl_ssd_greedy_victim_valid_fraction (alpha);
    print_message ("over-provisioning %4.0f%%: WA over the first 6 drive writes %.2f, "
                   "the next 2 %.2f (greedy/LRU formula %.2f)\n", ops[i], fill, wa, 1 / (1 - u));
    assert_true (wa >= 1.0);
    assert_true (wa > previous);       /* less spare, more amplification */
    assert_within (wa, 1 / (1 - u), 0.25);
    previous = wa;
    sl_engine_free (e);
    free (stats);
  }
}

/* A drive laid out as a circular log (sl_ssd_model_lay_out_log), then
 * written as one from its oldest unit, amplifies nothing from the first
 * write, where the uniform steady state it replaces amplifies as the
 * formula says; a second layout, a fresh-out-of-box drive and a drive that
 * has seen I/O are left as they are. */
static void
test_log_layout_through_the_model (void **state)
{
  (void) state;
  double wa[2];
  for (int layout = 0; layout < 2; layout++) {
    struct sl_ssd_config c = wa_config (25, SL_SSD_STEADY);
    struct sl_device_stats *stats;
    struct sl_engine *e = new_engine (&c, &stats);
    char err[256] = "";
    uint64_t oldest = c.capacity_bytes / 3 / 4096 * 4096;
    if (layout) {
      assert_int_equal (sl_ssd_model_lay_out_log (sl_engine_model (e), 0, c.capacity_bytes,
                                                  oldest, err, sizeof err), 1);
      assert_int_equal (sl_ssd_model_lay_out_log (sl_engine_model (e), 0, MIB, 0, err,
                                                  sizeof err), 0);
      struct sl_ssd_status status;
      sl_ssd_model_status (sl_engine_model (e), &status);
      assert_int_equal (status.log_layout_bytes, c.capacity_bytes);
      model_check_ok (e);
    }
    uint64_t units = c.capacity_bytes / 4096;
    struct test_driver d;
    test_driver_init (&d, e, c.capacity_bytes, 32, SL_OP_WRITE, TEST_SEQUENTIAL, 4 * KIB,
                      units / 2, 7);
    d.next_offset = oldest;
    test_driver_run (&d);
    test_driver_free (&d);
    wa[layout] = (double) test_model_counter (stats, "nand_pages_programmed")
      / (double) test_model_counter (stats, "host_pages_written");
    model_check_ok (e);
    if (!layout)               /* after I/O: refused, the state kept */
      assert_int_equal (sl_ssd_model_lay_out_log (sl_engine_model (e), 0, c.capacity_bytes, 0,
                                                  err, sizeof err), -1);
    if (!layout)
      assert_non_null (strstr (err, "after the drive's first I/O"));
    sl_engine_free (e);
    free (stats);
  }
  print_message ("half a drive written as a log: write amplification %.2f laid out as one, "
                 "%.2f from the uniform steady state\n", wa[1], wa[0]);
  assert_true (wa[1] < 1.02);
  assert_true (wa[0] > 1.3);

  struct sl_ssd_config fob = wa_config (25, SL_SSD_FOB);
  char err[256] = "";
  struct sl_model model = sl_ssd_model_new (&fob, err, sizeof err);
  assert_non_null (model.ops);
  assert_int_equal (sl_ssd_model_lay_out_log (&model, 0, fob.capacity_bytes, 0, err,
                                              sizeof err), 0);
  assert_int_equal (sl_ssd_model_log_layout_bytes (&model, fob.capacity_bytes), 0);
  model.ops->destroy (model.self);
}

/* precondition=steady is steady at once: the first 3 % of a drive's worth
 * of random writes already amplify as the eighth full overwrite of a fresh
 * drive does (where it has settled).  512 MiB in 256 KiB blocks: ~600
 * blocks per die, so that block-granular effects (open blocks, the victim
 * in progress) stay small. */
static void
test_steady_precondition_immediate (void **state)
{
  (void) state;
  struct sl_ssd_config c = wa_config (15, SL_SSD_FOB);
  c.capacity_bytes = 512 * MIB;
  c.pages_per_block = 32;
  c.buffer_bytes = 1 * MIB;
  uint64_t units = c.capacity_bytes / 4096;
  struct sl_device_stats *stats;
  struct sl_engine *e = new_engine (&c, &stats);
  assert_within (random_write_wa (e, stats, c.capacity_bytes, units / 33), 1.0, 0.01);
  random_write_wa (e, stats, c.capacity_bytes, 7 * units);
  double long_run = random_write_wa (e, stats, c.capacity_bytes, units);
  sl_engine_free (e);
  free (stats);

  c.precondition = SL_SSD_STEADY;
  e = new_engine (&c, &stats);
  struct sl_ssd_status status;
  sl_ssd_model_status (sl_engine_model (e), &status);
  assert_true (status.steady_victim_valid_fraction > 0.5);
  double immediate = random_write_wa (e, stats, c.capacity_bytes, units / 33);
  print_message ("steady precondition: WA %.2f at once; fresh drive's 8th overwrite %.2f; "
                 "synthesised state's own estimate %.2f\n", immediate, long_run,
                 1 / (1 - status.steady_victim_valid_fraction));
  assert_within (immediate, long_run, 0.15);
  assert_within (immediate, 1 / (1 - status.steady_victim_valid_fraction), 0.10);
  model_check_ok (e);
  sl_engine_free (e);
  free (stats);
}

/* A drive scaled down to a few dozen large blocks (a lab's 1/1000 of a
 * 960 GB SSD: one die of 44 blocks of 48 MiB, 129 % spare) still gets its
 * steady state: the spread's freshest blocks are full, so the data the cap
 * cuts from them has to go to the blocks below it. */
static void
test_steady_precondition_few_large_blocks (void **state)
{
  (void) state;
  static const double ops[] = { 129, 50 };
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    struct sl_ssd_config c = wa_config (ops[i], SL_SSD_STEADY);
    c.channels = 1;
    c.dies_per_channel = 1;
    c.planes_per_die = 2;
    c.page_bytes = 16 * KIB;
    c.pages_per_block = 1536;
    c.capacity_bytes = 915 * MIB;
    struct sl_device_stats *stats;
    struct sl_engine *e = new_engine (&c, &stats);
    struct sl_ssd_status status;
    sl_ssd_model_status (sl_engine_model (e), &status);
    assert_true (status.steady_victim_valid_fraction > 0);
    model_check_ok (e);
    random_write_wa (e, stats, c.capacity_bytes, c.capacity_bytes / 4096 / 4);
    model_check_ok (e);
    sl_engine_free (e);
    free (stats);
  }
}

/* ------------------------------------------------------ buffer & flush -- */

static void
submit_one (struct sl_engine *e, struct sl_request *r, enum sl_op op, uint32_t flags,
            uint64_t offset, uint64_t length)
{
  memset (r, 0, sizeof *r);
  r->op = op;
  r->flags = flags;
  r->offset_bytes = offset;
  r->length_bytes = length;
  sl_engine_submit (e, r);
}

static void
run_until_complete (struct sl_engine *e, struct sl_request *const *rs, size_t n)
{
  for (;;) {
    bool all = true;
    for (size_t i = 0; i < n; i++)
      all = all && rs[i]->completion_known && rs[i]->completion_ns <= sl_engine_now_ns (e);
    if (all || !sl_engine_run_next (e))
      break;
  }
  for (size_t i = 0; i < n; i++)
    assert_true (rs[i]->completion_known);
}

/* A 4 KiB write then a FLUSH (or a FUA write), both at time 0.  Returns the
 * latencies. */
static void
write_then_sync (bool plp, bool fua, uint64_t *write_ns, uint64_t *sync_ns)
{
  struct sl_ssd_config c = small_config ();
  c.plp = plp;
  struct sl_device_stats *stats;
  struct sl_engine *e = new_engine (&c, &stats);
  assert_int_equal (sl_engine_model (e)->volatile_write_cache, !plp);
  struct sl_request w, s;
  submit_one (e, &w, SL_OP_WRITE, 0, 0, 4 * KIB);
  if (fua)
    submit_one (e, &s, SL_OP_WRITE, SL_REQUEST_FUA, 1 * MIB, 4 * KIB);
  else
    submit_one (e, &s, SL_OP_FLUSH, 0, 0, 0);
  struct sl_request *rs[] = { &w, &s };
  run_until_complete (e, rs, 2);
  *write_ns = w.completion_ns - w.arrival_ns;
  *sync_ns = s.completion_ns - s.arrival_ns;
  model_check_ok (e);
  sl_engine_free (e);
  free (stats);
}

static void
test_flush_semantics (void **state)
{
  (void) state;
  struct sl_ssd_config c = small_config ();
  uint64_t tprog = c.program_latency_ns, w, s;

  /* no power-loss protection: the write is buffered, FLUSH waits for NAND
   * (the half-full program unit is programmed: transfer + tPROG) */
  write_then_sync (false, false, &w, &s);
  assert_true (w < tprog / 10);
  assert_true (s >= tprog);
  assert_true (s < tprog + 200 * US);
  /* FUA without PLP completes once programmed */
  write_then_sync (false, true, &w, &s);
  assert_true (w < tprog / 10);
  assert_true (s >= tprog);
  /* with PLP neither waits */
  write_then_sync (true, false, &w, &s);
  assert_true (s < tprog / 10);
  write_then_sync (true, true, &w, &s);
  assert_true (s < tprog / 10);

  /* a FLUSH with nothing buffered does not wait either */
  c.plp = false;
  struct sl_device_stats *stats;
  struct sl_engine *e = new_engine (&c, &stats);
  struct sl_request f;
  submit_one (e, &f, SL_OP_FLUSH, 0, 0, 0);
  struct sl_request *rs[] = { &f };
  run_until_complete (e, rs, 1);
  assert_int_equal (f.completion_ns - f.arrival_ns, c.write_overhead_ns);
  sl_engine_free (e);
  free (stats);
}

/* Writes fill the buffer faster than the NAND drains it: they wait for
 * room, and throughput falls to what the dies program. */
static void
test_buffer_throttles (void **state)
{
  (void) state;
  struct sl_ssd_config c = small_config ();
  c.write_overhead_ns = 0;
  struct sl_device_stats *stats;
  struct sl_engine *e = new_engine (&c, &stats);
  struct test_driver d;
  uint64_t n = 900;             /* 56 MiB: less than the drive, no GC */
  driver_init (&d, e, c.capacity_bytes, 32, SL_OP_WRITE, TEST_SEQUENTIAL, 64 * KIB, n);
  test_driver_run (&d);
  double seconds = sl_engine_now_ns (e) / 1e9;
  double bytes_per_s = n * 64.0 * KIB / seconds;
  /* 4 dies, each 8 KiB per (transfer + tPROG); the channels are not the limit */
  double program_ns = 8192 / 200e6 * 1e9 + c.program_latency_ns;
  double nand_bytes_per_s = 4 * 8192 / (program_ns / 1e9);
  print_message ("sequential 64 KiB writes: %.1f MB/s, NAND programs %.1f MB/s\n",
                 bytes_per_s / 1e6, nand_bytes_per_s / 1e6);
  assert_within (bytes_per_s, nand_bytes_per_s, 0.05);
  assert_true (test_model_counter (stats, "writes_throttled") > 0);
  assert_true (test_model_counter (stats, "buffer_bytes") <= c.buffer_bytes);
  test_driver_free (&d);
  model_check_ok (e);
  sl_engine_free (e);
  free (stats);
}

static void
test_read_hits_buffer (void **state)
{
  (void) state;
  struct sl_ssd_config c = small_config ();
  struct sl_device_stats *stats;
  struct sl_engine *e = new_engine (&c, &stats);
  struct sl_request w, r;
  submit_one (e, &w, SL_OP_WRITE, 0, 40 * KIB, 4 * KIB);   /* half a program unit: stays */
  struct sl_request *ws[] = { &w };
  run_until_complete (e, ws, 1);
  submit_one (e, &r, SL_OP_READ, 0, 40 * KIB, 4 * KIB);
  struct sl_request *rs[] = { &r };
  run_until_complete (e, rs, 1);
  assert_int_equal (test_model_counter (stats, "buffer_hits"), 1);
  assert_int_equal (test_model_counter (stats, "nand_page_reads"), 0);
  assert_true (r.completion_ns - r.arrival_ns < c.read_latency_ns);
  /* an unwritten unit of a fresh drive is not read from NAND either */
  submit_one (e, &r, SL_OP_READ, 0, 1 * MIB, 4 * KIB);
  run_until_complete (e, rs, 1);
  assert_int_equal (test_model_counter (stats, "unmapped_reads"), 1);
  assert_int_equal (test_model_counter (stats, "nand_page_reads"), 0);
  sl_engine_free (e);
  free (stats);
}

static void
test_trim_unmaps (void **state)
{
  (void) state;
  struct sl_ssd_config c = small_config ();
  c.precondition = SL_SSD_STEADY;
  struct sl_device_stats *stats;
  struct sl_engine *e = new_engine (&c, &stats);
  struct sl_request r;
  struct sl_request *rs[] = { &r };
  submit_one (e, &r, SL_OP_READ, 0, 8 * MIB, 128 * KIB);
  run_until_complete (e, rs, 1);
  uint64_t reads = test_model_counter (stats, "nand_page_reads");
  /* 32 units striped a program unit (2 units) per die: 16 page reads */
  assert_int_equal (reads, 16);
  assert_true (r.completion_ns - r.arrival_ns >= c.read_latency_ns);
  submit_one (e, &r, SL_OP_TRIM, 0, 8 * MIB, 1 * MIB);
  run_until_complete (e, rs, 1);
  assert_int_equal (test_model_counter (stats, "trimmed_pages"), 256);
  submit_one (e, &r, SL_OP_READ, 0, 8 * MIB, 128 * KIB);
  run_until_complete (e, rs, 1);
  assert_int_equal (test_model_counter (stats, "nand_page_reads"), reads);
  assert_int_equal (test_model_counter (stats, "unmapped_reads"), 32);
  model_check_ok (e);
  struct sl_ssd_status status;
  sl_ssd_model_status (sl_engine_model (e), &status);
  assert_int_equal (status.exact_map_units, 256);        /* trimmed units are exact */
  sl_engine_free (e);
  free (stats);
}

/* SLC cache: sequential writes run at SLC speed until it is full. */
static void
test_slc_cache (void **state)
{
  (void) state;
  struct sl_ssd_config c = small_config ();
  c.slc_cache_bytes = 8 * MIB;
  c.slc_program_latency_ns = 100 * US;
  c.program_latency_ns = 1000 * US;
  c.write_overhead_ns = 0;
  struct sl_device_stats *stats;
  struct sl_engine *e = new_engine (&c, &stats);
  struct test_driver d;
  driver_init (&d, e, c.capacity_bytes, 32, SL_OP_WRITE, TEST_SEQUENTIAL, 64 * KIB, 64);
  test_driver_run (&d);                                         /* 4 MiB: in SLC */
  double fast = 4.0 * MIB / (sl_engine_now_ns (e) / 1e9);
  /* all of it programmed in SLC mode but what the buffer still holds */
  uint64_t slc = test_model_counter (stats, "slc_used_bytes");
  assert_true (slc >= 4 * MIB - c.buffer_bytes && slc <= 4 * MIB);
  test_driver_free (&d);
  driver_init (&d, e, c.capacity_bytes, 32, SL_OP_WRITE, TEST_SEQUENTIAL, 64 * KIB, 256);
  d.next_offset = 4 * MIB;
  test_driver_run (&d);                                         /* 16 MiB more: SLC fills */
  test_driver_free (&d);
  uint64_t t1 = sl_engine_now_ns (e);
  driver_init (&d, e, c.capacity_bytes, 32, SL_OP_WRITE, TEST_SEQUENTIAL, 64 * KIB, 128);
  d.next_offset = 20 * MIB;
  test_driver_run (&d);                                         /* 8 MiB at TLC speed */
  double slow = 8.0 * MIB / ((sl_engine_now_ns (e) - t1) / 1e9);
  print_message ("SLC cache: %.1f MB/s while it has room, %.1f MB/s once full\n",
                 fast / 1e6, slow / 1e6);
  assert_int_equal (test_model_counter (stats, "slc_used_bytes"), c.slc_cache_bytes);
  assert_true (fast > 4 * slow);
  /* TLC: 4 dies x 8 KiB per (transfer + tPROG) */
  assert_within (slow, 4 * 8192 / ((8192 / 200e6) + 1e-3), 0.10);
  test_driver_free (&d);
  sl_engine_free (e);
  free (stats);
}

/* --------------------------------------------------------- timelines -- */

struct intervals {
  uint64_t (*items)[3];        /* resource index, start, end */
  size_t count, capacity;
};

static void
record_interval (void *arg, int resource, uint32_t index, uint64_t start, uint64_t end)
{
  struct intervals *set = &((struct intervals *) arg)[resource];
  if (set->count == set->capacity) {
    set->capacity = set->capacity ? 2 * set->capacity : 4096;
    set->items = realloc (set->items, set->capacity * sizeof *set->items);
    assert_non_null (set->items);
  }
  assert_true (end >= start);
  set->items[set->count][0] = index;
  set->items[set->count][1] = start;
  set->items[set->count][2] = end;
  set->count++;
}

static int
compare_interval (const void *a, const void *b)
{
  const uint64_t *x = a, *y = b;
  for (int i = 0; i < 3; i++)
    if (x[i] != y[i])
      return x[i] < y[i] ? -1 : 1;
  return 0;
}

static void
assert_no_overlap (struct intervals *set, const char *what, uint32_t resources)
{
  qsort (set->items, set->count, sizeof *set->items, compare_interval);
  uint32_t used = 0;
  for (size_t i = 0; i < set->count; i++) {
    if (i == 0 || set->items[i][0] != set->items[i - 1][0]) {
      used++;
      continue;
    }
    if (set->items[i][1] < set->items[i - 1][2])
      fail_msg ("%s %" PRIu64 ": [%" PRIu64 ", %" PRIu64 ") overlaps [%" PRIu64 ", %" PRIu64 ")",
                what, set->items[i][0], set->items[i][1], set->items[i][2],
                set->items[i - 1][1], set->items[i - 1][2]);
  }
  assert_int_equal (used, resources);          /* every die / channel worked */
}

static void
test_timelines_never_overlap (void **state)
{
  (void) state;
  struct sl_ssd_config c = small_config ();
  c.precondition = SL_SSD_STEADY;
  c.over_provisioning_pct = 12;                /* plenty of GC */
  c.gc_low_watermark_pct = 2;
  c.gc_high_watermark_pct = 4;
  struct sl_device_stats *stats;
  struct sl_engine *e = new_engine (&c, &stats);
  struct intervals sets[2] = { { 0 }, { 0 } };
  sl_ssd_model_set_interval_hook (sl_engine_model (e), record_interval, sets);
  struct test_driver d;
  driver_init (&d, e, c.capacity_bytes, 16, SL_OP_READ, TEST_RANDOM, 4 * KIB, 40000);
  d.read_pct = 50;
  test_driver_run (&d);
  test_driver_free (&d);
  driver_init (&d, e, c.capacity_bytes, 8, SL_OP_READ, TEST_SEQUENTIAL, 128 * KIB, 500);
  d.read_pct = 70;
  test_driver_run (&d);
  test_driver_free (&d);
  while (sl_engine_run_next (e))             /* background work to its end too */
    ;
  assert_true (test_model_counter (stats, "blocks_erased") > 0);
  assert_true (sets[0].count > 40000 && sets[1].count > 40000);
  assert_no_overlap (&sets[0], "die", 4);
  assert_no_overlap (&sets[1], "channel", 2);
  model_check_ok (e);
  free (sets[0].items);
  free (sets[1].items);
  sl_engine_free (e);
  free (stats);
}

/* ------------------------------------------------------------ presets -- */

static void
build_preset (const char *name, const char *precondition, struct sl_ssd_config *c)
{
  struct sl_device_builder b;
  sl_device_builder_init (&b, &sl_ssd_kind);
  char err[1024] = "";
  if (sl_device_builder_add (&b, "preset", name, err, sizeof err) != 0
      || sl_device_builder_add (&b, "precondition", precondition, err, sizeof err) != 0
      || sl_device_builder_build (&b, c, err, sizeof err) != 0)
    fail_msg ("preset %s: %s", name, err);
  sl_device_builder_free (&b);
}

static void
test_every_ssd_preset_builds (void **state)
{
  (void) state;
  static const char *const expected[] = {
    "intel-s3700-400g", "intel-s3500-800g", "intel-p3700-400g", "micron-5100max-960g",
    "micron-5100eco-1920g", "micron-7300pro-3840g", "samsung-840evo-120g",
  };
  char names[1024];
  sl_preset_names ("ssd", names, sizeof names);
  assert_string_equal (names, "intel-s3700-400g, intel-s3500-800g, intel-p3700-400g, "
                       "micron-5100max-960g, micron-5100eco-1920g, micron-7300pro-3840g, "
                       "samsung-840evo-120g");
  for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
    const struct sl_preset *p = sl_preset_find ("ssd", expected[i]);
    assert_non_null (p);
    assert_true (strlen (p->source) > 20 && strlen (p->fitted) > 20);
    /* every drive figure named exactly once; run-state keys left out */
    for (size_t k = 0; k < sl_ssd_param_count; k++) {
      const char *key = sl_ssd_params[k].key;
      char needle[64];
      snprintf (needle, sizeof needle, "%s=", key);
      int hits = 0;
      for (const char *s = p->params; (s = strstr (s, needle)) != NULL; s++)
        if (s == p->params || s[-1] == ' ')
          hits++;
      bool run_state = strcmp (key, "precondition") == 0 || strcmp (key, "exact-map-size") == 0;
      if (hits != (run_state ? 0 : 1))
        fail_msg ("preset %s: key %s appears %d times", p->name, key, hits);
    }
    struct sl_ssd_config c;
    build_preset (p->name, "steady", &c);
    char err[512] = "";
    struct sl_model model = sl_ssd_kind.create (&c, err, sizeof err);
    if (model.ops == NULL)
      fail_msg ("preset %s: %s", p->name, err);
    assert_int_equal (model.volatile_write_cache, !c.plp);
    struct sl_ssd_status status;
    sl_ssd_model_status (&model, &status);
    struct sl_ssd_geometry g = geometry_of (&c);
    print_message ("%-22s %3" PRIu32 " dies, %6.1f MiB blocks, steady WA %.2f, state "
                   "%.1f MiB (at most %.1f MiB)\n", p->name, g.dies,
                   g.block_bytes / (double) MIB, 1 / (1 - status.steady_victim_valid_fraction),
                   status.state_bytes / (double) MIB, status.state_bytes_limit / (double) MIB);
    assert_true (status.state_bytes_limit < 512 * MIB);  /* well under 2 GiB */
    assert_true (status.state_bytes <= status.state_bytes_limit);
    char check[512] = "";
    if (sl_ssd_model_check (&model, check, sizeof check) != 0)
      fail_msg ("preset %s: %s", p->name, check);
    model.ops->destroy (model.self);
  }
  struct sl_ssd_config c;
  build_preset ("samsung-840evo-120g", "fob", &c);
  assert_int_equal (c.capacity_bytes, 234441648ull * 512);
  assert_int_equal (c.slc_cache_bytes, 3 * GIB);
  assert_false (c.plp);
  build_preset ("micron-7300pro-3840g", "fob", &c);
  assert_int_equal (c.capacity_bytes, 7501476528ull * 512);
  assert_int_equal (c.interface, SL_SSD_NVME);
}

/* ---------------------------------------------- presets at smaller sizes -- */

struct notes {
  int count;
  char last[1024];
};

static void
capture_note (void *arg, const char *line)
{
  struct notes *n = arg;
  n->count++;
  snprintf (n->last, sizeof n->last, "%s", line);
}

/* Builds preset + "KEY=VALUE" pairs; 0 or -1 with err; notes captured. */
static int
build_with (const char *preset, const char *const *pairs, struct sl_ssd_config *c,
            struct notes *notes, char *err, size_t err_bytes)
{
  struct sl_device_builder b;
  sl_device_builder_init (&b, &sl_ssd_kind);
  b.note = capture_note;
  b.note_arg = notes;
  memset (notes, 0, sizeof *notes);
  int r = sl_device_builder_add (&b, "preset", preset, err, err_bytes);
  for (size_t i = 0; r == 0 && pairs[i] != NULL; i++) {
    char key[64];
    const char *eq = strchr (pairs[i], '=');
    snprintf (key, sizeof key, "%.*s", (int) (eq - pairs[i]), pairs[i]);
    r = sl_device_builder_add (&b, key, eq + 1, err, err_bytes);
  }
  if (r == 0)
    r = sl_device_builder_build (&b, c, err, err_bytes);
  sl_device_builder_free (&b);
  return r;
}

static double
steady_write_amplification (const struct sl_ssd_config *c)
{
  char err[512] = "";
  struct sl_model model = sl_ssd_kind.create (c, err, sizeof err);
  if (model.ops == NULL)
    fail_msg ("create: %s", err);
  struct sl_ssd_status status;
  sl_ssd_model_status (&model, &status);
  char check[512] = "";
  if (sl_ssd_model_check (&model, check, sizeof check) != 0)
    fail_msg ("check: %s", check);
  model.ops->destroy (model.self);
  return 1 / (1 - status.steady_victim_valid_fraction);
}

/* The scaled drive is the preset's but for the dies, the blocks and the
 * SLC cache: same pages, planes, timing, spare area, controller. */
static void
assert_same_drive (const struct sl_ssd_config *c, const struct sl_ssd_config *p,
                   const char *what)
{
  if (c->page_bytes != p->page_bytes || c->planes_per_die != p->planes_per_die
      || c->read_latency_ns != p->read_latency_ns
      || c->program_latency_ns != p->program_latency_ns
      || c->erase_latency_ns != p->erase_latency_ns
      || c->slc_program_latency_ns != p->slc_program_latency_ns
      || c->channel_rate_bytes_per_s != p->channel_rate_bytes_per_s
      || c->over_provisioning_pct != p->over_provisioning_pct
      || c->gc_low_watermark_pct != p->gc_low_watermark_pct
      || c->gc_high_watermark_pct != p->gc_high_watermark_pct
      || c->buffer_bytes != p->buffer_bytes || c->plp != p->plp
      || c->interface != p->interface || c->queue_depth != p->queue_depth
      || c->read_overhead_ns != p->read_overhead_ns
      || c->write_overhead_ns != p->write_overhead_ns
      || c->controller_rate_bytes_per_s != p->controller_rate_bytes_per_s)
    fail_msg ("%s: a figure other than the geometry changed", what);
  if (c->channels > p->channels || c->dies_per_channel > p->dies_per_channel
      || c->pages_per_block > p->pages_per_block || c->pages_per_block < 32)
    fail_msg ("%s: geometry grew or went below 32 pages per block", what);
}

static void
test_presets_scale_to_small_sizes (void **state)
{
  (void) state;
  /* 1234567168 = 4096 x 301408: not a round size */
  static const char *const sizes[] = { "256M", "1G", "4G", "1234567168" };
  for (size_t i = 0; sl_preset_at (i) != NULL; i++) {
    const struct sl_preset *preset = sl_preset_at (i);
    if (strcmp (preset->kind, "ssd") != 0)
      continue;
    struct sl_ssd_config p, c;
    build_preset (preset->name, "steady", &p);
    double preset_wa = steady_write_amplification (&p);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
      char what[128], size_pair[32], err[1024] = "";
      snprintf (what, sizeof what, "preset=%s size=%s", preset->name, sizes[k]);
      snprintf (size_pair, sizeof size_pair, "size=%s", sizes[k]);
      struct notes notes;
      if (build_with (preset->name, (const char *[]) { size_pair, NULL }, &c, &notes, err,
                      sizeof err) != 0)
        fail_msg ("%s: %s", what, err);
      assert_same_drive (&c, &p, what);
      struct sl_ssd_geometry g = geometry_of (&c);
      /* the note names the chosen geometry in the keys' own spelling */
      char expected[256];
      snprintf (expected, sizeof expected, "preset=%s scaled to size=%s: channels=%" PRIu32
                " dies-per-channel=%" PRIu32 " pages-per-block=%" PRIu32 " (%" PRIu32
                " of the preset's %" PRIu32 " dies", preset->name, sizes[k], c.channels,
                c.dies_per_channel, c.pages_per_block, g.dies,
                p.channels * p.dies_per_channel);
      if (notes.count != 1 || strstr (notes.last, expected) == NULL)
        fail_msg ("%s: %d notes, last '%s', expected '%s'", what, notes.count, notes.last,
                  expected);
      assert_non_null (strstr (notes.last, "peak IOPS below the datasheet's"));
      if (p.slc_cache_bytes > 0) {
        double share = (double) c.capacity_bytes / p.capacity_bytes;
        assert_within ((double) c.slc_cache_bytes, p.slc_cache_bytes * share, 0.001);
        assert_non_null (strstr (notes.last, "slc-cache-size="));
      }
      /* GC keeps 85 % of its spare area: write amplification within 30 % of
       * the preset's (fewer, shorter blocks also change how greedy GC does) */
      double wa = steady_write_amplification (&c);
      print_message ("%-44s %2" PRIu32 " x %" PRIu32 " dies, %4" PRIu32 " pages per block, "
                     "%4" PRIu32 " blocks per die, steady WA %.2f (preset %.2f)\n", what,
                     c.channels, c.dies_per_channel, c.pages_per_block, g.blocks_per_die,
                     wa, preset_wa);
      if (wa > 1.3 * preset_wa)
        fail_msg ("%s: steady write amplification %.2f, the preset's %.2f", what, wa,
                  preset_wa);
    }
  }
}

static void
test_preset_scaling_keeps_larger_and_fitting_sizes (void **state)
{
  (void) state;
  struct sl_ssd_config p, c;
  build_preset ("intel-s3700-400g", "steady", &p);
  static const char *const sizes[] = { "800G", "200G", "400088457216" };
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    char size_pair[32], err[1024] = "";
    snprintf (size_pair, sizeof size_pair, "size=%s", sizes[k]);
    struct notes notes;
    if (build_with ("intel-s3700-400g", (const char *[]) { size_pair, NULL }, &c, &notes,
                    err, sizeof err) != 0)
      fail_msg ("size=%s: %s", sizes[k], err);
    assert_int_equal (notes.count, 0);
    assert_int_equal (c.channels, p.channels);
    assert_int_equal (c.dies_per_channel, p.dies_per_channel);
    assert_int_equal (c.pages_per_block, p.pages_per_block);
  }
  /* the user's spare area is the one kept */
  struct notes notes;
  char err[1024] = "";
  if (build_with ("intel-s3700-400g", (const char *[]) { "size=1G",
                  "over-provisioning-pct=50", NULL }, &c, &notes, err, sizeof err) != 0)
    fail_msg ("over-provisioning-pct=50: %s", err);
  assert_true (c.over_provisioning_pct == 50);
  assert_non_null (strstr (notes.last, "over-provisioning-pct=50 kept"));
  /* an SLC cache alone is scaled at a size the geometry fits */
  if (build_with ("samsung-840evo-120g", (const char *[]) { "size=60000002048", NULL }, &c,
                  &notes, err, sizeof err) != 0)
    fail_msg ("840evo size=60000002048: %s", err);
  assert_int_equal (c.channels, 4);
  assert_int_equal (notes.count, 1);
  assert_non_null (strstr (notes.last, "scaled to size=60000002048: slc-cache-size="));
  assert_null (strstr (notes.last, "channels="));
}

static void
expect_build_error (const char *preset, const char *const *pairs, const char *const *needles)
{
  struct sl_ssd_config c;
  struct notes notes;
  char err[1024] = "";
  assert_int_equal (build_with (preset, pairs, &c, &notes, err, sizeof err), -1);
  assert_int_equal (notes.count, 0);            /* nothing was built: no note */
  assert_null (strchr (err, '\n'));
  for (size_t i = 0; needles[i] != NULL; i++)
    if (strstr (err, needles[i]) == NULL)
      fail_msg ("%s: error '%s' lacks '%s'", preset, err, needles[i]);
}

static void
test_preset_scaling_refusals (void **state)
{
  (void) state;
  /* the user's own geometry is used as given: no scaling, the old error */
  static const char *const geometry_keys[] = {
    "channels=8", "dies-per-channel=8", "planes-per-die=2", "page-size=8k",
    "pages-per-block=256",
  };
  for (size_t i = 0; i < sizeof geometry_keys / sizeof geometry_keys[0]; i++)
    expect_build_error ("intel-s3700-400g",
                        (const char *[]) { "size=1G", geometry_keys[i], NULL },
                        (const char *[]) { "size=1073741824", "does not fit the geometry",
                                           "64 dies", NULL });
  /* size= without a preset: the defaults are not scaled either */
  struct sl_device_builder b;
  sl_device_builder_init (&b, &sl_ssd_kind);
  struct sl_ssd_config c;
  char err[1024] = "";
  assert_int_equal (sl_device_builder_add (&b, "size", "1G", err, sizeof err), 0);
  assert_int_equal (sl_device_builder_build (&b, &c, err, sizeof err), -1);
  assert_non_null (strstr (err, "does not fit the geometry"));
  sl_device_builder_free (&b);

  /* too small for one die with the shortest blocks: says which size fits */
  expect_build_error ("micron-7300pro-3840g", (const char *[]) { "size=16M", NULL },
                      (const char *[]) { "preset=micron-7300pro-3840g: size=16777216: too "
                                         "small even scaled down to one die", "channels=1 "
                                         "dies-per-channel=1 pages-per-block=32",
                                         "over-provisioning-pct=14.5", "M fits", NULL });
  struct notes notes;
  build_with ("micron-7300pro-3840g", (const char *[]) { "size=16M", NULL }, &c, &notes,
              err, sizeof err);
  const char *hint = strstr (err, "; size=");
  assert_non_null (hint);
  char size_pair[32];
  snprintf (size_pair, sizeof size_pair, "size=%.*s", (int) strcspn (hint + 7, " "), hint + 7);
  if (build_with ("micron-7300pro-3840g", (const char *[]) { size_pair, NULL }, &c, &notes,
                  err, sizeof err) != 0)
    fail_msg ("the suggested %s: %s", size_pair, err);
  /* a spare area too thin for any size */
  expect_build_error ("intel-s3700-400g",
                      (const char *[]) { "size=1G", "over-provisioning-pct=1", NULL },
                      (const char *[]) { "size=1073741824: too small",
                                         "raise over-provisioning-pct", NULL });
}

/* One datasheet figure end to end (the bench covers them all). */
static void
test_s3700_datasheet (void **state)
{
  (void) state;
  struct sl_ssd_config c;
  build_preset ("intel-s3700-400g", "steady", &c);
  struct sl_device_stats *stats;
  struct sl_engine *e = new_engine (&c, &stats);
  struct test_driver d;
  driver_init (&d, e, c.capacity_bytes, 32, SL_OP_READ, TEST_RANDOM, 4 * KIB, 50000);
  test_driver_run (&d);
  assert_within (d.completed / (sl_engine_now_ns (e) / 1e9), 75000, 0.10);
  test_driver_free (&d);
  uint64_t t0 = sl_engine_now_ns (e);
  driver_init (&d, e, c.capacity_bytes, 32, SL_OP_WRITE, TEST_RANDOM, 4 * KIB, 30000);
  test_driver_run (&d);
  assert_within (d.completed / ((sl_engine_now_ns (e) - t0) / 1e9), 36000, 0.10);
  test_driver_free (&d);
  sl_engine_free (e);
  free (stats);
}

/* A host queue deeper than the drive's NCQ waits in the model; the drive
 * still reads at its datasheet rate and a read load never makes it
 * program NAND (background GC waits for an idle host, and a host reading
 * at QD 256 is not idle). */
static void
test_deep_host_queue_reads_at_ncq_rate (void **state)
{
  (void) state;
  struct sl_ssd_config c;
  build_preset ("intel-s3700-400g", "steady", &c);
  double iops[2];
  unsigned depths[2] = { 32, 256 };
  for (int i = 0; i < 2; i++) {
    struct sl_device_stats *stats;
    struct sl_engine *e = new_engine (&c, &stats);
    struct test_driver d;
    driver_init (&d, e, c.capacity_bytes, depths[i], SL_OP_READ, TEST_RANDOM, 4 * KIB, 100000);
    test_driver_run (&d);
    iops[i] = d.completed / (sl_engine_now_ns (e) / 1e9);
    assert_int_equal (test_model_counter (stats, "nand_pages_programmed"), 0);
    test_driver_free (&d);
    sl_engine_free (e);
    free (stats);
  }
  assert_within (iops[1], iops[0], 0.02);
}

/* -------------------------------------------------------------- speed -- */

static void
test_speed_report (void **state)
{
  (void) state;
  struct sl_ssd_config c;
  build_preset ("intel-s3700-400g", "steady", &c);
  struct sl_device_stats *stats;
  struct sl_engine *e = new_engine (&c, &stats);
  struct test_driver d;
  const uint64_t n = 1000000;
  driver_init (&d, e, c.capacity_bytes, 32, SL_OP_READ, TEST_RANDOM, 4 * KIB, n);
  struct timespec t0, t1;
  clock_gettime (CLOCK_MONOTONIC, &t0);
  test_driver_run (&d);
  clock_gettime (CLOCK_MONOTONIC, &t1);
  double seconds = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
  print_message ("simulator speed, QD32 4K random reads (intel-s3700-400g steady): "
                 "%.2f million simulated I/Os per second\n", n / seconds / 1e6);
  test_driver_free (&d);
  sl_engine_free (e);
  free (stats);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_params_table),
    cmocka_unit_test (test_deep_host_queue_reads_at_ncq_rate),
    cmocka_unit_test (test_builder_values),
    cmocka_unit_test (test_validate_rejects),
    cmocka_unit_test (test_geometry),
    cmocka_unit_test (test_greedy_fraction),
    cmocka_unit_test (test_ftl_overwrite_trim_consistent),
    cmocka_unit_test (test_ftl_statistical_consistent),
    cmocka_unit_test (test_gc_reclaims_never_loses),
    cmocka_unit_test (test_ftl_log_layout_state),
    cmocka_unit_test (test_ftl_log_written_in_order_moves_nothing),
    cmocka_unit_test (test_ftl_log_layout_statistical_consistent),
    cmocka_unit_test (test_memo_keeps_by_key),
    cmocka_unit_test (test_ftl_written_region_settles_after_its_fill),
    cmocka_unit_test (test_ftl_written_region_layout_at_scale),
    cmocka_unit_test (test_wa_rises_as_op_falls),
    cmocka_unit_test (test_log_layout_through_the_model),
    cmocka_unit_test (test_steady_precondition_immediate),
    cmocka_unit_test (test_steady_precondition_few_large_blocks),
    cmocka_unit_test (test_flush_semantics),
    cmocka_unit_test (test_buffer_throttles),
    cmocka_unit_test (test_read_hits_buffer),
    cmocka_unit_test (test_trim_unmaps),
    cmocka_unit_test (test_slc_cache),
    cmocka_unit_test (test_timelines_never_overlap),
    cmocka_unit_test (test_every_ssd_preset_builds),
    cmocka_unit_test (test_presets_scale_to_small_sizes),
    cmocka_unit_test (test_preset_scaling_keeps_larger_and_fitting_sizes),
    cmocka_unit_test (test_preset_scaling_refusals),
    cmocka_unit_test (test_s3700_datasheet),
    cmocka_unit_test (test_speed_report),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
