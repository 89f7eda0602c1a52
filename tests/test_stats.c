/* test_stats.c — queue-depth integrals, JSON output, and the shared stats
 * file read from another process under the seqlock. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/stats.h"

static struct sl_device_stats *
new_stats (const char *name, uint64_t now_ns)
{
  struct sl_device_stats *s = malloc (sizeof *s);
  assert_non_null (s);
  memset (s, 0xA5, sizeof *s);  /* init must not rely on zeroed memory */
  sl_device_stats_init (s, name, "hdd", UINT64_C (4000787030016), now_ns);
  return s;
}

/* Two overlapping requests then an isolated one, all times hand-picked:
 *   A arrives 1000, B arrives 1500, A completes 3000, B completes 4000,
 *   C arrives 10000, completes 10100.
 * depth: 1 on [1000,1500), 2 on [1500,3000), 1 on [3000,4000), 0 until
 * 10000, 1 on [10000,10100): integral 500 + 3000 + 1000 + 100 = 4600,
 * busy 500 + 1500 + 1000 + 100 = 3100, elapsed 9100. */
static void
run_scenario (struct sl_device_stats *s)
{
  sl_device_stats_arrival (s, 1000);
  sl_device_stats_arrival (s, 1500);
  sl_device_stats_completion (s, SL_OP_READ, 4096, 2000, 3000);
  sl_device_stats_completion (s, SL_OP_WRITE, 8192, 2500, 4000);
  sl_device_stats_arrival (s, 10000);
  sl_device_stats_completion (s, SL_OP_READ, 4096, 100, 10100);
}

static void
test_init (void **state)
{
  (void) state;
  struct sl_device_stats *s = new_stats ("disk0", 777);
  assert_string_equal (s->name, "disk0");
  assert_string_equal (s->kind, "hdd");
  assert_int_equal (s->capacity_bytes, UINT64_C (4000787030016));
  assert_int_equal (s->started_ns, 777);
  assert_int_equal (s->last_change_ns, 777);
  assert_int_equal (s->now_ns, 777);
  assert_int_equal (s->queue_depth, 0);
  assert_int_equal (s->arrivals, 0);
  assert_int_equal (s->sequence % 2, 0);
  assert_int_equal (s->op[SL_OP_TRIM].latency_ns.min_value, UINT64_MAX);
  assert_int_equal (s->op[SL_OP_TRIM].latency_ns.buckets[5], 0);
  assert_int_equal (s->model_counter[15], 0);
  assert_int_equal (s->model_counter_name[15][0], '\0');

  char long_name[100];
  memset (long_name, 'n', sizeof long_name - 1);
  long_name[sizeof long_name - 1] = '\0';
  sl_device_stats_init (s, long_name, "a-very-long-kind-name", 0, 0);
  assert_int_equal (strlen (s->name), SL_STATS_NAME_BYTES - 1);
  assert_int_equal (strlen (s->kind), sizeof s->kind - 1);

  /* truncation does not split a multi-byte character: 46 'x' + "é" (2 bytes)
   * does not fit 47 bytes, so the é is dropped whole */
  char utf8_name[64];
  memset (utf8_name, 'x', 46);
  strcpy (utf8_name + 46, "\xc3\xa9");
  sl_device_stats_init (s, utf8_name, NULL, 0, 0);
  assert_int_equal (strlen (s->name), 46);
  assert_string_equal (s->kind, "");
  free (s);
}

static void
test_integrals (void **state)
{
  (void) state;
  struct sl_device_stats *s = new_stats ("disk0", 1000);
  uint64_t sequence_before = s->sequence;
  run_scenario (s);
  assert_int_equal (s->queue_depth_integral_ns, 4600);
  assert_int_equal (s->busy_ns, 3100);
  assert_int_equal (s->max_queue_depth, 2);
  assert_int_equal (s->queue_depth, 0);
  assert_int_equal (s->arrivals, 3);
  assert_int_equal (s->now_ns, 10100);
  assert_int_equal (s->last_change_ns, 10100);
  assert_int_equal (s->sequence, sequence_before + 12);     /* 6 writes, 2 bumps each */

  const struct sl_op_stats *read = &s->op[SL_OP_READ], *write = &s->op[SL_OP_WRITE];
  assert_int_equal (read->count, 2);
  assert_int_equal (read->bytes, 8192);
  assert_int_equal (read->latency_ns.count, 2);
  assert_int_equal (read->latency_ns.min_value, 100);
  assert_int_equal (read->latency_ns.max_value, 2000);
  assert_int_equal (write->count, 1);
  assert_int_equal (write->bytes, 8192);
  assert_int_equal (write->latency_ns.min_value, 2500);
  assert_int_equal (s->op[SL_OP_FLUSH].count, 0);

  /* a completion with depth already 0 does not wrap the depth */
  sl_device_stats_completion (s, SL_OP_FLUSH, 0, 5, 10200);
  assert_int_equal (s->queue_depth, 0);
  assert_int_equal (s->busy_ns, 3100);
  assert_int_equal (s->op[SL_OP_FLUSH].count, 1);

  /* time going backwards adds nothing */
  sl_device_stats_arrival (s, 10300);
  sl_device_stats_arrival (s, 10250);
  assert_int_equal (s->queue_depth_integral_ns, 4600);
  assert_int_equal (s->queue_depth, 2);
  free (s);
}

static void
test_name_counter (void **state)
{
  (void) state;
  struct sl_device_stats *s = new_stats ("disk0", 0);
  sl_device_stats_name_counter (s, 0, "cache_hits");
  sl_device_stats_name_counter (s, 15, "last");
  assert_string_equal (s->model_counter_name[0], "cache_hits");
  assert_string_equal (s->model_counter_name[15], "last");
  uint64_t sequence_before = s->sequence;
  struct sl_device_stats *before = malloc (sizeof *before);
  assert_non_null (before);
  memcpy (before, s, sizeof *s);
  sl_device_stats_name_counter (s, 16, "ignored");
  assert_memory_equal (before, s, sizeof *s);
  assert_int_equal (s->sequence, sequence_before);
  sl_device_stats_name_counter (s, 1, "a_counter_name_longer_than_23_bytes");
  assert_int_equal (strlen (s->model_counter_name[1]), 23);
  free (before);
  free (s);
}

/* Returns the JSON text of s (caller frees). */
static char *
json_of (const struct sl_device_stats *s)
{
  FILE *f = tmpfile ();
  assert_non_null (f);
  sl_device_stats_write_json (s, f);
  long length = ftell (f);
  assert_true (length > 0);
  rewind (f);
  char *text = calloc (1, (size_t) length + 1);
  assert_non_null (text);
  assert_int_equal (fread (text, 1, (size_t) length, f), (size_t) length);
  fclose (f);
  return text;
}

/* Structural check: balanced {} [] outside strings, strings closed,
 * no raw control characters, a single top-level value. */
static void
assert_json_shape (const char *text)
{
  int depth = 0;
  bool in_string = false;
  for (const char *p = text; *p; p++) {
    assert_true ((unsigned char) *p >= 0x20);
    if (in_string) {
      if (*p == '\\')
        p++;
      else if (*p == '"')
        in_string = false;
      continue;
    }
    if (*p == '"')
      in_string = true;
    else if (*p == '{' || *p == '[')
      depth++;
    else if (*p == '}' || *p == ']') {
      depth--;
      assert_true (depth >= 0);
      if (depth == 0)
        assert_int_equal (p[1], '\0');
    }
  }
  assert_false (in_string);
  assert_int_equal (depth, 0);
  assert_int_equal (text[0], '{');
  assert_null (strstr (text, "nan"));
  assert_null (strstr (text, "inf"));
}

static void
assert_contains (const char *text, const char *needle)
{
  if (strstr (text, needle) == NULL)
    fail_msg ("JSON lacks <%s>:\n%s", needle, text);
}

static void
test_json (void **state)
{
  (void) state;
  struct sl_device_stats *s = new_stats ("disk\"0\\", 1000);
  run_scenario (s);
  sl_device_stats_name_counter (s, 0, "cache_hits");
  s->model_counter[0] = 7;
  sl_device_stats_name_counter (s, 3, "seek\nx");
  s->model_counter[5] = 99;     /* unnamed: not printed */
  char *text = json_of (s);
  assert_json_shape (text);

  assert_contains (text, "{\"name\": \"disk\\\"0\\\\\", \"kind\": \"hdd\"");
  assert_contains (text, "\"capacity_bytes\": 4000787030016");
  assert_contains (text, "\"now_ns\": 10100, \"elapsed_ns\": 9100");
  assert_contains (text, "\"queue_depth\": 0, \"max_queue_depth\": 2");
  assert_contains (text, "\"mean_queue_depth\": 0.505494505");       /* 4600 / 9100 */
  assert_contains (text, "\"busy_ns\": 3100");
  assert_contains (text, "\"utilization\": 0.340659341");            /* 3100 / 9100 */
  assert_contains (text, "\"arrivals\": 3");
  /* 2 reads in 9.1 us: 219780.22 IOPS; 8192 bytes: 900219780 B/s */
  assert_contains (text, "\"read\": {\"count\": 2, \"bytes\": 8192, \"iops\": 219780.22"
                   ", \"bytes_per_s\": 900219780");
  assert_contains (text, "\"latency_ns\": {\"min\": 100, \"max\": 2000, \"mean\": 1050"
                   ", \"stddev\": 950, \"percentiles\": {\"50\": 100, \"90\": 2000, \"99\": 2000"
                   ", \"99.9\": 2000, \"99.99\": 2000}}");
  /* 100 is exact bucket 100; 2000 is bucket 4*128+122 = 634 */
  assert_contains (text, "\"latency_histogram\": {\"sub_bits\": 7, \"buckets\": [[100, 1], [634, 1]]}");
  assert_contains (text, "\"write\": {\"count\": 1, \"bytes\": 8192");
  assert_contains (text, "\"flush\": {\"count\": 0, \"bytes\": 0, \"iops\": 0, \"bytes_per_s\": 0"
                   ", \"latency_ns\": {\"min\": 0, \"max\": 0, \"mean\": 0, \"stddev\": 0");
  assert_contains (text, "\"trim\": {\"count\": 0");
  assert_contains (text, "\"buckets\": []");
  assert_contains (text, "\"counters\": {\"cache_hits\": 7, \"seek\\u000ax\": 0}}");
  free (text);

  /* nothing elapsed, invalid UTF-8 in a name: still valid JSON */
  sl_device_stats_init (s, "bad\xff\xc3", "ssd", 0, 5);
  text = json_of (s);
  assert_json_shape (text);
  assert_contains (text, "\"name\": \"bad\\ufffd\\ufffd\"");
  assert_contains (text, "\"mean_queue_depth\": 0, \"busy_ns\": 0, \"utilization\": 0");
  assert_contains (text, "\"counters\": {}}");
  free (text);
  free (s);
}

/* ---- stats file ---- */

struct temp_dir {
  char path[64];
  char file[96];
};

/* Fixture: a fresh directory per file test, removed even when it fails. */
static int
setup_temp_dir (void **state)
{
  struct temp_dir *t = calloc (1, sizeof *t);
  if (t == NULL)
    return -1;
  strcpy (t->path, "/tmp/test_stats.XXXXXX");
  if (mkdtemp (t->path) == NULL) {
    free (t);
    return -1;
  }
  snprintf (t->file, sizeof t->file, "%s/dev.stats", t->path);
  *state = t;
  return 0;
}

static int
teardown_temp_dir (void **state)
{
  struct temp_dir *t = *state;
  unlink (t->file);
  int result = rmdir (t->path);
  free (t);
  return result;
}

/* Waits for a forked child and asserts it exited 0. */
static void
assert_child_succeeded (pid_t pid)
{
  int status;
  assert_int_equal (waitpid (pid, &status, 0), pid);
  assert_true (WIFEXITED (status));
  assert_int_equal (WEXITSTATUS (status), 0);
}

static int
child_compare_snapshot (const char *path, const struct sl_device_stats *expected)
{
  char err[256];
  struct sl_stats_file *f = sl_stats_file_open (path, err, sizeof err);
  if (f == NULL) {
    fprintf (stderr, "child: %s\n", err);
    return 1;
  }
  const struct sl_stats_file_header *h = sl_stats_file_header (f);
  if (sl_stats_file_record_count (f) != 3 || h->record_count != 3 || h->version != SL_STATS_FILE_VERSION
      || h->clock_epoch_ns != 123456789 || h->record_bytes != sizeof (struct sl_device_stats)
      || sl_stats_file_record (f, 3) != NULL)
    return 2;
  struct sl_device_stats *copy = malloc (sizeof *copy);
  sl_device_stats_snapshot (sl_stats_file_record (f, 1), copy);
  int result = memcmp (copy, expected, sizeof *copy) == 0 ? 0 : 3;
  /* untouched records read as zeros */
  sl_device_stats_snapshot (sl_stats_file_record (f, 2), copy);
  if (copy->sequence != 0 || copy->arrivals != 0 || copy->name[0] != '\0')
    result = 4;
  free (copy);
  sl_stats_file_close (f);
  return result;
}

static void
test_file_create_and_read_in_child (void **state)
{
  struct temp_dir *t = *state;
  char err[256] = "";
  struct sl_stats_file *f = sl_stats_file_create (t->file, 3, 123456789, err, sizeof err);
  if (f == NULL)
    fail_msg ("%s", err);
  assert_int_equal (sl_stats_file_record_count (f), 3);
  const struct sl_stats_file_header *h = sl_stats_file_header (f);
  assert_memory_equal (h->magic, SL_STATS_MAGIC, sizeof h->magic);
  assert_int_equal (h->record_bytes, sizeof (struct sl_device_stats));

  struct sl_device_stats *r0 = sl_stats_file_record (f, 0), *r1 = sl_stats_file_record (f, 1);
  assert_int_equal ((char *) r0 - (char *) h, 4096);
  assert_int_equal (((char *) r1 - (char *) r0) % 64, 0);
  assert_true ((size_t) ((char *) r1 - (char *) r0) >= sizeof *r0);
  assert_null (sl_stats_file_record (f, 3));

  sl_device_stats_init (r0, "other", "ssd", 1, 0);
  sl_device_stats_init (r1, "disk1", "hdd", 1 << 30, 1000);
  run_scenario (r1);
  sl_device_stats_name_counter (r1, 2, "seeks");
  r1->model_counter[2] = 42;
  struct sl_device_stats *expected = malloc (sizeof *expected);
  assert_non_null (expected);
  sl_device_stats_snapshot (r1, expected);
  assert_memory_equal (expected, r1, sizeof *r1);

  fflush (NULL);
  pid_t pid = fork ();
  assert_true (pid >= 0);
  if (pid == 0) {
    int result = child_compare_snapshot (t->file, expected);
    /* the parent's heap, released so valgrind sees no leak in the child */
    free (expected);
    sl_stats_file_close (f);
    _exit (result);
  }
  assert_child_succeeded (pid);
  free (expected);
  sl_stats_file_close (f);

  /* the file size covers the header page and 3 strided records */
  int fd = open (t->file, O_RDONLY);
  assert_true (fd >= 0);
  off_t size = lseek (fd, 0, SEEK_END);
  close (fd);
  assert_int_equal (size, 4096 + 3 * ((sizeof (struct sl_device_stats) + 63) / 64 * 64));
}

static uint64_t
monotonic_ns (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

#define READER_DURATION_NS 300000000u
#define READER_MIN_SNAPSHOTS 5

/* Every consistent record satisfies arrivals = depth + completions and,
 * per op, count = histogram count = sum of its buckets.  These fields span
 * the whole record, so a copy torn by a concurrent update breaks them. */
static int
child_check_invariants (const char *path)
{
  char err[256];
  struct sl_stats_file *f = sl_stats_file_open (path, err, sizeof err);
  if (f == NULL)
    return 1;
  struct sl_device_stats *copy = malloc (sizeof *copy);
  uint64_t last_arrivals = 0, snapshots = 0, start_ns = monotonic_ns ();
  int result = 0;
  while (result == 0 && monotonic_ns () - start_ns < READER_DURATION_NS) {
    sl_device_stats_snapshot (sl_stats_file_record (f, 0), copy);
    snapshots++;
    uint64_t completions = 0;
    for (unsigned op = 0; op < SL_OP_COUNT; op++) {
      const struct sl_histogram *h = &copy->op[op].latency_ns;
      uint64_t bucket_sum = 0;
      for (unsigned i = 0; i < SL_HIST_BUCKETS; i++)
        bucket_sum += h->buckets[i];
      completions += copy->op[op].count;
      if (h->count != copy->op[op].count || bucket_sum != h->count)
        result = 2;
    }
    if (copy->sequence % 2 != 0 || copy->arrivals != copy->queue_depth + completions
        || copy->arrivals < last_arrivals)
      result = 3;
    last_arrivals = copy->arrivals;
  }
  if (result == 0 && (last_arrivals == 0 || snapshots < READER_MIN_SNAPSHOTS))
    result = 4;                 /* never saw the writer: the test proved nothing */
  free (copy);
  sl_stats_file_close (f);
  return result;
}

/* One burst touches the front (arrivals), middle and end (trim buckets)
 * of the record; latencies vary so different buckets change. */
static void
write_burst (struct sl_device_stats *live, uint64_t *now_ns, unsigned round)
{
  sl_device_stats_arrival (live, *now_ns += 10);
  sl_device_stats_arrival (live, *now_ns += 10);
  sl_device_stats_completion (live, (enum sl_op) (round % SL_OP_COUNT), 4096,
                              (uint64_t) round * 7919 % 1000000, *now_ns += 10);
  sl_device_stats_completion (live, SL_OP_TRIM, 512, (uint64_t) round * 104729 % 10000000,
                              *now_ns += 10);
}

static void
test_file_concurrent_reader (void **state)
{
  struct temp_dir *t = *state;
  char err[256] = "";
  struct sl_stats_file *f = sl_stats_file_create (t->file, 1, 0, err, sizeof err);
  if (f == NULL)
    fail_msg ("%s", err);
  struct sl_device_stats *live = sl_stats_file_record (f, 0);
  sl_device_stats_init (live, "busy", "ssd", 1, 0);

  fflush (NULL);
  pid_t pid = fork ();
  assert_true (pid >= 0);
  if (pid == 0) {
    int result = child_check_invariants (t->file);
    sl_stats_file_close (f);
    _exit (result);
  }
  /* bursts at varying gaps: the reader's ~30 us copies overlap some bursts
   * (and must retry) and fit between others */
  static const long pause_ns[] = { 0, 5000, 20000, 100000, 1000000 };
  int status;
  uint64_t now_ns = 0;
  pid_t done;
  for (unsigned round = 0; (done = waitpid (pid, &status, WNOHANG)) == 0; round++) {
    write_burst (live, &now_ns, round);
    long pause = pause_ns[round % (sizeof pause_ns / sizeof pause_ns[0])];
    if (pause > 0)
      nanosleep (&(struct timespec) { 0, pause }, NULL);
  }
  assert_int_equal (done, pid);
  assert_true (WIFEXITED (status));
  assert_int_equal (WEXITSTATUS (status), 0);
  sl_stats_file_close (f);
}

static void
assert_open_fails (const char *path, const char *reason)
{
  char err[512] = "";
  assert_null (sl_stats_file_open (path, err, sizeof err));
  if (strstr (err, path) == NULL || strstr (err, reason) == NULL)
    fail_msg ("error <%s> should name <%s> and <%s>", err, path, reason);
}

static void
test_file_open_errors (void **state)
{
  struct temp_dir *t = *state;

  assert_open_fails (t->file, "No such file");

  int fd = open (t->file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  assert_true (fd >= 0);
  char junk[8192];
  memset (junk, 'x', sizeof junk);
  assert_int_equal (write (fd, junk, sizeof junk), sizeof junk);
  close (fd);
  assert_open_fails (t->file, "magic");

  assert_int_equal (truncate (t->file, 100), 0);
  assert_open_fails (t->file, "too small");

  char err[256] = "";
  struct sl_stats_file *f = sl_stats_file_create (t->file, 2, 0, err, sizeof err);
  assert_non_null (f);
  sl_stats_file_close (f);
  assert_int_equal (truncate (t->file, 4096 + sizeof (struct sl_device_stats)), 0);
  assert_open_fails (t->file, "truncated");

  f = sl_stats_file_create (t->file, 1, 0, err, sizeof err);
  assert_non_null (f);
  sl_stats_file_close (f);
  fd = open (t->file, O_WRONLY);
  uint64_t wrong_record_bytes = 1234;
  assert_int_equal (pwrite (fd, &wrong_record_bytes, sizeof wrong_record_bytes,
                            offsetof (struct sl_stats_file_header, record_bytes)),
                    sizeof wrong_record_bytes);
  uint32_t wrong_version = 9;
  assert_int_equal (pwrite (fd, &wrong_version, sizeof wrong_version,
                            offsetof (struct sl_stats_file_header, version)),
                    sizeof wrong_version);
  close (fd);
  assert_open_fails (t->file, "version 9");

  assert_null (sl_stats_file_create (t->file, 0, 0, err, sizeof err));
  assert_non_null (strstr (err, t->file));
  assert_null (sl_stats_file_create ("/nonexistent-dir/x.stats", 1, 0, err, sizeof err));
  assert_non_null (strstr (err, "/nonexistent-dir/x.stats"));
}

static void
test_file_record_bytes_mismatch (void **state)
{
  struct temp_dir *t = *state;
  char err[256] = "";
  struct sl_stats_file *f = sl_stats_file_create (t->file, 1, 0, err, sizeof err);
  assert_non_null (f);
  sl_stats_file_close (f);
  int fd = open (t->file, O_WRONLY);
  assert_true (fd >= 0);
  uint64_t wrong_record_bytes = 1234;
  assert_int_equal (pwrite (fd, &wrong_record_bytes, sizeof wrong_record_bytes,
                            offsetof (struct sl_stats_file_header, record_bytes)),
                    sizeof wrong_record_bytes);
  close (fd);
  assert_open_fails (t->file, "record_bytes 1234");
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_init),
    cmocka_unit_test (test_integrals),
    cmocka_unit_test (test_name_counter),
    cmocka_unit_test (test_json),
    cmocka_unit_test_setup_teardown (test_file_create_and_read_in_child, setup_temp_dir, teardown_temp_dir),
    cmocka_unit_test_setup_teardown (test_file_concurrent_reader, setup_temp_dir, teardown_temp_dir),
    cmocka_unit_test_setup_teardown (test_file_open_errors, setup_temp_dir, teardown_temp_dir),
    cmocka_unit_test_setup_teardown (test_file_record_bytes_mismatch, setup_temp_dir, teardown_temp_dir),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
