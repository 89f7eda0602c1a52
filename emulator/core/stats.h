/* stats.h — per-device statistics, live in a shared file.
 *
 * The engine updates a struct sl_device_stats on every arrival and
 * completion (always under the engine lock).  A stats file holds a header
 * and one or more device records (a RAID controller later adds one record
 * per layer), mapped MAP_SHARED so another process can read it while the
 * device runs.  Writers bump `sequence` to odd before an update and to even
 * after it (a seqlock); readers copy a record and retry while the sequence
 * was odd or changed.
 */
#ifndef STORLAB_STATS_H
#define STORLAB_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "histogram.h"
#include "request.h"

#define SL_STATS_MAGIC "STORLAB-STATS-1"
/* 2: a record holds its engine's latency offset; 3: and how early requests
 * were released */
#define SL_STATS_FILE_VERSION 3u
#define SL_STATS_NAME_BYTES 48

struct sl_op_stats {
  uint64_t count;              /* completed requests */
  uint64_t bytes;
  struct sl_histogram latency_ns;      /* arrival -> completion */
};

/* Real time only: what the release path (release.h) runs with and has
 * learnt, as of the last release. */
struct sl_release_path {
  uint64_t handover_ns;        /* futex wake -> the released thread running */
  uint64_t timer_late_ns;      /* how late the leading thread's timed sleeps end */
  uint64_t spin_cores;
};

struct sl_device_stats {
  volatile uint64_t sequence;  /* seqlock: odd while being written */
  char name[SL_STATS_NAME_BYTES];
  char kind[16];               /* "hdd", "ssd", "raid", "fixed" */
  uint64_t capacity_bytes;
  uint64_t now_ns;             /* engine time of the last update */
  uint64_t queue_depth;        /* requests arrived, not completed */
  uint64_t max_queue_depth;
  uint64_t queue_depth_integral_ns;    /* sum of depth * dt: mean depth = this / elapsed */
  uint64_t busy_ns;            /* time with queue_depth > 0 (iostat %util) */
  uint64_t last_change_ns;     /* when queue_depth last changed */
  uint64_t started_ns;         /* engine time stats began */
  uint64_t arrivals;
  struct sl_op_stats op[SL_OP_COUNT];
  /* Real time only: how late requests were released past their deadline.
   * A lab whose releases run late measures the host, not the model. */
  struct sl_histogram release_lateness_ns;
  /* ... and how early (each release counts in both, 0 in the one it is
   * not): the release path wakes threads ahead by a learnt hand-over, and a
   * figure learnt wrong shows here as requests leaving before the model
   * says, which a client sees as a faster device. */
  struct sl_histogram release_early_ns;
  struct sl_release_path release_path;
  /* How much earlier than its model completion a request is released (the
   * engine's latency offset, engine.h): an offset at or above a request's
   * modelled latency releases it at once, and its client never feels it. */
  uint64_t latency_offset_ns;
  /* model-specific counters (named, for JSON): e.g. hdd cache hits, seeks */
  uint64_t model_counter[16];
  char model_counter_name[16][24];
};

struct sl_stats_file_header {
  char magic[16];
  uint32_t version;
  uint32_t record_count;
  uint64_t record_bytes;       /* sizeof (struct sl_device_stats) */
  uint64_t clock_epoch_ns;     /* sl_clock_monotonic_ns() at engine time 0, or 0 for virtual time */
};

void sl_device_stats_init (struct sl_device_stats *s, const char *name,
                           const char *kind, uint64_t capacity_bytes,
                           uint64_t now_ns);

/* Engine hooks; callers hold the engine lock. */
void sl_device_stats_arrival (struct sl_device_stats *s, uint64_t now_ns);
void sl_device_stats_completion (struct sl_device_stats *s, enum sl_op op,
                                 uint64_t length_bytes, uint64_t latency_ns,
                                 uint64_t now_ns);
/* Real-time drivers: a request left left_against_deadline_ns after its
 * deadline (negative: before it); path: the release path's figures then. */
void sl_device_stats_release (struct sl_device_stats *s, int64_t left_against_deadline_ns,
                              const struct sl_release_path *path);
/* The engine's latency offset changed to offset_ns. */
void sl_device_stats_latency_offset (struct sl_device_stats *s, uint64_t offset_ns);
/* Name a model counter slot (index < 16). */
void sl_device_stats_name_counter (struct sl_device_stats *s, unsigned index,
                                   const char *name);

/* A model's counters move into the record: names the first count slots,
 * copies the values the model counted so far, and returns the slots the
 * model updates from now on. */
uint64_t *sl_device_stats_adopt_counters (struct sl_device_stats *s,
                                          const char *const names[],
                                          const uint64_t *values, unsigned count);

/* Consistent copy of a live record (seqlock read). */
void sl_device_stats_snapshot (const struct sl_device_stats *live,
                               struct sl_device_stats *copy);

/* Writes one record as a JSON object (no trailing newline). */
void sl_device_stats_write_json (const struct sl_device_stats *s, FILE *out);

/* A shared stats file with record_count records.  Creates or empties path
 * (mode 0644) as an owned file (owned_file.h: no links followed, refused
 * while another live device holds it, locked until closed).  Returns NULL
 * with a message in err on failure. */
struct sl_stats_file;
struct sl_stats_file *sl_stats_file_create (const char *path, unsigned record_count,
                                            uint64_t clock_epoch_ns,
                                            char *err, size_t err_bytes);
/* Opens an existing stats file read-only. */
struct sl_stats_file *sl_stats_file_open (const char *path, char *err, size_t err_bytes);
unsigned sl_stats_file_record_count (const struct sl_stats_file *f);
struct sl_device_stats *sl_stats_file_record (struct sl_stats_file *f, unsigned index);
const struct sl_stats_file_header *sl_stats_file_header (const struct sl_stats_file *f);
void sl_stats_file_close (struct sl_stats_file *f);

#endif
