/* test_device.c — device kinds, the preset catalog and the KEY=VALUE
 * builder (defaults, then preset, then pairs in order; errors). */
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

#include "catalog/kinds.h"
#include "device/device.h"
#include "device/params.h"
#include "device/presets.h"
#include "hdd/hdd.h"
#include "core/units.h"


static const struct sl_device_kind *
hdd (void)
{
  const struct sl_device_kind *k = sl_device_kind_find ("hdd");
  assert_non_null (k);
  return k;
}

static void
add_ok (struct sl_device_builder *b, const char *key, const char *value)
{
  char err[512] = "";
  if (sl_device_builder_add (b, key, value, err, sizeof err) != 0)
    fail_msg ("%s=%s refused: %s", key, value, err);
}

static void
build_ok (const struct sl_device_builder *b, struct sl_hdd_config *c)
{
  char err[512] = "";
  if (sl_device_builder_build (b, c, err, sizeof err) != 0)
    fail_msg ("build failed: %s", err);
}

static struct sl_hdd_config
build_preset (const char *name)
{
  struct sl_device_builder b;
  sl_device_builder_init (&b, hdd ());
  add_ok (&b, "preset", name);
  struct sl_hdd_config c;
  build_ok (&b, &c);
  sl_device_builder_free (&b);
  return c;
}

/* Field by field through the parameter table: padding bytes may differ. */
static void
assert_config_equal (const struct sl_hdd_config *a, const struct sl_hdd_config *b)
{
  for (size_t i = 0; i < sl_hdd_param_count; i++) {
    const struct sl_param *p = &sl_hdd_params[i];
    size_t width = p->type == SL_PARAM_COUNT ? sizeof (uint32_t)
      : p->type == SL_PARAM_ON_OFF ? sizeof (bool) : sizeof (uint64_t);
    if (memcmp ((const char *) a + p->offset, (const char *) b + p->offset, width) != 0)
      fail_msg ("configs differ in %s", p->key);
  }
}

/* ---- kinds ------------------------------------------------------------- */

static void
test_kinds (void **state)
{
  (void) state;
  assert_ptr_equal (sl_device_kind_find ("hdd"), &sl_hdd_kind);
  assert_null (sl_device_kind_find ("floppy"));
  assert_null (sl_device_kind_find (""));
  assert_string_equal (sl_device_kind_names (), "hdd, ssd, raid");
  assert_string_equal (sl_hdd_kind.kind, "hdd");
  assert_int_equal (sl_hdd_kind.config_bytes, sizeof (struct sl_hdd_config));
}

/* ---- catalog ----------------------------------------------------------- */

static void
test_preset_names (void **state)
{
  (void) state;
  char names[256];
  sl_preset_names ("hdd", names, sizeof names);
  assert_string_equal (names, "sas10k-300g, wd-xe-900g, hgst-7k1000-1t, sata7200-2t");
  /* too small: whole names only */
  sl_preset_names ("hdd", names, 30);
  assert_string_equal (names, "sas10k-300g, wd-xe-900g");
  sl_preset_names ("tape", names, sizeof names);
  assert_string_equal (names, "");

  assert_non_null (sl_preset_find ("hdd", "wd-xe-900g"));
  assert_null (sl_preset_find ("ssd", "wd-xe-900g"));
  assert_null (sl_preset_find ("hdd", "wd-xe"));
  assert_null (sl_preset_at (sl_preset_count ()));
}

/* Every catalog entry builds and validates, names every key of its kind
 * exactly once, says where its figures come from, and has an average seek
 * the seek curve can reach. */
static void
test_every_preset_builds (void **state)
{
  (void) state;
  size_t hdd_presets = 0;
  for (size_t i = 0; i < sl_preset_count (); i++) {
    const struct sl_preset *p = sl_preset_at (i);
    assert_non_null (p);
    const struct sl_device_kind *kind = sl_device_kind_find (p->kind);
    if (kind == NULL)
      fail_msg ("preset %s: unknown kind %s", p->name, p->kind);
    assert_true (strlen (p->summary) > 10);
    assert_true (strlen (p->source) > 10);
    assert_true (strlen (p->fitted) > 10);
    if (kind != &sl_hdd_kind)
      continue;
    hdd_presets++;

    for (size_t k = 0; k < kind->param_count; k++) {
      char needle[64];
      snprintf (needle, sizeof needle, "%s=", kind->params[k].key);
      int hits = 0;
      for (const char *s = p->params; (s = strstr (s, needle)) != NULL; s++)
        if (s == p->params || s[-1] == ' ')
          hits++;
      if (hits != 1)
        fail_msg ("preset %s: key %s appears %d times", p->name, kind->params[k].key, hits);
    }

    struct sl_hdd_config c = build_preset (p->name);
    double t2t = c.track_to_track_seek_ns, avg = c.average_seek_ns;
    double full = c.full_stroke_seek_ns;
    /* linear curve: mean distance 1/3 stroke; sqrt curve: mean 8/15 */
    if (!(avg >= t2t + (full - t2t) / 3 && avg <= t2t + 8.0 / 15.0 * (full - t2t)))
      fail_msg ("preset %s: average seek %.3f ms outside the reachable range", p->name,
                avg / 1e6);

    char err[256];
    struct sl_hdd_geometry g;
    if (sl_hdd_geometry_build (&c, &g, err, sizeof err) != 0)
      fail_msg ("preset %s: geometry: %s", p->name, err);
    double off = g.fitted_average_seek_ns / avg - 1;
    if (off > 0.01 || off < -0.01)
      fail_msg ("preset %s: fitted average %.3f ms vs %.3f ms", p->name,
                g.fitted_average_seek_ns / 1e6, avg / 1e6);
    sl_hdd_geometry_free (&g);
  }
  assert_int_equal (hdd_presets, 4);
}

/* Spot checks against the datasheet figures, written out independently. */
static void
test_preset_values (void **state)
{
  (void) state;
  struct sl_hdd_config c = build_preset ("sas10k-300g");
  assert_int_equal (c.capacity_bytes, 300000000000ull);
  assert_int_equal (c.rpm, 10000);
  assert_int_equal (c.track_to_track_seek_ns, 300000);
  assert_int_equal (c.average_seek_ns, 3800000);
  assert_int_equal (c.average_write_seek_ns, 4400000);
  assert_int_equal (c.full_stroke_seek_ns, 7800000);
  assert_int_equal (c.outer_rate_bytes_per_s, 124000000);
  assert_int_equal (c.inner_rate_bytes_per_s, 67000000);
  assert_int_equal (c.interface_rate_bytes_per_s, 600000000);
  assert_int_equal (c.command_overhead_ns, 200000);
  assert_int_equal (c.cache_bytes, 16 * MIB);
  assert_false (c.write_cache);

  c = build_preset ("wd-xe-900g");
  assert_int_equal (c.capacity_bytes, 1758174768ull * 512);
  assert_int_equal (c.rpm, 10000);
  assert_int_equal (c.outer_rate_bytes_per_s, 204000000);
  assert_int_equal (c.cache_bytes, 32 * MIB);

  c = build_preset ("hgst-7k1000-1t");
  assert_int_equal (c.capacity_bytes, 1953525168ull * 512);
  assert_int_equal (c.rpm, 7200);
  assert_int_equal (c.cache_bytes, 32 * MIB);
  assert_true (c.write_cache);

  c = build_preset ("sata7200-2t");
  assert_int_equal (c.capacity_bytes, 3907029168ull * 512);
  assert_int_equal (c.rpm, 7200);
  assert_int_equal (c.average_seek_ns, 8500000);
  assert_int_equal (c.average_write_seek_ns, 9500000);
  assert_int_equal (c.outer_rate_bytes_per_s, 140000000);
  assert_int_equal (c.interface_rate_bytes_per_s, 300000000);
  assert_int_equal (c.cache_bytes, 64 * MIB);
  assert_true (c.write_cache);
}

/* ---- builder ----------------------------------------------------------- */

static void
test_defaults_only (void **state)
{
  (void) state;
  struct sl_device_builder b;
  sl_device_builder_init (&b, hdd ());
  struct sl_hdd_config built, expected;
  build_ok (&b, &built);
  sl_hdd_config_defaults (&expected);
  assert_config_equal (&built, &expected);
  sl_device_builder_free (&b);
}

static void
test_preset_order_independent (void **state)
{
  (void) state;
  struct sl_device_builder before, after;
  sl_device_builder_init (&before, hdd ());
  add_ok (&before, "size", "1G");
  add_ok (&before, "preset", "sata7200-2t");
  sl_device_builder_init (&after, hdd ());
  add_ok (&after, "preset", "sata7200-2t");
  add_ok (&after, "size", "1G");

  struct sl_hdd_config a, c;
  build_ok (&before, &a);
  build_ok (&after, &c);
  assert_int_equal (a.capacity_bytes, 1 * GIB);
  assert_int_equal (c.capacity_bytes, 1 * GIB);
  assert_int_equal (a.rpm, 7200);               /* the rest is the preset's */
  assert_int_equal (a.cache_bytes, 64 * MIB);
  assert_config_equal (&a, &c);
  sl_device_builder_free (&before);
  sl_device_builder_free (&after);
}

static void
test_later_pair_wins (void **state)
{
  (void) state;
  struct sl_device_builder b;
  sl_device_builder_init (&b, hdd ());
  add_ok (&b, "rpm", "7200");
  add_ok (&b, "write-cache", "on");
  add_ok (&b, "rpm", "5400");
  struct sl_hdd_config c;
  build_ok (&b, &c);
  assert_int_equal (c.rpm, 5400);
  assert_true (c.write_cache);
  sl_device_builder_free (&b);
}

static void
add_fails (const char *key, const char *value, const char *expected)
{
  struct sl_device_builder b;
  sl_device_builder_init (&b, hdd ());
  char err[1024] = "";
  assert_int_equal (sl_device_builder_add (&b, key, value, err, sizeof err), -1);
  if (strstr (err, expected) == NULL)
    fail_msg ("%s=%s: error '%s' lacks '%s'", key, value, err, expected);
  assert_int_equal (b.pair_count, 0);
  assert_string_equal (b.preset, "");
  sl_device_builder_free (&b);
}

static void
test_add_errors (void **state)
{
  (void) state;
  add_fails ("preset", "nope",
             "preset=nope: unknown hdd preset; known: sas10k-300g, wd-xe-900g, "
             "hgst-7k1000-1t, sata7200-2t");
  add_fails ("bogus", "1", "unknown key 'bogus' for hdd");
  add_fails ("bogus", "1", "average-seek-ms");  /* lists the known keys */
  add_fails ("rpm", "fast", "rpm=fast: not a number");
  add_fails ("rpm", "90000", "rpm=90000: out of range 3600..20000");
  add_fails ("average-seek-ms", "abc", "average-seek-ms=abc: not a number");
  add_fails ("write-cache", "maybe", "write-cache=maybe: expected on or off");
  add_fails ("size", "-5", "size=-5: not a size (examples: 512, 4k, 300G)");
  /* a name longer than the preset buffer is just unknown */
  char longname[200];
  memset (longname, 'x', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  add_fails ("preset", longname, "unknown hdd preset");
}

static void
test_duplicate_preset (void **state)
{
  (void) state;
  struct sl_device_builder b;
  sl_device_builder_init (&b, hdd ());
  add_ok (&b, "preset", "wd-xe-900g");
  char err[512] = "";
  assert_int_equal (sl_device_builder_add (&b, "preset", "sata7200-2t", err, sizeof err), -1);
  assert_non_null (strstr (err, "preset=sata7200-2t"));
  assert_non_null (strstr (err, "wd-xe-900g"));
  assert_string_equal (b.preset, "wd-xe-900g");
  struct sl_hdd_config c;
  build_ok (&b, &c);
  assert_int_equal (c.outer_rate_bytes_per_s, 204000000);
  sl_device_builder_free (&b);
}

static void
test_too_many_pairs (void **state)
{
  (void) state;
  struct sl_device_builder b;
  sl_device_builder_init (&b, hdd ());
  for (int i = 0; i < 64; i++)
    add_ok (&b, "heads", "2");
  add_ok (&b, "preset", "sas10k-300g");         /* preset is not a pair */
  char err[512] = "";
  assert_int_equal (sl_device_builder_add (&b, "heads", "3", err, sizeof err), -1);
  assert_non_null (strstr (err, "too many parameters"));
  assert_int_equal (b.pair_count, 64);
  struct sl_hdd_config c;
  build_ok (&b, &c);
  assert_int_equal (c.heads, 2);
  sl_device_builder_free (&b);
  assert_int_equal (b.pair_count, 0);
}

static void
test_build_validates (void **state)
{
  (void) state;
  struct sl_device_builder b;
  sl_device_builder_init (&b, hdd ());
  add_ok (&b, "preset", "sas10k-300g");
  add_ok (&b, "inner-mb-s", "300");             /* each value alone is fine */
  struct sl_hdd_config c;
  char err[512] = "";
  assert_int_equal (sl_device_builder_build (&b, &c, err, sizeof err), -1);
  assert_non_null (strstr (err, "inner-mb-s"));
  sl_device_builder_free (&b);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_kinds),
    cmocka_unit_test (test_preset_names),
    cmocka_unit_test (test_every_preset_builds),
    cmocka_unit_test (test_preset_values),
    cmocka_unit_test (test_defaults_only),
    cmocka_unit_test (test_preset_order_independent),
    cmocka_unit_test (test_later_pair_wins),
    cmocka_unit_test (test_add_errors),
    cmocka_unit_test (test_duplicate_preset),
    cmocka_unit_test (test_too_many_pairs),
    cmocka_unit_test (test_build_validates),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
