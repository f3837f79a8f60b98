/*
 * layer.h: what one leaf layer costs for a given micro-batch.
 *
 * For a leaf module and T = micro_batch x seq_len tokens this derives the
 * forward and backward FLOPs, the HBM bytes moved, the activation bytes
 * saved for backward and the GEMM shape, so the cost model can time it and
 * the real mode can launch the same shapes.  Pure functions, no state.
 */
#ifndef FSDPSIM_LAYER_H
#define FSDPSIM_LAYER_H

#include <stdbool.h>
#include <stdint.h>

#include "model.h"

struct layer_work {
    double fwd_flops;        /* executed in forward */
    double bwd_flops;        /* executed in backward (dgrad + wgrad) */
    double model_flops;      /* forward FLOPs as MFU counts them: the
                                model's work, causal and window savings
                                counted, no recomputation, backward 2x */
    double palm_flops;       /* the same by PaLM's convention: attention
                                over the full S x S matrix */
    double fwd_bytes;        /* HBM traffic in forward */
    double bwd_bytes;        /* HBM traffic in backward */
    double saved_bytes;      /* activations kept from forward to backward */
    int64_t gemm_m, gemm_n, gemm_k; /* main GEMM (0 when none) */
    int fwd_kernels, bwd_kernels;
    int is_attention;        /* timed at attention, not GEMM, efficiency */
};

/* tokens = micro_batch * seq_len; act_bytes = bytes per activation element
 * (the compute dtype). */
void layer_work(const struct module *m, int64_t micro_batch, int64_t seq_len,
                int act_bytes, struct layer_work *w);

/* Attention on the math path (scores materialised): what autograd keeps
 * for backward beyond layer_work's saved_bytes, which counts a fused
 * kernel's: the probabilities, micro_batch x heads x S x S elements (in
 * fp32 and in the compute dtype where the softmax runs in fp32), less
 * the output and log-sum-exp the math path does not keep; 0 for other
 * leaves. */
double layer_math_scores_bytes(const struct module *m, int64_t micro_batch,
                               int64_t seq_len, int act_bytes);

/* The attention core a Linear M reads (o_proj after the core: its
 * nearest earlier compute sibling), else NULL. */
const struct module *layer_reads_attention(const struct module *m);

/* The language-model head a cross-entropy leaf CE reads: the nearest
 * earlier compute sibling when it is a Linear producing CE's vocabulary
 * (lm_head then loss, as the model formats lay them out), else NULL. */
const struct module *layer_loss_head(const struct module *ce);
/* Whether Linear M is such a head: the next compute sibling is a
 * cross-entropy over M's outputs. */
bool layer_feeds_loss(const struct module *m);

/* Under a fused linear + cross-entropy (Liger-Kernel's
 * LigerFusedLinearCrossEntropyFunction), what leaf M keeps from forward to
 * backward instead of SAVED (layer_work's saved_bytes): the head keeps
 * nothing (the function takes its input), the loss keeps the input and
 * weight gradients it computed in forward (ctx.save_for_backward of
 * grad_input, grad_weight, grad_bias), no logits; other leaves SAVED. */
double layer_fused_loss_saved_bytes(const struct module *m,
                                    int64_t micro_batch, int64_t seq_len,
                                    int act_bytes, double saved);

/* The temporaries leaf M's kernels hold while its forward (BACKWARD
 * false) or backward runs, on top of the activations it saves, freed when
 * the leaf is done: how many tensors, each of *BYTES_EACH (separate
 * allocations, as the caching allocator sees them).  Only the loss's are
 * large enough to matter (a vocabulary-wide tensor per token); 0 for
 * other leaves. */
int layer_transients(const struct module *m, int64_t micro_batch,
                     int64_t seq_len, int act_bytes, bool backward,
                     double *bytes_each);

/* Selective op-level checkpointing, torchtitan's policy
 * (torchtitan/parallelisms/parallelize_llama.py, _save_list and
 * _custom_policy): the outputs of aten.mm, of the flash and
 * memory-efficient SDPA kernels (and abs/max for float8) are saved, except
 * every second aten.mm of a block, counted in forward order; everything
 * else is recomputed in backward.  The bytes leaf M's saved ops keep from
 * forward to backward; KEEP says which (sched.c decides: it counts the
 * aten.mm calls and knows the float8 recipe and torch.compile). */
enum sac_keep {
    SAC_KEEP_MM = 1,           /* the output of M's aten.mm */
    SAC_KEEP_ABS_INPUT = 2,    /* a float8 Linear's abs() of its input */
    SAC_KEEP_ABS_WEIGHT = 4,   /* ... and of its unsharded weight */
};
double layer_sac_saved_bytes(const struct module *m, int64_t micro_batch,
                             int64_t seq_len, int act_bytes, unsigned keep);

/* Whether Linear M reads the same tensor as the nearest earlier sibling
 * Linear (q/k/v, gate/up), which autograd saves once. */
bool layer_shares_input(const struct module *m);

/* The last leaf of M's subtree, in execution order, that runs kernels, or
 * NULL: a checkpointed block's last Linear ends it when this is one. */
const struct module *layer_last_compute_leaf(const struct module *m);

/* The parameter tensors a leaf registers (weight, bias, ...), in order; for
 * use_orig_params alignment padding.  Returns their count (<= 4). */
int layer_param_tensors(const struct module *m, int64_t sizes[4]);
/* Dim 0 of each of those tensors, in the same order (FSDP2 shards on
 * it). */
int layer_param_dim0(const struct module *m, int64_t dim0[4]);

/* True for leaves with no compute of their own. */
int layer_is_compute(const struct module *m);

/* Whether torchao's convert_to_float8_training turns M into a
 * Float8Linear: an nn.Linear whose dimensions are multiples of 16 (the fp8
 * GEMM's requirement, float8_linear_utils.py's filter), except the
 * language-model head, which torchtitan leaves out by name ("output";
 * Hugging Face models call it lm_head, GPT-NeoX embed_out). */
bool layer_float8_linear(const struct module *m);

/* What Linear M (a Linear only) saves for backward when the model's
 * Float8Linears use torchao's tensorwise recipe (at eab345c, the December
 * 2024 benchmark's torchao): a float8 Linear its float8 input and, unless
 * the float8 all-gather hands it the weight already cast (WEIGHT_GATHERED),
 * its own float8 copy of the unsharded weight, each a byte an element plus
 * a 4-byte fp32 scale; q/k/v (and gate/up) each cast their input apart, one
 * copy each, but under torch.compile (COMPILED) the identical casts merge
 * into one.  A Linear left in bf16 saves its input as layer_work says.  The
 * rowwise recipe saves what a bf16 Linear does (layer_work's saved_bytes). */
double layer_float8_tensorwise_saved_bytes(const struct module *m,
                                           int64_t micro_batch,
                                           int64_t seq_len, int act_bytes,
                                           bool weight_gathered,
                                           bool compiled);

#endif
