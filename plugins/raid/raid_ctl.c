/* raid_ctl.c — live control of the raid plugin over a unix socket. */
#define _GNU_SOURCE
#include "raid_ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/engine.h"
#include "core/owned_file.h"
#include "core/stats.h"
#include "core/store.h"
#include "raid/raid.h"
#include "raid/raid_command.h"
#include "raid_lun.h"

/* Learn cycles and rebuild ends happen inside the model: look this often,
 * so the plugin's view (and the event log) is never more than ~5 ms late. */
#define TICK_NS 5000000ull
#define LINE_BYTES 512u
#define REPLY_BYTES 4096u      /* status lists every member and LUN */
#define EVENTS_MAX 256u
/* Several clients at once (storlab ctl, a sweep's events, storlab top);
 * when all slots are taken, a client idle this long gives its slot up. */
#define CLIENTS_MAX 16u
#define CLIENT_IDLE_EVICT_NS 10000000000ull

/* One connected client and the line it is sending. */
struct ctl_client {
  int fd;                      /* -1: a free slot */
  uint64_t last_active_ns;
  bool discarding;             /* its line outgrew LINE_BYTES: skip to the newline */
  size_t line_used;
  char line[LINE_BYTES];
};

struct raid_ctl {
  struct sl_engine *engine;
  struct sl_store *store;
  const struct raid_lun_table *luns;
  char *socket_path;
  FILE *events;
  uint64_t events_logged;      /* controller events written to the log */
  int listen_fd;
  struct ctl_client clients[CLIENTS_MAX];
  int wake[2];                 /* stop: a byte on wake[1] */
  pthread_t thread;
  bool thread_started;
  atomic_bool write_back;
  uint64_t last_tick_ns;
  struct sl_raid_event event_buf[EVENTS_MAX];
};

bool
raid_ctl_write_back (const struct raid_ctl *ctl)
{
  return atomic_load_explicit (&ctl->write_back, memory_order_relaxed);
}

static void
log_events (struct raid_ctl *ctl)
{
  struct sl_raid_status s;
  char err[256];
  uint64_t total;
  size_t copied;
  /* retry when an event lands between counting and copying */
  for (int attempt = 0;; attempt++) {
    if (sl_raid_control_status (ctl->engine, &s, err, sizeof err) == -1)
      return;
    total = s.event_count;
    copied = sl_raid_control_events (ctl->engine, 0, ctl->event_buf, EVENTS_MAX);
    if (sl_raid_control_status (ctl->engine, &s, err, sizeof err) == -1)
      return;
    if (s.event_count == total || attempt == 3)
      break;
  }
  uint64_t first_total = total - copied;       /* event number of event_buf[0] */
  if (ctl->events_logged < first_total)
    ctl->events_logged = first_total;          /* older ones were overwritten */
  if (ctl->events == NULL) {
    ctl->events_logged = total;
    return;
  }
  uint64_t epoch_ns = sl_engine_epoch_ns (ctl->engine);
  struct timespec real;
  clock_gettime (CLOCK_REALTIME, &real);
  uint64_t real_now_ns = (uint64_t) real.tv_sec * 1000000000ull + (uint64_t) real.tv_nsec;
  uint64_t mono_now_ns = sl_clock_monotonic_ns ();
  for (; ctl->events_logged < total; ctl->events_logged++) {
    const struct sl_raid_event *ev = &ctl->event_buf[ctl->events_logged - first_total];
    uint64_t mono_ns = epoch_ns + ev->time_ns;
    fprintf (ctl->events, "{\"time_ns\": %" PRIu64 ", \"monotonic_ns\": %" PRIu64
             ", \"realtime_ns\": %" PRIu64 ", \"event\": \"",
             ev->time_ns, mono_ns, real_now_ns - (mono_now_ns - mono_ns));
    for (const char *p = ev->what; *p; p++) {
      if (*p == '"' || *p == '\\')
        fputc ('\\', ctl->events);
      fputc (*p, ctl->events);
    }
    fputs ("\"}\n", ctl->events);
  }
  fflush (ctl->events);
}

static void
persist_store (void *store)
{
  sl_store_persist_all (store);
}

/* Keeps the plugin in step with the controller: whether writes are cached
 * (by the controller or the members' write caches: the store marks them
 * volatile), and once neither holds anything dirty, everything written so
 * far is on the members' media: make it durable. */
static void
tick (struct raid_ctl *ctl)
{
  struct sl_raid_status s;
  char err[256];
  ctl->last_tick_ns = sl_clock_monotonic_ns ();
  if (sl_raid_control_status (ctl->engine, &s, err, sizeof err) == -1)
    return;
  atomic_store (&ctl->write_back, s.write_back_effective || s.volatile_member_caches > 0);
  if (s.dirty_bytes == 0 && s.member_volatile_bytes == 0
      && sl_store_volatile_bytes (ctl->store) > 0)
    sl_raid_control_when_clean (ctl->engine, persist_store, ctl->store);
  log_events (ctl);
}

/* ---------------------------------------------------------- commands -- */

static void
status_reply (struct raid_ctl *ctl, char *reply, size_t reply_bytes)
{
  struct sl_raid_status s;
  char err[256];
  if (sl_raid_control_status (ctl->engine, &s, err, sizeof err) == -1) {
    snprintf (reply, reply_bytes, "error status: %s", err);
    return;
  }
  int used = snprintf (reply, reply_bytes, "ok battery=%s policy=%s write-back=%s "
                       "cache-bytes=%" PRIu64 " dirty-bytes=%" PRIu64
                       " member-volatile-bytes=%" PRIu64 " destaged-bytes=%"
                       PRIu64 " read-hits=%" PRIu64 " read-misses=%" PRIu64
                       " events=%" PRIu64 " members=",
                       sl_raid_battery_name (s.battery), sl_raid_policy_name (s.policy),
                       s.write_back_effective ? "on" : "off", s.cache_bytes, s.dirty_bytes,
                       s.member_volatile_bytes, s.destaged_bytes, s.cache_read_hits, s.cache_read_misses,
                       s.event_count);
  for (unsigned i = 0; i < s.members && used > 0 && (size_t) used < reply_bytes; i++) {
    const char *name = sl_raid_member_state_name (s.member_state[i]);
    if (s.member_state[i] == SL_RAID_MEMBER_REBUILDING && s.member_bytes)
      used += snprintf (reply + used, reply_bytes - used, "%s%s:%" PRIu64 "%%", i ? "," : "",
                        name, 100 * s.rebuild_done_bytes / s.member_bytes);
    else
      used += snprintf (reply + used, reply_bytes - used, "%s%s", i ? "," : "", name);
  }
  unsigned lun_count = ctl->luns ? ctl->luns->count : 0;
  for (unsigned i = 0; i < lun_count && used > 0 && (size_t) used < reply_bytes; i++) {
    const struct raid_lun *lun = &ctl->luns->lun[i];
    used += snprintf (reply + used, reply_bytes - used, "%s%s:%" PRIu64 "+%" PRIu64,
                      i ? "," : " luns=", lun->name, lun->offset_bytes, lun->size_bytes);
  }
}

/* One LUN's front-end figures, from its stats record. */
static void
lun_status_reply (struct raid_ctl *ctl, const char *name, char *reply, size_t reply_bytes)
{
  const struct raid_lun *lun = NULL;
  for (unsigned i = 0; ctl->luns && i < ctl->luns->count && lun == NULL; i++)
    if (strcmp (ctl->luns->lun[i].name, name) == 0)
      lun = &ctl->luns->lun[i];
  if (lun == NULL) {
    char known[RAID_LUN_MAX * (RAID_LUN_NAME_MAX + 2) + 8] = "none";
    if (ctl->luns)
      raid_lun_names (ctl->luns, known, sizeof known);
    snprintf (reply, reply_bytes, "error lun %.64s: no such LUN (known: %s)", name, known);
    return;
  }
  struct sl_device_stats *s = malloc (sizeof *s);       /* ~240 KiB */
  if (s == NULL) {
    snprintf (reply, reply_bytes, "error lun %s: out of memory", lun->name);
    return;
  }
  sl_device_stats_snapshot (lun->stats, s);
  const struct sl_op_stats *rd = &s->op[SL_OP_READ], *wr = &s->op[SL_OP_WRITE];
  snprintf (reply, reply_bytes, "ok lun=%s offset=%" PRIu64 " size=%" PRIu64
            " reads=%" PRIu64 " writes=%" PRIu64 " flushes=%" PRIu64 " read-bytes=%" PRIu64
            " write-bytes=%" PRIu64 " queue-depth=%" PRIu64 " read-latency-mean-us=%.1f"
            " write-latency-mean-us=%.1f", lun->name, lun->offset_bytes, lun->size_bytes,
            rd->count, wr->count, s->op[SL_OP_FLUSH].count, rd->bytes, wr->bytes,
            s->queue_depth, sl_histogram_mean (&rd->latency_ns) / 1000.0,
            sl_histogram_mean (&wr->latency_ns) / 1000.0);
  free (s);
}

/* "status NAME": the one command naming a LUN. */
static bool
is_lun_status (const char *line, char *name, size_t name_bytes)
{
  char copy[LINE_BYTES];
  snprintf (copy, sizeof copy, "%s", line);
  char *save = NULL;
  const char *word = strtok_r (copy, " \t\r\n", &save);
  const char *arg = word ? strtok_r (NULL, " \t\r\n", &save) : NULL;
  if (word == NULL || strcmp (word, "status") != 0 || arg == NULL
      || strtok_r (NULL, " \t\r\n", &save) != NULL)
    return false;              /* extra words: the parser's error */
  snprintf (name, name_bytes, "%s", arg);
  return true;
}

static void
power_cut_reply (struct raid_ctl *ctl, char *reply, size_t reply_bytes)
{
  struct sl_raid_power_loss loss;
  char err[256];
  if (sl_raid_control_power_cut (ctl->engine, &loss, err, sizeof err) == -1) {
    snprintf (reply, reply_bytes, "error power-cut: %s", err);
    return;
  }
  /* The store reverts exactly the logical ranges the model lost.  Without
   * the battery nothing volatile is left in the model afterwards (its
   * cache and the members' caches are empty): the rest is durable.  With
   * it, the controller's dirty data stays volatile until destaged (tick). */
  int rc = 0;
  for (size_t i = 0; i < loss.extent_count && rc == 0; i++)
    rc = sl_store_power_loss_range (ctl->store, loss.extents[i].length_bytes,
                                    loss.extents[i].offset_bytes);
  if (rc == 0 && !loss.cache_preserved)
    rc = sl_store_persist_all (ctl->store);
  uint64_t member_lost = loss.member_lost_bytes;
  if (rc == -1)
    snprintf (reply, reply_bytes, "error power-cut: data store: %s", strerror (errno));
  else if (loss.cache_preserved)
    snprintf (reply, reply_bytes, "ok power-cut: battery ok, cache contents kept; member "
              "write caches lost %" PRIu64 " bytes in %zu extents", member_lost,
              loss.extent_count);
  else
    snprintf (reply, reply_bytes, "ok power-cut: cache lost %" PRIu64 " dirty bytes; member "
              "write caches lost %" PRIu64 " more; %" PRIu64 " bytes in %zu extents reverted",
              loss.lost_bytes - member_lost, member_lost, loss.lost_bytes, loss.extent_count);
  sl_raid_power_loss_free (&loss);
}

/* Parsing and the model's commands are shared with storlab-sim
 * (raid_command.c); status and power-cut need the plugin's store. */
void
raid_ctl_command (struct raid_ctl *ctl, const char *line, char *reply, size_t reply_bytes)
{
  char lun_name[LINE_BYTES];
  if (is_lun_status (line, lun_name, sizeof lun_name)) {
    lun_status_reply (ctl, lun_name, reply, reply_bytes);
    return;
  }
  struct sl_raid_command cmd;
  if (sl_raid_command_parse (line, &cmd, reply, reply_bytes) == -1)
    return;
  switch (cmd.kind) {
  case SL_RAID_COMMAND_STATUS:
    status_reply (ctl, reply, reply_bytes);
    return;
  case SL_RAID_COMMAND_POWER_CUT:
    power_cut_reply (ctl, reply, reply_bytes);
    tick (ctl);
    return;
  default:
    if (sl_raid_command_execute (ctl->engine, &cmd, reply, reply_bytes) == 0)
      tick (ctl);              /* the new write-back state, the event logged: now */
    return;
  }
}

/* ------------------------------------------------------------ socket -- */

#define RECV_CHUNK_BYTES 4096u

static void
close_client (struct ctl_client *c)
{
  close (c->fd);
  c->fd = -1;
  c->line_used = 0;
  c->discarding = false;
}

/* Never waits for a client: one that does not read its replies is dropped
 * rather than allowed to stall the controller's tick and event log. */
static void
send_reply (struct ctl_client *c, const char *reply)
{
  char out[REPLY_BYTES + 2];
  int n = snprintf (out, sizeof out, "%s\n", reply);
  if (n < 0 || (size_t) n >= sizeof out) {
    out[sizeof out - 2] = '\n';
    n = sizeof out - 1;
  }
  if (send (c->fd, out, (size_t) n, MSG_NOSIGNAL | MSG_DONTWAIT) != n)
    close_client (c);
}

static void
answer_line (struct raid_ctl *ctl, struct ctl_client *c)
{
  char reply[REPLY_BYTES];
  if (c->discarding)
    snprintf (reply, sizeof reply, "error command line too long (at most %u bytes)",
              LINE_BYTES - 1);
  else if (memchr (c->line, '\0', c->line_used) != NULL)
    snprintf (reply, sizeof reply, "error command contains a NUL byte");
  else {
    c->line[c->line_used] = '\0';
    raid_ctl_command (ctl, c->line, reply, sizeof reply);
  }
  c->line_used = 0;
  c->discarding = false;
  send_reply (c, reply);
}

/* Splits what arrived into lines; a line too long is read to its end and
 * answered, so the client sees why (and may go on). */
static void
take_bytes (struct raid_ctl *ctl, struct ctl_client *c, const char *data, size_t n)
{
  while (n > 0 && c->fd >= 0) {
    const char *newline = memchr (data, '\n', n);
    size_t part = newline ? (size_t) (newline - data) : n;
    if (!c->discarding && c->line_used + part > LINE_BYTES - 1)
      c->discarding = true;
    if (!c->discarding) {
      memcpy (c->line + c->line_used, data, part);
      c->line_used += part;
    }
    if (newline == NULL)
      return;
    answer_line (ctl, c);
    data += part + 1;
    n -= part + 1;
  }
}

static void
read_client (struct raid_ctl *ctl, struct ctl_client *c)
{
  char chunk[RECV_CHUNK_BYTES];
  ssize_t got = recv (c->fd, chunk, sizeof chunk, MSG_DONTWAIT);
  if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
    close_client (c);
    return;
  }
  if (got > 0) {
    c->last_active_ns = sl_clock_monotonic_ns ();
    take_bytes (ctl, c, chunk, (size_t) got);
  }
}

/* A free slot, else the longest-idle client's if it has idled long enough
 * to give it up (evict: close it, saying why); NULL when every slot is busy. */
static struct ctl_client *
free_slot (struct raid_ctl *ctl, uint64_t now_ns, bool evict)
{
  struct ctl_client *idlest = NULL;
  for (unsigned i = 0; i < CLIENTS_MAX; i++) {
    struct ctl_client *c = &ctl->clients[i];
    if (c->fd < 0)
      return c;
    if (idlest == NULL || c->last_active_ns < idlest->last_active_ns)
      idlest = c;
  }
  if (now_ns - idlest->last_active_ns < CLIENT_IDLE_EVICT_NS)
    return NULL;
  if (evict) {
    send_reply (idlest, "error closed: idle while every control slot was taken");
    if (idlest->fd >= 0)
      close_client (idlest);
  }
  return idlest;
}

/* Takes waiting connections while there is a slot for them; the others
 * wait in the listen backlog until one frees (a client's command takes
 * microseconds), never refused for being many at once. */
static void
accept_clients (struct raid_ctl *ctl)
{
  for (;;) {
    uint64_t now_ns = sl_clock_monotonic_ns ();
    if (free_slot (ctl, now_ns, false) == NULL)
      return;
    int fd = accept4 (ctl->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0)
      return;                  /* EAGAIN: none left waiting */
    struct ctl_client *c = free_slot (ctl, now_ns, true);
    c->fd = fd;
    c->line_used = 0;
    c->discarding = false;
    c->last_active_ns = now_ns;
  }
}

static void *
serve (void *arg)
{
  struct raid_ctl *ctl = arg;
  for (;;) {
    /* the listen socket only while a client can be taken */
    bool room = free_slot (ctl, sl_clock_monotonic_ns (), false) != NULL;
    struct pollfd fds[2 + CLIENTS_MAX] = {
      { .fd = ctl->wake[0], .events = POLLIN },
      { .fd = room ? ctl->listen_fd : -1, .events = POLLIN },
    };
    for (unsigned i = 0; i < CLIENTS_MAX; i++)
      fds[2 + i] = (struct pollfd) { .fd = ctl->clients[i].fd, .events = POLLIN };
    int rc = poll (fds, 2 + CLIENTS_MAX, (int) (TICK_NS / 1000000));
    if (rc < 0 && errno != EINTR)
      break;
    if (fds[0].revents)
      break;
    for (unsigned i = 0; i < CLIENTS_MAX; i++)
      if (fds[2 + i].revents && ctl->clients[i].fd >= 0)
        read_client (ctl, &ctl->clients[i]);
    if (fds[1].revents & POLLIN)
      accept_clients (ctl);
    if (sl_clock_monotonic_ns () - ctl->last_tick_ns >= TICK_NS)
      tick (ctl);
  }
  for (unsigned i = 0; i < CLIENTS_MAX; i++)
    if (ctl->clients[i].fd >= 0)
      close_client (&ctl->clients[i]);
  tick (ctl);                  /* the last events into the log */
  return NULL;
}

/* Does a process accept connections on this socket?  (A stale one from a
 * run that ended refuses them.) */
static bool
socket_is_live (const struct sockaddr_un *addr)
{
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return false;
  bool live = connect (fd, (const struct sockaddr *) addr, sizeof *addr) == 0
    || errno == EAGAIN;        /* its backlog is full: alive all the same */
  close (fd);
  return live;
}

/* The unix socket address of path, or -1 with a line in err. */
static int
socket_address (const char *path, struct sockaddr_un *addr, char *err, size_t err_bytes)
{
  *addr = (struct sockaddr_un) { .sun_family = AF_UNIX };
  if (strlen (path) >= sizeof addr->sun_path) {
    snprintf (err, err_bytes, "ctl=%s: path longer than %zu bytes", path,
              sizeof addr->sun_path - 1);
    return -1;
  }
  strcpy (addr->sun_path, path);
  return 0;
}

int
raid_ctl_check_path (const char *path, char *err, size_t err_bytes)
{
  struct sockaddr_un addr;
  if (socket_address (path, &addr, err, err_bytes) == -1)
    return -1;
  struct stat st;
  if (lstat (path, &st) != 0)
    return 0;
  if (!S_ISSOCK (st.st_mode)) {
    snprintf (err, err_bytes, "ctl=%s: exists and is not a socket", path);
    return -1;
  }
  if (socket_is_live (&addr)) {
    snprintf (err, err_bytes, "ctl=%s: in use by another running device", path);
    return -1;
  }
  return 0;
}

static int
listen_on (struct raid_ctl *ctl, const char *path, char *err, size_t err_bytes)
{
  struct sockaddr_un addr;
  if (socket_address (path, &addr, err, err_bytes) == -1
      || raid_ctl_check_path (path, err, err_bytes) == -1)
    return -1;
  unlink (path);               /* a stale socket of an earlier run, if any */
  ctl->listen_fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (ctl->listen_fd < 0) {
    snprintf (err, err_bytes, "ctl=%s: socket: %s", path, strerror (errno));
    return -1;
  }
  /* Owner only from the start: no window where others could connect. */
  mode_t old_mask = umask (0177);
  int rc = bind (ctl->listen_fd, (struct sockaddr *) &addr, sizeof addr);
  umask (old_mask);
  if (rc < 0 || chmod (path, 0600) < 0 || listen (ctl->listen_fd, SOMAXCONN) < 0) {
    snprintf (err, err_bytes, "ctl=%s: %s", path, strerror (errno));
    return -1;
  }
  ctl->socket_path = strdup (path);
  return ctl->socket_path ? 0 : -1;
}

FILE *
raid_ctl_open_event_log (const char *path, char *err, size_t err_bytes)
{
  char why[160];
  int fd = sl_owned_file_open (path, O_WRONLY, true, why, sizeof why);
  if (fd < 0) {
    snprintf (err, err_bytes, "event log %s: %s", path, why);
    return NULL;
  }
  FILE *log = ftruncate (fd, 0) == 0 ? fdopen (fd, "w") : NULL;
  if (log == NULL) {
    snprintf (err, err_bytes, "event log %s: %s", path, strerror (errno));
    close (fd);
  }
  return log;
}

struct raid_ctl *
raid_ctl_start (const char *socket_path, FILE *events, struct sl_engine *engine,
                struct sl_store *store, const struct raid_lun_table *luns,
                char *err, size_t err_bytes)
{
  struct raid_ctl *ctl = calloc (1, sizeof *ctl);
  if (ctl == NULL) {
    snprintf (err, err_bytes, "ctl: out of memory");
    if (events)
      fclose (events);
    return NULL;
  }
  ctl->events = events;
  ctl->engine = engine;
  ctl->store = store;
  ctl->luns = luns;
  ctl->listen_fd = ctl->wake[0] = ctl->wake[1] = -1;
  for (unsigned i = 0; i < CLIENTS_MAX; i++)
    ctl->clients[i].fd = -1;
  if (pipe2 (ctl->wake, O_CLOEXEC) < 0) {
    snprintf (err, err_bytes, "ctl: pipe: %s", strerror (errno));
    goto fail;
  }
  if (socket_path && listen_on (ctl, socket_path, err, err_bytes) == -1)
    goto fail;
  tick (ctl);
  if (pthread_create (&ctl->thread, NULL, serve, ctl) != 0) {
    snprintf (err, err_bytes, "ctl: cannot start the control thread");
    goto fail;
  }
  ctl->thread_started = true;
  return ctl;
fail:
  raid_ctl_stop (ctl);
  return NULL;
}

void
raid_ctl_stop (struct raid_ctl *ctl)
{
  if (ctl == NULL)
    return;
  if (ctl->thread_started) {
    if (write (ctl->wake[1], "x", 1) != 1)
      pthread_cancel (ctl->thread);
    pthread_join (ctl->thread, NULL);
  }
  if (ctl->listen_fd >= 0)
    close (ctl->listen_fd);
  if (ctl->socket_path) {
    unlink (ctl->socket_path);
    free (ctl->socket_path);
  }
  for (int i = 0; i < 2; i++)
    if (ctl->wake[i] >= 0)
      close (ctl->wake[i]);
  if (ctl->events)
    fclose (ctl->events);
  free (ctl);
}
