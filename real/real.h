/*
 * real.h: real mode, the schedule executed on GPUs with CUDA, cuBLAS and
 * NCCL.
 *
 * The executor walks the very `struct sched` the simulator runs (built by
 * sched_build from the same options): compute ops become cuBLAS GEMMs and
 * memory-bound kernels with each leaf layer's real shapes and dtype,
 * collectives become NCCL calls on the streams and communicators the
 * schedule names, dependencies become CUDA events, allocations and frees
 * follow the ledger, and CPU_WAIT ops block the host as FSDP's do.  Every
 * op is timed with CUDA events; results come back in the simulator's own
 * `struct engine_result`, so the same writers print them and `fsdpsim
 * compare` can match them op by op.
 *
 * This header is plain C; the implementation (real/exec.cu, real/bench.cu) is
 * built only when configure finds CUDA, cuBLAS and NCCL.  Ownership: the
 * caller owns every argument; results are filled in place and released
 * with engine_result_free().
 */
#ifndef FSDPSIM_REAL_H
#define FSDPSIM_REAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "bench_fit.h"
#include "engine.h"
#include "model.h"
#include "sched.h"
#include "topo.h"

/* Exit status for system failures (no GPU, driver, CUDA/NCCL error). */
#define REAL_EXIT_SYSTEM 3

struct real_options {
    int warmup;             /* schedule steps run before timing (>= 1) */
    double timeout_s;       /* abort NCCL after this long without progress */
    int verbose;
};

/* The process's place in a multi-process job, from the variables
 * torchrun, srun or mpirun set (sim/core/rendezvous.h).  One process per node,
 * one thread per GPU. */
struct rendezvous;
struct real_launch {
    int node_rank;          /* 0 .. nodes-1 */
    int nodes;
    int gpus;               /* GPUs this process drives */
    struct rendezvous *rv;  /* the other nodes' processes; NULL: one node */
};

/* Builds configured --with-mpi (real/mpi_launch.c): when mpirun started
 * this process, initialise MPI and fill L's node_rank, nodes and rv (an
 * MPI_Allgather rendezvous); 0 then, 1 when not started by mpirun (L
 * untouched), -1 with *cause.  real_mpi_finish() ends MPI (MPI_Abort
 * when !ok, so the other nodes stop too); a no-op when it was not
 * started. */
int real_mpi_launch(struct real_launch *l, char **cause);
void real_mpi_finish(int ok);

/* Is there a usable GPU?  0 when yes (gpus set), else REAL_EXIT_SYSTEM
 * with a one-line *cause naming the CUDA error (caller frees). */
int real_probe(int *gpus, char **cause);

/* Execute s on this node's GPUs, `warmup` + s->iterations steps, and
 * return the timed steps in *measured (times relative to the first timed
 * op; step_end_ns per iteration; mem replays the ledger at measured
 * times), the CUDA pool's peak in *peak_reserved and local GPU 0's SM
 * clock and power during the timed steps in *state (no samples without
 * NVML).  0 on success, else REAL_EXIT_SYSTEM with *cause naming the op,
 * rank and CUDA/NCCL error. */
int real_run(const struct sched *s, const struct model *m,
             const struct topo *t, const struct real_launch *l,
             const struct real_options *o, struct engine_result *measured,
             int64_t *peak_reserved, struct gpu_state *state, char **cause);

/* nccl-tests-style sweeps with data verification (all-gather,
 * reduce-scatter, all-reduce), a GEMM sweep over the model's shapes and
 * host<->device copy bandwidth; writes nccl-tests-format text to out (so
 * `fsdpsim calibrate` reads it) and a summary table to stdout. */
struct real_bench_options {
    double min_bytes, max_bytes, factor;
    int iters, warmup;
    const struct model *model;      /* for the GEMM shapes, may be NULL */
    int64_t micro_batch, seq_len;
    enum dtype dtype;
};
/* What the bench measured, for the calibration file (sim/io/calib_file.h). */
struct real_bench_result {
    double gemm_flops_per_s;    /* every GEMM of the sweep: their FLOPs
                                 * over their time; 0 without a model */
    double h2d_Bps, d2h_Bps;    /* pinned copies at the largest size */
    char gpu_name[256];         /* GPU 0's name */
    struct bench_measure compute; /* each GEMM and copy timed, for the
                                   * compute keys (bench_fit.h) */
};
int real_bench(const struct real_launch *l, const struct real_bench_options *o,
               FILE *nccl_tests_out, struct real_bench_result *res,
               char **cause);

#endif
