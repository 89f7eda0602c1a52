/* ssd.c — solid-state drive model: the controller (host interface, command
 * queue, firmware, write buffer, SLC cache) and the NAND timelines; its
 * parameters are in ssd_params.c, its geometry in ssd_geometry.c, the FTL
 * in ssd_ftl.c and the steady-state synthesis in ssd_precondition.c.
 *
 * Time of a command:
 *   controller  firmware overhead + bytes / controller-mb-s, one command at
 *               a time (the drive's IOPS and MB/s ceilings);
 *   read        per multi-plane page: tR on its die, then the bytes over
 *               the die's channel; then the host link.  Buffered data skips
 *               the NAND; unmapped data too (the drive returns zeroes);
 *   write       over the host link into the write buffer, complete there
 *               while there is room (else it waits: foreground throttling);
 *               FUA without PLP completes once its data is programmed;
 *   flush       without PLP waits until everything written before it is
 *               programmed; with PLP the buffer is already safe.
 * Background, one operation at a time per die, each picked when the die's
 * previous background operation ends (host reads queue behind at most one):
 *   program     a program unit from the buffer (oldest first), striped
 *               round robin over the dies: channel transfer, then tPROG
 *               (tPROG in SLC mode while the SLC cache has room);
 *   GC          below the low watermark: relocation steps (tR per page
 *               read, the data out and back over the channel, tPROG), and
 *               an erase (tBERS) when the victim is empty; paced so that it
 *               keeps up with the host (each host program adds u/(1-u) units
 *               of GC work, u the victim's valid fraction), alone when the
 *               die is down to its last free blocks, and in the background
 *               up to the high watermark when the host is idle;
 *   SLC fold    when nothing else is pending: an SLC page read and a TLC
 *               program per program unit, freeing SLC cache.
 *
 * Modelling choices the datasheets do not settle:
 *   - the die and channel timelines are reserved greedily in decision order
 *     (no backfilling of gaps); a program's channel transfer precedes its
 *     tPROG, no cache programming, no program/erase suspend for reads;
 *   - a read's link transfer starts once all its NAND pages are read;
 *   - partial program units are programmed only when forced (FLUSH/FUA
 *     without PLP, writes waiting for room, or the host idle for 5 ms),
 *     padded to a full unit;
 *   - SLC-cached data is mapped by the FTL like any other (the cache is
 *     timing and capacity only); folding counts as NAND programming;
 *   - FLUSH is not a barrier for commands after it;
 *   - writes smaller than 4 KiB count as whole units (no read-modify-write).
 */
#define _GNU_SOURCE
#include "ssd.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"
#include "core/queues.h"
#include "core/stats.h"
#include "ssd_ftl.h"
#include "ssd_timeline.h"
#include "core/units.h"


/* SATA 6 Gb/s: 6 Gbaud, 8b/10b -> 600 MB/s on the wire.  Data moves in
 * data FISes of at most 8 KiB, each with framing and an R_RDY/R_OK
 * handshake; an NCQ command adds its H2D register, DMA setup and set
 * device bits FISes.  Both costs are fitted so that the link alone allows
 * ~94,000 4 KiB commands/s and ~540 MB/s at 128 KiB, the ceilings SATA
 * SSDs of this class quote (devices.md: 840 EVO, 5100). */
#define SATA_WIRE_BYTES_PER_S 600e6
#define SATA_DATA_FIS_BYTES 8192u
#define SATA_DATA_FIS_OVERHEAD_NS 1360.0
#define SATA_COMMAND_OVERHEAD_NS 2440.0
/* PCIe 3.0: 8 GT/s, 128b/130b: 984.6 MB/s per lane; TLPs of 256 B payload
 * carry ~24 B of framing, sequence number, header and LCRC. */
#define PCIE3_LANE_BYTES_PER_S 984.6e6
#define PCIE_TLP_EFFICIENCY (256.0 / (256.0 + 24.0))
/* GC goes first when a die is down to this many free blocks. */
#define GC_CRITICAL_FREE_BLOCKS (SSD_GC_RESERVE_BLOCKS + 1)
/* Pacing factor u/(1-u) is capped here (u close to 1: GC-first anyway). */
#define MAX_GC_UNITS_PER_HOST_UNIT 100.0
/* Busy intervals a channel or link timeline holds before it grows. */
#define TIMELINE_INITIAL_INTERVALS 64u
/* Host idle this long (no write arriving): a partial program unit left in
 * the buffer is programmed, GC works ahead to the high watermark and the
 * SLC cache folds (assumed). */
#define IDLE_BACKGROUND_DELAY_NS 5000000u

enum ssd_counter {
  COUNTER_HOST_PAGES_WRITTEN,
  COUNTER_HOST_PAGES_READ,
  COUNTER_NAND_PAGES_PROGRAMMED,
  COUNTER_NAND_PAGE_READS,
  COUNTER_GC_PAGES_MOVED,
  COUNTER_BLOCKS_ERASED,
  COUNTER_BUFFER_HITS,
  COUNTER_UNMAPPED_READS,
  COUNTER_FREE_BLOCKS,
  COUNTER_BUFFER_BYTES,
  COUNTER_SLC_USED_BYTES,
  COUNTER_SLC_PAGES_PROGRAMMED,
  COUNTER_WRITES_THROTTLED,
  COUNTER_TRIMMED_PAGES,
  COUNTER_EXACT_MAP_PAGES,
  COUNTER_MAP_EVICTIONS,
  COUNTER_COUNT
};

/* "pages" here are 4 KiB mapping units (logical pages). */
static const char *const counter_names[COUNTER_COUNT] = {
  "host_pages_written", "host_pages_read", "nand_pages_programmed", "nand_page_reads",
  "gc_pages_moved", "blocks_erased", "buffer_hits", "unmapped_reads", "free_blocks",
  "buffer_bytes", "slc_used_bytes", "slc_pages_programmed", "writes_throttled",
  "trimmed_pages", "exact_map_pages", "map_evictions",
};

_Static_assert (COUNTER_COUNT <= 16, "the stats record has 16 model counters");

/* Per-request scratch while the model holds it. */
enum {
  SCRATCH_WHEN_NS,             /* earliest completion: controller done, link done */
  SCRATCH_UNITS_DONE,          /* write: units in the buffer so far */
  SCRATCH_TARGET_SEQ,          /* FLUSH/FUA: buffer sequence that must be on NAND */
};

enum background { BG_NONE, BG_HOST, BG_GC, BG_FOLD };

struct die {
  uint64_t free_ns;            /* end of the work reserved on the die */
  uint64_t bg_end_ns;
  enum background bg;
  uint32_t bg_units;           /* host program: buffer units it frees at the end */
  uint64_t bg_first_seq;       /* host program: buffer sequence of its first unit */
  double gc_debt_units;
  bool gc_active;
};

struct ssd_model {
  struct sl_ssd_config config;
  struct sl_ssd_geometry g;
  struct ssd_ftl *ftl;
  struct sl_engine *engine;
  double steady_u;
  uint64_t log_offset_bytes, log_length_bytes;        /* laid out as a log (0: none) */
  uint64_t written_offset_bytes, written_length_bytes;        /* ... or the region
                                                               * written at random */

  /* NAND timelines */
  struct die *dies;
  struct ssd_timeline *channels;
  double channel_ns_per_byte;
  uint32_t next_die;           /* round robin of host programs */
  uint32_t *program_lbas;      /* scratch, program_units long */

  /* controller and host link */
  uint64_t controller_free_ns;
  double controller_ns_per_byte;
  struct ssd_timeline links[2];        /* [0] host to drive, [1] drive to host (NVMe) */
  double link_ns_per_byte;
  bool sata;

  /* write buffer: FIFO ring of LBAs (SSD_NONE: trimmed while queued) with
   * a running sequence number, and a set LBA -> sequence of queued units */
  uint32_t *ring;
  uint64_t ring_mask;
  uint64_t head_seq, tail_seq;
  uint64_t queued_live;
  uint64_t buffer_units;       /* room taken: ring entries + units being programmed */
  uint64_t buffer_capacity_units;
  uint32_t *set_lba;
  uint64_t *set_seq;
  uint64_t set_mask;
  uint64_t set_count;
  uint64_t force_seq;          /* program partial units until head_seq reaches this */
  uint64_t slc_used_bytes;

  /* requests the model holds */
  struct sl_request *room_head, *room_tail;    /* writes waiting for buffer room */
  struct sl_request *sync_head;                /* FLUSH/FUA waiting for NAND */
  struct sl_request *host_head, *host_tail;    /* waiting for a queue slot */
  uint32_t tags_undecided;
  uint64_t *release_heap;      /* completion times of decided commands */
  uint32_t release_count;
  uint64_t admit_event_ns;
  uint64_t last_command_ns;    /* arrival of the latest host command */
  /* Background work may have become possible since the last look: a host
   * write, flush or trim, a die done, the host gone idle.  Without one a
   * look at every die would start nothing (it cost 62 % of a cluster run
   * whose reads queued beyond the NCQ depth). */
  bool kick_pending;
  bool idle_event_pending;

  sl_ssd_interval_fn hook;
  void *hook_arg;
  uint64_t own_counters[COUNTER_COUNT];
  uint64_t *counter;
};

/* ---------------------------------------------------------- small helpers -- */


static inline uint64_t
ns_for (double ns_per_byte, uint64_t bytes)
{
  return (uint64_t) ceil ((double) bytes * ns_per_byte);
}

static inline void
trace (struct ssd_model *m, int resource, uint32_t index, uint64_t start, uint64_t end)
{
  if (m->hook)
    m->hook (m->hook_arg, resource, index, start, end);
}

/* ------------------------------------------------------------------ tags -- */

/* The command's completion is decided: it holds its queue slot until then. */
static void
complete_at (struct ssd_model *m, struct sl_request *r, uint64_t when)
{
  sl_release_push (m->release_heap, &m->release_count, when);
  sl_engine_complete (m->engine, r, when);
}

/* ---------------------------------------------------- controller and link -- */

static uint64_t
controller (struct ssd_model *m, uint64_t now, uint64_t overhead_ns, uint64_t bytes)
{
  uint64_t start = sl_max_u64 (now, m->controller_free_ns);
  m->controller_free_ns = start + overhead_ns + ns_for (m->controller_ns_per_byte, bytes);
  return m->controller_free_ns;
}

static uint64_t
link_ns (const struct ssd_model *m, uint64_t bytes)
{
  double ns = (double) bytes * m->link_ns_per_byte;
  if (m->sata)
    ns += SATA_COMMAND_OVERHEAD_NS
      + SATA_DATA_FIS_OVERHEAD_NS * (double) ((bytes + SATA_DATA_FIS_BYTES - 1) / SATA_DATA_FIS_BYTES);
  return (uint64_t) ceil (ns);
}

/* SATA is half duplex: both directions share one timeline. */
static uint64_t
link_transfer (struct ssd_model *m, bool to_host, uint64_t ready, uint64_t bytes)
{
  uint64_t duration = link_ns (m, bytes);
  return ssd_timeline_reserve (&m->links[to_host && !m->sata], sl_engine_now_ns (m->engine),
                               ready, duration) + duration;
}

/* ------------------------------------------------------------- NAND ops -- */

static inline uint32_t channel_of (const struct ssd_model *m, uint32_t die)
{
  return die % m->config.channels;
}

/* Reserves the channel for bytes from ready; returns the transfer's end. */
static uint64_t
channel_transfer (struct ssd_model *m, uint32_t die, uint64_t ready, uint64_t bytes)
{
  uint32_t ch = channel_of (m, die);
  uint64_t duration = ns_for (m->channel_ns_per_byte, bytes);
  uint64_t start = ssd_timeline_reserve (&m->channels[ch], sl_engine_now_ns (m->engine),
                                         ready, duration);
  trace (m, 1, ch, start, start + duration);
  return start + duration;
}

/* Host read of bytes from one multi-plane page of die. */
static uint64_t
nand_read (struct ssd_model *m, uint32_t die, uint64_t ready, uint64_t bytes)
{
  struct die *d = &m->dies[die];
  uint64_t start = sl_max_u64 (ready, d->free_ns);
  uint64_t end = channel_transfer (m, die, start + m->config.read_latency_ns, bytes);
  d->free_ns = end;
  trace (m, 0, die, start, end);
  m->counter[COUNTER_NAND_PAGE_READS]++;
  return end;
}

/* ------------------------------------------------------------ the buffer -- */

static inline uint64_t
set_home (const struct ssd_model *m, uint32_t lba)
{
  return ((lba * 0x9e3779b97f4a7c15ull) >> 20) & m->set_mask;
}

static uint64_t
set_find (const struct ssd_model *m, uint32_t lba)
{
  for (uint64_t i = set_home (m, lba);; i = (i + 1) & m->set_mask) {
    if (m->set_lba[i] == SSD_NONE)
      return UINT64_MAX;
    if (m->set_lba[i] == lba)
      return i;
  }
}

static void
set_put (struct ssd_model *m, uint32_t lba, uint64_t seq)
{
  uint64_t i = set_home (m, lba);
  while (m->set_lba[i] != SSD_NONE)
    i = (i + 1) & m->set_mask;
  m->set_lba[i] = lba;
  m->set_seq[i] = seq;
  m->set_count++;
}

static void
set_delete_slot (struct ssd_model *m, uint64_t hole)
{
  uint64_t i = hole;
  for (;;) {
    i = (i + 1) & m->set_mask;
    if (m->set_lba[i] == SSD_NONE)
      break;
    uint64_t home = set_home (m, m->set_lba[i]);
    bool stays = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
    if (!stays) {
      m->set_lba[hole] = m->set_lba[i];
      m->set_seq[hole] = m->set_seq[i];
      hole = i;
    }
  }
  m->set_lba[hole] = SSD_NONE;
  m->set_count--;
}

static inline void
update_buffer_counter (struct ssd_model *m)
{
  m->counter[COUNTER_BUFFER_BYTES] = m->buffer_units * SL_SSD_UNIT_BYTES;
}

/* Everything before this sequence is on NAND. */
static uint64_t
durable_seq (const struct ssd_model *m)
{
  uint64_t seq = m->head_seq;
  for (uint32_t d = 0; d < m->g.dies; d++)
    if (m->dies[d].bg == BG_HOST && m->dies[d].bg_first_seq < seq)
      seq = m->dies[d].bg_first_seq;
  return seq;
}

/* No host command for a while and no write waiting: background work may
 * go ahead.  Reads count too: a drive busy reading is not idle, so GC
 * working ahead never takes its dies from a read load (it did, but only
 * when commands queued in the model beyond its NCQ depth: a read load at
 * QD 33 ran at a third of QD 32's IOPS). */
static bool
host_idle (const struct ssd_model *m, uint64_t now)
{
  return m->room_head == NULL && now >= m->last_command_ns + IDLE_BACKGROUND_DELAY_NS;
}

static bool
host_data_ready (const struct ssd_model *m, uint64_t now)
{
  if (m->queued_live >= m->g.program_units)
    return true;
  /* a partial program unit only when someone waits for it, or when idle */
  return m->queued_live > 0
    && (m->head_seq < m->force_seq || m->room_head != NULL || host_idle (m, now));
}

/* --------------------------------------------------- background per die -- */

static void die_event (struct sl_engine *e, void *arg, uint64_t die);

static void
begin_background (struct ssd_model *m, uint32_t die, enum background kind, uint64_t start,
                  uint64_t end)
{
  struct die *d = &m->dies[die];
  d->free_ns = end;
  d->bg = kind;
  d->bg_end_ns = end;
  trace (m, 0, die, start, end);
  sl_engine_schedule (m->engine, end, die_event, m, die);
}

static bool
start_host_program (struct ssd_model *m, uint32_t die, uint64_t now)
{
  uint32_t n = 0, pu = m->g.program_units;
  uint64_t first_seq = UINT64_MAX;
  while (n < pu && m->head_seq < m->tail_seq) {
    uint64_t seq = m->head_seq++;
    uint32_t lba = m->ring[seq & m->ring_mask];
    if (lba == SSD_NONE) {
      m->buffer_units--;       /* trimmed while queued */
      continue;
    }
    set_delete_slot (m, set_find (m, lba));
    m->queued_live--;
    if (first_seq == UINT64_MAX)
      first_seq = seq;
    m->program_lbas[n++] = lba;
  }
  if (n == 0)
    return false;
  if (ssd_ftl_program_host (m->ftl, die, m->program_lbas, n) < 0)
    abort ();                  /* checked by ssd_ftl_host_can_program */
  uint64_t bytes = (uint64_t) pu * SL_SSD_UNIT_BYTES;
  uint64_t latency = m->config.program_latency_ns;
  if (m->config.slc_cache_bytes > 0 && m->slc_used_bytes + bytes <= m->config.slc_cache_bytes) {
    latency = m->config.slc_program_latency_ns;
    m->slc_used_bytes += bytes;
    m->counter[COUNTER_SLC_PAGES_PROGRAMMED] += pu;
    m->counter[COUNTER_SLC_USED_BYTES] = m->slc_used_bytes;
  }
  struct die *d = &m->dies[die];
  uint64_t start = sl_max_u64 (now, d->free_ns);
  uint64_t end = channel_transfer (m, die, start, bytes) + latency;
  m->counter[COUNTER_NAND_PAGES_PROGRAMMED] += pu;
  if (d->gc_active) {
    double u = ssd_ftl_next_victim_valid_fraction (m->ftl, die);
    double per_unit = u < 1 ? u / (1 - u) : MAX_GC_UNITS_PER_HOST_UNIT;
    d->gc_debt_units += n * fmin (per_unit, MAX_GC_UNITS_PER_HOST_UNIT);
  }
  d->bg_units = n;
  d->bg_first_seq = first_seq;
  begin_background (m, die, BG_HOST, start, end);
  return true;
}

static bool
start_gc_step (struct ssd_model *m, uint32_t die, uint64_t now)
{
  struct ssd_gc_step step;
  if (ssd_ftl_gc_step (m->ftl, die, &step) <= 0)
    return false;
  struct die *d = &m->dies[die];
  uint64_t start = sl_max_u64 (now, d->free_ns), end;
  if (step.erased) {
    end = start + m->config.erase_latency_ns;
    m->counter[COUNTER_BLOCKS_ERASED]++;
  }
  else {
    uint64_t sensed = start + (uint64_t) step.pages_read * m->config.read_latency_ns;
    uint64_t moved_bytes = (uint64_t) step.moved * SL_SSD_UNIT_BYTES;
    /* out to the controller (ECC) and back: one channel reservation */
    end = channel_transfer (m, die, sensed, 2 * moved_bytes) + m->config.program_latency_ns;
    m->counter[COUNTER_GC_PAGES_MOVED] += step.moved;
    m->counter[COUNTER_NAND_PAGE_READS] += step.pages_read;
    m->counter[COUNTER_NAND_PAGES_PROGRAMMED] += m->g.program_units;
    d->gc_debt_units -= step.moved;   /* overshoot is credit for the next host program */
  }
  begin_background (m, die, BG_GC, start, end);
  return true;
}

/* SLC cache to TLC: read a program unit's worth in SLC mode, program it. */
static void
start_fold (struct ssd_model *m, uint32_t die, uint64_t now)
{
  uint64_t bytes = (uint64_t) m->g.program_units * SL_SSD_UNIT_BYTES;
  struct die *d = &m->dies[die];
  uint64_t start = sl_max_u64 (now, d->free_ns);
  uint64_t end = start + m->config.read_latency_ns + m->config.program_latency_ns;
  m->slc_used_bytes = m->slc_used_bytes > bytes ? m->slc_used_bytes - bytes : 0;
  m->counter[COUNTER_SLC_USED_BYTES] = m->slc_used_bytes;
  m->counter[COUNTER_NAND_PAGES_PROGRAMMED] += m->g.program_units;
  begin_background (m, die, BG_FOLD, start, end);
}

static void idle_event (struct sl_engine *e, void *arg, uint64_t unused);

/* Background work waits for the host to go idle: look again then. */
static void
arm_idle (struct ssd_model *m, uint64_t now)
{
  if (m->idle_event_pending || m->last_command_ns + IDLE_BACKGROUND_DELAY_NS <= now)
    return;
  m->idle_event_pending = true;
  sl_engine_schedule (m->engine, m->last_command_ns + IDLE_BACKGROUND_DELAY_NS, idle_event,
                      m, 0);
}

/* The die's background slot is free: give it the most urgent work.
 * GC pays its debt to host writes first (and goes alone when the die is
 * down to its last free blocks), then host data is programmed, and only
 * an idle host lets GC work ahead or the SLC cache fold. */
static bool
start_background (struct ssd_model *m, uint32_t die, uint64_t now)
{
  struct die *d = &m->dies[die];
  uint32_t free_blocks = ssd_ftl_free_blocks (m->ftl, die);
  if (free_blocks < m->g.gc_low_blocks)
    d->gc_active = true;
  else if (free_blocks >= m->g.gc_high_blocks) {
    d->gc_active = false;
    d->gc_debt_units = 0;
  }
  bool idle = host_idle (m, now);
  if (d->gc_active && (d->gc_debt_units > 0 || free_blocks <= GC_CRITICAL_FREE_BLOCKS || idle)
      && start_gc_step (m, die, now))
    return false;
  if (host_data_ready (m, now) && ssd_ftl_host_can_program (m->ftl, die)
      && start_host_program (m, die, now))
    return true;
  bool fold = m->slc_used_bytes > 0 && !d->gc_active;
  if (idle && fold)
    start_fold (m, die, now);
  else if (!idle && (fold || d->gc_active || m->queued_live > 0))
    arm_idle (m, now);
  return false;
}

static void
kick (struct ssd_model *m, uint64_t now)
{
  if (!m->kick_pending && m->room_head == NULL)
    return;
  m->kick_pending = false;
  uint32_t n = m->g.dies, first = m->next_die;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t die = first + i < n ? first + i : first + i - n;
    if (m->dies[die].bg == BG_NONE && start_background (m, die, now)) {
      m->next_die = die + 1 < n ? die + 1 : 0;
      m->kick_pending = true;          /* what it started may let more start */
    }
  }
  m->counter[COUNTER_FREE_BLOCKS] = ssd_ftl_free_blocks_total (m->ftl);
  m->counter[COUNTER_EXACT_MAP_PAGES] = m->ftl->entry_live;
  m->counter[COUNTER_MAP_EVICTIONS] = m->ftl->evictions;
}

/* --------------------------------------------------------------- writes -- */

/* Moves as much of write r into the buffer as there is room for; true when
 * all of it is in.  Overwrites of queued units replace them in place. */
static bool
admit_write (struct ssd_model *m, struct sl_request *r, uint64_t now)
{
  uint64_t first = r->offset_bytes / SL_SSD_UNIT_BYTES;
  uint64_t units = (r->offset_bytes + r->length_bytes - 1) / SL_SSD_UNIT_BYTES - first + 1;
  uint64_t done = r->model_scratch[SCRATCH_UNITS_DONE], start_done = done;
  uint64_t target = r->model_scratch[SCRATCH_TARGET_SEQ];
  for (; done < units; done++) {
    uint32_t lba = (uint32_t) (first + done);
    uint64_t slot = m->set_count ? set_find (m, lba) : UINT64_MAX;
    if (slot != UINT64_MAX) {
      target = sl_max_u64 (target, m->set_seq[slot] + 1);
      continue;
    }
    if (m->buffer_units >= m->buffer_capacity_units)
      break;
    m->ring[m->tail_seq & m->ring_mask] = lba;
    set_put (m, lba, m->tail_seq);
    target = ++m->tail_seq;
    m->buffer_units++;
    m->queued_live++;
  }
  if (done > start_done) {
    uint64_t bytes = r->length_bytes * (done - start_done) / units;
    uint64_t ready = sl_max_u64 (now, r->model_scratch[SCRATCH_WHEN_NS]);
    r->model_scratch[SCRATCH_WHEN_NS] = link_transfer (m, false, ready, bytes);
    update_buffer_counter (m);
  }
  r->model_scratch[SCRATCH_UNITS_DONE] = done;
  r->model_scratch[SCRATCH_TARGET_SEQ] = target;
  return done == units;
}

/* FLUSH or FUA r needs everything up to its target sequence on NAND. */
static void
wait_for_nand (struct ssd_model *m, struct sl_request *r)
{
  r->model_next = m->sync_head;
  m->sync_head = r;
  if (r->model_scratch[SCRATCH_TARGET_SEQ] > m->force_seq)
    m->force_seq = r->model_scratch[SCRATCH_TARGET_SEQ];
}

/* Write r is all in the buffer. */
static void
write_buffered (struct ssd_model *m, struct sl_request *r, bool was_holding)
{
  bool durable = (r->flags & SL_REQUEST_FUA) && !m->config.plp;
  if (durable && durable_seq (m) < r->model_scratch[SCRATCH_TARGET_SEQ]) {
    if (!was_holding)
      m->tags_undecided++;
    wait_for_nand (m, r);
    return;
  }
  if (was_holding)
    m->tags_undecided--;
  complete_at (m, r, r->model_scratch[SCRATCH_WHEN_NS]);
}

static void
admit_waiting_writes (struct ssd_model *m, uint64_t now)
{
  while (m->room_head != NULL && admit_write (m, m->room_head, now))
    write_buffered (m, sl_fifo_pop (&m->room_head, &m->room_tail), true);
}

static void
finish_synced (struct ssd_model *m, uint64_t now)
{
  if (m->sync_head == NULL)
    return;
  uint64_t durable = durable_seq (m);
  struct sl_request **link = &m->sync_head;
  while (*link != NULL) {
    struct sl_request *r = *link;
    if (r->model_scratch[SCRATCH_TARGET_SEQ] <= durable) {
      *link = r->model_next;
      r->model_next = NULL;
      m->tags_undecided--;
      complete_at (m, r, sl_max_u64 (now, r->model_scratch[SCRATCH_WHEN_NS]));
    }
    else
      link = &r->model_next;
  }
}

/* ---------------------------------------------------------------- reads -- */

static void
read_command (struct ssd_model *m, struct sl_request *r, uint64_t ready)
{
  uint64_t first = r->offset_bytes / SL_SSD_UNIT_BYTES;
  uint64_t last = (r->offset_bytes + r->length_bytes - 1) / SL_SSD_UNIT_BYTES;
  uint64_t data_ready = ready;
  uint32_t group_die = 0;
  uint64_t group = UINT64_MAX, group_bytes = 0;
  for (uint64_t lba = first; lba <= last; lba++) {
    m->counter[COUNTER_HOST_PAGES_READ]++;
    if (m->set_count && set_find (m, (uint32_t) lba) != UINT64_MAX) {
      m->counter[COUNTER_BUFFER_HITS]++;
      continue;
    }
    uint32_t die;
    uint64_t g;
    if (!ssd_ftl_locate (m->ftl, (uint32_t) lba, &die, &g)) {
      m->counter[COUNTER_UNMAPPED_READS]++;
      continue;
    }
    if (g == group && die == group_die) {
      group_bytes += SL_SSD_UNIT_BYTES;         /* same multi-plane page: one tR */
      continue;
    }
    if (group_bytes)
      data_ready = sl_max_u64 (data_ready, nand_read (m, group_die, ready, group_bytes));
    group = g;
    group_die = die;
    group_bytes = SL_SSD_UNIT_BYTES;
  }
  if (group_bytes)
    data_ready = sl_max_u64 (data_ready, nand_read (m, group_die, ready, group_bytes));
  complete_at (m, r, link_transfer (m, true, data_ready, r->length_bytes));
}

/* ---------------------------------------------------------------- trims -- */

/* Queued units in [first, first + count) will not be programmed. */
static void
drop_buffered (struct ssd_model *m, uint64_t first, uint64_t count)
{
  if (m->set_count == 0)
    return;
  if (count < m->set_count) {
    for (uint64_t lba = first; lba < first + count; lba++) {
      uint64_t slot = set_find (m, (uint32_t) lba);
      if (slot == UINT64_MAX)
        continue;
      m->ring[m->set_seq[slot] & m->ring_mask] = SSD_NONE;
      set_delete_slot (m, slot);
      m->queued_live--;
    }
  }
  else {
    for (uint64_t seq = m->head_seq; seq < m->tail_seq; seq++) {
      uint32_t lba = m->ring[seq & m->ring_mask];
      if (lba == SSD_NONE || lba < first || lba >= first + count)
        continue;
      m->ring[seq & m->ring_mask] = SSD_NONE;
      set_delete_slot (m, set_find (m, lba));
      m->queued_live--;
    }
  }
  /* trimmed units at the head give their room back now */
  while (m->head_seq < m->tail_seq && m->ring[m->head_seq & m->ring_mask] == SSD_NONE) {
    m->head_seq++;
    m->buffer_units--;
  }
  update_buffer_counter (m);
}

static void
trim_command (struct ssd_model *m, const struct sl_request *r)
{
  /* only whole 4 KiB units are unmapped */
  uint64_t first = (r->offset_bytes + SL_SSD_UNIT_BYTES - 1) / SL_SSD_UNIT_BYTES;
  uint64_t end = (r->offset_bytes + r->length_bytes) / SL_SSD_UNIT_BYTES;
  if (end <= first)
    return;
  drop_buffered (m, first, end - first);
  ssd_ftl_trim (m->ftl, first, end - first);
  m->counter[COUNTER_TRIMMED_PAGES] += end - first;
}

/* --------------------------------------------------------------- dispatch -- */

static void
dispatch (struct ssd_model *m, struct sl_request *r, uint64_t now)
{
  const struct sl_ssd_config *c = &m->config;
  uint64_t ready;
  if (r->op != SL_OP_READ)
    m->kick_pending = true;            /* data to program, a flush, a trim */
  switch (r->op) {
  case SL_OP_READ:
    ready = controller (m, now, c->read_overhead_ns, r->length_bytes);
    if (r->length_bytes == 0)
      break;
    read_command (m, r, ready);
    return;

  case SL_OP_WRITE:
    ready = controller (m, now, c->write_overhead_ns, r->length_bytes);
    if (r->length_bytes == 0)
      break;
    r->model_scratch[SCRATCH_WHEN_NS] = ready;
    r->model_scratch[SCRATCH_UNITS_DONE] = 0;
    r->model_scratch[SCRATCH_TARGET_SEQ] = 0;
    m->counter[COUNTER_HOST_PAGES_WRITTEN] +=
      (r->offset_bytes + r->length_bytes - 1) / SL_SSD_UNIT_BYTES
      - r->offset_bytes / SL_SSD_UNIT_BYTES + 1;
    if (m->room_head == NULL && admit_write (m, r, now)) {
      write_buffered (m, r, false);
      return;
    }
    m->counter[COUNTER_WRITES_THROTTLED]++;
    sl_fifo_append (&m->room_head, &m->room_tail, r);
    m->tags_undecided++;
    return;

  case SL_OP_FLUSH:
    ready = controller (m, now, c->write_overhead_ns, 0);
    if (!c->plp && durable_seq (m) < m->tail_seq) {
      r->model_scratch[SCRATCH_WHEN_NS] = ready;
      r->model_scratch[SCRATCH_TARGET_SEQ] = m->tail_seq;
      m->tags_undecided++;
      wait_for_nand (m, r);
      return;
    }
    break;

  case SL_OP_TRIM:
    ready = controller (m, now, c->write_overhead_ns, 0);
    trim_command (m, r);
    break;

  default:
    ready = now;
    break;
  }
  complete_at (m, r, ready);
}

static void
admit_from_host (struct ssd_model *m, uint64_t now)
{
  while (m->host_head != NULL) {
    sl_release_prune (m->release_heap, &m->release_count, now);
    if (m->tags_undecided + m->release_count >= m->config.queue_depth)
      break;
    dispatch (m, sl_fifo_pop (&m->host_head, &m->host_tail), now);
  }
}

static void admit_event (struct sl_engine *e, void *arg, uint64_t when_ns);

/* Host commands wait for a queue slot: wake up when the next one frees. */
static void
arm_admit (struct ssd_model *m)
{
  if (m->host_head == NULL || m->release_count == 0)
    return;                    /* slots held by undecided commands: woken when decided */
  uint64_t next = m->release_heap[0];
  if (next >= m->admit_event_ns)
    return;
  m->admit_event_ns = next;
  sl_engine_schedule (m->engine, next, admit_event, m, next);
}

/* Everything that may move after a change: waiting writes, waiting
 * flushes, idle dies, queued host commands. */
static void
run (struct ssd_model *m, uint64_t now)
{
  sl_release_prune (m->release_heap, &m->release_count, now);
  admit_waiting_writes (m, now);
  finish_synced (m, now);
  kick (m, now);
  admit_from_host (m, now);
  kick (m, now);
  arm_admit (m);
}

static void
die_event (struct sl_engine *e, void *arg, uint64_t die)
{
  struct ssd_model *m = arg;
  uint64_t now = sl_engine_now_ns (e);
  m->engine = e;
  struct die *d = &m->dies[die];
  m->kick_pending = true;
  if (d->bg == BG_HOST) {
    m->buffer_units -= d->bg_units;
    update_buffer_counter (m);
  }
  d->bg = BG_NONE;
  run (m, now);
}

static void
idle_event (struct sl_engine *e, void *arg, uint64_t unused)
{
  (void) unused;
  struct ssd_model *m = arg;
  m->engine = e;
  m->idle_event_pending = false;
  m->kick_pending = true;
  run (m, sl_engine_now_ns (e));
}

static void
admit_event (struct sl_engine *e, void *arg, uint64_t when_ns)
{
  struct ssd_model *m = arg;
  m->engine = e;
  if (when_ns == m->admit_event_ns)
    m->admit_event_ns = UINT64_MAX;
  run (m, sl_engine_now_ns (e));
}

/* ---------------------------------------------------------- model ops -- */

static void
ssd_attach (void *self, struct sl_engine *e, struct sl_device_stats *stats)
{
  struct ssd_model *m = self;
  m->engine = e;
  if (stats == NULL)
    return;
  m->counter = sl_device_stats_adopt_counters (stats, counter_names, m->own_counters, COUNTER_COUNT);
}

static void
ssd_submit (void *self, struct sl_engine *e, struct sl_request *r)
{
  struct ssd_model *m = self;
  uint64_t now = sl_engine_now_ns (e);
  m->engine = e;
  m->last_command_ns = now;
  sl_release_prune (m->release_heap, &m->release_count, now);
  /* the common case first: a free slot and nothing waiting */
  if (m->host_head == NULL && m->tags_undecided + m->release_count < m->config.queue_depth) {
    dispatch (m, r, now);
    if (r->op != SL_OP_READ)
      run (m, now);
    return;
  }
  sl_fifo_append (&m->host_head, &m->host_tail, r);
  run (m, now);
}

/* NAND pages programmed per host page that left the buffer (data still
 * queued has cost no NAND yet; overwrites absorbed in the buffer never will). */
static double
write_amplification (const struct ssd_model *m)
{
  uint64_t host = m->counter[COUNTER_HOST_PAGES_WRITTEN];
  uint64_t queued = m->tail_seq - m->head_seq;
  host = host > queued ? host - queued : 0;
  return host ? (double) m->counter[COUNTER_NAND_PAGES_PROGRAMMED] / (double) host : 0;
}

static uint64_t
state_bytes (const struct ssd_model *m, bool limit)
{
  uint64_t ring = (m->ring_mask + 1) * sizeof *m->ring;
  uint64_t set = (m->set_mask + 1) * (sizeof *m->set_lba + sizeof *m->set_seq);
  uint64_t timelines = m->links[0].capacity + m->links[1].capacity;
  for (uint32_t i = 0; i < m->config.channels; i++)
    timelines += m->channels[i].capacity;
  uint64_t nand = m->g.dies * sizeof *m->dies + timelines * sizeof (struct ssd_interval)
    + m->g.program_units * sizeof *m->program_lbas;
  uint64_t ftl = limit ? ssd_ftl_state_bytes_limit (m->ftl) : ssd_ftl_state_bytes (m->ftl);
  return sizeof *m + ring + set + nand + m->config.queue_depth * sizeof *m->release_heap + ftl;
}

static void
ssd_write_json (void *self, FILE *out)
{
  const struct ssd_model *m = self;
  const struct sl_ssd_geometry *g = &m->g;
  fprintf (out, "\"interface\": \"%s\", \"channels\": %" PRIu32 ", \"dies\": %" PRIu32
           ", \"planes_per_die\": %" PRIu32 ", \"page_bytes\": %" PRIu64
           ", \"block_bytes\": %" PRIu64 ", \"blocks_per_die\": %" PRIu32
           ", \"logical_bytes\": %" PRIu64 ", \"physical_bytes\": %" PRIu64
           ", \"over_provisioning\": %.4f, \"gc_low_blocks\": %" PRIu32
           ", \"gc_high_blocks\": %" PRIu32,
           m->sata ? "sata" : "nvme", m->config.channels, g->dies, m->config.planes_per_die,
           m->config.page_bytes, g->block_bytes, g->blocks_per_die,
           m->config.capacity_bytes, g->physical_bytes, g->effective_over_provisioning,
           g->gc_low_blocks, g->gc_high_blocks);
  if (m->written_length_bytes > 0)
    fprintf (out, ", \"written_region_offset_bytes\": %" PRIu64
             ", \"written_region_bytes\": %" PRIu64,
             m->written_offset_bytes, m->written_length_bytes);
  if (m->log_length_bytes > 0)
    fprintf (out, ", \"log_layout_offset_bytes\": %" PRIu64 ", \"log_layout_bytes\": %" PRIu64,
             m->log_offset_bytes, m->log_length_bytes);
  fprintf (out, ", \"precondition\": \"%s\", \"steady_victim_valid_fraction\": %.4f"
           ", \"steady_write_amplification\": %.3f, \"write_amplification\": %.3f"
           ", \"state_bytes\": %" PRIu64 ", \"state_bytes_limit\": %" PRIu64
           ", \"counters\": {",
           m->config.precondition == SL_SSD_STEADY ? "steady" : "fob", m->steady_u,
           m->steady_u > 0 ? 1 / (1 - m->steady_u) : 0.0, write_amplification (m),
           state_bytes (m, false), state_bytes (m, true));
  for (unsigned i = 0; i < COUNTER_COUNT; i++)
    fprintf (out, "%s\"%s\": %" PRIu64, i ? ", " : "", counter_names[i], m->counter[i]);
  fputs ("}", out);
}

static void
ssd_destroy (void *self)
{
  struct ssd_model *m = self;
  if (m == NULL)
    return;
  ssd_ftl_free (m->ftl);
  free (m->dies);
  if (m->channels)
    for (uint32_t i = 0; i < m->config.channels; i++)
      ssd_timeline_free (&m->channels[i]);
  free (m->channels);
  ssd_timeline_free (&m->links[0]);
  ssd_timeline_free (&m->links[1]);
  free (m->program_lbas);
  free (m->ring);
  free (m->set_lba);
  free (m->set_seq);
  free (m->release_heap);
  free (m);
}

static const struct sl_model_ops ssd_ops = {
  .kind = "ssd",
  .attach = ssd_attach,
  .submit = ssd_submit,
  .write_json = ssd_write_json,
  .destroy = ssd_destroy,
};

static uint64_t
next_power_of_two (uint64_t n)
{
  uint64_t p = 1;
  while (p < n)
    p *= 2;
  return p;
}

struct sl_model
sl_ssd_model_new (const struct sl_ssd_config *c, char *err, size_t err_bytes)
{
  struct sl_model none = { 0 };
  if (sl_ssd_config_validate (c, err, err_bytes) < 0)
    return none;
  struct ssd_model *m = calloc (1, sizeof *m);
  if (m == NULL) {
    snprintf (err, err_bytes, "ssd: out of memory");
    return none;
  }
  m->config = *c;
  if (sl_ssd_geometry_build (c, &m->g, err, err_bytes) < 0) {
    free (m);
    return none;
  }
  const struct sl_ssd_geometry *g = &m->g;
  m->buffer_capacity_units = c->buffer_bytes / SL_SSD_UNIT_BYTES;
  m->ring_mask = next_power_of_two (m->buffer_capacity_units) - 1;
  m->set_mask = next_power_of_two (2 * m->buffer_capacity_units) - 1;
  m->ftl = ssd_ftl_new (g, c->exact_map_bytes / SL_SSD_UNIT_BYTES,
                        0x55d5eed0ull ^ c->capacity_bytes);
  m->dies = calloc (g->dies, sizeof *m->dies);
  m->channels = calloc (c->channels, sizeof *m->channels);
  bool timelines_ok = m->channels != NULL
    && ssd_timeline_init (&m->links[0], TIMELINE_INITIAL_INTERVALS) == 0
    && ssd_timeline_init (&m->links[1], TIMELINE_INITIAL_INTERVALS) == 0;
  for (uint32_t i = 0; timelines_ok && i < c->channels; i++)
    timelines_ok = ssd_timeline_init (&m->channels[i], TIMELINE_INITIAL_INTERVALS) == 0;
  m->program_lbas = calloc (g->program_units, sizeof *m->program_lbas);
  m->ring = malloc ((m->ring_mask + 1) * sizeof *m->ring);
  m->set_lba = malloc ((m->set_mask + 1) * sizeof *m->set_lba);
  m->set_seq = malloc ((m->set_mask + 1) * sizeof *m->set_seq);
  m->release_heap = calloc (c->queue_depth, sizeof *m->release_heap);
  if (m->ftl == NULL || m->dies == NULL || !timelines_ok
      || m->program_lbas == NULL || m->ring == NULL || m->set_lba == NULL
      || m->set_seq == NULL || m->release_heap == NULL) {
    snprintf (err, err_bytes, "ssd: out of memory");
    ssd_destroy (m);
    return none;
  }
  memset (m->set_lba, 0xff, (m->set_mask + 1) * sizeof *m->set_lba);
  if (c->precondition == SL_SSD_STEADY) {
    m->steady_u = ssd_ftl_precondition_steady (m->ftl);
    if (m->steady_u <= 0) {
      if (m->steady_u < 0)
        snprintf (err, err_bytes, "ssd: out of memory");
      else
        snprintf (err, err_bytes, "precondition=steady: the %" PRIu32 " blocks of each die "
                  "outside garbage collection's reserve cannot hold size=%" PRIu64 " bytes: "
                  "raise over-provisioning-pct or use smaller blocks", g->blocks_per_die,
                  c->capacity_bytes);
      ssd_destroy (m);
      return none;
    }
    /* after long writing the SLC cache is full and GC is running */
    m->slc_used_bytes = c->slc_cache_bytes;
    for (uint32_t d = 0; d < g->dies; d++)
      m->dies[d].gc_active = true;
  }
  m->sata = c->interface == SL_SSD_SATA;
  m->link_ns_per_byte = m->sata ? NS_PER_S / SATA_WIRE_BYTES_PER_S
    : NS_PER_S / (PCIE3_LANE_BYTES_PER_S * c->pcie_lanes * PCIE_TLP_EFFICIENCY);
  m->channel_ns_per_byte = NS_PER_S / (double) c->channel_rate_bytes_per_s;
  m->controller_ns_per_byte = c->controller_rate_bytes_per_s
    ? NS_PER_S / (double) c->controller_rate_bytes_per_s : 0;
  m->admit_event_ns = UINT64_MAX;
  m->counter = m->own_counters;
  m->kick_pending = true;
  m->counter[COUNTER_FREE_BLOCKS] = ssd_ftl_free_blocks_total (m->ftl);
  m->counter[COUNTER_SLC_USED_BYTES] = m->slc_used_bytes;
  return (struct sl_model) { .ops = &ssd_ops, .self = m, .capacity_bytes = c->capacity_bytes,
                             .volatile_write_cache = !c->plp };
}

/* ----------------------------------------------------------- inspection -- */

static struct ssd_model *
ssd_of (const struct sl_model *m)
{
  return m != NULL && m->ops == &ssd_ops ? m->self : NULL;
}

void
sl_ssd_model_status (const struct sl_model *model, struct sl_ssd_status *out)
{
  memset (out, 0, sizeof *out);
  struct ssd_model *m = ssd_of (model);
  if (m == NULL)
    return;
  out->host_units_written = m->counter[COUNTER_HOST_PAGES_WRITTEN];
  out->nand_units_programmed = m->counter[COUNTER_NAND_PAGES_PROGRAMMED];
  out->write_amplification = write_amplification (m);
  out->free_blocks = ssd_ftl_free_blocks_total (m->ftl);
  out->queued_units = m->tail_seq - m->head_seq;
  out->state_bytes = state_bytes (m, false);
  out->state_bytes_limit = state_bytes (m, true);
  out->exact_map_units = m->ftl->entry_live;
  out->steady_victim_valid_fraction = m->steady_u;
  out->log_layout_bytes = m->log_length_bytes;
  out->written_region_bytes = m->written_length_bytes;
}

/* The SSD of model if it would take a log layout (steady state, none yet). */
static struct ssd_model *
log_layout_candidate (const struct sl_model *model)
{
  struct ssd_model *m = ssd_of (model);
  return m != NULL && m->config.precondition == SL_SSD_STEADY && m->log_length_bytes == 0
    && m->written_length_bytes == 0
    ? m : NULL;
}

uint64_t
sl_ssd_model_log_layout_bytes (const struct sl_model *model, uint64_t length_bytes)
{
  const struct ssd_model *m = log_layout_candidate (model);
  return m ? ssd_ftl_log_bytes (m->ftl, length_bytes / SL_SSD_UNIT_BYTES) : 0;
}

/* A fresh FTL in the steady state of units [first, first + count) written
 * as a log next at oldest (from first), or, written_region, written at
 * random after a fill, replaces the drive's.  1, or -1 with err (what
 * names the layout). */
static int
lay_out (struct ssd_model *m, uint64_t first, uint64_t count, uint64_t oldest,
         bool written_region, const char *what, char *err, size_t err_bytes)
{
  if (m->counter[COUNTER_HOST_PAGES_WRITTEN] || m->counter[COUNTER_HOST_PAGES_READ]
      || m->tail_seq > 0 || m->counter[COUNTER_TRIMMED_PAGES]) {
    snprintf (err, err_bytes, "ssd: %s after the drive's first I/O", what);
    return -1;
  }
  struct ssd_ftl *fresh = ssd_ftl_new (&m->g, m->config.exact_map_bytes / SL_SSD_UNIT_BYTES,
                                       0x55d5eed0ull ^ m->config.capacity_bytes);
  double u = 0;
  int rc = fresh == NULL ? -1
    : written_region ? ssd_ftl_precondition_written_region (fresh, first, count, &u)
    : ssd_ftl_precondition_log (fresh, first, count, oldest, &u);
  if (rc < 0) {
    ssd_ftl_free (fresh);
    if (rc == -1)
      snprintf (err, err_bytes, "ssd: out of memory");
    else
      snprintf (err, err_bytes, "ssd: %s does not fit the drive's steady state", what);
    return -1;
  }
  ssd_ftl_free (m->ftl);
  m->ftl = fresh;
  m->steady_u = u;
  m->counter[COUNTER_FREE_BLOCKS] = ssd_ftl_free_blocks_total (m->ftl);
  return 1;
}

int
sl_ssd_model_lay_out_log (struct sl_model *model, uint64_t offset_bytes, uint64_t length_bytes,
                          uint64_t oldest_bytes, char *err, size_t err_bytes)
{
  struct ssd_model *m = log_layout_candidate (model);
  if (m == NULL)
    return 0;
  /* whole units only: a unit the log shares with its neighbour stays theirs */
  uint64_t first = (offset_bytes + SL_SSD_UNIT_BYTES - 1) / SL_SSD_UNIT_BYTES;
  uint64_t end = sl_min_u64 (offset_bytes + length_bytes, m->config.capacity_bytes)
    / SL_SSD_UNIT_BYTES;
  if (end <= first)
    return 0;
  uint64_t oldest = oldest_bytes / SL_SSD_UNIT_BYTES;
  oldest = oldest < first || oldest >= end ? 0 : oldest - first;
  char what[96];
  snprintf (what, sizeof what, "a log of %" PRIu64 " bytes at %" PRIu64, length_bytes,
            offset_bytes);
  if (lay_out (m, first, end - first, oldest, false, what, err, err_bytes) < 0)
    return -1;
  m->log_offset_bytes = first * SL_SSD_UNIT_BYTES;
  m->log_length_bytes = (end - first) * SL_SSD_UNIT_BYTES;
  return 1;
}

uint64_t
sl_ssd_model_written_region_bytes (const struct sl_model *model, uint64_t length_bytes)
{
  const struct ssd_model *m = log_layout_candidate (model);
  return m ? ssd_ftl_written_region_bytes (m->ftl, length_bytes / SL_SSD_UNIT_BYTES) : 0;
}

int
sl_ssd_model_lay_out_written_region (struct sl_model *model, uint64_t offset_bytes,
                                     uint64_t length_bytes, char *err, size_t err_bytes)
{
  struct ssd_model *m = log_layout_candidate (model);
  if (m == NULL)
    return 0;
  /* whole units: one the region shares with its neighbour is written */
  uint64_t units = m->config.capacity_bytes / SL_SSD_UNIT_BYTES;
  uint64_t first = offset_bytes / SL_SSD_UNIT_BYTES;
  uint64_t end = sl_min_u64 ((offset_bytes + length_bytes + SL_SSD_UNIT_BYTES - 1)
                             / SL_SSD_UNIT_BYTES, units);
  if (end <= first || end - first >= units)
    return 0;                          /* all of it written: the uniform steady state */
  char what[112];
  snprintf (what, sizeof what, "a written region of %" PRIu64 " bytes at %" PRIu64,
            length_bytes, offset_bytes);
  if (lay_out (m, first, end - first, 0, true, what, err, err_bytes) < 0)
    return -1;
  m->written_offset_bytes = first * SL_SSD_UNIT_BYTES;
  m->written_length_bytes = (end - first) * SL_SSD_UNIT_BYTES;
  return 1;
}

int
sl_ssd_model_check (const struct sl_model *model, char *err, size_t err_bytes)
{
  struct ssd_model *m = ssd_of (model);
  if (m == NULL) {
    snprintf (err, err_bytes, "not an ssd model");
    return -1;
  }
  if (m->queued_live > m->tail_seq - m->head_seq || m->set_count != m->queued_live) {
    snprintf (err, err_bytes, "buffer: %" PRIu64 " live queued units, %" PRIu64
              " in the set, %" PRIu64 " ring entries", m->queued_live, m->set_count,
              m->tail_seq - m->head_seq);
    return -1;
  }
  return ssd_ftl_check (m->ftl, err, err_bytes);
}

void
sl_ssd_model_set_interval_hook (struct sl_model *model, sl_ssd_interval_fn fn, void *arg)
{
  struct ssd_model *m = ssd_of (model);
  if (m != NULL) {
    m->hook = fn;
    m->hook_arg = arg;
  }
}
