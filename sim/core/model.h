/*
 * model.h: a model as PyTorch sees it, a tree of nn.Modules.
 *
 * FSDP decides its units from the module tree (class names, registration
 * order, parameter counts), and the cost of a unit comes from the layers it
 * owns, so the tree is kept exactly as PyTorch would build it: containers
 * (ModuleList, user classes) and leaf layers with their shapes.  Leaves carry
 * enough shape information to derive parameters, forward FLOPs, HBM traffic
 * and saved activations for any micro-batch and sequence length (layer.c).
 *
 * Two sources build the tree: the native INI format (model_ini.c) and
 * Hugging Face config.json files (model_hf.c, which translates to the native
 * format).  Ownership: a struct model owns its whole tree; model_free()
 * releases it.  Pointers into the tree stay valid for the model's lifetime.
 */
#ifndef FSDPSIM_MODEL_H
#define FSDPSIM_MODEL_H

#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>

enum layer_kind {
    LAYER_CONTAINER,     /* a user class or ModuleList: no own compute */
    LAYER_LINEAR,        /* nn.Linear / HF Conv1D: y = x W^T + b */
    LAYER_EMBEDDING,     /* nn.Embedding: a gather, no FLOPs */
    LAYER_LAYERNORM,     /* nn.LayerNorm (weight, optional bias) */
    LAYER_RMSNORM,       /* RMSNorm (weight only) */
    LAYER_ATTENTION,     /* parameter-free scaled-dot-product attention core */
    LAYER_ACTIVATION,    /* elementwise activation (GELU, SiLU, ReLU) */
    LAYER_MUL,           /* elementwise product of two tensors (SwiGLU) */
    LAYER_DROPOUT,       /* nn.Dropout / F.dropout in training, p > 0 */
    LAYER_CROSS_ENTROPY, /* softmax cross-entropy over the vocabulary */
    LAYER_MHA,           /* nn.MultiheadAttention: projections + core */
    LAYER_PARAMETER,     /* a bare nn.Parameter block, no compute */
};

/* How the model's code applies a rotary embedding to q and k: the same
 * rotation, different kernels (kernel.c rotary).  Model files say
 * rope=true (half), complex or matrix; --rotary overrides it. */
enum rope_style {
    ROPE_NONE,
    /* Hugging Face's apply_rotary_pos_emb (transformers
     * models/llama/modeling_llama.py): q * cos + rotate_half(q) * sin. */
    ROPE_HALF,
    /* Meta's reference Llama and torchtitan's apply_rotary_emb
     * (torchtitan/models/llama/model.py): q cast to fp32, viewed as
     * complex, multiplied by freqs_cis, cast back. */
    ROPE_COMPLEX,
    /* IBM's Foundation Model Stack, RotaryEmbedding.adjusted_qk
     * (fms/modules/positions.py): q in fp32 as pairs, times 2x2 rotation
     * matrices broadcast, summed over the pair, cast back. */
    ROPE_MATRIX,
};

struct module {
    char *name;            /* attribute name in the parent ("" for root) */
    char *cls;             /* class name, e.g. "LlamaDecoderLayer" */
    enum layer_kind kind;
    /* Leaf shape (meaning depends on kind):
     *   LINEAR:     in, out features; bias
     *   EMBEDDING:  in = num_embeddings, out = embedding_dim
     *   LAYERNORM / RMSNORM / ACTIVATION / MUL: out = feature dim; bias
     *   ATTENTION:  heads, kv_heads, head_dim; causal; window (0 = none);
 *               rope; dropout
     *   CROSS_ENTROPY: out = vocabulary size
     *   MHA:        out = embed_dim, heads; bias; dropout
     *   PARAMETER:  in = numel */
    int64_t in, out;
    int64_t heads, kv_heads, head_dim, window;
    bool bias, causal;
    enum rope_style rope;  /* ATTENTION: rotary embedding applied to q, k,
                              and how the model's code applies it */
    double dropout;        /* ATTENTION, MHA: dropout probability on the
                              attention probabilities in training (HF
                              attention_dropout, attn_pdrop); 0: none */
    bool softmax_fp32;     /* ATTENTION: the eager (math) path takes the
                              softmax in fp32 and casts the probabilities
                              back (Hugging Face's Llama family) */
    bool tied;             /* LINEAR shares its weight with an earlier
                              module (tied embeddings): no own weight */
    int64_t own_params;    /* numel registered directly on this module */
    int64_t subtree_params;/* own_params summed over the subtree */
    struct module *parent;
    struct module **children;
    int n_children;
    int index;             /* position in model->modules (pre-order) */
};

struct model {
    char *name;            /* e.g. "llama2-7b" */
    char *source;          /* file or built-in it came from */
    char *layer_cls;       /* default transformer_layer_cls, may be NULL */
    struct module *root;
    struct module **modules; /* all modules, pre-order (= named_modules()) */
    int n_modules;
    int64_t n_params;      /* total numel (shared weights counted once) */
    int64_t hidden;        /* model width, for activation-checkpoint inputs */
    int64_t vocab;         /* 0 when not a language model */
    int attention;         /* enum attn_kernel the model's config asks for
                              ([model] attention; ATTN_AUTO: SDPA's pick) */
    bool alibi;            /* ALiBi position bias: an additive mask */
};

/* Load NAME (a built-in such as "llama2-7b") or FILE (a native .ini or a
 * Hugging Face config.json).  Returns NULL and sets *cause (caller frees) on
 * error; messages name file:line or the JSON key. */
struct model *model_load(const char *name_or_path, char **cause);

/* Parse the native INI format from a string; origin names it in messages. */
struct model *model_parse_ini(const char *text, const char *origin,
                              char **cause);

/* Translate a Hugging Face config.json (text) to native INI text, or NULL
 * with *cause set.  The result is owned by the caller. */
char *model_hf_to_ini(const char *json_text, const char *origin,
                      const char *name, char **cause);

void model_free(struct model *m);

/* A rotary style by name: half, complex, matrix, or a boolean (true:
 * half, false: none).  0, or -1 with *cause (caller frees). */
int rope_style_parse(const char *s, enum rope_style *out, char **cause);
const char *rope_style_name(enum rope_style r);

/* Dotted path of a module ("model.layers.3.mlp"), caller frees. */
char *model_module_path(const struct module *mod);

/* Per-module subtree sums for a micro-batch, indexed like modules[]. */
struct model_costs {
    double *fwd_flops;      /* forward FLOPs executed */
    double *saved_bytes;    /* activations saved for backward */
};

/* Print the tree with parameter counts, and with costs when mc is not NULL
 * (fsdpsim models --show). */
void model_print_tree(const struct model *m, const struct model_costs *mc,
                      FILE *out);

#endif
