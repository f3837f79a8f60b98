/*
 * exec_compute.cu: compute ops on the GPU: the memory-streaming kernels, cuBLAS GEMMs of
 * each Linear, attention as batched GEMMs, and a leaf's whole kernel list.
 */
#include "exec_impl.h"

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

/* Fill BYTES of P with fill_uniform's values in the run's dtype. */
int
fill_scratch(struct gpu *g, void *p, size_t bytes, unsigned seed)
{
    const struct exec_run *r = g->run;
    size_t el = bytes / (size_t)r->esize;
    CUDA_TRY(g, fill_uniform(p, el, r->ctype, seed, blocks_for(g, el), 0));
    return 0;
}

int
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
int
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
int
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
int64_t
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

void
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
void
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
int
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
