/*
 * kernel.c: the kernel list of each leaf layer (see kernel.h).
 *
 * T = micro_batch x seq_len tokens, b = bytes per activation element.
 * Bytes count what each kernel reads and writes in HBM; a tensor of E
 * elements read and another written is 2Eb.  The lists follow what eager
 * PyTorch runs for the Hugging Face modules the built-in models mirror
 * (transformers' modeling_llama.py and siblings) on the CUDA backend; the
 * PyTorch function behind each is named beside it.  With ctx->compile
 * (torch.compile of each block, Inductor) every chain of elementwise and
 * normalisation kernels between two matrix products is one fused kernel
 * that reads its inputs and writes its outputs once; matrix products and
 * attention stay as they are (Inductor calls cuBLAS and SDPA for them).
 */
#include "kernel.h"
#include "layer.h"
#include "runconf.h"
#include "torch_version.h"
#include "hf_version.h"
#include "wrap.h"

#include <string.h>

static const char *const class_names[KERNEL_CLASS_COUNT] = {
    "gemm", "attention_fwd", "attention_bwd", "elementwise", "reduction"};

const char *
kernel_class_name(enum kernel_class c)
{
    return (unsigned)c < KERNEL_CLASS_COUNT ? class_names[c] : "?";
}

struct klist {
    struct kernel *k;
    int n;
};

static struct kernel *
push(struct klist *l, const char *name, enum kernel_class cls, int launches)
{
    if (l->n == KERNEL_MAX_PER_LEAF)
        return &l->k[l->n - 1];   /* lists are far shorter: never reached */
    struct kernel *k = &l->k[l->n++];
    memset(k, 0, sizeof *k);
    k->name = name;
    k->cls = cls;
    k->launches = launches;
    return k;
}

/* A memory-bound kernel moving BYTES (all LAUNCHES together). */
static void
mem_kernel(struct klist *l, const char *name, enum kernel_class cls,
           int launches, double bytes)
{
    push(l, name, cls, launches)->bytes = bytes;
}

/* LAUNCHES dtype casts of E elements in all, FROM to TO bytes each
 * (Tensor.to, .float(), type_as): nothing when the dtypes match (.to
 * returns the tensor itself; NULL), else a copy kernel each, on the
 * dynamic-cast path where eager PyTorch of the run's release has no
 * vectorized kernel for the pair (torch_version.h).  A compiled region's
 * casts are Triton's, vectorized: callers inside one pass COMPILED. */
static struct kernel *
cast_kernel(struct klist *l, const struct kernel_ctx *ctx, const char *name,
            int launches, double E, double from, double to, bool compiled)
{
    if (from == to)
        return NULL;
    struct kernel *k = push(l, name, KERNEL_ELEMENTWISE, launches);
    k->bytes = E * (from + to);
    if (!compiled
        && torch_cast_is_dynamic(ctx->torch_version, (int)from, (int)to))
        k->cast_elems = E;
    return k;
}

/* A memory-bound kernel moving BYTES that writes ELEMS elements on
 * TensorIterator's strided path: an operand broadcast (a stride-0
 * dimension: the norm's weight over tokens, its per-token statistic over
 * the hidden dimension, the rotary tables over heads) or strided (a
 * slice, a transpose, an expand) makes the iterator non-contiguous, and
 * gpu_kernel_impl then launches its legacy kernel with an
 * OffsetCalculator (aten/src/ATen/native/cuda/CUDALoops.cuh): one
 * element at a time, its offsets divided out of the index per dimension
 * (kernel_cost.c prices the rate). */
static void
strided_kernel(struct klist *l, const char *name, int launches, double bytes,
               double elems)
{
    struct kernel *k = push(l, name, KERNEL_ELEMENTWISE, launches);
    k->bytes = bytes;
    k->strided_elems = elems;
}

/* A GEMM (m x k) by (k x n), BATCH times, in b-byte elements. */
static void
gemm(struct klist *l, const char *name, int64_t m, int64_t n, int64_t k,
     int64_t batch, double b)
{
    struct kernel *g = push(l, name, KERNEL_GEMM, 1);
    g->m = m;
    g->n = n;
    g->k = k;
    g->batch = batch;
    g->flops = 2.0 * (double)m * (double)n * (double)k * (double)batch;
    g->bytes = ((double)m * k + (double)k * n + (double)m * n) * batch * b;
}

/* LAUNCHES identical GEMMs (m x k) by (k x n), each its own launch (a
 * Python loop over chunks): the shape is per launch, the FLOPs and bytes
 * all of them together. */
static void
gemm_launches(struct klist *l, const char *name, int64_t m, int64_t n,
              int64_t k, int launches, double b)
{
    gemm(l, name, m, n, k, 1, b);
    struct kernel *g = &l->k[l->n - 1];
    g->launches = launches;
    g->flops *= launches;
    g->bytes *= launches;
}

/* Is M inside a module of the transformer block class (layer_cls may
 * list several, comma-separated, as the wrapping policy reads them)? */
static bool
in_block(const struct module *m, const char *layer_cls)
{
    if (layer_cls == NULL)
        return false;
    for (const struct module *p = m->parent; p != NULL; p = p->parent)
        if (p->cls != NULL && wrap_class_matches(p->cls, layer_cls))
            return true;
    return false;
}

/* Does a Mul follow M among its siblings (SwiGLU's act(gate) x up)? */
static bool
feeds_mul(const struct module *m)
{
    const struct module *p = m->parent;
    if (p == NULL)
        return false;
    bool after = false;
    for (int i = 0; i < p->n_children; i++) {
        if (p->children[i] == m)
            after = true;
        else if (after && p->children[i]->kind == LAYER_MUL)
            return true;
    }
    return false;
}

/* Float8Linear's kernels (torchao Float8Linear) as torchao eab345c runs
 * them (20 December 2024, the torchao of the December 2024 benchmark,
 * §10.1); files are under torchao/float8/, B is the bytes of a
 * high-precision element.
 *
 * A cast to float8 of E elements with R scales (R = 1 tensorwise;
 * rowwise, one per slice along the scaled dimension),
 * hp_tensor_to_float8_dynamic (float8_scaling_utils.py).  Eager:
 *   abs    tensor_to_amax (float8_utils.py) is torch.max(torch.abs(x))
 *          tensorwise and torch.amax(torch.abs(x), dim) rowwise: abs is
 *          an elementwise kernel writing a whole tensor, 2EB bytes;
 *   amax   the reduction of that tensor, EB read, RB written;
 *   scale  amax_to_scale: amax.to(float64) R(B + 8), torch.clamp(min=EPS)
 *          16R, finfo.max / amax, which Tensor.__rtruediv__ runs as
 *          reciprocal() and a multiply (torch/_tensor.py __rdiv__) 16R
 *          each, .to(float32) 12R: five launches, R(B + 68) bytes;
 *   cast   _ToFloat8ConstrFunc.forward (float8_tensor.py):
 *          tensor.to(float32) E(B + 4), * scale 8E + 4R, then
 *          to_fp8_saturated's clamp 8E and .to(float8) 5E (float8_utils.py):
 *          four launches, E(B + 25) + 4R bytes.
 * Compiled, Inductor folds abs into the reduction, which reads x once
 * (EB) and computes the scale in its epilogue (4R written), and the
 * cast's four steps into one kernel reading x and the scale and writing
 * a byte an element, E(B + 1) + 4R: this file's rule that a chain of
 * elementwise kernels is one kernel.
 *
 * Selective-op (§10.1): torchtitan 9dec370's _save_list has abs and max
 * as MUST_SAVE (amax is not).  Eager, the caching dispatch mode hands the
 * recompute both stored outputs, so neither kernel runs again, while the
 * scale and
 * the cast (PREFER_RECOMPUTE) rerun in every float8 Linear, its mm saved
 * or not (eager runs every op of the forward; tensorwise, the backward
 * reads the cast's float8 tensors besides).  Compiled tensorwise, the
 * recomputed casts read the saved max: the reduction never reruns, the
 * cast always does (the backward needs its output).  Compiled rowwise, a
 * Linear whose mm is recomputed reruns both, the amax from the saved abs
 * (EB again); one whose mm is saved reruns neither, its backward
 * recasting from the high-precision tensors.  Returns the cast. */
struct float8_cast_names {
    const char *abs, *amax, *scale, *cast;
};

static const struct float8_cast_names F8_INPUT = {
    "abs (input)", "amax (input)", "amax_to_scale (input)",
    "to float8 (input)"};
static const struct float8_cast_names F8_INPUT_SHARED = {
    "abs (shared input)", "amax (shared input)",
    "amax_to_scale (shared input)", "to float8 (shared input)"};
static const struct float8_cast_names F8_WEIGHT = {
    "abs (weight)", "amax (weight)", "amax_to_scale (weight)",
    "to float8 (weight)"};
static const struct float8_cast_names F8_GRAD = {
    "abs (grad)", "amax (grad)", "amax_to_scale (grad)",
    "to float8 (grad)"};
static const struct float8_cast_names F8_GRAD_DIM0 = {
    "abs (grad, dim 0)", "amax (grad, dim 0)",
    "amax_to_scale (grad, dim 0)", "to float8 (grad, dim 0)"};
static const struct float8_cast_names F8_INPUT_DIM0 = {
    "abs (input, dim 0)", "amax (input, dim 0)",
    "amax_to_scale (input, dim 0)", "to float8 (input, dim 0)"};

static struct kernel *
to_float8(struct klist *l, const struct kernel_ctx *ctx,
          const struct float8_cast_names *nm, double E, double R, double b)
{
    bool rowwise = ctx->float8 == FLOAT8_ROWWISE;
    enum kernel_recompute amax_rc = ctx->compile && rowwise
                                        ? RECOMPUTE_WITH_GEMM
                                        : RECOMPUTE_NEVER;
    enum kernel_recompute cast_rc = ctx->compile && rowwise
                                        ? RECOMPUTE_WITH_GEMM
                                        : RECOMPUTE_BY_CLASS;
    if (ctx->compile) {
        push(l, nm->amax, KERNEL_REDUCTION, 1)->bytes = E * b + 4 * R;
        l->k[l->n - 1].recompute = amax_rc;
        struct kernel *cast = push(l, nm->cast, KERNEL_ELEMENTWISE, 1);
        cast->bytes = E * (b + 1) + 4 * R;
        cast->recompute = cast_rc;
        return cast;
    }
    push(l, nm->abs, KERNEL_ELEMENTWISE, 1)->bytes = 2 * E * b;
    l->k[l->n - 1].recompute = amax_rc;
    push(l, nm->amax, KERNEL_REDUCTION, 1)->bytes = E * b + R * b;
    l->k[l->n - 1].recompute = amax_rc;
    mem_kernel(l, nm->scale, KERNEL_ELEMENTWISE, 5, R * (b + 68));
    struct kernel *cast = push(l, nm->cast, KERNEL_ELEMENTWISE, 4);
    cast->bytes = E * (b + 25) + 4 * R;
    return cast;
}

/* A float8 tensor of E elements copied into the layout torch._scaled_mm
 * takes (float8_ops.py preprocess_addmm: the first operand row-major,
 * `a_data.contiguous()`, the second column-major,
 * `b_data.t().contiguous().t()`): eager, a copy kernel, 2E bytes.
 * Compiled, where the cast CAST that made the tensor runs in the same
 * graph, Inductor writes the copy from the cast's kernel: E more bytes
 * when the first layout is needed too (KEEP), none when only the copy
 * is.  A tensor the forward saved (CAST NULL) is copied apart. */
static void
float8_relayout(struct klist *l, const struct kernel_ctx *ctx,
                const char *name, struct kernel *cast, bool keep, double E)
{
    if (ctx->compile && cast != NULL) {
        if (keep)
            cast->bytes += E;
        return;
    }
    mem_kernel(l, name, KERNEL_ELEMENTWISE, 1, 2 * E);
}

/* A float8 GEMM (torch._scaled_mm through float8_ops.py float8_mm and
 * float8_python_api.py addmm_float8_unwrapped): float8 operands, the
 * output in the B-byte compute dtype.  Eager, addmm_float8_unwrapped
 * first takes the reciprocal of each operand's RA and RB scales, two
 * launches, 8(RA + RB) bytes (compiled, they fold into the amax
 * reductions that made the scales).  Rowwise without fast accumulation
 * (POST_SCALE: the backward's two GEMMs, gemm_config_grad_input and
 * gemm_config_grad_weight keeping Float8GemmConfig's use_fast_accum
 * False, config.py), it runs the GEMM with unit scales and scales the
 * M x N output afterwards: eager, a_inverse_scale * b_inverse_scale into
 * an fp32 M x N tensor (4(M + N) read, 4MN written), two new_ones (4
 * bytes each) and `output *=` that tensor (MN(2B + 4)): four launches,
 * MN(2B + 8) + 4(M + N) + 8 bytes; compiled one kernel reading the output
 * and the two scale vectors and writing the output, 2MNB + 4(M + N). */
static void
gemm_fp8(struct klist *l, const struct kernel_ctx *ctx, const char *name,
         int64_t m, int64_t n, int64_t k, double b, double RA, double RB,
         bool post_scale)
{
    if (!ctx->compile) {
        struct kernel *r = push(l, "reciprocal (scales)", KERNEL_ELEMENTWISE,
                                2);
        r->bytes = 8 * (RA + RB);
        r->recompute = RECOMPUTE_WITH_GEMM;
    }
    struct kernel *g = push(l, name, KERNEL_GEMM, 1);
    g->m = m;
    g->n = n;
    g->k = k;
    g->batch = 1;
    g->fp8 = true;
    g->flops = 2.0 * (double)m * (double)n * (double)k;
    g->bytes = (double)m * k + (double)k * n + (double)m * n * b;
    if (!post_scale)
        return;
    double MN = (double)m * (double)n, vec = 4.0 * ((double)m + (double)n);
    if (ctx->compile)
        mem_kernel(l, "mul (post_inverse_scale)", KERNEL_ELEMENTWISE, 1,
                   2 * MN * b + vec);
    else
        mem_kernel(l, "mul (post_inverse_scale)", KERNEL_ELEMENTWISE, 4,
                   MN * (2 * b + 8) + vec + 8);
}

/* Tensorwise, compiled under selective-op, the partitioner takes
 * PREFER_RECOMPUTE as must-recompute (§10.1): the input's and the
 * weight's casts are not saved but rerun in the backward graph (the
 * recompute op counts them, to_float8), where Inductor writes the
 * column-major copies the backward's GEMMs take from those kernels, so
 * the backward has no copy of its own but of a weight gathered in
 * float8 (no cast to rerun).  Selective-op checkpoints the blocks. */
static bool
float8_recast_in_backward(const struct module *m,
                          const struct kernel_ctx *ctx)
{
    return ctx->float8 != FLOAT8_ROWWISE && ctx->compile
           && ctx->selective_op && in_block(m, ctx->layer_cls);
}

/* E more bytes written by a cast the recompute reruns, where the mm runs
 * again too (zero launches: the work is that cast kernel's). */
static void
second_layout(struct klist *l, const char *name, double E)
{
    struct kernel *k = push(l, name, KERNEL_ELEMENTWISE, 0);
    k->bytes = E;
    k->recompute = RECOMPUTE_WITH_GEMM;
}

/* Float8Linear.forward (float8_linear.py at eab345c) takes one of two
 * paths.  Tensorwise (no axiswise cast): the input cast, the weight's
 * scale and cast (get_weight_scale, cast_weight_to_float8_t; both
 * skipped when the float8 all-gather hands over a Float8Tensor already,
 * fsdp_utils.py WeightWithDynamicFloat8CastTensor), then
 * manual_float8_matmul_with_args_in_float8, which saves input_fp8 and
 * weight_fp8_t and in backward reuses them: only the output gradient is
 * cast (NoopFwToFloat8BwDynamic, e5m2), dgrad takes the saved weight
 * copied column-major (it is weight_fp8_t.t(), row-major), wgrad the
 * gradient's transpose made contiguous and the saved input copied
 * column-major.  torchao recasts the input and the weight in backward
 * only from 2ec9bc15 (13 January 2025, matmul_with_hp_or_float8_args),
 * after the benchmark.  Rowwise (all axiswise):
 * manual_float8_matmul_with_args_in_hp saves the high-precision input
 * and weight and casts four times in backward: the gradient along its
 * rows for dgrad with the weight recast along its own (its cast keeps
 * weight.t()'s column-major strides, so its .t() is copied back to
 * column-major), then the gradient and the input along dimension 0 for
 * wgrad, each copied to the layout _scaled_mm takes. */
static void
linear_float8(struct klist *l, const struct module *m,
              const struct kernel_ctx *ctx, double T, double b,
              enum kernel_phase ph)
{
    int64_t t = (int64_t)T;
    double X = T * (double)m->in, Y = T * (double)m->out;
    double W = (double)m->in * (double)m->out;
    double in = (double)m->in, out = (double)m->out;
    bool rowwise = ctx->float8 == FLOAT8_ROWWISE;
    bool gathered = ctx->float8_weights_gathered && !rowwise;
    /* Compiled, the Linears that take one input (q, k and v; gate and
     * up) cast it in identical nodes, which AOTAutograd's common-
     * subexpression pass on the joint graph merges
     * (torch/_functorch/compile_utils.py fx_graph_cse): the first casts
     * it, and its copies in backward, for all.  Eager, each casts its
     * own. */
    bool shared = ctx->compile && layer_shares_input(m);
    if (ph != PHASE_BWD) {
        /* Rowwise: the input scaled per token (dim -1), weight.t() per
         * output feature (dim 0); the GEMM with fast accumulation
         * (gemm_config_output).  A shared input's cast reruns, compiled
         * rowwise, where this Linear's mm does (the first Linear's mm
         * may be saved): that rerun only is listed here. */
        if (!shared)
            to_float8(l, ctx, &F8_INPUT, X, rowwise ? T : 1, b);
        else if (ph == PHASE_RECOMPUTE && rowwise)
            to_float8(l, ctx, &F8_INPUT_SHARED, X, T, b);
        if (!gathered)
            to_float8(l, ctx, &F8_WEIGHT, W, rowwise ? out : 1, b);
        if (ph == PHASE_RECOMPUTE && float8_recast_in_backward(m, ctx)) {
            /* The recomputed casts write the backward's column-major
             * copies (linear_float8's backward); a recomputed mm wants
             * the row-major layout too, E more bytes of that kernel. */
            second_layout(l, "to float8 (input, both layouts)", X);
            if (!gathered)
                second_layout(l, "to float8 (weight, both layouts)", W);
        }
        gemm_fp8(l, ctx, "_scaled_mm", t, m->out, m->in, b,
                 rowwise ? T : 1, rowwise ? out : 1, false);
        if (m->bias)
            mem_kernel(l, "add (bias)", KERNEL_ELEMENTWISE, 1, 2 * Y * b);
        return;
    }
    if (!rowwise) {
        bool recast = float8_recast_in_backward(m, ctx);
        struct kernel *grad = to_float8(l, ctx, &F8_GRAD, Y, 1, b);
        if (!recast || gathered)
            float8_relayout(l, ctx, "contiguous (weight, column-major)",
                            NULL, false, W);
        gemm_fp8(l, ctx, "_scaled_mm (dgrad)", t, m->in, m->out, b, 1, 1,
                 false);
        float8_relayout(l, ctx, "contiguous (grad transpose)", grad, true,
                        Y);
        if (!recast && !shared)
            float8_relayout(l, ctx, "contiguous (input, column-major)",
                            NULL, false, X);
        gemm_fp8(l, ctx, "_scaled_mm (wgrad)", m->out, m->in, t, b, 1, 1,
                 false);
    } else {
        to_float8(l, ctx, &F8_GRAD, Y, T, b);
        struct kernel *w = to_float8(l, ctx, &F8_WEIGHT, W, in, b);
        float8_relayout(l, ctx, "contiguous (weight, column-major)", w,
                        false, W);
        gemm_fp8(l, ctx, "_scaled_mm (dgrad)", t, m->in, m->out, b, T, in,
                 true);
        struct kernel *g0 = to_float8(l, ctx, &F8_GRAD_DIM0, Y, out, b);
        float8_relayout(l, ctx, "contiguous (grad transpose)", g0, false, Y);
        if (!shared) {
            struct kernel *x0 = to_float8(l, ctx, &F8_INPUT_DIM0, X, in, b);
            float8_relayout(l, ctx, "contiguous (input, column-major)", x0,
                            false, X);
        }
        gemm_fp8(l, ctx, "_scaled_mm (wgrad)", m->out, m->in, t, b, out, in,
                 true);
    }
    if (m->bias)
        mem_kernel(l, "sum (bias grad)", KERNEL_REDUCTION, 1, Y * b);
}

/* Liger-Kernel's chunking (ops/fused_linear_cross_entropy.py,
 * fused_linear_cross_entropy_forward): with BT tokens, hidden H and
 * vocabulary V, inc_factor = ceil(V / H), chunk_size =
 * next_power_of_2(ceil(BT / inc_factor)), so that a chunk's logits are
 * about as large as the input; ceil(BT / chunk_size) chunks, the last
 * possibly shorter. */
static int64_t
next_pow2(int64_t x)
{
    int64_t p = 1;
    while (p < x)
        p *= 2;
    return p;
}

/* The kernels of one chunk of C rows, LAUNCHES times (one entry per
 * kernel with that many launches): the logits GEMM in the input dtype,
 * the bias add, liger_cross_entropy_kernel (the online softmax's two
 * loads and one store of each logit, the gradient written in place of the
 * logits), grad_input's GEMM and its copy into the slice, grad_weight's
 * GEMM, its .float() and the += into the weight-dtype accumulator (the
 * addmm out_dtype path needs an fp32 accumulator, which accum_dtype=None
 * does not give), and the bias gradient's sum and add. */
static void
fused_loss_chunk(struct klist *l, const struct kernel_ctx *ctx, int64_t c,
                 int64_t H, int64_t V, bool bias, int launches, double b)
{
    double n = launches, cV = (double)c * (double)V;
    double VH = (double)V * (double)H;
    gemm_launches(l, "mm (logits chunk)", c, V, H, launches, b);
    if (bias)
        mem_kernel(l, "add (bias, chunk)", KERNEL_ELEMENTWISE, launches,
                   n * 2 * cV * b);
    mem_kernel(l, "liger_cross_entropy_kernel (grad in place)",
               KERNEL_REDUCTION, launches, n * 3 * cV * b);
    gemm_launches(l, "mm (grad_input chunk)", c, H, V, launches, b);
    mem_kernel(l, "copy (grad_input slice)", KERNEL_ELEMENTWISE, launches,
               n * 2 * (double)c * (double)H * b);
    gemm_launches(l, "mm (grad_weight chunk)", V, H, c, launches, b);
    cast_kernel(l, ctx, "to (fp32, grad_weight chunk)", launches, n * VH, b,
                4, false);
    mem_kernel(l, "add_ (grad_weight)", KERNEL_ELEMENTWISE, launches,
               n * VH * (b == 4 ? 12 : 2 * b + 4));
    if (bias)
        mem_kernel(l, "sum, add (grad_bias)", KERNEL_REDUCTION, 2 * launches,
                   n * (cV * b + 3 * (double)V * 4));
}

/* LigerFusedLinearCrossEntropyFunction (reduction "mean", no z-loss):
 * forward computes the loss and, in the same pass, the gradients of the
 * head's input and weight, chunk by chunk, so the whole logits never
 * exist; backward returns the saved gradients (scaled only when the
 * incoming gradient is not 1.0, which torch.equal checks: a comparison
 * against a new one-element tensor).  HEAD is the LM-head Linear whose
 * GEMMs this takes over. */
static void
fused_linear_cross_entropy(struct klist *l, const struct kernel_ctx *ctx,
                           const struct module *head,
                           double T, double b, enum kernel_phase ph)
{
    int64_t BT = (int64_t)T, H = head->in, V = head->out;
    if (ph == PHASE_BWD) {
        mem_kernel(l, "equal (grad_output, 1.0)", KERNEL_REDUCTION, 2, 8);
        return;
    }
    int64_t inc = (V + H - 1) / H;
    int64_t chunk = next_pow2((BT + inc - 1) / inc);
    int64_t full = BT / chunk, tail = BT - full * chunk;
    mem_kernel(l, "zeros (grad_input, grad_weight)", KERNEL_ELEMENTWISE, 2,
               (T * (double)H + (double)V * (double)H) * b);
    /* loss_1d's zeros, target != ignore_index and its sum (.item()). */
    mem_kernel(l, "zeros, ne, sum (target count)", KERNEL_REDUCTION, 3,
               4 * T + 9 * T);
    if (full > 0)
        fused_loss_chunk(l, ctx, chunk, H, V, head->bias, (int)full, b);
    if (tail > 0)
        fused_loss_chunk(l, ctx, tail, H, V, head->bias, 1, b);
    mem_kernel(l, "sum (loss)", KERNEL_REDUCTION, 1, 4 * T);
}

static void
linear(struct klist *l, const struct module *m, double T, double b,
       enum kernel_phase ph)
{
    int64_t t = (int64_t)T;
    if (ph == PHASE_FWD) {
        /* F.linear: addmm with the bias in cuBLAS's epilogue, or mm. */
        gemm(l, m->bias ? "addmm" : "mm", t, m->out, m->in, 1, b);
        return;
    }
    /* LinearBackward (AddmmBackward0 / MmBackward0): grad_input =
     * grad_out W, grad_weight = grad_out^T x, two GEMMs of their own
     * shapes; the bias gradient is a sum over tokens. */
    gemm(l, "mm (dgrad)", t, m->in, m->out, 1, b);
    gemm(l, "mm (wgrad)", m->out, m->in, t, 1, b);
    if (m->bias)
        mem_kernel(l, "sum (bias grad)", KERNEL_REDUCTION, 1,
                   T * (double)m->out * b);
}

/* A Linear reading the input an earlier sibling read (k and v after q,
 * up after gate): autograd sums the input gradients of all of them
 * before the producer's backward runs (InputBuffer::add, torch/csrc/
 * autograd/input_buffer.cpp), one add of E elements for each Linear
 * after the first, 3 E b bytes (tests/data/hf-llama-dispatch.txt: the
 * two adds after the q, k, v gradients and the one after gate's and
 * up's).  Compiled, the sum is part of the fused kernel that reads the
 * gradient next: one more read. */
static void
shared_input_grad(struct klist *l, double E, double b, bool compile)
{
    if (compile)
        mem_kernel(l, "add (input grad, fused)", KERNEL_ELEMENTWISE, 0,
                   E * b);
    else
        mem_kernel(l, "add (input grad of a shared input)",
                   KERNEL_ELEMENTWISE, 1, 3 * E * b);
}

/* Residual add closing the branch a block's norm opens (x + f(norm(x))):
 * costed with the norm.  Backward, the gradient of the branch and of the
 * skip path meet: autograd sums them (InputBuffer::add). */
static void
residual(struct klist *l, double E, double b, enum kernel_phase ph,
         bool compile)
{
    if (compile)   /* fused into the next norm's kernel: one more read */
        mem_kernel(l, "add (residual, fused)", KERNEL_ELEMENTWISE, 0, E * b);
    else
        mem_kernel(l, ph == PHASE_FWD ? "add (residual)"
                                      : "add (grad accumulate)",
                   KERNEL_ELEMENTWISE, 1, 3 * E * b);
}

static void
layernorm(struct klist *l, double E, double T, double b,
          enum kernel_phase ph, bool compile)
{
    (void)compile;   /* one kernel each way already */
    if (ph == PHASE_FWD) {
        /* native_layer_norm: read x, write y, fp32 mean and rstd. */
        struct kernel *k = push(l, "layer_norm", KERNEL_REDUCTION, 1);
        k->bytes = 2 * E * b + 8 * T;
        k->flops = 8 * E;
        return;
    }
    /* native_layer_norm_backward: the input gradient (read grad, x,
     * write) and the gamma/beta partial sums and their final sum. */
    struct kernel *k = push(l, "layer_norm_backward", KERNEL_REDUCTION, 1);
    k->bytes = 3 * E * b + 8 * T;
    k->flops = 16 * E;
    mem_kernel(l, "layer_norm_backward (gamma, beta)", KERNEL_REDUCTION, 2,
               2 * E * b);
}

static void
rmsnorm(struct klist *l, const struct kernel_ctx *ctx, double E, double T,
        double b, enum kernel_phase ph)
{
    if (ctx->compile) {
        if (ph == PHASE_FWD) {
            mem_kernel(l, "fused rms_norm", KERNEL_REDUCTION, 1, 2 * E * b);
        } else {
            mem_kernel(l, "fused rms_norm backward", KERNEL_REDUCTION, 1,
                       3 * E * b);
            mem_kernel(l, "fused rms_norm backward (weight)",
                       KERNEL_REDUCTION, 1, 2 * E * b);
        }
        return;
    }
    if (ph == PHASE_FWD) {
        /* LlamaRMSNorm.forward: x.to(float32); pow(2); mean(-1); + eps;
         * rsqrt; x * rsqrt; .to(input_dtype); weight * x. */
        cast_kernel(l, ctx, "to (fp32)", 1, E, b, 4, false);
        mem_kernel(l, "pow", KERNEL_ELEMENTWISE, 1, 8 * E);
        mem_kernel(l, "mean", KERNEL_REDUCTION, 1, 4 * E + 4 * T);
        mem_kernel(l, "add (eps)", KERNEL_ELEMENTWISE, 1, 8 * T);
        mem_kernel(l, "rsqrt", KERNEL_ELEMENTWISE, 1, 8 * T);
        strided_kernel(l, "mul (x * rsqrt)", 1, 8 * E, E);
        cast_kernel(l, ctx, "to (input dtype)", 1, E, 4, b, false);
        strided_kernel(l, "mul (weight)", 1, 2 * E * b, E);
        return;
    }
    /* The autograd nodes of the same, in reverse: MulBackward0 (two
     * products, the weight's summed over tokens), ToCopyBackward0,
     * MulBackward0 (grad x rsqrt; grad x x summed over the row),
     * RsqrtBackward0, MeanBackward1 (expand / d), PowBackward0, the two
     * gradients of x added, ToCopyBackward0.  RsqrtBackward0 is
     * derivatives.yaml's -0.5 * grad * result.pow(3): three kernels on
     * the per-token statistic (mul by the scalar, pow, mul; 8 + 8 + 12
     * bytes a token).  PowBackward0 is FunctionsManual.cpp's
     * pow_backward, grad * (2 * x.pow(1)): x.pow(1) is a copy
     * (pow_Tensor_Scalar_out copies the base for the exponent 1), then
     * the product by the scalar and by the gradient, three kernels on E
     * fp32 elements (8 + 8 + 12 bytes an element).  PyTorch dispatches
     * exactly these (tests/data/hf-llama-dispatch.txt). */
    strided_kernel(l, "mul (grad x weight)", 1, 2 * E * b, E);
    mem_kernel(l, "mul (grad x x)", KERNEL_ELEMENTWISE, 1, 3 * E * b);
    mem_kernel(l, "sum (weight grad)", KERNEL_REDUCTION, 1, E * b);
    cast_kernel(l, ctx, "to (fp32)", 1, E, b, 4, false);
    strided_kernel(l, "mul (grad x rsqrt)", 1, 8 * E, E);
    mem_kernel(l, "mul (grad x x)", KERNEL_ELEMENTWISE, 1, 12 * E);
    mem_kernel(l, "sum (row)", KERNEL_REDUCTION, 1, 4 * E + 4 * T);
    mem_kernel(l, "rsqrt_backward", KERNEL_ELEMENTWISE, 3, 28 * T);
    strided_kernel(l, "expand / mean_backward", 1, 4 * E + 4 * T, E);
    mem_kernel(l, "pow_backward", KERNEL_ELEMENTWISE, 3, 28 * E);
    mem_kernel(l, "add (grad accumulate)", KERNEL_ELEMENTWISE, 1, 12 * E);
    cast_kernel(l, ctx, "to (input dtype)", 1, E, 4, b, false);
}

/* apply_rotary_pos_emb on one tensor of E elements: q * cos +
 * rotate_half(q) * sin, rotate_half being two slices, a negation and a
 * cat.  Forward: neg (half the tensor), cat, two muls, add.  Backward:
 * the product by sin, the negation's (half), slice_backward for each
 * half (zeros, then a copy into its half: two kernels each), their sum,
 * the product by cos and its sum with that: nine kernels (tests/data/
 * hf-llama-dispatch.txt: four slice_backward a layer).  The gradient
 * comes out contiguous in q's (B, h, T, d) shape (the zeros' layout wins
 * the adds): the caller adds its clone back. */
static void
rotary(struct klist *l, double E, double b, enum kernel_phase ph,
       const char *fwd_name, const char *bwd_name)
{
    /* All strided but the zero fills and the sum of the two
     * slice_backward outputs: q is a transpose, cos and sin are
     * broadcast over heads, rotate_half slices, and the adds meet q * cos
     * in q's layout with the cat's contiguous one.  Forward the two
     * products, the negation of a half, the cat and the add, 4.5 E
     * elements; backward the two products, the negation's, the two
     * copies into halves and the last add, 4.5 E. */
    if (ph == PHASE_FWD)
        strided_kernel(l, fwd_name, 5, 10 * E * b, 4.5 * E);
    else
        strided_kernel(l, bwd_name, 9, 15 * E * b, 4.5 * E);
}

/* The casts around the fp32 rotary styles, on q or k (IS_Q): into fp32
 * (b + 4 bytes an element) or, BACK, out of it (4 + b); in backward the
 * same on the gradient.  The cast kernel, or NULL in fp32 (none). */
static struct kernel *
rope_cast(struct klist *l, const struct kernel_ctx *ctx, double E, double b,
          enum kernel_phase ph, bool is_q, bool back)
{
    static const char *const names[2][2][2] = {
        {{"to (fp32, k)", "type_as (k)"},
         {"to (fp32, grad k)", "to (input dtype, grad k)"}},
        {{"to (fp32, q)", "type_as (q)"},
         {"to (fp32, grad q)", "to (input dtype, grad q)"}}};
    return cast_kernel(l, ctx, names[is_q][ph != PHASE_FWD][back], 1, E,
                       back ? 4 : b, back ? b : 4, ctx->compile);
}

/* torchtitan's (and Meta's reference) apply_rotary_emb on one tensor of
 * E elements (torchtitan/models/llama/model.py at 9dec370):
 * view_as_complex(x.float().reshape(..., -1, 2)) * freqs_cis, then
 * view_as_real(...).flatten(3).type_as(x).  The reshapes and views are
 * free; three kernels are not: the cast to fp32 (b + 4 bytes an element),
 * the complex product (an fp32 pair read and written, 8, plus freqs_cis,
 * FREQ bytes) and the cast back (4 + b).  Backward is the same three on
 * the gradient, the product by conj(freqs_cis) (mul's derivative;
 * freqs_cis is a buffer and gets none), after the copy that makes the
 * lazy conjugate real (below).  torch.compile does not fuse
 * them: Inductor has no complex code generation (torch/_inductor/
 * lowering.py, unsupported_input_tensor: "Torchinductor does not support
 * code generation for complex operators"; decomposition.py turns a
 * complex add into real ones, not a product) and calls aten's complex mul
 * between its fused casts (its output code for this function, PyTorch
 * 2.15: cpp_fused__to_copy_view_view_as_complex_0, aten.mul.Tensor on
 * complex64, ...), merging only the cast of k's result with the cast of
 * q's input: five launches for the pair each way, the bytes as eager's. */
static struct kernel *
rotary_complex(struct klist *l, const struct kernel_ctx *ctx, double E,
               double b, double freq, enum kernel_phase ph, bool is_q)
{
    bool fwd = ph == PHASE_FWD;
    struct kernel *first_cast = rope_cast(l, ctx, E, b, ph, is_q, false);
    /* Eager, conj(freqs_cis) is a lazy conjugate (the conj bit) that the
     * product cannot take: the Conjugate fallback materializes it first,
     * one clone of freqs_cis for each of q and k, read and written
     * (tests/data/torchtitan-llama-dispatch.txt: two clone per block
     * backward, of complex64 with the conj bit set).  Compiled, once for
     * both (the caller). */
    if (!fwd && !ctx->compile)
        mem_kernel(l, is_q ? "clone (conj freqs_cis, q)"
                           : "clone (conj freqs_cis, k)",
                   KERNEL_ELEMENTWISE, 1, 2 * freq);
    strided_kernel(l, fwd ? (is_q ? "mul (complex, q)" : "mul (complex, k)")
                          : (is_q ? "mul (complex conj, grad q)"
                                  : "mul (complex conj, grad k)"),
                   1, 8 * E + freq, E / 2);
    rope_cast(l, ctx, E, b, ph, is_q, true);
    return first_cast;
}

/* The Foundation Model Stack's RotaryEmbedding.adjusted_qk on one tensor
 * of E elements (fms/modules/positions.py, the code fms-fsdp trains):
 * q_ = q.float().view(..., -1, 2), then freqs.unsqueeze(2).mul(
 * q_.unsqueeze(-2)) broadcasts every pair against its 2x2 rotation (2E
 * fp32 products written), .sum(5) adds the pairs back (read 8E bytes,
 * write 4E), .flatten(3) is a view and .type_as(q) casts back.  The
 * rotations are gathered once a call (cached_freqs[...][position_ids]:
 * tokens x head_dim / 2 x 2 x 2 fp32, read and written).  Backward: the
 * cast of the gradient, mul's derivative (the expanded gradient times the
 * rotations, 2E products), the sum over the broadcast dimension, the
 * cast back.  Under torch.compile all of it is real arithmetic and fuses
 * into one kernel each way, as HF's does (the caller's fused case). */
static void
rotary_matrix(struct klist *l, const struct kernel_ctx *ctx, double E,
              double b, enum kernel_phase ph, bool is_q)
{
    bool fwd = ph == PHASE_FWD;
    rope_cast(l, ctx, E, b, ph, is_q, false);
    strided_kernel(l, fwd ? (is_q ? "mul (rotations, q)"
                                  : "mul (rotations, k)")
                          : (is_q ? "mul (rotations, grad q)"
                                  : "mul (rotations, grad k)"),
                   1, 4 * E + 8 * E, 2 * E);
    mem_kernel(l, fwd ? (is_q ? "sum (pairs, q)" : "sum (pairs, k)")
                      : (is_q ? "sum (broadcast, grad q)"
                              : "sum (broadcast, grad k)"),
               KERNEL_REDUCTION, 1, 8 * E + 4 * E);
    rope_cast(l, ctx, E, b, ph, is_q, true);
}

/* Integer instructions per element of the score matrix that a fused
 * kernel's dropout issues, counted in flash-attention's source
 * (csrc/flash_attn/src/philox.cuh, dropout.h): one philox() call, seven
 * rounds of two 32x32->64-bit multiplies (two issue slots each), two
 * three-input XORs and, in six of them, two key increments (54 slots),
 * yields 16 random bytes, one per element (3.4 an element); widening the
 * bytes, the f16x2 threshold compare and the AND that zeroes dropped
 * values add about 1.5.  Backward regenerates the same mask and encodes
 * it in the sign bit (encode_dropout_in_sign_bit), a select per element
 * more.  The benchmarks the efficiency table comes from ran without
 * dropout (benchmark_flash_attention.py: dropout_p = 0.0), so this is
 * added on top; Triton, xformers and cuDNN draw Philox numbers per
 * element as well and are costed alike (an estimate for them). */
#define DROPOUT_INT_OPS_FWD 5.0
#define DROPOUT_INT_OPS_BWD 6.0

/* Hugging Face's Llama-family eager attention takes the softmax of the
 * P compute-dtype scores in fp32 and casts the probabilities back
 * (eager_attention_forward: softmax(attn_weights, dim=-1,
 * dtype=torch.float32).to(query.dtype)), where the math benchmarks the
 * table holds keep the compute dtype throughout: forward the softmax
 * writes 4 bytes a score instead of B, and the cast back reads them;
 * backward the cast's gradient is cast up, and _softmax_backward_data
 * reads the fp32 gradient and output (writing the scores' gradient in
 * the compute dtype). */
static void
math_softmax_fp32(struct klist *l, const struct kernel_ctx *ctx, double P,
                  double b, enum kernel_phase ph)
{
    if (ph == PHASE_BWD) {
        cast_kernel(l, ctx, "to (fp32, probabilities' gradient)", 1, P, b, 4,
                    false);
        mem_kernel(l, "softmax backward in fp32 (beyond the table's)",
                   KERNEL_ELEMENTWISE, 0, 2 * (4 - b) * P);
    } else {
        mem_kernel(l, "softmax in fp32 (beyond the table's)",
                   KERNEL_ELEMENTWISE, 0, (4 - b) * P);
        cast_kernel(l, ctx, "to (query dtype, probabilities)", 1, P, 4, b,
                    false);
    }
}

/* The rotary style attention M runs: --rotary's (ROTARY) where the model
 * rotates at all, else the model's own. */
static enum rope_style
applied_rope(const struct module *m, int rotary)
{
    return m->rope != ROPE_NONE && rotary != ROPE_NONE
               ? (enum rope_style)rotary
               : m->rope;
}

/* Whether attention M runs Hugging Face's code through SDPA
 * (sdpa_attention_forward, hf_version.h), known by its rotate_half
 * rotary; eager attention takes another path. */
static bool
hf_sdpa(const struct module *m, const struct kernel_ctx *ctx)
{
    return ctx->attn != ATTN_MATH
           && applied_rope(m, ctx->rotary) == ROPE_HALF;
}

/* Hugging Face's code at a transformers release that copies q, k and v
 * contiguous before SDPA, eager. */
static bool
hf_contiguous_copies(const struct module *m, const struct kernel_ctx *ctx)
{
    return !ctx->compile && hf_sdpa(m, ctx)
           && hf_sdpa_copies_qkv(ctx->transformers_version);
}

/* attn_output.transpose(1, 2).contiguous() before o_proj.  SDPA's fused
 * kernels give the output q's layout: the flash kernel runs on
 * query.transpose(1, 2) and allocates its output empty_like it
 * (flash_api.cpp, mha_fwd: out = at::empty_like(q_padded)), then
 * transposes back (attention.cu, _scaled_dot_product_flash_attention
 * _cuda).  Where q is the transpose of a (B, T, h, d) tensor (Hugging
 * Face, torchtitan), the transpose back is contiguous and .contiguous()
 * returns it; FMS's q is contiguous in (B, h, T, d) (its rotary
 * embedding's .contiguous()), so the forward copies
 * (tests/data/fms-llama-dispatch.txt: the forward's clone).  The math
 * path's PV bmm writes (B, h, T, d) contiguous: a copy there too.
 * transformers 4.48 to 4.55 copy q, k and v contiguous before SDPA
 * (hf_version.h), so there too.  Compiled, Inductor fuses the copy into a
 * neighbour. */
bool
kernel_attention_output_copied(const struct module *m,
                               const struct kernel_ctx *ctx)
{
    return !ctx->compile
           && (ctx->attn == ATTN_MATH
               || applied_rope(m, ctx->rotary) == ROPE_MATRIX
               || hf_contiguous_copies(m, ctx));
}

bool
kernel_attention_native_gqa(const struct module *m,
                            const struct kernel_ctx *ctx)
{
    return hf_sdpa(m, ctx)
           && m->kv_heads > 0 && m->kv_heads < m->heads && m->window <= 0
           && hf_sdpa_native_gqa(ctx->transformers_version,
                                 ctx->torch_version);
}

/* FMS's rotations: adjusted_qk gathers the 2x2 fp32 matrices for the
 * positions in every layer (cached[position_ids]), and the product with q
 * and with k saves that gather, T x d/2 x 4 fp32 entries (tests/data/
 * llama-saved-bytes.txt).  Hugging Face's cos and sin and torchtitan's
 * freqs_cis are made once a step and shared by every layer; compiled,
 * the partitioner recomputes the gather from the cache and the
 * positions, saving nothing. */
double
kernel_rotary_saved_bytes(const struct module *m,
                          const struct kernel_ctx *ctx)
{
    if (ctx->compile || applied_rope(m, ctx->rotary) != ROPE_MATRIX)
        return 0;
    return (double)ctx->micro_batch * (double)ctx->seq_len
           * (double)m->head_dim / 2 * 4 * 4;
}

static void
attention(struct klist *l, const struct module *m,
          const struct kernel_ctx *ctx, double T, double b,
          enum kernel_phase ph)
{
    double h = (double)m->heads, kv = (double)m->kv_heads;
    double d = (double)m->head_dim, S = (double)ctx->seq_len;
    double keys = (m->window > 0 && (double)m->window < S)
                      ? (double)m->window : S;
    double q_el = T * h * d, kv_el = T * kv * d;
    bool fused = ctx->compile;

    enum rope_style rope = applied_rope(m, ctx->rotary);
    if (rope == ROPE_COMPLEX) {
        /* freqs_cis: seq_len x head_dim / 2 complex64 a tensor. */
        double freq = S * d * 4;
        /* q's cast to fp32 (none in fp32) */
        struct kernel *q_cast = rotary_complex(l, ctx, q_el, b, freq, ph,
                                               true);
        rotary_complex(l, ctx, kv_el, b, freq, ph, false);
        if (fused) {
            /* Inductor runs q's first cast in the kernel of k's last; in
             * backward it also copies conj(freqs_cis) out once (aten
             * clone of the lazy conjugate, read and written). */
            if (q_cast != NULL)
                q_cast->launches = 0;
            if (ph != PHASE_FWD)
                mem_kernel(l, "clone (conj freqs_cis)", KERNEL_ELEMENTWISE, 1,
                           2 * freq);
        }
    } else if (rope != ROPE_NONE && fused) {
        mem_kernel(l, ph == PHASE_FWD ? "fused rotary (q, k)"
                                      : "fused rotary backward (q, k)",
                   KERNEL_ELEMENTWISE, 1, 2 * (q_el + kv_el) * b);
    } else if (rope == ROPE_MATRIX) {
        if (ph == PHASE_FWD) {
            /* adjusted_qk makes position_ids itself when the model is
             * called without them, as fms-fsdp calls it: arange, repeat
             * over the batch, the max of the first column and its sum
             * with the length for compute_freqs_cis (int64). */
            mem_kernel(l, "position_ids (arange, repeat, max, add)",
                       KERNEL_ELEMENTWISE, 4, 8 * S + 16 * T);
            /* the rotations take no gradient */
            mem_kernel(l, "index (rotations)", KERNEL_ELEMENTWISE, 1,
                       2 * T * d * 8);
        }
        rotary_matrix(l, ctx, q_el, b, ph, true);
        rotary_matrix(l, ctx, kv_el, b, ph, false);
    } else if (rope == ROPE_HALF) {
        rotary(l, q_el, b, ph, "rotary (q)", "rotary backward (q)");
        rotary(l, kv_el, b, ph, "rotary (k)", "rotary backward (k)");
    }
    /* Hugging Face and FMS rotate q and k after their transpose to
     * (B, h, T, d), and their gradients come back contiguous in that
     * shape (HF: the slice_backward zeros' layout; FMS: its
     * .contiguous()), so the view back to the projection's (B, T, h d)
     * copies each (reshape's clone; tests/data/hf-llama-dispatch.txt and
     * fms-llama-dispatch.txt: two clone a layer backward).  torchtitan
     * rotates before the transpose: no copy. */
    if (!fused && ph != PHASE_FWD
        && (rope == ROPE_HALF || rope == ROPE_MATRIX)) {
        strided_kernel(l, "clone (grad q, transpose back)", 1,
                       2 * q_el * b, q_el);
        strided_kernel(l, "clone (grad k, transpose back)", 1,
                       2 * kv_el * b, kv_el);
    }
    /* transformers 4.48 to 4.55: query/key/value.contiguous() before
     * SDPA.  The rotated q and k live in the projections' (B, T, h, d)
     * order and v is a transpose, so each is copied; after repeat_kv,
     * k and v are contiguous already.  Their gradients flow back as
     * views. */
    bool native_gqa = kernel_attention_native_gqa(m, ctx);
    bool repeated = kv < h && !native_gqa;
    if (ph == PHASE_FWD && hf_contiguous_copies(m, ctx)) {
        strided_kernel(l, "contiguous (q)", 1, 2 * q_el * b, q_el);
        if (!repeated)
            strided_kernel(l, "contiguous (k, v)", 2, 4 * kv_el * b,
                           2 * kv_el);
    }
    /* Grouped-query attention: repeat_kv's expand + reshape copies k and
     * v to every query head before SDPA; backward sums the copies.  From
     * transformers 4.54 on PyTorch 2.5, Hugging Face's code hands SDPA
     * the KV heads with enable_gqa instead (kernel_attention_native_gqa),
     * and the flash kernel reads them as they are. */
    if (repeated) {
        if (ph == PHASE_FWD)
            strided_kernel(l, "repeat_kv (k, v)", 2,
                           2 * (kv_el + q_el) * b,
                           ctx->compile ? 0 : 2 * q_el);
        else
            mem_kernel(l, "sum (repeat_kv backward)", KERNEL_REDUCTION, 2,
                       2 * (q_el + kv_el) * b);
    }

    /* The score work: 4 T keys h d forward over the full matrix, half of
     * it under a causal mask unless a window already bounds it; backward
     * 2.5x forward (five products against two: Dao 2023, §3.1.2). */
    double full = 4 * T * keys * h * d;
    double fwd = m->causal && keys == S ? full / 2 : full;
    struct kernel *k;
    if (ctx->attn == ATTN_MATH) {
        /* Math path (F.scaled_dot_product_attention's math backend, or
         * eager attention): bmm QK^T, scale, mask, softmax, bmm PV
         * forward; backward their gradients.  The table measures the
         * whole path; its S x S scores are what the launches add. */
        k = push(l, ph == PHASE_FWD ? "math attention (bmm, softmax, bmm)"
                                    : "math attention backward",
                 ph == PHASE_FWD ? KERNEL_ATTN_FWD : KERNEL_ATTN_BWD,
                 ph == PHASE_FWD ? 5 : 8);
        if (m->softmax_fp32 && b < 4)
            math_softmax_fp32(l, ctx, T * h * keys, b, ph);
    } else {
        /* Flash kernels: one forward; backward the dot(dO, O)
         * preprocessing, the main kernel and the dQ conversion
         * (flash-attn csrc flash_bwd_launch_template.h). */
        k = push(l, ph == PHASE_FWD ? "flash attention forward"
                                    : "flash attention backward",
                 ph == PHASE_FWD ? KERNEL_ATTN_FWD : KERNEL_ATTN_BWD,
                 ph == PHASE_FWD ? 1 : 3);
    }
    k->flops = ph == PHASE_FWD ? fwd : 2.5 * fwd;
    k->attn = ctx->attn;
    k->head_dim = m->head_dim;
    k->seq = keys;
    k->causal = m->causal && keys == S;
    k->bytes = (ph == PHASE_FWD ? 2 : 4) * (q_el + kv_el) * b;
    if (m->dropout > 0 && ctx->attn != ATTN_MATH) {
        /* Each computed score (4 d FLOPs of QK^T and PV forward) gets a
         * random byte and a compare in the kernel. */
        double scores = fwd / (4 * d);
        k->int_ops = scores * (ph == PHASE_FWD ? DROPOUT_INT_OPS_FWD
                                               : DROPOUT_INT_OPS_BWD);
        k->name = ph == PHASE_FWD ? "flash attention forward (dropout)"
                                  : "flash attention backward (dropout)";
    } else if (m->dropout > 0) {
        /* Math path: nn.functional.dropout on the B h S x S
         * probabilities (native_dropout: read them, write the output and
         * a one-byte mask; backward the gradient and the mask in, the
         * gradient out), the whole matrix whatever the mask. */
        double probs = T * h * S;
        mem_kernel(l, ph == PHASE_FWD ? "native_dropout (probabilities)"
                                      : "native_dropout_backward "
                                        "(probabilities)",
                   KERNEL_ELEMENTWISE, 1, probs * (2 * b + 1));
    }

    /* The output's copy before o_proj (kernel_attention_output_copied),
     * and on the math path the same copy of its gradient; the fused
     * kernels' output gradient flows back as a view. */
    if (kernel_attention_output_copied(m, ctx)
        && (ph == PHASE_FWD || ctx->attn == ATTN_MATH))
        strided_kernel(l, ph == PHASE_FWD ? "transpose copy (output)"
                                          : "transpose copy (grad)",
                       1, 2 * q_el * b, q_el);
}

static void
mha(struct klist *l, const struct module *m, const struct kernel_ctx *ctx,
    double T, double b, enum kernel_phase ph)
{
    /* nn.MultiheadAttention in training: the packed in-projection, the
     * math attention core (F.multi_head_attention_forward), the
     * out-projection. */
    int64_t t = (int64_t)T, e = m->out;
    if (ph == PHASE_FWD)
        gemm(l, "addmm (in_proj)", t, 3 * e, e, 1, b);
    else {
        gemm(l, "mm (in_proj dgrad)", t, e, 3 * e, 1, b);
        gemm(l, "mm (in_proj wgrad)", 3 * e, e, t, 1, b);
    }
    struct module core = *m;
    core.kind = LAYER_ATTENTION;
    core.head_dim = m->out / (m->heads > 0 ? m->heads : 1);
    core.kv_heads = m->heads;
    core.causal = false;
    core.window = 0;
    core.rope = ROPE_NONE;
    struct kernel_ctx math = *ctx;
    math.attn = ATTN_MATH;
    math.compile = false;
    attention(l, &core, &math, T, b, ph);
    if (ph == PHASE_FWD)
        gemm(l, "addmm (out_proj)", t, e, e, 1, b);
    else {
        gemm(l, "mm (out_proj dgrad)", t, e, e, 1, b);
        gemm(l, "mm (out_proj wgrad)", e, e, t, 1, b);
    }
}

int
kernel_list(const struct module *m, const struct kernel_ctx *ctx,
            enum kernel_phase ph, struct kernel *out)
{
    struct klist l = {out, 0};
    const enum kernel_phase asked = ph;
    if (ph == PHASE_RECOMPUTE)
        ph = PHASE_FWD;
    const double T = (double)ctx->micro_batch * (double)ctx->seq_len;
    const double b = ctx->act_bytes;
    const double E = T * (double)m->out;
    const bool fwd = ph == PHASE_FWD;

    switch (m->kind) {
    case LAYER_LINEAR:
        /* Under the fused loss the head's GEMMs run inside it. */
        if (ctx->fused_loss && layer_feeds_loss(m))
            break;
        if (ctx->float8 != 0 && layer_float8_linear(m))
            linear_float8(&l, m, ctx, T, b, asked);
        else
            linear(&l, m, T, b, ph);
        if (asked == PHASE_BWD && layer_shares_input(m))
            shared_input_grad(&l, T * (double)m->in, b, ctx->compile);
        break;
    case LAYER_EMBEDDING:
        if (fwd) {
            /* embedding -> index_select: read T rows, write them. */
            mem_kernel(&l, "embedding (index_select)", KERNEL_ELEMENTWISE,
                       1, 2 * E * b + 8 * T);
        } else {
            /* embedding_dense_backward_cuda: a zeroed dense gradient,
             * the indices radix-sorted (cub), then per-segment sums of
             * the gradient rows into it. */
            mem_kernel(&l, "zeros (weight grad)", KERNEL_ELEMENTWISE, 1,
                       (double)m->in * (double)m->out * b);
            mem_kernel(&l, "sort (indices)", KERNEL_REDUCTION, 4, 32 * T);
            mem_kernel(&l, "embedding_backward (segment sums)",
                       KERNEL_REDUCTION, 4, E * (b + 8) + E * b);
        }
        break;
    case LAYER_LAYERNORM:
        layernorm(&l, E, T, b, ph, ctx->compile);
        if (in_block(m, ctx->layer_cls))
            residual(&l, E, b, ph, ctx->compile);
        break;
    case LAYER_RMSNORM:
        rmsnorm(&l, ctx, E, T, b, ph);
        if (in_block(m, ctx->layer_cls))
            residual(&l, E, b, ph, ctx->compile);
        break;
    case LAYER_ACTIVATION:
        /* silu / gelu and their backward (grad and input in, grad out).
         * Compiled, the activation fuses into the product after it. */
        if (ctx->compile && feeds_mul(m))
            break;
        mem_kernel(&l, fwd ? "activation" : "activation_backward",
                   KERNEL_ELEMENTWISE, 1, (fwd ? 2 : 3) * E * b);
        break;
    case LAYER_MUL:
        if (ctx->compile)
            mem_kernel(&l, fwd ? "fused act x up" : "fused act x up "
                       "backward", KERNEL_ELEMENTWISE, 1,
                       (fwd ? 3 : 5) * E * b);
        else if (fwd)
            mem_kernel(&l, "mul", KERNEL_ELEMENTWISE, 1, 3 * E * b);
        else   /* MulBackward0: grad x other, grad x self */
            mem_kernel(&l, "mul (MulBackward0)", KERNEL_ELEMENTWISE, 2,
                       6 * E * b);
        break;
    case LAYER_DROPOUT:
        /* fused_dropout / native_dropout_backward (Dropout.cu): x in,
         * output and a one-byte mask out; backward the gradient and the
         * mask in, the gradient out.  Compiled, Inductor draws the mask
         * inside the neighbouring fused kernel and redraws it in backward
         * from the saved seed, so nothing stands alone. */
        if (ctx->compile)
            break;
        mem_kernel(&l, fwd ? "native_dropout" : "native_dropout_backward",
                   KERNEL_ELEMENTWISE, 1, E * (2 * b + 1));
        break;
    case LAYER_ATTENTION:
        attention(&l, m, ctx, T, b, ph);
        break;
    case LAYER_MHA:
        mha(&l, m, ctx, T, b, ph);
        break;
    case LAYER_CROSS_ENTROPY: {
        double V = T * (double)m->out;   /* logits */
        const struct module *head = layer_loss_head(m);
        if (ctx->fused_loss && head != NULL) {
            fused_linear_cross_entropy(&l, ctx, head, T, b, ph);
        } else if (ctx->compile) {
            /* Inductor fuses upcast, log-softmax and the loss: the
             * logits are read once, their gradient written once. */
            mem_kernel(&l, fwd ? "fused cross_entropy" : "fused "
                       "cross_entropy backward", KERNEL_REDUCTION, 1,
                       (fwd ? 1 : 2) * V * b);
        } else if (ctx->native_loss && fwd) {
            /* cross_entropy on the logits as the head returns them
             * (fms-fsdp's train loop, fms_fsdp/utils/train_utils.py at
             * 4ffb9bd: CrossEntropyLoss()(output.view(-1, V), label)):
             * log_softmax reads and writes them in their dtype (fp32
             * accumulation inside), nll_loss gathers. */
            mem_kernel(&l, "log_softmax", KERNEL_REDUCTION, 1, 2 * b * V);
            mem_kernel(&l, "nll_loss", KERNEL_REDUCTION, 1, 16 * T);
        } else if (ctx->native_loss) {
            mem_kernel(&l, "nll_loss_backward (zeros, scatter)",
                       KERNEL_ELEMENTWISE, 2, b * V);
            mem_kernel(&l, "log_softmax_backward", KERNEL_REDUCTION, 1,
                       3 * b * V);
        } else if (fwd) {
            /* logits.float() (LlamaForCausalLM.forward), log_softmax,
             * nll_loss. */
            cast_kernel(&l, ctx, "to (fp32 logits)", 1, V, b, 4, false);
            mem_kernel(&l, "log_softmax", KERNEL_REDUCTION, 1, 8 * V);
            mem_kernel(&l, "nll_loss", KERNEL_REDUCTION, 1, 16 * T);
        } else {
            mem_kernel(&l, "nll_loss_backward (zeros, scatter)",
                       KERNEL_ELEMENTWISE, 2, 4 * V);
            mem_kernel(&l, "log_softmax_backward", KERNEL_REDUCTION, 1,
                       12 * V);
            cast_kernel(&l, ctx, "to (grad dtype)", 1, V, 4, b, false);
        }
        break;
    }
    case LAYER_CONTAINER:
    case LAYER_PARAMETER:
        break;
    }
    return l.n;
}
