/* owned_file.c — see owned_file.h. */
#define _GNU_SOURCE
#include "owned_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* A name can vanish between the exclusive create failing and the open
 * (another process unlinks it): try again, a few times. */
#define OPEN_ATTEMPTS 4

static int
open_no_follow (const char *path, int access, char *why, size_t why_bytes)
{
  /* O_NONBLOCK: a FIFO planted at the path must not hang the open */
  int flags = access | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
  for (int attempt = 0; attempt < OPEN_ATTEMPTS; attempt++) {
    /* O_EXCL with O_CREAT never follows a link, even a dangling one */
    int fd = open (path, flags | O_CREAT | O_EXCL, 0644);
    if (fd >= 0)
      return fd;
    if (errno != EEXIST) {
      snprintf (why, why_bytes, "cannot create: %s", strerror (errno));
      return -1;
    }
    fd = open (path, flags);
    if (fd >= 0)
      return fd;
    if (errno == ELOOP) {
      snprintf (why, why_bytes, "is a symbolic link; refusing to follow it");
      errno = ELOOP;
      return -1;
    }
    if (errno != ENOENT) {
      snprintf (why, why_bytes, "cannot open: %s", strerror (errno));
      return -1;
    }
  }
  snprintf (why, why_bytes, "cannot open: it keeps vanishing and reappearing");
  errno = EAGAIN;
  return -1;
}

static int
check_plain_own_file (int fd, char *why, size_t why_bytes)
{
  struct stat st;
  if (fstat (fd, &st) != 0) {
    snprintf (why, why_bytes, "cannot stat: %s", strerror (errno));
    return -1;
  }
  if (!S_ISREG (st.st_mode)) {
    snprintf (why, why_bytes, "is not a regular file");
    errno = EINVAL;
    return -1;
  }
  if (st.st_uid != geteuid ()) {
    snprintf (why, why_bytes, "belongs to uid %u, not to this process's uid %u; refusing"
              " to use it", (unsigned) st.st_uid, (unsigned) geteuid ());
    errno = EPERM;
    return -1;
  }
  if (st.st_nlink > 1) {
    snprintf (why, why_bytes, "has %lu hard links (another name reaches the same file);"
              " refusing to use it", (unsigned long) st.st_nlink);
    errno = EMLINK;
    return -1;
  }
  return 0;
}

int
sl_owned_file_open (const char *path, int access, bool lock, char *why, size_t why_bytes)
{
  int fd = open_no_follow (path, access, why, why_bytes);
  if (fd < 0)
    return -1;
  int saved;
  if (check_plain_own_file (fd, why, why_bytes) == -1)
    goto fail;
  int flags = fcntl (fd, F_GETFL);
  if (flags == -1 || fcntl (fd, F_SETFL, flags & ~O_NONBLOCK) == -1) {
    snprintf (why, why_bytes, "cannot set blocking mode: %s", strerror (errno));
    goto fail;
  }
  if (lock && flock (fd, LOCK_EX | LOCK_NB) == -1) {
    if (errno == EWOULDBLOCK)
      snprintf (why, why_bytes, "is in use by another running device");
    else
      snprintf (why, why_bytes, "cannot lock: %s", strerror (errno));
    goto fail;
  }
  return fd;
fail:
  saved = errno;
  close (fd);
  errno = saved;
  return -1;
}
