/*
 * sched_fsdp2.c: the FSDP2 (fully_shard) schedule builder.
 *
 * It replays what torch/distributed/fsdp/_fully_shard/ issues for each
 * parameter group (one fully_shard call: here, one unit of the wrap plan),
 * read from _fsdp_state.py (root pre-forward, hooks), _fsdp_param_group.py
 * (unshard, wait_for_unshard, reshard, pre_backward, post_backward,
 * finalize_backward) and _fsdp_collectives.py (foreach_all_gather,
 * foreach_all_gather_copy_out, foreach_reduce); doc/fsdp-semantics.md §13
 * states each rule.  What differs from FSDP1 (sched.c):
 *
 *   - per-parameter dim-0 shards, padded per parameter (wrap.c);
 *   - the all-gather copy-in (a cast into a param-dtype buffer, then a
 *     copy into this rank's slice of the flat output) on its own stream,
 *     the all-gather on another, the copy-out (split_with_sizes_copy)
 *     into per-parameter unsharded tensors on the compute stream;
 *   - no FlatParameter and no record_stream: each buffer is dropped once
 *     the stream that used it has waited on an event, so frees are stream
 *     ordered, and no rate limiter;
 *   - forward defers the free of a group's flat all-gather output until
 *     the next group's wait_for_unshard, so copy-out(k) overlaps AG(k+1);
 *   - the reduce-scatter input is built by chunk_cat on the compute
 *     stream, and the compute stream waits for the previous group's
 *     reduce-scatter before the next chunk_cat;
 *   - the reduce op is NCCL's average for fp32 and bf16 gradients;
 *   - FSDPModule's knobs (§13.9): prefetch lists in forward and
 *     backward (the next N groups, or any list a group is given),
 *     set_reshard_after_backward(False) between a step's micro-batches,
 *     set_unshard_in_backward(False) on chosen groups, and a
 *     reshard_after_forward of each group's own (the root's, the last
 *     group's, any group's, each integer its own post-forward mesh);
 *   - groups of several modules (fully_shard([norm, output]), §13.13)
 *     come from the wrap plan as one unit.
 *
 * Streams: FSDP2's copy-in, all-gather, reduce-scatter and all-reduce
 * streams take the slots PU, U, P and A (sched.h).
 */
#include "sched.h"
#include "sched_impl.h"
#include "coll.h"
#include "layer.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

#define ST_CI STREAM_PU         /* all-gather copy-in */
#define ST_AG STREAM_U          /* all-gather */
#define ST_RS STREAM_P          /* reduce-scatter */
#define ST_AR STREAM_A          /* HSDP all-reduce */

enum { RAF_KEEP, RAF_FREE, RAF_POST_FORWARD };

struct fsdp2_state {
    int *ag_out;        /* per unit: flat all-gather output, or -1 */
    int *ag_op;         /* per unit: its all-gather (pending unshard) */
    int *ci_op;         /* per unit: its copy-in */
    int deferred_buf;   /* forward: the previous group's all-gather output */
    int deferred_event; /* ... and its copy-out, the event CI/AG wait on */
    int *post_fwd;      /* per unit: SHARDED_POST_FORWARD data, or -1 */
    int rs_input;       /* the pending reduce-scatter state: its input */
    int rs_event;       /* ... and the reduce-scatter */
    int *acc_grad;      /* per unit: reduce-dtype accumulated gradient */
    int *accumulated;   /* per unit: gradients kept from an unsynced pass */
    int *post_reduce;   /* per unit: post-reduce event op, or -1 */
    int *pb_at_end;     /* per unit: post-backward from the final callback */
    int *raf;           /* per unit: after forward keep (RAF_KEEP), free
                           (RAF_FREE) or keep a post-forward shard
                           (RAF_POST_FORWARD) */
    int reshard_after_backward;  /* this micro-batch's
                                    set_reshard_after_backward */
    int all_reduce;     /* this micro-batch's set_requires_all_reduce */
    int *partial;       /* per unit: HSDP shards reduce-scattered but not
                           all-reduced yet (_partial_reduce_output), or -1 */
    int *run_grad;      /* per walk step: its parameters' gradients */
    double *run_numel;  /* per walk step: parameters of its leaves */
    int offload_event;  /* the last non-blocking gradient D2H, or -1 */
    int *targets;       /* scratch: a group's prefetch list */
};

/* _get_post_forward_mesh_info (_fsdp_init.py): an int N equal to the
 * shard group means True (and 1 False, with a warning); in between, an
 * N-rank post-forward mesh.  0: no such mesh. */
static int64_t
post_forward_size(int64_t n, int64_t shard)
{
    return n > 1 && n < shard ? n : 0;
}

int
sched_fsdp2_post_forward_size(const struct run_config *c, int shard)
{
    int64_t n = post_forward_size(c->reshard_after_forward_size, shard);
    return (int)(n > 0 ? n
                 : post_forward_size(c->reshard_after_forward_last_size,
                                     shard));
}

int
sched_fsdp2_mesh(const struct run_config *c, int world, int gpus_per_node,
                 int *shard, int *replicate, char **cause)
{
    int64_t R = c->dp_replicate > 0 ? c->dp_replicate
                : c->dp_shard > 0 ? world / c->dp_shard : 1;
    int64_t M = c->dp_shard > 0 ? c->dp_shard : world / (R > 0 ? R : 1);
    if (R < 1 || M < 1 || R * M != world) {
        *cause = xasprintf("--dp-replicate %lld x --dp-shard %lld = %lld "
                           "ranks, but the cluster has %d GPUs: the 2-D "
                           "mesh must cover every GPU once",
                           (long long)R, (long long)M, (long long)(R * M),
                           world);
        return -1;
    }
    if (R > 1 && M % gpus_per_node != 0) {
        *cause = xasprintf("--dp-shard %lld: with replicas, fsdpsim models "
                           "each replicate group as one rank per node, so "
                           "the shard dimension must be a multiple of the "
                           "%d GPUs per node", (long long)M, gpus_per_node);
        return -1;
    }
    const int64_t sizes[2] = {c->reshard_after_forward_size,
                              c->reshard_after_forward_last_size};
    for (int i = 0; i < 2; i++) {
        int64_t g = sizes[i];
        if (g > 0 && (g > M || M % g != 0)) {
            *cause = xasprintf("--reshard-after-forward%s %lld: the "
                               "post-forward mesh must be a divisor of the "
                               "shard group (%lld ranks), fully_shard's "
                               "rule (_get_post_forward_mesh_info)",
                               i ? "-last" : "", (long long)g, (long long)M);
            return -1;
        }
    }
    *shard = (int)M;
    *replicate = (int)R;
    return 0;
}

/* _get_gradient_divide_factors: fp32 and bf16 gradients are averaged by
 * NCCL (ReduceOp.AVG) over a data-parallel group of more than one rank;
 * fp16 sums, divided before and after (§13.7). */
static int
reduce_op(const struct builder *b)
{
    int dp = b->s->shard_size * b->s->replicate_size;
    if (dp > 1 && b->s->reduce_dtype != DTYPE_FP16)
        return REDOP_AVG;
    return REDOP_SUM;
}

/* ---- unshard ---- */

/* Bytes of NUMEL unsharded elements of unit U (a whole gather when
 * NUMEL is its padded_numel, scaled down for a shard): its Float8Linear
 * weights at one byte under the float8 all-gather (torchao
 * fsdp_utils.py: fsdp_pre_all_gather returns the float8 data), the rest
 * in the parameter dtype. */
static double
gathered_bytes(const struct builder *b, int u, double numel)
{
    const struct fsdp_unit *fu = &b->s->units[u];
    double f8 = fu->padded_numel > 0
                    ? (double)fu->float8_padded_numel * numel
                          / (double)fu->padded_numel
                    : 0;
    return f8 + (numel - f8) * b->b_param;
}

/* set_unshard_in_backward(False) (§13.9.5): in backward the group's
 * unshard returns at once, and with no all-gather result
 * wait_for_unshard has nothing to copy out. */
static int
kept_sharded(const struct builder *b, int u)
{
    return b->phase == PHASE_BACKWARD
           && b->s->units[u].no_unshard_in_backward;
}

/* FSDPParamGroup.unshard (§13.3 step 2): no-op if unsharded or already
 * pending.  foreach_all_gather on the copy-in stream: the param-dtype
 * cast of every shard into one temporary (_get_param_all_gather_inputs'
 * foreach copy; with offload, the H2D copy first), the flat output
 * allocated, all_gather_copy_in's copy into this rank's slice; then the
 * all-gather stream waits and gathers in place. */
static void
f2_unshard(struct builder *b, int u)
{
    struct fsdp2_state *f = b->f2;
    if (!unit_has_handle(b, u) || b->unsharded[u] >= 0 || f->ag_op[u] >= 0
        || kept_sharded(b, u))
        return;
    const struct fsdp_unit *fu = &b->s->units[u];
    int pf = f->post_fwd[u] >= 0;
    int W = pf ? b->s->post_forward_sizes[u] : b->s->shard_size;
    if (W == 1)
        return;             /* wait_for_unshard copies the shard itself */
    double padded = (double)fu->padded_numel, S = (double)fu->shard_numel;
    double in_numel = padded / W;
    int bp = b->b_param;
    int src = -1, tmp = -1;
    if (pf) {
        src = f->post_fwd[u];       /* already in param dtype */
    } else {
        if (b->c->cpu_offload) {
            tmp = alloc_buf(b, ST_CI, MEM_OFFLOAD_STAGING, S * b->b_orig, u);
            emit_copy(b, OP_H2D, ST_CI, u, S * b->b_orig, -1, tmp);
        }
        if (bp != b->b_orig || fu->float8_padded_numel > 0) {
            /* The float8 weights' cast uses the scale precomputed after
             * the optimizer step: fp32 in, one byte out. */
            double lp_bytes = gathered_bytes(b, u, S);
            int lp = alloc_buf(b, ST_CI, MEM_AG_BUFFER, lp_bytes, u);
            struct sched_op *cast = emit_copy(b, OP_CAST, ST_CI, u,
                                              S * b->b_orig + lp_bytes, tmp,
                                              lp);
            /* Without offload the cast is _foreach_copy_ into the
             * all-gather input, whose mixed-dtype path is multi-tensor
             * and vectorized (ForeachBinaryOpList.cu); offloaded,
             * all_gather_inputs casts with .to (_fsdp_param.py,
             * _to_dtype_if_needed). */
            if (b->c->cpu_offload && fu->float8_padded_numel == 0)
                mark_cast(b, cast, S, b->b_orig, bp);
            if (tmp < 0)
                from_shard(b, cast, u);
            free_buf(b, tmp, -1, u);
            tmp = lp;
        }
        src = tmp;
    }
    double gathered = gathered_bytes(b, u, padded);
    f->ag_out[u] = alloc_buf(b, ST_CI, MEM_AG_BUFFER, gathered, u);
    struct sched_op *ci = emit_copy(b, OP_CAST, ST_CI, u,
                                    2 * gathered_bytes(b, u, in_numel), src,
                                    f->ag_out[u]);
    if (src < 0)
        from_shard(b, ci, u);
    int ci_id = ci->id;
    free_buf(b, tmp, -1, u);
    f->ci_op[u] = ci_id;
    wait_stream(b, ST_AG, ST_CI);
    struct sched_op *ag = emit(b, OP_ALLGATHER, ST_AG, u);
    ag->pg = pf ? PG_POST_FORWARD : PG_SHARD;
    ag->bytes = (uint64_t)gathered;
    ag->dtype = b->s->param_dtype;
    ag->buf_in = ag->buf_out = f->ag_out[u];
    f->ag_op[u] = ag->id;
}

/* precompute_float8_dynamic_scale_for_fsdp (torchao float8/fsdp_utils.py),
 * called after optimizer.step(): the amax of every float8 weight's local
 * shard (torch._foreach_norm(..., ord=inf): a read of each fp32 element),
 * stacked and all-reduced with MAX over the shard group (one fp32 a
 * weight), then the scales computed (a tiny kernel). */
static void
float8_precompute_scales(struct builder *b)
{
    double shard = 0;
    int weights = 0;
    for (int u = 0; u < b->s->n_units; u++)
        shard += (double)b->s->units[u].float8_padded_numel
                 / b->s->shard_size;
    if (shard <= 0)
        return;
    for (int i = 0; i < b->m->n_modules; i++)
        weights += layer_float8_linear(b->m->modules[i])
                   && !b->m->modules[i]->tied;
    b->hooks++;
    emit_copy(b, OP_CAST, STREAM_C, -1, shard * b->b_orig, -1, -1);
    fp32_all_reduce(b, weights);
    emit_copy(b, OP_CAST, STREAM_C, -1, 8.0 * weights, -1, -1);
}

/* The all-gather output of the previous group, kept through forward so
 * its copy-out overlaps the next all-gather: the copy-in and all-gather
 * streams wait on its copy-out event, then it is dropped. */
static void
release_deferred(struct builder *b)
{
    struct fsdp2_state *f = b->f2;
    if (f->deferred_buf < 0)
        return;
    wait_event(b, ST_CI, f->deferred_event);
    wait_event(b, ST_AG, f->deferred_event);
    free_buf(b, f->deferred_buf, -1, -1);
    f->deferred_buf = f->deferred_event = -1;
}

/* FSDPParamGroup.wait_for_unshard (§13.3 step 3): the compute stream
 * waits for the all-gather, allocates the per-parameter unsharded
 * tensors (padded, init_all_gather_outputs) and copies out of the flat
 * buffer (split_with_sizes_copy). */
static void
f2_wait_for_unshard(struct builder *b, int u)
{
    struct fsdp2_state *f = b->f2;
    if (!unit_has_handle(b, u) || b->unsharded[u] >= 0
        || (f->ag_op[u] < 0 && kept_sharded(b, u)))
        return;
    const struct fsdp_unit *fu = &b->s->units[u];
    double padded = (double)fu->padded_numel;
    int bp = b->b_param;
    if (f->ag_op[u] < 0) {
        /* A 1-rank group: the unsharded parameters are initialised from
         * the sharded ones directly (a cast copy). */
        f2_unshard(b, u);
        if (f->ag_op[u] < 0) {
            b->unsharded[u] = alloc_buf(b, STREAM_C, MEM_UNSHARDED_PARAMS,
                                        padded * bp, u);
            struct sched_op *cp = emit_copy(b, OP_CAST, STREAM_C, u,
                                            padded * (b->b_orig + bp), -1,
                                            b->unsharded[u]);
            from_shard(b, cp, u);
            return;
        }
    }
    if (b->phase == PHASE_FORWARD)
        release_deferred(b);
    wait_event(b, STREAM_C, f->ag_op[u]);
    double gathered = gathered_bytes(b, u, padded);
    b->unsharded[u] = alloc_buf(b, STREAM_C, MEM_UNSHARDED_PARAMS, gathered,
                                u);
    struct sched_op *co = emit_copy(b, OP_CAST, STREAM_C, u, 2 * gathered,
                                    f->ag_out[u], b->unsharded[u]);
    int co_id = co->id;
    if (f->post_fwd[u] >= 0) {
        /* to_unsharded drops the post-forward shard. */
        free_buf(b, f->post_fwd[u], -1, u);
        f->post_fwd[u] = -1;
    }
    if (b->phase == PHASE_FORWARD) {
        f->deferred_buf = f->ag_out[u];
        f->deferred_event = co_id;
    } else {
        wait_event(b, ST_CI, co_id);
        wait_event(b, ST_AG, co_id);
        free_buf(b, f->ag_out[u], -1, u);
    }
    f->ag_out[u] = f->ag_op[u] = -1;
}

/* FSDPParamGroup.reshard.  After forward, as the group's raf (set in
 * group_reshard_after_forward): keep, free (True), or keep this rank's
 * 1/N of the unsharded data (an int N: _to_sharded_post_forward copies it
 * out, §13.3).  In backward always to_sharded. */
static void
f2_reshard(struct builder *b, int u)
{
    if (b->unsharded[u] < 0)
        return;
    if (b->phase == PHASE_FORWARD) {
        if (b->f2->raf[u] == RAF_KEEP)
            return;
        if (b->f2->raf[u] == RAF_POST_FORWARD) {
            double keep = gathered_bytes(
                b, u, (double)b->s->units[u].padded_numel
                          / b->s->post_forward_sizes[u]);
            b->f2->post_fwd[u] = alloc_buf(b, STREAM_C, MEM_UNSHARDED_PARAMS,
                                           keep, u);
            emit_copy(b, OP_CAST, STREAM_C, u, 2 * keep, b->unsharded[u],
                      b->f2->post_fwd[u]);
        }
    }
    free_buf(b, b->unsharded[u], -1, u);
    b->unsharded[u] = -1;
}

/* ---- forward ---- */

/* The groups on U's set_modules_to_forward_prefetch (BACKWARD 0) or
 * set_modules_to_backward_prefetch (1) list, in list order, into OUT (at
 * most MAX); -1 when U has none.  A list given for U
 * (--modules-to-forward-prefetch) is its own; else --forward-prefetch N
 * and --backward-prefetch N give every group the next N of the pass
 * (forward: pre-forward order; backward: the reverse of post-forward
 * order), clipped at its end (§13.9.1). */
static int
prefetch_targets(const struct builder *b, int u, int backward, int *out,
                 int max)
{
    const struct fsdp_unit *fu = &b->s->units[u];
    if (fu->n_prefetch[backward] >= 0) {
        int n = fu->n_prefetch[backward] < max ? fu->n_prefetch[backward]
                                               : max;
        if (n > 0)      /* an empty list has no array to copy from */
            memcpy(out, fu->prefetch[backward], sizeof(int) * (size_t)n);
        return n;
    }
    int64_t want = backward ? b->c->backward_prefetch_groups
                            : b->c->forward_prefetch_groups;
    if (want <= 0)
        return -1;
    int n = 0;
    if (backward) {
        for (int pos = b->post_fwd_pos[u]; n < want && n < max
                                           && pos - n - 1 >= 0; n++)
            out[n] = b->post_fwd_order[pos - n - 1];
    } else {
        for (int pos = b->fwd_pos[u]; n < want && n < max
                                      && pos + n + 1 < b->n_fwd_order; n++)
            out[n] = b->fwd_order[pos + n + 1];
    }
    return n;
}

static void
f2_pre_forward(struct builder *b, int u)
{
    b->hooks++;
    /* cast_forward_inputs: the groups' floating inputs are the previous
     * group's param-dtype activations (or integer token ids), so the
     * cast is a no-op in the models fsdpsim runs. */
    if (unit_has_handle(b, u)) {
        f2_unshard(b, u);
        f2_wait_for_unshard(b, u);
    }
    /* FSDPState._pre_forward, after the group's own pre_forward (a state
     * with no parameters too, such as torchtitan's root): its
     * set_modules_to_forward_prefetch list's unshards, in list order,
     * before u's compute (§13.9.1); a group already gathered or pending
     * is skipped (unshard's early returns). */
    int *to = b->f2->targets;
    int n = prefetch_targets(b, u, 0, to, b->s->n_units);
    for (int j = 0; j < n; j++)
        f2_unshard(b, to[j]);
}

static void
f2_post_forward(struct builder *b, int u)
{
    b->hooks++;
    if (unit_has_handle(b, u))
        f2_reshard(b, u);
    if (u != 0)
        return;
    /* The root's _post_forward frees the last deferred all-gather
     * output; MixedPrecisionPolicy.output_dtype casts its output (the
     * logits of a language model; under the fused loss the model returns
     * the loss, the logits never being whole). */
    release_deferred(b);
    if (b->c->output_dtype_given && b->c->output_dtype != b->s->param_dtype
        && b->m->vocab > 0 && b->s->loss != LOSS_FUSED) {
        double n = (double)b->c->micro_batch * (double)b->c->seq_len
                   * (double)b->m->vocab;
        emit_copy(b, OP_CAST, STREAM_C, 0,
                  n * (b->b_param + dtype_bytes(b->c->output_dtype)), -1, -1);
    }
}

static void
f2_forward_pass(struct builder *b)
{
    b->phase = PHASE_FORWARD;
    /* _root_pre_forward: the copy-in and all-gather streams wait for the
     * compute stream (the optimizer step before). */
    b->hooks++;
    wait_stream(b, ST_CI, STREAM_C);
    wait_stream(b, ST_AG, STREAM_C);
    for (int w = 0; w < b->n_walk; w++) {
        b->cur_w = w;
        switch (b->walk[w].kind) {
        case WALK_ENTER:
            f2_pre_forward(b, b->walk[w].unit);
            break;
        case WALK_RUN:
            forward_run(b, w);
            break;
        case WALK_EXIT:
            f2_post_forward(b, b->walk[w].unit);
            break;
        }
    }
}

/* ---- backward ---- */

/* FSDPState._pre_backward (§13.4 steps 2-3): the group's pre_backward
 * unshards (a no-op when prefetched or never resharded) and copies out;
 * then, with no set_modules_to_backward_prefetch list, _backward_prefetch
 * unshards the group before it in post-forward order, else the list's
 * groups (--backward-prefetch N: the next N to run backward) in list
 * order (§13.9.1). */
static void
f2_pre_backward(struct builder *b, int u)
{
    b->hooks++;
    int *to = b->f2->targets;
    int n = prefetch_targets(b, u, 1, to, b->s->n_units);
    if (unit_has_handle(b, u)) {
        f2_unshard(b, u);
        f2_wait_for_unshard(b, u);
        /* default_prefetch = len(list) == 0: _backward_prefetch, the
         * group before u in post-forward order. */
        int pos = b->post_fwd_pos[u];
        if (n <= 0 && pos > 0)
            f2_unshard(b, b->post_fwd_order[pos - 1]);
    }
    for (int j = 0; j < n; j++)
        f2_unshard(b, to[j]);
}

/* The gradients of a run's parameters, allocated as autograd computes
 * them (per parameter, in the param dtype, unpadded). */
static void
alloc_run_grad(struct builder *b, int w)
{
    struct fsdp2_state *f = b->f2;
    int u = b->walk[w].unit;
    if (!unit_has_handle(b, u) || f->run_grad[w] >= 0
        || f->run_numel[w] <= 0)
        return;
    f->run_grad[w] = alloc_buf(b, STREAM_C, MEM_GRAD_UNSHARDED,
                               f->run_numel[w] * b->b_param, u);
}

static void
free_unit_grads(struct builder *b, int u)
{
    struct fsdp2_state *f = b->f2;
    for (int w = 0; w < b->n_walk; w++)
        if (b->walk[w].kind == WALK_RUN && b->walk[w].unit == u) {
            free_buf(b, f->run_grad[w], -1, u);
            f->run_grad[w] = -1;
        }
}

/* foreach_reduce (§13.4 step 8): chunk_cat into the reduce-scatter input
 * on the compute stream, reduce-scatter on its stream, HSDP all-reduce
 * on its own, then the cast to fp32 and the sharded gradient. */
static void
f2_reduce(struct builder *b, int u, double grad_bytes, int grad_buf)
{
    struct fsdp2_state *f = b->f2;
    const struct fsdp_unit *fu = &b->s->units[u];
    double padded = (double)fu->padded_numel, S = (double)fu->shard_numel;
    int br = b->b_reduce, redop = reduce_op(b);
    int on_host = b->grad_shard[u] == -2;
    int fp16_divide = b->s->reduce_dtype == DTYPE_FP16
                      && b->s->shard_size * b->s->replicate_size > 1;

    int rs_in = alloc_buf(b, STREAM_C, MEM_RS_BUFFER, padded * br, u);
    /* chunk_cat: each gradient's dim-0 chunks into the W rows of the
     * input, padded per parameter, cast to reduce_dtype on the way. */
    emit_copy(b, OP_CAST, STREAM_C, u, grad_bytes + padded * br, grad_buf,
              rs_in);
    free_unit_grads(b, u);
    free_buf(b, f->acc_grad[u], -1, u);
    f->acc_grad[u] = -1;
    f->accumulated[u] = 0;

    wait_stream(b, ST_RS, STREAM_C);
    enum sched_stream post = ST_RS;
    /* set_requires_all_reduce(False) on HSDP: the output is kept (or
     * added into the one kept) for a later all-reduce (§13.9.4). */
    int hold = b->s->replicate_size > 1 && !f->all_reduce;
    int direct = !hold && br == b->b_orig && b->grad_shard[u] < 0;
    int out = alloc_buf(b, ST_RS, direct ? MEM_GRAD_SHARDED : MEM_RS_BUFFER,
                        S * br, u);
    if (fp16_divide)
        emit_copy(b, OP_CAST, ST_RS, u, 2 * padded * br, rs_in, rs_in);
    struct sched_op *rs;
    if (b->s->shard_size > 1) {
        rs = emit(b, OP_REDUCESCATTER, ST_RS, u);
        rs->pg = PG_SHARD;
        rs->bytes = (uint64_t)(padded * br);
        rs->dtype = b->s->reduce_dtype;
        rs->redop = redop;
        rs->buf_in = rs_in;
        rs->buf_out = out;
    } else {
        rs = emit_copy(b, OP_CAST, ST_RS, u, 2 * S * br, rs_in, out);
    }
    int rs_id = rs->id;
    if (hold || f->partial[u] >= 0) {
        /* foreach_reduce on the reduce-scatter stream: partial += output
         * when holding, output += partial before the all-reduce. */
        int kept = f->partial[u];
        if (kept >= 0)
            emit_copy(b, OP_CAST, ST_RS, u, 3 * S * br, hold ? out : kept,
                      hold ? kept : out);
        if (hold && kept < 0)
            f->partial[u] = out;
        else if (hold)
            free_buf(b, out, -1, u);
        else {
            free_buf(b, kept, -1, u);
            f->partial[u] = -1;
        }
    }
    if (hold) {
        f->post_reduce[u] = b->last_op[ST_RS];
        f->rs_input = rs_in;
        f->rs_event = rs_id;
        return;
    }
    if (b->s->replicate_size > 1) {
        wait_stream(b, ST_AR, ST_RS);
        post = ST_AR;
        struct sched_op *ar = emit(b, OP_ALLREDUCE, ST_AR, u);
        ar->pg = PG_REPLICATE;
        ar->bytes = (uint64_t)(S * br);
        ar->dtype = b->s->reduce_dtype;
        ar->redop = redop;
        ar->buf_in = ar->buf_out = out;
    }
    if (fp16_divide)
        emit_copy(b, OP_CAST, post, u, 2 * S * br, out, out);
    /* To the original dtype, viewed out per parameter, assigned to or
     * added into each sharded parameter's .grad. */
    if (b->grad_shard[u] >= 0) {
        /* foreach_reduce: _to_dtype_if_needed, then += */
        struct sched_op *add = emit_copy(b, OP_CAST, post, u,
                                         S * (br + 2 * b->b_orig), out,
                                         b->grad_shard[u]);
        mark_cast(b, add, S, br, b->b_orig);
        free_buf_after(b, out, post == ST_RS ? -1 : add->id, u);
    } else if (direct) {
        b->grad_shard[u] = out;
    } else {
        b->grad_shard[u] = alloc_buf(b, post, MEM_GRAD_SHARDED,
                                     S * b->b_orig, u);
        struct sched_op *cast = emit_copy(b, OP_CAST, post, u,
                                          S * (br + b->b_orig), out,
                                          b->grad_shard[u]);
        mark_cast(b, cast, S, br, b->b_orig);
        free_buf_after(b, out, post == ST_RS ? -1 : cast->id, u);
    }
    if (b->c->cpu_offload) {
        /* CPUOffloadPolicy: the sharded gradient to pinned host memory,
         * non-blocking unless it is added into one already there (then
         * the host waits for the copy before its add). */
        struct sched_op *d2h = emit_copy(b, OP_D2H, post, u, S * b->b_orig,
                                         b->grad_shard[u], -1);
        int d2h_id = d2h->id;
        free_buf_after(b, b->grad_shard[u], post == ST_RS ? -1 : d2h_id, u);
        if (on_host) {
            struct sched_op *w = emit(b, OP_CPU_WAIT, STREAM_HOST, u);
            w->wait_op = d2h_id;
        } else {
            f->offload_event = d2h_id;
        }
        b->grad_shard[u] = -2;
    }
    f->post_reduce[u] = b->last_op[post];
    f->rs_input = rs_in;
    f->rs_event = rs_id;
}

/* FSDPParamGroup.post_backward (§13.4 steps 4-8). */
static void
f2_post_backward(struct builder *b, int u, int sync)
{
    struct fsdp2_state *f = b->f2;
    b->hooks++;
    if (!unit_has_handle(b, u))
        return;
    double N = (double)b->s->units[u].numel;
    int bp = b->b_param, br = b->b_reduce;
    /* accumulate_unsharded_grad_if_needed: this pass's gradients added
     * into the reduce-dtype ones of an unsynced pass; in the param dtype,
     * autograd's AccumulateGrad added them in place. */
    if (f->accumulated[u]) {
        struct sched_op *add;
        if (f->acc_grad[u] >= 0) {
            /* reduce-dtype += param-dtype: mixed inputs, LoadWithCast */
            add = emit_copy(b, OP_CAST, STREAM_C, u, N * (bp + 2 * br), -1,
                            f->acc_grad[u]);
            mark_cast(b, add, N, bp, br);
            free_unit_grads(b, u);
        } else {
            add = emit_copy(b, OP_CAST, STREAM_C, u, N * 3 * bp, -1, -1);
        }
        (void)add;
    }
    /* set_reshard_after_backward(False): the parameters stay unsharded,
     * so the next forward's unshard is a no-op (§13.9.2). */
    if (f->reshard_after_backward)
        f2_reshard(b, u);
    if (!sync) {
        /* set_requires_gradient_sync(False): keep the gradients,
         * up-cast once to reduce_dtype if it differs
         * (to_accumulated_grad_if_needed). */
        if (!f->accumulated[u] && br != bp) {
            f->acc_grad[u] = alloc_buf(b, STREAM_C, MEM_GRAD_UNSHARDED,
                                       N * br, u);
            mark_cast(b, emit_copy(b, OP_CAST, STREAM_C, u, N * (bp + br),
                                   -1, f->acc_grad[u]),
                      N, bp, br);
            free_unit_grads(b, u);
        }
        f->accumulated[u] = 1;
        return;
    }
    /* The compute stream waits for the previous group's reduce-scatter,
     * whose input is then dropped. */
    if (f->rs_event >= 0) {
        wait_event(b, STREAM_C, f->rs_event);
        free_buf(b, f->rs_input, -1, u);
        f->rs_input = f->rs_event = -1;
    }
    double gbytes = N * (f->acc_grad[u] >= 0 ? br : bp);
    f2_reduce(b, u, gbytes, f->acc_grad[u]);
}

static void
f2_final_callback(struct builder *b, int sync)
{
    struct fsdp2_state *f = b->f2;
    b->hooks++;
    /* Groups whose inputs needed no gradient (the root, an embedding
     * group): their post-backward runs here, root first. */
    for (int u = 0; u < b->s->n_units; u++)
        if (f->pb_at_end[u])
            f2_post_backward(b, u, sync);
    /* finalize_backward: the compute stream waits on each group's
     * post-reduce event; the host on the offload copies. */
    for (int u = 0; u < b->s->n_units; u++)
        if (f->post_reduce[u] >= 0) {
            wait_event(b, STREAM_C, f->post_reduce[u]);
            f->post_reduce[u] = -1;
        }
    if (f->offload_event >= 0) {
        struct sched_op *w = emit(b, OP_CPU_WAIT, STREAM_HOST, -1);
        w->wait_op = f->offload_event;
        f->offload_event = -1;
    }
    if (f->rs_event >= 0) {
        wait_event(b, STREAM_C, f->rs_event);
        free_buf(b, f->rs_input, -1, -1);
        f->rs_input = f->rs_event = -1;
    }
    free_region_inputs(b);
}

static void
f2_backward_pass(struct builder *b, int sync)
{
    b->phase = PHASE_BACKWARD;
    for (int w = b->n_walk - 1; w >= 0; w--) {
        const struct walk_step *st = &b->walk[w];
        switch (st->kind) {
        case WALK_EXIT:
            f2_pre_backward(b, st->unit);
            break;
        case WALK_RUN:
            alloc_run_grad(b, w);
            backward_run(b, w);
            break;
        case WALK_ENTER:
            /* RegisterPostBackwardFunction on the group's inputs: it
             * fires once their gradient is computed. */
            if (!b->f2->pb_at_end[st->unit])
                f2_post_backward(b, st->unit, sync);
            break;
        }
    }
    f2_final_callback(b, sync);
}

/* ---- setup ---- */

/* Each group's reshard_after_forward (§13.9.3).  fully_shard's None (the
 * flag not given) is True but for the root, which _lazy_init sets not to
 * reshard (_auto_reshard_after_forward, _fsdp_state.py); a value given
 * applies to the root too.  --reshard-after-forward-last sets the group whose
 * post-forward comes last but for the root's, which is the first to run
 * backward (torchtitan's last block, or its [norm, output] group).  A
 * group's own value (--group-reshard-after-forward) comes last.  Each
 * mode is kept in raf[u], and an N-rank post-forward mesh's N in the
 * schedule's post_forward_sizes[u] (each fully_shard call with an int
 * makes a mesh of its own, _get_post_forward_mesh_info). */
static void
set_raf(struct builder *b, int u, bool reshard, int64_t size)
{
    int64_t n = post_forward_size(size, b->s->shard_size);
    b->f2->raf[u] = !reshard || size == 1 ? RAF_KEEP
                    : n > 0               ? RAF_POST_FORWARD
                                          : RAF_FREE;
    b->s->post_forward_sizes[u] = b->f2->raf[u] == RAF_POST_FORWARD ? (int)n
                                                                    : 0;
}

static void
group_reshard_after_forward(struct builder *b)
{
    const struct run_config *c = b->c;
    /* --fsdp2-groups torchtitan*: apply_fsdp's own values where the
     * flags give none (§13.13).  torchtitan-blocks passes True to the
     * root (not pp_enabled) and to every block but the last; torchtitan
     * passes [norm, output] False (its "default" policy), the root None. */
    int titan = c->fsdp2_groups != FSDP2_GROUPS_WRAP;
    bool last = c->reshard_after_forward_last_given
                    ? c->reshard_after_forward_last
                    : false;
    for (int u = 0; u < b->s->n_units; u++)
        set_raf(b, u, c->reshard_after_forward,
                c->reshard_after_forward_size);
    if (!c->reshard_after_forward_given
        && c->fsdp2_groups != FSDP2_GROUPS_TORCHTITAN_BLOCKS)
        set_raf(b, 0, false, 0);
    for (int i = b->n_post_fwd - 1;
         i >= 0 && (c->reshard_after_forward_last_given || titan); i--) {
        int u = b->post_fwd_order[i];
        if (u != 0 && unit_has_handle(b, u)) {
            set_raf(b, u, last, c->reshard_after_forward_last_size);
            break;
        }
    }
    for (int u = 0; u < b->s->n_units; u++)
        if (b->s->units[u].raf_given)
            set_raf(b, u, b->s->units[u].raf, b->s->units[u].raf_size);
}

static int *
int_array(int n, int value)
{
    int *a = xmalloc(sizeof(int) * (n > 0 ? n : 1));
    for (int i = 0; i < n; i++)
        a[i] = value;
    return a;
}

/* A group whose first leaf is an embedding takes token ids, which need no
 * gradient, so no post-backward function is registered on its inputs;
 * the root's inputs are the batch itself. */
static void
find_post_backward_at_end(struct builder *b)
{
    struct fsdp2_state *f = b->f2;
    for (int w = 0; w < b->n_walk; w++) {
        if (b->walk[w].kind != WALK_ENTER)
            continue;
        int u = b->walk[w].unit, first = -1;
        for (int v = w + 1; v < b->n_walk && first < 0; v++)
            if (b->walk[v].kind == WALK_RUN)
                first = b->walk[v].leaf_begin;
        f->pb_at_end[u] = u == 0
                          || (first >= 0
                              && b->s->leaves[first]->kind
                                     == LAYER_EMBEDDING);
    }
}

void
fsdp2_steps(struct builder *b)
{
    struct sched *s = b->s;
    int n = s->n_units;
    struct fsdp2_state st;
    memset(&st, 0, sizeof st);
    b->f2 = &st;
    /* No record_stream anywhere: each buffer used on another stream is
     * dropped only after its pool's stream waited for that use (§13.2),
     * so every free is stream-ordered and its block reusable at once, as
     * the caching allocator reuses a block freed on its own stream. */
    b->stream_ordered = 1;
    st.ag_out = int_array(n, -1);
    st.ag_op = int_array(n, -1);
    st.ci_op = int_array(n, -1);
    st.post_fwd = int_array(n, -1);
    st.acc_grad = int_array(n, -1);
    st.accumulated = int_array(n, 0);
    st.post_reduce = int_array(n, -1);
    st.pb_at_end = int_array(n, 0);
    st.raf = int_array(n, RAF_FREE);
    free(s->post_forward_sizes);
    s->post_forward_sizes = xcalloc(n > 0 ? n : 1, sizeof(int));
    st.partial = int_array(n, -1);
    st.targets = int_array(n, -1);
    st.run_grad = int_array(b->n_walk, -1);
    st.run_numel = xcalloc(b->n_walk > 0 ? b->n_walk : 1, sizeof(double));
    st.deferred_buf = st.deferred_event = -1;
    st.rs_input = st.rs_event = -1;
    st.offload_event = -1;
    for (int w = 0; w < b->n_walk; w++)
        if (b->walk[w].kind == WALK_RUN)
            for (int l = b->walk[w].leaf_begin; l < b->walk[w].leaf_end; l++)
                st.run_numel[w] += (double)s->leaves[l]->own_params;
    find_post_backward_at_end(b);
    group_reshard_after_forward(b);

    int opt_state = -1;
    for (b->it = 0; b->it < s->iterations; b->it++) {
        int a = sched_step_micro_batches(s, b->it);
        for (b->micro = 0; b->micro < a; b->micro++) {
            int last = b->micro == a - 1;
            int sync = !b->c->no_sync || last;
            /* set_reshard_after_backward(last micro-batch): the last
             * reshards, as the optimizer step needs its shards. */
            st.reshard_after_backward = b->c->reshard_after_backward || last;
            st.all_reduce = b->c->requires_all_reduce || last;
            f2_forward_pass(b);
            f2_backward_pass(b, sync);
        }
        optimizer_step(b, &opt_state);
        float8_precompute_scales(b);
    }

    free(st.ag_out);
    free(st.ag_op);
    free(st.ci_op);
    free(st.post_fwd);
    free(st.acc_grad);
    free(st.accumulated);
    free(st.post_reduce);
    free(st.pb_at_end);
    free(st.raf);
    free(st.partial);
    free(st.targets);
    free(st.run_grad);
    free(st.run_numel);
    b->f2 = NULL;
}
