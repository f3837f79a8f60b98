/*
 * check_fsdp2.c: FSDP2 (fully_shard, --fsdp-version 2) schedules, with the
 * values worked out by hand from doc/fsdp-semantics.md §13.
 *
 * tests/data/fsdp2-odd.ini on a 4-rank group (test-2x4, one node), bf16
 * parameters (reduce dtype bf16, the param dtype):
 *
 *   root: embed (7, 6) and head weight (7, 6): each ceil(7/4) = 2 rows of
 *         6 per rank, 12, padded 48; 96 padded, shard 24, 84 parameters.
 *   block: up.weight (5, 6): 2 rows of 6, 48 padded; up.bias (5): 2, 8;
 *         down.weight (6, 5): 2 rows of 5, 40; down.bias (6): 2, 8;
 *         104 padded, shard 26, 71 parameters.  (One FlatParameter would
 *         pad 71 to 72.)
 *
 * tiny-llama (5 groups: root 512256 parameters, 4 layers of 791040; every
 * dim 0 divides 4 and 8, so no padding) for the counts and memory.
 */
#include "testutil.h"
#include "cost.h"
#include "xalloc.h"
#include "check_main.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#define ODD "--model @fsdp2-odd.ini --topology test-2x4 --nodes 1 " \
            "--fsdp-version 2 --param-dtype bf16 "
#define TINY "--model tiny-llama --topology test-2x4 --fsdp-version 2 " \
             "--param-dtype bf16 "
#define LAYER_NUMEL 791040.0
#define ROOT_NUMEL 512256.0

static void
run_ok(struct tu_run *t, const char *args, int simulate)
{
    char *cause = NULL;
    char *full = NULL;
    const char *at = strstr(args, "@");
    if (at != NULL) {
        /* "@NAME" stands for tests/data/NAME */
        const char *end = strchr(at, ' ');
        size_t n = end ? (size_t)(end - at - 1) : strlen(at + 1);
        char name[64];
        ck_assert(n < sizeof name);
        memcpy(name, at + 1, n);
        name[n] = '\0';
        const char *path = tu_data_path(name);
        size_t len = strlen(args) + strlen(path) + 1;
        full = malloc(len);
        snprintf(full, len, "%.*s%s%s", (int)(at - args), args, path,
                 end ? end : "");
        args = full;
    }
    int rc = tu_run(t, args, simulate, &cause);
    ck_assert_msg(rc == 0, "%s: %s", args, cause ? cause : "");
    free(full);
}

/* The collectives of iteration 1, in issue order. */
static int
collectives(const struct sched *s, const struct sched_op **out, int max)
{
    int n = 0;
    for (int i = 0; i < s->n_ops && n < max; i++)
        if (s->ops[i].iter == 1 && sched_op_is_collective(&s->ops[i]))
            out[n++] = &s->ops[i];
    return n;
}

/* The most bytes of category C live at once in iteration 1 (in phase
 * PHASE, or any with ANY_PHASE), replaying the allocations and frees in
 * issue order: FSDP2's frees take no event, so this is what
 * torch.cuda.memory_allocated() would show for C. */
#define ANY_PHASE (-1)

static double
live_peak_in(const struct sched *s, enum mem_category c, int phase)
{
    double live = 0, peak = 0;
    for (int i = 0; i < s->n_ops; i++) {
        const struct sched_op *op = &s->ops[i];
        if (op->cat != c)
            continue;
        if (op->kind == OP_ALLOC)
            live += (double)op->bytes;
        else if (op->kind == OP_FREE)
            live -= (double)op->bytes;
        if (op->iter == 1 && (phase == ANY_PHASE || (int)op->phase == phase)
            && live > peak)
            peak = live;
    }
    return peak;
}

static double
live_peak(const struct sched *s, enum mem_category c)
{
    return live_peak_in(s, c, ANY_PHASE);
}

/* Collectives of KIND in iteration 1 issued before the first op of KIND2
 * for unit U2 in phase PHASE. */
static int
issued_before(const struct sched *s, enum sched_op_kind kind,
              enum sched_phase phase, enum sched_op_kind kind2, int u2)
{
    int n = 0;
    for (int i = 0; i < s->n_ops; i++) {
        const struct sched_op *op = &s->ops[i];
        if (op->iter != 1 || op->phase != phase)
            continue;
        if (op->kind == kind2 && op->unit == u2)
            return n;
        n += op->kind == kind;
    }
    return -1;
}

/* Ops of KIND in iteration 1, micro-batch MICRO, phase PHASE. */
static int
count_micro(const struct sched *s, int micro, enum sched_phase phase,
            enum sched_op_kind kind)
{
    int n = 0;
    for (int i = 0; i < s->n_ops; i++)
        n += s->ops[i].iter == 1 && s->ops[i].micro == micro
             && s->ops[i].phase == phase && s->ops[i].kind == kind;
    return n;
}

START_TEST(test_fsdp2_per_parameter_padding_bytes)
{
    /* All-gather bytes = padded numel x 2 (bf16): root 96 x 2 = 192,
     * block 104 x 2 = 208; the reduce-scatter the same in the reduce
     * dtype.  Issue order (§13.3, §13.4): forward root, b0, b1; backward
     * b1 (prefetched by the root's pre-backward), b0 (prefetched by b1's),
     * then RS b1, RS b0 and the root's RS from the final callback. */
    struct tu_run t;
    run_ok(&t, ODD, 0);
    const struct sched *s = t.r.sched;
    ck_assert_int_eq(s->units[0].padded_numel, 96);
    ck_assert_int_eq(s->units[0].shard_numel, 24);
    ck_assert_int_eq(s->units[1].padded_numel, 104);
    ck_assert_int_eq(s->units[1].shard_numel, 26);
    const struct sched_op *c[16];
    int n = collectives(s, c, 16);
    ck_assert_int_eq(n, 8);
    static const enum sched_op_kind kind[8] = {
        OP_ALLGATHER, OP_ALLGATHER, OP_ALLGATHER, OP_ALLGATHER, OP_ALLGATHER,
        OP_REDUCESCATTER, OP_REDUCESCATTER, OP_REDUCESCATTER};
    static const int unit[8] = {0, 1, 2, 2, 1, 2, 1, 0};
    static const int bytes[8] = {192, 208, 208, 208, 208, 208, 208, 192};
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(c[i]->kind, kind[i]);
        ck_assert_int_eq(c[i]->unit, unit[i]);
        ck_assert_int_eq((int)c[i]->bytes, bytes[i]);
        ck_assert_int_eq(c[i]->pg, PG_SHARD);
        /* bf16 gradients are averaged by NCCL (§13.7). */
        ck_assert_int_eq(c[i]->redop,
                         kind[i] == OP_REDUCESCATTER ? REDOP_AVG
                                                     : REDOP_SUM);
    }
    tu_free(&t);
}
END_TEST

START_TEST(test_fsdp2_copy_kernels)
{
    /* A block's copy kernels (bytes read + written), iteration 1:
     *   copy-in cast fp32 -> bf16 of the shard: 26 x (4 + 2) = 156, CI;
     *   all_gather_copy_in into the flat output: 26 x 2 x 2 = 104, CI;
     *   split_with_sizes_copy copy-out: 104 x 2 x 2 = 416, C;
     *   chunk_cat of the gradients into the RS input: 71 x 2 + 104 x 2 =
     *   350, C;
     *   RS output to the fp32 sharded gradient: 26 x (2 + 4) = 156, RS.
     * Of the two casts only the gradient's upcast, 26 elements, takes
     * eager PyTorch's dynamic-cast path (torch_version.h): the copy-in
     * cast is _foreach_copy_'s, vectorized, and with CPU offload .to's,
     * dynamic only before 2.6. */
    struct tu_run t;
    run_ok(&t, ODD, 0);
    const struct sched *s = t.r.sched;
    int ci156 = 0, ci104 = 0, co416 = 0, cc350 = 0, rs156 = 0;
    for (int i = 0; i < s->n_ops; i++) {
        const struct sched_op *op = &s->ops[i];
        if (op->iter != 1 || op->kind != OP_CAST || op->unit != 1)
            continue;
        ci156 += op->stream == STREAM_PU && op->bytes == 156
                 && op->cast_elems == 0;
        ci104 += op->stream == STREAM_PU && op->bytes == 104;
        co416 += op->stream == STREAM_C && op->bytes == 416;
        cc350 += op->stream == STREAM_C && op->bytes == 350;
        rs156 += op->stream == STREAM_P && op->bytes == 156
                 && op->cast_elems == 26;
    }
    /* Two unshards (forward and backward), one reduction. */
    ck_assert_int_eq(ci156, 2);
    ck_assert_int_eq(ci104, 2);
    ck_assert_int_eq(co416, 2);
    ck_assert_int_eq(cc350, 1);
    ck_assert_int_eq(rs156, 1);
    ck_assert_str_eq(sched_stream_label(s, STREAM_PU), "CI");
    ck_assert_str_eq(sched_stream_label(s, STREAM_U), "AG");
    tu_free(&t);
    const char *offload[2] = {"--cpu-offload --torch-version 2.5",
                              "--cpu-offload --torch-version 2.6"};
    for (int r = 0; r < 2; r++) {
        char *args = xasprintf(ODD "%s", offload[r]);
        run_ok(&t, args, 0);
        free(args);
        int marked = 0;
        for (int i = 0; i < t.r.sched->n_ops; i++) {
            const struct sched_op *op = &t.r.sched->ops[i];
            marked += op->iter == 1 && op->kind == OP_CAST && op->unit == 1
                      && op->stream == STREAM_PU && op->bytes == 156
                      && op->cast_elems == 26;
        }
        ck_assert_int_eq(marked, r == 0 ? 2 : 0);
        tu_free(&t);
    }
}
END_TEST

START_TEST(test_fsdp2_prefetch_order)
{
    /* Implicit prefetch.  Forward: the copy-in of group k+2 waits on the
     * copy-out of group k (the deferred free, §13.3 step 3a), so b1's
     * first copy-in op depends on the root's copy-out.  Backward: b0's
     * all-gather (prefetched in b1's pre-backward) is issued before b1's
     * gradient kernels, and b1's reduce-scatter after them. */
    struct tu_run t;
    run_ok(&t, ODD, 0);
    const struct sched *s = t.r.sched;
    int root_co = -1, b1_ci = -1, b0_bwd_ag = -1, b1_bwd = -1, b1_rs = -1;
    for (int i = 0; i < s->n_ops; i++) {
        const struct sched_op *op = &s->ops[i];
        if (op->iter != 1)
            continue;
        if (op->phase == PHASE_FORWARD && op->kind == OP_CAST
            && op->stream == STREAM_C && op->unit == 0 && root_co < 0)
            root_co = i;
        if (op->phase == PHASE_FORWARD && op->kind == OP_CAST
            && op->stream == STREAM_PU && op->unit == 2 && b1_ci < 0)
            b1_ci = i;
        if (op->phase == PHASE_BACKWARD && op->kind == OP_ALLGATHER
            && op->unit == 1)
            b0_bwd_ag = i;
        if (op->phase == PHASE_BACKWARD && op->kind == OP_BACKWARD
            && op->unit == 2 && b1_bwd < 0)
            b1_bwd = i;
        if (op->kind == OP_REDUCESCATTER && op->unit == 2)
            b1_rs = i;
    }
    ck_assert_int_ge(root_co, 0);
    ck_assert_int_ge(b1_ci, 0);
    ck_assert_int_eq(s->ops[b1_ci].n_deps, 1);
    ck_assert_int_eq(s->ops[b1_ci].deps[0], root_co);
    ck_assert_int_lt(b0_bwd_ag, b1_bwd);
    ck_assert_int_lt(b1_bwd, b1_rs);
    tu_free(&t);
}
END_TEST

START_TEST(test_fsdp2_reshard_after_forward)
{
    /* Not given (fully_shard's None): 5 forward all-gathers, 4 in
     * backward (the root keeps its parameters, _lazy_init).  True, given:
     * the root too reshards, 5 in backward.  False: none in backward.  2
     * (a 2-rank post-forward mesh on a 4-rank group): the backward
     * gathers run on the post-forward communicator with the same bytes
     * (the root's too, 4 layers and the root). */
    struct tu_run a, b, c, d;
    run_ok(&d, TINY "--nodes 1 --reshard-after-forward true", 0);
    ck_assert_int_eq(tu_count_on(d.r.sched, 1, OP_ALLGATHER, PG_SHARD,
                                 STREAM_U), 10);
    tu_free(&d);
    run_ok(&a, TINY "--nodes 1", 0);
    run_ok(&b, TINY "--nodes 1 --reshard-after-forward false", 0);
    run_ok(&c, TINY "--nodes 1 --reshard-after-forward 2", 0);
    ck_assert_int_eq(tu_count_on(a.r.sched, 1, OP_ALLGATHER, PG_SHARD,
                                 STREAM_U), 9);
    ck_assert_int_eq(tu_count_on(b.r.sched, 1, OP_ALLGATHER, PG_SHARD,
                                 STREAM_U), 5);
    ck_assert_int_eq(tu_count_on(c.r.sched, 1, OP_ALLGATHER, PG_SHARD,
                                 STREAM_U), 5);
    ck_assert_int_eq(tu_count_on(c.r.sched, 1, OP_ALLGATHER, PG_POST_FORWARD,
                           STREAM_U), 5);
    for (int i = 0; i < c.r.sched->n_ops; i++)
        if (c.r.sched->ops[i].pg == PG_POST_FORWARD)
            ck_assert_int_eq((int)c.r.sched->ops[i].bytes,
                             (int)((c.r.sched->ops[i].unit ? LAYER_NUMEL
                                                           : ROOT_NUMEL)
                                   * 2));
    tu_free(&a);
    tu_free(&b);
    tu_free(&c);
    /* _get_post_forward_mesh_info reads an int equal to the shard group
     * (4) as True: 10 all-gathers, none on a post-forward mesh.  (Its
     * int 1, False, cannot be written: "1" is a boolean true here.) */
    run_ok(&a, TINY "--nodes 1 --reshard-after-forward 4", 0);
    ck_assert_int_eq(tu_count_on(a.r.sched, 1, OP_ALLGATHER, PG_SHARD,
                                 STREAM_U), 10);
    ck_assert_int_eq(a.r.sched->post_forward_size, 0);
    tu_free(&a);
}
END_TEST

START_TEST(test_fsdp2_memory_peak_reshard)
{
    /* Unsharded parameters are per-parameter tensors on the compute
     * stream, freed at reshard with no event (§13.2, §13.10).
     * reshard_after_forward=False: at the end of forward every group is
     * unsharded, (512256 + 4 x 791040) x 2 = 7352832 bytes.  True: the
     * root (kept) and one layer at a time, since the next layer's
     * tensors are allocated at its copy-out, after the previous layer's
     * reshard (forward) or post-backward (backward, the prefetch gathers
     * into the flat buffer): (512256 + 791040) x 2 = 2606592 bytes. */
    struct tu_run a, b;
    run_ok(&a, TINY "--reshard-after-forward false", 1);
    run_ok(&b, TINY, 1);
    ck_assert_int_eq((int)live_peak(a.r.sched, MEM_UNSHARDED_PARAMS),
                     (int)((ROOT_NUMEL + 4 * LAYER_NUMEL) * 2));
    ck_assert_int_eq((int)live_peak(b.r.sched, MEM_UNSHARDED_PARAMS),
                     (int)((ROOT_NUMEL + LAYER_NUMEL) * 2));
    ck_assert(a.met.mem.peak_allocated > b.met.mem.peak_allocated);
    tu_free(&a);
    tu_free(&b);
}
END_TEST

START_TEST(test_fsdp2_hsdp_all_reduce)
{
    /* --dp-replicate 2 on 2 nodes x 4: shard group 4, replicate 2; each
     * group's reduce-scatter output (shard 791040 / 4 = 197760 bf16,
     * 395520 bytes for a layer) is all-reduced on the AR stream over the
     * replicate communicator, averaged. */
    struct tu_run t;
    run_ok(&t, TINY "--dp-replicate 2", 1);
    const struct sched *s = t.r.sched;
    ck_assert_int_eq(s->shard_size, 4);
    ck_assert_int_eq(s->replicate_size, 2);
    ck_assert_int_eq(tu_count_on(s, 1, OP_ALLREDUCE, PG_REPLICATE, STREAM_A),
                     5);
    int layer_ar = 0;
    for (int i = 0; i < s->n_ops; i++) {
        const struct sched_op *op = &s->ops[i];
        if (op->iter == 1 && op->kind == OP_ALLREDUCE && op->unit == 1) {
            ck_assert_int_eq((int)op->bytes, 395520);
            ck_assert_int_eq(op->redop, REDOP_AVG);
            layer_ar++;
        }
    }
    ck_assert_int_eq(layer_ar, 1);
    tu_free(&t);
}
END_TEST

START_TEST(test_fsdp2_gradient_sync_off)
{
    /* set_requires_gradient_sync(False) on 3 of 4 micro-batches: only
     * the last backward reduce-scatters (5 RS, not 20); every backward
     * still all-gathers (4 each). */
    struct tu_run a, b;
    run_ok(&a, TINY "--grad-accum 4 --no-sync", 1);
    run_ok(&b, TINY "--grad-accum 4", 1);
    ck_assert_int_eq(tu_count(a.r.sched, 1, OP_REDUCESCATTER), 5);
    ck_assert_int_eq(tu_count(b.r.sched, 1, OP_REDUCESCATTER), 20);
    ck_assert_int_eq(tu_count(a.r.sched, 1, OP_ALLGATHER), 4 * 9);
    /* Unsynced: every group's bf16 gradients live across micro-batches. */
    ck_assert_int_eq((int)live_peak(a.r.sched, MEM_GRAD_UNSHARDED),
                     (int)((ROOT_NUMEL + 4 * LAYER_NUMEL) * 2));
    tu_free(&a);
    tu_free(&b);
}
END_TEST

START_TEST(test_fsdp2_offload_and_fp16)
{
    /* CPUOffloadPolicy: each unshard copies the fp32 shard to the GPU
     * (H2D on the copy-in stream), each reduction the fp32 sharded
     * gradient back (D2H), and the optimizer runs on the host.  fp16
     * gradients are summed (ReduceOp.SUM, divided around it). */
    struct tu_run t, h;
    run_ok(&t, TINY "--cpu-offload", 1);
    ck_assert_int_eq(tu_count_on(t.r.sched, 1, OP_H2D, PG_NONE, STREAM_PU), 9);
    ck_assert_int_eq(tu_count(t.r.sched, 1, OP_D2H), 5);
    tu_free(&t);
    run_ok(&h, "--model tiny-llama --topology test-2x4 --fsdp-version 2 "
               "--param-dtype fp16", 0);
    for (int i = 0; i < h.r.sched->n_ops; i++)
        if (h.r.sched->ops[i].kind == OP_REDUCESCATTER)
            ck_assert_int_eq(h.r.sched->ops[i].redop, REDOP_SUM);
    tu_free(&h);
}
END_TEST

/* Float8 all-gather (torchao enable_fsdp_float8_all_gather) on tiny-llama
 * over 8 H100s: a layer's seven Linear weights (q, k, v, o 256 x 256;
 * gate, up 688 x 256; down 256 x 688; every dim a multiple of 16 and of
 * 8, so no padding) are 4 x 65536 + 3 x 176128 = 790528 elements, its
 * two norms 2 x 256.  In bf16 a layer gathers 791040 x 2 = 1582080 bytes;
 * with float8 weights 790528 x 1 + 512 x 2 = 791552 (half, but for the
 * norms).  The root (embedding, final norm, and lm_head, which is left in
 * bf16 by name) is unchanged.  Each layer gathers twice a step (forward,
 * and backward after resharding): 8 of each size.  After the optimizer,
 * the 28 weights' amaxes are all-reduced: 28 x 4 = 112 bytes. */
START_TEST(test_fsdp2_float8_all_gather_bytes)
{
#define H100 "--model tiny-llama --topology dgx-h100 --nodes 1 " \
             "--fsdp-version 2 --param-dtype bf16 --float8 tensorwise "
    struct tu_run t, g;
    run_ok(&t, H100, 0);
    run_ok(&g, H100 "--float8-all-gather", 0);
    int bf16 = 0, fp8 = 0, amax = 0;
    for (int i = 0; i < t.r.sched->n_ops; i++) {
        const struct sched_op *op = &t.r.sched->ops[i];
        bf16 += op->iter == 1 && op->kind == OP_ALLGATHER
                && op->bytes == 1582080;
    }
    for (int i = 0; i < g.r.sched->n_ops; i++) {
        const struct sched_op *op = &g.r.sched->ops[i];
        fp8 += op->iter == 1 && op->kind == OP_ALLGATHER
               && op->bytes == 791552;
        amax += op->iter == 1 && op->kind == OP_ALLREDUCE
                && op->bytes == 112;
    }
    ck_assert_int_eq(bf16, 8);
    ck_assert_int_eq(fp8, 8);
    ck_assert_int_eq(amax, 1);
    tu_free(&t);
    tu_free(&g);
#undef H100
}
END_TEST

static void
free_runs(struct tu_run *r, int n)
{
    for (int i = 0; i < n; i++)
        tu_free(&r[i]);
}

/* For each unit u with expect[u] >= 0: that many all-gathers are issued
 * in iteration 1 before u's first KIND op of PHASE. */
static void
gathers_before(const struct tu_run *t, enum sched_phase phase,
               enum sched_op_kind kind, const int expect[5])
{
    for (int u = 0; u < 5; u++)
        if (expect[u] >= 0)
            ck_assert_int_eq(issued_before(t->r.sched, OP_ALLGATHER, phase,
                                           kind, u), expect[u]);
}

/* The most all-gather buffer bytes live during PHASE of iteration 1. */
static int
ag_peak(const struct tu_run *t, enum sched_phase phase)
{
    return (int)live_peak_in(t->r.sched, MEM_AG_BUFFER, (int)phase);
}

/* fp32 on one node (4 ranks): no copy-in cast temporary, so the
 * all-gather buffers are the flat outputs alone, a layer's 791040 x 4 =
 * 3164160 bytes, the root's 512256 x 4 = 2049024. */
#define TINY32 "--model tiny-llama --topology test-2x4 --nodes 1 " \
               "--fsdp-version 2 "
#define LAYER_AG32 (LAYER_NUMEL * 4)

START_TEST(test_fsdp2_forward_prefetch_list)
{
    /* set_modules_to_forward_prefetch(next 2 groups) on every group
     * (FSDPState._pre_forward): the root's pre-forward gathers itself,
     * then units 1 and 2, all before the root's first compute; unit 1's
     * adds unit 3 (2 is pending), unit 2's unit 4.  PyTorch's record
     * llama_f2_prefetch2_w8: AG0 AG1 AG2 AG3 F1 AG4 F2 ...  Implicit
     * (no list): one all-gather before the root's compute, two before
     * unit 1's.  Nothing more is gathered: 9 a step either way.
     *
     * Memory, forward: implicit, the deferred output of group k and the
     * new one of k+1, 2 layers = 6328320 bytes.  With the list, at unit
     * k's pre-forward, after its copy-out: its own deferred output and
     * the pending k+1 and k+2, 3 layers = 9492480 (N + 1 outputs; the
     * root's 2049024 + 2 layers is less).  The per-parameter unsharded
     * tensors are made at copy-out, so they do not change: the root and
     * one layer, (512256 + 791040) x 4 = 5213184. */
    struct tu_run r[2];
    run_ok(&r[0], TINY32, 0);
    run_ok(&r[1], TINY32 "--forward-prefetch 2", 0);
    static const int implicit[5] = {1, 2, -1, -1, -1};
    static const int listed[5] = {3, 4, 5, -1, -1};
    gathers_before(&r[0], PHASE_FORWARD, OP_FORWARD, implicit);
    gathers_before(&r[1], PHASE_FORWARD, OP_FORWARD, listed);
    ck_assert_int_eq(tu_count(r[0].r.sched, 1, OP_ALLGATHER), 9);
    ck_assert_int_eq(tu_count(r[1].r.sched, 1, OP_ALLGATHER), 9);
    ck_assert_int_eq(ag_peak(&r[0], PHASE_FORWARD), (int)(2 * LAYER_AG32));
    ck_assert_int_eq(ag_peak(&r[1], PHASE_FORWARD), (int)(3 * LAYER_AG32));
    for (int k = 0; k < 2; k++)
        ck_assert_int_eq((int)live_peak(r[k].r.sched, MEM_UNSHARDED_PARAMS),
                         (int)((ROOT_NUMEL + LAYER_NUMEL) * 4));
    free_runs(r, 2);
}
END_TEST

START_TEST(test_fsdp2_backward_prefetch_list)
{
    /* set_modules_to_backward_prefetch(next 2 groups to run backward)
     * replaces _backward_prefetch (FSDPState._pre_backward): the root's
     * pre-backward gathers units 4 and 3 before the root's first
     * gradient kernel, unit 4's adds unit 2 before its own (record
     * llama_f2_prefetch2_w8: AG4 AG3 AG2 B4 ...).  Implicit: 1 and 2.
     * --backward-prefetch 1, the singleton list of the group before,
     * issues what the implicit prefetch does.
     *
     * Memory, backward: implicit, one pending output (each group's is
     * dropped after its copy-out, before the prefetch), a layer =
     * 3164160 bytes; with the list of 2, two (units k-1 and k-2 pending
     * after unit k's copy-out), 6328320; of 3, three, 9492480. */
    struct tu_run r[4];
    run_ok(&r[0], TINY32, 0);
    run_ok(&r[1], TINY32 "--backward-prefetch 2", 0);
    run_ok(&r[2], TINY32 "--backward-prefetch 3", 0);
    run_ok(&r[3], TINY32 "--backward-prefetch 1", 0);
    static const int before[3][5] = {{1, -1, -1, -1, 2},
                                     {2, -1, -1, -1, 3},
                                     {3, -1, -1, -1, 4}};
    for (int k = 0; k < 3; k++) {
        gathers_before(&r[k], PHASE_BACKWARD, OP_BACKWARD, before[k]);
        ck_assert_int_eq(tu_count(r[k].r.sched, 1, OP_ALLGATHER), 9);
        ck_assert_int_eq(ag_peak(&r[k], PHASE_BACKWARD),
                         (int)((k + 1) * LAYER_AG32));
    }
    ck_assert_int_eq(r[0].r.sched->n_ops, r[3].r.sched->n_ops);
    for (int i = 0; i < r[0].r.sched->n_ops; i++) {
        ck_assert_int_eq(r[0].r.sched->ops[i].kind, r[3].r.sched->ops[i].kind);
        ck_assert_int_eq(r[0].r.sched->ops[i].unit, r[3].r.sched->ops[i].unit);
    }
    free_runs(r, 4);
}
END_TEST

START_TEST(test_fsdp2_reshard_after_backward)
{
    /* set_reshard_after_backward(False) on micro-batches 0 and 1 of 3
     * (the last reshards for the optimizer).  Micro-batch 0 gathers as
     * usual: 5 in forward, 4 in backward.  Its post-backwards keep every
     * group unsharded, so micro-batch 1's forward gathers nothing (the
     * unshards are no-ops), the layers reshard after its forward
     * (reshard_after_forward is still True) and its backward gathers 4;
     * micro-batch 2 the same: 9 + 4 + 4 = 17 a step instead of 27
     * (records llama_f2_accum3_rab_w8, llama_f2_accum3_nosync_rab_w8).
     * With reshard_after_forward False too only micro-batch 0's forward
     * gathers: 5.  The reductions follow set_requires_gradient_sync
     * alone: 15 a step, or 5 with --no-sync.
     *
     * Memory (bf16): at the start of micro-batch 1 every group is
     * unsharded, (512256 + 4 x 791040) x 2 = 7352832 bytes, where
     * resharding holds the root and one layer, 2606592. */
    struct tu_run r[4];
    run_ok(&r[0], TINY "--grad-accum 3", 1);
    run_ok(&r[1], TINY "--grad-accum 3 --reshard-after-backward false", 1);
    run_ok(&r[2], TINY "--grad-accum 3 --no-sync --reshard-after-backward "
                    "false", 0);
    run_ok(&r[3], TINY "--grad-accum 3 --no-sync --reshard-after-backward "
                    "false --reshard-after-forward false", 0);
    ck_assert_int_eq(tu_count(r[0].r.sched, 1, OP_ALLGATHER), 27);
    ck_assert_int_eq(tu_count(r[1].r.sched, 1, OP_ALLGATHER), 17);
    ck_assert_int_eq(tu_count(r[2].r.sched, 1, OP_ALLGATHER), 17);
    ck_assert_int_eq(tu_count(r[3].r.sched, 1, OP_ALLGATHER), 5);
    for (int mb = 0; mb < 3; mb++) {
        ck_assert_int_eq(count_micro(r[1].r.sched, mb, PHASE_FORWARD,
                                     OP_ALLGATHER), mb == 0 ? 5 : 0);
        ck_assert_int_eq(count_micro(r[1].r.sched, mb, PHASE_BACKWARD,
                                     OP_ALLGATHER), 4);
    }
    ck_assert_int_eq(tu_count(r[1].r.sched, 1, OP_REDUCESCATTER), 15);
    ck_assert_int_eq(tu_count(r[2].r.sched, 1, OP_REDUCESCATTER), 5);
    ck_assert_int_eq((int)live_peak(r[0].r.sched, MEM_UNSHARDED_PARAMS),
                     (int)((ROOT_NUMEL + LAYER_NUMEL) * 2));
    ck_assert_int_eq((int)live_peak(r[1].r.sched, MEM_UNSHARDED_PARAMS),
                     (int)((ROOT_NUMEL + 4 * LAYER_NUMEL) * 2));
    /* The same all-gathers, fewer of them: less time gathering.  (The
     * step's peak need not rise: the extra tensors live from the end of
     * a backward to the end of the next forward's layer, while the
     * activations are few; here the end of forward, where both hold the
     * root and the last layer, stays the peak.) */
    ck_assert(r[1].met.allgather_s < r[0].met.allgather_s);
    ck_assert(r[1].met.mem.peak_allocated >= r[0].met.mem.peak_allocated);
    free_runs(r, 4);
}
END_TEST

START_TEST(test_fsdp2_reshard_after_forward_last)
{
    /* The last group to finish forward but for the root (unit 4, the
     * last layer) with reshard_after_forward=False keeps its parameters:
     * 5 forward all-gathers, 3 in backward (the root's pre-backward
     * prefetch of unit 4 is a no-op; unit 4's pre-backward gathers unit
     * 3, before unit 4's gradient kernels; record llama_f2_raflast_w8:
     * AG3 B4 ...).  With --reshard-after-forward true the root reshards
     * too: 5 + 4.  With 2 (a 2-rank post-forward mesh on the 4 ranks):
     * the root and three layers re-gather on it, unit 4 not.  The
     * unsharded peak stays the root and one layer: unit 4's tensors are
     * what the last forward step holds anyway. */
    struct tu_run r[4];
    run_ok(&r[0], TINY32 "--reshard-after-forward-last false", 1);
    run_ok(&r[1], TINY32 "--reshard-after-forward true "
                      "--reshard-after-forward-last false", 0);
    run_ok(&r[2], TINY32 "--reshard-after-forward 2 "
                      "--reshard-after-forward-last false", 0);
    run_ok(&r[3], TINY32, 1);
    ck_assert_int_eq(tu_count(r[0].r.sched, 1, OP_ALLGATHER), 8);
    ck_assert_int_eq(issued_before(r[0].r.sched, OP_ALLGATHER, PHASE_BACKWARD,
                                   OP_BACKWARD, 4), 1);
    for (int i = 0; i < r[0].r.sched->n_ops; i++) {
        const struct sched_op *op = &r[0].r.sched->ops[i];
        ck_assert(!(op->kind == OP_ALLGATHER && op->phase == PHASE_BACKWARD
                    && op->unit == 4));
    }
    ck_assert_int_eq(tu_count(r[1].r.sched, 1, OP_ALLGATHER), 9);
    ck_assert_int_eq(tu_count_on(r[2].r.sched, 1, OP_ALLGATHER,
                                 PG_POST_FORWARD, STREAM_U), 4);
    ck_assert_int_eq(tu_count_on(r[2].r.sched, 1, OP_ALLGATHER, PG_SHARD,
                                 STREAM_U), 5);
    ck_assert_int_eq((int)live_peak(r[0].r.sched, MEM_UNSHARDED_PARAMS),
                     (int)((ROOT_NUMEL + LAYER_NUMEL) * 4));
    ck_assert(r[0].met.allgather_s < r[3].met.allgather_s);
    free_runs(r, 4);
}
END_TEST

START_TEST(test_fsdp2_torchtitan_groups)
{
    /* --fsdp2-groups torchtitan on tiny-llama, 4 ranks (§13.13): units
     * root (no parameters left), embed_tokens (1000 x 256 = 256000),
     * the 4 layers, and [model.norm, lm_head] as one group: 256 +
     * 1000 x 256 = 256256, every dim 0 divisible by 4 (no padding).
     * The group is entered at model.norm and left after lm_head: one
     * all-gather of 256256 x 2 bytes (bf16) in forward, none in backward
     * (not resharded: apply_fsdp's [norm, output] False); the embedding
     * and the layers reshard, so backward gathers the 4 layers and the
     * embedding (prefetched by layer 0's pre-backward): 6 + 5
     * all-gathers, 6 reduce-scatters, the root's none (record
     * llama_f2_titan_w8).  torchtitan-blocks: 5 units (the root keeps
     * embed_tokens, norm and lm_head, 512256), the root resharded and
     * gathered again in backward, the last layer kept: 5 + 4 all-gathers
     * (record llama_f2_titanblocks_w8).  The reshard flags still
     * override: --reshard-after-forward-last true gathers [norm, lm_head]
     * again, 6 + 6. */
    struct tu_run r[3];
    run_ok(&r[0], TINY "--nodes 1 --fsdp2-groups torchtitan", 0);
    run_ok(&r[1], TINY "--nodes 1 --fsdp2-groups torchtitan-blocks", 0);
    run_ok(&r[2], TINY "--nodes 1 --fsdp2-groups torchtitan "
                       "--reshard-after-forward-last true", 0);
    const struct sched *s = r[0].r.sched;
    ck_assert_int_eq(s->n_units, 7);
    ck_assert_int_eq(s->units[0].numel, 0);
    ck_assert_int_eq(s->units[1].numel, 256000);
    ck_assert_int_eq(s->units[6].numel, 256256);
    ck_assert_int_eq(s->units[6].padded_numel, 256256);
    ck_assert_str_eq(s->units[6].mod->cls, "LlamaRMSNorm");
    ck_assert_str_eq(s->units[6].last_mod->cls, "Linear");
    ck_assert_int_eq(count_micro(s, 0, PHASE_FORWARD, OP_ALLGATHER), 6);
    ck_assert_int_eq(count_micro(s, 0, PHASE_BACKWARD, OP_ALLGATHER), 5);
    ck_assert_int_eq(count_micro(s, 0, PHASE_BACKWARD, OP_REDUCESCATTER), 6);
    for (int i = 0; i < s->n_ops; i++) {
        const struct sched_op *op = &s->ops[i];
        ck_assert(!(sched_op_is_collective(op) && op->unit == 0));
        if (op->iter == 1 && op->kind == OP_ALLGATHER && op->unit == 6)
            ck_assert_int_eq((int)op->bytes, 256256 * 2);
    }
    ck_assert_int_eq(r[1].r.sched->n_units, 5);
    ck_assert_int_eq(r[1].r.sched->units[0].numel, (int)ROOT_NUMEL);
    ck_assert_int_eq(count_micro(r[1].r.sched, 0, PHASE_FORWARD,
                                 OP_ALLGATHER), 5);
    ck_assert_int_eq(count_micro(r[1].r.sched, 0, PHASE_BACKWARD,
                                 OP_ALLGATHER), 4);
    ck_assert_int_eq(count_micro(r[2].r.sched, 0, PHASE_BACKWARD,
                                 OP_ALLGATHER), 6);
    free_runs(r, 3);
}
END_TEST

START_TEST(test_fsdp2_no_unshard_in_backward)
{
    /* torchtitan's groups on 4 ranks, bf16 (§13.9.5): with
     * set_unshard_in_backward(False) on the embedding group (unit 1),
     * layer 0's pre-backward prefetch of it and its own pre-backward
     * return at once: 4 backward all-gathers instead of 5 (record
     * llama_f2_titan_nounshard_emb_w8), none of unit 1, and its
     * unsharded parameters (256000 x 2 bytes) never allocated in
     * backward; its reduce-scatter stays (6).  A block, whose norms and
     * Linears backward reads, is refused (test_fsdp2_errors). */
    struct tu_run r[2];
    run_ok(&r[0], TINY "--nodes 1 --fsdp2-groups torchtitan", 0);
    run_ok(&r[1], TINY "--nodes 1 --fsdp2-groups torchtitan "
                       "--no-unshard-in-backward model.embed_tokens", 0);
    const struct sched *s = r[1].r.sched;
    ck_assert(s->units[1].no_unshard_in_backward);
    ck_assert(!s->units[2].no_unshard_in_backward);
    ck_assert_int_eq(count_micro(r[0].r.sched, 0, PHASE_BACKWARD,
                                 OP_ALLGATHER), 5);
    ck_assert_int_eq(count_micro(s, 0, PHASE_BACKWARD, OP_ALLGATHER), 4);
    ck_assert_int_eq(count_micro(s, 0, PHASE_BACKWARD, OP_REDUCESCATTER), 6);
    for (int i = 0; i < s->n_ops; i++) {
        const struct sched_op *op = &s->ops[i];
        if (op->phase != PHASE_BACKWARD || op->unit != 1)
            continue;
        ck_assert_int_ne(op->kind, OP_ALLGATHER);
        ck_assert(!(op->kind == OP_ALLOC
                    && op->cat == MEM_UNSHARDED_PARAMS));
    }
    free_runs(r, 2);
}
END_TEST

/* The units of iteration 1's all-gathers in phase PHASE, in issue order. */
static int
allgather_units(const struct sched *s, enum sched_phase phase, int *out,
                int max)
{
    int n = 0;
    for (int i = 0; i < s->n_ops && n < max; i++)
        if (s->ops[i].iter == 1 && s->ops[i].phase == phase
            && s->ops[i].kind == OP_ALLGATHER)
            out[n++] = s->ops[i].unit;
    return n;
}

START_TEST(test_fsdp2_prefetch_lists_any_shape)
{
    /* Units: root 0, layers 0-3 = units 1-4 (§13.9.1).
     * Forward, the root listing layer 1 then layer 0 and layer 1 listing
     * layer 3: the root's pre-forward gathers itself, then 2, 1; layer 0
     * and layer 1 find theirs pending, layer 1 lists 4; layer 2 gathers
     * itself last: 0 2 1 4 3 (record llama_f2_fwdlists_w8).
     * Backward, the root listing layers 2 and 3, layer 3 layer 0, layer 2
     * an empty list: the root (kept unsharded) prefetches 3, 4; layer 3
     * lists 1; layer 2's empty list keeps the implicit prefetch of layer
     * 1 (unit 2); layer 1's implicit one finds layer 0 pending: 3 4 1 2
     * (record llama_f2_bwdlists_w8).  A list replaces --forward-prefetch
     * N's for its group only: with N = 1 as well, the root and layer 1
     * keep their own lists, layer 0's next-group list finds layer 1
     * pending and layer 2's finds layer 3 pending: 0 2 1 4 3 again. */
    struct tu_run r[3];
    run_ok(&r[0], TINY "--nodes 1 --modules-to-forward-prefetch "
                       "tiny-llama=model.layers.1,model.layers.0 "
                       "--modules-to-forward-prefetch "
                       "model.layers.1=model.layers.3", 0);
    run_ok(&r[1], TINY "--nodes 1 --modules-to-backward-prefetch "
                       "tiny-llama=model.layers.2,model.layers.3 "
                       "--modules-to-backward-prefetch "
                       "model.layers.3=model.layers.0 "
                       "--modules-to-backward-prefetch model.layers.2=", 0);
    run_ok(&r[2], TINY "--nodes 1 --forward-prefetch 1 "
                       "--modules-to-forward-prefetch "
                       "tiny-llama=model.layers.1,model.layers.0 "
                       "--modules-to-forward-prefetch "
                       "model.layers.1=model.layers.3", 0);
    int u[8];
    static const int fwd[5] = {0, 2, 1, 4, 3}, bwd[4] = {3, 4, 1, 2};
    ck_assert_int_eq(allgather_units(r[0].r.sched, PHASE_FORWARD, u, 8), 5);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(u[i], fwd[i]);
    ck_assert_int_eq(allgather_units(r[1].r.sched, PHASE_BACKWARD, u, 8), 4);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(u[i], bwd[i]);
    ck_assert_int_eq(allgather_units(r[2].r.sched, PHASE_FORWARD, u, 8), 5);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(u[i], fwd[i]);
    ck_assert_int_eq(r[0].r.sched->units[0].n_prefetch[0], 2);
    ck_assert_int_eq(r[0].r.sched->units[1].n_prefetch[0], -1);
    ck_assert_int_eq(r[1].r.sched->units[3].n_prefetch[1], 0);
    free_runs(r, 3);
}
END_TEST

START_TEST(test_fsdp2_group_post_forward_meshes)
{
    /* Each block its own reshard_after_forward on 8 ranks (test-2x4, 2
     * nodes x 4), bf16 (§13.9.3): layer 0 (unit 1) 4, layer 1 (unit 2)
     * 2, layer 2 (unit 3) false, layer 3 (unit 4) the default True.
     * After forward layer 0 keeps 791040 x 2 / 4 = 395520 bytes, layer 1
     * 791040 x 2 / 2 = 791040 (less than the whole 1582080); backward gathers layer 3 over the shard
     * group (8 ranks, 2 nodes), layer 1 over a 2-rank mesh and layer 0
     * over a 4-rank one (one node each), layer 2 not at all: 3 backward
     * all-gathers (record llama_f2_groupraf_4_2_false_w8, with its
     * pg_size 8, 2, 4).  --reshard-after-forward 2 with
     * --reshard-after-forward-last 4: the last layer on a 4-rank mesh,
     * the others on 2-rank ones. */
    struct tu_run r[2];
    run_ok(&r[0], TINY "--group-reshard-after-forward model.layers.0=4 "
                       "--group-reshard-after-forward model.layers.1=2 "
                       "--group-reshard-after-forward model.layers.2=false",
           0);
    run_ok(&r[1], TINY "--reshard-after-forward 2 "
                       "--reshard-after-forward-last 4", 0);
    const struct sched *s = r[0].r.sched;
    ck_assert_int_eq(s->post_forward_sizes[1], 4);
    ck_assert_int_eq(s->post_forward_sizes[2], 2);
    ck_assert_int_eq(s->post_forward_sizes[3], 0);
    ck_assert_int_eq(s->post_forward_sizes[4], 0);
    int keep[2] = {0, 0}, ag = 0;
    for (int i = 0; i < s->n_ops; i++) {
        const struct sched_op *op = &s->ops[i];
        if (op->iter != 1)
            continue;
        if (op->kind == OP_ALLOC && op->cat == MEM_UNSHARDED_PARAMS
            && op->phase == PHASE_FORWARD && (op->unit == 1 || op->unit == 2)
            && op->bytes < 1582080)
            keep[op->unit - 1] = (int)op->bytes;
        if (op->kind != OP_ALLGATHER || op->phase != PHASE_BACKWARD)
            continue;
        ag++;
        struct coll_group g;
        cost_op_group(s, op, &g);
        ck_assert_int_ne(op->unit, 3);
        ck_assert_int_eq(g.ranks, op->unit == 1 ? 4 : op->unit == 2 ? 2 : 8);
        ck_assert_int_eq(g.nodes, op->unit == 4 || op->unit == 0 ? 2 : 1);
    }
    ck_assert_int_eq(ag, 3);
    ck_assert_int_eq(keep[0], 395520);
    ck_assert_int_eq(keep[1], 791040);
    for (int u = 1; u <= 4; u++)
        ck_assert_int_eq(r[1].r.sched->post_forward_sizes[u], u == 4 ? 4 : 2);
    free_runs(r, 2);
}
END_TEST

START_TEST(test_fsdp2_post_forward_communicator_per_call)
{
    /* One DGX H100 (8 GPUs behind NVSwitch), NCCL 2.28 with
     * NCCL_ALGO=allgather:nvls, so every all-gather runs NVLS and each
     * communicator that gathers maps its NVLS buffers once
     * (coll_nvls_buffer_bytes): 16 channels x 2 x 8 steps x 128 KiB x
     * the node's GPUs in it, plus 16 x 2 x 64 B credits a GPU, each
     * rounded up to 2 MiB.  The shard group (8 GPUs): 256 MiB + 2 MiB =
     * 258 MiB.  A 4-rank post-forward mesh: 128 MiB + 2 MiB = 130 MiB; a
     * 2-rank one 64 MiB + 2 MiB = 66 MiB.  Reduce-scatters (AVG) run
     * Ring and take none.  Every fully_shard call given an int builds a
     * DeviceMesh, and with it process groups, of its own
     * (_get_post_forward_mesh_info), so meshes of one size do not share:
     *   layers 0 and 1 at 4: 258 + 2 x 130 = 518 MiB, 3 communicators
     *     (one per size would be 388 MiB, 2);
     *   layers 0 at 4, 1 at 2: 258 + 130 + 66 = 454 MiB, 3;
     *   all five groups at 4 (the root too, given explicitly):
     *     258 + 5 x 130 = 908 MiB, 6;
     * each communicator once however many steps gather on it.  The
     * reduce-scatters' Ring connects the shard group's 32 channels too,
     * 12 MiB a GPU each (a P2P receiver's LL + LL128 + Simple + 4 KiB,
     * 10 MiB, and a sender's 4 KiB, 2 MiB: coll_conn_buffer_bytes),
     * 384 MiB; the post-forward communicators run NVLS alone and
     * connect nothing else. */
#define H100 "--model tiny-llama --topology dgx-h100 --fsdp-version 2 " \
             "--param-dtype bf16 --nccl-algo allgather:nvls "
    struct tu_run r[3];
    run_ok(&r[0], H100 "--group-reshard-after-forward model.layers.0=4 "
                       "--group-reshard-after-forward model.layers.1=4", 1);
    run_ok(&r[1], H100 "--group-reshard-after-forward model.layers.0=4 "
                       "--group-reshard-after-forward model.layers.1=2", 1);
    run_ok(&r[2], H100 "--reshard-after-forward 4", 1);
    const long long mib = 1LL << 20;
    const long long bytes[3] = {518 * mib, 454 * mib, 908 * mib};
    const int comms[3] = {3, 3, 6};
    for (int i = 0; i < 3; i++) {
        ck_assert_double_eq(r[i].res.cost.nccl_nvls_bytes,
                            (double)bytes[i]);
        ck_assert_double_eq(r[i].res.cost.nccl_conn_bytes,
                            (double)(384 * mib));
        ck_assert_int_eq(r[i].res.cost.nvls_communicators, comms[i]);
        ck_assert_int_eq(r[i].met.mem.outside_bytes, bytes[i] + 384 * mib);
    }
    free_runs(r, 3);
#undef H100
}
END_TEST

/* Bytes of category C live when iteration 1's micro-batch MICRO begins. */
static double
live_at_micro(const struct sched *s, enum mem_category c, int micro)
{
    double live = 0;
    for (int i = 0; i < s->n_ops; i++) {
        const struct sched_op *op = &s->ops[i];
        if (op->iter == 1 && op->micro == micro)
            break;
        if (op->cat == c)
            live += op->kind == OP_ALLOC  ? (double)op->bytes
                    : op->kind == OP_FREE ? -(double)op->bytes
                                          : 0;
    }
    return live;
}

START_TEST(test_fsdp2_requires_all_reduce)
{
    /* HSDP (replicate 2 x shard 4), bf16 gradients, 3 micro-batches,
     * set_requires_all_reduce(False) on the first two (foreach_reduce):
     * every micro-batch reduce-scatters (15 a step), the all-reduce runs
     * on the last only (5, not 15; record
     * llama_f2_hsdp_2x4_accum3_noar_w8).  The first output is kept as
     * the partial, micro-batch 1 adds its output into it and micro-batch
     * 2 adds it into its own before the all-reduce, each add reading two
     * shards and writing one on the RS stream: a layer's shard is
     * 791040 / 4 = 197760 elements, 3 x 197760 x 2 = 1186560 bytes, 2 a
     * layer a step.  Between micro-batches every group's partial lives:
     * (512256 + 4 x 791040) / 4 x 2 = 1838208 bytes of reduce-scatter
     * buffers, none without.  Without replicas the setting changes
     * nothing (no all-reduce group). */
    struct tu_run r[3];
    run_ok(&r[0], TINY "--dp-replicate 2 --grad-accum 3", 1);
    run_ok(&r[1], TINY "--dp-replicate 2 --grad-accum 3 "
                       "--requires-all-reduce false", 1);
    run_ok(&r[2], TINY "--grad-accum 3 --requires-all-reduce false", 0);
    ck_assert_int_eq(tu_count(r[0].r.sched, 1, OP_ALLREDUCE), 15);
    ck_assert_int_eq(tu_count(r[1].r.sched, 1, OP_ALLREDUCE), 5);
    ck_assert_int_eq(tu_count(r[1].r.sched, 1, OP_REDUCESCATTER), 15);
    for (int mb = 0; mb < 3; mb++)
        ck_assert_int_eq(count_micro(r[1].r.sched, mb, PHASE_BACKWARD,
                                     OP_ALLREDUCE), mb == 2 ? 5 : 0);
    int adds = 0;
    for (int i = 0; i < r[1].r.sched->n_ops; i++) {
        const struct sched_op *op = &r[1].r.sched->ops[i];
        adds += op->iter == 1 && op->kind == OP_CAST
                && op->stream == STREAM_P && op->bytes == 1186560;
    }
    ck_assert_int_eq(adds, 8);
    for (int mb = 1; mb < 3; mb++) {
        ck_assert_int_eq((int)live_at_micro(r[1].r.sched, MEM_RS_BUFFER, mb),
                         (int)((ROOT_NUMEL + 4 * LAYER_NUMEL) / 4 * 2));
        ck_assert_int_eq((int)live_at_micro(r[0].r.sched, MEM_RS_BUFFER, mb),
                         0);
    }
    ck_assert(r[1].met.allreduce_s < r[0].met.allreduce_s);
    ck_assert_int_eq(tu_count(r[2].r.sched, 1, OP_ALLREDUCE), 0);
    ck_assert_int_eq(tu_count(r[2].r.sched, 1, OP_REDUCESCATTER), 15);
    free_runs(r, 3);
}
END_TEST

START_TEST(test_fsdp2_errors)
{
    static const char *const bad[] = {
        TINY "--sharding-strategy SHARD_GRAD_OP",
        TINY "--use-orig-params",
        TINY "--dp-replicate 3",
        TINY "--nodes 1 --reshard-after-forward 3",
        TINY "--reshard-after-forward 16",
        "--model tiny-llama --topology test-2x4 --reshard-after-forward false",
        "--model tiny-llama --topology test-2x4 --dp-replicate 2",
        TINY "--strategy ddp",
        TINY "--group-reshard-after-forward model.layers.0=3",
        TINY "--group-reshard-after-forward model.layers.0",
        TINY "--group-reshard-after-forward model.layers.0=maybe",
        TINY "--group-reshard-after-forward model.layers.0.mlp=2",
        "--model tiny-llama --topology test-2x4 "
        "--group-reshard-after-forward model.layers.0=2",
        TINY "--nodes 1 --reshard-after-forward-last 3",
        TINY "--forward-prefetch 65",
        TINY "--backward-prefetch BACKWARD_POST",
        "--model tiny-llama --topology test-2x4 --forward-prefetch 2",
        "--model tiny-llama --topology test-2x4 --backward-prefetch 2",
        "--model tiny-llama --topology test-2x4 "
        "--reshard-after-backward false",
        "--model tiny-llama --topology test-2x4 "
        "--reshard-after-forward-last false",
        "--model tiny-llama --topology test-2x4 --requires-all-reduce false",
        "--model tiny-llama --topology test-2x4 --fsdp2-groups torchtitan",
        TINY "--fsdp2-groups titan",
        TINY "--fsdp2-groups torchtitan --wrap model.layers.0",
        TINY "--fsdp2-groups torchtitan-blocks --auto-wrap-policy size",
        TINY "--fsdp2-groups torchtitan --no-unshard-in-backward "
        "model.layers.0",
        TINY "--fsdp2-groups torchtitan --no-unshard-in-backward "
        "model.layers.0.mlp",
        TINY "--no-unshard-in-backward nosuch",
        "--model tiny-llama --topology test-2x4 --no-unshard-in-backward "
        "model.embed_tokens",
        TINY "--modules-to-forward-prefetch model.layers.0",
        TINY "--modules-to-forward-prefetch =model.layers.1",
        TINY "--modules-to-forward-prefetch model.layers.0=model.layers.1.mlp",
        TINY "--modules-to-backward-prefetch model.layers.9=model.layers.1",
        "--model tiny-llama --topology test-2x4 "
        "--modules-to-backward-prefetch model.layers.1=model.layers.0",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct tu_run t;
        char *cause = NULL;
        int rc = tu_run(&t, bad[i], 0, &cause);
        ck_assert_msg(rc != 0, "accepted: %s", bad[i]);
        ck_assert(cause != NULL && strlen(cause) > 0);
        free(cause);
        tu_free(&t);
    }
}
END_TEST

START_TEST(test_fsdp2_deterministic)
{
    struct tu_run a, b;
    run_ok(&a, TINY "--dp-replicate 2 --activation-checkpointing full", 1);
    run_ok(&b, TINY "--dp-replicate 2 --activation-checkpointing full", 1);
    ck_assert_int_eq(a.r.sched->n_ops, b.r.sched->n_ops);
    ck_assert(a.met.step_time_s == b.met.step_time_s);
    ck_assert(a.met.mem.peak_allocated == b.met.mem.peak_allocated);
    tu_free(&a);
    tu_free(&b);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("fsdp2");
    TCase *core = tcase_create("core");
    tcase_set_timeout(core, 60);
    tcase_add_test(core, test_fsdp2_per_parameter_padding_bytes);
    tcase_add_test(core, test_fsdp2_copy_kernels);
    tcase_add_test(core, test_fsdp2_prefetch_order);
    tcase_add_test(core, test_fsdp2_reshard_after_forward);
    tcase_add_test(core, test_fsdp2_memory_peak_reshard);
    tcase_add_test(core, test_fsdp2_hsdp_all_reduce);
    tcase_add_test(core, test_fsdp2_gradient_sync_off);
    tcase_add_test(core, test_fsdp2_offload_and_fp16);
    tcase_add_test(core, test_fsdp2_deterministic);
    tcase_add_test(core, test_fsdp2_float8_all_gather_bytes);
    tcase_add_test(core, test_fsdp2_forward_prefetch_list);
    tcase_add_test(core, test_fsdp2_backward_prefetch_list);
    tcase_add_test(core, test_fsdp2_reshard_after_backward);
    tcase_add_test(core, test_fsdp2_reshard_after_forward_last);
    tcase_add_test(core, test_fsdp2_requires_all_reduce);
    tcase_add_test(core, test_fsdp2_torchtitan_groups);
    tcase_add_test(core, test_fsdp2_no_unshard_in_backward);
    tcase_add_test(core, test_fsdp2_prefetch_lists_any_shape);
    tcase_add_test(core, test_fsdp2_group_post_forward_meshes);
    tcase_add_test(core, test_fsdp2_post_forward_communicator_per_call);
    suite_add_tcase(s, core);
    TCase *errors = tcase_create("errors");
    tcase_add_test(errors, test_fsdp2_errors);
    suite_add_tcase(s, errors);
    return tu_main(s);
}
