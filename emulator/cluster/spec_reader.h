/* spec_reader.h — what the three files reading a cluster spec share
 * (cluster_spec.c: the format, nodes, devices, links, exports and the
 * reading itself; spec_local.c: a node's local volume; spec_lvs.c: the
 * LVs on them, workload volumes and replicas): the reader's state, its
 * helpers, LVM's figures. */
#ifndef STORLAB_CLUSTER_SPEC_READER_H
#define STORLAB_CLUSTER_SPEC_READER_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster_internal.h"

/* LVM: the first physical extent starts 1 MiB in; extents of 4 MiB (the
 * lab's vgcreate -s 4m). */
#define LVM_PE_START_BYTES (1u * 1024u * 1024u)
#define LVM_EXTENT_BYTES (4u * 1024u * 1024u)
#define DEFAULT_READ_CACHE_PERCENT 70
#define DEFAULT_STRIPE_BYTES (64u * 1024u)
/* volume-group.sh leaves out the first MiB of each capacity device's region */
#define REGION_SKIP_BYTES (1u * 1024u * 1024u)

struct spec {
  struct cluster *c;
  const char *name;
  unsigned line;
  char *err;
  size_t err_bytes;
  bool failed;
  unsigned stage;                      /* statements come in order */
  uint64_t budget_bytes;               /* 0: no limit */
  uint64_t heap_start_bytes;
};

/* Records the first error (FILE:LINE: and fmt's text); -1. */
int spec_fail (struct spec *s, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));
/* KEY=VALUE's value as a size or a number in lo..hi; -1 (recorded) if not. */
int spec_size (struct spec *s, const char *key, const char *value, uint64_t *out);
int spec_number (struct spec *s, const char *key, const char *value, double lo, double hi,
                 double *out);
/* KEY=VALUE word: splits it in place; false if the word has no '='. */
bool spec_split_pair (char *word, char **key, char **value);
/* A node's index, a node's device; -1 / NULL (recorded) if there is none. */
int spec_node_of (struct spec *s, const char *name);
struct cl_target *spec_device_of (struct spec *s, unsigned node, const char *name);
/* Statements come in stage order; -1 (recorded) for one after a later stage. */
int spec_check_stage (struct spec *s, const char *what, unsigned stage, const char *before);

/* The statements of spec_local.c and spec_lvs.c: w[0..n) its words. */
int spec_local (struct spec *s, char **w, unsigned n);
int spec_volume (struct spec *s, char **w, unsigned n);
int spec_replica (struct spec *s, char **w, unsigned n);

#endif
