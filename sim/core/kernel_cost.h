/*
 * kernel_cost.h: how long one kernel takes on a GPU.
 *
 * - GEMMs: FLOPs at the dtype's dense peak times an efficiency found from
 *   the shape as cuBLAS tiles it: tile quantization (the last tile of a
 *   dimension is partly empty), wave quantization (tiles over the SM
 *   count, rounded up), split-K for products with few tiles and a long K,
 *   and a per-tile pipeline fill, under the measured sustained ceiling
 *   ([gpu] gemm_efficiency), which no shape passes.  Or their bytes at HBM
 *   speed, whichever is slower.
 * - Attention: FLOPs at the published kernel's efficiency (attn_table.h).
 * - Elementwise and reductions: bytes at [gpu] memory_efficiency of HBM
 *   bandwidth.
 * Every kernel takes at least [gpu] kernel_overhead.  Compute peaks are
 * scaled by [gpu] clock_fraction (a power- or clock-limited part).
 * doc/compute-model.md derives each rule and cites its sources.
 */
#ifndef FSDPSIM_KERNEL_COST_H
#define FSDPSIM_KERNEL_COST_H

#include "kernel.h"
#include "topo.h"

/* Seconds kernel K (all its launches) takes on T's GPU in dtype D. */
double kernel_time_s(const struct topo *t, const struct kernel *k,
                     enum dtype d);

/* Fraction of D's dense peak a GEMM (m x k) by (k x n), BATCH times,
 * reaches on T's GPU (tile and wave quantization, split-K). */
double kernel_gemm_efficiency(const struct topo *t, int64_t m, int64_t n,
                              int64_t k, int64_t batch);

/* The GPU's streaming multiprocessors ([gpu] sms, else the
 * architecture's flagship count). */
int kernel_sm_count(const struct topo *t);

/* The dense peak of D on T's GPU after clock_fraction; a dtype the GPU
 * has no peak for runs at the fp32 rate. */
double kernel_peak_flops(const struct topo *t, enum dtype d);

/* The attention efficiency kernel K reaches on T (the table's, times the
 * topology's calibrated scale for that direction). */
double kernel_attention_efficiency(const struct topo *t,
                                   const struct kernel *k);

#endif
