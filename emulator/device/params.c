/* params.c — parsing, range checking, dumping and help for KEY=VALUE
 * device parameters described by a struct sl_param table. */
#define _POSIX_C_SOURCE 200809L

#include "params.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- number parsing ---------------------------------------------------- */

static int
size_suffix_shift (char c, unsigned *shift)
{
  switch (c) {
  case 'k': case 'K': *shift = 10; return 0;
  case 'm': case 'M': *shift = 20; return 0;
  case 'g': case 'G': *shift = 30; return 0;
  case 't': case 'T': *shift = 40; return 0;
  case 'p': case 'P': *shift = 50; return 0;
  case 'e': case 'E': *shift = 60; return 0;
  default: return -1;
  }
}

/* Grammar: DIGITS [SUFFIX ["i"]] ["b" | "B"], where "i" only as in "KiB". */
int
sl_parse_size_bytes (const char *value, uint64_t *out)
{
  if (value == NULL || !(*value >= '0' && *value <= '9'))
    return -1;

  uint64_t number = 0;
  const char *p = value;
  for (; *p >= '0' && *p <= '9'; p++) {
    unsigned digit = (unsigned) (*p - '0');
    if (number > (UINT64_MAX - digit) / 10)
      return -1;
    number = number * 10 + digit;
  }

  unsigned shift = 0;
  if (*p != '\0' && size_suffix_shift (*p, &shift) == 0) {
    p++;
    if (*p == 'i' && (p[1] == 'B' || p[1] == 'b'))
      p++;
  }
  if (*p == 'b' || *p == 'B')
    p++;
  if (*p != '\0')
    return -1;

  if (shift > 0 && number > (UINT64_MAX >> shift))
    return -1;
  *out = number << shift;
  return 0;
}

/* Plain decimal notation only: strtod alone would also take hex floats,
 * "inf", "nan" and leading white space. */
int
sl_parse_decimal (const char *value, double *out)
{
  if (value == NULL || *value == '\0')
    return -1;
  for (const char *p = value; *p; p++)
    if (strchr ("0123456789.eE+-", *p) == NULL)
      return -1;

  char *end;
  double number = strtod (value, &end);
  if (end == value || *end != '\0' || !isfinite (number))
    return -1;
  *out = number;
  return 0;
}

static int
parse_on_off (const char *value, bool *out)
{
  static const char *const on_words[] = { "on", "true", "yes", "1" };
  static const char *const off_words[] = { "off", "false", "no", "0" };
  for (size_t i = 0; i < sizeof on_words / sizeof on_words[0]; i++) {
    if (strcasecmp (value, on_words[i]) == 0) {
      *out = true;
      return 0;
    }
    if (strcasecmp (value, off_words[i]) == 0) {
      *out = false;
      return 0;
    }
  }
  return -1;
}

/* ---- choice lists (SL_PARAM_CHOICE) ------------------------------------ */


/* Length of the "a|b|c" list at the start of a choice param's help. */
static size_t
choice_list_length (const struct sl_param *p)
{
  const char *end = p->help ? strstr (p->help, ": ") : NULL;
  return end ? (size_t) (end - p->help) : 0;
}

/* The help text after the choice list. */
static const char *
choice_help (const struct sl_param *p)
{
  size_t n = choice_list_length (p);
  return n ? p->help + n + 2 : p->help;
}

/* Word number index of the list into out; -1 when there is none. */
static int
choice_word (const struct sl_param *p, uint32_t index, char *out, size_t out_bytes)
{
  const char *word = p->help, *list_end = p->help + choice_list_length (p);
  for (uint32_t i = 0; word < list_end; i++) {
    const char *bar = memchr (word, '|', (size_t) (list_end - word));
    const char *word_end = bar ? bar : list_end;
    if (i == index) {
      snprintf (out, out_bytes, "%.*s", (int) (word_end - word), word);
      return 0;
    }
    word = word_end + 1;
  }
  return -1;
}

static int
parse_choice (const struct sl_param *p, const char *value, uint32_t *out)
{
  char word[64];
  for (uint32_t i = 0; choice_word (p, i, word, sizeof word) == 0; i++)
    if (strcmp (word, value) == 0) {
      *out = i;
      return 0;
    }
  return -1;
}

/* ---- number formatting ------------------------------------------------- */

/* Range bounds: integers print without exponent (20000, not 2e+04). */
static void
format_bound (double v, char *out, size_t out_bytes)
{
  if (v == floor (v) && fabs (v) < 1e15)
    snprintf (out, out_bytes, "%.0f", v);
  else
    snprintf (out, out_bytes, "%g", v);
}

/* value / 10^decimals, exactly, without trailing zeros: 3800000 ns with
 * 6 decimals prints "3.8" (printf("%g") could print 3.7999999). */
static void
format_scaled (uint64_t value, unsigned decimals, char *out, size_t out_bytes)
{
  uint64_t scale = 1;
  for (unsigned i = 0; i < decimals; i++)
    scale *= 10;
  uint64_t whole = value / scale;
  uint64_t fraction = value % scale;
  if (fraction == 0) {
    snprintf (out, out_bytes, "%" PRIu64, whole);
    return;
  }
  char digits[24];
  snprintf (digits, sizeof digits, "%0*" PRIu64, (int) decimals, fraction);
  size_t len = strlen (digits);
  while (len > 0 && digits[len - 1] == '0')
    digits[--len] = '\0';
  snprintf (out, out_bytes, "%" PRIu64 ".%s", whole, digits);
}

/* "16M" when the size is a small exact multiple of a power of 1024; plain
 * bytes otherwise (300000000000 reads better than 292968750K). */
static void
format_size_short (uint64_t bytes, char *out, size_t out_bytes)
{
  static const char suffixes[] = "KMGTPE";
  int chosen = -1;
  for (int i = 0; i < 6 && bytes != 0; i++)
    if (bytes % ((uint64_t) 1 << (10 * (i + 1))) == 0)
      chosen = i;
  if (chosen < 0 || (bytes >> (10 * (chosen + 1))) >= 10000)
    snprintf (out, out_bytes, "%" PRIu64, bytes);
  else
    snprintf (out, out_bytes, "%" PRIu64 "%c", bytes >> (10 * (chosen + 1)),
              suffixes[chosen]);
}

static uint64_t
load_u64 (const void *config, size_t offset)
{
  uint64_t v;
  memcpy (&v, (const char *) config + offset, sizeof v);
  return v;
}

static void
format_value (const struct sl_param *p, const void *config, bool short_sizes,
              char *out, size_t out_bytes)
{
  const char *field = (const char *) config + p->offset;
  switch (p->type) {
  case SL_PARAM_COUNT: {
    uint32_t v;
    memcpy (&v, field, sizeof v);
    snprintf (out, out_bytes, "%" PRIu32, v);
    break;
  }
  case SL_PARAM_SIZE_BYTES:
  case SL_PARAM_CAPACITY_BYTES:
    if (short_sizes)
      format_size_short (load_u64 (config, p->offset), out, out_bytes);
    else
      snprintf (out, out_bytes, "%" PRIu64, load_u64 (config, p->offset));
    break;
  case SL_PARAM_TIME_MS:
    format_scaled (load_u64 (config, p->offset), 6, out, out_bytes);
    break;
  case SL_PARAM_TIME_US:
    format_scaled (load_u64 (config, p->offset), 3, out, out_bytes);
    break;
  case SL_PARAM_RATE_MB_S:
    format_scaled (load_u64 (config, p->offset), 6, out, out_bytes);
    break;
  case SL_PARAM_ON_OFF: {
    bool v;
    memcpy (&v, field, sizeof v);
    snprintf (out, out_bytes, "%s", v ? "on" : "off");
    break;
  }
  case SL_PARAM_STRING:
    snprintf (out, out_bytes, "%.*s", SL_PARAM_STRING_BYTES - 1, field);
    break;
  case SL_PARAM_PERCENT: {
    double v;
    memcpy (&v, field, sizeof v);
    snprintf (out, out_bytes, "%g", v);
    break;
  }
  case SL_PARAM_CHOICE: {
    uint32_t v;
    memcpy (&v, field, sizeof v);
    if (choice_word (p, v, out, out_bytes) != 0)
      snprintf (out, out_bytes, "?");
    break;
  }
  default:
    snprintf (out, out_bytes, "?");
  }
}

static const char *
unit_name (enum sl_param_type type)
{
  switch (type) {
  case SL_PARAM_PERCENT: return "<%>";
  case SL_PARAM_COUNT: return "<n>";
  case SL_PARAM_SIZE_BYTES:
  case SL_PARAM_CAPACITY_BYTES: return "<size>";
  case SL_PARAM_TIME_MS: return "<ms>";
  case SL_PARAM_TIME_US: return "<us>";
  case SL_PARAM_RATE_MB_S: return "<MB/s>";
  case SL_PARAM_ON_OFF: return "<on|off>";
  case SL_PARAM_STRING: return "<name>";
  default: return "<?>";
  }
}

/* ---- table operations -------------------------------------------------- */

const struct sl_param *
sl_param_find (const struct sl_param *table, size_t table_len, const char *key)
{
  if (key == NULL)
    return NULL;
  for (size_t i = 0; i < table_len; i++)
    if (strcmp (table[i].key, key) == 0)
      return &table[i];
  return NULL;
}

static int
out_of_range (const struct sl_param *p, const char *value, char *err, size_t err_bytes)
{
  char lo[32], hi[32];
  format_bound (p->min, lo, sizeof lo);
  format_bound (p->max, hi, sizeof hi);
  snprintf (err, err_bytes, "%s=%s: out of range %s..%s", p->key, value, lo, hi);
  return -1;
}

static bool
in_range (const struct sl_param *p, double v)
{
  return v >= p->min && v <= p->max;
}

/* Decimal in the key's unit -> integer field of scale units per unit. */
static int
set_scaled (const struct sl_param *p, char *field, const char *value, double scale,
            char *err, size_t err_bytes)
{
  double v;
  if (sl_parse_decimal (value, &v) == -1) {
    snprintf (err, err_bytes, "%s=%s: not a number", p->key, value);
    return -1;
  }
  double scaled = round (v * scale);
  /* 1.8e19 is just below 2^64: the field must hold the result. */
  if (!in_range (p, v) || v < 0 || scaled >= 18446744073709551615.0)
    return out_of_range (p, value, err, err_bytes);
  uint64_t stored = (uint64_t) scaled;
  memcpy (field, &stored, sizeof stored);
  return 0;
}

int
sl_param_set (const struct sl_param *table, size_t table_len, void *config,
              const char *key, const char *value, char *err, size_t err_bytes)
{
  const struct sl_param *p = sl_param_find (table, table_len, key);
  if (p == NULL) {
    snprintf (err, err_bytes, "unknown key '%s'", key ? key : "");
    return -2;
  }
  if (value == NULL)
    value = "";
  char *field = (char *) config + p->offset;

  switch (p->type) {
  case SL_PARAM_COUNT: {
    double v;
    if (sl_parse_decimal (value, &v) == -1) {
      snprintf (err, err_bytes, "%s=%s: not a number", key, value);
      return -1;
    }
    if (v != floor (v)) {
      snprintf (err, err_bytes, "%s=%s: not a whole number", key, value);
      return -1;
    }
    if (!in_range (p, v) || v < 0 || v > UINT32_MAX)
      return out_of_range (p, value, err, err_bytes);
    uint32_t stored = (uint32_t) v;
    memcpy (field, &stored, sizeof stored);
    return 0;
  }
  case SL_PARAM_SIZE_BYTES:
  case SL_PARAM_CAPACITY_BYTES: {
    uint64_t bytes;
    if (sl_parse_size_bytes (value, &bytes) == -1) {
      snprintf (err, err_bytes, "%s=%s: not a size (examples: 512, 4k, 300G)",
                key, value);
      return -1;
    }
    if (!in_range (p, (double) bytes))
      return out_of_range (p, value, err, err_bytes);
    memcpy (field, &bytes, sizeof bytes);
    return 0;
  }
  case SL_PARAM_TIME_MS:
    return set_scaled (p, field, value, 1e6, err, err_bytes);
  case SL_PARAM_TIME_US:
    return set_scaled (p, field, value, 1e3, err, err_bytes);
  case SL_PARAM_RATE_MB_S:
    return set_scaled (p, field, value, 1e6, err, err_bytes);
  case SL_PARAM_ON_OFF: {
    bool on;
    if (parse_on_off (value, &on) == -1) {
      snprintf (err, err_bytes, "%s=%s: expected on or off", key, value);
      return -1;
    }
    memcpy (field, &on, sizeof on);
    return 0;
  }
  case SL_PARAM_STRING: {
    size_t length = strlen (value);
    if (length == 0 || length >= SL_PARAM_STRING_BYTES) {
      snprintf (err, err_bytes, "%s=%s: expected a name of 1..%d characters", key, value,
                SL_PARAM_STRING_BYTES - 1);
      return -1;
    }
    memcpy (field, value, length + 1);
    return 0;
  }
  case SL_PARAM_PERCENT: {
    double v;
    if (sl_parse_decimal (value, &v) == -1) {
      snprintf (err, err_bytes, "%s=%s: not a number", key, value);
      return -1;
    }
    if (!in_range (p, v))
      return out_of_range (p, value, err, err_bytes);
    memcpy (field, &v, sizeof v);
    return 0;
  }
  case SL_PARAM_CHOICE: {
    uint32_t index;
    if (parse_choice (p, value, &index) == -1) {
      snprintf (err, err_bytes, "%s=%s: expected one of %.*s", key, value,
                (int) choice_list_length (p), p->help);
      return -1;
    }
    memcpy (field, &index, sizeof index);
    return 0;
  }
  }
  snprintf (err, err_bytes, "%s=%s: parameter table has an unknown type", key, value);
  return -1;
}

/* A field's value in its key's unit (ms, MB/s, ...), as the table's ranges. */
static bool
value_in_unit (const struct sl_param *p, const void *config, double *out)
{
  const char *field = (const char *) config + p->offset;
  switch (p->type) {
  case SL_PARAM_COUNT: *out = *(const uint32_t *) field; return true;
  case SL_PARAM_SIZE_BYTES:
  case SL_PARAM_CAPACITY_BYTES: *out = (double) *(const uint64_t *) field; return true;
  case SL_PARAM_TIME_MS: *out = *(const uint64_t *) field / 1e6; return true;
  case SL_PARAM_TIME_US: *out = *(const uint64_t *) field / 1e3; return true;
  case SL_PARAM_RATE_MB_S: *out = *(const uint64_t *) field / 1e6; return true;
  case SL_PARAM_ON_OFF: *out = *(const bool *) field; return true;
  case SL_PARAM_PERCENT: *out = *(const double *) field; return true;
  case SL_PARAM_STRING:
  case SL_PARAM_CHOICE:
    return false;
  }
  return false;
}

int
sl_params_check_ranges (const struct sl_param *table, size_t table_len,
                        const void *config, char *err, size_t err_bytes)
{
  for (size_t i = 0; i < table_len; i++) {
    const struct sl_param *p = &table[i];
    double v;
    /* relative slack: ns fields are rounded from decimal units */
    if (value_in_unit (p, config, &v) && (v < p->min * (1 - 1e-9) || v > p->max * (1 + 1e-9))) {
      snprintf (err, err_bytes, "%s=%g: out of range %g..%g", p->key, v, p->min, p->max);
      return -1;
    }
  }
  return 0;
}

void
sl_params_dump (const struct sl_param *table, size_t table_len,
                const void *config, const char *prefix, FILE *out)
{
  for (size_t i = 0; i < table_len; i++) {
    char value[64];
    format_value (&table[i], config, false, value, sizeof value);
    fprintf (out, "%s%s=%s\n", prefix ? prefix : "", table[i].key, value);
  }
}

/* "key=<unit>", or "key=<a|b>" for a choice. */
void
sl_param_syntax (const struct sl_param *p, char *out, size_t out_bytes)
{
  if (p->type == SL_PARAM_CHOICE)
    snprintf (out, out_bytes, "%s=<%.*s>", p->key, (int) choice_list_length (p), p->help);
  else
    snprintf (out, out_bytes, "%s=%s", p->key, unit_name (p->type));
}

void
sl_params_help (const struct sl_param *table, size_t table_len,
                const void *defaults, FILE *out)
{
  size_t width = 0;
  char left[128], value[64];
  for (size_t i = 0; i < table_len; i++) {
    sl_param_syntax (&table[i], left, sizeof left);
    if (strlen (left) > width)
      width = strlen (left);
  }
  for (size_t i = 0; i < table_len; i++) {
    const struct sl_param *p = &table[i];
    sl_param_syntax (p, left, sizeof left);
    format_value (p, defaults, true, value, sizeof value);
    const char *help = p->type == SL_PARAM_CHOICE ? choice_help (p) : p->help;
    fprintf (out, "  %-*s  %s (default %s)\n", (int) width, left, help ? help : "", value);
  }
}

const char *
sl_param_help_text (const struct sl_param *p)
{
  return p->help ? choice_help (p) : "";
}

void
sl_param_value_text (const struct sl_param *p, const void *config, char *out,
                     size_t out_bytes)
{
  format_value (p, config, false, out, out_bytes);
}
