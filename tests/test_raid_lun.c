/* test_raid_lun.c — lun=NAME:SIZE parsing and the layout of LUNs in the
 * controller's capacity (plugins/raid/raid_lun.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "raid_lun.h"
#include "core/units.h"


static void
add_ok (struct raid_lun_table *t, const char *value)
{
  char err[256] = "";
  int rc = raid_lun_table_add (t, value, err, sizeof err);
  if (rc != 0)
    fail_msg ("lun=%s refused: %s", value, err);
}

/* value refused, and the message contains every needle */
static void
add_refused (const char *value, const char *needle1, const char *needle2)
{
  struct raid_lun_table t = { 0 };
  add_ok (&t, "first:1M");
  char err[256] = "";
  assert_int_equal (raid_lun_table_add (&t, value, err, sizeof err), -1);
  assert_non_null (strstr (err, needle1));
  if (needle2)
    assert_non_null (strstr (err, needle2));
  assert_int_equal (t.count, 1);
}

static void
test_parse_names_and_sizes (void **state)
{
  (void) state;
  struct raid_lun_table t = { 0 };
  add_ok (&t, "db:4G");
  add_ok (&t, "log_1-x:512");
  add_ok (&t, "abcdefghijklmnopqrstuvwxyz012345:64k");  /* 32 characters */
  assert_int_equal (t.count, 3);
  assert_string_equal (t.lun[0].name, "db");
  assert_int_equal (t.lun[0].size_bytes, 4ull << 30);
  assert_string_equal (t.lun[1].name, "log_1-x");
  assert_int_equal (t.lun[1].size_bytes, 512);
  assert_int_equal (t.lun[2].size_bytes, 65536);
  assert_ptr_equal (raid_lun_find (&t, "log_1-x"), &t.lun[1]);
  assert_null (raid_lun_find (&t, "log"));
  char names[128];
  raid_lun_names (&t, names, sizeof names);
  assert_string_equal (names, "db, log_1-x, abcdefghijklmnopqrstuvwxyz012345");
}

static void
test_bad_values (void **state)
{
  (void) state;
  add_refused ("nocolon", "lun=nocolon", "NAME:SIZE");
  add_refused (":1M", "name ''", NULL);
  add_refused ("Upper:1M", "name 'Upper'", "a-z");
  add_refused ("a/b:1M", "name 'a/b'", NULL);
  add_refused ("a b:1M", "name 'a b'", NULL);
  add_refused ("abcdefghijklmnopqrstuvwxyz0123456:1M", "1 to 32", NULL);   /* 33 */
  add_refused ("x:", "not a size", NULL);
  add_refused ("x:12q", "'12q' is not a size", NULL);
  add_refused ("x:0", "0 bytes", "multiple of 512");
  add_refused ("x:1000", "1000 bytes", "multiple of 512");
  add_refused ("first:2M", "duplicate", "'first'");
}

static void
test_too_many (void **state)
{
  (void) state;
  struct raid_lun_table t = { 0 };
  char value[32], err[256];
  for (unsigned i = 0; i < RAID_LUN_MAX; i++) {
    snprintf (value, sizeof value, "l%u:1M", i);
    add_ok (&t, value);
  }
  assert_int_equal (raid_lun_table_add (&t, "one-more:1M", err, sizeof err), -1);
  assert_non_null (strstr (err, "too many"));
}

static void
test_carve_aligns_to_the_stripe (void **state)
{
  (void) state;
  struct raid_lun_table t = { 0 };
  add_ok (&t, "a:24001k");             /* 24577024 bytes: not a whole strip */
  add_ok (&t, "b:64M");
  add_ok (&t, "c:512");
  char err[256] = "";
  assert_int_equal (raid_lun_table_carve (&t, 192 * MIB, 65536, err, sizeof err), 0);
  assert_int_equal (t.lun[0].offset_bytes, 0);
  /* 24577024 / 65536 = 375.0156: b starts at strip 376 */
  assert_int_equal (t.lun[1].offset_bytes, 376ull * 65536);
  assert_int_equal (t.lun[2].offset_bytes, 376ull * 65536 + 64 * MIB);
  for (unsigned i = 0; i + 1 < t.count; i++)         /* never overlapping */
    assert_true (t.lun[i].offset_bytes + t.lun[i].size_bytes <= t.lun[i + 1].offset_bytes);
}

static void
test_carve_exact_fit_and_overflow (void **state)
{
  (void) state;
  struct raid_lun_table t = { 0 };
  add_ok (&t, "a:96M");
  add_ok (&t, "b:96M");
  char err[256] = "";
  assert_int_equal (raid_lun_table_carve (&t, 192 * MIB, 65536, err, sizeof err), 0);
  assert_int_equal (t.lun[1].offset_bytes, 96 * MIB);

  struct raid_lun_table over = { 0 };
  add_ok (&over, "a:100M");
  add_ok (&over, "b:100M");
  assert_int_equal (raid_lun_table_carve (&over, 192 * MIB, 65536, err, sizeof err), -1);
  assert_non_null (strstr (err, "lun=b:104857600"));
  assert_non_null (strstr (err, "holds 201326592 bytes"));
  assert_non_null (strstr (err, "use 104857600"));
  assert_non_null (strstr (err, "96468992 bytes left"));

  /* alignment alone can push the next LUN out */
  struct raid_lun_table pad = { 0 };
  add_ok (&pad, "a:512");
  add_ok (&pad, "b:1M");
  assert_int_equal (raid_lun_table_carve (&pad, 1 * MIB, 65536, err, sizeof err), -1);
  assert_non_null (strstr (err, "lun=b:1048576"));
  assert_non_null (strstr (err, "use 65536"));

  struct raid_lun_table huge = { 0 };
  add_ok (&huge, "big:1T");
  assert_int_equal (raid_lun_table_carve (&huge, 192 * MIB, 65536, err, sizeof err), -1);
  assert_non_null (strstr (err, "lun=big:1099511627776: does not fit"));
  assert_non_null (strstr (err, "201326592 bytes left"));
}

static void
test_names_when_empty_or_cut (void **state)
{
  (void) state;
  struct raid_lun_table t = { 0 };
  char names[8];
  raid_lun_names (&t, names, sizeof names);
  assert_string_equal (names, "none");
  add_ok (&t, "alpha:1M");
  add_ok (&t, "beta:1M");
  raid_lun_names (&t, names, sizeof names);
  assert_string_equal (names, "alpha, ");   /* cut, still terminated */
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_parse_names_and_sizes),
    cmocka_unit_test (test_bad_values),
    cmocka_unit_test (test_too_many),
    cmocka_unit_test (test_carve_aligns_to_the_stripe),
    cmocka_unit_test (test_carve_exact_fit_and_overflow),
    cmocka_unit_test (test_names_when_empty_or_cut),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
