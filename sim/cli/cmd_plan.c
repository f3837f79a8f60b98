/*
 * cmd_plan.c: `fsdpsim plan`, the cluster to buy or rent for a token
 * budget and a deadline: this file parses the options and calls the
 * search (plan.c, plan_finalists.c) and the printing, plot and report
 * (plan_print.c).
 */
#define _POSIX_C_SOURCE 200809L
#include "cmd.h"
#include "net.h"
#include "plan.h"
#include "plan_print.h"
#include "cmd_search.h"
#include "search.h"
#include "setup.h"
#include "units.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

/* The default global batch: 4M tokens (2^22), LLaMA's and Llama 2's
 * batch (Touvron et al. 2023, section 2.2), 2048 sequences of 2048. */
#define PLAN_DEFAULT_BATCH_TOKENS 4194304
#define PLAN_DEFAULT_MAX_NODES 1024
#define PLAN_MAX_GPUS 16

/* Help: the usage lines and what plan computes, before its options. */
static void
plan_help_method(FILE *out)
{
    fprintf(out,
            "usage: fsdpsim plan --model M --tokens N [--deadline D] "
            "[--budget $]\n"
            "                    --gpu TOPOLOGY [--gpu ...]\n"
            "                    [--price TOPOLOGY=$X/gpu-hour|$Y/node]\n"
            "                    [--spot-price TOPOLOGY=$X/gpu-hour] "
            "[--preemption-rate R]\n"
            "                    [--mtbf-per-gpu D | --mtbf-per-node D] "
            "[--checkpoint-bandwidth B]\n"
            "                    [--restart-time D] "
            "[--network simgrid [--finalists N]]\n"
            "                    [--global-batch-tokens N] [--headroom 10%%] "
            "[--max-nodes N]\n"
            "                    [--plot PREFIX] [--report FILE.html] "
            "[simulate options]\n\n"
            "For each GPU type, the time and cost of training on N tokens "
            "at cluster sizes\n1, 2, 3, 4, 6, 8, 12, ... nodes: the "
            "smallest cluster that meets the deadline\nand fits in memory, "
            "the cost-optimal one, and the knee where adding nodes stops\n"
            "paying.  Each size is one simulated training step at a fixed "
            "global batch:\nmicro-batch (1, 2, 4) and activation "
            "checkpointing (none, full) are searched,\nthe fastest setting "
            "that fits with the headroom wins, and accumulation steps\n"
            "make up the batch (micro_batch x seq_len x GPUs x grad_accum "
            ">= the batch).\nTime to train = tokens / (tokens per step / "
            "step time).  Steps of more than\n8 micro-batches are simulated "
            "at 4 and 8 and extended linearly (each further\nmicro-batch "
            "repeats the same ops).  A cluster with more GPUs than the "
            "batch has\nsequences is at its batch limit; a setting that "
            "rounds the batch up by more\nthan 25%% is shown but never "
            "picked.  Expected days and cost add failures:\nan interruption "
            "every MTBF / GPUs, a checkpoint of the model and optimizer\n"
            "state every sqrt(2 x checkpoint time x that MTBF) "
            "(Young/Daly), and per\ninterruption a restart plus the work "
            "since the last checkpoint; the deadline\nand the cost-optimal "
            "size use them.  MFU is model "
            "FLOPs (PaLM's 6N + 12LHQT per\ntoken, Chowdhery et al. 2022 "
            "appendix B) over the GPU's dense peak.\n\n");
}

static void
cmd_plan_help(FILE *out)
{
    plan_help_method(out);
    fprintf(out,
            "options:\n"
            "  --tokens N               tokens to train on, e.g. 2T "
            "(required)\n"
            "  --deadline D             at most this long: 30d, 12h, 2w\n"
            "  --budget $               at most this cost, e.g. 5M "
            "(needs --price)\n"
            "  --gpu TOPOLOGY           a GPU type: built-in topology or "
            "file (repeatable;\n"
            "                           default the --topology option's)\n"
            "  --price T=$X/gpu-hour    renting T costs X per GPU-hour\n"
            "  --price T=$Y/node        buying T costs Y per node\n"
            "  --strategies S,...       plan each GPU type once per "
            "strategy, side by side,\n"
            "                           e.g. FULL_SHARD,DDP (default: "
            "the --sharding-strategy)\n"
            "  --spot-price T=$X/gpu-hour  Spot capacity of T costs X per "
            "GPU-hour: adds the\n"
            "                           expected Spot days and cost and "
            "the cheapest size\n"
            "  --preemption-rate R      Spot preemptions per node: "
            "20%%/month, 0.01/h, 1/day\n"
            "                           (default 20%%/month, AWS Spot "
            "Advisor's worst band)\n"
            "  --mtbf-per-gpu D         mean time between failures of one "
            "GPU, or none\n"
            "                           (default 50677h: Llama 3, 419 "
            "interruptions in\n"
            "                           54 days on 16,384 GPUs)\n"
            "  --mtbf-per-node D        the same per node (= per GPU / "
            "GPUs per node)\n"
            "  --checkpoint-bandwidth B checkpoint write bandwidth per "
            "node, e.g. 2GBps\n"
            "                           (default 0.98 GB/s: Llama 3's 2 "
            "TB/s over 2,048 nodes)\n"
            "  --restart-time D         lost per interruption besides the "
            "work since the\n"
            "                           last checkpoint (default 10min)\n"
            "  --network simgrid        rank every size with the "
            "analytic model, then simulate\n"
            "                           the best few again on SimGrid "
            "(with --background-load,\n"
            "                           --platform) and rank those by "
            "it (exit 2 without SimGrid)\n"
            "  --finalists N            how many per GPU type (default "
            "%d, at most %d)\n"
            "  --global-batch-tokens N  tokens per optimizer step "
            "(default 4194304 = 4M)\n"
            "  --headroom P             device memory kept free, e.g. "
            "10%% (default 10%%)\n"
            "  --max-nodes N            largest cluster tried (default "
            "%d)\n"
            "  --plot PREFIX            plot time to train and cost "
            "against GPUs:\n"
            "                           PREFIX-plan.png (gnuplot)\n"
            "  --term png|svg           image format (default png)\n"
            "  --report FILE.html       write a self-contained HTML "
            "report\n"
            "  -j, --jobs N             points simulated in parallel "
            "(default: online CPUs)\n"
            "  -h, --help               show this help\n\n"
            "simulate options (the base of every point; plan sets "
            "--topology, --nodes,\n--micro-batch, --grad-accum and "
            "--activation-checkpointing, and defaults\n--param-dtype to "
            "bf16):\n", PLAN_DEFAULT_FINALISTS, PLAN_MAX_FINALISTS,
            PLAN_DEFAULT_MAX_NODES);
    setup_print_options(out, false);
    fprintf(out, "\nCtrl-C stops the search; nothing is written.\n"
            "exit status: 0 ok, 1 no GPU type meets the deadline and "
            "budget, 2 bad input,\n3 a file could not be written or "
            "gnuplot failed, 130 interrupted.\n");
}

struct plan_cli {
    const char *tokens, *deadline, *budget, *batch, *headroom, *max_nodes;
    const char *plot, *term, *report, *jobs, *strategies;
    const char *mtbf_gpu, *mtbf_node, *ckpt_bw, *restart, *preempt;
    const char *network, *background_load, *platform, *finalists;
    struct search_list gpu, price, spot;
};

/* Split argv into plan's options and the base simulate options: CMD_RUN,
 * or the exit status after the help or the message. */
static int
parse_cli(int argc, char **argv, struct plan_cli *o, char **base,
          int *base_argc)
{
    *base_argc = 0;
    base[(*base_argc)++] = argv[0];
    /* Mixed precision is what anyone training at this scale uses; a
     * later --param-dtype overrides it. */
    base[(*base_argc)++] = unconst("--param-dtype=bf16");
    const struct search_opt own[] = {
        {"--tokens", NULL, &o->tokens, NULL},
        {"--deadline", NULL, &o->deadline, NULL},
        {"--budget", NULL, &o->budget, NULL},
        {"--global-batch-tokens", NULL, &o->batch, NULL},
        {"--headroom", NULL, &o->headroom, NULL},
        {"--max-nodes", NULL, &o->max_nodes, NULL},
        {"--plot", NULL, &o->plot, NULL},
        {"--term", NULL, &o->term, NULL},
        {"--report", NULL, &o->report, NULL},
        {"--jobs", "-j", &o->jobs, NULL},
        {"--strategies", NULL, &o->strategies, NULL},
        {"--mtbf-per-gpu", NULL, &o->mtbf_gpu, NULL},
        {"--mtbf-per-node", NULL, &o->mtbf_node, NULL},
        {"--checkpoint-bandwidth", NULL, &o->ckpt_bw, NULL},
        {"--restart-time", NULL, &o->restart, NULL},
        {"--preemption-rate", NULL, &o->preempt, NULL},
        /* SimGrid's options go to the finalists alone (plan_finalists):
         * the grid is ranked with the analytic model. */
        {"--network", NULL, &o->network, NULL},
        {"--background-load", NULL, &o->background_load, NULL},
        {"--background_load", NULL, &o->background_load, NULL},
        {"--platform", NULL, &o->platform, NULL},
        {"--finalists", NULL, &o->finalists, NULL},
        {"--gpu", NULL, NULL, &o->gpu},
        {"--price", NULL, NULL, &o->price},
        {"--spot-price", NULL, NULL, &o->spot}};
    int rc = search_split_args(&cmd_plan_entry, argc, argv, own,
                               (int)(sizeof own / sizeof own[0]), base,
                               base_argc);
    if (rc != CMD_RUN)
        return rc;
    if (o->tokens == NULL)
        return cmd_errorf("plan", 1, "--tokens is required: how many tokens "
                          "to train on, e.g. --tokens 2T");
    if (o->term && strcmp(o->term, "png") != 0 && strcmp(o->term, "svg"))
        return cmd_errorf("plan", 0, "--term: '%s' is not png or svg",
                          o->term);
    return CMD_RUN;
}

/* A duration option that may also be "none" (*s = 0). */
static int
duration_or_none(const char *opt, const char *v, double *s, char **cause)
{
    if (strcmp(v, "none") == 0 || strcmp(v, "inf") == 0) {
        *s = 0;
        return 0;
    }
    return plan_parse_duration(opt, v, s, cause);
}

/* The failure model's options, defaults in plan.h; 0 or -1 with *cause. */
static int
build_goodput(const struct plan_cli *c, struct plan_opts *o, char **cause)
{
    o->mtbf_gpu_s = PLAN_DEFAULT_MTBF_GPU_H * 3600;
    o->ckpt_bw_node = PLAN_DEFAULT_CKPT_BW_NODE;
    o->restart_s = PLAN_DEFAULT_RESTART_S;
    o->preempt_node_s = PLAN_DEFAULT_PREEMPT_NODE_H / 3600;
    if (c->mtbf_gpu && c->mtbf_node) {
        *cause = xasprintf("--mtbf-per-gpu and --mtbf-per-node say the "
                           "same thing; give one");
        return -1;
    }
    if (c->mtbf_gpu && duration_or_none("--mtbf-per-gpu", c->mtbf_gpu,
                                        &o->mtbf_gpu_s, cause) != 0)
        return -1;
    if (c->mtbf_node) {
        double node_s;
        if (duration_or_none("--mtbf-per-node", c->mtbf_node, &node_s,
                             cause) != 0)
            return -1;
        /* A node fails when any of its GPUs does: per GPU, the MTBF is
         * the node's times its GPUs (the first type's, when several). */
        o->mtbf_gpu_s = node_s * o->gpus[0].gpus_per_node;
    }
    if (c->ckpt_bw && units_parse_bandwidth(c->ckpt_bw, &o->ckpt_bw_node,
                                            cause) != 0) {
        char *m = xasprintf("--checkpoint-bandwidth: %s (per node, e.g. "
                            "--checkpoint-bandwidth 2GBps)", *cause);
        free(*cause);
        *cause = m;
        return -1;
    }
    if (c->ckpt_bw && !(o->ckpt_bw_node > 0)) {
        *cause = xasprintf("--checkpoint-bandwidth: '%s' is not above 0",
                           c->ckpt_bw);
        return -1;
    }
    if (c->restart) {
        if (strcmp(c->restart, "0") == 0)
            o->restart_s = 0;
        else if (plan_parse_duration("--restart-time", c->restart,
                                     &o->restart_s, cause) != 0)
            return -1;
    }
    if (c->preempt && plan_parse_rate("--preemption-rate", c->preempt,
                                      &o->preempt_node_s, cause) != 0)
        return -1;
    return 0;
}

/* A run file (--config) that says network = simgrid asks what the flag
 * asks, but its settings reach every point of the grid, which plan ranks
 * with the analytic model: the grid's points override them
 * (o->grid_args: --network=analytic, no background load), and the
 * finalists get them back in o->sg_args.  BASE is the base run with the
 * flag's --network=simgrid, so a run file's background_load reaches the
 * finalists under the flag too.  A run file's platform cannot be
 * taken back from a point (a path has no "none"): it must come as the
 * --platform flag, which reaches the finalists alone.  0 or -1 with
 * *cause. */
static int
grid_stays_analytic(const struct run *base, struct plan_opts *o,
                    char **cause)
{
    if (base->cfg.platform_path) {
        *cause = xasprintf("the run file's platform = %s: plan ranks every "
                           "size with the analytic model and gives a "
                           "SimGrid platform to its finalists alone; give "
                           "it as --platform %s with --network simgrid "
                           "instead", base->cfg.platform_path,
                           base->cfg.platform_path);
        return -1;
    }
    if (base->cfg.network != NETWORK_SIMGRID)
        return 0;           /* (then validation refused a background load) */
    o->grid_args = xcalloc(2, sizeof *o->grid_args);
    o->grid_args[o->n_grid_args++] = xstrdup("--network=analytic");
    if (base->cfg.background_load > 0)
        o->grid_args[o->n_grid_args++] = xstrdup("--background-load=0");
    return 0;
}

/* --network simgrid (or a run file's network = simgrid), its options and
 * --finalists; 0 or -1 with *cause. */
static int
build_finalists(const struct plan_cli *c, struct plan_opts *o,
                const struct run *base, char **cause)
{
    if (grid_stays_analytic(base, o, cause) != 0)
        return -1;
    const char *network = c->network;
    if (network == NULL && base->cfg.network == NETWORK_SIMGRID)
        network = "simgrid";
    if (network == NULL || !strcmp(network, "analytic")) {
        const char *alone = c->finalists         ? "--finalists"
                            : c->background_load ? "--background-load"
                            : c->platform        ? "--platform"
                                                 : NULL;
        if (alone != NULL) {
            *cause = xasprintf("%s: only used with --network simgrid, "
                               "which simulates plan's finalists again on "
                               "SimGrid (add --network simgrid)", alone);
            return -1;
        }
        return 0;
    }
    if (strcmp(network, "simgrid") != 0) {
        *cause = xasprintf("--network: '%s' is not analytic or simgrid",
                           network);
        return -1;
    }
    int64_t v = PLAN_DEFAULT_FINALISTS;
    if (c->finalists && units_parse_count(c->finalists, 1,
                                          PLAN_MAX_FINALISTS, &v,
                                          cause) != 0) {
        char *m = xasprintf("--finalists: %s", *cause);
        free(*cause);
        *cause = m;
        return -1;
    }
    char *why = NULL;
    if (net_simgrid_usable(&why) != 0) {
        *cause = why;           /* "--network simgrid: cannot load ..." */
        return -1;
    }
    o->finalists = (int)v;
    o->sg_args = xcalloc(3, sizeof *o->sg_args);
    o->sg_args[o->n_sg_args++] = xstrdup("--network=simgrid");
    if (c->background_load)
        o->sg_args[o->n_sg_args++] = xasprintf("--background-load=%s",
                                               c->background_load);
    else if (base->cfg.background_load > 0)
        /* The run file's, which the grid's points set to 0. */
        o->sg_args[o->n_sg_args++] = xasprintf("--background-load=%.17g",
                                               base->cfg.background_load);
    if (c->platform)
        o->sg_args[o->n_sg_args++] = xasprintf("--platform=%s",
                                               c->platform);
    return 0;
}

/* The first --gpu entry TOPO names (its topology or GPU name), or -1. */
static int
plan_gpu_index(const struct plan_opts *o, const char *topo)
{
    for (int j = 0; j < o->n_gpus; j++)
        if (strcmp(o->gpus[j].topology, topo) == 0
            || strcmp(o->gpus[j].name, topo) == 0)
            return j;
    return -1;
}

/* Are entries J and K the same GPU type (under each of --strategies)? */
static int
same_gpu(const struct plan_opts *o, int j, int k)
{
    return k == j || strcmp(o->gpus[k].topology, o->gpus[j].topology) == 0;
}

/* "FLAG: CAUSE" in place of *cause. */
static void
prefix_cause(const char *flag, char **cause)
{
    char *m = xasprintf("%s: %s", flag, *cause);
    free(*cause);
    *cause = m;
}

/* The run's size: tokens, deadline, budget, batch, headroom, the most
 * nodes and jobs; 0 or -1 with *cause. */
static int
build_sizes(const struct plan_cli *c, struct plan_opts *o,
            const struct run *base, char **cause)
{
    int64_t v;
    if (units_parse_count(c->tokens, 1, INT64_MAX / 2, &v, cause) != 0) {
        char *m = xasprintf("--tokens: %s; write e.g. --tokens 2T or "
                            "--tokens 300B", *cause);
        free(*cause);
        *cause = m;
        return -1;
    }
    o->tokens = (double)v;
    if (c->deadline && plan_parse_duration("--deadline", c->deadline,
                                           &o->deadline_s, cause) != 0)
        return -1;
    if (c->budget && plan_parse_usd("--budget", c->budget, &o->budget_usd,
                                    cause) != 0)
        return -1;
    o->seq_len = base->cfg.seq_len;
    int64_t batch = PLAN_DEFAULT_BATCH_TOKENS;
    if (c->batch && units_parse_count(c->batch, 1, PLAN_MAX_BATCH_TOKENS,
                                      &batch, cause) != 0) {
        prefix_cause("--global-batch-tokens", cause);
        return -1;
    }
    if (batch < o->seq_len) {
        *cause = xasprintf("--global-batch-tokens: %lld tokens is less than "
                           "one sequence of %lld (--seq-len); a step trains "
                           "on whole sequences", (long long)batch,
                           (long long)o->seq_len);
        return -1;
    }
    o->global_batch_seqs = (batch + o->seq_len - 1) / o->seq_len;
    o->headroom = 0.10;
    if (c->headroom && search_parse_percent("--headroom", c->headroom,
                                            &o->headroom, cause) != 0)
        return -1;
    o->max_nodes = PLAN_DEFAULT_MAX_NODES;
    if (c->max_nodes) {
        if (units_parse_count(c->max_nodes, 1, 100000, &v, cause) != 0) {
            prefix_cause("--max-nodes", cause);
            return -1;
        }
        o->max_nodes = (int)v;
    }
    if (c->jobs) {
        if (units_parse_count(c->jobs, 1, BATCH_MAX_JOBS, &v, cause) != 0) {
            prefix_cause("--jobs", cause);
            return -1;
        }
        o->jobs = (int)v;
    }
    return 0;
}

/* The most --strategies. */
#define PLAN_MAX_STRATEGIES 8

/* --strategies A,B into STRAT (*n of them, caller frees each): each GPU
 * type planned once per strategy, side by side (e.g. FULL_SHARD,DDP).
 * 0 or -1 with *cause (STRAT then empty). */
static int
parse_strategies(const char *list_s, char **strat, int *n, char **cause)
{
    *n = 0;
    if (list_s == NULL)
        return 0;
    char *list = xstrdup(list_s), *save = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        struct run_config probe;
        config_init(&probe);
        char *why = NULL;
        int bad = config_set(&probe, "sharding_strategy", tok,
                             "--strategies", &why);
        config_free(&probe);
        if (bad || *n == PLAN_MAX_STRATEGIES) {
            for (int k = 0; k < *n; k++)
                free(strat[k]);
            *n = 0;
            free(list);
            *cause = bad ? why : xstrdup("--strategies: at most 8");
            return -1;
        }
        strat[(*n)++] = xstrdup(tok);
    }
    free(list);
    return 0;
}

/* o->gpus: each --gpu (else the base run's topology) once per strategy
 * of STRAT; 0 or -1 with *cause. */
static int
build_gpus(const struct plan_cli *c, struct plan_opts *o,
           const struct run *base, char **strat, int n_strat, char **cause)
{
    int per_gpu = n_strat ? n_strat : 1;
    int n = (c->gpu.n ? c->gpu.n : 1) * per_gpu;
    if (n > PLAN_MAX_GPUS) {
        *cause = xasprintf("--gpu: %d GPU types, at most %d", n,
                           PLAN_MAX_GPUS);
        return -1;
    }
    o->gpus = xcalloc(n, sizeof *o->gpus);
    for (int i = 0; i < n; i++) {
        const char *name = c->gpu.n ? c->gpu.v[i / per_gpu]
                                    : base->cfg.topology;
        struct topo *t = topo_load(name, cause);
        if (t == NULL) {
            char *m = xasprintf("--gpu %s: %s", name, *cause);
            free(*cause);
            *cause = m;
            return -1;
        }
        struct plan_gpu *g = &o->gpus[o->n_gpus++];
        g->topology = xstrdup(name);
        if (n_strat) {
            g->strategy = xstrdup(strat[i % per_gpu]);
            g->name = xasprintf("%s [%s]", t->name, g->strategy);
        } else {
            g->name = xstrdup(t->name);
        }
        g->gpu_name = xstrdup(t->gpu_name ? t->gpu_name : "GPU");
        g->gpus_per_node = base->cfg.gpus_per_node ? base->cfg.gpus_per_node
                                                   : t->gpus_per_node;
        topo_free(t);
    }
    return 0;
}

/* --price TOPOLOGY=$X/gpu-hour (or /node) onto each strategy's entry of
 * that GPU type; 0 or -1 with *cause. */
static int
apply_prices(const struct plan_cli *c, struct plan_opts *o, char **cause)
{
    for (int i = 0; i < c->price.n; i++) {
        char *topo;
        enum plan_price_kind kind;
        double usd;
        if (plan_parse_price(c->price.v[i], &topo, &kind, &usd, cause) != 0)
            return -1;
        int j = plan_gpu_index(o, topo);
        if (j < 0) {
            *cause = xasprintf("--price %s: '%s' is not one of the --gpu "
                               "types (add --gpu %s)", c->price.v[i], topo,
                               topo);
            free(topo);
            return -1;
        }
        for (int k = j; k < o->n_gpus; k++)
            if (same_gpu(o, j, k)) {
                o->gpus[k].price_kind = kind;
                o->gpus[k].price_usd = usd;
            }
        free(topo);
    }
    return 0;
}

/* --spot-price TOPOLOGY=$X/gpu-hour, likewise; 0 or -1 with *cause. */
static int
apply_spot_prices(const struct plan_cli *c, struct plan_opts *o,
                  char **cause)
{
    for (int i = 0; i < c->spot.n; i++) {
        char *topo;
        enum plan_price_kind kind;
        double usd;
        if (plan_parse_price(c->spot.v[i], &topo, &kind, &usd, cause)
            != 0) {
            /* plan_parse_price speaks of --price. */
            if (strncmp(*cause, "--price ", 8) == 0) {
                char *m = xasprintf("--spot-price %s", *cause + 8);
                free(*cause);
                *cause = m;
            }
            return -1;
        }
        int j = plan_gpu_index(o, topo);
        if (kind != PLAN_PRICE_GPU_HOUR || j < 0) {
            *cause = kind != PLAN_PRICE_GPU_HOUR
                         ? xasprintf("--spot-price %s: Spot capacity is "
                                     "rented: write TOPOLOGY=$X/gpu-hour",
                                     c->spot.v[i])
                         : xasprintf("--spot-price %s: '%s' is not one of "
                                     "the --gpu types (add --gpu %s)",
                                     c->spot.v[i], topo, topo);
            free(topo);
            return -1;
        }
        for (int k = j; k < o->n_gpus; k++)
            if (same_gpu(o, j, k))
                o->gpus[k].spot_usd = usd;
        free(topo);
    }
    return 0;
}

/* Turn the text options into plan_opts; 0 or EXIT_USAGE after the
 * message. */
static int
build_opts(const struct plan_cli *c, struct plan_opts *o,
           const struct run *base)
{
    char *cause = NULL;
    char *strat[PLAN_MAX_STRATEGIES];
    int n_strat = 0;
    if (build_sizes(c, o, base, &cause) != 0
        || parse_strategies(c->strategies, strat, &n_strat, &cause) != 0)
        goto bad;
    int rc = build_gpus(c, o, base, strat, n_strat, &cause);
    for (int k = 0; k < n_strat; k++)
        free(strat[k]);
    if (rc != 0 || apply_prices(c, o, &cause) != 0
        || apply_spot_prices(c, o, &cause) != 0
        || build_goodput(c, o, &cause) != 0)
        goto bad;
    if (build_finalists(c, o, base, &cause) != 0)
        goto bad;
    if (o->budget_usd > 0) {
        for (int i = 0; i < o->n_gpus; i++)
            if (o->gpus[i].price_kind == PLAN_PRICE_NONE) {
                cause = xasprintf("--budget needs a price for every GPU "
                                  "type: add --price %s=$X/gpu-hour or "
                                  "--price %s=$Y/node", o->gpus[i].name,
                                  o->gpus[i].name);
                goto bad;
            }
    }
    return 0;
bad:
    return cmd_fail("plan", cause, EXIT_USAGE);
}

static void
opts_free(struct plan_opts *o)
{
    for (int i = 0; i < o->n_gpus; i++) {
        free(o->gpus[i].topology);
        free(o->gpus[i].name);
        free(o->gpus[i].gpu_name);
        free(o->gpus[i].strategy);
    }
    free(o->gpus);
    for (int i = 0; i < o->n_sg_args; i++)
        free(o->sg_args[i]);
    free(o->sg_args);
    for (int i = 0; i < o->n_grid_args; i++)
        free(o->grid_args[i]);
    free(o->grid_args);
}

static int
cmd_plan(int argc, char **argv)
{
    struct plan_cli c = {.term = "png"};
    struct plan_opts o = {0};
    struct plan_result r = {0};
    struct run base_run;
    int have_base = 0, status = 0;
    char **base = xcalloc(argc + 2, sizeof *base);
    int rc = parse_cli(argc, argv, &c, base, &o.base_argc);
    o.base = base;
    if (rc != CMD_RUN) {
        status = rc;
        goto out;
    }
    /* The base run as the finalists see it: --network simgrid, which
     * plan keeps from the grid's points, lets a run file's SimGrid
     * settings (background_load) through. */
    char **seen = xcalloc((size_t)o.base_argc + 2, sizeof *seen);
    memcpy(seen, base, sizeof *seen * (size_t)o.base_argc);
    int n_seen = o.base_argc;
    if (c.network && strcmp(c.network, "simgrid") == 0)
        seen[n_seen++] = unconst("--network=simgrid");
    status = search_check_base("plan", "simulates many points", n_seen,
                               seen);
    if (status == 0) {
        char *cause = NULL;
        struct search_args a;
        search_args_init(&a, n_seen, seen);
        setup_parse_args(&base_run, "plan", a.argc, a.argv, &cause);
        search_args_free(&a);
        free(cause);
        have_base = 1;
    }
    free(seen);
    if (status != 0)
        goto out;
    if (build_opts(&c, &o, &base_run) != 0) {
        status = EXIT_USAGE;
        goto out;
    }
    plan_run(&o, &r);
    if (!r.interrupted && o.finalists > 0 && plan_finalists(&o, &r))
        r.interrupted = 1;
    if (r.interrupted) {
        status = cmd_interrupted();
        goto out;
    }
    int any = 0;
    for (int i = 0; i < r.n_gpus; i++)
        for (int k = 0; k < r.per_gpu[i].n_rows; k++)
            any |= r.per_gpu[i].rows[k].fits;
    if (!any && r.first_error) {
        status = cmd_errorf("plan", 0, "no cluster size could be "
                            "simulated; the first error: %s", r.first_error);
        goto out;
    }
    const char *model = base_run.cfg.model;
    char *args = setup_join_args(argc, argv);
    char *command_line = xasprintf("fsdpsim %s", args);
    free(args);
    plan_print_text(&o, &r, model, stdout);
    if (c.plot) {
        char *out = xasprintf("%s-plan.%s", c.plot, c.term);
        char *cause = NULL;
        int write_rc = plan_plot(&o, &r, out, c.term, &cause);
        status = cmd_wrote("plan", out, write_rc, &cause);
        free(out);
    }
    if (status == 0 && c.report) {
        char *cause = NULL;
        int write_rc = plan_write_report(&o, &r, model, command_line,
                                         c.report, &cause);
        status = cmd_wrote("plan", c.report, write_rc, &cause);
    }
    if (status == 0) {
        int met = 0;
        for (int i = 0; i < r.n_gpus; i++)
            met |= o.deadline_s <= 0 || r.per_gpu[i].cost_optimal >= 0;
        if (!met)
            status = EXIT_CHECK_FAILED;
    }
    free(command_line);
out:
    if (have_base)
        setup_free(&base_run);
    plan_free(&r);
    opts_free(&o);
    search_list_free(&c.gpu);
    search_list_free(&c.price);
    search_list_free(&c.spot);
    free(base);
    return status;
}

const struct cmd_entry cmd_plan_entry = {
    .name = "plan",
    .usage = "--model M --tokens N [--deadline D] [--budget $] "
             "--gpu TOPOLOGY... [--price T=$X/gpu-hour] "
             "[--spot-price T=$X/gpu-hour] [--mtbf-per-gpu D] "
             "[--report FILE.html]",
    .summary = "size a cluster for a token budget, a deadline and a price, "
               "with failures",
    .exec = cmd_plan,
    .help = cmd_plan_help,
};
