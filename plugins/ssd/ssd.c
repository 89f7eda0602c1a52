/* nbdkit-ssd-plugin — a solid-state drive with datasheet timing.
 * The model lives in emulator/ssd/; this file only names the kind and the
 * NBD features an SSD has (TRIM frees flash mappings). */
#include "common/plugin_common.h"

#include "ssd_help.h"

static void ssd_load (void) { storlab_plugin_load ("ssd"); }

static struct nbdkit_plugin plugin = {
  .name = "ssd",
  .longname = "storlab solid-state drive model",
  .version = "0.1.0",
  .description = "A solid-state drive: NAND dies and channels, FTL with garbage collection, "
                 "write buffer, SATA or NVMe, in real time",
  .load = ssd_load,
  .unload = storlab_plugin_unload,
  .config = storlab_plugin_config,
  .config_complete = storlab_plugin_config_complete,
  .config_help = SSD_CONFIG_HELP,
  .magic_config_key = "preset",
  .dump_plugin = storlab_plugin_dump_plugin,
  .after_fork = storlab_plugin_after_fork,
  .open = storlab_plugin_open,
  .get_size = storlab_plugin_get_size,
  .block_size = storlab_plugin_block_size,
  .can_multi_conn = storlab_plugin_can_multi_conn,
  .can_fua = storlab_plugin_can_fua,
  .can_flush = storlab_plugin_can_flush,
  .can_fast_zero = storlab_plugin_can_fast_zero,
  .pread = storlab_plugin_pread,
  .pwrite = storlab_plugin_pwrite,
  .flush = storlab_plugin_flush,
  .zero = storlab_plugin_zero,
  .trim = storlab_plugin_trim,
};

/* Requests run concurrently: the drive spreads them over its dies itself. */
#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

NBDKIT_REGISTER_PLUGIN (plugin)
