/*
 * sched_impl.h: the schedule builder's state, shared by the FSDP1 builder
 * (sched.c) and the FSDP2 one (sched_fsdp2.c).  Private to those files.
 */
#ifndef FSDPSIM_SCHED_IMPL_H
#define FSDPSIM_SCHED_IMPL_H

#include "sched.h"

/* A unit and the position of its views, for the post-backward order. */
struct pb_key {
    int seq, unit;
};

/* One step of the forward walk: a unit boundary or a run of leaves. */
enum walk_kind { WALK_ENTER, WALK_RUN, WALK_EXIT };

struct walk_step {
    enum walk_kind kind;
    int unit;             /* ENTER/EXIT: the unit; RUN: the owning unit */
    int leaf_begin, leaf_end;
    int ckpt;             /* RUN: checkpointed module index, or -1 */
    double fwd_flops, bwd_flops, model_flops, palm_flops, saved_bytes;
    /* selective-op: bytes kept through forward (matmul and attention
     * outputs), the part of them that is not also in saved_bytes (an
     * output no backward op reads, which only eager's cache holds), and
     * the FLOPs its recompute runs */
    double sac_kept_bytes, sac_cache_only_bytes, sac_recompute_flops;
    /* the temporaries one leaf of the run holds while its forward /
     * backward kernels run (layer_transients): count and size of each,
     * the leaf with the most bytes */
    int fwd_transients, bwd_transients;
    double fwd_transient_bytes, bwd_transient_bytes;
};

struct ddp_state;
struct fsdp2_state;

struct builder {
    struct sched *s;
    const struct model *m;
    const struct wrap_plan *p;
    const struct run_config *c;

    struct walk_step *walk;
    int n_walk;
    size_t cap_walk;
    int *fwd_order, *post_fwd_order, *post_fwd_pos, *fwd_pos;
    int n_fwd_order, n_post_fwd;
    int *first_param_leaf;    /* per unit: earliest leaf with parameters */
    int *prev_run;            /* per walk step: the last RUN step before it,
                                 or -1 */
    int cur_w;                /* forward: the walk step being issued */
    int *view_seq;            /* per unit: where in this pass's forward its
                                 unsharded views were made (autograd
                                 sequence position, see backward_pass) */
    int *pb_order;            /* units with a handle, by view_seq, latest
                                 first: the post-backward order */
    struct pb_key *pb_keys;   /* scratch for sorting pb_order */
    int n_pb, pb_next;
    int last_bwd_unit;        /* unit of the last backward op issued */
    int sac_block, sac_mm;    /* selective-op: the checkpointed module
                                 being walked and its aten.mm count */
    bool sac_abs_input_kept;  /* ... and whether the abs() of the input
                                 the current Linears share is kept */

    int last_op[STREAM_COUNT];
    int *pending[STREAM_COUNT];
    int n_pending[STREAM_COUNT];
    size_t cap_pending[STREAM_COUNT];
    int hooks;                /* hooks to charge to the next op */

    int it, micro;
    enum sched_phase phase;

    int *unsharded;           /* per unit: buffer of the unsharded params */
    int *grad;                /* per unit: unsharded gradient buffer */
    int *grad_parts;          /* per unit: the parameters' own gradients,
                                 waiting for SplitWithSizesBackward */
    int *grad_held;           /* per unit: 1 when that buffer holds an
                                 earlier micro-batch's gradient (no_sync) */
    int *grad_shard;          /* per unit: sharded fp32 gradient buffer */
    int grad_shard_stale;     /* use_orig_params: zero_grad ran, the
                               * sharded gradients go at the next
                               * _root_pre_forward */
    int *prefetched;          /* per unit, this pass */
    int *unshard_done;        /* per unit, this pass */
    int *run_act;             /* per walk step: activations buffer */
    int *ckpt_input;          /* per module: checkpoint input buffer */
    int *recomputed;          /* per module: region recomputed this pass */
    int *region_w_first;      /* per module: first walk step of its region */
    int *region_w_last;       /* per module: last walk step of its region */

    int *limiter;             /* FIFO of free events (op ids) */
    int lim_head, lim_tail;
    size_t lim_cap;

    struct buf_info {
        enum sched_stream pool;
        enum mem_category cat;
        uint64_t bytes;
    } *bufs;                  /* per buffer id, for its free */
    size_t cap_bufs;

    size_t n_dep_pool, cap_dep_pool;  /* used and allocated in
                                         s->dep_pool */

    int b_orig, b_param, b_reduce;
    int sharded;              /* not NO_SHARD */
    int shard_buf;            /* the persistent fp32 shards, or -1 */
    uint64_t *shard_off;      /* per unit: byte offset in shard_buf */

    int *run_sac;             /* per walk step: selective-op kept outputs */
    struct ddp_state *ddp;    /* DistributedDataParallel, or NULL */
    struct fsdp2_state *f2;   /* fully_shard (sched_fsdp2.c), or NULL */
    int stream_ordered;       /* frees need no event (FSDP2): free_buf */
};

int unit_has_handle(const struct builder *b, int u);
/* Append an op on stream; a GPU op takes the stream's pending waits. */
struct sched_op *emit(struct builder *b, enum sched_op_kind kind,
                      enum sched_stream stream, int unit);
void wait_event(struct builder *b, enum sched_stream stream, int dep);
void wait_stream(struct builder *b, enum sched_stream stream,
                 enum sched_stream other);
int alloc_buf(struct builder *b, enum sched_stream pool,
              enum mem_category cat, double bytes, int unit);
void free_buf(struct builder *b, int buffer, int last_use, int unit);
void free_buf_after(struct builder *b, int buffer, int last_use, int unit);
struct sched_op *emit_copy(struct builder *b, enum sched_op_kind kind,
                           enum sched_stream st, int unit, double bytes,
                           int in, int out);
void from_shard(struct builder *b, struct sched_op *op, int u);
/* OP copies ELEMS elements of FROM bytes into TO bytes each (a dtype
 * cast, Tensor.to or copy_): mark the ones eager PyTorch of the run's
 * release converts on its dynamic-cast path (torch_version.h). */
void mark_cast(const struct builder *b, struct sched_op *op, double elems,
               int from, int to);
/* Forward and backward of one walk RUN step, with their activations. */
void forward_run(struct builder *b, int w);
void backward_run(struct builder *b, int w);
void free_region_inputs(struct builder *b);
void optimizer_step(struct builder *b, int *opt_state);
/* COUNT fp32 values all-reduced over the shard group: the op's id. */
int fp32_all_reduce(struct builder *b, int count);

/* FSDP2: every step of the run (sched_fsdp2.c). */
void fsdp2_steps(struct builder *b);

#endif
