/* fabric.h — what joins a cluster's storage: the network links between
 * nodes, and the targets that use them and the hosts' CPUs (host_cpu.h): a
 * node's front end (its VMs' I/O through the host) and a hop to a target
 * on another node (NVMe/TCP, NFS).  Link presets with their sources in
 * fabric.c; every figure can be overridden per link. */
#ifndef STORLAB_CLUSTER_FABRIC_H
#define STORLAB_CLUSTER_FABRIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host_cpu.h"
#include "layer.h"

struct cluster;

struct cl_link_config {
  uint64_t latency_ns;                 /* one way, a message's propagation + stacks */
  uint64_t bytes_per_s;                /* each direction */
};

#define CL_LINK_PRESET_DEFAULT "10gbe"

/* Fills config from a named preset; -1 (err names the known ones) if none. */
int cl_link_preset (const char *name, struct cl_link_config *config, char *err, size_t err_bytes);
/* The i-th link preset's name; NULL past the end. */
const char *cl_link_preset_at (size_t i);
/* "1gbe, 10gbe, 25gbe, tcg-udp" */
const char *cl_link_preset_names (void);

/* One direction of a link: messages leave in order at its bandwidth. */
struct cl_link_dir {
  uint64_t free_ns;                    /* when the wire is free again */
  uint64_t busy_ns;
  uint64_t bytes;
  uint64_t messages;
};

struct cl_link {
  char name[72];                       /* "node1-node2" */
  unsigned a, b;                       /* node indexes */
  struct cl_link_config config;
  struct cl_link_dir dir[2];           /* [0]: a -> b, [1]: b -> a */
};

/* Sends bytes from now on; returns when the last byte has arrived. */
uint64_t cl_link_send (struct cl_link_dir *dir, const struct cl_link_config *config,
                       uint64_t now_ns, uint64_t bytes);

/* A node's front end: each I/O of its VMs costs the host's CPU (on a
 * volume's block device, or a file of a share: file), then goes to below. */
struct cl_target *cl_front_new (struct cluster *c, const char *node, const char *name,
                                struct cl_cpu *cpu, struct cl_target *below, bool file,
                                char *err, size_t err_bytes);

/* below on another node, reached over a link: the request costs the
 * sending host's CPU, (with a write's data) crosses `out`, costs the
 * serving host's CPU, runs on below; the reply (with a read's data)
 * crosses `back`.  kind: "nvme-tcp", "nfs".  link == NULL: on the same
 * node (the server's CPU only, no wire). */
struct cl_target *cl_remote_new (struct cluster *c, const char *node, const char *name,
                                 const char *kind, struct cl_link *link, bool a_to_b,
                                 struct cl_cpu *client_cpu, struct cl_cpu *server_cpu,
                                 struct cl_target *below, char *err, size_t err_bytes);

#endif
