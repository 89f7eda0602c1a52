/* store.c — device contents: sparse memory pages or a sparse file, plus
 * per-page shadows of durable contents for volatile (cached) writes.
 *
 * Out-of-range requests (offset + length beyond the device size, or
 * overflowing) fail with errno = EINVAL, like a bad argument to pread.
 * Zero-length requests always succeed.
 *
 * Locking: one rwlock per store.  Memory reads take it shared; anything
 * that changes the page maps takes it exclusive.  File reads take no lock
 * (pread is atomic enough for a disk); file writes that touch no shadowed
 * page only need it shared, since shadows are created and dropped only
 * under the exclusive lock.
 */
#define _GNU_SOURCE

#include "store.h"

#include "owned_file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define PAGE_BYTES ((uint64_t) SL_STORE_PAGE_BYTES)

/* Page index radix: 3 levels of 12 bits = 2^36 pages of 4 KiB = 256 TiB. */
#define RADIX_BITS 12u
#define RADIX_FANOUT (1u << RADIX_BITS)
#define RADIX_LEVELS 3u
#define STORE_MAX_BYTES ((UINT64_C (1) << (RADIX_BITS * RADIX_LEVELS)) * PAGE_BYTES)

/* Linux caps one pread/pwrite at just under 2 GiB; stay well below. */
#define IO_CHUNK_MAX_BYTES (UINT64_C (1) << 30)
#define ZERO_WRITE_IOVECS 64u

/* A shadow slot holds either a PAGE_BYTES copy of the durable contents or
 * this marker, meaning "durable contents were all zero" (no copy needed). */
static const uint8_t durable_zero_marker;
#define SHADOW_ZERO ((void *) &durable_zero_marker)

static const uint8_t zero_page[SL_STORE_PAGE_BYTES];

struct radix {
  void *root;                   /* RADIX_LEVELS levels of RADIX_FANOUT pointers */
};

struct sl_store {
  uint64_t size_bytes;
  int fd;                       /* -1 for memory backing */
  bool file_sync;               /* persist and close fdatasync fd */
  char *path;
  pthread_rwlock_t lock;
  struct radix pages;           /* memory backing: page index -> data page */
  struct radix shadows;         /* page index -> copy or SHADOW_ZERO */
  uint64_t data_pages;
  uint64_t shadow_pages;        /* all shadows (volatile pages) */
  uint64_t shadow_copy_pages;   /* shadows holding a copy */
};

/* ---- radix of page pointers ------------------------------------------ */

/* Pointer to the leaf slot for page_index; NULL if absent and !create, or
 * (errno ENOMEM) if a node could not be allocated. */
static void **
radix_slot (struct radix *r, uint64_t page_index, bool create)
{
  void **node_ref = &r->root;
  for (unsigned level = 0; level < RADIX_LEVELS; level++) {
    if (*node_ref == NULL) {
      if (!create)
        return NULL;
      *node_ref = calloc (RADIX_FANOUT, sizeof (void *));
      if (*node_ref == NULL)
        return NULL;
    }
    void **node = *node_ref;
    unsigned shift = RADIX_BITS * (RADIX_LEVELS - 1 - level);
    node_ref = &node[(page_index >> shift) & (RADIX_FANOUT - 1)];
  }
  return node_ref;
}

static void *
radix_get (struct radix *r, uint64_t page_index)
{
  void **slot = radix_slot (r, page_index, false);
  return slot ? *slot : NULL;
}

/* Called for every non-NULL leaf in a range; may clear *slot.  A non-zero
 * return stops the walk and is passed on. */
typedef int (*radix_visit_fn) (uint64_t page_index, void **slot, void *ctx);

static int
radix_visit_node (void **node, unsigned level, uint64_t base_index,
                  uint64_t first_index, uint64_t last_index,
                  radix_visit_fn fn, void *ctx)
{
  unsigned shift = RADIX_BITS * (RADIX_LEVELS - 1 - level);
  uint64_t lo = first_index > base_index ? (first_index - base_index) >> shift : 0;
  uint64_t hi = (last_index - base_index) >> shift;
  if (hi > RADIX_FANOUT - 1)
    hi = RADIX_FANOUT - 1;
  for (uint64_t i = lo; i <= hi; i++) {
    if (node[i] == NULL)
      continue;
    uint64_t child_base = base_index + (i << shift);
    int rc = level == RADIX_LEVELS - 1
      ? fn (child_base, &node[i], ctx)
      : radix_visit_node (node[i], level + 1, child_base,
                          first_index, last_index, fn, ctx);
    if (rc != 0)
      return rc;
  }
  return 0;
}

/* Skips absent subtrees, so walking a huge sparse range is cheap. */
static int
radix_visit (struct radix *r, uint64_t first_index, uint64_t last_index,
             radix_visit_fn fn, void *ctx)
{
  if (r->root == NULL || first_index > last_index)
    return 0;
  return radix_visit_node (r->root, 0, 0, first_index, last_index, fn, ctx);
}

static void
radix_free_node (void **node, unsigned level, void (*free_value) (void *))
{
  for (unsigned i = 0; i < RADIX_FANOUT; i++) {
    if (node[i] == NULL)
      continue;
    if (level == RADIX_LEVELS - 1)
      free_value (node[i]);
    else
      radix_free_node (node[i], level + 1, free_value);
  }
  free (node);
}

static void
radix_free (struct radix *r, void (*free_value) (void *))
{
  if (r->root != NULL)
    radix_free_node (r->root, 0, free_value);
  r->root = NULL;
}

static void
free_shadow (void *shadow)
{
  if (shadow != SHADOW_ZERO)
    free (shadow);
}

/* ---- small helpers ------------------------------------------------------ */

static bool
is_all_zero (const void *buf, uint64_t length_bytes)
{
  const uint8_t *p = buf;
  while (length_bytes >= PAGE_BYTES) {
    if (memcmp (p, zero_page, PAGE_BYTES) != 0)
      return false;
    p += PAGE_BYTES;
    length_bytes -= PAGE_BYTES;
  }
  return memcmp (p, zero_page, length_bytes) == 0;
}

static int
check_range (const struct sl_store *s, uint64_t length_bytes,
             uint64_t offset_bytes)
{
  if (length_bytes > s->size_bytes
      || offset_bytes > s->size_bytes - length_bytes) {
    errno = EINVAL;
    return -1;
  }
  return 0;
}

/* Bytes of page_index that lie inside the device (the last page may be
 * partial when the size is not a page multiple). */
static uint64_t
page_bytes_in_device (const struct sl_store *s, uint64_t page_index)
{
  uint64_t start = page_index * PAGE_BYTES;
  uint64_t left = s->size_bytes - start;
  return left < PAGE_BYTES ? left : PAGE_BYTES;
}

static bool
is_file (const struct sl_store *s)
{
  return s->fd >= 0;
}

/* ---- file I/O loops ------------------------------------------------------ */

/* Reads past end of file (only possible if someone shrank it) give zeroes. */
static int
pread_full (int fd, void *buf, uint64_t length_bytes, uint64_t offset_bytes)
{
  uint8_t *p = buf;
  while (length_bytes > 0) {
    size_t chunk = length_bytes < IO_CHUNK_MAX_BYTES ? length_bytes : IO_CHUNK_MAX_BYTES;
    ssize_t n = pread (fd, p, chunk, (off_t) offset_bytes);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    if (n == 0) {
      memset (p, 0, length_bytes);
      return 0;
    }
    p += n;
    offset_bytes += (uint64_t) n;
    length_bytes -= (uint64_t) n;
  }
  return 0;
}

static int
pwrite_full (int fd, const void *buf, uint64_t length_bytes, uint64_t offset_bytes)
{
  const uint8_t *p = buf;
  while (length_bytes > 0) {
    size_t chunk = length_bytes < IO_CHUNK_MAX_BYTES ? length_bytes : IO_CHUNK_MAX_BYTES;
    ssize_t n = pwrite (fd, p, chunk, (off_t) offset_bytes);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    if (n == 0) {               /* would loop forever */
      errno = EIO;
      return -1;
    }
    p += n;
    offset_bytes += (uint64_t) n;
    length_bytes -= (uint64_t) n;
  }
  return 0;
}

static int
pwrite_zeroes (int fd, uint64_t length_bytes, uint64_t offset_bytes)
{
  struct iovec iov[ZERO_WRITE_IOVECS];
  while (length_bytes > 0) {
    int count = 0;
    uint64_t batch_bytes = 0;
    while (count < (int) ZERO_WRITE_IOVECS && batch_bytes < length_bytes) {
      uint64_t left = length_bytes - batch_bytes;
      iov[count].iov_base = (void *) zero_page;
      iov[count].iov_len = left < PAGE_BYTES ? left : PAGE_BYTES;
      batch_bytes += iov[count].iov_len;
      count++;
    }
    ssize_t n = pwritev (fd, iov, count, (off_t) offset_bytes);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    if (n == 0) {
      errno = EIO;
      return -1;
    }
    offset_bytes += (uint64_t) n;
    length_bytes -= (uint64_t) n;
  }
  return 0;
}

/* Punching a hole keeps the file sparse; not every filesystem can. */
static int
file_zero_range (int fd, uint64_t length_bytes, uint64_t offset_bytes)
{
  if (fallocate (fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                 (off_t) offset_bytes, (off_t) length_bytes) == 0)
    return 0;
  if (errno != EOPNOTSUPP && errno != ENOSYS && errno != EINVAL)
    return -1;
  return pwrite_zeroes (fd, length_bytes, offset_bytes);
}

/* ---- shadows ---------------------------------------------------------- */

/* Durable contents of a page without a shadow = its current contents. */
static int
read_current_page (struct sl_store *s, uint64_t page_index, uint8_t *page_out)
{
  if (is_file (s)) {
    uint64_t in_device = page_bytes_in_device (s, page_index);
    memset (page_out + in_device, 0, PAGE_BYTES - in_device);
    return pread_full (s->fd, page_out, in_device, page_index * PAGE_BYTES);
  }
  const uint8_t *page = radix_get (&s->pages, page_index);
  if (page)
    memcpy (page_out, page, PAGE_BYTES);
  else
    memset (page_out, 0, PAGE_BYTES);
  return 0;
}

static int
shadow_insert (struct sl_store *s, uint64_t page_index, void *shadow)
{
  void **slot = radix_slot (&s->shadows, page_index, true);
  if (slot == NULL) {
    free_shadow (shadow);
    return -1;
  }
  *slot = shadow;
  s->shadow_pages++;
  if (shadow != SHADOW_ZERO)
    s->shadow_copy_pages++;
  return 0;
}

/* Before the first volatile write to a page, remember its durable contents.
 * A write of zeroes over an all-zero page changes nothing, so needs none. */
static int
shadow_take (struct sl_store *s, uint64_t page_index, bool write_is_zero)
{
  if (radix_get (&s->shadows, page_index) != NULL)
    return 0;
  if (!is_file (s) && radix_get (&s->pages, page_index) == NULL)
    return write_is_zero ? 0 : shadow_insert (s, page_index, SHADOW_ZERO);

  uint8_t *copy = malloc (PAGE_BYTES);
  if (copy == NULL)
    return -1;
  if (read_current_page (s, page_index, copy) < 0) {
    free (copy);
    return -1;
  }
  void *shadow = copy;
  if (is_all_zero (copy, PAGE_BYTES)) {
    free (copy);
    if (write_is_zero)
      return 0;
    shadow = SHADOW_ZERO;
  }
  return shadow_insert (s, page_index, shadow);
}

/* A non-volatile write makes its bytes durable: fold them into the shadow
 * (src NULL = zeroes). */
/* Writes src, or zeroes when src is NULL (the zero/trim path). */
static void
copy_or_zero (uint8_t *dst, const void *src, uint64_t length_bytes)
{
  if (src)
    memcpy (dst, src, length_bytes);
  else
    memset (dst, 0, length_bytes);
}

static int
shadow_update_slot (struct sl_store *s, void **slot, uint64_t in_page_offset,
                    const void *src, uint64_t length_bytes)
{
  if (*slot == SHADOW_ZERO) {
    if (src == NULL || is_all_zero (src, length_bytes))
      return 0;
    uint8_t *copy = calloc (1, PAGE_BYTES);
    if (copy == NULL)
      return -1;
    *slot = copy;
    s->shadow_copy_pages++;
  }
  uint8_t *copy = *slot;
  copy_or_zero (copy + in_page_offset, src, length_bytes);
  return 0;
}

static int
shadow_update (struct sl_store *s, uint64_t page_index, uint64_t in_page_offset,
               const void *src, uint64_t length_bytes)
{
  void **slot = radix_slot (&s->shadows, page_index, false);
  if (slot == NULL || *slot == NULL)
    return 0;
  return shadow_update_slot (s, slot, in_page_offset, src, length_bytes);
}

struct range_ctx {
  struct sl_store *s;
  uint64_t offset_bytes;        /* byte range [offset, end) */
  uint64_t end_bytes;
  bool volatile_write;
};

/* Part of page_index inside the byte range. */
static void
range_in_page (const struct range_ctx *rc, uint64_t page_index,
               uint64_t *in_page_offset, uint64_t *length_bytes)
{
  uint64_t page_start = page_index * PAGE_BYTES;
  uint64_t start = rc->offset_bytes > page_start ? rc->offset_bytes : page_start;
  uint64_t page_end = page_start + PAGE_BYTES;
  uint64_t end = rc->end_bytes < page_end ? rc->end_bytes : page_end;
  *in_page_offset = start - page_start;
  *length_bytes = end - start;
}

static int
shadow_zero_visit (uint64_t page_index, void **slot, void *ctx)
{
  struct range_ctx *rc = ctx;
  uint64_t in_page_offset, length_bytes;
  range_in_page (rc, page_index, &in_page_offset, &length_bytes);
  return shadow_update_slot (rc->s, slot, in_page_offset, NULL, length_bytes);
}

/* Non-volatile zeroing of a range: zero the covered bytes of its shadows. */
static int
shadows_zero_range (struct sl_store *s, uint64_t length_bytes, uint64_t offset_bytes)
{
  struct range_ctx rc = { s, offset_bytes, offset_bytes + length_bytes, false };
  return radix_visit (&s->shadows, offset_bytes / PAGE_BYTES,
                      (offset_bytes + length_bytes - 1) / PAGE_BYTES,
                      shadow_zero_visit, &rc);
}

static int
found_visit (uint64_t page_index, void **slot, void *ctx)
{
  (void) page_index; (void) slot; (void) ctx;
  return 1;
}

static bool
range_has_shadow (struct sl_store *s, uint64_t length_bytes, uint64_t offset_bytes)
{
  if (s->shadow_pages == 0)
    return false;
  return radix_visit (&s->shadows, offset_bytes / PAGE_BYTES,
                      (offset_bytes + length_bytes - 1) / PAGE_BYTES,
                      found_visit, NULL) != 0;
}

/* Per-page shadow work for a write or zero of [offset, offset+length). */
static int
shadows_before_write (struct sl_store *s, const uint8_t *src,
                      uint64_t length_bytes, uint64_t offset_bytes,
                      bool volatile_write)
{
  while (length_bytes > 0) {
    uint64_t page_index = offset_bytes / PAGE_BYTES;
    uint64_t in_page_offset = offset_bytes % PAGE_BYTES;
    uint64_t chunk = PAGE_BYTES - in_page_offset;
    if (chunk > length_bytes)
      chunk = length_bytes;
    int rc = volatile_write
      ? shadow_take (s, page_index, src == NULL || is_all_zero (src, chunk))
      : shadow_update (s, page_index, in_page_offset, src, chunk);
    if (rc < 0)
      return -1;
    if (src)
      src += chunk;
    offset_bytes += chunk;
    length_bytes -= chunk;
  }
  return 0;
}

/* ---- memory backing --------------------------------------------------- */

static void
memory_read (struct sl_store *s, uint8_t *dst, uint64_t length_bytes,
             uint64_t offset_bytes)
{
  while (length_bytes > 0) {
    uint64_t in_page_offset = offset_bytes % PAGE_BYTES;
    uint64_t chunk = PAGE_BYTES - in_page_offset;
    if (chunk > length_bytes)
      chunk = length_bytes;
    const uint8_t *page = radix_get (&s->pages, offset_bytes / PAGE_BYTES);
    if (page)
      memcpy (dst, page + in_page_offset, chunk);
    else
      memset (dst, 0, chunk);
    dst += chunk;
    offset_bytes += chunk;
    length_bytes -= chunk;
  }
}

static void
memory_free_page_slot (struct sl_store *s, void **slot)
{
  free (*slot);
  *slot = NULL;
  s->data_pages--;
}

/* Store one in-page chunk (src NULL = zeroes); zero pages are not kept. */
static int
memory_write_chunk (struct sl_store *s, uint64_t page_index, uint64_t in_page_offset,
                    const uint8_t *src, uint64_t length_bytes)
{
  bool chunk_is_zero = src == NULL || is_all_zero (src, length_bytes);
  void **slot = radix_slot (&s->pages, page_index, !chunk_is_zero);
  if (slot == NULL)
    return chunk_is_zero ? 0 : -1;
  if (*slot == NULL) {
    if (chunk_is_zero)
      return 0;
    *slot = calloc (1, PAGE_BYTES);
    if (*slot == NULL)
      return -1;
    s->data_pages++;
  }
  if (chunk_is_zero && length_bytes == PAGE_BYTES) {
    memory_free_page_slot (s, slot);
    return 0;
  }
  uint8_t *page = *slot;
  copy_or_zero (page + in_page_offset, src, length_bytes);
  return 0;
}

static int
memory_write (struct sl_store *s, const uint8_t *src, uint64_t length_bytes,
              uint64_t offset_bytes)
{
  while (length_bytes > 0) {
    uint64_t in_page_offset = offset_bytes % PAGE_BYTES;
    uint64_t chunk = PAGE_BYTES - in_page_offset;
    if (chunk > length_bytes)
      chunk = length_bytes;
    if (memory_write_chunk (s, offset_bytes / PAGE_BYTES, in_page_offset, src, chunk) < 0)
      return -1;
    src += chunk;
    offset_bytes += chunk;
    length_bytes -= chunk;
  }
  return 0;
}

static int
memory_zero_visit (uint64_t page_index, void **slot, void *ctx)
{
  struct range_ctx *rc = ctx;
  (void) slot;
  if (rc->volatile_write && shadow_take (rc->s, page_index, true) < 0)
    return -1;
  uint64_t in_page_offset, length_bytes;
  range_in_page (rc, page_index, &in_page_offset, &length_bytes);
  return memory_write_chunk (rc->s, page_index, in_page_offset, NULL, length_bytes);
}

/* Visits only allocated pages: trimming a whole huge device is cheap. */
static int
memory_zero (struct sl_store *s, uint64_t length_bytes, uint64_t offset_bytes,
             bool volatile_write)
{
  if (!volatile_write && shadows_zero_range (s, length_bytes, offset_bytes) < 0)
    return -1;
  struct range_ctx rc = { s, offset_bytes, offset_bytes + length_bytes, volatile_write };
  return radix_visit (&s->pages, offset_bytes / PAGE_BYTES,
                      (offset_bytes + length_bytes - 1) / PAGE_BYTES,
                      memory_zero_visit, &rc);
}

/* ---- file backing ------------------------------------------------------- */

static int
shadow_take_pages (struct sl_store *s, uint64_t first_index, uint64_t last_index)
{
  for (uint64_t i = first_index; i <= last_index; i++)
    if (shadow_take (s, i, true) < 0)
      return -1;
  return 0;
}

/* Volatile zeroing only needs shadows of pages that hold data: holes are
 * zero before and after.  SEEK_DATA finds them without reading. */
static int
file_shadow_data_extents (struct sl_store *s, uint64_t length_bytes,
                          uint64_t offset_bytes)
{
  uint64_t pos = offset_bytes;
  uint64_t end = offset_bytes + length_bytes;
  while (pos < end) {
    uint64_t data_start = pos;
    uint64_t data_end = end;
    off_t data = lseek (s->fd, (off_t) pos, SEEK_DATA);
    if (data < 0) {
      if (errno == ENXIO)       /* only a hole from pos on */
        return 0;
      if (errno != EINVAL && errno != EOPNOTSUPP)
        return -1;
      /* No SEEK_DATA: treat everything as data. */
    }
    else {
      if ((uint64_t) data >= end)
        return 0;
      data_start = (uint64_t) data;
      off_t hole = lseek (s->fd, data, SEEK_HOLE);
      if (hole > data && (uint64_t) hole < end)
        data_end = (uint64_t) hole;
    }
    if (shadow_take_pages (s, data_start / PAGE_BYTES, (data_end - 1) / PAGE_BYTES) < 0)
      return -1;
    pos = data_end;
  }
  return 0;
}

static int
file_write (struct sl_store *s, const void *buf, uint64_t length_bytes,
            uint64_t offset_bytes, bool volatile_write)
{
  int rc;
  if (!volatile_write) {
    pthread_rwlock_rdlock (&s->lock);
    if (!range_has_shadow (s, length_bytes, offset_bytes)) {
      rc = pwrite_full (s->fd, buf, length_bytes, offset_bytes);
      pthread_rwlock_unlock (&s->lock);
      return rc;
    }
    pthread_rwlock_unlock (&s->lock);
  }
  pthread_rwlock_wrlock (&s->lock);
  rc = shadows_before_write (s, buf, length_bytes, offset_bytes, volatile_write);
  if (rc == 0)
    rc = pwrite_full (s->fd, buf, length_bytes, offset_bytes);
  pthread_rwlock_unlock (&s->lock);
  return rc;
}

static int
file_zero (struct sl_store *s, uint64_t length_bytes, uint64_t offset_bytes,
           bool volatile_write)
{
  int rc;
  if (!volatile_write) {
    pthread_rwlock_rdlock (&s->lock);
    if (!range_has_shadow (s, length_bytes, offset_bytes)) {
      rc = file_zero_range (s->fd, length_bytes, offset_bytes);
      pthread_rwlock_unlock (&s->lock);
      return rc;
    }
    pthread_rwlock_unlock (&s->lock);
  }
  pthread_rwlock_wrlock (&s->lock);
  rc = volatile_write
    ? file_shadow_data_extents (s, length_bytes, offset_bytes)
    : shadows_zero_range (s, length_bytes, offset_bytes);
  if (rc == 0)
    rc = file_zero_range (s->fd, length_bytes, offset_bytes);
  pthread_rwlock_unlock (&s->lock);
  return rc;
}

/* ---- construction ----------------------------------------------------- */

static struct sl_store *
store_alloc (uint64_t size_bytes)
{
  struct sl_store *s = calloc (1, sizeof *s);
  if (s == NULL)
    return NULL;
  pthread_rwlockattr_t attr;
  pthread_rwlockattr_init (&attr);
  /* Reads are constant traffic; a writer must not starve behind them. */
  pthread_rwlockattr_setkind_np (&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
  int rc = pthread_rwlock_init (&s->lock, &attr);
  pthread_rwlockattr_destroy (&attr);
  if (rc != 0) {
    free (s);
    errno = rc;
    return NULL;
  }
  s->size_bytes = size_bytes;
  s->fd = -1;
  return s;
}

struct sl_store *
sl_store_new_memory (uint64_t size_bytes)
{
  if (size_bytes > STORE_MAX_BYTES) {
    errno = EFBIG;
    return NULL;
  }
  return store_alloc (size_bytes);
}

static void set_err (char *err, size_t err_bytes, const char *fmt, ...)
  __attribute__ ((format (printf, 3, 4)));

static void
set_err (char *err, size_t err_bytes, const char *fmt, ...)
{
  if (err == NULL || err_bytes == 0)
    return;
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (err, err_bytes, fmt, ap);
  va_end (ap);
}

struct sl_store *
sl_store_open_file (const char *path, uint64_t size_bytes,
                    char *err, size_t err_bytes)
{
  if (size_bytes > STORE_MAX_BYTES) {
    set_err (err, err_bytes, "size=%" PRIu64 " for file %s exceeds the store limit of %"
             PRIu64 " bytes", size_bytes, path, STORE_MAX_BYTES);
    errno = EFBIG;
    return NULL;
  }
  /* Locked: two devices writing one file would corrupt each other's data. */
  char why[160];
  int fd = sl_owned_file_open (path, O_RDWR, true, why, sizeof why);
  if (fd < 0) {
    int saved = errno;
    set_err (err, err_bytes, "file %s: %s", path, why);
    errno = saved;
    return NULL;
  }
  struct stat st;
  int saved = 0;
  if (fstat (fd, &st) < 0) {
    saved = errno;
    set_err (err, err_bytes, "file %s: cannot stat: %s", path, strerror (saved));
  }
  else if ((uint64_t) st.st_size > size_bytes) {
    saved = EINVAL;
    set_err (err, err_bytes, "file %s is %" PRIu64 " bytes, larger than size=%" PRIu64
             "; refusing to truncate", path, (uint64_t) st.st_size, size_bytes);
  }
  else if ((uint64_t) st.st_size < size_bytes && ftruncate (fd, (off_t) size_bytes) < 0) {
    saved = errno;
    set_err (err, err_bytes, "file %s: cannot extend to %" PRIu64 " bytes: %s",
             path, size_bytes, strerror (saved));
  }
  struct sl_store *s = NULL;
  if (saved == 0) {
    s = store_alloc (size_bytes);
    if (s)
      s->path = strdup (path);
    if (s == NULL || s->path == NULL) {
      saved = ENOMEM;
      set_err (err, err_bytes, "file %s: out of memory", path);
      if (s) {
        pthread_rwlock_destroy (&s->lock);
        free (s);
        s = NULL;
      }
    }
  }
  if (s == NULL) {
    close (fd);
    errno = saved;
    return NULL;
  }
  s->fd = fd;
  s->file_sync = true;
  return s;
}

void
sl_store_set_file_sync (struct sl_store *s, bool sync_to_disk)
{
  s->file_sync = sync_to_disk;
}

int
sl_store_close (struct sl_store *s)
{
  if (s == NULL)
    return 0;
  int rc = 0;
  int saved = 0;
  if (is_file (s)) {
    if (s->file_sync && fdatasync (s->fd) < 0) {
      rc = -1;
      saved = errno;
    }
    if (close (s->fd) < 0 && rc == 0) {
      rc = -1;
      saved = errno;
    }
  }
  radix_free (&s->pages, free);
  radix_free (&s->shadows, free_shadow);
  pthread_rwlock_destroy (&s->lock);
  free (s->path);
  free (s);
  if (rc < 0)
    errno = saved;
  return rc;
}

uint64_t
sl_store_size_bytes (const struct sl_store *s)
{
  return s->size_bytes;
}

/* ---- I/O --------------------------------------------------------------- */

int
sl_store_read (struct sl_store *s, void *buf, uint64_t length_bytes,
               uint64_t offset_bytes)
{
  if (length_bytes == 0)
    return 0;
  if (check_range (s, length_bytes, offset_bytes) < 0)
    return -1;
  if (is_file (s))
    return pread_full (s->fd, buf, length_bytes, offset_bytes);
  pthread_rwlock_rdlock (&s->lock);
  memory_read (s, buf, length_bytes, offset_bytes);
  pthread_rwlock_unlock (&s->lock);
  return 0;
}

int
sl_store_write (struct sl_store *s, const void *buf, uint64_t length_bytes,
                uint64_t offset_bytes, bool volatile_write)
{
  if (length_bytes == 0)
    return 0;
  if (check_range (s, length_bytes, offset_bytes) < 0)
    return -1;
  /* Zero pages cost a file nothing either, as they cost memory nothing: a
   * guest zeroing a range through a layer that writes zero pages
   * (dm-writecache, dm-integrity) punches holes, not blocks of zeroes. */
  if (is_file (s))
    return is_all_zero (buf, length_bytes)
      ? file_zero (s, length_bytes, offset_bytes, volatile_write)
      : file_write (s, buf, length_bytes, offset_bytes, volatile_write);
  pthread_rwlock_wrlock (&s->lock);
  int rc = shadows_before_write (s, buf, length_bytes, offset_bytes, volatile_write);
  if (rc == 0)
    rc = memory_write (s, buf, length_bytes, offset_bytes);
  pthread_rwlock_unlock (&s->lock);
  return rc;
}

int
sl_store_zero (struct sl_store *s, uint64_t length_bytes,
               uint64_t offset_bytes, bool volatile_write)
{
  if (length_bytes == 0)
    return 0;
  if (check_range (s, length_bytes, offset_bytes) < 0)
    return -1;
  if (is_file (s))
    return file_zero (s, length_bytes, offset_bytes, volatile_write);
  pthread_rwlock_wrlock (&s->lock);
  int rc = memory_zero (s, length_bytes, offset_bytes, volatile_write);
  pthread_rwlock_unlock (&s->lock);
  return rc;
}

/* ---- volatility ------------------------------------------------------- */

int
sl_store_persist_all (struct sl_store *s)
{
  /* Detach the shadows so the sync and the freeing run without the lock;
   * volatile writes arriving meanwhile start fresh shadows. */
  pthread_rwlock_wrlock (&s->lock);
  struct radix detached = s->shadows;
  s->shadows.root = NULL;
  s->shadow_pages = 0;
  s->shadow_copy_pages = 0;
  pthread_rwlock_unlock (&s->lock);

  int rc = 0;
  if (is_file (s) && s->file_sync)
    rc = fdatasync (s->fd);
  int saved = errno;
  radix_free (&detached, free_shadow);
  errno = saved;
  return rc < 0 ? -1 : 0;
}

struct restore_ctx {
  struct sl_store *s;
  int first_errno;
};

static int
restore_memory_page (struct sl_store *s, uint64_t page_index, void *shadow)
{
  void **page_slot = radix_slot (&s->pages, page_index, shadow != SHADOW_ZERO);
  if (shadow == SHADOW_ZERO) {
    if (page_slot && *page_slot)
      memory_free_page_slot (s, page_slot);
    free_shadow (shadow);
    return 0;
  }
  if (page_slot == NULL) {
    free (shadow);
    return -1;
  }
  if (*page_slot) {
    memcpy (*page_slot, shadow, PAGE_BYTES);
    free (shadow);
  }
  else {                        /* hand the copy over as the data page */
    *page_slot = shadow;
    s->data_pages++;
  }
  return 0;
}

static int
restore_file_page (struct sl_store *s, uint64_t page_index, void *shadow)
{
  uint64_t in_device = page_bytes_in_device (s, page_index);
  int rc = shadow == SHADOW_ZERO
    ? file_zero_range (s->fd, in_device, page_index * PAGE_BYTES)
    : pwrite_full (s->fd, shadow, in_device, page_index * PAGE_BYTES);
  free_shadow (shadow);
  return rc;
}

static int
restore_visit (uint64_t page_index, void **slot, void *ctx)
{
  struct restore_ctx *rc = ctx;
  void *shadow = *slot;
  *slot = NULL;
  int r = is_file (rc->s)
    ? restore_file_page (rc->s, page_index, shadow)
    : restore_memory_page (rc->s, page_index, shadow);
  if (r < 0 && rc->first_errno == 0)
    rc->first_errno = errno ? errno : EIO;
  return 0;                     /* keep restoring the other pages */
}

int
sl_store_power_loss (struct sl_store *s)
{
  pthread_rwlock_wrlock (&s->lock);
  struct restore_ctx rc = { s, 0 };
  radix_visit (&s->shadows, 0, STORE_MAX_BYTES / PAGE_BYTES - 1, restore_visit, &rc);
  radix_free (&s->shadows, free_shadow);
  s->shadow_pages = 0;
  s->shadow_copy_pages = 0;
  pthread_rwlock_unlock (&s->lock);
  if (rc.first_errno != 0) {
    errno = rc.first_errno;
    return -1;
  }
  return 0;
}

struct range_restore_ctx {
  struct range_ctx range;
  int first_errno;
};

/* A page wholly in the range gets its durable contents back and is no
 * longer volatile; a page partly in it gets those bytes back and stays
 * volatile for the rest (its shadow still right for them). */
static int
restore_range_visit (uint64_t page_index, void **slot, void *ctx)
{
  struct range_restore_ctx *rr = ctx;
  struct sl_store *s = rr->range.s;
  uint64_t in_page_offset, length_bytes;
  range_in_page (&rr->range, page_index, &in_page_offset, &length_bytes);
  void *shadow = *slot;
  int r;
  if (in_page_offset == 0 && length_bytes >= page_bytes_in_device (s, page_index)) {
    *slot = NULL;
    s->shadow_pages--;
    if (shadow != SHADOW_ZERO)
      s->shadow_copy_pages--;
    r = is_file (s) ? restore_file_page (s, page_index, shadow)
      : restore_memory_page (s, page_index, shadow);
  }
  else {
    const uint8_t *durable = shadow == SHADOW_ZERO ? zero_page : shadow;
    uint64_t at = page_index * PAGE_BYTES + in_page_offset;
    r = is_file (s) ? pwrite_full (s->fd, durable + in_page_offset, length_bytes, at)
      : memory_write (s, durable + in_page_offset, length_bytes, at);
  }
  if (r < 0 && rr->first_errno == 0)
    rr->first_errno = errno ? errno : EIO;
  return 0;                     /* keep restoring the other pages */
}

int
sl_store_power_loss_range (struct sl_store *s, uint64_t length_bytes, uint64_t offset_bytes)
{
  if (length_bytes == 0)
    return 0;
  if (check_range (s, length_bytes, offset_bytes) < 0)
    return -1;
  pthread_rwlock_wrlock (&s->lock);
  struct range_restore_ctx rr = { { s, offset_bytes, offset_bytes + length_bytes, true }, 0 };
  if (s->shadow_pages > 0)
    radix_visit (&s->shadows, offset_bytes / PAGE_BYTES,
                 (offset_bytes + length_bytes - 1) / PAGE_BYTES, restore_range_visit, &rr);
  pthread_rwlock_unlock (&s->lock);
  if (rr.first_errno != 0) {
    errno = rr.first_errno;
    return -1;
  }
  return 0;
}

uint64_t
sl_store_volatile_bytes (struct sl_store *s)
{
  pthread_rwlock_rdlock (&s->lock);
  uint64_t bytes = s->shadow_pages * PAGE_BYTES;
  pthread_rwlock_unlock (&s->lock);
  return bytes;
}

uint64_t
sl_store_resident_bytes (struct sl_store *s)
{
  pthread_rwlock_rdlock (&s->lock);
  uint64_t bytes = (s->data_pages + s->shadow_copy_pages) * PAGE_BYTES;
  pthread_rwlock_unlock (&s->lock);
  return bytes;
}
