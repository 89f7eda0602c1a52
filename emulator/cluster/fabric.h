/* fabric.h — what joins a cluster's storage: each host's CPU, the network
 * links between nodes, and the targets that use them: a node's front end
 * (its VMs' I/O through the host) and a hop to a target on another node
 * (NVMe/TCP, NFS).  Figures from presets, each with its source in
 * fabric.c; every one can be overridden per node or link. */
#ifndef STORLAB_CLUSTER_FABRIC_H
#define STORLAB_CLUSTER_FABRIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layer.h"

struct cluster;

/* A host's CPU as the storage path sees it: cores that each serve one I/O's
 * processing at a time, first come first served.  A node's own kernel pays
 * per front-end I/O, per I/O it sends a device, per request it sends a
 * peer and per request it serves; a core that was idle first pays its
 * wake-up.  Where the node is a guest, the hypervisor's threads beside its
 * vCPUs (QEMU's I/O thread, the device's server, the network backend) pay
 * per device I/O and per network message, on the shared host's cores
 * (the pool) when there is one. */
struct cl_host_config {
  uint32_t cores;
  uint64_t per_io_ns;                  /* a VM's I/O: syscall, file system, block layer */
  uint64_t per_device_io_ns;           /* each I/O it sends one of its devices */
  uint64_t per_hop_io_ns;              /* each NVMe/TCP or NFS request it sends a peer */
  uint64_t per_remote_io_ns;           /* serving a peer's NVMe/TCP or NFS request */
  uint64_t idle_wake_ns;               /* an idle core's interrupt and wake-up */
  uint64_t hypervisor_per_device_io_ns;
  uint64_t hypervisor_per_message_ns;
};

struct cl_link_config {
  uint64_t latency_ns;                 /* one way, a message's propagation + stacks */
  uint64_t bytes_per_s;                /* each direction */
};

#define CL_HOST_PRESET_DEFAULT "bare-metal"
#define CL_LINK_PRESET_DEFAULT "10gbe"

/* Fills config from a named preset; -1 (err names the known ones) if none. */
int cl_host_preset (const char *name, struct cl_host_config *config, char *err, size_t err_bytes);
int cl_link_preset (const char *name, struct cl_link_config *config, char *err, size_t err_bytes);
/* The i-th host preset's name and the link preset its hosts have (tcg's
 * guests: the lab's udp links), the i-th link preset's; NULL past the end. */
const char *cl_host_preset_at (size_t i, const char **link);
const char *cl_link_preset_at (size_t i);
/* "bare-metal, tcg" and "1gbe, 10gbe, 25gbe, tcg-udp" */
const char *cl_host_preset_names (void);
const char *cl_link_preset_names (void);

struct cl_cpu {
  struct cl_host_config config;
  uint64_t *core_free_ns;              /* per core: when it is free again */
  uint64_t busy_ns;                    /* summed over cores */
  uint64_t ios;
  /* The physical cores a node's own run on, shared with other nodes (the
   * lab's guests on one host), or NULL: its cores are its own. */
  struct cl_cpu *pool;
};

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

int cl_cpu_init (struct cl_cpu *cpu, const struct cl_host_config *config);
void cl_cpu_free (struct cl_cpu *cpu);
/* Takes the first free core for cost_ns from now on (and, with a pool, the
 * first free core of the pool at the same time), plus the core's wake-up
 * if it was idle; returns when done. */
uint64_t cl_cpu_run (struct cl_cpu *cpu, uint64_t now_ns, uint64_t cost_ns);
/* The hypervisor's work for a node (cost_ns from now on): on the first
 * free core of the pool, or beside the node's cores without one. */
uint64_t cl_hypervisor_run (struct cl_cpu *cpu, uint64_t now_ns, uint64_t cost_ns);

/* Sends bytes from now on; returns when the last byte has arrived. */
uint64_t cl_link_send (struct cl_link_dir *dir, const struct cl_link_config *config,
                       uint64_t now_ns, uint64_t bytes);

/* A node's front end: each I/O of its VMs costs per_io_ns of the host's
 * CPU, then goes to below. */
struct cl_target *cl_front_new (struct cluster *c, const char *node, const char *name,
                                struct cl_cpu *cpu, struct cl_target *below,
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
