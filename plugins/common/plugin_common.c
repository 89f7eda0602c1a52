/* plugin_common.c — nbdkit callbacks shared by the storlab plugins. */
#define _GNU_SOURCE
#include "plugin_common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/kinds.h"
#include "core/engine.h"
#include "core/release.h"
#include "core/stats.h"
#include "core/store.h"
#include "device/device.h"
#include "device/driver_keys.h"
#include "device/params.h"
#include "device/presets.h"

/* The one device this nbdkit process serves. */
static struct {
  const struct sl_device_kind *kind;
  struct sl_device_builder builder;
  struct sl_driver_settings settings;
  char *owned_strings[8];      /* file= and stats= values (nbdkit frees its own) */
  size_t owned_count;
  void *config;
  struct sl_store *store;
  struct sl_stats_file *stats_file;
  struct sl_device_stats *private_stats;
  struct sl_engine *engine;
  bool volatile_cache;
  const struct storlab_plugin_hooks *hooks;
  /* the whole device: what open() serves unless a kind picks a window */
  struct storlab_plugin_window whole;
  bool whole_initialised;
} dev;

static const struct storlab_plugin_hooks no_hooks;

/* What the builder chose for the user (a preset scaled to size=): on
 * stderr at start, spelled like nbdkit's own messages. */
static void
plugin_note (void *arg, const char *line)
{
  (void) arg;
  fprintf (stderr, "nbdkit: %s: note: %s\n", dev.kind->kind, line);
}

void
storlab_plugin_load (const char *kind)
{
  dev.kind = sl_device_kind_find (kind);
  sl_device_builder_init (&dev.builder, dev.kind);
  dev.builder.note = plugin_note;
  sl_driver_settings_defaults (&dev.settings);
  dev.hooks = &no_hooks;
}

void
storlab_plugin_set_hooks (const struct storlab_plugin_hooks *hooks)
{
  dev.hooks = hooks;
}

struct sl_engine *storlab_plugin_engine (void) { return dev.engine; }
struct sl_store *storlab_plugin_store (void) { return dev.store; }
const char *storlab_plugin_stats_path (void) { return dev.settings.stats_path; }
const void *storlab_plugin_device_config (void) { return dev.config; }

void
storlab_plugin_unload (void)
{
  if (dev.engine) {
    sl_engine_free (dev.engine);
    dev.engine = NULL;
  }
  /* Closing syncs a file store: nothing written is lost on a normal exit. */
  if (dev.store && sl_store_close (dev.store) == -1)
    fprintf (stderr, "nbdkit: %s: closing the data store: %s\n",
             dev.kind ? dev.kind->kind : "storlab", strerror (errno));
  dev.store = NULL;
  if (dev.whole_initialised)
    storlab_plugin_window_destroy (&dev.whole);
  if (dev.stats_file)
    sl_stats_file_close (dev.stats_file);
  free (dev.private_stats);
  free (dev.config);
  sl_device_builder_free (&dev.builder);
  for (size_t i = 0; i < dev.owned_count; i++)
    free (dev.owned_strings[i]);
}

int
storlab_plugin_config (const char *key, const char *value)
{
  char err[512];
  const struct sl_driver_key *driver_key = sl_driver_key_find (key);
  if (driver_key && strcmp (key, "preset") != 0) {
    /* nbdkit frees config strings after config_complete: keep a copy. */
    char *copy = strdup (value);
    if (copy == NULL || dev.owned_count == sizeof dev.owned_strings / sizeof dev.owned_strings[0]) {
      free (copy);
      nbdkit_error ("%s=%s: cannot store the value", key, value);
      return -1;
    }
    dev.owned_strings[dev.owned_count++] = copy;
    if (sl_driver_settings_set (&dev.settings, key, copy, err, sizeof err) == -1) {
      nbdkit_error ("%s", err);
      return -1;
    }
    return 0;
  }
  if (sl_device_builder_add (&dev.builder, key, value, err, sizeof err) == -1) {
    nbdkit_error ("%s", err);
    return -1;
  }
  return 0;
}

int
storlab_plugin_config_complete (void)
{
  char err[512];
  dev.config = calloc (1, dev.kind->config_bytes);
  if (dev.config == NULL) {
    nbdkit_error ("out of memory");
    return -1;
  }
  if (sl_device_builder_build (&dev.builder, dev.config, err, sizeof err) == -1) {
    nbdkit_error ("%s", err);
    return -1;
  }
  struct sl_model model = dev.kind->create (dev.config, err, sizeof err);
  if (model.ops == NULL) {
    nbdkit_error ("%s", err);
    return -1;
  }
  model = sl_driver_settings_model (&dev.settings, model);
  if (model.ops == NULL) {
    nbdkit_error ("out of memory");
    return -1;
  }
  uint64_t capacity = model.capacity_bytes;
  dev.volatile_cache = model.volatile_write_cache;

  if (dev.settings.file_path) {
    dev.store = sl_store_open_file (dev.settings.file_path, capacity, err, sizeof err);
    if (dev.store == NULL) {
      model.ops->destroy (model.self);
      nbdkit_error ("file=%s: %s", dev.settings.file_path, err);
      return -1;
    }
    sl_store_set_file_sync (dev.store, dev.settings.file_sync);
  }
  else if ((dev.store = sl_store_new_memory (capacity)) == NULL) {
    model.ops->destroy (model.self);
    nbdkit_error ("cannot allocate the data store");
    return -1;
  }

  struct sl_device_stats *stats;
  if (dev.settings.stats_path) {
    unsigned records = 1;
    if (dev.hooks->extra_stats_records)
      records += dev.hooks->extra_stats_records (&model);
    dev.stats_file = sl_stats_file_create (dev.settings.stats_path, records,
                                           sl_clock_monotonic_ns (), err, sizeof err);
    if (dev.stats_file == NULL) {
      model.ops->destroy (model.self);
      nbdkit_error ("stats=%s: %s", dev.settings.stats_path, err);
      return -1;
    }
    stats = sl_stats_file_record (dev.stats_file, 0);
    if (dev.hooks->use_stats_records
        && dev.hooks->use_stats_records (&model, dev.stats_file, err, sizeof err) == -1) {
      model.ops->destroy (model.self);
      nbdkit_error ("stats=%s: %s", dev.settings.stats_path, err);
      return -1;
    }
  }
  else if ((stats = dev.private_stats = malloc (sizeof *stats)) == NULL) {
    model.ops->destroy (model.self);
    nbdkit_error ("out of memory");
    return -1;
  }

  dev.engine = sl_engine_new (SL_CLOCK_REAL, model, stats, dev.kind->kind);
  if (dev.engine == NULL) {
    nbdkit_error ("cannot create the device engine");
    return -1;
  }
  sl_release_set_spin_cores (dev.settings.release_cores);
  if (dev.settings.latency_offset_auto)
    sl_engine_set_latency_offset_auto (dev.engine, true);
  else
    sl_engine_set_latency_offset_ns (dev.engine, dev.settings.latency_offset_ns);
  if (storlab_plugin_window_init (&dev.whole, 0, capacity, NULL) == -1) {
    nbdkit_error ("cannot initialise the export: %m");
    return -1;
  }
  dev.whole_initialised = true;
  return 0;
}

void
storlab_plugin_dump_plugin (void)
{
  char names[1024];
  sl_preset_names (dev.kind->kind, names, sizeof names);
  printf ("storlab_kind=%s\n", dev.kind->kind);
  printf ("storlab_presets=%s\n", names);
  printf ("storlab_threads_recommended=%d\n", STORLAB_THREADS_RECOMMENDED);
  for (size_t i = 0; i < sl_driver_key_count; i++)
    printf ("storlab_key_%s=%s\n", sl_driver_keys[i].key, sl_driver_keys[i].value_syntax);
  void *defaults = calloc (1, dev.kind->config_bytes);
  if (defaults) {
    dev.kind->set_defaults (defaults);
    sl_params_dump (dev.kind->params, dev.kind->param_count, defaults, "storlab_default_", stdout);
    free (defaults);
  }
}

int
storlab_plugin_after_fork (void)
{
  /* Threads do not survive nbdkit's daemonising fork: start the driver here. */
  if (sl_engine_start (dev.engine) == -1) {
    nbdkit_error ("cannot start the engine thread: %m");
    return -1;
  }
  return 0;
}

int
storlab_plugin_window_init (struct storlab_plugin_window *w, uint64_t offset_bytes,
                            uint64_t size_bytes, struct sl_device_stats *stats)
{
  w->offset_bytes = offset_bytes;
  w->size_bytes = size_bytes;
  w->stats = stats;
  int rc = pthread_mutex_init (&w->stats_lock, NULL);
  if (rc != 0) {
    errno = rc;
    return -1;
  }
  return 0;
}

void
storlab_plugin_window_destroy (struct storlab_plugin_window *w)
{
  pthread_mutex_destroy (&w->stats_lock);
}

void *
storlab_plugin_open_window (struct storlab_plugin_window *w)
{
  return w;
}

void *
storlab_plugin_open (int readonly)
{
  (void) readonly;
  return storlab_plugin_open_window (&dev.whole);
}

int64_t
storlab_plugin_get_size (void *handle)
{
  const struct storlab_plugin_window *w = handle;
  return (int64_t) w->size_bytes;
}

/* Logical sectors of 512 bytes, 4 KiB physical: what the drives report. */
int
storlab_plugin_block_size (void *handle, uint32_t *minimum, uint32_t *preferred,
                           uint32_t *maximum)
{
  (void) handle;
  *minimum = 512;
  *preferred = 4096;
  *maximum = 0xffffffff;
  return 0;
}

int storlab_plugin_can_multi_conn (void *handle) { (void) handle; return 1; }
int storlab_plugin_can_fua (void *handle) { (void) handle; return NBDKIT_FUA_NATIVE; }
int storlab_plugin_can_flush (void *handle) { (void) handle; return 1; }
/* Zeroing writes the media: never "fast" in the NBD sense. */
int storlab_plugin_can_fast_zero (void *handle) { (void) handle; return 0; }

static struct sl_request
request (enum sl_op op, uint32_t length_bytes, uint64_t offset_bytes, uint32_t nbd_flags)
{
  return (struct sl_request) {
    .op = op,
    .flags = (nbd_flags & NBDKIT_FLAG_FUA) ? SL_REQUEST_FUA : 0,
    .offset_bytes = offset_bytes,
    .length_bytes = length_bytes,
  };
}

/* A window's record sees its requests arrive with the engine (under its
 * lock, at engine time now) ... */
static void
window_arrival (struct storlab_plugin_window *w)
{
  if (w->stats == NULL)
    return;
  pthread_mutex_lock (&w->stats_lock);
  sl_device_stats_arrival (w->stats, sl_engine_now_ns (dev.engine));
  pthread_mutex_unlock (&w->stats_lock);
}

/* ... and complete when their thread is released: the latency is the
 * model's, exactly as in the device's record; a completion recorded after a
 * later arrival counts from that arrival (the record's time only advances). */
static void
window_completion (struct storlab_plugin_window *w, const struct sl_request *r)
{
  if (w->stats == NULL)
    return;
  pthread_mutex_lock (&w->stats_lock);
  uint64_t now_ns = r->completion_ns > w->stats->last_change_ns
    ? r->completion_ns : w->stats->last_change_ns;
  sl_device_stats_completion (w->stats, r->op, r->length_bytes,
                              r->completion_ns - r->arrival_ns, now_ns);
  pthread_mutex_unlock (&w->stats_lock);
}

static void
window_arrival_fn (void *arg)
{
  window_arrival (arg);
}

static void
execute (struct storlab_plugin_window *w, enum sl_op op, uint32_t length_bytes,
         uint64_t offset_bytes, uint32_t nbd_flags)
{
  struct sl_request r = request (op, length_bytes, offset_bytes, nbd_flags);
  sl_engine_execute_at_arrival (dev.engine, &r, window_arrival_fn, w);
  window_completion (w, &r);
}

static bool
write_is_volatile (uint32_t flags)
{
  if (flags & NBDKIT_FLAG_FUA)
    return false;
  return dev.hooks->write_is_volatile ? dev.hooks->write_is_volatile () : dev.volatile_cache;
}

/* A write's data enters the store under the engine lock as the model
 * receives it, so the store's volatile pages are always what the model
 * holds in a volatile cache (a controller persisting "everything, now
 * that the cache is clean" cannot race a write). */
struct store_write {
  struct storlab_plugin_window *window;
  const void *buf;             /* NULL: zeroes */
  uint32_t count;
  uint64_t offset;             /* in the device */
  uint32_t flags;
  int rc;
  int saved_errno;
};

static void
store_write_at_arrival (void *arg)
{
  struct store_write *w = arg;
  bool volatile_write = write_is_volatile (w->flags);
  w->rc = w->buf
    ? sl_store_write (dev.store, w->buf, w->count, w->offset, volatile_write)
    : sl_store_zero (dev.store, w->count, w->offset, volatile_write);
  w->saved_errno = errno;
  window_arrival (w->window);
}

static int
timed_write (struct storlab_plugin_window *window, const char *what, enum sl_op op,
             const void *buf, uint32_t count, uint64_t offset, uint32_t flags)
{
  uint64_t device_offset = window->offset_bytes + offset;
  struct store_write w = { .window = window, .buf = buf, .count = count,
                           .offset = device_offset, .flags = flags };
  struct sl_request r = request (op, count, device_offset, flags);
  sl_engine_execute_at_arrival (dev.engine, &r, store_write_at_arrival, &w);
  window_completion (window, &r);
  if (w.rc == -1) {
    errno = w.saved_errno;
    nbdkit_error ("%s %u bytes at %llu: %m", what, count, (unsigned long long) offset);
    return -1;
  }
  return 0;
}

int
storlab_plugin_pread (void *handle, void *buf, uint32_t count, uint64_t offset,
                      uint32_t flags)
{
  struct storlab_plugin_window *w = handle;
  uint64_t device_offset = w->offset_bytes + offset;
  /* Reads need no ordering with the model: the data is read at once. */
  if (sl_store_read (dev.store, buf, count, device_offset) == -1) {
    nbdkit_error ("read %u bytes at %llu: %m", count, (unsigned long long) offset);
    return -1;
  }
  execute (w, SL_OP_READ, count, device_offset, flags);
  return 0;
}

int
storlab_plugin_pwrite (void *handle, const void *buf, uint32_t count, uint64_t offset,
                       uint32_t flags)
{
  return timed_write (handle, "write", SL_OP_WRITE, buf, count, offset, flags);
}

int
storlab_plugin_flush (void *handle, uint32_t flags)
{
  /* A flush is the whole device's (one controller cache, one store). */
  execute (handle, SL_OP_FLUSH, 0, 0, flags);
  if (sl_store_persist_all (dev.store) == -1) {
    nbdkit_error ("flush: %m");
    return -1;
  }
  return 0;
}

/* Write zeroes: the device writes the range (SCSI WRITE SAME / ATA
 * zeroing), so it costs what a write of that length costs. */
int
storlab_plugin_zero (void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
  return timed_write (handle, "zero", SL_OP_WRITE, NULL, count, offset, flags);
}

int
storlab_plugin_trim (void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
  return timed_write (handle, "trim", SL_OP_TRIM, NULL, count, offset, flags);
}
