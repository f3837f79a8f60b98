/*
 * cost.h: how long each scheduled op takes on the GPU and on the host.
 *
 * Compute follows a roofline per leaf layer: FLOPs against the dtype's peak
 * times a size-dependent GEMM efficiency, or bytes against HBM bandwidth,
 * whichever is slower.  Collectives use NCCL's ring model (coll.h), copies
 * the PCIe or HBM bandwidth.  All times are integer nanoseconds.
 */
#ifndef FSDPSIM_COST_H
#define FSDPSIM_COST_H

#include <stdint.h>

#include "coll.h"
#include "sched.h"
#include "topo.h"

struct cost_table {
    int64_t *gpu_ns;           /* per op: GPU (or host, for HOST ops) time */
    int64_t *issue_ns;         /* per op: host time to issue it */
    int64_t *launch_ns;        /* per op: host time before its first kernel
                                  can start */
    struct coll_result *coll;  /* per op: collectives only */
};

void cost_table_build(const struct sched *s, const struct topo *t,
                      struct cost_table *ct);
void cost_table_free(struct cost_table *ct);

/* Seconds to integer ns, saturating at 4.6e18 ns (the engine rejects a
 * run whose total is out of range before using such values). */
int64_t cost_seconds_to_ns(double seconds);
/* The NCCL collective of a collective op kind. */
enum coll_op cost_coll_op(enum sched_op_kind kind);

/* The communicator geometry of a process group. */
void cost_group(const struct sched *s, enum sched_pg pg,
                struct coll_group *g);

/* Efficiency of a GEMM of shape (m x k) by (k x n) relative to peak. */
double cost_gemm_efficiency(const struct topo *t, int64_t m, int64_t n,
                            int64_t k);

#endif
