/* params.h — KEY=VALUE device parameters, shared by the plugins and
 * storlab-sim so both spell every key the same way.
 *
 * Each model publishes a table of struct sl_param describing the fields of
 * its config struct.  Key names carry their unit (average-seek-ms,
 * outer-mb-s); the value is a plain number in that unit.  Sizes use nbdkit's
 * syntax (512, 4k, 300G: powers of 1024).
 */
#ifndef STORLAB_PARAMS_H
#define STORLAB_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum sl_param_type {
  SL_PARAM_COUNT,              /* uint32_t, plain integer */
  SL_PARAM_SIZE_BYTES,         /* uint64_t, number with optional k/M/G/T suffix */
  /* ... a capacity or a cache's size: what a lab scaled down by a factor
   * divides (a sweep's scale), where a size above is a unit of the
   * device's geometry or transfers and stays */
  SL_PARAM_CAPACITY_BYTES,
  SL_PARAM_TIME_MS,            /* uint64_t ns field, value in milliseconds (decimal) */
  SL_PARAM_TIME_US,            /* uint64_t ns field, value in microseconds (decimal) */
  SL_PARAM_RATE_MB_S,          /* uint64_t bytes/s field, value in MB/s (10^6 B/s) */
  SL_PARAM_ON_OFF,             /* bool, on|off (also true/false, 1/0, yes/no) */
  SL_PARAM_STRING,             /* char[SL_PARAM_STRING_BYTES]: a name (preset, policy) */
  SL_PARAM_PERCENT,            /* double field, value a decimal percentage (7.5) */
  /* uint32_t field holding the index of a word from a fixed list.  The list
   * is the start of the param's help text, words separated by '|' and ended
   * by ": " ("sata|nvme: host interface ..."); help output shows it as the
   * value syntax and the rest as the help. */
  SL_PARAM_CHOICE,
};

/* SL_PARAM_STRING fields: the model validates the name itself. */
#define SL_PARAM_STRING_BYTES 64

struct sl_param {
  const char *key;
  enum sl_param_type type;
  size_t offset;               /* offsetof the field in the config struct */
  double min;                  /* inclusive range, in the key's unit */
  double max;
  const char *help;            /* one line, ends without a period */
};

/* Parses value for key into config.  Returns 0, or -1 with
 * "KEY=VALUE: reason" in err.  Unknown key: returns -2 (err set). */
int sl_param_set (const struct sl_param *table, size_t table_len, void *config,
                  const char *key, const char *value, char *err, size_t err_bytes);
const struct sl_param *sl_param_find (const struct sl_param *table, size_t table_len,
                                      const char *key);
/* Checks every field of config against its key's range (a config built in
 * code, not only through sl_param_set, gets the same limits).  Strings and
 * choices are the model's to check.  Returns 0, or -1 with
 * "KEY=VALUE: out of range MIN..MAX" in err. */
int sl_params_check_ranges (const struct sl_param *table, size_t table_len,
                            const void *config, char *err, size_t err_bytes);
/* Writes "key=<current value>" lines (for --dump-plugin) */
void sl_params_dump (const struct sl_param *table, size_t table_len,
                     const void *config, const char *prefix, FILE *out);
/* One key, as help and catalogs show it: its syntax ("rpm=<n>",
 * "interface=<sata|nvme>"), its help without a choice list, and the value
 * config holds in the key's own spelling (as --dump-plugin writes it). */
void sl_param_syntax (const struct sl_param *p, char *out, size_t out_bytes);
const char *sl_param_help_text (const struct sl_param *p);
void sl_param_value_text (const struct sl_param *p, const void *config, char *out,
                          size_t out_bytes);
/* Formats the help text: "key=<unit>  help (default X)" one per line. */
void sl_params_help (const struct sl_param *table, size_t table_len,
                     const void *defaults, FILE *out);
/* Parses a size: digits with optional fraction? no: integer with optional
 * k/K/M/G/T/P/E suffix (powers of 1024) or a trailing 'b'/'B'.  -1 on error. */
int sl_parse_size_bytes (const char *value, uint64_t *out);
/* Parses a finite decimal number (no trailing junk). -1 on error. */
int sl_parse_decimal (const char *value, double *out);

#endif
