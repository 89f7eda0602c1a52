/* ssd.h — solid-state drive model.
 *
 * Reads like a drive's datasheet and its NAND's:
 *   - NAND: channels x dies per channel x planes per die; page and block
 *     size; read / program / erase times (tR, tPROG, tBERS); the channel's
 *     transfer rate.  A die does one operation at a time (a multi-plane
 *     page: one page per plane, in one tR or tPROG); a channel moves one
 *     transfer at a time.  A request's pages proceed on their dies in
 *     parallel.
 *   - FTL: page mapped with a 4 KiB mapping unit, over-provisioning
 *     (physical > logical), greedy garbage collection (victim: the block
 *     with the fewest valid units) that starts below a free-block low
 *     watermark and runs in the background until the high watermark, paced
 *     against host writes, and alone when the free blocks run out (host
 *     writes then wait).  Write amplification is not a parameter: it
 *     emerges from the workload and the spare area.  TRIM unmaps.
 *   - controller: a write buffer (DRAM) that completes writes once they are
 *     in it, flushed to NAND in the background striped over the dies;
 *     FLUSH and FUA wait for NAND unless the drive has power-loss
 *     protection; an optional SLC cache (consumer TLC drives) that takes
 *     writes at SLC program speed until it fills and is folded into TLC
 *     when the dies are idle; per-command firmware time and a data-path
 *     rate (the IOPS and MB/s ceilings of the controller).
 *   - host interface: SATA 6 Gb/s (NCQ, at most 32 commands) or NVMe over
 *     PCIe 3.0 lanes (deep queues, full duplex).
 *   - precondition=fob (fresh out of box: nothing mapped) or steady (the
 *     state after long random overwrite, synthesised at once).
 *
 * The FTL's memory stays modest for any capacity: see ssd_ftl.h.
 */
#ifndef STORLAB_SSD_H
#define STORLAB_SSD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/model.h"
#include "device/params.h"

enum sl_ssd_interface { SL_SSD_SATA, SL_SSD_NVME };
enum sl_ssd_precondition { SL_SSD_FOB, SL_SSD_STEADY };

struct sl_ssd_config {
  uint64_t capacity_bytes;             /* logical (user) capacity */
  uint32_t channels;
  uint32_t dies_per_channel;
  uint32_t planes_per_die;
  uint64_t page_bytes;
  uint32_t pages_per_block;            /* per plane */
  uint64_t read_latency_ns;            /* tR: page to the die's register */
  uint64_t program_latency_ns;         /* tPROG */
  uint64_t erase_latency_ns;           /* tBERS */
  uint64_t channel_rate_bytes_per_s;
  double over_provisioning_pct;        /* physical spare over logical */
  double gc_low_watermark_pct;         /* free blocks of a die: GC starts below */
  double gc_high_watermark_pct;        /* ... and stops at */
  uint64_t buffer_bytes;               /* controller write buffer */
  bool plp;                            /* power-loss protection */
  uint64_t slc_cache_bytes;            /* 0: none */
  uint64_t slc_program_latency_ns;
  uint32_t interface;                  /* enum sl_ssd_interface */
  uint32_t pcie_lanes;                 /* nvme */
  uint32_t queue_depth;                /* commands the drive accepts */
  uint64_t read_overhead_ns;           /* firmware time per read command */
  uint64_t write_overhead_ns;          /* ... per write, flush, trim */
  uint64_t controller_rate_bytes_per_s;        /* data path; 0: unlimited */
  uint32_t precondition;               /* enum sl_ssd_precondition */
  uint64_t exact_map_bytes;            /* data whose mapping is tracked exactly */
};

extern const struct sl_param sl_ssd_params[];
extern const size_t sl_ssd_param_count;

void sl_ssd_config_defaults (struct sl_ssd_config *c);
int sl_ssd_config_validate (const struct sl_ssd_config *c, char *err, size_t err_bytes);

/* What a config works out to. */
struct sl_ssd_geometry {
  uint32_t dies;
  uint32_t units_per_page;             /* 4 KiB mapping units */
  uint32_t program_units;              /* one multi-plane page program */
  uint32_t units_per_block;            /* FTL block: one block of every plane of a die */
  uint32_t blocks_per_die;
  uint64_t logical_units;
  uint64_t physical_units;
  uint64_t block_bytes;
  uint64_t physical_bytes;
  uint32_t gc_low_blocks;              /* per die */
  uint32_t gc_high_blocks;
  double effective_over_provisioning;  /* physical / logical - 1, after rounding */
};

#define SL_SSD_UNIT_BYTES 4096u        /* FTL mapping unit */
/* Blocks a die keeps open: one per write stream (host data, GC relocations). */
#define SL_SSD_OPEN_BLOCKS_PER_DIE 2u

int sl_ssd_geometry_build (const struct sl_ssd_config *c, struct sl_ssd_geometry *g,
                           char *err, size_t err_bytes);
/* A preset's drive at a smaller size: fewer dies per channel, then
 * channels, then pages per block until it fits with GC's fixed blocks
 * taking at most 15 % of the spare area (the order and why:
 * ssd_geometry.c); c is unchanged when it does so already or has no
 * geometry at all (validation says why).  0, or -1 with err when even one
 * die with the shortest blocks does not. */
int sl_ssd_geometry_scale (struct sl_ssd_config *c, char *err, size_t err_bytes);

/* Greedy GC under uniform random overwrite, large blocks (where greedy
 * behaves like FIFO/LRU cleaning): the victim's valid fraction u solves
 *   alpha = ln(u) / (u - 1),   alpha = data blocks' capacity / logical,
 * and write amplification is 1 / (1 - u).  Returns u (0 < u < 1). */
double sl_ssd_greedy_victim_valid_fraction (double alpha);

struct sl_model sl_ssd_model_new (const struct sl_ssd_config *c, char *err, size_t err_bytes);

extern const struct sl_device_kind sl_ssd_kind;

/* ---- inspection (tests, reports) ---- */

struct sl_ssd_status {
  uint64_t host_units_written;
  uint64_t nand_units_programmed;
  double write_amplification;          /* nand / host units out of the buffer; 0 before */
  uint64_t free_blocks;
  uint64_t queued_units;               /* host units in the buffer, not yet programming */
  uint64_t state_bytes;                /* memory the model holds now */
  uint64_t state_bytes_limit;          /* ... at most (exact map full) */
  uint64_t exact_map_units;
  double steady_victim_valid_fraction; /* of the synthesised steady state; 0 for fob */
  uint64_t log_layout_bytes;           /* laid out as a log (sl_ssd_model_lay_out_log) */
  uint64_t written_region_bytes;       /* ... or written at random in a region
                                        * (sl_ssd_model_lay_out_written_region) */
};

/* m must be an SSD model (sl_ssd_model_new or the ssd kind's create). */
void sl_ssd_model_status (const struct sl_model *m, struct sl_ssd_status *out);
/* Before its first I/O, a drive in steady state (precondition=steady)
 * takes the state of one whose [offset, offset + length) is written as a
 * circular log, next at oldest_bytes (a write buffer's data area: the
 * cluster's dm-writecache, whose slots are taken in order), the rest by
 * uniform random overwrite (ssd_ftl_precondition_log).  Returns 1 when
 * laid out, 0 when there is nothing to do (not an ssd, fresh out of box,
 * a log laid out already: the first one stays), -1 with err. */
int sl_ssd_model_lay_out_log (struct sl_model *m, uint64_t offset_bytes, uint64_t length_bytes,
                              uint64_t oldest_bytes, char *err, size_t err_bytes);
/* Before its first I/O, a drive in steady state (precondition=steady)
 * takes the state a workload over [offset, offset + length) alone (an md
 * member's share of the volumes it writes) settles it at: the region
 * filled in order once, as a lab's volumes are when made, then written at
 * random (ssd_ftl_precondition_written_region): the region in blocks of
 * its own, the rest of the data compacted.  A region over the whole drive
 * leaves the uniform steady state (0).
 * Returns as sl_ssd_model_lay_out_log (a layout already there stays). */
int sl_ssd_model_lay_out_written_region (struct sl_model *m, uint64_t offset_bytes,
                                         uint64_t length_bytes, char *err, size_t err_bytes);
/* The memory that layout of length_bytes takes at most (once every unit
 * of the region has been written), 0 when it would not be laid out. */
uint64_t sl_ssd_model_written_region_bytes (const struct sl_model *m, uint64_t length_bytes);
/* The memory such a layout of length_bytes takes, 0 when it would not
 * be laid out. */
uint64_t sl_ssd_model_log_layout_bytes (const struct sl_model *m, uint64_t length_bytes);
/* Full FTL consistency check (every mapped unit points to a slot of a
 * block whose reverse list holds it; valid counts add up; free lists and
 * statistical counts agree).  0, or -1 with the first problem in err. */
int sl_ssd_model_check (const struct sl_model *m, char *err, size_t err_bytes);

/* Test hook: every busy interval the model reserves on a die
 * (resource 0) or a channel (resource 1). */
typedef void (*sl_ssd_interval_fn) (void *arg, int resource, uint32_t index,
                                    uint64_t start_ns, uint64_t end_ns);
void sl_ssd_model_set_interval_hook (struct sl_model *m, sl_ssd_interval_fn fn, void *arg);

#endif
