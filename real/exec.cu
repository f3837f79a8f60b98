/*
 * exec.cu: real mode, the schedule executed on this node's GPUs.
 *
 * One host thread per GPU walks the very op list the simulator runs
 * (sched.h), in host issue order, and issues each op to the CUDA stream the
 * schedule names:
 *
 *   - compute ops run every leaf of their range with the leaf's real shapes
 *     and the param dtype: a Linear as cuBLAS GEMMs (1 forward, dgrad and
 *     wgrad backward), attention as strided-batched GEMMs (QK^T and PV
 *     forward, the five FlashAttention-2 backward matmuls), causal masks by
 *     splitting the queries into chunks that only see earlier keys; every
 *     other leaf as a memory-streaming kernel moving the bytes layer_work()
 *     gives, split into its kernel count;
 *   - collectives become NCCL calls on the communicator of their process
 *     group, on the buffers the schedule allocated;
 *   - dependencies become cudaStreamWaitEvent on the end event of the op
 *     depended on; collectives also wait for the previous collective of
 *     their communicator, which NCCL enforces anyway (doc/fsdp-semantics.md
 *     §2.3), so that their start events mark when they really start;
 *   - ALLOC and FREE use a stream-ordered memory pool, one per GPU: a block
 *     whose last use ran on its pool's stream is freed on that stream (and
 *     reusable there at once, as PyTorch's caching allocator does); one
 *     used on another stream is freed on a side stream after the last
 *     use's end event (record_stream), and reusable once that free has
 *     happened, never by making a later allocation wait for it;
 *   - CPU_WAIT blocks the host thread until its event has completed.
 *
 * Every op gets a start and an end cudaEvent; after the timed pass their
 * times relative to a common start event become the struct engine_result
 * the simulator fills, so `fsdpsim compare` matches prediction and
 * measurement op by op.  Host-side ops (ALLOC, FREE, CPU_WAIT, the HOST
 * stream's optimizer) are timed with the host's monotonic clock, aligned
 * to the start event by synchronising on it once; host times are thus
 * late by the wake-up latency of that synchronisation (a few microseconds).
 *
 * Warm-up: before the timed pass the ops of the first `warmup` steps run
 * untimed (NCCL connection set-up, cuBLAS heuristics, pool growth); the
 * pool is then emptied and trimmed, so the timed pass starts cold exactly
 * as the simulation does, and runs the whole list (all s->iterations
 * steps).  Only local GPU 0 (rank node_rank * gpus) is reported; the
 * others run the same list for their collectives.
 *
 * Assumptions: one process per node drives all its GPUs (one thread
 * each); across nodes the processes have met through sim/rendezvous.c,
 * which carries the NCCL unique ids.  Operand contents are scratch values: only the timing
 * and the memory footprint are real.  Scratch operands (sized for the
 * largest leaf, capped) live outside the ledger's pool.
 */
extern "C" {
#include "real.h"
#include "cost.h"
#include "layer.h"
#include "mem.h"
#include "rendezvous.h"
#include "xalloc.h"
}

#include <cuda_sys.h>  /* bracket: found via -I real/, see there */

#include <atomic>

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Caps on scratch operands: each region holds at most this much; bigger
 * GEMMs are split along the token dimension, attention along the
 * batch x head dimension.  512 MiB keeps every chunk far beyond the L2
 * cache, so the split costs nothing measurable. */
#define SCRATCH_CAP_BYTES ((size_t)512 << 20)
/* Memory-streaming kernels read one half and write the other. */
#define STREAM_REGION_BYTES ((size_t)256 << 20)
/* cuBLAS workspace (NVIDIA recommends 32 MiB on Hopper). */
#define BLAS_WORKSPACE_BYTES ((size_t)32 << 20)
/* Pinned host buffer for H2D/D2H copies, at most; bigger copies loop. */
#define PINNED_CAP_BYTES ((size_t)256 << 20)
/* Host optimizer (CPU offload): streams over at most this much. */
#define HOST_OPT_CAP_BYTES ((size_t)128 << 20)
/* Queries of a causal attention are split into at most this many chunks
 * (executed FLOPs (c+1)/(2c) of the full product: 0.53 for 16). */
#define CAUSAL_CHUNKS 16
/* How often a waiting thread checks NCCL and the other threads, in ns. */
#define POLL_SLEEP_NS 20000
/* How long, after a failure, the main thread lets the GPU threads stop by
 * themselves before aborting their communicators under them. */
#define ABORT_GRACE_NS INT64_C(10000000000)

struct exec_run;

/* One GPU, driven by one host thread.  Times are ns relative to the timed
 * pass's start (t0 event on the GPU, host_t0 on the host clock). */
struct gpu {
    struct exec_run *run;
    int local, rank, dev;
    pthread_t thread;
    int started;
    cudaStream_t st[STREAM_COUNT];      /* STREAM_HOST entry unused */
    cudaStream_t free_st[STREAM_COUNT]; /* record_stream frees per pool */
    cudaEvent_t *ev_start, *ev_end;     /* per op */
    cudaEvent_t t0, tail[2 * STREAM_COUNT];
    ncclComm_t comm[PG_COUNT];
    pthread_mutex_t comm_mu;            /* guards aborting comm[] */
    int comms_dead;
    cublasHandle_t blas;
    void *blas_ws;
    cudaMemPool_t pool;
    int have_pool;
    /* Scratch: x/w/y operand regions, stream region (read | write). */
    void *sx, *sw, *sy, *sstream;
    void *pinned;
    size_t pinned_bytes;
    float *host_opt;                    /* HOST optimizer, 2 halves */
    size_t host_opt_bytes;
    int sms;
    void **ptr;                         /* per buffer id */
    uint64_t *ptr_bytes;
    unsigned char *issued;              /* per op, this pass */
    int64_t *h_issue, *h_start, *h_end; /* host clock, per op */
    int64_t host_t0;
    int cur_op;                         /* for messages; -1 in set-up */
    int done_lo;                        /* ops below have finished */
    int rc;
    char *cause;
    int64_t peak_reserved, peak_used;
};

struct exec_run {
    const struct sched *s;
    const struct topo *t;
    const struct real_options *o;
    const struct real_launch *l;
    int n;                              /* local GPUs */
    struct gpu *g;
    struct layer_work *work;            /* per leaf */
    int esize;                          /* param dtype bytes */
    cudaDataType_t ctype;
    cublasComputeType_t compute;
    size_t need_x, need_w, need_y;      /* scratch bytes */
    size_t need_pinned, need_host_opt;
    int uses_pg[PG_COUNT];
    int pg_size[PG_COUNT];
    int warm_iters, warm_passes;
    std::atomic<int> abort;             /* a thread failed */
    std::atomic<int> first_fail;        /* its local index + 1 */
    /* Barrier that gives up when abort is set. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int bar_count, bar_gen;
};

/* ---- Clocks and messages -------------------------------------------- */

static int64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void
nap(void)
{
    struct timespec ts = {0, POLL_SLEEP_NS};
    nanosleep(&ts, NULL);
}

/* "op 42 (allgather unit 3)" or "set-up"; into buf. */
static const char *
op_desc(const struct sched *s, int id, char *buf, size_t len)
{
    if (id < 0 || id >= s->n_ops) {
        snprintf(buf, len, "set-up");
        return buf;
    }
    const struct sched_op *op = &s->ops[id];
    snprintf(buf, len, "op %d (%s unit %d, stream %s)", id,
             sched_op_kind_name(op->kind), op->unit,
             sched_stream_name(op->stream));
    return buf;
}

/* Record the first failure of this GPU: "<op> on rank R: <what>"; what is
 * printf-formatted.  Returns -1 for `return gpu_fail(...)`. */
static int gpu_fail(struct gpu *g, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int
gpu_fail(struct gpu *g, const char *fmt, ...)
{
    if (g->cause == NULL) {
        va_list ap;
        va_start(ap, fmt);
        char *what = xvasprintf(fmt, ap);
        va_end(ap);
        char d[128];
        g->cause = xasprintf("%s on rank %d: %s",
                             op_desc(g->run->s, g->cur_op, d, sizeof d),
                             g->rank, what);
        free(what);
    }
    g->rc = -1;
    return -1;
}

/* The call's function name: "cudaMallocAsync" from "cudaMallocAsync(&p,
 * ...)". */
static char *
call_name(const char *call, char *buf, size_t len)
{
    size_t n = strcspn(call, "(");
    if (n >= len)
        n = len - 1;
    memcpy(buf, call, n);
    buf[n] = '\0';
    return buf;
}

/* Library errors (house-style CUDA_TRY/NCCL_TRY, as nccl-tests'
 * CUDACHECK): the call, the library's name and string for the error,
 * file:line; the enclosing function returns -1. */
#define CUDA_TRY(g, call)                                                    \
    do {                                                                     \
        cudaError_t e__ = (call);                                            \
        if (e__ != cudaSuccess) {                                            \
            char n__[64];                                                    \
            return gpu_fail((g), "%s: %s: %s (%s:%d)",                       \
                            call_name(#call, n__, sizeof n__),               \
                            cudaGetErrorName(e__), cudaGetErrorString(e__),  \
                            __FILE__, __LINE__);                             \
        }                                                                    \
    } while (0)

#define NCCL_TRY(g, comm, call)                                              \
    do {                                                                     \
        ncclResult_t r__ = (call);                                           \
        if (r__ != ncclSuccess && r__ != ncclInProgress) {                   \
            char n__[64];                                                    \
            const char *l__ = ncclGetLastError(comm);                        \
            return gpu_fail((g), "%s: %s%s%s (%s:%d)",                       \
                            call_name(#call, n__, sizeof n__),               \
                            ncclGetErrorString(r__),                         \
                            l__ && *l__ ? ": " : "", l__ ? l__ : "",         \
                            __FILE__, __LINE__);                             \
        }                                                                    \
    } while (0)

#define CUBLAS_TRY(g, call)                                                  \
    do {                                                                     \
        cublasStatus_t s__ = (call);                                         \
        if (s__ != CUBLAS_STATUS_SUCCESS) {                                  \
            char n__[64];                                                    \
            return gpu_fail((g), "%s: %s: %s (%s:%d)",                       \
                            call_name(#call, n__, sizeof n__),               \
                            cublasGetStatusName(s__),                        \
                            cublasGetStatusString(s__), __FILE__, __LINE__); \
        }                                                                    \
    } while (0)

#define TRY(x)                                                               \
    do {                                                                     \
        if ((x) != 0)                                                        \
            return -1;                                                       \
    } while (0)

/* ---- Probe ---------------------------------------------------------- */

extern "C" int
real_probe(int *gpus, char **cause)
{
    int n = 0;  /* left unchanged when the call fails */
    cudaError_t e = cudaGetDeviceCount(&n);
    *gpus = 0;
    if (e != cudaSuccess) {
        *cause = xasprintf("no usable GPU: cudaGetDeviceCount: %s: %s",
                           cudaGetErrorName(e), cudaGetErrorString(e));
        return REAL_EXIT_SYSTEM;
    }
    if (n <= 0) {
        *cause = xstrdup("no usable GPU: cudaGetDeviceCount found none");
        return REAL_EXIT_SYSTEM;
    }
    *gpus = n;
    return 0;
}

/* ---- Kernels -------------------------------------------------------- */

/* Stream n_read 16-byte words from src and write n_write to dst, in one
 * grid-stride pass; `never` is 0 at run time and keeps the loads alive
 * when there is nothing to store them to. */
__global__ void
k_stream(const uint4 *__restrict__ src, uint4 *__restrict__ dst,
         size_t n_read, size_t n_write, int never)
{
    size_t n = n_read > n_write ? n_read : n_write;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    unsigned acc = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        uint4 v = make_uint4(acc, acc, acc, acc);
        if (i < n_read) {
            v = __ldg(src + i);
            acc ^= v.x ^ v.w;
        }
        if (i < n_write)
            dst[i] = v;
    }
    if (never && acc == 0x9e3779b9u)
        dst[0].x = acc;
}

/* Values in [-1, 1) from a hash of the index, so GEMMs see ordinary
 * numbers (uninitialised memory may hold NaNs or zeros, which change a
 * GPU's power draw and so its clocks). */
template <typename T>
__global__ void
k_fill(T *p, size_t n, unsigned seed)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        unsigned h = (unsigned)i * 2654435761u ^ seed;
        h ^= h >> 15;
        h *= 2246822519u;
        h ^= h >> 13;
        p[i] = (T)((float)(h & 0xffff) / 32768.0f - 1.0f);
    }
}

static int
blocks_for(const struct gpu *g, size_t n)
{
    size_t b = (n + 255) / 256;
    size_t cap = (size_t)g->sms * 8;
    if (b > cap)
        b = cap;
    return b < 1 ? 1 : (int)b;
}

/* Read `rd` bytes from src and write `wr` bytes to dst on stream st, in
 * `kernels` launches (the leaf's kernel count); each launch stays within
 * the regions given (rd_cap, wr_cap bytes), wrapping around them. */
static int
stream_bytes(struct gpu *g, cudaStream_t st, const void *src, size_t rd_cap,
             void *dst, size_t wr_cap, double rd, double wr, int kernels)
{
    if (kernels < 1)
        kernels = 1;
    size_t rcap = rd_cap / 16, wcap = wr_cap / 16;
    for (int k = 0; k < kernels; k++) {
        double r = rd / kernels, w = wr / kernels;
        /* A launch longer than the regions is split further. */
        do {
            size_t nr = (size_t)(r / 16), nw = (size_t)(w / 16);
            if (nr > rcap)
                nr = rcap;
            if (nw > wcap)
                nw = wcap;
            size_t n = nr > nw ? nr : nw;
            if (n == 0)
                break;
            k_stream<<<blocks_for(g, n), 256, 0, st>>>(
                (const uint4 *)src, (uint4 *)dst, nr, nw, 0);
            CUDA_TRY(g, cudaGetLastError());
            r -= (double)nr * 16;
            w -= (double)nw * 16;
        } while (r >= 16 || w >= 16);
    }
    return 0;
}

/* Streaming over the scratch region (read half, write half). */
static int
stream_scratch(struct gpu *g, cudaStream_t st, double rd, double wr,
               int kernels)
{
    size_t half = STREAM_REGION_BYTES / 2;
    return stream_bytes(g, st, g->sstream, half,
                        (char *)g->sstream + half, half, rd, wr, kernels);
}

/* ---- GEMMs ---------------------------------------------------------- */

/* C = (1/k) op(A) op(B) + beta C, column-major, in the param dtype; the
 * 1/k keeps scratch values in range across passes. */
static int
gemm(struct gpu *g, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
     int64_t n, int64_t k, const void *a, int64_t lda, const void *b,
     int64_t ldb, void *c, int64_t ldc, float beta)
{
    const struct exec_run *r = g->run;
    float alpha = 1.0f / (float)k;
    CUBLAS_TRY(g, cublasGemmEx(g->blas, ta, tb, (int)m, (int)n, (int)k,
                               &alpha, a, r->ctype, (int)lda, b, r->ctype,
                               (int)ldb, &beta, c, r->ctype, (int)ldc,
                               r->compute, CUBLAS_GEMM_DEFAULT));
    return 0;
}

static int
gemm_batched(struct gpu *g, cublasOperation_t ta, cublasOperation_t tb,
             int64_t m, int64_t n, int64_t k, const void *a, int64_t lda,
             int64_t sa, const void *b, int64_t ldb, int64_t sb, void *c,
             int64_t ldc, int64_t sc, float beta, int64_t batch)
{
    const struct exec_run *r = g->run;
    float alpha = 1.0f / (float)k;
    CUBLAS_TRY(g, cublasGemmStridedBatchedEx(
                      g->blas, ta, tb, (int)m, (int)n, (int)k, &alpha, a,
                      r->ctype, (int)lda, sa, b, r->ctype, (int)ldb, sb,
                      &beta, c, r->ctype, (int)ldc, sc, (int)batch,
                      r->compute, CUBLAS_GEMM_DEFAULT));
    return 0;
}

/* Tokens per GEMM chunk so that no token-major operand passes the cap. */
static int64_t
linear_chunk(int64_t m, int64_t n, int64_t k, int esize)
{
    int64_t wide = n > k ? n : k;
    int64_t mc = (int64_t)(SCRATCH_CAP_BYTES / ((size_t)esize * wide));
    if (mc < 1)
        mc = 1;
    return mc < m ? mc : m;
}

/* nn.Linear, y = x W^T with x (M x K), W (N x K), as PyTorch calls cuBLAS:
 * forward (T, N) giving y^T; backward dgrad dx = dy W and wgrad
 * dW = dy^T x.  Operands: x in sx, W in sw, y in sy. */
static int
run_linear(struct gpu *g, int64_t M, int64_t N, int64_t K, int bwd)
{
    int64_t mc = linear_chunk(M, N, K, g->run->esize);
    for (int64_t t = 0; t < M; t += mc) {
        int64_t mm = M - t < mc ? M - t : mc;
        if (!bwd) {
            TRY(gemm(g, CUBLAS_OP_T, CUBLAS_OP_N, N, mm, K, g->sw, K, g->sx,
                     K, g->sy, N, 0.0f));
            continue;
        }
        TRY(gemm(g, CUBLAS_OP_N, CUBLAS_OP_N, K, mm, N, g->sw, K, g->sy, N,
                 g->sx, K, 0.0f));
        TRY(gemm(g, CUBLAS_OP_N, CUBLAS_OP_T, K, N, mm, g->sx, K, g->sy, N,
                 g->sw, K, t > 0 ? 1.0f : 0.0f));
    }
    return 0;
}

/* Attention geometry for one leaf: B = micro_batch x heads (each head
 * its own K and V even under GQA: the FLOPs are the same, the K/V reads
 * slightly more), s queries, `keys` keys visible to a query, head dim d. */
struct attn {
    int64_t batch, s, d, keys;
    int causal;
    int chunks;         /* query chunks */
    int64_t qc;         /* queries per chunk (last may be shorter) */
    int64_t nk_max;     /* keys a chunk sees, at most */
    int64_t nb;         /* batch entries per launch */
};

static void
attn_geometry(int64_t batch, int64_t s, int64_t d, int64_t window,
              int causal, int esize, struct attn *a)
{
    a->batch = batch;
    a->s = s;
    a->d = d;
    a->keys = window > 0 && window < s ? window : s;
    a->causal = causal;
    /* Causal: chunks of at least 128 queries, at most CAUSAL_CHUNKS of
     * them; with a sliding window, chunks of about window/8 queries, each
     * seeing its window plus its own span (9/8 of the band's FLOPs). */
    int64_t qc = s;
    if (causal && a->keys < s)
        qc = a->keys / 8 > 128 ? a->keys / 8 : 128;
    else if (causal)
        qc = s / CAUSAL_CHUNKS > 128 ? s / CAUSAL_CHUNKS : 128;
    qc = qc < s ? qc : s;
    qc = qc > 0 ? qc : 1;
    a->chunks = (int)((s + qc - 1) / qc);
    a->qc = qc;
    /* Keys one chunk sees at most. */
    int64_t nk = causal ? (qc + a->keys - 1 < s ? qc + a->keys - 1 : s)
                        : a->keys;
    a->nk_max = nk;
    /* Per batch entry: 3 query-side and 4 key-side tensors of s x d, two
     * score chunks of qc x nk. */
    size_t tens = (size_t)4 * (size_t)s * (size_t)d;
    size_t score = (size_t)2 * (size_t)qc * (size_t)nk;
    size_t per = (size_t)esize * (tens > score ? tens : score);
    int64_t nb = (int64_t)(SCRATCH_CAP_BYTES / (per ? per : 1));
    nb = nb < 1 ? 1 : nb;
    a->nb = nb < batch ? nb : batch;
}

static void
attn_needs(const struct attn *a, int esize, size_t *x, size_t *w, size_t *y)
{
    size_t t = (size_t)a->nb * (size_t)a->s * (size_t)a->d * (size_t)esize;
    *x = 3 * t;
    *w = 4 * t;
    *y = 2 * (size_t)a->nb * (size_t)a->qc * (size_t)a->nk_max
         * (size_t)esize;
}

/* Query chunk i: queries [q0, q1), keys [lo, q1) causal or [0, keys). */
static void
attn_chunk(const struct attn *a, int i, int64_t *q0, int64_t *nq,
           int64_t *lo, int64_t *nk)
{
    int64_t b = i * a->qc, e = b + a->qc < a->s ? b + a->qc : a->s;
    *q0 = b;
    *nq = e - b;
    if (a->causal) {
        int64_t l = b + 1 - a->keys;
        *lo = l > 0 ? l : 0;
        *nk = e - *lo;
    } else {
        *lo = 0;
        *nk = a->keys;
    }
}

/* Forward: S^T = K Q^T then O^T = V^T P^T per chunk; backward: S again,
 * dP^T = V dO^T, dV^T += dO^T P, dQ^T = K^T dS^T, dK^T += Q^T dS
 * (FlashAttention-2's five matmuls).  Column-major views of row-major
 * (tokens x d) tensors; q-side tensors in sx, k-side in sw, scores in sy. */
static int
run_attention(struct gpu *g, const struct attn *a, int bwd)
{
    size_t es = (size_t)g->run->esize;
    int64_t s = a->s, d = a->d;
    size_t t = (size_t)a->nb * (size_t)s * (size_t)d * es;
    char *Q = (char *)g->sx, *dO = Q + t, *dQ = Q + 2 * t;
    char *K = (char *)g->sw, *V = K + t, *dK = K + 2 * t, *dV = K + 3 * t;
    char *S = (char *)g->sy;
    char *dP = S + (size_t)a->nb * (size_t)a->qc * (size_t)a->nk_max * es;
    int64_t sd = s * d;
    for (int64_t b0 = 0; b0 < a->batch; b0 += a->nb) {
        int64_t nb = a->batch - b0 < a->nb ? a->batch - b0 : a->nb;
        for (int i = 0; i < a->chunks; i++) {
            int64_t q0, nq, lo, nk;
            attn_chunk(a, i, &q0, &nq, &lo, &nk);
            size_t qo = (size_t)(q0 * d) * es, ko = (size_t)(lo * d) * es;
            int64_t ss = nq * nk;
            TRY(gemm_batched(g, CUBLAS_OP_T, CUBLAS_OP_N, nk, nq, d, K + ko,
                             d, sd, Q + qo, d, sd, S, nk, ss, 0.0f, nb));
            if (!bwd) {
                TRY(gemm_batched(g, CUBLAS_OP_N, CUBLAS_OP_N, d, nq, nk,
                                 V + ko, d, sd, S, nk, ss, dO + qo, d, sd,
                                 0.0f, nb));
                continue;
            }
            TRY(gemm_batched(g, CUBLAS_OP_T, CUBLAS_OP_N, nk, nq, d, V + ko,
                             d, sd, dO + qo, d, sd, dP, nk, ss, 0.0f, nb));
            TRY(gemm_batched(g, CUBLAS_OP_N, CUBLAS_OP_T, d, nk, nq,
                             dO + qo, d, sd, S, nk, ss, dV + ko, d, sd, 1.0f,
                             nb));
            TRY(gemm_batched(g, CUBLAS_OP_N, CUBLAS_OP_N, d, nq, nk, K + ko,
                             d, sd, dP, nk, ss, dQ + qo, d, sd, 0.0f, nb));
            TRY(gemm_batched(g, CUBLAS_OP_N, CUBLAS_OP_T, d, nk, nq, Q + qo,
                             d, sd, dP, nk, ss, dK + ko, d, sd, 1.0f, nb));
        }
    }
    return 0;
}

/* The attention core of a leaf (ATTENTION, or MHA's: non-causal, full). */
static void
leaf_attn(const struct exec_run *r, const struct module *m, struct attn *a)
{
    const struct sched *s = r->s;
    if (m->kind == LAYER_MHA) {
        int64_t h = m->heads > 0 ? m->heads : 1;
        attn_geometry(s->micro_batch * h, s->seq_len, m->out / h, 0, 0,
                      r->esize, a);
    } else {
        attn_geometry(s->micro_batch * m->heads, s->seq_len, m->head_dim,
                      m->window, m->causal, r->esize, a);
    }
}

/* One leaf's forward (or backward) kernels on the current stream. */
static int
run_leaf(struct gpu *g, cudaStream_t st, int leaf, int bwd)
{
    const struct exec_run *r = g->run;
    const struct module *m = r->s->leaves[leaf];
    const struct layer_work *w = &r->work[leaf];
    double bytes = bwd ? w->bwd_bytes : w->fwd_bytes;
    int kernels = bwd ? w->bwd_kernels : w->fwd_kernels;
    int64_t T = r->s->micro_batch * r->s->seq_len;
    switch (m->kind) {
    case LAYER_LINEAR:
        return run_linear(g, w->gemm_m, w->gemm_n, w->gemm_k, bwd);
    case LAYER_MHA: {
        struct attn a;
        leaf_attn(r, m, &a);
        TRY(run_linear(g, T, 3 * m->out, m->out, bwd));
        TRY(run_attention(g, &a, bwd));
        return run_linear(g, T, m->out, m->out, bwd);
    }
    case LAYER_ATTENTION: {
        struct attn a;
        leaf_attn(r, m, &a);
        TRY(run_attention(g, &a, bwd));
        /* What is left of the bytes is the eager rotary embedding. */
        double core = (double)T * (double)(2 * m->heads + 2 * m->kv_heads)
                      * (double)m->head_dim * r->esize * (bwd ? 2 : 1);
        double rest = bytes - core;
        if (rest > 0 && kernels > 1)
            return stream_scratch(g, st, rest / 2, rest / 2, kernels - 1);
        return 0;
    }
    default:
        if (w->gemm_m > 0)
            return run_linear(g, w->gemm_m, w->gemm_n, w->gemm_k, bwd);
        return stream_scratch(g, st, bytes / 2, bytes / 2, kernels);
    }
}

/* ---- Op execution --------------------------------------------------- */

static ncclDataType_t
nccl_type(enum dtype d)
{
    switch (d) {
    case DTYPE_BF16:
        return ncclBfloat16;
    case DTYPE_FP16:
        return ncclFloat16;
    case DTYPE_FP8:
        return ncclUint8;
    default:
        return ncclFloat32;
    }
}

/* The schedule's reduction: FSDP2 averages (ncclAvg, NCCL 2.10+), FSDP1
 * and DDP sum. */
static ncclRedOp_t
nccl_redop(const struct sched_op *op)
{
    return op->redop == REDOP_AVG ? ncclAvg : ncclSum;
}

/* Device pointer and size of a buffer the op names; -1 or not allocated
 * gives NULL. */
static void *
buf(const struct gpu *g, int id, uint64_t *bytes)
{
    const struct sched *s = g->run->s;
    if (id < 0 || id >= s->n_buffers || g->ptr[id] == NULL) {
        *bytes = 0;
        return NULL;
    }
    *bytes = g->ptr_bytes[id];
    return g->ptr[id];
}

static int
run_collective(struct gpu *g, const struct sched_op *op, cudaStream_t st)
{
    const struct exec_run *r = g->run;
    ncclComm_t comm = g->comm[op->pg];
    int n = r->pg_size[op->pg];
    int es = dtype_bytes(op->dtype);
    uint64_t in_b, out_b;
    char *in = (char *)buf(g, op->buf_in, &in_b);
    char *out = (char *)buf(g, op->buf_out, &out_b);
    if (comm == NULL)
        return gpu_fail(g, "internal error: no communicator for pg %s",
                        sched_pg_name(op->pg));
    if (in == NULL)
        return gpu_fail(g, "internal error: input buffer %d is not "
                        "allocated", op->buf_in);
    if (op->in_offset > in_b)
        return gpu_fail(g, "internal error: in_offset %llu past buffer %d "
                        "(%llu bytes)", (unsigned long long)op->in_offset,
                        op->buf_in, (unsigned long long)in_b);
    in += op->in_offset;
    in_b -= op->in_offset;
    if (out == NULL) {      /* in place */
        out = in;
        out_b = in_b;
    }
    uint64_t total = op->bytes / (uint64_t)es;
    switch (op->kind) {
    case OP_ALLGATHER: {
        size_t count = total / (uint64_t)n;
        if (count * es > in_b || count * es * n > out_b)
            return gpu_fail(g, "internal error: all-gather of %llu bytes "
                            "over %d ranks does not fit buffers %d (%llu) "
                            "and %d (%llu)", (unsigned long long)op->bytes,
                            n, op->buf_in, (unsigned long long)in_b,
                            op->buf_out, (unsigned long long)out_b);
        NCCL_TRY(g, comm, ncclAllGather(in, out, count, nccl_type(op->dtype),
                                        comm, st));
        break;
    }
    case OP_REDUCESCATTER: {
        size_t count = total / (uint64_t)n;
        if (count * es * n > in_b || count * es > out_b)
            return gpu_fail(g, "internal error: reduce-scatter of %llu bytes"
                            " over %d ranks does not fit buffers %d (%llu) "
                            "and %d (%llu)", (unsigned long long)op->bytes,
                            n, op->buf_in, (unsigned long long)in_b,
                            op->buf_out, (unsigned long long)out_b);
        NCCL_TRY(g, comm, ncclReduceScatter(in, out, count,
                                            nccl_type(op->dtype),
                                            nccl_redop(op), comm, st));
        break;
    }
    default: {
        if (total * es > in_b || total * es > out_b)
            return gpu_fail(g, "internal error: all-reduce of %llu bytes "
                            "does not fit buffers %d (%llu) and %d (%llu)",
                            (unsigned long long)op->bytes, op->buf_in,
                            (unsigned long long)in_b, op->buf_out,
                            (unsigned long long)out_b);
        NCCL_TRY(g, comm, ncclAllReduce(in, out, total, nccl_type(op->dtype),
                                        nccl_redop(op), comm, st));
        break;
    }
    }
    return 0;
}

/* A cast or accumulation: op->bytes is the traffic, read plus write; the
 * reads come from buf_in and the writes go to buf_out in proportion to
 * their sizes, what does not fit (or a side without a buffer) streams
 * over scratch. */
static int
run_cast(struct gpu *g, const struct sched_op *op, cudaStream_t st)
{
    uint64_t in_b, out_b;
    char *in = (char *)buf(g, op->buf_in, &in_b);
    void *out = buf(g, op->buf_out, &out_b);
    uint64_t off = op->in_offset & ~(uint64_t)15;
    if (in != NULL && off < in_b) {
        in += off;
        in_b -= off;
    } else {
        in = NULL;
    }
    double total = (double)op->bytes;
    double sum = (double)(in ? in_b : 0) + (double)(out ? out_b : 0);
    double rd = in ? total * (double)in_b / (sum > 0 ? sum : 1) : 0;
    double wr = out ? total * (double)out_b / (sum > 0 ? sum : 1) : 0;
    if (rd > (double)in_b)
        rd = (double)in_b;
    if (wr > (double)out_b)
        wr = (double)out_b;
    if (in == NULL || out == NULL) {
        rd = wr = 0;
    } else {
        TRY(stream_bytes(g, st, in, in_b, out, out_b, rd, wr, 1));
    }
    double rest = total - rd - wr;
    if (rest >= 32)
        TRY(stream_scratch(g, st, rest / 2, rest / 2, 1));
    return 0;
}

/* H2D into buf_out or D2H from buf_in, through the pinned buffer; a
 * missing device buffer uses scratch. */
static int
run_copy(struct gpu *g, const struct sched_op *op, cudaStream_t st)
{
    int h2d = op->kind == OP_H2D;
    uint64_t db;
    char *dev = (char *)buf(g, h2d ? op->buf_out : op->buf_in, &db);
    if (dev == NULL) {
        dev = (char *)g->sstream;
        db = STREAM_REGION_BYTES;
    }
    uint64_t left = op->bytes;
    while (left > 0) {
        size_t n = left;
        if (n > g->pinned_bytes)
            n = g->pinned_bytes;
        if (n > db)
            n = db;
        if (n == 0)
            break;
        if (h2d)
            CUDA_TRY(g, cudaMemcpyAsync(dev, g->pinned, n,
                                        cudaMemcpyHostToDevice, st));
        else
            CUDA_TRY(g, cudaMemcpyAsync(g->pinned, dev, n,
                                        cudaMemcpyDeviceToHost, st));
        left -= n;
    }
    return 0;
}

/* The GPU work of one op on stream st. */
static int
launch(struct gpu *g, const struct sched_op *op, cudaStream_t st)
{
    const struct sched *s = g->run->s;
    switch (op->kind) {
    case OP_FORWARD:
    case OP_RECOMPUTE:
    case OP_BACKWARD:
        CUBLAS_TRY(g, cublasSetStream(g->blas, st));
        for (int l = op->leaf_begin; l < op->leaf_end && l < s->n_leaves; l++)
            TRY(run_leaf(g, st, l, op->kind == OP_BACKWARD));
        return 0;
    case OP_ALLGATHER:
    case OP_REDUCESCATTER:
    case OP_ALLREDUCE:
        return run_collective(g, op, st);
    case OP_CAST:
        return run_cast(g, op, st);
    case OP_H2D:
    case OP_D2H:
        return run_copy(g, op, st);
    case OP_OPTIMIZER:
        /* AdamW reads param, grad, exp_avg, exp_avg_sq and writes three
         * of them back: 4/7 of the traffic reads, 3/7 writes. */
        return stream_scratch(g, st, (double)op->bytes * 4 / 7,
                              (double)op->bytes * 3 / 7, 1);
    default:        /* OP_EVENT: the events are the whole op */
        return 0;
    }
}

/* Whether op id ran on the GPU in this pass, so that its end event marks
 * its completion (host-side ops have finished when the host moves on). */
static int
has_end_event(const struct gpu *g, int id)
{
    const struct sched *s = g->run->s;
    return id >= 0 && id < s->n_ops && g->issued[id]
           && sched_op_on_gpu(&s->ops[id]);
}

/* First op at or after done_lo, issued this pass, on the GPU, whose end
 * event has not completed; n_ops when none.  Advances done_lo. */
static int
first_unfinished(struct gpu *g, int upto)
{
    const struct sched *s = g->run->s;
    int i = g->done_lo;
    for (; i < upto; i++) {
        const struct sched_op *op = &s->ops[i];
        if (!g->issued[i] || !sched_op_on_gpu(op))
            continue;
        if (cudaEventQuery(g->ev_end[i]) != cudaSuccess)
            break;
    }
    if (g->done_lo < i)
        g->done_lo = i;
    return i < upto ? i : s->n_ops;
}

/* Wait for ev (the end of op `waited`, -1 for the end of a pass) by
 * polling, so that this thread notices NCCL errors, another thread's
 * failure, and a lack of progress: no GPU op of this rank finishing for
 * timeout_s. */
static int
wait_event(struct gpu *g, cudaEvent_t ev, int waited, int upto)
{
    struct exec_run *r = g->run;
    const struct sched *s = r->s;
    double timeout = r->o->timeout_s > 0 ? r->o->timeout_s : 300;
    int64_t last = now_ns();
    int lo = g->done_lo;
    for (unsigned spin = 0;; spin++) {
        cudaError_t e = cudaEventQuery(ev);
        if (e == cudaSuccess)
            return 0;
        if (e != cudaErrorNotReady)
            return gpu_fail(g, "cudaEventQuery: %s: %s (%s:%d)",
                            cudaGetErrorName(e), cudaGetErrorString(e),
                            __FILE__, __LINE__);
        if (r->abort.load())
            return gpu_fail(g, "stopped: rank %d failed",
                            r->g[r->first_fail.load() - 1].rank);
        for (int p = 0; p < PG_COUNT; p++) {
            if (g->comm[p] == NULL)
                continue;
            ncclResult_t ae = ncclSuccess;
            NCCL_TRY(g, g->comm[p], ncclCommGetAsyncError(g->comm[p], &ae));
            if (ae != ncclSuccess && ae != ncclInProgress)
                return gpu_fail(g, "NCCL asynchronous error on the %s "
                                "communicator: %s: %s", sched_pg_name(
                                    (enum sched_pg)p),
                                ncclGetErrorString(ae),
                                ncclGetLastError(g->comm[p]));
        }
        if (spin % 256 == 0) {
            int f = first_unfinished(g, upto);
            int64_t t = now_ns();
            if (g->done_lo > lo) {
                lo = g->done_lo;
                last = t;
            } else if ((double)(t - last) * 1e-9 > timeout) {
                char d1[128], d2[128];
                const char *pg = "";
                if (f < s->n_ops && s->ops[f].pg != PG_NONE)
                    pg = sched_pg_name(s->ops[f].pg);
                return gpu_fail(g, "no progress for %.0f s waiting for %s; "
                                "first unfinished: %s%s%s (a peer may not "
                                "have reached its collective)", timeout,
                                waited >= 0 ? op_desc(s, waited, d1,
                                                      sizeof d1)
                                            : "the end of the pass",
                                f < s->n_ops ? op_desc(s, f, d2, sizeof d2)
                                             : "none",
                                *pg ? ", pg " : "", pg);
            }
        }
        nap();
    }
}

/* Host work of a STREAM_HOST op (the optimizer under CPU offload): an
 * AdamW-like pass over op->bytes of host memory, one thread. */
static void
host_work(struct gpu *g, const struct sched_op *op)
{
    if (g->host_opt == NULL)
        return;
    size_t half = g->host_opt_bytes / 2 / sizeof(float);
    float *a = g->host_opt, *b = g->host_opt + half;
    double left = (double)op->bytes / 2 / sizeof(float);
    while (left >= 1) {
        size_t n = left < (double)half ? (size_t)left : half;
        for (size_t i = 0; i < n; i++)
            b[i] = a[i] * 0.999f + 1e-3f * b[i];
        left -= (double)n;
    }
}

static int
do_alloc(struct gpu *g, const struct sched_op *op)
{
    const struct sched *s = g->run->s;
    if (op->buffer < 0 || op->buffer >= s->n_buffers)
        return gpu_fail(g, "internal error: buffer %d out of range",
                        op->buffer);
    if (op->bytes == 0)
        return 0;
    int pool = op->stream == STREAM_HOST ? STREAM_C : op->stream;
    void *p = NULL;
    cudaError_t e = cudaMallocFromPoolAsync(&p, op->bytes, g->pool,
                                            g->st[pool]);
    if (e == cudaErrorMemoryAllocation) {
        size_t fr = 0, tot = 0;
        cudaGetLastError();
        cudaMemGetInfo(&fr, &tot);
        return gpu_fail(g, "out of device memory allocating buffer %d (%s, "
                        "%llu bytes) on the %s pool: cudaMallocFromPoolAsync"
                        ": %s (%zu of %zu bytes free)", op->buffer,
                        mem_category_name(op->cat),
                        (unsigned long long)op->bytes,
                        sched_stream_name(op->stream),
                        cudaGetErrorString(e), fr, tot);
    }
    if (e != cudaSuccess)
        return gpu_fail(g, "cudaMallocFromPoolAsync of buffer %d (%llu "
                        "bytes): %s: %s", op->buffer,
                        (unsigned long long)op->bytes, cudaGetErrorName(e),
                        cudaGetErrorString(e));
    g->ptr[op->buffer] = p;
    g->ptr_bytes[op->buffer] = op->bytes;
    return 0;
}

static int
do_free(struct gpu *g, const struct sched_op *op)
{
    const struct sched *s = g->run->s;
    if (op->buffer < 0 || op->buffer >= s->n_buffers)
        return gpu_fail(g, "internal error: buffer %d out of range",
                        op->buffer);
    void *p = g->ptr[op->buffer];
    if (p == NULL)
        return 0;
    int pool = op->stream == STREAM_HOST ? STREAM_C : op->stream;
    int w = op->wait_op;
    if (has_end_event(g, w) && s->ops[w].stream != pool) {
        /* record_stream: reusable once the last use has finished. */
        CUDA_TRY(g, cudaStreamWaitEvent(g->free_st[pool], g->ev_end[w], 0));
        CUDA_TRY(g, cudaFreeAsync(p, g->free_st[pool]));
    } else {
        CUDA_TRY(g, cudaFreeAsync(p, g->st[pool]));
    }
    g->ptr[op->buffer] = NULL;
    return 0;
}

/* Issue op i. */
static int
issue(struct gpu *g, int i, int *prev_coll)
{
    const struct sched *s = g->run->s;
    const struct sched_op *op = &s->ops[i];
    g->cur_op = i;
    g->h_issue[i] = now_ns() - g->host_t0;
    g->issued[i] = 1;
    switch (op->kind) {
    case OP_CPU_WAIT:
        if (has_end_event(g, op->wait_op))
            TRY(wait_event(g, g->ev_end[op->wait_op], op->wait_op, i));
        g->h_start[i] = g->h_end[i] = now_ns() - g->host_t0;
        return 0;
    case OP_ALLOC:
        TRY(do_alloc(g, op));
        g->h_start[i] = g->h_end[i] = g->h_issue[i];
        return 0;
    case OP_FREE:
        TRY(do_free(g, op));
        g->h_start[i] = g->h_end[i] = g->h_issue[i];
        return 0;
    default:
        break;
    }
    if (op->stream == STREAM_HOST) {
        for (int d = 0; d < op->n_deps; d++)
            if (has_end_event(g, op->deps[d]))
                TRY(wait_event(g, g->ev_end[op->deps[d]], op->deps[d], i));
        g->h_start[i] = now_ns() - g->host_t0;
        host_work(g, op);
        g->h_end[i] = now_ns() - g->host_t0;
        return 0;
    }
    cudaStream_t st = g->st[op->stream];
    for (int d = 0; d < op->n_deps; d++) {
        int dep = op->deps[d];
        if (has_end_event(g, dep) && s->ops[dep].stream != op->stream)
            CUDA_TRY(g, cudaStreamWaitEvent(st, g->ev_end[dep], 0));
    }
    if (op->pg != PG_NONE && sched_op_is_collective(op)) {
        /* NCCL runs a communicator's kernels in issue order whatever the
         * stream; waiting here makes the start event true. */
        int p = prev_coll[op->pg];
        if (p >= 0 && s->ops[p].stream != op->stream)
            CUDA_TRY(g, cudaStreamWaitEvent(st, g->ev_end[p], 0));
        prev_coll[op->pg] = i;
    }
    CUDA_TRY(g, cudaEventRecord(g->ev_start[i], st));
    TRY(launch(g, op, st));
    CUDA_TRY(g, cudaEventRecord(g->ev_end[i], st));
    return 0;
}

/* Barrier across the GPU threads; -1 when another thread has failed. */
static int
barrier(struct gpu *g)
{
    struct exec_run *r = g->run;
    pthread_mutex_lock(&r->mu);
    int gen = r->bar_gen;
    if (++r->bar_count == r->n) {
        r->bar_count = 0;
        r->bar_gen++;
        pthread_cond_broadcast(&r->cv);
    } else {
        while (gen == r->bar_gen && !r->abort.load())
            pthread_cond_wait(&r->cv, &r->mu);
    }
    pthread_mutex_unlock(&r->mu);
    if (r->abort.load())
        return gpu_fail(g, "stopped: rank %d failed",
                        r->g[r->first_fail.load() - 1].rank);
    return 0;
}

/* Wait until every stream of this GPU is idle. */
static int
drain(struct gpu *g, int upto)
{
    g->cur_op = -1;
    for (int k = 0; k < STREAM_HOST; k++) {
        CUDA_TRY(g, cudaEventRecord(g->tail[2 * k], g->st[k]));
        CUDA_TRY(g, cudaEventRecord(g->tail[2 * k + 1], g->free_st[k]));
    }
    for (int k = 0; k < 2 * STREAM_HOST; k++)
        TRY(wait_event(g, g->tail[k], -1, upto));
    return 0;
}

/* Free what the pass left allocated (sharded params, optimizer state),
 * return the pool's memory to the device, and reset its peaks. */
static int
empty_pool(struct gpu *g)
{
    const struct sched *s = g->run->s;
    for (int b = 0; b < s->n_buffers; b++)
        if (g->ptr[b] != NULL) {
            CUDA_TRY(g, cudaFreeAsync(g->ptr[b], g->st[STREAM_C]));
            g->ptr[b] = NULL;
        }
    CUDA_TRY(g, cudaEventRecord(g->tail[0], g->st[STREAM_C]));
    TRY(wait_event(g, g->tail[0], -1, 0));
    CUDA_TRY(g, cudaMemPoolTrimTo(g->pool, 0));
    unsigned long long zero = 0;
    CUDA_TRY(g, cudaMemPoolSetAttribute(g->pool,
                                        cudaMemPoolAttrReservedMemHigh,
                                        &zero));
    CUDA_TRY(g, cudaMemPoolSetAttribute(g->pool, cudaMemPoolAttrUsedMemHigh,
                                        &zero));
    return 0;
}

/* One pass over the ops of steps < iters (all when iters >= iterations),
 * starting when every GPU thread is ready. */
static int
run_pass(struct gpu *g, int iters)
{
    const struct sched *s = g->run->s;
    int prev_coll[PG_COUNT];
    for (int p = 0; p < PG_COUNT; p++)
        prev_coll[p] = -1;
    memset(g->issued, 0, (size_t)s->n_ops);
    g->done_lo = 0;
    TRY(barrier(g));
    g->cur_op = -1;
    CUDA_TRY(g, cudaEventRecord(g->t0, g->st[STREAM_C]));
    for (int k = 0; k < STREAM_HOST; k++) {
        if (k != STREAM_C)
            CUDA_TRY(g, cudaStreamWaitEvent(g->st[k], g->t0, 0));
        CUDA_TRY(g, cudaStreamWaitEvent(g->free_st[k], g->t0, 0));
    }
    TRY(wait_event(g, g->t0, -1, 0));
    g->host_t0 = now_ns();
    int upto = 0;
    for (int i = 0; i < s->n_ops; i++) {
        if (s->ops[i].iter >= iters)
            continue;
        TRY(issue(g, i, prev_coll));
        upto = i + 1;
    }
    TRY(drain(g, upto));
    return 0;
}

/* ---- Per-GPU set-up and thread -------------------------------------- */

static int
setup_gpu(struct gpu *g)
{
    const struct exec_run *r = g->run;
    const struct sched *s = r->s;
    g->cur_op = -1;
    CUDA_TRY(g, cudaSetDevice(g->dev));
    CUDA_TRY(g, cudaDeviceGetAttribute(&g->sms, cudaDevAttrMultiProcessorCount,
                                       g->dev));
    for (int k = 0; k < STREAM_HOST; k++) {
        CUDA_TRY(g, cudaStreamCreateWithFlags(&g->st[k],
                                              cudaStreamNonBlocking));
        CUDA_TRY(g, cudaStreamCreateWithFlags(&g->free_st[k],
                                              cudaStreamNonBlocking));
    }
    g->ev_start = (cudaEvent_t *)xcalloc(s->n_ops + 1, sizeof(cudaEvent_t));
    g->ev_end = (cudaEvent_t *)xcalloc(s->n_ops + 1, sizeof(cudaEvent_t));
    for (int i = 0; i < s->n_ops; i++) {
        if (!sched_op_on_gpu(&s->ops[i]))
            continue;
        CUDA_TRY(g, cudaEventCreateWithFlags(&g->ev_start[i],
                                             cudaEventDefault));
        CUDA_TRY(g, cudaEventCreateWithFlags(&g->ev_end[i],
                                             cudaEventDefault));
    }
    CUDA_TRY(g, cudaEventCreateWithFlags(&g->t0, cudaEventDefault));
    for (int k = 0; k < 2 * STREAM_COUNT; k++)
        CUDA_TRY(g, cudaEventCreateWithFlags(&g->tail[k],
                                             cudaEventDisableTiming));

    /* The ledger's pool: keeps what it reserved (release threshold max,
     * like PyTorch's caching allocator), and never makes an allocation
     * wait for a pending free on another stream. */
    cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = g->dev;
    CUDA_TRY(g, cudaMemPoolCreate(&g->pool, &props));
    g->have_pool = 1;
    unsigned long long thr = UINT64_MAX;
    CUDA_TRY(g, cudaMemPoolSetAttribute(g->pool,
                                        cudaMemPoolAttrReleaseThreshold,
                                        &thr));
    int no = 0;
    CUDA_TRY(g, cudaMemPoolSetAttribute(
                    g->pool, cudaMemPoolReuseAllowInternalDependencies, &no));

    CUBLAS_TRY(g, cublasCreate(&g->blas));
    CUDA_TRY(g, cudaMalloc(&g->blas_ws, BLAS_WORKSPACE_BYTES));
    CUBLAS_TRY(g, cublasSetWorkspace(g->blas, g->blas_ws,
                                     BLAS_WORKSPACE_BYTES));
    if (r->compute == CUBLAS_COMPUTE_32F_FAST_TF32)
        CUBLAS_TRY(g, cublasSetMathMode(g->blas, CUBLAS_TF32_TENSOR_OP_MATH));

    /* Scratch, filled once with ordinary values. */
    void **regions[3] = {&g->sx, &g->sw, &g->sy};
    size_t sizes[3] = {r->need_x, r->need_w, r->need_y};
    for (int k = 0; k < 3; k++) {
        size_t n = sizes[k] < 256 ? 256 : sizes[k];
        CUDA_TRY(g, cudaMalloc(regions[k], n));
        size_t el = n / (size_t)r->esize;
        if (r->esize == 2 && r->ctype == CUDA_R_16BF)
            k_fill<<<blocks_for(g, el), 256>>>((__nv_bfloat16 *)*regions[k],
                                               el, 17u * (k + 1));
        else if (r->esize == 2)
            k_fill<<<blocks_for(g, el), 256>>>((__half *)*regions[k], el,
                                               17u * (k + 1));
        else
            k_fill<<<blocks_for(g, el), 256>>>((float *)*regions[k], el,
                                               17u * (k + 1));
        CUDA_TRY(g, cudaGetLastError());
    }
    CUDA_TRY(g, cudaMalloc(&g->sstream, STREAM_REGION_BYTES));
    CUDA_TRY(g, cudaMemset(g->sstream, 0, STREAM_REGION_BYTES));
    g->pinned_bytes = r->need_pinned;
    if (g->pinned_bytes > 0) {
        CUDA_TRY(g, cudaMallocHost(&g->pinned, g->pinned_bytes));
        memset(g->pinned, 0, g->pinned_bytes);
    }
    g->host_opt_bytes = r->need_host_opt;
    if (g->host_opt_bytes > 0) {
        g->host_opt = (float *)xcalloc(1, g->host_opt_bytes);
    }
    CUDA_TRY(g, cudaDeviceSynchronize());

    g->ptr = (void **)xcalloc(s->n_buffers + 1, sizeof(void *));
    g->ptr_bytes = (uint64_t *)xcalloc(s->n_buffers + 1, sizeof(uint64_t));
    g->issued = (unsigned char *)xcalloc(s->n_ops + 1, 1);
    g->h_issue = (int64_t *)xcalloc(s->n_ops + 1, sizeof(int64_t));
    g->h_start = (int64_t *)xcalloc(s->n_ops + 1, sizeof(int64_t));
    g->h_end = (int64_t *)xcalloc(s->n_ops + 1, sizeof(int64_t));
    return 0;
}

/* Abort g's communicators unless someone already has.  ncclCommAbort may
 * wait for the other local ranks to abort too (an intra-node collective),
 * so the flag is taken under the lock and the calls made outside it. */
static void
abort_comms(struct gpu *g)
{
    pthread_mutex_lock(&g->comm_mu);
    int mine = !g->comms_dead;
    g->comms_dead = 1;
    pthread_mutex_unlock(&g->comm_mu);
    if (mine)
        for (int p = 0; p < PG_COUNT; p++)
            if (g->comm[p] != NULL)
                ncclCommAbort(g->comm[p]);
}

static int
gpu_body(struct gpu *g)
{
    struct exec_run *r = g->run;
    TRY(setup_gpu(g));
    for (int w = 0; w < r->warm_passes; w++) {
        TRY(run_pass(g, r->warm_iters));
        TRY(empty_pool(g));
    }
    TRY(run_pass(g, r->s->iterations));
    g->cur_op = -1;
    unsigned long long v = 0;
    CUDA_TRY(g, cudaMemPoolGetAttribute(g->pool,
                                        cudaMemPoolAttrReservedMemHigh, &v));
    g->peak_reserved = (int64_t)v;
    CUDA_TRY(g, cudaMemPoolGetAttribute(g->pool, cudaMemPoolAttrUsedMemHigh,
                                        &v));
    g->peak_used = (int64_t)v;
    return 0;
}

static void *
gpu_thread(void *arg)
{
    struct gpu *g = (struct gpu *)arg;
    struct exec_run *r = g->run;
    if (gpu_body(g) != 0) {
        int none = 0;
        r->first_fail.compare_exchange_strong(none, g->local + 1);
        r->abort.store(1);
        pthread_mutex_lock(&r->mu);
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
        abort_comms(g);
    }
    return NULL;
}

/* ---- Communicators -------------------------------------------------- */

/* Rank r's group and rank within it for a process group: the shard group
 * is s->shard_size consecutive ranks (every rank for NO_SHARD), the
 * replicate group the ranks with the same position in their shard group
 * (for HYBRID_SHARD the same local rank on every node). */
static void
pg_place(const struct sched *s, enum sched_pg pg, int rank, int *color,
         int *pos, int *size)
{
    int sh = s->shard_size > 1 ? s->shard_size : s->world;
    if (pg == PG_POST_FORWARD && s->post_forward_size > 0) {
        /* FSDP2's post-forward mesh: consecutive ranks of the shard
         * group, post_forward_size of them. */
        *color = rank / s->post_forward_size;
        *pos = rank % s->post_forward_size;
        *size = s->post_forward_size;
    } else if (pg == PG_REPLICATE) {
        *color = rank % sh;
        *pos = rank / sh;
        *size = s->world / sh;
    } else {
        *color = rank / sh;
        *pos = rank % sh;
        *size = sh;
    }
}

/* Create every communicator the schedule uses, for all local GPUs, in one
 * NCCL group per process group (as ncclCommInitAll does).  Each
 * communicator's unique id comes from the process that hosts its
 * position-0 rank; across nodes the processes swap their ids with one
 * all-gather (sim/rendezvous.c), as torch.distributed does through its
 * store. */
static int
init_comms(struct exec_run *r, char **cause)
{
    const struct sched *s = r->s;
    int procs = r->l->nodes;
    for (int p = PG_SHARD; p < PG_COUNT; p++) {
        if (!r->uses_pg[p])
            continue;
        int colors = 0;
        for (int rank = 0; rank < s->world; rank++) {
            int c, pos, size;
            pg_place(s, (enum sched_pg)p, rank, &c, &pos, &size);
            colors = c + 1 > colors ? c + 1 : colors;
        }
        ncclUniqueId *mine = (ncclUniqueId *)xcalloc(colors,
                                                     sizeof(ncclUniqueId));
        ncclUniqueId *ids = (ncclUniqueId *)xcalloc(
            (size_t)colors * procs, sizeof(ncclUniqueId));
        ncclResult_t e = ncclSuccess;
        for (int i = 0; i < r->n && e == ncclSuccess; i++) {
            int c, pos, size;
            pg_place(s, (enum sched_pg)p, r->g[i].rank, &c, &pos, &size);
            if (pos == 0)
                e = ncclGetUniqueId(&mine[c]);
        }
        if (e != ncclSuccess) {
            *cause = xasprintf("ncclGetUniqueId: %s: %s",
                               ncclGetErrorString(e), ncclGetLastError(NULL));
            free(mine);
            free(ids);
            return -1;
        }
        if (r->l->rv != NULL) {
            if (rendezvous_allgather(r->l->rv, mine,
                                     (size_t)colors * sizeof *mine, ids,
                                     cause) != 0) {
                free(mine);
                free(ids);
                return -1;
            }
        } else {
            memcpy(ids, mine, (size_t)colors * sizeof *mine);
        }
        free(mine);
        /* Color c's id is in the block of the process that holds its
         * position-0 rank. */
        ncclUniqueId *id_of = (ncclUniqueId *)xcalloc(colors,
                                                      sizeof(ncclUniqueId));
        for (int rank = 0; rank < s->world; rank++) {
            int c, pos, size;
            pg_place(s, (enum sched_pg)p, rank, &c, &pos, &size);
            if (pos == 0)
                id_of[c] = ids[(size_t)(rank / r->n) * colors + c];
        }
        free(ids);
        ids = id_of;
        e = ncclGroupStart();
        int failed_at = -1;
        for (int i = 0; i < r->n && e == ncclSuccess; i++) {
            int c, pos, size;
            pg_place(s, (enum sched_pg)p, r->g[i].rank, &c, &pos, &size);
            cudaError_t ce = cudaSetDevice(r->g[i].dev);
            if (ce != cudaSuccess) {
                *cause = xasprintf("set-up on rank %d: cudaSetDevice: %s: "
                                   "%s", r->g[i].rank, cudaGetErrorName(ce),
                                   cudaGetErrorString(ce));
                ncclGroupEnd();
                free(ids);
                return -1;
            }
            e = ncclCommInitRank(&r->g[i].comm[p], size, ids[c], pos);
            failed_at = i;
        }
        ncclResult_t e2 = ncclGroupEnd();
        free(ids);
        if (e == ncclSuccess)
            e = e2;
        if (e != ncclSuccess) {
            *cause = xasprintf("set-up on rank %d: ncclCommInitRank (%s "
                               "group of %d): %s: %s",
                               failed_at >= 0 ? r->g[failed_at].rank : 0,
                               sched_pg_name((enum sched_pg)p),
                               r->pg_size[p], ncclGetErrorString(e),
                               ncclGetLastError(NULL));
            return -1;
        }
    }
    return 0;
}

/* Finalize (ok) or abort every communicator not aborted yet.  Both are
 * intra-node collective calls since NCCL 2.18: one thread calling them
 * for several ranks must group them, or it waits for itself.  After
 * finalize, ncclCommDestroy is local. */
static void
release_comms(struct exec_run *r, int ok)
{
    for (int p = 0; p < PG_COUNT; p++) {
        int any = 0;
        for (int i = 0; i < r->n; i++)
            any |= r->g[i].comm[p] != NULL && !r->g[i].comms_dead;
        if (!any)
            continue;
        ncclGroupStart();
        for (int i = 0; i < r->n; i++) {
            struct gpu *g = &r->g[i];
            if (g->comm[p] == NULL || g->comms_dead)
                continue;
            cudaSetDevice(g->dev);
            if (ok)
                ncclCommFinalize(g->comm[p]);
            else
                ncclCommAbort(g->comm[p]);
        }
        ncclGroupEnd();
        for (int i = 0; i < r->n; i++) {
            struct gpu *g = &r->g[i];
            if (ok && g->comm[p] != NULL && !g->comms_dead) {
                cudaSetDevice(g->dev);
                ncclCommDestroy(g->comm[p]);
            }
        }
    }
    for (int i = 0; i < r->n; i++)
        r->g[i].comms_dead = 1;
}

/* ---- Results -------------------------------------------------------- */

struct mem_event {
    int64_t t_ns;
    int type;           /* 0 an op finished, 1 a host ALLOC/FREE */
    int op;
};

static int
mem_event_cmp(const void *a, const void *b)
{
    const struct mem_event *x = (const struct mem_event *)a;
    const struct mem_event *y = (const struct mem_event *)b;
    if (x->t_ns != y->t_ns)
        return x->t_ns < y->t_ns ? -1 : 1;
    if (x->type != y->type)
        return x->type - y->type;
    return x->op - y->op;
}

/* GPU 0's measured times into *res, and the ledger replayed at them. */
static int
collect(struct exec_run *r, struct engine_result *res, char **cause)
{
    const struct sched *s = r->s;
    struct gpu *g = &r->g[0];
    int n = s->n_ops;
    memset(res, 0, sizeof *res);
    res->times = (struct op_time *)xcalloc(n ? n : 1, sizeof *res->times);
    res->step_end_ns = (int64_t *)xcalloc(s->iterations ? s->iterations : 1,
                                          sizeof(int64_t));
    res->cost.gpu_ns = (int64_t *)xcalloc(n ? n : 1, sizeof(int64_t));
    res->cost.issue_ns = (int64_t *)xcalloc(n ? n : 1, sizeof(int64_t));
    res->cost.launch_ns = (int64_t *)xcalloc(n ? n : 1, sizeof(int64_t));
    res->cost.coll = (struct coll_result *)xcalloc(n ? n : 1,
                                                   sizeof *res->cost.coll);
    res->mem = mem_new(s->n_buffers, r->t->hbm_bytes);
    res->events = (uint64_t)n;
    for (int i = 0; i < n; i++) {
        const struct sched_op *op = &s->ops[i];
        struct op_time *tm = &res->times[i];
        tm->issue_ns = g->h_issue[i];
        if (op->stream == STREAM_HOST || !sched_op_on_gpu(op)) {
            tm->start_ns = g->h_start[i];
            tm->end_ns = g->h_end[i];
        } else {
            float a = 0, b = 0;
            cudaError_t e = cudaEventElapsedTime(&a, g->t0, g->ev_start[i]);
            if (e == cudaSuccess)
                e = cudaEventElapsedTime(&b, g->t0, g->ev_end[i]);
            if (e != cudaSuccess) {
                char d[128];
                *cause = xasprintf("%s on rank %d: cudaEventElapsedTime: %s:"
                                   " %s", op_desc(s, i, d, sizeof d),
                                   g->rank, cudaGetErrorName(e),
                                   cudaGetErrorString(e));
                return -1;
            }
            tm->start_ns = llround((double)a * 1e6);
            tm->end_ns = llround((double)b * 1e6);
            /* The host clock is aligned to t0 only to within its wake-up
             * latency: an op cannot start before it was issued. */
            if (tm->issue_ns > tm->start_ns)
                tm->issue_ns = tm->start_ns;
        }
        if (tm->start_ns < 0)
            tm->start_ns = 0;
        if (tm->end_ns < tm->start_ns)
            tm->end_ns = tm->start_ns;
        if (tm->issue_ns < 0)
            tm->issue_ns = 0;
        res->cost.gpu_ns[i] = tm->end_ns - tm->start_ns;
        if (res->end_ns < tm->end_ns)
            res->end_ns = tm->end_ns;
        if (op->kind == OP_OPTIMIZER && op->iter >= 0
            && op->iter < s->iterations)
            res->step_end_ns[op->iter] = tm->end_ns;
        if (sched_op_is_collective(op) && tm->end_ns > tm->start_ns) {
            struct coll_result *c = &res->cost.coll[i];
            enum coll_op co = cost_coll_op(op->kind);
            c->time_s = (double)(tm->end_ns - tm->start_ns) * 1e-9;
            c->alg_Bps = (double)op->bytes / c->time_s;
            c->bus_Bps = c->alg_Bps
                         * coll_busbw_factor(co, r->pg_size[op->pg]);
        }
    }
    /* Host time spent on an op: until the host issued the next one. */
    for (int i = 1; i < n; i++) {
        int64_t d = res->times[i].issue_ns - res->times[i - 1].issue_ns;
        res->cost.issue_ns[i - 1] = d > 0 ? d : 0;
    }

    /* The ledger at the measured times: host ALLOC/FREE when issued, a
     * record_stream block reusable when its last use ended. */
    unsigned char *waited = (unsigned char *)xcalloc(n ? n : 1, 1);
    struct mem_event *ev = (struct mem_event *)xcalloc(2 * (size_t)n + 1,
                                                       sizeof *ev);
    size_t ne = 0;
    for (int i = 0; i < n; i++) {
        const struct sched_op *op = &s->ops[i];
        if (op->kind == OP_FREE && op->wait_op >= 0)
            waited[op->wait_op] = 1;
    }
    for (int i = 0; i < n; i++) {
        const struct sched_op *op = &s->ops[i];
        if (op->kind == OP_ALLOC || op->kind == OP_FREE)
            ev[ne++] = (struct mem_event){res->times[i].issue_ns, 1, i};
        if (waited[i])
            ev[ne++] = (struct mem_event){res->times[i].end_ns, 0, i};
    }
    qsort(ev, ne, sizeof *ev, mem_event_cmp);
    for (size_t k = 0; k < ne; k++) {
        const struct sched_op *op = &s->ops[ev[k].op];
        if (ev[k].type == 0) {
            mem_op_done(res->mem, ev[k].t_ns, ev[k].op);
        } else if (op->kind == OP_ALLOC) {
            mem_alloc(res->mem, ev[k].t_ns, op->buffer, op->stream,
                      op->bytes, op->cat);
        } else {
            int w = op->wait_op;
            mem_release(res->mem, ev[k].t_ns, op->buffer, w,
                        w < 0 || res->times[w].end_ns <= ev[k].t_ns);
        }
    }
    free(ev);
    free(waited);
    return 0;
}

/* ---- Entry ---------------------------------------------------------- */

/* Scratch and host buffer sizes for the schedule: the largest leaf's
 * operands, the largest copy. */
static void
size_scratch(struct exec_run *r)
{
    const struct sched *s = r->s;
    int es = r->esize;
    r->work = (struct layer_work *)xcalloc(s->n_leaves + 1,
                                           sizeof *r->work);
    int64_t T = s->micro_batch * s->seq_len;
    for (int l = 0; l < s->n_leaves; l++) {
        const struct module *m = s->leaves[l];
        struct layer_work *w = &r->work[l];
        layer_work(m, s->micro_batch, s->seq_len, es, w);
        int64_t gemms[2][3] = {{w->gemm_m, w->gemm_n, w->gemm_k}, {0, 0, 0}};
        if (m->kind == LAYER_MHA) {
            gemms[0][0] = gemms[1][0] = T;
            gemms[0][1] = 3 * m->out;
            gemms[0][2] = gemms[1][1] = gemms[1][2] = m->out;
        }
        for (int k = 0; k < 2; k++) {
            int64_t M = gemms[k][0], N = gemms[k][1], K = gemms[k][2];
            if (M <= 0)
                continue;
            int64_t mc = linear_chunk(M, N, K, es);
            size_t x = (size_t)(mc * K) * es, y = (size_t)(mc * N) * es;
            size_t wt = (size_t)(N * K) * es;
            r->need_x = x > r->need_x ? x : r->need_x;
            r->need_y = y > r->need_y ? y : r->need_y;
            r->need_w = wt > r->need_w ? wt : r->need_w;
        }
        if (m->kind == LAYER_ATTENTION || m->kind == LAYER_MHA) {
            struct attn a;
            size_t x, wt, y;
            leaf_attn(r, m, &a);
            attn_needs(&a, es, &x, &wt, &y);
            r->need_x = x > r->need_x ? x : r->need_x;
            r->need_y = y > r->need_y ? y : r->need_y;
            r->need_w = wt > r->need_w ? wt : r->need_w;
        }
    }
    for (int i = 0; i < s->n_ops; i++) {
        const struct sched_op *op = &s->ops[i];
        if (op->kind == OP_H2D || op->kind == OP_D2H) {
            size_t b = op->bytes < PINNED_CAP_BYTES ? op->bytes
                                                    : PINNED_CAP_BYTES;
            r->need_pinned = b > r->need_pinned ? b : r->need_pinned;
        }
        if (op->stream == STREAM_HOST && op->kind == OP_OPTIMIZER)
            r->need_host_opt = HOST_OPT_CAP_BYTES;
        if (op->pg > PG_NONE && op->pg < PG_COUNT)
            r->uses_pg[op->pg] = 1;
    }
}

static int
check_setup(const struct sched *s, const struct real_launch *l, char **cause)
{
    if (l->nodes > 1 && l->rv == NULL) {
        *cause = xasprintf("a %d-node run needs its processes to have met "
                           "(rendezvous) first", l->nodes);
        return -1;
    }
    if (l->gpus < 1 || s->world != l->nodes * l->gpus) {
        *cause = xasprintf("the schedule is for %d GPUs (%d per node) but "
                           "this job has %d node(s) x %d GPU(s): give "
                           "--nodes and --gpus-per-node to match the GPUs "
                           "present", s->world, s->gpus_per_node, l->nodes,
                           l->gpus);
        return -1;
    }
    int have = 0;
    char *why = NULL;
    if (real_probe(&have, &why) != 0) {
        *cause = why;
        return -1;
    }
    if (have < l->gpus) {
        *cause = xasprintf("the schedule needs %d GPUs on this node but "
                           "CUDA sees %d (check CUDA_VISIBLE_DEVICES)",
                           l->gpus, have);
        return -1;
    }
    if (s->param_dtype == DTYPE_FP8) {
        *cause = xstrdup("real mode runs fp32, tf32, bf16 and fp16 "
                         "compute; param dtype fp8 is not supported");
        return -1;
    }
    if (s->shard_size > 1 && s->world % s->shard_size != 0) {
        *cause = xasprintf("shard group of %d does not divide the %d GPUs",
                           s->shard_size, s->world);
        return -1;
    }
    return 0;
}

extern "C" int
real_run(const struct sched *s, const struct model *m, const struct topo *t,
         const struct real_launch *l, const struct real_options *o,
         struct engine_result *measured, int64_t *peak_reserved,
         char **cause)
{
    (void)m;
    *peak_reserved = 0;
    memset(measured, 0, sizeof *measured);
    if (check_setup(s, l, cause) != 0)
        return REAL_EXIT_SYSTEM;

    struct exec_run *r = new exec_run();
    r->s = s;
    r->t = t;
    r->o = o;
    r->l = l;
    r->n = l->gpus;
    r->esize = dtype_bytes(s->param_dtype);
    switch (s->param_dtype) {
    case DTYPE_BF16:
        r->ctype = CUDA_R_16BF;
        r->compute = CUBLAS_COMPUTE_32F;
        break;
    case DTYPE_FP16:
        r->ctype = CUDA_R_16F;
        r->compute = CUBLAS_COMPUTE_32F;
        break;
    case DTYPE_TF32:
        r->ctype = CUDA_R_32F;
        r->compute = CUBLAS_COMPUTE_32F_FAST_TF32;
        break;
    default:
        r->ctype = CUDA_R_32F;
        r->compute = CUBLAS_COMPUTE_32F;
        break;
    }
    int warm = o->warmup > 0 ? o->warmup : 0;
    r->warm_iters = warm < s->iterations ? warm : s->iterations;
    r->warm_passes = warm > 0 ? (warm + s->iterations - 1) / s->iterations
                              : 0;
    for (int p = PG_SHARD; p < PG_COUNT; p++) {
        int c, pos;
        pg_place(s, (enum sched_pg)p, 0, &c, &pos, &r->pg_size[p]);
    }
    size_scratch(r);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    r->g = (struct gpu *)xcalloc(r->n, sizeof *r->g);
    for (int i = 0; i < r->n; i++) {
        struct gpu *g = &r->g[i];
        g->run = r;
        g->local = i;
        g->dev = i;
        g->rank = l->node_rank * l->gpus + i;
        g->cur_op = -1;
        pthread_mutex_init(&g->comm_mu, NULL);
    }

    int rc = 0;
    if (init_comms(r, cause) != 0) {
        rc = REAL_EXIT_SYSTEM;
        goto out;
    }
    for (int i = 0; i < r->n; i++) {
        int e = pthread_create(&r->g[i].thread, NULL, gpu_thread, &r->g[i]);
        if (e != 0) {
            *cause = xasprintf("pthread_create: %s", strerror(e));
            r->abort.store(1);
            r->first_fail.store(i + 1);
            r->g[i].cause = xstrdup(*cause);
            rc = REAL_EXIT_SYSTEM;
            break;
        }
        r->g[i].started = 1;
    }
    if (rc != 0) {
        pthread_mutex_lock(&r->mu);
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
    }
    /* Join the threads.  Once one has failed, every rank must abort its
     * communicators: the failed and the stopped threads do their own; the
     * main thread does those of threads already finished, and, as a last
     * resort, those of threads still running after ABORT_GRACE_NS (stuck
     * inside a CUDA call behind a collective whose peer died, where they
     * cannot see the flag), so that their kernels end. */
    {
        int64_t abort_seen = -1;
        for (;;) {
            int running = 0;
            for (int i = 0; i < r->n; i++) {
                struct gpu *g = &r->g[i];
                if (g->started
                    && pthread_tryjoin_np(g->thread, NULL) == EBUSY)
                    running++;
                else
                    g->started = 0;
            }
            if (r->abort.load()) {
                if (abort_seen < 0)
                    abort_seen = now_ns();
                int late = now_ns() - abort_seen > ABORT_GRACE_NS;
                /* One thread aborting several ranks groups the calls. */
                ncclGroupStart();
                for (int i = 0; i < r->n; i++)
                    if (!r->g[i].started || late) {
                        cudaSetDevice(r->g[i].dev);
                        abort_comms(&r->g[i]);
                    }
                ncclGroupEnd();
            }
            if (running == 0)
                break;
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
    if (rc == 0 && r->abort.load()) {
        int f = r->first_fail.load();
        struct gpu *g = &r->g[f > 0 ? f - 1 : 0];
        *cause = g->cause ? xstrdup(g->cause)
                          : xasprintf("rank %d failed", g->rank);
        rc = REAL_EXIT_SYSTEM;
    }
    if (rc == 0) {
        cudaSetDevice(r->g[0].dev);
        if (collect(r, measured, cause) != 0) {
            engine_result_free(measured);
            rc = REAL_EXIT_SYSTEM;
        } else {
            *peak_reserved = r->g[0].peak_reserved;
        }
    }

out:
    release_comms(r, rc == 0);
    for (int i = 0; i < r->n; i++) {
        struct gpu *g = &r->g[i];
        cudaSetDevice(g->dev);
        if (g->ev_start != NULL)
            for (int k = 0; k < s->n_ops; k++) {
                if (g->ev_start[k] != NULL)
                    cudaEventDestroy(g->ev_start[k]);
                if (g->ev_end[k] != NULL)
                    cudaEventDestroy(g->ev_end[k]);
            }
        if (g->t0 != NULL)
            cudaEventDestroy(g->t0);
        for (int k = 0; k < 2 * STREAM_COUNT; k++)
            if (g->tail[k] != NULL)
                cudaEventDestroy(g->tail[k]);
        if (g->ptr != NULL)
            for (int b = 0; b < s->n_buffers; b++)
                if (g->ptr[b] != NULL)
                    cudaFree(g->ptr[b]);
        if (g->have_pool) {
            cudaDeviceSynchronize();
            cudaMemPoolDestroy(g->pool);
        }
        if (g->blas != NULL)
            cublasDestroy(g->blas);
        cudaFree(g->blas_ws);
        cudaFree(g->sx);
        cudaFree(g->sw);
        cudaFree(g->sy);
        cudaFree(g->sstream);
        if (g->pinned != NULL)
            cudaFreeHost(g->pinned);
        for (int k = 0; k < STREAM_HOST; k++) {
            if (g->st[k] != NULL)
                cudaStreamDestroy(g->st[k]);
            if (g->free_st[k] != NULL)
                cudaStreamDestroy(g->free_st[k]);
        }
        free(g->host_opt);
        free(g->ev_start);
        free(g->ev_end);
        free(g->ptr);
        free(g->ptr_bytes);
        free(g->issued);
        free(g->h_issue);
        free(g->h_start);
        free(g->h_end);
        free(g->cause);
        pthread_mutex_destroy(&g->comm_mu);
    }
    free(r->g);
    free(r->work);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    delete r;
    return rc;
}
