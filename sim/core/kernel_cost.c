/*
 * kernel_cost.c: kernel times on a GPU (see kernel_cost.h).
 */
#include "kernel_cost.h"

#include <math.h>

/* CTA tile shapes cuBLAS's and CUTLASS's Ampere and Hopper bf16 kernels
 * use (NVIDIA, "Matrix Multiplication Background User's Guide", §2.3:
 * 256x128, 128x256, 128x128, 128x64, 64x128, 64x64).  A tile's data reuse
 * is its arithmetic intensity 2 Mt Nt / (Mt + Nt) FLOPs per element
 * loaded (same guide, §2.2); below a 128x128 tile's the tensor cores wait
 * on shared memory and efficiency falls in proportion. */
static const int tile_shapes[][2] = {
    {256, 128}, {128, 256}, {128, 128}, {128, 64}, {64, 128}, {64, 64}};
#define FULL_REUSE_INTENSITY 128.0
/* A CTA fills its software pipeline (about four 32-deep K slices) before
 * the first MMA and writes its tile after the last: time worth about 128
 * of K.  An estimate from CUTLASS's default multistage depth; it matters
 * only for short K, i.e. narrow models' projections. */
#define K_PIPELINE_FILL 128.0
/* Split-K: cuBLAS splits K over more CTAs when the tiles alone cannot fill
 * the GPU, writing fp32 partial tiles that a second pass sums.  Slices
 * shorter than this are not worth it. */
#define SPLIT_K_MIN_SLICE 256
#define SPLIT_K_MAX 16

/* The SM counts of each architecture's flagship SXM part when a topology
 * does not say: V100 80, A100 108, H100/H200 132, B200 148 (NVIDIA
 * architecture whitepapers). */
int
kernel_sm_count(const struct topo *t)
{
    if (t->sms > 0)
        return t->sms;
    switch (t->arch) {
    case GPU_ARCH_VOLTA: return 80;
    case GPU_ARCH_AMPERE: return 108;
    case GPU_ARCH_HOPPER: return 132;
    case GPU_ARCH_BLACKWELL: return 148;
    }
    return 108;
}

/* Lanes per SM (NVIDIA architecture whitepapers): Volta and A100 64
 * FP32 and 64 INT32, H100 128 FP32 and 64 INT32, Blackwell 128 lanes
 * that run either. */
static double
fp32_lanes_per_sm(const struct topo *t)
{
    return t->arch == GPU_ARCH_HOPPER || t->arch == GPU_ARCH_BLACKWELL
               ? 128 : 64;
}

static double
int32_lanes_per_sm(const struct topo *t)
{
    return t->arch == GPU_ARCH_BLACKWELL ? 128 : 64;
}

/* SMs x clock, the clock the peaks are quoted at: the FP32 peak over
 * twice the FP32 lanes (an FMA being two FLOPs). */
static double
sm_clocks(const struct topo *t)
{
    return kernel_peak_flops(t, DTYPE_FP32) / (2 * fp32_lanes_per_sm(t));
}

/* Integer instructions per second. */
static double
int32_rate(const struct topo *t)
{
    return sm_clocks(t) * int32_lanes_per_sm(t);
}

/* Eager PyTorch's dynamic-cast copy (torch_version.h: one element at a
 * time through LoadWithCast, no vector loads) converts about 1.2
 * elements per SM per clock, whatever the dtypes and the HBM behind it.
 * Measured, elements over time over SMs x boost clock:
 * - A100 (108 SMs, 1,410 MHz), bf16 -> fp32, 67,108,864 elements in
 *   362.46 us: 1.22 (PyTorch PR #195542, the "control" column);
 * - H100 PCIe (114 SMs, 1,755 MHz, power-limited), fp32 -> fp16,
 *   536,870,912 elements in 2,224.8 us: 1.21 (PR #137053, "before");
 * - an H100 (132 SMs, 1,980 MHz if SXM), fp16 -> float8, 1e8 elements in
 *   323 us, and fp32 -> float8 in 336 us: 1.19 and 1.14 (PR #110251,
 *   "Before"): 3 and 5 bytes an element, nearly the same time, so the
 *   issue rate, not HBM, bounds it.
 * The A100's copy moved 1.11 TB/s, about half its HBM bandwidth; the
 * vectorized kernels those PRs add take 11 % (322.09 us), 22 %
 * (1,735.7 us) and 54 % (150 us) less time for the same copies. */
#define DYNAMIC_CAST_ELEMS_PER_SM_CLOCK 1.2

/* TensorIterator's strided path (kernel.c, strided_kernel: a broadcast
 * or strided operand, OffsetCalculator indexing, no vector loads) writes
 * about 1.4 elements per SM per clock.  Measured on a V100 ("(7, 0)";
 * taken as the SXM2 part, 80 SMs at 1,530 MHz) by PyTorch PR #69111 (and
 * #69010), fp16 compares writing bools: broadcasting a row over a
 * matrix ("1M-MM", 3 bytes an element) at 45 MB 495.1 GB/s, 1.35
 * elements per SM per clock;
 * broadcasting a row against a column ("1M-M1", one byte written an
 * element) at 15 MB 167.5 GB/s, 1.37 (#69010's variant: 1.49 and 1.52).
 * The two patterns move 3 and 1 bytes an element at the same element
 * rate, while the contiguous and scalar cases of the same PRs reach
 * about 88 % of the V100's 900 GB/s: the strided path is issue-bound.  It
 * is taken for the A100 and H100 alike (64 INT32 lanes an SM on all
 * three: NVIDIA architecture whitepapers), and is in line with the
 * dynamic-cast path's 1.2 measured on them.  PR #71710 (January 2022)
 * reworked this kernel: "the most common improving pattern on V100 is
 * half-precision x+bias, that improves by ~5%", a few other broadcast
 * patterns by more, some 3-5 % slower. */
#define STRIDED_ELEMS_PER_SM_CLOCK 1.4

/* Seconds K's elements take on the unvectorized TensorIterator paths. */
static double
unvectorized_s(const struct topo *t, const struct kernel *k)
{
    return (k->cast_elems / DYNAMIC_CAST_ELEMS_PER_SM_CLOCK
            + k->strided_elems / STRIDED_ELEMS_PER_SM_CLOCK) / sm_clocks(t);
}

double
kernel_peak_flops(const struct topo *t, enum dtype d)
{
    double p = t->peak_flops[d];
    if (p <= 0)          /* a dtype the GPU lacks runs at fp32 rate */
        p = t->peak_flops[DTYPE_FP32];
    return p * t->clock_fraction;
}

static double
hbm_rate(const struct topo *t)
{
    return t->hbm_Bps * t->memory_efficiency;
}

/* The best tiling of the shape: the least of UNIT_S x cost + the split-K
 * partial sums' bytes at HBM_RATE, where cost (>= 1) is the time of the
 * FLOPs relative to full efficiency, splitting K at most MAX_SPLIT ways.
 * With UNIT_S 1 and no split it is the plain relative cost. */
static double
tiling_time(int sms, double m, double n, double k, double batch,
            double unit_s, double hbm_rate_Bps, int max_split)
{
    double best = INFINITY;
    for (size_t i = 0; i < sizeof tile_shapes / sizeof tile_shapes[0]; i++) {
        double mt = tile_shapes[i][0], nt = tile_shapes[i][1];
        double reuse = fmin(1.0, 2 * mt * nt / (mt + nt)
                                     / FULL_REUSE_INTENSITY);
        double tm = ceil(m / mt), tn = ceil(n / nt);
        double tile_eff = m * n / (tm * mt * tn * nt);
        for (int split = 1; split <= max_split; split *= 2) {
            if (split > 1 && k / split < SPLIT_K_MIN_SLICE)
                break;
            double ctas = tm * tn * batch * split;
            double waves = ceil(ctas / sms);
            double wave_eff = ctas / (waves * sms);
            double kk = k / split;
            double k_eff = kk / (kk + K_PIPELINE_FILL);
            double cost = 1.0 / (reuse * tile_eff * wave_eff * k_eff);
            /* Each split writes an fp32 partial tile and the reduction
             * reads them all back. */
            double reduce = split > 1 ? 2.0 * split * m * n * 4 * batch
                                            / hbm_rate_Bps
                                      : 0;
            best = fmin(best, unit_s * cost + reduce);
        }
    }
    return best;
}

/* Time of a GEMM's FLOPs, seconds, at PEAK.  The ceiling is the most a
 * search over shapes found (stas00/ml-engineering, compute/accelerator/
 * README.md, "Maximum Achievable Matmul FLOPS comparison table",
 * mamf-finder.py: A100 SXM 271.2 TFLOPS at 1024x10240x5120, H100 SXM
 * 794.5 at 2048x2048x13312), so no shape passes it: a shape's tiling cost
 * (>= 1) divides it. */
static double
gemm_time_s(const struct topo *t, const struct kernel *k, double peak)
{
    if (k->m <= 0 || k->n <= 0 || k->k <= 0)
        return 0;
    double batch = k->batch > 0 ? (double)k->batch : 1.0;
    double unit_s = k->flops / (peak * t->gemm_efficiency);
    return tiling_time(kernel_sm_count(t), (double)k->m, (double)k->n,
                       (double)k->k, batch, unit_s, hbm_rate(t),
                       SPLIT_K_MAX);
}

double
kernel_gemm_efficiency(const struct topo *t, int64_t m, int64_t n, int64_t k,
                       int64_t batch)
{
    struct kernel g = {.cls = KERNEL_GEMM, .m = m, .n = n, .k = k,
                       .batch = batch > 0 ? batch : 1};
    g.flops = 2.0 * (double)m * (double)n * (double)k * (double)g.batch;
    double peak = 1e12;   /* any: the ratio is what is returned */
    double s = gemm_time_s(t, &g, peak);
    return s > 0 ? g.flops / (peak * s) : 0;
}

double
kernel_attention_efficiency(const struct topo *t, const struct kernel *k)
{
    bool bwd = k->cls == KERNEL_ATTN_BWD;
    double e = attn_table_efficiency(k->attn, t->arch, k->head_dim, k->seq,
                                     k->causal, bwd);
    return e * (bwd ? t->attention_bwd_scale : t->attention_fwd_scale);
}

double
kernel_time_s(const struct topo *t, const struct kernel *k, enum dtype d)
{
    double peak = kernel_peak_flops(t, k->fp8 ? DTYPE_FP8 : d);
    double s = 0;
    switch (k->cls) {
    case KERNEL_GEMM:
        s = fmax(gemm_time_s(t, k, peak), k->bytes / hbm_rate(t));
        break;
    case KERNEL_ATTN_FWD:
    case KERNEL_ATTN_BWD: {
        double e = kernel_attention_efficiency(t, k);
        s = e > 0 ? k->flops / (peak * fmin(e, 1.0)) : 0;
        /* In-kernel dropout: its integer work on top, not overlapped
         * (an upper estimate: the RNG shares the issue slots the softmax
         * already keeps busy: FlashAttention-2, Dao 2023, §3.1). */
        if (k->int_ops > 0)
            s += k->int_ops / int32_rate(t);
        s = fmax(s, k->bytes / hbm_rate(t));
        break;
    }
    case KERNEL_ELEMENTWISE:
    case KERNEL_REDUCTION:
    case KERNEL_CLASS_COUNT:
        s = fmax(k->bytes / hbm_rate(t), unvectorized_s(t, k));
        break;
    }
    /* No kernel is shorter than the GPU's launch-to-retire time; an entry
     * standing for several launches takes it once each.  A fused entry
     * of zero launches (work folded into another kernel) has no floor. */
    double floor_s = k->launches * t->kernel_overhead_ns * 1e-9;
    return fmax(s, floor_s);
}
