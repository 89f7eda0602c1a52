/* test_jobfile.c — fio job file parsing, region resolution and I/O streams. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/jobfile.h"

static char err[512];

static void
parse_ok (const char *text, struct sl_jobfile *jf)
{
  err[0] = '\0';
  int rc = sl_jobfile_parse_string (text, "t.fio", jf, err, sizeof err);
  if (rc != 0)
    fail_msg ("unexpected parse error: %s", err);
}

/* Parses text expecting failure; returns the message. */
static const char *
parse_fails (const char *text)
{
  struct sl_jobfile jf;
  err[0] = '\0';
  assert_int_equal (sl_jobfile_parse_string (text, "t.fio", &jf, err, sizeof err), -1);
  assert_int_equal (jf.job_count, 0);
  assert_null (jf.jobs);
  return err;
}

static void
test_global_inheritance (void **state)
{
  (void) state;
  struct sl_jobfile jf;
  parse_ok ("[global]\n"
            "bs=8k\n"
            "iodepth=4\n"
            "ioengine=nbd\n"
            "[a]\n"
            "rw=randread\n"
            "[b]\n"
            "iodepth=16\n"
            "[global]\n"
            "bs=64k\n"
            "[c]\n", &jf);
  assert_true (jf.has_global);
  assert_int_equal (jf.job_count, 3);

  const struct sl_job *a = &jf.jobs[0], *b = &jf.jobs[1], *c = &jf.jobs[2];
  assert_string_equal (a->name, "a");
  assert_int_equal (a->line, 5);
  assert_int_equal (a->bs_bytes[SL_OP_READ], 8192);
  assert_int_equal (a->bs_bytes[SL_OP_WRITE], 8192);
  assert_int_equal (a->iodepth, 4);
  assert_true (a->do_read && !a->do_write && a->random);

  assert_string_equal (b->name, "b");
  assert_int_equal (b->iodepth, 16);
  assert_int_equal (b->bs_bytes[SL_OP_READ], 8192);
  /* fio's default: rw=read */
  assert_true (b->do_read && !b->do_write && !b->random);

  /* a later [global] changes only the jobs after it */
  assert_int_equal (c->bs_bytes[SL_OP_READ], 65536);
  assert_int_equal (c->iodepth, 4);

  /* options as written, for fio's "global options" / "job options" */
  assert_int_equal (jf.global_options.count, 4);
  assert_string_equal (jf.global_options.items[2].key, "ioengine");
  assert_string_equal (jf.global_options.items[2].value, "nbd");
  assert_string_equal (jf.global_options.items[3].value, "64k");
  assert_int_equal (a->options.count, 1);
  assert_string_equal (a->options.items[0].key, "rw");
  assert_int_equal (c->options.count, 0);
  sl_jobfile_free (&jf);
}

static void
test_defaults (void **state)
{
  (void) state;
  struct sl_jobfile jf;
  parse_ok ("[only]\n", &jf);
  assert_false (jf.has_global);
  const struct sl_job *j = &jf.jobs[0];
  assert_true (j->do_read && !j->do_write && !j->random);
  assert_int_equal (j->bs_bytes[0], 4096);
  assert_int_equal (j->iodepth, 1);
  assert_int_equal (j->numjobs, 1);
  assert_false (j->size.set);
  assert_false (j->offset.set);
  assert_int_equal (j->rwmixread_pct, 50);
  assert_int_equal (j->runtime_ns, 0);
  assert_false (j->time_based);
  assert_int_equal (j->percentile_count, 17);
  assert_true (j->percentiles[13] == 99.5);
  sl_jobfile_free (&jf);
}

static void
test_numjobs_name_and_flags (void **state)
{
  (void) state;
  struct sl_jobfile jf;
  parse_ok ("[global]\n"
            "group_reporting\n"
            "[x]\n"
            "name=renamed\n"
            "numjobs=8\n"
            "time_based\n"
            "runtime=10\n"
            "randseed=42\n"
            "number_ios=1000\n"
            "io_size=1g\n"
            "percentile_list=99.9:50:99\n", &jf);
  const struct sl_job *j = &jf.jobs[0];
  assert_string_equal (j->name, "renamed");
  assert_int_equal (j->numjobs, 8);
  assert_true (j->group_reporting);
  assert_true (j->time_based);
  assert_true (j->runtime_ns == UINT64_C (10000000000));
  assert_true (j->randseed == 42);
  assert_true (j->number_ios == 1000);
  assert_true (j->io_size_bytes == UINT64_C (1073741824));
  assert_int_equal (j->percentile_count, 3);
  assert_true (j->percentiles[0] == 50.0 && j->percentiles[1] == 99.0
               && j->percentiles[2] == 99.9);
  /* the bare key is recorded without a value */
  assert_string_equal (jf.global_options.items[0].key, "group_reporting");
  assert_null (jf.global_options.items[0].value);
  sl_jobfile_free (&jf);

  parse_ok ("[global]\ngroup_reporting\n[x]\ngroup_reporting=0\ntime_based=1\nruntime=1\n", &jf);
  assert_false (jf.jobs[0].group_reporting);
  assert_true (jf.jobs[0].time_based);
  sl_jobfile_free (&jf);
}

static void
test_rw_variants (void **state)
{
  (void) state;
  static const struct { const char *rw; bool read, write, random; } cases[] = {
    { "read", true, false, false }, { "write", false, true, false },
    { "randread", true, false, true }, { "randwrite", false, true, true },
    { "rw", true, true, false }, { "readwrite", true, true, false },
    { "randrw", true, true, true },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[128];
    struct sl_jobfile jf;
    snprintf (text, sizeof text, "[j]\nrw=%s\n", cases[i].rw);
    parse_ok (text, &jf);
    assert_int_equal (jf.jobs[0].do_read, cases[i].read);
    assert_int_equal (jf.jobs[0].do_write, cases[i].write);
    assert_int_equal (jf.jobs[0].random, cases[i].random);
    sl_jobfile_free (&jf);
  }
  struct sl_jobfile jf;
  parse_ok ("[j]\nreadwrite=randrw\nrwmixwrite=30\n", &jf);
  assert_true (jf.jobs[0].random && jf.jobs[0].do_write);
  assert_int_equal (jf.jobs[0].rwmixread_pct, 70);
  sl_jobfile_free (&jf);
  parse_ok ("[j]\nrw=randrw\nrwmixread=80\npercentage_random=25,75\n", &jf);
  assert_int_equal (jf.jobs[0].rwmixread_pct, 80);
  assert_int_equal (jf.jobs[0].percentage_random_pct[SL_OP_READ], 25);
  assert_int_equal (jf.jobs[0].percentage_random_pct[SL_OP_WRITE], 75);
  sl_jobfile_free (&jf);
  parse_ok ("[j]\nrw=randrw\npercentage_random=40\n", &jf);
  assert_int_equal (jf.jobs[0].percentage_random_pct[SL_OP_READ], 40);
  assert_int_equal (jf.jobs[0].percentage_random_pct[SL_OP_WRITE], 40);
  sl_jobfile_free (&jf);
}

static void
test_bs_pairs_and_sizes (void **state)
{
  (void) state;
  static const struct { const char *bs; uint64_t read, write; } cases[] = {
    { "8k", 8192, 8192 },
    { "4k,8k", 4096, 8192 },
    { ",16k", 4096, 16384 },          /* empty field keeps the default */
    { "1m,", 1048576, 4096 },         /* trailing comma: write keeps the default */
    { "512", 512, 512 },
    { "2KB", 2048, 2048 },
    { "512kib", 512000, 512000 },     /* fio's kb_base=1024 inversion */
    { "0x1000", 4096, 4096 },
    { "4k,8k,16k", 4096, 8192 },      /* trim value accepted, not modelled */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[128];
    struct sl_jobfile jf;
    snprintf (text, sizeof text, "[j]\nblocksize=%s\n", cases[i].bs);
    parse_ok (text, &jf);
    assert_true (jf.jobs[0].bs_bytes[SL_OP_READ] == cases[i].read);
    assert_true (jf.jobs[0].bs_bytes[SL_OP_WRITE] == cases[i].write);
    sl_jobfile_free (&jf);
  }

  struct sl_jobfile jf;
  parse_ok ("[j]\nsize=2g\noffset=1m\noffset_increment=10%\n", &jf);
  const struct sl_job *j = &jf.jobs[0];
  assert_true (j->size.set && !j->size.is_percent);
  assert_true (j->size.bytes == UINT64_C (2147483648));
  assert_true (j->offset.bytes == 1048576);
  assert_true (j->offset_increment.is_percent && j->offset_increment.percent == 10.0);
  sl_jobfile_free (&jf);

  parse_ok ("[j]\nsize=25%\n", &jf);
  assert_true (jf.jobs[0].size.is_percent && jf.jobs[0].size.percent == 25.0);
  sl_jobfile_free (&jf);
}

static void
test_runtime_suffixes (void **state)
{
  (void) state;
  static const struct { const char *value; uint64_t ns; } cases[] = {
    { "30", UINT64_C (30000000000) },
    { "5s", UINT64_C (5000000000) },
    { "250ms", UINT64_C (250000000) },
    { "500us", UINT64_C (500000) },
    { "2m", UINT64_C (120000000000) },
    { "1h", UINT64_C (3600000000000) },
    { "10MS", UINT64_C (10000000) },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[128];
    struct sl_jobfile jf;
    snprintf (text, sizeof text, "[j]\nruntime=%s\nramp_time=%s\nstartdelay=%s\n",
              cases[i].value, cases[i].value, cases[i].value);
    parse_ok (text, &jf);
    assert_true (jf.jobs[0].runtime_ns == cases[i].ns);
    assert_true (jf.jobs[0].ramp_time_ns == cases[i].ns);
    assert_true (jf.jobs[0].startdelay_ns == cases[i].ns);
    sl_jobfile_free (&jf);
  }
}

static void
test_comments_and_whitespace (void **state)
{
  (void) state;
  struct sl_jobfile jf;
  parse_ok ("; leading comment\n"
            "# another\n"
            "\n"
            "  [ global ]  \n"
            "   bs =  16k   \n"
            "\t; indented comment\n"
            "[job one]\r\n"
            "  iodepth\t=\t8\r\n", &jf);
  assert_int_equal (jf.job_count, 1);
  assert_string_equal (jf.jobs[0].name, "job one");
  assert_int_equal (jf.jobs[0].bs_bytes[0], 16384);
  assert_int_equal (jf.jobs[0].iodepth, 8);
  sl_jobfile_free (&jf);
}

static void
test_unknown_option_error (void **state)
{
  (void) state;
  assert_string_equal (parse_fails ("[global]\nbs=4k\n\n[j]\nfrobnicate=1\n"),
                       "t.fio:5: unknown or unsupported fio option 'frobnicate'");
  assert_string_equal (parse_fails ("[j]\n; c\nstonewall\n"),
                       "t.fio:3: unknown or unsupported fio option 'stonewall'");
}

static void
test_bad_values (void **state)
{
  (void) state;
  const char *m = parse_fails ("[j]\nbs=4x\n");
  assert_non_null (strstr (m, "t.fio:2: bs=4x: not a size"));
  m = parse_fails ("[j]\n\niodepth=0\n");
  assert_non_null (strstr (m, "t.fio:3: iodepth=0:"));
  m = parse_fails ("[j]\nrw=trim\n");
  assert_non_null (strstr (m, "t.fio:2: rw=trim: not one of"));
  m = parse_fails ("[j]\nrw=randread:8\n");
  assert_non_null (strstr (m, "t.fio:2: rw=randread:8:"));
  assert_non_null (strstr (m, "':N'"));
  m = parse_fails ("[j]\nrwmixread=101\n");
  assert_non_null (strstr (m, "t.fio:2: rwmixread=101:"));
  m = parse_fails ("[j]\nruntime=5x\n");
  assert_non_null (strstr (m, "t.fio:2: runtime=5x: not a time"));
  m = parse_fails ("[j]\nsize=0\n");
  assert_non_null (strstr (m, "t.fio:2: size=0:"));
  m = parse_fails ("[j]\nsize=150%\n");
  assert_non_null (strstr (m, "t.fio:2: size=150%:"));
  m = parse_fails ("[j]\nbs=10%\n");
  assert_non_null (strstr (m, "t.fio:2: bs=10%:"));
  m = parse_fails ("[j]\nbs\n");
  assert_non_null (strstr (m, "t.fio:2: bs: missing value"));
  m = parse_fails ("[j]\nnumjobs=two\n");
  assert_non_null (strstr (m, "t.fio:2: numjobs=two:"));
  m = parse_fails ("[j]\nbuffered=1\n");
  assert_non_null (strstr (m, "t.fio:2: buffered=1: not supported"));
  m = parse_fails ("[j]\nverify=md5\n");
  assert_non_null (strstr (m, "t.fio:2: verify=md5:"));
  m = parse_fails ("[j]\ntime_based\n");
  assert_non_null (strstr (m, "t.fio:1: job 'j': time_based needs runtime"));
  m = parse_fails ("bs=4k\n[j]\n");
  assert_non_null (strstr (m, "t.fio:1: option 'bs' outside of a [section]"));
  m = parse_fails ("[global]\nbs=4k\n");
  assert_non_null (strstr (m, "t.fio: no job sections"));
  m = parse_fails ("[j\n");
  assert_non_null (strstr (m, "t.fio:1: section header"));
  m = parse_fails ("[j]\npercentile_list=50:abc\n");
  assert_non_null (strstr (m, "t.fio:2: percentile_list=50:abc:"));
}

/* fio parses bs=513 but its I/O to a 512-byte-sector device fails
 * (jobfile.c, check_alignment): refused, for the directions in use. */
static void
test_sector_alignment (void **state)
{
  (void) state;
  struct sl_jobfile jf;
  const char *m = parse_fails ("[j]\nbs=513\n");
  assert_non_null (strstr (m, "t.fio:1: job 'j': bs=513: not a multiple of 512 bytes"));
  m = parse_fails ("[j]\nbs=1kib\n");                /* 1000 bytes */
  assert_non_null (strstr (m, "job 'j': bs=1000: not a multiple of 512"));
  m = parse_fails ("[global]\nbs=4k,513\n[ok]\nrw=randread\n[mixed]\nrw=randrw\n");
  assert_non_null (strstr (m, "t.fio:5: job 'mixed': bs=513 for writes:"));
  m = parse_fails ("[j]\noffset=513\n");
  assert_non_null (strstr (m, "job 'j': offset=513: not a multiple of 512"));
  m = parse_fails ("[j]\noffset_increment=100\nnumjobs=2\n");
  assert_non_null (strstr (m, "job 'j': offset_increment=100 (numjobs > 1): not a multiple"));

  parse_ok ("[j]\nbs=4096\n", &jf);
  assert_true (jf.jobs[0].bs_bytes[SL_OP_READ] == 4096);
  sl_jobfile_free (&jf);
  /* fio runs these: the unused direction's bs, one clone's increment,
   * and percentages (fio rounds the start offset to the block size) */
  static const char *const accepted[] = {
    "[j]\nrw=randread\nbs=4k,513\n",
    "[j]\nrw=write\nbs=513,1k\n",
    "[j]\noffset_increment=100\n",
    "[j]\noffset=513\noffset_increment=10%\nnumjobs=2\n",
    "[j]\noffset=1%\nbs=1536\n",
    "[j]\nbs=512,1m,513\nrw=randrw\n",            /* trim bs: not modelled */
  };
  for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++) {
    parse_ok (accepted[i], &jf);
    sl_jobfile_free (&jf);
  }
}

/* runtime, ramp_time and startdelay: at most 30 days each. */
static void
test_time_limits (void **state)
{
  (void) state;
  struct sl_jobfile jf;
  parse_ok ("[j]\nruntime=30d\nramp_time=2592000\nstartdelay=720h\n", &jf);
  assert_true (jf.jobs[0].runtime_ns == SL_JOB_MAX_TIME_NS);
  assert_true (jf.jobs[0].ramp_time_ns == SL_JOB_MAX_TIME_NS);
  assert_true (jf.jobs[0].startdelay_ns == SL_JOB_MAX_TIME_NS);
  sl_jobfile_free (&jf);

  assert_string_equal (parse_fails ("[j]\ntime_based\nruntime=100000000\n"),
                       "t.fio:3: runtime=100000000: above storlab-sim's limit of 30 days"
                       " (30d, 2592000 s) of simulated time");
  const char *m = parse_fails ("[j]\ntimeout=2592001\n");
  assert_non_null (strstr (m, "t.fio:2: timeout=2592001: above storlab-sim's limit of 30 days"));
  m = parse_fails ("[j]\nramp_time=31d\n");
  assert_non_null (strstr (m, "t.fio:2: ramp_time=31d: above"));
  m = parse_fails ("[global]\nstartdelay=43201m\n[j]\n");
  assert_non_null (strstr (m, "t.fio:2: startdelay=43201m: above"));
}

/* Writes a job file of exactly `bytes` bytes: a job, then empty lines. */
static void
write_job_of_size (const char *path, size_t bytes)
{
  char *text = malloc (bytes);
  assert_non_null (text);
  memset (text, '\n', bytes);
  memcpy (text, "[j]", 3);
  FILE *f = fopen (path, "w");
  assert_non_null (f);
  assert_int_equal (fwrite (text, 1, bytes, f), bytes);
  assert_int_equal (fclose (f), 0);
  free (text);
}

/* /dev/zero would be read forever, a FIFO would block: only regular
 * files of at most 1 MiB are read. */
static void
test_parse_file_kinds (void **state)
{
  (void) state;
  struct sl_jobfile jf;
  assert_int_equal (sl_jobfile_parse_file ("/dev/zero", &jf, err, sizeof err), -1);
  assert_string_equal (err, "/dev/zero: job file is a character device; a regular file is needed");
  assert_int_equal (sl_jobfile_parse_file ("/tmp", &jf, err, sizeof err), -1);
  assert_non_null (strstr (err, "/tmp: job file is a directory"));

  char dir[] = "/tmp/test_jobfile_dir_XXXXXX";
  assert_non_null (mkdtemp (dir));
  char path[64];
  snprintf (path, sizeof path, "%s/fifo", dir);
  assert_int_equal (mkfifo (path, 0600), 0);   /* no writer: open must not wait */
  assert_int_equal (sl_jobfile_parse_file (path, &jf, err, sizeof err), -1);
  assert_non_null (strstr (err, "job file is a FIFO; a regular file is needed"));
  unlink (path);

  snprintf (path, sizeof path, "%s/big.fio", dir);
  write_job_of_size (path, SL_JOB_MAX_FILE_BYTES);
  assert_int_equal (sl_jobfile_parse_file (path, &jf, err, sizeof err), 0);
  sl_jobfile_free (&jf);
  write_job_of_size (path, SL_JOB_MAX_FILE_BYTES + 1);
  assert_int_equal (sl_jobfile_parse_file (path, &jf, err, sizeof err), -1);
  assert_non_null (strstr (err, "big.fio: job file is 1048577 bytes; at most 1048576 (1 MiB)"));
  unlink (path);
  rmdir (dir);
}

static void
test_parse_file (void **state)
{
  (void) state;
  char path[] = "/tmp/test_jobfile_XXXXXX";
  int fd = mkstemp (path);
  assert_true (fd >= 0);
  FILE *f = fdopen (fd, "w");
  fputs ("[global]\nrw=randread\n[disk]\nbogus_option=3\n", f);
  fclose (f);

  struct sl_jobfile jf;
  assert_int_equal (sl_jobfile_parse_file (path, &jf, err, sizeof err), -1);
  char expected[256];
  snprintf (expected, sizeof expected, "%s:4: unknown or unsupported fio option 'bogus_option'",
            path);
  assert_string_equal (err, expected);

  f = fopen (path, "w");
  fputs ("[global]\nrw=randread\n[disk]\niodepth=2\n", f);
  fclose (f);
  assert_int_equal (sl_jobfile_parse_file (path, &jf, err, sizeof err), 0);
  assert_string_equal (jf.path, path);
  assert_int_equal (jf.jobs[0].iodepth, 2);
  assert_true (jf.jobs[0].random);
  sl_jobfile_free (&jf);
  unlink (path);

  assert_int_equal (sl_jobfile_parse_file ("/nonexistent/x.fio", &jf, err, sizeof err), -1);
  assert_non_null (strstr (err, "/nonexistent/x.fio: cannot open job file"));
}

static void
test_region_resolve (void **state)
{
  (void) state;
  const uint64_t capacity = UINT64_C (1000) * 1048576;   /* 1000 MiB */
  struct sl_jobfile jf;
  struct sl_job_region r;

  parse_ok ("[j]\n", &jf);
  assert_int_equal (sl_job_region_resolve (&jf.jobs[0], 0, capacity, &r, err, sizeof err), 0);
  assert_true (r.offset_bytes == 0 && r.size_bytes == capacity && r.io_limit_bytes == capacity);
  sl_jobfile_free (&jf);

  /* 25% of 1000 MiB; 10% offset aligned down to bs=3072 */
  parse_ok ("[j]\nsize=25%\noffset=10%\nbs=3072\n", &jf);
  assert_int_equal (sl_job_region_resolve (&jf.jobs[0], 0, capacity, &r, err, sizeof err), 0);
  uint64_t ten_pct = capacity / 10;
  assert_true (ten_pct % 3072 != 0);
  assert_true (r.offset_bytes == ten_pct - ten_pct % 3072);
  assert_true (r.size_bytes == capacity / 4);
  sl_jobfile_free (&jf);

  /* clones step by offset_increment; default size is the rest of the device */
  parse_ok ("[j]\noffset=1m\noffset_increment=100m\nnumjobs=4\nio_size=5m\n", &jf);
  assert_int_equal (sl_job_region_resolve (&jf.jobs[0], 3, capacity, &r, err, sizeof err), 0);
  assert_true (r.offset_bytes == UINT64_C (301) * 1048576);
  assert_true (r.size_bytes == capacity - r.offset_bytes);
  assert_true (r.io_limit_bytes == UINT64_C (5) * 1048576);
  sl_jobfile_free (&jf);

  /* explicit size is clamped at the device end */
  parse_ok ("[j]\noffset=900m\nsize=500m\n", &jf);
  assert_int_equal (sl_job_region_resolve (&jf.jobs[0], 0, capacity, &r, err, sizeof err), 0);
  assert_true (r.size_bytes == UINT64_C (100) * 1048576);
  sl_jobfile_free (&jf);

  parse_ok ("[far]\noffset=2g\n", &jf);
  assert_int_equal (sl_job_region_resolve (&jf.jobs[0], 0, capacity, &r, err, sizeof err), -1);
  assert_non_null (strstr (err, "job 'far'"));
  assert_non_null (strstr (err, "offset 2147483648"));
  sl_jobfile_free (&jf);

  parse_ok ("[tiny]\nrw=write\nsize=4k\nbs=4k,64k\n", &jf);
  assert_int_equal (sl_job_region_resolve (&jf.jobs[0], 0, capacity, &r, err, sizeof err), -1);
  assert_non_null (strstr (err, "smaller than bs=65536"));
  sl_jobfile_free (&jf);
}

static struct sl_job_stream
stream_for (const char *text, uint64_t capacity, unsigned clone, struct sl_job_region *region)
{
  struct sl_jobfile jf;
  parse_ok (text, &jf);
  assert_int_equal (sl_job_region_resolve (&jf.jobs[0], clone, capacity, region, err,
                                           sizeof err), 0);
  struct sl_job_stream st;
  sl_job_stream_init (&st, &jf.jobs[0], region, sl_job_seed (&jf.jobs[0], 0, clone));
  sl_jobfile_free (&jf);
  return st;
}

static void
test_stream_random_uniform_aligned (void **state)
{
  (void) state;
  struct sl_job_region region;
  const uint64_t capacity = UINT64_C (1) << 30;
  struct sl_job_stream st = stream_for ("[j]\nrw=randread\nbs=16k\noffset=64m\nsize=256m\n",
                                        capacity, 0, &region);
  enum { BINS = 16, DRAWS = 160000 };
  uint64_t bins[BINS] = { 0 };
  for (int i = 0; i < DRAWS; i++) {
    enum sl_op op;
    uint64_t off, len;
    sl_job_stream_next (&st, &op, &off, &len);
    assert_int_equal (op, SL_OP_READ);
    assert_int_equal (len, 16384);
    assert_true (off >= region.offset_bytes);
    assert_true (off + len <= region.offset_bytes + region.size_bytes);
    assert_int_equal ((off - region.offset_bytes) % 16384, 0);
    bins[(off - region.offset_bytes) * BINS / region.size_bytes]++;
  }
  /* chi-square, 15 degrees of freedom: 99.9th percentile is 37.7 */
  double expected = (double) DRAWS / BINS, chi2 = 0.0;
  for (int b = 0; b < BINS; b++)
    chi2 += ((double) bins[b] - expected) * ((double) bins[b] - expected) / expected;
  assert_true (chi2 < 37.7);
}

static void
test_stream_sequential_wraps (void **state)
{
  (void) state;
  struct sl_job_region region;
  struct sl_job_stream st = stream_for ("[j]\nrw=write\nbs=4k\noffset=8k\nsize=12k\n",
                                        UINT64_C (1) << 20, 0, &region);
  const uint64_t expected[] = { 8192, 12288, 16384, 8192, 12288 };
  const bool wraps[] = { false, false, false, true, false };
  for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
    enum sl_op op;
    uint64_t off, len;
    assert_int_equal (sl_job_stream_next (&st, &op, &off, &len), wraps[i]);
    assert_int_equal (op, SL_OP_WRITE);
    assert_true (off == expected[i]);
  }
  /* a block that does not fit at the region end is never issued */
  st = stream_for ("[j]\nrw=read\nbs=4k\nsize=10k\n", UINT64_C (1) << 20, 0, &region);
  const uint64_t partial[] = { 0, 4096, 0 };
  for (size_t i = 0; i < 3; i++) {
    enum sl_op op;
    uint64_t off, len;
    assert_int_equal (sl_job_stream_next (&st, &op, &off, &len), i == 2);
    assert_true (off == partial[i]);
  }
  /* randread with percentage_random=0 is fully sequential */
  st = stream_for ("[j]\nrw=randread\npercentage_random=0\n", UINT64_C (1) << 20, 0, &region);
  for (uint64_t i = 0; i < 10; i++) {
    enum sl_op op;
    uint64_t off, len;
    assert_false (sl_job_stream_next (&st, &op, &off, &len));
    assert_true (off == i * 4096);
  }
}

static void
test_stream_mix_and_seeds (void **state)
{
  (void) state;
  struct sl_job_region region;
  struct sl_job_stream st = stream_for ("[j]\nrw=randrw\nrwmixread=70\nbs=4k,64k\n",
                                        UINT64_C (1) << 30, 0, &region);
  enum { DRAWS = 100000 };
  unsigned reads = 0;
  for (int i = 0; i < DRAWS; i++) {
    enum sl_op op;
    uint64_t off, len;
    sl_job_stream_next (&st, &op, &off, &len);
    assert_true (len == (op == SL_OP_READ ? 4096u : 65536u));
    reads += op == SL_OP_READ;
  }
  /* binomial sd = sqrt(100000*0.7*0.3) = 145: allow 5 sd */
  assert_in_range (reads, 70000 - 725, 70000 + 725);

  /* rw=rw: sequential per direction, each stream from the region start */
  st = stream_for ("[j]\nrw=rw\n", UINT64_C (1) << 30, 0, &region);
  uint64_t next[2] = { 0, 0 };
  for (int i = 0; i < 1000; i++) {
    enum sl_op op;
    uint64_t off, len;
    sl_job_stream_next (&st, &op, &off, &len);
    assert_true (off == next[op]);
    next[op] += 4096;
  }

  /* same seed -> same stream; clones and jobs differ */
  struct sl_jobfile jf;
  parse_ok ("[a]\nrandseed=7\n[b]\nrandseed=7\n", &jf);
  assert_true (sl_job_seed (&jf.jobs[0], 0, 0) == sl_job_seed (&jf.jobs[1], 0, 0));
  assert_true (sl_job_seed (&jf.jobs[0], 0, 0) != sl_job_seed (&jf.jobs[0], 0, 1));
  assert_true (sl_job_seed (&jf.jobs[0], 0, 0) != sl_job_seed (&jf.jobs[1], 1, 0));
  sl_jobfile_free (&jf);
}

/* Block indexes (relative, in bs) of the stream's next n I/Os. */
static void
next_blocks (struct sl_job_stream *st, uint64_t bs, unsigned n, uint64_t *blocks,
             const struct sl_job_region *region)
{
  for (unsigned i = 0; i < n; i++) {
    enum sl_op op;
    uint64_t off, len;
    sl_job_stream_next (st, &op, &off, &len);
    blocks[i] = (off - region->offset_bytes) / bs;
  }
}

/* How many of blocks[0..n) are a first visit among them, each < limit. */
static unsigned
distinct_blocks (const uint64_t *blocks, unsigned n, uint64_t limit)
{
  static unsigned char seen[1 << 16];
  memset (seen, 0, sizeof seen);
  unsigned distinct = 0;
  for (unsigned i = 0; i < n; i++) {
    assert_true (blocks[i] < limit && limit <= sizeof seen);
    distinct += !seen[blocks[i]];
    seen[blocks[i]] = 1;
  }
  return distinct;
}

/* fio's default random map: a pass takes every block once before any
 * comes again (a write buffer then sees few overwrites within a pass);
 * the next pass takes them in another order. */
static void
test_stream_random_map_takes_each_block_once_a_pass (void **state)
{
  (void) state;
  struct sl_job_region region;
  /* 1000 blocks: not a power of two, so the walk past the end is taken */
  struct sl_job_stream st = stream_for ("[j]\nrw=randwrite\nbs=4k\noffset=1m\nsize=4000k\n",
                                        UINT64_C (1) << 30, 0, &region);
  enum { BLOCKS = 1000 };
  static uint64_t first[BLOCKS], second[BLOCKS];
  next_blocks (&st, 4096, BLOCKS, first, &region);
  next_blocks (&st, 4096, BLOCKS, second, &region);
  assert_int_equal (distinct_blocks (first, BLOCKS, BLOCKS), BLOCKS);
  assert_int_equal (distinct_blocks (second, BLOCKS, BLOCKS), BLOCKS);
  unsigned same_place = 0, in_order = 0;
  for (unsigned i = 0; i < BLOCKS; i++) {
    same_place += first[i] == second[i];
    in_order += first[i] == i;
  }
  assert_true (same_place < 20 && in_order < 20);       /* a new order, not the identity */

  /* reads and writes of one bs share the pass, as they share fio's map */
  st = stream_for ("[j]\nrw=randrw\nrwmixread=70\nbs=4k\nsize=4000k\n",
                   UINT64_C (1) << 30, 0, &region);
  next_blocks (&st, 4096, BLOCKS, first, &region);
  assert_int_equal (distinct_blocks (first, BLOCKS, BLOCKS), BLOCKS);

  /* the same seed gives the same order */
  struct sl_job_stream again = stream_for ("[j]\nrw=randrw\nrwmixread=70\nbs=4k\nsize=4000k\n",
                                           UINT64_C (1) << 30, 0, &region);
  next_blocks (&again, 4096, BLOCKS, second, &region);
  assert_memory_equal (first, second, sizeof first);

  /* one block: always it */
  st = stream_for ("[j]\nrw=randread\nbs=4k\nsize=4k\n", UINT64_C (1) << 30, 0, &region);
  next_blocks (&st, 4096, 3, first, &region);
  assert_true (first[0] == 0 && first[1] == 0 && first[2] == 0);
}

/* norandommap: uniform draws with replacement, so a block comes again
 * within a pass's worth of I/Os (1000 draws over 1000 blocks leave about
 * 1000 / e of them untouched). */
static void
test_stream_norandommap_draws_with_replacement (void **state)
{
  (void) state;
  struct sl_job_region region;
  enum { BLOCKS = 1000 };
  static uint64_t drawn[BLOCKS];
  struct sl_job_stream st = stream_for ("[j]\nrw=randwrite\nbs=4k\nsize=4000k\nnorandommap\n",
                                        UINT64_C (1) << 30, 0, &region);
  next_blocks (&st, 4096, BLOCKS, drawn, &region);
  assert_in_range (distinct_blocks (drawn, BLOCKS, BLOCKS), 560, 700);   /* 632 expected */
  st = stream_for ("[j]\nrw=randwrite\nbs=4k\nsize=4000k\nnorandommap=0\n",
                   UINT64_C (1) << 30, 0, &region);
  next_blocks (&st, 4096, BLOCKS, drawn, &region);
  assert_int_equal (distinct_blocks (drawn, BLOCKS, BLOCKS), BLOCKS);
  struct sl_jobfile jf;
  assert_int_equal (sl_jobfile_parse_string ("[j]\nnorandommap=yes\n", "t.fio", &jf, err,
                                             sizeof err), -1);
  assert_non_null (strstr (err, "norandommap"));
}

static void
test_rng_below_bounds (void **state)
{
  (void) state;
  struct sl_job_rng rng;
  sl_job_rng_seed (&rng, 0);
  unsigned seen[3] = { 0 };
  for (int i = 0; i < 30000; i++) {
    uint64_t v = sl_job_rng_below (&rng, 3);
    assert_true (v < 3);
    seen[v]++;
  }
  for (int i = 0; i < 3; i++)
    assert_in_range (seen[i], 9500, 10500);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_global_inheritance),
    cmocka_unit_test (test_defaults),
    cmocka_unit_test (test_numjobs_name_and_flags),
    cmocka_unit_test (test_rw_variants),
    cmocka_unit_test (test_bs_pairs_and_sizes),
    cmocka_unit_test (test_runtime_suffixes),
    cmocka_unit_test (test_comments_and_whitespace),
    cmocka_unit_test (test_unknown_option_error),
    cmocka_unit_test (test_bad_values),
    cmocka_unit_test (test_sector_alignment),
    cmocka_unit_test (test_time_limits),
    cmocka_unit_test (test_parse_file_kinds),
    cmocka_unit_test (test_parse_file),
    cmocka_unit_test (test_region_resolve),
    cmocka_unit_test (test_stream_random_uniform_aligned),
    cmocka_unit_test (test_stream_sequential_wraps),
    cmocka_unit_test (test_stream_mix_and_seeds),
    cmocka_unit_test (test_stream_random_map_takes_each_block_once_a_pass),
    cmocka_unit_test (test_stream_norandommap_draws_with_replacement),
    cmocka_unit_test (test_rng_below_bounds),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
