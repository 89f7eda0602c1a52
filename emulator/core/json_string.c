/* json_string.c — see json_string.h. */
#define _POSIX_C_SOURCE 200809L
#include "json_string.h"

#include <stdint.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at p (at most avail bytes), 0 if invalid. */
static size_t
utf8_sequence_bytes (const unsigned char *p, size_t avail)
{
  unsigned char c = p[0];
  size_t len;
  unsigned char second_lo = 0x80, second_hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF)
    len = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0)
      second_lo = 0xA0;         /* overlong */
    if (c == 0xED)
      second_hi = 0x9F;         /* surrogates */
  }
  else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0)
      second_lo = 0x90;
    if (c == 0xF4)
      second_hi = 0x8F;         /* above U+10FFFF */
  }
  else
    return 0;
  if (len > avail || p[1] < second_lo || p[1] > second_hi)
    return 0;
  for (size_t i = 2; i < len; i++)
    if ((p[i] & 0xC0) != 0x80)
      return 0;
  return len;
}

void
sl_json_write_string (FILE *out, const char *field, size_t field_bytes)
{
  const unsigned char *p = (const unsigned char *) field;
  size_t len = strnlen (field, field_bytes);
  fputc ('"', out);
  for (size_t i = 0; i < len;) {
    unsigned char c = p[i];
    if (c == '"' || c == '\\') {
      fputc ('\\', out);
      fputc (c, out);
      i++;
    }
    else if (c < 0x20 || c == 0x7F) {
      fprintf (out, "\\u%04x", c);
      i++;
    }
    else if (c < 0x80) {
      fputc (c, out);
      i++;
    }
    else {
      size_t n = utf8_sequence_bytes (p + i, len - i);
      if (n == 0) {
        fputs ("\\ufffd", out);
        i++;
      }
      else {
        fwrite (p + i, 1, n, out);
        i += n;
      }
    }
  }
  fputc ('"', out);
}
