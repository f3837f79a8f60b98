/*
 * layer.c: FLOPs, bytes and saved activations per leaf layer.
 *
 * Conventions, with T tokens in the micro-batch, b bytes per activation:
 * - A GEMM of (M x K) by (K x N) costs 2MNK FLOPs; a Linear's backward is
 *   two such GEMMs (input gradient and weight gradient), hence 2x forward
 *   (Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
 *   Clusters Using Megatron-LM", SC'21, Appendix: 3x forward per step).
 * - Attention core: QK^T and PV are 2 * 2 * T * s * h * d FLOPs forward over
 *   the full score matrix; a causal kernel (FlashAttention-2) skips the
 *   upper triangle, executing half; its backward executes 2.5x forward
 *   (Dao, "FlashAttention-2", 2023, Section 4: 5 matmuls vs 2).  Model
 *   FLOPs (MFU) count the attention the model does, causal half and
 *   window included, with backward at 2x forward; PaLM's 6N + 12LHQT
 *   (Chowdhery et al. 2022, Appendix B) counts the full matrix, which
 *   palm_flops keeps for sources that report by it (fms-fsdp,
 *   torchtitan, nanoGPT).
 * - Saved activations follow what PyTorch autograd keeps: a Linear its
 *   input (a tensorwise float8 Linear float8 copies of its input and
 *   weight, layer_float8_tensorwise_saved_bytes), a norm its input (plus
 *   fp32 statistics), an activation function its input, an elementwise
 *   product both inputs, FlashAttention Q, K, V, the output and the fp32
 *   log-sum-exp, cross-entropy the fp32 logits; one storage saved by
 *   several nodes counts once (doc/compute-model.md, "Memory: what a
 *   layer saves for backward").
 *   Korthikanti et al., "Reducing Activation Recomputation in Large
 *   Transformer Models" (2022), Section 4, itemise the same tensors.
 */
#include "layer.h"

#include <string.h>

int
layer_is_compute(const struct module *m)
{
    return m->kind != LAYER_CONTAINER && m->kind != LAYER_PARAMETER;
}

/* q/k/v and gate/up projections read the same input tensor, which
 * autograd saves once: a Linear shares the saved input of the nearest
 * earlier sibling Linear with the same input width, looking past
 * activation functions (SwiGLU runs gate, act_fn, up) but not past
 * anything else (o_proj follows the attention core and reads its output). */
static int
is_activation(const struct module *m)
{
    return m->kind == LAYER_ACTIVATION;
}

static int
is_not_compute(const struct module *m)
{
    return !layer_is_compute(m);
}

/* The nearest sibling registered before M that PASS does not look past,
 * or NULL. */
static const struct module *
earlier_sibling(const struct module *m, int (*pass)(const struct module *))
{
    const struct module *p = m->parent;
    if (p == NULL)
        return NULL;
    int i = 0;
    while (i < p->n_children && p->children[i] != m)
        i++;
    while (--i >= 0)
        if (!pass(p->children[i]))
            return p->children[i];
    return NULL;
}

bool
layer_shares_input(const struct module *m)
{
    if (m->kind != LAYER_LINEAR)
        return 0;
    const struct module *s = earlier_sibling(m, is_activation);
    return s != NULL && s->kind == LAYER_LINEAR && s->in == m->in;
}

const struct module *
layer_last_compute_leaf(const struct module *m)
{
    for (int i = m->n_children - 1; i >= 0; i--) {
        const struct module *leaf = layer_last_compute_leaf(m->children[i]);
        if (leaf != NULL)
            return leaf;
    }
    return m->n_children == 0 && layer_is_compute(m) ? m : NULL;
}

void
layer_work(const struct module *m, int64_t micro_batch, int64_t seq_len,
           int act_bytes, struct layer_work *w)
{
    const double T = (double)micro_batch * (double)seq_len;
    const double b = act_bytes;
    memset(w, 0, sizeof *w);

    switch (m->kind) {
    case LAYER_LINEAR: {
        double in = (double)m->in, out = (double)m->out;
        w->fwd_flops = 2 * T * in * out;
        w->bwd_flops = 2 * w->fwd_flops;
        w->model_flops = w->palm_flops = w->fwd_flops;
        w->fwd_bytes = (T * in + in * out + T * out) * b;
        w->bwd_bytes = 2 * w->fwd_bytes;
        w->saved_bytes = layer_shares_input(m) ? 0 : T * in * b;
        w->gemm_m = (int64_t)T;
        w->gemm_n = m->out;
        w->gemm_k = m->in;
        w->fwd_kernels = 1;
        w->bwd_kernels = m->bias ? 3 : 2;
        break;
    }
    case LAYER_EMBEDDING: {
        double dim = (double)m->out;
        /* Gather T rows; backward zero-fills the dense weight gradient and
         * scatter-adds T rows into it. */
        w->fwd_bytes = 2 * T * dim * b;
        w->bwd_bytes = (double)m->in * dim * b + 2 * T * dim * b;
        w->saved_bytes = T * 8;  /* int64 indices */
        w->fwd_kernels = 1;
        w->bwd_kernels = 2;
        break;
    }
    case LAYER_LAYERNORM: {
        /* One fused kernel each way (aten native_layer_norm). */
        double d = (double)m->out;
        w->fwd_flops = 8 * T * d;
        w->bwd_flops = 16 * T * d;
        w->fwd_bytes = 2 * T * d * b;
        w->bwd_bytes = 3 * T * d * b;
        w->saved_bytes = T * d * b + T * 4 * 2;
        w->fwd_kernels = 1;
        w->bwd_kernels = 2;
        break;
    }
    case LAYER_RMSNORM: {
        /* Eager RMSNorm as Hugging Face writes it (LlamaRMSNorm,
         * T5LayerNorm): upcast to fp32, pow, mean, rsqrt, multiply, cast
         * back, scale by the weight: seven unfused kernels that stream the
         * activation in fp32, about (4b + 28) bytes per element forward
         * and twice that backward. */
        double d = (double)m->out;
        w->fwd_flops = 4 * T * d;
        w->bwd_flops = 8 * T * d;
        w->fwd_bytes = (4 * b + 28) * T * d;
        w->bwd_bytes = 2 * w->fwd_bytes;
        w->saved_bytes = T * d * b + T * d * 4 + T * 4;
        w->fwd_kernels = 7;
        w->bwd_kernels = 10;
        break;
    }
    case LAYER_ACTIVATION: {
        double d = (double)m->out;
        w->fwd_flops = 8 * T * d;
        w->bwd_flops = 16 * T * d;
        w->fwd_bytes = 2 * T * d * b;
        w->bwd_bytes = 3 * T * d * b;
        w->saved_bytes = T * d * b;
        w->fwd_kernels = 1;
        w->bwd_kernels = 1;
        break;
    }
    case LAYER_MUL: {
        double d = (double)m->out;
        w->fwd_flops = T * d;
        w->bwd_flops = 2 * T * d;
        w->fwd_bytes = 3 * T * d * b;
        w->bwd_bytes = 5 * T * d * b;
        w->saved_bytes = 2 * T * d * b;
        w->fwd_kernels = 1;
        w->bwd_kernels = 2;
        break;
    }
    case LAYER_DROPOUT: {
        /* native_dropout reads x and writes the output and its bool mask
         * (one byte an element), which backward keeps and reads with the
         * gradient (aten/src/ATen/native/cuda/Dropout.cu). */
        double d = (double)m->out;
        w->fwd_bytes = T * d * (2 * b + 1);
        w->bwd_bytes = T * d * (2 * b + 1);
        w->saved_bytes = T * d;
        w->fwd_kernels = 1;
        w->bwd_kernels = 1;
        break;
    }
    case LAYER_ATTENTION: {
        double h = (double)m->heads, kv = (double)m->kv_heads;
        double d = (double)m->head_dim, s = (double)seq_len;
        double keys = (m->window > 0 && (double)m->window < s)
                          ? (double)m->window : s;
        double full = 4 * T * keys * h * d;
        /* A causal kernel skips the upper triangle: half the full matrix;
         * with a sliding window shorter than the sequence each query sees
         * about `window` keys already, so nothing more is skipped (the
         * first window's triangle aside). */
        w->fwd_flops = m->causal && keys == s ? full / 2 : full;
        w->bwd_flops = 2.5 * w->fwd_flops;
        w->model_flops = w->fwd_flops;
        w->palm_flops = 4 * T * s * h * d;
        w->fwd_bytes = T * (2 * h + 2 * kv) * d * b;
        w->bwd_bytes = 2 * w->fwd_bytes;
        /* SDPA keeps q, k, v, its output and the fp32 log-sum-exp; with
         * fewer KV heads it runs on repeat_kv's copies (kernel.c), so k
         * and v are kept at the query heads' width (tests/data/
         * llama-saved-bytes.txt: torchtitan's 8 heads over 2). */
        w->saved_bytes = T * 4 * h * d * b + T * h * 4;
        w->is_attention = 1;
        w->fwd_kernels = 1;
        w->bwd_kernels = 2;
        if (m->rope) {
            /* Eager rotary embedding on q and k (apply_rotary_pos_emb):
             * rotate_half's slices, negation and concatenation, two
             * multiplies and an add, each a pass over the tensor: about
             * 12 reads or writes of q and of k per direction. */
            double qk = T * (h + kv) * d * b;
            w->fwd_bytes += 12 * qk;
            w->bwd_bytes += 12 * qk;
            w->fwd_kernels += 10;
            w->bwd_kernels += 10;
        }
        break;
    }
    case LAYER_MHA: {
        /* nn.MultiheadAttention in training takes the math path: packed
         * in-projection (3 GEMMs' worth), the score matrix materialised and
         * saved, softmax, PV, out-projection. */
        double e = (double)m->out, h = (double)m->heads, s = (double)seq_len;
        double proj = 2 * T * e * 3 * e + 2 * T * e * e;
        double core = 4 * T * s * e;
        w->fwd_flops = proj + core;
        w->bwd_flops = 2 * w->fwd_flops;
        w->model_flops = w->palm_flops = w->fwd_flops;
        w->fwd_bytes = (6 * T * e + 4 * e * e + 2 * T * s * h) * b;
        w->bwd_bytes = 2 * w->fwd_bytes;
        w->saved_bytes = (5 * T * e + T * s * h) * b;
        /* dropout=P: the dropped probabilities and their one-byte mask
         * are kept too (as layer_math_scores_bytes). */
        if (m->dropout > 0)
            w->saved_bytes += T * s * h * (b + 1);
        w->gemm_m = (int64_t)T;
        w->gemm_n = 3 * m->out;
        w->gemm_k = m->out;
        w->fwd_kernels = 6;
        w->bwd_kernels = 10;
        break;
    }
    case LAYER_CROSS_ENTROPY: {
        double v = (double)m->out;
        /* HF upcasts logits to fp32, then log-softmax and NLL; backward
         * writes the fp32 gradient and casts it down. */
        w->fwd_flops = 5 * T * v;
        w->bwd_flops = 3 * T * v;
        w->fwd_bytes = T * v * (b + 4 + 4);
        w->bwd_bytes = T * v * (4 + 4 + b);
        w->saved_bytes = T * v * 4;
        w->fwd_kernels = 3;
        w->bwd_kernels = 2;
        break;
    }
    case LAYER_CONTAINER:
    case LAYER_PARAMETER:
        break;
    }
}

double
layer_math_scores_bytes(const struct module *m, int64_t micro_batch,
                        int64_t seq_len, int act_bytes)
{
    if (m->kind != LAYER_ATTENTION)
        return 0;
    /* SDPA's math backend (and eager attention) saves softmax(QK^T) for
     * both the softmax and the PV product's backward.  With dropout on
     * the probabilities, the product saves the dropped copy instead and
     * native_dropout its one-byte mask, on top of the softmax output.
     * Where the softmax runs in fp32 (Hugging Face's Llama family), the
     * softmax keeps its fp32 output and the product the cast back (or,
     * with dropout, the dropped copy of it).  The matmuls keep q, k and
     * v, not the output, and there is no log-sum-exp
     * (tests/data/llama-saved-bytes.txt, hf-eager). */
    double T = (double)micro_batch * (double)seq_len, s = (double)seq_len;
    double probs = (double)micro_batch * (double)m->heads * s * s;
    double fused_only = T * (double)m->heads * (double)m->head_dim
                            * act_bytes
                        + T * (double)m->heads * 4;
    double kept = m->softmax_fp32
                      ? probs * (4 + act_bytes) + (m->dropout > 0 ? probs : 0)
                      : probs * act_bytes
                            + (m->dropout > 0 ? probs * (act_bytes + 1) : 0);
    return kept - fused_only;
}

const struct module *
layer_reads_attention(const struct module *m)
{
    if (m->kind != LAYER_LINEAR)
        return NULL;
    const struct module *s = earlier_sibling(m, is_not_compute);
    return s != NULL && s->kind == LAYER_ATTENTION ? s : NULL;
}

const struct module *
layer_loss_head(const struct module *ce)
{
    if (ce->kind != LAYER_CROSS_ENTROPY)
        return NULL;
    const struct module *s = earlier_sibling(ce, is_not_compute);
    return s != NULL && s->kind == LAYER_LINEAR && s->out == ce->out ? s
                                                                     : NULL;
}

bool
layer_feeds_loss(const struct module *m)
{
    const struct module *p = m->parent;
    if (m->kind != LAYER_LINEAR || p == NULL)
        return false;
    int i = 0;
    while (i < p->n_children && p->children[i] != m)
        i++;
    while (++i < p->n_children)
        if (layer_is_compute(p->children[i]))
            return layer_loss_head(p->children[i]) == m;
    return false;
}

double
layer_fused_loss_saved_bytes(const struct module *m, int64_t micro_batch,
                             int64_t seq_len, int act_bytes, double saved)
{
    if (m->kind == LAYER_LINEAR && layer_feeds_loss(m))
        return 0;
    const struct module *head = layer_loss_head(m);
    if (head == NULL)
        return saved;
    /* grad_input (T x H) and grad_weight (V x H, zeros_like(weight): the
     * weight's dtype, here the compute dtype), and grad_bias (V). */
    double T = (double)micro_batch * (double)seq_len;
    double H = (double)head->in, V = (double)head->out;
    return (T * H + V * H + (head->bias ? V : 0)) * act_bytes;
}

/* Cross-entropy over V classes as aten runs it on upcast logits
 * (aten/src/ATen/native/LossNLL.cpp cross_entropy -> log_softmax then
 * nll_loss; its backward nll_loss_backward then _log_softmax_backward_data):
 * forward, the fp32 copy of the logits is log_softmax's input while its
 * fp32 output (the saved tensor) is written; backward, nll_loss_backward
 * writes a zero-filled fp32 gradient of the log-probabilities with one
 * entry per row set, and _log_softmax_backward_data a second fp32 tensor
 * from it and the saved output, both live at once. */
int
layer_transients(const struct module *m, int64_t micro_batch,
                 int64_t seq_len, int act_bytes, bool backward,
                 double *bytes_each)
{
    *bytes_each = 0;
    if (m->kind != LAYER_CROSS_ENTROPY)
        return 0;
    double tv = (double)micro_batch * (double)seq_len * (double)m->out;
    *bytes_each = tv * (act_bytes > 4 ? act_bytes : 4);
    return backward ? 2 : 1;
}

double
layer_sac_saved_bytes(const struct module *m, int64_t micro_batch,
                      int64_t seq_len, int act_bytes, unsigned keep)
{
    const double T = (double)micro_batch * (double)seq_len;
    const double b = act_bytes;
    switch (m->kind) {
    case LAYER_LINEAR:      /* the aten.mm's output, when the policy
                               saves this one; a float8 Linear's abs() of
                               its input (T x in) and of its unsharded
                               weight (in x out, the dtype it is gathered
                               in, which is the compute dtype here), whose
                               amax gives the scale */
        return (keep & SAC_KEEP_MM ? T * (double)m->out * b : 0)
               + (keep & SAC_KEEP_ABS_INPUT ? T * (double)m->in * b : 0)
               + (keep & SAC_KEEP_ABS_WEIGHT
                      ? (double)m->in * (double)m->out * b : 0);
    case LAYER_ATTENTION:   /* _scaled_dot_product_flash_attention's
                               output and its fp32 log-sum-exp */
        return T * (double)m->heads * (double)m->head_dim * b
               + T * (double)m->heads * 4;
    case LAYER_MHA:         /* in-projection outputs and attention output */
        return 4 * T * (double)m->out * b;
    default:                /* norms, rotary, activations, products,
                               embeddings, the loss: recomputed */
        return 0;
    }
}

int
layer_param_tensors(const struct module *m, int64_t sizes[4])
{
    int n = 0;
    switch (m->kind) {
    case LAYER_LINEAR:
        if (!m->tied)
            sizes[n++] = m->in * m->out;
        if (m->bias)
            sizes[n++] = m->out;
        break;
    case LAYER_EMBEDDING:
        sizes[n++] = m->in * m->out;
        break;
    case LAYER_LAYERNORM:
        sizes[n++] = m->out;
        if (m->bias)
            sizes[n++] = m->out;
        break;
    case LAYER_RMSNORM:
        sizes[n++] = m->out;
        break;
    case LAYER_MHA:
        sizes[n++] = 3 * m->out * m->out;
        if (m->bias)
            sizes[n++] = 3 * m->out;
        sizes[n++] = m->out * m->out;
        if (m->bias)
            sizes[n++] = m->out;
        break;
    case LAYER_PARAMETER:
        sizes[n++] = m->in;
        break;
    default:
        break;
    }
    return n;
}

/* Dim 0 of each tensor layer_param_tensors lists, in its order: the shape
 * PyTorch gives the parameter (nn.Linear.weight is (out, in),
 * nn.Embedding.weight (num_embeddings, embedding_dim),
 * nn.MultiheadAttention.in_proj_weight (3 * embed_dim, embed_dim)); a
 * bare parameter counts as 1-D.  FSDP2 shards each tensor on this dim. */
int
layer_param_dim0(const struct module *m, int64_t dim0[4])
{
    int n = 0;
    switch (m->kind) {
    case LAYER_LINEAR:
        /* Hugging Face's Conv1D stores its weight transposed, (in, out). */
        if (!m->tied)
            dim0[n++] = m->cls && strcmp(m->cls, "Conv1D") == 0 ? m->in
                                                                 : m->out;
        if (m->bias)
            dim0[n++] = m->out;
        break;
    case LAYER_EMBEDDING:
        dim0[n++] = m->in;
        break;
    case LAYER_LAYERNORM:
        dim0[n++] = m->out;
        if (m->bias)
            dim0[n++] = m->out;
        break;
    case LAYER_RMSNORM:
        dim0[n++] = m->out;
        break;
    case LAYER_MHA:
        dim0[n++] = 3 * m->out;
        if (m->bias)
            dim0[n++] = 3 * m->out;
        dim0[n++] = m->out;
        if (m->bias)
            dim0[n++] = m->out;
        break;
    case LAYER_PARAMETER:
        dim0[n++] = m->in;
        break;
    default:
        break;
    }
    return n;
}

bool
layer_float8_linear(const struct module *m)
{
    if (m->kind != LAYER_LINEAR || m->in % 16 != 0 || m->out % 16 != 0)
        return false;
    static const char *const heads[] = {"output", "lm_head", "embed_out"};
    for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++)
        if (m->name != NULL && strcmp(m->name, heads[i]) == 0)
            return false;
    return true;
}

/* torchao at eab345c (torchao/float8/float8_linear.py), the tensorwise
 * recipe (no axiswise cast config): Float8Linear.forward casts its input
 * (cast_input_to_float8) and its weight (cast_weight_to_float8_t) to
 * Float8Tensors and calls manual_float8_matmul_with_args_in_float8, whose
 * forward runs ctx.save_for_backward(input_fp8, weight_fp8_t) (line 51).
 * A Float8Tensor (float8_tensor.py, Float8Tensor.__new__) holds _data,
 * one byte an element, and _scale, a 0-dim fp32 tensor (float8_utils.py
 * amax_to_scale returns res.to(torch.float32)).  Nothing else keeps a
 * tensor: the amax is taken under torch.no_grad (float8_utils.py
 * tensor_to_amax), the cast's backward (_ToFloat8ConstrFunc) passes the
 * gradient through, NoopFwToFloat8BwDynamic saves nothing, and the bias
 * is a plain add.  So the bf16 input is not saved, and neither is the
 * bf16 weight; the float8 weight copy is its own allocation, not FSDP's
 * unsharded parameter, so resharding after forward does not free it:
 * it lives until the Linear's backward (force_recompute_fp8_weight_in_bwd,
 * which would recompute it, defaults to False, config.py line 235, and
 * torchtitan's December 2024 float8.py does not set it; torchao issue
 * #562 and pull request #936 describe the unsharded float8 weight kept
 * for backward, eager and compiled alike).  With the float8 all-gather
 * the weight arrives as a Float8Tensor over the all-gather output
 * (fsdp_utils.py WeightWithDynamicFloat8CastTensor.fsdp_post_all_gather
 * returns it with (data,) as the storage FSDP2 frees when it reshards),
 * cast_weight_to_float8_t returns weight.t() (line 336), a view of it:
 * nothing of its own is kept.  Each Float8Linear casts the tensor it is
 * given, so q, k and v save three float8 copies of one input; under
 * torch.compile the graph's common-subexpression pass merges the
 * identical casts (as it merges their abs(), §10.1) and one copy stays. */
double
layer_float8_tensorwise_saved_bytes(const struct module *m,
                                    int64_t micro_batch, int64_t seq_len,
                                    int act_bytes, bool weight_gathered,
                                    bool compiled)
{
    const double T = (double)micro_batch * (double)seq_len;
    const double scale = 4;   /* fp32 0-dim _scale */
    if (m->kind != LAYER_LINEAR)
        return 0;
    const struct module *s =
        layer_shares_input(m) ? earlier_sibling(m, is_activation) : NULL;
    if (!layer_float8_linear(m)) {
        /* bf16: shares only a sibling that saved the same bf16 tensor */
        bool shared = s != NULL && !layer_float8_linear(s);
        return shared ? 0 : T * (double)m->in * act_bytes;
    }
    bool shared = compiled && s != NULL && layer_float8_linear(s);
    double input = shared ? 0 : T * (double)m->in + scale;
    double weight = weight_gathered ? 0
                                    : (double)m->in * (double)m->out + scale;
    return input + weight;
}
