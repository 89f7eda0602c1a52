/* test_params.c — size/decimal parsing, sl_param_set for every type,
 * dump and help output. */
#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/params.h"

/* ---- sizes ------------------------------------------------------------- */

static void
check_size (const char *text, uint64_t expected)
{
  uint64_t got = 12345;
  if (sl_parse_size_bytes (text, &got) != 0)
    fail_msg ("'%s' should parse", text);
  if (got != expected)
    fail_msg ("'%s' -> %llu, expected %llu", text, (unsigned long long) got,
              (unsigned long long) expected);
}

static void
test_sizes (void **state)
{
  (void) state;
  check_size ("0", 0);
  check_size ("512", 512);
  check_size ("512b", 512);
  check_size ("512B", 512);
  check_size ("4k", 4096);
  check_size ("4K", 4096);
  check_size ("4kB", 4096);
  check_size ("16M", 16ull * 1024 * 1024);
  check_size ("16MiB", 16ull * 1024 * 1024);
  check_size ("16MB", 16ull * 1024 * 1024);
  check_size ("2KiB", 2048);
  check_size ("300G", 300ull * 1024 * 1024 * 1024);
  check_size ("3GiB", 3ull * 1024 * 1024 * 1024);
  check_size ("1T", 1099511627776ull);
  check_size ("1TiB", 1099511627776ull);
  check_size ("1P", 1125899906842624ull);
  check_size ("1e", 1152921504606846976ull);
  check_size ("15E", 15ull << 60);
  check_size ("300000000000", 300000000000ull);
  check_size ("18446744073709551615", UINT64_MAX);
}

static void
test_bad_sizes (void **state)
{
  (void) state;
  static const char *const bad[] = {
    "", "-1", "+1", "4x", "1.5G", "k", "G", "b", " 4k", "4k ", "4 k", "4kk",
    "4ki", "4iB", "4bb", "0x10",
    "99999999999999999999",                    /* > 2^64 */
    "18446744073709551616",                    /* 2^64 */
    "16E", "16384P", "17179869184T",           /* 2^64 with a suffix */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    uint64_t got = 777;
    if (sl_parse_size_bytes (bad[i], &got) != -1)
      fail_msg ("'%s' should be rejected", bad[i]);
    assert_int_equal (got, 777);        /* untouched on error */
  }
  assert_int_equal (sl_parse_size_bytes (NULL, &(uint64_t){ 0 }), -1);
}

/* ---- decimals ---------------------------------------------------------- */

static void
test_decimals (void **state)
{
  (void) state;
  double v = 0;
  assert_int_equal (sl_parse_decimal ("3.8", &v), 0);
  assert_true (v == 3.8);
  assert_int_equal (sl_parse_decimal ("0", &v), 0);
  assert_true (v == 0.0);
  assert_int_equal (sl_parse_decimal ("-2.5", &v), 0);
  assert_true (v == -2.5);
  assert_int_equal (sl_parse_decimal ("1e3", &v), 0);
  assert_true (v == 1000.0);
  assert_int_equal (sl_parse_decimal (".5", &v), 0);
  assert_true (v == 0.5);
  assert_int_equal (sl_parse_decimal ("7200", &v), 0);
  assert_true (v == 7200.0);

  static const char *const bad[] = {
    "", " 1", "1 ", "abc", "1.2.3", "1x", "inf", "nan", "0x10", "1e999", "-",
    "1,5", "e5",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    v = 42;
    if (sl_parse_decimal (bad[i], &v) != -1)
      fail_msg ("'%s' should be rejected", bad[i]);
    assert_true (v == 42);
  }
}

/* ---- a small local parameter table ------------------------------------ */

struct toy_config {
  uint32_t spindles;
  uint64_t capacity_bytes;
  uint64_t seek_ns;
  uint64_t overhead_ns;
  uint64_t rate_bytes_per_s;
  bool cache;
};

static const struct sl_param toy_params[] = {
  { "spindles", SL_PARAM_COUNT, offsetof (struct toy_config, spindles), 1, 64,
    "number of spindles" },
  { "size", SL_PARAM_SIZE_BYTES, offsetof (struct toy_config, capacity_bytes),
    512, 17592186044416.0, "capacity" },
  { "seek-ms", SL_PARAM_TIME_MS, offsetof (struct toy_config, seek_ns), 0.1, 50,
    "average seek" },
  { "overhead-us", SL_PARAM_TIME_US, offsetof (struct toy_config, overhead_ns), 0,
    10000, "per-command overhead" },
  { "rate-mb-s", SL_PARAM_RATE_MB_S, offsetof (struct toy_config, rate_bytes_per_s),
    1, 20000, "media rate" },
  { "cache", SL_PARAM_ON_OFF, offsetof (struct toy_config, cache), 0, 1,
    "write cache" },
};
static const size_t toy_count = sizeof toy_params / sizeof toy_params[0];

static int
toy_set (struct toy_config *c, const char *key, const char *value, char *err)
{
  return sl_param_set (toy_params, toy_count, c, key, value, err, 256);
}

static void
test_find (void **state)
{
  (void) state;
  assert_ptr_equal (sl_param_find (toy_params, toy_count, "seek-ms"), &toy_params[2]);
  assert_null (sl_param_find (toy_params, toy_count, "seek"));
  assert_null (sl_param_find (toy_params, toy_count, ""));
}

static void
test_set_each_type (void **state)
{
  (void) state;
  struct toy_config c;
  memset (&c, 0, sizeof c);
  char err[256] = "";

  assert_int_equal (toy_set (&c, "spindles", "8", err), 0);
  assert_int_equal (c.spindles, 8);
  assert_int_equal (toy_set (&c, "size", "300G", err), 0);
  assert_int_equal (c.capacity_bytes, 300ull << 30);
  assert_int_equal (toy_set (&c, "size", "300000000000", err), 0);
  assert_int_equal (c.capacity_bytes, 300000000000ull);
  assert_int_equal (toy_set (&c, "seek-ms", "3.8", err), 0);
  assert_int_equal (c.seek_ns, 3800000);
  assert_int_equal (toy_set (&c, "seek-ms", "0.1234567", err), 0);
  assert_int_equal (c.seek_ns, 123457);          /* rounded to the ns */
  assert_int_equal (toy_set (&c, "overhead-us", "200", err), 0);
  assert_int_equal (c.overhead_ns, 200000);
  assert_int_equal (toy_set (&c, "overhead-us", "0.5", err), 0);
  assert_int_equal (c.overhead_ns, 500);
  assert_int_equal (toy_set (&c, "rate-mb-s", "124", err), 0);
  assert_int_equal (c.rate_bytes_per_s, 124000000);
  assert_int_equal (toy_set (&c, "rate-mb-s", "2.5", err), 0);
  assert_int_equal (c.rate_bytes_per_s, 2500000);

  static const char *const on[] = { "on", "true", "yes", "1", "ON" };
  static const char *const off[] = { "off", "false", "no", "0", "Off" };
  for (size_t i = 0; i < 5; i++) {
    assert_int_equal (toy_set (&c, "cache", on[i], err), 0);
    assert_true (c.cache);
    assert_int_equal (toy_set (&c, "cache", off[i], err), 0);
    assert_false (c.cache);
  }
  /* range bounds are inclusive */
  assert_int_equal (toy_set (&c, "spindles", "64", err), 0);
  assert_int_equal (c.spindles, 64);
  assert_int_equal (toy_set (&c, "spindles", "1", err), 0);
  assert_int_equal (toy_set (&c, "size", "512", err), 0);
  assert_int_equal (toy_set (&c, "size", "16T", err), 0);
  assert_int_equal (c.capacity_bytes, 16ull << 40);
}

static void
expect_error (const char *key, const char *value, int code, const char *expected)
{
  struct toy_config c;
  memset (&c, 0xa5, sizeof c);
  struct toy_config before = c;
  char err[256] = "";
  assert_int_equal (toy_set (&c, key, value, err), code);
  assert_string_equal (err, expected);
  assert_memory_equal (&c, &before, sizeof c);  /* failed set leaves field alone */
}

static void
test_set_errors (void **state)
{
  (void) state;
  expect_error ("seek-ms", "abc", -1, "seek-ms=abc: not a number");
  expect_error ("seek-ms", "", -1, "seek-ms=: not a number");
  expect_error ("seek-ms", "60", -1, "seek-ms=60: out of range 0.1..50");
  expect_error ("seek-ms", "0.05", -1, "seek-ms=0.05: out of range 0.1..50");
  expect_error ("overhead-us", "-1", -1, "overhead-us=-1: out of range 0..10000");
  expect_error ("rate-mb-s", "1e9", -1, "rate-mb-s=1e9: out of range 1..20000");
  expect_error ("spindles", "65", -1, "spindles=65: out of range 1..64");
  expect_error ("spindles", "0", -1, "spindles=0: out of range 1..64");
  expect_error ("spindles", "2.5", -1, "spindles=2.5: not a whole number");
  expect_error ("spindles", "four", -1, "spindles=four: not a number");
  expect_error ("cache", "maybe", -1, "cache=maybe: expected on or off");
  expect_error ("size", "-5", -1, "size=-5: not a size (examples: 512, 4k, 300G)");
  expect_error ("size", "1.5G", -1, "size=1.5G: not a size (examples: 512, 4k, 300G)");
  expect_error ("size", "256", -1, "size=256: out of range 512..17592186044416");
  expect_error ("size", "17T", -1, "size=17T: out of range 512..17592186044416");
  expect_error ("rpm", "7200", -2, "unknown key 'rpm'");
}

/* ---- dump and help ----------------------------------------------------- */

static char *
capture (void (*fn) (FILE *, const void *), const void *arg)
{
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream (&text, &len);
  assert_non_null (f);
  fn (f, arg);
  fclose (f);
  return text;
}

static void
dump_toy (FILE *f, const void *c)
{
  sl_params_dump (toy_params, toy_count, c, "toy.", f);
}

static void
help_toy (FILE *f, const void *c)
{
  sl_params_help (toy_params, toy_count, c, f);
}

static void
set_or_fail (struct toy_config *c, const char *key, const char *value)
{
  char err[256];
  if (toy_set (c, key, value, err) != 0)
    fail_msg ("%s=%s: %s", key, value, err);
}

static void
test_dump (void **state)
{
  (void) state;
  struct toy_config c;
  memset (&c, 0, sizeof c);
  set_or_fail (&c, "spindles", "8");
  set_or_fail (&c, "size", "300000000000");
  set_or_fail (&c, "seek-ms", "3.8");
  set_or_fail (&c, "overhead-us", "200");
  set_or_fail (&c, "rate-mb-s", "124.5");
  set_or_fail (&c, "cache", "off");
  char *text = capture (dump_toy, &c);
  assert_string_equal (text,
                       "toy.spindles=8\n"
                       "toy.size=300000000000\n"
                       "toy.seek-ms=3.8\n"
                       "toy.overhead-us=200\n"
                       "toy.rate-mb-s=124.5\n"
                       "toy.cache=off\n");
  free (text);

  /* what dump prints parses back to the same config */
  struct toy_config again;
  memset (&again, 0, sizeof again);
  c.seek_ns = 1234567;           /* 1.234567 ms */
  c.overhead_ns = 1;             /* 0.001 us */
  c.cache = true;
  text = capture (dump_toy, &c);
  char *save = NULL;
  for (char *line = strtok_r (text, "\n", &save); line;
       line = strtok_r (NULL, "\n", &save)) {
    char *eq = strchr (line, '=');
    assert_non_null (eq);
    *eq = '\0';
    set_or_fail (&again, line + strlen ("toy."), eq + 1);
  }
  free (text);
  assert_memory_equal (&again, &c, sizeof c);
}

static void
test_help (void **state)
{
  (void) state;
  struct toy_config d;
  memset (&d, 0, sizeof d);
  d.spindles = 1;
  d.capacity_bytes = 16ull << 20;
  d.seek_ns = 3800000;
  d.overhead_ns = 200000;
  d.rate_bytes_per_s = 124000000;
  d.cache = true;
  char *text = capture (help_toy, &d);
  /* widest left column: "overhead-us=<us>" / "rate-mb-s=<MB/s>" (16) */
  assert_string_equal (text,
                       "  spindles=<n>      number of spindles (default 1)\n"
                       "  size=<size>       capacity (default 16M)\n"
                       "  seek-ms=<ms>      average seek (default 3.8)\n"
                       "  overhead-us=<us>  per-command overhead (default 200)\n"
                       "  rate-mb-s=<MB/s>  media rate (default 124)\n"
                       "  cache=<on|off>    write cache (default on)\n");
  free (text);

  /* sizes: suffix only when exact and short */
  d.capacity_bytes = 300000000000ull;
  text = capture (help_toy, &d);
  assert_non_null (strstr (text, "capacity (default 300000000000)\n"));
  free (text);
  d.capacity_bytes = 1536;
  text = capture (help_toy, &d);
  assert_non_null (strstr (text, "capacity (default 1536)\n"));
  free (text);
  d.capacity_bytes = 3ull << 40;
  text = capture (help_toy, &d);
  assert_non_null (strstr (text, "capacity (default 3T)\n"));
  free (text);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_sizes),
    cmocka_unit_test (test_bad_sizes),
    cmocka_unit_test (test_decimals),
    cmocka_unit_test (test_find),
    cmocka_unit_test (test_set_each_type),
    cmocka_unit_test (test_set_errors),
    cmocka_unit_test (test_dump),
    cmocka_unit_test (test_help),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
