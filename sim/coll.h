/*
 * coll.h: collective communication time, following NCCL's own tuning
 * model for ring collectives.
 *
 * NCCL estimates time = latency + nBytes / algorithm bandwidth for each
 * (algorithm, protocol) and launches the cheapest (src/graph/tuning.cc
 * ncclTopoTuneModel / ncclTopoGetAlgoTime; fsdp-semantics §14.3).  This
 * module implements the Ring algorithm with its three protocols (LL, LL128,
 * Simple) and NCCL's latency constants, over the bottleneck link of the
 * group: NVLink/NVSwitch or PCIe inside a node, the node's NICs across
 * nodes.
 */
#ifndef FSDPSIM_COLL_H
#define FSDPSIM_COLL_H

#include "topo.h"

enum coll_op { COLL_ALLGATHER, COLL_REDUCESCATTER, COLL_ALLREDUCE };
enum nccl_proto { PROTO_LL, PROTO_LL128, PROTO_SIMPLE, PROTO_COUNT };

/* Where the ranks of one communicator sit. */
struct coll_group {
    int ranks;
    int nodes;              /* nodes the group spans */
    int ranks_per_node;
};

struct coll_result {
    double time_s;
    enum nccl_proto proto;  /* the protocol NCCL would pick */
    double latency_s;       /* its latency term */
    double bus_Bps;         /* its bus bandwidth (nccl-tests busbw) */
};

/* Time of one collective moving nbytes in NCCL's convention (for
 * all-gather and reduce-scatter the whole gathered buffer, ranks x per-rank
 * count; for all-reduce the buffer). ranks == 1 costs nothing. */
void coll_estimate(const struct topo *t, enum coll_op op,
                   const struct coll_group *g, double nbytes,
                   struct coll_result *r);

const char *coll_proto_name(enum nccl_proto p);

#endif
