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

/* The most bytes of category C live at once in iteration 1, replaying the
 * allocations and frees in issue order: FSDP2's frees take no event, so
 * this is what torch.cuda.memory_allocated() would show for C. */
static double
live_peak(const struct sched *s, enum mem_category c)
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
        if (op->iter == 1 && live > peak)
            peak = live;
    }
    return peak;
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
     *   RS output to the fp32 sharded gradient: 26 x (2 + 4) = 156, RS. */
    struct tu_run t;
    run_ok(&t, ODD, 0);
    const struct sched *s = t.r.sched;
    int ci156 = 0, ci104 = 0, co416 = 0, cc350 = 0, rs156 = 0;
    for (int i = 0; i < s->n_ops; i++) {
        const struct sched_op *op = &s->ops[i];
        if (op->iter != 1 || op->kind != OP_CAST || op->unit != 1)
            continue;
        ci156 += op->stream == STREAM_PU && op->bytes == 156;
        ci104 += op->stream == STREAM_PU && op->bytes == 104;
        co416 += op->stream == STREAM_C && op->bytes == 416;
        cc350 += op->stream == STREAM_C && op->bytes == 350;
        rs156 += op->stream == STREAM_P && op->bytes == 156;
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

START_TEST(test_fsdp2_errors)
{
    static const char *const bad[] = {
        TINY "--sharding-strategy SHARD_GRAD_OP",
        TINY "--use-orig-params",
        TINY "--dp-replicate 3",
        TINY "--nodes 1 --reshard-after-forward 3",
        TINY "--reshard-after-forward 8",
        "--model tiny-llama --topology test-2x4 --reshard-after-forward false",
        "--model tiny-llama --topology test-2x4 --dp-replicate 2",
        TINY "--strategy ddp",
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
    suite_add_tcase(s, core);
    TCase *errors = tcase_create("errors");
    tcase_add_test(errors, test_fsdp2_errors);
    suite_add_tcase(s, errors);
    return tu_main(s);
}
