/* jobfile.h — fio job files for storlab-sim: parsing, and what a job means.
 *
 * The same job file runs against the real plugin (fio --ioengine=nbd) and
 * the simulator, so the options the simulator honours follow fio 3.33's
 * semantics (HOWTO "Job file format" and the option reference):
 *   - [global] sections set defaults for the job sections that follow them;
 *     `key=value` or bare `key` (boolean true); lines starting with ';' or
 *     '#' are comments; whitespace around keys and values is trimmed.
 *   - sizes: integer with fio's default kb_base=1024 suffixes (k/kb, m/mb,
 *     g/gb, t/tb, p/pb = powers of 1024; "kib" etc. = powers of 1000, fio's
 *     own inversion) or, where fio allows it, N% of the device.
 *   - times: integer, default unit seconds, suffixes us/usec, ms/msec, s,
 *     m (minutes), h, d.
 *
 * Honoured: rw/readwrite, rwmixread, rwmixwrite, percentage_random, bs/
 * blocksize, iodepth, numjobs, size, offset, offset_increment, io_size/
 * io_limit, number_ios, runtime/timeout, time_based, ramp_time, randseed,
 * norandommap, name, group_reporting, startdelay, percentile_list.  A table in
 * jobfile.c lists the options accepted and ignored, with the reason; any
 * other option is an error naming file, line and option.  Beyond fio's
 * own checks: bs and byte offsets must be multiples of 512 (what fio's
 * I/O on the plugins needs) and times at most 30 days.
 *
 * Workload semantics (sl_job_stream):
 *   - random offsets are over bs-aligned blocks of [offset, offset+size).
 *     As fio's random map does by default, each pass takes every block
 *     once, in a random order, and the next pass a new order: a keyed
 *     permutation of the blocks (sl_job_permutation, no memory per block,
 *     so a region of hundreds of GiB costs nothing).  Reads and writes of
 *     one bs share the pass, as they share fio's map of the file; with a
 *     bs per direction each direction has its own.  Sequential I/O of a
 *     percentage_random mix does not take blocks from the pass (fio marks
 *     them in its map).  With norandommap, offsets are uniform, drawn with
 *     replacement.  The difference shows wherever a block's next visit
 *     matters: a write buffer absorbs an overwrite of a block it still
 *     holds, which fio's map makes rare within a pass;
 *   - sequential I/O walks each direction from the region start and wraps
 *     (a size-limited job stops at a wrap when less than the largest bs
 *     is left of io_size, as fio's keep_running does);
 *     after any I/O (random or not) the next sequential one of that
 *     direction follows it, as fio's per-direction last_pos does;
 *   - rwmixread picks read/write per I/O; percentage_random picks random
 *     vs sequential per I/O (random workloads only, as in fio);
 *   - xoshiro256** seeded through splitmix64 from randseed (fixed default,
 *     like fio's randrepeat=1), mixed with the job and clone index so every
 *     clone is an independent stream.
 */
#ifndef STORLAB_JOBFILE_H
#define STORLAB_JOBFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/request.h"
#include "job_permutation.h"
#include "job_rng.h"

#define SL_JOB_MAX_PERCENTILES 20      /* fio's FIO_IO_U_LIST_MAX_LEN */
#define SL_JOB_MAX_IODEPTH 65536u
#define SL_JOB_MAX_NUMJOBS 1024u
#define SL_JOB_DEFAULT_RANDSEED UINT64_C (0x5eed5eed5eed5eed)

/* A job file is a few lines of text; anything larger is a mistake (a
 * log or an image named by accident), refused before it is read whole. */
#define SL_JOB_MAX_FILE_BYTES (UINT64_C (1) << 20)

/* runtime, ramp_time and startdelay: at most 30 days of simulated time
 * each.  Longer than any device study we know of (endurance runs last
 * days), while runtime=100000000 (3 years, likely seconds typed for
 * milliseconds) is refused instead of running for days of wall time. */
#define SL_JOB_MAX_TIME_DAYS 30u
#define SL_JOB_MAX_TIME_NS (UINT64_C (86400000000000) * SL_JOB_MAX_TIME_DAYS)

/* The logical sector the storlab plugins advertise as their minimum
 * block size (plugin_common.c).  Block sizes and byte offsets of the
 * directions a job uses must be multiples of it, or fio fails on the
 * real device (see finish_job in jobfile.c). */
#define SL_JOB_SECTOR_BYTES 512u

/* A size option: bytes, or a percentage of the device. */
struct sl_job_size {
  bool set;
  bool is_percent;
  uint64_t bytes;
  double percent;
};

/* One `key=value` line as written (for fio's "job options" JSON). */
struct sl_job_option {
  char *key;
  char *value;                         /* NULL for a bare key */
};

struct sl_job_options {
  struct sl_job_option *items;
  size_t count;
};

struct sl_job {
  char *name;
  unsigned line;                       /* line of the [section] header */
  struct sl_job_options options;       /* this section's own lines */

  bool do_read, do_write;              /* both: mixed */
  bool random;
  unsigned rwmixread_pct;              /* reads in a mixed workload */
  unsigned percentage_random_pct[2];   /* [SL_OP_READ], [SL_OP_WRITE] */
  uint64_t bs_bytes[2];                /* [SL_OP_READ], [SL_OP_WRITE] */
  uint32_t iodepth;
  uint32_t numjobs;
  struct sl_job_size size;             /* unset: device size - offset */
  struct sl_job_size offset;
  struct sl_job_size offset_increment;
  uint64_t io_size_bytes;              /* 0: size */
  uint64_t number_ios;                 /* 0: unlimited */
  uint64_t runtime_ns;                 /* 0: unlimited */
  bool time_based;
  bool norandommap;                    /* offsets drawn with replacement, no pass */
  uint64_t ramp_time_ns;
  uint64_t startdelay_ns;
  uint64_t randseed;
  bool group_reporting;
  double percentiles[SL_JOB_MAX_PERCENTILES];
  unsigned percentile_count;
};

struct sl_jobfile {
  char *path;
  bool has_global;                     /* a [global] section was present */
  struct sl_job_options global_options;
  struct sl_job *jobs;
  size_t job_count;
};

/* Parses a job file: a regular file of at most SL_JOB_MAX_FILE_BYTES
 * (a FIFO or a device such as /dev/zero is refused, never read).
 * Returns 0, or -1 with "PATH:LINE: reason" in err
 * (e.g. "j.fio:3: unknown or unsupported fio option 'foo'",
 * "j.fio:4: bs=4x: not a size").  On failure *jf is empty. */
int sl_jobfile_parse_file (const char *path, struct sl_jobfile *jf,
                           char *err, size_t err_bytes);
/* Same, from text in memory; path is used only for messages. */
int sl_jobfile_parse_string (const char *text, const char *path, struct sl_jobfile *jf,
                             char *err, size_t err_bytes);
void sl_jobfile_free (struct sl_jobfile *jf);

/* A time as fio writes it (see "times" above: "10", "10s", "500ms", "2m").
 * 0, or -1 with *why set to a static reason. */
int sl_job_parse_time_ns (const char *value, uint64_t *out_ns, const char **why);

/* fio's default percentile list (1, 5, 10, ... 99.99). */
extern const double sl_job_default_percentiles[];
extern const unsigned sl_job_default_percentile_count;

/* The device region one clone of a job works on. */
struct sl_job_region {
  uint64_t offset_bytes;
  uint64_t size_bytes;
  uint64_t io_limit_bytes;             /* stop after this many bytes (io_size or size) */
};

/* Resolves size/offset/offset_increment for clone `clone` (0-based) on a
 * device of capacity_bytes, as fio does: percentages of the device,
 * percentage offsets aligned down to the smallest bs, default size = the
 * rest of the device, size clamped to the device end.  -1 with a reason
 * naming the job and option when the region is empty, starts beyond the
 * device or is smaller than a block. */
int sl_job_region_resolve (const struct sl_job *job, unsigned clone, uint64_t capacity_bytes,
                           struct sl_job_region *out, char *err, size_t err_bytes);

/* ---- the I/O stream of one clone ---- */

struct sl_job_stream {
  struct sl_job_rng rng;
  uint64_t region_offset_bytes;
  uint64_t region_bytes;
  uint64_t bs_bytes[2];
  uint64_t blocks[2];                  /* region_bytes / bs, per direction */
  uint64_t next_sequential_bytes[2];   /* relative to the region start */
  bool do_read, do_write, random;
  bool random_map;                     /* not norandommap: a pass takes each block once */
  struct sl_job_permutation pass[2];   /* per direction; one shared when the bs are equal */
  unsigned rwmixread_pct;
  unsigned percentage_random_pct[2];
};

/* Seed for clone `clone` of job number job_index in its file. */
uint64_t sl_job_seed (const struct sl_job *job, size_t job_index, unsigned clone);
void sl_job_stream_init (struct sl_job_stream *st, const struct sl_job *job,
                         const struct sl_job_region *region, uint64_t seed);

/* The next I/O of the stream: direction, offset and length.  Returns true
 * when a sequential I/O wrapped to the region start (a new pass: fio ends
 * a size-limited job there when less than one block is left to do).
 * Inline: the simulator calls it once per simulated I/O. */
static inline bool
sl_job_stream_next (struct sl_job_stream *st, enum sl_op *op,
                    uint64_t *offset_bytes, uint64_t *length_bytes)
{
  enum sl_op dir;
  if (st->do_read && st->do_write)
    dir = sl_job_rng_below (&st->rng, 100) < st->rwmixread_pct ? SL_OP_READ : SL_OP_WRITE;
  else
    dir = st->do_read ? SL_OP_READ : SL_OP_WRITE;

  uint64_t bs = st->bs_bytes[dir];
  bool random = st->random
    && (st->percentage_random_pct[dir] >= 100
        || sl_job_rng_below (&st->rng, 100) < st->percentage_random_pct[dir]);
  uint64_t relative;
  bool wrapped = false;
  if (random && st->random_map) {
    int map = st->bs_bytes[SL_OP_READ] == st->bs_bytes[SL_OP_WRITE] ? 0 : dir;
    relative = sl_job_permutation_next (&st->pass[map], &st->rng) * bs;
  }
  else if (random)
    relative = sl_job_rng_below (&st->rng, st->blocks[dir]) * bs;
  else {
    relative = st->next_sequential_bytes[dir];
    if (relative + bs > st->region_bytes) {
      relative = 0;             /* a block no longer fits: back to the start */
      wrapped = true;
    }
  }
  st->next_sequential_bytes[dir] = relative + bs;

  *op = dir;
  *offset_bytes = st->region_offset_bytes + relative;
  *length_bytes = bs;
  return wrapped;
}

#endif
