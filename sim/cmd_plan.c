/*
 * cmd_plan.c: `fsdpsim plan`, the cluster to buy or rent for a token
 * budget and a deadline (the search is plan.c's; this file parses,
 * prints the tables, plots with reports/plan.gp and writes the report).
 */
#define _POSIX_C_SOURCE 200809L
#include "cmd.h"
#include "gnuplot.h"
#include "plan.h"
#include "report_html.h"
#include "report_run.h"
#include "cmd_search.h"
#include "search.h"
#include "setup.h"
#include "table.h"
#include "units.h"
#include "xalloc.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The default global batch: 4M tokens (2^22), LLaMA's and Llama 2's
 * batch (Touvron et al. 2023, section 2.2), 2048 sequences of 2048. */
#define PLAN_DEFAULT_BATCH_TOKENS 4194304
#define PLAN_DEFAULT_MAX_NODES 1024
#define PLAN_MAX_GPUS 16

void
cmd_plan_help(FILE *out)
{
    fprintf(out,
            "usage: fsdpsim plan --model M --tokens N [--deadline D] "
            "[--budget $]\n"
            "                    --gpu TOPOLOGY [--gpu ...]\n"
            "                    [--price TOPOLOGY=$X/gpu-hour|$Y/node]\n"
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
            "batch has\nsequences is at its batch limit.  MFU is model "
            "FLOPs (PaLM's 6N + 12LHQT per\ntoken, Chowdhery et al. 2022 "
            "appendix B) over the GPU's dense peak.\n\n"
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
            "bf16):\n", PLAN_DEFAULT_MAX_NODES);
    setup_print_options(out);
    fprintf(out, "\nCtrl-C stops the search; nothing is written.\n"
            "exit status: 0 ok, 1 no GPU type meets the deadline and "
            "budget, 2 bad input,\n3 a file could not be written or "
            "gnuplot failed, 130 interrupted.\n");
}

struct plan_cli {
    const char *tokens, *deadline, *budget, *batch, *headroom, *max_nodes;
    const char *plot, *term, *report, *jobs;
    struct search_list gpu, price;
};

static int
usage_error(const char *msg)
{
    cmd_error("plan", msg, 0);
    return -2;
}

/* Split argv into plan's options and the base simulate options.  0, 1
 * for --help, -1 after a usage error (-2: without the usage lines). */
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
        {"--gpu", NULL, NULL, &o->gpu},
        {"--price", NULL, NULL, &o->price}};
    int rc = search_split_args("plan", argc, argv, own,
                               (int)(sizeof own / sizeof own[0]), base,
                               base_argc);
    if (rc != 0)
        return rc;
    if (o->tokens == NULL) {
        cmd_error("plan", "--tokens is required: how many tokens to train "
                  "on, e.g. --tokens 2T", 1);
        return -1;
    }
    if (o->term && strcmp(o->term, "png") != 0 && strcmp(o->term, "svg")) {
        char *msg = xasprintf("--term: '%s' is not png or svg", o->term);
        usage_error(msg);
        free(msg);
        return -2;
    }
    return 0;
}

/* Turn the text options into plan_opts; 0 or -2 after the message. */
static int
build_opts(const struct plan_cli *c, struct plan_opts *o,
           const struct run *base)
{
    char *cause = NULL;
    int64_t v;
    if (units_parse_count(c->tokens, 1, INT64_MAX / 2, &v, &cause) != 0)
        goto bad_tokens;
    o->tokens = (double)v;
    if (c->deadline && plan_parse_duration("--deadline", c->deadline,
                                           &o->deadline_s, &cause) != 0)
        goto bad;
    if (c->budget && plan_parse_usd("--budget", c->budget, &o->budget_usd,
                                    &cause) != 0)
        goto bad;
    o->seq_len = base->cfg.seq_len;
    int64_t batch = PLAN_DEFAULT_BATCH_TOKENS;
    if (c->batch && units_parse_count(c->batch, 1, PLAN_MAX_BATCH_TOKENS,
                                      &batch, &cause) != 0) {
        char *m = xasprintf("--global-batch-tokens: %s", cause);
        free(cause);
        cause = m;
        goto bad;
    }
    if (batch < o->seq_len) {
        cause = xasprintf("--global-batch-tokens: %lld tokens is less than "
                          "one sequence of %lld (--seq-len); a step trains "
                          "on whole sequences", (long long)batch,
                          (long long)o->seq_len);
        goto bad;
    }
    o->global_batch_seqs = (batch + o->seq_len - 1) / o->seq_len;
    o->headroom = 0.10;
    if (c->headroom && search_parse_percent("--headroom", c->headroom,
                                            &o->headroom, &cause) != 0)
        goto bad;
    o->max_nodes = PLAN_DEFAULT_MAX_NODES;
    if (c->max_nodes) {
        if (units_parse_count(c->max_nodes, 1, 100000, &v, &cause) != 0) {
            char *m = xasprintf("--max-nodes: %s", cause);
            free(cause);
            cause = m;
            goto bad;
        }
        o->max_nodes = (int)v;
    }
    if (c->jobs) {
        if (units_parse_count(c->jobs, 1, BATCH_MAX_JOBS, &v, &cause) != 0) {
            char *m = xasprintf("--jobs: %s", cause);
            free(cause);
            cause = m;
            goto bad;
        }
        o->jobs = (int)v;
    }
    int n = c->gpu.n ? c->gpu.n : 1;
    if (n > PLAN_MAX_GPUS) {
        cause = xasprintf("--gpu: %d GPU types, at most %d", n,
                          PLAN_MAX_GPUS);
        goto bad;
    }
    o->gpus = xcalloc(n, sizeof *o->gpus);
    for (int i = 0; i < n; i++) {
        const char *name = c->gpu.n ? c->gpu.v[i] : base->cfg.topology;
        struct topo *t = topo_load(name, &cause);
        if (t == NULL) {
            char *m = xasprintf("--gpu %s: %s", name, cause);
            free(cause);
            cause = m;
            goto bad;
        }
        struct plan_gpu *g = &o->gpus[o->n_gpus++];
        g->topology = xstrdup(name);
        g->name = xstrdup(t->name);
        g->gpu_name = xstrdup(t->gpu_name ? t->gpu_name : "GPU");
        g->gpus_per_node = base->cfg.gpus_per_node ? base->cfg.gpus_per_node
                                                   : t->gpus_per_node;
        topo_free(t);
    }
    for (int i = 0; i < c->price.n; i++) {
        char *topo;
        enum plan_price_kind kind;
        double usd;
        if (plan_parse_price(c->price.v[i], &topo, &kind, &usd, &cause) != 0)
            goto bad;
        int j;
        for (j = 0; j < o->n_gpus; j++)
            if (strcmp(o->gpus[j].topology, topo) == 0
                || strcmp(o->gpus[j].name, topo) == 0)
                break;
        if (j == o->n_gpus) {
            cause = xasprintf("--price %s: '%s' is not one of the --gpu "
                              "types (add --gpu %s)", c->price.v[i], topo,
                              topo);
            free(topo);
            goto bad;
        }
        free(topo);
        o->gpus[j].price_kind = kind;
        o->gpus[j].price_usd = usd;
    }
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
bad_tokens: {
        char *m = xasprintf("--tokens: %s; write e.g. --tokens 2T or "
                            "--tokens 300B", cause);
        free(cause);
        cause = m;
    }
bad:
    usage_error(cause);
    free(cause);
    return -2;
}

static void
opts_free(struct plan_opts *o)
{
    for (int i = 0; i < o->n_gpus; i++) {
        free(o->gpus[i].topology);
        free(o->gpus[i].name);
        free(o->gpus[i].gpu_name);
    }
    free(o->gpus);
}

/* ---- presenting ---- */

/* A token count as people write it: 2T, 300B, 1.5M. */
static const char *
fmt_count(char *buf, size_t len, double n)
{
    static const struct {
        double v;
        const char *s;
    } mult[] = {{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "k"}, {1, ""}};
    int i = 0;
    while (i < 4 && n < mult[i].v)
        i++;
    snprintf(buf, len, "%.4g%s", n / mult[i].v, mult[i].s);
    return buf;
}

/* ", $1.2M" after a time when there is a cost, else nothing. */
static const char *fmt_usd(char *buf, size_t len, double usd);
static const char *
cost_tail(char *buf, size_t len, double usd)
{
    char b[32];
    if (isnan(usd))
        buf[0] = '\0';
    else
        snprintf(buf, len, ", %s", fmt_usd(b, sizeof b, usd));
    return buf;
}

static const char *
fmt_usd(char *buf, size_t len, double usd)
{
    if (isnan(usd))
        snprintf(buf, len, "-");
    else if (usd >= 1e6)
        snprintf(buf, len, "$%.2fM", usd / 1e6);
    else if (usd >= 1e3)
        snprintf(buf, len, "$%.1fk", usd / 1e3);
    else
        snprintf(buf, len, "$%.0f", usd);
    return buf;
}

static const char *
fmt_price(char *buf, size_t len, const struct plan_gpu *g)
{
    char b[32];
    if (g->price_kind == PLAN_PRICE_GPU_HOUR)
        snprintf(buf, len, "$%.2f per GPU-hour", g->price_usd);
    else if (g->price_kind == PLAN_PRICE_NODE)
        snprintf(buf, len, "%s per node bought",
                 fmt_usd(b, sizeof b, g->price_usd));
    else
        snprintf(buf, len, "no price given");
    return buf;
}

static void
fill_table(struct table *t, const struct plan_gpu *g,
           const struct plan_gpu_result *gr)
{
    const char *head[] = {"nodes", "GPUs", "mb", "accum", "<ckpt", "step",
                          "tokens/s", "days", "GPU-hours", "cost", "MFU",
                          "mem free", "<bottleneck", "<note", NULL};
    table_init(t, head);
    for (int i = 0; i < gr->n_rows; i++) {
        const struct plan_row *w = &gr->rows[i];
        int r = table_add_row(t);
        char b[64];
        table_cell(t, r, 0, "%d", w->nodes);
        table_cell(t, r, 1, "%d", w->gpus);
        table_cell(t, r, 2, "%lld", (long long)w->micro_batch);
        table_cell(t, r, 3, "%lld%s", (long long)w->grad_accum,
                   w->extrapolated ? "*" : "");
        table_cell(t, r, 4, "%s", w->checkpointing ? "full" : "none");
        table_cell(t, r, 11, "%.0f%%", 100 * w->headroom);
        table_cell(t, r, 12, "%s", w->bottleneck);
        if (w->fits) {
            table_cell(t, r, 5, "%s",
                       units_fmt_time_s(b, sizeof b, w->step_s));
            table_cell(t, r, 6, "%.0f", w->tokens_per_s);
            table_cell(t, r, 7, "%.1f", w->days);
            table_cell(t, r, 8, "%.0f", w->gpu_hours);
            table_cell(t, r, 9, "%s", fmt_usd(b, sizeof b, w->cost_usd));
            table_cell(t, r, 10, "%.1f%%", 100 * w->mfu);
        } else {
            for (int c = 5; c <= 10; c++)
                table_cell(t, r, c, "-");
            table_cell(t, r, 12, "%s", w->batch_limited ? "batch limit"
                                                       : "does not fit");
        }
        char note[96] = "";
        if (i == gr->smallest)
            strcat(note, "smallest meeting deadline");
        if (i == gr->cost_optimal)
            strcat(note, *note ? ", cost-optimal" : "cost-optimal");
        if (i == gr->knee)
            strcat(note, *note ? ", knee" : "knee");
        if (w->fits && !w->within_budget)
            strcat(note, *note ? ", over budget" : "over budget");
        table_cell(t, r, 13, "%s", note);
        if (i == gr->smallest || i == gr->cost_optimal)
            table_row_class(t, r, "pick");
        else if (!w->fits)
            table_row_class(t, r, "bad");
    }
    (void)g;
}

/* The verdict sentences for one GPU type; caller frees each. */
static int
verdicts(const struct plan_opts *o, const struct plan_gpu *g,
         const struct plan_gpu_result *gr, char **out)
{
    int n = 0;
    char b1[32], b2[32];
    if (o->deadline_s > 0) {
        if (gr->smallest >= 0) {
            const struct plan_row *w = &gr->rows[gr->smallest];
            const struct plan_row *p = gr->smallest > 0
                                           ? &gr->rows[gr->smallest - 1]
                                           : NULL;
            char *tail = p && p->fits
                             ? xasprintf("; %d node%s would take %.1f days",
                                         p->nodes, p->nodes == 1 ? "" : "s",
                                         p->days)
                             : xstrdup("");
            out[n++] = xasprintf(
                "smallest cluster meeting the %.0f-day deadline: %d node%s "
                "(%d GPUs), %.1f days%s%s", o->deadline_s / 86400,
                w->nodes, w->nodes == 1 ? "" : "s", w->gpus, w->days,
                cost_tail(b1, sizeof b1, w->cost_usd), tail);
            free(tail);
        } else {
            /* The fastest size within the batch, to say how far off. */
            const struct plan_row *f = NULL;
            for (int i = 0; i < gr->n_rows; i++) {
                const struct plan_row *w = &gr->rows[i];
                if (w->fits && !w->batch_limited
                    && (f == NULL || w->days < f->days))
                    f = w;
            }
            /* Past the batch limit a size may be fast enough: say that
             * a larger batch, not more nodes, is what would help. */
            const struct plan_row *b = NULL;
            for (int i = 0; i < gr->n_rows && b == NULL; i++) {
                const struct plan_row *w = &gr->rows[i];
                if (w->fits && w->batch_limited
                    && w->days * 86400 <= o->deadline_s)
                    b = w;
            }
            char *more = b ? xasprintf(" (%d nodes would meet it with a "
                                       "global batch of %lld sequences or "
                                       "more: raise --global-batch-tokens "
                                       "if convergence allows)", b->nodes,
                                       (long long)b->gpus)
                           : xstrdup("");
            char *tail = f ? xasprintf("; the fastest within the batch, "
                                       "%d nodes, takes %.1f days%s",
                                       f->nodes, f->days, more)
                           : xstrdup(more);
            free(more);
            out[n++] = xasprintf(
                "no cluster of up to %d nodes meets the %.0f-day deadline "
                "with a %.0f%% memory headroom%s", o->max_nodes,
                o->deadline_s / 86400, 100 * o->headroom, tail);
            free(tail);
        }
    }
    if (gr->cost_optimal >= 0) {
        const struct plan_row *w = &gr->rows[gr->cost_optimal];
        out[n++] = xasprintf(
            "cost-optimal%s: %d node%s (%d GPUs), %.1f days%s, %.0f "
            "GPU-hours", o->budget_usd > 0 ? " within the budget" : "",
            w->nodes, w->nodes == 1 ? "" : "s", w->gpus, w->days,
            cost_tail(b2, sizeof b2, w->cost_usd), w->gpu_hours);
    } else if (o->budget_usd > 0) {
        out[n++] = xasprintf("no cluster meets the deadline within the "
                             "budget of %s",
                             fmt_usd(b2, sizeof b2, o->budget_usd));
    }
    out[n++] = xasprintf("knee: %s", gr->knee_why);
    (void)g;
    return n;
}

/* Across GPU types, when all have a price: the cheapest that meets the
 * deadline and budget.  NULL when there is no such comparison; caller
 * frees. */
static char *
overall(const struct plan_opts *o, const struct plan_result *r)
{
    int best = -1;
    for (int i = 0; i < r->n_gpus; i++) {
        if (o->gpus[i].price_kind == PLAN_PRICE_NONE)
            return NULL;
        int k = r->per_gpu[i].cost_optimal;
        if (k >= 0 && (best < 0 || r->per_gpu[i].rows[k].cost_usd
                                       < r->per_gpu[best].rows[
                                           r->per_gpu[best].cost_optimal]
                                             .cost_usd))
            best = i;
    }
    if (best < 0 || r->n_gpus < 2)
        return NULL;
    const struct plan_row *w = &r->per_gpu[best].rows[
        r->per_gpu[best].cost_optimal];
    char b[32];
    return xasprintf("cheapest overall: %s, %d node%s (%d GPUs), %.1f "
                     "days, %s", o->gpus[best].name, w->nodes,
                     w->nodes == 1 ? "" : "s", w->gpus, w->days,
                     fmt_usd(b, sizeof b, w->cost_usd));
}

static void
print_text(const struct plan_opts *o, const struct plan_result *r,
           const char *model, FILE *out)
{
    char b[64];
    fprintf(out, "fsdpsim plan: %s, %s tokens, global batch %lld x %lld "
            "tokens, headroom %.0f%%", model, fmt_count(b, sizeof b,
                                                        o->tokens),
            (long long)o->global_batch_seqs, (long long)o->seq_len,
            100 * o->headroom);
    if (o->deadline_s > 0)
        fprintf(out, ", deadline %.1f days", o->deadline_s / 86400);
    if (o->budget_usd > 0)
        fprintf(out, ", budget %s", fmt_usd(b, sizeof b, o->budget_usd));
    fputc('\n', out);
    for (int i = 0; i < r->n_gpus; i++) {
        const struct plan_gpu *g = &o->gpus[i];
        const struct plan_gpu_result *gr = &r->per_gpu[i];
        fprintf(out, "\n%s (%s, %d GPUs per node, %s)\n", g->name,
                g->gpu_name, g->gpus_per_node, fmt_price(b, sizeof b, g));
        struct table t;
        fill_table(&t, g, gr);
        table_print_text(&t, "  ", out);
        table_free(&t);
        char *v[4];
        int n = verdicts(o, g, gr, v);
        for (int k = 0; k < n; k++) {
            fprintf(out, "  %s\n", v[k]);
            free(v[k]);
        }
    }
    char *all = overall(o, r);
    if (all)
        fprintf(out, "\n%s\n", all);
    free(all);
    int extrapolated = 0;
    for (int i = 0; i < r->n_gpus; i++)
        for (int k = 0; k < r->per_gpu[i].n_rows; k++)
            extrapolated |= r->per_gpu[i].rows[k].extrapolated;
    if (extrapolated)
        fprintf(out, "\n* more than 8 micro-batches: simulated at 4 and 8, "
                "extended linearly\n");
}

/* The plot's data: one block per GPU type ("gpus days cost" rows of the
 * sizes that fit), the block's first line its title.  Cost is GPU-hours
 * when no type has a price.  Caller unlinks and frees the path. */
static char *
write_plot_data(const struct plan_opts *o, const struct plan_result *r,
                int priced, char **cause)
{
    char *dat;
    FILE *f = gnuplot_data_open("plan", &dat, cause);
    if (f == NULL)
        return NULL;
    for (int i = 0; i < r->n_gpus; i++) {
        fprintf(f, "%sgpus days \"%s\"\n", i ? "\n\n" : "", o->gpus[i].name);
        for (int k = 0; k < r->per_gpu[i].n_rows; k++) {
            const struct plan_row *w = &r->per_gpu[i].rows[k];
            if (!w->fits || w->batch_limited)
                continue;
            double c = priced ? w->cost_usd : w->gpu_hours;
            fprintf(f, "%d %.6g ", w->gpus, w->days);
            if (isnan(c))
                fputs("NaN\n", f);
            else
                fprintf(f, "%.6g\n", c);
        }
    }
    gnuplot_data_close(f, &dat, cause);
    return dat;
}

static int
any_price(const struct plan_opts *o)
{
    for (int i = 0; i < o->n_gpus; i++)
        if (o->gpus[i].price_kind != PLAN_PRICE_NONE)
            return 1;
    return 0;
}

/* Runs reports/plan.gp into out (a PNG/SVG file) or into the report. */
static int
plot(const struct plan_opts *o, const struct plan_result *r,
     const char *out, const char *term, struct html *h, char **cause)
{
    int priced = any_price(o);
    char *dat = write_plot_data(o, r, priced, cause);
    if (dat == NULL)
        return -1;
    char deadline[32];
    snprintf(deadline, sizeof deadline, "%.6g", o->deadline_s / 86400);
    const char *args[] = {dat, GNUPLOT_OUT, term,
                          priced ? "cost (USD)" : "GPU-hours", deadline,
                          NULL};
    return html_plot_or_file(h, "plan", args,
                             "Time to train (top) and cost (bottom) "
                             "against the number of GPUs, one line per GPU "
                             "type; the dashed line is the deadline.  "
                             "Sizes that do not fit or exceed the batch "
                             "are left out.", out, dat, cause);
}

/* One step of the first GPU type's pick (the smallest size meeting the
 * deadline, else the cost-optimal one): summary, timeline and memory.
 * More than 8 micro-batches are shown as 8, as simulated (see plan.c):
 * the rest repeat them.  0, or -1 with *cause. */
static int
pick_step(const struct plan_opts *o, const struct plan_result *r,
          struct html *h, char **cause)
{
    for (int i = 0; i < r->n_gpus; i++) {
        const struct plan_gpu_result *gr = &r->per_gpu[i];
        int k = gr->smallest >= 0 ? gr->smallest : gr->cost_optimal;
        if (k < 0)
            continue;
        const struct plan_row *w = &gr->rows[k];
        int64_t accum = w->grad_accum > PLAN_ACCUM_HI ? PLAN_ACCUM_HI
                                                      : w->grad_accum;
        char *head = xasprintf("One step of %s at %d node%s", o->gpus[i].name,
                               w->nodes, w->nodes == 1 ? "" : "s");
        html_h2(h, head);
        free(head);
        if (accum != w->grad_accum)
            html_p(h, "Shown with %d of its %lld micro-batches: the others "
                   "repeat them.", PLAN_ACCUM_HI, (long long)w->grad_accum);
        struct search_args a;
        plan_point_args(o, &o->gpus[i], w->nodes, w->micro_batch, accum,
                        w->checkpointing ? 1 : 0, &a);
        int rc = report_run_argv(h, a.argc, a.argv, cause);
        search_args_free(&a);
        return rc;
    }
    return 0;
}

static int
write_report(const struct plan_opts *o, const struct plan_result *r,
             const char *model, const char *command_line, const char *path)
{
    struct html h;
    char *cause = NULL;
    char tok[32];
    char *title = xasprintf("fsdpsim plan: %s on %s tokens", model,
                            fmt_count(tok, sizeof tok, o->tokens));
    int rc = html_open(&h, path, title, &cause);
    free(title);
    if (rc != 0)
        goto fail;
    char b[64];
    html_p(&h, "Command: %s", command_line);
    html_p(&h, "Global batch %lld sequences of %lld tokens; memory "
           "headroom %.0f%%%s%s%s.", (long long)o->global_batch_seqs,
           (long long)o->seq_len, 100 * o->headroom,
           o->deadline_s > 0 ? "; deadline " : "",
           o->deadline_s > 0 ? (snprintf(b, sizeof b, "%.1f days",
                                         o->deadline_s / 86400), b)
                             : "",
           o->budget_usd > 0 ? "; a budget applies" : "");
    char *all = overall(o, r);
    if (all)
        html_verdict(&h, all);
    free(all);
    /* Each GPU type's answer first: its verdict's opening sentence. */
    for (int i = 0; i < r->n_gpus; i++) {
        char *v[4];
        int n = verdicts(o, &o->gpus[i], &r->per_gpu[i], v);
        char *s = xasprintf("%s: %s", o->gpus[i].name, v[0]);
        html_verdict(&h, s);
        free(s);
        for (int k = 0; k < n; k++)
            free(v[k]);
    }
    if (plot(o, r, NULL, "svg", &h, &cause) != 0)
        goto fail_open;
    for (int i = 0; i < r->n_gpus; i++) {
        const struct plan_gpu *g = &o->gpus[i];
        char head[256];
        snprintf(head, sizeof head, "%s (%s, %d GPUs per node, %s)",
                 g->name, g->gpu_name, g->gpus_per_node,
                 fmt_price(b, sizeof b, g));
        html_h2(&h, head);
        char *v[4];
        int n = verdicts(o, g, &r->per_gpu[i], v);
        for (int k = 0; k < n; k++) {
            html_p(&h, "%s.", v[k]);
            free(v[k]);
        }
        struct table t;
        fill_table(&t, g, &r->per_gpu[i]);
        html_table(&h, &t);
        table_free(&t);
    }
    if (pick_step(o, r, &h, &cause) != 0)
        goto fail_open;
    html_h2(&h, "How these numbers are made");
    html_p(&h, "Each row is one simulated training step of the cluster "
           "size at the global batch: the fastest micro-batch (1, 2, 4) "
           "and activation checkpointing (none, full) that fit with the "
           "headroom, with accumulation steps making up the batch.  Time "
           "to train is tokens / (tokens per step / step time).  Steps "
           "marked * have more than 8 micro-batches and are extended "
           "linearly from 4 and 8.  MFU is model FLOPs (6N + 12LHQT per "
           "token, PaLM appendix B) over the GPU's dense peak.  "
           "Bottleneck: communication when exposed communication exceeds "
           "10%% of the step, batch limit when the cluster has more GPUs "
           "than the batch has sequences.");
    if (html_commit(&h, &cause) != 0)
        goto fail;
    return 0;
fail_open:
    html_abort(&h);
fail:
    cmd_error("plan", cause, 0);
    free(cause);
    return EXIT_SYSTEM;
}

int
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
    if (rc == 1) {
        cmd_plan_help(stdout);
        goto out;
    }
    if (rc != 0) {
        status = EXIT_USAGE;
        goto out;
    }
    if ((status = search_check_base("plan", "simulates many points",
                                    o.base_argc, base)) != 0)
        goto out;
    {
        char *cause = NULL;
        struct search_args a;
        search_args_init(&a, o.base_argc, base);
        setup_parse_args(&base_run, "plan", a.argc, a.argv, &cause);
        search_args_free(&a);
        free(cause);
        have_base = 1;
    }
    if (build_opts(&c, &o, &base_run) != 0) {
        status = EXIT_USAGE;
        goto out;
    }
    plan_run(&o, &r);
    if (r.interrupted) {
        fprintf(stderr, "fsdpsim: interrupted; nothing written\n");
        status = EXIT_INTERRUPTED;
        goto out;
    }
    int any = 0;
    for (int i = 0; i < r.n_gpus; i++)
        for (int k = 0; k < r.per_gpu[i].n_rows; k++)
            any |= r.per_gpu[i].rows[k].fits;
    if (!any && r.first_error) {
        char *msg = xasprintf("no cluster size could be simulated; the "
                              "first error: %s", r.first_error);
        cmd_error("plan", msg, 0);
        free(msg);
        status = EXIT_USAGE;
        goto out;
    }
    const char *model = base_run.cfg.model;
    char *args = setup_join_args(argc, argv);
    char *command_line = xasprintf("fsdpsim %s", args);
    free(args);
    print_text(&o, &r, model, stdout);
    if (c.plot) {
        char *out = xasprintf("%s-plan.%s", c.plot, c.term);
        char *cause = NULL;
        if (plot(&o, &r, out, c.term, NULL, &cause) != 0) {
            cmd_error("plan", cause, 0);
            free(cause);
            status = EXIT_SYSTEM;
        } else {
            printf("wrote %s\n", out);
        }
        free(out);
    }
    if (status == 0 && c.report) {
        status = write_report(&o, &r, model, command_line, c.report);
        if (status == 0)
            printf("wrote %s\n", c.report);
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
    free(base);
    return status;
}
