/*
 * check_model.c: tests for the model tree (model.c, model_ini.c,
 * model_hf.c).
 *
 * Parameter counts of the built-in models are asserted exactly, each with
 * its derivation from the architecture, because every later stage (FSDP
 * unit sizes, all-gather bytes, memory) is a function of them.  Error tests
 * assert the full message text: file, line, what is wrong and the hint.
 */
#define _POSIX_C_SOURCE 200809L /* open_memstream(), mkdtemp() */

#include "model.h"
#include "check_main.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* --- helpers ---------------------------------------------------------- */

static struct model *
load_ok(const char *name)
{
    char *cause = NULL;
    struct model *m = model_load(name, &cause);
    ck_assert_msg(m != NULL, "model_load(%s): %s", name,
                  cause ? cause : "?");
    return m;
}

static int64_t
params_of(const char *name)
{
    struct model *m = load_ok(name);
    int64_t n = m->n_params;
    ck_assert_int_eq(n, m->root->subtree_params);
    model_free(m);
    return n;
}

static struct model *
ini_ok(const char *text)
{
    char *cause = NULL;
    struct model *m = model_parse_ini(text, "x.ini", &cause);
    ck_assert_msg(m != NULL, "model_parse_ini: %s", cause ? cause : "?");
    return m;
}

/* The message for an INI text that must fail; caller frees. */
static char *
ini_err(const char *text)
{
    char *cause = NULL;
    struct model *m = model_parse_ini(text, "x.ini", &cause);
    ck_assert_msg(m == NULL, "expected an error for:\n%s", text);
    ck_assert_ptr_nonnull(cause);
    return cause;
}

static void
assert_ini_err(const char *text, const char *expect)
{
    char *cause = ini_err(text);
    ck_assert_str_eq(cause, expect);
    free(cause);
}

static void
assert_hf_err(const char *json, const char *expect)
{
    char *cause = NULL;
    char *ini = model_hf_to_ini(json, "c.json", "c", &cause);
    ck_assert_msg(ini == NULL, "expected an error for %s", json);
    ck_assert_str_eq(cause, expect);
    free(cause);
}

static int
count_class(const struct model *m, const char *cls)
{
    int n = 0;
    for (int i = 0; i < m->n_modules; i++)
        n += strcmp(m->modules[i]->cls, cls) == 0;
    return n;
}

static const struct module *
find_path(const struct model *m, const char *path)
{
    for (int i = 0; i < m->n_modules; i++) {
        char *p = model_module_path(m->modules[i]);
        int eq = strcmp(p, path) == 0;
        free(p);
        if (eq)
            return m->modules[i];
    }
    ck_abort_msg("no module '%s'", path);
    return NULL;
}

/* model_print_tree() output as a string; caller frees. */
static char *
tree_text(const struct model *m)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    model_print_tree(m, NULL, f);
    fclose(f);
    return buf;
}

/* Write TEXT to a fresh file named NAME in a temporary directory; returns
 * the path (caller frees, and removes with remove_tmp()). */
static char *
write_tmp(const char *name, const char *text)
{
    char dir[] = "/tmp/check_model.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    size_t n = strlen(dir) + strlen(name) + 2;
    char *path = malloc(n);
    snprintf(path, n, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static void
remove_tmp(char *path)
{
    unlink(path);
    char *slash = strrchr(path, '/');
    *slash = '\0';
    rmdir(path);
    free(path);
}

/* A small valid llama config.json; keys are added before the closing
 * brace (a key given twice is an error, so LLAMA_BASE leaves out
 * hidden_size and num_hidden_layers for tests that set their own). */
#define LLAMA_BASE "{\"model_type\": \"llama\", " \
    "\"intermediate_size\": 128, " \
    "\"num_attention_heads\": 4, \"vocab_size\": 100"
#define LLAMA_MIN LLAMA_BASE ", \"hidden_size\": 64, \"num_hidden_layers\": 2"

/* --- core ------------------------------------------------------------- */

START_TEST(test_model_llama_param_counts)
{
    /* Llama: V*d embed + L*(attn + mlp + 2 norms) + d final norm + V*d head,
     * attn = 2*d*(nh*hd) + 2*d*(kv*hd), mlp = 3*d*ff, norms = 2*d.
     * llama2-7b: d 4096, ff 11008, L 32, kv 32, V 32000:
     * 2*32000*4096 + 32*(4*4096^2 + 3*4096*11008 + 8192) + 4096
     * = 262144000 + 32*202383360 + 4096 = 6738415616. */
    ck_assert_int_eq(params_of("llama2-7b"), 6738415616LL);
    /* llama2-13b: d 5120, ff 13824, L 40, kv 40:
     * 2*32000*5120 + 40*(4*5120^2 + 3*5120*13824 + 10240) + 5120
     * = 327680000 + 40*317204480 + 5120 = 13015864320. */
    ck_assert_int_eq(params_of("llama2-13b"), 13015864320LL);
    /* llama2-70b: d 8192, ff 28672, L 80, 64 heads, kv 8 (hd 128):
     * attn = 2*8192^2 + 2*8192*1024 = 150994944, mlp = 3*8192*28672 =
     * 704643072; 2*32000*8192 + 80*(150994944 + 704643072 + 16384) + 8192
     * = 524288000 + 80*855654400 + 8192 = 68976648192. */
    ck_assert_int_eq(params_of("llama2-70b"), 68976648192LL);
    /* llama3-8b: d 4096, ff 14336, L 32, kv 8, V 128256:
     * attn = 2*4096^2 + 2*4096*1024 = 41943040, mlp = 176160768;
     * 2*128256*4096 + 32*(41943040 + 176160768 + 8192) + 4096
     * = 1050673152 + 32*218112000 + 4096 = 8030261248. */
    ck_assert_int_eq(params_of("llama3-8b"), 8030261248LL);
    /* llama3-70b: llama2-70b's layers with V 128256:
     * 2*128256*8192 + 80*855654400 + 8192 = 2101346304 + 68452352000
     * + 8192 = 70553706496. */
    ck_assert_int_eq(params_of("llama3-70b"), 70553706496LL);
    /* mistral-7b: llama3-8b's layers with V 32000 (sliding window adds no
     * parameters): 2*32000*4096 + 32*218112000 + 4096 = 7241732096. */
    ck_assert_int_eq(params_of("mistral-7b"), 7241732096LL);
    /* tiny-llama: d 256, ff 688, L 4, V 1000, untied:
     * 2*1000*256 + 4*(4*256^2 + 3*256*688 + 512) + 256
     * = 512000 + 4*791040 + 256 = 3676416. */
    ck_assert_int_eq(params_of("tiny-llama"), 3676416);
}
END_TEST

START_TEST(test_model_gpt_param_counts)
{
    /* GPT-2 block: 2 LayerNorms 4d + c_attn 3d^2+3d + c_proj d^2+d +
     * c_fc 4d^2+4d + c_proj 4d^2+d = 12d^2 + 13d; plus wte V*d, wpe P*d,
     * ln_f 2d; lm_head tied.  gpt2: d 768, L 12, P 1024, V 50257:
     * 38597376 + 786432 + 12*(12*589824 + 9984) + 1536
     * = 38597376 + 786432 + 85054464 + 1536 = 124439808. */
    ck_assert_int_eq(params_of("gpt2"), 124439808);
    /* gpt3-175b: d 12288, L 96, P 2048, V 50257:
     * wte 50257*12288 = 617558016, wpe 2048*12288 = 25165824,
     * block 12*12288^2 + 13*12288 = 1812099072, * 96 = 173961510912,
     * ln_f 24576; total 174604259328. */
    ck_assert_int_eq(params_of("gpt3-175b"), 174604259328LL);
    /* gpt-neox-20b: d 6144, ff 24576, L 44, V 50432, untied, all linears
     * with bias: qkv 6144*18432+18432 = 113264640, dense 37754880,
     * h_to_4h 151019520, 4h_to_h 151001088, 2 LayerNorms 24576 ->
     * 453064704 per layer; 2*50432*6144 + 44*453064704 + 12288
     * = 619708416 + 19934846976 + 12288 = 20554567680. */
    ck_assert_int_eq(params_of("gpt-neox-20b"), 20554567680LL);
    /* mpt-7b: d 4096, L 32, ratio 4, V 50432, no biases, tied, ALiBi:
     * Wqkv 3d^2 + out_proj d^2 + up/down 8d^2 + 2 norms 2d = 201334784;
     * 50432*4096 + 32*201334784 + 4096 = 206569472 + 6442713088 + 4096
     * = 6649286656. */
    ck_assert_int_eq(params_of("mpt-7b"), 6649286656LL);
    /* opt-1.3b: d 2048, ff 8192, L 24, V 50272, positions 2048+2, tied:
     * 4 attn linears 4*(d^2+d) = 16785408, fc1 16785408, fc2 16779264,
     * 2 LayerNorms 8192 -> 50358272 per layer; 50272*2048 + 2050*2048 +
     * 24*50358272 + 4096 = 102957056 + 4198400 + 1208598528 + 4096
     * = 1315758080. */
    ck_assert_int_eq(params_of("opt-1.3b"), 1315758080LL);
}
END_TEST

START_TEST(test_model_native_param_counts)
{
    /* bert-large: embeddings 30522*1024 + 512*1024 + 2*1024 + 2048
     * = 31782912; layer: q,k,v 3*(1024^2+1024) = 3148800, attn output
     * 1049600 + 2048, intermediate 4198400, output 4195328 + 2048 =
     * 12596224; pooler 1049600; 31782912 + 24*12596224 + 1049600
     * = 335141888. */
    ck_assert_int_eq(params_of("bert-large"), 335141888);
    /* t5-11b: shared 32128*1024 = 32899072 (lm_head tied to it);
     * attention 4*1024*16384 = 67108864, FF 2*1024*65536 = 134217728,
     * each sublayer norm 1024.  Encoder block 67108864 + 134217728 + 2048
     * = 201328640, decoder block + cross 67109888 = 268438528;
     * 24 of each + 2 relative biases 32*128 + 2 final norms:
     * 32899072 + 24*201328640 + 24*268438528 + 8192 + 2048
     * = 11307321344. */
    ck_assert_int_eq(params_of("t5-11b"), 11307321344LL);
    /* toy: net1 1024*2048 + 2048 = 2099200, net2 2048*4096 + 4096 =
     * 8392704; total 10491904. */
    ck_assert_int_eq(params_of("toy"), 10491904);
}
END_TEST

START_TEST(test_model_named_modules_preorder)
{
    struct model *m = load_ok("llama2-7b");
    ck_assert_ptr_eq(m->modules[0], m->root);
    ck_assert_str_eq(m->root->name, "");
    ck_assert_str_eq(m->root->cls, "LlamaForCausalLM");
    ck_assert_ptr_null(m->root->parent);
    /* root + lm_head + loss = 3; model, embed_tokens, layers, norm = 4;
     * per layer: itself, 2 norms, self_attn + 5 children, mlp + 5 = 15;
     * 3 + 4 + 32*15 = 487. */
    ck_assert_int_eq(m->n_modules, 487);
    /* One LlamaDecoderLayer per num_hidden_layers. */
    ck_assert_int_eq(count_class(m, "LlamaDecoderLayer"), 32);
    for (int i = 0; i < m->n_modules; i++) {
        const struct module *mod = m->modules[i];
        ck_assert_int_eq(mod->index, i);
        if (i > 0)
            ck_assert_int_lt(mod->parent->index, i);
        int64_t sum = mod->own_params;
        for (int j = 0; j < mod->n_children; j++) {
            ck_assert_ptr_eq(mod->children[j]->parent, mod);
            sum += mod->children[j]->subtree_params;
        }
        ck_assert_int_eq(mod->subtree_params, sum);
    }
    /* Pre-order: each container is followed by its first child. */
    const char *expect[] = {"", "model", "model.embed_tokens",
                            "model.layers", "model.layers.0",
                            "model.layers.0.input_layernorm",
                            "model.layers.0.self_attn",
                            "model.layers.0.self_attn.q_proj"};
    for (int i = 0; i < 8; i++) {
        char *p = model_module_path(m->modules[i]);
        ck_assert_str_eq(p, expect[i]);
        free(p);
    }
    char *last = model_module_path(m->modules[m->n_modules - 1]);
    ck_assert_str_eq(last, "loss");
    free(last);
    ck_assert_str_eq(m->layer_cls, "LlamaDecoderLayer");
    ck_assert_str_eq(m->source, "builtin:llama2-7b");
    /* Width and vocabulary from the config: 4096 and 32000. */
    ck_assert_int_eq(m->hidden, 4096);
    ck_assert_int_eq(m->vocab, 32000);
    model_free(m);
}
END_TEST

START_TEST(test_model_layer_shapes)
{
    struct model *m = load_ok("llama3-8b");
    const struct module *k = find_path(m, "model.layers.31.self_attn.k_proj");
    /* GQA: k_proj maps d 4096 to kv_heads 8 * head_dim 128 = 1024. */
    ck_assert_int_eq(k->in, 4096);
    ck_assert_int_eq(k->out, 1024);
    ck_assert(!k->bias);
    const struct module *core = find_path(m, "model.layers.0.self_attn.core");
    ck_assert_int_eq(core->kind, LAYER_ATTENTION);
    ck_assert_int_eq(core->heads, 32);
    ck_assert_int_eq(core->kv_heads, 8);
    ck_assert_int_eq(core->head_dim, 128);
    ck_assert(core->causal);
    ck_assert_int_eq(core->window, 0);
    const struct module *mlp = find_path(m, "model.layers.0.mlp");
    /* Forward order: gate_proj, act_fn, up_proj, mul, down_proj. */
    ck_assert_int_eq(mlp->n_children, 5);
    ck_assert_int_eq(mlp->children[3]->kind, LAYER_MUL);
    ck_assert_int_eq(mlp->children[3]->out, 14336);
    model_free(m);

    m = load_ok("mistral-7b");
    core = find_path(m, "model.layers.0.self_attn.core");
    /* sliding_window 4096 in the config. */
    ck_assert_int_eq(core->window, 4096);
    ck_assert_str_eq(m->root->cls, "MistralForCausalLM");
    model_free(m);

    m = load_ok("bert-large");
    core = find_path(m, "encoder.layer.23.attention.self.core");
    ck_assert(!core->causal);
    /* Encoder-only: no cross-entropy, so no vocabulary; width from the
     * word embedding, 1024. */
    ck_assert_int_eq(m->vocab, 0);
    ck_assert_int_eq(m->hidden, 1024);
    ck_assert_int_eq(count_class(m, "BertLayer"), 24);
    model_free(m);

    m = load_ok("t5-11b");
    /* 24 encoder + 24 decoder blocks, all of class T5Block. */
    ck_assert_int_eq(count_class(m, "T5Block"), 48);
    const struct module *rb = find_path(
        m, "decoder.block.0.layer.0.SelfAttention.relative_attention_bias");
    /* relative_attention_num_buckets 32 x num_heads 128. */
    ck_assert_int_eq(rb->own_params, 32 * 128);
    core = find_path(m, "decoder.block.5.layer.0.SelfAttention.core");
    ck_assert(core->causal);
    core = find_path(m, "decoder.block.5.layer.1.EncDecAttention.core");
    ck_assert(!core->causal);
    model_free(m);
}
END_TEST

START_TEST(test_model_tied_head)
{
    struct model *m = load_ok("gpt2");
    const struct module *head = find_path(m, "lm_head");
    ck_assert(head->tied);
    /* Tied to wte and without bias: no parameters of its own. */
    ck_assert_int_eq(head->own_params, 0);
    ck_assert_int_eq(head->out, 50257);
    const struct module *c_attn = find_path(m, "transformer.h.11.attn.c_attn");
    ck_assert_str_eq(c_attn->cls, "Conv1D");
    /* Conv1D(768, 2304) with bias: 768*2304 + 2304 = 1771776. */
    ck_assert_int_eq(c_attn->own_params, 1771776);
    const struct module *loss = m->root->children[m->root->n_children - 1];
    ck_assert_str_eq(loss->name, "loss");
    ck_assert_int_eq(loss->kind, LAYER_CROSS_ENTROPY);
    model_free(m);
}
END_TEST

START_TEST(test_model_print_tree)
{
    struct model *m = load_ok("toy");
    char *s = tree_text(m);
    /* net1 1024*2048+2048 = 2099200, net2 2048*4096+4096 = 8392704. */
    ck_assert_str_eq(s,
        "toy (ToyModel) own=0 subtree=10491904\n"
        "  net1 (Linear) own=2099200 subtree=2099200\n"
        "  relu (ReLU) own=0 subtree=0\n"
        "  net2 (Linear) own=8392704 subtree=8392704\n");
    free(s);
    model_free(m);

    m = load_ok("llama2-7b");
    s = tree_text(m);
    /* 32 identical layers collapse into one line of 202383360 each. */
    ck_assert_ptr_nonnull(strstr(s, "\n      0..31 (LlamaDecoderLayer) x32 "
                                    "own=0 subtree=202383360 each\n"));
    ck_assert_ptr_null(strstr(s, "\n      1 (LlamaDecoderLayer)"));
    char *again = tree_text(m);
    ck_assert_str_eq(s, again);
    free(again);
    free(s);
    model_free(m);

    m = load_ok("gpt3-175b");
    s = tree_text(m);
    int lines = 0;
    for (const char *p = s; *p; p++)
        lines += *p == '\n';
    /* root, transformer, wte, wpe, h, one collapsed block line with its
     * 4 + 3 + 3 descendants... under 30 lines for 1064 modules. */
    ck_assert_int_lt(lines, 30);
    ck_assert_ptr_nonnull(strstr(s, "0..95 (GPT2Block) x96"));
    free(s);
    model_free(m);
}
END_TEST

START_TEST(test_model_ini_features)
{
    struct model *m = ini_ok(
        "; a comment\n"
        "# another\n"
        "[model]\n"
        "root = Net   # inline comment\n"
        "hidden = 32\n"
        "[Net]\n"
        "blocks = ModuleList(Block, 3)\n"
        "head = Linear(16, 8, bias=false, tied=true)\n"
        "p = Parameter(1K)\n"
        "mha = MultiheadAttention(16, 4)\n"
        "mha_nb = MultiheadAttention(embed_dim=16, heads=4, bias=false)\n"
        "[Block]\n"
        "norm = LayerNorm(16, bias=false, cls=MyNorm)\n"
        "attn = Attention(heads=4, head_dim=4, causal=false, window=8)\n"
        "rot = Attention(heads=4, head_dim=4, rope=complex)\n"
        "proj = Conv1D(16, 16)\n");
    /* name defaults to the origin's stem: "x.ini" -> "x". */
    ck_assert_str_eq(m->name, "x");
    ck_assert_ptr_null(m->layer_cls);
    /* [model] hidden overrides the default. */
    ck_assert_int_eq(m->hidden, 32);
    /* Block: norm 16 (no bias) + Conv1D 16*16+16 = 288; 3 blocks 864.
     * head: tied, no bias, 0.  p: 1K = 1000.  mha: 4*16^2 + 4*16 = 1088;
     * without bias 1024.  Total 864 + 1000 + 1088 + 1024 = 3976. */
    ck_assert_int_eq(m->n_params, 3976);
    const struct module *norm = find_path(m, "blocks.2.norm");
    ck_assert_str_eq(norm->cls, "MyNorm");
    ck_assert_int_eq(norm->kind, LAYER_LAYERNORM);
    const struct module *attn = find_path(m, "blocks.0.attn");
    /* kv_heads defaults to heads. */
    ck_assert_int_eq(attn->kv_heads, 4);
    ck_assert_int_eq(attn->window, 8);
    ck_assert(!attn->causal);
    /* rope: absent is none, true is Hugging Face's half, or by name. */
    ck_assert_int_eq(attn->rope, ROPE_NONE);
    ck_assert_int_eq(find_path(m, "blocks.0.rot")->rope, ROPE_COMPLEX);
    ck_assert_str_eq(find_path(m, "blocks")->cls, "ModuleList");
    ck_assert_str_eq(find_path(m, "blocks.1")->cls, "Block");
    /* Each leaf is its own instance. */
    ck_assert_ptr_ne(find_path(m, "blocks.0.proj"),
                     find_path(m, "blocks.1.proj"));
    model_free(m);
}
END_TEST

START_TEST(test_model_load_files)
{
    char *ini = write_tmp("my-net.ini",
                          "[model]\nroot = T\n[T]\na = Linear(4, 4)\n");
    struct model *m = load_ok(ini);
    /* No [model] name: the file's base name without extension. */
    ck_assert_str_eq(m->name, "my-net");
    ck_assert_str_eq(m->source, ini);
    /* 4*4 + 4 = 20. */
    ck_assert_int_eq(m->n_params, 20);
    model_free(m);
    remove_tmp(ini);

    char *json = write_tmp("config.json", "  \n" LLAMA_MIN "}\n");
    m = load_ok(json);
    ck_assert_str_eq(m->name, "config");
    ck_assert_str_eq(m->root->cls, "LlamaForCausalLM");
    /* d 64, ff 128, L 2, V 100: 2*100*64 + 2*(4*64^2 + 3*64*128 + 128) +
     * 64 = 12800 + 2*41088 + 64 = 95040. */
    ck_assert_int_eq(m->n_params, 95040);
    model_free(m);
    remove_tmp(json);
}
END_TEST

START_TEST(test_model_hf_translation)
{
    char *cause = NULL;
    char *ini = model_hf_to_ini(LLAMA_MIN ", \"tie_word_embeddings\": true, "
                                "\"attention_bias\": true}", "c.json", "c",
                                &cause);
    ck_assert_ptr_nonnull(ini);
    ck_assert_ptr_nonnull(strstr(ini, "root = LlamaForCausalLM\n"));
    ck_assert_ptr_nonnull(strstr(
        ini, "lm_head = Linear(64, 100, bias=false, tied=true)\n"));
    struct model *m = model_parse_ini(ini, "c.json", &cause);
    ck_assert_ptr_nonnull(m);
    /* Untied count 95040 minus the head 6400, plus q,k,v,o biases
     * 4*64 per layer: 95040 - 6400 + 2*256 = 89152. */
    ck_assert_int_eq(m->n_params, 89152);
    model_free(m);
    free(ini);
}
END_TEST

/* A small valid GPT-2 config.json, keys added before the closing brace. */
#define GPT2_MIN "{\"model_type\": \"gpt2\", \"n_embd\": 64, \"n_layer\": 2, " \
                 "\"n_head\": 4, \"n_positions\": 128, \"vocab_size\": 100"

/* GPT-2 drops the embeddings' sum and each residual branch with
 * GPT2Config's 0.1 by default: drop, resid_dropout and the MLP's dropout;
 * with p = 0 F.dropout returns its input and no Dropout is listed; a
 * probability outside 0..1 is refused with its key. */
START_TEST(test_model_hf_dropout)
{
    char *cause = NULL;
    char *ini = model_hf_to_ini(GPT2_MIN "}", "g.json", "g", &cause);
    ck_assert_msg(ini != NULL, "%s", cause);
    ck_assert_ptr_nonnull(strstr(ini, "drop = Dropout(64)\n"));
    ck_assert_ptr_nonnull(strstr(ini, "resid_dropout = Dropout(64)\n"));
    ck_assert_ptr_nonnull(strstr(ini, "\ndropout = Dropout(64)\n"));
    free(ini);
    ini = model_hf_to_ini(GPT2_MIN ", \"embd_pdrop\": 0, \"resid_pdrop\": "
                          "0.0}", "g.json", "g", &cause);
    ck_assert_msg(ini != NULL, "%s", cause);
    ck_assert_ptr_null(strstr(ini, "Dropout"));
    free(ini);
    ck_assert_ptr_null(model_hf_to_ini(GPT2_MIN ", \"resid_pdrop\": 1.5}",
                                       "g.json", "g", &cause));
    ck_assert_msg(strstr(cause, "key 'resid_pdrop': must be a probability "
                                "from 0 to 1 (got 1.5)") != NULL, "%s", cause);
    free(cause);
}
END_TEST

/* The attention probabilities' dropout: GPT-2's attn_pdrop (GPT2Config
 * default 0.1), Llama's attention_dropout (default 0) and MPT's
 * attn_config.attn_pdrop reach the Attention as dropout=P; p = 0 leaves
 * it out.  In the INI format dropout= is a probability from 0 to 1. */
START_TEST(test_model_hf_attention_dropout)
{
    char *cause = NULL;
    char *ini = model_hf_to_ini(GPT2_MIN "}", "g.json", "g", &cause);
    ck_assert_msg(ini != NULL, "%s", cause);
    ck_assert_ptr_nonnull(strstr(ini, "core = Attention(heads=4, "
                                      "head_dim=16, dropout=0.1)\n"));
    free(ini);
    ini = model_hf_to_ini(GPT2_MIN ", \"attn_pdrop\": 0}", "g.json", "g",
                          &cause);
    ck_assert_msg(ini != NULL, "%s", cause);
    ck_assert_ptr_nonnull(strstr(ini, "core = Attention(heads=4, "
                                      "head_dim=16)\n"));
    free(ini);
    ini = model_hf_to_ini(LLAMA_MIN "}", "l.json", "l", &cause);
    ck_assert_msg(ini != NULL, "%s", cause);
    ck_assert_ptr_null(strstr(ini, "dropout="));
    free(ini);
    ini = model_hf_to_ini(LLAMA_MIN ", \"attention_dropout\": 0.25}",
                          "l.json", "l", &cause);
    ck_assert_msg(ini != NULL, "%s", cause);
    struct model *m = ini_ok(ini);
    const struct module *core = find_path(m, "model.layers.0.self_attn.core");
    ck_assert_ptr_nonnull(core);
    ck_assert_double_eq(core->dropout, 0.25);
    model_free(m);
    free(ini);
    ini = model_hf_to_ini("{\"model_type\": \"mpt\", \"d_model\": 64, "
                          "\"n_heads\": 4, \"n_layers\": 2, \"vocab_size\": "
                          "100, \"attn_config\": {\"attn_pdrop\": 0.05}}",
                          "m.json", "m", &cause);
    ck_assert_msg(ini != NULL, "%s", cause);
    ck_assert_ptr_nonnull(strstr(ini, "head_dim=16, dropout=0.05)\n"));
    free(ini);
    cause = ini_err("[model]\nroot = R\n[R]\n"
                    "core = Attention(heads=4, head_dim=16, dropout=1.5)\n");
    ck_assert_msg(strstr(cause, "argument 'dropout' of Attention") != NULL,
                  "%s", cause);
    free(cause);
}
END_TEST

/* --- limits ----------------------------------------------------------- */

START_TEST(test_model_limit_dimension)
{
    struct model *m = ini_ok("[model]\nroot = T\n[T]\n"
                             "a = Linear(16777216, 1, bias=false)\n");
    /* The largest dimension, 2^24, times 1. */
    ck_assert_int_eq(m->n_params, 16777216);
    model_free(m);
    assert_ini_err("[model]\nroot = T\n[T]\na = Linear(16777217, 2)\n",
                   "x.ini:4: argument 'in' of Linear: '16777217' is out of "
                   "range (allowed 1 to 16777216)");
}
END_TEST

START_TEST(test_model_limit_list_count)
{
    struct model *m = ini_ok("[model]\nroot = T\n[T]\n"
                             "a = ModuleList(B, 100000)\n[B]\n"
                             "p = Parameter(1)\n");
    /* root + list + 100000 * (B + p) = 200002 modules, 1 param each. */
    ck_assert_int_eq(m->n_modules, 200002);
    ck_assert_int_eq(m->n_params, 100000);
    model_free(m);
    assert_ini_err("[model]\nroot = T\n[T]\na = ModuleList(B, 100001)\n"
                   "[B]\np = Parameter(1)\n",
                   "x.ini:4: argument 'count' of ModuleList: '100001' is "
                   "out of range (allowed 1 to 100000)");
}
END_TEST

START_TEST(test_model_limit_modules)
{
    /* B has 1 + 20 modules; 100000 of them is 2100000 > 2000000, found on
     * the class graph before anything is allocated. */
    char text[1024];
    int n = snprintf(text, sizeof text, "[model]\nroot = T\n[T]\n"
                     "a = ModuleList(B, 100000)\n[B]\n");
    for (int i = 0; i < 20; i++)
        n += snprintf(text + n, sizeof text - (size_t)n,
                      "r%d = ReLU(1)\n", i);
    snprintf(text + n, sizeof text - (size_t)n, "p = Parameter(1)\n");
    assert_ini_err(text, "x.ini:4: class 'T' expands to more than 2000000 "
                   "modules (reduce the ModuleList counts)");
}
END_TEST

START_TEST(test_model_limit_params)
{
    /* 4 * 2^24 * 2^24 = 1.13e15 > 1e15. */
    assert_ini_err("[model]\nroot = T\n[T]\na = ModuleList(B, 4)\n[B]\n"
                   "x = Linear(16777216, 16777216)\n",
                   "x.ini:4: class 'T' has more than 1e15 parameters "
                   "(check the dimensions and counts)");
}
END_TEST

START_TEST(test_model_limit_no_params)
{
    assert_ini_err("[model]\nroot = T\n[T]\na = ReLU(4)\n",
                   "x.ini: model 'x' has no parameters (FSDP would have "
                   "nothing to shard)");
}
END_TEST

START_TEST(test_model_limit_depth)
{
    /* C0 -> C1 -> ... -> C1000: 1001 nested classes. */
    size_t cap = 64 * 1024, n = 0;
    char *text = malloc(cap);
    n += (size_t)snprintf(text, cap, "[model]\nroot = C0\n");
    for (int i = 0; i < 1000; i++)
        n += (size_t)snprintf(text + n, cap - n, "[C%d]\nc = C%d\n", i,
                              i + 1);
    snprintf(text + n, cap - n, "[C1000]\np = Parameter(1)\n");
    char *cause = ini_err(text);
    ck_assert_ptr_nonnull(strstr(cause, "classes nest more than 1000 deep"));
    free(cause);
    free(text);
}
END_TEST

START_TEST(test_model_limit_file_size)
{
    /* 16 MiB + 1 byte of comment. */
    size_t n = 16 * 1024 * 1024 + 1;
    char *big = malloc(n + 1);
    memset(big, '#', n);
    big[n] = '\0';
    char *path = write_tmp("big.ini", big);
    char *cause = NULL;
    ck_assert_ptr_null(model_load(path, &cause));
    char *expect = malloc(strlen(path) + 128);
    sprintf(expect, "%s: file is larger than 16 MiB (is it a model .ini or "
            "config.json?)", path);
    ck_assert_str_eq(cause, expect);
    free(expect);
    free(cause);
    free(big);
    remove_tmp(path);
}
END_TEST

START_TEST(test_model_limit_line_length)
{
    char text[512];
    /* "a = Linear(4, 4)  # " is 20 characters, plus 250 digits = 270,
     * over libinih's 200-byte buffer (198 characters + newline + NUL). */
    snprintf(text, sizeof text, "[model]\nroot = T\n[T]\n"
             "a = Linear(4, 4)  # %0250d\n", 0);
    char *cause = ini_err(text);
    ck_assert_ptr_nonnull(strstr(cause, "x.ini:4: line is 270 characters "
                                        "long"));
    free(cause);
}
END_TEST

/* --- errors ----------------------------------------------------------- */

START_TEST(test_model_error_unknown_layer)
{
    assert_ini_err("[model]\nroot = T\n[T]\na = Linaer(1024, 2048)\n",
                   "x.ini:4: unknown layer 'Linaer' (known: Linear, Conv1D, "
                   "Embedding, LayerNorm, RMSNorm, Attention, GELU, SiLU, "
                   "ReLU, Activation, Mul, Dropout, CrossEntropy, "
                   "MultiheadAttention, Parameter, ModuleList; or define a "
                   "[Linaer] section)");
}
END_TEST

START_TEST(test_model_error_undefined_class)
{
    assert_ini_err("[model]\nroot = T\n[T]\na = Block\n",
                   "x.ini:4: class 'Block' is not defined (add a [Block] "
                   "section)");
    assert_ini_err("[model]\nroot = U\n[T]\na = Linear(4, 4)\n",
                   "x.ini:2: root class 'U' is not defined (add a [U] "
                   "section)");
}
END_TEST

START_TEST(test_model_error_recursive_class)
{
    assert_ini_err("[model]\nroot = A\n[A]\nb = B\n[B]\nx = Linear(2, 2)\n"
                   "a = ModuleList(A, 2)\n",
                   "x.ini:7: class 'A' contains itself (A -> B -> A; a "
                   "module cannot be its own descendant)");
    assert_ini_err("[model]\nroot = A\n[A]\na = A\n",
                   "x.ini:4: class 'A' contains itself (A -> A; a module "
                   "cannot be its own descendant)");
}
END_TEST

START_TEST(test_model_error_missing_root)
{
    assert_ini_err("[T]\na = Linear(2, 2)\n",
                   "x.ini: no root class (add 'root = ClassName' under a "
                   "[model] section)");
}
END_TEST

START_TEST(test_model_error_duplicate_child)
{
    assert_ini_err("[model]\nroot = T\n[T]\na = Linear(2, 2)\nb = ReLU(2)\n"
                   "a = Linear(3, 3)\n",
                   "x.ini:6: duplicate child 'a' in [T] (first defined on "
                   "line 4; rename one)");
    assert_ini_err("[model]\nroot = T\n[T]\na = Linear(2, 2)\n"
                   "  b = ReLU(2)\n",
                   "x.ini:5: indented line (the INI reader takes it as a "
                   "continuation of 'a'; remove the indentation)");
}
END_TEST

START_TEST(test_model_error_bad_number)
{
    assert_ini_err("[model]\nroot = T\n[T]\na = Linear(2x, 2)\n",
                   "x.ini:4: argument 'in' of Linear: '2x' is not a whole "
                   "number (write e.g. '4096', '1e8' or '100M')");
    assert_ini_err("[model]\nroot = T\n[T]\na = Linear(4)\n",
                   "x.ini:4: missing argument 'out' of Linear (usage: "
                   "Linear(in, out[, bias=true|false][, tied=true|false]))");
    assert_ini_err("[model]\nroot = T\n[T]\na = Linear(4, 4, bais=true)\n",
                   "x.ini:4: unknown argument 'bais' for Linear (usage: "
                   "Linear(in, out[, bias=true|false][, tied=true|false]), "
                   "plus cls=Name)");
    assert_ini_err("[model]\nroot = T\n[T]\n"
                   "a = Attention(heads=32, head_dim=128, kv_heads=5)\n",
                   "x.ini:4: Attention: kv_heads=5 must divide heads=32");
    assert_ini_err("[model]\nroot = T\n[T]\n"
                   "a = Attention(heads=4, head_dim=4, rope=sideways)\n",
                   "x.ini:4: argument 'rope' of Attention: 'sideways' is "
                   "not a rotary embedding (write half, complex, matrix, "
                   "true or false)");
}
END_TEST

START_TEST(test_model_error_model_key)
{
    assert_ini_err("[model]\nroot = T\nroots = 3\n[T]\na = Linear(2, 2)\n",
                   "x.ini:3: unknown key 'roots' in [model] (known: name, "
                   "root, layer_class, hidden, vocab, attention, alibi)");
    assert_ini_err("[model]\nroot = T\nlayer_class = Nope\n[T]\n"
                   "a = Linear(4, 4)\n",
                   "x.ini:3: layer_class 'Nope' matches no module in the "
                   "model (use the class name of its repeated block)");
    assert_ini_err("[model]\nroot = T\n[T]\nfoo\n",
                   "x.ini:4: syntax error (expected 'name = value', "
                   "'[Section]' or a # comment)");
}
END_TEST

START_TEST(test_model_error_json)
{
    assert_hf_err(LLAMA_BASE ", \"num_hidden_layers\": 2, \"hidden_size\": -1}",
                  "c.json: key 'hidden_size': must be a positive integer "
                  "(got -1)");
    assert_hf_err(LLAMA_BASE ", \"num_hidden_layers\": 2, "
                  "\"hidden_size\": \"64\"}",
                  "c.json: key 'hidden_size': must be a positive integer "
                  "(got \"64\")");
    assert_hf_err(LLAMA_BASE ", \"hidden_size\": 64, "
                  "\"num_hidden_layers\": 200000}",
                  "c.json: key 'num_hidden_layers': must be at most 100000 "
                  "(got 200000)");
    assert_hf_err(LLAMA_MIN ", \"tie_word_embeddings\": \"yes\"}",
                  "c.json: key 'tie_word_embeddings': must be true or false "
                  "(got \"yes\")");
    assert_hf_err(LLAMA_MIN ", \"num_key_value_heads\": 3}",
                  "c.json: key 'num_key_value_heads': must divide "
                  "num_attention_heads 4 (got 3)");
    assert_hf_err("{\"model_type\": \"gpt2\", \"n_embd\": 64}",
                  "c.json: key 'n_layer' is missing (a gpt2 config.json "
                  "must give it)");
    assert_hf_err("{\"n_embd\": 64}",
                  "c.json: key 'model_type' is missing (every Hugging Face "
                  "config.json has it)");
    assert_hf_err("{\"model_type\": \"bert\"}",
                  "c.json: key 'model_type': unsupported model type 'bert' "
                  "(supported: gpt2, gpt_neox, llama, mistral, mpt, opt)");
    assert_hf_err("{\n  \"model_type\": \"llama\"\n  \"hidden_size\": 64\n}\n",
                  "c.json:3: malformed JSON: '}' expected near "
                  "'\"hidden_size\"'");
    /* A key twice is refused, not "last wins" (17.8B for a 6.7B model). */
    assert_hf_err(LLAMA_MIN ", \"hidden_size\": 128}",
                  "c.json:1: malformed JSON: duplicate object key near "
                  "'\"hidden_size\"'");
}
END_TEST

START_TEST(test_model_error_load)
{
    char *cause = NULL;
    ck_assert_ptr_null(model_load("llama9", &cause));
    ck_assert_str_eq(cause, "unknown model 'llama9' (built-in: bert-large, "
                     "gpt-neox-20b, gpt2, gpt3-175b, llama2-13b, "
                     "llama2-70b, llama2-7b, llama3-70b, llama3-8b, "
                     "mistral-7b, mpt-7b, opt-1.3b, t5-11b, tiny-llama, "
                     "toy; or give the path of a .ini file or a Hugging "
                     "Face config.json)");
    free(cause);
    ck_assert_ptr_null(model_load("/nonexistent/x.ini", &cause));
    ck_assert_str_eq(cause, "/nonexistent/x.ini: No such file or directory");
    free(cause);
    ck_assert_ptr_null(model_load("/tmp", &cause));
    ck_assert_str_eq(cause, "/tmp: Is a directory");
    free(cause);

    char *json = write_tmp("bad.json", "{\n  \"model_type\": \"opt\",\n}");
    ck_assert_ptr_null(model_load(json, &cause));
    char *expect = malloc(strlen(json) + 64);
    sprintf(expect, "%s:3: malformed JSON: string or '}' expected near '}'",
            json);
    ck_assert_str_eq(cause, expect);
    free(expect);
    free(cause);
    remove_tmp(json);
}
END_TEST

static Suite *
model_suite(void)
{
    Suite *s = suite_create("model");
    TCase *core = tcase_create("core");
    tcase_add_test(core, test_model_llama_param_counts);
    tcase_add_test(core, test_model_gpt_param_counts);
    tcase_add_test(core, test_model_native_param_counts);
    tcase_add_test(core, test_model_named_modules_preorder);
    tcase_add_test(core, test_model_layer_shapes);
    tcase_add_test(core, test_model_tied_head);
    tcase_add_test(core, test_model_print_tree);
    tcase_add_test(core, test_model_ini_features);
    tcase_add_test(core, test_model_load_files);
    tcase_add_test(core, test_model_hf_translation);
    tcase_add_test(core, test_model_hf_dropout);
    tcase_add_test(core, test_model_hf_attention_dropout);
    suite_add_tcase(s, core);

    TCase *limits = tcase_create("limits");
    /* The 100000-entry list builds 200002 modules; slow under ASan. */
    tcase_set_timeout(limits, 60);
    tcase_add_test(limits, test_model_limit_dimension);
    tcase_add_test(limits, test_model_limit_list_count);
    tcase_add_test(limits, test_model_limit_modules);
    tcase_add_test(limits, test_model_limit_params);
    tcase_add_test(limits, test_model_limit_no_params);
    tcase_add_test(limits, test_model_limit_depth);
    tcase_add_test(limits, test_model_limit_file_size);
    tcase_add_test(limits, test_model_limit_line_length);
    suite_add_tcase(s, limits);

    TCase *errors = tcase_create("errors");
    tcase_add_test(errors, test_model_error_unknown_layer);
    tcase_add_test(errors, test_model_error_undefined_class);
    tcase_add_test(errors, test_model_error_recursive_class);
    tcase_add_test(errors, test_model_error_missing_root);
    tcase_add_test(errors, test_model_error_duplicate_child);
    tcase_add_test(errors, test_model_error_bad_number);
    tcase_add_test(errors, test_model_error_model_key);
    tcase_add_test(errors, test_model_error_json);
    tcase_add_test(errors, test_model_error_load);
    suite_add_tcase(s, errors);
    return s;
}

int
main(void)
{
    return tu_main(model_suite());
}
