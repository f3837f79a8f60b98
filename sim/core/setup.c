/*
 * setup.c: option parsing and schedule construction (see setup.h).
 */
#include "setup.h"
#include "model_cache.h"
#include "coll.h"
#include "cost.h"
#include "units.h"
#include "xalloc.h"

#include <ctype.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

/* Flags whose value may be omitted (bare = true): the options whose
 * value the table writes "[BOOL]", or "[BOOL|N]" when a count may stand
 * there too (runconf.c). */
static int
is_optional_bool(const char *key)
{
    for (const struct config_option *o = config_options; o->key; o++)
        if (strcmp(o->key, key) == 0)
            return o->arg != NULL && strncmp(o->arg, "[BOOL", 5) == 0;
    return 0;
}

/* Whether ARG, the word after such a flag, is its value. */
static int
is_optional_value(const char *key, const char *arg)
{
    bool b;
    char *why = NULL;
    int ok = units_parse_bool(arg, &b, &why) == 0;
    free(why);
    for (const struct config_option *o = config_options; !ok && o->key; o++)
        if (strcmp(o->key, key) == 0 && strcmp(o->arg, "[BOOL|N]") == 0)
            ok = *arg != '\0' && strspn(arg, "0123456789") == strlen(arg);
    return ok;
}

static char *
dashed(const char *key)
{
    char *s = xstrdup(key);
    for (char *p = s; *p; p++)
        if (*p == '_')
            *p = '-';
    return s;
}

void
setup_print_options(FILE *out, bool with_output_files)
{
    for (const struct config_option *o = config_options; o->key; o++) {
        if (!with_output_files && config_is_output_file(o->key))
            continue;
        char *d = dashed(o->key);
        char lhs[96];
        snprintf(lhs, sizeof lhs, "--%s%s%s", d, o->arg ? " " : "",
                 o->arg ? o->arg : "");
        fprintf(out, "  %-40s %s\n", lhs, o->help);
        free(d);
    }
    fprintf(out, "  %-40s %s\n", "-h, --help", "show this help");
}

struct pending_opt {
    char *key;
    char *value;
    char *origin;
};

char *
setup_option_error(enum option_error e, const char *word)
{
    switch (e) {
    case OPTION_NEEDS_VALUE:
        return xasprintf("option '%s' needs a value", word);
    case OPTION_UNKNOWN:
        return xasprintf("unknown option '%s'", word);
    case OPTION_UNEXPECTED:
        break;
    }
    return xasprintf("unexpected argument '%s'", word);
}

const char *
setup_refused_option(char *const *argv, char buf[3])
{
    const char *word = argv[optind - 1];
    if (strncmp(word, "--", 2) == 0 || optopt <= ' ' || optopt >= 127)
        return word;
    buf[0] = '-';
    buf[1] = (char)optopt;
    buf[2] = '\0';
    return buf;
}

char *
setup_join_args(int argc, char *const *argv)
{
    size_t len = 1;
    for (int i = 0; i < argc; i++)
        len += strlen(argv[i]) + 1;
    char *s = xmalloc(len), *w = s;
    for (int i = 0; i < argc; i++)
        w += sprintf(w, "%s%s", i ? " " : "", argv[i]);
    *w = '\0';
    return s;
}

enum setup_status
setup_parse_args(struct run *r, const char *cmd, int argc, char **argv,
                 char **cause)
{
    memset(r, 0, sizeof *r);
    config_init(&r->cfg);
    r->command_line = setup_join_args(argc, argv);

    int n_opts = 0;
    for (const struct config_option *o = config_options; o->key; o++)
        n_opts++;
    struct option *longopts = xcalloc(n_opts + 2, sizeof *longopts);
    char **names = xcalloc(n_opts, sizeof(char *));
    for (int i = 0; i < n_opts; i++) {
        names[i] = dashed(config_options[i].key);
        longopts[i].name = names[i];
        longopts[i].has_arg = is_optional_bool(config_options[i].key)
                                  ? optional_argument : required_argument;
        longopts[i].val = 1000 + i;
    }
    longopts[n_opts].name = "help";
    longopts[n_opts].val = 'h';

    struct pending_opt *pend = xcalloc(argc + 1, sizeof *pend);
    int n_pend = 0;
    enum setup_status rc = SETUP_OK;
    const char *config_file = NULL;
    opterr = 0;
    optind = 1;
    int c, idx;
    while ((c = getopt_long(argc, argv, ":hm:t:n:g:c:", longopts, &idx))
           != -1) {
        const char *key = NULL;
        switch (c) {
        case 'h':
            rc = SETUP_HELP;
            goto out;
        case 'm': key = "model"; break;
        case 't': key = "topology"; break;
        case 'n': key = "nodes"; break;
        case 'g': key = "gpus_per_node"; break;
        case 'c': key = "config"; break;
        case ':':
        case '?': {
            char buf[3];
            *cause = setup_option_error(c == ':' ? OPTION_NEEDS_VALUE
                                                 : OPTION_UNKNOWN,
                                        setup_refused_option(argv, buf));
            rc = SETUP_USAGE;
            goto out;
        }
        default:
            key = config_options[c - 1000].key;
            break;
        }
        const char *val = optarg;
        /* "--no-sync true" as well as "--no-sync=true" and "--no-sync". */
        if (val == NULL && is_optional_bool(key) && optind < argc
            && is_optional_value(key, argv[optind]))
            val = argv[optind++];
        if (strcmp(key, "config") == 0) {
            config_file = val;
            continue;
        }
        char *d = dashed(key);
        pend[n_pend].key = xstrdup(key);
        pend[n_pend].value = val ? xstrdup(val) : NULL;
        pend[n_pend].origin = xasprintf("--%s", d);
        free(d);
        n_pend++;
    }
    if (optind < argc) {
        *cause = setup_option_error(OPTION_UNEXPECTED, argv[optind]);
        rc = SETUP_USAGE;
        goto out;
    }
    /* NCCL's environment variables first, as NCCL would read them; then
     * the run file; then flags override both. */
    static const char *const env_keys[][2] = {
        {"NCCL_ALGO", "nccl_algo"}, {"NCCL_PROTO", "nccl_proto"},
        {"NCCL_MIN_NCHANNELS", "nccl_min_nchannels"},
        {"NCCL_MAX_NCHANNELS", "nccl_max_nchannels"}};
    for (size_t i = 0;
         i < sizeof env_keys / sizeof env_keys[0] + NCCL_VAR_COUNT; i++) {
        /* env_keys, then NCCL_<VAR> for every nccl_var_names entry. */
        char env[64], key[64];
        if (i < sizeof env_keys / sizeof env_keys[0]) {
            snprintf(env, sizeof env, "%s", env_keys[i][0]);
            snprintf(key, sizeof key, "%s", env_keys[i][1]);
        } else {
            const char *name = nccl_var_names[i - sizeof env_keys
                                                  / sizeof env_keys[0]];
            snprintf(key, sizeof key, "nccl_%s", name);
            snprintf(env, sizeof env, "NCCL_%s", name);
            for (char *e = env; *e; e++)
                *e = (char)toupper((unsigned char)*e);
        }
        const char *v = getenv(env);
        if (v == NULL || *v == '\0')
            continue;
        char *origin = xasprintf("%s (environment)", env);
        int bad = config_set(&r->cfg, key, v, origin, cause);
        free(origin);
        if (bad) {
            rc = SETUP_BAD_VALUE;
            goto out;
        }
    }
    /* The run file next, then flags override it. */
    if (config_file && config_load_file(&r->cfg, config_file, cause) != 0) {
        rc = SETUP_BAD_VALUE;
        goto out;
    }
    for (int i = 0; i < n_pend; i++) {
        if (config_set(&r->cfg, pend[i].key, pend[i].value, pend[i].origin,
                       cause) != 0) {
            rc = SETUP_BAD_VALUE;
            goto out;
        }
    }
    if (config_validate(&r->cfg, cause) != 0)
        rc = SETUP_BAD_VALUE;
out:
    (void)cmd;
    for (int i = 0; i < n_pend; i++) {
        free(pend[i].key);
        free(pend[i].value);
        free(pend[i].origin);
    }
    free(pend);
    for (int i = 0; i < n_opts; i++)
        free(names[i]);
    free(names);
    free(longopts);
    return rc;
}

/* Resolve the NCCL settings: the version first, since how NCCL_ALGO is
 * read depends on it. */
static int
setup_nccl(struct run *r, char **cause)
{
    struct run_config *c = &r->cfg;
    char *why = NULL;
    nccl_config_init(&r->nccl);
    if (c->nccl_version
        && nccl_config_set_version(&r->nccl, c->nccl_version, &why) != 0)
        goto bad;
    if (c->nccl_algo && nccl_config_set_algo(&r->nccl, c->nccl_algo, &why))
        goto bad;
    if (c->nccl_proto && nccl_config_set_proto(&r->nccl, c->nccl_proto,
                                               &why))
        goto bad;
    r->nccl.min_channels = (int)c->nccl_min_nchannels;
    r->nccl.max_channels = (int)c->nccl_max_nchannels;
    for (int i = 0; i < NCCL_VAR_COUNT; i++)
        if (c->nccl_vars[i]
            && nccl_config_set_var(&r->nccl, nccl_var_names[i],
                                   c->nccl_vars[i], &why) != 0)
            goto bad;
    return 0;
bad:
    /* why names the NCCL variable or version, not where it was set. */
    *cause = config_blame(c, c->nccl_version && strstr(why, "NCCL_") == NULL
                                 ? "nccl_version"
                             : strncmp(why, "NCCL_PROTO", 10) == 0
                                 ? "nccl_proto" : "nccl_algo", why);
    return -1;
}

/* Post-forward meshes remembered by setup_check_collectives. */
#define CHECK_PF_SEEN 32

struct pf_mesh {
    int kind, redop, ranks, ranks_per_node;
};

/* NCCL refuses some settings only when a collective is launched (e.g.
 * NCCL_ALGO=Tree for all-gather in 2.24+): try each kind the schedule
 * issues, on its own process group, as a real run would on its first
 * step. */
static int
setup_check_collectives(const struct run *r, char **cause)
{
    const struct sched *s = r->sched;
    int seen[OP_KIND_COUNT][PG_COUNT] = {{0}};
    /* FSDP2's post-forward meshes may differ by group: each distinct
     * (kind, reduction, mesh) once. */
    struct pf_mesh pf[CHECK_PF_SEEN];
    int n_pf = 0;
    for (int i = 0; i < s->n_ops; i++) {
        const struct sched_op *op = &s->ops[i];
        if (!sched_op_is_collective(op)
            || (op->pg != PG_POST_FORWARD && seen[op->kind][op->pg]++))
            continue;
        struct coll_group g;
        struct coll_result res;
        cost_op_group(s, op, &g);
        if (op->pg == PG_POST_FORWARD) {
            int k = 0;
            while (k < n_pf
                   && !(pf[k].kind == (int)op->kind
                        && pf[k].redop == (int)op->redop
                        && pf[k].ranks == g.ranks
                        && pf[k].ranks_per_node == g.ranks_per_node))
                k++;
            if (k < n_pf)
                continue;
            if (n_pf < CHECK_PF_SEEN)
                pf[n_pf++] = (struct pf_mesh){(int)op->kind, (int)op->redop,
                                              g.ranks, g.ranks_per_node};
        }
        enum coll_op co = cost_coll_op(op->kind);
        if (coll_estimate(r->topo, &s->nccl, co, op->redop, &g,
                          (double)op->bytes, &res, cause) != 0)
            return -1;
    }
    return 0;
}

static int
setup_prepare_run(struct run *r, char **cause)
{
    if (setup_prepare_plan(r, cause) != 0)
        return -1;
    return setup_build_sched(r, cause);
}

int
setup_prepare_plan(struct run *r, char **cause)
{
    struct run_config *c = &r->cfg;
    char *why = NULL;

    if (r->models != NULL)
        r->model = model_cache_get(r->models, c->model, &why);
    else
        r->model = r->own_model = model_load(c->model, &why);
    if (r->model == NULL) {
        *cause = config_blame(c, "model", why);
        return -1;
    }
    r->topo = topo_load(c->topology, &why);
    if (r->topo == NULL) {
        *cause = config_blame(c, "topology", why);
        return -1;
    }
    /* Measured values first, so that --set can still override them. */
    if (c->calibration != NULL &&
        topo_apply_calibration(r->topo, c->calibration, &why) != 0) {
        *cause = xasprintf("--calibration: %s", why);
        free(why);
        return -1;
    }
    for (int i = 0; i < c->n_sets; i++) {
        if (topo_set(r->topo, c->sets[i], &why) != 0) {
            /* topo_set's messages start "--set ASSIGNMENT: ". */
            *cause = config_blame_origin(config_set_origin(c, i), "--set",
                                         why);
            return -1;
        }
    }
    if (c->nodes > 0)
        r->topo->nodes = c->nodes;
    if (c->gpus_per_node > 0)
        r->topo->gpus_per_node = c->gpus_per_node;
    if (topo_validate(r->topo, &why) != 0) {
        *cause = why;
        return -1;
    }
    /* A dtype the GPU has no peak for would silently run at the fp32
     * rate: refuse it instead of printing a result for another GPU. */
    enum dtype pd = config_param_dtype(c);
    if (r->topo->peak_flops[pd] <= 0) {
        *cause = xasprintf("--param-dtype %s: GPU '%s' of topology '%s' has "
                           "no %s peak (gpu.%s = 0); use a dtype it has or "
                           "give one with --set gpu.%s=...",
                           dtype_name(pd), r->topo->gpu_name
                               ? r->topo->gpu_name : "?",
                           r->topo->name ? r->topo->name : "?",
                           dtype_name(pd), dtype_name(pd), dtype_name(pd));
        return -1;
    }

    int world = r->topo->nodes * r->topo->gpus_per_node;
    if (sharding_is_hybrid(c->sharding) && r->topo->nodes < 2) {
        *cause = xasprintf("--sharding-strategy %s: hybrid sharding shards "
                           "within a node and replicates across nodes, and "
                           "1 node leaves no replicate group (use "
                           "FULL_SHARD, which is the same on one node, or "
                           "--nodes 2 or more)", sharding_name(c->sharding));
        return -1;
    }
    if (sharding_is_hybrid(c->sharding) && r->topo->gpus_per_node == 1) {
        /* _init_core_state clamps on the shard group's size, which for
         * the hybrid strategies is the intra-node group: 1 rank here.
         * The handles then take the NO_SHARD path, whose all-reduce runs
         * on that 1-rank group, and the replicate group is never used. */
        fprintf(stderr, "fsdpsim: %s with 1 GPU per node: the shard group "
                "(one node) has 1 rank, so FSDP switches to NO_SHARD on "
                "it, as PyTorch does\n", sharding_name(c->sharding));
        fprintf(stderr, "fsdpsim: warning: then each gradient is "
                "all-reduced over that 1-rank group only: the %d nodes "
                "never synchronise gradients and their replicas diverge "
                "(use FULL_SHARD or NO_SHARD across nodes, or 2 or more "
                "GPUs per node)\n", r->topo->nodes);
        c->sharding = SHARDING_NO_SHARD;
        c->no_shard_one_rank = true;
    }
    if (world == 1 && c->sharding != SHARDING_NO_SHARD
        && c->sharding != SHARDING_DDP && c->fsdp_version != 2) {
        /* _init_core_state: FSDP clamps to NO_SHARD on one rank. */
        fprintf(stderr, "fsdpsim: world size 1: FSDP switches %s to "
                "NO_SHARD, as PyTorch does\n", sharding_name(c->sharding));
        c->sharding = SHARDING_NO_SHARD;
    }
    if (c->ac != AC_NONE && c->layer_cls == NULL
        && r->model->layer_cls == NULL) {
        *cause = xasprintf("--activation-checkpointing %s: model '%s' names "
                           "no layer class to checkpoint; give "
                           "--transformer-layer-cls CLASS", ac_name(c->ac),
                           r->model->name);
        return -1;
    }
    if (c->float8 != FLOAT8_NONE
        && (r->topo->arch < GPU_ARCH_HOPPER
            || !(r->topo->peak_flops[DTYPE_FP8] > 0))) {
        /* torch._scaled_mm needs float8 tensor cores (sm_89 and newer;
         * torchao's float8 training checks for them). */
        *cause = xasprintf("--float8 %s: %s has no float8 tensor cores "
                           "(torch._scaled_mm needs Hopper or newer, and "
                           "the topology an fp8 peak in [gpu] fp8)",
                           float8_name(c->float8), r->topo->gpu_name);
        return -1;
    }
    if (setup_nccl(r, cause) != 0)
        return -1;
    int shard = c->sharding == SHARDING_NO_SHARD ? 1
                : sharding_is_hybrid(c->sharding) ? r->topo->gpus_per_node
                                                  : world;
    int replicate = 1;
    if (c->fsdp_version == 2
        && sched_fsdp2_mesh(c, world, r->topo->gpus_per_node, &shard,
                            &replicate, cause) != 0)
        return -1;
    int pg = c->sharding == SHARDING_NO_SHARD
                 ? (c->no_shard_one_rank ? 1 : world) : shard;
    return wrap_plan_build(r->model, c, shard, pg, &r->plan, cause) != 0
               ? -1 : 0;
}

int
setup_build_sched(struct run *r, char **cause)
{
    sched_free(r->sched);
    r->sched = sched_build(r->model, &r->plan, &r->cfg, r->topo, cause);
    if (r->sched == NULL)
        return -1;
    r->sched->nccl = r->nccl;
    return setup_check_collectives(r, cause);
}

int
setup_prepare(struct run *r, char **cause)
{
    if (setup_prepare_run(r, cause) == 0)
        return 0;
    /* A message that starts with a flag ("--wrap: ...") names the run
     * file's line instead when the value came from one. */
    *cause = config_blame(&r->cfg, NULL, *cause);
    return -1;
}

void
setup_free(struct run *r)
{
    sched_free(r->sched);
    wrap_plan_free(&r->plan);
    topo_free(r->topo);
    model_free(r->own_model);
    config_free(&r->cfg);
    free(r->command_line);
    memset(r, 0, sizeof *r);
}
