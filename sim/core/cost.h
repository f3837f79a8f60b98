/*
 * cost.h: how long each scheduled op takes on the GPU and on the host.
 *
 * Compute is the sum over each leaf's kernels (kernel.h), each timed on the
 * GPU by kernel_cost.h: GEMMs by shape, attention by the published kernel
 * table, memory-bound kernels by HBM bandwidth.  Collectives follow NCCL's
 * algorithm, protocol and channel choice (coll.h), copies the PCIe or HBM
 * bandwidth.  The host's time to issue each op is its kernels' launch and
 * autograd costs plus FSDP's hooks.  All times are integer nanoseconds.
 */
#ifndef FSDPSIM_COST_H
#define FSDPSIM_COST_H

#include <stdint.h>

#include "coll.h"
#include "kernel.h"
#include "sched.h"
#include "topo.h"

struct cost_table {
    int64_t *gpu_ns;           /* per op: GPU (or host, for HOST ops) time */
    int64_t *issue_ns;         /* per op: host time to issue it */
    int64_t *launch_ns;        /* per op: host time before its first kernel
                                  can start */
    /* The collectives' NCCL results, one per collective op in op order
     * (a tenth of the ops: a result per op would be most of the table's
     * bytes); coll_of[i] is op i's entry, -1 for an op that is none.
     * cost_coll reads them. */
    struct coll_result *coll;
    int *coll_of;
    int n_coll;
    /* Device memory NCCL's communicators take for these collectives,
     * outside PyTorch's caching allocator (cudaMalloc and cuMem maps of
     * NCCL's own, which torch.cuda.memory_reserved does not see), each
     * communicator once (cost.c cost_comm_buffers): the NVLS multicast
     * buffers of every communicator that runs an NVLS algorithm
     * (coll_nvls_buffer_bytes) and the LL, LL128 and Simple buffers of
     * the connections the algorithms it runs need
     * (coll_conn_buffer_bytes); nccl_buffer_bytes is the two together. */
    double nccl_buffer_bytes;
    double nccl_nvls_bytes;
    double nccl_conn_bytes;
    int nvls_communicators;    /* how many communicators that is (FSDP2:
                                  each fully_shard call's post-forward
                                  mesh is one of its own) */
};

void cost_table_build(const struct sched *s, const struct topo *t,
                      struct cost_table *ct);
/* The same table with no op taking the times of an earlier one timed
 * alike (cost_table_build's memo): what the memo must give (tests). */
void cost_table_build_each(const struct sched *s, const struct topo *t,
                           struct cost_table *ct);
/* A table of S's ops, zeroed, with an entry for each collective op:
 * what cost_table_build fills, and a measured run's times (real/). */
void cost_table_alloc(struct cost_table *ct, const struct sched *s);
void cost_table_free(struct cost_table *ct);

/* Op ID's collective result, NULL when the op is not a collective. */
static inline struct coll_result *
cost_coll(const struct cost_table *ct, int id)
{
    int k = ct->coll_of[id];
    return k >= 0 ? &ct->coll[k] : NULL;
}

/* Seconds to integer ns, saturating at 4.6e18 ns (the engine rejects a
 * run whose total is out of range before using such values). */
int64_t cost_seconds_to_ns(double seconds);
/* The NCCL collective of a collective op kind. */
enum coll_op cost_coll_op(enum sched_op_kind kind);

/* The communicator geometry of a process group. */
void cost_group(const struct sched *s, enum sched_pg pg,
                struct coll_group *g);
/* The communicator geometry of a collective op: its process group's, but
 * an FSDP2 post-forward all-gather's is its unit's own N-rank mesh. */
void cost_op_group(const struct sched *s, const struct sched_op *op,
                   struct coll_group *g);

/* The kernel-list context of a schedule's run (kernel.h). */
void cost_kernel_ctx(const struct sched *s, struct kernel_ctx *ctx);
/* GPU seconds of leaf M's kernels in phase PH, and their launches. */
double cost_leaf_time_s(const struct topo *t, const struct module *m,
                        const struct kernel_ctx *ctx, enum dtype d,
                        enum kernel_phase ph, int *launches);
/* GPU seconds and launches of leaf M's selective-op recompute (§10.1):
 * its forward kernels that the policy's saved outputs do not spare,
 * matrix products included only when MM_RECOMPUTED. */
double cost_leaf_recompute_selective_s(const struct topo *t,
                                       const struct module *m,
                                       const struct kernel_ctx *ctx,
                                       enum dtype d, bool mm_recomputed,
                                       int *launches);

#endif
