/*
 * cost.c: per-op durations (see cost.h).
 */
#include "cost.h"
#include "layer.h"
#include "xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Fraction of HBM bandwidth a streaming kernel reaches; STREAM-like copy
 * kernels reach about 85-90% of the datasheet figure on A100/H100
 * (NVIDIA, "CUDA C++ Best Practices Guide", effective vs theoretical
 * bandwidth). */
#define HBM_EFFICIENCY 0.85
/* GEMM dimension at which a kernel reaches half its large-shape
 * efficiency: small M, N or K leave SMs idle and tiles partially filled
 * (NVIDIA Deep Learning Performance Guide, "Matrix Multiplication
 * Background": tile and wave quantization). */
#define GEMM_HALF_DIM 64.0
/* FlashAttention-2 reaches about 70% of A100 peak forward and a little
 * less backward, against about 80% for large cuBLAS GEMMs (Dao 2023,
 * Figures 5-6), so attention runs at these fractions of the GEMM
 * efficiency. */
#define ATTN_FWD_REL_EFFICIENCY 0.9
#define ATTN_BWD_REL_EFFICIENCY 0.8
/* Fixed latency of a host<->device copy (cudaMemcpyAsync setup). */
#define COPY_LATENCY_NS 10000.0
/* Distinct collectives remembered while timing a schedule. */
#define COST_MEMO 64
/* Host time to launch one NCCL collective (enqueue, proxy hand-off). */
#define COLL_LAUNCH_KERNELS 2

double
cost_gemm_efficiency(const struct topo *t, int64_t m, int64_t n, int64_t k)
{
    double f = 1.0;
    double dims[3] = {(double)m, (double)n, (double)k};
    for (int i = 0; i < 3; i++)
        f *= dims[i] / (dims[i] + GEMM_HALF_DIM);
    return t->gemm_efficiency * f;
}

static double
peak_for(const struct topo *t, enum dtype d)
{
    double p = t->peak_flops[d];
    if (p <= 0)          /* a dtype the GPU lacks runs at fp32 rate */
        p = t->peak_flops[DTYPE_FP32];
    return p;
}

/* Roofline time of one leaf, forward (bwd = 0) or backward. */
static double
leaf_time_s(const struct topo *t, const struct module *m, int64_t mb,
            int64_t seq, enum dtype d, int bwd, int *kernels)
{
    struct layer_work w;
    layer_work(m, mb, seq, dtype_bytes(d), &w);
    double flops = bwd ? w.bwd_flops : w.fwd_flops;
    double bytes = bwd ? w.bwd_bytes : w.fwd_bytes;
    double eff;
    if (w.is_attention)
        eff = t->gemm_efficiency
              * (bwd ? ATTN_BWD_REL_EFFICIENCY : ATTN_FWD_REL_EFFICIENCY);
    else if (w.gemm_m > 0)
        eff = cost_gemm_efficiency(t, w.gemm_m, w.gemm_n, w.gemm_k);
    else
        eff = t->gemm_efficiency;
    double tf = flops > 0 ? flops / (peak_for(t, d) * eff) : 0;
    double tm = bytes / (t->hbm_Bps * HBM_EFFICIENCY);
    *kernels = bwd ? w.bwd_kernels : w.fwd_kernels;
    return fmax(tf, tm) + *kernels * t->kernel_overhead_ns * 1e-9;
}

void
cost_group(const struct sched *s, enum sched_pg pg, struct coll_group *g)
{
    int gpn = s->gpus_per_node > 0 ? s->gpus_per_node : 1;
    if (pg == PG_REPLICATE) {
        g->ranks = s->replicate_size;
        g->nodes = s->replicate_size;
        g->ranks_per_node = 1;
        return;
    }
    /* The shard group: every rank for NO_SHARD, as for FULL_SHARD. */
    int ranks = s->shard_size == 1 ? s->world : s->shard_size;
    g->ranks = ranks;
    g->ranks_per_node = ranks < gpn ? ranks : gpn;
    g->nodes = (ranks + gpn - 1) / gpn;
}

int64_t
cost_seconds_to_ns(double seconds)
{
    double ns = seconds * 1e9;
    if (!(ns < 4.6e18))
        return INT64_C(4600000000000000000);
    return (int64_t)llround(ns);
}

enum coll_op
cost_coll_op(enum sched_op_kind kind)
{
    return kind == OP_ALLGATHER ? COLL_ALLGATHER
           : kind == OP_REDUCESCATTER ? COLL_REDUCESCATTER : COLL_ALLREDUCE;
}

void
cost_table_build(const struct sched *s, const struct topo *t,
                 struct cost_table *ct)
{
    int n = s->n_ops;
    ct->gpu_ns = xcalloc(n, sizeof(int64_t));
    ct->issue_ns = xcalloc(n, sizeof(int64_t));
    ct->launch_ns = xcalloc(n, sizeof(int64_t));
    ct->coll = xcalloc(n, sizeof *ct->coll);

    /* Leaf times per dtype are the same for every op: compute them once. */
    double *fwd_s = xcalloc(s->n_leaves + 1, sizeof(double));
    double *bwd_s = xcalloc(s->n_leaves + 1, sizeof(double));
    int *fwd_k = xcalloc(s->n_leaves + 1, sizeof(int));
    int *bwd_k = xcalloc(s->n_leaves + 1, sizeof(int));
    for (int l = 0; l < s->n_leaves; l++) {
        fwd_s[l] = leaf_time_s(t, s->leaves[l], s->micro_batch, s->seq_len,
                               s->param_dtype, 0, &fwd_k[l]);
        bwd_s[l] = leaf_time_s(t, s->leaves[l], s->micro_batch, s->seq_len,
                               s->param_dtype, 1, &bwd_k[l]);
    }

    double launch = t->launch_overhead_ns;
    int memo[COST_MEMO], n_memo = 0;
    for (int i = 0; i < n; i++) {
        const struct sched_op *op = &s->ops[i];
        double sec = 0;
        int kernels = 1;
        switch (op->kind) {
        case OP_FORWARD:
        case OP_RECOMPUTE:
        case OP_BACKWARD:
            kernels = 0;
            for (int l = op->leaf_begin; l < op->leaf_end; l++) {
                if (op->kind == OP_BACKWARD) {
                    sec += bwd_s[l];
                    kernels += bwd_k[l];
                } else {
                    sec += fwd_s[l];
                    kernels += fwd_k[l];
                }
            }
            break;
        case OP_ALLGATHER:
        case OP_REDUCESCATTER:
        case OP_ALLREDUCE: {
            struct coll_group g;
            cost_group(s, op->pg, &g);
            enum coll_op co = cost_coll_op(op->kind);
            /* Units of one model repeat the same few collectives: look
             * the (kind, group, size) up among the ones already timed. */
            int hit = -1;
            for (int k = 0; k < n_memo && hit < 0; k++) {
                const struct sched_op *o2 = &s->ops[memo[k]];
                if (o2->kind == op->kind && o2->pg == op->pg
                    && o2->bytes == op->bytes)
                    hit = memo[k];
            }
            if (hit >= 0) {
                ct->coll[i] = ct->coll[hit];
            } else {
                char *why = NULL;
                /* FSDP1 reduces with SUM (§14.4); setup has checked that
                 * NCCL accepts every collective kind: this cannot fail. */
                if (coll_estimate(t, &s->nccl, co, REDOP_SUM, &g,
                                  (double)op->bytes, &ct->coll[i], &why)) {
                    fprintf(stderr, "fsdpsim: internal error: %s\n", why);
                    abort();
                }
                if (n_memo < COST_MEMO)
                    memo[n_memo++] = i;
            }
            sec = ct->coll[i].time_s;
            kernels = COLL_LAUNCH_KERNELS;
            break;
        }
        case OP_CAST:
            sec = (double)op->bytes / (t->hbm_Bps * HBM_EFFICIENCY)
                  + t->kernel_overhead_ns * 1e-9;
            break;
        case OP_H2D:
        case OP_D2H:
            sec = (double)op->bytes / t->pcie_Bps + COPY_LATENCY_NS * 1e-9;
            break;
        case OP_OPTIMIZER:
            /* Memory-bound update, on the GPU or, offloaded, the host. */
            if (op->stream == STREAM_HOST)
                sec = (double)op->bytes / t->host_mem_Bps;
            else
                sec = (double)op->bytes / (t->hbm_Bps * HBM_EFFICIENCY)
                      + t->kernel_overhead_ns * 1e-9;
            kernels = 4;
            break;
        case OP_EVENT:
            kernels = 0;
            break;
        case OP_ALLOC:
        case OP_FREE:
        case OP_CPU_WAIT:
        case OP_KIND_COUNT:
            kernels = 0;
            break;
        }
        double hooks_s = op->hooks * t->hook_overhead_ns * 1e-9;
        ct->gpu_ns[i] = cost_seconds_to_ns(sec);
        ct->launch_ns[i] = cost_seconds_to_ns(
            hooks_s + (kernels > 0 ? launch * 1e-9 : 0));
        ct->issue_ns[i] = cost_seconds_to_ns(hooks_s
                                             + kernels * launch * 1e-9);
    }
    free(fwd_s);
    free(bwd_s);
    free(fwd_k);
    free(bwd_k);
}

void
cost_table_free(struct cost_table *ct)
{
    free(ct->gpu_ns);
    free(ct->issue_ns);
    free(ct->launch_ns);
    free(ct->coll);
}
