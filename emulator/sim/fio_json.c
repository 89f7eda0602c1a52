/* fio_json.c — fio 3.33 JSON output (see fio_json.h).  Layout, key order
 * and number formats follow fio's stat.c (show_thread_status_json,
 * add_ddir_status_json) so a diff against real fio output shows values
 * only. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "fio_json.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/request.h"

/* ---- reports ---- */

void
sl_fio_job_report_init (struct sl_fio_job_report *r, const char *jobname,
                        const struct sl_job *job)
{
  memset (r, 0, sizeof *r);
  r->jobname = jobname;
  r->job = job;
  for (int d = 0; d < 2; d++)
    sl_histogram_init (&r->dir[d].latency_ns);
}

unsigned
sl_fio_depth_level (uint32_t iodepth)
{
  /* fio's io_u_mark_depth: 1, 2-3, 4-7, 8-15, 16-31, 32-63, >=64 */
  unsigned level = 0;
  while (level < SL_FIO_DEPTH_LEVELS - 1 && iodepth >= (2u << level))
    level++;
  return level;
}

void
sl_fio_job_report_finish (struct sl_fio_job_report *r, uint64_t runtime_ns,
                          uint64_t elapsed_ns, uint32_t iodepth)
{
  for (int d = 0; d < 2; d++)
    r->dir[d].runtime_ns = r->dir[d].ios ? runtime_ns : 0;
  r->job_runtime_ns = runtime_ns;
  r->elapsed_ns = elapsed_ns;
  /* closed loop: every I/O is submitted with iodepth in flight */
  r->depth_level_ios[sl_fio_depth_level (iodepth)] += r->dir[0].ios + r->dir[1].ios;
}

void
sl_fio_job_report_merge (struct sl_fio_job_report *dst, const struct sl_fio_job_report *src)
{
  for (int d = 0; d < 2; d++) {
    dst->dir[d].ios += src->dir[d].ios;
    dst->dir[d].bytes += src->dir[d].bytes;
    if (src->dir[d].runtime_ns > dst->dir[d].runtime_ns)
      dst->dir[d].runtime_ns = src->dir[d].runtime_ns;
    sl_histogram_merge (&dst->dir[d].latency_ns, &src->dir[d].latency_ns);
  }
  dst->job_runtime_ns += src->job_runtime_ns;
  if (src->elapsed_ns > dst->elapsed_ns)
    dst->elapsed_ns = src->elapsed_ns;
  for (unsigned i = 0; i < SL_FIO_DEPTH_LEVELS; i++)
    dst->depth_level_ios[i] += src->depth_level_ios[i];
}

/* ---- a small writer producing fio's pretty layout ---- */

#define JW_MAX_DEPTH 16

struct jw {
  FILE *out;
  unsigned depth;
  bool has_member[JW_MAX_DEPTH];
};

static void
jw_string (FILE *out, const char *s)
{
  fputc ('"', out);
  for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf (out, "\\%c", *p);
    else if (*p < 0x20 || *p == 0x7F)
      fprintf (out, "\\u%04x", *p);
    else
      fputc (*p, out);
  }
  fputc ('"', out);
}

static void
jw_indent (struct jw *w)
{
  for (unsigned i = 0; i < w->depth; i++)
    fputs ("  ", w->out);
}

/* Starts a member (key != NULL) or an array element (key == NULL). */
static void
jw_begin_value (struct jw *w, const char *key)
{
  fputs (w->has_member[w->depth] ? ",\n" : "\n", w->out);
  w->has_member[w->depth] = true;
  jw_indent (w);
  if (key != NULL) {
    jw_string (w->out, key);
    fputs (" : ", w->out);
  }
}

static void
jw_open (struct jw *w, const char *key, char brace)
{
  if (w->depth == 0 && key == NULL && !w->has_member[0]) {
    w->has_member[0] = true;    /* the document itself: no leading newline */
  }
  else
    jw_begin_value (w, key);
  fputc (brace, w->out);
  if (w->depth + 1 < JW_MAX_DEPTH)
    w->depth++;
  w->has_member[w->depth] = false;
}

static void
jw_close (struct jw *w, char brace)
{
  bool had_members = w->has_member[w->depth];
  if (w->depth > 0)
    w->depth--;
  if (had_members) {
    fputc ('\n', w->out);
    jw_indent (w);
  }
  fputc (brace, w->out);
}

static void
jw_u64 (struct jw *w, const char *key, uint64_t v)
{
  jw_begin_value (w, key);
  fprintf (w->out, "%" PRIu64, v);
}

static void
jw_int (struct jw *w, const char *key, long long v)
{
  jw_begin_value (w, key);
  fprintf (w->out, "%lld", v);
}

/* fio prints doubles with %f; JSON has no NaN/Inf */
static void
jw_double (struct jw *w, const char *key, double v)
{
  jw_begin_value (w, key);
  fprintf (w->out, "%f", isfinite (v) ? v : 0.0);
}

static void
jw_str (struct jw *w, const char *key, const char *v)
{
  jw_begin_value (w, key);
  jw_string (w->out, v);
}

/* ---- fio sections ---- */

/* fio omits options given without a value (bare flags) */
static void
write_options (struct jw *w, const char *key, const struct sl_job_options *o)
{
  jw_open (w, key, '{');
  for (size_t i = 0; i < o->count; i++)
    if (o->items[i].value != NULL)
      jw_str (w, o->items[i].key, o->items[i].value);
  jw_close (w, '}');
}

/* fio --output-format=json+'s "bins": {"<value_ns>": count} for every
 * non-zero bucket, in ascending order, printed where fio prints it (after
 * "percentile", only when there are samples).  The key is the bucket's
 * midpoint, lowest + (highest - lowest) / 2, the same value
 * sl_histogram_percentile reports, so a percentile recomputed from the bins
 * (first key whose cumulative count reaches ceil(p/100 * N)) equals ours
 * up to our clamp to [min, max].  fio's own keys are its buckets'
 * midpoints too (plat_idx_to_val); our buckets are 1/128 of an octave,
 * fio's 1/64, so the key sets differ but mean the same thing. */
static void
write_bins (struct jw *w, const struct sl_histogram *h)
{
  jw_open (w, "bins", '{');
  for (unsigned i = 0; i < SL_HIST_BUCKETS; i++) {
    if (h->buckets[i] == 0)
      continue;
    uint64_t lowest = sl_histogram_bucket_lowest (i);
    uint64_t midpoint = lowest + (sl_histogram_bucket_highest (i) - lowest) / 2;
    char key[24];
    snprintf (key, sizeof key, "%" PRIu64, midpoint);
    jw_u64 (w, key, h->buckets[i]);
  }
  jw_close (w, '}');
}

static void
write_latency_stats (struct jw *w, const char *key, const struct sl_histogram *h,
                     const struct sl_job *job, bool percentiles)
{
  jw_open (w, key, '{');
  jw_u64 (w, "min", h->count ? h->min_value : 0);
  jw_u64 (w, "max", h->count ? h->max_value : 0);
  jw_double (w, "mean", sl_histogram_mean (h));
  jw_double (w, "stddev", sl_histogram_stddev (h));
  jw_u64 (w, "N", h->count);
  if (percentiles && h->count > 0) {
    jw_open (w, "percentile", '{');
    for (unsigned i = 0; i < job->percentile_count; i++) {
      char name[32];
      snprintf (name, sizeof name, "%f", job->percentiles[i]);
      jw_u64 (w, name, sl_histogram_percentile (h, job->percentiles[i]));
    }
    jw_close (w, '}');
    write_bins (w, h);
  }
  jw_close (w, '}');
}

static void
write_zero_latency (struct jw *w, const char *key)
{
  jw_open (w, key, '{');
  jw_u64 (w, "min", 0);
  jw_u64 (w, "max", 0);
  jw_double (w, "mean", 0.0);
  jw_double (w, "stddev", 0.0);
  jw_u64 (w, "N", 0);
  jw_close (w, '}');
}

static double
per_second (uint64_t amount, uint64_t elapsed_ns)
{
  return elapsed_ns ? (double) amount * 1e9 / (double) elapsed_ns : 0.0;
}

/* fio's add_ddir_status_json; bandwidth from ns, not truncated ms */
static void
write_direction (struct jw *w, const char *key, const struct sl_fio_direction *d,
                 const struct sl_job *job)
{
  uint64_t bw_bytes = (uint64_t) per_second (d->bytes, d->runtime_ns);
  jw_open (w, key, '{');
  jw_u64 (w, "io_bytes", d->bytes);
  jw_u64 (w, "io_kbytes", d->bytes / 1024);
  jw_u64 (w, "bw_bytes", bw_bytes);
  jw_u64 (w, "bw", bw_bytes / 1024);
  jw_double (w, "iops", per_second (d->ios, d->runtime_ns));
  jw_u64 (w, "runtime", (d->runtime_ns + 500000) / 1000000);
  jw_u64 (w, "total_ios", d->ios);
  jw_u64 (w, "short_ios", 0);
  jw_u64 (w, "drop_ios", 0);
  write_zero_latency (w, "slat_ns");
  write_latency_stats (w, "clat_ns", &d->latency_ns, job, true);
  write_latency_stats (w, "lat_ns", &d->latency_ns, job, false);
  /* fio's periodic bandwidth/IOPS samples: none are taken */
  jw_u64 (w, "bw_min", 0);
  jw_u64 (w, "bw_max", 0);
  jw_double (w, "bw_agg", 0.0);
  jw_double (w, "bw_mean", 0.0);
  jw_double (w, "bw_dev", 0.0);
  jw_u64 (w, "bw_samples", 0);
  jw_u64 (w, "iops_min", 0);
  jw_u64 (w, "iops_max", 0);
  jw_double (w, "iops_mean", 0.0);
  jw_double (w, "iops_stddev", 0.0);
  jw_u64 (w, "iops_samples", 0);
  jw_close (w, '}');
}

static void
write_empty_direction (struct jw *w, const char *key, const struct sl_job *job)
{
  struct sl_fio_direction *none = calloc (1, sizeof *none);
  if (none == NULL)
    return;
  sl_histogram_init (&none->latency_ns);
  write_direction (w, key, none, job);
  free (none);
}

/* fio's latency_{ns,us,ms} maps: percent of I/Os whose total latency is
 * below each key and at or above the previous one (io_u_mark_lat_*).
 * From the histogram: each bucket is placed by its lowest value. */
static void
write_latency_maps (struct jw *w, const struct sl_histogram *lat)
{
  static const uint64_t limits[] = { 2, 4, 10, 20, 50, 100, 250, 500, 750, 1000 };
  enum { N = sizeof limits / sizeof limits[0] };
  double ns[N] = { 0 }, us[N] = { 0 }, ms[N + 2] = { 0 };
  double total = (double) lat->count;
  for (unsigned b = 0; total > 0 && b < SL_HIST_BUCKETS; b++) {
    if (lat->buckets[b] == 0)
      continue;
    double pct = 100.0 * (double) lat->buckets[b] / total;
    uint64_t v = sl_histogram_bucket_lowest (b);
    double *map;
    uint64_t unit;
    if (v < 1000) {
      map = ns;
      unit = v;
    }
    else if (v < 1000000) {
      map = us;
      unit = v / 1000;
    }
    else {
      map = ms;
      unit = v / 1000000;
    }
    unsigned i = 0;
    while (i < N && unit >= limits[i])
      i++;
    if (i == N) {               /* only ms has buckets past 1000 */
      i = unit < 2000 ? N : N + 1;
    }
    map[i] += pct;
  }

  double *maps[3] = { ns, us, ms };
  const char *names[3] = { "latency_ns", "latency_us", "latency_ms" };
  for (int m = 0; m < 3; m++) {
    jw_open (w, names[m], '{');
    for (unsigned i = 0; i < N; i++) {
      char key[16];
      snprintf (key, sizeof key, "%" PRIu64, limits[i]);
      jw_double (w, key, maps[m][i]);
    }
    if (m == 2) {
      jw_double (w, "2000", ms[N]);
      jw_double (w, ">=2000", ms[N + 1]);
    }
    jw_close (w, '}');
  }
}

static void
write_depth_map (struct jw *w, const char *key, const char *const *labels,
                 const double *pct)
{
  jw_open (w, key, '{');
  for (unsigned i = 0; i < SL_FIO_DEPTH_LEVELS; i++)
    jw_double (w, labels[i], pct[i]);
  jw_close (w, '}');
}

static void
write_job (struct jw *w, const struct sl_fio_job_report *r)
{
  const struct sl_job *job = r->job;
  jw_open (w, NULL, '{');
  jw_str (w, "jobname", r->jobname);
  jw_int (w, "groupid", 0);
  jw_int (w, "error", 0);
  jw_int (w, "eta", 2147483647);       /* what fio prints for a finished job */
  jw_u64 (w, "elapsed", (r->elapsed_ns + 999999999) / 1000000000);
  write_options (w, "job options", &job->options);

  write_direction (w, "read", &r->dir[SL_OP_READ], job);
  write_direction (w, "write", &r->dir[SL_OP_WRITE], job);
  write_empty_direction (w, "trim", job);
  jw_open (w, "sync", '{');
  jw_u64 (w, "total_ios", 0);
  write_zero_latency (w, "lat_ns");
  jw_close (w, '}');

  jw_u64 (w, "job_runtime", (r->job_runtime_ns + 500000) / 1000000);
  jw_double (w, "usr_cpu", 0.0);
  jw_double (w, "sys_cpu", 0.0);
  jw_u64 (w, "ctx", 0);
  jw_u64 (w, "majf", 0);
  jw_u64 (w, "minf", 0);

  uint64_t ios = r->dir[0].ios + r->dir[1].ios;
  double level[SL_FIO_DEPTH_LEVELS] = { 0 }, one_per_call[SL_FIO_DEPTH_LEVELS] = { 0 };
  for (unsigned i = 0; ios > 0 && i < SL_FIO_DEPTH_LEVELS; i++)
    level[i] = 100.0 * (double) r->depth_level_ios[i] / (double) ios;
  if (ios > 0)
    one_per_call[1] = 100.0;    /* one I/O per submit and per reap: fio's "4" bucket */
  static const char *const level_labels[] = { "1", "2", "4", "8", "16", "32", ">=64" };
  static const char *const batch_labels[] = { "0", "4", "8", "16", "32", "64", ">=64" };
  write_depth_map (w, "iodepth_level", level_labels, level);
  write_depth_map (w, "iodepth_submit", batch_labels, one_per_call);
  write_depth_map (w, "iodepth_complete", batch_labels, one_per_call);

  struct sl_histogram *all = malloc (sizeof *all);
  if (all != NULL) {
    sl_histogram_init (all);
    sl_histogram_merge (all, &r->dir[0].latency_ns);
    sl_histogram_merge (all, &r->dir[1].latency_ns);
    write_latency_maps (w, all);
    free (all);
  }
  jw_u64 (w, "latency_depth", job->iodepth);
  jw_u64 (w, "latency_target", 0);
  jw_double (w, "latency_percentile", 100.0);
  jw_u64 (w, "latency_window", 0);
  jw_close (w, '}');
}

/* Non-zero buckets as [index, count] pairs, on one line. */
static void
write_buckets (struct jw *w, const char *key, const struct sl_histogram *h)
{
  jw_begin_value (w, key);
  fprintf (w->out, "{\"sub_bits\" : %u, \"count\" : %" PRIu64 ", \"buckets\" : [",
           (unsigned) SL_HIST_SUB_BITS, h->count);
  bool first = true;
  for (unsigned i = 0; i < SL_HIST_BUCKETS; i++) {
    if (h->buckets[i] == 0)
      continue;
    fprintf (w->out, "%s[%u, %" PRIu64 "]", first ? "" : ", ", i, h->buckets[i]);
    first = false;
  }
  fputs ("]}", w->out);
}

static void
write_events (struct jw *w, const struct sl_sim_events *evs)
{
  jw_open (w, "events", '[');
  for (size_t i = 0; evs != NULL && i < evs->count; i++) {
    const struct sl_sim_event *ev = &evs->items[i];
    jw_open (w, NULL, '{');
    jw_double (w, "t_ms", (double) ev->at_ns / 1e6);
    jw_str (w, "command", ev->command);
    jw_str (w, "reply", ev->reply);
    jw_close (w, '}');
  }
  jw_close (w, ']');
}

/* One line per interval:
 *   {"t_ms": interval end since the measured phase began (a multiple of
 *    the interval), "duration_ms": the interval's length (the last one is
 *    cut short where the measured phase ends),
 *    "read": {"ios", "bytes", "lat_sum_ns"}, "write": {...}}
 * summed over all jobs; an I/O counts where it completed; mean latency of
 * an interval = lat_sum_ns / ios. */
static void
write_timeline (struct jw *w, const struct sl_sim_timeline *t)
{
  uint64_t interval_ms = t->interval_ns / 1000000;
  jw_u64 (w, "timeline_interval_ms", interval_ms);
  jw_open (w, "timeline", '[');
  for (size_t i = 0; i < t->count; i++) {
    const struct sl_sim_interval *iv = &t->intervals[i];
    uint64_t start_ns = t->phase_start_ns + i * t->interval_ns;
    uint64_t end_ns = start_ns + t->interval_ns;
    if (end_ns > t->phase_end_ns && t->phase_end_ns > start_ns)
      end_ns = t->phase_end_ns;
    jw_begin_value (w, NULL);
    fprintf (w->out, "{\"t_ms\" : %" PRIu64 ", \"duration_ms\" : %f", (i + 1) * interval_ms,
             (double) (end_ns - start_ns) / 1e6);
    static const char *const names[2] = { "read", "write" };
    for (int d = 0; d < 2; d++)
      fprintf (w->out, ", \"%s\" : {\"ios\" : %" PRIu64 ", \"bytes\" : %" PRIu64
               ", \"lat_sum_ns\" : %" PRIu64 "}", names[d], iv->dir[d].ios,
               iv->dir[d].bytes, iv->dir[d].lat_sum_ns);
    fputc ('}', w->out);
  }
  jw_close (w, ']');
}

static void
write_storlab (struct jw *w, const struct sl_fio_output *o)
{
  jw_open (w, "storlab", '{');
  jw_str (w, "backend", o->backend);
  if (o->write_device_json != NULL) {
    jw_begin_value (w, "device");
    o->write_device_json (o->device_arg, w->out);
  }
  jw_u64 (w, "simulated_ns", o->simulated_ns);
  jw_u64 (w, "wall_ns", o->wall_ns);
  jw_u64 (w, "simulated_ios", o->simulated_ios);
  jw_double (w, "simulated_ios_per_wall_s", per_second (o->simulated_ios, o->wall_ns));
  jw_open (w, "jobs", '[');
  for (size_t i = 0; i < o->job_count; i++) {
    const struct sl_fio_job_report *r = &o->jobs[i];
    jw_open (w, NULL, '{');
    jw_str (w, "jobname", r->jobname);
    write_buckets (w, "read", &r->dir[SL_OP_READ].latency_ns);
    write_buckets (w, "write", &r->dir[SL_OP_WRITE].latency_ns);
    jw_close (w, '}');
  }
  jw_close (w, ']');
  if (o->events != NULL || o->timeline != NULL)
    write_events (w, o->events);
  if (o->timeline != NULL && o->timeline->interval_ns != 0)
    write_timeline (w, o->timeline);
  jw_close (w, '}');
}

void
sl_fio_json_write (FILE *out, const struct sl_fio_output *o)
{
  struct jw w = { .out = out };
  jw_open (&w, NULL, '{');
  jw_str (&w, "fio version", o->version);
  jw_u64 (&w, "timestamp", (uint64_t) o->timestamp);
  jw_u64 (&w, "timestamp_ms", o->timestamp_ms);
  char when[64] = "";
  struct tm tm;
  if (localtime_r (&o->timestamp, &tm) != NULL)
    strftime (when, sizeof when, "%a %b %e %H:%M:%S %Y", &tm);   /* ctime(3) */
  jw_str (&w, "time", when);
  if (o->jobfile != NULL && o->jobfile->has_global)
    write_options (&w, "global options", &o->jobfile->global_options);
  jw_open (&w, "jobs", '[');
  for (size_t i = 0; i < o->job_count; i++)
    write_job (&w, &o->jobs[i]);
  jw_close (&w, ']');
  write_storlab (&w, o);
  jw_close (&w, '}');
  fputc ('\n', out);
}
