/*
 * validate_runs.c: published end-to-end FSDP runs against the simulator
 * (see validate_runs.h).
 */
#include "validate_runs.h"
#include "builtin.h"
#include "json_out.h"
#include "median.h"
#include "metrics.h"
#include "model.h"
#include "model_cache.h"
#include "net.h"
#include "runconf.h"
#include "setup.h"
#include "str_ci.h"
#include "xalloc.h"

#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- Mapping a row to simulate's arguments --------------------------- */

static void
add_arg(struct vrun_args *a, const char *flag, const char *value)
{
    if (a->n == VRUN_MAX_ARGS)
        return;
    a->arg[a->n].flag = xstrdup(flag);
    a->arg[a->n].value = value ? xstrdup(value) : NULL;
    a->n++;
}

static void
add_count(struct vrun_args *a, const char *flag, long long v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", v);
    add_arg(a, flag, buf);
}

void
vrun_args_free(struct vrun_args *a)
{
    for (int i = 0; i < a->n; i++) {
        free(a->arg[i].flag);
        free(a->arg[i].value);
    }
    free(a->model);
    free(a->model_ini);
    memset(a, 0, sizeof *a);
}

/* The GPUs of the published runs and the built-in node each ran on.
 * All are 8-GPU NVLink nodes with one NIC a GPU (DGX reference; the
 * 96 GB H100 is torchtitan's Grand Teton host). */
static const struct gpu_map {
    const char *need1, *need2;  /* both in the gpu column */
    const char *topology, *label;
} gpu_maps[] = {
    {"A100", "80GB", "dgx-a100-80g", "A100"},
    {"H100", "80GB", "dgx-h100", "H100"},
    {"H100", "96GB", "teton-h100-96g", "H100-96G"},
    {NULL, NULL, NULL, NULL}};

static long long
json_count(json_t *cfg, const char *key, long long dflt)
{
    json_t *v = json_object_get(cfg, key);
    return json_is_integer(v) ? (long long)json_integer_value(v) : dflt;
}

/* The built-in Llama model whose config.json has ROW's architecture
 * (layers, width, heads, KV heads, FFN width, vocabulary), or NULL. */
static const char *
builtin_model(const struct published_e2e *row)
{
    for (int i = 0; i < builtin_n_files; i++) {
        const struct builtin_file *f = &builtin_files[i];
        if (strcmp(f->dir, "models") != 0 || strcmp(f->ext, "json") != 0)
            continue;
        json_t *cfg = json_loads(f->text, JSON_REJECT_DUPLICATES, NULL);
        if (cfg == NULL)
            continue;
        json_t *type = json_object_get(cfg, "model_type");
        long long heads = json_count(cfg, "num_attention_heads", -1);
        bool same = json_is_string(type)
                    && strcmp(json_string_value(type), "llama") == 0
                    && json_count(cfg, "num_hidden_layers", -1)
                           == row->n_layers
                    && json_count(cfg, "hidden_size", -1) == row->hidden
                    && heads == row->n_heads
                    && json_count(cfg, "num_key_value_heads", heads)
                           == row->n_kv_heads
                    && json_count(cfg, "intermediate_size", -1)
                           == row->ffn_hidden
                    && json_count(cfg, "vocab_size", -1) == row->vocab;
        json_decref(cfg);
        if (same)
            return f->name;
    }
    return NULL;
}

/* A model of ROW's architecture when no built-in has it: the Hugging Face
 * LlamaConfig those columns describe (untied embeddings, no biases, as
 * Llama 2), translated to native INI as a config.json file would be. */
static char *
generated_model(const struct published_e2e *row, const char *name,
                char **why)
{
    char *json = xasprintf(
        "{\"model_type\": \"llama\", \"architectures\": "
        "[\"LlamaForCausalLM\"], \"num_hidden_layers\": %lld, "
        "\"hidden_size\": %lld, \"num_attention_heads\": %lld, "
        "\"num_key_value_heads\": %lld, \"intermediate_size\": %lld, "
        "\"vocab_size\": %lld, \"max_position_embeddings\": %lld, "
        "\"tie_word_embeddings\": false}",
        row->n_layers, row->hidden, row->n_heads, row->n_kv_heads,
        row->ffn_hidden, row->vocab, row->seq_len);
    char *origin = xasprintf("run %s (line %d)", row->id, row->line);
    char *ini = model_hf_to_ini(json, origin, name, why);
    free(origin);
    free(json);
    return ini;
}

/* "llama-2-34b" from "Llama-2-34B": the generated model's name. */
static char *
model_name(const char *s)
{
    char *n = xstrdup(*s ? s : "model"), *w = n;
    for (const char *p = n; *p; p++)
        if (isalnum((unsigned char)*p) || *p == '.' || *p == '-')
            *w++ = (char)tolower((unsigned char)*p);
        else if (w > n && w[-1] != '-')
            *w++ = '-';
    *w = '\0';
    return n;
}

/* The dtype named after KEY (e.g. "reduce=") in S, into buf; NULL if
 * none. */
static const char *
dtype_after(const char *s, const char *key, char *buf, size_t len)
{
    const char *p = strstr(s, key);
    if (p == NULL)
        return NULL;
    p += strlen(key);
    size_t n = 0;
    while (n + 1 < len && isalnum((unsigned char)p[n]))
        n++;
    memcpy(buf, p, n);
    buf[n] = '\0';
    return n ? buf : NULL;
}

/* The first of bf16, fp16, fp32 S names, or NULL. */
static const char *
dtype_in(const char *s)
{
    static const char *const d[] = {"bf16", "fp16", "fp32", NULL};
    for (int i = 0; d[i]; i++)
        if (str_has_ci(s, d[i]))
            return d[i];
    return NULL;
}

/* Gbit/s in the inter_node_link text ("400 Gbps inter-node", "800 Gbps",
 * "400 Gb/s per GPU"), or 0. */
static double
link_gbps(const char *s)
{
    for (const char *p = s; *p; p++) {
        if (!isdigit((unsigned char)*p) || (p > s && isdigit(
                (unsigned char)p[-1])) || (p > s && p[-1] == '.'))
            continue;
        char *end;
        double v = strtod(p, &end);
        while (*end == ' ')
            end++;
        if (v > 0 && (strncasecmp(end, "Gbps", 4) == 0
                      || strncasecmp(end, "Gb/s", 4) == 0))
            return v;
    }
    return 0;
}

/* FSDP keyword arguments the row's fsdp_options spell "key=value" (e.g.
 * limit_all_gathers=True) and simulate has an option of that name for:
 * passed as --key value. */
static void
add_fsdp_kwargs(struct vrun_args *a, const char *opts)
{
    char *s = xstrdup(opts), *save = NULL;
    for (char *t = strtok_r(s, ";", &save); t;
         t = strtok_r(NULL, ";", &save)) {
        while (*t == ' ')
            t++;
        char *eq = strchr(t, '=');
        if (eq == NULL || eq == t)
            continue;
        char *end = eq + strcspn(eq, " ");
        *end = '\0';
        *eq = '\0';
        bool known = false;
        for (const struct config_option *o = config_options; o->key; o++)
            known = known || strcmp(o->key, t) == 0;
        if (!known)
            continue;
        char *flag = xasprintf("--%s", t);
        for (char *q = flag + 2; *q; q++)
            if (*q == '_')
                *q = '-';
        add_arg(a, flag, eq + 1);
        free(flag);
    }
    free(s);
}

/* What a source's training loop does that its rows' columns do not say,
 * read from the loop's code at the commit the rows cite.  S05, fms-fsdp
 * (foundation-model-stack/fms-fsdp 4ffb9bd): train_utils.py train() calls
 * model.clip_grad_norm_(cfg.grad_clip_thresh).item() and loss.item()
 * every step, with grad_clip_thresh = 1.0 in config/training.py, and
 * takes CrossEntropyLoss() of the model's output as it comes, bf16 under
 * the bfSixteen policy (FMS's LLaMA.forward returns the head's output
 * without a cast: --loss native);
 * main_training.py wraps with use_orig_params=cfg.use_torch_compile; and
 * its Llama is FMS's, whose RotaryEmbedding.adjusted_qk rotates q and k
 * by 2x2 matrices (fms/modules/positions.py since 500fa64c, 2023-10-09,
 * before the runs).  S07, torchtitan (9dec370): its Llama applies the
 * rotary embedding as a complex product (models/llama/model.py
 * apply_rotary_emb), which torch.compile does not fuse, and train.py
 * clips the gradients every step (utils.clip_grad_norm_, foreach, at
 * training.max_norm = 1.0 in train_configs/llama3_8b.toml).  The PyTorch
 * each ran: S05's "nightlies post-2.2 (Nov 2023-Feb 2024)", 2.3's
 * development line; S07's torch 1963fc8 of 2024-12-23, main after 2.6's
 * fp32 -> bf16 cast kernel (PR #137053, October 2024) and before 2.7's
 * (torch_version.h): 2.6. */
static void
add_loop_facts(struct vrun_args *a, const struct published_e2e *row)
{
    if (strcmp(row->source, "S07") == 0) {
        add_arg(a, "--rotary", "complex");
        add_arg(a, "--clip-grad-norm", "1.0");
        add_arg(a, "--torch-version", "2.6");
    }
    if (strcmp(row->source, "S05") != 0)
        return;
    add_arg(a, "--rotary", "matrix");
    add_arg(a, "--loss", "native");
    add_arg(a, "--clip-grad-norm", "1.0");
    add_arg(a, "--loss-item", "true");
    add_arg(a, "--torch-version", "2.3");
    if (strcasecmp(row->compile, "yes") == 0)
        add_arg(a, "--use-orig-params", "true");
}

int
vrun_map(const struct published_e2e *row, struct vrun_args *a, char **why)
{
    memset(a, 0, sizeof *a);
    *why = NULL;
    const struct gpu_map *g = gpu_maps;
    while (g->topology && !(str_has_ci(row->gpu, g->need1)
                            && str_has_ci(row->gpu, g->need2)))
        g++;
    if (g->topology == NULL) {
        *why = xasprintf("no built-in topology for GPU '%s'", row->gpu);
        return 1;
    }
    static const struct {
        const char *name;
        size_t off;
    } need[] = {
        {"n_layers", offsetof(struct published_e2e, n_layers)},
        {"hidden", offsetof(struct published_e2e, hidden)},
        {"n_heads", offsetof(struct published_e2e, n_heads)},
        {"n_kv_heads", offsetof(struct published_e2e, n_kv_heads)},
        {"ffn_hidden", offsetof(struct published_e2e, ffn_hidden)},
        {"vocab", offsetof(struct published_e2e, vocab)},
        {"seq_len", offsetof(struct published_e2e, seq_len)},
        {"micro_batch_per_gpu", offsetof(struct published_e2e,
                                         micro_batch)},
        {"gpus_per_node", offsetof(struct published_e2e, gpus_per_node)},
        {"nodes", offsetof(struct published_e2e, nodes)}};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (*(const long long *)((const char *)row + need[i].off) < 1) {
            *why = xasprintf("the row gives no %s", need[i].name);
            return 1;
        }
    /* No grad_accum column: the global batch in tokens gives it, when it
     * is a whole number of micro-batches on every GPU (torchtitan's
     * tables state the global batch, not the accumulation). */
    long long accum = row->grad_accum;
    long long per_step = row->micro_batch * row->seq_len * row->gpus_per_node
                         * row->nodes;
    if (accum < 1 && row->global_batch_tokens > 0 && per_step > 0
        && row->global_batch_tokens % per_step == 0)
        accum = row->global_batch_tokens / per_step;
    if (accum < 1) {
        *why = xasprintf("the row gives no grad_accum (nor a global batch "
                         "of whole micro-batches)");
        return 1;
    }
    a->topology = g->topology;
    a->gpu = g->label;

    /* Model: a built-in of the same architecture, else one generated from
     * the architecture columns.  Only Llama-style decoders are built. */
    const char *b = builtin_model(row);
    if (b != NULL) {
        a->model = xstrdup(b);
        a->model_builtin = true;
    } else if (!str_has_ci(row->model, "llama")) {
        *why = xasprintf("no built-in model has the architecture of '%s', "
                         "and only Llama-style ones are generated from "
                         "the columns", row->model);
        return 1;
    } else {
        a->model = model_name(row->model);
        a->model_ini = generated_model(row, a->model, why);
        if (a->model_ini == NULL) {
            char *w = xasprintf("model from the row's architecture: %s",
                                *why);
            free(*why);
            *why = w;
            vrun_args_free(a);
            return 1;
        }
    }
    add_arg(a, "--model", a->model);

    /* Cluster: the row's node count and GPUs per node on the built-in
     * node.  inter_node_link gives the bandwidth of a whole node ("400
     * Gbps inter-node": fms-fsdp's cluster, not the DGX's 8 x 200) unless
     * it says "per GPU"; the node keeps one NIC a GPU, as NCCL uses them
     * rail by rail, each with its share: nics_per_node = gpus_per_node,
     * nic_bandwidth = node total / gpus_per_node. */
    add_arg(a, "--topology", g->topology);
    add_count(a, "--nodes", row->nodes);
    add_count(a, "--gpus-per-node", row->gpus_per_node);
    double gbps = link_gbps(row->inter);
    if (gbps > 0) {
        double per_nic = str_has_ci(row->inter, "per GPU")
                             ? gbps : gbps / (double)row->gpus_per_node;
        char *s = xasprintf("inter.nics_per_node=%lld", row->gpus_per_node);
        add_arg(a, "--set", s);
        free(s);
        s = xasprintf("inter.nic_bandwidth=%.6gGbps", per_nic);
        add_arg(a, "--set", s);
        free(s);
    }

    /* FSDP2 (fully_shard, torchtitan's: every FSDP2 row of the data set
     * is): --fsdp-version 2, which has no sharding strategy (FULL_SHARD
     * is its reshard_after_forward=True default), grouped as torchtitan
     * did up to v0.1.0, the benchmarks' commits included: each block,
     * the last one not resharded after forward, then the root
     * (--fsdp2-groups torchtitan-blocks, doc/fsdp-semantics.md §13). */
    if (str_has_ci(row->sharding, "FSDP2")) {
        add_arg(a, "--fsdp-version", "2");
        add_arg(a, "--fsdp2-groups", "torchtitan-blocks");
        if (str_has_ci(row->sharding, "HSDP")
            || str_has_ci(row->sharding, "HYBRID")) {
            add_count(a, "--dp-replicate", row->nodes);
        } else if (!str_has_ci(row->sharding, "FULL_SHARD")) {
            *why = xasprintf("FSDP2 sharding '%s' has no fully_shard "
                             "mapping", row->sharding);
            vrun_args_free(a);
            return 1;
        }
    } else {
    /* FSDP: HSDP is HYBRID_SHARD (shard in the node, replicate across). */
    const char *shard =
        str_has_ci(row->sharding, "_HYBRID_SHARD_ZERO2")
            ? "_HYBRID_SHARD_ZERO2"
        : str_has_ci(row->sharding, "HSDP")
          || str_has_ci(row->sharding, "HYBRID") ? "HYBRID_SHARD"
        : str_has_ci(row->sharding, "FULL_SHARD") ? "FULL_SHARD"
        : str_has_ci(row->sharding, "SHARD_GRAD_OP") ? "SHARD_GRAD_OP"
        : str_has_ci(row->sharding, "NO_SHARD") ? "NO_SHARD"
                                            : row->sharding;
    add_arg(a, "--sharding-strategy", shard);
    }
    /* torchao float8 Linear layers: the recipe the precision column names
     * (tensorwise unless it says rowwise).  The float8 all-gather only
     * where the row says so: torchtitan's default leaves it off
     * (enable_fsdp_float8_all_gather = false in its float8 config). */
    if (str_has_ci(row->precision, "float8")
        || str_has_ci(row->precision, "fp8")) {
        add_arg(a, "--float8", str_has_ci(row->precision, "rowwise")
                                   ? "rowwise" : "tensorwise");
        if (str_has_ci(row->precision, "float8 all-gather")
            && !str_has_ci(row->precision, "not stated"))
            add_arg(a, "--float8-all-gather", "true");
    }
    if (str_has_ci(row->fsdp_options, "transformer block wrapping"))
        add_arg(a, "--auto-wrap-policy", "transformer");
    add_fsdp_kwargs(a, row->fsdp_options);

    /* MixedPrecision: param from the precision column, reduce and buffer
     * from the policy ("param=bf16, reduce=bf16, buffer=bf16") or the
     * precision ("bf16 params / fp32 reduce"). */
    char buf[16];
    const char *param = dtype_after(row->mp_policy, "param=", buf,
                                    sizeof buf);
    if (param == NULL)
        param = dtype_in(row->precision);
    if (param != NULL)
        add_arg(a, "--param-dtype", param);
    const char *reduce = dtype_after(row->mp_policy, "reduce=", buf,
                                     sizeof buf);
    if (reduce == NULL && str_has_ci(row->precision, "fp32 reduce"))
        reduce = "fp32";
    if (reduce != NULL)
        add_arg(a, "--reduce-dtype", reduce);
    const char *buffer = dtype_after(row->mp_policy, "buffer=", buf,
                                     sizeof buf);
    if (buffer != NULL)
        add_arg(a, "--buffer-dtype", buffer);
    if (str_has_ci(row->fsdp_options, "AdamW"))
        add_arg(a, "--optimizer", "AdamW");

    /* Activation checkpointing: none and full are simulate's.  fms-fsdp's
     * "selective" wraps every k-th block (its selective_checkpointing
     * fraction), and the published rows do not say which k: passed as
     * "selective" for simulate to accept or refuse. */
    char ac[32];
    size_t n = strcspn(row->ac, " (");
    snprintf(ac, sizeof ac, "%.*s", (int)(n < 31 ? n : 31), row->ac);
    for (char *p = ac; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    /* torchtitan's "selective (op)" and "selective (layer)": its two
     * selective policies, simulate's selective-op and selective-layer. */
    if (strcmp(ac, "selective") == 0 && str_has_ci(row->ac, "(op"))
        snprintf(ac, sizeof ac, "selective-op");
    else if (strcmp(ac, "selective") == 0 && str_has_ci(row->ac, "(layer"))
        snprintf(ac, sizeof ac, "selective-layer");
    else if (strcmp(ac, "selective") == 0 && strcmp(row->source, "S05") == 0) {
        /* fms-fsdp's policies/ac_handler.py apply_fsdp_checkpointing
         * wraps a fraction p of the blocks, evenly spaced: the same
         * count as simulate's selective-layer every 1/p-th block.  With
         * p unpublished the run is predicted from p = 1 (every block) to
         * the smallest p that fits in memory (vrun_predict). */
        a->ac_bracket = true;
        snprintf(ac, sizeof ac, "full");
    }
    a->ac_arg = a->n;
    add_arg(a, "--activation-checkpointing", *ac ? ac : "none");

    /* torch.compile and the attention kernel: simulate's --compile and
     * --attention. */
    if (strcasecmp(row->compile, "yes") == 0)
        add_arg(a, "--compile", "true");
    else if (strcasecmp(row->compile, "no") != 0 && *row->compile)
        add_arg(a, "--compile", row->compile);
    if (str_has_ci(row->fsdp_options, "FlashAttention-2"))
        add_arg(a, "--attention", "flash2");

    add_count(a, "--seq-len", row->seq_len);
    add_count(a, "--micro-batch", row->micro_batch);
    add_count(a, "--grad-accum", accum);
    a->grad_accum = accum;
    add_loop_facts(a, row);
    return 0;
}

/* ---- Simulating ------------------------------------------------------ */

/* simulate's argv for V's arguments, with --activation-checkpointing
 * replaced by AC (and --ac-frequency FREQ when FREQ > 0) unless AC is
 * NULL.  FREQ_BUF holds the frequency's text. */
static int
build_argv(const struct vrun *v, const char *ac, int freq, char **argv,
           char *freq_buf, size_t len)
{
    int argc = 0;
    argv[argc++] = unconst("simulate");
    for (int i = 0; i < v->a.n; i++) {
        const struct vrun_arg *x = &v->a.arg[i];
        argv[argc++] = x->flag;
        if (x->value)
            argv[argc++] = ac && i == v->a.ac_arg ? unconst(ac) : x->value;
    }
    if (ac && freq > 0) {
        snprintf(freq_buf, len, "%d", freq);
        argv[argc++] = unconst("--ac-frequency");
        argv[argc++] = freq_buf;
    }
    argv[argc] = NULL;
    return argc;
}

/* One simulation of ARGV: the metrics in *MET and 0, or -1 with *why. */
static int
simulate_once(int argc, char **argv, struct model_cache *mc,
              struct metrics *met, char **why)
{
    struct run r;
    int rc = setup_parse_args(&r, "simulate", argc, argv, why);
    if (rc == 0) {
        r.models = mc;
        rc = setup_prepare(&r, why);
    }
    struct sim_result nr;
    if (rc == 0
        && (rc = simulate_schedule(r.sched, r.topo, &r.cfg, &nr, why)) == 0) {
        metrics_compute(r.sched, r.topo, &nr.res, met);
        sim_result_free(&nr);
    }
    setup_free(&r);
    return rc;
}

/* The fastest bracketed setting that fits: checkpointing every FREQ-th
 * of the row's blocks fits for FREQ = 1 (checked by the caller) and
 * stops fitting as FREQ grows, so a binary search over 2..L finds the
 * largest that fits; L + 1 stands for no checkpointing. */
static void
bracket_fastest(struct vrun *v, struct model_cache *mc)
{
    long long layers = v->row->n_layers > 0 ? v->row->n_layers : 1;
    int lo = 1, hi = (int)layers + 1;
    double lo_tokens = v->tokens;
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        char *argv[2 * VRUN_MAX_ARGS + 4], fb[16], *why = NULL;
        int argc = mid > layers
                       ? build_argv(v, "none", 0, argv, fb, sizeof fb)
                       : build_argv(v, "selective-layer", mid, argv, fb,
                                    sizeof fb);
        struct metrics met;
        int ok = simulate_once(argc, argv, mc, &met, &why) == 0 && met.fits;
        free(why);
        if (ok) {
            lo = mid;
            lo_tokens = met.tokens_per_s_per_gpu;
        } else {
            hi = mid - 1;
        }
    }
    v->fast_frequency = lo > layers ? 0 : lo;
    v->tokens_fast = lo_tokens;
}

void
vrun_predict(struct vrun *v, struct model_cache *mc)
{
    char *why = NULL;
    v->tokens = v->mfu = v->hfu = v->peak_reserved = v->tokens_fast = -1;
    if (vrun_map(v->row, &v->a, &why) != 0) {
        v->not_modelled = why;
        return;
    }
    char *argv[2 * VRUN_MAX_ARGS + 4], fb[16];
    int argc = build_argv(v, NULL, 0, argv, fb, sizeof fb);
    v->command = setup_join_args(argc, argv);
    if (v->a.model_ini != NULL) {
        struct model *m = model_parse_ini(v->a.model_ini, v->a.model, &why);
        if (m == NULL) {
            v->not_modelled = why;
            return;
        }
        free(m->name);
        m->name = xstrdup(v->a.model);
        model_cache_put(mc, v->a.model, m);
    }
    struct metrics met;
    if (simulate_once(argc, argv, mc, &met, &why) != 0) {
        v->not_modelled = why ? why : xstrdup("simulate refused the run");
        return;
    }
    v->tokens = met.tokens_per_s_per_gpu;
    /* The sources state MFU by PaLM's formula (full attention matrix)
     * and HFU as executed FLOPs (PyTorch's FLOP counter): compare each
     * with the same convention. */
    v->mfu = met.mfu_palm;
    v->hfu = met.hfu;
    v->peak_reserved = (double)met.mem.peak_reserved;
    v->fits = met.fits;
    if (v->a.ac_bracket && v->fits)
        bracket_fastest(v, mc);
}

void
vrun_free(struct vrun *v)
{
    vrun_args_free(&v->a);
    free(v->not_modelled);
    free(v->command);
    memset(v, 0, sizeof *v);
}

/* ---- Errors and their statistics ------------------------------------- */

double
vrun_error(double predicted, double measured)
{
    return 100 * (predicted - measured) / measured;
}

void
vrun_stats(const double *err, int n, struct vrun_stats *st)
{
    memset(st, 0, sizeof *st);
    if (n <= 0)
        return;
    double *abs_e = xmalloc((size_t)n * sizeof *abs_e);
    st->n = n;
    st->min = st->max = err[0];
    for (int i = 0; i < n; i++) {
        abs_e[i] = fabs(err[i]);
        st->mape += abs_e[i] / n;
        st->bias += err[i] / n;
        st->min = fmin(st->min, err[i]);
        st->max = fmax(st->max, err[i]);
    }
    st->median_abs = median_in_place(abs_e, (size_t)n);
    free(abs_e);
}

/* ---- Regimes --------------------------------------------------------- */

enum regime { R_GPU, R_MODEL, R_AC, R_COMPILE, R_SEQ, R_COUNT };
static const char *const regime_names[R_COUNT] = {
    "gpu", "model", "activation_checkpointing", "compile", "seq_len"};

/* Run V's label in regime R, into buf. */
static const char *
regime_label(const struct vrun *v, enum regime r, char *buf, size_t len)
{
    const struct published_e2e *row = v->row;
    switch (r) {
    case R_GPU:
        snprintf(buf, len, "%s", v->a.gpu ? v->a.gpu : row->gpu);
        break;
    case R_MODEL:
        snprintf(buf, len, "%s", row->model);
        break;
    case R_AC: {
        size_t n = strcspn(row->ac, " (");
        snprintf(buf, len, "%.*s", (int)n, row->ac);
        break;
    }
    case R_COMPILE:
        snprintf(buf, len, "%s", row->compile);
        break;
    default:
        snprintf(buf, len, "%lld", row->seq_len);
        break;
    }
    return buf;
}

static bool
predicted(const struct vrun *v)
{
    return v->not_modelled == NULL && v->tokens > 0
           && v->row->tokens_per_s_per_gpu > 0;
}

/* Scored runs: predicted as one number (bracketed runs print apart). */
static bool
modelled(const struct vrun *v)
{
    return predicted(v) && !v->a.ac_bracket;
}

static bool
bracketed(const struct vrun *v)
{
    return predicted(v) && v->a.ac_bracket;
}

/* One group of a regime: its label and the tokens/s errors of its runs. */
struct group {
    char label[64];
    double key;                 /* the order groups print in */
    int first;                  /* then the order they appear in */
    double *err;
    int n;
};

/* Model sizes print smallest first (the weights of a Llama block and the
 * embeddings, enough to order them), sequence lengths shortest first;
 * other regimes in the order they appear. */
static double
group_key(const struct published_e2e *row, enum regime r)
{
    double d = (double)row->hidden;
    if (r == R_MODEL)
        return (double)row->n_layers * d
                   * (2 * d + 2 * d * (double)row->n_kv_heads
                      / (double)(row->n_heads > 0 ? row->n_heads : 1)
                      + 3 * (double)row->ffn_hidden)
               + 2 * d * (double)row->vocab;
    return r == R_SEQ ? (double)row->seq_len : 0;
}

static int
cmp_group(const void *a, const void *b)
{
    const struct group *x = a, *y = b;
    if (x->key != y->key)
        return (x->key > y->key) - (x->key < y->key);
    return (x->first > y->first) - (x->first < y->first);
}

/* The groups of regime R among V[0..N), in the order they first appear.
 * *n_groups set; caller frees each err and the array. */
static struct group *
groups_of(const struct vrun *v, int n, enum regime r, int *n_groups)
{
    struct group *g = xcalloc((size_t)n + 1, sizeof *g);
    int ng = 0;
    for (int i = 0; i < n; i++) {
        if (!modelled(&v[i]))
            continue;
        char buf[64];
        regime_label(&v[i], r, buf, sizeof buf);
        int k = 0;
        while (k < ng && strcmp(g[k].label, buf) != 0)
            k++;
        if (k == ng) {
            snprintf(g[ng].label, sizeof g[ng].label, "%s", buf);
            g[ng].key = group_key(v[i].row, r);
            g[ng].first = ng;
            g[ng].err = xmalloc((size_t)n * sizeof(double));
            ng++;
        }
        g[k].err[g[k].n++] = vrun_error(v[i].tokens,
                                        v[i].row->tokens_per_s_per_gpu);
    }
    qsort(g, (size_t)ng, sizeof *g, cmp_group);
    *n_groups = ng;
    return g;
}

static void
groups_free(struct group *g, int n)
{
    for (int i = 0; i < n; i++)
        free(g[i].err);
    free(g);
}

/* The errors of one metric over the modelled runs that report it. */
static int
metric_errors(const struct vrun *v, int n, int which, double *err)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (!modelled(&v[i]))
            continue;
        const struct published_e2e *row = v[i].row;
        double p = which == 0 ? v[i].tokens : which == 1 ? v[i].mfu
                   : which == 2 ? v[i].hfu : v[i].peak_reserved;
        double m = which == 0 ? row->tokens_per_s_per_gpu
                   : which == 1 ? row->mfu : which == 2 ? row->hfu
                                : row->peak_reserved_bytes;
        if (p > 0 && m > 0)
            err[k++] = vrun_error(p, m);
    }
    return k;
}

static const char *const metric_names[4] = {
    "tokens_per_sec_per_gpu", "mfu", "hfu", "peak_memory_reserved"};

/* ---- Text ------------------------------------------------------------ */

/* "  0.57" or "     -". */
static void
print_frac(FILE *out, double x)
{
    if (x > 0)
        fprintf(out, " %5.2f", x);
    else
        fprintf(out, " %5s", "-");
}

static void
print_err(FILE *out, double p, double m)
{
    if (p > 0 && m > 0)
        fprintf(out, " %+6.1f", vrun_error(p, m));
    else
        fprintf(out, " %6s", "-");
}

static void
print_stats_line(FILE *out, const char *label, const struct vrun_stats *s)
{
    fprintf(out, "#   %-22s %3d %7.1f %7.1f %+7.1f %+7.1f %+7.1f\n", label,
            s->n, s->mape, s->median_abs, s->bias, s->min, s->max);
}

/* Where the measured tokens/s of bracketed run V falls: 0 inside the
 * predicted range, else the signed error against the nearer end (+: the
 * whole range is faster than measured). */
static double
bracket_error(const struct vrun *v)
{
    double m = v->row->tokens_per_s_per_gpu;
    double lo = fmin(v->tokens, v->tokens_fast);
    double hi = fmax(v->tokens, v->tokens_fast);
    if (m < lo)
        return vrun_error(lo, m);
    if (m > hi)
        return vrun_error(hi, m);
    return 0;
}

static void
print_brackets(const struct vrun *v, int n, FILE *out)
{
    int nb = 0;
    for (int i = 0; i < n; i++)
        nb += bracketed(&v[i]);
    if (nb == 0)
        return;
    fprintf(out, "# selective checkpointing, its fraction not published: "
            "predicted from every\n# block checkpointed (all) to the fewest "
            "that fit in memory (fastest: every\n# N-th block, or none); "
            "err%% = 0 when the measured value is inside, else\n# against "
            "the nearer end\n");
    fprintf(out, "#%-9s %-11s %-4s %5s %5s %2s %2s %-3s %7s %7s %7s %-8s "
            "%6s\n", "run", "model", "gpu", "nodes", "seq", "mb", "ga", "cmp",
            "tok/s", "all", "fastest", "(every)", "err%");
    int inside = 0, below = 0, above = 0;
    for (int i = 0; i < n; i++) {
        if (!bracketed(&v[i]))
            continue;
        const struct published_e2e *r = v[i].row;
        char every[16];
        if (v[i].tokens_fast < 0)
            snprintf(every, sizeof every, "-");
        else if (v[i].fast_frequency == 0)
            snprintf(every, sizeof every, "none");
        else
            snprintf(every, sizeof every, "%d", v[i].fast_frequency);
        double e = bracket_error(&v[i]);
        inside += e == 0;
        below += e > 0;
        above += e < 0;
        fprintf(out, " %-9s %-11s %-4s %5lld %5lld %2lld %2lld %-3s %7.0f "
                "%7.0f %7.0f %-8s %+6.1f%s\n", r->id, r->model, v[i].a.gpu,
                r->nodes, r->seq_len, r->micro_batch, r->grad_accum,
                r->compile, r->tokens_per_s_per_gpu, v[i].tokens,
                v[i].tokens_fast, every, e,
                v[i].fits ? "" : "  DOES NOT FIT");
    }
    fprintf(out, "# %d inside the range, %d slower than its slowest end, %d "
            "faster than its fastest\n\n", inside, below, above);
}

void
vrun_print_text(const struct vrun *v, int n, const char *path, FILE *out,
                struct vrun_stats *overall)
{
    int n_mod = 0;
    for (int i = 0; i < n; i++)
        n_mod += modelled(&v[i]);
    fprintf(out, "# fsdpsim validate --runs: %s: %d run%s, %d modelled\n"
            "# error = (predicted - measured) / measured; tokens/s per GPU, "
            "MFU (the source's\n# formula and peak) and HFU as published; "
            "mem = peak reserved (GiB)\n\n", path, n, n == 1 ? "" : "s",
            n_mod);
    fprintf(out, "#%-9s %-12s %-8s %5s %5s %2s %2s %-9s %-3s %7s %7s %6s "
            "%5s %5s %6s %5s %5s %6s %5s %5s\n", "run", "model", "gpu",
            "nodes", "seq", "mb", "ga", "AC", "cmp", "tok/s", "pred",
            "err%", "MFU", "pred", "err%", "HFU", "pred", "err%", "mem",
            "pred");
    for (int i = 0; i < n; i++) {
        if (!modelled(&v[i]))
            continue;
        const struct published_e2e *r = v[i].row;
        char ac[64];
        regime_label(&v[i], R_AC, ac, sizeof ac);
        fprintf(out, " %-9s %-12s %-8s %5lld %5lld %2lld %2lld %-9s %-3s",
                r->id, r->model, v[i].a.gpu, r->nodes, r->seq_len,
                r->micro_batch, v[i].a.grad_accum, ac, r->compile);
        fprintf(out, " %7.0f %7.0f %+6.1f", r->tokens_per_s_per_gpu,
                v[i].tokens, vrun_error(v[i].tokens,
                                        r->tokens_per_s_per_gpu));
        print_frac(out, r->mfu);
        print_frac(out, r->mfu > 0 ? v[i].mfu : -1);
        print_err(out, v[i].mfu, r->mfu);
        print_frac(out, r->hfu);
        print_frac(out, r->hfu > 0 ? v[i].hfu : -1);
        print_err(out, v[i].hfu, r->hfu);
        if (r->peak_reserved_bytes > 0)
            fprintf(out, " %5.1f %5.1f", r->peak_reserved_bytes / 1073741824.0,
                    v[i].peak_reserved / 1073741824.0);
        else
            fprintf(out, " %5s %5.1f", "-", v[i].peak_reserved / 1073741824.0);
        fprintf(out, "%s\n", v[i].fits ? "" : "  DOES NOT FIT");
    }
    fprintf(out, "\n");
    print_brackets(v, n, out);
    for (int i = 0; i < n; i++) {
        if (predicted(&v[i]))
            fprintf(out, "# %s: fsdpsim %s%s\n", v[i].row->id,
                    v[i].command, v[i].a.model_builtin ? ""
                    : " (model generated from the row's architecture)");
    }
    for (int i = 0; i < n; i++) {
        if (predicted(&v[i]))
            continue;
        const struct published_e2e *r = v[i].row;
        fprintf(out, "# not modelled: %s (%s, %s, %lld node%s, line %d): "
                "%s\n", r->id, r->model, r->gpu, r->nodes,
                r->nodes == 1 ? "" : "s", r->line,
                v[i].not_modelled ? v[i].not_modelled
                                  : "no tokens_per_sec_per_gpu published");
    }

    double *err = xmalloc(((size_t)n + 1) * sizeof *err);
    fprintf(out, "\n# %-24s %3s %7s %7s %7s %7s %7s\n", "error (%)", "n",
            "MAPE", "median", "bias", "min", "max");
    for (int m = 0; m < 4; m++) {
        struct vrun_stats st;
        vrun_stats(err, metric_errors(v, n, m, err), &st);
        if (m == 0 && overall)
            *overall = st;
        if (st.n > 0)
            print_stats_line(out, metric_names[m], &st);
    }
    fprintf(out, "# tokens/s by regime (bias: the mean signed error; a "
            "trend shows as groups of\n# opposite bias)\n");
    for (int r = 0; r < R_COUNT; r++) {
        int ng;
        struct group *g = groups_of(v, n, r, &ng);
        fprintf(out, "# %s\n", regime_names[r]);
        for (int k = 0; k < ng; k++) {
            struct vrun_stats st;
            vrun_stats(g[k].err, g[k].n, &st);
            print_stats_line(out, g[k].label, &st);
        }
        groups_free(g, ng);
    }
    free(err);
}

/* ---- JSON ------------------------------------------------------------ */

/* "key": X in FMT, or null when X is not positive (a value the row or
 * the simulator does not give). */
static void __attribute__((format(printf, 3, 4)))
json_num(FILE *out, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    double x = va_arg(ap, double);
    va_end(ap);
    fprintf(out, "\"%s\": ", key);
    if (x > 0) {
        va_start(ap, fmt);
        vfprintf(out, fmt, ap);
        va_end(ap);
    } else {
        fprintf(out, "null");
    }
}

static void
json_stats(FILE *out, const struct vrun_stats *s)
{
    fprintf(out, "{\"n\": %d, \"mape\": %.2f, \"median_abs\": %.2f, "
            "\"bias\": %.2f, \"min\": %.2f, \"max\": %.2f}", s->n, s->mape,
            s->median_abs, s->bias, s->min, s->max);
}

void
vrun_print_json(const struct vrun *v, int n, const char *path, FILE *out,
                struct vrun_stats *overall)
{
    fprintf(out, "{\n  \"data\": ");
    json_out_string(out, path);
    fprintf(out, ",\n  \"runs\": [");
    for (int i = 0; i < n; i++) {
        const struct published_e2e *r = v[i].row;
        fprintf(out, "%s\n    {\"run_id\": ", i ? "," : "");
        json_out_string(out, r->id);
        fprintf(out, ", \"line\": %d, \"model\": ", r->line);
        json_out_string(out, r->model);
        fprintf(out, ", \"gpu\": ");
        json_out_string(out, r->gpu);
        fprintf(out, ", \"nodes\": %lld, \"modelled\": %s", r->nodes,
                modelled(&v[i]) ? "true" : "false");
        if (bracketed(&v[i])) {
            fprintf(out, ", \"simulate\": ");
            json_out_string(out, v[i].command);
            fprintf(out, ", \"bracket\": {\"tokens_measured\": %.1f, "
                    "\"tokens_all_checkpointed\": %.1f, ",
                    r->tokens_per_s_per_gpu, v[i].tokens);
            json_num(out, "tokens_fastest_fitting", "%.1f",
                     v[i].tokens_fast);
            fprintf(out, ", \"fastest_every\": %d, \"error\": %.2f}}",
                    v[i].fast_frequency, bracket_error(&v[i]));
            continue;
        }
        if (!modelled(&v[i])) {
            fprintf(out, ", \"reason\": ");
            json_out_string(out, v[i].not_modelled
                                     ? v[i].not_modelled
                                     : "no tokens_per_sec_per_gpu "
                                       "published");
            fprintf(out, "}");
            continue;
        }
        fprintf(out, ", \"simulate\": ");
        json_out_string(out, v[i].command);
        fprintf(out, ", \"model_builtin\": %s,\n     ",
                v[i].a.model_builtin ? "true" : "false");
        json_num(out, "tokens_measured", "%.1f", r->tokens_per_s_per_gpu);
        fprintf(out, ", ");
        json_num(out, "tokens_predicted", "%.1f", v[i].tokens);
        fprintf(out, ", ");
        fprintf(out, "\"tokens_error\": %.2f",
                vrun_error(v[i].tokens, r->tokens_per_s_per_gpu));
        fprintf(out, ",\n     ");
        json_num(out, "mfu_measured", "%.4f", r->mfu);
        fprintf(out, ", ");
        json_num(out, "mfu_predicted", "%.4f", v[i].mfu);
        fprintf(out, ", ");
        json_num(out, "hfu_measured", "%.4f", r->hfu);
        fprintf(out, ", ");
        json_num(out, "hfu_predicted", "%.4f", v[i].hfu);
        fprintf(out, ",\n     ");
        json_num(out, "peak_reserved_measured", "%.0f",
                 r->peak_reserved_bytes);
        fprintf(out, ", ");
        json_num(out, "peak_reserved_predicted", "%.0f",
                 v[i].peak_reserved);
        fprintf(out, ", \"fits\": %s}", v[i].fits ? "true" : "false");
    }
    fprintf(out, "\n  ],\n  \"summary\": {");
    double *err = xmalloc(((size_t)n + 1) * sizeof *err);
    for (int m = 0; m < 4; m++) {
        struct vrun_stats st;
        vrun_stats(err, metric_errors(v, n, m, err), &st);
        if (m == 0 && overall)
            *overall = st;
        fprintf(out, "%s\n    \"%s\": ", m ? "," : "", metric_names[m]);
        json_stats(out, &st);
    }
    fprintf(out, "\n  },\n  \"tokens_by_regime\": {");
    for (int r = 0; r < R_COUNT; r++) {
        int ng;
        struct group *g = groups_of(v, n, r, &ng);
        fprintf(out, "%s\n    \"%s\": {", r ? "," : "", regime_names[r]);
        for (int k = 0; k < ng; k++) {
            struct vrun_stats st;
            vrun_stats(g[k].err, g[k].n, &st);
            fprintf(out, "%s", k ? ", " : "");
            json_out_string(out, g[k].label);
            fprintf(out, ": ");
            json_stats(out, &st);
        }
        fprintf(out, "}");
        groups_free(g, ng);
    }
    fprintf(out, "\n  }\n}\n");
    free(err);
}
