/*
 * bench.cu: `fsdpsim real bench`, the measurements calibration needs.
 *
 * 1. nccl-tests-style sweeps of all-gather, reduce-scatter and all-reduce
 *    over this node's GPUs (one communicator, one host thread driving all
 *    of them in NCCL groups, as `all_gather_perf -g G` does): sizes from
 *    min_bytes to max_bytes by factor, in the dtype given; per size one
 *    checked run per placement (data filled with rank-dependent small
 *    integers, so sums are exact in every dtype, and wrong elements
 *    counted on the GPU), then `warmup` untimed and `iters` timed
 *    iterations, out-of-place then in-place.  The size convention is
 *    nccl-tests' (doc/PERFORMANCE.md): for all-gather and reduce-scatter
 *    the whole gathered (scattered) buffer, count per rank; busbw =
 *    algbw x (n-1)/n, 2(n-1)/n for all-reduce.  Each collective is printed
 *    to nccl_tests_out as a complete nccl-tests text block, starting with
 *    nccl-tests' own "# Collective test starting: all_gather_perf" line,
 *    so the file splits at those lines into files `fsdpsim calibrate`
 *    reads (its reader takes one collective per file; gpu-check.sh shows
 *    the split).
 * 2. A GEMM sweep on GPU 0 over the model's distinct GEMM shapes (forward,
 *    dgrad, wgrad, as real_run launches them), or square sizes without a
 *    model, reporting TFLOPS, measured as NVIDIA's "fixed power" tests
 *    prescribe (CUTLASS, media/docs/cpp/gemm_performance_measurement_
 *    methodology_guidelines.md), since a training run is one: inputs
 *    uniform in [-1, 1] (zeros draw less power and so run at higher
 *    clocks than training data allow), GEMMs back to back for 3 s before
 *    the first timed one (clocks "oscillate for around the first 3
 *    seconds" before they settle), input buffers rotated so that every
 *    launch reads from HBM, not L2, and each GEMM timed over enough
 *    launches to fill GEMM_TIMED_S.
 * 3. Host<->device copy bandwidth with pinned memory on GPU 0.
 * Summaries go to stdout.  Single node only (like real_run).
 */
#include "real_common.h"

#include "gpu_clock.h"

extern "C" {
#include "coll.h"
#include "gpu_state.h"
#include "layer.h"
#include "nccl_tests.h"
}

#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A checked or timed batch that has not finished after this long is a
 * hang (a dead peer, a broken link): abort the communicator. */
#define BENCH_TIMEOUT_S 120.0
#define COPY_MAX_BYTES ((size_t)256 << 20)
#define MAX_SHAPES 64
/* The fixed-power method's times (CUTLASS's guidelines, see above): back-
 * to-back GEMMs before the first timed one, and the least time each GEMM
 * is timed over (its "greater than 1000 iterations" of a 4096^3 GEMM is
 * about 0.2 s on an H100). */
#define GEMM_WARMUP_S 3.0
#define GEMM_TIMED_S 0.25
#define GEMM_MAX_ITERS 100000

struct bench {
    const struct real_bench_options *o;
    int n;                          /* GPUs = ranks */
    ncclComm_t *comm;
    cudaStream_t *st;
    cudaEvent_t *ev0, *ev1;
    char **send, **recv;            /* max_bytes each */
    unsigned long long **wrong;     /* device counter per GPU */
    size_t max_bytes;
    enum dtype dt;
    int es;
    char *cause;
    const char *stage;              /* what runs, for messages */
    struct real_bench_result *res;
};

/* The bench's failure recorder (real_common.h): the first failure, with
 * the stage it happened in ("GEMM sweep: ..."). */
static int real_fail(struct bench *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int
real_fail(struct bench *b, const char *fmt, ...)
{
    if (b->cause == NULL) {
        va_list ap;
        va_start(ap, fmt);
        char *what = xvasprintf(fmt, ap);
        va_end(ap);
        b->cause = b->stage ? xasprintf("%s: %s", b->stage, what)
                            : xstrdup(what);
        free(what);
    }
    return -1;
}

/* A failed CUDA call E as the bench's failure: "NAME: STRING". */
static int
cuda_fail(struct bench *b, cudaError_t e)
{
    return real_fail(b, "%s: %s", cudaGetErrorName(e), cudaGetErrorString(e));
}

/* Stop GPU 0's timer, which ev0 on stream 0 started: after the timed work
 * (whose status is E), record ev1 on stream 0, wait for it and read the
 * milliseconds between the two into *ms.  0, or cuda_fail's -1 for the
 * first call that failed.  The GEMM, HBM and copy sweeps all time this
 * way. */
static int
stop_timer_gpu0(struct bench *b, cudaError_t e, float *ms)
{
    if (e == cudaSuccess)
        e = cudaEventRecord(b->ev1[0], b->st[0]);
    if (e == cudaSuccess)
        e = cudaEventSynchronize(b->ev1[0]);
    if (e == cudaSuccess)
        e = cudaEventElapsedTime(ms, b->ev0[0], b->ev1[0]);
    return e == cudaSuccess ? 0 : cuda_fail(b, e);
}

/* ---- Data and checks ------------------------------------------------ */

/* Rank r's element i: a small integer, so sums over ranks are exact in
 * bf16, fp16 and fp32 alike. */
__device__ __forceinline__ float
value(int r, size_t i)
{
    return (float)((int)((i + 3u * (unsigned)r) % 5u) - 2);
}

template <typename T>
__global__ void
k_init(T *p, size_t n, int rank, size_t first)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride)
        p[i] = (T)value(rank, first + i);
}

/* Check n elements of p: all-gather (mode 0) wants rank i / count's
 * values; a reduction (mode 1) the sum over `ranks` of element first + i. */
template <typename T>
__global__ void
k_check(const T *p, size_t n, size_t count, int ranks, size_t first,
        int mode, unsigned long long *wrong)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    unsigned long long bad = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        float want = 0;
        if (mode == 0) {
            want = value((int)(i / count), i % count);
        } else {
            for (int r = 0; r < ranks; r++)
                want += value(r, first + i);
        }
        if ((float)p[i] != want)
            bad++;
    }
    if (bad)
        atomicAdd(wrong, bad);
}

static int
grid(size_t n)
{
    size_t g = (n + 255) / 256;
    return g < 1 ? 1 : g > 1024 ? 1024 : (int)g;
}

static int
launch_init(struct bench *b, int g, void *p, size_t n, size_t first)
{
    b->stage = "filling buffers";
    if (n == 0)
        return 0;
    cudaStream_t st = b->st[g];
    if (b->dt == DTYPE_BF16)
        k_init<<<grid(n), 256, 0, st>>>((__nv_bfloat16 *)p, n, g, first);
    else if (b->dt == DTYPE_FP16)
        k_init<<<grid(n), 256, 0, st>>>((__half *)p, n, g, first);
    else
        k_init<<<grid(n), 256, 0, st>>>((float *)p, n, g, first);
    CUDA_TRY(b, cudaGetLastError());
    return 0;
}

static int
launch_check(struct bench *b, int g, const void *p, size_t n, size_t count,
             size_t first, int mode)
{
    b->stage = "checking results";
    if (n == 0)
        return 0;
    cudaStream_t st = b->st[g];
    if (b->dt == DTYPE_BF16)
        k_check<<<grid(n), 256, 0, st>>>((const __nv_bfloat16 *)p, n, count,
                                          b->n, first, mode, b->wrong[g]);
    else if (b->dt == DTYPE_FP16)
        k_check<<<grid(n), 256, 0, st>>>((const __half *)p, n, count, b->n,
                                          first, mode, b->wrong[g]);
    else
        k_check<<<grid(n), 256, 0, st>>>((const float *)p, n, count, b->n,
                                          first, mode, b->wrong[g]);
    CUDA_TRY(b, cudaGetLastError());
    return 0;
}

static ncclDataType_t
nccl_type(enum dtype d)
{
    return d == DTYPE_BF16 ? ncclBfloat16 : d == DTYPE_FP16 ? ncclFloat16
                                                            : ncclFloat32;
}

/* nccl-tests' names for the type column. */
static const char *
type_name(enum dtype d)
{
    return d == DTYPE_BF16 ? "bfloat16" : d == DTYPE_FP16 ? "half" : "float";
}

/* Wait for every GPU's stream by polling; abort the communicator after
 * BENCH_TIMEOUT_S. */
static int
sync_all(struct bench *b, const char *what)
{
    b->stage = what;
    for (int g = 0; g < b->n; g++) {
        CUDA_TRY(b, cudaSetDevice(g));
        CUDA_TRY(b, cudaEventRecord(b->ev1[g], b->st[g]));
    }
    double t0 = host_clock_s();
    for (int g = 0; g < b->n; g++) {
        CUDA_TRY(b, cudaSetDevice(g));
        for (;;) {
            cudaError_t e = cudaEventQuery(b->ev1[g]);
            if (e == cudaSuccess)
                break;
            if (e != cudaErrorNotReady)
                return real_fail(b, "rank %d: cudaEventQuery: %s: %s", g,
                                  cudaGetErrorName(e),
                                  cudaGetErrorString(e));
            ncclResult_t ae = ncclSuccess;
            ncclCommGetAsyncError(b->comm[g], &ae);
            if (ae != ncclSuccess && ae != ncclInProgress)
                return real_fail(b, "rank %d: NCCL asynchronous error: "
                                 "%s: %s", g,
                                  ncclGetErrorString(ae),
                                  ncclGetLastError(b->comm[g]));
            if (host_clock_s() - t0 > BENCH_TIMEOUT_S)
                return real_fail(b, "rank %d: no completion after %.0f s "
                                 "(hung collective?)", g,
                                  BENCH_TIMEOUT_S);
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
    }
    return 0;
}

/* ---- Collectives ---------------------------------------------------- */

/* The buffers of rank g for op with `count` elements per rank: in-place
 * places the input (AG) or output (RS) at the rank's slot of the other. */
static void
placement(struct bench *b, enum coll_op op, int g, size_t count,
          int inplace, void **in, void **out)
{
    size_t slot = count * (size_t)b->es * (size_t)g;
    if (!inplace) {
        *in = b->send[g];
        *out = b->recv[g];
    } else if (op == COLL_ALLGATHER) {
        *out = b->recv[g];
        *in = b->recv[g] + slot;
    } else if (op == COLL_REDUCESCATTER) {
        *in = b->recv[g];
        *out = b->recv[g] + slot;
    } else {
        *in = *out = b->recv[g];
    }
}

static int
issue_coll(struct bench *b, enum coll_op op, size_t count, int inplace)
{
    NCCL_TRY(b, NULL, ncclGroupStart());
    for (int g = 0; g < b->n; g++) {
        void *in, *out;
        placement(b, op, g, count, inplace, &in, &out);
        ncclResult_t r;
        if (op == COLL_ALLGATHER)
            r = ncclAllGather(in, out, count, nccl_type(b->dt), b->comm[g],
                              b->st[g]);
        else if (op == COLL_REDUCESCATTER)
            r = ncclReduceScatter(in, out, count, nccl_type(b->dt), ncclSum,
                                  b->comm[g], b->st[g]);
        else
            r = ncclAllReduce(in, out, count, nccl_type(b->dt), ncclSum,
                              b->comm[g], b->st[g]);
        if (r != ncclSuccess) {
            ncclGroupEnd();
            return real_fail(b, "%s of %zu elements on rank %d: %s: %s",
                              nccl_tests_program(op), count, g,
                              ncclGetErrorString(r),
                              ncclGetLastError(b->comm[g]));
        }
    }
    b->stage = nccl_tests_program(op);
    NCCL_TRY(b, NULL, ncclGroupEnd());
    return 0;
}

/* One checked run: fill inputs, run, count wrong output elements. */
static int
check_coll(struct bench *b, enum coll_op op, size_t count, int inplace,
           unsigned long long *wrong)
{
    b->stage = "checking";
    int n = b->n;
    size_t total = op == COLL_ALLREDUCE ? count : count * (size_t)n;
    for (int g = 0; g < n; g++) {
        CUDA_TRY(b, cudaSetDevice(g));
        CUDA_TRY(b, cudaMemsetAsync(b->wrong[g], 0,
                                                sizeof **b->wrong, b->st[g]));
        void *in, *out;
        placement(b, op, g, count, inplace, &in, &out);
        size_t n_in = op == COLL_ALLGATHER ? count : total;
        /* All-gather input is the rank's slot: values from element 0. */
        TRY(launch_init(b, g, in, n_in, 0));
    }
    TRY(issue_coll(b, op, count, inplace));
    for (int g = 0; g < n; g++) {
        CUDA_TRY(b, cudaSetDevice(g));
        void *in, *out;
        placement(b, op, g, count, inplace, &in, &out);
        if (op == COLL_ALLGATHER)
            TRY(launch_check(b, g, out, total, count, 0, 0));
        else if (op == COLL_REDUCESCATTER)
            TRY(launch_check(b, g, out, count, count, count * (size_t)g, 1));
        else
            TRY(launch_check(b, g, out, count, count, 0, 1));
    }
    TRY(sync_all(b, "checking"));
    *wrong = 0;
    for (int g = 0; g < n; g++) {
        unsigned long long w = 0;
        CUDA_TRY(b, cudaSetDevice(g));
        CUDA_TRY(b, cudaMemcpy(&w, b->wrong[g], sizeof w,
                                           cudaMemcpyDeviceToHost));
        *wrong += w;
    }
    return 0;
}

/* Time `iters` back-to-back runs; microseconds per run, the slowest
 * GPU's. */
static int
time_coll(struct bench *b, enum coll_op op, size_t count, int inplace,
          double *us)
{
    b->stage = "timing";
    const struct real_bench_options *o = b->o;
    int warm = o->warmup > 0 ? o->warmup : 5;
    int iters = o->iters > 0 ? o->iters : 20;
    for (int i = 0; i < warm; i++)
        TRY(issue_coll(b, op, count, inplace));
    for (int g = 0; g < b->n; g++) {
        CUDA_TRY(b, cudaSetDevice(g));
        CUDA_TRY(b, cudaEventRecord(b->ev0[g], b->st[g]));
    }
    for (int i = 0; i < iters; i++)
        TRY(issue_coll(b, op, count, inplace));
    TRY(sync_all(b, nccl_tests_program(op)));
    float worst = 0;
    for (int g = 0; g < b->n; g++) {
        float ms = 0;
        CUDA_TRY(b, cudaSetDevice(g));
        CUDA_TRY(b, cudaEventElapsedTime(&ms, b->ev0[g],
                                                   b->ev1[g]));
        worst = ms > worst ? ms : worst;
    }
    *us = (double)worst * 1e3 / iters;
    return 0;
}

static void
print_header(struct bench *b, enum coll_op op, FILE *out)
{
    const struct real_bench_options *o = b->o;
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = '\0';
    int version = 0;
    ncclGetVersion(&version);
    fprintf(out, "# Collective test starting: %s\n", nccl_tests_program(op));
    fprintf(out, "# nThread 1 nGpus %d minBytes %.0f maxBytes %.0f step: "
            "%g(factor) warmup iters: %d iters: %d agg iters: 1 validation: "
            "1 graph: 0\n", b->n, o->min_bytes, o->max_bytes,
            o->factor > 1 ? o->factor : 2, o->warmup > 0 ? o->warmup : 5,
            o->iters > 0 ? o->iters : 20);
    fprintf(out, "#\n# Using devices\n");
    for (int g = 0; g < b->n; g++) {
        cudaDeviceProp p;
        char bus[32] = "0000:00:00";
        memset(&p, 0, sizeof p);
        cudaGetDeviceProperties(&p, g);
        cudaDeviceGetPCIBusId(bus, sizeof bus, g);
        char *dot = strrchr(bus, '.');
        if (dot != NULL)
            *dot = '\0';
        fprintf(out, "#  Rank %2d Group  0 Pid %6d on %10s device %2d [%s] "
                "%s\n", g, (int)getpid(), host, g, bus, p.name);
    }
    fprintf(out, "#\n# nccl-library=%d fsdpsim real bench\n#\n", version);
    fprintf(out, "#%60s%34s\n", "out-of-place", "in-place");
    fprintf(out, "#%11s %13s %9s %7s %7s %8s %7s %7s %6s %8s %7s %7s %6s\n",
            "size", "count", "type", "redop", "root", "time", "algbw",
            "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
    fprintf(out, "#%11s %13s %9s %7s %7s %8s %7s %7s %6s %8s %7s %7s %6s\n",
            "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "",
            "(us)", "(GB/s)", "(GB/s)", "");
}

static void
print_row(FILE *out, double size, size_t count, const char *type,
          const char *redop, const double us[2], double factor,
          const unsigned long long wrong[2])
{
    fprintf(out, "%12.0f %13zu %9s %7s %7d", size, count, type, redop, -1);
    for (int k = 0; k < 2; k++) {
        double alg = us[k] > 0 ? size / (us[k] * 1e-6) / 1e9 : 0;
        fprintf(out, " %8.2f %7.2f %7.2f %6llu", us[k], alg, alg * factor,
                wrong[k]);
    }
    fputc('\n', out);
}

/* One collective's sweep; adds to *wrong_total, best busbw to *best. */
static int
sweep(struct bench *b, enum coll_op op, FILE *out,
      unsigned long long *wrong_total, double *best, double *best_size)
{
    const struct real_bench_options *o = b->o;
    double factor = coll_busbw_factor(op, b->n);
    double step = o->factor > 1 ? o->factor : 2;
    const char *redop = op == COLL_ALLGATHER ? "none" : "sum";
    double bus_sum = 0;
    int rows = 0;
    print_header(b, op, out);
    *best = 0;
    *best_size = 0;
    for (double sz = o->min_bytes > 0 ? o->min_bytes : 8;
         sz <= (double)b->max_bytes * (1 + 1e-9); sz *= step) {
        size_t per = op == COLL_ALLREDUCE ? (size_t)b->es
                                          : (size_t)b->es * (size_t)b->n;
        size_t count = (size_t)(sz / (double)per);
        double size = (double)count * (double)per;
        double us[2] = {0, 0};
        unsigned long long wrong[2] = {0, 0};
        for (int inplace = 0; inplace < 2; inplace++) {
            if (count > 0) {
                TRY(check_coll(b, op, count, inplace, &wrong[inplace]));
                TRY(time_coll(b, op, count, inplace, &us[inplace]));
            }
            *wrong_total += wrong[inplace];
        }
        print_row(out, size, count, type_name(b->dt), redop, us, factor,
                  wrong);
        double bus = us[0] > 0 ? size / (us[0] * 1e-6) / 1e9 * factor : 0;
        if (bus > *best) {
            *best = bus;
            *best_size = size;
        }
        bus_sum += bus;
        rows++;
    }
    fprintf(out, "# Out of bounds values : 0 OK\n");
    fprintf(out, "# Avg bus bandwidth    : %g \n#\n\n",
            rows ? bus_sum / rows : 0.0);
    fflush(out);
    return 0;
}

/* ---- GEMMs and copies ----------------------------------------------- */

struct shape {
    int64_t m, n, k;
};

/* The model's distinct Linear-style GEMM shapes (tokens x out x in), or
 * square sizes without a model. */
static int
gemm_shapes(const struct real_bench_options *o, int es, struct shape *sh)
{
    int n = 0;
    if (o->model == NULL) {
        for (int64_t s = 1024; s <= 16384 && n < MAX_SHAPES; s *= 2)
            sh[n++] = (struct shape){s, s, s};
        return n;
    }
    int64_t mb = o->micro_batch > 0 ? o->micro_batch : 1;
    int64_t seq = o->seq_len > 0 ? o->seq_len : 2048;
    const struct model *m = o->model;
    for (int i = 0; i < m->n_modules && n < MAX_SHAPES; i++) {
        const struct module *mod = m->modules[i];
        if (!layer_is_compute(mod))
            continue;
        struct layer_work w;
        layer_work(mod, mb, seq, es, &w);
        struct shape cand[2] = {{w.gemm_m, w.gemm_n, w.gemm_k}, {0, 0, 0}};
        if (mod->kind == LAYER_MHA)
            cand[1] = (struct shape){mb * seq, mod->out, mod->out};
        for (int c = 0; c < 2 && n < MAX_SHAPES; c++) {
            if (cand[c].m <= 0)
                continue;
            int dup = 0;
            for (int j = 0; j < n && !dup; j++)
                dup = sh[j].m == cand[c].m && sh[j].n == cand[c].n
                      && sh[j].k == cand[c].k;
            if (!dup)
                sh[n++] = cand[c];
        }
    }
    return n;
}

/* The GEMM sweep's state: cuBLAS, the types, one pool for each input
 * operand (a shape's rotated copies lie in it one after another) and one
 * output, and NVML's meters over every timed loop and over a row's. */
struct gemm_bench {
    cublasHandle_t h;
    cudaDataType_t ct;
    cublasComputeType_t cp;
    char *pool[2];
    size_t pool_bytes;
    char *out;
    size_t l2_bytes;
    struct gpu_clock *clock;    /* NULL: no NVML */
    struct gpu_meter all, row;
};

/* One of a shape's three GEMMs as cuBLAS takes it (transa, transb, m, n,
 * k, lda, ldb, ldc; column-major as run_linear in exec.cu), the bytes of
 * its two inputs, and how many copies of them the launches rotate over. */
struct gemm_call {
    const char *pass;
    cublasOperation_t ta, tb;
    int64_t m, n, k, lda, ldb, ldc;
    size_t a_bytes, b_bytes, a_stride, b_stride;
    int sets;
    int in_l2;                  /* the pools held too few copies to
                                 * fill twice the L2 */
};

static size_t
round_up(size_t x, size_t to)
{
    return (x + to - 1) / to * to;
}

/* The forward, dgrad and wgrad GEMMs of S, each with its rotation: copies
 * until their inputs hold at least twice the L2, at least 2, so that no
 * launch finds its inputs still in L2 from the ones before (CUTLASS's
 * guidelines, "Buffer Rotation"), as many as the pools hold. */
static void
gemm_calls(const struct gemm_bench *gb, const struct shape *s, int es,
           struct gemm_call g3[3])
{
    int64_t M = s->m, N = s->n, K = s->k;
    /* Forward: X (M x K) by W^T; dgrad: dY (M x N) by W; wgrad: X^T by
     * dY, as (element counts of) cuBLAS's A and B. */
    g3[0] = (struct gemm_call){"forward", CUBLAS_OP_T, CUBLAS_OP_N, N, M, K,
                               K, K, N, (size_t)(N * K), (size_t)(M * K),
                               0, 0, 0, 0};
    g3[1] = (struct gemm_call){"dgrad", CUBLAS_OP_N, CUBLAS_OP_N, K, M, N,
                               K, N, K, (size_t)(N * K), (size_t)(M * N),
                               0, 0, 0, 0};
    g3[2] = (struct gemm_call){"wgrad", CUBLAS_OP_N, CUBLAS_OP_T, K, N, M,
                               K, N, K, (size_t)(M * K), (size_t)(M * N),
                               0, 0, 0, 0};
    for (int j = 0; j < 3; j++) {
        struct gemm_call *g = &g3[j];
        g->a_bytes *= (size_t)es;
        g->b_bytes *= (size_t)es;
        g->a_stride = round_up(g->a_bytes, 256);
        g->b_stride = round_up(g->b_bytes, 256);
        size_t both = g->a_bytes + g->b_bytes;
        size_t want = (2 * gb->l2_bytes + both - 1) / both;
        size_t fit_a = gb->pool_bytes / g->a_stride;
        size_t fit_b = gb->pool_bytes / g->b_stride;
        size_t fit = fit_a < fit_b ? fit_a : fit_b;
        want = want < 2 ? 2 : want;
        g->sets = (int)(want < fit ? want : fit);
        g->in_l2 = (size_t)g->sets * both < 2 * gb->l2_bytes;
    }
}

/* Launch G `count` times on stream 0, rotating over its copies from
 * the FIRST-th launch on. */
static int
gemm_launch(struct bench *b, struct gemm_bench *gb, const struct shape *s,
            const struct gemm_call *g, long first, long count)
{
    float alpha = 1.0f / (float)g->k, beta = 0;
    for (long i = first; i < first + count; i++) {
        size_t r = (size_t)(i % g->sets);
        cublasStatus_t st = cublasGemmEx(
            gb->h, g->ta, g->tb, (int)g->m, (int)g->n, (int)g->k, &alpha,
            gb->pool[0] + r * g->a_stride, gb->ct, (int)g->lda,
            gb->pool[1] + r * g->b_stride, gb->ct, (int)g->ldb, &beta,
            gb->out, gb->ct, (int)g->ldc, gb->cp, CUBLAS_GEMM_DEFAULT);
        if (st != CUBLAS_STATUS_SUCCESS)
            return real_fail(b, "%s GEMM of %lldx%lldx%lld: cublasGemmEx: "
                             "%s: %s", g->pass, (long long)s->m,
                             (long long)s->n, (long long)s->k,
                             cublasGetStatusName(st),
                             cublasGetStatusString(st));
    }
    return 0;
}

/* Seconds one launch of G takes, from `count` timed launches; with METER,
 * the SM clock read every 10 ms while they are queued and run, and the
 * energy over them (gpu_clock.h).  Launches go in batches so that the
 * readings cover the whole loop: a full launch queue blocks the host.  A
 * batch that has not finished after BENCH_TIMEOUT_S is a hang. */
#define GEMM_LAUNCH_BATCH 64

/* A clock reading into both meters when 10 ms have passed since *LAST. */
static void
gemm_sample(struct gemm_bench *gb, double *last)
{
    double now = host_clock_s();
    if (now - *last >= 0.01) {
        gpu_clock_sample(gb->clock, &gb->all, &gb->row);
        *last = now;
    }
}

static int
gemm_time(struct bench *b, struct gemm_bench *gb, const struct shape *s,
          const struct gemm_call *g, long count, int meter, double *seconds)
{
    meter = meter && gb->clock != NULL;
    struct gpu_interval iv;
    if (meter)
        gpu_clock_begin(gb->clock, &iv);
    double t0 = host_clock_s(), last = t0;
    CUDA_TRY(b, cudaEventRecord(b->ev0[0], b->st[0]));
    for (long done = 0; done < count; done += GEMM_LAUNCH_BATCH) {
        long n = count - done < GEMM_LAUNCH_BATCH ? count - done
                                                  : GEMM_LAUNCH_BATCH;
        if (gemm_launch(b, gb, s, g, done, n) != 0)
            return -1;
        if (meter)
            gemm_sample(gb, &last);
    }
    CUDA_TRY(b, cudaEventRecord(b->ev1[0], b->st[0]));
    /* Poll, never sleep past the end: the GPU must not idle between the
     * timed loops. */
    cudaError_t e;
    while ((e = cudaEventQuery(b->ev1[0])) == cudaErrorNotReady) {
        if (host_clock_s() - t0 > BENCH_TIMEOUT_S)
            return real_fail(b, "%s GEMM of %lldx%lldx%lld: %ld launches "
                             "not done after %.0f s", g->pass,
                             (long long)s->m, (long long)s->n,
                             (long long)s->k, count, BENCH_TIMEOUT_S);
        if (meter)
            gemm_sample(gb, &last);
        sched_yield();
    }
    if (meter)
        gpu_clock_end(gb->clock, &iv, &gb->all, &gb->row);
    float ms = 0;
    if (e == cudaSuccess)
        e = cudaEventElapsedTime(&ms, b->ev0[0], b->ev1[0]);
    if (e != cudaSuccess)
        return cuda_fail(b, e);
    *seconds = ms * 1e-3 / (double)count;
    return 0;
}

/* One launch of G, untimed (cuBLAS picks its algorithm and loads its
 * kernel on a shape's first call), then two timed for *ONE, the seconds
 * a launch takes. */
static int
gemm_probe(struct bench *b, struct gemm_bench *gb, const struct shape *s,
           const struct gemm_call *g, double *one)
{
    if (gemm_launch(b, gb, s, g, 0, 1) != 0)
        return -1;
    CUDA_TRY(b, cudaStreamSynchronize(b->st[0]));
    return gemm_time(b, gb, s, g, 2, 0, one);
}

/* G timed over at least `iters` launches and GEMM_TIMED_S (at most
 * GEMM_MAX_ITERS launches): gemm_probe for the count, and the timing
 * again with more launches when the first fell short of the time. */
static int
gemm_measure(struct bench *b, struct gemm_bench *gb, const struct shape *s,
             const struct gemm_call *g, int iters, double *seconds)
{
    double one = 0;
    if (gemm_probe(b, gb, s, g, &one) != 0)
        return -1;
    for (int pass = 0; pass < 2; pass++) {
        long n = one > 0 ? (long)(GEMM_TIMED_S / one) + 1 : iters;
        n = n < iters ? iters : n > GEMM_MAX_ITERS ? GEMM_MAX_ITERS : n;
        if (gemm_time(b, gb, s, g, n, 1, seconds) != 0)
            return -1;
        if (*seconds * n >= GEMM_TIMED_S || n == GEMM_MAX_ITERS
            || !(*seconds > 0))
            break;
        one = *seconds;
    }
    return 0;
}

/* Back-to-back launches of G until GEMM_WARMUP_S have passed on the host
 * clock, in batches of about 50 ms so that the loop notices the time. */
static int
gemm_warmup(struct bench *b, struct gemm_bench *gb, const struct shape *s,
            const struct gemm_call *g)
{
    double one = 0;
    if (gemm_probe(b, gb, s, g, &one) != 0)
        return -1;
    long batch = one > 0 ? (long)(0.05 / one) : 1000;
    batch = batch < 1 ? 1 : batch > GEMM_MAX_ITERS ? GEMM_MAX_ITERS : batch;
    double t0 = host_clock_s();
    while (host_clock_s() - t0 < GEMM_WARMUP_S) {
        if (gemm_launch(b, gb, s, g, 0, batch) != 0)
            return -1;
        CUDA_TRY(b, cudaStreamSynchronize(b->st[0]));
    }
    return 0;
}

/* Allocate and fill GB's pools for shapes whose largest operand is NEED
 * bytes: each pool twice that, or that plus twice the L2 (the copies of
 * the smallest shapes), whichever is more, as far as half the free memory
 * allows. */
static int
gemm_pools(struct bench *b, struct gemm_bench *gb, size_t need)
{
    size_t pool = 2 * need;
    if (need + 2 * gb->l2_bytes > pool)
        pool = need + 2 * gb->l2_bytes;
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess
        && 2 * pool + need > free_b / 2 && 2 * (2 * need) + need <= free_b)
        pool = 2 * need;
    gb->pool_bytes = pool;
    for (int k = 0; k < 2; k++) {
        cudaError_t e = cudaMalloc(&gb->pool[k], pool);
        if (e != cudaSuccess)
            return real_fail(b, "cudaMalloc of %zu bytes: %s: %s", pool,
                             cudaGetErrorName(e), cudaGetErrorString(e));
        size_t n = pool / (size_t)b->es;
        CUDA_TRY(b, fill_uniform(gb->pool[k], n, gb->ct, (unsigned)(k + 1),
                                 grid(n), b->st[0]));
    }
    cudaError_t e = cudaMalloc(&gb->out, need);
    if (e != cudaSuccess)
        return real_fail(b, "cudaMalloc of %zu bytes: %s: %s", need,
                         cudaGetErrorName(e), cudaGetErrorString(e));
    return 0;
}

/* Forward, dgrad and wgrad of each shape on GPU 0, TFLOPS to stdout. */
static int
gemm_sweep(struct bench *b)
{
    b->stage = "GEMM sweep";
    struct shape sh[MAX_SHAPES];
    int ns = gemm_shapes(b->o, b->es, sh);
    if (ns == 0)
        return 0;
    size_t need = 0;
    int big = 0;
    for (int i = 0; i < ns; i++) {
        if (sh[i].m > INT_MAX || sh[i].n > INT_MAX || sh[i].k > INT_MAX)
            return real_fail(b, "GEMM %lldx%lldx%lld: a dimension above "
                             "cuBLAS's int (lower --micro-batch or "
                             "--seq-len)", (long long)sh[i].m,
                             (long long)sh[i].n, (long long)sh[i].k);
        size_t x = (size_t)(sh[i].m * sh[i].k), w = (size_t)(sh[i].n * sh[i].k);
        size_t y = (size_t)(sh[i].m * sh[i].n);
        size_t mx = x > w ? x : w;
        mx = mx > y ? mx : y;
        need = mx > need ? mx : need;
        if (sh[i].m * sh[i].n * sh[i].k > sh[big].m * sh[big].n * sh[big].k)
            big = i;
    }
    /* A multiple of the copies' 256-byte alignment, so that two copies
     * of the largest operand always fit a pool of twice it. */
    need = round_up(need * (size_t)b->es, 256);
    CUDA_TRY(b, cudaSetDevice(0));
    cudaDeviceProp prop;
    CUDA_TRY(b, cudaGetDeviceProperties(&prop, 0));
    struct gemm_bench gb;
    memset(&gb, 0, sizeof gb);
    gb.l2_bytes = (size_t)prop.l2CacheSize;
    gb.ct = b->dt == DTYPE_BF16   ? CUDA_R_16BF
            : b->dt == DTYPE_FP16 ? CUDA_R_16F
                                  : CUDA_R_32F;
    gb.cp = b->o->dtype == DTYPE_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                      : CUBLAS_COMPUTE_32F;
    CUBLAS_TRY(b, cublasCreate(&gb.h));
    gb.clock = gpu_clock_open(0);
    gpu_clock_meter(gb.clock, &gb.all);
    int rc = gemm_pools(b, &gb, need);
    if (rc == 0)
        cublasSetStream(gb.h, b->st[0]);
    int iters = b->o->iters > 0 ? b->o->iters : 20;
    double flops = 0, seconds = 0;
    int in_l2 = 0;
    if (rc == 0) {
        printf("\nGEMM sweep on GPU 0 (%s, TFLOPS; M tokens, N out, K in; "
               "inputs uniform in [-1, 1], rotated over copies of twice "
               "the %zu MiB L2; after %.0f s of back-to-back GEMMs, each "
               "timed over at least %d launches and %.2f s, at most %d "
               "launches)\n", dtype_name(b->dt), gb.l2_bytes >> 20,
               GEMM_WARMUP_S, iters, GEMM_TIMED_S, GEMM_MAX_ITERS);
        printf("%8s %8s %8s %9s %9s %9s %7s %6s\n", "M", "N", "K",
               "forward", "dgrad", "wgrad", "SM MHz", "W");
        struct gemm_call g3[3];
        gemm_calls(&gb, &sh[big], b->es, g3);
        rc = gemm_warmup(b, &gb, &sh[big], &g3[0]);
    }
    for (int i = 0; i < ns && rc == 0; i++) {
        int64_t M = sh[i].m, N = sh[i].n, K = sh[i].k;
        struct gemm_call g3[3];
        gemm_calls(&gb, &sh[i], b->es, g3);
        gpu_clock_meter(gb.clock, &gb.row);
        double tf[3];
        for (int j = 0; j < 3 && rc == 0; j++) {
            double s = 0;
            in_l2 |= g3[j].in_l2;
            rc = gemm_measure(b, &gb, &sh[i], &g3[j], iters, &s);
            tf[j] = s > 0 ? 2.0 * M * N * K / s / 1e12 : 0;
            /* kernel.c's shapes: forward (tokens, out, in), dgrad
             * (tokens, in, out), wgrad (out, in, tokens). */
            struct bench_measure *cm = &b->res->compute;
            if (rc == 0 && s > 0 && cm->n < BENCH_MAX_SAMPLES) {
                struct bench_sample *x = &cm->s[cm->n++];
                x->cls = KERNEL_GEMM;
                x->m = j == 2 ? N : M;
                x->n = j == 0 ? N : K;
                x->k = j == 0 ? K : j == 1 ? N : M;
                x->seconds = s;
            }
            if (rc == 0 && s > 0) {
                flops += 2.0 * M * N * K;
                seconds += s;
            }
        }
        if (rc != 0)
            break;
        struct gpu_state rs = gpu_meter_state(&gb.row);
        char mhz[16] = "-", w[16] = "-";
        if (rs.samples > 0)
            snprintf(mhz, sizeof mhz, "%.0f", rs.sm_mhz);
        if (rs.watts >= 0)
            snprintf(w, sizeof w, "%.0f", rs.watts);
        printf("%8lld %8lld %8lld %9.1f %9.1f %9.1f %7s %6s\n",
               (long long)M, (long long)N, (long long)K, tf[0], tf[1],
               tf[2], mhz, w);
    }
    if (rc == 0) {
        if (in_l2)
            printf("(some GEMMs' inputs, all their copies together, fit "
                   "in twice the L2: those read partly from L2)\n");
        b->res->compute.clock = gpu_meter_state(&gb.all);
        gpu_state_print(stdout, "", BENCH_CLOCK_WHAT,
                        &b->res->compute.clock);
    }
    gpu_clock_close(gb.clock);
    for (int k = 0; k < 2; k++)
        cudaFree(gb.pool[k]);
    cudaFree(gb.out);
    cublasDestroy(gb.h);
    if (rc == 0 && seconds > 0)
        b->res->gemm_flops_per_s = flops / seconds;
    return rc;
}

/* A device-memory streaming copy, 16 bytes a thread, as PyTorch's
 * vectorised elementwise kernels move data. */
__global__ void
k_stream_copy(const float4 *__restrict__ in, float4 *__restrict__ out,
              size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride)
        out[i] = in[i];
}

/* HBM: the copy kernel at 64 KiB to 256 MiB (x4), each size one sample
 * of its read + write bytes: the large ones fix the achievable share of
 * the bandwidth, the small ones the kernel's latency floor. */
static int
hbm_sweep(struct bench *b)
{
    b->stage = "HBM sweep";
    CUDA_TRY(b, cudaSetDevice(0));
    void *src = NULL, *dst = NULL;
    CUDA_TRY(b, cudaMalloc(&src, COPY_MAX_BYTES));
    cudaError_t e = cudaMalloc(&dst, COPY_MAX_BYTES);
    if (e == cudaSuccess) {
        /* Data as a training run's, not zeros (see the GEMM sweep). */
        size_t n = COPY_MAX_BYTES / sizeof(float);
        e = fill_uniform(src, n, CUDA_R_32F, 7u, grid(n), b->st[0]);
    }
    if (e != cudaSuccess) {
        cudaFree(src);
        cudaFree(dst);
        return cuda_fail(b, e);
    }
    printf("\nDevice-memory copy kernel, GPU 0 (read + write GB/s, us)\n");
    printf("%12s %9s %9s\n", "bytes", "GB/s", "us");
    int iters = b->o->iters > 0 ? b->o->iters : 20;
    int rc = 0;
    for (size_t sz = (size_t)64 << 10; sz <= COPY_MAX_BYTES && rc == 0;
         sz *= 4) {
        size_t n = sz / sizeof(float4);
        int g = (int)((n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096);
        float ms = 0;
        for (int it = 0; it < iters + 2; it++) {
            if (it == 2)
                cudaEventRecord(b->ev0[0], b->st[0]);
            k_stream_copy<<<g, 256, 0, b->st[0]>>>((const float4 *)src,
                                                  (float4 *)dst, n);
        }
        rc = stop_timer_gpu0(b, cudaGetLastError(), &ms);
        if (rc != 0)
            break;
        double s = ms * 1e-3 / iters;
        printf("%12zu %9.1f %9.2f\n", sz, s > 0 ? 2.0 * sz / s / 1e9 : 0,
               s * 1e6);
        struct bench_measure *cm = &b->res->compute;
        if (s > 0 && cm->n < BENCH_MAX_SAMPLES) {
            struct bench_sample *x = &cm->s[cm->n++];
            x->cls = KERNEL_ELEMENTWISE;
            x->bytes = 2.0 * (double)sz;
            x->seconds = s;
        }
    }
    cudaFree(src);
    cudaFree(dst);
    return rc;
}

/* Pinned host <-> GPU 0 copy bandwidth at a few sizes. */
static int
copy_sweep(struct bench *b)
{
    b->stage = "copy sweep";
    CUDA_TRY(b, cudaSetDevice(0));
    void *host = NULL, *dev = NULL;
    CUDA_TRY(b, cudaMallocHost(&host, COPY_MAX_BYTES));
    cudaError_t e = cudaMalloc(&dev, COPY_MAX_BYTES);
    if (e != cudaSuccess) {
        cudaFreeHost(host);
        return real_fail(b, "cudaMalloc of %zu bytes: %s: %s",
                          COPY_MAX_BYTES, cudaGetErrorName(e),
                          cudaGetErrorString(e));
    }
    memset(host, 1, COPY_MAX_BYTES);
    printf("\nHost<->device copies, pinned memory, GPU 0 (GB/s)\n");
    printf("%12s %9s %9s\n", "bytes", "H2D", "D2H");
    int iters = b->o->iters > 0 ? b->o->iters : 20;
    int rc = 0;
    for (size_t sz = (size_t)1 << 20; sz <= COPY_MAX_BYTES && rc == 0;
         sz *= 16) {
        double bw[2];
        for (int dir = 0; dir < 2 && rc == 0; dir++) {
            enum cudaMemcpyKind kind = dir == 0 ? cudaMemcpyHostToDevice
                                                : cudaMemcpyDeviceToHost;
            void *dst = dir == 0 ? dev : host, *src = dir == 0 ? host : dev;
            float ms = 0;
            e = cudaMemcpyAsync(dst, src, sz, kind, b->st[0]);
            if (e == cudaSuccess)
                e = cudaEventRecord(b->ev0[0], b->st[0]);
            for (int i = 0; i < iters && e == cudaSuccess; i++)
                e = cudaMemcpyAsync(dst, src, sz, kind, b->st[0]);
            rc = stop_timer_gpu0(b, e, &ms);
            bw[dir] = ms > 0 ? (double)sz * iters / (ms * 1e-3) / 1e9 : 0;
        }
        if (rc == 0) {
            printf("%12zu %9.2f %9.2f\n", sz, bw[0], bw[1]);
            /* The largest size is the one bandwidth-bound offload copies
             * (whole shards) resemble. */
            b->res->h2d_Bps = bw[0] * 1e9;
            b->res->d2h_Bps = bw[1] * 1e9;
        }
    }
    cudaFree(dev);
    cudaFreeHost(host);
    return rc;
}

/* ---- Entry ---------------------------------------------------------- */

static int
bench_setup(struct bench *b)
{
    int n = b->n;
    b->comm = (ncclComm_t *)xcalloc(n, sizeof *b->comm);
    b->st = (cudaStream_t *)xcalloc(n, sizeof *b->st);
    b->ev0 = (cudaEvent_t *)xcalloc(n, sizeof *b->ev0);
    b->ev1 = (cudaEvent_t *)xcalloc(n, sizeof *b->ev1);
    b->send = (char **)xcalloc(n, sizeof *b->send);
    b->recv = (char **)xcalloc(n, sizeof *b->recv);
    b->wrong = (unsigned long long **)xcalloc(n, sizeof *b->wrong);
    int *devs = (int *)xcalloc(n, sizeof(int));
    for (int g = 0; g < n; g++)
        devs[g] = g;
    ncclResult_t r = ncclCommInitAll(b->comm, n, devs);
    free(devs);
    if (r != ncclSuccess) {
        memset(b->comm, 0, sizeof *b->comm * n);
        return real_fail(b, "ncclCommInitAll over %d GPU(s): %s: %s", n,
                          ncclGetErrorString(r), ncclGetLastError(NULL));
    }
    for (int g = 0; g < n; g++) {
        char what[64];
        snprintf(what, sizeof what, "set-up of GPU %d", g);
        b->stage = what;    /* read only by real_fail, in this loop */
        CUDA_TRY(b, cudaSetDevice(g));
        CUDA_TRY(b, cudaStreamCreateWithFlags(&b->st[g],
                                              cudaStreamNonBlocking));
        CUDA_TRY(b, cudaEventCreate(&b->ev0[g]));
        CUDA_TRY(b, cudaEventCreate(&b->ev1[g]));
        cudaError_t e = cudaMalloc(&b->send[g], b->max_bytes);
        if (e == cudaSuccess)
            e = cudaMalloc(&b->recv[g], b->max_bytes);
        if (e != cudaSuccess)
            return real_fail(b, "cudaMalloc of 2 x %zu bytes (lower "
                             "--maxbytes): %s: %s", b->max_bytes,
                             cudaGetErrorName(e), cudaGetErrorString(e));
        CUDA_TRY(b, cudaMalloc(&b->wrong[g], sizeof **b->wrong));
    }
    b->stage = NULL;
    return 0;
}

static void
bench_teardown(struct bench *b, int ok)
{
    /* Finalize and abort are intra-node collective calls: one thread
     * driving every rank groups them. */
    if (b->comm != NULL) {
        ncclGroupStart();
        for (int g = 0; g < b->n; g++)
            if (b->comm[g] != NULL) {
                cudaSetDevice(g);
                if (ok)
                    ncclCommFinalize(b->comm[g]);
                else
                    ncclCommAbort(b->comm[g]);
            }
        ncclGroupEnd();
    }
    for (int g = 0; g < b->n && b->comm != NULL; g++) {
        cudaSetDevice(g);
        if (ok && b->comm[g] != NULL)
            ncclCommDestroy(b->comm[g]);
        if (b->st[g] != NULL)
            cudaStreamDestroy(b->st[g]);
        if (b->ev0[g] != NULL)
            cudaEventDestroy(b->ev0[g]);
        if (b->ev1[g] != NULL)
            cudaEventDestroy(b->ev1[g]);
        cudaFree(b->send[g]);
        cudaFree(b->recv[g]);
        cudaFree(b->wrong[g]);
    }
    free(b->comm);
    free(b->st);
    free(b->ev0);
    free(b->ev1);
    free(b->send);
    free(b->recv);
    free(b->wrong);
}

/* Returns 0, 1 when some collective produced wrong data (*cause says
 * which), or REAL_EXIT_SYSTEM with *cause (caller frees). */
extern "C" int
real_bench(const struct real_launch *l, const struct real_bench_options *o,
           FILE *nccl_tests_out, struct real_bench_result *res, char **cause)
{
    memset(res, 0, sizeof *res);
    if (l->nodes > 1) {
        *cause = xasprintf("real bench measures one node; across nodes "
                           "run nccl-tests (all_gather_perf, "
                           "reduce_scatter_perf, all_reduce_perf with "
                           "mpirun) and give its output to 'fsdpsim "
                           "calibrate'");
        return REAL_EXIT_SYSTEM;
    }
    int have = 0;
    if (real_probe(&have, cause) != 0)
        return REAL_EXIT_SYSTEM;
    struct bench b;
    memset(&b, 0, sizeof b);
    b.o = o;
    b.res = res;
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
        snprintf(res->gpu_name, sizeof res->gpu_name, "%s", prop.name);
    b.n = l->gpus > 0 ? l->gpus : have;
    if (b.n > have) {
        *cause = xasprintf("asked for %d GPUs but CUDA sees %d (check "
                           "CUDA_VISIBLE_DEVICES)", b.n, have);
        return REAL_EXIT_SYSTEM;
    }
    b.dt = o->dtype == DTYPE_BF16 || o->dtype == DTYPE_FP16 ? o->dtype
                                                            : DTYPE_FP32;
    b.es = dtype_bytes(b.dt);
    res->compute.dtype = b.dt;
    double maxb = o->max_bytes > 0 ? o->max_bytes : (double)(128 << 20);
    b.max_bytes = (size_t)maxb;
    size_t unit = (size_t)b.es * (size_t)b.n;
    if (b.max_bytes < unit)
        b.max_bytes = unit;

    int rc = 0;
    if (bench_setup(&b) != 0) {
        rc = REAL_EXIT_SYSTEM;
    } else {
        static const enum coll_op ops[3] = {COLL_ALLGATHER,
                                            COLL_REDUCESCATTER,
                                            COLL_ALLREDUCE};
        unsigned long long wrong[3] = {0, 0, 0};
        double best[3], at[3];
        for (int i = 0; i < 3 && rc == 0; i++)
            if (sweep(&b, ops[i], nccl_tests_out, &wrong[i], &best[i],
                      &at[i]) != 0)
                rc = REAL_EXIT_SYSTEM;
        if (rc == 0) {
            printf("Collectives over %d GPU(s), %s (nccl-tests busbw, "
                   "out-of-place)\n", b.n, type_name(b.dt));
            printf("%-20s %14s %12s %8s\n", "collective", "best GB/s",
                   "at bytes", "#wrong");
            for (int i = 0; i < 3; i++)
                printf("%-20s %14.2f %12.0f %8llu\n",
                       nccl_tests_program(ops[i]), best[i], at[i],
                       wrong[i]);
        }
        if (rc == 0 && gemm_sweep(&b) != 0)
            rc = REAL_EXIT_SYSTEM;
        if (rc == 0 && hbm_sweep(&b) != 0)
            rc = REAL_EXIT_SYSTEM;
        if (rc == 0 && copy_sweep(&b) != 0)
            rc = REAL_EXIT_SYSTEM;
        if (rc == 0 && wrong[0] + wrong[1] + wrong[2] > 0) {
            b.cause = xasprintf("wrong data: %llu elements in all_gather, "
                                "%llu in reduce_scatter, %llu in "
                                "all_reduce", wrong[0], wrong[1], wrong[2]);
            rc = 1;
        }
    }
    fflush(stdout);
    bench_teardown(&b, rc != REAL_EXIT_SYSTEM);
    if (rc != 0)
        *cause = b.cause ? b.cause : xstrdup("real bench failed");
    else
        free(b.cause);
    return rc;
}
