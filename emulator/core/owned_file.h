/* owned_file.h — opening the files a device writes (its stats file, its
 * event log, its data file) safely when the device runs as root.
 *
 * The paths come from a command line or a topology and may sit in a
 * directory others can write to (/tmp): a symbolic link or a hard link
 * planted there would make root truncate, overwrite or serve someone
 * else's file.  And two devices given the same path would corrupt each
 * other (a stats file truncated under the other's mapping is SIGBUS on its
 * next write; a data file written by two devices is garbage).
 */
#ifndef STORLAB_OWNED_FILE_H
#define STORLAB_OWNED_FILE_H

#include <stdbool.h>
#include <stddef.h>

/* Opens path with access (O_RDWR or O_WRONLY), creating it (mode 0644) when
 * it does not exist.  Never follows a symbolic link in its last component;
 * refuses anything but a regular file of this process's effective user with
 * one name (one hard link).  With lock, takes an exclusive lock for the
 * life of the descriptor (and its copies across fork) and refuses a file
 * another live device holds.  Returns the descriptor (close-on-exec), or
 * -1 with the reason in why (no path: the caller names the key and path)
 * and errno set. */
int sl_owned_file_open (const char *path, int access, bool lock,
                        char *why, size_t why_bytes);

#endif
