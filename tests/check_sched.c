/*
 * check_sched.c: one test per FSDP knob, on tiny-llama (4 decoder layers,
 * 5 units: the root with embedding, final norm and head, 512256
 * parameters, and 4 layers of 791040) and the test-2x4 cluster.  Each test
 * states the rule of doc/fsdp-semantics.md it checks.
 */
#include "mem.h"
#include "testutil.h"
#include "xalloc.h"
#include "check_main.h"
#include "layer.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BASE "--model tiny-llama --topology test-2x4 "
#define LAYER_NUMEL 791040.0
#define ROOT_NUMEL 512256.0

static void
run_ok(struct tu_run *t, const char *args, int simulate)
{
    char *cause = NULL;
    int rc = tu_run(t, args, simulate, &cause);
    ck_assert_msg(rc == 0, "%s: %s", args, cause ? cause : "");
}

START_TEST(test_sched_full_shard_collectives)
{
    /* FULL_SHARD: forward all-gathers every unit (5), backward re-gathers
     * the 4 layers (the root keeps its parameters, §3.3), one
     * reduce-scatter per unit (5), all on the shard group's communicator,
     * AG on stream U and RS on P. */
    struct tu_run t;
    run_ok(&t, BASE, 0);
    const struct sched *s = t.r.sched;
    ck_assert_int_eq(s->n_units, 5);
    ck_assert_int_eq(tu_count_on(s, 1, OP_ALLGATHER, PG_SHARD, STREAM_U), 9);
    ck_assert_int_eq(tu_count_on(s, 1, OP_REDUCESCATTER, PG_SHARD,
                                 STREAM_P), 5);
    ck_assert_int_eq(tu_count(s, 1, OP_ALLREDUCE), 0);
    tu_free(&t);
}
END_TEST

START_TEST(test_sched_shard_grad_op_keeps_params)
{
    /* SHARD_GRAD_OP: parameters stay unsharded from forward until
     * post-backward (§5), so backward issues no all-gather: 5 AG per step;
     * at the start of backward all units are unsharded at once, so the
     * peak holds at least every unit's padded fp32 parameters:
     * (512256 + 4 x 791040) x 4 bytes (both divide by W = 8). */
    struct tu_run t;
    run_ok(&t, BASE "--sharding-strategy SHARD_GRAD_OP", 1);
    ck_assert_int_eq(tu_count(t.r.sched, 1, OP_ALLGATHER), 5);
    ck_assert_int_eq(tu_count(t.r.sched, 1, OP_REDUCESCATTER), 5);
    ck_assert(t.met.mem.peak_by_cat[MEM_UNSHARDED_PARAMS]
              >= (ROOT_NUMEL + 4 * LAYER_NUMEL) * 4);
    tu_free(&t);
    struct tu_run f;
    run_ok(&f, BASE, 1);
    ck_assert(f.met.mem.peak_by_cat[MEM_UNSHARDED_PARAMS]
              < (ROOT_NUMEL + 4 * LAYER_NUMEL) * 4);
    tu_free(&f);
}
END_TEST

START_TEST(test_sched_no_shard_all_reduces)
{
    /* NO_SHARD: no all-gather, no reduce-scatter; one all-reduce of the
     * whole gradient per unit on P over all 8 ranks. */
    struct tu_run t;
    run_ok(&t, BASE "--sharding-strategy NO_SHARD", 0);
    const struct sched *s = t.r.sched;
    ck_assert_int_eq(tu_count(s, 1, OP_ALLGATHER), 0);
    ck_assert_int_eq(tu_count(s, 1, OP_REDUCESCATTER), 0);
    ck_assert_int_eq(tu_count_on(s, 1, OP_ALLREDUCE, PG_SHARD, STREAM_P), 5);
    tu_free(&t);
}
END_TEST

START_TEST(test_sched_hybrid_shard_replicates_on_stream_a)
{
    /* HYBRID_SHARD on 2 nodes x 4: shard group 4 (a node), replicate group
     * 2; after each RS an all-reduce of the shard on stream A over the
     * replicate communicator (§4.2 e, §5). */
    struct tu_run t;
    run_ok(&t, BASE "--sharding-strategy HYBRID_SHARD", 1);
    const struct sched *s = t.r.sched;
    ck_assert_int_eq(s->shard_size, 4);
    ck_assert_int_eq(s->replicate_size, 2);
    ck_assert_int_eq(tu_count_on(s, 1, OP_ALLREDUCE, PG_REPLICATE, STREAM_A),
                     5);
    ck_assert_int_eq(tu_count(s, 1, OP_ALLGATHER), 9);
    tu_free(&t);
}
END_TEST

START_TEST(test_sched_no_sync_drops_reduce_scatters)
{
    /* 4 micro-batches inside no_sync: only the last backward
     * reduce-scatters (5 RS); without no_sync every backward does (20).
     * With no_sync the unsharded bf16 gradients of every unit live across
     * micro-batches: at least (512256 + 4 x 791040) x 2 bytes. */
    struct tu_run a, b;
    run_ok(&a, BASE "--param-dtype bf16 --grad-accum 4 --no-sync", 1);
    run_ok(&b, BASE "--param-dtype bf16 --grad-accum 4", 1);
    ck_assert_int_eq(tu_count(a.r.sched, 1, OP_REDUCESCATTER), 5);
    ck_assert_int_eq(tu_count(b.r.sched, 1, OP_REDUCESCATTER), 20);
    ck_assert(a.met.mem.peak_by_cat[MEM_GRAD_UNSHARDED]
              >= (ROOT_NUMEL + 4 * LAYER_NUMEL) * 2);
    ck_assert(a.met.mem.peak_allocated > b.met.mem.peak_allocated);
    /* All-gathers still happen in every micro-batch (FULL_SHARD frees
     * after backward even inside no_sync, §7.1): 4 x 9. */
    ck_assert_int_eq(tu_count(a.r.sched, 1, OP_ALLGATHER), 36);
    tu_free(&a);
    tu_free(&b);
}
END_TEST

START_TEST(test_sched_flat_gradient_transients)
{
    /* §4.2: the toy model (10491904 parameters, one unit: the root) in
     * fp32 on 3 ranks, so the FlatParameter does not divide by the world
     * size.  During backward each parameter's gradient waits in
     * SplitWithSizesBackward's input buffer; the node's cat writes the
     * flat gradient while they live: 2 x 10491904 x 4 = 83935232 bytes of
     * unsharded gradient (83935232 is a multiple of 512, as the
     * allocator rounds).  _get_reduce_scatter_tensors then pads to
     * 3 x ceil(10491904 / 3) = 10491906 elements (41967624 bytes, 41968128
     * rounded) and allocates the 3497302-element output shard (13989208
     * bytes: a new 14 MiB segment, whose 690688-byte rest is under the
     * 1 MiB split threshold, so the block is 14680064) while the hook
     * still holds the flat gradient (41967616): at the reduce-scatter's
     * issue 41967616 + 41968128 = 83935744 bytes of gradient and
     * reduce-scatter buffers live at once.  The output shard is already
     * fp32 and there is no sharded gradient yet, so
     * _accumulate_sharded_grad assigns it as the sharded gradient (no
     * copy): its 14680064 bytes count as grad_sharded from the start. */
    struct tu_run t;
    run_ok(&t, "--model toy --topology test-2x4 --nodes 1 "
           "--gpus-per-node 3 --auto-wrap-policy none", 1);
    int n;
    const struct mem_sample *ms = mem_samples(t.res.mem, &n);
    int64_t grad = 0, both = 0, shard = 0;
    for (int i = 0; i < n; i++) {
        int64_t g = ms[i].by_cat[MEM_GRAD_UNSHARDED];
        int64_t r = ms[i].by_cat[MEM_RS_BUFFER];
        int64_t h = ms[i].by_cat[MEM_GRAD_SHARDED];
        grad = g > grad ? g : grad;
        both = g + r > both ? g + r : both;
        shard = h > shard ? h : shard;
    }
    ck_assert_int_eq(grad, 83935232);
    ck_assert_int_eq(both, 83935744);
    ck_assert_int_eq(shard, 14680064);
    tu_free(&t);
}
END_TEST

/* The copy ops (OP_CAST) of step ITER, micro-batch MICRO, in the
 * backward on stream ST: their count, and their bytes in *BYTES. */
static int
backward_copies(const struct sched *s, int iter, int micro,
                enum sched_stream st, double *bytes)
{
    int n = 0;
    *bytes = 0;
    for (int i = 0; i < s->n_ops; i++) {
        const struct sched_op *o = &s->ops[i];
        if (o->iter == iter && o->micro == micro && o->kind == OP_CAST
            && o->phase == PHASE_BACKWARD && o->stream == st) {
            n++;
            *bytes += (double)o->bytes;
        }
    }
    return n;
}

START_TEST(test_sched_no_shard_reduces_in_place)
{
    /* §4.2, _reduce_grad_no_shard: the toy model (10491904 parameters,
     * one unit) in fp32 under NO_SHARD on 2 ranks.  The all-reduce runs
     * on flat_param.grad itself and, already fp32, it stays the
     * optimizer's gradient: on stream P only the pre-division (factor 2
     * for DP 2, post-factor 1: one in-place div_, 2 x 10491904 x 4 =
     * 83935232 bytes), no copy; the unit's gradient never lives twice
     * outside the SplitWithSizesBackward cat (parts + flat, 83935232),
     * so the sharded gradient peaks at 41967616 with nothing of the
     * unsharded one beside it. */
    struct tu_run t;
    run_ok(&t, "--model toy --topology test-2x4 --nodes 1 "
           "--gpus-per-node 2 --auto-wrap-policy none "
           "--sharding-strategy NO_SHARD", 1);
    double bytes;
    ck_assert_int_eq(backward_copies(t.r.sched, 1, 0, STREAM_P, &bytes), 1);
    ck_assert_double_eq(bytes, 83935232.0);
    int n;
    const struct mem_sample *ms = mem_samples(t.res.mem, &n);
    int64_t both = 0, shard = 0;
    for (int i = 0; i < n; i++) {
        int64_t g = ms[i].by_cat[MEM_GRAD_UNSHARDED];
        int64_t h = ms[i].by_cat[MEM_GRAD_SHARDED];
        if (h > 0 && g + h > both)
            both = g + h;
        shard = h > shard ? h : shard;
    }
    ck_assert_int_eq(shard, 41967616);
    ck_assert_int_eq(both, 41967616);
    tu_free(&t);

    /* Mixed precision (bf16 compute, fp32 reduce), two synchronised
     * micro-batches.  Micro-batch 0: the hook casts the bf16 gradient
     * to fp32 on P (10491904 x (2 + 4) = 62951424 bytes) and divides it
     * (83935232): two copies.  Micro-batch 1: flat_param.grad is the
     * reduced fp32 gradient, of the unsharded size, so AccumulateGrad
     * adds the new bf16 gradient into it on C, read 2 + read 4 + write 4
     * bytes an element (104919040) after the cat (2 x 20983808 =
     * 41967616), and the hook has nothing to cast: the division only.
     * Both all-reduce the fp32 gradient, 41967616 bytes. */
    run_ok(&t, "--model toy --topology test-2x4 --nodes 1 "
           "--gpus-per-node 2 --auto-wrap-policy none "
           "--sharding-strategy NO_SHARD --param-dtype bf16 "
           "--reduce-dtype fp32 --grad-accum 2", 0);
    ck_assert_int_eq(backward_copies(t.r.sched, 1, 0, STREAM_P, &bytes), 2);
    ck_assert_double_eq(bytes, 62951424.0 + 83935232.0);
    ck_assert_int_eq(backward_copies(t.r.sched, 1, 1, STREAM_P, &bytes), 1);
    ck_assert_double_eq(bytes, 83935232.0);
    ck_assert_int_eq(backward_copies(t.r.sched, 1, 1, STREAM_C, &bytes), 2);
    ck_assert_double_eq(bytes, 41967616.0 + 104919040.0);
    for (int i = 0; i < t.r.sched->n_ops; i++) {
        const struct sched_op *o = &t.r.sched->ops[i];
        if (o->iter == 1 && o->kind == OP_ALLREDUCE)
            ck_assert_uint_eq(o->bytes, 41967616);
    }
    tu_free(&t);
}
END_TEST

/* Bytes unit U allocates in iteration 1's forward as activations and
 * frees in its backward: what autograd keeps for it. */
static double
saved_for_backward(const struct sched *s, int u)
{
    double bytes = 0;
    for (int i = 0; i < s->n_ops; i++) {
        const struct sched_op *a = &s->ops[i];
        if (a->kind != OP_ALLOC || a->cat != MEM_ACTIVATIONS || a->iter != 1
            || a->phase != PHASE_FORWARD || a->unit != u)
            continue;
        for (int j = i + 1; j < s->n_ops; j++)
            if (s->ops[j].kind == OP_FREE && s->ops[j].buffer == a->buffer) {
                if (s->ops[j].phase == PHASE_BACKWARD)
                    bytes += (double)a->bytes;
                break;
            }
    }
    return bytes;
}

/* The bytes tests/data/llama-saved-bytes.txt records for LAYER. */
static double
saved_record(const char *layer)
{
    FILE *f = fopen(tu_data_path("llama-saved-bytes.txt"), "r");
    ck_assert_ptr_nonnull(f);
    char line[256], name[64];
    double bytes, found = -1;
    while (fgets(line, sizeof line, f) != NULL)
        if (line[0] != '#' && sscanf(line, "%63s %lf", name, &bytes) == 2
            && strcmp(name, layer) == 0)
            found = bytes;
    fclose(f);
    ck_assert_msg(found >= 0, "%s: not in the record", layer);
    return found;
}

/* What unit 1 (the first layer) of MODEL saves for backward over 2 x 64
 * bf16 tokens, no checkpointing, with EXTRA flags. */
static double
layer_saved(const char *model, const char *extra)
{
    char *args = xasprintf("--model %s --topology test-2x4 --seq-len 64 "
                           "--micro-batch 2 --param-dtype bf16 %s",
                           model, extra);
    struct tu_run t;
    run_ok(&t, args, 0);
    double bytes = saved_for_backward(t.r.sched, 1);
    tu_free(&t);
    free(args);
    return bytes;
}

START_TEST(test_sched_saved_activations_hf_releases)
{
    /* A Hugging Face attention, 4 heads over 2 KV heads of 64, 2 x 64
     * tokens (T = 128) in bf16, flash: q_proj's input 65,536 (k_proj and
     * v_proj share it).  transformers 5.25: enable_gqa, SDPA keeps q and
     * its output at 4 heads and k and v at 2, 128 x 12 x 64 x 2 =
     * 196,608, and the log-sum-exp 2,048; o_proj's input is the output:
     * 264,192.  4.47: repeat_kv, k and v at 4 heads, 262,144 + 2,048:
     * 329,728.  4.50: repeat_kv and q's contiguous copy, so the output is
     * copied before o_proj, which keeps the copy: 395,264. */
    static const char ini[] =
        "[model]\nname = gqa\nroot = M\nlayer_class = Layer\n"
        "[M]\nlayers = ModuleList(Layer, 1)\n"
        "[Layer]\nq_proj = Linear(256, 256, bias=false)\n"
        "k_proj = Linear(256, 128, bias=false)\n"
        "v_proj = Linear(256, 128, bias=false)\n"
        "core = Attention(heads=4, kv_heads=2, head_dim=64, rope=true)\n"
        "o_proj = Linear(256, 256, bias=false)\n";
    char *path = tu_temp_text(ini);
    char *ext = xasprintf("%s.ini", path);
    ck_assert_int_eq(rename(path, ext), 0);
    ck_assert_double_eq(layer_saved(ext, "--attention flash2"), 264192.0);
    ck_assert_double_eq(layer_saved(ext, "--attention flash2 "
                                         "--transformers-version 4.47"),
                        329728.0);
    ck_assert_double_eq(layer_saved(ext, "--attention flash2 "
                                         "--transformers-version 4.50"),
                        395264.0);
    unlink(ext);
    free(ext);
    free(path);
}
END_TEST

START_TEST(test_sched_saved_activations_match_pytorch)
{
    /* A Llama layer's saved activations are what PyTorch 2.15 keeps, in
     * bytes of distinct storages (tests/data/llama-saved-bytes.txt, made
     * by tests/oracle-tools/saved_bytes.py on CPU), 2 x 64 tokens (T =
     * 128) in bf16.
     *
     * tiny-llama (Hugging Face's layer, hidden 256, 4 heads of 64, ffn
     * 688), SDPA: each RMSNorm its fp32 input, its statistics and its
     * bf16 normalised output, 128 x 256 x 6 + 128 x 4 = 197,120, twice;
     * q_proj's input 65,536 (k_proj and v_proj share it); SDPA q, k, v
     * and its output, 4 x 65,536, and the fp32 log-sum-exp 2,048;
     * o_proj's input is that same output; gate_proj's input 65,536
     * (up_proj shares it); SiLU's input 128 x 688 x 2 = 176,128; the
     * product both factors, 352,256; down_proj's input 176,128:
     * 1,494,016. */
    ck_assert_double_eq(saved_record("hf-sdpa"), 1494016.0);
    ck_assert_double_eq(layer_saved("tiny-llama", "--attention flash2"),
                        1494016.0);
    /* Eager attention (--attention math; tiny-llama's softmax_fp32, as
     * Hugging Face's Llama takes the softmax in fp32): the matmuls keep
     * q, k and v, 3 x 65,536, no output nor log-sum-exp; the softmax its
     * fp32 output, 2 x 4 x 64 x 64 = 32,768 probabilities x 4 = 131,072,
     * the PV product their bf16 cast, 65,536; o_proj's input is the
     * output's copy, 65,536 of its own: 1,494,016 - 4 x 65,536 - 2,048
     * + 3 x 65,536 + 196,608 + 65,536 = 1,688,576. */
    ck_assert_double_eq(saved_record("hf-eager"), 1688576.0);
    ck_assert_double_eq(layer_saved("tiny-llama", "--attention math"),
                        1688576.0);
    /* torchtitan's block (8 heads of 32 over 2 KV heads, ffn 896): the
     * norms as above, 197,120 twice; wq's input 65,536; SDPA runs on
     * repeat_kv's copies, so q, k, v and the output are 128 x 8 x 32 x 2
     * = 65,536 each, with the log-sum-exp 4,096; wo's input is the
     * output; w1's input 65,536; SiLU's 128 x 896 x 2 = 229,376, the
     * product 458,752, w2's 229,376: 1,709,056.  The record has 8,192
     * more: freqs_cis (64 x 16 complex64), one table every block shares,
     * which a model saves once, not per layer. */
    ck_assert_double_eq(saved_record("torchtitan"), 1709056.0 + 8192.0);
    ck_assert_double_eq(layer_saved(tu_data_path("torchtitan-block.ini"),
                                    "--attention flash2"),
                        1709056.0);
    /* FMS's block (8 heads of 32, ffn 896): as torchtitan's with q, k,
     * v at their own width, plus the output's copy before the dense
     * projection, 65,536, and the gathered fp32 rotations, 128 x 16 x 4
     * x 4 = 32,768: 1,807,360.  Selecting FMS's rotary on tiny-llama
     * adds the same two: 65,536 + 128 x 32 x 4 x 4 = 65,536. */
    ck_assert_double_eq(saved_record("fms"), 1807360.0);
    ck_assert_double_eq(layer_saved(tu_data_path("fms-block.ini"),
                                    "--attention flash2"),
                        1807360.0);
    ck_assert_double_eq(layer_saved("tiny-llama",
                                    "--attention flash2 --rotary matrix"),
                        1494016.0 + 65536.0 + 65536.0);
}
END_TEST

START_TEST(test_sched_native_loss_activations)
{
    /* tiny-llama, 1 x 2048 tokens in bf16, the loss on 2048 x 1000
     * logits (L = 2,048,000).  Plain, log_softmax keeps its fp32 output
     * (4 L = 8,192,000 bytes) and the loss holds fp32 temporaries, the
     * logits' copy in forward and two gradients in backward, 3 x 4 L =
     * 24,576,000; native (the logits' own dtype), the output in bf16,
     * 2 L = 4,096,000, and the two backward gradients in bf16, 8,192,000:
     * 20,480,000 bytes fewer activations allocated per step. */
    struct tu_run a, b;
    run_ok(&a, BASE "--param-dtype bf16", 0);
    run_ok(&b, BASE "--param-dtype bf16 --loss native", 0);
    double plain = tu_alloc_bytes(a.r.sched, 1, MEM_ACTIVATIONS);
    double native = tu_alloc_bytes(b.r.sched, 1, MEM_ACTIVATIONS);
    ck_assert_double_eq(plain - native, 20480000.0);
    tu_free(&a);
    tu_free(&b);
}
END_TEST

START_TEST(test_sched_fused_loss_activations)
{
    /* tiny-llama, 1 x 2048 tokens in fp32: the plain loss keeps the fp32
     * log-softmax output, 2048 x 1000 x 4 = 8192000 bytes, and lm_head
     * its input, 2048 x 256 x 4 = 2097152; Liger's fused linear +
     * cross-entropy keeps grad_input and grad_weight instead, (2048 x
     * 256 + 1000 x 256) x 4 = 3121152: 7168000 bytes fewer; nor does it
     * allocate the plain loss's fp32 temporaries, one in forward and two
     * in backward of 8192000 each (layer_transients), 24576000: 31744000
     * bytes fewer activations allocated per step, with the same
     * collectives. */
    struct tu_run a, b;
    run_ok(&a, BASE, 0);
    run_ok(&b, BASE "--loss fused", 0);
    double plain = tu_alloc_bytes(a.r.sched, 1, MEM_ACTIVATIONS);
    double fused = tu_alloc_bytes(b.r.sched, 1, MEM_ACTIVATIONS);
    ck_assert_double_eq(plain - fused, 31744000.0);
    ck_assert_int_eq(tu_count(b.r.sched, 1, OP_REDUCESCATTER),
                     tu_count(a.r.sched, 1, OP_REDUCESCATTER));
    tu_free(&a);
    tu_free(&b);
}
END_TEST

START_TEST(test_sched_shard_grad_op_no_sync_skips_gathers)
{
    /* SHARD_GRAD_OP inside no_sync keeps parameters unsharded between
     * micro-batches (§6.6): only the first micro-batch gathers (5). */
    struct tu_run t;
    run_ok(&t, BASE "--sharding-strategy SHARD_GRAD_OP --grad-accum 4 "
           "--no-sync", 0);
    ck_assert_int_eq(tu_count(t.r.sched, 1, OP_ALLGATHER), 5);
    tu_free(&t);
}
END_TEST

/* Largest number of non-root units whose forward all-gather has started
 * while their forward compute has not finished, in step `iter`. */
static int
max_gathered_in_flight(const struct tu_run *t, int iter)
{
    const struct sched *s = t->r.sched;
    int best = 0;
    for (int i = 0; i < s->n_ops; i++) {
        const struct sched_op *ag = &s->ops[i];
        if (ag->kind != OP_ALLGATHER || ag->iter != iter
            || ag->phase != PHASE_FORWARD || ag->unit == 0)
            continue;
        int64_t t0 = t->res.times[i].start_ns;
        int n = 0;
        for (int j = 0; j < s->n_ops; j++) {
            const struct sched_op *a2 = &s->ops[j];
            if (a2->kind != OP_ALLGATHER || a2->iter != iter
                || a2->phase != PHASE_FORWARD || a2->unit == 0)
                continue;
            int64_t end = 0;
            for (int k = 0; k < s->n_ops; k++)
                if (s->ops[k].kind == OP_FORWARD && s->ops[k].iter == iter
                    && s->ops[k].micro == a2->micro
                    && s->ops[k].unit == a2->unit
                    && t->res.times[k].end_ns > end)
                    end = t->res.times[k].end_ns;
            if (t->res.times[j].start_ns <= t0 && end > t0)
                n++;
        }
        if (n > best)
            best = n;
    }
    return best;
}

START_TEST(test_sched_limit_all_gathers_bounds_inflight)
{
    /* One node, fp32 (10 TFLOPS): compute-bound, the host far ahead.
     * With the rate limiter, in the first step (empty queue) the host
     * cannot issue AG(k) before the compute that preceded unit k-2's free
     * has finished (§3.4, limit 2): at most 2 gathered units in flight.
     * Without it all 4 layers' all-gathers run ahead of compute.  The
     * queue is not reset between steps, so later steps pop older backward
     * events first; the limit still holds the host back: fewer in flight
     * than without it. */
    struct tu_run a, b;
    run_ok(&a, BASE "--nodes 1 --limit-all-gathers true", 1);
    run_ok(&b, BASE "--nodes 1 --limit-all-gathers false", 1);
    ck_assert_int_le(max_gathered_in_flight(&a, 0), 2);
    ck_assert_int_gt(max_gathered_in_flight(&b, 0), 2);
    ck_assert_int_gt(max_gathered_in_flight(&b, 1), 2);
    ck_assert_int_lt(max_gathered_in_flight(&a, 1),
                     max_gathered_in_flight(&b, 1) + 1);
    ck_assert(tu_count(a.r.sched, 1, OP_CPU_WAIT) > 0);
    ck_assert_int_eq(tu_count(b.r.sched, 1, OP_CPU_WAIT), 0);
    tu_free(&a);
    tu_free(&b);
}
END_TEST

START_TEST(test_sched_backward_pre_beats_none_when_comm_bound)
{
    /* Across 2 nodes on one 10 GB/s NIC the step is communication-bound.
     * BACKWARD_PRE queues AG(next) before RS(k) on the communicator;
     * None queues it after RS(k), which waits for k's backward, so the
     * next backward waits for RS(k) + AG(next) (§4.4, §6.2).  PRE must
     * finish strictly earlier, and POST no later than None. */
    struct tu_run pre, post, none;
    run_ok(&pre, BASE "--param-dtype bf16 --backward-prefetch BACKWARD_PRE",
           1);
    run_ok(&post, BASE "--param-dtype bf16 --backward-prefetch BACKWARD_POST",
           1);
    run_ok(&none, BASE "--param-dtype bf16 --backward-prefetch None", 1);
    ck_assert(pre.met.exposed_comm_s > 0);
    ck_assert(pre.met.step_time_s < none.met.step_time_s);
    ck_assert(post.met.step_time_s <= none.met.step_time_s);
    tu_free(&pre);
    tu_free(&post);
    tu_free(&none);
}
END_TEST

/* Index in issue order of the first op of a kind for a unit in a step and
 * phase, or -1. */
static int
first_op(const struct sched *s, int iter, enum sched_phase ph,
         enum sched_op_kind k, int unit)
{
    for (int i = 0; i < s->n_ops; i++)
        if (s->ops[i].iter == iter && s->ops[i].phase == ph
            && s->ops[i].kind == k && s->ops[i].unit == unit)
            return i;
    return -1;
}

START_TEST(test_sched_backward_prefetch_issue_order)
{
    /* Post-forward order is u1..u4 then the root; backward runs u4..u1.
     * PRE and POST both issue AG(u3) before RS(u4) (§4.4); None issues
     * AG(u3) after RS(u4). */
    struct tu_run pre, post, none;
    run_ok(&pre, BASE "--backward-prefetch BACKWARD_PRE", 0);
    run_ok(&post, BASE "--backward-prefetch BACKWARD_POST", 0);
    run_ok(&none, BASE "--backward-prefetch None", 0);
    ck_assert_int_lt(first_op(pre.r.sched, 1, PHASE_BACKWARD, OP_ALLGATHER, 3),
                     first_op(pre.r.sched, 1, PHASE_BACKWARD,
                              OP_REDUCESCATTER, 4));
    ck_assert_int_lt(first_op(post.r.sched, 1, PHASE_BACKWARD, OP_ALLGATHER,
                              3),
                     first_op(post.r.sched, 1, PHASE_BACKWARD,
                              OP_REDUCESCATTER, 4));
    ck_assert_int_gt(first_op(none.r.sched, 1, PHASE_BACKWARD, OP_ALLGATHER,
                              3),
                     first_op(none.r.sched, 1, PHASE_BACKWARD,
                              OP_REDUCESCATTER, 4));
    /* PRE issues AG(u3) before u4's backward kernels; POST after. */
    ck_assert_int_lt(first_op(pre.r.sched, 1, PHASE_BACKWARD, OP_ALLGATHER, 3),
                     first_op(pre.r.sched, 1, PHASE_BACKWARD, OP_BACKWARD,
                              4));
    ck_assert_int_gt(first_op(post.r.sched, 1, PHASE_BACKWARD, OP_ALLGATHER,
                              3),
                     first_op(post.r.sched, 1, PHASE_BACKWARD, OP_BACKWARD,
                              4));
    tu_free(&pre);
    tu_free(&post);
    tu_free(&none);
}
END_TEST

START_TEST(test_sched_forward_prefetch_from_second_step)
{
    /* forward_prefetch issues AG(u2) before u1's forward compute, but only
     * once the order was recorded, i.e. from the second step (§3.5). */
    struct tu_run t;
    run_ok(&t, BASE "--forward-prefetch", 0);
    const struct sched *s = t.r.sched;
    ck_assert_int_gt(first_op(s, 0, PHASE_FORWARD, OP_ALLGATHER, 2),
                     first_op(s, 0, PHASE_FORWARD, OP_FORWARD, 1));
    ck_assert_int_lt(first_op(s, 1, PHASE_FORWARD, OP_ALLGATHER, 2),
                     first_op(s, 1, PHASE_FORWARD, OP_FORWARD, 1));
    tu_free(&t);
}
END_TEST

/* Index of the last op of a kind in iteration it's backward, or -1. */
static int
last_bwd_op(const struct sched *s, int it, enum sched_op_kind k, int unit)
{
    int at = -1;
    for (int i = 0; i < s->n_ops; i++) {
        const struct sched_op *op = &s->ops[i];
        if (op->iter == it && op->phase == PHASE_BACKWARD && op->kind == k
            && (unit < 0 || op->unit == unit))
            at = i;
    }
    return at;
}

START_TEST(test_sched_root_post_backward_last)
{
    /* size policy at 1e6: the root holds only lm_head, its views are made
     * in its pre-forward before anything else, so the autograd engine runs
     * its post-backward last: RS(u0) is the last collective of backward,
     * after RS(u1), with a leafless backward op of u0 just before it. */
    struct tu_run t;
    run_ok(&t, BASE "--seq-len 64 --micro-batch 1 --auto-wrap-policy size "
           "--min-num-params 1e6", 0);
    const struct sched *s = t.r.sched;
    ck_assert_int_eq(s->n_units, 2);
    int rs0 = last_bwd_op(s, 1, OP_REDUCESCATTER, 0);
    int rs1 = last_bwd_op(s, 1, OP_REDUCESCATTER, 1);
    int b0 = last_bwd_op(s, 1, OP_BACKWARD, 0);
    ck_assert_int_gt(rs0, rs1);
    ck_assert_int_gt(b0, rs1);
    ck_assert_int_lt(b0, rs0);
    ck_assert_int_eq(s->ops[b0].leaf_begin, s->ops[b0].leaf_end);
    ck_assert_int_eq(last_bwd_op(s, 1, OP_REDUCESCATTER, -1), rs0);
    tu_free(&t);
}
END_TEST

START_TEST(test_sched_forward_prefetch_moves_post_backward)
{
    /* forward_prefetch from the second step: unit k's views are made in
     * unit k-1's pre-forward, so RS(k) follows unit k-1's backward and
     * the prefetch AG(k-2) of k-1's pre-backward comes before RS(k). */
    struct tu_run t;
    run_ok(&t, BASE "--seq-len 64 --micro-batch 1 --forward-prefetch", 0);
    const struct sched *s = t.r.sched;
    for (int it = 0; it < 2; it++) {
        int rs4 = last_bwd_op(s, it, OP_REDUCESCATTER, 4);
        int ag2 = last_bwd_op(s, it, OP_ALLGATHER, 2);
        int b3 = -1;
        for (int i = 0; i < s->n_ops; i++)
            if (s->ops[i].iter == it && s->ops[i].kind == OP_BACKWARD
                && s->ops[i].unit == 3 && b3 < 0)
                b3 = i;
        if (it == 0) {
            ck_assert_int_lt(rs4, ag2);     /* no forward prefetch yet */
            ck_assert_int_lt(rs4, b3);
        } else {
            ck_assert_int_gt(rs4, ag2);
            ck_assert_int_gt(rs4, b3);
        }
    }
    tu_free(&t);
}
END_TEST

START_TEST(test_sched_reentrant_no_backward_prefetch)
{
    /* Reentrant checkpoint around each layer: the layers' forward ran
     * under no_grad, so no unit is a backward prefetch target: every
     * backward all-gather of layer k (recompute, then pre-backward) comes
     * after RS(k+1), and the recompute is a forward with FSDP's hooks. */
    struct tu_run t;
    run_ok(&t, BASE "--seq-len 64 --micro-batch 1 "
           "--activation-checkpointing reentrant", 0);
    const struct sched *s = t.r.sched;
    for (int k = 1; k < 4; k++) {
        int first_ag = -1;
        for (int i = 0; i < s->n_ops && first_ag < 0; i++)
            if (s->ops[i].iter == 1 && s->ops[i].phase == PHASE_BACKWARD
                && s->ops[i].kind == OP_ALLGATHER && s->ops[i].unit == k)
                first_ag = i;
        ck_assert_int_gt(first_ag, last_bwd_op(s, 1, OP_REDUCESCATTER, k + 1));
    }
    ck_assert_int_ge(last_bwd_op(s, 1, OP_FORWARD, 4), 0);
    ck_assert_int_eq(tu_count(s, 1, OP_RECOMPUTE), 0);
    tu_free(&t);
}
END_TEST

START_TEST(test_sched_hybrid_one_gpu_per_node_falls_back)
{
    /* HYBRID_SHARD on 2 nodes x 1 GPU: the shard group has 1 rank, so
     * FSDP runs NO_SHARD on it: one all-reduce per unit on the shard group,
     * no all-gather, reduce-scatter or replicate all-reduce. */
    struct tu_run t;
    run_ok(&t, BASE "--seq-len 64 --micro-batch 1 --sharding-strategy "
           "HYBRID_SHARD --nodes 2 --gpus-per-node 1", 0);
    const struct sched *s = t.r.sched;
    ck_assert_int_eq(s->shard_size, 1);
    ck_assert_int_eq(s->replicate_size, 1);
    ck_assert_int_eq(tu_count(s, 1, OP_ALLGATHER), 0);
    ck_assert_int_eq(tu_count(s, 1, OP_REDUCESCATTER), 0);
    ck_assert_int_eq(tu_count(s, 1, OP_ALLREDUCE), 5);
    ck_assert_int_eq(tu_count_on(s, 1, OP_ALLREDUCE, PG_REPLICATE, STREAM_A),
                     0);
    tu_free(&t);
}
END_TEST

START_TEST(test_sched_activation_checkpointing)
{
    /* full: one recompute per decoder layer in backward and no extra
     * all-gather (9); reentrant around each unit: a second all-gather per
     * layer in backward (9 + 4 = 13, §10).  Checkpointing lowers the
     * activation peak. */
    struct tu_run none, full, re;
    run_ok(&none, BASE "--param-dtype bf16", 1);
    run_ok(&full, BASE "--param-dtype bf16 --activation-checkpointing full",
           1);
    run_ok(&re, BASE "--param-dtype bf16 --activation-checkpointing reentrant",
           1);
    ck_assert_int_eq(tu_count(full.r.sched, 1, OP_RECOMPUTE), 4);
    ck_assert_int_eq(tu_count(full.r.sched, 1, OP_ALLGATHER), 9);
    ck_assert_int_eq(tu_count(re.r.sched, 1, OP_ALLGATHER), 13);
    ck_assert(full.met.mem.peak_by_cat[MEM_ACTIVATIONS]
              < none.met.mem.peak_by_cat[MEM_ACTIVATIONS]);
    ck_assert(full.met.compute_s > none.met.compute_s);
    tu_free(&none);
    tu_free(&full);
    tu_free(&re);
}
END_TEST

START_TEST(test_sched_cpu_offload_copies)
{
    /* CPUOffload: an H2D copy of the shard before every all-gather, a D2H
     * copy of the gradient after every reduce-scatter, the optimizer on
     * the host, and no fp32 shards or optimizer state on the GPU (§9). */
    struct tu_run t;
    run_ok(&t, BASE "--cpu-offload", 1);
    const struct sched *s = t.r.sched;
    ck_assert_int_eq(tu_count(s, 1, OP_H2D), tu_count(s, 1, OP_ALLGATHER));
    ck_assert_int_eq(tu_count(s, 1, OP_D2H),
                     tu_count(s, 1, OP_REDUCESCATTER));
    ck_assert_double_eq(tu_alloc_bytes(s, -1, MEM_SHARDED_PARAMS), 0);
    ck_assert_double_eq(tu_alloc_bytes(s, -1, MEM_OPTIMIZER_STATE), 0);
    ck_assert(t.met.copy_s > 0);
    tu_free(&t);
}
END_TEST

START_TEST(test_sched_mixed_precision_bytes)
{
    /* bf16 params, fp32 reduce: a layer's all-gather moves W x S x 2 =
     * 791040 x 2 bytes, its reduce-scatter 791040 x 4 (§8 table). */
    struct tu_run t;
    run_ok(&t, BASE "--param-dtype bf16 --reduce-dtype fp32", 0);
    const struct sched *s = t.r.sched;
    int ag = first_op(s, 1, PHASE_FORWARD, OP_ALLGATHER, 1);
    int rs = first_op(s, 1, PHASE_BACKWARD, OP_REDUCESCATTER, 1);
    ck_assert_int_eq(s->ops[ag].bytes, 791040 * 2);
    ck_assert_int_eq(s->ops[rs].bytes, 791040 * 4);
    tu_free(&t);
}
END_TEST

START_TEST(test_sched_adam_state_16_bytes_per_param)
{
    /* Mixed-precision AdamW keeps fp32 shard (4) + exp_avg and exp_avg_sq
     * (8) + fp32 sharded gradient (4) = 16 bytes per parameter, divided by
     * the shard group (W = 8): 16 x 3676416 / 8 = 7352832 bytes. */
    struct tu_run t;
    run_ok(&t, BASE "--param-dtype bf16", 0);
    const struct sched *s = t.r.sched;
    double b = tu_alloc_bytes(s, 0, MEM_SHARDED_PARAMS)
               + tu_alloc_bytes(s, 0, MEM_OPTIMIZER_STATE)
               + tu_alloc_bytes(s, 0, MEM_GRAD_SHARDED);
    ck_assert_double_eq(b, 16.0 * 3676416 / 8);
    tu_free(&t);
}
END_TEST

START_TEST(test_sched_hybrid_zero2)
{
    /* _HYBRID_SHARD_ZERO2: parameters stay unsharded after forward as in
     * SHARD_GRAD_OP (5 forward all-gathers, none in backward), gradients
     * are reduce-scattered in the node and all-reduced across nodes. */
    struct tu_run t;
    run_ok(&t, BASE "--sharding-strategy _HYBRID_SHARD_ZERO2", 0);
    const struct sched *s = t.r.sched;
    ck_assert_int_eq(tu_count(s, 1, OP_ALLGATHER), 5);
    ck_assert_int_eq(tu_count(s, 1, OP_REDUCESCATTER), 5);
    ck_assert_int_eq(tu_count_on(s, 1, OP_ALLREDUCE, PG_REPLICATE, STREAM_A),
                     5);
    tu_free(&t);
}
END_TEST

START_TEST(test_sched_sgd_has_no_state)
{
    /* Plain SGD keeps no optimizer state; its update reads param and grad
     * and writes param: 12 bytes per element of the 3676416 / 8 = 459552
     * element shard. */
    struct tu_run t;
    run_ok(&t, BASE "--optimizer SGD", 0);
    const struct sched *s = t.r.sched;
    ck_assert_double_eq(tu_alloc_bytes(s, -1, MEM_OPTIMIZER_STATE), 0);
    int opt = first_op(s, 1, PHASE_OPTIMIZER, OP_OPTIMIZER, -1);
    ck_assert_int_eq(s->ops[opt].bytes, 12 * 459552);
    tu_free(&t);
}
END_TEST

START_TEST(test_sched_use_orig_params_avoids_padded_copy)
{
    /* On 7 GPUs a layer's 791040 parameters are not a multiple of W, so
     * use_orig_params=False copies the gradient into a padded buffer
     * before the reduce-scatter (§4.2 5b); use_orig_params=True pads the
     * FlatParameter itself and needs no copy: one cast op fewer per unit
     * and pass. */
    struct tu_run a, b;
    run_ok(&a, BASE "--nodes 1 --gpus-per-node 7", 0);
    run_ok(&b, BASE "--nodes 1 --gpus-per-node 7 --use-orig-params", 0);
    ck_assert_int_eq(tu_count(a.r.sched, 1, OP_CAST)
                         - tu_count(b.r.sched, 1, OP_CAST), 5);
    tu_free(&a);
    tu_free(&b);
}
END_TEST

/* The first op of KIND on stream ST in phase PH of iteration 1 for unit
 * U, or -1. */
static int
first_on_stream(const struct sched *s, enum sched_phase ph,
                enum sched_op_kind kind, enum sched_stream st, int u)
{
    for (int i = 0; i < s->n_ops; i++)
        if (s->ops[i].iter == 1 && s->ops[i].phase == ph
            && s->ops[i].kind == kind && s->ops[i].stream == st
            && s->ops[i].unit == u)
            return i;
    return -1;
}

START_TEST(test_sched_casts_by_release)
{
    /* bf16 parameters, fp32 reduction: a layer's pre-forward casts its
     * fp32 shard, 791040 / 8 = 98880 elements, to bf16 (_mp_shard.copy_,
     * a downcast), and its post-backward casts the unsharded bf16
     * gradient, 791040 elements, to fp32 (an upcast).  PyTorch 2.5 takes
     * both on the dynamic-cast path; 2.6 vectorizes the downcast
     * (torch_version.h). */
    const char *v[2] = {"2.5", "2.6"};
    for (int r = 0; r < 2; r++) {
        struct tu_run t;
        char *args = xasprintf(BASE "--param-dtype bf16 --reduce-dtype fp32 "
                               "--torch-version %s", v[r]);
        run_ok(&t, args, 0);
        free(args);
        const struct sched *s = t.r.sched;
        int down = first_on_stream(s, PHASE_FORWARD, OP_CAST, STREAM_PU, 1);
        int up = first_on_stream(s, PHASE_BACKWARD, OP_CAST, STREAM_P, 1);
        ck_assert_int_ge(down, 0);
        ck_assert_int_ge(up, 0);
        ck_assert_int_eq(s->ops[down].bytes, 98880 * (4 + 2));
        ck_assert_double_eq(s->ops[down].cast_elems, r == 0 ? 98880 : 0);
        ck_assert_int_eq(s->ops[up].bytes, LAYER_NUMEL * (2 + 4));
        ck_assert_double_eq(s->ops[up].cast_elems, LAYER_NUMEL);
        tu_free(&t);
    }
}
END_TEST

START_TEST(test_sched_deterministic)
{
    /* The same inputs give the same schedule and the same times. */
    struct tu_run a, b;
    run_ok(&a, BASE "--param-dtype bf16", 1);
    run_ok(&b, BASE "--param-dtype bf16", 1);
    ck_assert_int_eq(a.r.sched->n_ops, b.r.sched->n_ops);
    for (int i = 0; i < a.r.sched->n_ops; i++) {
        ck_assert_int_eq(a.res.times[i].start_ns, b.res.times[i].start_ns);
        ck_assert_int_eq(a.res.times[i].end_ns, b.res.times[i].end_ns);
    }
    tu_free(&a);
    tu_free(&b);
}
END_TEST

START_TEST(test_sched_errors)
{
    struct tu_run t;
    char *cause = NULL;
    ck_assert_int_eq(tu_run(&t, BASE "--sharding-strategy HYBRID_SHARD "
                            "--nodes 1", 0, &cause), -1);
    ck_assert_str_eq(cause, "--sharding-strategy HYBRID_SHARD: hybrid "
                     "sharding shards within a node and replicates across "
                     "nodes, and 1 node leaves no replicate group (use "
                     "FULL_SHARD, which is the same on one node, or --nodes "
                     "2 or more)");
    free(cause);
    tu_free(&t);
    cause = NULL;
    ck_assert_int_eq(tu_run(&t, BASE "--min-num-params 1e6", 0, &cause), -1);
    ck_assert(strstr(cause, "unexpected keyword argument 'min_num_params'"));
    free(cause);
    tu_free(&t);
}
END_TEST

/* ---- DDP, selective checkpointing, GradScaler ---- */

/* Bytes of the all-reduces of one iteration, and their count. */
static int
allreduces(const struct sched *s, int iter, double *bytes)
{
    int n = 0;
    *bytes = 0;
    for (int i = 0; i < s->n_ops; i++)
        if (s->ops[i].iter == iter && s->ops[i].kind == OP_ALLREDUCE) {
            n++;
            *bytes += (double)s->ops[i].bytes;
        }
    return n;
}

#define TINY_BYTES (4.0 * (ROOT_NUMEL + 4 * LAYER_NUMEL))

START_TEST(test_sched_ddp_buckets)
{
    /* Gradients in ready order (reverse execution): lm_head 1,024,000 B,
     * final norm 1,024, layer 3's down_proj 704,512, ...  The first step
     * all-reduces one bucket of all 14,705,664 B; the rebuilt buckets cap
     * the first at 1 MiB, closed by down_proj (1,729,536 B >= 1,048,576),
     * and the remaining 12,976,128 B fit one 25 MiB bucket: 2 buckets.
     * An explicit --bucket-cap-mb 1 caps the first at 1 MiB too; 1 MiB is
     * then reached after 3, 2, 5, 3, 4, 4, 2, 5, 3, 4 and 4 tensors: 11
     * buckets.  No all-gather, no reduce-scatter: DDP is not FSDP. */
    struct tu_run t, c1;
    run_ok(&t, BASE "--sharding-strategy DDP", 0);
    const struct sched *s = t.r.sched;
    double b0, b1;
    ck_assert(s->ddp);
    ck_assert_int_eq(allreduces(s, 0, &b0), 1);
    ck_assert_int_eq(allreduces(s, 1, &b1), 2);
    ck_assert_double_eq(b0, TINY_BYTES);
    ck_assert_double_eq(b1, TINY_BYTES);
    ck_assert_int_eq(s->n_buckets, 2);
    ck_assert_int_eq(tu_count(s, 1, OP_ALLGATHER), 0);
    ck_assert_int_eq(tu_count(s, 1, OP_REDUCESCATTER), 0);
    /* The first rebuilt bucket is all-reduced on P before backward
     * ends, over the whole world. */
    int first = -1, last_bwd = -1;
    for (int i = 0; i < s->n_ops; i++) {
        const struct sched_op *op = &s->ops[i];
        if (op->iter != 1)
            continue;
        if (op->kind == OP_ALLREDUCE && first < 0) {
            first = i;
            ck_assert_int_eq(op->stream, STREAM_P);
            ck_assert_int_eq(op->bytes, 1729536);
        }
        if (op->kind == OP_BACKWARD)
            last_bwd = i;
    }
    ck_assert_int_lt(first, last_bwd);
    ck_assert_int_eq(s->no_shard_ranks, 8);
    run_ok(&c1, BASE "--strategy ddp --bucket-cap-mb 1", 0);
    ck_assert_int_eq(allreduces(c1.r.sched, 1, &b1), 11);
    ck_assert_double_eq(b1, TINY_BYTES);
    tu_free(&t);
    tu_free(&c1);
}
END_TEST

/* The most memory category CAT holds at any moment of the run. */
static int64_t
most_of(const struct mem *m, enum mem_category cat)
{
    int n;
    const struct mem_sample *ms = mem_samples(m, &n);
    int64_t most = 0;
    for (int i = 0; i < n; i++)
        most = ms[i].by_cat[cat] > most ? ms[i].by_cat[cat] : most;
    return most;
}

START_TEST(test_sched_ddp_autocast_casts)
{
    /* DDP under bf16 autocast casts only its GEMMs' weights: per layer
     * q, k, v, o (4 x 256 x 256) and gate, up, down (3 x 256 x 688),
     * 790528, not the two norms' 512; and the untied LM head, 1000 x 256
     * = 256000, not the embedding: 4 x 790528 + 256000 = 3418112 of the
     * 3676416 parameters.  Forward casts them to bf16, 6 bytes an
     * element; backward each cast's ToCopyBackward0 casts the gradient
     * back to fp32, on the dynamic-cast path in every release. */
    struct tu_run t;
    run_ok(&t, BASE "--sharding-strategy DDP --param-dtype bf16", 0);
    const struct sched *s = t.r.sched;
    double fwd_bytes = 0, bwd_elems = 0;
    for (int i = 0; i < s->n_ops; i++) {
        const struct sched_op *op = &s->ops[i];
        if (op->iter != 1 || op->kind != OP_CAST)
            continue;
        if (op->phase == PHASE_FORWARD)
            fwd_bytes += (double)op->bytes;
        else if (op->phase == PHASE_BACKWARD)
            bwd_elems += op->cast_elems;
    }
    ck_assert_double_eq(fwd_bytes, 3418112.0 * 6);
    ck_assert_double_eq(bwd_elems, 3418112.0);
    tu_free(&t);
}
END_TEST

START_TEST(test_sched_ddp_autocast_recompute_casts)
{
    /* Checkpointed blocks under autocast cast their weights again in the
     * recompute (torch.utils.checkpoint reruns the forward under the
     * saved autocast state): the four blocks' 4 x 790528 = 3162112
     * weights, 6 bytes each (fp32 read, bf16 written), not the LM head's
     * (outside every block).  The forward casts the same 3418112 x 6
     * bytes as without checkpointing, and the gradients' casts back to
     * fp32 are still the 3418112 elements of test_sched_ddp_autocast_casts
     * (the dynamic path counts elements; the fp32 -> bf16 casts are
     * vectorized and count none). */
    struct tu_run t;
    run_ok(&t, BASE "--sharding-strategy DDP --param-dtype bf16 "
                    "--activation-checkpointing full", 0);
    const struct sched *s = t.r.sched;
    double fwd_bytes = 0, bwd_elems = 0, rec_bytes = 0;
    int first_rec = -1, replica = -2;
    for (int i = 0; i < s->n_ops; i++) {
        const struct sched_op *op = &s->ops[i];
        if (op->iter != 1)
            continue;
        if (op->kind == OP_RECOMPUTE && first_rec < 0)
            first_rec = i;
        if (op->kind != OP_CAST)
            continue;
        if (op->phase == PHASE_FORWARD) {
            fwd_bytes += (double)op->bytes;
            replica = op->buf_in;
        } else if (op->phase == PHASE_BACKWARD) {
            bwd_elems += op->cast_elems;
            /* the recompute's casts read the fp32 replica, as the
             * forward's do (the gradients' casts and copies do not) */
            if (op->buf_in == replica)
                rec_bytes += (double)op->bytes;
        }
    }
    ck_assert_double_eq(fwd_bytes, 3418112.0 * 6);
    ck_assert_double_eq(rec_bytes, 3162112.0 * 6);
    ck_assert_double_eq(bwd_elems, 3418112.0);
    /* The first recompute runs after its block's casts. */
    ck_assert_int_ge(first_rec, 1);
    ck_assert_int_eq(s->ops[first_rec - 1].kind, OP_CAST);
    tu_free(&t);
}
END_TEST

START_TEST(test_sched_ddp_memory)
{
    /* Full replicas: fp32 parameters, the buckets (one more copy of every
     * gradient), AdamW's two moments; the .grad tensors persist until
     * zero_grad unless gradient_as_bucket_view makes them views of the
     * buckets.  NO_SHARD (FSDP) on the same ranks is a different
     * schedule: per-unit all-reduces, no buckets. */
    struct tu_run d, v, ns;
    run_ok(&d, BASE "--sharding-strategy DDP", 1);
    run_ok(&v, BASE "--sharding-strategy DDP --gradient-as-bucket-view", 1);
    run_ok(&ns, BASE "--sharding-strategy NO_SHARD", 1);
    const int64_t *pk = d.met.mem.peak_by_cat;
    ck_assert(pk[MEM_UNSHARDED_PARAMS] >= TINY_BYTES);
    ck_assert(pk[MEM_OPTIMIZER_STATE] >= 2 * TINY_BYTES);
    ck_assert(pk[MEM_RS_BUFFER] >= TINY_BYTES);
    /* The gradients at their most (the step's peak itself sits in the
     * loss's backward, before most of them exist). */
    ck_assert(most_of(d.res.mem, MEM_GRAD_UNSHARDED) >= TINY_BYTES);
    ck_assert(most_of(v.res.mem, MEM_GRAD_UNSHARDED) < TINY_BYTES / 2);
    /* Never more at the peak (here both peak in the loss's backward,
     * before the buckets fill, so the saving shows in the gradients). */
    ck_assert(v.met.mem.peak_allocated <= d.met.mem.peak_allocated);
    /* The copy back into .grad is gone with the view. */
    ck_assert_int_lt(tu_count(v.r.sched, 1, OP_CAST),
                     tu_count(d.r.sched, 1, OP_CAST));
    ck_assert_int_eq(tu_count(ns.r.sched, 1, OP_ALLREDUCE), 5);
    ck_assert(!ns.r.sched->ddp);
    tu_free(&d);
    tu_free(&v);
    tu_free(&ns);
}
END_TEST

START_TEST(test_sched_ddp_autocast_and_errors)
{
    /* bf16 compute under DDP is autocast: the all-reduce stays fp32. */
    struct tu_run t;
    run_ok(&t, BASE "--sharding-strategy DDP --param-dtype bf16", 0);
    ck_assert_int_eq(t.r.sched->reduce_dtype, DTYPE_FP32);
    for (int i = 0; i < t.r.sched->n_ops; i++)
        if (t.r.sched->ops[i].kind == OP_ALLREDUCE)
            ck_assert_int_eq(t.r.sched->ops[i].dtype, DTYPE_FP32);
    tu_free(&t);
    const char *bad[] = {
        BASE "--sharding-strategy DDP --cpu-offload",
        BASE "--sharding-strategy DDP --activation-checkpointing reentrant",
        BASE "--bucket-cap-mb 10",
        BASE "--sharding-strategy DDP --reduce-dtype bf16",
        BASE "--activation-checkpointing full --ac-frequency 2", NULL};
    for (int i = 0; bad[i]; i++) {
        char *cause = NULL;
        struct tu_run e;
        ck_assert_msg(tu_run(&e, bad[i], 0, &cause) != 0, "%s", bad[i]);
        free(cause);
        tu_free(&e);
    }
    struct tu_run ok;
    run_ok(&ok, BASE "--sharding-strategy DDP --activation-checkpointing "
           "reentrant --static-graph", 0);
    ck_assert_int_eq(tu_count(ok.r.sched, 1, OP_RECOMPUTE), 4);
    tu_free(&ok);
}
END_TEST

START_TEST(test_sched_selective_layer_frequency)
{
    /* torchtitan counts blocks from 1 and checkpoints every N-th: with
     * N = 2 layers 1 and 3 (0-based) of 4 recompute, half of them; N = 1
     * is full checkpointing. */
    struct tu_run h, one, full;
    run_ok(&h, BASE "--param-dtype bf16 --activation-checkpointing "
           "selective-layer", 1);
    run_ok(&one, BASE "--param-dtype bf16 --activation-checkpointing "
           "selective-layer --ac-frequency 1", 1);
    run_ok(&full, BASE "--param-dtype bf16 --activation-checkpointing full",
           1);
    ck_assert_int_eq(tu_count(h.r.sched, 1, OP_RECOMPUTE), 2);
    ck_assert_int_eq(tu_count(one.r.sched, 1, OP_RECOMPUTE), 4);
    ck_assert_int_eq(one.met.mem.peak_by_cat[MEM_ACTIVATIONS],
                     full.met.mem.peak_by_cat[MEM_ACTIVATIONS]);
    ck_assert(h.met.mem.peak_by_cat[MEM_ACTIVATIONS]
              > full.met.mem.peak_by_cat[MEM_ACTIVATIONS]);
    ck_assert(h.met.compute_s < full.met.compute_s);
    tu_free(&h);
    tu_free(&one);
    tu_free(&full);
}
END_TEST

START_TEST(test_sched_selective_op_between)
{
    /* selective-op keeps most matmul outputs and attention's: activation
     * memory strictly between none and full, and its recompute runs the
     * elementwise and norm kernels and three of seven GEMMs, so compute
     * lies between too. */
    struct tu_run none, op, full;
#define MP BASE "--param-dtype bf16 --seq-len 4096 "
    run_ok(&none, MP, 1);
    run_ok(&op, MP "--activation-checkpointing selective-op", 1);
    run_ok(&full, MP "--activation-checkpointing full", 1);
#undef MP
    int64_t an = none.met.mem.peak_by_cat[MEM_ACTIVATIONS];
    int64_t ao = op.met.mem.peak_by_cat[MEM_ACTIVATIONS];
    int64_t af = full.met.mem.peak_by_cat[MEM_ACTIVATIONS];
    ck_assert_msg(af < ao && ao < an, "%lld %lld %lld", (long long)af,
                  (long long)ao, (long long)an);
    ck_assert(op.met.mem.peak_allocated < none.met.mem.peak_allocated);
    ck_assert(op.met.mem.peak_allocated > full.met.mem.peak_allocated);
    ck_assert(none.met.compute_s < op.met.compute_s);
    ck_assert(op.met.compute_s < full.met.compute_s);
    ck_assert_int_eq(tu_count(op.r.sched, 1, OP_RECOMPUTE), 4);
    /* torchtitan's policy saves every odd aten.mm of a block and the
     * attention, so the recompute runs the 2nd, 4th and 6th matrix
     * products (k_proj, o_proj, up_proj) and the elementwise kernels.  At
     * 4096 tokens: k_proj and o_proj 2 x 4096 x 256 x 256 = 5.369e8 each,
     * up_proj 2 x 4096 x 256 x 688 = 1.443e9, norms, SiLU and product
     * about 3.4e7: 2.551e9 per layer, the attention (4.3e9) not at all. */
    for (int i = 0; i < op.r.sched->n_ops; i++)
        if (op.r.sched->ops[i].kind == OP_RECOMPUTE) {
            ck_assert_double_gt(op.r.sched->ops[i].flops, 2.53e9);
            ck_assert_double_lt(op.r.sched->ops[i].flops, 2.57e9);
        }
    tu_free(&none);
    tu_free(&op);
    tu_free(&full);
}
END_TEST

START_TEST(test_sched_loss_temporaries)
{
    /* tiny-llama's loss: 1 x 2048 tokens over a 1,000-word vocabulary,
     * T V = 2,048,000 logits.  Forward holds the fp32 copy of the logits
     * (4 T V = 8,192,000 bytes) while log_softmax writes its output;
     * backward, nll_loss_backward's fp32 gradient and
     * _log_softmax_backward_data's, two more of the same size, each its
     * own allocation; one micro-batch, two iterations: 2 x (1 + 2). */
    struct module ce = {.kind = LAYER_CROSS_ENTROPY, .out = 1000};
    double each;
    ck_assert_int_eq(layer_transients(&ce, 1, 2048, 2, false, &each), 1);
    ck_assert_double_eq(each, 8192000.0);
    ck_assert_int_eq(layer_transients(&ce, 1, 2048, 2, true, &each), 2);
    ck_assert_double_eq(each, 8192000.0);
    struct module lin = {.kind = LAYER_LINEAR, .in = 256, .out = 256};
    ck_assert_int_eq(layer_transients(&lin, 1, 2048, 2, true, &each), 0);
    struct tu_run t;
    run_ok(&t, BASE, 0);
    int n = 0;
    for (int i = 0; i < t.r.sched->n_ops; i++)
        n += t.r.sched->ops[i].kind == OP_ALLOC
             && t.r.sched->ops[i].bytes == 8192000;
    ck_assert_int_eq(n, 2 * 3);
    tu_free(&t);
}
END_TEST

START_TEST(test_sched_selective_op_saves)
{
    /* What torchtitan's op-level policy keeps of a Linear over 1 x 2048
     * tokens, bf16, 256 -> 688: its output when its aten.mm is one the
     * policy saves, 2048 x 688 x 2 = 2,818,048 bytes; for a float8 Linear
     * the abs() of its input, 2048 x 256 x 2 = 1,048,576, and of its
     * weight, 256 x 688 x 2 = 352,256; attention (8 heads of 32) its
     * output, 2048 x 256 x 2, and the fp32 log-sum-exp, 2048 x 8 x 4:
     * 1,114,112; a norm nothing. */
    struct module lin = {.kind = LAYER_LINEAR, .in = 256, .out = 688};
    ck_assert_double_eq(layer_sac_saved_bytes(&lin, 1, 2048, 2, SAC_KEEP_MM),
                        2818048.0);
    ck_assert_double_eq(layer_sac_saved_bytes(&lin, 1, 2048, 2, 0), 0);
    ck_assert_double_eq(
        layer_sac_saved_bytes(&lin, 1, 2048, 2, SAC_KEEP_ABS_INPUT),
        1048576.0);
    ck_assert_double_eq(
        layer_sac_saved_bytes(&lin, 1, 2048, 2, SAC_KEEP_ABS_WEIGHT),
        352256.0);
    struct module att = {.kind = LAYER_ATTENTION, .heads = 8, .kv_heads = 8,
                         .head_dim = 32};
    ck_assert_double_eq(layer_sac_saved_bytes(&att, 1, 2048, 2, 0),
                        1114112.0);
    struct module rms = {.kind = LAYER_RMSNORM, .out = 256};
    ck_assert_double_eq(layer_sac_saved_bytes(&rms, 1, 2048, 2, 0), 0);
}
END_TEST

/* tiny-llama over 2 x 2048 tokens, FSDP2 on 8 H100s (float8 tensor
 * cores), bf16. */
#define H100_BLOCK "--model tiny-llama --topology dgx-h100 --nodes 1 " \
                   "--fsdp-version 2 --param-dtype bf16 --seq-len 2048 " \
                   "--micro-batch 2 "

/* The activation bytes tiny-llama's first layer (unit 1) allocates in
 * the second step's PHASE: forward, what it saves (or, checkpointed,
 * keeps); backward, what its recompute materialises again. */
static double
activations_first_layer(const struct sched *s, enum sched_phase phase)
{
    double sum = 0;
    for (int i = 0; i < s->n_ops; i++)
        if (s->ops[i].iter == 1 && s->ops[i].micro == 0
            && s->ops[i].phase == phase
            && s->ops[i].kind == OP_ALLOC && s->ops[i].unit == 1
            && s->ops[i].cat == MEM_ACTIVATIONS)
            sum += (double)s->ops[i].bytes;
    return sum;
}

/* The bytes selective-op's forward keeps alive for tiny-llama's first
 * layer over T tokens in bf16: its forward's activation allocations
 * (sac_forward's buffer) but for the block's input, which the checkpoint
 * keeps, T x 256 x 2 bytes. */
static double
sac_kept_first_layer(const struct sched *s, double tokens)
{
    return activations_first_layer(s, PHASE_FORWARD) - tokens * 256 * 2;
}

START_TEST(test_sched_selective_op_float8_abs)
{
    /* tiny-llama over 2 x 2048 tokens in bf16 with float8 Linears (every
     * dim a multiple of 16), FSDP2 on 8 H100s, torchtitan's December 2024
     * policy
     * (abs and max in _save_list, §10.1).  A layer's Linears in order: q,
     * k, v, o (256 x 256, 65,536 weights each), gate, up (256 -> 688),
     * down (688 -> 256, 176,128 each); the aten.mm counter saves q, v,
     * gate, down, float8 ones included.  T = 4096 tokens.
     *
     * What every setting keeps besides the abs(): the outputs of q, v,
     * down (4096 x 256) and gate (4096 x 688), attention's (4096 x 256)
     * in bf16 and its fp32 log-sum-exp (4 heads, 4096 x 4 x 4): 2,097,152
     * x 4 + 5,636,096 + 65,536 = 14,090,240 bytes.
     *
     * Eager: each Linear's abs() of its input, 4 x 4096 x 256 (q, k, v, o)
     * + 2 x 4096 x 256 (gate, up) + 4096 x 688 (down) = 9,109,504
     * elements, 18,219,008 bytes; and of its unsharded weight, 4 x 65,536
     * + 3 x 176,128 = 790,528 elements, 1,581,056 bytes, which the float8
     * all-gather takes away (the weight arrives cast).
     *
     * torch.compile keeps neither down's output, which only the residual
     * add ending the block reads (4096 x 256 x 2 = 2,097,152 bytes less:
     * 11,993,088), nor, tensorwise, any abs() (max is saved; no
     * recomputed node reads abs()).  Rowwise: for the recomputed k, o and
     * up, their weights' abs(), 65,536 + 65,536 + 176,128 = 307,200
     * elements, and their inputs', once per tensor: the attention norm's output (k's,
     * shared with q and v), the attention output (o's), the FFN norm's
     * output (up's, shared with gate), 3 x 1,048,576 elements: in all
     * (307,200 + 3,145,728) x 2 = 6,905,856 bytes. */
#define F8 H100_BLOCK "--activation-checkpointing selective-op "
    const double common = 14090240.0;
    struct tu_run eager, gathered, tw, rw;
    run_ok(&eager, F8 "--float8 tensorwise", 0);
    run_ok(&gathered, F8 "--float8 tensorwise --float8-all-gather", 0);
    run_ok(&tw, F8 "--float8 tensorwise --compile true", 0);
    run_ok(&rw, F8 "--float8 rowwise --compile true", 0);
#undef F8
    ck_assert_double_eq(sac_kept_first_layer(eager.r.sched, 4096),
                        common + 18219008.0 + 1581056.0);
    ck_assert_double_eq(sac_kept_first_layer(gathered.r.sched, 4096),
                        common + 18219008.0);
    const double compiled = common - 2097152.0;
    ck_assert_double_eq(sac_kept_first_layer(tw.r.sched, 4096), compiled);
    ck_assert_double_eq(sac_kept_first_layer(rw.r.sched, 4096),
                        compiled + 6905856.0);
    tu_free(&eager);
    tu_free(&gathered);
    tu_free(&tw);
    tu_free(&rw);
}
END_TEST

START_TEST(test_sched_straggler_slows_compute_only)
{
    /* tiny-llama on test-2x4's 2 x 4 = 8 GPUs: with the default
     * speed_spread of 5 % the slowest of 8 runs at 0.975 of a typical GPU
     * (straggler.h), so the step's GEMMs and attention take 1/0.975 as
     * long; memory-bound kernels and collectives do not change.  Compute
     * grows, by less than 1/0.975 = 2.56 %, and the collectives' summed
     * times stay the same. */
    struct tu_run typical, spread;
    run_ok(&typical, BASE "--nodes 2 --set gpu.speed_spread=0", 1);
    run_ok(&spread, BASE "--nodes 2", 1);
    ck_assert_double_gt(spread.met.compute_s, typical.met.compute_s);
    ck_assert_double_lt(spread.met.compute_s,
                        typical.met.compute_s / 0.975);
    ck_assert_double_eq(spread.met.allgather_s, typical.met.allgather_s);
    ck_assert_double_eq(spread.met.reducescatter_s,
                        typical.met.reducescatter_s);
    tu_free(&typical);
    tu_free(&spread);
}
END_TEST

START_TEST(test_sched_selective_op_compiled_saves)
{
    /* tiny-llama over 2 x 2048 tokens in bf16 under torchtitan's policy:
     * the outputs of q, v, down (4096 x 256 x 2 = 2,097,152 bytes each),
     * gate (4096 x 688 x 2 = 5,636,096) and attention (2,097,152 and the
     * log-sum-exp's 4096 x 4 x 4 = 65,536) are MUST_SAVE: 14,090,240
     * bytes kept in eager mode.  Compiled, the partitioner saves only what
     * the backward reads, and no backward op reads down's output, which
     * ends the block: 14,090,240 - 2,097,152 = 11,993,088 (§10.1).  The
     * recompute materialises the same in both (down's output is no tensor
     * the backward needs). */
#define SO H100_BLOCK "--activation-checkpointing selective-op "
    struct tu_run eager, compiled;
    run_ok(&eager, SO, 0);
    run_ok(&compiled, SO "--compile true", 0);
#undef SO
    ck_assert_double_eq(sac_kept_first_layer(eager.r.sched, 4096),
                        14090240.0);
    ck_assert_double_eq(sac_kept_first_layer(compiled.r.sched, 4096),
                        11993088.0);
    ck_assert_double_eq(activations_first_layer(eager.r.sched,
                                                PHASE_BACKWARD),
                        activations_first_layer(compiled.r.sched,
                                                PHASE_BACKWARD));
    tu_free(&eager);
    tu_free(&compiled);
}
END_TEST

START_TEST(test_sched_float8_saved_bytes)
{
    /* torchao's tensorwise Float8Linear saves its float8 input and its
     * float8 copy of the unsharded weight, a byte an element each plus a
     * 4-byte fp32 scale (§10.1, "What a float8 Linear saves").  One Linear
     * 256 -> 688 over 1 x 2048 tokens: 2048 x 256 + 4 = 524,292 and
     * 256 x 688 + 4 = 176,132, 700,424 bytes; with the float8 all-gather
     * the weight is a view of FSDP2's buffer, 524,292.  The LM head stays
     * bf16: its input, 2048 x 256 x 2 = 1,048,576. */
    struct module lin = {.kind = LAYER_LINEAR, .in = 256, .out = 688};
    ck_assert_double_eq(
        layer_float8_tensorwise_saved_bytes(&lin, 1, 2048, 2, false, false),
        700424.0);
    ck_assert_double_eq(
        layer_float8_tensorwise_saved_bytes(&lin, 1, 2048, 2, true, false),
        524292.0);
    char head_name[] = "lm_head";
    struct module head = {.kind = LAYER_LINEAR, .in = 256, .out = 688,
                          .name = head_name};
    ck_assert_double_eq(
        layer_float8_tensorwise_saved_bytes(&head, 1, 2048, 2, false, false),
        1048576.0);

    /* One tiny-llama block over 2 x 2048 = 4096 tokens, FSDP2 on 8 H100s,
     * no checkpointing: the forward's activations minus the bf16 run's
     * are the Linears' difference.  bf16, the Linears save q's input
     * (shared by k and v) and gate's (shared by up), 4096 x 256 x 2 each,
     * and down's, 4096 x 688 x 2: 2 x 2,097,152 + 5,636,096 = 9,830,400
     * bytes; o's input is SDPA's saved output (test_sched_saved_
     * activations_match_pytorch).
     *
     * Tensorwise, eager: every Linear its own float8 input, o's a cast
     * of the output, 6 x (4096 x 256 + 4) + 4096 x 688 + 4 = 9,109,532,
     * and its float8 weight, 4 x 65,536 + 3 x 176,128 + 7 x 4 = 790,556:
     * 9,900,088, 69,688 more.  With the float8 all-gather no weight:
     * 9,109,532, 720,868 fewer.  Compiled, q/k/v and gate/up share one
     * cast: 3 x 1,048,580 + 2,818,052 + 790,556 = 6,754,348, 3,076,052
     * fewer.  Rowwise saves the bf16 input (and a view of FSDP's weight):
     * no difference. */
    struct tu_run bf16, eager, gathered, tw, rw;
    run_ok(&bf16, H100_BLOCK, 0);
    run_ok(&eager, H100_BLOCK "--float8 tensorwise", 0);
    run_ok(&gathered, H100_BLOCK "--float8 tensorwise --float8-all-gather",
           0);
    run_ok(&tw, H100_BLOCK "--float8 tensorwise --compile true", 0);
    run_ok(&rw, H100_BLOCK "--float8 rowwise", 0);
#define FWD(t) activations_first_layer((t).r.sched, PHASE_FORWARD)
    double base = FWD(bf16);
    ck_assert_double_eq(FWD(eager), base + 69688.0);
    ck_assert_double_eq(FWD(gathered), base - 720868.0);
    ck_assert_double_eq(FWD(tw), base - 3076052.0);
    ck_assert_double_eq(FWD(rw), base);
#undef FWD

    /* Checkpointed, the block's recompute saves the same again, one block
     * at a time: full, all of it (eager: 69,688 more than bf16);
     * selective-op compiled, all but the kept outputs, which are the same
     * with and without float8 tensorwise (no abs() kept): 3,076,052
     * fewer. */
#define F8 H100_BLOCK "--activation-checkpointing "
    struct tu_run full16, full8, sac16, sac8;
    run_ok(&full16, F8 "full", 0);
    run_ok(&full8, F8 "full --float8 tensorwise", 0);
    run_ok(&sac16, F8 "selective-op --compile true", 0);
    run_ok(&sac8, F8 "selective-op --compile true --float8 tensorwise", 0);
#undef F8
#define BWD(t) activations_first_layer((t).r.sched, PHASE_BACKWARD)
    ck_assert_double_eq(BWD(full16), base);
    ck_assert_double_eq(BWD(full8), base + 69688.0);
    ck_assert_double_eq(BWD(sac8), BWD(sac16) - 3076052.0);
#undef BWD
    tu_free(&full16);
    tu_free(&full8);
    tu_free(&sac16);
    tu_free(&sac8);
    tu_free(&bf16);
    tu_free(&eager);
    tu_free(&gathered);
    tu_free(&tw);
    tu_free(&rw);
}
END_TEST

START_TEST(test_sched_nccl_buffers_outside_allocator)
{
    /* NO_SHARD on one DGX H100: the all-reduces run NVLS, whose
     * communicator takes 16 channels x 2 x 8 steps x 128 KiB x 8 heads
     * = 256 MiB of buffers plus 16 x 2 x 64 x 8 B of credits rounded up
     * to the 2 MiB multicast granularity (coll_nvls_buffer_bytes): 258 MiB
     * outside the caching allocator, off the margin, and no connection
     * buffers (NVLS connects nothing else).  FULL_SHARD's all-gathers and
     * reduce-scatters run Ring here: no NVLS buffers, but the ring's
     * connections on its 32 channels, each GPU a P2P receiver (4 KiB +
     * LL 512 KiB + LL128 4800 KiB + Simple 4 MiB, rounded up to 10 MiB)
     * and sender (4 KiB, 2 MiB) a channel (coll_conn_buffer_bytes):
     * 32 x 12 MiB = 384 MiB. */
    struct tu_run n, f;
    run_ok(&n, "--model tiny-llama --topology dgx-h100 "
           "--sharding-strategy NO_SHARD", 1);
    run_ok(&f, "--model tiny-llama --topology dgx-h100", 1);
    ck_assert_int_eq(n.met.mem.outside_bytes, 258LL << 20);
    ck_assert_double_eq(n.met.margin_bytes,
                        80.0 * (1 << 30) - (258LL << 20)
                            - (double)n.met.mem.peak_reserved);
    ck_assert_int_eq(f.met.mem.outside_bytes, 384LL << 20);
    ck_assert_double_eq(f.res.cost.nccl_nvls_bytes, 0);
    tu_free(&n);
    tu_free(&f);
}
END_TEST

START_TEST(test_sched_nccl_buffers_by_version)
{
    /* FULL_SHARD on one DGX H100 (32 channels): from NCCL 2.22 a
     * communicator connects an algorithm at its first collective, and
     * every all-gather and reduce-scatter runs Ring: 32 x 12 MiB =
     * 384 MiB (test_sched_nccl_buffers_outside_allocator).  Before 2.22
     * ncclCommInitRank connects Ring and Tree and sets NVLS up whatever
     * runs.  Tree's chain of 8 GPUs has 7 links a channel, one direction
     * of each the ring's already (behind NVSwitch rings step to GPU
     * index + 1, trees to index - 1), so 7 more P2P connections of
     * 12 MiB over 8 GPUs: 10.5 MiB a channel, 336 MiB.  NVLS on one
     * node has no tree.  Its buffers: 2.21 steps of NCCL_NVLS_CHUNKSIZE,
     * 258 MiB (16 channels x 2 x 8 x 128 KiB x 8 heads + a 2 MiB credit
     * granule); 2.20 steps of NCCL_BUFFSIZE / 8, 16 x 2 x 4 MiB x 8 +
     * 2 MiB = 1026 MiB.
     *   2.22: 384 MiB;  2.21: 384 + 336 + 258 = 978 MiB;
     *   2.20: 384 + 336 + 1026 = 1746 MiB. */
    static const char *const versions[] = {"2.22", "2.21", "2.20"};
    static const long long mib[] = {384, 978, 1746};
    static const long long nvls_mib[] = {0, 258, 1026};
    for (int i = 0; i < 3; i++) {
        char *args = xasprintf("--model tiny-llama --topology dgx-h100 "
                               "--nccl-version %s", versions[i]);
        struct tu_run r;
        run_ok(&r, args, 1);
        ck_assert_int_eq(r.met.mem.outside_bytes, mib[i] << 20);
        ck_assert_double_eq(r.res.cost.nccl_nvls_bytes,
                            (double)(nvls_mib[i] << 20));
        tu_free(&r);
        free(args);
    }
}
END_TEST

START_TEST(test_sched_grad_scaler)
{
    /* fp16: ShardedGradScaler unscales the sharded fp32 gradients, all-
     * reduces found_inf (4 bytes) and the host waits on .item() before
     * optimizer.step(); bf16 has no scaler unless asked. */
    struct tu_run f, b;
    run_ok(&f, BASE "--param-dtype fp16", 0);
    run_ok(&b, BASE "--param-dtype bf16", 0);
    const struct sched *s = f.r.sched;
    int ar4 = 0, wait_before_opt = 0;
    for (int i = 0; i < s->n_ops; i++) {
        if (s->ops[i].iter != 1)
            continue;
        if (s->ops[i].kind == OP_ALLREDUCE && s->ops[i].bytes == 4)
            ar4++;
        if (s->ops[i].kind == OP_OPTIMIZER && i > 0
            && s->ops[i - 1].kind == OP_CPU_WAIT)
            wait_before_opt = 1;
    }
    ck_assert_int_eq(ar4, 1);
    ck_assert(wait_before_opt);
    ck_assert_double_eq(s->scaler_grad_numel,
                        (ROOT_NUMEL + 4 * LAYER_NUMEL) / 8);
    ck_assert_double_eq(b.r.sched->scaler_grad_numel, 0);
    tu_free(&f);
    tu_free(&b);
}
END_TEST

/* Ops of step ITER, kind K on stream ST in phase PH whose bytes are B. */
static int
count_bytes(const struct sched *s, int iter, enum sched_op_kind k,
            enum sched_stream st, enum sched_phase ph, double b)
{
    int n = 0;
    for (int i = 0; i < s->n_ops; i++) {
        const struct sched_op *op = &s->ops[i];
        n += op->iter == iter && op->kind == k && op->stream == st
             && op->phase == ph && (double)op->bytes == b;
    }
    return n;
}

START_TEST(test_sched_gradient_kernels)
{
    /* §4.2: fp32, FULL_SHARD over W = 8 (test-2x4), DP = 8, so the
     * pre-factor is 4 (1 -> 2 -> 4; 8 / 4 = 2 is not above 4) and the
     * post-factor 8 / 4 = 2.  A layer's 791040 elements divide by 8, so
     * no padding copy; each layer unit has, per step:
     *   the SplitWithSizesBackward cat on C: 2 x 791040 x 4 = 6328320 B;
     *   the pre-division on P over the same buffer: 6328320 B;
     *   the post-division on P over its shard, 2 x 98880 x 4 = 791040 B;
     *   no accumulation copy: the fp32 output shard becomes the sharded
     *   gradient (_accumulate_sharded_grad assigns it).
     * Four layers: 4 of each.  (The root's 512256 elements give other
     * sizes.)  With a second micro-batch (no no_sync) its shard is added
     * to the saved one: 98880 x (4 + 4 + 4) = 1186560 B a layer.  On 2
     * GPUs, DP = 2: pre-factor 2, post-factor 1, so the shard has no
     * kernel at all. */
    struct tu_run t;
    run_ok(&t, BASE, 0);
    const struct sched *s = t.r.sched;
    ck_assert_int_eq(count_bytes(s, 1, OP_CAST, STREAM_C, PHASE_BACKWARD,
                                 6328320), 4);
    ck_assert_int_eq(count_bytes(s, 1, OP_CAST, STREAM_P, PHASE_BACKWARD,
                                 6328320), 4);
    ck_assert_int_eq(count_bytes(s, 1, OP_CAST, STREAM_P, PHASE_BACKWARD,
                                 791040), 4);
    ck_assert_int_eq(count_bytes(s, 1, OP_CAST, STREAM_P, PHASE_BACKWARD,
                                 1186560), 0);
    tu_free(&t);
    struct tu_run acc;
    run_ok(&acc, BASE "--grad-accum 2", 0);
    ck_assert_int_eq(count_bytes(acc.r.sched, 1, OP_CAST, STREAM_P,
                                 PHASE_BACKWARD, 1186560), 4);
    tu_free(&acc);
    struct tu_run two;
    run_ok(&two, BASE "--nodes 1 --gpus-per-node 2", 0);
    /* Shard of a layer on 2: 395520 elements; a post-division or a copy
     * would be 2 x 395520 x 4 = 3164160 B: neither runs. */
    ck_assert_int_eq(count_bytes(two.r.sched, 1, OP_CAST, STREAM_P,
                                 PHASE_BACKWARD, 3164160), 0);
    tu_free(&two);
}
END_TEST

START_TEST(test_sched_optimizer_foreach_and_clip)
{
    /* §11.1: AdamW's foreach path moves 80 B per fp32 element of the
     * shard in 8 passes: the shard is (512256 + 4 x 791040) / 8 = 459552
     * elements, 36764160 B.  §11.4: --clip-grad-norm adds a norm pass
     * (459552 x 4 = 1838208 B) and a scaling pass (3676416 B) on C and a
     * 4-byte all-reduce over the shard group; --loss-item makes the host
     * wait twice (the norm's .item() and the loss's). */
    struct tu_run t;
    run_ok(&t, BASE "--clip-grad-norm 1.0 --loss-item", 0);
    const struct sched *s = t.r.sched;
    ck_assert_int_eq(count_bytes(s, 1, OP_OPTIMIZER, STREAM_C,
                                 PHASE_OPTIMIZER, 36764160), 1);
    ck_assert_int_eq(s->optimizer_passes, 8);
    ck_assert_double_eq(s->optimizer_numel, 459552);
    ck_assert_int_eq(count_bytes(s, 1, OP_CAST, STREAM_C, PHASE_OPTIMIZER,
                                 1838208), 1);
    ck_assert_int_eq(count_bytes(s, 1, OP_CAST, STREAM_C, PHASE_OPTIMIZER,
                                 3676416), 1);
    ck_assert_int_eq(tu_count_on(s, 1, OP_ALLREDUCE, PG_SHARD, STREAM_P), 1);
    int waits = 0;
    for (int i = 0; i < s->n_ops; i++)
        waits += s->ops[i].iter == 1 && s->ops[i].kind == OP_CPU_WAIT
                 && s->ops[i].phase == PHASE_OPTIMIZER;
    ck_assert_int_eq(waits, 2);
    tu_free(&t);
    struct tu_run plain;
    run_ok(&plain, BASE "--optimizer SGD", 0);
    /* SGD: one _foreach_add_, 12 B an element: 5514624 B. */
    ck_assert_int_eq(count_bytes(plain.r.sched, 1, OP_OPTIMIZER, STREAM_C,
                                 PHASE_OPTIMIZER, 5514624), 1);
    ck_assert_int_eq(tu_count_on(plain.r.sched, 1, OP_ALLREDUCE, PG_SHARD,
                              STREAM_P), 0);
    tu_free(&plain);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("sched");
    TCase *core = tcase_create("core");
    tcase_set_timeout(core, 60);
    tcase_add_test(core, test_sched_full_shard_collectives);
    tcase_add_test(core, test_sched_ddp_buckets);
    tcase_add_test(core, test_sched_ddp_memory);
    tcase_add_test(core, test_sched_ddp_autocast_and_errors);
    tcase_add_test(core, test_sched_selective_layer_frequency);
    tcase_add_test(core, test_sched_selective_op_between);
    tcase_add_test(core, test_sched_selective_op_saves);
    tcase_add_test(core, test_sched_selective_op_float8_abs);
    tcase_add_test(core, test_sched_selective_op_compiled_saves);
    tcase_add_test(core, test_sched_straggler_slows_compute_only);
    tcase_add_test(core, test_sched_float8_saved_bytes);
    tcase_add_test(core, test_sched_loss_temporaries);
    tcase_add_test(core, test_sched_nccl_buffers_outside_allocator);
    tcase_add_test(core, test_sched_nccl_buffers_by_version);
    tcase_add_test(core, test_sched_grad_scaler);
    tcase_add_test(core, test_sched_gradient_kernels);
    tcase_add_test(core, test_sched_optimizer_foreach_and_clip);
    tcase_add_test(core, test_sched_shard_grad_op_keeps_params);
    tcase_add_test(core, test_sched_no_shard_all_reduces);
    tcase_add_test(core, test_sched_hybrid_shard_replicates_on_stream_a);
    tcase_add_test(core, test_sched_no_sync_drops_reduce_scatters);
    tcase_add_test(core, test_sched_flat_gradient_transients);
    tcase_add_test(core, test_sched_no_shard_reduces_in_place);
    tcase_add_test(core, test_sched_fused_loss_activations);
    tcase_add_test(core, test_sched_native_loss_activations);
    tcase_add_test(core, test_sched_saved_activations_match_pytorch);
    tcase_add_test(core, test_sched_saved_activations_hf_releases);
    tcase_add_test(core, test_sched_shard_grad_op_no_sync_skips_gathers);
    tcase_add_test(core, test_sched_limit_all_gathers_bounds_inflight);
    tcase_add_test(core, test_sched_backward_pre_beats_none_when_comm_bound);
    tcase_add_test(core, test_sched_backward_prefetch_issue_order);
    tcase_add_test(core, test_sched_forward_prefetch_from_second_step);
    tcase_add_test(core, test_sched_activation_checkpointing);
    tcase_add_test(core, test_sched_cpu_offload_copies);
    tcase_add_test(core, test_sched_mixed_precision_bytes);
    tcase_add_test(core, test_sched_adam_state_16_bytes_per_param);
    tcase_add_test(core, test_sched_hybrid_zero2);
    tcase_add_test(core, test_sched_sgd_has_no_state);
    tcase_add_test(core, test_sched_use_orig_params_avoids_padded_copy);
    tcase_add_test(core, test_sched_deterministic);
    tcase_add_test(core, test_sched_root_post_backward_last);
    tcase_add_test(core, test_sched_forward_prefetch_moves_post_backward);
    tcase_add_test(core, test_sched_reentrant_no_backward_prefetch);
    tcase_add_test(core, test_sched_hybrid_one_gpu_per_node_falls_back);
    tcase_add_test(core, test_sched_casts_by_release);
    tcase_add_test(core, test_sched_ddp_autocast_casts);
    tcase_add_test(core, test_sched_ddp_autocast_recompute_casts);
    suite_add_tcase(s, core);
    TCase *errors = tcase_create("errors");
    tcase_add_test(errors, test_sched_errors);
    suite_add_tcase(s, errors);
    return tu_main(s);
}
