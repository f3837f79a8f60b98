/*
 * metrics.h: the numbers a user reads off one simulated step.
 *
 * The reported step is the last simulated one (the first warms up the
 * rate limiter's queue, the optimizer state and forward_prefetch's
 * recorded order).  It spans from the end of the previous optimizer step
 * to the end of its own.  Exposed communication is the time inside the
 * step when some collective or host copy runs and no compute does: that
 * is what the step would lose if communication were free.
 */
#ifndef FSDPSIM_METRICS_H
#define FSDPSIM_METRICS_H

#include <stdint.h>

#include "engine.h"
#include "mem.h"
#include "sched.h"
#include "topo.h"

struct metrics {
    int step;                   /* the iteration reported */
    int64_t step_start_ns, step_end_ns;
    double step_time_s;
    double tokens_per_s;        /* whole cluster */
    double tokens_per_s_per_gpu;
    double model_tflops_per_gpu;
    double mfu;                 /* model FLOPs (causal and window savings
                                   counted, backward 2x forward, no
                                   recomputation) over step time and the
                                   param dtype's dense peak */
    double mfu_palm;            /* the same by PaLM's 6N + 12 L d S */
    double model_flops;         /* per GPU per step */
    double hardware_flops;      /* executed per GPU per step: recompute,
                                   2.5x flash backward, causal half */
    double hardware_tflops_per_gpu;
    double hfu;                 /* hardware_flops over time and peak */
    double host_busy_s;         /* host time issuing the step's ops */
    int host_bound;             /* the GPU waited on the host */
    double compute_s;           /* busy time of forward/backward/optimizer */
    double allgather_s, reducescatter_s, allreduce_s, copy_s;
    double comm_s;              /* union of communication intervals */
    double exposed_comm_s;
    double overlap_ratio;       /* hidden / total communication */
    double host_wait_s;         /* host blocked (limiter, synchronize) */
    struct mem_stats mem;       /* all simulated steps */
    /* The caching allocator's retries (mem.h) of the step's
     * allocations: how many, how many synchronized the device, and the
     * host time they took (waiting for the GPU included). */
    int step_retries, step_syncs;
    double alloc_stall_s;
    double device_mem_bytes;
    int fits;
    double margin_bytes;        /* device memory minus peak reserved;
                                   after an OOM minus its shortfall */
    int n_units;
    int n_allgathers, n_reducescatters, n_allreduces; /* in the step */
};

/* One op's busy interval for metrics_overlap(): collectives and host copies
 * are communication, forward/backward/recompute/optimizer compute. */
struct metrics_busy {
    int64_t start_ns, end_ns;   /* ns */
    int is_comm, is_comp;       /* 0 or 1 */
};

/* Communication time (union of the comm intervals) and its exposed part
 * (no compute running), in s.  Empty and zero-length intervals count for
 * nothing.  The intervals are not modified. */
void metrics_overlap(const struct metrics_busy *b, int n, double *comm_s,
                     double *exposed_s);

void metrics_compute(const struct sched *s, const struct topo *t,
                     const struct engine_result *r, struct metrics *m);

/* A run R of fewer micro-batches than the one wanted, whose reported
 * step's ops B1 .. B2-1 (hosted from T1 to T2; every op before LO
 * finished by T1) are one period of the repeated micro-batches
 * (engine_fold.c proved the state repeats): the wanted run has PERIODS
 * more copies of it in that step, which starts BEFORE_NS later (the
 * earlier steps' periods; steady.c).  Its allocator figures over all
 * steps are MEM; each period retried as PER_PERIOD says (retries, syncs,
 * stall_ns). */
struct metrics_steady {
    int b1, b2, lo;
    int64_t t1, t2;
    int64_t periods;
    int64_t before_ns;
    struct mem_stats mem;
    struct mem_stats per_period;
};

/* metrics_compute for the run X describes (NULL: R itself). */
void metrics_compute_steady(const struct sched *s, const struct topo *t,
                            const struct engine_result *r,
                            const struct metrics_steady *x,
                            struct metrics *m);

/* What the reported step's ops add up to, in whole units: integer sums
 * are the same in any order, so a step whose repeated micro-batches are
 * counted as multiples of one (metrics_steady) gets the very figures
 * adding them one by one gives. */
struct metrics_sums {
    int64_t compute_ns, allgather_ns, reducescatter_ns, allreduce_ns;
    int64_t copy_ns, host_wait_ns, host_busy_ns;
    __extension__ unsigned __int128 hardware_flops;  /* whole FLOPs */
    int n_allgathers, n_reducescatters, n_allreduces;
    int64_t comm_ns, exposed_ns;
};

/* metrics_compute_steady in two halves: what it needs of the run (the
 * step's sums, one period's where X is given (its window), the allocator
 * figures and the step's retries), which does not depend on how many
 * periods are added, and the metrics from that (S: only its header
 * fields, world, dtypes and per-step totals, are read). */
struct metrics_basis {
    int step, n_units;
    int64_t step_start_ns, step_end_ns;
    struct metrics_sums sum, per;
    struct mem_stats mem;
    int step_retries, step_syncs;
    int64_t stall_ns;
};
void metrics_basis(const struct sched *s, const struct engine_result *r,
                   const struct metrics_steady *x, struct metrics_basis *b);
void metrics_finish(const struct metrics_basis *b, const struct sched *s,
                    const struct topo *t, const struct metrics_steady *x,
                    struct metrics *m);

#endif
