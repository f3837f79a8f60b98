/*
 * model_hf.c: Hugging Face config.json to the native model format.
 *
 * A config.json names an architecture (model_type) and its sizes; the module
 * tree follows from the modeling_*.py file of that architecture.  Rather than
 * build trees here, each supported model_type is written out as native INI
 * text with HF's class and attribute names, and model_parse_ini() builds the
 * tree: one tree builder, and `fsdpsim` can show the INI a config becomes.
 *
 * Keys and defaults are those of the transformers configuration classes
 * (LlamaConfig, MistralConfig, GPT2Config, GPTNeoXConfig, MptConfig,
 * OPTConfig).  The shape keys every Hub config.json carries (width, depth,
 * heads, vocabulary, FFN width) are required here even where the Python
 * class has a default, because a config without them is almost certainly
 * not the model the user meant.
 *
 * Children are listed in the order forward() runs them, which is what the
 * simulator schedules; where HF registers them in another order the emitter
 * says so.  Dropout modules own no parameters and no FLOPs worth modelling,
 * so they are left out, as are rotary embeddings (buffers only).
 */
#include "model.h"
#include "xalloc.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define HF_MAX_DIM 16777216   /* 2^24, as the native format */
#define HF_MAX_LAYERS 100000  /* as a native ModuleList */

struct hf {
    const char *origin;
    const char *type;         /* model_type, for messages */
    json_t *cfg;
    char *err;
    char *out;                /* the INI text being written */
    size_t len, cap;
};

static void
emit(struct hf *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
emit(struct hf *h, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    h->out = xgrow(h->out, &h->cap, h->len + (size_t)n + 1, 1);
    va_start(ap, fmt);
    vsnprintf(h->out + h->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    h->len += (size_t)n;
}

static void
hf_error(struct hf *h, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Record the first error only: later ones are usually consequences. */
static void
hf_error(struct hf *h, const char *fmt, ...)
{
    if (h->err != NULL)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *what = xvasprintf(fmt, ap);
    va_end(ap);
    h->err = xasprintf("%s: %s", h->origin, what);
    free(what);
}

/* The JSON text of V for messages, shortened; caller frees. */
static char *
json_text(const json_t *v)
{
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    if (s == NULL)
        return xstrdup("?");
    if (strlen(s) > 40)
        strcpy(s + 37, "...");
    char *r = xstrdup(s);
    free(s);
    return r;
}

/* Record that KEY's value V is not WANT ("a string", "at most 8"). */
static void
hf_wrong(struct hf *h, const char *key, const json_t *v, const char *want)
{
    char *got = json_text(v);
    hf_error(h, "key '%s': must be %s (got %s)", key, want, got);
    free(got);
}

/*
 * Integer KEY in [1, hi].  A missing or null key takes DEF when it is >= 0
 * and is an error otherwise.  Integral reals (4.0) are accepted, as Python
 * would.  Returns the value, or 0 with the error recorded.
 */
static int64_t
hf_int(struct hf *h, const char *key, int64_t def, int64_t hi)
{
    json_t *v = json_object_get(h->cfg, key);
    if (v == NULL || json_is_null(v)) {
        if (def >= 0)
            return def;
        hf_error(h, "key '%s' is missing (a %s config.json must give it)",
                 key, h->type);
        return 0;
    }
    double x = 0;
    bool ok = false;
    if (json_is_integer(v)) {
        x = (double)json_integer_value(v);
        ok = true;
    } else if (json_is_real(v)) {
        x = json_real_value(v);
        ok = x == floor(x);
    }
    if (!ok || x < 1) {
        hf_wrong(h, key, v, "a positive integer");
        return 0;
    }
    if (x > (double)hi) {
        char want[40];
        snprintf(want, sizeof want, "at most %lld", (long long)hi);
        hf_wrong(h, key, v, want);
        return 0;
    }
    return (int64_t)x;
}

static bool
hf_bool(struct hf *h, const char *key, bool def)
{
    json_t *v = json_object_get(h->cfg, key);
    if (v == NULL || json_is_null(v))
        return def;
    if (!json_is_boolean(v)) {
        hf_wrong(h, key, v, "true or false");
        return def;
    }
    return json_is_true(v);
}

/* A dropout probability under KEY of OBJ (the config or a sub-config),
 * DEF when absent: a number from 0 to 1. */
static double
hf_prob(struct hf *h, json_t *obj, const char *key, double def)
{
    json_t *v = json_object_get(obj, key);
    if (v == NULL || json_is_null(v))
        return def;
    double p = json_is_number(v) ? json_number_value(v) : -1;
    if (!(p >= 0 && p <= 1)) {
        hf_wrong(h, key, v, "a probability from 0 to 1");
        return def;
    }
    return p;
}

/* ATTR = Dropout(DIM) when P > 0: in training, F.dropout with p = 0
 * returns its input (aten/src/ATen/native/Dropout.cpp dropout), so only
 * a positive p launches kernels. */
static void
emit_dropout(struct hf *h, const char *attr, double p, int64_t dim)
{
    if (p > 0)
        emit(h, "%s = Dropout(%lld)\n", attr, (long long)dim);
}

/*
 * The attention core every family's attention module holds: NH heads of
 * HD each; KV > 0 writes grouped-query key/value heads, ROPE rotary
 * positions, WINDOW > 0 a sliding window; with P > 0, the dropout its
 * probabilities get in training (eager nn.functional.dropout on the
 * attention weights, or SDPA's dropout_p, which the kernel applies);
 * SOFTMAX_FP32 where the family's eager path takes the softmax in fp32
 * (Llama's and Mistral's eager_attention_forward: softmax(...,
 * dtype=torch.float32).to(query.dtype)).
 */
static void
emit_attention(struct hf *h, int64_t nh, int64_t hd, int64_t kv, bool rope,
               int64_t window, double p, bool softmax_fp32)
{
    emit(h, "core = Attention(heads=%lld, head_dim=%lld", (long long)nh,
         (long long)hd);
    if (kv > 0)
        emit(h, ", kv_heads=%lld", (long long)kv);
    if (rope)
        emit(h, ", rope=true");
    if (window > 0)
        emit(h, ", window=%lld", (long long)window);
    if (p > 0)
        emit(h, ", dropout=%.6g", p);
    if (softmax_fp32)
        emit(h, ", softmax_fp32=true");
    emit(h, ")\n");
}

/* The output projection ATTR from IN_DIM to the VOCAB logits (no bias in
 * any family; TIE when it shares the input embedding's weight) and the
 * loss over them, which every causal-LM class ends with. */
static void
emit_lm_head(struct hf *h, const char *attr, int64_t in_dim, int64_t vocab,
             bool tie)
{
    emit(h, "%s = Linear(%lld, %lld, bias=false%s)\n", attr,
         (long long)in_dim, (long long)vocab, tie ? ", tied=true" : "");
    emit(h, "loss = CrossEntropy(%lld)\n", (long long)vocab);
}

static const char *
hf_string(struct hf *h, const char *key, const char *def)
{
    json_t *v = json_object_get(h->cfg, key);
    if (v == NULL || json_is_null(v)) {
        if (def == NULL)
            hf_error(h, "key '%s' is missing (every Hugging Face "
                     "config.json has it)", key);
        return def;
    }
    if (!json_is_string(v)) {
        hf_wrong(h, key, v, "a string");
        return def;
    }
    return json_string_value(v);
}

/* NUM must be a multiple of DEN (heads dividing the width, and so on). */
static void
hf_divides(struct hf *h, const char *key, int64_t den, const char *of,
           int64_t num)
{
    if (h->err == NULL && den > 0 && num % den != 0)
        hf_error(h, "key '%s': must divide %s %lld (got %lld)", key, of,
                 (long long)num, (long long)den);
}

/* transformers' ACT2FN: the hidden_act string to the module it builds. */
struct hf_act {
    const char *hf;
    const char *ctor;
    const char *cls;
};

static const struct hf_act hf_acts[] = {
    {"silu", "SiLU", "SiLU"},
    {"swish", "SiLU", "SiLU"},
    {"relu", "ReLU", "ReLU"},
    {"gelu", "GELU", "GELUActivation"},
    {"gelu_new", "GELU", "NewGELUActivation"},
    {"gelu_fast", "GELU", "FastGELUActivation"},
    {"gelu_pytorch_tanh", "GELU", "PytorchGELUTanh"},
    {"quick_gelu", "GELU", "QuickGELUActivation"},
    {"tanh", "Activation", "Tanh"},
};

/* Write "ATTR = Ctor(dim[, cls=...])" for the activation named by KEY. */
static void
emit_act(struct hf *h, const char *attr, const char *key, const char *def,
         int64_t dim)
{
    const char *name = hf_string(h, key, def);
    if (name == NULL)
        return;
    for (size_t i = 0; i < sizeof hf_acts / sizeof hf_acts[0]; i++)
        if (strcmp(hf_acts[i].hf, name) == 0) {
            if (strcmp(hf_acts[i].ctor, hf_acts[i].cls) == 0)
                emit(h, "%s = %s(%lld)\n", attr, hf_acts[i].ctor,
                     (long long)dim);
            else
                emit(h, "%s = %s(%lld, cls=%s)\n", attr, hf_acts[i].ctor,
                     (long long)dim, hf_acts[i].cls);
            return;
        }
    hf_error(h, "key '%s': unsupported activation '%s' (supported: silu, "
             "swish, relu, gelu, gelu_new, gelu_fast, gelu_pytorch_tanh, "
             "quick_gelu, tanh)", key, name);
}

/* The attention kernel the config asks for, as users set it:
 * transformers' attn_implementation ("eager", "sdpa", "flash_attention_2",
 * "flash_attention_3"; saved as _attn_implementation by some versions),
 * and MPT's attn_config.attn_impl ("torch", "flash", "triton") with its
 * alibi switch (llm-foundry's attention.py).  Nothing is written when the
 * config leaves it to SDPA. */
static void
hf_attention(struct hf *h)
{
    static const char *const maps[][2] = {
        {"eager", "math"}, {"sdpa", "auto"},
        {"flash_attention_2", "flash2"}, {"flash_attention_3", "flash3"},
        {"torch", "math"}, {"flash", "flash2"}, {"triton", "triton"}};
    const char *impl = NULL, *from = "attn_implementation";
    json_t *v = json_object_get(h->cfg, "attn_implementation");
    if (v == NULL || json_is_null(v)) {
        from = "_attn_implementation";
        v = json_object_get(h->cfg, from);
    }
    json_t *ac = json_object_get(h->cfg, "attn_config");
    if ((v == NULL || json_is_null(v)) && json_is_object(ac)) {
        from = "attn_config.attn_impl";
        v = json_object_get(ac, "attn_impl");
        json_t *alibi = json_object_get(ac, "alibi");
        if (json_is_true(alibi))
            emit(h, "alibi = true\n");
    }
    if (v == NULL || json_is_null(v))
        return;
    if (!json_is_string(v)) {
        hf_wrong(h, from, v, "a string");
        return;
    }
    const char *name = json_string_value(v);
    for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++)
        if (strcmp(maps[i][0], name) == 0)
            impl = maps[i][1];
    if (impl == NULL) {
        hf_error(h, "key '%s': unknown attention implementation '%s' "
                 "(known: eager, sdpa, flash_attention_2, flash_attention_3; "
                 "MPT: torch, flash, triton)", from, name);
        return;
    }
    if (strcmp(impl, "auto") != 0)
        emit(h, "attention = %s\n", impl);
}

static void
emit_header(struct hf *h, const char *name, const char *root,
            const char *layer, int64_t hidden, int64_t vocab)
{
    emit(h, "# Translated by fsdpsim from a Hugging Face config.json "
         "(model_type %s).\n[model]\n", h->type);
    /* Only names the INI syntax carries unchanged; model_load() sets the
     * name of a config.json model itself anyway. */
    if (name != NULL && *name != '\0' &&
        strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "0123456789._+-") == strlen(name))
        emit(h, "name = %s\n", name);
    emit(h, "root = %s\nlayer_class = %s\nhidden = %lld\nvocab = %lld\n",
         root, layer, (long long)hidden, (long long)vocab);
    hf_attention(h);
}

static const char *
bias_arg(bool bias)
{
    return bias ? "" : ", bias=false";
}

/*
 * LlamaForCausalLM / MistralForCausalLM (modeling_llama.py,
 * modeling_mistral.py): the two differ only in class names and Mistral's
 * sliding-window attention.
 */
static void
emit_llama(struct hf *h, const char *name, bool mistral)
{
    const char *P = mistral ? "Mistral" : "Llama";
    int64_t d = hf_int(h, "hidden_size", -1, HF_MAX_DIM);
    int64_t ff = hf_int(h, "intermediate_size", -1, HF_MAX_DIM);
    int64_t L = hf_int(h, "num_hidden_layers", -1, HF_MAX_LAYERS);
    int64_t nh = hf_int(h, "num_attention_heads", -1, HF_MAX_DIM);
    int64_t kv = hf_int(h, "num_key_value_heads", nh, HF_MAX_DIM);
    int64_t V = hf_int(h, "vocab_size", -1, HF_MAX_DIM);
    if (h->err != NULL)
        return;
    if (json_object_get(h->cfg, "head_dim") == NULL ||
        json_is_null(json_object_get(h->cfg, "head_dim")))
        hf_divides(h, "num_attention_heads", nh, "hidden_size", d);
    int64_t hd = hf_int(h, "head_dim", d / nh ? d / nh : 1, HF_MAX_DIM);
    hf_divides(h, "num_key_value_heads", kv, "num_attention_heads", nh);
    bool tie = hf_bool(h, "tie_word_embeddings", false);
    /* Mistral's attention and MLP have no bias switch. */
    bool abias = !mistral && hf_bool(h, "attention_bias", false);
    bool mbias = !mistral && hf_bool(h, "mlp_bias", false);
    int64_t window = mistral ? hf_int(h, "sliding_window", 0, HF_MAX_DIM)
                             : 0;
    /* LlamaConfig / MistralConfig attention_dropout (default 0): on the
     * probabilities (eager_attention_forward's dropout, SDPA's
     * dropout_p). */
    double adrop = hf_prob(h, h->cfg, "attention_dropout", 0.0);
    hf_int(h, "max_position_embeddings", 1, HF_MAX_DIM);
    if (h->err != NULL)
        return;

    emit_header(h, name, mistral ? "MistralForCausalLM" : "LlamaForCausalLM",
                mistral ? "MistralDecoderLayer" : "LlamaDecoderLayer", d, V);
    emit(h, "\n[%sForCausalLM]\nmodel = %sModel\n", P, P);
    emit_lm_head(h, "lm_head", d, V, tie);
    emit(h, "\n[%sModel]\nembed_tokens = Embedding(%lld, %lld)\n", P,
         (long long)V, (long long)d);
    emit(h, "layers = ModuleList(%sDecoderLayer, %lld)\n", P, (long long)L);
    emit(h, "norm = RMSNorm(%lld, cls=%sRMSNorm)\n", (long long)d, P);
    /* Registered self_attn, mlp, input_layernorm, post_attention_layernorm;
     * forward runs each norm before its block. */
    emit(h, "\n[%sDecoderLayer]\n", P);
    emit(h, "input_layernorm = RMSNorm(%lld, cls=%sRMSNorm)\n",
         (long long)d, P);
    emit(h, "self_attn = %sAttention\n", P);
    emit(h, "post_attention_layernorm = RMSNorm(%lld, cls=%sRMSNorm)\n",
         (long long)d, P);
    emit(h, "mlp = %sMLP\n", P);
    emit(h, "\n[%sAttention]\n", P);
    emit(h, "q_proj = Linear(%lld, %lld%s)\n", (long long)d,
         (long long)(nh * hd), bias_arg(abias));
    emit(h, "k_proj = Linear(%lld, %lld%s)\n", (long long)d,
         (long long)(kv * hd), bias_arg(abias));
    emit(h, "v_proj = Linear(%lld, %lld%s)\n", (long long)d,
         (long long)(kv * hd), bias_arg(abias));
    emit_attention(h, nh, hd, kv, true, window, adrop, true);
    emit(h, "o_proj = Linear(%lld, %lld%s)\n", (long long)(nh * hd),
         (long long)d, bias_arg(abias));
    /* Registered gate_proj, up_proj, down_proj, act_fn; forward computes
     * down_proj(act_fn(gate_proj(x)) * up_proj(x)). */
    emit(h, "\n[%sMLP]\n", P);
    emit(h, "gate_proj = Linear(%lld, %lld%s)\n", (long long)d,
         (long long)ff, bias_arg(mbias));
    emit_act(h, "act_fn", "hidden_act", "silu", ff);
    emit(h, "up_proj = Linear(%lld, %lld%s)\n", (long long)d, (long long)ff,
         bias_arg(mbias));
    emit(h, "mul = Mul(%lld)\n", (long long)ff);
    emit(h, "down_proj = Linear(%lld, %lld%s)\n", (long long)ff,
         (long long)d, bias_arg(mbias));
}

/* GPT2LMHeadModel (modeling_gpt2.py): Conv1D projections with bias. */
static void
emit_gpt2(struct hf *h, const char *name)
{
    int64_t d = hf_int(h, "n_embd", -1, HF_MAX_DIM);
    int64_t L = hf_int(h, "n_layer", -1, HF_MAX_LAYERS);
    int64_t nh = hf_int(h, "n_head", -1, HF_MAX_DIM);
    int64_t pos = hf_int(h, "n_positions", -1, HF_MAX_DIM);
    int64_t V = hf_int(h, "vocab_size", -1, HF_MAX_DIM);
    if (h->err != NULL)
        return;
    int64_t ff = hf_int(h, "n_inner", 4 * d, HF_MAX_DIM);
    hf_divides(h, "n_head", nh, "n_embd", d);
    bool tie = hf_bool(h, "tie_word_embeddings", true);
    /* GPT2Config's defaults; attn_pdrop acts on the attention
     * probabilities (GPT2Attention's attn_dropout, or SDPA's
     * dropout_p). */
    double adrop = hf_prob(h, h->cfg, "attn_pdrop", 0.1);
    double embd = hf_prob(h, h->cfg, "embd_pdrop", 0.1);
    double resid = hf_prob(h, h->cfg, "resid_pdrop", 0.1);
    if (h->err != NULL)
        return;

    emit_header(h, name, "GPT2LMHeadModel", "GPT2Block", d, V);
    emit(h, "\n[GPT2LMHeadModel]\ntransformer = GPT2Model\n");
    emit_lm_head(h, "lm_head", d, V, tie);
    emit(h, "\n[GPT2Model]\nwte = Embedding(%lld, %lld)\n", (long long)V,
         (long long)d);
    emit(h, "wpe = Embedding(%lld, %lld)\n", (long long)pos, (long long)d);
    emit_dropout(h, "drop", embd, d);
    emit(h, "h = ModuleList(GPT2Block, %lld)\n", (long long)L);
    emit(h, "ln_f = LayerNorm(%lld)\n", (long long)d);
    emit(h, "\n[GPT2Block]\nln_1 = LayerNorm(%lld)\nattn = GPT2Attention\n"
         "ln_2 = LayerNorm(%lld)\nmlp = GPT2MLP\n", (long long)d,
         (long long)d);
    emit(h, "\n[GPT2Attention]\nc_attn = Conv1D(%lld, %lld)\n",
         (long long)d, (long long)(3 * d));
    emit_attention(h, nh, d / nh, 0, false, 0, adrop, false);
    emit(h, "c_proj = Conv1D(%lld, %lld)\n", (long long)d, (long long)d);
    emit_dropout(h, "resid_dropout", resid, d);
    /* Registered c_fc, c_proj, act, dropout; act runs between the two. */
    emit(h, "\n[GPT2MLP]\nc_fc = Conv1D(%lld, %lld)\n", (long long)d,
         (long long)ff);
    emit_act(h, "act", "activation_function", "gelu_new", ff);
    emit(h, "c_proj = Conv1D(%lld, %lld)\n", (long long)ff, (long long)d);
    emit_dropout(h, "dropout", resid, d);
}

/* GPTNeoXForCausalLM (modeling_gpt_neox.py): fused QKV, rotary positions,
 * untied embed_out. */
static void
emit_gpt_neox(struct hf *h, const char *name)
{
    int64_t d = hf_int(h, "hidden_size", -1, HF_MAX_DIM);
    int64_t ff = hf_int(h, "intermediate_size", -1, HF_MAX_DIM);
    int64_t L = hf_int(h, "num_hidden_layers", -1, HF_MAX_LAYERS);
    int64_t nh = hf_int(h, "num_attention_heads", -1, HF_MAX_DIM);
    int64_t V = hf_int(h, "vocab_size", -1, HF_MAX_DIM);
    hf_int(h, "max_position_embeddings", 1, HF_MAX_DIM);
    if (h->err != NULL)
        return;
    hf_divides(h, "num_attention_heads", nh, "hidden_size", d);
    bool tie = hf_bool(h, "tie_word_embeddings", false);
    bool abias = hf_bool(h, "attention_bias", true);
    double hdrop = hf_prob(h, h->cfg, "hidden_dropout", 0.0);
    /* GPTNeoXConfig's attention_dropout (default 0): on the
     * probabilities. */
    double adrop = hf_prob(h, h->cfg, "attention_dropout", 0.0);
    if (h->err != NULL)
        return;

    emit_header(h, name, "GPTNeoXForCausalLM", "GPTNeoXLayer", d, V);
    emit(h, "\n[GPTNeoXForCausalLM]\ngpt_neox = GPTNeoXModel\n");
    emit_lm_head(h, "embed_out", d, V, tie);
    emit(h, "\n[GPTNeoXModel]\nembed_in = Embedding(%lld, %lld)\n",
         (long long)V, (long long)d);
    emit_dropout(h, "emb_dropout", hdrop, d);
    emit(h, "layers = ModuleList(GPTNeoXLayer, %lld)\n", (long long)L);
    emit(h, "final_layer_norm = LayerNorm(%lld)\n", (long long)d);
    /* Registered input_layernorm, post_attention_layernorm, attention, mlp;
     * forward runs each norm before its block (in parallel-residual mode
     * both branches read the layer input, the order is the same). */
    emit(h, "\n[GPTNeoXLayer]\ninput_layernorm = LayerNorm(%lld)\n"
         "attention = GPTNeoXAttention\n", (long long)d);
    emit_dropout(h, "post_attention_dropout", hdrop, d);
    emit(h, "post_attention_layernorm = LayerNorm(%lld)\nmlp = GPTNeoXMLP\n",
         (long long)d);
    emit_dropout(h, "post_mlp_dropout", hdrop, d);
    emit(h, "\n[GPTNeoXAttention]\nquery_key_value = Linear(%lld, %lld%s)\n",
         (long long)d, (long long)(3 * d), bias_arg(abias));
    emit_attention(h, nh, d / nh, 0, true, 0, adrop, false);
    emit(h, "dense = Linear(%lld, %lld%s)\n", (long long)d, (long long)d,
         bias_arg(abias));
    /* Registered dense_h_to_4h, dense_4h_to_h, act. */
    emit(h, "\n[GPTNeoXMLP]\ndense_h_to_4h = Linear(%lld, %lld)\n",
         (long long)d, (long long)ff);
    emit_act(h, "act", "hidden_act", "gelu", ff);
    emit(h, "dense_4h_to_h = Linear(%lld, %lld)\n", (long long)ff,
         (long long)d);
}

/*
 * MptForCausalLM (modeling_mpt.py): ALiBi (no position parameters), fused
 * Wqkv, tied lm_head.  HF drops every bias unconditionally (it only loads
 * no_bias=true checkpoints); MosaicML's own code honours no_bias for the
 * linears and norms alike, which is what is written here.
 */
static void
emit_mpt(struct hf *h, const char *name)
{
    int64_t d = hf_int(h, "d_model", -1, HF_MAX_DIM);
    int64_t nh = hf_int(h, "n_heads", -1, HF_MAX_DIM);
    int64_t L = hf_int(h, "n_layers", -1, HF_MAX_LAYERS);
    int64_t er = hf_int(h, "expansion_ratio", 4, HF_MAX_DIM);
    int64_t V = hf_int(h, "vocab_size", -1, HF_MAX_DIM);
    int64_t max_seq = hf_int(h, "max_seq_len", 2048, HF_MAX_DIM);
    /* llm-foundry's MPTModel adds a learned position table (wpe) when
     * learned_pos_emb is set; with ALiBi the positions come from the
     * bias and the released checkpoints (mpt-7b) hold no wpe, as HF's
     * MptModel, which never builds one, loads them. */
    json_t *acfg = json_object_get(h->cfg, "attn_config");
    bool alibi = json_is_object(acfg)
                 && json_is_true(json_object_get(acfg, "alibi"));
    bool wpe = hf_bool(h, "learned_pos_emb", false) && !alibi;
    /* HF's MptBlock drops the attention output and MptMLP its output
     * with attn_config.attn_pdrop (default 0). */
    double apdrop = json_is_object(acfg)
                        ? hf_prob(h, acfg, "attn_pdrop", 0.0) : 0.0;
    if (h->err != NULL)
        return;
    if (er * d > HF_MAX_DIM) {
        hf_error(h, "key 'expansion_ratio': expansion_ratio * d_model must "
                 "be at most %d (got %lld)", HF_MAX_DIM, (long long)(er * d));
        return;
    }
    hf_divides(h, "n_heads", nh, "d_model", d);
    bool bias = !hf_bool(h, "no_bias", true);
    bool tie = hf_bool(h, "tie_word_embeddings", true);
    if (h->err != NULL)
        return;

    emit_header(h, name, "MptForCausalLM", "MptBlock", d, V);
    emit(h, "\n[MptForCausalLM]\ntransformer = MptModel\n");
    emit_lm_head(h, "lm_head", d, V, tie);
    emit(h, "\n[MptModel]\nwte = Embedding(%lld, %lld)\n", (long long)V,
         (long long)d);
    if (wpe)
        emit(h, "wpe = Embedding(%lld, %lld)\n", (long long)max_seq,
             (long long)d);
    emit(h, "blocks = ModuleList(MptBlock, %lld)\n", (long long)L);
    emit(h, "norm_f = LayerNorm(%lld%s)\n", (long long)d, bias_arg(bias));
    emit(h, "\n[MptBlock]\nnorm_1 = LayerNorm(%lld%s)\nattn = MptAttention\n",
         (long long)d, bias_arg(bias));
    emit_dropout(h, "resid_attn_dropout", apdrop, d);
    emit(h, "norm_2 = LayerNorm(%lld%s)\nffn = MptMLP\n", (long long)d,
         bias_arg(bias));
    emit(h, "\n[MptAttention]\nWqkv = Linear(%lld, %lld%s)\n", (long long)d,
         (long long)(3 * d), bias_arg(bias));
    /* MptAttention drops its probabilities with the same attn_pdrop. */
    emit_attention(h, nh, d / nh, 0, false, 0, apdrop, false);
    emit(h, "out_proj = Linear(%lld, %lld%s)\n", (long long)d, (long long)d,
         bias_arg(bias));
    emit(h, "\n[MptMLP]\nup_proj = Linear(%lld, %lld%s)\nact = GELU(%lld)\n"
         "down_proj = Linear(%lld, %lld%s)\n", (long long)d,
         (long long)(er * d), bias_arg(bias), (long long)(er * d),
         (long long)(er * d), (long long)d, bias_arg(bias));
    emit_dropout(h, "dropout", apdrop, d);
}

/*
 * OPTForCausalLM (modeling_opt.py): learned positions with an offset of 2
 * rows, optional project_in/out when word_embed_proj_dim differs from
 * hidden_size, pre- or post-LayerNorm layers.
 */
static void
emit_opt(struct hf *h, const char *name)
{
    int64_t d = hf_int(h, "hidden_size", -1, HF_MAX_DIM);
    int64_t ff = hf_int(h, "ffn_dim", -1, HF_MAX_DIM);
    int64_t L = hf_int(h, "num_hidden_layers", -1, HF_MAX_LAYERS);
    int64_t nh = hf_int(h, "num_attention_heads", -1, HF_MAX_DIM);
    int64_t V = hf_int(h, "vocab_size", -1, HF_MAX_DIM);
    int64_t pos = hf_int(h, "max_position_embeddings", -1, HF_MAX_DIM - 2);
    if (h->err != NULL)
        return;
    int64_t pd = hf_int(h, "word_embed_proj_dim", d, HF_MAX_DIM);
    hf_divides(h, "num_attention_heads", nh, "hidden_size", d);
    bool bias = hf_bool(h, "enable_bias", true);
    bool pre = hf_bool(h, "do_layer_norm_before", true);
    bool tie = hf_bool(h, "tie_word_embeddings", true);
    /* OPTConfig's defaults: the layer drops the attention branch and the
     * fc2 output with dropout, the activation with activation_dropout
     * (F.dropout calls, no modules; named here for them). */
    double drop = hf_prob(h, h->cfg, "dropout", 0.1);
    double adrop = hf_prob(h, h->cfg, "activation_dropout", 0.0);
    double attn_drop = hf_prob(h, h->cfg, "attention_dropout", 0.0);
    if (h->err != NULL)
        return;
    const char *b = bias_arg(bias);

    emit_header(h, name, "OPTForCausalLM", "OPTDecoderLayer", d, V);
    emit(h, "\n[OPTForCausalLM]\nmodel = OPTModel\n");
    emit_lm_head(h, "lm_head", pd, V, tie);
    emit(h, "\n[OPTModel]\ndecoder = OPTDecoder\n");
    /* Registered embed_tokens, embed_positions, project_out, project_in,
     * final_layer_norm, layers; listed in forward order. */
    emit(h, "\n[OPTDecoder]\nembed_tokens = Embedding(%lld, %lld)\n",
         (long long)V, (long long)pd);
    emit(h, "embed_positions = Embedding(%lld, %lld, "
         "cls=OPTLearnedPositionalEmbedding)\n", (long long)(pos + 2),
         (long long)d);
    if (pd != d)
        emit(h, "project_in = Linear(%lld, %lld, bias=false)\n",
             (long long)pd, (long long)d);
    emit(h, "layers = ModuleList(OPTDecoderLayer, %lld)\n", (long long)L);
    if (pre)
        emit(h, "final_layer_norm = LayerNorm(%lld)\n", (long long)d);
    if (pd != d)
        emit(h, "project_out = Linear(%lld, %lld, bias=false)\n",
             (long long)d, (long long)pd);
    /* Registered self_attn, activation_fn, self_attn_layer_norm, fc1, fc2,
     * final_layer_norm; forward order depends on do_layer_norm_before. */
    emit(h, "\n[OPTDecoderLayer]\n");
    if (pre)
        emit(h, "self_attn_layer_norm = LayerNorm(%lld)\n", (long long)d);
    emit(h, "self_attn = OPTAttention\n");
    emit_dropout(h, "self_attn_dropout", drop, d);
    if (!pre)
        emit(h, "self_attn_layer_norm = LayerNorm(%lld)\n", (long long)d);
    if (pre)
        emit(h, "final_layer_norm = LayerNorm(%lld)\n", (long long)d);
    emit(h, "fc1 = Linear(%lld, %lld%s)\n", (long long)d, (long long)ff, b);
    emit_act(h, "activation_fn", "activation_function", "relu", ff);
    emit_dropout(h, "activation_dropout", adrop, ff);
    emit(h, "fc2 = Linear(%lld, %lld%s)\n", (long long)ff, (long long)d, b);
    emit_dropout(h, "fc2_dropout", drop, d);
    if (!pre)
        emit(h, "final_layer_norm = LayerNorm(%lld)\n", (long long)d);
    /* Registered k_proj, v_proj, q_proj, out_proj; forward projects q
     * first. */
    emit(h, "\n[OPTAttention]\nq_proj = Linear(%lld, %lld%s)\n"
         "k_proj = Linear(%lld, %lld%s)\nv_proj = Linear(%lld, %lld%s)\n",
         (long long)d, (long long)d, b, (long long)d, (long long)d, b,
         (long long)d, (long long)d, b);
    emit_attention(h, nh, d / nh, 0, false, 0, attn_drop, false);
    emit(h, "out_proj = Linear(%lld, %lld%s)\n", (long long)d, (long long)d,
         b);
}

/*
 * Translate config.json TEXT to native INI (caller frees), or return NULL
 * with *cause set: "ORIGIN:LINE: malformed JSON: ..." for syntax errors,
 * "ORIGIN: key 'K': ..." for missing, mistyped or out-of-range keys.
 */
char *
model_hf_to_ini(const char *json_text, const char *origin, const char *name,
                char **cause)
{
    json_error_t jerr;
    json_t *cfg = json_loads(json_text, JSON_REJECT_DUPLICATES, &jerr);
    if (cfg == NULL) {
        *cause = xasprintf("%s:%d: malformed JSON: %s", origin, jerr.line,
                           jerr.text);
        return NULL;
    }
    struct hf h = {.origin = origin, .type = "?", .cfg = cfg};
    if (!json_is_object(cfg)) {
        hf_error(&h, "a config.json must hold a JSON object");
    } else {
        const char *type = hf_string(&h, "model_type", NULL);
        if (type != NULL) {
            h.type = type;
            if (strcmp(type, "llama") == 0)
                emit_llama(&h, name, false);
            else if (strcmp(type, "mistral") == 0)
                emit_llama(&h, name, true);
            else if (strcmp(type, "gpt2") == 0)
                emit_gpt2(&h, name);
            else if (strcmp(type, "gpt_neox") == 0)
                emit_gpt_neox(&h, name);
            else if (strcmp(type, "mpt") == 0)
                emit_mpt(&h, name);
            else if (strcmp(type, "opt") == 0)
                emit_opt(&h, name);
            else
                hf_error(&h, "key 'model_type': unsupported model type "
                         "'%s' (supported: gpt2, gpt_neox, llama, mistral, "
                         "mpt, opt)", type);
        }
    }
    json_decref(cfg);
    if (h.err != NULL) {
        free(h.out);
        *cause = h.err;
        return NULL;
    }
    return h.out;
}
