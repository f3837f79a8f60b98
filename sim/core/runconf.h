/*
 * runconf.h: the FSDP settings of one run, with PyTorch's names and values.
 *
 * A run is a model, a cluster and what the user would pass to
 * FullyShardedDataParallel(...) plus the training loop around it
 * (micro-batch, sequence length, accumulation, optimizer).  The same option
 * table serves the command line (--kebab-case) and run files (INI keys with
 * underscores); flags given on the command line override the file.
 */
#ifndef FSDPSIM_RUNCONF_H
#define FSDPSIM_RUNCONF_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "nccl_env.h"
#include "topo.h"

enum sharding_strategy {
    SHARDING_FULL_SHARD,
    SHARDING_SHARD_GRAD_OP,
    SHARDING_NO_SHARD,
    SHARDING_HYBRID_SHARD,
    SHARDING_HYBRID_SHARD_ZERO2,
    SHARDING_DDP,                /* DistributedDataParallel, not FSDP */
};

/* WRAP_MODULE: ModuleWrapPolicy({classes}); --wrap (manual wrap() inside
 * enable_wrap) is independent of the policy (run_config.wrap_modules). */
enum wrap_policy { WRAP_TRANSFORMER, WRAP_SIZE, WRAP_NONE, WRAP_MODULE };
enum backward_prefetch { BWD_PREFETCH_PRE, BWD_PREFETCH_POST,
                         BWD_PREFETCH_NONE };
/* SELECTIVE_LAYER: every ac_frequency-th block fully checkpointed;
 * SELECTIVE_OP: every block, saving matmul and attention outputs and
 * recomputing the rest (torchtitan's two selective policies). */
enum ac_mode { AC_NONE, AC_FULL, AC_REENTRANT, AC_SELECTIVE_LAYER,
               AC_SELECTIVE_OP };
enum optimizer_kind { OPTIMIZER_ADAMW, OPTIMIZER_SGD };
/* torchao float8 training of the Linear layers (convert_to_float8_training):
 * none, or dynamic scaling per tensor or per row. */
enum float8_recipe { FLOAT8_NONE, FLOAT8_TENSORWISE, FLOAT8_ROWWISE };
/* The loss over the vocabulary: the LM head's logits cast to fp32 and
 * torch.nn.functional.cross_entropy (plain), or a fused, chunked linear
 * and cross-entropy that never holds the whole logits (fused: Liger-Kernel's
 * LigerFusedLinearCrossEntropyFunction). */
enum loss_kind { LOSS_PLAIN, LOSS_FUSED, LOSS_NATIVE };
enum out_format { FORMAT_TEXT, FORMAT_JSON };
/* How collectives' network time is found (net.h): NCCL's model alone, or
 * flows on a SimGrid platform of the cluster. */
enum network_kind { NETWORK_ANALYTIC, NETWORK_SIMGRID };
/* FSDP2: the modules fully_shard is called on (doc/fsdp-semantics.md
 * §13.13): the wrap plan's units, or torchtitan's apply_fsdp, today's
 * (tok_embeddings, each block, [norm, output], the root) or that of
 * v0.1.0 and before (each block, the root). */
enum fsdp2_groups { FSDP2_GROUPS_WRAP, FSDP2_GROUPS_TORCHTITAN,
                    FSDP2_GROUPS_TORCHTITAN_BLOCKS };

struct run_config {
    char *model;                 /* name or path */
    char *topology;              /* name or path */
    char *calibration;           /* measured values to apply, or NULL */
    int nodes;                   /* 0 = the topology's value */
    int gpus_per_node;           /* 0 = the topology's value */
    char **sets;                 /* topology overrides "section.key=value" */
    char **set_origins;          /* where each came from, as origins[] */
    int n_sets;

    enum sharding_strategy sharding;
    bool no_shard_one_rank;      /* NO_SHARD on a 1-rank group (the
                                    hybrid fallback with 1 GPU per node):
                                    its all-reduce moves nothing */
    enum wrap_policy wrap;
    char *layer_cls;             /* transformer_layer_cls; NULL = model's */
    char *wrap_classes;          /* ModuleWrapPolicy's classes */
    char *wrap_modules;          /* --wrap: module paths wrap()ped by
                                    hand inside enable_wrap, or NULL */
    int64_t min_num_params;      /* size_based_auto_wrap_policy threshold */
    bool min_num_params_given;   /* to reject it with the class policy */
    enum backward_prefetch backward_prefetch;
    bool forward_prefetch;
    int64_t forward_prefetch_groups;  /* FSDP2: each group's
                                         set_modules_to_forward_prefetch
                                         list, the next N groups (true
                                         = 1); 0 = none */
    int64_t backward_prefetch_groups; /* FSDP2: each group's
                                         set_modules_to_backward_prefetch
                                         list, the next N groups to run
                                         backward; 0 = the implicit
                                         one-ahead prefetch, as
                                         when not given (-1) */
    bool limit_all_gathers;
    bool use_orig_params;
    bool param_dtype_given, reduce_dtype_given, buffer_dtype_given;
    enum dtype param_dtype;      /* MixedPrecision(param_dtype=...) */
    enum dtype reduce_dtype;
    enum dtype buffer_dtype;
    bool cpu_offload;            /* CPUOffload(offload_params=True) */
    enum ac_mode ac;
    int64_t ac_frequency;        /* selective-layer: every N-th block */
    bool ac_frequency_given;
    bool grad_scaler_given;
    bool grad_scaler;            /* ShardedGradScaler (default: on with
                                    fp16 parameters) */

    /* FSDP2, fully_shard (fsdp_version == 2; runconf_fsdp2.c). */
    int fsdp_version;            /* 1 (default) or 2 */
    enum fsdp2_groups fsdp2_groups;
    char *no_unshard_in_backward; /* module paths of the groups given
                                     set_unshard_in_backward(False), or
                                     NULL */
    char **prefetch_lists[2];     /* FSDP2: each "GROUP=MODULE,..." of
                                     GROUP.set_modules_to_forward_prefetch
                                     ([0]) or ..._backward_prefetch ([1]),
                                     in the order given */
    int n_prefetch_lists[2];
    char **group_raf;             /* FSDP2: each "GROUP=true|false|N", that
                                     group's own fully_shard(
                                     reshard_after_forward=...) */
    int n_group_raf;
    bool reshard_after_forward;  /* fully_shard(reshard_after_forward=) */
    int64_t reshard_after_forward_size; /* an int N: the post-forward
                                           mesh size; 0 = a bool */
    bool reshard_after_forward_given;
    bool reshard_after_forward_last;  /* the same for the last group to
                                         finish forward (torchtitan:
                                         false) */
    int64_t reshard_after_forward_last_size;
    bool reshard_after_forward_last_given;
    bool reshard_after_backward;      /* set_reshard_after_backward for
                                         the micro-batches before a
                                         step's last (default true) */
    bool reshard_after_backward_given;
    bool requires_all_reduce;         /* HSDP set_requires_all_reduce for
                                         the micro-batches before a
                                         step's last (default true) */
    bool requires_all_reduce_given;
    int64_t dp_replicate;        /* HSDP mesh (replicate, shard); 0 = not
                                    given */
    int64_t dp_shard;
    enum dtype output_dtype;     /* MixedPrecisionPolicy(output_dtype=) */
    bool output_dtype_given;
    bool cast_forward_inputs;    /* MixedPrecisionPolicy default True */
    bool cast_forward_inputs_given;

    /* DistributedDataParallel (sharding == SHARDING_DDP). */
    double bucket_cap_mb;        /* default 25 */
    bool bucket_cap_mb_given;    /* then the first bucket is capped at it
                                    too, not at 1 MiB */
    bool gradient_as_bucket_view;
    bool static_graph;
    int attention;               /* enum attn_kernel; ATTN_AUTO = the
                                    model's own config, else SDPA's pick */
    bool compile;                /* torch.compile of each block */
    enum loss_kind loss;         /* plain (fp32 logits), fused, or
                                    native (the logits' own dtype) */
    int rotary;                  /* enum rope_style (model.h): how the
                                    training code applies the rotary
                                    embedding; 0: as the model says */
    int torch_version;           /* PyTorch release, 100 * major + minor
                                    (torch_version.h) */
    int transformers_version;    /* Hugging Face transformers release of
                                    the model code (hf_version.h) */
    enum float8_recipe float8;   /* float8 Linear layers (torchao) */
    bool float8_all_gather;      /* FSDP2 all-gathers their weights in
                                    float8 (enable_fsdp_float8_all_gather) */
    int64_t micro_batch;         /* sequences per GPU per micro-batch */
    int64_t seq_len;             /* tokens per sequence */
    int64_t grad_accum;          /* micro-batches per optimizer step */
    bool no_sync;                /* accumulate inside model.no_sync() */
    enum optimizer_kind optimizer;
    double clip_grad_norm;       /* FSDP.clip_grad_norm_(max_norm) before
                                    each step; 0 = no clipping */
    bool loss_item;              /* the loop reads loss.item() (and the
                                    norm's) every step */
    int64_t iterations;          /* simulated steps (first one warms up) */

    /* NCCL: version and the environment variables users set (raw text,
     * resolved by setup once the version is known; NULL = unset). */
    char *nccl_version;
    char *nccl_algo;            /* NCCL_ALGO */
    char *nccl_proto;           /* NCCL_PROTO */
    int64_t nccl_min_nchannels; /* NCCL_MIN_NCHANNELS, 0 = unset */
    int64_t nccl_max_nchannels; /* NCCL_MAX_NCHANNELS, 0 = unset */
    /* NCCL_<nccl_var_names[i]> (NCCL_NVLS_ENABLE, NCCL_BUFFSIZE, ...),
     * checked as NCCL reads it when set. */
    char *nccl_vars[NCCL_VAR_COUNT];

    /* Network backend (net.h). */
    enum network_kind network;
    bool exact;                 /* every micro-batch simulated (no
                                   folding); simgrid: every ring step */
    double background_load;     /* fraction of each spine link taken */
    char *platform_path;        /* simgrid: a user's platform file */

    enum out_format format;
    char *trace_path;
    char *timeline_path;
    char *memory_path;
    char *metrics_path;
    char *config_path;

    /* Where each key's value came from, indexed as config_options[]:
     * "run.ini:4: seq_len" for a run file's line, the environment
     * variable, or NULL for a flag or the default.  Checks made long after
     * parsing (config_validate, setup_prepare) name it through
     * config_blame(), so an error in a run file points at its line. */
    char **origins;
};

void config_init(struct run_config *c);
void config_free(struct run_config *c);

/* Apply one option by its run-file key (underscores) or flag name (dashes,
 * without the leading "--").  value may be NULL for boolean flags given
 * bare.  origin names the source in messages ("--seq-len" or "run.ini:4").
 * Returns 0, or -1 with *cause set (caller frees). */
int config_set(struct run_config *c, const char *key, const char *value,
               const char *origin, char **cause);

/* Where KEY's value came from: its run-file line and name
 * ("run.ini:4: seq_len"), "NCCL_ALGO (environment)", or the flag
 * ("--seq-len") when given on the command line or left at its default. */
const char *config_origin(const struct run_config *c, const char *key);
/* The same for the I-th --set / set line. */
const char *config_set_origin(const struct run_config *c, int i);

/* MSG (freed here) about KEY's value, or about the flag MSG starts with
 * when KEY is NULL, restated to name where that value came from: a
 * leading "--flag" becomes the origin, or the origin is put in front.
 * Unchanged when the value came from the command line. */
char *config_blame(const struct run_config *c, const char *key, char *msg);
/* The same with an origin given as config_set_origin() returns it, for
 * messages that start with "--set". */
char *config_blame_origin(const char *origin, const char *flag, char *msg);

/* Read a run file; keys before any section or under [run]. */
int config_load_file(struct run_config *c, const char *path, char **cause);
/* The same from text; origin names it in "origin:LINE:" messages. */
int config_load_text(struct run_config *c, const char *text,
                     const char *origin, char **cause);

/* Cross-field checks that need no model or topology: the transformer policy
 * given min_num_params, offload with accumulation outside no_sync, ... */
int config_validate(const struct run_config *c, char **cause);

/* FSDP2 (runconf_fsdp2.c): reshard_after_forward's bool-or-int value
 * (the contract of config_set), the checks config_validate makes, the
 * defaults config_init sets. */
int config_set_reshard_after_forward(struct run_config *c, const char *value,
                                     const char *origin, char **cause);
int config_set_reshard_after_forward_last(struct run_config *c,
                                          const char *value,
                                          const char *origin, char **cause);
/* forward_prefetch: a bool (FSDP1, and FSDP2's one group) or FSDP2's
 * count of groups; backward_prefetch: FSDP1's policy name or FSDP2's
 * count. */
int config_set_forward_prefetch(struct run_config *c, const char *value,
                                const char *origin, char **cause);
int config_set_backward_prefetch_groups(struct run_config *c,
                                        const char *value, int64_t *n);
/* One GROUP=MODULE,... prefetch list (BACKWARD: of
 * set_modules_to_backward_prefetch), appended. */
int config_add_prefetch_list(struct run_config *c, int backward,
                             const char *value, const char *origin,
                             char **cause);
/* One GROUP=true|false|N of --group-reshard-after-forward, appended. */
int config_add_group_raf(struct run_config *c, const char *value,
                         const char *origin, char **cause);
void config_group_raf_value(const char *spec, bool *reshard, int64_t *size);
int config_validate_fsdp2(const struct run_config *c, char **cause);
const char *config_fsdp2_knobs_text(const struct run_config *c, char *buf,
                                    size_t len);
/* backward_prefetch as the run has it: FSDP1's policy name; FSDP2's
 * count of groups, or "implicit" without a list. */
const char *config_backward_prefetch_text(const struct run_config *c,
                                          char *buf, size_t len);
void config_init_fsdp2(struct run_config *c);

/* Resolved dtypes: MixedPrecision rules (reduce defaults to param). */
enum dtype config_param_dtype(const struct run_config *c);
enum dtype config_reduce_dtype(const struct run_config *c);
/* Whether the optimizer step runs a GradScaler's unscale_, inf check and
 * scale update: --grad-scaler, by default on with fp16 parameters. */
bool config_grad_scaler(const struct run_config *c);

const char *sharding_name(enum sharding_strategy s);
const char *backward_prefetch_name(enum backward_prefetch b);
const char *ac_name(enum ac_mode a);
const char *optimizer_name(enum optimizer_kind o);
const char *float8_name(enum float8_recipe r);
const char *loss_name(enum loss_kind l);
/* S as a rotary style (half, complex, matrix: enum rope_style): 0, or -1
 * with *cause (caller frees). */
int rotary_parse(const char *s, const char *origin, int *out, char **cause);
/* S as a loss: 0, or -1 with *cause (caller frees). */
int loss_parse(const char *s, const char *origin, enum loss_kind *out,
               char **cause);
/* S as a float8 recipe: 0, or -1 with *cause ("ORIGIN: 'S' is not one
 * of ..."; caller frees). */
int float8_parse(const char *s, const char *origin, enum float8_recipe *out,
                 char **cause);
bool sharding_is_hybrid(enum sharding_strategy s);
/* FULL_SHARD and HYBRID_SHARD free parameters after forward. */
bool sharding_reshards_after_forward(enum sharding_strategy s);

/* Whether KEY names an output file a run writes (trace, timeline, memory,
 * metrics): a command-line choice only, and one that only the commands
 * that simulate or run a single step take. */
bool config_is_output_file(const char *key);

/* The option table, for --help and README. */
struct config_option {
    const char *key;     /* run-file key */
    const char *arg;     /* argument synopsis, NULL for bare booleans */
    const char *help;
};
extern const struct config_option config_options[];

#endif
