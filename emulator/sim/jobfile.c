/* jobfile.c — fio job file parsing and job semantics (see jobfile.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "jobfile.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

const double sl_job_default_percentiles[] = {
  1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0,
  95.0, 99.0, 99.5, 99.9, 99.95, 99.99,
};
const unsigned sl_job_default_percentile_count =
  sizeof sl_job_default_percentiles / sizeof sl_job_default_percentiles[0];

/* ---- value parsers: 0, or -1 with a short reason in why ---- */

/* fio's get_mult_bytes with the default kb_base=1024: k/kb/m/mb.. are
 * powers of 1024 and, by fio's deliberate inversion, kib/mib.. are powers
 * of 1000. */
static int
size_multiplier (const char *suffix, uint64_t *mult)
{
  static const struct { const char *suffix; unsigned power; uint64_t base; } table[] = {
    { "", 0, 1 },
    { "k", 1, 1024 }, { "kb", 1, 1024 }, { "kib", 1, 1000 },
    { "m", 2, 1024 }, { "mb", 2, 1024 }, { "mib", 2, 1000 },
    { "g", 3, 1024 }, { "gb", 3, 1024 }, { "gib", 3, 1000 },
    { "t", 4, 1024 }, { "tb", 4, 1024 }, { "tib", 4, 1000 },
    { "p", 5, 1024 }, { "pb", 5, 1024 }, { "pib", 5, 1000 },
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (strcasecmp (suffix, table[i].suffix) == 0) {
      uint64_t m = 1;
      for (unsigned p = 0; p < table[i].power; p++)
        m *= table[i].base;
      *mult = m;
      return 0;
    }
  return -1;
}

/* Digits (decimal, or 0x hex) at the start of s; end set past them. */
static int
parse_leading_u64 (const char *s, uint64_t *out, const char **end)
{
  if (!isdigit ((unsigned char) s[0]))
    return -1;
  errno = 0;
  char *e;
  unsigned long long v = strtoull (s, &e, 0);
  if (errno == ERANGE)
    return -1;
  *out = v;
  *end = e;
  return 0;
}

static int
parse_size (const char *value, bool allow_percent, struct sl_job_size *out,
            const char **why)
{
  uint64_t number;
  const char *suffix;
  if (value == NULL || parse_leading_u64 (value, &number, &suffix) != 0) {
    *why = allow_percent ? "not a size (bytes with k/m/g/t suffix, or N%)"
      : "not a size (bytes with k/m/g/t suffix)";
    return -1;
  }
  if (strcmp (suffix, "%") == 0) {
    if (!allow_percent) {
      *why = "a percentage is not allowed here";
      return -1;
    }
    if (number == 0 || number > 100) {
      *why = "percentage must be 1..100";
      return -1;
    }
    *out = (struct sl_job_size) { .set = true, .is_percent = true, .percent = (double) number };
    return 0;
  }
  uint64_t mult;
  if (size_multiplier (suffix, &mult) != 0) {
    *why = allow_percent ? "not a size (bytes with k/m/g/t suffix, or N%)"
      : "not a size (bytes with k/m/g/t suffix)";
    return -1;
  }
  if (mult != 0 && number > UINT64_MAX / mult) {
    *why = "size too large";
    return -1;
  }
  *out = (struct sl_job_size) { .set = true, .bytes = number * mult };
  return 0;
}

/* fio's get_mult_time: default unit seconds. */
int
sl_job_parse_time_ns (const char *value, uint64_t *out_ns, const char **why)
{
  static const struct { const char *suffix; uint64_t ns; } table[] = {
    { "", UINT64_C (1000000000) },
    { "us", UINT64_C (1000) }, { "usec", UINT64_C (1000) },
    { "ms", UINT64_C (1000000) }, { "msec", UINT64_C (1000000) },
    { "s", UINT64_C (1000000000) },
    { "m", UINT64_C (60000000000) },
    { "h", UINT64_C (3600000000000) },
    { "d", UINT64_C (86400000000000) },
  };
  uint64_t number;
  const char *suffix;
  *why = "not a time (integer seconds, or with suffix us/ms/s/m/h/d)";
  if (value == NULL || parse_leading_u64 (value, &number, &suffix) != 0)
    return -1;
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (strcasecmp (suffix, table[i].suffix) == 0) {
      if (number > UINT64_MAX / table[i].ns) {
        *why = "time too large";
        return -1;
      }
      *out_ns = number * table[i].ns;
      return 0;
    }
  return -1;
}

static int
parse_u64_range (const char *value, uint64_t min, uint64_t max, uint64_t *out,
                 const char **why)
{
  uint64_t number;
  const char *end;
  if (value == NULL || parse_leading_u64 (value, &number, &end) != 0 || *end != '\0') {
    *why = "not an integer";
    return -1;
  }
  if (number < min || number > max) {
    *why = "out of range";
    return -1;
  }
  *out = number;
  return 0;
}

/* fio's FIO_OPT_STR_SET: bare key or 1 sets, 0 clears. */
static int
parse_flag (const char *value, bool *out, const char **why)
{
  if (value == NULL || strcmp (value, "1") == 0)
    *out = true;
  else if (strcmp (value, "0") == 0)
    *out = false;
  else {
    *why = "expected no value, 1 or 0";
    return -1;
  }
  return 0;
}

/* Splits fio's "R,W[,T]" per-direction syntax: a value not followed by a
 * comma applies to the later directions too; an empty field keeps the
 * default.  Calls set(job, dir, field) for read and write; the trim field
 * is checked and ignored (trims are not modelled). */
static int
parse_per_direction (const char *value, struct sl_job *job,
                     int (*set) (struct sl_job *, int, const char *, const char **),
                     const char **why)
{
  if (value == NULL || value[0] == '\0') {
    *why = "missing value";
    return -1;
  }
  char fields[3][64];
  unsigned count = 0;
  const char *p = value;
  for (;;) {
    const char *comma = strchr (p, ',');
    size_t len = comma ? (size_t) (comma - p) : strlen (p);
    if (count == 3 || len >= sizeof fields[0]) {
      *why = count == 3 ? "at most three comma-separated values (read,write,trim)"
        : "value too long";
      return -1;
    }
    memcpy (fields[count], p, len);
    fields[count][len] = '\0';
    count++;
    if (comma == NULL)
      break;
    p = comma + 1;
  }
  /* "8k" -> all; "8k,32k" -> read 8k, write+trim 32k; "8k,32k," -> trim default */
  for (int dir = 0; dir < 3; dir++) {
    const char *field;
    if ((unsigned) dir < count)
      field = fields[dir];
    else if (value[strlen (value) - 1] != ',')
      field = fields[count - 1];
    else
      field = "";
    if (field[0] == '\0')
      continue;
    if (set (job, dir, field, why) != 0)
      return -1;
  }
  return 0;
}

/* ---- option handlers ---- */

typedef int (*option_fn) (struct sl_job *job, const char *value, const char **why);

static int
opt_rw (struct sl_job *job, const char *value, const char **why)
{
  static const struct { const char *name; bool read, write, random; } table[] = {
    { "read", true, false, false }, { "write", false, true, false },
    { "randread", true, false, true }, { "randwrite", false, true, true },
    { "rw", true, true, false }, { "readwrite", true, true, false },
    { "randrw", true, true, true },
  };
  if (value != NULL && strchr (value, ':') != NULL) {
    *why = "the ':N' offset-modifier suffix is not supported by storlab-sim";
    return -1;
  }
  for (size_t i = 0; value != NULL && i < sizeof table / sizeof table[0]; i++)
    if (strcmp (value, table[i].name) == 0) {
      job->do_read = table[i].read;
      job->do_write = table[i].write;
      job->random = table[i].random;
      return 0;
    }
  *why = "not one of read, write, randread, randwrite, rw, readwrite, randrw"
    " (trim workloads are not supported)";
  return -1;
}

static int
opt_rwmixread (struct sl_job *job, const char *value, const char **why)
{
  uint64_t pct;
  if (parse_u64_range (value, 0, 100, &pct, why) != 0) {
    *why = "not a percentage 0..100";
    return -1;
  }
  job->rwmixread_pct = (unsigned) pct;
  return 0;
}

static int
opt_rwmixwrite (struct sl_job *job, const char *value, const char **why)
{
  uint64_t pct;
  if (parse_u64_range (value, 0, 100, &pct, why) != 0) {
    *why = "not a percentage 0..100";
    return -1;
  }
  job->rwmixread_pct = 100u - (unsigned) pct;
  return 0;
}

static int
set_percentage_random (struct sl_job *job, int dir, const char *field, const char **why)
{
  uint64_t pct;
  if (parse_u64_range (field, 0, 100, &pct, why) != 0) {
    *why = "not a percentage 0..100 (or R,W pair)";
    return -1;
  }
  if (dir < 2)
    job->percentage_random_pct[dir] = (unsigned) pct;
  return 0;
}

static int
opt_percentage_random (struct sl_job *job, const char *value, const char **why)
{
  return parse_per_direction (value, job, set_percentage_random, why);
}

static int
set_bs (struct sl_job *job, int dir, const char *field, const char **why)
{
  struct sl_job_size size;
  if (parse_size (field, false, &size, why) != 0)
    return -1;
  if (size.bytes == 0) {
    *why = "block size must be at least 1 byte";
    return -1;
  }
  if (dir < 2)
    job->bs_bytes[dir] = size.bytes;
  return 0;
}

static int
opt_bs (struct sl_job *job, const char *value, const char **why)
{
  return parse_per_direction (value, job, set_bs, why);
}

static int
opt_iodepth (struct sl_job *job, const char *value, const char **why)
{
  uint64_t n;
  if (parse_u64_range (value, 1, SL_JOB_MAX_IODEPTH, &n, why) != 0) {
    *why = "not an integer 1..65536";
    return -1;
  }
  job->iodepth = (uint32_t) n;
  return 0;
}

static int
opt_numjobs (struct sl_job *job, const char *value, const char **why)
{
  uint64_t n;
  if (parse_u64_range (value, 1, SL_JOB_MAX_NUMJOBS, &n, why) != 0) {
    *why = "not an integer 1..1024";
    return -1;
  }
  job->numjobs = (uint32_t) n;
  return 0;
}

static int
opt_size (struct sl_job *job, const char *value, const char **why)
{
  if (parse_size (value, true, &job->size, why) != 0)
    return -1;
  if (!job->size.is_percent && job->size.bytes == 0) {
    *why = "size must be greater than 0";
    return -1;
  }
  return 0;
}

static int
opt_offset (struct sl_job *job, const char *value, const char **why)
{
  return parse_size (value, true, &job->offset, why);
}

static int
opt_offset_increment (struct sl_job *job, const char *value, const char **why)
{
  return parse_size (value, true, &job->offset_increment, why);
}

static int
opt_io_size (struct sl_job *job, const char *value, const char **why)
{
  struct sl_job_size size;
  if (parse_size (value, false, &size, why) != 0)
    return -1;
  job->io_size_bytes = size.bytes;
  return 0;
}

static int
opt_number_ios (struct sl_job *job, const char *value, const char **why)
{
  return parse_u64_range (value, 0, UINT64_MAX, &job->number_ios, why);
}

_Static_assert (SL_JOB_MAX_TIME_NS == UINT64_C (2592000) * 1000000000,
                "the message below says 30 days, 2592000 s");

/* A job time (runtime, ramp_time, startdelay) within SL_JOB_MAX_TIME_NS. */
static int
parse_job_time (const char *value, uint64_t *out_ns, const char **why)
{
  uint64_t ns;
  if (sl_job_parse_time_ns (value, &ns, why) != 0)
    return -1;
  if (ns > SL_JOB_MAX_TIME_NS) {
    *why = "above storlab-sim's limit of 30 days (30d, 2592000 s) of simulated time";
    return -1;
  }
  *out_ns = ns;
  return 0;
}

static int
opt_runtime (struct sl_job *job, const char *value, const char **why)
{
  return parse_job_time (value, &job->runtime_ns, why);
}

static int
opt_time_based (struct sl_job *job, const char *value, const char **why)
{
  return parse_flag (value, &job->time_based, why);
}

static int
opt_ramp_time (struct sl_job *job, const char *value, const char **why)
{
  return parse_job_time (value, &job->ramp_time_ns, why);
}

static int
opt_startdelay (struct sl_job *job, const char *value, const char **why)
{
  return parse_job_time (value, &job->startdelay_ns, why);
}

static int
opt_randseed (struct sl_job *job, const char *value, const char **why)
{
  return parse_u64_range (value, 0, UINT64_MAX, &job->randseed, why);
}

static int
opt_norandommap (struct sl_job *job, const char *value, const char **why)
{
  return parse_flag (value, &job->norandommap, why);
}

static int
opt_name (struct sl_job *job, const char *value, const char **why)
{
  if (value == NULL || value[0] == '\0') {
    *why = "empty name";
    return -1;
  }
  char *copy = strdup (value);
  if (copy == NULL) {
    *why = "out of memory";
    return -1;
  }
  free (job->name);
  job->name = copy;
  return 0;
}

static int
opt_group_reporting (struct sl_job *job, const char *value, const char **why)
{
  return parse_flag (value, &job->group_reporting, why);
}

static int
compare_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

/* fio: colon-separated, at most 20, sorted for output */
static int
opt_percentile_list (struct sl_job *job, const char *value, const char **why)
{
  *why = "not a list of percentages 0..100 separated by ':' (at most 20)";
  if (value == NULL || value[0] == '\0')
    return -1;
  double list[SL_JOB_MAX_PERCENTILES];
  unsigned count = 0;
  const char *p = value;
  for (;;) {
    char *end;
    errno = 0;
    double v = strtod (p, &end);
    if (end == p || errno != 0 || !(v >= 0.0 && v <= 100.0)
        || count == SL_JOB_MAX_PERCENTILES || (*end != ':' && *end != '\0'))
      return -1;
    list[count++] = v;
    if (*end == '\0')
      break;
    p = end + 1;
  }
  qsort (list, count, sizeof list[0], compare_double);
  memcpy (job->percentiles, list, count * sizeof list[0]);
  job->percentile_count = count;
  return 0;
}

static const struct {
  const char *key;
  option_fn fn;
} honoured_options[] = {
  { "rw", opt_rw }, { "readwrite", opt_rw },
  { "rwmixread", opt_rwmixread }, { "rwmixwrite", opt_rwmixwrite },
  { "percentage_random", opt_percentage_random },
  { "bs", opt_bs }, { "blocksize", opt_bs },
  { "iodepth", opt_iodepth },
  { "numjobs", opt_numjobs },
  { "size", opt_size },
  { "offset", opt_offset },
  { "offset_increment", opt_offset_increment },
  { "io_size", opt_io_size }, { "io_limit", opt_io_size },
  { "number_ios", opt_number_ios },
  { "runtime", opt_runtime }, { "timeout", opt_runtime },
  { "time_based", opt_time_based },
  { "ramp_time", opt_ramp_time },
  { "startdelay", opt_startdelay },
  { "randseed", opt_randseed },
  { "norandommap", opt_norandommap },
  { "name", opt_name },
  { "group_reporting", opt_group_reporting },
  { "percentile_list", opt_percentile_list },
};

/* Accepted and ignored: they select how fio reaches the device or what
 * it logs, not what I/O the device sees.  `only` lists the values that
 * keep that true (NULL: any value). */
static const struct {
  const char *key;
  const char *const *only;
  const char *reason;
} ignored_options[] = {
  { "ioengine", NULL, "the simulator is the engine" },
  { "uri", NULL, "names the NBD server; the simulator has none" },
  { "filename", NULL, "the simulator drives the one modelled device" },
  { "direct", NULL, "no page cache in between: every I/O reaches the model" },
  { "buffered", (const char *const[]) { "0", NULL }, "only unbuffered I/O is modelled" },
  { "thread", NULL, "threads vs processes does not change the I/O" },
  { "randrepeat", NULL, "the stream is always seeded from randseed" },
  { "verify", (const char *const[]) { "0", "none", NULL }, "verify reads are not modelled" },
  { "verify_fatal", NULL, "no verification happens" },
  { "do_verify", NULL, "no verification happens" },
  { "invalidate", NULL, "no page cache to invalidate" },
  { "lat_percentiles", NULL, "clat == lat in the simulator; clat percentiles are written" },
  { "clat_percentiles", NULL, "clat percentiles are always written" },
  { "slat_percentiles", NULL, "submission latency is 0 in the simulator" },
  { "log_avg_msec", NULL, "logging only" },
  { "write_bw_log", NULL, "logging only" },
  { "write_lat_log", NULL, "logging only" },
  { "write_iops_log", NULL, "logging only" },
  { "write_hist_log", NULL, "logging only" },
  { "log_hist_msec", NULL, "logging only" },
  { "per_job_logs", NULL, "logging only" },
  { "fsync", (const char *const[]) { "0", NULL }, "flushes between writes are not modelled" },
  { "fdatasync", (const char *const[]) { "0", NULL }, "flushes between writes are not modelled" },
  { "end_fsync", NULL, "one flush after the job ends does not change its statistics" },
  { "dedupe_percentage", NULL, "what the data is like: a model sees no data (a cluster "
    "spec's dedupe-percent= says it to a disk group that deduplicates)" },
  { "buffer_compress_percentage", NULL, "what the data is like: a model sees no data (a "
    "cluster spec's compress-percent= says it to a disk group that compresses)" },
  { "allow_file_create", NULL, "no files" },
  { "unlink", NULL, "no files" },
};

/* ---- parser state ---- */

struct parser {
  const char *path;
  struct sl_jobfile *jf;
  struct sl_job global;                /* template for the next job */
  struct sl_job *current;              /* NULL: in [global] or before any section */
  bool in_section;
  char *err;
  size_t err_bytes;
};

static void
job_defaults (struct sl_job *job)
{
  memset (job, 0, sizeof *job);
  job->do_read = true;
  job->rwmixread_pct = 50;
  job->percentage_random_pct[0] = job->percentage_random_pct[1] = 100;
  job->bs_bytes[0] = job->bs_bytes[1] = 4096;
  job->iodepth = 1;
  job->numjobs = 1;
  job->randseed = SL_JOB_DEFAULT_RANDSEED;
  memcpy (job->percentiles, sl_job_default_percentiles,
          sl_job_default_percentile_count * sizeof (double));
  job->percentile_count = sl_job_default_percentile_count;
}

static void
options_free (struct sl_job_options *o)
{
  for (size_t i = 0; i < o->count; i++) {
    free (o->items[i].key);
    free (o->items[i].value);
  }
  free (o->items);
  o->items = NULL;
  o->count = 0;
}

static int
options_append (struct sl_job_options *o, const char *key, const char *value)
{
  struct sl_job_option *items = realloc (o->items, (o->count + 1) * sizeof *items);
  if (items == NULL)
    return -1;
  o->items = items;
  char *k = strdup (key);
  char *v = value ? strdup (value) : NULL;
  if (k == NULL || (value != NULL && v == NULL)) {
    free (k);
    free (v);
    return -1;
  }
  items[o->count++] = (struct sl_job_option) { .key = k, .value = v };
  return 0;
}

static char *
trim (char *s)
{
  while (isspace ((unsigned char) *s))
    s++;
  size_t len = strlen (s);
  while (len > 0 && isspace ((unsigned char) s[len - 1]))
    s[--len] = '\0';
  return s;
}

static int
fail (struct parser *p, unsigned line, const char *fmt, const char *a, const char *b,
      const char *c)
{
  char message[512];
  snprintf (message, sizeof message, fmt, a, b, c);
  snprintf (p->err, p->err_bytes, "%s:%u: %s", p->path, line, message);
  return -1;
}

/* bs and offsets: fio 3.33 parses any bs >= 1 (bs=513 included) but the
 * I/O fails on the devices storlab models, whose logical sector is 512:
 *   - ioengine=nbd on a storlab plugin (minimum block size 512): libnbd
 *     refuses the request and fio exits 1 with "fio: pid=N,
 *     err=22/file:ioengines.c:399, func=td_io_queue, error=Invalid argument";
 *   - direct=1, as the sweeps run fio in the guest: the kernel refuses it,
 *     "fio: io_u error on file F: Invalid argument: read offset=63099,
 *     buflen=513", exit 1 (only buffered I/O to a file takes any size, and
 *     storlab-sim models the device below any page cache).
 * Only the directions the job uses count (fio runs rw=randread with
 * bs=4k,513), and fio rounds the start offset up to the smallest bs when
 * offset or offset_increment is a percentage, so only byte offsets can be
 * misaligned: offset, and offset_increment when there is a second clone.
 * size and io_size need no alignment: fio issues whole blocks only. */
_Static_assert (SL_JOB_SECTOR_BYTES == 512, "the messages below say 512");

static int
sector_multiple (struct parser *p, const struct sl_job *job, const char *key, uint64_t bytes,
                 const char *where)
{
  if (bytes % SL_JOB_SECTOR_BYTES == 0)
    return 0;
  char value[96];
  snprintf (value, sizeof value, "%s=%llu%s", key, (unsigned long long) bytes, where);
  return fail (p, job->line, "job '%s': %s: not a multiple of 512 bytes, the device's logical"
               " sector (fio's I/O to the device fails with EINVAL)", job->name, value, NULL);
}

static int
check_alignment (struct parser *p, const struct sl_job *job)
{
  if (job->do_read && sector_multiple (p, job, "bs", job->bs_bytes[SL_OP_READ],
                                       job->do_write ? " for reads" : "") != 0)
    return -1;
  if (job->do_write && sector_multiple (p, job, "bs", job->bs_bytes[SL_OP_WRITE],
                                        job->do_read ? " for writes" : "") != 0)
    return -1;
  if (job->offset.is_percent || job->offset_increment.is_percent)
    return 0;                           /* fio aligns the start offset itself */
  if (sector_multiple (p, job, "offset", job->offset.bytes, "") != 0)
    return -1;
  if (job->numjobs > 1
      && sector_multiple (p, job, "offset_increment", job->offset_increment.bytes,
                          " (numjobs > 1)") != 0)
    return -1;
  return 0;
}

/* Cross-option checks once a job section is complete. */
static int
finish_job (struct parser *p, const struct sl_job *job)
{
  if (job->time_based && job->runtime_ns == 0)
    return fail (p, job->line, "job '%s': time_based needs runtime", job->name, NULL, NULL);
  return check_alignment (p, job);
}

static int
start_section (struct parser *p, unsigned line, const char *name)
{
  if (p->current != NULL && finish_job (p, p->current) != 0)
    return -1;
  p->in_section = true;
  if (strcmp (name, "global") == 0) {
    p->current = NULL;
    p->jf->has_global = true;
    return 0;
  }
  struct sl_jobfile *jf = p->jf;
  struct sl_job *jobs = realloc (jf->jobs, (jf->job_count + 1) * sizeof *jobs);
  if (jobs == NULL)
    return fail (p, line, "out of memory", NULL, NULL, NULL);
  jf->jobs = jobs;
  struct sl_job *job = &jobs[jf->job_count];
  *job = p->global;                     /* inherit [global] as it stands now */
  job->options = (struct sl_job_options) { 0 };
  job->name = strdup (name);
  job->line = line;
  if (job->name == NULL)
    return fail (p, line, "out of memory", NULL, NULL, NULL);
  jf->job_count++;
  p->current = job;
  return 0;
}

static int
apply_option (struct parser *p, unsigned line, const char *key, const char *value)
{
  struct sl_job *job = p->current ? p->current : &p->global;
  struct sl_job_options *record = p->current ? &p->current->options : &p->jf->global_options;

  for (size_t i = 0; i < sizeof honoured_options / sizeof honoured_options[0]; i++) {
    if (strcmp (key, honoured_options[i].key) != 0)
      continue;
    const char *why = "bad value";
    if (honoured_options[i].fn (job, value, &why) != 0) {
      if (value != NULL)
        return fail (p, line, "%s=%s: %s", key, value, why);
      return fail (p, line, "%s: missing value (%s)", key, why, NULL);
    }
    return options_append (record, key, value) == 0 ? 0
      : fail (p, line, "out of memory", NULL, NULL, NULL);
  }

  for (size_t i = 0; i < sizeof ignored_options / sizeof ignored_options[0]; i++) {
    if (strcmp (key, ignored_options[i].key) != 0)
      continue;
    const char *const *only = ignored_options[i].only;
    if (only != NULL) {
      bool allowed = false;
      for (; *only != NULL; only++)
        if (value != NULL && strcmp (value, *only) == 0)
          allowed = true;
      if (!allowed)
        return fail (p, line, "%s=%s: not supported by storlab-sim (%s)", key,
                     value ? value : "1", ignored_options[i].reason);
    }
    return options_append (record, key, value) == 0 ? 0
      : fail (p, line, "out of memory", NULL, NULL, NULL);
  }

  return fail (p, line, "unknown or unsupported fio option '%s'", key, NULL, NULL);
}

static int
parse_line (struct parser *p, unsigned line, char *text)
{
  char *s = trim (text);
  if (s[0] == '\0' || s[0] == ';' || s[0] == '#')
    return 0;
  if (s[0] == '[') {
    size_t len = strlen (s);
    if (s[len - 1] != ']')
      return fail (p, line, "section header '%s' lacks its closing ']'", s, NULL, NULL);
    s[len - 1] = '\0';
    char *name = trim (s + 1);
    if (name[0] == '\0')
      return fail (p, line, "empty section name", NULL, NULL, NULL);
    return start_section (p, line, name);
  }

  char *key = s, *value = NULL;
  char *eq = strchr (s, '=');
  if (eq != NULL) {
    *eq = '\0';
    key = trim (s);
    value = trim (eq + 1);
  }
  if (key[0] == '\0')
    return fail (p, line, "missing option name before '='", NULL, NULL, NULL);
  if (!p->in_section)
    return fail (p, line, "option '%s' outside of a [section]", key, NULL, NULL);
  return apply_option (p, line, key, value);
}

int
sl_jobfile_parse_string (const char *text, const char *path, struct sl_jobfile *jf,
                         char *err, size_t err_bytes)
{
  memset (jf, 0, sizeof *jf);
  struct parser p = { .path = path, .jf = jf, .err = err, .err_bytes = err_bytes };
  job_defaults (&p.global);
  jf->path = strdup (path);
  char *copy = strdup (text);
  if (jf->path == NULL || copy == NULL) {
    free (copy);
    snprintf (err, err_bytes, "%s: out of memory", path);
    sl_jobfile_free (jf);
    return -1;
  }

  int rc = 0;
  unsigned line = 0;
  char *cursor = copy;
  while (rc == 0 && cursor != NULL) {
    char *newline = strchr (cursor, '\n');
    if (newline != NULL)
      *newline = '\0';
    line++;
    rc = parse_line (&p, line, cursor);
    cursor = newline ? newline + 1 : NULL;
  }
  if (rc == 0 && p.current != NULL)
    rc = finish_job (&p, p.current);
  if (rc == 0 && jf->job_count == 0) {
    snprintf (err, err_bytes, "%s: no job sections (only [global] or nothing)", path);
    rc = -1;
  }
  free (copy);
  free (p.global.name);
  if (rc != 0)
    sl_jobfile_free (jf);
  return rc;
}

/* What a non-regular file is, for the refusal. */
static const char *
file_kind (mode_t mode)
{
  if (S_ISDIR (mode))
    return "a directory";
  if (S_ISFIFO (mode))
    return "a FIFO";
  if (S_ISCHR (mode))
    return "a character device";
  if (S_ISBLK (mode))
    return "a block device";
  if (S_ISSOCK (mode))
    return "a socket";
  return "a special file";
}

/* Reads at most max_bytes + 1 bytes of fd into a NUL-terminated buffer:
 * one byte more than allowed tells a file that grew after fstat. */
static char *
read_capped (int fd, size_t max_bytes, size_t *length)
{
  char *text = malloc (max_bytes + 2);
  if (text == NULL)
    return NULL;
  size_t done = 0;
  while (done <= max_bytes) {
    ssize_t n = read (fd, text + done, max_bytes + 1 - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      free (text);
      return NULL;
    }
    if (n == 0)
      break;
    done += (size_t) n;
  }
  text[done] = '\0';
  *length = done;
  return text;
}

/* The job file's text, or NULL with err.  O_NONBLOCK: opening a FIFO
 * must not wait for a writer; it is refused by fstat like /dev/zero,
 * which would otherwise be read forever. */
static char *
read_job_text (const char *path, char *err, size_t err_bytes)
{
  int fd = open (path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    snprintf (err, err_bytes, "%s: cannot open job file: %s", path, strerror (errno));
    return NULL;
  }
  struct stat st;
  char *text = NULL;
  size_t length = 0;
  if (fstat (fd, &st) != 0)
    snprintf (err, err_bytes, "%s: cannot stat job file: %s", path, strerror (errno));
  else if (!S_ISREG (st.st_mode))
    snprintf (err, err_bytes, "%s: job file is %s; a regular file is needed", path,
              file_kind (st.st_mode));
  else if ((uint64_t) st.st_size > SL_JOB_MAX_FILE_BYTES)
    snprintf (err, err_bytes, "%s: job file is %llu bytes; at most %llu (1 MiB)", path,
              (unsigned long long) st.st_size, (unsigned long long) SL_JOB_MAX_FILE_BYTES);
  else if ((text = read_capped (fd, SL_JOB_MAX_FILE_BYTES, &length)) == NULL)
    snprintf (err, err_bytes, "%s: cannot read job file: %s", path,
              errno == ENOMEM ? "out of memory" : strerror (errno));
  else if (length > SL_JOB_MAX_FILE_BYTES) {
    snprintf (err, err_bytes, "%s: job file grew beyond %llu bytes (1 MiB) while read", path,
              (unsigned long long) SL_JOB_MAX_FILE_BYTES);
    free (text);
    text = NULL;
  }
  else if (strlen (text) != length) {
    snprintf (err, err_bytes, "%s: not a text file (contains NUL bytes)", path);
    free (text);
    text = NULL;
  }
  close (fd);
  return text;
}

int
sl_jobfile_parse_file (const char *path, struct sl_jobfile *jf, char *err, size_t err_bytes)
{
  memset (jf, 0, sizeof *jf);
  char *text = read_job_text (path, err, err_bytes);
  if (text == NULL)
    return -1;
  int rc = sl_jobfile_parse_string (text, path, jf, err, err_bytes);
  free (text);
  return rc;
}

void
sl_jobfile_free (struct sl_jobfile *jf)
{
  for (size_t i = 0; i < jf->job_count; i++) {
    free (jf->jobs[i].name);
    options_free (&jf->jobs[i].options);
  }
  free (jf->jobs);
  options_free (&jf->global_options);
  free (jf->path);
  memset (jf, 0, sizeof *jf);
}

/* ---- region and stream ---- */

static uint64_t
percent_of (uint64_t capacity_bytes, double percent)
{
  return (uint64_t) ((long double) capacity_bytes * percent / 100.0L);
}

static uint64_t
size_bytes (const struct sl_job_size *s, uint64_t capacity_bytes)
{
  return s->is_percent ? percent_of (capacity_bytes, s->percent) : s->bytes;
}

int
sl_job_region_resolve (const struct sl_job *job, unsigned clone, uint64_t capacity_bytes,
                       struct sl_job_region *out, char *err, size_t err_bytes)
{
  uint64_t min_bs = UINT64_MAX;
  if (job->do_read)
    min_bs = job->bs_bytes[SL_OP_READ];
  if (job->do_write && job->bs_bytes[SL_OP_WRITE] < min_bs)
    min_bs = job->bs_bytes[SL_OP_WRITE];

  uint64_t offset = size_bytes (&job->offset, capacity_bytes);
  if (job->offset.is_percent)
    offset -= offset % min_bs;  /* fio aligns percentage offsets to the block size */
  uint64_t increment = size_bytes (&job->offset_increment, capacity_bytes);
  uint64_t start = offset;
  if (clone > 0 && increment > 0) {
    if (increment > (UINT64_MAX - offset) / clone)
      start = UINT64_MAX;
    else
      start = offset + increment * clone;
  }
  if (start >= capacity_bytes) {
    snprintf (err, err_bytes, "job '%s' (clone %u): offset %llu is at or beyond the device"
              " end (%llu bytes)", job->name, clone, (unsigned long long) start,
              (unsigned long long) capacity_bytes);
    return -1;
  }

  uint64_t size = job->size.set ? size_bytes (&job->size, capacity_bytes)
    : capacity_bytes - start;
  if (size > capacity_bytes - start)
    size = capacity_bytes - start;      /* fio clamps the region at the device end */

  for (int dir = 0; dir < 2; dir++) {
    bool used = dir == SL_OP_READ ? job->do_read : job->do_write;
    if (used && size < job->bs_bytes[dir]) {
      snprintf (err, err_bytes, "job '%s' (clone %u): region of %llu bytes at offset %llu"
                " is smaller than bs=%llu", job->name, clone, (unsigned long long) size,
                (unsigned long long) start, (unsigned long long) job->bs_bytes[dir]);
      return -1;
    }
  }

  out->offset_bytes = start;
  out->size_bytes = size;
  out->io_limit_bytes = job->io_size_bytes ? job->io_size_bytes : size;
  return 0;
}

static uint64_t
splitmix64 (uint64_t *state)
{
  uint64_t z = (*state += UINT64_C (0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C (0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C (0x94D049BB133111EB);
  return z ^ (z >> 31);
}

void
sl_job_rng_seed (struct sl_job_rng *rng, uint64_t seed)
{
  uint64_t state = seed;
  for (int i = 0; i < 4; i++)
    rng->s[i] = splitmix64 (&state);
}

uint64_t
sl_job_seed (const struct sl_job *job, size_t job_index, unsigned clone)
{
  uint64_t state = job->randseed;
  uint64_t a = splitmix64 (&state);
  state = a ^ ((uint64_t) job_index * UINT64_C (0xD1B54A32D192ED03));
  uint64_t b = splitmix64 (&state);
  state = b ^ ((uint64_t) clone * UINT64_C (0xAEF17502108EF2D9));
  return splitmix64 (&state);
}

void
sl_job_stream_init (struct sl_job_stream *st, const struct sl_job *job,
                    const struct sl_job_region *region, uint64_t seed)
{
  memset (st, 0, sizeof *st);
  sl_job_rng_seed (&st->rng, seed);
  st->region_offset_bytes = region->offset_bytes;
  st->region_bytes = region->size_bytes;
  st->do_read = job->do_read;
  st->do_write = job->do_write;
  st->random = job->random;
  st->random_map = !job->norandommap;
  st->rwmixread_pct = job->rwmixread_pct;
  for (int dir = 0; dir < 2; dir++) {
    st->bs_bytes[dir] = job->bs_bytes[dir];
    st->blocks[dir] = region->size_bytes / job->bs_bytes[dir];
    st->percentage_random_pct[dir] = job->percentage_random_pct[dir];
    sl_job_permutation_init (&st->pass[dir], st->blocks[dir]);
  }
}
