/*
 * coll.h: collective communication time, following NCCL's own tuning
 * model.
 *
 * NCCL estimates, for every (algorithm, protocol) it may use, time =
 * latency + nBytes / algorithm bandwidth, and launches the cheapest
 * (src/graph/tuning.cc ncclTopoTuneModel and ncclTopoGetAlgoTime,
 * src/enqueue.cc; doc/fsdp-semantics.md §14.3).  This module does the same
 * for Ring, Tree (all-reduce), NVLS (NVSwitch multicast, Hopper and newer),
 * NVLS Tree and PAT (one GPU per node), with NCCL's latency constants and
 * protocol factors, over the physical bottleneck of the group: NVLink or
 * PCIe inside a node, the node's NICs across nodes.  CollNet (Direct and
 * Chain) is costed only where the topology declares in-network reduction
 * (topo.h's sharp) on NVSwitch nodes, as NCCL needs a CollNet plugin for
 * it; no built-in topology declares it, so there it is never chosen.
 */
#ifndef FSDPSIM_COLL_H
#define FSDPSIM_COLL_H

#include "nccl_env.h"
#include "topo.h"

/* The reduction a collective performs: FSDP1 sums; FSDP2 averages (NCCL
 * PreMulSum), which rules out NVLS and PAT for reduce-scatter. */
enum coll_redop { REDOP_SUM, REDOP_AVG };

/* Where the ranks of one communicator sit. */
struct coll_group {
    int ranks;
    int nodes;              /* nodes the group spans */
    int ranks_per_node;
};

struct coll_result {
    double time_s;
    enum nccl_algo algo;    /* what NCCL would pick */
    enum nccl_proto proto;
    int channels;
    int comm_channels;      /* the communicator's channels (comm->nChannels,
                               before a small collective drops some):
                               what Ring, Tree and PAT connect */
    double latency_s;       /* its latency term */
    double alg_Bps;         /* nBytes / (time - latency) */
    double bus_Bps;         /* nccl-tests busbw for the same time */
    /* NCCL's own estimate for its choice (tuning.cc: latency + nBytes /
     * bandwidth), which decides the algorithm and protocol; time_s is
     * the data path's instead (below). */
    double tuning_s;
    /* The data path (coll.c coll_path): time_s = launch_s + fill_s +
     * bw_s + steplat_s, uncalibrated. */
    double launch_s;        /* kernel launch and NCCL's fixed setup */
    double fill_s;          /* the first chunk crossing every hop */
    double bw_s;            /* the bytes at the pipe's bandwidth */
    double steplat_s;       /* per-step synchronisation of later chunks */
    int nthreads;           /* threads per channel (topoGetAlgoInfo; a
                               tree kernel 640 from 2.22) */
    int hops;               /* sequential hops of one chunk */
    int loops;              /* chunks each hop carries per channel */
    int syncs;              /* flag waits per chunk (Simple: 2 slices) */
    double chunk_bytes;     /* data bytes per chunk and channel */
    double hop_lat_s;       /* per-step latency of the slowest hop (Ring:
                               each slice's sync at its rank) */
    int net_hops;           /* Ring: network links on the critical path */
    double net_lat_s;       /* Ring: latency of one network hop */
    double chan_Bps;        /* data rate of one channel's bottleneck hop */
    double buffsize;        /* NCCL_BUFFSIZE in force (Simple steps are an
                               eighth of it) */
    bool buffsize_from_plugin;  /* the network plugin's (topology) */
    bool simple_from_plugin;    /* Simple only: the plugin set NCCL_PROTO */
    bool plugin_tuned;      /* algo and proto are the network plugin's
                               tuner's (topology plugin_tuner), not
                               NCCL's own choice */
};

/* Time of one collective moving nbytes in NCCL's convention (for
 * all-gather and reduce-scatter the whole gathered buffer, ranks x per-rank
 * count; for all-reduce the buffer).  ranks == 1 costs nothing.  Returns
 * 0, or -1 with *cause (caller frees) when NCCL would refuse the settings
 * (no algorithm or protocol left). */
int coll_estimate(const struct topo *t, const struct nccl_config *nc,
                  enum coll_op op, enum coll_redop redop,
                  const struct coll_group *g, double nbytes,
                  struct coll_result *r, char **cause);

/* Device memory NCCL takes on each GPU for NVLS, the first time a
 * communicator of RANKS_PER_NODE GPUs a node runs an NVLS algorithm
 * (src/group.cc connects it lazily; src/transport/nvls.cc
 * ncclNvlsBufferSetup): per head (one per local rank) nvlsChannels (16 on
 * Hopper) x 2 (reduce and broadcast) x NCCL_STEPS (8) x
 * NCCL_NVLS_CHUNKSIZE (128 KiB, or the network plugin's; before 2.21 each
 * buffer was NCCL_BUFFSIZE), rounded up to the 2 MiB multicast
 * granularity (nvlsAllocateMem, NVLS_MEM_ALIGN_SIZE), plus the credits
 * (16 x 2 x 64 B a head, one more 2 MiB granule).  0 where NVLS is not
 * available (not Hopper+NVSwitch, NCCL_NVLS_ENABLE=0, one GPU a node). */
double coll_nvls_buffer_bytes(const struct topo *t,
                              const struct nccl_config *nc,
                              int ranks_per_node);

/* Device memory NCCL's transports take on each GPU (the mean over the
 * group's GPUs) for the connections of one communicator of G with
 * CHANNELS channels (coll_result.comm_channels) once it has connected
 * the algorithms in ALGOS (bits 1 << enum nccl_algo): Ring, Tree and PAT
 * on every channel, NVLS Tree's network trees on the NVLS channels; each
 * connection's LL, LL128 and Simple buffers as its transport places them
 * (src/transport/p2p.cc, net.cc; coll.c says which function does what).
 * NVLS's own buffers are coll_nvls_buffer_bytes'. */
double coll_conn_buffer_bytes(const struct topo *t,
                              const struct nccl_config *nc,
                              const struct coll_group *g, int channels,
                              unsigned algos);

/* nccl-tests' bus bandwidth factor: (n-1)/n for all-gather and
 * reduce-scatter, 2(n-1)/n for all-reduce (doc/PERFORMANCE.md). */
double coll_busbw_factor(enum coll_op op, int ranks);

#endif
