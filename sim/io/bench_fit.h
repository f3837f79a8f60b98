/*
 * bench_fit.h: the compute keys of a topology fitted to what `fsdpsim real
 * bench` measured on the GPU (its GEMM sweep over the model's own shapes,
 * a streaming-copy sweep and a launch loop), by the same fit `calibrate
 * --profile` applies to a profiler trace (profile_fit.h): the samples
 * become the kernels of a trace, so the two commands write the same keys
 * the same way.  Attention is not measured (it needs the model's own
 * attention library), so its scales keep the topology's values.
 */
#ifndef FSDPSIM_BENCH_FIT_H
#define FSDPSIM_BENCH_FIT_H

#include <stdint.h>

#include "gpu_state.h"
#include "kernel.h"
#include "profile_fit.h"
#include "topo.h"

/* One timed kernel, per launch. */
struct bench_sample {
    enum kernel_class cls;    /* KERNEL_GEMM or KERNEL_ELEMENTWISE */
    int64_t m, n, k;          /* GEMM: (m x k) by (k x n) */
    double bytes;             /* memory-bound: bytes read and written */
    double seconds;           /* measured, one launch */
};

#define BENCH_MAX_SAMPLES 256

struct bench_measure {
    struct bench_sample s[BENCH_MAX_SAMPLES];
    int n;
    enum dtype dtype;         /* the GEMMs' dtype */
    double launch_gap_s;      /* host time per kernel launch, 0: none */
    int n_launch_gaps;
    struct gpu_state clock;   /* while the GEMMs were timed */
};

/* How the bench and its calibration file name that clock line. */
#define BENCH_CLOCK_WHAT "SM clock while the GEMMs were timed"

/* Fit T's compute keys to M and set them in T (profile_fit's rules); the
 * table and keys go through profile_fit_print/profile_fit_write_keys. */
void bench_fit(struct topo *t, const struct bench_measure *m,
               struct profile_fit *out);

#endif
