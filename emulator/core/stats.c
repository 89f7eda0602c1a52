/* stats.c — per-device statistics: engine hooks under a seqlock, JSON
 * output, and the shared (mmap'd) stats file.  See stats.h. */
#define _GNU_SOURCE
#include "stats.h"

#include "json_string.h"
#include "owned_file.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* the header is padded to a page so records start page-aligned */
#define SL_STATS_RECORDS_OFFSET_BYTES 4096u
#define SL_STATS_RECORD_ALIGN_BYTES 64u

/* ---- seqlock (Boehm, "Can seqlocks get along with programming language
 * memory models?"): the reader may be another process, so only
 * __atomic builtins and fences order the plain data accesses. ---- */

static void
write_begin (struct sl_device_stats *s)
{
  uint64_t seq = __atomic_load_n (&s->sequence, __ATOMIC_RELAXED);
  __atomic_store_n (&s->sequence, seq + 1, __ATOMIC_RELAXED);
  /* keeps the data stores below from moving above the odd sequence */
  __atomic_thread_fence (__ATOMIC_RELEASE);
}

static void
write_end (struct sl_device_stats *s)
{
  uint64_t seq = __atomic_load_n (&s->sequence, __ATOMIC_RELAXED);
  __atomic_store_n (&s->sequence, seq + 1, __ATOMIC_RELEASE);
}

/* A writer holds the sequence odd for nanoseconds; one that stays on the
 * same odd value this long has died mid-update (a crashed process leaves
 * its record odd forever).  The reader then copies anyway rather than
 * hang a monitoring tool; the copy's odd sequence tells it so. */
#define SL_SNAPSHOT_DEAD_WRITER_NS UINT64_C (1000000000)

static uint64_t
monotonic_ns (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

struct odd_watch {
  uint64_t value;
  uint64_t since_ns;            /* 0: not timing yet */
  unsigned spins;
};

/* Called each time the reader sees an odd sequence; true once it has
 * stayed at one value for SL_SNAPSHOT_DEAD_WRITER_NS. */
static bool
writer_looks_dead (struct odd_watch *w, uint64_t sequence)
{
  if (w->spins == 0 || sequence != w->value) {
    w->value = sequence;
    w->since_ns = 0;
    w->spins = 0;
  }
  w->spins++;
  if (w->spins % 64 != 0)
    return false;
  sched_yield ();               /* the writer may be preempted mid-update */
  uint64_t now_ns = monotonic_ns ();
  if (w->since_ns == 0)
    w->since_ns = now_ns;
  return now_ns - w->since_ns >= SL_SNAPSHOT_DEAD_WRITER_NS;
}

void
sl_device_stats_snapshot (const struct sl_device_stats *live,
                          struct sl_device_stats *copy)
{
  struct odd_watch watch = { 0, 0, 0 };
  for (;;) {
    uint64_t before = __atomic_load_n (&live->sequence, __ATOMIC_ACQUIRE);
    if ((before & 1) && !writer_looks_dead (&watch, before))
      continue;
    memcpy (copy, (const void *) live, sizeof *copy);
    __atomic_thread_fence (__ATOMIC_ACQUIRE);
    uint64_t after = __atomic_load_n (&live->sequence, __ATOMIC_RELAXED);
    if (before == after)
      return;
  }
}

/* ---- record updates ---- */

/* Copies src into dst[dst_bytes], NUL-terminated, never cutting a UTF-8
 * sequence in half (so the JSON stays valid UTF-8). */
static void
copy_truncated (char *dst, size_t dst_bytes, const char *src)
{
  if (dst_bytes == 0)
    return;
  if (src == NULL)
    src = "";
  size_t len = strlen (src);
  if (len >= dst_bytes) {
    len = dst_bytes - 1;
    while (len > 0 && ((unsigned char) src[len] & 0xC0) == 0x80)
      len--;
  }
  memcpy (dst, src, len);
  memset (dst + len, 0, dst_bytes - len);
}

void
sl_device_stats_init (struct sl_device_stats *s, const char *name,
                      const char *kind, uint64_t capacity_bytes,
                      uint64_t now_ns)
{
  /* odd while (re)initialising, in case a reader already maps the record */
  __atomic_store_n (&s->sequence, 1, __ATOMIC_RELAXED);
  __atomic_thread_fence (__ATOMIC_RELEASE);
  memset ((char *) s + sizeof s->sequence, 0, sizeof *s - sizeof s->sequence);
  copy_truncated (s->name, sizeof s->name, name);
  copy_truncated (s->kind, sizeof s->kind, kind);
  s->capacity_bytes = capacity_bytes;
  s->now_ns = now_ns;
  s->started_ns = now_ns;
  s->last_change_ns = now_ns;
  for (unsigned op = 0; op < SL_OP_COUNT; op++)
    sl_histogram_init (&s->op[op].latency_ns);
  sl_histogram_init (&s->release_lateness_ns);
  sl_histogram_init (&s->release_early_ns);
  __atomic_store_n (&s->sequence, 2, __ATOMIC_RELEASE);
}

/* Accumulates depth * dt and busy time up to now_ns. */
static void
integrate_queue_depth (struct sl_device_stats *s, uint64_t now_ns)
{
  if (now_ns > s->last_change_ns) {
    uint64_t dt_ns = now_ns - s->last_change_ns;
    s->queue_depth_integral_ns += s->queue_depth * dt_ns;
    if (s->queue_depth > 0)
      s->busy_ns += dt_ns;
    s->last_change_ns = now_ns;
  }
  s->now_ns = now_ns;
}

void
sl_device_stats_arrival (struct sl_device_stats *s, uint64_t now_ns)
{
  write_begin (s);
  integrate_queue_depth (s, now_ns);
  s->queue_depth++;
  if (s->queue_depth > s->max_queue_depth)
    s->max_queue_depth = s->queue_depth;
  s->arrivals++;
  write_end (s);
}

void
sl_device_stats_completion (struct sl_device_stats *s, enum sl_op op,
                            uint64_t length_bytes, uint64_t latency_ns,
                            uint64_t now_ns)
{
  write_begin (s);
  integrate_queue_depth (s, now_ns);
  if (s->queue_depth > 0)
    s->queue_depth--;
  if ((unsigned) op < SL_OP_COUNT) {
    struct sl_op_stats *o = &s->op[op];
    o->count++;
    o->bytes += length_bytes;
    sl_histogram_record (&o->latency_ns, latency_ns);
  }
  write_end (s);
}

uint64_t *
sl_device_stats_adopt_counters (struct sl_device_stats *s, const char *const names[],
                                const uint64_t *values, unsigned count)
{
  const unsigned slots = sizeof s->model_counter / sizeof s->model_counter[0];
  if (count > slots)
    count = slots;             /* never write past the record */
  for (unsigned i = 0; i < count; i++) {
    sl_device_stats_name_counter (s, i, names[i]);
    s->model_counter[i] = values[i];
  }
  return s->model_counter;
}

void
sl_device_stats_release (struct sl_device_stats *s, int64_t left_against_deadline_ns,
                         const struct sl_release_path *path)
{
  int64_t t = left_against_deadline_ns;
  write_begin (s);
  sl_histogram_record (&s->release_lateness_ns, t > 0 ? (uint64_t) t : 0);
  sl_histogram_record (&s->release_early_ns, t < 0 ? (uint64_t) -t : 0);
  s->release_path = *path;
  write_end (s);
}

void
sl_device_stats_latency_offset (struct sl_device_stats *s, uint64_t offset_ns)
{
  if (s->latency_offset_ns == offset_ns)
    return;
  write_begin (s);
  s->latency_offset_ns = offset_ns;
  write_end (s);
}

void
sl_device_stats_name_counter (struct sl_device_stats *s, unsigned index,
                              const char *name)
{
  if (index >= sizeof s->model_counter / sizeof s->model_counter[0])
    return;
  write_begin (s);
  copy_truncated (s->model_counter_name[index], sizeof s->model_counter_name[index], name);
  write_end (s);
}

/* ---- JSON ---- */

/* JSON has no NaN/Inf */
static void
write_json_double (FILE *out, double value)
{
  if (!isfinite (value))
    value = 0.0;
  fprintf (out, "%.9g", value);
}

static double
per_second (uint64_t amount, uint64_t elapsed_ns)
{
  return elapsed_ns == 0 ? 0.0 : (double) amount * 1e9 / (double) elapsed_ns;
}

static void
write_json_latency (FILE *out, const struct sl_histogram *h)
{
  static const struct { const char *key; double pct; } percentiles[] = {
    { "50", 50.0 }, { "90", 90.0 }, { "99", 99.0 }, { "99.9", 99.9 }, { "99.99", 99.99 },
  };
  fprintf (out, "{\"min\": %llu, \"max\": %llu, \"mean\": ",
           (unsigned long long) (h->count ? h->min_value : 0),
           (unsigned long long) (h->count ? h->max_value : 0));
  write_json_double (out, sl_histogram_mean (h));
  fputs (", \"stddev\": ", out);
  write_json_double (out, sl_histogram_stddev (h));
  fputs (", \"percentiles\": {", out);
  for (size_t i = 0; i < sizeof percentiles / sizeof percentiles[0]; i++)
    fprintf (out, "%s\"%s\": %llu", i ? ", " : "", percentiles[i].key,
             (unsigned long long) sl_histogram_percentile (h, percentiles[i].pct));
  fputs ("}}", out);
}

/* Non-zero buckets only, so other tools can merge histograms exactly. */
static void
write_json_histogram (FILE *out, const struct sl_histogram *h)
{
  fprintf (out, "{\"sub_bits\": %u, \"buckets\": [", (unsigned) SL_HIST_SUB_BITS);
  bool first = true;
  for (unsigned i = 0; i < SL_HIST_BUCKETS; i++) {
    if (h->buckets[i] == 0)
      continue;
    fprintf (out, "%s[%u, %llu]", first ? "" : ", ", i, (unsigned long long) h->buckets[i]);
    first = false;
  }
  fputs ("]}", out);
}

static void
write_json_op (FILE *out, const struct sl_op_stats *o, uint64_t elapsed_ns)
{
  fprintf (out, "{\"count\": %llu, \"bytes\": %llu, \"iops\": ",
           (unsigned long long) o->count, (unsigned long long) o->bytes);
  write_json_double (out, per_second (o->count, elapsed_ns));
  fputs (", \"bytes_per_s\": ", out);
  write_json_double (out, per_second (o->bytes, elapsed_ns));
  fputs (", \"latency_ns\": ", out);
  write_json_latency (out, &o->latency_ns);
  fputs (", \"latency_histogram\": ", out);
  write_json_histogram (out, &o->latency_ns);
  fputc ('}', out);
}

static void
write_json_record (const struct sl_device_stats *s, FILE *out)
{
  uint64_t elapsed_ns = s->now_ns > s->started_ns ? s->now_ns - s->started_ns : 0;
  double elapsed = (double) elapsed_ns;

  fputs ("{\"name\": ", out);
  sl_json_write_string (out, s->name, sizeof s->name);
  fputs (", \"kind\": ", out);
  sl_json_write_string (out, s->kind, sizeof s->kind);
  fprintf (out, ", \"capacity_bytes\": %llu, \"now_ns\": %llu, \"elapsed_ns\": %llu"
           ", \"queue_depth\": %llu, \"max_queue_depth\": %llu, \"mean_queue_depth\": ",
           (unsigned long long) s->capacity_bytes, (unsigned long long) s->now_ns,
           (unsigned long long) elapsed_ns, (unsigned long long) s->queue_depth,
           (unsigned long long) s->max_queue_depth);
  write_json_double (out, elapsed_ns ? (double) s->queue_depth_integral_ns / elapsed : 0.0);
  fprintf (out, ", \"busy_ns\": %llu, \"utilization\": ", (unsigned long long) s->busy_ns);
  write_json_double (out, elapsed_ns ? (double) s->busy_ns / elapsed : 0.0);
  fprintf (out, ", \"arrivals\": %llu, \"ops\": {", (unsigned long long) s->arrivals);
  for (unsigned op = 0; op < SL_OP_COUNT; op++) {
    fprintf (out, "%s\"%s\": ", op ? ", " : "", sl_op_name ((enum sl_op) op));
    write_json_op (out, &s->op[op], elapsed_ns);
  }
  fprintf (out, "}, \"realtime\": {\"releases\": %llu, \"release_lateness_ns\": ",
           (unsigned long long) s->release_lateness_ns.count);
  write_json_latency (out, &s->release_lateness_ns);
  /* the buckets too: a sweep's window of lateness is the difference of two */
  fputs (", \"release_lateness_histogram\": ", out);
  write_json_histogram (out, &s->release_lateness_ns);
  fputs (", \"release_early_ns\": ", out);
  write_json_latency (out, &s->release_early_ns);
  fprintf (out, ", \"latency_offset_ns\": %llu", (unsigned long long) s->latency_offset_ns);
  fprintf (out, ", \"release_path\": {\"spin_cores\": %llu, "
           "\"handover_ns\": %llu, \"timer_late_ns\": %llu}",
           (unsigned long long) s->release_path.spin_cores,
           (unsigned long long) s->release_path.handover_ns,
           (unsigned long long) s->release_path.timer_late_ns);
  fputs ("}, \"counters\": {", out);
  bool first = true;
  for (unsigned i = 0; i < sizeof s->model_counter / sizeof s->model_counter[0]; i++) {
    if (s->model_counter_name[i][0] == '\0')
      continue;
    if (!first)
      fputs (", ", out);
    sl_json_write_string (out, s->model_counter_name[i], sizeof s->model_counter_name[i]);
    fprintf (out, ": %llu", (unsigned long long) s->model_counter[i]);
    first = false;
  }
  fputs ("}}", out);
}

void
sl_device_stats_write_json (const struct sl_device_stats *s, FILE *out)
{
  /* s may be a live record: print a consistent copy (heap: it is ~240 KiB) */
  struct sl_device_stats *copy = malloc (sizeof *copy);
  if (copy == NULL) {
    write_json_record (s, out);
    return;
  }
  sl_device_stats_snapshot (s, copy);
  write_json_record (copy, out);
  free (copy);
}

/* ---- shared stats file ---- */

struct sl_stats_file {
  void *map;
  size_t map_bytes;
  int lock_fd;                  /* a created file's: holds its lock; -1 when opened */
  unsigned record_count;
  size_t record_stride_bytes;
};

static size_t
record_stride_bytes (void)
{
  size_t align = SL_STATS_RECORD_ALIGN_BYTES;
  return (sizeof (struct sl_device_stats) + align - 1) / align * align;
}

struct sl_stats_file *
sl_stats_file_create (const char *path, unsigned record_count,
                      uint64_t clock_epoch_ns, char *err, size_t err_bytes)
{
  if (record_count == 0) {
    snprintf (err, err_bytes, "stats file %s: record_count must be at least 1", path);
    return NULL;
  }
  struct sl_stats_file *f = calloc (1, sizeof *f);
  if (f == NULL) {
    snprintf (err, err_bytes, "stats file %s: out of memory", path);
    return NULL;
  }
  f->record_count = record_count;
  f->record_stride_bytes = record_stride_bytes ();
  f->map_bytes = SL_STATS_RECORDS_OFFSET_BYTES + (size_t) record_count * f->record_stride_bytes;

  char why[160];
  int fd = sl_owned_file_open (path, O_RDWR, true, why, sizeof why);
  if (fd < 0) {
    snprintf (err, err_bytes, "stats file %s: %s", path, why);
    free (f);
    return NULL;
  }
  /* Emptied only now that it is ours: the old contents go, and the new
   * size zero-fills every record. */
  if (ftruncate (fd, 0) != 0 || ftruncate (fd, (off_t) f->map_bytes) != 0) {
    snprintf (err, err_bytes, "stats file %s: cannot size to %zu bytes: %s",
              path, f->map_bytes, strerror (errno));
    close (fd);
    free (f);
    return NULL;
  }
  f->map = mmap (NULL, f->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int map_errno = errno;
  if (f->map == MAP_FAILED) {
    snprintf (err, err_bytes, "stats file %s: cannot mmap: %s", path, strerror (map_errno));
    close (fd);
    free (f);
    return NULL;
  }
  f->lock_fd = fd;              /* kept open: the lock lasts as long as the device */

  /* ftruncate zero-filled the records; every sequence starts even */
  struct sl_stats_file_header *h = f->map;
  memcpy (h->magic, SL_STATS_MAGIC, sizeof h->magic);
  h->version = SL_STATS_FILE_VERSION;
  h->record_count = record_count;
  h->record_bytes = sizeof (struct sl_device_stats);
  h->clock_epoch_ns = clock_epoch_ns;
  return f;
}

static const char *
validate_header (const struct sl_stats_file_header *h, size_t file_bytes,
                 char *why, size_t why_bytes)
{
  if (memcmp (h->magic, SL_STATS_MAGIC, sizeof h->magic) != 0)
    return "bad magic (not a storlab stats file)";
  if (h->version != SL_STATS_FILE_VERSION) {
    snprintf (why, why_bytes, "unsupported version %u (expected %u)",
              h->version, SL_STATS_FILE_VERSION);
    return why;
  }
  if (h->record_bytes != sizeof (struct sl_device_stats)) {
    snprintf (why, why_bytes, "record_bytes %llu does not match this build's %zu"
              " (written by a different storlab version)",
              (unsigned long long) h->record_bytes, sizeof (struct sl_device_stats));
    return why;
  }
  uint64_t needed_bytes = SL_STATS_RECORDS_OFFSET_BYTES
    + (uint64_t) h->record_count * record_stride_bytes ();
  if (file_bytes < needed_bytes) {
    snprintf (why, why_bytes, "truncated: %zu bytes, %u records need %llu",
              file_bytes, h->record_count, (unsigned long long) needed_bytes);
    return why;
  }
  return NULL;
}

struct sl_stats_file *
sl_stats_file_open (const char *path, char *err, size_t err_bytes)
{
  /* O_NONBLOCK: opening a FIFO must not wait for a writer (fstat refuses it) */
  int fd = open (path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    snprintf (err, err_bytes, "stats file %s: cannot open: %s", path, strerror (errno));
    return NULL;
  }
  struct stat st;
  if (fstat (fd, &st) != 0) {
    snprintf (err, err_bytes, "stats file %s: cannot stat: %s", path, strerror (errno));
    close (fd);
    return NULL;
  }
  if (!S_ISREG (st.st_mode)) {
    snprintf (err, err_bytes, "stats file %s: not a regular file", path);
    close (fd);
    return NULL;
  }
  if ((uint64_t) st.st_size < SL_STATS_RECORDS_OFFSET_BYTES) {
    snprintf (err, err_bytes, "stats file %s: too small (%lld bytes) to be a stats file",
              path, (long long) st.st_size);
    close (fd);
    return NULL;
  }
  size_t map_bytes = (size_t) st.st_size;
  void *map = mmap (NULL, map_bytes, PROT_READ, MAP_SHARED, fd, 0);
  int map_errno = errno;
  close (fd);
  if (map == MAP_FAILED) {
    snprintf (err, err_bytes, "stats file %s: cannot mmap: %s", path, strerror (map_errno));
    return NULL;
  }

  char why[160];
  const char *problem = validate_header (map, map_bytes, why, sizeof why);
  if (problem != NULL) {
    snprintf (err, err_bytes, "stats file %s: %s", path, problem);
    munmap (map, map_bytes);
    return NULL;
  }
  struct sl_stats_file *f = calloc (1, sizeof *f);
  if (f == NULL) {
    snprintf (err, err_bytes, "stats file %s: out of memory", path);
    munmap (map, map_bytes);
    return NULL;
  }
  f->map = map;
  f->map_bytes = map_bytes;
  f->lock_fd = -1;
  f->record_count = ((const struct sl_stats_file_header *) map)->record_count;
  f->record_stride_bytes = record_stride_bytes ();
  return f;
}

unsigned
sl_stats_file_record_count (const struct sl_stats_file *f)
{
  return f->record_count;
}

/* For a file from sl_stats_file_open() the mapping is read-only: callers
 * may only read (through sl_device_stats_snapshot). */
struct sl_device_stats *
sl_stats_file_record (struct sl_stats_file *f, unsigned index)
{
  if (index >= f->record_count)
    return NULL;
  return (struct sl_device_stats *) ((char *) f->map + SL_STATS_RECORDS_OFFSET_BYTES
                                     + (size_t) index * f->record_stride_bytes);
}

const struct sl_stats_file_header *
sl_stats_file_header (const struct sl_stats_file *f)
{
  return f->map;
}

void
sl_stats_file_close (struct sl_stats_file *f)
{
  if (f == NULL)
    return;
  munmap (f->map, f->map_bytes);
  if (f->lock_fd >= 0)
    close (f->lock_fd);
  free (f);
}
