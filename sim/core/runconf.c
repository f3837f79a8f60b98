/*
 * runconf.c: run settings from flags and run files (see config.h).
 *
 * config_options[] names every key with its value's shape and help line,
 * and the command line (setup.c), run files and --help all walk it, so
 * they agree on names.  Each key's parser is not in that table but in
 * config_set()'s chain of comparisons below, and setup.c's
 * is_optional_bool() lists the flags that may go without a value: a new
 * setting is added in those three places.
 */
#include "runconf.h"
#include "attn_table.h"
#include "ini_lines.h"
#include "model.h"
#include "textfile.h"
#include "torch_version.h"
#include "hf_version.h"
#include "units.h"
#include "xalloc.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const struct config_option config_options[] = {
    {"config", "FILE", "read settings from a run file (INI); flags override it"},
    {"model", "NAME|FILE", "built-in model, native .ini or Hugging Face config.json"},
    {"topology", "NAME|FILE", "built-in cluster or topology .ini file"},
    {"nodes", "N", "number of nodes (default: the topology's)"},
    {"gpus_per_node", "G", "GPUs per node (default: the topology's)"},
    {"set", "SECTION.KEY=VALUE", "override one topology field (repeatable)"},
    {"calibration", "FILE",
     "measured values for the topology ('real bench --calibration-out')"},
    {"sharding_strategy", "S",
     "FULL_SHARD | SHARD_GRAD_OP | NO_SHARD | HYBRID_SHARD | _HYBRID_SHARD_ZERO2 | DDP (DistributedDataParallel, full replicas)"},
    {"strategy", "fsdp|ddp",
     "fsdp (the default) or ddp, the same as --sharding-strategy DDP"},
    {"fsdp_version", "1|2",
     "1: FullyShardedDataParallel (default); 2: fully_shard (FSDP2), "
     "per-parameter sharding"},
    {"fsdp2_groups", "wrap|torchtitan|torchtitan-blocks",
     "FSDP2: fully_shard on each unit of the wrap plan (default), or "
     "torchtitan's groups: tok_embeddings, each block, [norm, output], "
     "the root (-blocks: its v0.1.0's, each block and the root)"},
    {"no_unshard_in_backward", "MODULE_PATH,...",
     "FSDP2: set_unshard_in_backward(False) on these groups (a group of "
     "embeddings: backward reads none of its parameters, so it is not "
     "all-gathered there)"},
    {"modules_to_forward_prefetch", "GROUP=MODULE,...",
     "FSDP2: GROUP.set_modules_to_forward_prefetch([MODULE, ...]), each a "
     "module fully_shard was called on (the root: the model's name); "
     "repeatable, one list a group, replacing --forward-prefetch N's"},
    {"modules_to_backward_prefetch", "GROUP=MODULE,...",
     "FSDP2: GROUP.set_modules_to_backward_prefetch([MODULE, ...]), the "
     "same for backward (an empty list keeps the implicit prefetch)"},
    {"reshard_after_forward", "true|false|N",
     "FSDP2: free parameters after forward (true), keep them (false), or "
     "keep a shard over N ranks, a divisor of the shard group (the "
     "group's size = true; default: all groups but the root)"},
    {"reshard_after_forward_last", "true|false|N",
     "FSDP2: the same for the last group to finish forward (torchtitan "
     "passes false: its backward comes next; default: as the others)"},
    {"group_reshard_after_forward", "GROUP=true|false|N",
     "FSDP2: that group's own fully_shard(reshard_after_forward=...), "
     "over the flags above; each N its own post-forward mesh "
     "(repeatable)"},
    {"reshard_after_backward", "BOOL",
     "FSDP2 set_reshard_after_backward for every micro-batch but a "
     "step's last: false keeps parameters unsharded into the next "
     "forward (default true)"},
    {"requires_all_reduce", "BOOL",
     "FSDP2 HSDP set_requires_all_reduce for every micro-batch but a "
     "step's last: false reduce-scatters and sums the shards, all-reducing "
     "once a step (default true)"},
    {"dp_replicate", "R",
     "FSDP2 HSDP: replicate dimension of the 2-D mesh (R x shard)"},
    {"dp_shard", "M",
     "FSDP2: shard dimension of the mesh (default: world / --dp-replicate)"},
    {"output_dtype", "DTYPE",
     "FSDP2 MixedPrecisionPolicy output_dtype (the root's output cast)"},
    {"cast_forward_inputs", "[BOOL]",
     "FSDP2 MixedPrecisionPolicy cast_forward_inputs (default true)"},
    {"bucket_cap_mb", "MB",
     "DDP gradient bucket size (default 25; the first bucket is 1 MiB "
     "unless this is given)"},
    {"gradient_as_bucket_view", "[BOOL]",
     "DDP: gradients are views into the buckets (no copy back, no "
     "separate gradient memory)"},
    {"static_graph", "[BOOL]",
     "DDP static_graph=True (needed with reentrant checkpointing)"},
    {"auto_wrap_policy", "transformer|size|module|none",
     "transformer_auto_wrap_policy, size_based_auto_wrap_policy, "
     "ModuleWrapPolicy (--wrap-classes), or none (FSDP(model): the root "
     "is the one unit)"},
    {"transformer_layer_cls", "CLASS",
     "layer class(es) for the transformer policy, comma-separated"},
    {"wrap_classes", "CLASS,...",
     "the classes ModuleWrapPolicy wraps (--auto-wrap-policy module)"},
    {"wrap", "MODULE_PATH,...",
     "wrap() these modules by hand inside enable_wrap, e.g. "
     "model.encoder,model.decoder (then the root)"},
    {"min_num_params", "N", "size policy threshold in parameters (default 1e8)"},
    {"backward_prefetch", "P|N",
     "BACKWARD_PRE | BACKWARD_POST | None; FSDP2: N, each group's "
     "set_modules_to_backward_prefetch list of the next N groups"},
    {"forward_prefetch", "[BOOL|N]",
     "issue the next all-gather before compute; FSDP2: N, each group's "
     "set_modules_to_forward_prefetch list of the next N groups (true = 1)"},
    {"limit_all_gathers", "BOOL", "rate limiter, at most 2 in flight (default true)"},
    {"use_orig_params", "[BOOL]", "per-parameter alignment padding"},
    {"param_dtype", "DTYPE", "MixedPrecision param_dtype (fp32 | bf16 | fp16)"},
    {"reduce_dtype", "DTYPE", "MixedPrecision reduce_dtype (default param_dtype)"},
    {"buffer_dtype", "DTYPE", "MixedPrecision buffer_dtype"},
    {"cpu_offload", "[BOOL]", "CPUOffload(offload_params=True)"},
    {"activation_checkpointing", "none|full|reentrant|selective-layer|selective-op",
     "checkpoint each layer: non-reentrant inside the unit, or reentrant; "
     "selective-layer: every --ac-frequency-th layer; selective-op: "
     "torchtitan's op policy, saving attention and every other matmul "
     "output, recomputing the rest"},
    {"ac_frequency", "N",
     "selective-layer: checkpoint every N-th layer (default 2)"},
    {"grad_scaler", "[BOOL]",
     "GradScaler's unscale_, inf check and scale update each step "
     "(default: on with fp16 parameters)"},
    {"attention", "KERNEL",
     "attention kernel: auto (the model's config, else SDPA's pick) | flash2 | flash3 | cudnn | flash1 | triton | xformers | math"},
    {"float8", "none|tensorwise|rowwise",
     "torchao float8 training of the Linear layers (Hopper and newer): fp8 "
     "GEMMs with their scaling and cast kernels (default none)"},
    {"float8_all_gather", "[BOOL]",
     "FSDP2 with --float8: all-gather the float8 weights (1 byte an "
     "element) with scales precomputed after each optimizer step"},
    {"compile", "[BOOL]",
     "torch.compile each block: elementwise and norm kernels fused"},
    {"rotary", "half|complex|matrix",
     "how the training code applies the rotary embedding: half (Hugging "
     "Face), complex (torchtitan, Meta's reference: not fused by "
     "torch.compile), matrix (IBM FMS); default: the model's"},
    {"loss", "plain|fused|native",
     "plain: the logits cast to fp32 and cross_entropy (default); fused: "
     "Liger's chunked linear + cross-entropy, no full logits; native: "
     "cross_entropy on the logits in their own dtype (fms-fsdp)"},
    {"micro_batch", "N", "sequences per GPU per micro-batch (default 1)"},
    {"seq_len", "N", "tokens per sequence (default 2048)"},
    {"grad_accum", "N", "micro-batches per optimizer step (default 1)"},
    {"no_sync", "[BOOL]", "accumulate gradients inside model.no_sync()"},
    {"optimizer", "AdamW|SGD", "optimizer (default AdamW)"},
    {"clip_grad_norm", "MAX",
     "FSDP.clip_grad_norm_(MAX) before each optimizer step (default: none)"},
    {"loss_item", "[BOOL]",
     "the loop reads loss.item() every step (and clip_grad_norm_'s result "
     "with .item()): the host waits for the GPU"},
    {"iterations", "N", "simulated steps; the last is reported (default 2)"},
    {"torch_version", "X.Y",
     "PyTorch release the run trains with, 2.0 to 2.10 (default 2.10): "
     "which eager dtype casts are vectorized"},
    {"transformers_version", "X.Y",
     "Hugging Face transformers release of a Hugging Face model's code, "
     "4.40 to 5.25 (default 5.25): whether SDPA gets q, k, v copied "
     "contiguous (4.48-4.55) and grouped-query heads without repeat_kv "
     "(4.54 on, PyTorch 2.5 on)"},
    {"nccl_version", "X.Y", "NCCL version modelled, 2.18 to 2.28 (default 2.28)"},
    {"nccl_algo", "LIST", "as NCCL_ALGO, e.g. Ring or ^NVLS or allreduce:tree"},
    {"nccl_proto", "LIST", "as NCCL_PROTO, e.g. Simple or ^LL128"},
    {"nccl_min_nchannels", "N", "as NCCL_MIN_NCHANNELS"},
    {"nccl_max_nchannels", "N", "as NCCL_MAX_NCHANNELS"},
    {"nccl_nvls_enable", "0|1|2", "as NCCL_NVLS_ENABLE"},
    {"nccl_buffsize", "BYTES", "as NCCL_BUFFSIZE"},
    {"nccl_nthreads", "N", "as NCCL_NTHREADS"},
    {"nccl_ib_disable", "0|1", "as NCCL_IB_DISABLE"},
    {"nccl_p2p_disable", "0|1", "as NCCL_P2P_DISABLE"},
    {"nccl_socket_nthreads", "N", "as NCCL_SOCKET_NTHREADS"},
    {"nccl_nsocks_perthread", "N", "as NCCL_NSOCKS_PERTHREAD"},
    {"nccl_p2p_level", "LOC..SYS", "as NCCL_P2P_LEVEL"},
    {"nccl_net_gdr_level", "LOC..SYS", "as NCCL_NET_GDR_LEVEL"},
    {"nccl_cross_nic", "0|1|2", "as NCCL_CROSS_NIC"},
    {"nccl_collnet_enable", "0|1", "as NCCL_COLLNET_ENABLE"},
    {"network", "analytic|simgrid",
     "network model: NCCL's alone, or its flows on a SimGrid platform"},
    {"exact", "[BOOL]", "simulate every micro-batch, not folding repeats; "
                        "simgrid: also every ring step"},
    {"background_load", "FRACTION",
     "simgrid: share of every spine link other jobs use (0 to 0.95)"},
    {"platform", "FILE.xml", "simgrid: your SimGrid platform instead of "
     "the topology's"},
    {"format", "text|json", "summary format on stdout"},
    {"trace", "FILE", "write a Chrome/Perfetto trace"},
    {"timeline", "FILE", "write the per-op timeline (.dat, gnuplot)"},
    {"memory", "FILE", "write the memory-over-time series (.dat, gnuplot)"},
    {"metrics", "FILE", "write the figures in Prometheus text format"},
    {NULL, NULL, NULL}};

void
config_init(struct run_config *c)
{
    memset(c, 0, sizeof *c);
    c->model = xstrdup("llama2-7b");
    c->topology = xstrdup("dgx-a100-80g");
    c->sharding = SHARDING_FULL_SHARD;
    c->wrap = WRAP_TRANSFORMER;
    c->min_num_params = 100000000;  /* size_based_auto_wrap_policy default */
    c->backward_prefetch = BWD_PREFETCH_PRE;
    c->limit_all_gathers = true;    /* default since PyTorch 2.1 */
    c->param_dtype = c->reduce_dtype = c->buffer_dtype = DTYPE_FP32;
    c->ac = AC_NONE;
    c->ac_frequency = 2;            /* torchtitan's default */
    c->bucket_cap_mb = 25;          /* DDP's default */
    c->torch_version = TORCH_VERSION_DEFAULT;
    c->transformers_version = HF_VERSION_DEFAULT;
    config_init_fsdp2(c);
    c->micro_batch = 1;
    c->seq_len = 2048;
    c->grad_accum = 1;
    c->optimizer = OPTIMIZER_ADAMW;
    c->iterations = 2;
    c->format = FORMAT_TEXT;
}

void
config_free(struct run_config *c)
{
    free(c->model);
    free(c->topology);
    free(c->calibration);
    for (int i = 0; i < c->n_sets; i++)
        free(c->sets[i]);
    free(c->sets);
    free(c->layer_cls);
    free(c->wrap_classes);
    free(c->wrap_modules);
    free(c->no_unshard_in_backward);
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < c->n_prefetch_lists[k]; i++)
            free(c->prefetch_lists[k][i]);
        free(c->prefetch_lists[k]);
    }
    for (int i = 0; i < c->n_group_raf; i++)
        free(c->group_raf[i]);
    free(c->group_raf);
    free(c->trace_path);
    free(c->timeline_path);
    free(c->memory_path);
    free(c->metrics_path);
    free(c->config_path);
    free(c->platform_path);
    free(c->nccl_version);
    free(c->nccl_algo);
    free(c->nccl_proto);
    for (int i = 0; i < NCCL_VAR_COUNT; i++)
        free(c->nccl_vars[i]);
    for (int i = 0; i < c->n_sets; i++)
        free(c->set_origins ? c->set_origins[i] : NULL);
    free(c->set_origins);
    if (c->origins != NULL)
        for (int i = 0; config_options[i].key; i++)
            free(c->origins[i]);
    free(c->origins);
    memset(c, 0, sizeof *c);
}

/* ---- where each value came from ------------------------------------- */

/* "--seq-len" for each entry of config_options[], built once. */
static char **flag_names;
static int n_flag_names;
static pthread_once_t flag_names_once = PTHREAD_ONCE_INIT;

static void
flag_names_build(void)
{
    while (config_options[n_flag_names].key)
        n_flag_names++;
    flag_names = xcalloc((size_t)n_flag_names, sizeof *flag_names);
    for (int i = 0; i < n_flag_names; i++) {
        char *f = xasprintf("--%s", config_options[i].key);
        for (char *p = f + 2; *p; p++)
            if (*p == '_')
                *p = '-';
        flag_names[i] = f;
    }
}

/* KEY's entry in config_options[] (dashes or underscores), or -1. */
static int
option_index(const char *key, size_t len)
{
    pthread_once(&flag_names_once, flag_names_build);
    for (int i = 0; i < n_flag_names; i++) {
        const char *k = config_options[i].key;
        size_t j = 0;
        while (j < len && k[j] != '\0'
               && (key[j] == k[j] || (key[j] == '-' && k[j] == '_')))
            j++;
        if (j == len && k[j] == '\0')
            return i;
    }
    return -1;
}

/* A flag's origin is its own name: only other sources are kept. */
static char *
kept_origin(const char *origin)
{
    if (origin == NULL || *origin == '\0' || strncmp(origin, "--", 2) == 0)
        return NULL;
    return xstrdup(origin);
}

static void
record_origin(struct run_config *c, const char *key, const char *origin)
{
    int i = option_index(key, strlen(key));
    if (i < 0)
        return;
    if (c->origins == NULL)
        c->origins = xcalloc((size_t)n_flag_names, sizeof *c->origins);
    free(c->origins[i]);
    c->origins[i] = kept_origin(origin);
}

const char *
config_origin(const struct run_config *c, const char *key)
{
    int i = option_index(key, strlen(key));
    if (i < 0)
        return key;
    if (c->origins != NULL && c->origins[i] != NULL)
        return c->origins[i];
    return flag_names[i];
}

const char *
config_set_origin(const struct run_config *c, int i)
{
    if (c->set_origins != NULL && c->set_origins[i] != NULL)
        return c->set_origins[i];
    return "--set";
}

char *
config_blame_origin(const char *origin, const char *flag, char *msg)
{
    if (origin == NULL || strncmp(origin, "--", 2) == 0)
        return msg;
    size_t n = strlen(flag);
    char *out;
    if (strncmp(msg, flag, n) == 0
        && (msg[n] == ':' || msg[n] == ' ' || msg[n] == '='))
        out = xasprintf("%s%s", origin, msg + n);
    else
        out = xasprintf("%s: %s", origin, msg);
    free(msg);
    return out;
}

char *
config_blame(const struct run_config *c, const char *key, char *msg)
{
    int i;
    if (key != NULL) {
        i = option_index(key, strlen(key));
    } else {
        if (strncmp(msg, "--", 2) != 0)
            return msg;
        i = option_index(msg + 2, strcspn(msg + 2, " :="));
    }
    if (i < 0 || c->origins == NULL)
        return msg;
    return config_blame_origin(c->origins[i], flag_names[i], msg);
}

struct name_value {
    const char *name;
    int value;
};

static const struct name_value sharding_names[] = {
    {"FULL_SHARD", SHARDING_FULL_SHARD},
    {"SHARD_GRAD_OP", SHARDING_SHARD_GRAD_OP},
    {"NO_SHARD", SHARDING_NO_SHARD},
    {"HYBRID_SHARD", SHARDING_HYBRID_SHARD},
    {"_HYBRID_SHARD_ZERO2", SHARDING_HYBRID_SHARD_ZERO2},
    {"DDP", SHARDING_DDP},
    {NULL, 0}};
static const struct name_value wrap_names[] = {
    {"transformer", WRAP_TRANSFORMER}, {"size", WRAP_SIZE},
    {"none", WRAP_NONE}, {"module", WRAP_MODULE}, {NULL, 0}};
static const struct name_value fsdp2_groups_names[] = {
    {"wrap", FSDP2_GROUPS_WRAP}, {"torchtitan", FSDP2_GROUPS_TORCHTITAN},
    {"torchtitan-blocks", FSDP2_GROUPS_TORCHTITAN_BLOCKS}, {NULL, 0}};
static const struct name_value prefetch_names[] = {
    {"BACKWARD_PRE", BWD_PREFETCH_PRE},
    {"BACKWARD_POST", BWD_PREFETCH_POST},
    {"None", BWD_PREFETCH_NONE},
    {NULL, 0}};
static const struct name_value ac_names[] = {
    {"none", AC_NONE}, {"full", AC_FULL}, {"reentrant", AC_REENTRANT},
    {"selective-layer", AC_SELECTIVE_LAYER},
    {"selective-op", AC_SELECTIVE_OP}, {NULL, 0}};
static const struct name_value strategy_names[] = {
    {"fsdp", 0}, {"ddp", 1}, {NULL, 0}};
static const struct name_value optimizer_names[] = {
    {"AdamW", OPTIMIZER_ADAMW}, {"SGD", OPTIMIZER_SGD}, {NULL, 0}};
static const struct name_value float8_names[] = {
    {"none", FLOAT8_NONE}, {"tensorwise", FLOAT8_TENSORWISE},
    {"rowwise", FLOAT8_ROWWISE}, {NULL, 0}};
static const struct name_value rotary_names[] = {
    {"half", ROPE_HALF}, {"complex", ROPE_COMPLEX}, {"matrix", ROPE_MATRIX},
    {NULL, 0}};
static const struct name_value loss_names[] = {
    {"plain", LOSS_PLAIN}, {"fused", LOSS_FUSED}, {"native", LOSS_NATIVE},
    {NULL, 0}};
static const struct name_value network_names[] = {
    {"analytic", NETWORK_ANALYTIC}, {"simgrid", NETWORK_SIMGRID},
    {NULL, 0}};
static const struct name_value format_names[] = {
    {"text", FORMAT_TEXT}, {"json", FORMAT_JSON}, {NULL, 0}};

static const char *
lookup_name(const struct name_value *t, int v)
{
    for (; t->name; t++)
        if (t->value == v)
            return t->name;
    return "?";
}

/* Match a choice; PyTorch spells enum members in upper case, so the names
 * are matched without regard to case (and "ShardingStrategy." or
 * "BackwardPrefetch." prefixes are accepted as users paste them). */
static int
parse_choice(const struct name_value *t, const char *value, int *out,
             const char *origin, char **cause)
{
    const char *dot = strrchr(value, '.');
    const char *v = dot ? dot + 1 : value;
    for (const struct name_value *p = t; p->name; p++) {
        if (strcasecmp(p->name, v) == 0) {
            *out = p->value;
            return 0;
        }
    }
    size_t len = 0;
    for (const struct name_value *p = t; p->name; p++)
        len += strlen(p->name) + 3;
    char *list = xmalloc(len + 1), *w = list;
    for (const struct name_value *p = t; p->name; p++)
        w += sprintf(w, "%s%s", p == t ? "" : " | ", p->name);
    *cause = xasprintf("%s: '%s' is not one of %s", origin, value, list);
    free(list);
    return -1;
}

const char *
sharding_name(enum sharding_strategy s)
{
    return lookup_name(sharding_names, s);
}

const char *
backward_prefetch_name(enum backward_prefetch b)
{
    return lookup_name(prefetch_names, b);
}

const char *
ac_name(enum ac_mode a)
{
    return lookup_name(ac_names, a);
}

const char *
optimizer_name(enum optimizer_kind o)
{
    return lookup_name(optimizer_names, o);
}

const char *
float8_name(enum float8_recipe r)
{
    return lookup_name(float8_names, r);
}

int
rotary_parse(const char *s, const char *origin, int *out, char **cause)
{
    return parse_choice(rotary_names, s, out, origin, cause);
}

const char *
loss_name(enum loss_kind l)
{
    return lookup_name(loss_names, l);
}

int
loss_parse(const char *s, const char *origin, enum loss_kind *out,
           char **cause)
{
    int v;
    if (parse_choice(loss_names, s, &v, origin, cause) != 0)
        return -1;
    *out = v;
    return 0;
}

int
float8_parse(const char *s, const char *origin, enum float8_recipe *out,
             char **cause)
{
    int v;
    if (parse_choice(float8_names, s, &v, origin, cause) != 0)
        return -1;
    *out = v;
    return 0;
}

bool
sharding_is_hybrid(enum sharding_strategy s)
{
    return s == SHARDING_HYBRID_SHARD || s == SHARDING_HYBRID_SHARD_ZERO2;
}

bool
sharding_reshards_after_forward(enum sharding_strategy s)
{
    /* FLAT RESHARD_AFTER_FORWARD_HANDLE_STRATEGIES
     * (doc/fsdp-semantics.md §5). */
    return s == SHARDING_FULL_SHARD || s == SHARDING_HYBRID_SHARD;
}

enum dtype
config_param_dtype(const struct run_config *c)
{
    return c->param_dtype;
}

enum dtype
config_reduce_dtype(const struct run_config *c)
{
    /* MixedPrecision: reduce_dtype unset follows param_dtype (§8). */
    return c->reduce_dtype_given ? c->reduce_dtype : c->param_dtype;
}

bool
config_grad_scaler(const struct run_config *c)
{
    return c->grad_scaler_given ? c->grad_scaler
                                : config_param_dtype(c) == DTYPE_FP16;
}

static int
set_string(char **dst, const char *value, const char *origin, char **cause)
{
    if (value == NULL || *value == '\0') {
        *cause = xasprintf("%s: needs a value", origin);
        return -1;
    }
    free(*dst);
    *dst = xstrdup(value);
    return 0;
}

/* "nccl_nvls_enable" -> its index in nccl_var_names, or -1. */
static int
nccl_var_key(const char *key)
{
    if (strncmp(key, "nccl_", 5) != 0)
        return -1;
    for (int i = 0; i < NCCL_VAR_COUNT; i++)
        if (strcmp(key + 5, nccl_var_names[i]) == 0)
            return i;
    return -1;
}

/* NCCL_<NAME>: refused here, where the origin is known, when NCCL would
 * not honour the value (nccl_config_set_var); kept as text for setup. */
static int
set_nccl_var(char **dst, const char *name, const char *value,
             const char *origin, char **cause)
{
    if (set_string(dst, value, origin, cause) != 0)
        return -1;
    struct nccl_config scratch;
    char *why = NULL;
    nccl_config_init(&scratch);
    if (nccl_config_set_var(&scratch, name, value, &why) != 0) {
        *cause = xasprintf("%s: %s", origin, why);
        free(why);
        return -1;
    }
    return 0;
}

static int
set_count(int64_t *dst, const char *value, int64_t lo, int64_t hi,
          const char *origin, char **cause)
{
    char *why = NULL;
    if (value == NULL) {
        *cause = xasprintf("%s: needs a number", origin);
        return -1;
    }
    if (units_parse_count(value, lo, hi, dst, &why) != 0) {
        *cause = xasprintf("%s: %s", origin, why);
        free(why);
        return -1;
    }
    return 0;
}

static int
set_bool(bool *dst, const char *value, const char *origin, char **cause)
{
    char *why = NULL;
    if (value == NULL) {        /* a bare flag means true */
        *dst = true;
        return 0;
    }
    if (units_parse_bool(value, dst, &why) != 0) {
        *cause = xasprintf("%s: %s", origin, why);
        free(why);
        return -1;
    }
    return 0;
}

/* A bool whose being given matters (FSDP2-only keys, defaults that
 * depend on other settings). */
static int
set_bool_given(bool *dst, bool *given, const char *value, const char *origin,
               char **cause)
{
    int rc = set_bool(dst, value, origin, cause);
    if (rc == 0)
        *given = true;
    return rc;
}

static int
set_dtype(enum dtype *dst, bool *given, const char *value, const char *origin,
          char **cause)
{
    if (value == NULL || dtype_parse(value, dst) != 0 || *dst == DTYPE_TF32
        || *dst == DTYPE_FP8) {
        *cause = xasprintf("%s: '%s' is not a parameter dtype (use fp32, "
                           "bf16 or fp16; PyTorch names such as "
                           "torch.bfloat16 are accepted)", origin,
                           value ? value : "");
        return -1;
    }
    *given = true;
    return 0;
}

/* Normalise a flag or key: dashes to underscores. */
static char *
normalise_key(const char *key)
{
    char *k = xstrdup(key);
    for (char *p = k; *p; p++)
        if (*p == '-')
            *p = '_';
    return k;
}

/* config_set(), with RECORD the origin kept for later messages (a run
 * file's "path:line: key" while ORIGIN, for this call's own message, is
 * just the key). */
static int
config_apply(struct run_config *c, const char *key_in, const char *value,
             const char *origin, const char *record, char **cause)
{
    char *key = normalise_key(key_in);
    int rc = -1, v = 0;
    int64_t n = 0;

    if (value != NULL && strncmp(value, "torch.", 6) == 0
        && strstr(key, "dtype") != NULL)
        value += 6;

    if (strcmp(key, "model") == 0) {
        rc = set_string(&c->model, value, origin, cause);
    } else if (strcmp(key, "topology") == 0) {
        rc = set_string(&c->topology, value, origin, cause);
    } else if (strcmp(key, "calibration") == 0) {
        rc = set_string(&c->calibration, value, origin, cause);
    } else if (strcmp(key, "nodes") == 0) {
        if ((rc = set_count(&n, value, 1, 100000, origin, cause)) == 0)
            c->nodes = (int)n;
    } else if (strcmp(key, "gpus_per_node") == 0) {
        if ((rc = set_count(&n, value, 1, 64, origin, cause)) == 0)
            c->gpus_per_node = (int)n;
    } else if (strcmp(key, "set") == 0) {
        if (value == NULL || strchr(value, '=') == NULL) {
            *cause = xasprintf("%s: expected SECTION.KEY=VALUE, e.g. "
                               "inter.nic_bandwidth=400Gbps", origin);
        } else {
            c->sets = xrealloc(c->sets, sizeof *c->sets * (c->n_sets + 1));
            c->set_origins = xrealloc(c->set_origins, sizeof *c->set_origins
                                                          * (c->n_sets + 1));
            c->set_origins[c->n_sets] = kept_origin(record);
            c->sets[c->n_sets++] = xstrdup(value);
            rc = 0;
        }
    } else if (strcmp(key, "sharding_strategy") == 0) {
        if (value && (rc = parse_choice(sharding_names, value, &v, origin,
                                        cause)) == 0)
            c->sharding = v;
    } else if (strcmp(key, "auto_wrap_policy") == 0) {
        if (value && (rc = parse_choice(wrap_names, value, &v, origin,
                                        cause)) == 0)
            c->wrap = v;
    } else if (strcmp(key, "strategy") == 0) {
        if (value && (rc = parse_choice(strategy_names, value, &v, origin,
                                        cause)) == 0) {
            if (v)
                c->sharding = SHARDING_DDP;
            else if (c->sharding == SHARDING_DDP)
                c->sharding = SHARDING_FULL_SHARD;
        }
    } else if (strcmp(key, "bucket_cap_mb") == 0) {
        double f;
        char *why = NULL;
        if (value == NULL
            || units_parse_real(value, 1e-6, 1e6, &f, &why) != 0) {
            *cause = xasprintf("%s: '%s' is not a bucket size in MB "
                               "(above 0, at most 1e6; DDP's default is "
                               "25)", origin, value ? value : "");
            free(why);
        } else {
            c->bucket_cap_mb = f;
            c->bucket_cap_mb_given = true;
            rc = 0;
        }
    } else if (strcmp(key, "fsdp_version") == 0) {
        if ((rc = set_count(&n, value, 1, 2, origin, cause)) == 0)
            c->fsdp_version = (int)n;
    } else if (strcmp(key, "fsdp2_groups") == 0) {
        if (value && (rc = parse_choice(fsdp2_groups_names, value, &v,
                                        origin, cause)) == 0)
            c->fsdp2_groups = v;
    } else if (strcmp(key, "modules_to_forward_prefetch") == 0
               || strcmp(key, "modules_to_backward_prefetch") == 0) {
        rc = config_add_prefetch_list(c, key[11] == 'b', value, origin,
                                      cause);
    } else if (strcmp(key, "group_reshard_after_forward") == 0) {
        rc = config_add_group_raf(c, value, origin, cause);
    } else if (strcmp(key, "no_unshard_in_backward") == 0) {
        rc = set_string(&c->no_unshard_in_backward, value, origin, cause);
    } else if (strcmp(key, "reshard_after_forward") == 0) {
        rc = config_set_reshard_after_forward(c, value, origin, cause);
    } else if (strcmp(key, "reshard_after_forward_last") == 0) {
        rc = config_set_reshard_after_forward_last(c, value, origin, cause);
    } else if (strcmp(key, "reshard_after_backward") == 0) {
        rc = set_bool_given(&c->reshard_after_backward,
                            &c->reshard_after_backward_given, value, origin,
                            cause);
    } else if (strcmp(key, "requires_all_reduce") == 0) {
        rc = set_bool_given(&c->requires_all_reduce,
                            &c->requires_all_reduce_given, value, origin,
                            cause);
    } else if (strcmp(key, "dp_replicate") == 0) {
        rc = set_count(&c->dp_replicate, value, 1, 100000, origin, cause);
    } else if (strcmp(key, "dp_shard") == 0) {
        rc = set_count(&c->dp_shard, value, 1, 100000, origin, cause);
    } else if (strcmp(key, "output_dtype") == 0) {
        rc = set_dtype(&c->output_dtype, &c->output_dtype_given, value,
                       origin, cause);
    } else if (strcmp(key, "cast_forward_inputs") == 0) {
        rc = set_bool_given(&c->cast_forward_inputs,
                            &c->cast_forward_inputs_given, value, origin,
                            cause);
    } else if (strcmp(key, "gradient_as_bucket_view") == 0) {
        rc = set_bool(&c->gradient_as_bucket_view, value, origin, cause);
    } else if (strcmp(key, "static_graph") == 0) {
        rc = set_bool(&c->static_graph, value, origin, cause);
    } else if (strcmp(key, "wrap_classes") == 0) {
        rc = set_string(&c->wrap_classes, value, origin, cause);
    } else if (strcmp(key, "wrap") == 0) {
        rc = set_string(&c->wrap_modules, value, origin, cause);
    } else if (strcmp(key, "ac_frequency") == 0) {
        rc = set_count(&c->ac_frequency, value, 1, 100000, origin, cause);
        if (rc == 0)
            c->ac_frequency_given = true;
    } else if (strcmp(key, "grad_scaler") == 0) {
        rc = set_bool_given(&c->grad_scaler, &c->grad_scaler_given, value,
                            origin, cause);
    } else if (strcmp(key, "transformer_layer_cls") == 0) {
        rc = set_string(&c->layer_cls, value, origin, cause);
    } else if (strcmp(key, "min_num_params") == 0) {
        rc = set_count(&c->min_num_params, value, 0, INT64_C(1000000000000000),
                       origin, cause);
        if (rc == 0)
            c->min_num_params_given = true;
    } else if (strcmp(key, "backward_prefetch") == 0) {
        if (config_set_backward_prefetch_groups(c, value, &n))
            rc = 0;
        else if (value && (rc = parse_choice(prefetch_names, value, &v,
                                             origin, cause)) == 0) {
            c->backward_prefetch = v;
            c->backward_prefetch_groups = -1;
        }
    } else if (strcmp(key, "forward_prefetch") == 0) {
        rc = config_set_forward_prefetch(c, value, origin, cause);
    } else if (strcmp(key, "limit_all_gathers") == 0) {
        rc = set_bool(&c->limit_all_gathers, value, origin, cause);
    } else if (strcmp(key, "use_orig_params") == 0) {
        rc = set_bool(&c->use_orig_params, value, origin, cause);
    } else if (strcmp(key, "param_dtype") == 0) {
        rc = set_dtype(&c->param_dtype, &c->param_dtype_given, value, origin,
                       cause);
    } else if (strcmp(key, "reduce_dtype") == 0) {
        rc = set_dtype(&c->reduce_dtype, &c->reduce_dtype_given, value,
                       origin, cause);
    } else if (strcmp(key, "buffer_dtype") == 0) {
        rc = set_dtype(&c->buffer_dtype, &c->buffer_dtype_given, value,
                       origin, cause);
    } else if (strcmp(key, "cpu_offload") == 0) {
        rc = set_bool(&c->cpu_offload, value, origin, cause);
    } else if (strcmp(key, "activation_checkpointing") == 0) {
        if (value && (rc = parse_choice(ac_names, value, &v, origin,
                                        cause)) == 0)
            c->ac = v;
    } else if (strcmp(key, "attention") == 0) {
        int k = value ? attn_kernel_parse(value) : -1;
        if (k < 0) {
            *cause = xasprintf("%s: '%s' is not an attention kernel (%s)",
                               origin, value ? value : "", attn_kernel_choices);
            rc = -1;
        } else {
            c->attention = k;
            rc = 0;
        }
    } else if (strcmp(key, "float8") == 0) {
        if (value && (rc = parse_choice(float8_names, value, &v, origin,
                                        cause)) == 0)
            c->float8 = v;
    } else if (strcmp(key, "float8_all_gather") == 0) {
        rc = set_bool(&c->float8_all_gather, value, origin, cause);
    } else if (strcmp(key, "compile") == 0) {
        rc = set_bool(&c->compile, value, origin, cause);
    } else if (strcmp(key, "rotary") == 0) {
        if (value && (rc = rotary_parse(value, origin, &v, cause)) == 0)
            c->rotary = v;
    } else if (strcmp(key, "loss") == 0) {
        if (value)
            rc = loss_parse(value, origin, &c->loss, cause);
    } else if (strcmp(key, "micro_batch") == 0) {
        rc = set_count(&c->micro_batch, value, 1, 65536, origin, cause);
    } else if (strcmp(key, "seq_len") == 0) {
        rc = set_count(&c->seq_len, value, 1, 1048576, origin, cause);
    } else if (strcmp(key, "grad_accum") == 0) {
        rc = set_count(&c->grad_accum, value, 1, 4096, origin, cause);
    } else if (strcmp(key, "no_sync") == 0) {
        rc = set_bool(&c->no_sync, value, origin, cause);
    } else if (strcmp(key, "optimizer") == 0) {
        if (value && (rc = parse_choice(optimizer_names, value, &v, origin,
                                        cause)) == 0)
            c->optimizer = v;
    } else if (strcmp(key, "clip_grad_norm") == 0) {
        double f;
        char *why = NULL;
        if (value == NULL
            || units_parse_real(value, 1e-12, 1e12, &f, &why) != 0) {
            *cause = xasprintf("%s: '%s' is not a positive max_norm (e.g. "
                               "1.0)", origin, value ? value : "");
            free(why);
        } else {
            c->clip_grad_norm = f;
            rc = 0;
        }
    } else if (strcmp(key, "loss_item") == 0) {
        rc = set_bool(&c->loss_item, value, origin, cause);
    } else if (strcmp(key, "iterations") == 0) {
        rc = set_count(&c->iterations, value, 1, 100, origin, cause);
    } else if (strcmp(key, "torch_version") == 0) {
        rc = torch_version_parse(value, origin, &c->torch_version, cause);
    } else if (strcmp(key, "transformers_version") == 0) {
        rc = hf_version_parse(value, origin, &c->transformers_version,
                              cause);
    } else if (strcmp(key, "nccl_version") == 0) {
        rc = set_string(&c->nccl_version, value, origin, cause);
    } else if (strcmp(key, "nccl_algo") == 0) {
        rc = set_string(&c->nccl_algo, value, origin, cause);
    } else if (strcmp(key, "nccl_proto") == 0) {
        rc = set_string(&c->nccl_proto, value, origin, cause);
    } else if (strcmp(key, "nccl_min_nchannels") == 0) {
        rc = set_count(&c->nccl_min_nchannels, value, 1, 64, origin, cause);
    } else if (strcmp(key, "nccl_max_nchannels") == 0) {
        rc = set_count(&c->nccl_max_nchannels, value, 1, 64, origin, cause);
    } else if (nccl_var_key(key) >= 0) {
        rc = set_nccl_var(&c->nccl_vars[nccl_var_key(key)], key + 5, value,
                          origin, cause);
    } else if (strcmp(key, "network") == 0) {
        if (value && (rc = parse_choice(network_names, value, &v, origin,
                                        cause)) == 0)
            c->network = v;
    } else if (strcmp(key, "exact") == 0) {
        rc = set_bool(&c->exact, value, origin, cause);
    } else if (strcmp(key, "background_load") == 0) {
        /* Above 0.95 the spine would carry the job at a crawl; a value
         * like 30 is a percentage typed as such. */
        double f;
        char *why = NULL;
        if (value == NULL
            || units_parse_real(value, 0, 0.95, &f, &why) != 0) {
            *cause = xasprintf("%s: '%s' is not a fraction from 0 to 0.95 "
                               "(write 0.3 for 30%%)", origin,
                               value ? value : "");
            free(why);
        } else {
            c->background_load = f;
            rc = 0;
        }
    } else if (strcmp(key, "platform") == 0) {
        rc = set_string(&c->platform_path, value, origin, cause);
    } else if (strcmp(key, "format") == 0) {
        if (value && (rc = parse_choice(format_names, value, &v, origin,
                                        cause)) == 0)
            c->format = v;
    } else if (strcmp(key, "trace") == 0) {
        rc = set_string(&c->trace_path, value, origin, cause);
    } else if (strcmp(key, "timeline") == 0) {
        rc = set_string(&c->timeline_path, value, origin, cause);
    } else if (strcmp(key, "memory") == 0) {
        rc = set_string(&c->memory_path, value, origin, cause);
    } else if (strcmp(key, "metrics") == 0) {
        rc = set_string(&c->metrics_path, value, origin, cause);
    } else {
        /* A run file's origin is the key itself: name it once. */
        *cause = xasprintf("%s%sunknown setting '%s' (see 'fsdpsim help "
                           "simulate' for the list)",
                           strcmp(origin, key_in) == 0 ? "" : origin,
                           strcmp(origin, key_in) == 0 ? "" : ": ", key_in);
        free(key);
        return -1;
    }
    if (rc != 0 && *cause == NULL)
        *cause = xasprintf("%s: needs a value", origin);
    if (rc == 0 && strcmp(key, "set") != 0)
        record_origin(c, key, record);
    free(key);
    return rc;
}

int
config_set(struct run_config *c, const char *key, const char *value,
           const char *origin, char **cause)
{
    return config_apply(c, key, value, origin, origin, cause);
}

struct file_ctx {
    struct run_config *c;
    const char *origin;         /* the file, as messages name it */
    struct ini_lines rd;        /* rd.line: the line being parsed */
    char *cause;
    int cause_line;
    /* Keys seen so far (top level and [run] are one namespace) and the
     * line of each, for "given twice" errors; key_repeats' may repeat. */
    char **seen;
    int *seen_line;
    int n_seen;
    int n_keys;                 /* lines that set something, 'set' too */
};

static int
file_fail(struct file_ctx *ctx, char *msg)
{
    if (ctx->cause == NULL) {   /* keep only the first error */
        ctx->cause = msg;
        ctx->cause_line = ctx->rd.line;
    } else {
        free(msg);
    }
    return 0;
}

bool
config_is_output_file(const char *key)
{
    return strcmp(key, "trace") == 0 || strcmp(key, "timeline") == 0
           || strcmp(key, "memory") == 0 || strcmp(key, "metrics") == 0;
}

/* Keys a run file may give on several lines, each adding one item:
 * 'set', and FSDP2's per-group prefetch lists and reshard values. */
static bool
key_repeats(const char *name)
{
    return strcmp(name, "set") == 0
           || strcmp(name, "modules_to_forward_prefetch") == 0
           || strcmp(name, "modules_to_backward_prefetch") == 0
           || strcmp(name, "group_reshard_after_forward") == 0;
}

static int
file_handler(void *user, const char *section, const char *name,
             const char *raw_value)
{
    struct file_ctx *ctx = user;
    if (ctx->cause != NULL)
        return 1;
    if (*section != '\0' && strcmp(section, "run") != 0)
        return file_fail(ctx, xasprintf("unknown section [%s] (run files "
                                        "hold their keys at the top or "
                                        "under [run])", section));
    if (strcmp(name, "config") == 0)
        return file_fail(ctx, xstrdup("'config' cannot be used inside a "
                                      "run file"));
    if (strcmp(name, "format") == 0 || config_is_output_file(name))
        /* Output choices belong to the command line, so a shared run file
         * never overwrites somebody's files. */
        return file_fail(ctx, xasprintf("'%s' is an output option; give "
                                        "it on the command line", name));
    if (strchr(name, '-') != NULL)
        return file_fail(ctx, xasprintf("key '%s' uses dashes; run files "
                                        "use underscores (e.g. seq_len)",
                                        name));
    if (!key_repeats(name)) {
        for (int i = 0; i < ctx->n_seen; i++)
            if (strcmp(ctx->seen[i], name) == 0)
                return file_fail(ctx, xasprintf("key '%s' given twice (first "
                                                "at line %d)", name,
                                                ctx->seen_line[i]));
        ctx->seen = xrealloc(ctx->seen, sizeof *ctx->seen
                                            * (size_t)(ctx->n_seen + 1));
        ctx->seen_line = xrealloc(ctx->seen_line, sizeof *ctx->seen_line
                                                      * (size_t)(ctx->n_seen
                                                                 + 1));
        ctx->seen[ctx->n_seen] = xstrdup(name);
        ctx->seen_line[ctx->n_seen++] = ctx->rd.line;
    }
    char *value = ini_lines_value(&ctx->rd, raw_value);
    char *why = NULL;
    /* The message names the key (the line is put in front of it); the
     * value keeps its line for checks made later. */
    char *record = xasprintf("%s:%d: %s", ctx->origin, ctx->rd.line, name);
    int rc = config_apply(ctx->c, name, value, name, record, &why);
    free(record);
    free(value);
    if (rc != 0)
        return file_fail(ctx, why);
    ctx->n_keys++;
    return 1;
}

int
config_load_text(struct run_config *c, const char *text, const char *origin,
                 char **cause)
{
    struct file_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.c = c;
    ctx.origin = origin;
    ini_lines_init(&ctx.rd, text, 0);
    int line = ini_lines_parse(&ctx.rd, file_handler, NULL, &ctx);
    if (ctx.rd.too_long && ctx.cause == NULL) {
        ctx.cause = xasprintf("line is longer than %d characters (shorten "
                              "it)", ctx.rd.max_len);
        ctx.cause_line = ctx.rd.line;
    }
    if (line != 0 && (ctx.cause == NULL || line < ctx.cause_line)) {
        free(ctx.cause);
        ctx.cause = xstrdup("malformed line (expected 'key = value' or "
                            "'[section]')");
        ctx.cause_line = line;
    }
    for (int i = 0; i < ctx.n_seen; i++)
        free(ctx.seen[i]);
    free(ctx.seen);
    free(ctx.seen_line);
    if (ctx.cause != NULL) {
        *cause = xasprintf("%s:%d: %s", origin, ctx.cause_line, ctx.cause);
        free(ctx.cause);
        return -1;
    }
    if (ctx.n_keys == 0) {
        /* Empty, or comments only: the wrong file far more often than a
         * run of every default. */
        *cause = xasprintf("%s: holds no settings (a run file has lines "
                           "such as 'model = llama2-7b'; see 'fsdpsim help "
                           "simulate')", origin);
        return -1;
    }
    return 0;
}

/* Run files are a few lines; anything larger is not one. */
#define RUN_FILE_MAX_BYTES (1u << 20)

int
config_load_file(struct run_config *c, const char *path, char **cause)
{
    enum textfile_error err;
    char *text = textfile_read(path, RUN_FILE_MAX_BYTES, 0, &err);
    if (text == NULL) {
        switch (err) {
        case TEXTFILE_TOO_BIG:
            *cause = xasprintf("%s: not a run file (over 1 MiB)", path);
            break;
        case TEXTFILE_NUL:
            *cause = xasprintf("%s: not a run file (it holds a NUL byte)",
                               path);
            break;
        case TEXTFILE_NOT_REGULAR:
            *cause = xasprintf("%s: not a run file (not a regular file)",
                               path);
            break;
        default:
            *cause = xasprintf("%s: cannot read run file: %s", path,
                               strerror(errno));
            break;
        }
        return -1;
    }
    int rc = config_load_text(c, text, path, cause);
    free(text);
    if (rc != 0)
        return -1;
    free(c->config_path);
    c->config_path = xstrdup(path);
    return 0;
}

/* DDP, selective checkpointing, manual and class wrapping, GradScaler:
 * the combinations PyTorch refuses or that mean nothing. */
static int
config_validate_knobs(const struct run_config *c, char **cause)
{
    bool ddp = c->sharding == SHARDING_DDP;
    if (ddp && c->cpu_offload) {
        *cause = xstrdup("--cpu-offload: DistributedDataParallel keeps full "
                         "replicas on the GPU and has no CPU offload (use "
                         "an FSDP strategy with --cpu-offload)");
        return -1;
    }
    if (ddp && c->reduce_dtype_given && c->reduce_dtype != DTYPE_FP32) {
        *cause = xasprintf("--reduce-dtype %s: DDP all-reduces the fp32 "
                           "gradient buckets (autocast leaves parameters "
                           "and gradients in fp32); a compression comm "
                           "hook is not modelled (drop --reduce-dtype)",
                           dtype_name(c->reduce_dtype));
        return -1;
    }
    if (ddp && c->ac == AC_REENTRANT && !c->static_graph) {
        /* reducer.cpp: the recomputation's backward fires the same
         * parameter hooks again. */
        *cause = xstrdup("--activation-checkpointing reentrant: DDP raises "
                         "\"Expected to mark a variable ready only once\" "
                         "when reentrant checkpointing re-runs a layer's "
                         "forward in backward; add --static-graph (DDP's "
                         "static_graph=True) or use --activation-"
                         "checkpointing full");
        return -1;
    }
    if (!ddp && (c->bucket_cap_mb_given || c->gradient_as_bucket_view
                 || c->static_graph)) {
        *cause = xasprintf("--%s: a DistributedDataParallel setting; add "
                           "--sharding-strategy DDP (FSDP has no gradient "
                           "buckets)",
                           c->bucket_cap_mb_given ? "bucket-cap-mb"
                           : c->gradient_as_bucket_view
                               ? "gradient-as-bucket-view"
                               : "static-graph");
        return -1;
    }
    if (c->ac_frequency_given && c->ac != AC_SELECTIVE_LAYER) {
        *cause = xstrdup("--ac-frequency: only used with "
                         "--activation-checkpointing selective-layer");
        return -1;
    }
    if (c->float8_all_gather
        && (c->float8 == FLOAT8_NONE || c->fsdp_version != 2)) {
        *cause = xstrdup("--float8-all-gather: torchao's float8 all-gather "
                         "is an FSDP2 feature of float8 Linear weights; "
                         "give --fsdp-version 2 and --float8 tensorwise");
        return -1;
    }
    if (c->float8_all_gather && c->float8 == FLOAT8_ROWWISE) {
        /* torchao float8/fsdp_utils.py: WeightWithDynamicFloat8CastTensor
         * is the tensorwise recipe's; rowwise weights are all-gathered in
         * high precision. */
        *cause = xstrdup("--float8-all-gather: torchao all-gathers float8 "
                         "weights only with tensorwise scaling (one scale "
                         "a weight); use --float8 tensorwise or drop "
                         "--float8-all-gather");
        return -1;
    }
    if (c->wrap == WRAP_MODULE && c->wrap_classes == NULL) {
        *cause = xstrdup("--auto-wrap-policy module: ModuleWrapPolicy needs "
                         "its classes; give --wrap-classes CLASS,...");
        return -1;
    }
    if (c->wrap_classes != NULL && c->wrap != WRAP_MODULE) {
        *cause = xstrdup("--wrap-classes: only used with --auto-wrap-policy "
                         "module (ModuleWrapPolicy)");
        return -1;
    }
    if (c->wrap_modules != NULL && c->wrap != WRAP_NONE
        && c->wrap != WRAP_TRANSFORMER) {
        *cause = xstrdup("--wrap: manual wrapping inside enable_wrap is "
                         "given with no auto_wrap_policy; drop "
                         "--auto-wrap-policy (or give none)");
        return -1;
    }
    if (ddp && c->wrap_modules != NULL) {
        *cause = xstrdup("--wrap: DDP replicates the whole model and has no "
                         "units to wrap; drop --wrap or use an FSDP "
                         "strategy");
        return -1;
    }
    return 0;
}

/* Two outputs given one file: the second would silently replace the
 * first. */
static int
config_validate_outputs(const struct run_config *c, char **cause)
{
    const char *const path[] = {c->trace_path, c->timeline_path,
                                c->memory_path, c->metrics_path};
    static const char *const flag[] = {"--trace", "--timeline", "--memory",
                                       "--metrics"};
    for (int i = 0; i < 4; i++)
        for (int j = i + 1; j < 4; j++)
            if (path[i] && path[j] && strcmp(path[i], path[j]) == 0) {
                *cause = xasprintf("%s and %s both name %s: the second "
                                   "would replace the first (give two "
                                   "files)", flag[i], flag[j], path[i]);
                return -1;
            }
    return 0;
}

static int
config_validate_fields(const struct run_config *c, char **cause)
{
    if (config_validate_outputs(c, cause) != 0)
        return -1;
    if (c->nccl_min_nchannels > 0 && c->nccl_max_nchannels > 0
        && c->nccl_min_nchannels > c->nccl_max_nchannels) {
        *cause = xasprintf("%s %lld is above %s %lld (NCCL_MIN_NCHANNELS "
                           "must not exceed NCCL_MAX_NCHANNELS)",
                           config_origin(c, "nccl_min_nchannels"),
                           (long long)c->nccl_min_nchannels,
                           config_origin(c, "nccl_max_nchannels"),
                           (long long)c->nccl_max_nchannels);
        return -1;
    }
    if (c->wrap == WRAP_TRANSFORMER && c->min_num_params_given) {
        /* doc/fsdp-semantics.md §1.5: transformer_auto_wrap_policy has
         * exactly four parameters and no **kwargs, so PyTorch raises
         * TypeError. */
        *cause = xstrdup(
            "--min-num-params: transformer_auto_wrap_policy() got an "
            "unexpected keyword argument 'min_num_params' (PyTorch raises "
            "this TypeError: the transformer policy wraps by layer class "
            "only; use --auto-wrap-policy size with --min-num-params, or "
            "drop --min-num-params)");
        return -1;
    }
    if (c->wrap == WRAP_NONE && c->min_num_params_given) {
        *cause = xstrdup(
            "--min-num-params: --auto-wrap-policy none passes no policy "
            "(FSDP(model)), so there is no threshold to give; use "
            "--auto-wrap-policy size with --min-num-params, or drop "
            "--min-num-params");
        return -1;
    }
    if (config_validate_knobs(c, cause) != 0
        || config_validate_fsdp2(c, cause) != 0)
        return -1;
    if (c->cpu_offload && c->grad_accum > 1 && !c->no_sync
        && c->fsdp_version != 2) {
        *cause = xstrdup(
            "--cpu-offload: gradient accumulation outside no_sync() is not "
            "supported with CPU offload (FSDP gives wrong results); add "
            "--no-sync or set --grad-accum 1");
        return -1;
    }
    if (c->network != NETWORK_SIMGRID
        && (c->background_load > 0 || c->platform_path)) {
        *cause = xasprintf("--%s: only used with --network simgrid (add "
                           "--network simgrid)",
                           c->platform_path ? "platform" : "background-load");
        return -1;
    }
    if (c->micro_batch * c->seq_len > INT64_C(1) << 31) {
        *cause = xasprintf("--micro-batch x --seq-len = %lld tokens per GPU "
                           "exceeds 2^31; lower one of them",
                           (long long)(c->micro_batch * c->seq_len));
        return -1;
    }
    return 0;
}

int
config_validate(const struct run_config *c, char **cause)
{
    if (config_validate_fields(c, cause) == 0)
        return 0;
    /* Each message starts with the flag it is about. */
    *cause = config_blame(c, NULL, *cause);
    return -1;
}
