/*
 * kineto_kernels.h: the GPU kernels of a PyTorch profiler (Kineto) trace,
 * each tied to the operator that launched it and described as fsdpsim's
 * compute model describes kernels (struct kernel), for `fsdpsim
 * calibrate --profile`.
 *
 * kineto_kernels.c gives the rules: how a kernel is found its launch and
 * operator, how it is classed, and where its shape, FLOPs and bytes come
 * from.  What it reads is copied out; the JSON is not kept.
 */
#ifndef FSDPSIM_KINETO_KERNELS_H
#define FSDPSIM_KINETO_KERNELS_H

#include <stdbool.h>
#include <stddef.h>

#include "kernel.h"
#include "topo.h"

/* One measured entry: the kernels one operator call launched that belong
 * to one class (a GEMM and its split-K reduction, the three kernels of a
 * flash attention backward), as one struct kernel with launches = their
 * count. */
struct prof_kernel {
    struct kernel k;          /* k.name points into name */
    char *name;               /* the first kernel's name (owned) */
    char *op;                 /* the operator it is described by (owned) */
    enum dtype dtype;         /* compute dtype (GEMMs, attention) */
    double measured_s;        /* summed GPU durations */
};

struct prof_trace {
    struct prof_kernel *k;    /* compute kernels with a shape */
    size_t n;
    int n_kernels;            /* every kernel event in the trace */
    int n_nccl;               /* NCCL kernels: not compute */
    int n_unshaped;           /* compute kernels left out: no operator,
                                 no shapes, or a type of unknown size */
    int n_shaped_ops;         /* operators with "Input Dims" */
    int n_causal_assumed;     /* attention calls with no is_causal */
    /* Host: gaps between consecutive kernel launches (cudaLaunchKernel
     * starts) on one thread, medians; 0 with n 0 when there were none. */
    double fwd_gap_s;         /* forward ops, on the main thread */
    int n_fwd_gaps;
    double bwd_gap_s;         /* under autograd's engine (backward) */
    int n_bwd_gaps;
};

/* Read the trace file PATH.  0, or -1 with *cause (caller frees): the
 * file cannot be read, is not JSON, has no kernel events or no recorded
 * shapes (messages start with PATH). */
int kineto_kernels_read(const char *path, struct prof_trace *out,
                        char **cause);
/* The same for TEXT already in memory, named PATH in messages. */
int kineto_kernels_parse(const char *path, const char *text, size_t len,
                         struct prof_trace *out, char **cause);
void prof_trace_free(struct prof_trace *p);

#endif
