/*
 * cost.c: per-op durations (see cost.h).
 */
#include "cost.h"
#include "kernel_cost.h"
#include "straggler.h"
#include "xalloc.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fixed latency of a host<->device copy (cudaMemcpyAsync setup). */
#define COPY_LATENCY_NS 10000.0
/* Distinct collectives remembered while timing a schedule. */
#define COST_MEMO 64
/* Host time to launch one NCCL collective (enqueue, proxy hand-off). */
#define COLL_LAUNCH_KERNELS 2

/* Do leaves A and B launch the same kernels?  A kernel list depends on
 * the leaf's shape and on where it sits (a norm inside a block, an
 * activation before a product): the same name under the same class of
 * parent sits the same way. */
static bool
same_kernels(const struct module *a, const struct module *b)
{
    if (a->kind != b->kind || a->in != b->in || a->out != b->out
        || a->heads != b->heads || a->kv_heads != b->kv_heads
        || a->head_dim != b->head_dim || a->window != b->window
        || a->bias != b->bias || a->causal != b->causal
        || a->rope != b->rope || a->dropout != b->dropout
        || strcmp(a->name, b->name) != 0)
        return false;
    const struct module *pa = a->parent, *pb = b->parent;
    for (; pa != NULL && pb != NULL; pa = pa->parent, pb = pb->parent)
        if ((pa->cls == NULL) != (pb->cls == NULL)
            || (pa->cls != NULL && strcmp(pa->cls, pb->cls) != 0))
            return false;
    return pa == NULL && pb == NULL;
}

void
cost_kernel_ctx(const struct sched *s, struct kernel_ctx *ctx)
{
    ctx->micro_batch = s->micro_batch;
    ctx->seq_len = s->seq_len;
    ctx->act_bytes = dtype_bytes(s->param_dtype);
    ctx->attn = s->attn;
    ctx->compile = s->compile;
    ctx->layer_cls = s->block_cls;
    ctx->float8 = s->float8;
    ctx->float8_weights_gathered = s->float8_all_gather;
    ctx->selective_op = s->ac == AC_SELECTIVE_OP;
    ctx->fused_loss = s->loss == LOSS_FUSED;
    ctx->native_loss = s->loss == LOSS_NATIVE;
    ctx->rotary = s->rotary;
    ctx->torch_version = s->torch_version;
    ctx->transformers_version = s->transformers_version;
}

double
cost_leaf_time_s(const struct topo *t, const struct module *m,
                 const struct kernel_ctx *ctx, enum dtype d,
                 enum kernel_phase ph, int *launches)
{
    struct kernel ks[KERNEL_MAX_PER_LEAF];
    int n = kernel_list(m, ctx, ph, ks);
    double sec = 0;
    *launches = 0;
    for (int i = 0; i < n; i++) {
        sec += kernel_time_s(t, &ks[i], d);
        *launches += ks[i].launches;
    }
    return sec;
}

/* Launches of one multi-tensor pass (aten/src/ATen/native/cuda/
 * MultiTensorApply.cuh): the tensors are cut into chunks of 65,536
 * elements and one launch takes at most 320 blocks, a chunk each
 * (depth_to_max_blocks), and at most 110 down to 30 tensors by the number
 * of lists (depth_to_max_tensors).  FSDP's flat tensors are few and
 * large, so the chunk bound rules; the tensor bound is taken at 110. */
#define MULTI_TENSOR_CHUNK 65536.0
#define MULTI_TENSOR_BLOCKS 320.0
#define MULTI_TENSOR_TENSORS 110.0
static int
multi_tensor_launches(const struct sched *s)
{
    double by_chunks = ceil(s->optimizer_numel / MULTI_TENSOR_CHUNK
                            / MULTI_TENSOR_BLOCKS);
    double by_tensors = ceil(s->optimizer_tensors / MULTI_TENSOR_TENSORS);
    double n = fmax(fmax(by_chunks, by_tensors), 1);
    return n > 1e6 ? 1000000 : (int)n;
}

/* Selective op-level checkpointing: the recompute of leaf M reruns the
 * forward kernels whose outputs the policy does not save (§10.1).  By
 * each kernel's recompute rule (kernel.h): the matrix products and
 * attention only where the policy recomputes the leaf's mm
 * (MM_RECOMPUTED: a Linear whose output it does not keep, which then
 * reruns its whole forward), the other kernels always, but a float8
 * cast's amax, whose abs/max outputs are saved, never, and a compiled
 * rowwise cast only with its mm (kernel.c, to_float8). */
double
cost_leaf_recompute_selective_s(const struct topo *t, const struct module *m,
                                const struct kernel_ctx *ctx, enum dtype d,
                                bool mm_recomputed, int *launches)
{
    struct kernel ks[KERNEL_MAX_PER_LEAF];
    int n = kernel_list(m, ctx, PHASE_RECOMPUTE, ks);
    double sec = 0;
    *launches = 0;
    for (int i = 0; i < n; i++) {
        bool with_gemm = ks[i].recompute == RECOMPUTE_WITH_GEMM
                         || ks[i].cls == KERNEL_GEMM
                         || ks[i].cls == KERNEL_ATTN_FWD
                         || ks[i].cls == KERNEL_ATTN_BWD;
        if (ks[i].recompute == RECOMPUTE_NEVER
            || (with_gemm && !mm_recomputed))
            continue;
        sec += kernel_time_s(t, &ks[i], d);
        *launches += ks[i].launches;
    }
    return sec;
}

static void
post_forward_group(int n, int gpn, struct coll_group *g)
{
    g->ranks = n;
    g->ranks_per_node = n < gpn ? n : gpn;
    g->nodes = (n + gpn - 1) / gpn;
}

void
cost_op_group(const struct sched *s, const struct sched_op *op,
              struct coll_group *g)
{
    /* Each group's own reshard_after_forward=N (§13.9.3). */
    int n = op->pg == PG_POST_FORWARD && s->post_forward_sizes != NULL
                    && op->unit >= 0 && op->unit < s->n_units
                ? s->post_forward_sizes[op->unit]
                : 0;
    if (n > 0)
        post_forward_group(n, s->gpus_per_node > 0 ? s->gpus_per_node : 1,
                           g);
    else
        cost_group(s, op->pg, g);
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
    /* FSDP2's reshard_after_forward=N: the backward all-gather runs over
     * N consecutive ranks of the shard group (§13.9). */
    if (pg == PG_POST_FORWARD && s->post_forward_size > 0) {
        post_forward_group(s->post_forward_size, gpn, g);
        return;
    }
    /* The shard group: every rank for NO_SHARD, as for FULL_SHARD, but
     * the 1-rank group of the hybrid fallback (_init_core_state). */
    int ranks = s->shard_size > 1 ? s->shard_size
                : s->no_shard_ranks > 0 ? s->no_shard_ranks : s->world;
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

/* One communicator as the step's collectives use it. */
struct comm_use {
    bool used;              /* some collective runs on it */
    struct coll_group g;
    int channels;           /* comm->nChannels (coll_result.comm_channels) */
    unsigned algos;         /* bits 1 << enum nccl_algo its collectives run */
};

/* The first version with NCCL_RUNTIME_CONNECT (src/init.cc). */
#define NCCL_RUNTIME_CONNECT_VERSION 222

/* Add the device memory communicator CU maps to CT: its connections'
 * protocol buffers (coll_conn_buffer_bytes) and NVLS's
 * (coll_nvls_buffer_bytes).  From NCCL 2.22 a communicator connects an
 * algorithm at the first collective that runs it (NCCL_RUNTIME_CONNECT,
 * default 1, where cuMem is supported, as on every GPU fsdpsim models:
 * src/init.cc sets comm->runtimeConn; src/enqueue.cc marks
 * algoNeedConnect for a task's algorithm, src/group.cc
 * ncclCollPreconnect connects it: ncclTransportRingConnect,
 * ncclTransportTreeConnect, ncclTransportPatConnect, ncclNvlsBufferSetup,
 * and for NVLS Tree ncclNvlsTreeConnect plus NVLS's buffers).  Before,
 * ncclCommInitRank connected Ring and Tree, set up NVLS (its buffers
 * and, across nodes, its trees) where the node has it, whatever ran. */
static void
cost_comm_buffers(const struct topo *t, const struct nccl_config *nc,
                  const struct comm_use *cu, struct cost_table *ct)
{
    if (!cu->used)
        return;
    unsigned algos = cu->algos;
    double nvls = coll_nvls_buffer_bytes(t, nc, cu->g.ranks_per_node);
    if (nc->version < NCCL_RUNTIME_CONNECT_VERSION) {
        algos = 1u << NCCL_ALGO_RING | 1u << NCCL_ALGO_TREE;
        if (nvls > 0)
            algos |= 1u << NCCL_ALGO_NVLS;
        if (nvls > 0 && nccl_algo_exists(nc->version, COLL_ALLREDUCE,
                                         NCCL_ALGO_NVLS_TREE))
            algos |= 1u << NCCL_ALGO_NVLS_TREE;
    }
    if (algos & (1u << NCCL_ALGO_NVLS | 1u << NCCL_ALGO_NVLS_TREE)) {
        ct->nccl_nvls_bytes += nvls;
        ct->nvls_communicators += nvls > 0;
    }
    ct->nccl_conn_bytes += coll_conn_buffer_bytes(t, nc, &cu->g,
                                                  cu->channels, algos);
}

/* Ops timed alike: every field the loop below reads of an op (its kind,
 * stream, group, unit, leaves, bytes, reduction and hooks) equal, so are
 * its three times and its collective's result.  A step's middle
 * micro-batches repeat the same ops, so most ops find one timed before:
 * GPT-3 175B's steps have a few thousand kinds of op, at any
 * accumulation.  The table maps a hash of those fields to the first op
 * of each kind (open addressing, doubled when half full): sized by its
 * kinds, not by the ops, it stays in cache. */
struct op_memo {
    int *slot;                  /* op id, -1 for empty */
    unsigned mask;
    int n;
};

#define OP_MEMO_FIRST_SLOTS 4096u

static bool
same_op_costs(const struct sched_op *a, const struct sched_op *b)
{
    return a->kind == b->kind && a->stream == b->stream && a->pg == b->pg
           && a->unit == b->unit && a->leaf_begin == b->leaf_begin
           && a->leaf_end == b->leaf_end && a->bytes == b->bytes
           && a->redop == b->redop && a->hooks == b->hooks
           && a->cast_elems == b->cast_elems;
}

static unsigned
op_costs_hash(const struct sched_op *op)
{
    uint64_t h = 1469598103934665603u;  /* FNV-1a over the fields */
    const int64_t f[] = {op->kind, op->stream, op->pg, op->unit,
                         op->leaf_begin, op->leaf_end, (int64_t)op->bytes,
                         op->redop, op->hooks};
    for (size_t i = 0; i < sizeof f / sizeof *f; i++)
        h = (h ^ (uint64_t)f[i]) * 1099511628211u;
    return (unsigned)(h ^ h >> 32);
}

static void
op_memo_init(struct op_memo *m, unsigned size)
{
    m->slot = xmalloc(sizeof *m->slot * size);
    for (unsigned i = 0; i < size; i++)
        m->slot[i] = -1;
    m->mask = size - 1;
    m->n = 0;
}

/* The free slot or the slot of the op timed like OP. */
static unsigned
op_memo_slot(const struct op_memo *m, const struct sched *s,
             const struct sched_op *op)
{
    unsigned i = op_costs_hash(op) & m->mask;
    while (m->slot[i] >= 0 && !same_op_costs(&s->ops[m->slot[i]], op))
        i = (i + 1) & m->mask;
    return i;
}

/* The first op timed like op ID, or -1 (then ID is remembered as the
 * first of its kind). */
static int
op_memo_find(struct op_memo *m, const struct sched *s, int id)
{
    unsigned i = op_memo_slot(m, s, &s->ops[id]);
    if (m->slot[i] >= 0)
        return m->slot[i];
    m->slot[i] = id;
    if (++m->n > (int)(m->mask / 2)) {
        struct op_memo big;
        op_memo_init(&big, 2 * (m->mask + 1));
        for (unsigned k = 0; k <= m->mask; k++)
            if (m->slot[k] >= 0)
                big.slot[op_memo_slot(&big, s, &s->ops[m->slot[k]])] =
                    m->slot[k];
        big.n = m->n;
        free(m->slot);
        *m = big;
    }
    return -1;
}

static void table_alloc(struct cost_table *ct, const struct sched *s,
                        bool zero);

/* cost_table_build, with the op memo or (EACH) every op timed on its
 * own. */
static void
build(const struct sched *s, const struct topo *t, struct cost_table *ct,
      bool each)
{
    int n = s->n_ops;
    table_alloc(ct, s, false);

    /* Leaf times per dtype are the same for every op: compute them once. */
    double *fwd_s = xcalloc(s->n_leaves + 1, sizeof(double));
    double *bwd_s = xcalloc(s->n_leaves + 1, sizeof(double));
    int *fwd_k = xcalloc(s->n_leaves + 1, sizeof(int));
    int *bwd_k = xcalloc(s->n_leaves + 1, sizeof(int));
    int sac = s->ac == AC_SELECTIVE_OP;
    double *rec_s = sac ? xcalloc(s->n_leaves + 1, sizeof(double)) : NULL;
    int *rec_k = sac ? xcalloc(s->n_leaves + 1, sizeof(int)) : NULL;
    struct kernel_ctx kc;
    cost_kernel_ctx(s, &kc);
    /* The step goes at its slowest GPU's pace (straggler.h): the compute
     * peaks its kernels run at are that GPU's. */
    struct topo slowest = *t;
    slowest.clock_fraction *= straggler_speed(t->speed_spread, s->world);
    /* The layers of a model repeat: a leaf like one timed before (same
     * shape, name and parent class, so the same kernel list) takes its
     * times. */
    int memo_leaf[COST_MEMO], n_leaf_memo = 0;
    for (int l = 0; l < s->n_leaves; l++) {
        int hit = -1;
        for (int k = 0; k < n_leaf_memo && hit < 0; k++)
            if (same_kernels(s->leaves[memo_leaf[k]], s->leaves[l])
                && (!sac || s->leaf_sac_gemm[memo_leaf[k]]
                                == s->leaf_sac_gemm[l]))
                hit = memo_leaf[k];
        if (hit >= 0) {
            fwd_s[l] = fwd_s[hit];
            bwd_s[l] = bwd_s[hit];
            fwd_k[l] = fwd_k[hit];
            bwd_k[l] = bwd_k[hit];
            if (sac) {
                rec_s[l] = rec_s[hit];
                rec_k[l] = rec_k[hit];
            }
            continue;
        }
        fwd_s[l] = cost_leaf_time_s(&slowest, s->leaves[l], &kc,
                                    s->param_dtype, PHASE_FWD, &fwd_k[l]);
        bwd_s[l] = cost_leaf_time_s(&slowest, s->leaves[l], &kc,
                                    s->param_dtype, PHASE_BWD, &bwd_k[l]);
        if (sac)
            rec_s[l] = cost_leaf_recompute_selective_s(
                &slowest, s->leaves[l], &kc, s->param_dtype,
                s->leaf_sac_gemm[l], &rec_k[l]);
        if (n_leaf_memo < COST_MEMO)
            memo_leaf[n_leaf_memo++] = l;
    }

    double launch = t->launch_overhead_ns;
    int memo[COST_MEMO], n_memo = 0;
    /* Communicators that run NVLS, each taking its buffers once.  One per
     * process group, but PG_POST_FORWARD is one per fully_shard call that
     * has an int reshard_after_forward: _get_post_forward_mesh_info
     * (_fsdp_init.py) builds a DeviceMesh for each call, and a DeviceMesh
     * makes new process groups for its dimensions
     * (DeviceMesh._init_process_groups: new_group or split_group, nothing
     * looked up), so two groups resharding to one size gather on two
     * ProcessGroupNCCLs, two NCCL communicators, each with NVLS buffers
     * of its own (ncclNvlsSetup, transport/nvls.cc, shares a parent's
     * only under splitShare, which PyTorch leaves at NCCL's 0).  Only the
     * mesh's shard dimension runs collectives, and ProcessGroupNCCL makes
     * its communicator at the first one, so the replicate dimension's
     * group takes nothing.  The same holds for every buffer a
     * communicator maps (cost_comm_buffers).  pf: per unit (and a last
     * slot for an op of none), its post-forward communicator. */
    struct comm_use comms[PG_COUNT] = {{0}};
    struct comm_use *pf = xcalloc((size_t)s->n_units + 1, sizeof *pf);
    struct op_memo om;
    op_memo_init(&om, OP_MEMO_FIRST_SLOTS);
    /* The op as far back as the last one's match, tried first: the ops
     * of a micro-batch follow those of the one before in order, so after
     * the first match the next op's is the one after it. */
    int back = 0;
    for (int i = 0; i < n; i++) {
        const struct sched_op *op = &s->ops[i];
        int same = -1;
        if (!each && back > 0 && same_op_costs(&s->ops[i - back], op))
            same = i - back;
        else if (!each && (same = op_memo_find(&om, s, i)) >= 0)
            back = i - same;
        if (same >= 0) {
            ct->gpu_ns[i] = ct->gpu_ns[same];
            ct->launch_ns[i] = ct->launch_ns[same];
            ct->issue_ns[i] = ct->issue_ns[same];
            if (sched_op_is_collective(op)) {
                *cost_coll(ct, i) = *cost_coll(ct, same);
                /* Its communicator is the earlier op's, already marked
                 * with this result. */
            }
            continue;
        }
        double sec = 0;
        int kernels = 1;
        double host_extra_s = 0;
        switch (op->kind) {
        case OP_FORWARD:
        case OP_RECOMPUTE:
        case OP_BACKWARD:
            kernels = 0;
            for (int l = op->leaf_begin; l < op->leaf_end; l++) {
                if (op->kind == OP_BACKWARD) {
                    sec += bwd_s[l];
                    kernels += bwd_k[l];
                    host_extra_s += bwd_k[l] * t->autograd_overhead_ns
                                    * 1e-9;
                } else if (sac && op->kind == OP_RECOMPUTE) {
                    sec += rec_s[l];
                    kernels += rec_k[l];
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
            cost_op_group(s, op, &g);
            enum coll_op co = cost_coll_op(op->kind);
            /* Units of one model repeat the same few collectives: look
             * the (kind, group, size) up among the ones already timed. */
            int hit = -1;
            for (int k = 0; k < n_memo && hit < 0; k++) {
                const struct sched_op *o2 = &s->ops[memo[k]];
                struct coll_group g2;
                cost_op_group(s, o2, &g2);
                if (o2->kind == op->kind && o2->pg == op->pg
                    && g2.ranks == g.ranks && o2->bytes == op->bytes
                    && o2->redop == op->redop)
                    hit = memo[k];
            }
            struct coll_result *c = cost_coll(ct, i);
            if (hit >= 0) {
                *c = *cost_coll(ct, hit);
            } else {
                char *why = NULL;
                /* FSDP1 and DDP reduce with SUM, FSDP2 averages
                 * (§14.4, op->redop); setup has checked that NCCL
                 * accepts every collective kind: this cannot fail. */
                if (coll_estimate(t, &s->nccl, co,
                                  (enum coll_redop)op->redop, &g,
                                  (double)op->bytes, c, &why)) {
                    fprintf(stderr, "fsdpsim: internal error: %s\n", why);
                    abort();
                }
                if (n_memo < COST_MEMO)
                    memo[n_memo++] = i;
            }
            sec = c->time_s;
            /* comm_channels 0: nothing runs (one rank, no bytes). */
            if (op->pg > PG_NONE && op->pg < PG_COUNT
                && c->comm_channels > 0) {
                struct comm_use *cu =
                    op->pg != PG_POST_FORWARD ? &comms[op->pg]
                    : &pf[op->unit >= 0 && op->unit < s->n_units
                              ? op->unit : s->n_units];
                cu->used = true;
                cu->g = g;
                cu->channels = c->comm_channels;
                cu->algos |= 1u << c->algo;
            }
            kernels = COLL_LAUNCH_KERNELS;
            break;
        }
        case OP_CAST: {
            struct kernel k = {.name = "copy", .cls = KERNEL_ELEMENTWISE,
                               .launches = 1, .bytes = (double)op->bytes,
                               .cast_elems = op->cast_elems};
            sec = kernel_time_s(&slowest, &k, s->param_dtype);
            break;
        }
        case OP_H2D:
        case OP_D2H:
            sec = (double)op->bytes / t->pcie_Bps + COPY_LATENCY_NS * 1e-9;
            break;
        case OP_OPTIMIZER:
            /* Memory-bound update, on the GPU or, offloaded, the host. */
            kernels = 0;
            if (op->stream == STREAM_HOST)
                sec = (double)op->bytes / t->host_mem_Bps;
            else {
                /* The foreach passes of sched.h, each a multi-tensor
                 * launch per MULTI_TENSOR_* group. */
                kernels = s->optimizer_passes
                          * multi_tensor_launches(s);
                struct kernel k = {.name = "optimizer (foreach)",
                                   .cls = KERNEL_ELEMENTWISE,
                                   .launches = kernels,
                                   .bytes = (double)op->bytes};
                sec = kernel_time_s(t, &k, s->param_dtype);
            }
            if (s->scaler_grad_numel > 0) {
                /* GradScaler.update: _amp_update_scale_, one tiny
                 * kernel (the unscale is its own op, sched.c). */
                sec += 2e-6;
                kernels += 1;
            }
            /* The training loop's Python around the step. */
            host_extra_s += t->step_overhead_ns * 1e-9;
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
        double hooks_s = op->hooks * t->hook_overhead_ns * 1e-9
                         + host_extra_s;
        ct->gpu_ns[i] = cost_seconds_to_ns(sec);
        ct->launch_ns[i] = cost_seconds_to_ns(
            hooks_s + (kernels > 0 ? launch * 1e-9 : 0));
        ct->issue_ns[i] = cost_seconds_to_ns(hooks_s
                                             + kernels * launch * 1e-9);
    }
    /* NCCL's buffers, once per communicator (the sums start at
     * cost_table_alloc's zero). */
    for (int pg = PG_NONE + 1; pg < PG_COUNT; pg++)
        cost_comm_buffers(t, &s->nccl, &comms[pg], ct);
    for (int u = 0; u <= s->n_units; u++)
        cost_comm_buffers(t, &s->nccl, &pf[u], ct);
    ct->nccl_buffer_bytes = ct->nccl_nvls_bytes + ct->nccl_conn_bytes;
    free(om.slot);
    free(pf);
    free(fwd_s);
    free(bwd_s);
    free(fwd_k);
    free(bwd_k);
    free(rec_s);
    free(rec_k);
}

void
cost_table_build(const struct sched *s, const struct topo *t,
                 struct cost_table *ct)
{
    build(s, t, ct, false);
}

void
cost_table_build_each(const struct sched *s, const struct topo *t,
                      struct cost_table *ct)
{
    build(s, t, ct, true);
}

/* cost_table_alloc, the times zeroed or (for build, which sets every
 * one) not. */
static void
table_alloc(struct cost_table *ct, const struct sched *s, bool zero)
{
    int n = s->n_ops;
    memset(ct, 0, sizeof *ct);
    size_t bytes = sizeof(int64_t) * (size_t)(n ? n : 1);
    ct->gpu_ns = zero ? xcalloc(n, sizeof(int64_t)) : xmalloc(bytes);
    ct->issue_ns = zero ? xcalloc(n, sizeof(int64_t)) : xmalloc(bytes);
    ct->launch_ns = zero ? xcalloc(n, sizeof(int64_t)) : xmalloc(bytes);
    ct->coll_of = xmalloc((size_t)(n ? n : 1) * sizeof *ct->coll_of);
    for (int i = 0; i < n; i++)
        ct->coll_of[i] = sched_op_is_collective(&s->ops[i]) ? ct->n_coll++
                                                            : -1;
    ct->coll = xcalloc(ct->n_coll, sizeof *ct->coll);
}

void
cost_table_alloc(struct cost_table *ct, const struct sched *s)
{
    table_alloc(ct, s, true);
}

void
cost_table_free(struct cost_table *ct)
{
    free(ct->gpu_ns);
    free(ct->issue_ns);
    free(ct->launch_ns);
    free(ct->coll);
    free(ct->coll_of);
}
