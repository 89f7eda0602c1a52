/* plugin_common.h — the one adapter between nbdkit and an emulator device.
 *
 * Every storlab plugin is this adapter plus its kind's name: configuration
 * goes through the shared device builder and driver keys (the same ones
 * storlab-sim takes), data through the store, timing through a real-time
 * engine.  The plugin serves one device: every connection shares it, as
 * every initiator of a real disk shares its heads.
 */
#ifndef STORLAB_PLUGIN_COMMON_H
#define STORLAB_PLUGIN_COMMON_H

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Kind the plugin serves ("hdd"); set by the plugin's load callback. */
void storlab_plugin_load (const char *kind);
void storlab_plugin_unload (void);
int storlab_plugin_config (const char *key, const char *value);
int storlab_plugin_config_complete (void);
void storlab_plugin_dump_plugin (void);
int storlab_plugin_after_fork (void);
void *storlab_plugin_open (int readonly);
int64_t storlab_plugin_get_size (void *handle);
int storlab_plugin_block_size (void *handle, uint32_t *minimum, uint32_t *preferred,
                               uint32_t *maximum);
int storlab_plugin_can_multi_conn (void *handle);
int storlab_plugin_can_fua (void *handle);
int storlab_plugin_can_flush (void *handle);
int storlab_plugin_can_fast_zero (void *handle);
int storlab_plugin_pread (void *handle, void *buf, uint32_t count, uint64_t offset,
                          uint32_t flags);
int storlab_plugin_pwrite (void *handle, const void *buf, uint32_t count,
                           uint64_t offset, uint32_t flags);
int storlab_plugin_flush (void *handle, uint32_t flags);
int storlab_plugin_zero (void *handle, uint32_t count, uint64_t offset, uint32_t flags);
int storlab_plugin_trim (void *handle, uint32_t count, uint64_t offset, uint32_t flags);

#define STORLAB_THREADS_RECOMMENDED 256

/* What a kind adds to the common adapter (NULL members: the hdd behaviour). */
struct sl_model;
struct sl_stats_file;
struct storlab_plugin_hooks {
  /* Stats records after the front end's (RAID: one per member). */
  unsigned (*extra_stats_records) (const struct sl_model *model);
  /* Points the model's extra layers at records 1.. of the stats file,
   * before the engine adopts the model.  -1 with a line in err. */
  int (*use_stats_records) (struct sl_model *model, struct sl_stats_file *file,
                            char *err, size_t err_bytes);
  /* Does a write without FUA land in a volatile cache right now?
   * NULL: the model's volatile_write_cache, fixed at start. */
  bool (*write_is_volatile) (void);
};
/* Called from the kind's load callback, after storlab_plugin_load. */
void storlab_plugin_set_hooks (const struct storlab_plugin_hooks *hooks);

/* The served device's parts, for a kind's own threads (after config_complete). */
struct sl_engine *storlab_plugin_engine (void);
struct sl_store *storlab_plugin_store (void);
/* stats= value, or NULL. */
const char *storlab_plugin_stats_path (void);
/* The kind's built configuration (kind->config_bytes, e.g. struct
 * sl_raid_config), after config_complete. */
const void *storlab_plugin_device_config (void);

/* An export that is a window of the served device (a RAID LUN): its I/O
 * goes to the one device at offset_bytes, so windows share everything the
 * device has (a controller's cache and members).  With a stats record the
 * window also keeps front-end figures of its own I/O there. */
struct storlab_plugin_window {
  uint64_t offset_bytes;
  uint64_t size_bytes;
  struct sl_device_stats *stats;       /* NULL: none */
  pthread_mutex_t stats_lock;          /* the record's writers take turns */
};
/* stats, if not NULL, must already be initialised (sl_device_stats_init).
 * 0, or -1 with errno. */
int storlab_plugin_window_init (struct storlab_plugin_window *w, uint64_t offset_bytes,
                                uint64_t size_bytes, struct sl_device_stats *stats);
void storlab_plugin_window_destroy (struct storlab_plugin_window *w);
/* A handle serving window w (a kind's .open returns it); w outlives it. */
void *storlab_plugin_open_window (struct storlab_plugin_window *w);

#endif
