/* test_store.c — store contents, sparseness, volatility and threading,
 * for both memory and file backing, checked against reference buffers. */
#define _GNU_SOURCE

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/store.h"
#include "core/units.h"

#define PAGE SL_STORE_PAGE_BYTES

enum backing { BACKING_MEMORY, BACKING_FILE, BACKING_COUNT };

struct dev {
  enum backing backing;
  struct sl_store *s;
  char path[64];
};

/* ---- helpers ------------------------------------------------------------ */

static uint64_t
rng_next (uint64_t *state)
{
  uint64_t x = *state;          /* xorshift64 */
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  *state = x;
  return x;
}

static uint64_t
rng_below (uint64_t *state, uint64_t bound)
{
  return bound ? rng_next (state) % bound : 0;
}

static void
fill_pattern (uint8_t *buf, size_t length_bytes, uint64_t seed)
{
  uint64_t st = seed * 2654435761u + 1;
  for (size_t i = 0; i < length_bytes; i++)
    buf[i] = (uint8_t) (rng_next (&st) | 1);     /* never zero */
}

static bool
all_zero (const uint8_t *buf, size_t length_bytes)
{
  for (size_t i = 0; i < length_bytes; i++)
    if (buf[i])
      return false;
  return true;
}

static void
temp_path (char *path, size_t path_bytes)
{
  snprintf (path, path_bytes, "/tmp/test_store_XXXXXX");
  int fd = mkstemp (path);
  assert_true (fd >= 0);
  close (fd);
}

static void
dev_open (struct dev *d, enum backing backing, uint64_t size_bytes)
{
  memset (d, 0, sizeof *d);
  d->backing = backing;
  if (backing == BACKING_MEMORY) {
    d->s = sl_store_new_memory (size_bytes);
  }
  else {
    char err[256] = "";
    temp_path (d->path, sizeof d->path);
    d->s = sl_store_open_file (d->path, size_bytes, err, sizeof err);
    if (d->s == NULL)
      fail_msg ("open_file: %s", err);
  }
  assert_non_null (d->s);
  assert_int_equal (sl_store_size_bytes (d->s), size_bytes);
}

static void
dev_close (struct dev *d)
{
  assert_int_equal (sl_store_close (d->s), 0);
  if (d->backing == BACKING_FILE)
    unlink (d->path);
}

/* Whole-device comparison against a reference. */
static void
assert_device_equals (struct sl_store *s, const uint8_t *ref, uint64_t size_bytes)
{
  uint8_t *buf = malloc (size_bytes);
  assert_non_null (buf);
  memset (buf, 0x5a, size_bytes);
  assert_int_equal (sl_store_read (s, buf, size_bytes, 0), 0);
  for (uint64_t i = 0; i < size_bytes; i++)
    if (buf[i] != ref[i])
      fail_msg ("byte %llu: got 0x%02x, expected 0x%02x",
                (unsigned long long) i, buf[i], ref[i]);
  free (buf);
}

static void
write_ok (struct sl_store *s, const void *buf, uint64_t length_bytes,
          uint64_t offset_bytes, bool volatile_write)
{
  assert_int_equal (sl_store_write (s, buf, length_bytes, offset_bytes, volatile_write), 0);
}

/* ---- unwritten ranges --------------------------------------------------- */

static void
test_unwritten_reads_zero (void **state)
{
  (void) state;
  const uint64_t size = MIB + 123;
  for (int b = 0; b < BACKING_COUNT; b++) {
    struct dev d;
    dev_open (&d, b, size);
    uint64_t rng = 42;
    uint8_t buf[3 * PAGE];
    for (int i = 0; i < 200; i++) {
      uint64_t len = 1 + rng_below (&rng, sizeof buf);
      uint64_t off = rng_below (&rng, size - len + 1);
      memset (buf, 0xaa, sizeof buf);
      assert_int_equal (sl_store_read (d.s, buf, len, off), 0);
      assert_true (all_zero (buf, len));
      if (len < sizeof buf)     /* no write past the requested length */
        assert_int_equal (buf[len], 0xaa);
    }
    assert_int_equal (sl_store_volatile_bytes (d.s), 0);
    if (b == BACKING_MEMORY) {
      assert_int_equal (sl_store_resident_bytes (d.s), 0);
    }
    else {
      struct stat st;
      assert_int_equal (stat (d.path, &st), 0);
      assert_int_equal ((uint64_t) st.st_size, size);
    }
    dev_close (&d);
  }
}

static void
test_memory_limit (void **state)
{
  (void) state;
  errno = 0;
  assert_null (sl_store_new_memory (UINT64_MAX));
  assert_int_not_equal (errno, 0);
}

/* 4 TiB device: a few written pages cost a few pages; whole-device trims
 * (volatile and not) only touch what is allocated. */
static void
test_huge_sparse (void **state)
{
  (void) state;
  const uint64_t size = 4 * TIB;
  const uint64_t mid_offset = 2 * TIB - 4089;   /* 8192 bytes span 3 pages */
  for (int b = 0; b < BACKING_COUNT; b++) {
    struct dev d;
    dev_open (&d, b, size);
    uint8_t tail[100], mid[8192], got[8192];
    fill_pattern (tail, sizeof tail, 1);
    fill_pattern (mid, sizeof mid, 2);
    write_ok (d.s, tail, sizeof tail, size - sizeof tail, false);
    write_ok (d.s, mid, sizeof mid, mid_offset, false);

    assert_int_equal (sl_store_read (d.s, got, sizeof tail, size - sizeof tail), 0);
    assert_memory_equal (got, tail, sizeof tail);
    assert_int_equal (sl_store_read (d.s, got, sizeof mid, mid_offset), 0);
    assert_memory_equal (got, mid, sizeof mid);
    assert_int_equal (sl_store_read (d.s, got, sizeof got, TIB + 12345), 0);
    assert_true (all_zero (got, sizeof got));

    if (b == BACKING_MEMORY) {
      assert_int_equal (sl_store_resident_bytes (d.s), 4 * PAGE);
    }
    else {
      struct stat st;
      assert_int_equal (stat (d.path, &st), 0);
      assert_int_equal ((uint64_t) st.st_size, size);
      assert_true ((uint64_t) st.st_blocks * 512 <= MIB);
    }

    /* Volatile trim of the whole device, then power loss: all comes back. */
    assert_int_equal (sl_store_zero (d.s, size, 0, true), 0);
    assert_true (sl_store_volatile_bytes (d.s) >= 4 * PAGE);
    assert_true (sl_store_volatile_bytes (d.s) <= 64 * PAGE);
    assert_int_equal (sl_store_read (d.s, got, sizeof mid, mid_offset), 0);
    assert_true (all_zero (got, sizeof mid));
    assert_int_equal (sl_store_power_loss (d.s), 0);
    assert_int_equal (sl_store_volatile_bytes (d.s), 0);
    assert_int_equal (sl_store_read (d.s, got, sizeof mid, mid_offset), 0);
    assert_memory_equal (got, mid, sizeof mid);
    assert_int_equal (sl_store_read (d.s, got, sizeof tail, size - sizeof tail), 0);
    assert_memory_equal (got, tail, sizeof tail);

    /* Durable trim of the whole device. */
    assert_int_equal (sl_store_zero (d.s, size, 0, false), 0);
    assert_int_equal (sl_store_read (d.s, got, sizeof mid, mid_offset), 0);
    assert_true (all_zero (got, sizeof mid));
    assert_int_equal (sl_store_read (d.s, got, sizeof tail, size - sizeof tail), 0);
    assert_true (all_zero (got, sizeof tail));
    if (b == BACKING_MEMORY)
      assert_int_equal (sl_store_resident_bytes (d.s), 0);
    dev_close (&d);
  }
}

/* ---- random operations against a byte-level reference model ----------
 * current[] = what reads return; durable[] = what survives power loss.
 * Volatile writes change current only, non-volatile both; persist copies
 * current to durable, power loss durable to current.  Per-page shadows
 * must be indistinguishable from this model. */

struct model {
  uint8_t *current;
  uint8_t *durable;
  uint64_t size_bytes;
};

static void
random_ops (struct sl_store *s, struct model *m, uint64_t seed, int op_count,
            bool with_volatility)
{
  uint64_t rng = seed;
  uint64_t max_len = 3 * PAGE + 17;
  uint8_t *buf = malloc (256 * KIB);
  uint8_t *got = malloc (256 * KIB);
  assert_non_null (buf);
  assert_non_null (got);
  for (int op = 0; op < op_count; op++) {
    uint64_t kind = rng_below (&rng, 100);
    uint64_t len = rng_below (&rng, 10) == 0 ? 1 + rng_below (&rng, 256 * KIB)
      : 1 + rng_below (&rng, max_len);
    if (len > m->size_bytes)
      len = m->size_bytes;
    uint64_t off = rng_below (&rng, m->size_bytes - len + 1);
    bool vol = with_volatility && rng_below (&rng, 2);
    if (kind < 45) {
      fill_pattern (buf, len, rng_next (&rng));
      if (rng_below (&rng, 8) == 0)
        memset (buf + len / 3, 0, len / 3);      /* some zero runs */
      write_ok (s, buf, len, off, vol);
      memcpy (m->current + off, buf, len);
      if (!vol)
        memcpy (m->durable + off, buf, len);
    }
    else if (kind < 60) {
      assert_int_equal (sl_store_zero (s, len, off, vol), 0);
      memset (m->current + off, 0, len);
      if (!vol)
        memset (m->durable + off, 0, len);
    }
    else if (kind < 96) {
      memset (got, 0x5a, len);
      assert_int_equal (sl_store_read (s, got, len, off), 0);
      if (memcmp (got, m->current + off, len) != 0)
        fail_msg ("op %d: read of %llu bytes at %llu differs", op,
                  (unsigned long long) len, (unsigned long long) off);
    }
    else if (kind < 98) {
      assert_int_equal (sl_store_persist_all (s), 0);
      assert_int_equal (sl_store_volatile_bytes (s), 0);
      memcpy (m->durable, m->current, m->size_bytes);
    }
    else {
      assert_int_equal (sl_store_power_loss (s), 0);
      assert_int_equal (sl_store_volatile_bytes (s), 0);
      memcpy (m->current, m->durable, m->size_bytes);
    }
  }
  free (buf);
  free (got);
}

static void
test_random_against_reference (void **state)
{
  (void) state;
  const uint64_t size = 3 * MIB + 777;       /* not a page multiple */
  for (int b = 0; b < BACKING_COUNT; b++) {
    for (int with_vol = 0; with_vol < 2; with_vol++) {
      struct dev d;
      dev_open (&d, b, size);
      struct model m = { calloc (1, size), calloc (1, size), size };
      assert_non_null (m.current);
      assert_non_null (m.durable);
      random_ops (d.s, &m, 1000 + b * 10 + with_vol, 6000, with_vol);
      assert_device_equals (d.s, m.current, size);
      if (with_vol) {
        assert_int_equal (sl_store_power_loss (d.s), 0);
        assert_device_equals (d.s, m.durable, size);
      }
      if (b == BACKING_FILE) {
        /* Data survives close and reopen. */
        assert_int_equal (sl_store_close (d.s), 0);
        char err[256] = "";
        d.s = sl_store_open_file (d.path, size, err, sizeof err);
        assert_non_null (d.s);
        assert_device_equals (d.s, with_vol ? m.durable : m.current, size);
      }
      else {
        /* Without shadows, every page holding data is resident, and
         * nothing beyond the device's pages. */
        assert_int_equal (sl_store_persist_all (d.s), 0);
        const uint8_t *final = with_vol ? m.durable : m.current;
        uint64_t data_pages = 0;
        for (uint64_t off = 0; off < size; off += PAGE)
          data_pages += !all_zero (final + off, size - off < PAGE ? size - off : PAGE);
        assert_true (data_pages > 0);
        assert_true (sl_store_resident_bytes (d.s) >= data_pages * PAGE);
        assert_true (sl_store_resident_bytes (d.s) <= (size / PAGE + 1) * PAGE);
      }
      dev_close (&d);
      free (m.current);
      free (m.durable);
    }
  }
}

/* ---- zero / trim --------------------------------------------------------- */

static void
test_zero_partial_and_whole (void **state)
{
  (void) state;
  const uint64_t size = 8 * PAGE;
  for (int b = 0; b < BACKING_COUNT; b++) {
    struct dev d;
    dev_open (&d, b, size);
    uint8_t ref[8 * PAGE] = { 0 };
    fill_pattern (ref, 4 * PAGE, 7);
    write_ok (d.s, ref, 4 * PAGE, 0, false);
    if (b == BACKING_MEMORY)
      assert_int_equal (sl_store_resident_bytes (d.s), 4 * PAGE);

    assert_int_equal (sl_store_zero (d.s, 100, 100, false), 0);
    memset (ref + 100, 0, 100);
    assert_device_equals (d.s, ref, size);

    assert_int_equal (sl_store_zero (d.s, PAGE, PAGE, false), 0);
    memset (ref + PAGE, 0, PAGE);
    assert_device_equals (d.s, ref, size);
    if (b == BACKING_MEMORY)
      assert_int_equal (sl_store_resident_bytes (d.s), 3 * PAGE);

    assert_int_equal (sl_store_zero (d.s, 4500, 8000, false), 0);
    memset (ref + 8000, 0, 4500);
    assert_device_equals (d.s, ref, size);

    /* Zero the rest, including never-written pages. */
    assert_int_equal (sl_store_zero (d.s, size - 3, 3, false), 0);
    memset (ref + 3, 0, size - 3);
    assert_device_equals (d.s, ref, size);
    assert_int_not_equal (ref[0], 0);
    if (b == BACKING_MEMORY)
      assert_int_equal (sl_store_resident_bytes (d.s), PAGE);
    dev_close (&d);
  }
}

/* ---- volatility --------------------------------------------------------- */

static void
test_volatile_then_persist (void **state)
{
  (void) state;
  const uint64_t size = 16 * PAGE;
  for (int b = 0; b < BACKING_COUNT; b++) {
    struct dev d;
    dev_open (&d, b, size);
    uint8_t data[5000], got[5000];
    fill_pattern (data, sizeof data, 3);
    write_ok (d.s, data, sizeof data, 1000, true);   /* pages 0 and 1 */
    assert_int_equal (sl_store_volatile_bytes (d.s), 2 * PAGE);
    write_ok (d.s, data, 10, 3 * PAGE, true);        /* page 3 */
    assert_int_equal (sl_store_volatile_bytes (d.s), 3 * PAGE);
    write_ok (d.s, data, 10, 5 * PAGE, false);       /* non-volatile: no shadow */
    assert_int_equal (sl_store_volatile_bytes (d.s), 3 * PAGE);

    assert_int_equal (sl_store_persist_all (d.s), 0);
    assert_int_equal (sl_store_volatile_bytes (d.s), 0);
    assert_int_equal (sl_store_read (d.s, got, sizeof got, 1000), 0);
    assert_memory_equal (got, data, sizeof data);

    /* Persisted data survives a power loss. */
    assert_int_equal (sl_store_power_loss (d.s), 0);
    assert_int_equal (sl_store_read (d.s, got, sizeof got, 1000), 0);
    assert_memory_equal (got, data, sizeof data);
    assert_int_equal (sl_store_read (d.s, got, 10, 3 * PAGE), 0);
    assert_memory_equal (got, data, 10);
    dev_close (&d);
  }
}

static void
test_power_loss_reverts (void **state)
{
  (void) state;
  const uint64_t size = 16 * PAGE;
  for (int b = 0; b < BACKING_COUNT; b++) {
    struct dev d;
    dev_open (&d, b, size);
    uint8_t ref[16 * PAGE] = { 0 };
    uint8_t durable_a[4 * PAGE], volatile_b[4 * PAGE], fua_c[600];
    fill_pattern (durable_a, sizeof durable_a, 11);
    fill_pattern (volatile_b, sizeof volatile_b, 12);
    fill_pattern (fua_c, sizeof fua_c, 13);

    /* (a) never-written page: volatile data vanishes. */
    write_ok (d.s, volatile_b, PAGE, 2 * PAGE, true);
    /* (b) page with durable data: volatile overwrite reverts. */
    write_ok (d.s, durable_a, 2 * PAGE, 4 * PAGE, false);
    memcpy (ref + 4 * PAGE, durable_a, 2 * PAGE);
    write_ok (d.s, volatile_b, 5500, 4 * PAGE + 500, true);
    /* (c) FUA over a shadowed page with durable data: only its bytes stay. */
    write_ok (d.s, durable_a, PAGE, 7 * PAGE, false);
    memcpy (ref + 7 * PAGE, durable_a, PAGE);
    write_ok (d.s, volatile_b, 2048, 7 * PAGE, true);
    write_ok (d.s, fua_c, 500, 7 * PAGE + 1000, false);
    memcpy (ref + 7 * PAGE + 1000, fua_c, 500);
    /* (d) FUA over a shadowed never-written page. */
    write_ok (d.s, volatile_b, PAGE, 9 * PAGE, true);
    write_ok (d.s, fua_c, 100, 9 * PAGE + 3000, false);
    memcpy (ref + 9 * PAGE + 3000, fua_c, 100);
    /* (e) durable zeroing over a shadowed page with durable data. */
    write_ok (d.s, durable_a, PAGE, 11 * PAGE, false);
    memcpy (ref + 11 * PAGE, durable_a, PAGE);
    write_ok (d.s, volatile_b, PAGE, 11 * PAGE, true);
    assert_int_equal (sl_store_zero (d.s, 20, 11 * PAGE + 10, false), 0);
    memset (ref + 11 * PAGE + 10, 0, 20);
    /* (f) volatile trim of durable data. */
    write_ok (d.s, durable_a + PAGE, PAGE, 13 * PAGE, false);
    memcpy (ref + 13 * PAGE, durable_a + PAGE, PAGE);
    assert_int_equal (sl_store_zero (d.s, PAGE, 13 * PAGE, true), 0);

    /* Before the power loss reads see the volatile data. */
    uint8_t got[PAGE];
    assert_int_equal (sl_store_read (d.s, got, PAGE, 2 * PAGE), 0);
    assert_memory_equal (got, volatile_b, PAGE);
    assert_int_equal (sl_store_read (d.s, got, 1000, 7 * PAGE), 0);
    assert_memory_equal (got, volatile_b, 1000);
    assert_int_equal (sl_store_read (d.s, got, PAGE, 13 * PAGE), 0);
    assert_true (all_zero (got, PAGE));
    /* Shadowed pages: 2, 4, 5, 7, 9, 11, 13. */
    assert_int_equal (sl_store_volatile_bytes (d.s), 7 * PAGE);

    assert_int_equal (sl_store_power_loss (d.s), 0);
    assert_int_equal (sl_store_volatile_bytes (d.s), 0);
    assert_device_equals (d.s, ref, size);
    if (b == BACKING_MEMORY)    /* pages 4, 5, 7, 9, 11, 13 hold data */
      assert_int_equal (sl_store_resident_bytes (d.s), 6 * PAGE);

    /* A second power loss changes nothing. */
    assert_int_equal (sl_store_power_loss (d.s), 0);
    assert_device_equals (d.s, ref, size);
    dev_close (&d);
  }
}

/* A range power loss (what a RAID controller reports lost): volatile
 * bytes inside the range read their durable contents again, volatile bytes
 * outside it stay (and stay volatile: a later full power loss reverts them). */
static void
test_power_loss_range (void **state)
{
  (void) state;
  const uint64_t size = 8 * PAGE;
  for (int b = 0; b < BACKING_COUNT; b++) {
    struct dev d;
    dev_open (&d, b, size);
    uint8_t durable[8 * PAGE], newer[8 * PAGE], ref[8 * PAGE];
    fill_pattern (durable, sizeof durable, 21);
    fill_pattern (newer, sizeof newer, 22);
    write_ok (d.s, durable, size, 0, false);
    write_ok (d.s, newer + 1000, 4 * PAGE, 1000, true);     /* pages 0..4, volatile */
    memcpy (ref, newer, size);
    memcpy (ref, durable, 1000);
    memcpy (ref + 1000 + 4 * PAGE, durable + 1000 + 4 * PAGE, size - 1000 - 4 * PAGE);
    /* lose page 1 whole and part of page 2 */
    assert_int_equal (sl_store_power_loss_range (d.s, PAGE + 100, PAGE), 0);
    memcpy (ref + PAGE, durable + PAGE, PAGE + 100);
    assert_device_equals (d.s, ref, size);
    assert_int_equal (sl_store_volatile_bytes (d.s), 4 * PAGE);     /* 0, 2, 3, 4 */
    /* a range with no volatile data changes nothing */
    assert_int_equal (sl_store_power_loss_range (d.s, PAGE, 6 * PAGE), 0);
    assert_device_equals (d.s, ref, size);
    /* the rest is still revocable */
    assert_int_equal (sl_store_power_loss (d.s), 0);
    assert_device_equals (d.s, durable, size);
    dev_close (&d);
  }
}

static void
test_memory_resident_counts_shadows (void **state)
{
  (void) state;
  struct dev d;
  dev_open (&d, BACKING_MEMORY, 4 * PAGE);
  uint8_t data[PAGE];
  fill_pattern (data, sizeof data, 5);
  write_ok (d.s, data, PAGE, 0, false);
  assert_int_equal (sl_store_resident_bytes (d.s), PAGE);
  write_ok (d.s, data + 1, 100, 0, true);          /* shadow copy */
  assert_int_equal (sl_store_resident_bytes (d.s), 2 * PAGE);
  write_ok (d.s, data, 100, PAGE, true);           /* zero shadow: no copy */
  assert_int_equal (sl_store_resident_bytes (d.s), 3 * PAGE);
  assert_int_equal (sl_store_volatile_bytes (d.s), 2 * PAGE);
  assert_int_equal (sl_store_persist_all (d.s), 0);
  assert_int_equal (sl_store_resident_bytes (d.s), 2 * PAGE);
  dev_close (&d);
}

/* ---- file backing ------------------------------------------------------- */

static void
test_file_reopen (void **state)
{
  (void) state;
  const uint64_t size = 64 * KIB;
  char path[64], err[512];
  temp_path (path, sizeof path);
  uint8_t data[10000], got[10000];
  fill_pattern (data, sizeof data, 21);

  struct sl_store *s = sl_store_open_file (path, size, err, sizeof err);
  assert_non_null (s);
  write_ok (s, data, sizeof data, 3333, false);
  assert_int_equal (sl_store_close (s), 0);

  s = sl_store_open_file (path, size, err, sizeof err);
  assert_non_null (s);
  assert_int_equal (sl_store_read (s, got, sizeof got, 3333), 0);
  assert_memory_equal (got, data, sizeof data);
  assert_int_equal (sl_store_close (s), 0);

  /* Smaller size: refused, naming the path; the file is untouched. */
  err[0] = 0;
  assert_null (sl_store_open_file (path, size - 1, err, sizeof err));
  assert_non_null (strstr (err, path));
  assert_non_null (strstr (err, "refusing to truncate"));
  struct stat st;
  assert_int_equal (stat (path, &st), 0);
  assert_int_equal ((uint64_t) st.st_size, size);

  /* Larger size: extended, old data kept, new space reads zero. */
  s = sl_store_open_file (path, 4 * size, err, sizeof err);
  assert_non_null (s);
  assert_int_equal (stat (path, &st), 0);
  assert_int_equal ((uint64_t) st.st_size, 4 * size);
  assert_int_equal (sl_store_read (s, got, sizeof got, 3333), 0);
  assert_memory_equal (got, data, sizeof data);
  assert_int_equal (sl_store_read (s, got, sizeof got, 3 * size), 0);
  assert_true (all_zero (got, sizeof got));
  assert_int_equal (sl_store_close (s), 0);
  unlink (path);

  /* Unopenable path: error names it. */
  const char *bad = "/nonexistent-dir-test-store/x.img";
  err[0] = 0;
  assert_null (sl_store_open_file (bad, size, err, sizeof err));
  assert_non_null (strstr (err, bad));
  /* NULL err buffer is allowed. */
  assert_null (sl_store_open_file (bad, size, NULL, 0));
}

/* A write of zero pages keeps a file sparse (as memory keeps no zero page),
 * and stays a write: a volatile one is reverted by a power loss. */
static void
test_file_zero_writes_stay_sparse (void **state)
{
  (void) state;
  const uint64_t size = 1024 * KIB;
  struct dev d;
  dev_open (&d, BACKING_FILE, size);
  static uint8_t data[256 * KIB], zeroes[256 * KIB], got[256 * KIB];
  fill_pattern (data, sizeof data, 31);
  struct stat st;

  /* zeroes over never-written space allocate nothing */
  write_ok (d.s, zeroes, sizeof zeroes, 0, false);
  assert_int_equal (stat (d.path, &st), 0);
  assert_int_equal (st.st_blocks, 0);

  /* zeroes over data free its blocks and read back as zeroes */
  write_ok (d.s, data, sizeof data, 256 * KIB, false);
  assert_int_equal (stat (d.path, &st), 0);
  assert_true ((uint64_t) st.st_blocks * 512 >= sizeof data);
  write_ok (d.s, zeroes, sizeof zeroes, 256 * KIB, false);
  assert_int_equal (sl_store_read (d.s, got, sizeof got, 256 * KIB), 0);
  assert_true (all_zero (got, sizeof got));
  assert_int_equal (stat (d.path, &st), 0);
  assert_int_equal (st.st_blocks, 0);

  /* a volatile zero write over durable data is lost in a power cut;
   * part of a page zeroed keeps the rest of the page */
  write_ok (d.s, data, sizeof data, 512 * KIB, false);
  write_ok (d.s, zeroes, sizeof zeroes, 512 * KIB, true);
  assert_int_equal (sl_store_volatile_bytes (d.s), sizeof zeroes);
  assert_int_equal (sl_store_read (d.s, got, sizeof got, 512 * KIB), 0);
  assert_true (all_zero (got, sizeof got));
  assert_int_equal (sl_store_power_loss (d.s), 0);
  assert_int_equal (sl_store_read (d.s, got, sizeof got, 512 * KIB), 0);
  assert_memory_equal (got, data, sizeof data);
  write_ok (d.s, zeroes, 100, 512 * KIB + 1000, false);
  assert_int_equal (sl_store_read (d.s, got, PAGE, 512 * KIB), 0);
  assert_memory_equal (got, data, 1000);
  assert_true (all_zero (got + 1000, 100));
  assert_memory_equal (got + 1100, data + 1100, PAGE - 1100);
  dev_close (&d);
}

/* ---- range checks ------------------------------------------------------- */

static void
test_out_of_range (void **state)
{
  (void) state;
  const uint64_t size = 10000;
  for (int b = 0; b < BACKING_COUNT; b++) {
    struct dev d;
    dev_open (&d, b, size);
    uint8_t buf[64];
    fill_pattern (buf, sizeof buf, 9);

    errno = 0;
    assert_int_equal (sl_store_read (d.s, buf, 20, size - 10), -1);
    assert_int_equal (errno, EINVAL);
    errno = 0;
    assert_int_equal (sl_store_write (d.s, buf, 20, size - 10, false), -1);
    assert_int_equal (errno, EINVAL);
    errno = 0;
    assert_int_equal (sl_store_zero (d.s, 20, size - 10, true), -1);
    assert_int_equal (errno, EINVAL);
    assert_int_equal (sl_store_write (d.s, buf, 2, UINT64_MAX, false), -1);
    assert_int_equal (sl_store_write (d.s, buf, UINT64_MAX, 2, false), -1);
    assert_int_equal (sl_store_read (d.s, buf, 1, size), -1);
    assert_int_equal (sl_store_zero (d.s, UINT64_MAX, 1, false), -1);

    /* Zero-length anywhere succeeds; exact fit at the end succeeds. */
    assert_int_equal (sl_store_read (d.s, buf, 0, UINT64_MAX), 0);
    assert_int_equal (sl_store_write (d.s, buf, 0, size + 5, true), 0);
    assert_int_equal (sl_store_zero (d.s, 0, size, false), 0);
    write_ok (d.s, buf, 10, size - 10, false);

    /* Failed writes left nothing behind. */
    uint8_t got[64];
    assert_int_equal (sl_store_read (d.s, got, 20, size - 20), 0);
    assert_true (all_zero (got, 10));
    assert_memory_equal (got + 10, buf, 10);
    assert_int_equal (sl_store_volatile_bytes (d.s), 0);
    if (b == BACKING_MEMORY)
      assert_int_equal (sl_store_resident_bytes (d.s), PAGE);
    dev_close (&d);
  }
}

/* ---- threads ------------------------------------------------------------ */

#define THREAD_COUNT 4
#define THREAD_REGION_BYTES (512 * KIB + 1234)   /* regions share pages */

struct worker {
  pthread_t thread;
  struct sl_store *s;
  uint64_t base_bytes;
  uint8_t *ref;
  uint64_t seed;
  int mismatches;
  int failures;
};

static void *
worker_main (void *arg)
{
  struct worker *w = arg;
  uint64_t rng = w->seed;
  uint8_t buf[3 * PAGE], got[3 * PAGE];
  for (int op = 0; op < 4000; op++) {
    uint64_t len = 1 + rng_below (&rng, sizeof buf);
    uint64_t off = rng_below (&rng, THREAD_REGION_BYTES - len + 1);
    uint64_t kind = rng_below (&rng, 10);
    bool vol = rng_below (&rng, 2);
    if (kind < 4) {
      fill_pattern (buf, len, rng_next (&rng));
      if (sl_store_write (w->s, buf, len, w->base_bytes + off, vol) < 0)
        w->failures++;
      memcpy (w->ref + off, buf, len);
    }
    else if (kind < 5) {
      if (sl_store_zero (w->s, len, w->base_bytes + off, vol) < 0)
        w->failures++;
      memset (w->ref + off, 0, len);
    }
    else {
      if (sl_store_read (w->s, got, len, w->base_bytes + off) < 0)
        w->failures++;
      if (memcmp (got, w->ref + off, len) != 0)
        w->mismatches++;
    }
  }
  return NULL;
}

struct persister {
  struct sl_store *s;
  const int *stop;              /* read under the test's mutex */
  pthread_mutex_t *mutex;
  int failures;
};

static void *
persister_main (void *arg)
{
  struct persister *p = arg;
  for (;;) {
    pthread_mutex_lock (p->mutex);
    int stop = *p->stop;
    pthread_mutex_unlock (p->mutex);
    if (stop)
      return NULL;
    if (sl_store_persist_all (p->s) < 0)
      p->failures++;
    (void) sl_store_volatile_bytes (p->s);
    (void) sl_store_resident_bytes (p->s);
    usleep (200);
  }
}

static void
test_threads_disjoint_regions (void **state)
{
  (void) state;
  const uint64_t size = THREAD_COUNT * THREAD_REGION_BYTES;
  for (int b = 0; b < BACKING_COUNT; b++) {
    struct dev d;
    dev_open (&d, b, size);
    uint8_t *ref = calloc (1, size);
    assert_non_null (ref);
    struct worker w[THREAD_COUNT];
    for (int i = 0; i < THREAD_COUNT; i++) {
      w[i] = (struct worker) { .s = d.s, .base_bytes = i * THREAD_REGION_BYTES,
                               .ref = ref + i * THREAD_REGION_BYTES,
                               .seed = 777 + i * 31 + b };
      assert_int_equal (pthread_create (&w[i].thread, NULL, worker_main, &w[i]), 0);
    }
    int stop = 0;
    pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
    struct persister p = { d.s, &stop, &mutex, 0 };
    pthread_t persist_thread;
    assert_int_equal (pthread_create (&persist_thread, NULL, persister_main, &p), 0);
    for (int i = 0; i < THREAD_COUNT; i++) {
      pthread_join (w[i].thread, NULL);
      assert_int_equal (w[i].failures, 0);
      assert_int_equal (w[i].mismatches, 0);
    }
    pthread_mutex_lock (&mutex);
    stop = 1;
    pthread_mutex_unlock (&mutex);
    pthread_join (persist_thread, NULL);
    assert_int_equal (p.failures, 0);
    assert_device_equals (d.s, ref, size);
    free (ref);
    dev_close (&d);
  }
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_unwritten_reads_zero),
    cmocka_unit_test (test_memory_limit),
    cmocka_unit_test (test_huge_sparse),
    cmocka_unit_test (test_random_against_reference),
    cmocka_unit_test (test_zero_partial_and_whole),
    cmocka_unit_test (test_volatile_then_persist),
    cmocka_unit_test (test_power_loss_reverts),
    cmocka_unit_test (test_power_loss_range),
    cmocka_unit_test (test_memory_resident_counts_shadows),
    cmocka_unit_test (test_file_reopen),
    cmocka_unit_test (test_file_zero_writes_stay_sparse),
    cmocka_unit_test (test_out_of_range),
    cmocka_unit_test (test_threads_disjoint_regions),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
