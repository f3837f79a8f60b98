/*
 * attn_table.c: attention kernel efficiencies from the published
 * benchmark table (see attn_table.h for the rules).
 */
#include "attn_table.h"
#include "builtin.h"
#include "xalloc.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The two GPUs the benchmarks ran on, and their dense fp16/bf16 peaks
 * (NVIDIA A100 and H100 SXM datasheets), which turn TFLOPS into a
 * fraction of peak. */
enum bench_gpu { BENCH_A100, BENCH_H100, BENCH_GPUS };
static const char *const bench_gpu_names[BENCH_GPUS] = {"A100-SXM4-80GB",
                                                        "H100-SXM5-80GB"};
static const double bench_peak_tflops[BENCH_GPUS] = {312, 989};

/* Forward over backward throughput of FlashAttention-2 on A100: "up to
 * 73% of the theoretical maximum FLOPs/s" forward and "up to 63%" backward
 * (Dao, "FlashAttention-2", 2023, §4.1), used where a kernel family has no
 * forward-only measurement on either GPU. */
#define FA2_PAPER_FWD_OVER_BWD (73.0 / 63.0)
/* Below the shortest measured sequence the efficiency keeps falling with
 * the first segment's slope, but not below this share of the first
 * figure (a kernel of a few tiles is launch-bound, not free). */
#define EXTRAPOLATE_FLOOR 0.25

#define MAX_POINTS 16
#define MAX_SERIES 96

struct series {
    int gpu;
    enum attn_kernel kernel;
    int causal;
    int64_t head_dim;
    int n;
    double seq[MAX_POINTS];
    double fwd[MAX_POINTS];      /* TFLOPS, forward alone; NAN if absent */
    double fwd_bwd[MAX_POINTS];  /* TFLOPS, forward + backward; NAN */
    double eff_f[MAX_POINTS];    /* derived, fraction of peak */
    double eff_b[MAX_POINTS];
};

static struct series table[MAX_SERIES];
static int n_series;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static const char *const kernel_names[ATTN_KERNEL_COUNT] = {
    "auto", "flash2", "flash3", "cudnn", "flash1", "triton", "xformers",
    "math"};
const char attn_kernel_choices[] =
    "auto|flash2|flash3|cudnn|flash1|triton|xformers|math";

const char *
attn_kernel_name(enum attn_kernel k)
{
    return (unsigned)k < ATTN_KERNEL_COUNT ? kernel_names[k] : "?";
}

int
attn_kernel_parse(const char *s)
{
    for (int i = 0; i < ATTN_KERNEL_COUNT; i++)
        if (strcmp(s, kernel_names[i]) == 0)
            return i;
    return -1;
}

/* The table's kernel column: "triton-tutorial" is the only Triton
 * FlashAttention measured. */
static int
csv_kernel(const char *s)
{
    if (strcmp(s, "triton-tutorial") == 0)
        return ATTN_TRITON;
    int k = attn_kernel_parse(s);
    return k > ATTN_AUTO ? k : -1;
}

static struct series *
series_get(int gpu, int kernel, int causal, int64_t hd, int create)
{
    for (int i = 0; i < n_series; i++) {
        struct series *s = &table[i];
        if (s->gpu == gpu && (int)s->kernel == kernel && s->causal == causal
            && s->head_dim == hd)
            return s;
    }
    if (!create || n_series == MAX_SERIES)
        return NULL;
    struct series *s = &table[n_series++];
    memset(s, 0, sizeof *s);
    s->gpu = gpu;
    s->kernel = (enum attn_kernel)kernel;
    s->causal = causal;
    s->head_dim = hd;
    return s;
}

static void
series_put(struct series *s, double seq, int fwd_only, double tflops)
{
    int i = 0;
    while (i < s->n && s->seq[i] < seq)
        i++;
    if (i == s->n || s->seq[i] != seq) {
        if (s->n == MAX_POINTS)
            return;
        memmove(&s->seq[i + 1], &s->seq[i], (s->n - i) * sizeof(double));
        memmove(&s->fwd[i + 1], &s->fwd[i], (s->n - i) * sizeof(double));
        memmove(&s->fwd_bwd[i + 1], &s->fwd_bwd[i],
                (s->n - i) * sizeof(double));
        s->n++;
        s->seq[i] = seq;
        s->fwd[i] = s->fwd_bwd[i] = NAN;
    }
    if (fwd_only)
        s->fwd[i] = tflops;
    else
        s->fwd_bwd[i] = tflops;
}

/* Linear interpolation of Y (NAN where unmeasured) in log2(seq), with the
 * extrapolation rules of attn_table.h.  NAN when nothing is measured. */
static double
interp_log_seq(const struct series *s, const double *y, double seq)
{
    double xs[MAX_POINTS], ys[MAX_POINTS];
    int n = 0;
    for (int i = 0; i < s->n; i++)
        if (!isnan(y[i])) {
            xs[n] = log2(s->seq[i]);
            ys[n++] = y[i];
        }
    if (n == 0)
        return NAN;
    if (n == 1)
        return ys[0];
    double x = log2(seq);
    if (x >= xs[n - 1])
        return ys[n - 1];
    if (x <= xs[0]) {
        double slope = (ys[1] - ys[0]) / (xs[1] - xs[0]);
        double v = ys[0] + slope * (x - xs[0]);
        return fmax(v, EXTRAPOLATE_FLOOR * ys[0]);
    }
    int i = 1;
    while (xs[i] < x)
        i++;
    double f = (x - xs[i - 1]) / (xs[i] - xs[i - 1]);
    return ys[i - 1] + f * (ys[i] - ys[i - 1]);
}

/* Forward over backward throughput measured for KERNEL on H100 at this
 * mask, head dimension (nearest measured) and sequence; NAN if H100 has
 * no pair of measurements for it. */
static double
h100_ratio(int kernel, int causal, int64_t hd, double seq)
{
    const struct series *best = NULL;
    for (int i = 0; i < n_series; i++) {
        const struct series *s = &table[i];
        if (s->gpu != BENCH_H100 || (int)s->kernel != kernel
            || s->causal != causal)
            continue;
        double pf = interp_log_seq(s, s->fwd, seq);
        double pfb = interp_log_seq(s, s->fwd_bwd, seq);
        if (isnan(pf) || isnan(pfb))
            continue;
        if (best == NULL
            || llabs(s->head_dim - hd) < llabs(best->head_dim - hd))
            best = s;
    }
    if (best == NULL)
        return NAN;
    double pf = interp_log_seq(best, best->fwd, seq);
    double pfb = interp_log_seq(best, best->fwd_bwd, seq);
    double inv_b = (3.5 / pfb - 1.0 / pf) / 2.5;
    return inv_b > 0 ? pf * inv_b : NAN;
}

static void
derive(struct series *s)
{
    double peak = bench_peak_tflops[s->gpu];
    for (int i = 0; i < s->n; i++) {
        double pf = s->fwd[i], pfb = s->fwd_bwd[i], seq = s->seq[i];
        double pb = NAN;
        if (!isnan(pf) && !isnan(pfb)) {
            double inv_b = (3.5 / pfb - 1.0 / pf) / 2.5;
            pb = inv_b > 0 ? 1.0 / inv_b : NAN;
        } else if (!isnan(pfb)) {
            double rho = h100_ratio(s->kernel, s->causal, s->head_dim, seq);
            if (isnan(rho))
                rho = FA2_PAPER_FWD_OVER_BWD;
            /* 3.5 / P_fb = 1 / P_f + 2.5 / P_b with P_f = rho P_b. */
            pb = pfb * (1.0 / rho + 2.5) / 3.5;
            pf = rho * pb;
        } else if (!isnan(pf)) {
            double rho = h100_ratio(ATTN_FLASH2, s->causal, s->head_dim, seq);
            if (isnan(rho))
                rho = FA2_PAPER_FWD_OVER_BWD;
            pb = pf / rho;
        }
        s->eff_f[i] = isnan(pf) ? NAN : pf / peak;
        s->eff_b[i] = isnan(pb) ? NAN : pb / peak;
    }
}

static void
table_load(void)
{
    const struct builtin_file *f = builtin_find("data",
                                                "attention-published");
    if (f == NULL) {
        fprintf(stderr, "fsdpsim: internal error: the attention table is "
                "not built in\n");
        abort();
    }
    const char *p = f->text;
    p = strchr(p, '\n');            /* the header */
    while (p != NULL && *++p != '\0') {
        char gpu[64], dir[16], kern[32];
        int causal;
        long hd, seq;
        double tflops;
        char tf_text[32];
        int n = sscanf(p, "%63[^,],%15[^,],%31[^,],%d,%ld,%ld,%31[^,]", gpu,
                       dir, kern, &causal, &hd, &seq, tf_text);
        p = strchr(p, '\n');
        /* An empty TFLOPS cell is a bar the figure marks OOM or hides. */
        if (n != 7 || sscanf(tf_text, "%lf", &tflops) != 1)
            continue;
        int g = -1;
        for (int i = 0; i < BENCH_GPUS; i++)
            if (strcmp(gpu, bench_gpu_names[i]) == 0)
                g = i;
        int k = csv_kernel(kern);
        if (g < 0 || k < 0)
            continue;
        struct series *s = series_get(g, k, causal != 0, hd, 1);
        if (s != NULL)
            series_put(s, (double)seq, strcmp(dir, "fwd") == 0, tflops);
    }
    /* Forward-only rows need FlashAttention-2's H100 ratio, which uses
     * raw figures only: the order of derivation does not matter. */
    for (int i = 0; i < n_series; i++)
        derive(&table[i]);
}

static double
series_eff(const struct series *s, double seq, bool bwd)
{
    return interp_log_seq(s, bwd ? s->eff_b : s->eff_f, seq);
}

/* Efficiency on benchmark GPU G, interpolated over head dimension; NAN
 * when G measured nothing of this kernel and mask. */
static double
gpu_eff(int g, enum attn_kernel k, int64_t hd, double seq, bool causal,
        bool bwd)
{
    const struct series *lo = NULL, *hi = NULL;
    for (int i = 0; i < n_series; i++) {
        const struct series *s = &table[i];
        if (s->gpu != g || s->kernel != k || s->causal != (int)causal
            || isnan(series_eff(s, seq, bwd)))
            continue;
        if (s->head_dim <= hd && (lo == NULL || s->head_dim > lo->head_dim))
            lo = s;
        if (s->head_dim >= hd && (hi == NULL || s->head_dim < hi->head_dim))
            hi = s;
    }
    if (lo == NULL && hi == NULL)
        return NAN;
    if (lo == NULL)
        return series_eff(hi, seq, bwd);
    if (hi == NULL || hi == lo)
        return series_eff(lo, seq, bwd);
    double f = (double)(hd - lo->head_dim)
               / (double)(hi->head_dim - lo->head_dim);
    double a = series_eff(lo, seq, bwd), b = series_eff(hi, seq, bwd);
    return a + f * (b - a);
}

double
attn_table_efficiency(enum attn_kernel k, enum gpu_arch arch,
                      int64_t head_dim, double seq_len, bool causal, bool bwd)
{
    pthread_once(&table_once, table_load);
    int g = arch >= GPU_ARCH_HOPPER ? BENCH_H100 : BENCH_A100;
    double e = gpu_eff(g, k, head_dim, seq_len, causal, bwd);
    if (isnan(e))   /* measured on the other GPU only (xformers) */
        e = gpu_eff(1 - g, k, head_dim, seq_len, causal, bwd);
    if (isnan(e))   /* cannot happen for a kernel resolve accepted */
        e = gpu_eff(g, ATTN_MATH, head_dim, seq_len, causal, bwd);
    return e;
}

int
attn_table_resolve(enum attn_kernel k, enum gpu_arch arch, enum dtype d,
                   int64_t head_dim, bool has_bias_mask,
                   enum attn_kernel *out, const char **why)
{
    bool half = d == DTYPE_BF16 || d == DTYPE_FP16 || d == DTYPE_FP8;
    *why = NULL;
    if (k == ATTN_AUTO) {
        /* torch SDPA (aten/src/ATen/native/transformers/cuda/
         * sdp_utils.cpp, select_sdp_backend): flash first, then
         * memory-efficient, then math.  Flash needs sm80 or newer, a
         * 16-bit dtype, head_dim <= 256 and a multiple of 8, and no
         * attn_mask; memory-efficient (xformers' kernel) takes fp32 and
         * additive masks such as ALiBi. */
        if (arch >= GPU_ARCH_AMPERE && half && head_dim <= 256
            && head_dim % 8 == 0 && !has_bias_mask)
            *out = ATTN_FLASH2;
        else if (head_dim % 8 == 0)
            *out = ATTN_XFORMERS;
        else
            *out = ATTN_MATH;
        return 0;
    }
    switch (k) {
    case ATTN_FLASH3:
        if (arch != GPU_ARCH_HOPPER)
            *why = "flash3 (FlashAttention-3) runs on Hopper GPUs only";
        break;
    case ATTN_CUDNN:
        if (arch < GPU_ARCH_HOPPER)
            *why = "cudnn attention is measured and used by SDPA on Hopper "
                   "and newer only";
        break;
    case ATTN_FLASH2:
    case ATTN_FLASH1:
    case ATTN_TRITON:
        if (arch < GPU_ARCH_AMPERE)
            *why = "flash kernels need an Ampere or newer GPU";
        break;
    default:
        break;
    }
    if (*why == NULL && !half
        && (k == ATTN_FLASH2 || k == ATTN_FLASH3 || k == ATTN_CUDNN
            || k == ATTN_FLASH1 || k == ATTN_TRITON))
        *why = "flash and cuDNN attention run in fp16/bf16 only: set "
               "--param-dtype bf16, or --attention xformers or math";
    if (*why == NULL && head_dim > 256 && k != ATTN_MATH
        && k != ATTN_XFORMERS)
        *why = "flash and cuDNN attention take head_dim up to 256";
    if (*why == NULL && head_dim > 128 && (k == ATTN_FLASH1
                                           || k == ATTN_TRITON))
        *why = "FlashAttention 1 and the Triton kernel take head_dim up "
               "to 128";
    if (*why != NULL)
        return -1;
    *out = k;
    return 0;
}
