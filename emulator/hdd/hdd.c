/* hdd.c — hard disk drive model: the drive itself (head, drive cache,
 * read-ahead, write-back, NCQ scheduling); its parameters are in
 * hdd_params.c, its geometry and seek curve in hdd_geometry.c.
 *
 * Time per media command = command overhead + seek + rotational wait +
 * transfer, the last three from the geometry (hdd_geometry.c).
 * The drive cache serves read hits at the interface rate, reads ahead while
 * the head is idle, and optionally holds writes (write-back, destaged when
 * idle or when full).  NCQ picks the queued command with the shortest
 * positioning time, except that a command older than ncq-max-wait goes first.
 *
 * Modelling choices the datasheet does not settle:
 *   - every host request holds an NCQ tag until it completes; more wait in a
 *     FIFO host queue; a command's age counts from entering the NCQ.  An age
 *     limit below the queue's natural latency (depth / IOPS) turns SPTF into
 *     FIFO: with 32 tags at ~400 IOPS keep ncq-max-wait well above 80 ms.
 *   - a command that starts where the last media transfer ended and was
 *     queued by then streams on with no seek or rotational wait;
 *   - read-ahead streams at the zone's media rate (track skew ignored over
 *     its short span); a read inside the window waits for the head to get
 *     there and extends the window;
 *   - buffer-to-host transfers (cache hits, cached writes) share the link;
 *   - writes update cached read data in place (no invalidation needed);
 *   - write-back: dirty data may fill half the buffer (the write share;
 *     read segments are modelled over the whole buffer, as the firmware
 *     splits it adaptively); one write-back moves at most one segment;
 *   - FLUSH is non-queued: requests arriving after it wait until it is done.
 */
#define _GNU_SOURCE
#include "hdd.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"
#include "core/extents.h"
#include "core/queues.h"
#include "core/stats.h"
#include "hdd_internal.h"
#include "core/units.h"

/* Added to a rotational wait in turns before truncating (see positioning). */
#define ROTATION_OFFSET_TURNS 1024.0

enum hdd_counter {
  COUNTER_CACHE_READ_HITS,
  COUNTER_MEDIA_READS,
  COUNTER_MEDIA_WRITES,
  COUNTER_SEEKS,
  COUNTER_SEEK_NS_TOTAL,
  COUNTER_ROTATION_NS_TOTAL,
  COUNTER_TRANSFER_NS_TOTAL,
  COUNTER_DESTAGES,
  COUNTER_DIRTY_BYTES,
  COUNTER_READAHEAD_HITS,
  COUNTER_COUNT
};

static const char *const counter_names[COUNTER_COUNT] = {
  "cache_read_hits", "media_reads", "media_writes", "seeks", "seek_ns_total",
  "rotation_ns_total", "transfer_ns_total", "destages", "dirty_bytes", "readahead_hits",
};

/* A request held by the model (write waiting for room, FLUSH waiting for
 * write-back) keeps when its command overhead is done here. */
enum { SCRATCH_READY_NS };

/* A media command in the NCQ, with what positioning needs computed once
 * when it enters; kept contiguous so SPTF scans one small array. */
struct ncq_entry {
  struct sl_request *r;
  uint64_t offset_bytes;
  uint64_t ready_ns;           /* entered + command overhead */
  uint64_t queued_ns;          /* entered the NCQ: its age counts from here */
  uint64_t transfer_ns;
  double sector_phase_ns;      /* angle of the first sector x revolution */
  uint32_t first_cylinder, last_cylinder;
  bool write;
};

/* Read cache segment: valid data [start_byte, end_byte) from ready_ns. */
struct segment {
  uint64_t start_byte, end_byte;
  uint64_t ready_ns;
  uint64_t last_use;
};

/* Dirty (write-cached) extent; the list is sorted, disjoint, non-adjacent. */
struct positioning {
  uint64_t wait_ns;            /* until the command's overhead is done */
  double seek_ns;              /* rounded to whole ns once the command starts */
  double rotation_ns;
};

struct hdd_model {
  struct sl_hdd_config config;
  struct sl_hdd_geometry g;
  struct sl_engine *engine;
  double interface_ns_per_byte;
  double revolution_ns_f;
  double inverse_revolution_ns;

  /* head */
  uint64_t head_free_ns;       /* end of the media work the head is committed to */
  uint32_t head_cylinder;
  uint64_t last_end_byte;      /* where the last media transfer ended ... */
  uint64_t last_end_ns;        /* ... and when (streaming continues with no positioning) */
  uint64_t head_token;         /* newest head-free event; older ones are stale */
  uint64_t head_event_ns;
  bool head_event_pending;
  uint64_t interface_free_ns;  /* the link carries one cache transfer at a time */

  /* read cache and read-ahead */
  struct segment *segments;
  uint32_t segment_count;
  uint64_t segment_bytes;
  uint64_t lru_clock;
  int ra_segment;              /* segment being filled by read-ahead, or -1 */
  uint64_t ra_from_byte;       /* read-ahead started here ... */
  uint64_t ra_start_ns;        /* ... at this time, */
  uint64_t ra_limit_byte;      /* and stops here */
  double ra_ns_per_byte;

  /* NCQ: queued media commands (unordered) */
  struct ncq_entry *ncq;
  uint32_t ncq_count;
  /* host queue: requests waiting for a free tag (FIFO via model_next) */
  struct sl_request *host_head, *host_tail;
  /* tags: held by requests whose completion is not yet decided (unknown)
   * and by those completing in the future (min-heap of completion times) */
  uint32_t tags_undecided;
  uint64_t *release_heap;
  uint32_t release_count;
  uint64_t admit_event_ns;     /* pending admission event, UINT64_MAX if none */

  /* write cache */
  uint64_t write_share_bytes;
  struct sl_extents dirty;     /* written, not yet on the media (bytes: in the list) */
  uint64_t destage_chunk_bytes;        /* largest single write-back */
  bool destage_active;
  uint64_t destage_end_ns;
  uint64_t destaging_bytes;    /* being written to media: still dirty until done */
  uint64_t destage_start_byte; /* ... from here */
  struct sl_request *wait_head, *wait_tail;    /* writes waiting for room */
  struct sl_request *flush_pending;
  uint64_t barrier_until_ns;   /* FLUSH is non-queued: nothing new enters before */
  bool idle_destaging;
  bool idle_timer_armed;
  uint64_t idle_token;

  uint64_t own_counters[COUNTER_COUNT];
  uint64_t *counter;           /* the stats record's slots once attached */
};

/* ---------------------------------------------------------- small helpers -- */


static inline uint64_t
dirty_total (const struct hdd_model *m)
{
  return m->dirty.bytes + m->destaging_bytes;
}

static inline void
update_dirty_counter (struct hdd_model *m)
{
  m->counter[COUNTER_DIRTY_BYTES] = dirty_total (m);
}

static inline uint64_t
interface_ns (const struct hdd_model *m, uint64_t bytes)
{
  return (uint64_t) ceil ((double) bytes * m->interface_ns_per_byte);
}

/* Data moved over the host link from the buffer (cache hits, cached writes). */
static uint64_t
interface_transfer (struct hdd_model *m, uint64_t ready_ns, uint64_t bytes)
{
  uint64_t start = sl_max_u64 (ready_ns, m->interface_free_ns);
  m->interface_free_ns = start + interface_ns (m, bytes);
  return m->interface_free_ns;
}

/* ------------------------------------------------------------------ tags -- */

/* The request's completion is decided: announce it, its tag frees then. */
static void
complete_at (struct hdd_model *m, struct sl_request *r, uint64_t when)
{
  sl_release_push (m->release_heap, &m->release_count, when);
  sl_engine_complete (m->engine, r, when);
}

static bool
destage_urgent (const struct hdd_model *m)
{
  /* above 3/4 of the write share, or someone is waiting on destage */
  return dirty_total (m) * 4 > m->write_share_bytes * 3
    || m->wait_head != NULL || m->flush_pending != NULL;
}

/* ------------------------------------------------------------ read-ahead -- */

static inline uint64_t
ra_frontier (const struct hdd_model *m, uint64_t t)
{
  if (t <= m->ra_start_ns)
    return m->ra_from_byte;
  /* small slack so frontier(fill_time(x)) >= x despite rounding */
  uint64_t read = (uint64_t) ((double) (t - m->ra_start_ns) / m->ra_ns_per_byte + 1e-6);
  return sl_min_u64 (m->ra_limit_byte, m->ra_from_byte + read);
}

static inline uint64_t
ra_fill_time (const struct hdd_model *m, uint64_t byte)
{
  if (byte <= m->ra_from_byte)
    return m->ra_start_ns;
  return m->ra_start_ns + (uint64_t) ceil ((double) (byte - m->ra_from_byte) * m->ra_ns_per_byte);
}

static inline uint64_t
segment_valid_start (const struct hdd_model *m, const struct segment *s, uint64_t valid_end)
{
  uint64_t ring_start = valid_end > m->segment_bytes ? valid_end - m->segment_bytes : 0;
  return sl_max_u64 (s->start_byte, ring_start);
}

/* A media command takes the head at time t: read-ahead ends where it got to. */
static void
stop_readahead (struct hdd_model *m, uint64_t t)
{
  if (m->ra_segment < 0)
    return;
  struct segment *s = &m->segments[m->ra_segment];
  uint64_t frontier = ra_frontier (m, t);
  s->start_byte = segment_valid_start (m, s, frontier);
  s->end_byte = frontier;
  /* the head is over the last byte it read */
  uint64_t at = sl_min_u64 (frontier > 0 ? frontier - 1 : 0, m->config.capacity_bytes - 1);
  m->head_cylinder = locate_fast (&m->g, at, NULL, NULL);
  m->last_end_byte = frontier;
  m->last_end_ns = sl_max_u64 (t, m->ra_start_ns);
  m->ra_segment = -1;
}

/* After a media read: the data goes into the least recently used segment,
 * and the head keeps reading the following sectors while idle. */
static void
fill_segment (struct hdd_model *m, uint64_t offset, uint64_t length, uint64_t end_ns)
{
  if (m->segment_count == 0)
    return;
  uint32_t victim = 0;
  for (uint32_t i = 1; i < m->segment_count; i++)
    if (m->segments[i].last_use < m->segments[victim].last_use)
      victim = i;
  struct segment *s = &m->segments[victim];
  uint64_t end = offset + length;
  s->start_byte = length > m->segment_bytes ? end - m->segment_bytes : offset;
  s->end_byte = end;
  s->ready_ns = end_ns;
  s->last_use = ++m->lru_clock;
  if (m->config.read_ahead_bytes == 0 || end >= m->config.capacity_bytes)
    return;
  m->ra_segment = (int) victim;
  m->ra_from_byte = end;
  m->ra_start_ns = end_ns;
  m->ra_limit_byte = sl_min_u64 (m->config.capacity_bytes, end + m->config.read_ahead_bytes);
  const struct sl_hdd_zone *z = &m->g.zones[zone_index (&m->g, end)];
  m->ra_ns_per_byte = (double) m->g.revolution_ns / (double) z->track_bytes;
}

/* Cache lookup for a read at now.  True (with the completion time) when the
 * drive serves it from the buffer or from the read-ahead stream. */
static bool
read_from_cache (struct hdd_model *m, const struct sl_request *r, uint64_t now,
                 uint64_t ready, uint64_t *when)
{
  uint64_t start = r->offset_bytes, length = r->length_bytes, end = start + length;
  if (sl_extents_covers (&m->dirty, start, end)) {
    *when = interface_transfer (m, ready, length);
    m->counter[COUNTER_CACHE_READ_HITS]++;
    return true;
  }
  for (uint32_t i = 0; i < m->segment_count; i++) {
    struct segment *s = &m->segments[i];
    uint64_t valid_end = (int) i == m->ra_segment ? ra_frontier (m, now) : s->end_byte;
    uint64_t valid_start = segment_valid_start (m, s, valid_end);
    if (start >= valid_start && end <= valid_end && valid_end > valid_start) {
      s->last_use = ++m->lru_clock;
      *when = interface_transfer (m, sl_max_u64 (ready, s->ready_ns), length);
      m->counter[COUNTER_CACHE_READ_HITS]++;
      return true;
    }
  }
  if (m->ra_segment >= 0 && length <= m->segment_bytes) {
    /* Inside the read-ahead window but not read yet: wait for the head to
     * get there; the read-ahead goes on past the request. */
    struct segment *s = &m->segments[m->ra_segment];
    uint64_t valid_start = segment_valid_start (m, s, ra_frontier (m, now));
    if (start >= valid_start && start < m->ra_limit_byte) {
      uint64_t filled = ra_fill_time (m, end);
      *when = sl_max_u64 (ready + interface_ns (m, length), filled);
      m->ra_limit_byte = sl_min_u64 (m->config.capacity_bytes,
                                  sl_max_u64 (m->ra_limit_byte, end + m->config.read_ahead_bytes));
      m->head_free_ns = sl_max_u64 (m->head_free_ns, filled);
      s->last_use = ++m->lru_clock;
      m->counter[COUNTER_READAHEAD_HITS]++;
      return true;
    }
  }
  return false;
}

/* ----------------------------------------------------------- positioning -- */

/* Time from t until the first sector of a target is under the head, in ns
 * (doubles for comparing candidates; rounded once the command starts).
 * t_phase_ns = t mod revolution, computed once per pick; sector_phase_ns
 * is the sector's angle times the revolution. */
static inline double
positioning (const struct hdd_model *m, uint64_t t, double t_phase_ns, uint64_t ready_ns,
             uint64_t issued_ns, uint64_t offset, uint32_t cylinder, double sector_phase_ns,
             bool write, struct positioning *p)
{
  uint64_t wait = ready_ns > t ? ready_ns - t : 0;
  p->wait_ns = wait;
  /* streaming: the next sector is right under the head */
  if (offset == m->last_end_byte && issued_ns <= m->last_end_ns) {
    p->seek_ns = p->rotation_ns = 0;
    return (double) wait;
  }
  uint32_t distance = cylinder > m->head_cylinder ? cylinder - m->head_cylinder
    : m->head_cylinder - cylinder;
  double seek = seek_ns_branchless (&m->g, distance, write);
  /* rotational wait = frac(sector angle - platter angle on arrival) turns;
   * the offset keeps the argument positive (wait + seek < 1024 turns) so
   * truncation is floor */
  double turns = (sector_phase_ns - t_phase_ns - (double) wait - seek) * m->inverse_revolution_ns
    + ROTATION_OFFSET_TURNS;
  double rotation = (turns - (double) (int64_t) turns) * m->revolution_ns_f;
  if (rotation > m->revolution_ns_f - 0.5)
    rotation = 0;                      /* rounding, not a missed turn */
  p->seek_ns = seek;
  p->rotation_ns = rotation;
  return (double) wait + seek + rotation;
}

/* A media operation starting at now: the time its transfer begins. */
static uint64_t
begin_media (struct hdd_model *m, uint64_t now, const struct positioning *p,
             uint64_t transfer_ns)
{
  uint64_t seek = (uint64_t) (p->seek_ns + 0.5), rotation = (uint64_t) (p->rotation_ns + 0.5);
  if (seek > 0)
    m->counter[COUNTER_SEEKS]++;
  m->counter[COUNTER_SEEK_NS_TOTAL] += seek;
  m->counter[COUNTER_ROTATION_NS_TOTAL] += rotation;
  m->counter[COUNTER_TRANSFER_NS_TOTAL] += transfer_ns;
  return now + p->wait_ns + seek + rotation;
}

/* ------------------------------------------------------------- media ops -- */

static void
enqueue_media (struct hdd_model *m, struct sl_request *r, uint64_t now, uint64_t ready,
               bool write)
{
  uint64_t first = r->offset_bytes, last = r->offset_bytes + r->length_bytes - 1;
  if (last >= m->config.capacity_bytes)
    last = m->config.capacity_bytes - 1;       /* the engine checks bounds; stay safe */
  if (first > last)
    first = last;
  struct ncq_entry *q = &m->ncq[m->ncq_count++];
  q->r = r;
  q->offset_bytes = r->offset_bytes;
  q->ready_ns = ready;
  q->queued_ns = now;
  q->write = write;
  double angle;
  q->first_cylinder = locate_fast (&m->g, first, &angle, NULL);
  q->sector_phase_ns = angle * m->revolution_ns_f;
  q->last_cylinder = locate_fast (&m->g, last, NULL, NULL);
  q->transfer_ns = media_transfer_ns (&m->g, first, last - first + 1, q->first_cylinder,
                                      q->last_cylinder);
  m->tags_undecided++;
  /* host media work: the drive is no longer idle */
  m->idle_destaging = false;
  m->idle_timer_armed = false;
  m->idle_token++;
}

static inline double
command_positioning (const struct hdd_model *m, uint64_t t, double t_phase_ns,
                     const struct ncq_entry *q, struct positioning *p)
{
  return positioning (m, t, t_phase_ns, q->ready_ns, q->queued_ns, q->offset_bytes,
                      q->first_cylinder, q->sector_phase_ns, q->write, p);
}

static void
start_command (struct hdd_model *m, uint32_t index, uint64_t now, const struct positioning *p)
{
  struct ncq_entry q = m->ncq[index];
  m->ncq[index] = m->ncq[--m->ncq_count];
  struct sl_request *r = q.r;
  bool write = q.write;
  uint64_t transfer = q.transfer_ns;
  uint64_t transfer_start = begin_media (m, now, p, transfer);
  uint64_t end = transfer_start + transfer;
  m->counter[write ? COUNTER_MEDIA_WRITES : COUNTER_MEDIA_READS]++;

  m->head_free_ns = end;
  m->head_cylinder = q.last_cylinder;
  m->last_end_byte = r->offset_bytes + r->length_bytes;
  m->last_end_ns = end;
  /* a read's data goes to the host while it comes off the media */
  uint64_t completion = write ? end
    : sl_max_u64 (end, transfer_start + interface_ns (m, r->length_bytes));
  if (!write)
    fill_segment (m, r->offset_bytes, r->length_bytes, end);
  m->tags_undecided--;
  complete_at (m, r, completion);
}

/* Positioning cost of destaging dirty extent i; *seek_bound is a lower
 * bound of it that only grows moving away from the head. */
static double
destage_cost (const struct hdd_model *m, uint64_t now, double now_phase_ns, size_t i,
              uint32_t *cylinder, double *seek_bound, struct positioning *p)
{
  const struct sl_extent *x = &m->dirty.e[i];
  double angle;
  *cylinder = locate_fast (&m->g, x->offset_bytes, &angle, NULL);
  uint32_t distance = *cylinder > m->head_cylinder ? *cylinder - m->head_cylinder
    : m->head_cylinder - *cylinder;
  *seek_bound = seek_ns (&m->g, distance, true);
  return positioning (m, now, now_phase_ns, now, now, x->offset_bytes, *cylinder,
                      angle * m->revolution_ns_f, true, p);
}

/* SPTF over the dirty list: scan outward from the head's position in the
 * sorted list, stopping a direction once the seek alone exceeds the best. */
static double
best_destage (const struct hdd_model *m, uint64_t now, double now_phase_ns,
              size_t *best_index, struct positioning *best_p)
{
  double best = INFINITY;
  size_t origin = sl_extents_lower_bound (&m->dirty,
                                          m->last_end_byte == UINT64_MAX ? 0 : m->last_end_byte);
  struct positioning p;
  uint32_t cylinder;
  double bound;
  for (size_t i = origin; i < m->dirty.count; i++) {
    double cost = destage_cost (m, now, now_phase_ns, i, &cylinder, &bound, &p);
    if (cost < best) {
      best = cost;
      *best_index = i;
      *best_p = p;
    }
    else if (cylinder >= m->head_cylinder && bound >= best)
      break;
  }
  for (size_t i = origin; i-- > 0;) {
    double cost = destage_cost (m, now, now_phase_ns, i, &cylinder, &bound, &p);
    if (cost < best) {
      best = cost;
      *best_index = i;
      *best_p = p;
    }
    else if (cylinder <= m->head_cylinder && bound >= best)
      break;
  }
  return best;
}

static void
start_destage (struct hdd_model *m, size_t index, uint64_t now, const struct positioning *p)
{
  const struct sl_extent *x = &m->dirty.e[index];
  uint64_t start = x->offset_bytes;
  uint64_t chunk = sl_min_u64 (x->length_bytes, m->destage_chunk_bytes);
  /* the front of one extent: never a split, so never an allocation */
  sl_extents_remove (&m->dirty, start, start + chunk);
  m->destaging_bytes = chunk;
  m->destage_start_byte = start;
  uint32_t first_cylinder = locate_fast (&m->g, start, NULL, NULL);
  uint32_t last_cylinder = locate_fast (&m->g, start + chunk - 1, NULL, NULL);
  uint64_t transfer = media_transfer_ns (&m->g, start, chunk, first_cylinder, last_cylinder);
  uint64_t end = begin_media (m, now, p, transfer) + transfer;
  m->counter[COUNTER_DESTAGES]++;
  m->head_free_ns = end;
  m->head_cylinder = last_cylinder;
  m->last_end_byte = start + chunk;
  m->last_end_ns = end;
  m->destage_active = true;
  m->destage_end_ns = end;
}

/* ------------------------------------------------------------ scheduling -- */

static void head_event (struct sl_engine *e, void *arg, uint64_t token);
static void idle_event (struct sl_engine *e, void *arg, uint64_t token);
static void admit_event (struct sl_engine *e, void *arg, uint64_t when_ns);

/* Write-back starts after the drive has been idle for idle-destage-delay. */
static void
arm_idle_timer (struct hdd_model *m, uint64_t now)
{
  if (m->dirty.count == 0 || m->idle_destaging || m->idle_timer_armed)
    return;
  m->idle_timer_armed = true;
  m->idle_token++;
  sl_engine_schedule (m->engine, now + m->config.idle_destage_delay_ns, idle_event, m,
                      m->idle_token);
}

/* The head is free at now: start the queued command (or write-back) that
 * reaches its first sector soonest; a command past ncq-max-wait goes first. */
static void
pick_next (struct hdd_model *m, uint64_t now)
{
  bool destage_allowed = m->dirty.count > 0 && (m->idle_destaging || destage_urgent (m));
  if (m->ncq_count == 0 && !destage_allowed) {
    arm_idle_timer (m, now);
    return;
  }
  stop_readahead (m, now);
  double now_phase_ns = (double) (now % m->g.revolution_ns);
  struct positioning best_p = { 0 }, p;
  double best = INFINITY;
  uint32_t best_index = 0, oldest = 0;
  for (uint32_t i = 0; i < m->ncq_count; i++) {
    const struct ncq_entry *q = &m->ncq[i];
    if (q->queued_ns < m->ncq[oldest].queued_ns)
      oldest = i;
    double cost = command_positioning (m, now, now_phase_ns, q, &p);
    /* ties go to the older command */
    if (cost < best || (cost == best && q->queued_ns < m->ncq[best_index].queued_ns)) {
      best = cost;
      best_index = i;
      best_p = p;
    }
  }
  bool aged = m->ncq_count > 0 && now - m->ncq[oldest].queued_ns > m->config.ncq_max_wait_ns;
  if (aged) {
    best_index = oldest;
    command_positioning (m, now, now_phase_ns, &m->ncq[oldest], &best_p);
  }
  else if (destage_allowed) {
    size_t index = 0;
    struct positioning destage_p = { 0 };
    if (best_destage (m, now, now_phase_ns, &index, &destage_p) < best) {
      start_destage (m, index, now, &destage_p);
      return;
    }
  }
  start_command (m, best_index, now, &best_p);
}

static bool
head_work_pending (const struct hdd_model *m)
{
  return m->ncq_count > 0 || m->destage_active || m->dirty.count > 0;
}

static void
kick (struct hdd_model *m, uint64_t now)
{
  if (m->head_free_ns <= now)
    pick_next (m, now);
  if (m->head_free_ns > now && head_work_pending (m)
      && !(m->head_event_pending && m->head_event_ns == m->head_free_ns)) {
    m->head_token++;
    m->head_event_pending = true;
    m->head_event_ns = m->head_free_ns;
    sl_engine_schedule (m->engine, m->head_free_ns, head_event, m, m->head_token);
  }
}

/* ---------------------------------------------------------- write cache -- */

static void
admit_waiting_writes (struct hdd_model *m, uint64_t now)
{
  while (m->wait_head != NULL) {
    struct sl_request *r = m->wait_head;
    uint64_t start = r->offset_bytes, length = r->length_bytes;
    if (dirty_total (m) + length > m->write_share_bytes)
      break;
    sl_fifo_pop (&m->wait_head, &m->wait_tail);
    m->tags_undecided--;
    uint64_t ready = sl_max_u64 (now, r->model_scratch[SCRATCH_READY_NS]);
    if (sl_extents_add (&m->dirty, start, start + length) < 0) {
      enqueue_media (m, r, now, ready, true);  /* no memory for an extent: write through */
      continue;
    }
    complete_at (m, r, interface_transfer (m, ready, length));
  }
}

static void
finish_flush (struct hdd_model *m, uint64_t now)
{
  struct sl_request *r = m->flush_pending;
  uint64_t when = sl_max_u64 (now, r->model_scratch[SCRATCH_READY_NS]);
  m->flush_pending = NULL;
  m->barrier_until_ns = when;
  m->tags_undecided--;
  complete_at (m, r, when);
}

static void
finish_destage (struct hdd_model *m, uint64_t now)
{
  m->destage_active = false;
  m->destaging_bytes = 0;
  admit_waiting_writes (m, now);
  if (m->flush_pending != NULL && dirty_total (m) == 0)
    finish_flush (m, now);
  update_dirty_counter (m);
}

/* --------------------------------------------------------------- dispatch -- */

/* A request takes an NCQ tag: serve it from the buffer, queue it for the
 * media, or hold it (write waiting for room, FLUSH waiting for write-back). */
static void
dispatch (struct hdd_model *m, struct sl_request *r, uint64_t now)
{
  uint64_t ready = now + m->config.command_overhead_ns;
  uint64_t start = r->offset_bytes, length = r->length_bytes;
  uint64_t when;
  switch (r->op) {
  case SL_OP_READ:
    if (length == 0)
      break;
    if (read_from_cache (m, r, now, ready, &when)) {
      complete_at (m, r, when);
      return;
    }
    enqueue_media (m, r, now, ready, false);
    return;

  case SL_OP_WRITE:
    if (length == 0)
      break;
    if (m->config.write_cache && !(r->flags & SL_REQUEST_FUA)
        && length <= m->write_share_bytes) {
      if (m->wait_head != NULL || dirty_total (m) + length > m->write_share_bytes) {
        r->model_scratch[SCRATCH_READY_NS] = ready;
        sl_fifo_append (&m->wait_head, &m->wait_tail, r);
        m->tags_undecided++;
        return;
      }
      if (sl_extents_add (&m->dirty, start, start + length) == 0) {
        update_dirty_counter (m);
        complete_at (m, r, interface_transfer (m, ready, length));
        return;
      }
      /* no memory for another extent: write through */
    }
    enqueue_media (m, r, now, ready, true);
    return;

  case SL_OP_FLUSH:
    if (dirty_total (m) > 0) {
      r->model_scratch[SCRATCH_READY_NS] = ready;
      m->flush_pending = r;
      m->tags_undecided++;
      return;
    }
    break;

  case SL_OP_TRIM:             /* disks do not trim: a no-op after the overhead */
  default:
    break;
  }
  complete_at (m, r, ready);
}

static void
admit_from_host (struct hdd_model *m, uint64_t now)
{
  while (m->host_head != NULL && m->flush_pending == NULL && now >= m->barrier_until_ns) {
    sl_release_prune (m->release_heap, &m->release_count, now);
    if (m->tags_undecided + m->release_count >= m->config.ncq_depth)
      break;
    dispatch (m, sl_fifo_pop (&m->host_head, &m->host_tail), now);
  }
}

/* Host requests wait for a tag: wake up when the next one frees. */
static void
arm_admit (struct hdd_model *m, uint64_t now)
{
  if (m->host_head == NULL || m->flush_pending != NULL)
    return;                    /* finish_flush sets the barrier time */
  uint64_t next;
  if (now < m->barrier_until_ns)
    next = m->barrier_until_ns;
  else if (m->release_count > 0)
    next = m->release_heap[0];
  else
    return;                    /* tags held by undecided commands: armed when decided */
  if (next >= m->admit_event_ns)
    return;
  m->admit_event_ns = next;
  sl_engine_schedule (m->engine, next, admit_event, m, next);
}

/* Brings the model to now: write-back that finished, tags that freed. */
static void
catch_up (struct hdd_model *m, uint64_t now)
{
  if (m->destage_active && m->destage_end_ns <= now)
    finish_destage (m, now);
  sl_release_prune (m->release_heap, &m->release_count, now);
}

static void
run (struct hdd_model *m, uint64_t now)
{
  admit_from_host (m, now);
  kick (m, now);
  arm_admit (m, now);
}

static void
head_event (struct sl_engine *e, void *arg, uint64_t token)
{
  struct hdd_model *m = arg;
  uint64_t now = sl_engine_now_ns (e);
  m->engine = e;
  if (token == m->head_token)
    m->head_event_pending = false;
  catch_up (m, now);
  run (m, now);
}

static void
idle_event (struct sl_engine *e, void *arg, uint64_t token)
{
  struct hdd_model *m = arg;
  uint64_t now = sl_engine_now_ns (e);
  m->engine = e;
  catch_up (m, now);
  if (token == m->idle_token && m->idle_timer_armed) {
    m->idle_timer_armed = false;
    if (m->ncq_count == 0 && m->head_free_ns <= now)
      m->idle_destaging = true;
  }
  run (m, now);
}

static void
admit_event (struct sl_engine *e, void *arg, uint64_t when_ns)
{
  struct hdd_model *m = arg;
  uint64_t now = sl_engine_now_ns (e);
  m->engine = e;
  if (when_ns == m->admit_event_ns)
    m->admit_event_ns = UINT64_MAX;
  catch_up (m, now);
  run (m, now);
}

/* ---------------------------------------------------------- model ops -- */

static void
hdd_attach (void *self, struct sl_engine *e, struct sl_device_stats *stats)
{
  struct hdd_model *m = self;
  m->engine = e;
  if (stats == NULL)
    return;
  m->counter = sl_device_stats_adopt_counters (stats, counter_names, m->own_counters, COUNTER_COUNT);
}

static void
hdd_submit (void *self, struct sl_engine *e, struct sl_request *r)
{
  struct hdd_model *m = self;
  uint64_t now = sl_engine_now_ns (e);
  m->engine = e;
  catch_up (m, now);
  sl_fifo_append (&m->host_head, &m->host_tail, r);
  run (m, now);
}

static void
hdd_write_json (void *self, FILE *out)
{
  const struct hdd_model *m = self;
  const struct sl_hdd_geometry *g = &m->g;
  fprintf (out, "\"revolution_ns\": %" PRIu64 ", \"cylinders\": %" PRIu32
           ", \"zones\": %" PRIu32 ", \"heads\": %" PRIu32
           ", \"outer_track_bytes\": %" PRIu64 ", \"inner_track_bytes\": %" PRIu64,
           g->revolution_ns, g->cylinders, g->zone_count, g->heads,
           g->zones[0].track_bytes, g->zones[g->zone_count - 1].track_bytes);
  fprintf (out, ", \"seek_curve\": {\"sqrt_a_ns\": %.3f, \"sqrt_b_ns\": %.6f, "
           "\"linear_c_ns\": %.3f, \"linear_e_ns\": %.6f, \"boundary_cylinders\": %.3f, "
           "\"write_settle_ns\": %.0f}",
           g->sqrt_a_ns, g->sqrt_b_ns, g->linear_c_ns, g->linear_e_ns,
           g->boundary_cylinders, g->write_settle_ns);
  fprintf (out, ", \"fitted_average_seek_ns\": %.1f, \"skew_fraction\": %.6f"
           ", \"dirty_bytes\": %" PRIu64 ", \"counters\": {",
           g->fitted_average_seek_ns, g->skew_fraction, dirty_total (m));
  for (unsigned i = 0; i < COUNTER_COUNT; i++)
    fprintf (out, "%s\"%s\": %" PRIu64, i ? ", " : "", counter_names[i], m->counter[i]);
  fputs ("}", out);
}

/* Volatile: the dirty list, and a write-back still under way (a torn
 * write-back counts as lost). */
static void
hdd_volatile_ranges (void *self, void (*fn) (void *arg, uint64_t offset_bytes, uint64_t length_bytes),
                     void *arg)
{
  struct hdd_model *m = self;
  catch_up (m, sl_engine_now_ns (m->engine));
  bool destage_pending = m->destaging_bytes > 0;
  for (size_t i = 0; i < m->dirty.count; i++) {
    const struct sl_extent *x = &m->dirty.e[i];
    if (destage_pending && m->destage_start_byte < x->offset_bytes) {
      fn (arg, m->destage_start_byte, m->destaging_bytes);
      destage_pending = false;
    }
    fn (arg, x->offset_bytes, x->length_bytes);
  }
  if (destage_pending)
    fn (arg, m->destage_start_byte, m->destaging_bytes);
}

/* Power cut: the buffer's dirty data is gone.  The head finishes the
 * write-back it is on (timing only); a FLUSH waiting for write-back has
 * nothing left to wait for. */
static void
hdd_power_cut (void *self)
{
  struct hdd_model *m = self;
  uint64_t now = sl_engine_now_ns (m->engine);
  catch_up (m, now);
  sl_extents_clear (&m->dirty);
  m->destaging_bytes = 0;
  m->idle_destaging = false;
  if (m->flush_pending != NULL)
    finish_flush (m, now);
  admit_waiting_writes (m, now);
  update_dirty_counter (m);
  run (m, now);
}

static void
hdd_destroy (void *self)
{
  struct hdd_model *m = self;
  if (m == NULL)
    return;
  sl_hdd_geometry_free (&m->g);
  free (m->segments);
  free (m->ncq);
  free (m->release_heap);
  sl_extents_free (&m->dirty);
  free (m);
}

static const struct sl_model_ops hdd_ops = {
  .kind = "hdd",
  .attach = hdd_attach,
  .submit = hdd_submit,
  .write_json = hdd_write_json,
  .destroy = hdd_destroy,
  .volatile_ranges = hdd_volatile_ranges,
  .power_cut = hdd_power_cut,
};

struct sl_model
sl_hdd_model_new (const struct sl_hdd_config *c, char *err, size_t err_bytes)
{
  struct sl_model none = { 0 };
  if (sl_hdd_config_validate (c, err, err_bytes) < 0)
    return none;
  struct hdd_model *m = calloc (1, sizeof *m);
  if (m == NULL) {
    snprintf (err, err_bytes, "hdd: out of memory");
    return none;
  }
  m->config = *c;
  if (sl_hdd_geometry_build (c, &m->g, err, err_bytes) < 0) {
    free (m);
    return none;
  }
  m->segment_count = c->cache_bytes > 0 ? c->cache_segments : 0;
  m->segment_bytes = m->segment_count ? c->cache_bytes / c->cache_segments : 0;
  m->segments = calloc (c->cache_segments, sizeof *m->segments);
  m->ncq = calloc (c->ncq_depth, sizeof *m->ncq);
  m->release_heap = calloc (c->ncq_depth, sizeof *m->release_heap);
  if (m->segments == NULL || m->ncq == NULL || m->release_heap == NULL) {
    snprintf (err, err_bytes, "hdd: out of memory");
    hdd_destroy (m);
    return none;
  }
  /* Write share: dirty data may take half the buffer (read segments are
   * modelled over the whole buffer: the firmware splits it adaptively). */
  m->write_share_bytes = c->write_cache ? c->cache_bytes / 2 : 0;
  m->destage_chunk_bytes = sl_max_u64 (m->segment_bytes, MIN_SEGMENT_BYTES);
  m->interface_ns_per_byte = NS_PER_S / (double) c->interface_rate_bytes_per_s;
  m->revolution_ns_f = (double) m->g.revolution_ns;
  m->inverse_revolution_ns = 1 / m->revolution_ns_f;
  m->last_end_byte = UINT64_MAX;       /* nothing to stream from yet */
  m->ra_segment = -1;
  m->admit_event_ns = UINT64_MAX;
  m->counter = m->own_counters;
  return (struct sl_model) { .ops = &hdd_ops, .self = m, .capacity_bytes = c->capacity_bytes,
                             .volatile_write_cache = c->write_cache };
}
