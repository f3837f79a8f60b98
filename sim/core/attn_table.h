/*
 * attn_table.h: how fast each attention kernel runs, from published
 * benchmarks.
 *
 * data/kernels/attention-published.csv (compiled in) holds the throughput
 * the FlashAttention-2 and -3 benchmark figures print for each kernel, GPU,
 * head dimension, sequence length and mask, forward alone or forward plus
 * backward.  This module turns it into an efficiency, a fraction of the
 * benchmark GPU's dense fp16/bf16 peak, for one direction, at any sequence
 * length and head dimension (doc/compute-model.md, "Attention"):
 *   - the benchmarks count forward FLOPs as 4 S^2 d h per sequence, halved
 *     with the causal mask, and backward as 2.5x forward
 *     (flash-attention benchmarks/benchmark_flash_attention.py), so a
 *     forward+backward figure P_fb and a forward figure P_f give the
 *     backward's own throughput P_b = 2.5 / (3.5 / P_fb - 1 / P_f);
 *   - where only forward+backward was measured, the split takes the ratio
 *     of forward to backward throughput measured on H100 for the same
 *     kernel family where one exists, else the FlashAttention-2 paper's
 *     73 % forward against 63 % backward of A100 peak (Dao 2023, §4.1);
 *   - where only forward was measured (FlashAttention-3, cuDNN, Triton on
 *     H100), backward runs at the forward figure divided by the same
 *     ratio measured for FlashAttention-2 on H100;
 *   - sequence lengths interpolate linearly in log2(S); below the shortest
 *     measured length the first segment's slope continues (down to a
 *     quarter of the first figure), above the longest (16k) the last
 *     figure holds: every measured series is flat within a few percent
 *     from 8k to 16k, the kernels' tiles being full;
 *   - head dimensions interpolate linearly between measured ones and take
 *     the nearest outside them.
 * A GPU of another architecture uses the nearest measured one's
 * efficiencies (Volta and Ampere: A100; Hopper and later: H100).
 */
#ifndef FSDPSIM_ATTN_TABLE_H
#define FSDPSIM_ATTN_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "topo.h"

/* The attention kernels the table measures, plus the choice of SDPA. */
enum attn_kernel {
    ATTN_AUTO,      /* what torch SDPA would pick (attn_table_resolve) */
    ATTN_FLASH2,    /* FlashAttention-2 (flash-attn 2.x, SDPA's flash) */
    ATTN_FLASH3,    /* FlashAttention-3 (Hopper only) */
    ATTN_CUDNN,     /* cuDNN fused attention (SDPA's cuDNN backend) */
    ATTN_FLASH1,    /* FlashAttention 1 (CUDA) */
    ATTN_TRITON,    /* a Triton FlashAttention kernel */
    ATTN_XFORMERS,  /* xformers memory-efficient attention */
    ATTN_MATH,      /* eager: scores materialised, softmax, two bmm */
    ATTN_KERNEL_COUNT
};

/* "auto", "flash2", ...; and back (-1 when unknown). */
const char *attn_kernel_name(enum attn_kernel k);
int attn_kernel_parse(const char *s);
/* "auto|flash2|flash3|..." for help texts. */
extern const char attn_kernel_choices[];

/* The kernel a run uses: K itself, or for ATTN_AUTO the one PyTorch's SDPA
 * picks for this GPU, compute dtype, head dimension and mask.  Returns -1
 * with *why (static text) when K cannot run there (FlashAttention-3 or
 * cuDNN before Hopper, a flash kernel in fp32, head dim above 256). */
int attn_table_resolve(enum attn_kernel k, enum gpu_arch arch, enum dtype d,
                       int64_t head_dim, bool has_bias_mask,
                       enum attn_kernel *out, const char **why);

/* Efficiency (fraction of the GPU's dense 16-bit peak) of kernel K,
 * forward (bwd false) or backward, at this head dimension and sequence
 * length, causal or not. */
double attn_table_efficiency(enum attn_kernel k, enum gpu_arch arch,
                             int64_t head_dim, double seq_len, bool causal,
                             bool bwd);

#endif
