/*
 * calib_file.h: the calibration file `fsdpsim real bench --calibration-out`
 * writes and `simulate --calibration FILE` reads.
 *
 * It is a partial topology holding only what the bench measured on the
 * node: [gpu] gemm_efficiency from the GEMM sweep, [host] pcie_bandwidth
 * from the pinned copies, and [calibration] cells fitted (calib.c) to the
 * collective sweeps.  topo_apply_calibration() reads it back onto any
 * topology of that hardware.
 *
 * Plain C with no CUDA, so that it is tested without a GPU.
 */
#ifndef FSDPSIM_CALIB_FILE_H
#define FSDPSIM_CALIB_FILE_H

#include "nccl_env.h"
#include "topo.h"

#include <stdio.h>

#include "bench_fit.h"

struct calib_measured {
    const char *nccl_tests_text;    /* the bench's nccl-tests output, or
                                     * NULL: no [calibration] cells */
    double gemm_flops_per_s;        /* the GEMM sweep's FLOPs over its
                                     * time; 0: not measured */
    enum dtype gemm_dtype;          /* the dtype it ran in */
    double h2d_Bps, d2h_Bps;        /* pinned copies; 0: not measured */
    const char *gpu_name;           /* for the header line, or NULL */
    const struct bench_measure *compute; /* the GEMM, copy and launch
                                     * samples, or NULL: their keys are
                                     * fitted (bench_fit.h) */
};

/*
 * Write the calibration file for measurements M taken on nodes of BASE
 * (a topology name or file: its peak FLOP/s give the GEMM efficiency, its
 * collective model the algorithm and protocol of each size).  Returns 0,
 * or -1 with *cause (caller frees): the nccl-tests text does not parse,
 * BASE does not load, or the GEMM dtype has no peak in BASE.
 */
int calib_file_write(FILE *out, const char *base,
                     const struct nccl_config *nc,
                     const struct calib_measured *m, char **cause);

#endif
