/* ssd_params.c — the SSD's parameters: key table, defaults, validation, and
 * the device-kind record that ties them to the model (ssd.c).
 *
 * The parameters are a drive's datasheet figures and its NAND's (defaults:
 * the intel-s3700-400g preset).  precondition and exact-map-size describe
 * the run rather than the drive; presets leave them at their defaults.
 */
#define _GNU_SOURCE
#include "ssd.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "device/device.h"
#include "core/units.h"


#define FIELD(f) offsetof (struct sl_ssd_config, f)

const struct sl_param sl_ssd_params[] = {
  { "size", SL_PARAM_CAPACITY_BYTES, FIELD (capacity_bytes), 16.0 * MIB, 16.0 * TIB,
    "logical (user) capacity in bytes, a multiple of 4096" },
  { "channels", SL_PARAM_COUNT, FIELD (channels), 1, 64,
    "flash channels (buses) from the controller to the NAND" },
  { "dies-per-channel", SL_PARAM_COUNT, FIELD (dies_per_channel), 1, 64,
    "NAND dies on each channel (each works on one operation at a time)" },
  { "planes-per-die", SL_PARAM_COUNT, FIELD (planes_per_die), 1, 16,
    "planes per die, operated together (multi-plane read, program, erase)" },
  { "page-size", SL_PARAM_SIZE_BYTES, FIELD (page_bytes), 4.0 * KIB, 1.0 * MIB,
    "NAND page size in bytes (per plane), a multiple of 4096" },
  { "pages-per-block", SL_PARAM_COUNT, FIELD (pages_per_block), 0, 65536,
    "pages in an erase block (per plane)" },
  { "read-latency-us", SL_PARAM_TIME_US, FIELD (read_latency_ns), 1, 10000,
    "page read time tR (array to the die's page register)" },
  { "program-latency-us", SL_PARAM_TIME_US, FIELD (program_latency_ns), 10, 100000,
    "page program time tPROG (multi-plane)" },
  { "erase-latency-ms", SL_PARAM_TIME_MS, FIELD (erase_latency_ns), 0.1, 100,
    "block erase time tBERS" },
  { "channel-mb-s", SL_PARAM_RATE_MB_S, FIELD (channel_rate_bytes_per_s), 1, 10000,
    "channel transfer rate (ONFI/Toggle: MT/s x bus width in bytes)" },
  { "over-provisioning-pct", SL_PARAM_PERCENT, FIELD (over_provisioning_pct), 0, 1000,
    "physical flash beyond the logical capacity, in percent of it (> 0)" },
  { "gc-low-watermark-pct", SL_PARAM_PERCENT, FIELD (gc_low_watermark_pct), 0, 50,
    "garbage collection starts when a die's free blocks fall below this share" },
  { "gc-high-watermark-pct", SL_PARAM_PERCENT, FIELD (gc_high_watermark_pct), 0, 50,
    "garbage collection stops when a die's free blocks reach this share" },
  /* a size, not a capacity: the DRAM buffer stages program units for the
   * dies, sized to the drive's parallelism, not its data; a lab at a sweep's
   * scale keeps it whole (scaled, it would not hold one program unit) */
  { "buffer-size", SL_PARAM_SIZE_BYTES, FIELD (buffer_bytes), 0, 64.0 * GIB,
    "controller write buffer (DRAM); writes complete once in it" },
  { "plp", SL_PARAM_ON_OFF, FIELD (plp), 0, 1,
    "power-loss protection: buffered writes are durable, FLUSH does not wait" },
  { "slc-cache-size", SL_PARAM_CAPACITY_BYTES, FIELD (slc_cache_bytes), 0, 16.0 * TIB,
    "SLC write cache (TurboWrite and the like) in bytes; 0 for none" },
  { "slc-program-latency-us", SL_PARAM_TIME_US, FIELD (slc_program_latency_ns), 1, 100000,
    "page program time in SLC mode" },
  { "interface", SL_PARAM_CHOICE, FIELD (interface), 0, 1,
    "sata|nvme: host interface: SATA 6 Gb/s with NCQ, or NVMe over PCIe 3.0" },
  { "pcie-lanes", SL_PARAM_COUNT, FIELD (pcie_lanes), 1, 16,
    "PCIe 3.0 lanes (interface=nvme), 985 MB/s each" },
  { "queue-depth", SL_PARAM_COUNT, FIELD (queue_depth), 1, 65535,
    "commands the drive accepts at once (NCQ: at most 32)" },
  { "read-overhead-us", SL_PARAM_TIME_US, FIELD (read_overhead_ns), 0, 10000,
    "controller firmware time per read command (serialised: the IOPS ceiling)" },
  { "write-overhead-us", SL_PARAM_TIME_US, FIELD (write_overhead_ns), 0, 10000,
    "controller firmware time per write, flush or trim command" },
  { "controller-mb-s", SL_PARAM_RATE_MB_S, FIELD (controller_rate_bytes_per_s), 0, 100000,
    "controller data path rate (DMA, ECC), serialised with the overheads; 0: unlimited" },
  { "precondition", SL_PARAM_CHOICE, FIELD (precondition), 0, 1,
    "fob|steady: drive state at start: fresh out of box, or after long random overwrite" },
  { "exact-map-size", SL_PARAM_SIZE_BYTES, FIELD (exact_map_bytes), 1.0 * MIB, 16.0 * TIB,
    "data whose 4 KiB mapping the model tracks exactly (memory: ~32 bytes per 4 KiB)" },
};

#define SSD_PARAM_COUNT (sizeof sl_ssd_params / sizeof sl_ssd_params[0])
const size_t sl_ssd_param_count = SSD_PARAM_COUNT;

void
sl_ssd_config_defaults (struct sl_ssd_config *c)
{
  /* intel-s3700-400g (presets.c has the sources and what is fitted) */
  *c = (struct sl_ssd_config) {
    .capacity_bytes = 400088457216ull,
    .channels = 8,
    .dies_per_channel = 8,
    .planes_per_die = 2,
    .page_bytes = 8 * KIB,
    .pages_per_block = 256,
    .read_latency_ns = 50000,
    .program_latency_ns = 1300000,
    .erase_latency_ns = 3000000,
    .channel_rate_bytes_per_s = 200000000,
    .over_provisioning_pct = 32,
    .gc_low_watermark_pct = 2,
    .gc_high_watermark_pct = 4,
    .buffer_bytes = 16 * MIB,
    .plp = true,
    .slc_cache_bytes = 0,
    .slc_program_latency_ns = 300000,
    .interface = SL_SSD_SATA,
    .pcie_lanes = 4,
    .queue_depth = 32,
    .read_overhead_ns = 5300,
    .write_overhead_ns = 19600,
    .controller_rate_bytes_per_s = 500000000,
    .precondition = SL_SSD_STEADY,
    .exact_map_bytes = 16 * GIB,
  };
}

int
sl_ssd_config_validate (const struct sl_ssd_config *c, char *err, size_t err_bytes)
{
  if (sl_params_check_ranges (sl_ssd_params, SSD_PARAM_COUNT, c, err, err_bytes) < 0)
    return -1;
  if (c->gc_high_watermark_pct <= c->gc_low_watermark_pct) {
    snprintf (err, err_bytes, "gc-high-watermark-pct=%g: must be above "
              "gc-low-watermark-pct=%g (GC runs from the low mark up to the high one)",
              c->gc_high_watermark_pct, c->gc_low_watermark_pct);
    return -1;
  }
  struct sl_ssd_geometry g;
  if (sl_ssd_geometry_build (c, &g, err, err_bytes) < 0)
    return -1;
  uint64_t program_bytes = (uint64_t) g.program_units * SL_SSD_UNIT_BYTES;
  if (c->buffer_bytes > c->capacity_bytes) {
    snprintf (err, err_bytes, "buffer-size=%" PRIu64 ": larger than size=%" PRIu64,
              c->buffer_bytes, c->capacity_bytes);
    return -1;
  }
  if (c->buffer_bytes < program_bytes) {
    snprintf (err, err_bytes, "buffer-size=%" PRIu64 ": must hold at least one program "
              "unit (planes-per-die x page-size = %" PRIu64 " bytes)", c->buffer_bytes,
              program_bytes);
    return -1;
  }
  if (c->slc_cache_bytes > 0) {
    if (c->slc_cache_bytes > c->capacity_bytes) {
      snprintf (err, err_bytes, "slc-cache-size=%" PRIu64 ": larger than size=%" PRIu64,
                c->slc_cache_bytes, c->capacity_bytes);
      return -1;
    }
    if (c->slc_program_latency_ns >= c->program_latency_ns) {
      snprintf (err, err_bytes, "slc-program-latency-us=%g: must be below "
                "program-latency-us=%g (SLC mode programs faster)",
                c->slc_program_latency_ns / 1e3, c->program_latency_ns / 1e3);
      return -1;
    }
  }
  if (c->interface == SL_SSD_SATA && c->queue_depth > 32) {
    snprintf (err, err_bytes, "queue-depth=%" PRIu32 ": SATA NCQ holds at most 32 commands "
              "(interface=sata)", c->queue_depth);
    return -1;
  }
  return 0;
}

/* ================================================ a preset at a smaller size == */

/* The NAND geometry's keys: a user who sets one chose the geometry, which
 * is then checked as given and never scaled. */
static const char *const geometry_keys[] = {
  "channels", "dies-per-channel", "planes-per-die", "page-size", "pages-per-block",
};

static bool
user_set_geometry (const struct sl_device_builder *b)
{
  for (size_t i = 0; i < sizeof geometry_keys / sizeof geometry_keys[0]; i++)
    if (sl_device_builder_value (b, geometry_keys[i]) != NULL)
      return true;
  return false;
}

/* The SLC cache is a share of the flash run in SLC mode: a smaller drive
 * keeps the preset's share (at least one 4 KiB unit, so it still has one).
 * false when there is no cache to scale. */
static bool
scale_slc_cache (struct sl_ssd_config *c, const struct sl_ssd_config *preset)
{
  if (preset->slc_cache_bytes == 0)
    return false;
  double share = (double) c->capacity_bytes / (double) preset->capacity_bytes;
  uint64_t bytes = (uint64_t) ((double) preset->slc_cache_bytes * share);
  bytes -= bytes % SL_SSD_UNIT_BYTES;
  c->slc_cache_bytes = bytes > 0 ? bytes : SL_SSD_UNIT_BYTES;
  return true;
}

static bool
geometry_changed (const struct sl_ssd_config *a, const struct sl_ssd_config *b)
{
  return a->channels != b->channels || a->dies_per_channel != b->dies_per_channel
    || a->pages_per_block != b->pages_per_block;
}

/* "1536 KiB", "4 MiB" */
static void
format_kib_or_mib (uint64_t bytes, char *out, size_t out_bytes)
{
  if (bytes % MIB == 0)
    snprintf (out, out_bytes, "%" PRIu64 " MiB", (uint64_t) (bytes / MIB));
  else
    snprintf (out, out_bytes, "%" PRIu64 " KiB", (uint64_t) (bytes / KIB));
}

/* The scaled geometry as the keys that set it, and what it costs. */
static void
describe_geometry (const struct sl_ssd_config *c, uint32_t preset_dies, char *out,
                   size_t out_bytes)
{
  struct sl_ssd_geometry g;
  char err[512], block[32];
  if (sl_ssd_geometry_build (c, &g, err, sizeof err) != 0) {
    snprintf (out, out_bytes, "%.200s", err);    /* not reached: scaling made it fit */
    return;
  }
  format_kib_or_mib (g.block_bytes, block, sizeof block);
  snprintf (out, out_bytes, "channels=%" PRIu32 " dies-per-channel=%" PRIu32
            " pages-per-block=%" PRIu32 " (%" PRIu32 " of the preset's %" PRIu32 " dies, %"
            PRIu32 " blocks of %s each%s)", c->channels, c->dies_per_channel,
            c->pages_per_block, g.dies, preset_dies, g.blocks_per_die, block,
            g.dies < preset_dies ? "; fewer dies: peak IOPS below the datasheet's" : "");
}

/* "preset=P scaled to size=S: KEY=VALUE ... (what it costs); what is kept" */
static void
write_scale_note (const struct sl_device_builder *b, const struct sl_ssd_config *c,
                  uint32_t preset_dies, bool geometry_scaled, bool slc_scaled,
                  char *note, size_t note_bytes)
{
  char geometry[320] = "", slc[64] = "";
  if (geometry_scaled)
    describe_geometry (c, preset_dies, geometry, sizeof geometry);
  if (slc_scaled)
    snprintf (slc, sizeof slc, "%sslc-cache-size=%" PRIu64 " (the preset's share of size)",
              geometry_scaled ? ", " : "", c->slc_cache_bytes);
  snprintf (note, note_bytes, "preset=%s scaled to size=%s: %s%s; page-size, planes, NAND "
            "timings and over-provisioning-pct=%g kept", b->preset,
            sl_device_builder_value (b, "size"), geometry, slc, c->over_provisioning_pct);
}

/* A preset at a smaller size= keeps its dies' timing and its spare area:
 * the flash shrinks (sl_ssd_geometry_scale), and the SLC cache with it.
 * A larger size only gives every die more blocks, as it always did. */
static int
kind_fit_preset_size (void *config, const void *preset_config,
                      const struct sl_device_builder *b, char *note, size_t note_bytes,
                      char *err, size_t err_bytes)
{
  struct sl_ssd_config *c = config;
  const struct sl_ssd_config *preset = preset_config;
  note[0] = '\0';
  if (c->capacity_bytes >= preset->capacity_bytes)
    return 0;
  bool slc_scaled = sl_device_builder_value (b, "slc-cache-size") == NULL
    && scale_slc_cache (c, preset);
  struct sl_ssd_config before = *c;
  if (!user_set_geometry (b)) {
    char reason[512];
    if (sl_ssd_geometry_scale (c, reason, sizeof reason) != 0) {
      snprintf (err, err_bytes, "preset=%s: %s", b->preset, reason);
      return -1;
    }
  }
  bool geometry_scaled = geometry_changed (c, &before);
  if (slc_scaled || geometry_scaled)
    write_scale_note (b, c, before.channels * before.dies_per_channel, geometry_scaled,
                      slc_scaled, note, note_bytes);
  return 0;
}

/* ========================================================== device kind == */

static void
kind_set_defaults (void *config)
{
  sl_ssd_config_defaults (config);
}

static int
kind_validate (const void *config, char *err, size_t err_bytes)
{
  return sl_ssd_config_validate (config, err, err_bytes);
}

static struct sl_model
kind_create (const void *config, char *err, size_t err_bytes)
{
  return sl_ssd_model_new (config, err, err_bytes);
}

const struct sl_device_kind sl_ssd_kind = {
  .kind = "ssd",
  .params = sl_ssd_params,
  .param_count = SSD_PARAM_COUNT,
  .config_bytes = sizeof (struct sl_ssd_config),
  .set_defaults = kind_set_defaults,
  .validate = kind_validate,
  .create = kind_create,
  .fit_preset_size = kind_fit_preset_size,
};
