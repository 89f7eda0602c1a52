/* json_string.h — a string as JSON: quoted, escaped, and valid UTF-8
 * whatever the bytes (an invalid sequence becomes U+FFFD), so a stats
 * record from another process's mapping or a catalog text never breaks
 * the document. */
#ifndef STORLAB_JSON_STRING_H
#define STORLAB_JSON_STRING_H

#include <stddef.h>
#include <stdio.h>

/* Writes field (at most field_bytes bytes: it may lack its NUL). */
void sl_json_write_string (FILE *out, const char *field, size_t field_bytes);

#endif
