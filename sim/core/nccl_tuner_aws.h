/*
 * nccl_tuner_aws.h: the algorithm and protocol aws-ofi-nccl's tuner picks
 * on the EC2 instance types it knows, in place of NCCL's own choice.
 *
 * aws-ofi-nccl ships a tuner plugin beside its network plugin; NCCL loads
 * it from the same library (NCCL 2.19 and newer).  On p5, p5e and p5en
 * (each table its own) it looks the collective up in a table of
 * regions of the (message bytes, ranks) plane, in log2 of both, and
 * forces the first region's algorithm and protocol that contains the
 * point and that NCCL can run (src/tuner/nccl_ofi_regions.cpp,
 * region_get_coll_info_internal_v3: that cell of NCCL's cost table is set
 * to 0).  Where no region holds the point, or the communicator spans two
 * nodes or fewer ("the regions are not well defined"), NCCL's own choice
 * stands.  doc/fsdp-semantics.md §14.5.
 */
#ifndef FSDPSIM_NCCL_TUNER_AWS_H
#define FSDPSIM_NCCL_TUNER_AWS_H

#include "nccl_env.h"

#include <stdbool.h>

/* Which tuner the network plugin brings ([inter] plugin_tuner). */
enum net_tuner {
    NET_TUNER_NCCL,      /* none: NCCL's own tuning model */
    NET_TUNER_AWS_P5,    /* aws-ofi-nccl on p5.48xlarge / p5e.48xlarge */
    NET_TUNER_AWS_P5EN,  /* aws-ofi-nccl on p5en.48xlarge */
    NET_TUNER_COUNT
};

/* May the tuner force (ALGO, PROTO)?  NCCL's cost table marks what it
 * cannot run (or what NCCL_ALGO / NCCL_PROTO removed) as ignored, and the
 * tuner then tries its next region. */
typedef bool (*tuner_runnable_fn)(void *ctx, int algo, int proto);

/* The tuner's pick for OP over NBYTES (NCCL's nBytes: the whole buffer)
 * on RANKS ranks in NODES nodes: 1 with *algo and *proto set, 0 where
 * NCCL's own choice stands. */
int aws_tuner_pick(enum net_tuner tuner, enum coll_op op, double nbytes,
                   int ranks, int nodes, tuner_runnable_fn runnable,
                   void *ctx, int *algo, int *proto);

/* The chunk the tuner sets for (ALGO, PROTO) (NCCL asks its getChunkSize
 * for every collective, src/enqueue.cc calcCollChunking, and clamps it to
 * the buffer's step): 1 with *chunk in bytes, 0 where NCCL's stands.  On
 * p5en, Tree/LL128 all-reduces of one GPU a node. */
int aws_tuner_chunk_bytes(enum net_tuner tuner, enum coll_op op,
                          double nbytes, int ranks, int nodes, int algo,
                          int proto, double *chunk);

#endif
