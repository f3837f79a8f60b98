/*
 * sched.c: the FSDP1 schedule builder (see sched.h).
 *
 * The builder replays, for each micro-batch of each step, what
 * FullyShardedDataParallel's hooks issue and in which order: the forward
 * walk of the module tree with pre-/post-forward hooks at unit boundaries,
 * the backward walk in reverse with pre-/post-backward hooks, the final
 * callback and the optimizer step.  Every rule cites the section of
 * doc/fsdp-semantics.md it follows.  One representative rank is built: by SPMD
 * symmetry every rank issues the same list.
 */
#include "sched.h"
#include "sched_impl.h"
#include "cost.h"
#include "kernel.h"
#include "layer.h"
#include "torch_version.h"
#include "xalloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int
unit_has_handle(const struct builder *b, int u)
{
    return b->s->units[u].numel > 0;
}

/* Append an op; GPU ops take the stream's pending waits as deps. */
struct sched_op *
emit(struct builder *b, enum sched_op_kind kind, enum sched_stream stream,
     int unit)
{
    struct sched *s = b->s;
    s->ops = xgrow(s->ops, &s->cap_ops, (size_t)s->n_ops + 1,
                   sizeof *s->ops);
    struct sched_op *op = &s->ops[s->n_ops];
    memset(op, 0, sizeof *op);
    op->id = s->n_ops++;
    op->kind = kind;
    op->stream = stream;
    op->phase = b->phase;
    op->iter = b->it;
    op->micro = b->micro;
    op->unit = unit;
    op->buffer = -1;
    op->buf_in = op->buf_out = -1;
    op->wait_op = -1;
    op->dtype = DTYPE_FP32;
    if (sched_op_on_gpu(op) || stream == STREAM_HOST) {
        /* Hook time is host time spent before the next op it issues. */
        op->hooks = b->hooks;
        b->hooks = 0;
    }
    if (sched_op_on_gpu(op)) {
        if (b->n_pending[stream] > 0) {
            /* Into the schedule's one deps array; op->deps is pointed
             * there when the build ends (the array still moves). */
            op->n_deps = b->n_pending[stream];
            s->dep_pool = xgrow(s->dep_pool, &b->cap_dep_pool,
                                b->n_dep_pool + (size_t)op->n_deps,
                                sizeof(int));
            memcpy(s->dep_pool + b->n_dep_pool, b->pending[stream],
                   sizeof(int) * op->n_deps);
            b->n_dep_pool += (size_t)op->n_deps;
            b->n_pending[stream] = 0;
        }
        b->last_op[stream] = op->id;
    }
    return op;
}

/* stream.wait_event(e) for the event recorded after op `dep`: the next op
 * on stream waits for it.  Ops of one stream finish in order, so a wait
 * on a later op of the same stream replaces an earlier one still
 * pending: at most one dep per stream, however many waits a stream that
 * issues nothing collects (a quiet all-reduce stream would otherwise
 * gather one per unit, and the scan below with them). */
void
wait_event(struct builder *b, enum sched_stream stream, int dep)
{
    if (dep < 0)
        return;
    enum sched_stream other = b->s->ops[dep].stream;
    for (int i = 0; i < b->n_pending[stream]; i++) {
        int *p = &b->pending[stream][i];
        if (*p == dep)
            return;
        if (b->s->ops[*p].stream == other) {
            if (dep > *p)
                *p = dep;
            return;
        }
    }
    b->pending[stream] = xgrow(b->pending[stream], &b->cap_pending[stream],
                               (size_t)b->n_pending[stream] + 1, sizeof(int));
    b->pending[stream][b->n_pending[stream]++] = dep;
}

/* stream.wait_stream(other): the next op on stream waits for everything
 * issued on other so far, i.e. for other's last op. */
void
wait_stream(struct builder *b, enum sched_stream stream,
            enum sched_stream other)
{
    wait_event(b, stream, b->last_op[other]);
}

int
alloc_buf(struct builder *b, enum sched_stream pool, enum mem_category cat,
          double bytes, int unit)
{
    struct sched_op *op = emit(b, OP_ALLOC, pool, unit);
    op->bytes = (uint64_t)bytes;
    op->cat = cat;
    op->buffer = b->s->n_buffers++;
    b->bufs = xgrow(b->bufs, &b->cap_bufs, (size_t)b->s->n_buffers,
                    sizeof *b->bufs);
    b->bufs[op->buffer].pool = pool;
    b->bufs[op->buffer].cat = cat;
    b->bufs[op->buffer].bytes = op->bytes;
    return op->buffer;
}

/* Free a buffer whose last use is op `last_use` (record_stream: the block
 * stays unavailable until that op has finished, §2.4). */
void
free_buf_after(struct builder *b, int buffer, int last_use, int unit)
{
    if (buffer < 0)
        return;
    const struct buf_info *bi = &b->bufs[buffer];
    struct sched_op *op = emit(b, OP_FREE, bi->pool, unit);
    op->buffer = buffer;
    op->cat = bi->cat;
    op->bytes = bi->bytes;
    op->wait_op = last_use;
}

/* The same, unless frees are stream-ordered (FSDP2, §13.2): then every
 * user of the buffer is ordered before the next allocation from its
 * pool, and the block is reusable at once. */
void
free_buf(struct builder *b, int buffer, int last_use, int unit)
{
    free_buf_after(b, buffer, b->stream_ordered ? -1 : last_use, unit);
}

/* BUFFER, still the same tensor, takes role CAT: freed and allocated
 * again at once from its pool, so the block passes straight to the new
 * buffer and neither allocated nor reserved memory moves.  The buffer id
 * changes; ops after this one use the returned id. */
static int
relabel_buf(struct builder *b, int buffer, enum mem_category cat, int unit)
{
    enum sched_stream pool = b->bufs[buffer].pool;
    double bytes = (double)b->bufs[buffer].bytes;
    free_buf_after(b, buffer, -1, unit);
    return alloc_buf(b, pool, cat, bytes, unit);
}

struct sched_op *
emit_copy(struct builder *b, enum sched_op_kind kind, enum sched_stream st,
          int unit, double bytes, int in, int out)
{
    struct sched_op *op = emit(b, kind, st, unit);
    op->bytes = (uint64_t)bytes;
    op->buf_in = in;
    op->buf_out = out;
    return op;
}

void
mark_cast(const struct builder *b, struct sched_op *op, double elems,
          int from, int to)
{
    if (torch_cast_is_dynamic(b->c->torch_version, from, to))
        op->cast_elems = elems;
}

/* Reads from unit u's slice of the persistent shards. */
void
from_shard(struct builder *b, struct sched_op *op, int u)
{
    op->buf_in = b->shard_buf;
    op->in_offset = b->shard_buf >= 0 ? b->shard_off[u] : 0;
}

/* ---- the rate limiter (doc/fsdp-semantics.md §3.4) ---- */

static void
limiter_push(struct builder *b, int event_op)
{
    if (!b->c->limit_all_gathers || event_op < 0)
        return;
    b->limiter = xgrow(b->limiter, &b->lim_cap, (size_t)b->lim_tail + 1,
                       sizeof(int));
    b->limiter[b->lim_tail++] = event_op;
}

/* _FreeEventQueue.dequeue_if_needed: with >= 2 queued free events, the host
 * blocks on the oldest one. */
#define LIMITER_MAX_INFLIGHT 2

static void
limiter_dequeue_if_needed(struct builder *b, int unit)
{
    if (!b->c->limit_all_gathers)
        return;
    if (b->lim_tail - b->lim_head >= LIMITER_MAX_INFLIGHT) {
        struct sched_op *op = emit(b, OP_CPU_WAIT, STREAM_HOST, unit);
        op->wait_op = b->limiter[b->lim_head++];
    }
}

/* ---- selective activation checkpointing ---- */

/* selective-layer (torchtitan's _apply_ac_to_transformer_block): blocks are
 * counted from 1 in module order and every ac_frequency-th is wrapped in a
 * full checkpoint, the others keep their activations.  Other modes
 * checkpoint every block. */
static int
ac_block_selected(const struct builder *b, const struct module *blk,
                  const char *cls)
{
    if (b->c->ac != AC_SELECTIVE_LAYER)
        return 1;
    int64_t count = 0;
    for (int i = 0; i <= blk->index; i++) {
        const struct module *mod = b->m->modules[i];
        if (!wrap_class_matches(mod->cls, cls))
            continue;
        int outer = 1;
        for (const struct module *p = mod->parent; p && outer; p = p->parent)
            outer = !wrap_class_matches(p->cls, cls);
        count += outer;
    }
    return count % b->c->ac_frequency == 0;
}

/* selective-op: what a checkpointed leaf keeps, and its recompute's FLOPs.
 * torchtitan's policy saves aten.mm outputs but every second one of a
 * block (its mm counter starts at 0 for each checkpointed call and the
 * even-numbered ones are recomputed: a Llama block saves wq, wv, w1, w2
 * and recomputes wk, wo, w3); a Linear with a bias runs aten.addmm, not
 * in the save list, so it is recomputed and not counted.  A float8
 * Linear is an aten.mm to the policy: torchao's Float8Linear calls
 * torch.mm on two Float8Tensors (float8_linear.py,
 * manual_float8_matmul_with_args_in_float8 and ..._in_hp), the dispatch
 * mode sees aten.mm.default before the subclass turns it into
 * torch._scaled_mm (float8_ops.py float8_mm), and adds its bias apart.
 * Attention's SDPA output is saved.  For the abs() a float8 Linear takes
 * of its input and weight for their scales, sac_float8_abs. */
static unsigned
sac_float8_abs(struct builder *b, const struct module *mod, bool mm_saved)
{
    /* tensor_to_amax (torchao float8_utils.py): max(abs(x)) tensorwise,
     * amax(abs(x), dim) rowwise; the weight's only when it is not
     * gathered already cast (fsdp_utils.py: the float8 all-gather hands
     * Float8Linear a Float8Tensor, and get_weight_scale skips it).  The
     * abs outputs are MUST_SAVE under the benchmark commit's _save_list
     * (§10.1).  Eager: the caching dispatch mode stores every MUST_SAVE
     * output until the block's recompute pops it
     * (torch/utils/checkpoint.py _CachingTorchDispatchMode), one abs() of
     * the input per Linear, of the weight per Linear.  torch.compile:
     * MUST_SAVE only bans recomputing the node (partitioners.py
     * should_ban_recomputation), so an abs() is kept only when a node the
     * backward recomputes reads it.  Tensorwise, that is max, itself
     * saved: no abs() kept.  Rowwise, amax is not in the list, so a
     * Linear whose mm is recomputed recasts its input and weight from
     * their abs(): both kept, the input's once for the Linears sharing
     * it (CSE); the backward's casts along the other dimension take
     * their amax from the forward (small) instead.  torchtitan's own
     * measurement of the rowwise case: 10.78 GiB on Llama 3 8B
     * (commit 88247277, §10.1). */
    if (!layer_shares_input(mod))
        b->sac_abs_input_kept = false;
    if (!b->c->compile)
        return SAC_KEEP_ABS_INPUT
               | (b->c->float8_all_gather ? 0 : SAC_KEEP_ABS_WEIGHT);
    if (b->c->float8 != FLOAT8_ROWWISE || mm_saved)
        return 0;
    unsigned keep = SAC_KEEP_ABS_WEIGHT;
    if (!b->sac_abs_input_kept)
        keep |= SAC_KEEP_ABS_INPUT;
    b->sac_abs_input_kept = true;
    return keep;
}

static void
sac_account(struct builder *b, const struct module *mod, int leaf,
            struct walk_step *st, const struct layer_work *lw)
{
    if (b->c->ac != AC_SELECTIVE_OP)
        return;
    if (st->ckpt != b->sac_block) {
        b->sac_block = st->ckpt;
        b->sac_mm = 0;
        b->sac_abs_input_kept = false;
    }
    bool mm_saved = false, gemm_recomputed = false;
    unsigned keep = 0;
    if (mod->kind == LAYER_LINEAR) {
        bool fp8 = b->c->float8 != FLOAT8_NONE && layer_float8_linear(mod);
        if (fp8 || !mod->bias)
            mm_saved = ++b->sac_mm % 2 == 1;
        gemm_recomputed = !mm_saved;
        b->s->leaf_sac_gemm[leaf] = gemm_recomputed;
        keep = (mm_saved ? SAC_KEEP_MM : 0)
               | (fp8 ? sac_float8_abs(b, mod, mm_saved) : 0);
    }
    /* The block's last Linear (a Llama block's w2 / down_proj) feeds only
     * the residual add that ends the block: no backward op reads its
     * output, and the recompute stops before it (the block's output is
     * the next block's saved input).  Eager, the caching dispatch mode
     * stores it anyway, MUST_SAVE (torch/utils/checkpoint.py,
     * _CachingTorchDispatchMode); it is no tensor autograd would save
     * without checkpointing, so the recompute does not stand in for it.
     * torch.compile's partitioner saves only what the backward graph
     * reads (partitioners.py, min_cut_rematerialization_partition): it
     * is not kept.  Checked on PyTorch 2.15's CPU build with torchtitan's
     * block and policy: the compiled backward's saved activations are
     * the block's input, wq's, wv's and w1's outputs, SDPA's output and
     * log-sum-exp (§10.1). */
    if ((keep & SAC_KEEP_MM)
        && mod == layer_last_compute_leaf(b->m->modules[st->ckpt])) {
        double out = layer_sac_saved_bytes(mod, b->c->micro_batch,
                                           b->c->seq_len, b->b_param,
                                           SAC_KEEP_MM);
        if (b->c->compile)
            keep &= ~(unsigned)SAC_KEEP_MM;
        else
            st->sac_cache_only_bytes += out;
    }
    st->sac_kept_bytes += layer_sac_saved_bytes(
        mod, b->c->micro_batch, b->c->seq_len, b->b_param, keep);
    if ((mod->kind != LAYER_LINEAR && mod->kind != LAYER_ATTENTION
         && mod->kind != LAYER_MHA) || gemm_recomputed)
        st->sac_recompute_flops += lw->fwd_flops;
}

static double
recompute_flops(const struct builder *b, int w)
{
    return b->c->ac == AC_SELECTIVE_OP ? b->walk[w].sac_recompute_flops
                                       : b->walk[w].fwd_flops;
}

/* Bytes a checkpointed run's recompute materialises again. */
static double
recompute_bytes(const struct builder *b, int w)
{
    const struct walk_step *st = &b->walk[w];
    return st->saved_bytes
           - (b->c->ac == AC_SELECTIVE_OP
                  ? st->sac_kept_bytes - st->sac_cache_only_bytes : 0);
}

/* Forward of a checkpointed run under selective-op: the outputs the
 * policy saves stay allocated until the run's backward. */
static void
sac_forward(struct builder *b, int w)
{
    const struct walk_step *st = &b->walk[w];
    if (b->c->ac == AC_SELECTIVE_OP && st->sac_kept_bytes > 0)
        b->run_sac[w] = alloc_buf(b, STREAM_C, MEM_ACTIVATIONS,
                                  st->sac_kept_bytes, st->unit);
}

static void
sac_free(struct builder *b, int w, int last_use)
{
    if (b->run_sac[w] >= 0)
        free_buf(b, b->run_sac[w], last_use, b->walk[w].unit);
    b->run_sac[w] = -1;
}

/* ---- unshard / reshard ---- */

/* _unshard (§3.2 steps a-c): pre-unshard on PU (offload H2D, mixed
 * precision cast), the limiter, then allocation and all-gather on U. */
static void
unshard(struct builder *b, int u)
{
    const struct fsdp_unit *fu = &b->s->units[u];
    if (!unit_has_handle(b, u))
        return;
    double S = (double)fu->shard_numel;
    int mp = b->b_param != b->b_orig;

    if (!b->sharded) {
        /* NO_SHARD: nothing to gather; with mixed precision a full
         * low-precision copy is made at every pre-forward/pre-backward. */
        if (mp && b->unsharded[u] < 0) {
            b->unsharded[u] = alloc_buf(b, STREAM_PU, MEM_UNSHARDED_PARAMS,
                                        S * b->b_param, u);
            struct sched_op *c = emit_copy(b, OP_CAST, STREAM_PU, u,
                                           S * (b->b_orig + b->b_param), -1,
                                           b->unsharded[u]);
            mark_cast(b, c, S, b->b_orig, b->b_param);
            from_shard(b, c, u);
            wait_stream(b, STREAM_U, STREAM_PU);
        }
        limiter_dequeue_if_needed(b, u);
        return;
    }

    int need_ag = b->unsharded[u] < 0;
    int staging = -1, lp = -1, pu_ran = 0;
    if (need_ag && b->c->cpu_offload) {
        staging = alloc_buf(b, STREAM_PU, MEM_OFFLOAD_STAGING, S * b->b_orig,
                            u);
        emit_copy(b, OP_H2D, STREAM_PU, u, S * b->b_orig, -1, staging);
        pu_ran = 1;
    }
    if (need_ag && mp) {
        lp = alloc_buf(b, STREAM_PU, MEM_AG_BUFFER, S * b->b_param, u);
        struct sched_op *cast = emit_copy(b, OP_CAST, STREAM_PU, u,
                                          S * (b->b_orig + b->b_param),
                                          staging, lp);
        mark_cast(b, cast, S, b->b_orig, b->b_param);
        if (staging < 0)
            from_shard(b, cast, u);
        if (staging >= 0) {
            free_buf(b, staging, cast->id, u);
            staging = -1;
        }
        pu_ran = 1;
    }
    if (pu_ran)
        wait_stream(b, STREAM_U, STREAM_PU);
    limiter_dequeue_if_needed(b, u);
    if (!need_ag)
        return;
    b->unsharded[u] = alloc_buf(b, STREAM_U, MEM_UNSHARDED_PARAMS,
                                (double)fu->padded_numel * b->b_param, u);
    struct sched_op *ag = emit(b, OP_ALLGATHER, STREAM_U, u);
    ag->pg = PG_SHARD;
    ag->bytes = (uint64_t)fu->padded_numel * (uint64_t)b->b_param;
    ag->dtype = b->s->param_dtype;
    ag->buf_out = b->unsharded[u];
    if (lp >= 0)
        ag->buf_in = lp;
    else if (staging >= 0)
        ag->buf_in = staging;
    else
        from_shard(b, ag, u);
    int ag_id = ag->id;
    free_buf(b, lp, ag_id, u);
    free_buf(b, staging, ag_id, u);
}

/* _reshard: free the unsharded parameters (record_stream on C) and queue
 * a limiter event recorded on C. */
static void
reshard(struct builder *b, int u)
{
    if (b->unsharded[u] < 0)
        return;
    free_buf(b, b->unsharded[u], b->last_op[STREAM_C], u);
    b->unsharded[u] = -1;
    if (b->sharded)
        limiter_push(b, b->last_op[STREAM_C]);
}

static int
ckpt_enabled(const struct builder *b)
{
    return b->c->ac != AC_NONE;
}

/* A unit wrapped in a reentrant checkpoint (CheckpointWrapper around the
 * FSDP unit, --activation-checkpointing reentrant). */
static int
reentrant_unit(const struct builder *b, int u)
{
    return b->c->ac == AC_REENTRANT
           && wrap_class_matches(b->s->units[u].mod->cls,
                                 b->c->layer_cls ? b->c->layer_cls
                                                 : b->m->layer_cls);
}

/* ---- forward ---- */

static void
pre_forward(struct builder *b, int u)
{
    b->hooks++;
    if (!unit_has_handle(b, u))
        return;             /* a unit without parameters has no handle */
    /* _use_unsharded_views (in forward) makes the modules' parameter
     * views here, unless a forward prefetch made them already. */
    if (!b->prefetched[u]) {
        unshard(b, u);
        if (b->phase == PHASE_FORWARD)
            b->view_seq[u] = 2 * b->cur_w;
    }
    b->prefetched[u] = 0;
    wait_stream(b, STREAM_C, STREAM_U);
    /* forward_prefetch (§3.5): from the second step on, the next unit in
     * the recorded pre-forward order is unsharded before u's compute,
     * and _prefetch_handle builds its views now, inside u's pre-forward. */
    if (b->c->forward_prefetch && b->it > 0) {
        int pos = b->fwd_pos[u];
        if (pos + 1 < b->n_fwd_order) {
            int next = b->fwd_order[pos + 1];
            if (!b->prefetched[next] && b->unsharded[next] < 0
                && unit_has_handle(b, next)) {
                unshard(b, next);
                b->prefetched[next] = 1;
                if (b->phase == PHASE_FORWARD)
                    b->view_seq[next] = 2 * b->cur_w + 1;
            }
        }
    }
}

static void
post_forward(struct builder *b, int u)
{
    b->hooks++;
    if (!unit_has_handle(b, u))
        return;
    if (!b->sharded) {
        if (b->b_param != b->b_orig) {
            free_buf(b, b->unsharded[u], b->last_op[STREAM_C], u);
            b->unsharded[u] = -1;
        }
        return;
    }
    /* §3.3: the root keeps its parameters for backward. */
    if (u != 0 && sharding_reshards_after_forward(b->c->sharding))
        reshard(b, u);
}


/* The temporaries held while one compute op runs (the loss's
 * vocabulary-wide tensors), N of EACH bytes allocated one after the other
 * into TMP; transient_free releases them after op LAST. */
#define MAX_TRANSIENTS 2
static void
transient_alloc(struct builder *b, int n, double each, int unit, int *tmp)
{
    for (int i = 0; i < MAX_TRANSIENTS; i++)
        tmp[i] = i < n && each > 0
                     ? alloc_buf(b, STREAM_C, MEM_ACTIVATIONS, each, unit)
                     : -1;
}

static void
transient_free(struct builder *b, const int *tmp, int last, int unit)
{
    for (int i = 0; i < MAX_TRANSIENTS; i++)
        free_buf(b, tmp[i], last, unit);
}

/* A kernel op of KIND on the compute stream for UNIT over leaves
 * [BEGIN, END) in the parameter dtype, doing FLOPS, MODEL_FLOPS of which
 * count towards MFU: what forward, backward, recomputation and DDP's
 * per-leaf backward each issue. */
static struct sched_op *
emit_compute(struct builder *b, enum sched_op_kind kind, int unit, int begin,
             int end, double flops, double model_flops)
{
    struct sched_op *op = emit(b, kind, STREAM_C, unit);
    op->leaf_begin = begin;
    op->leaf_end = end;
    op->flops = flops;
    op->model_flops = model_flops;
    op->dtype = b->s->param_dtype;
    return op;
}

void
forward_run(struct builder *b, int w)
{
    const struct walk_step *st = &b->walk[w];
    /* The saved activations are allocated as the kernels produce them. */
    if (st->ckpt >= 0) {
        /* Checkpointed: only the region's input survives forward (§10). */
        if (b->ckpt_input[st->ckpt] < 0) {
            double in = (double)b->c->micro_batch * (double)b->c->seq_len
                        * (double)b->m->hidden * b->b_param;
            b->ckpt_input[st->ckpt] = alloc_buf(b, STREAM_C, MEM_ACTIVATIONS,
                                                in, st->unit);
        }
        b->run_act[w] = -1;
        sac_forward(b, w);
    } else if (st->saved_bytes > 0) {
        b->run_act[w] = alloc_buf(b, STREAM_C, MEM_ACTIVATIONS,
                                  st->saved_bytes, st->unit);
    }
    int tmp[MAX_TRANSIENTS];
    transient_alloc(b, st->fwd_transients, st->fwd_transient_bytes,
                    st->unit, tmp);
    struct sched_op *op = emit_compute(b, OP_FORWARD, st->unit,
                                       st->leaf_begin, st->leaf_end,
                                       st->fwd_flops, st->model_flops);
    transient_free(b, tmp, op->id, st->unit);
}

static void
forward_pass(struct builder *b)
{
    b->phase = PHASE_FORWARD;
    /* _root_pre_forward: U and PU wait for C (§2.2), so the first
     * all-gather of a step follows the previous optimizer step. */
    b->hooks++;
    wait_stream(b, STREAM_U, STREAM_C);
    wait_stream(b, STREAM_PU, STREAM_C);
    /* use_orig_params: zero_grad(set_to_none=True) dropped only the
     * original parameters' .grad views; _root_pre_forward's
     * _reset_flat_param_grad_info_if_needed frees each flat_param.grad
     * now (_runtime_utils.py, _flat_param.py). */
    if (b->grad_shard_stale) {
        for (int u = 0; u < b->s->n_units; u++) {
            if (b->grad_shard[u] >= 0)
                free_buf(b, b->grad_shard[u], b->last_op[STREAM_C], u);
            b->grad_shard[u] = -1;
        }
        b->grad_shard_stale = 0;
    }
    memset(b->prefetched, 0, sizeof(int) * b->s->n_units);
    for (int u = 0; u < b->s->n_units; u++)
        b->view_seq[u] = -1;
    for (int w = 0; w < b->n_walk; w++) {
        b->cur_w = w;
        switch (b->walk[w].kind) {
        case WALK_ENTER:
            pre_forward(b, b->walk[w].unit);
            break;
        case WALK_RUN:
            forward_run(b, w);
            break;
        case WALK_EXIT:
            post_forward(b, b->walk[w].unit);
            break;
        }
    }
}

/* ---- backward ---- */

static void
prefetch_backward(struct builder *b, int u)
{
    int pos = b->post_fwd_pos[u];
    if (pos <= 0)
        return;
    int target = b->post_fwd_order[pos - 1];
    if (b->prefetched[target] || b->unshard_done[target]
        || !unit_has_handle(b, target))
        return;
    /* _get_handle_to_prefetch takes only a handle whose
     * _needs_pre_backward_unshard is set, and _register_pre_backward_hooks
     * sets it only when the unit's forward ran with grad enabled: a unit
     * inside a reentrant checkpoint ran under no_grad, so it is never a
     * backward prefetch target; it gathers for its own recompute (§10). */
    if (reentrant_unit(b, target))
        return;
    unshard(b, target);
    b->prefetched[target] = 1;
}

/* The unit's gradient elements: with use_orig_params the FlatParameter,
 * and so its gradient, holds the alignment and world-size padding
 * (_flat_param.py _init_flat_param_and_metadata, align_addresses). */
static double
grad_numel(const struct builder *b, int u)
{
    const struct fsdp_unit *fu = &b->s->units[u];
    return (double)(b->c->use_orig_params ? fu->padded_numel : fu->numel);
}

/* NO_SHARD after a synchronised micro-batch of the same step: the
 * reduced gradient is still flat_param.grad, of the unsharded size, so
 * prepare_gradient_for_backward leaves it there (it stashes a .grad only
 * when its size differs from _unpadded_unsharded_size) and AccumulateGrad
 * adds the new gradient into it, in its dtype (_reduce_grad_no_shard: the
 * all-reduce "directly covers any gradient accumulation implicitly"). */
static bool
no_shard_accumulates(const struct builder *b, int u)
{
    return !b->sharded && b->grad[u] < 0 && b->grad_shard[u] >= 0;
}

/* The unit's parameters are views of its FlatParameter made with split
 * and view (_flat_param.py _get_unflat_views_unaligned), so each
 * parameter's gradient is a tensor of its own, held in the input buffer
 * of SplitWithSizesBackward until the last of them is computed: together
 * the unit's numel, counted from the unit's pre-backward on. */
static void
alloc_grad(struct builder *b, int u)
{
    if (b->grad_parts[u] >= 0 || !unit_has_handle(b, u))
        return;
    /* Added into a .grad already there, the new gradient is autograd's
     * temporary, like an activation's gradient. */
    b->grad_parts[u] = alloc_buf(b, STREAM_C,
                                 no_shard_accumulates(b, u)
                                     ? MEM_ACTIVATIONS : MEM_GRAD_UNSHARDED,
                                 grad_numel(b, u) * b->b_param, u);
}

static void
pre_backward(struct builder *b, int u)
{
    b->hooks++;
    if (!unit_has_handle(b, u))
        return;
    if (!b->prefetched[u])
        unshard(b, u);
    b->unshard_done[u] = 1;
    wait_stream(b, STREAM_C, STREAM_U);
    if (b->c->backward_prefetch == BWD_PREFETCH_PRE)
        prefetch_backward(b, u);
    b->grad_held[u] = b->grad[u] >= 0;
    alloc_grad(b, u);
}

/* SplitWithSizesBackward (tools/autograd/derivatives.yaml:
 * split_with_sizes_backward) cats the parameters' gradients into one new
 * flat tensor on the compute stream, just before AccumulateGrad fires the
 * post-backward hook (§4.2): while the cat runs, the parts and the flat
 * gradient both live, twice the unit's gradient; the parts go when the
 * node finishes.  AccumulateGrad then takes the flat tensor as .grad, or,
 * inside no_sync with a gradient already held, adds it in place and drops
 * it (torch/csrc/autograd/functions/accumulate_grad.h): one more read of
 * each and a write. */
static void
flat_gradient(struct builder *b, int u)
{
    int parts = b->grad_parts[u];
    if (parts < 0)
        return;
    b->grad_parts[u] = -1;
    double bytes = grad_numel(b, u) * b->b_param;
    int flat = alloc_buf(b, STREAM_C, MEM_GRAD_UNSHARDED, bytes, u);
    struct sched_op *cat = emit_copy(b, OP_CAST, STREAM_C, u, 2 * bytes,
                                     parts, flat);
    free_buf(b, parts, cat->id, u);
    if (!b->grad_held[u]) {
        b->grad[u] = flat;
        return;
    }
    /* grad += flat in the held gradient's dtype (fp32 under NO_SHARD's
     * accumulation into its reduced gradient, a cast on the way). */
    double held = (double)b->bufs[b->grad[u]].bytes;
    struct sched_op *add = emit_copy(b, OP_CAST, STREAM_C, u,
                                     bytes + 2 * held, flat, b->grad[u]);
    int held_elem = (int)(held / grad_numel(b, u) + 0.5);
    mark_cast(b, add, grad_numel(b, u), b->b_param, held_elem);
    free_buf(b, flat, add->id, u);
}

/* FSDP1's gradient pre-division factor for a data-parallel degree of DP
 * (torch/distributed/algorithms/_comm_hooks/default_hooks.py,
 * DefaultState._get_gradient_predivide_factor): starting from 1, double
 * while it divides DP and is smaller than DP over it.  _init_utils.py
 * _init_process_group_state takes DP as the shard group's size times,
 * under HYBRID_SHARD, the replicate group's (§4.2 step 5). */
static int
gradient_predivide_factor(int dp)
{
    int factor = 1;
    while (dp % factor == 0 && dp / factor > factor)
        factor *= 2;
    return factor;
}

/* _div_if_needed: an in-place div_ over NUMEL elements of ELEM bytes when
 * the factor is above 1, one read and one write of each element. */
static void
divide_gradient(struct builder *b, enum sched_stream st, int u, int buffer,
                double numel, double elem, double factor)
{
    if (factor > 1)
        emit_copy(b, OP_CAST, st, u, 2 * numel * elem, buffer, buffer);
}

/* Reduce-scatter path of _post_backward_hook (§4.2 step 5).  What each
 * tensor's lifetime is (torch/distributed/fsdp/_runtime_utils.py): the
 * hook keeps autograd_computed_grad, the flat gradient autograd made,
 * until it returns, then hands it to the caching allocator with
 * record_stream on the post-backward stream; _reduce_grad's local
 * unsharded_grad (the reduce-dtype copy, when there is one) lives until
 * _reduce_grad returns; _get_reduce_scatter_tensors pads with F.pad, a
 * new tensor, and allocates the output shard (torch.empty_like) while
 * both are still held.  So the flat gradient, its reduce-dtype copy, the
 * padded input and the output shard all live when the reduce-scatter is
 * issued. */
static void
reduce_gradient(struct builder *b, int u)
{
    const struct fsdp_unit *fu = &b->s->units[u];
    double N = grad_numel(b, u);
    double S = (double)fu->shard_numel;
    double WS = (double)fu->padded_numel;
    enum sched_stream st = STREAM_P;

    wait_stream(b, STREAM_P, STREAM_C);
    int autograd_grad = b->grad[u];
    b->grad[u] = -1;
    int cur = autograd_grad;
    /* The gradient's dtype: the parameters' compute dtype, or fp32 when
     * NO_SHARD accumulated into its reduced gradient (pre_backward). */
    int b_grad = (int)((double)b->bufs[cur].bytes / N + 0.5);
    if (b->b_reduce != b_grad) {
        /* flat_param.grad.data = flat_param.grad.to(reduce_dtype) */
        int cast_buf = alloc_buf(b, STREAM_P, MEM_RS_BUFFER, N * b->b_reduce,
                                 u);
        mark_cast(b, emit_copy(b, OP_CAST, STREAM_P, u,
                               N * (b_grad + b->b_reduce), cur, cast_buf),
                  N, b_grad, b->b_reduce);
        cur = cast_buf;
    }
    int unsharded = cur;

    int dp = b->sharded ? b->s->shard_size * b->s->replicate_size
                        : b->s->no_shard_ranks;
    int pre = gradient_predivide_factor(dp);
    double post = (double)dp / pre;
    struct sched_op *red;
    int out = -1, keep = 0;
    if (b->sharded) {
        if (!b->c->use_orig_params && fu->numel % b->s->shard_size) {
            int pad = alloc_buf(b, STREAM_P, MEM_RS_BUFFER, WS * b->b_reduce,
                                u);
            emit_copy(b, OP_CAST, STREAM_P, u, 2 * WS * b->b_reduce, cur,
                      pad);
            cur = pad;
        }
        divide_gradient(b, STREAM_P, u, cur, WS, b->b_reduce, pre);
        /* A reduce-scatter output already in the parameters' dtype, with
         * no sharded gradient to add it to, becomes that gradient:
         * _accumulate_sharded_grad assigns it (flat_param._saved_grad_shard
         * = sharded_grad; _cast_grad_to_param_dtype has nothing to cast). */
        keep = b->b_reduce == b->b_orig && b->grad_shard[u] < 0;
        out = alloc_buf(b, STREAM_P,
                        keep ? MEM_GRAD_SHARDED : MEM_RS_BUFFER,
                        S * b->b_reduce, u);
        red = emit(b, OP_REDUCESCATTER, STREAM_P, u);
        red->pg = PG_SHARD;
        red->bytes = (uint64_t)WS * (uint64_t)b->b_reduce;
        red->dtype = b->s->reduce_dtype;
        red->buf_in = cur;
        red->buf_out = out;
        if (cur != unsharded)   /* the padded copy */
            free_buf(b, cur, red->id, u);
        if (sharding_is_hybrid(b->c->sharding)) {
            /* §5: the replicate all-reduce runs on its own stream A. */
            wait_stream(b, STREAM_A, STREAM_P);
            st = STREAM_A;
            struct sched_op *ar = emit(b, OP_ALLREDUCE, STREAM_A, u);
            ar->pg = PG_REPLICATE;
            ar->bytes = (uint64_t)S * (uint64_t)b->b_reduce;
            ar->dtype = b->s->reduce_dtype;
            ar->buf_in = ar->buf_out = out;
        }
    } else {
        /* NO_SHARD: all-reduce of the whole gradient on P, in place.
         * Already in the parameters' dtype it stays flat_param.grad
         * (_cast_grad_to_param_dtype has nothing to cast). */
        divide_gradient(b, STREAM_P, u, cur, N, b->b_reduce, pre);
        red = emit(b, OP_ALLREDUCE, STREAM_P, u);
        red->pg = PG_SHARD;
        red->bytes = (uint64_t)N * (uint64_t)b->b_reduce;
        red->dtype = b->s->reduce_dtype;
        red->buf_in = red->buf_out = cur;
        out = cur;
        keep = b->b_reduce == b->b_orig;
    }

    /* Divide by the post-factor, cast to fp32 and accumulate into the
     * sharded gradient (§4.2 f). */
    divide_gradient(b, st, u, out, b->sharded ? S : N, b->b_reduce, post);
    if (keep && !b->sharded) {
        /* The reduced gradient itself becomes the optimizer's gradient
         * (the oracle's records: G freed and S live at
         * _reduce_grad_no_shard, the same bytes). */
        b->grad_shard[u] = relabel_buf(b, out, MEM_GRAD_SHARDED, u);
        if (out == autograd_grad)
            autograd_grad = -1;
        unsharded = -1;
    } else if (keep) {
        b->grad_shard[u] = out;
    } else {
        struct sched_op *acc;
        if (b->grad_shard[u] < 0) {
            b->grad_shard[u] = alloc_buf(b, st, MEM_GRAD_SHARDED,
                                         S * b->b_orig, u);
            acc = emit_copy(b, OP_CAST, st, u, S * (b->b_reduce + b->b_orig),
                            out, b->grad_shard[u]);
        } else {
            acc = emit_copy(b, OP_CAST, st, u,
                            S * (b->b_reduce + 2 * b->b_orig), out,
                            b->grad_shard[u]);
        }
        /* _accumulate_sharded_grad casts first, then assigns or adds. */
        mark_cast(b, acc, S, b->b_reduce, b->b_orig);
        if (out != unsharded)
            free_buf(b, out, acc->id, u);
    }
    if (b->c->cpu_offload) {
        /* §9: the fp32 sharded gradient goes to pinned host memory. */
        struct sched_op *d2h = emit_copy(b, OP_D2H, st, u, S * b->b_orig,
                                         b->grad_shard[u], -1);
        free_buf(b, b->grad_shard[u], d2h->id, u);
        b->grad_shard[u] = -2;    /* lives on the host now */
    }
    /* _reduce_grad returns (its unsharded_grad goes), then the hook
     * (autograd_computed_grad, recorded on the post-backward stream:
     * reusable once the work issued there so far has run). */
    if (unsharded >= 0 && unsharded != autograd_grad)
        free_buf(b, unsharded, b->last_op[STREAM_P], u);
    free_buf(b, autograd_grad, b->last_op[STREAM_P], u);
}

static void
post_backward(struct builder *b, int u, int sync)
{
    b->hooks++;
    if (!unit_has_handle(b, u))
        return;
    if (no_shard_accumulates(b, u)) {
        /* From the hook on it is the gradient to reduce (the oracle's
         * records: S freed and G live at _post_backward_hook). */
        b->grad[u] = relabel_buf(b, b->grad_shard[u], MEM_GRAD_UNSHARDED, u);
        b->grad_shard[u] = -1;
        b->grad_held[u] = 1;
    }
    flat_gradient(b, u);
    /* §4.2 step 2: free iff sharded and (syncing or FULL/HYBRID). */
    if (b->sharded
        && (sync || sharding_reshards_after_forward(b->c->sharding)))
        reshard(b, u);
    else if (!b->sharded && b->b_param != b->b_orig) {
        free_buf(b, b->unsharded[u], b->last_op[STREAM_C], u);
        b->unsharded[u] = -1;
    }
    if (b->c->backward_prefetch == BWD_PREFETCH_POST)
        prefetch_backward(b, u);
    if (!sync)
        return;         /* no_sync: the unsharded gradient stays */
    reduce_gradient(b, u);
}

/* Whether walk step W is one of checkpointed REGION's runs (the steps
 * from region_w_first to region_w_last include the other runs nested in
 * it). */
static bool
region_run(const struct builder *b, int w, int region)
{
    return b->walk[w].kind == WALK_RUN && b->walk[w].ckpt == region;
}

/* The recomputation of a checkpointed region (§10), issued when backward
 * first reaches it: one forward over all of the region's leaves, then its
 * activations are live again until each run's backward frees them. */
static void
recompute_region(struct builder *b, int region, enum sched_op_kind kind)
{
    int w0 = b->region_w_first[region], w1 = b->region_w_last[region];
    struct sched_op *op = emit_compute(b, kind, b->walk[w1].unit,
                                       b->walk[w0].leaf_begin,
                                       b->walk[w1].leaf_end, 0, 0);
    for (int w = w0; w <= w1; w++)
        if (region_run(b, w, region))
            op->flops += recompute_flops(b, w);
    for (int w = w0; w <= w1; w++)
        if (region_run(b, w, region) && recompute_bytes(b, w) > 0)
            b->run_act[w] = alloc_buf(b, STREAM_C, MEM_ACTIVATIONS,
                                      recompute_bytes(b, w), b->walk[w].unit);
    b->recomputed[region] = 1;
}

void
backward_run(struct builder *b, int w)
{
    const struct walk_step *st = &b->walk[w];
    if (st->ckpt >= 0 && !b->recomputed[st->ckpt])
        recompute_region(b, st->ckpt, OP_RECOMPUTE);
    int tmp[MAX_TRANSIENTS];
    transient_alloc(b, st->bwd_transients, st->bwd_transient_bytes,
                    st->unit, tmp);
    int bwd = emit_compute(b, OP_BACKWARD, st->unit, st->leaf_begin,
                           st->leaf_end, st->bwd_flops,
                           2 * st->model_flops)->id;
    transient_free(b, tmp, bwd, st->unit);
    free_buf(b, b->run_act[w], bwd, st->unit);
    b->run_act[w] = -1;
    sac_free(b, w, bwd);
    b->last_bwd_unit = st->unit;
}

/* Post-backward hooks in the autograd engine's order.  FSDP1's hook sits
 * on the FlatParameter's AccumulateGrad node, which runs once the
 * backward of the unit's parameter views has: those views are made in
 * the unit's pre-forward (or in the previous unit's, by forward prefetch),
 * so their backward nodes carry that point's sequence number.  The
 * engine's ready queue runs the ready node with the highest sequence
 * number first (engine.h, CompareNodeTaskTime), so a unit's post-backward
 * runs once backward has passed every op recorded after its views, and
 * before the next op recorded before them (doc/fsdp-semantics.md §4.2).
 * Everything with a position above `above` runs now. */
static void
run_post_backward(struct builder *b, int above, int sync)
{
    while (b->pb_next < b->n_pb) {
        int u = b->pb_order[b->pb_next];
        if (b->view_seq[u] <= above)
            break;
        b->pb_next++;
        if (b->last_bwd_unit != u) {
            /* The views' backward (the parameters' gradients written into
             * the flat gradient) runs apart from the unit's last kernels:
             * a node of its own, with no kernels of its own modelled. */
            int l = b->first_param_leaf[u] >= 0 ? b->first_param_leaf[u] : 0;
            emit_compute(b, OP_BACKWARD, u, l, l, 0, 0);
            b->last_bwd_unit = u;
        }
        post_backward(b, u, sync);
    }
}

static int
cmp_pb(const void *pa, const void *pb)
{
    const struct pb_key *a = pa, *c = pb;
    if (a->seq != c->seq)
        return a->seq > c->seq ? -1 : 1;
    return a->unit - c->unit;
}

static void
order_post_backward(struct builder *b)
{
    b->n_pb = 0;
    b->pb_next = 0;
    for (int u = 0; u < b->s->n_units; u++)
        if (unit_has_handle(b, u) && b->view_seq[u] >= 0) {
            b->pb_keys[b->n_pb].seq = b->view_seq[u];
            b->pb_keys[b->n_pb].unit = u;
            b->n_pb++;
        }
    qsort(b->pb_keys, (size_t)b->n_pb, sizeof *b->pb_keys, cmp_pb);
    for (int i = 0; i < b->n_pb; i++)
        b->pb_order[i] = b->pb_keys[i].unit;
}

void
free_region_inputs(struct builder *b)
{
    for (int i = 0; i < b->m->n_modules; i++) {
        if (b->ckpt_input[i] >= 0) {
            free_buf(b, b->ckpt_input[i], b->last_op[STREAM_C], -1);
            b->ckpt_input[i] = -1;
        }
        b->recomputed[i] = 0;
    }
}

/* Reentrant checkpointing around a unit (§10): when backward reaches the
 * region, the recompute is a fresh forward of the unit with FSDP's hooks
 * (a `forward` op in the backward phase): all-gather, compute,
 * post-forward reshard; then the real pre-backward hook gathers again.
 * The nested backward then runs the unit's own backward and its
 * post-backward before the outer one goes on. */
static void
reentrant_recompute_unit(struct builder *b, int u)
{
    int region = b->s->units[u].mod->index;
    pre_forward(b, u);
    if (b->region_w_first[region] >= 0)
        recompute_region(b, region, OP_FORWARD);
    b->hooks++;             /* _post_forward */
    if (u != 0 && b->sharded)
        reshard(b, u);
}

static void
backward_pass(struct builder *b, int sync)
{
    b->phase = PHASE_BACKWARD;
    memset(b->prefetched, 0, sizeof(int) * b->s->n_units);
    memset(b->unshard_done, 0, sizeof(int) * b->s->n_units);
    /* The walk in reverse is the chain of autograd nodes; a RUN step's
     * node has the sequence position 2w, a unit's views 2w (or 2w+1,
     * prefetched) of the step that made them (pre_forward).  A
     * pre-backward hook sits on the node of the last RUN before its EXIT
     * (a hook on the unit's output tensor), so it runs after every
     * post-backward ranked above that node. */
    order_post_backward(b);
    b->last_bwd_unit = -1;
    for (int w = b->n_walk - 1; w >= 0; w--) {
        const struct walk_step *st = &b->walk[w];
        switch (st->kind) {
        case WALK_EXIT: {
            int u = st->unit;
            int r = b->prev_run[w];
            run_post_backward(b, r >= 0 ? 2 * r : -1, sync);
            if (ckpt_enabled(b) && reentrant_unit(b, u)
                && b->recomputed[b->s->units[u].mod->index] == 0)
                reentrant_recompute_unit(b, u);
            pre_backward(b, u);
            break;
        }
        case WALK_RUN:
            run_post_backward(b, 2 * w, sync);
            backward_run(b, w);
            break;
        case WALK_ENTER:
            break;
        }
    }
    run_post_backward(b, -1, sync);
    free_region_inputs(b);
    /* _post_backward_final_callback (§4.3). */
    b->hooks++;
    for (int u = 0; u < b->s->n_units; u++) {
        if (b->sharded && b->unsharded[u] >= 0
            && (sync || sharding_reshards_after_forward(b->c->sharding)))
            reshard(b, u);
    }
    if (sync) {
        wait_stream(b, STREAM_C, STREAM_P);
        if (sharding_is_hybrid(b->c->sharding))
            wait_stream(b, STREAM_C, STREAM_A);
        if (b->c->cpu_offload) {
            struct sched_op *ev = emit(b, OP_EVENT, STREAM_C, -1);
            struct sched_op *w = emit(b, OP_CPU_WAIT, STREAM_HOST, -1);
            w->wait_op = ev->id;
        }
    }
}

/* ---- optimizer ---- */

/* Bytes an optimizer step moves per fp32 element (the passes are listed
 * in sched.h at ADAMW_FOREACH_BYTES). */
static double
optimizer_bytes_per_elem(enum optimizer_kind o)
{
    return o == OPTIMIZER_ADAMW ? ADAMW_FOREACH_BYTES : SGD_FOREACH_BYTES;
}

static int
optimizer_states(enum optimizer_kind o)
{
    return o == OPTIMIZER_ADAMW ? 2 : 0;
}

/* Records the step's passes and tensor count for its cost (sched.h). */
static void
optimizer_shape(struct builder *b, int tensors, double numel)
{
    b->s->optimizer_numel = numel;
    b->s->optimizer_passes = b->c->optimizer == OPTIMIZER_ADAMW
                                 ? ADAMW_FOREACH_PASSES : 1;
    b->s->optimizer_tensors = tensors > 0 ? tensors : 1;
}

/* COUNT fp32 values all-reduced over the shard group (found_inf, a
 * squared norm, float8 amaxes), from C through P and back: its op's id. */
int
fp32_all_reduce(struct builder *b, int count)
{
    int buf = alloc_buf(b, STREAM_C, MEM_OPTIMIZER_STATE, 4.0 * count, -1);
    wait_stream(b, STREAM_P, STREAM_C);
    struct sched_op *ar = emit(b, OP_ALLREDUCE, STREAM_P, -1);
    ar->pg = PG_SHARD;
    ar->bytes = (uint64_t)(4 * count);
    ar->dtype = DTYPE_FP32;
    ar->buf_in = ar->buf_out = buf;
    int id = ar->id;
    wait_stream(b, STREAM_C, STREAM_P);
    free_buf(b, buf, id, -1);
    return id;
}

/* The host blocks until the GPU has run everything issued so far (a
 * .item() or a synchronize): an event on C and a wait for it. */
static void
host_reads_gpu(struct builder *b)
{
    struct sched_op *ev = emit(b, OP_EVENT, STREAM_C, -1);
    struct sched_op *w = emit(b, OP_CPU_WAIT, STREAM_HOST, -1);
    w->wait_op = ev->id;
}

/* GradScaler.step (torch/amp/grad_scaler.py): unscale_ runs
 * _amp_foreach_non_finite_check_and_unscale_ over every fp32 gradient
 * (one multi-tensor pass, read and write); FSDP's ShardedGradScaler then
 * all-reduces found_inf over the ranks (each holds a shard of the
 * gradients); step() reads found_inf with .item(), so the host waits for
 * the GPU before it issues optimizer.step().  The scale update
 * (_amp_update_scale_, one tiny kernel) is counted in the optimizer op's
 * cost (cost.c).  The master weights are fp32 throughout: FSDP's sharded
 * FlatParameter, DDP's replicas. */
static void
grad_scaler_step(struct builder *b, double grad_numel, int sharded_scaler)
{
    if (!config_grad_scaler(b->c))
        return;
    b->s->scaler_grad_numel = grad_numel;
    b->hooks++;
    struct sched_op *un = emit(b, OP_CAST, STREAM_C, -1);
    un->bytes = (uint64_t)(grad_numel * 8);
    if (sharded_scaler)
        fp32_all_reduce(b, 1);
    host_reads_gpu(b);
}

/* loss.item() after optimizer.step(): the host waits for the whole step
 * before it issues the next one's forward. */
static void
loss_item(struct builder *b)
{
    if (b->c->loss_item)
        host_reads_gpu(b);
}

/* The norm's clip (§11.2): FullyShardedDataParallel.clip_grad_norm_
 * (fully_sharded_data_parallel.py) takes a torch.linalg.vector_norm of
 * each sharded fp32 gradient (a read of each element) through
 * _get_grad_norm, all-reduces the squared local norm over the shard group
 * (for HYBRID_SHARD the intra-node group: after the replicate all-reduce
 * every node holds the whole gradient), then multiplies every gradient by
 * the clamped coefficient (grad.mul_, a read and a write).  With every
 * unit NO_SHARD, and under DDP, torch.nn.utils.clip_grad_norm_ runs the
 * same passes over the local gradients, with no collective.  Returns the
 * bytes the passes move. */
static double
clip_gradients(struct builder *b, double numel, int distributed)
{
    if (b->c->clip_grad_norm <= 0)
        return 0;
    b->hooks++;
    double bytes = numel * b->b_orig * 3;
    if (b->c->cpu_offload) {
        /* The sharded gradients are on the host: the passes run there,
         * counted in the host optimizer op. */
        return bytes;
    }
    emit_copy(b, OP_CAST, STREAM_C, -1, numel * b->b_orig, -1, -1);
    if (distributed)
        fp32_all_reduce(b, 1);
    emit_copy(b, OP_CAST, STREAM_C, -1, 2 * numel * b->b_orig, -1, -1);
    /* fms-fsdp-style loops read the norm with .item(). */
    if (b->c->loss_item)
        host_reads_gpu(b);
    return 0;
}

void
optimizer_step(struct builder *b, int *opt_state)
{
    b->phase = PHASE_OPTIMIZER;
    b->micro = sched_step_micro_batches(b->s, b->it) - 1;
    double total_shard = 0;
    for (int u = 0; u < b->s->n_units; u++)
        total_shard += (double)b->s->units[u].shard_numel;
    grad_scaler_step(b, total_shard, 1);
    int flat_params = 0;
    for (int u = 0; u < b->s->n_units; u++)
        flat_params += unit_has_handle(b, u);
    optimizer_shape(b, flat_params, total_shard);
    double clip_host_bytes = clip_gradients(b, total_shard, b->sharded);
    if (b->c->cpu_offload) {
        /* §9: the optimizer runs on the host over pinned memory; its
         * state lives in host memory. */
        struct sched_op *op = emit(b, OP_OPTIMIZER, STREAM_HOST, -1);
        op->bytes = (uint64_t)(total_shard
                               * optimizer_bytes_per_elem(b->c->optimizer)
                               + clip_host_bytes);
        loss_item(b);
        return;
    }
    if (*opt_state < 0 && optimizer_states(b->c->optimizer) > 0)
        *opt_state = alloc_buf(b, STREAM_C, MEM_OPTIMIZER_STATE,
                               total_shard * b->b_orig
                                   * optimizer_states(b->c->optimizer), -1);
    struct sched_op *op = emit(b, OP_OPTIMIZER, STREAM_C, -1);
    op->bytes = (uint64_t)(total_shard
                           * optimizer_bytes_per_elem(b->c->optimizer));
    int opt = op->id;
    loss_item(b);
    /* zero_grad(set_to_none=True) drops the sharded gradients; with
     * use_orig_params they live on in flat_param.grad until the next
     * _root_pre_forward. */
    if (b->c->use_orig_params) {
        b->grad_shard_stale = 1;
        return;
    }
    for (int u = 0; u < b->s->n_units; u++) {
        if (b->grad_shard[u] >= 0)
            free_buf(b, b->grad_shard[u], opt, u);
        b->grad_shard[u] = -1;
    }
}

/* ---- the walk ---- */

static struct walk_step *
walk_push(struct builder *b, enum walk_kind kind, int unit)
{
    b->walk = xgrow(b->walk, &b->cap_walk, (size_t)b->n_walk + 1,
                    sizeof *b->walk);
    struct walk_step *w = &b->walk[b->n_walk++];
    memset(w, 0, sizeof *w);
    w->kind = kind;
    w->unit = unit;
    w->ckpt = -1;
    return w;
}

static int
ckpt_region_of(const struct builder *b, const struct module *mod)
{
    if (!ckpt_enabled(b))
        return -1;
    const char *cls = b->c->layer_cls ? b->c->layer_cls : b->m->layer_cls;
    for (const struct module *p = mod; p; p = p->parent)
        if (cls && wrap_class_matches(p->cls, cls))
            return ac_block_selected(b, p, cls) ? p->index : -1;
    return -1;
}

/* Leaf MOD's temporaries (layer_transients).  The fused loss never
 * holds the vocabulary-wide tensors: its chunk's logits are about the
 * size of the hidden states (Liger-Kernel sizes chunks so), so none. */
static int
leaf_transients(const struct builder *b, const struct module *mod,
                bool backward, double *each)
{
    if (b->s->loss == LOSS_FUSED && mod->kind == LAYER_CROSS_ENTROPY) {
        *each = 0;
        return 0;
    }
    /* On the logits' own dtype there is no fp32 copy in forward; the
     * backward's two vocabulary-wide gradients (nll_loss_backward's,
     * log_softmax_backward's) are in that dtype. */
    if (b->s->loss == LOSS_NATIVE && mod->kind == LAYER_CROSS_ENTROPY) {
        *each = (double)b->c->micro_batch * (double)b->c->seq_len
                * (double)mod->out * b->b_param;
        return backward ? 2 : 0;
    }
    return layer_transients(mod, b->c->micro_batch, b->c->seq_len,
                            b->b_param, backward, each);
}

/* Keep the larger of a run's temporaries so far and leaf MOD's. */
static void
note_transients(const struct builder *b, const struct module *mod,
                bool backward, int *count, double *each)
{
    double e;
    int n = leaf_transients(b, mod, backward, &e);
    if (n * e > *count * *each) {
        *count = n;
        *each = e;
    }
}

/* The kernel lists' run-wide facts while the walk runs (the batch is
 * the run's: sched_set_batch records it after the build). */
static void
walk_kernel_ctx(const struct builder *b, struct kernel_ctx *kc)
{
    cost_kernel_ctx(b->s, kc);
    kc->micro_batch = b->c->micro_batch;
    kc->seq_len = b->c->seq_len;
}

/* What leaf MOD keeps for backward in this run: layer_work's SAVED, with
 * what the run's settings decide.
 * - Tensorwise Float8Linears save float8 copies of their input and
 *   weight instead of the bf16 input; rowwise ones save what a bf16
 *   Linear does (§10.1, "What a float8 Linear saves").
 * - A Linear reading attention's output (o_proj) keeps nothing of its
 *   own: the fused kernel's backward keeps that output, and autograd
 *   saves one storage for both unless a copy sits between
 *   (kernel_attention_output_copied).  Measured with saved_tensors_hooks
 *   on PyTorch 2.15's CPU build, a Hugging Face Llama layer (2 x 64
 *   tokens, bf16, tests/data/export-llama-config.json) saves 1,494,016
 *   bytes of unique storages, one T h d output fewer than counting both.
 * - Attention adds FMS's gathered rotations, and keeps k and v at the KV
 *   heads' width when SDPA gets them without repeat_kv; the math path
 *   keeps the probabilities (layer_math_scores_bytes).
 * - The loss on the logits' own dtype keeps log_softmax's output in that
 *   dtype; the fused loss its gradients (layer_fused_loss_saved_bytes). */
static double
leaf_saved_bytes(const struct builder *b, const struct module *mod,
                 double saved)
{
    const int64_t mb = b->c->micro_batch, seq = b->c->seq_len;
    const double T = (double)mb * (double)seq;
    struct kernel_ctx kc;
    walk_kernel_ctx(b, &kc);
    const struct module *attn = layer_reads_attention(mod);
    if (b->c->float8 == FLOAT8_TENSORWISE && mod->kind == LAYER_LINEAR)
        saved = layer_float8_tensorwise_saved_bytes(
            mod, mb, seq, b->b_param, b->c->float8_all_gather,
            b->c->compile);
    else if (attn != NULL && !kernel_attention_output_copied(attn, &kc))
        saved = 0;
    if (mod->kind == LAYER_ATTENTION) {
        saved += kernel_rotary_saved_bytes(mod, &kc);
        if (kernel_attention_native_gqa(mod, &kc))
            saved -= 2.0 * (double)(mod->heads - mod->kv_heads)
                     * (double)mod->head_dim * T * b->b_param;
    }
    if (b->s->attn == ATTN_MATH)
        saved += layer_math_scores_bytes(mod, mb, seq, b->b_param);
    if (b->s->loss == LOSS_NATIVE && mod->kind == LAYER_CROSS_ENTROPY)
        saved = T * (double)mod->out * b->b_param;
    if (b->s->loss == LOSS_FUSED)
        saved = layer_fused_loss_saved_bytes(mod, mb, seq, b->b_param,
                                             saved);
    return saved;
}

static void
walk_module(struct builder *b, const struct module *mod)
{
    /* A group of several modules (FSDP2's fully_shard([a, b])) is
     * entered at its first and left after its last (§13.13). */
    int u = b->p->unit_at[mod->index];
    if (u >= 0 && b->p->units[u].mod == mod)
        walk_push(b, WALK_ENTER, u);
    if (mod->kind != LAYER_CONTAINER) {
        int leaf = b->s->n_leaves++;
        b->s->leaves[leaf] = mod;
        int owner = b->p->owner[mod->index];
        int ckpt = ckpt_region_of(b, mod);
        struct walk_step *last = b->n_walk ? &b->walk[b->n_walk - 1] : NULL;
        int split = b->first_param_leaf[owner] == leaf;
        for (int k = 0; k < b->s->n_units && !split; k++)
            split = b->first_param_leaf[k] == leaf;
        if (last == NULL || last->kind != WALK_RUN || last->unit != owner
            || last->ckpt != ckpt || split) {
            last = walk_push(b, WALK_RUN, owner);
            last->leaf_begin = leaf;
            last->ckpt = ckpt;
        }
        last->leaf_end = leaf + 1;
        struct layer_work lw;
        layer_work(mod, b->c->micro_batch, b->c->seq_len, b->b_param, &lw);
        lw.saved_bytes = leaf_saved_bytes(b, mod, lw.saved_bytes);
        last->fwd_flops += lw.fwd_flops;
        last->bwd_flops += lw.bwd_flops;
        last->model_flops += lw.model_flops;
        last->palm_flops += lw.palm_flops;
        last->saved_bytes += lw.saved_bytes;
        note_transients(b, mod, false, &last->fwd_transients,
                        &last->fwd_transient_bytes);
        note_transients(b, mod, true, &last->bwd_transients,
                        &last->bwd_transient_bytes);
        if (ckpt >= 0)
            sac_account(b, mod, leaf, last, &lw);
    }
    for (int i = 0; i < mod->n_children; i++)
        walk_module(b, mod->children[i]);
    if (u >= 0 && b->p->units[u].last_mod == mod)
        walk_push(b, WALK_EXIT, u);
}

/* Leaves in execution order, the earliest leaf with parameters per unit,
 * and the unit orders the prefetch rules use. */
static void
build_walk(struct builder *b)
{
    const struct model *m = b->m;
    int n_units = b->s->n_units;
    b->first_param_leaf = xmalloc(sizeof(int) * n_units);
    for (int u = 0; u < n_units; u++)
        b->first_param_leaf[u] = -1;
    int n_leaves = 0;
    for (int i = 0; i < m->n_modules; i++) {
        const struct module *mod = m->modules[i];
        if (mod->kind == LAYER_CONTAINER)
            continue;
        int owner = b->p->owner[i];
        if (mod->own_params > 0 && b->first_param_leaf[owner] < 0)
            b->first_param_leaf[owner] = n_leaves;
        n_leaves++;
    }
    b->s->leaves = xcalloc(n_leaves ? n_leaves : 1, sizeof *b->s->leaves);
    b->s->leaf_sac_gemm = xcalloc(n_leaves ? n_leaves : 1,
                                  sizeof *b->s->leaf_sac_gemm);
    b->sac_block = -1;
    walk_module(b, m->root);

    b->prev_run = xmalloc(sizeof(int) * (b->n_walk ? b->n_walk : 1));
    for (int w = 0, r = -1; w < b->n_walk; w++) {
        b->prev_run[w] = r;
        if (b->walk[w].kind == WALK_RUN)
            r = w;
    }

    b->region_w_first = xmalloc(sizeof(int) * m->n_modules);
    b->region_w_last = xmalloc(sizeof(int) * m->n_modules);
    for (int i = 0; i < m->n_modules; i++)
        b->region_w_first[i] = b->region_w_last[i] = -1;
    for (int w = 0; w < b->n_walk; w++) {
        int r = b->walk[w].kind == WALK_RUN ? b->walk[w].ckpt : -1;
        if (r < 0)
            continue;
        if (b->region_w_first[r] < 0)
            b->region_w_first[r] = w;
        b->region_w_last[r] = w;
    }

    b->fwd_order = xmalloc(sizeof(int) * n_units);
    b->post_fwd_order = xmalloc(sizeof(int) * n_units);
    b->fwd_pos = xmalloc(sizeof(int) * n_units);
    b->post_fwd_pos = xmalloc(sizeof(int) * n_units);
    for (int w = 0; w < b->n_walk; w++) {
        if (b->walk[w].kind == WALK_ENTER) {
            b->fwd_pos[b->walk[w].unit] = b->n_fwd_order;
            b->fwd_order[b->n_fwd_order++] = b->walk[w].unit;
        } else if (b->walk[w].kind == WALK_EXIT) {
            b->post_fwd_pos[b->walk[w].unit] = b->n_post_fwd;
            b->post_fwd_order[b->n_post_fwd++] = b->walk[w].unit;
        }
    }
}

/* ---- DistributedDataParallel ----
 *
 * torch/nn/parallel/distributed.py and torch/csrc/distributed/c10d/
 * reducer.cpp.  Every rank holds the whole fp32 model, its gradients and
 * its optimizer state; the Reducer keeps flat gradient buckets (allocated
 * at construction) and registers a hook on each parameter's
 * AccumulateGrad.  When a gradient is ready the hook copies it into its
 * bucket, scaled by 1/world (mul_out; div_ in place when the gradient is
 * already a view of the bucket), and once every gradient of a bucket is
 * in, the bucket is all-reduced on the process group's NCCL stream (which
 * waits for the compute stream), buckets strictly in order.  The first
 * step's buckets follow the parameters' definition order with no size
 * limit (distributed.py passes [sys.maxsize] when find_unused_parameters
 * is off): one bucket, all-reduced when the last gradient is ready.  At
 * the next forward, _rebuild_buckets lays them out again in the order the
 * gradients arrived (backward: reverse execution order) with
 * compute_bucket_assignment_by_size's limits, the first bucket capped at
 * _DEFAULT_FIRST_BUCKET_BYTES (1 MiB) and the rest at bucket_cap_mb (a
 * bucket closes with the tensor that reaches its limit); an explicit
 * bucket_cap_mb caps the first one too.  finalize_backward waits for the
 * all-reduces and, unless gradient_as_bucket_view, copies each bucket
 * back into the .grad tensors.  Compute under --param-dtype bf16/fp16 is
 * autocast: each forward casts the fp32 weights of the ops autocast runs
 * in lower precision (aten/src/ATen/autocast_mode.cpp: linear, addmm,
 * matmul and the other GEMMs; not embedding, and the norms run in fp32),
 * kept by autograd until the layer's backward, where the cast's own
 * backward (ToCopyBackward0) casts each weight gradient back to fp32
 * before AccumulateGrad.  static_graph changes neither the buckets nor
 * their order for a model whose every parameter gets a gradient. */

#define DDP_FIRST_BUCKET_BYTES (1024 * 1024)

enum ddp_grad { DDP_GRAD_NONE, DDP_GRAD_OWN, DDP_GRAD_VIEW };

struct ddp_layout {
    int n;                    /* buckets */
    uint64_t *bytes;          /* per bucket */
    uint64_t *off;            /* per bucket: offset in the bucket buffer */
    int *close_leaf;          /* per bucket: the leaf whose gradient
                                 completes it */
};

struct ddp_state {
    struct ddp_layout first, rebuilt;
    const struct ddp_layout *cur;
    int next_bucket;
    int bucket_buf;           /* every bucket, one allocation */
    int replica_buf;          /* the fp32 parameters */
    uint64_t *leaf_off;       /* per leaf: its parameters' offset */
    int *grad_state;          /* per leaf: enum ddp_grad */
    int *grad_buf;            /* per leaf with DDP_GRAD_OWN */
    int *cast_buf;            /* per walk step: autocast weight copies */
    double total_numel;
};

static double
ddp_leaf_numel(const struct module *mod)
{
    int64_t sz[4];
    int n = layer_param_tensors(mod, sz);
    double t = 0;
    for (int k = 0; k < n; k++)
        t += (double)sz[k];
    return t;
}

static void
ddp_layout_push(struct ddp_layout *L, size_t *cap, uint64_t bytes,
                uint64_t off, int leaf)
{
    size_t c = *cap;
    L->bytes = xgrow(L->bytes, &c, (size_t)L->n + 1, sizeof *L->bytes);
    L->off = xrealloc(L->off, c * sizeof *L->off);
    L->close_leaf = xrealloc(L->close_leaf, c * sizeof *L->close_leaf);
    *cap = c;
    L->bytes[L->n] = bytes;
    L->off[L->n] = off;
    L->close_leaf[L->n++] = leaf;
}

/* compute_bucket_assignment_by_size over the fp32 gradients in the order
 * they become ready: leaves last to first, each leaf's tensors last to
 * first.  first_cap 0: no limit (the first step). */
static void
ddp_assign(const struct sched *s, uint64_t first_cap, uint64_t cap,
           struct ddp_layout *L)
{
    size_t lcap = 0;
    memset(L, 0, sizeof *L);
    uint64_t size = 0, off = 0, limit = first_cap;
    int last_leaf = -1;
    for (int l = s->n_leaves - 1; l >= 0; l--) {
        int64_t sz[4];
        int n = layer_param_tensors(s->leaves[l], sz);
        for (int k = n - 1; k >= 0; k--) {
            size += (uint64_t)sz[k] * 4;
            last_leaf = l;
            if (limit > 0 && size >= limit) {
                ddp_layout_push(L, &lcap, size, off, l);
                off += size;
                size = 0;
                limit = cap;
            }
        }
    }
    if (size > 0)
        ddp_layout_push(L, &lcap, size, off, last_leaf);
}

static void
ddp_layout_free(struct ddp_layout *L)
{
    free(L->bytes);
    free(L->off);
    free(L->close_leaf);
}

static void
ddp_init(struct builder *b)
{
    struct sched *s = b->s;
    const struct run_config *c = b->c;
    struct ddp_state *d = xcalloc(1, sizeof *d);
    b->ddp = d;
    s->ddp = true;
    s->bucket_cap_bytes = (uint64_t)(c->bucket_cap_mb * 1024 * 1024);
    s->first_bucket_bytes = c->bucket_cap_mb_given ? s->bucket_cap_bytes
                                                   : DDP_FIRST_BUCKET_BYTES;
    if (s->first_bucket_bytes == 0)
        s->first_bucket_bytes = 1;
    if (s->bucket_cap_bytes == 0)
        s->bucket_cap_bytes = 1;
    ddp_assign(s, 0, 0, &d->first);
    ddp_assign(s, s->first_bucket_bytes, s->bucket_cap_bytes, &d->rebuilt);
    s->n_buckets = s->iterations > 1 ? d->rebuilt.n : d->first.n;
    int nl = s->n_leaves ? s->n_leaves : 1;
    d->leaf_off = xcalloc(nl, sizeof *d->leaf_off);
    d->grad_state = xcalloc(nl, sizeof *d->grad_state);
    d->grad_buf = xmalloc(sizeof *d->grad_buf * nl);
    d->cast_buf = xmalloc(sizeof *d->cast_buf * (b->n_walk ? b->n_walk : 1));
    for (int l = 0; l < s->n_leaves; l++) {
        d->leaf_off[l] = (uint64_t)(d->total_numel * 4);
        d->total_numel += ddp_leaf_numel(s->leaves[l]);
        d->grad_buf[l] = -1;
    }
    for (int w = 0; w < b->n_walk; w++)
        d->cast_buf[w] = -1;
    /* The replicas, and the buckets the Reducer allocates up front. */
    d->replica_buf = alloc_buf(b, STREAM_C, MEM_UNSHARDED_PARAMS,
                               d->total_numel * 4, 0);
    d->bucket_buf = alloc_buf(b, STREAM_C, MEM_RS_BUFFER,
                              d->total_numel * 4, 0);
}

static void
ddp_free(struct builder *b)
{
    struct ddp_state *d = b->ddp;
    if (d == NULL)
        return;
    ddp_layout_free(&d->first);
    ddp_layout_free(&d->rebuilt);
    free(d->leaf_off);
    free(d->grad_state);
    free(d->grad_buf);
    free(d->cast_buf);
    free(d);
    b->ddp = NULL;
}

/* The parameters of MOD that autocast casts: those of its GEMM
 * layers. */
static double
ddp_autocast_numel(const struct module *mod)
{
    return mod->kind == LAYER_LINEAR || mod->kind == LAYER_MHA
               ? ddp_leaf_numel(mod) : 0;
}

static double
ddp_run_autocast_numel(const struct builder *b, int w)
{
    double n = 0;
    for (int l = b->walk[w].leaf_begin; l < b->walk[w].leaf_end; l++)
        n += ddp_autocast_numel(b->s->leaves[l]);
    return n;
}

/* autocast: run W's GEMM weights cast to the compute dtype, before the
 * run's kernels, in forward and again in a checkpointed run's recompute
 * (torch.utils.checkpoint reruns the forward under the autocast state it
 * saved, with a fresh cast cache). */
static void
ddp_autocast_weights(struct builder *b, int w)
{
    struct ddp_state *d = b->ddp;
    double n = ddp_run_autocast_numel(b, w);
    if (b->b_param == b->b_orig || n <= 0)
        return;
    d->cast_buf[w] = alloc_buf(b, STREAM_C, MEM_UNSHARDED_PARAMS,
                               n * b->b_param, 0);
    struct sched_op *op = emit_copy(b, OP_CAST, STREAM_C, 0,
                                    n * (b->b_orig + b->b_param),
                                    d->replica_buf, d->cast_buf[w]);
    mark_cast(b, op, n, b->b_orig, b->b_param);
    op->in_offset = d->leaf_off[b->walk[w].leaf_begin];
}

static void
ddp_forward_pass(struct builder *b)
{
    struct ddp_state *d = b->ddp;
    b->phase = PHASE_FORWARD;
    b->hooks++;             /* DDP.forward: _pre_forward */
    for (int w = 0; w < b->n_walk; w++) {
        b->cur_w = w;
        if (b->walk[w].kind != WALK_RUN)
            continue;
        ddp_autocast_weights(b, w);
        forward_run(b, w);
    }
    b->hooks++;             /* _post_forward */
    /* The casts of checkpointed runs are saved by no autograd node; only
     * autocast's cast cache holds them (autocast_mode.cpp cached_cast:
     * leaf tensors that require grad), and it is cleared when the
     * outermost autocast region exits (torch/amp/autocast_mode.py
     * __exit__: clear_cache), at the end of the forward.  A run that keeps
     * its activations keeps its casts for its GEMMs' backward. */
    for (int w = 0; w < b->n_walk; w++)
        if (b->walk[w].kind == WALK_RUN && b->walk[w].ckpt >= 0
            && d->cast_buf[w] >= 0) {
            free_buf(b, d->cast_buf[w], b->last_op[STREAM_C], 0);
            d->cast_buf[w] = -1;
        }
}

/* The autograd hook of leaf l's parameters (mark_variable_ready). */
static void
ddp_grad_ready(struct builder *b, int l, int sync)
{
    struct ddp_state *d = b->ddp;
    if (!sync)
        return;             /* no_sync: the hooks do nothing */
    double n = ddp_leaf_numel(b->s->leaves[l]);
    b->hooks++;
    struct sched_op *cp = emit_copy(b, OP_CAST, STREAM_C, 0, n * 8,
                                    d->grad_buf[l], d->bucket_buf);
    if (d->grad_state[l] == DDP_GRAD_VIEW) {
        cp->buf_in = d->bucket_buf;
        cp->in_offset = d->leaf_off[l];
    }
    if (b->c->gradient_as_bucket_view && d->grad_state[l] == DDP_GRAD_OWN) {
        /* grad = bucket_view: the AccumulateGrad tensor goes. */
        free_buf(b, d->grad_buf[l], cp->id, 0);
        d->grad_buf[l] = -1;
        d->grad_state[l] = DDP_GRAD_VIEW;
    }
    const struct ddp_layout *L = d->cur;
    while (d->next_bucket < L->n && L->close_leaf[d->next_bucket] == l) {
        int k = d->next_bucket++;
        wait_stream(b, STREAM_P, STREAM_C);
        struct sched_op *ar = emit(b, OP_ALLREDUCE, STREAM_P, 0);
        ar->pg = PG_SHARD;
        ar->bytes = L->bytes[k];
        ar->dtype = DTYPE_FP32;
        ar->buf_in = d->bucket_buf;     /* in place, at the bucket */
        ar->in_offset = L->off[k];
    }
}

static void
ddp_backward_pass(struct builder *b, int sync)
{
    struct ddp_state *d = b->ddp;
    b->phase = PHASE_BACKWARD;
    d->cur = b->it == 0 ? &d->first : &d->rebuilt;
    d->next_bucket = 0;
    for (int w = b->n_walk - 1; w >= 0; w--) {
        const struct walk_step *st = &b->walk[w];
        if (st->kind != WALK_RUN)
            continue;
        if (st->ckpt >= 0 && !b->recomputed[st->ckpt]) {
            int r = st->ckpt;
            for (int v = b->region_w_first[r]; v <= b->region_w_last[r]; v++)
                if (region_run(b, v, r))
                    ddp_autocast_weights(b, v);
            recompute_region(b, r, OP_RECOMPUTE);
        }
        int last = -1;
        /* One op per leaf: the hooks fire between leaves' kernels. */
        for (int l = st->leaf_end - 1; l >= st->leaf_begin; l--) {
            const struct module *mod = b->s->leaves[l];
            double n = ddp_leaf_numel(mod);
            if (n > 0 && d->grad_state[l] == DDP_GRAD_NONE) {
                d->grad_buf[l] = alloc_buf(b, STREAM_C, MEM_GRAD_UNSHARDED,
                                           n * 4, 0);
                d->grad_state[l] = DDP_GRAD_OWN;
            }
            struct layer_work lw;
            layer_work(mod, b->c->micro_batch, b->c->seq_len, b->b_param,
                       &lw);
            double each;
            int tmp[MAX_TRANSIENTS];
            int n_tmp = leaf_transients(b, mod, true, &each);
            transient_alloc(b, n_tmp, each, 0, tmp);
            last = emit_compute(b, OP_BACKWARD, 0, l, l + 1, lw.bwd_flops,
                                2 * lw.model_flops)->id;
            transient_free(b, tmp, last, 0);
            double cast = ddp_autocast_numel(mod);
            if (b->b_param != b->b_orig && cast > 0)
                mark_cast(b, emit_copy(b, OP_CAST, STREAM_C, 0,
                                       cast * (b->b_param + b->b_orig), -1,
                                       -1),
                          cast, b->b_param, b->b_orig);
            if (n > 0)
                ddp_grad_ready(b, l, sync);
        }
        if (last >= 0) {
            free_buf(b, b->run_act[w], last, 0);
            b->run_act[w] = -1;
            sac_free(b, w, last);
            free_buf(b, d->cast_buf[w], last, 0);
            d->cast_buf[w] = -1;
        }
    }
    free_region_inputs(b);
    b->hooks++;             /* the Reducer's finalize_backward */
    if (!sync)
        return;
    wait_stream(b, STREAM_C, STREAM_P);
    if (!b->c->gradient_as_bucket_view) {
        /* copy_bucket_to_grad, every parameter. */
        emit_copy(b, OP_CAST, STREAM_C, 0, d->total_numel * 8,
                  d->bucket_buf, -1);
    }
}

static void
ddp_optimizer_step(struct builder *b, int *opt_state)
{
    struct ddp_state *d = b->ddp;
    b->phase = PHASE_OPTIMIZER;
    b->micro = sched_step_micro_batches(b->s, b->it) - 1;
    grad_scaler_step(b, d->total_numel, 0);
    int tensors = 0;
    for (int l = 0; l < b->s->n_leaves; l++) {
        int64_t sz[4];
        tensors += layer_param_tensors(b->s->leaves[l], sz);
    }
    optimizer_shape(b, tensors, d->total_numel);
    clip_gradients(b, d->total_numel, 0);
    if (*opt_state < 0 && optimizer_states(b->c->optimizer) > 0)
        *opt_state = alloc_buf(b, STREAM_C, MEM_OPTIMIZER_STATE,
                               d->total_numel * b->b_orig
                                   * optimizer_states(b->c->optimizer), -1);
    struct sched_op *op = emit(b, OP_OPTIMIZER, STREAM_C, -1);
    op->bytes = (uint64_t)(d->total_numel
                           * optimizer_bytes_per_elem(b->c->optimizer));
    op->buf_in = d->replica_buf;
    int opt = op->id;
    loss_item(b);
    /* zero_grad(set_to_none=True). */
    for (int l = 0; l < b->s->n_leaves; l++) {
        if (d->grad_state[l] == DDP_GRAD_OWN)
            free_buf(b, d->grad_buf[l], opt, 0);
        d->grad_buf[l] = -1;
        d->grad_state[l] = DDP_GRAD_NONE;
    }
}

static void
ddp_steps(struct builder *b)
{
    int opt_state = -1;
    struct sched *s = b->s;
    for (b->it = 0; b->it < s->iterations; b->it++) {
        int a = sched_step_micro_batches(s, b->it);
        for (b->micro = 0; b->micro < a; b->micro++) {
            int sync = !b->c->no_sync || b->micro == a - 1;
            ddp_forward_pass(b);
            ddp_backward_pass(b, sync);
        }
        ddp_optimizer_step(b, &opt_state);
    }
}

static void
builder_free(struct builder *b)
{
    free(b->walk);
    free(b->fwd_order);
    free(b->post_fwd_order);
    free(b->fwd_pos);
    free(b->post_fwd_pos);
    free(b->first_param_leaf);
    free(b->prev_run);
    free(b->view_seq);
    free(b->pb_order);
    free(b->pb_keys);
    for (int i = 0; i < STREAM_COUNT; i++)
        free(b->pending[i]);
    free(b->unsharded);
    free(b->grad);
    free(b->grad_parts);
    free(b->grad_held);
    free(b->grad_shard);
    free(b->prefetched);
    free(b->unshard_done);
    free(b->run_act);
    free(b->ckpt_input);
    free(b->recomputed);
    free(b->region_w_first);
    free(b->region_w_last);
    free(b->limiter);
    free(b->bufs);
    free(b->shard_off);
    free(b->run_sac);
    ddp_free(b);
}

struct sched *
sched_build(const struct model *m, const struct wrap_plan *p,
            const struct run_config *c, const struct topo *t, char **cause)
{
    return sched_build_steps(m, p, c, t, NULL, cause);
}

struct sched *
sched_build_steps(const struct model *m, const struct wrap_plan *p,
                  const struct run_config *c, const struct topo *t,
                  const int *steps, char **cause)
{
    int world = t->nodes * t->gpus_per_node;
    struct sched *s = xcalloc(1, sizeof *s);
    s->units = p->units;
    s->n_units = p->n_units;
    s->iterations = (int)c->iterations;
    s->micro_batches = (int)c->grad_accum;
    /* Micro-batches over all steps, for the bound on the ops. */
    double all_micro_batches = (double)c->iterations * (double)c->grad_accum;
    if (steps != NULL) {
        s->step_micro_batches = xmemdup(steps, sizeof *steps
                                                   * (size_t)s->iterations);
        s->micro_batches = 0;
        all_micro_batches = 0;
        for (int it = 0; it < s->iterations; it++) {
            if (steps[it] > s->micro_batches)
                s->micro_batches = steps[it];
            all_micro_batches += steps[it];
        }
    }
    s->world = world;
    s->gpus_per_node = t->gpus_per_node;
    nccl_config_init(&s->nccl);
    s->param_dtype = config_param_dtype(c);
    s->reduce_dtype = config_reduce_dtype(c);
    if (c->sharding == SHARDING_DDP)
        s->reduce_dtype = DTYPE_FP32;   /* the fp32 gradient buckets */
    if (kernel_attention_for(m, c->attention, t, s->param_dtype, &s->attn,
                             cause) != 0) {
        sched_free(s);
        return NULL;
    }
    s->compile = c->compile;
    s->loss = c->loss;
    s->rotary = c->rotary;
    s->float8 = c->float8;
    s->float8_all_gather = c->float8_all_gather;
    s->torch_version = c->torch_version;
    s->transformers_version = c->transformers_version;
    s->block_cls = m->layer_cls;
    s->ac = c->ac;
    s->fsdp_version = c->fsdp_version;
    if (c->fsdp_version == 2) {
        if (sched_fsdp2_mesh(c, world, t->gpus_per_node, &s->shard_size,
                             &s->replicate_size, cause) != 0) {
            sched_free(s);
            return NULL;
        }
        s->post_forward_size = sched_fsdp2_post_forward_size(c,
                                                             s->shard_size);
    } else if (sharding_is_hybrid(c->sharding)) {
        s->shard_size = t->gpus_per_node;
        s->replicate_size = t->nodes;
    } else if (c->sharding == SHARDING_NO_SHARD
               || c->sharding == SHARDING_DDP) {
        s->shard_size = 1;
        s->replicate_size = 1;
        s->no_shard_ranks = c->no_shard_one_rank ? 1 : world;
    } else {
        s->shard_size = world;
        s->replicate_size = 1;
    }
    struct builder b;
    memset(&b, 0, sizeof b);
    b.s = s;
    b.m = m;
    b.p = p;
    b.c = c;
    b.b_orig = 4;
    b.b_param = dtype_bytes(s->param_dtype);
    b.b_reduce = dtype_bytes(s->reduce_dtype);
    b.sharded = c->sharding != SHARDING_NO_SHARD
                && c->sharding != SHARDING_DDP;
    for (int i = 0; i < STREAM_COUNT; i++)
        b.last_op[i] = -1;
    build_walk(&b);

    /* Bound the work before doing it: a pass issues at most a few ops per
     * walk step and a few dozen per unit. */
    s->ops_bound_per_micro_batch =
        4.0 * b.n_walk + 40.0 * s->n_units + 16
        + (c->sharding == SHARDING_DDP ? 4.0 * b.n_walk + 10.0 * s->n_leaves
                                       : 0);
    double estimate = all_micro_batches * s->ops_bound_per_micro_batch;
    if (estimate > SCHED_MAX_OPS) {
        *cause = xasprintf("the schedule would hold about %.3g ops (limit "
                           "%d): lower --grad-accum or --iterations, or wrap "
                           "coarser (fewer units)", estimate, SCHED_MAX_OPS);
        builder_free(&b);
        free(s->leaves);
        free(s->leaf_sac_gemm);
        free(s->step_micro_batches);
        free(s);
        return NULL;
    }

    /* Reserve the ops array once: growing it by doubling copied the
     * whole schedule several times over, a sizeable part of building it.
     * Pages past the ops actually emitted are never touched. */
    s->cap_ops = (size_t)estimate + 1;
    s->ops = xmalloc(s->cap_ops * sizeof *s->ops);

    int n = s->n_units;
    b.unsharded = xmalloc(sizeof(int) * n);
    b.grad = xmalloc(sizeof(int) * n);
    b.grad_parts = xmalloc(sizeof(int) * (n ? n : 1));
    b.grad_held = xcalloc(n ? n : 1, sizeof(int));
    b.grad_shard = xmalloc(sizeof(int) * n);
    b.prefetched = xcalloc(n, sizeof(int));
    b.unshard_done = xcalloc(n, sizeof(int));
    b.view_seq = xmalloc(sizeof(int) * (n ? n : 1));
    b.pb_order = xmalloc(sizeof(int) * (n ? n : 1));
    b.pb_keys = xmalloc(sizeof *b.pb_keys * (n ? n : 1));
    for (int i = 0; i < n; i++)
        b.view_seq[i] = -1;
    b.run_act = xmalloc(sizeof(int) * (b.n_walk ? b.n_walk : 1));
    b.ckpt_input = xmalloc(sizeof(int) * m->n_modules);
    b.recomputed = xcalloc(m->n_modules, sizeof(int));
    for (int i = 0; i < n; i++)
        b.unsharded[i] = b.grad[i] = b.grad_parts[i] = b.grad_shard[i] = -1;
    b.run_sac = xmalloc(sizeof(int) * (b.n_walk ? b.n_walk : 1));
    for (int i = 0; i < b.n_walk; i++)
        b.run_act[i] = b.run_sac[i] = -1;
    for (int i = 0; i < m->n_modules; i++)
        b.ckpt_input[i] = -1;

    /* Persistent state: the fp32 shards (on the host under offload),
     * one allocation with each unit's shard at its offset. */
    b.shard_buf = -1;
    b.shard_off = xcalloc(n ? n : 1, sizeof(uint64_t));
    double shard = 0;
    for (int u = 0; u < n; u++) {
        b.shard_off[u] = (uint64_t)(shard * b.b_orig);
        shard += (double)s->units[u].shard_numel;
    }
    if (!c->cpu_offload && c->sharding != SHARDING_DDP)
        b.shard_buf = alloc_buf(&b, STREAM_C, MEM_SHARDED_PARAMS,
                                shard * b.b_orig, -1);
    /* NO_SHARD without mixed precision computes on the shard itself. */
    if (!b.sharded && b.b_param == b.b_orig)
        for (int u = 0; u < n; u++)
            b.unsharded[u] = -1;

    int opt_state = -1;
    if (c->sharding == SHARDING_DDP) {
        ddp_init(&b);
        ddp_steps(&b);
    } else if (c->fsdp_version == 2) {
        fsdp2_steps(&b);
    } else
    for (b.it = 0; b.it < s->iterations; b.it++) {
        int a = sched_step_micro_batches(s, b.it);
        for (b.micro = 0; b.micro < a; b.micro++) {
            int sync = !c->no_sync || b.micro == a - 1;
            forward_pass(&b);
            backward_pass(&b, sync);
        }
        optimizer_step(&b, &opt_state);
    }

    /* Ops' deps lie in op order in dep_pool, which no longer moves. */
    size_t at = 0;
    for (int i = 0; i < s->n_ops; i++) {
        struct sched_op *op = &s->ops[i];
        op->deps = op->n_deps > 0 ? s->dep_pool + at : NULL;
        at += (size_t)op->n_deps;
    }

    double model_flops = 0, palm_flops = 0;
    for (int w = 0; w < b.n_walk; w++) {
        model_flops += b.walk[w].model_flops;
        palm_flops += b.walk[w].palm_flops;
    }
    s->fwd_model_flops = model_flops;
    s->fwd_palm_flops = palm_flops;
    sched_set_batch(s, c);
    builder_free(&b);
    return s;
}

void
sched_set_batch(struct sched *s, const struct run_config *c)
{
    s->micro_batch = c->micro_batch;
    s->seq_len = c->seq_len;
    s->tokens_per_gpu = c->micro_batch * c->seq_len * c->grad_accum;
    s->model_flops_per_gpu = 3 * s->fwd_model_flops * (double)c->grad_accum;
    s->palm_flops_per_gpu = 3 * s->fwd_palm_flops * (double)c->grad_accum;
}

void
sched_free(struct sched *s)
{
    if (s == NULL)
        return;
    free(s->dep_pool);
    free(s->ops);
    free(s->leaves);
    free(s->leaf_sac_gemm);
    free(s->post_forward_sizes);
    free(s->step_micro_batches);
    free(s);
}
