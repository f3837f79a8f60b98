/*
 * cmd_list.c: `fsdpsim models` and `fsdpsim topologies`: what is built in,
 * and the whole of one model tree or topology.
 */
#include "builtin.h"
#include "catalog_print.h"
#include "cmd.h"
#include "kernel.h"
#include "layer.h"
#include "model.h"
#include "runconf.h"
#include "topo.h"
#include "torch_version.h"
#include "units.h"
#include "xalloc.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static void
cmd_models_help(FILE *out)
{
    fprintf(out, "usage: fsdpsim models [--show NAME|FILE [--micro-batch N] "
            "[--seq-len N] [--param-dtype D]\n"
            "                      [--kernels [--topology T] [--attention K] "
            "[--compile]\n                       [--float8 R] [--loss plain|fused|native] "
            "[--rotary R]\n                       [--torch-version X.Y]]]\n\n"
            "Without options, list the built-in models with their parameter "
            "counts.\nWith --show, print the module tree of a built-in model, "
            "a native .ini or a\nHugging Face config.json: per module its own "
            "and subtree parameters, the\nforward FLOPs and the activation "
            "bytes saved for backward by its subtree\nfor one micro-batch "
            "(default 1 x 2048 tokens, bf16 activations).\n"
            "With --kernels, list instead the GPU kernels PyTorch eager "
            "launches for each\ndistinct leaf (list layers folded, 'x32'), "
            "forward and backward, with their\nshape, FLOPs, HBM bytes, "
            "efficiency and time on the GPU of --topology\n(default "
            "dgx-a100-80g), attention kernel --attention (%s;\ndefault: the "
            "model's config, else SDPA's pick), --compile (fused\n"
            "elementwise chains) and --float8 tensorwise|rowwise (torchao "
            "Float8Linear\nlayers) and --loss fused (the LM head and the loss as "
            "Liger's chunked\nfused linear + cross-entropy) or native (the "
            "loss on the logits' own\ndtype) and --rotary "
            "half|complex|matrix (the rotary\nembedding as Hugging Face, "
            "torchtitan or IBM FMS code applies it) and --torch-version X.Y "
            "(the PyTorch\nrelease: which dtype casts are vectorized; "
            "default %d.%d), then the totals\nper micro-batch.\n",
            attn_kernel_choices, TORCH_VERSION_DEFAULT / 100,
            TORCH_VERSION_DEFAULT % 100);
}

/* Subtree sums of leaf costs, by module index (pre-order: children come
 * after their parent, so a reverse walk accumulates bottom-up). */
static void
model_costs_build(const struct model *m, int64_t mb, int64_t seq,
                  int act_bytes, struct model_costs *mc)
{
    mc->fwd_flops = xcalloc(m->n_modules, sizeof(double));
    mc->saved_bytes = xcalloc(m->n_modules, sizeof(double));
    for (int i = m->n_modules - 1; i >= 0; i--) {
        const struct module *mod = m->modules[i];
        struct layer_work w;
        layer_work(mod, mb, seq, act_bytes, &w);
        mc->fwd_flops[i] += w.fwd_flops;
        mc->saved_bytes[i] += w.saved_bytes;
        if (mod->parent) {
            mc->fwd_flops[mod->parent->index] += mc->fwd_flops[i];
            mc->saved_bytes[mod->parent->index] += mc->saved_bytes[i];
        }
    }
}

static void
cmd_topologies_help(FILE *out)
{
    fprintf(out, "usage: fsdpsim topologies [--show NAME|FILE]\n\n"
            "Without options, list the built-in topologies, each with "
            "where its numbers\ncome from (the file's \"# From:\" "
            "comment).  With --show, print one as a\ntopology file (every "
            "field, with units), ready to copy and edit.\n");
}

struct show_opts {
    const char *show;
    const char *micro_batch, *seq_len, *dtype;
    bool kernels, compile;
    const char *topology, *attention, *float8, *loss, *rotary, *torch;
};

static const struct option show_options[] = {
    {"show", required_argument, NULL, 's'},
    {"micro-batch", required_argument, NULL, 'b'},
    {"seq-len", required_argument, NULL, 'l'},
    {"param-dtype", required_argument, NULL, 'd'},
    {"kernels", no_argument, NULL, 'k'},
    {"topology", required_argument, NULL, 't'},
    {"attention", required_argument, NULL, 'a'},
    {"compile", no_argument, NULL, 'c'},
    {"float8", required_argument, NULL, 'f'},
    {"loss", required_argument, NULL, 'L'},
    {"rotary", required_argument, NULL, 'R'},
    {"torch-version", required_argument, NULL, 'T'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0}};

/* Parse "--show X" (and, for models, the micro-batch shape) / "-h" for
 * command E: CMD_RUN, or the exit status after the help or the message.
 * Both commands read one table; topologies refuses what is models'
 * alone as an unknown option. */
static int
parse_show(const struct cmd_entry *e, int argc, char **argv,
           struct show_opts *so)
{
    int models = e == &cmd_models_entry;
    int c;
    memset(so, 0, sizeof *so);
    struct cmd_getopt g = CMD_GETOPT(e, argc, argv);
    while ((c = cmd_getopt(&g)) != CMD_OPT_END) {
        if (c == 's') {
            so->show = optarg;
        } else if (models && c == 'b') {
            so->micro_batch = optarg;
        } else if (models && c == 'l') {
            so->seq_len = optarg;
        } else if (models && c == 'd') {
            so->dtype = optarg;
        } else if (models && c == 'k') {
            so->kernels = true;
        } else if (models && c == 't') {
            so->topology = optarg;
        } else if (models && c == 'a') {
            so->attention = optarg;
        } else if (models && c == 'c') {
            so->compile = true;
        } else if (models && c == 'f') {
            so->float8 = optarg;
        } else if (models && c == 'L') {
            so->loss = optarg;
        } else if (models && c == 'R') {
            so->rotary = optarg;
        } else if (models && c == 'T') {
            so->torch = optarg;
        } else if (c == 'h') {
            e->help(stdout);
            return 0;
        } else if (c == CMD_OPT_BAD) {
            return EXIT_USAGE;
        } else {
            /* One of models' options given to topologies: name it from
             * the table, not argv[optind - 1], which is its value when it
             * took one ("--seq-len -5" would be called '-5'). */
            char name[64];
            snprintf(name, sizeof name, "%s", argv[optind - 1]);
            for (const struct option *o = show_options; o->name; o++)
                if (o->val == c)
                    snprintf(name, sizeof name, "--%s", o->name);
            return cmd_option_error(e->name, OPTION_UNKNOWN, name);
        }
    }
    if (optind < argc)
        return cmd_option_error(e->name, OPTION_UNEXPECTED, argv[optind]);
    /* The shape and kernel options describe what --show prints: without
     * it they would be ignored, a bad value ("--seq-len -5") included. */
    if (models && so->show == NULL
        && (so->micro_batch || so->seq_len || so->dtype || so->kernels
            || so->topology || so->attention || so->compile || so->float8
            || so->loss || so->rotary || so->torch))
        return cmd_errorf(e->name, 1, "--micro-batch, --seq-len, "
                          "--param-dtype, --kernels and its options go "
                          "with --show NAME|FILE");
    return CMD_RUN;
}

/* Check the shape options of `models --show`; -1 after printing. */
static int
shape_from_opts(const struct show_opts *so, int64_t *mb, int64_t *seq,
                int *act_bytes)
{
    char *why = NULL;
    *mb = 1;
    *seq = 2048;
    *act_bytes = 2;
    const char *flag = "--micro-batch";
    if (so->micro_batch
        && units_parse_count(so->micro_batch, 1, 65536, mb, &why) != 0)
        goto bad;
    flag = "--seq-len";
    if (so->seq_len
        && units_parse_count(so->seq_len, 1, 1048576, seq, &why) != 0)
        goto bad;
    if (so->dtype) {
        enum dtype d;
        if (dtype_parse(so->dtype, &d) != 0) {
            why = xasprintf("'%s' is not a dtype (fp32, bf16, fp16)",
                            so->dtype);
            flag = "--param-dtype";
            goto bad;
        }
        *act_bytes = dtype_bytes(d);
    }
    return 0;
bad:
    cmd_errorf("models", 0, "%s: %s", flag, why);
    free(why);
    return -1;
}

/* models --show M --kernels: the kernel list on a topology's GPU. */
static int
show_kernels(const struct model *m, const struct show_opts *so, int64_t mb,
             int64_t seq)
{
    char *cause = NULL;
    enum dtype d = DTYPE_BF16;
    if (so->dtype && dtype_parse(so->dtype, &d) != 0)
        d = DTYPE_BF16;   /* shape_from_opts has refused it already */
    int want = ATTN_AUTO;
    if (so->attention && (want = attn_kernel_parse(so->attention)) < 0) {
        return cmd_errorf("models", 0, "--attention: '%s' is not an "
                          "attention kernel (%s)", so->attention,
                          attn_kernel_choices);
    }
    enum float8_recipe float8 = FLOAT8_NONE;
    if (so->float8 != NULL
        && float8_parse(so->float8, "--float8", &float8, &cause) != 0) {
        return cmd_fail("models", cause, EXIT_USAGE);
    }
    enum loss_kind loss = LOSS_PLAIN;
    if (so->loss != NULL
        && loss_parse(so->loss, "--loss", &loss, &cause) != 0) {
        return cmd_fail("models", cause, EXIT_USAGE);
    }
    int rotary = 0;
    if (so->rotary != NULL
        && rotary_parse(so->rotary, "--rotary", &rotary, &cause) != 0) {
        return cmd_fail("models", cause, EXIT_USAGE);
    }
    int torch = TORCH_VERSION_DEFAULT;
    if (so->torch != NULL
        && torch_version_parse(so->torch, "--torch-version", &torch,
                               &cause) != 0) {
        return cmd_fail("models", cause, EXIT_USAGE);
    }
    struct topo *t = topo_load_sized(so->topology ? so->topology
                                                  : "dgx-a100-80g",
                                     0, 0, false, &cause);
    struct kernel_ctx ctx = {.micro_batch = mb, .seq_len = seq,
                             .act_bytes = dtype_bytes(d),
                             .compile = so->compile,
                             .layer_cls = m->layer_cls,
                             .float8 = float8,
                             .rotary = rotary,
                             .fused_loss = loss == LOSS_FUSED,
                             .native_loss = loss == LOSS_NATIVE,
                             .torch_version = torch};
    if (t != NULL && float8 != FLOAT8_NONE
        && !(t->peak_flops[DTYPE_FP8] > 0))
        cause = xasprintf("--float8 %s: %s has no float8 tensor cores "
                          "(give a Hopper topology, e.g. dgx-h100)",
                          so->float8, t->gpu_name);
    if (t == NULL || cause != NULL
        || kernel_attention_for(m, want, t, d, &ctx.attn, &cause) != 0) {
        cmd_error("models", cause, 0);
        free(cause);
        topo_free(t);
        return EXIT_USAGE;
    }
    kernel_print_model(m, t, &ctx, d, stdout);
    topo_free(t);
    return 0;
}

/* models --show: the module tree of SO->show with its costs, or with
 * --kernels the kernel list; the exit status. */
static int
show_model(const struct show_opts *so)
{
    int64_t mb, seq;
    int act_bytes;
    char *cause = NULL;
    if (shape_from_opts(so, &mb, &seq, &act_bytes) != 0)
        return EXIT_USAGE;
    struct model *m = model_load(so->show, &cause);
    if (m == NULL)
        return cmd_fail("models", cause, EXIT_USAGE);
    int rc = 0;
    if (so->kernels) {
        rc = show_kernels(m, so, mb, seq);
    } else if (so->topology || so->attention || so->compile || so->float8
               || so->loss || so->rotary) {
        cmd_error("models", "--topology, --attention, --compile, "
                  "--float8, --loss and --rotary go with --kernels", 0);
        rc = EXIT_USAGE;
    } else {
        struct model_costs mc;
        model_costs_build(m, mb, seq, act_bytes, &mc);
        catalog_print_tree_header(m, mb, seq, act_bytes, stdout);
        model_print_tree(m, &mc, stdout);
        free(mc.fwd_flops);
        free(mc.saved_bytes);
    }
    model_free(m);
    return rc;
}

static int
cmd_models(int argc, char **argv)
{
    struct show_opts so;
    int rc = parse_show(&cmd_models_entry, argc, argv, &so);
    if (rc != CMD_RUN)
        return rc;
    if (so.show)
        return show_model(&so);
    char *cause = NULL;
    catalog_print_models_header(stdout);
    for (int i = 0; i < builtin_n_files; i++) {
        const struct builtin_file *f = &builtin_files[i];
        if (strcmp(f->dir, "models") != 0)
            continue;
        struct model *m = model_load(f->name, &cause);
        if (m == NULL)
            return cmd_fail("models", cause, EXIT_SYSTEM);
        catalog_print_model(f, m, stdout);
        model_free(m);
    }
    return 0;
}

static int
cmd_topologies(int argc, char **argv)
{
    struct show_opts so;
    int rc = parse_show(&cmd_topologies_entry, argc, argv, &so);
    const char *show = so.show;
    if (rc != CMD_RUN)
        return rc;
    char *cause = NULL;
    if (show) {
        struct topo *t = topo_load(show, &cause);
        if (t == NULL || topo_validate(t, &cause) != 0) {
            cmd_error("topologies", cause, 0);
            free(cause);
            topo_free(t);
            return EXIT_USAGE;
        }
        topo_print(t, stdout);
        topo_free(t);
        return 0;
    }
    catalog_print_topologies_header(stdout);
    for (int i = 0; i < builtin_n_files; i++) {
        const struct builtin_file *f = &builtin_files[i];
        if (strcmp(f->dir, "topologies") != 0)
            continue;
        struct topo *t = topo_load(f->name, &cause);
        if (t == NULL)
            return cmd_fail("topologies", cause, EXIT_SYSTEM);
        catalog_print_topology(f, t, stdout);
        topo_free(t);
    }
    return 0;
}

const struct cmd_entry cmd_models_entry = {
    .name = "models",
    .usage = "[--show NAME|FILE]",
    .summary = "list built-in models or show one",
    .shortopts = ":hs:",
    .longopts = show_options,
    .exec = cmd_models,
    .help = cmd_models_help,
};

const struct cmd_entry cmd_topologies_entry = {
    .name = "topologies",
    .usage = "[--show NAME|FILE]",
    .summary = "list built-in topologies or show one",
    .shortopts = ":hs:",
    .longopts = show_options,
    .exec = cmd_topologies,
    .help = cmd_topologies_help,
};
