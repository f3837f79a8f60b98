/*
 * cmd_tune.c: `fsdpsim tune`, the FSDP settings with the best throughput
 * that fit a model on a cluster (the search is tune.c's; this file parses,
 * prints the ranking, the winner's PyTorch code and the throughput curve
 * over min_num_params, and writes the plot and the report).
 */
#define _POSIX_C_SOURCE 200809L
#include "cmd.h"
#include "gnuplot.h"
#include "report_html.h"
#include "report_run.h"
#include "cmd_search.h"
#include "search.h"
#include "setup.h"
#include "table.h"
#include "tune.h"
#include "units.h"
#include "xalloc.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TUNE_DEFAULT_TOP 10
#define TUNE_DEFAULT_MAX_ACCUM 8

static void
cmd_tune_help(FILE *out)
{
    fprintf(out,
            "usage: fsdpsim tune [simulate options] [--headroom 10%%] "
            "[--top N]\n"
            "                    [--max-grad-accum N] [--plot PREFIX] "
            "[--report FILE.html]\n"
            "                    [--jobs N]\n\n"
            "Search FSDP settings for the best throughput (tokens/s per "
            "GPU) that fits the\nmodel on the cluster with a memory "
            "headroom, and print the top settings, the\nwinner's PyTorch "
            "code and its throughput over min_num_params.  Searched:\n"
            "  auto_wrap_policy   transformer_auto_wrap_policy, and\n"
            "                     size_based_auto_wrap_policy at each "
            "min_num_params where\n"
            "                     PyTorch's policy draws different units\n"
            "  sharding_strategy  FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, and "
            "DDP (the baseline,\n"
            "                     compared with the best FSDP setting);\n"
            "                     HYBRID_SHARD, _HYBRID_SHARD_ZERO2 on "
            "several nodes\n"
            "  checkpointing      none, full;  micro-batch 1, 2, 4, 8\n"
            "  accumulation       1, 2, 4, ... --max-grad-accum, with and "
            "without no_sync\n"
            "  backward_prefetch  BACKWARD_PRE, BACKWARD_POST;  "
            "limit_all_gathers true, false\n"
            "in stages: wrapping x sharding x checkpointing x micro-batch "
            "first, then the\nrest around the best 4, then the winner over "
            "every wrapping.  A setting fits\nwhen its reserved peak leaves "
            "the headroom free.  More accumulation raises\nthe tokens per "
            "step (the global batch): cap it with --max-grad-accum.\n\n"
            "options:\n"
            "  --headroom P             device memory kept free, e.g. "
            "10%% (default 10%%)\n"
            "  --top N                  settings listed (default %d)\n"
            "  --max-grad-accum N       most micro-batches per step tried "
            "(default %d)\n"
            "  --plot PREFIX            plot throughput against "
            "min_num_params:\n"
            "                           PREFIX-tune.png (gnuplot)\n"
            "  --term png|svg           image format (default png)\n"
            "  --report FILE.html       write a self-contained HTML "
            "report\n"
            "  -j, --jobs N             points simulated in parallel "
            "(default: online CPUs)\n"
            "  -h, --help               show this help\n\n"
            "simulate options (the base of every point; --param-dtype "
            "defaults to bf16):\n", TUNE_DEFAULT_TOP,
            TUNE_DEFAULT_MAX_ACCUM);
    setup_print_options(out, false);
    fprintf(out, "\nCtrl-C stops the search; nothing is written.\n"
            "exit status: 0 ok, 1 no setting fits, 2 bad input, 3 a file "
            "could not be\nwritten or gnuplot failed, 130 interrupted.\n");
}

struct tune_cli {
    const char *headroom, *top, *max_accum, *plot, *term, *report, *jobs;
};

static int
count_opt(const char *opt, const char *s, int64_t lo, int64_t hi,
          int64_t *out)
{
    char *cause = NULL;
    if (units_parse_count(s, lo, hi, out, &cause) == 0)
        return 0;
    char *msg = xasprintf("%s: %s", opt, cause);
    cmd_error("tune", msg, 0);
    free(msg);
    free(cause);
    return -1;
}

static const char *
wrap_text(const struct tune_setting *s, char *buf, size_t len)
{
    char n[32];
    if (s->sharding == SHARDING_DDP)
        snprintf(buf, len, "-");
    else if (s->min_num_params > 0)
        snprintf(buf, len, "size %s",
                 tune_fmt_threshold(n, sizeof n, s->min_num_params, 0));
    else
        snprintf(buf, len, "transformer");
    return buf;
}

/* Throughput to the four significant digits the ranking tells apart,
 * so that the list reads in order and ties read as ties. */
static void
cell_key(struct table *t, int row, int col, double v)
{
    double k = tune_rank_key(v);
    int digits = k > 0 ? 3 - (int)floor(log10(k)) : 1;
    table_cell(t, row, col, "%.*f", digits > 0 ? digits : 0, k);
}

static void
fill_top(struct table *t, const struct tune_result *r, int top)
{
    const char *head[] = {"#", "tokens/s/GPU", "MFU", "step", "mem free",
                          "exposed", "<wrap", "units", "<sharding",
                          "<ckpt", "mb", "accum", "<no_sync", "<prefetch",
                          "<limit_ag", NULL};
    table_init(t, head);
    struct tune_row *rows = xcalloc(top + 1, sizeof *rows);
    int n = tune_top(r, top, rows);
    for (int k = 0; k < n; k++) {
        const struct tune_point *p = &r->points[rows[k].point];
        int row = table_add_row(t);
        char b[64];
        table_cell(t, row, 0, "%d", k + 1);
        cell_key(t, row, 1, p->tokens_per_s_per_gpu);
        table_cell(t, row, 2, "%.1f%%", 100 * p->mfu);
        table_cell(t, row, 3, "%s", units_fmt_time_s(b, sizeof b,
                                                     p->step_s));
        table_cell(t, row, 4, "%.0f%%", 100 * p->mem_free);
        table_cell(t, row, 5, "%.1f%%", 100 * p->exposed_share);
        table_cell(t, row, 6, "%s", wrap_text(&p->s, b, sizeof b));
        int ddp = p->s.sharding == SHARDING_DDP;
        if (ddp)
            table_cell(t, row, 7, "-");
        else
            table_cell(t, row, 7, "%d", p->s.n_units);
        table_cell(t, row, 8, "%s", sharding_name(p->s.sharding));
        table_cell(t, row, 9, "%s", ac_name(p->s.ac));
        table_cell(t, row, 10, "%lld", (long long)p->s.micro_batch);
        table_cell(t, row, 11, "%lld", (long long)p->s.grad_accum);
        table_cell(t, row, 12, "%s", p->s.no_sync ? "yes" : "no");
        if (ddp)
            table_cell(t, row, 13, "-");
        else if (rows[k].either_prefetch)
            table_cell(t, row, 13, "BACKWARD_PRE or POST");
        else
            table_cell(t, row, 13, "%s",
                       backward_prefetch_name(p->s.prefetch));
        if (ddp)
            table_cell(t, row, 14, "-");
        else if (rows[k].either_limit)
            table_cell(t, row, 14, "true or false");
        else
            table_cell(t, row, 14, "%s", p->s.limit_all_gathers ? "true"
                                                               : "false");
        if (k == 0)
            table_row_class(t, row, "pick");
    }
    free(rows);
}

/* FSDP against the DDP baseline: the best of each, or for DDP when
 * nothing fits, the setting closest to fitting. */
static void
print_fsdp_vs_ddp(const struct tune_result *r, FILE *out)
{
    int best[2] = {-1, -1}, rank_of[2] = {0, 0};
    for (int k = 0; k < r->n_ranked; k++) {
        int ddp = r->points[r->ranked[k]].s.sharding == SHARDING_DDP;
        if (best[ddp] < 0) {
            best[ddp] = r->ranked[k];
            rank_of[ddp] = k + 1;
        }
    }
    fprintf(out, "\nFSDP against DDP (the best fitting setting of each):\n");
    for (int ddp = 0; ddp < 2; ddp++) {
        const char *name = ddp ? "DDP " : "FSDP";
        if (best[ddp] >= 0) {
            const struct tune_point *p = &r->points[best[ddp]];
            char b[64];
            fprintf(out, "  %s  %.1f tokens/s/GPU (#%d), MFU %.1f%%, step "
                    "%s, %.0f%% memory free: %s, checkpointing %s, "
                    "micro-batch %lld x %lld\n", name,
                    p->tokens_per_s_per_gpu, rank_of[ddp], 100 * p->mfu,
                    units_fmt_time_s(b, sizeof b, p->step_s),
                    100 * p->mem_free, sharding_name(p->s.sharding),
                    ac_name(p->s.ac), (long long)p->s.micro_batch,
                    (long long)p->s.grad_accum);
            continue;
        }
        int closest = -1;
        for (int i = 0; i < r->n_points; i++) {
            const struct tune_point *p = &r->points[i];
            if (!p->ok || (p->s.sharding == SHARDING_DDP) != ddp)
                continue;
            if (closest < 0 || p->mem_free > r->points[closest].mem_free)
                closest = i;
        }
        if (closest < 0)
            fprintf(out, "  %s  no setting could be simulated\n", name);
        else
            fprintf(out, "  %s  does not fit: at best %.0f%% of device "
                    "memory free (checkpointing %s, micro-batch %lld): "
                    "full replicas of parameters, gradients and optimizer "
                    "state\n", name, 100 * r->points[closest].mem_free,
                    ac_name(r->points[closest].s.ac),
                    (long long)r->points[closest].s.micro_batch);
    }
}

static void
fill_curve(struct table *t, const struct tune_result *r)
{
    const char *head[] = {"min_num_params", "units", "tokens/s/GPU",
                          "mem free", "<fits", NULL};
    table_init(t, head);
    for (int k = 0; k < r->n_curve; k++) {
        const struct tune_point *p = &r->curve[k];
        int row = table_add_row(t);
        table_cell(t, row, 0, "%lld", (long long)p->s.min_num_params);
        table_cell(t, row, 1, "%d", p->s.n_units);
        if (p->ok) {
            table_cell(t, row, 2, "%.1f", p->tokens_per_s_per_gpu);
            table_cell(t, row, 3, "%.0f%%", 100 * p->mem_free);
            table_cell(t, row, 4, "%s", p->fits ? "yes" : "no");
        } else {
            table_cell(t, row, 4, "invalid");
        }
        if (!p->ok || !p->fits)
            table_row_class(t, row, "bad");
    }
}

/* The winner as a simulate command line and as PyTorch code; both
 * caller-freed strings.  -1 with *cause when it no longer parses. */
static int
winner_text(const struct tune_opts *o, const struct tune_setting *s,
            char **simulate, char **code, char **cause)
{
    struct search_args a;
    search_args_init(&a, o->base_argc, o->base);
    tune_setting_args(s, &a);
    /* The line shows each option once: base options that the setting
     * overrides are left out (they would only be overridden). */
    static const char *const set_by_tune[] = {
        "auto-wrap-policy", "min-num-params", "sharding-strategy",
        "activation-checkpointing", "micro-batch", "grad-accum", "no-sync",
        "backward-prefetch", "limit-all-gathers", NULL};
    char *line = xstrdup("fsdpsim simulate");
    for (int i = 1; i < a.argc; i++) {
        int skip = 0;
        for (int k = 0; i < a.n_base && set_by_tune[k] && !skip; k++) {
            const char *arg = a.argv[i];
            size_t n = strlen(set_by_tune[k]);
            if (strncmp(arg, "--", 2) != 0
                || strncmp(arg + 2, set_by_tune[k], n) != 0)
                continue;
            if (arg[2 + n] == '=') {
                skip = 1;
            } else if (arg[2 + n] == '\0') {
                skip = 1;
                /* Its value follows, but a bare --no-sync has none. */
                bool b;
                char *c = NULL;
                if (i + 1 < a.n_base
                    && (strcmp(set_by_tune[k], "no-sync") != 0
                        || units_parse_bool(a.argv[i + 1], &b, &c) == 0))
                    i++;
                free(c);
            }
        }
        if (skip)
            continue;
        char *n = xasprintf("%s %s", line, a.argv[i]);
        free(line);
        line = n;
    }
    struct run r;
    int rc = setup_parse_args(&r, "tune", a.argc, a.argv, cause);
    search_args_free(&a);
    if (rc != 0 || setup_prepare(&r, cause) != 0) {
        setup_free(&r);
        free(line);
        return -1;
    }
    size_t len = 0;
    FILE *mem = xopen_memstream(code, &len);
    tune_pytorch_code(&r.cfg, r.model->layer_cls, mem);
    fclose(mem);
    setup_free(&r);
    *simulate = line;
    return 0;
}

static char *
curve_data(const struct tune_result *r, char **cause)
{
    char *dat;
    FILE *f = gnuplot_data_open("tune", &dat, cause);
    if (f == NULL)
        return NULL;
    /* min_num_params units tokens/s/GPU fits */
    for (int k = 0; k < r->n_curve; k++) {
        const struct tune_point *p = &r->curve[k];
        fprintf(f, "%lld %d ", (long long)p->s.min_num_params, p->s.n_units);
        if (p->ok)
            fprintf(f, "%.6g %d\n", p->tokens_per_s_per_gpu, p->fits);
        else
            fprintf(f, "NaN 0\n");
    }
    gnuplot_data_close(f, &dat, cause);
    return dat;
}

static int
plot_curve(const struct tune_result *r, const char *out, const char *term,
           struct html *h, char **cause)
{
    char *dat = curve_data(r, cause);
    if (dat == NULL)
        return -1;
    const char *args[] = {dat, GNUPLOT_OUT, term, NULL};
    return html_plot_or_file(h, "tune", args,
                             "Throughput of the winner's settings against "
                             "size_based_auto_wrap_policy's min_num_params "
                             "(each point a different set of FSDP units; "
                             "hollow points do not fit with the "
                             "headroom).", out, dat, cause);
}

static int
write_report(const struct tune_opts *o, const struct tune_result *r,
             const char *title, const char *head, const char *simulate,
             const char *code, const char *path, char **cause)
{
    struct html h;
    if (html_open(&h, path, title, cause) != 0)
        return -1;
    const struct tune_point *w = &r->points[r->ranked[0]];
    char b[64];
    html_p(&h, "%s", head);
    char *v = xasprintf("Best: %.1f tokens/s per GPU (MFU %.1f%%) with "
                        "%s, %s wrapping (%d units), checkpointing %s, "
                        "micro-batch %lld x %lld accumulation%s, %s, "
                        "limit_all_gathers=%s; %.0f%% of memory free.",
                        w->tokens_per_s_per_gpu, 100 * w->mfu,
                        sharding_name(w->s.sharding),
                        wrap_text(&w->s, b, sizeof b), w->s.n_units,
                        ac_name(w->s.ac), (long long)w->s.micro_batch,
                        (long long)w->s.grad_accum,
                        w->s.no_sync ? " under no_sync" : "",
                        backward_prefetch_name(w->s.prefetch),
                        w->s.limit_all_gathers ? "True" : "False",
                        100 * w->mem_free);
    html_verdict(&h, v);
    free(v);
    html_h2(&h, "Top configurations");
    struct table t;
    fill_top(&t, r, TUNE_DEFAULT_TOP);
    html_table(&h, &t);
    table_free(&t);
    html_h2(&h, "The winner in PyTorch");
    html_pre(&h, code);
    html_p(&h, "The same run in fsdpsim:");
    html_pre(&h, simulate);
    html_h2(&h, "Throughput over min_num_params");
    if (r->n_curve > 0 && plot_curve(r, NULL, "svg", &h, cause) != 0)
        goto fail;
    fill_curve(&t, r);
    html_table(&h, &t);
    table_free(&t);
    html_h2(&h, "The winner's step");
    struct search_args a;
    search_args_init(&a, o->base_argc, o->base);
    tune_setting_args(&w->s, &a);
    int rc = report_run_argv(&h, a.argc, a.argv, cause);
    search_args_free(&a);
    if (rc != 0)
        goto fail;
    return html_commit(&h, cause);
fail:
    html_abort(&h);
    return -1;
}

/* Split argv into tune's own options (*C, into *O and *top) and the base
 * simulate options (O->base, sized for ARGC + 2): CMD_RUN, or the exit
 * status after the help or the message. */
static int
parse_tune_args(int argc, char **argv, struct tune_cli *c,
                struct tune_opts *o, int64_t *top)
{
    char **base = o->base;
    base[o->base_argc++] = argv[0];
    /* Mixed precision is what anyone tuning for throughput trains with;
     * a later --param-dtype overrides it. */
    base[o->base_argc++] = unconst("--param-dtype=bf16");
    const struct search_opt own[] = {
        {"--headroom", NULL, &c->headroom, NULL},
        {"--top", NULL, &c->top, NULL},
        {"--max-grad-accum", NULL, &c->max_accum, NULL},
        {"--plot", NULL, &c->plot, NULL},
        {"--term", NULL, &c->term, NULL},
        {"--report", NULL, &c->report, NULL},
        {"--jobs", "-j", &c->jobs, NULL}};
    int rc = search_split_args(&cmd_tune_entry, argc, argv, own,
                               (int)(sizeof own / sizeof own[0]), base,
                               &o->base_argc);
    if (rc != CMD_RUN)
        return rc;
    char *cause = NULL;
    if (c->headroom && search_parse_percent("--headroom", c->headroom,
                                            &o->headroom, &cause) != 0) {
        cmd_error("tune", cause, 0);
        free(cause);
        return EXIT_USAGE;
    }
    int64_t v;
    if ((c->top && count_opt("--top", c->top, 1, 1000, top) != 0)
        || (c->max_accum && count_opt("--max-grad-accum", c->max_accum, 1,
                                      64, &o->max_grad_accum) != 0)
        || (c->jobs
            && count_opt("--jobs", c->jobs, 1, BATCH_MAX_JOBS, &v) != 0))
        return EXIT_USAGE;
    if (c->jobs)
        o->jobs = (int)v;
    if (strcmp(c->term, "png") != 0 && strcmp(c->term, "svg") != 0)
        return cmd_errorf("tune", 0, "--term: '%s' is not png or svg",
                          c->term);
    rc = search_check_base("tune", "simulates many points", o->base_argc,
                           base);
    return rc != 0 ? rc : CMD_RUN;
}

/* The report's title and the summary line (caller frees both), naming
 * the base run's model and topology. */
static void
tune_headline(const struct tune_opts *o, const struct tune_result *r,
              char **title, char **head)
{
    struct run br;
    struct search_args a;
    char *cause = NULL;
    search_args_init(&a, o->base_argc, o->base);
    setup_parse_args(&br, "tune", a.argc, a.argv, &cause);
    search_args_free(&a);
    free(cause);
    *title = xasprintf("fsdpsim tune: %s on %d x %s", br.cfg.model,
                       r->nodes, br.cfg.topology);
    *head = xasprintf("%s on %s, %d node%s x %d GPUs, headroom %.0f%%: %d "
                      "settings simulated, %d fit", br.cfg.model,
                      br.cfg.topology, r->nodes, r->nodes == 1 ? "" : "s",
                      r->gpus_per_node, 100 * o->headroom,
                      r->n_points + r->n_curve, r->n_ranked);
    setup_free(&br);
}

/* The text results of R after HEAD: the TOP best settings, FSDP against
 * DDP, the winner as fsdpsim runs it and in PyTorch (*simulate, *code,
 * caller frees) and the curve over min_num_params.  0, or the exit
 * status after the message. */
static int
print_results(const struct tune_opts *o, const struct tune_result *r,
              const char *head, int top, char **simulate, char **code)
{
    printf("fsdpsim tune: %s\n", head);
    if (r->n_ranked == 0) {
        printf("no setting fits with %.0f%% of device memory free: try more "
               "nodes, a larger GPU, --cpu-offload, or a lower "
               "--headroom\n", 100 * o->headroom);
        return EXIT_CHECK_FAILED;
    }
    printf("\ntop configurations:\n");
    struct table t;
    fill_top(&t, r, top);
    table_print_text(&t, "  ", stdout);
    table_free(&t);
    print_fsdp_vs_ddp(r, stdout);
    char *cause = NULL;
    if (winner_text(o, &r->points[r->ranked[0]].s, simulate, code, &cause)
        != 0) {
        cmd_error("tune", cause, 0);
        free(cause);
        return EXIT_USAGE;
    }
    printf("\nwinner, as fsdpsim runs it:\n  %s\n\nwinner in PyTorch:\n\n%s",
           *simulate, *code);
    printf("\nthroughput over min_num_params (size_based_auto_wrap_policy, "
           "the %s other settings):\n",
           r->points[r->ranked[0]].s.sharding == SHARDING_DDP
               ? "best FSDP setting's" : "winner's");
    fill_curve(&t, r);
    table_print_text(&t, "  ", stdout);
    table_free(&t);
    return 0;
}

static int
cmd_tune(int argc, char **argv)
{
    struct tune_cli c = {.term = "png"};
    struct tune_opts o = {.headroom = 0.10,
                          .max_grad_accum = TUNE_DEFAULT_MAX_ACCUM};
    struct tune_result r = {0};
    int64_t top = TUNE_DEFAULT_TOP;
    char *cause = NULL, *simulate = NULL, *code = NULL;
    char *title = NULL, *head = NULL;
    o.base = xcalloc(argc + 2, sizeof *o.base);
    int status = parse_tune_args(argc, argv, &c, &o, &top);
    if (status != CMD_RUN)
        goto out;
    status = EXIT_USAGE;
    if (tune_run(&o, &r, &cause) != 0) {
        cmd_error("tune", cause, 0);
        goto out;
    }
    if (r.interrupted) {
        fprintf(stderr, "fsdpsim: interrupted; nothing written\n");
        status = EXIT_INTERRUPTED;
        goto out;
    }
    int n_ok = 0;
    for (int i = 0; i < r.n_points; i++)
        n_ok += r.points[i].ok;
    if (n_ok == 0) {
        status = cmd_errorf("tune", 0, "no setting could be simulated; the "
                            "first error: %s", r.first_error);
        goto out;
    }
    tune_headline(&o, &r, &title, &head);
    status = print_results(&o, &r, head, (int)top, &simulate, &code);
    if (status == 0 && c.plot) {
        char *out = xasprintf("%s-tune.%s", c.plot, c.term);
        if (plot_curve(&r, out, c.term, NULL, &cause) != 0) {
            cmd_error("tune", cause, 0);
            status = EXIT_SYSTEM;
        } else {
            printf("wrote %s\n", out);
        }
        free(out);
    }
    if (status == 0 && c.report) {
        if (write_report(&o, &r, title, head, simulate, code, c.report,
                         &cause) != 0) {
            cmd_error("tune", cause, 0);
            status = EXIT_SYSTEM;
        } else {
            printf("wrote %s\n", c.report);
        }
    }
out:
    free(title);
    free(head);
    free(cause);
    free(simulate);
    free(code);
    tune_free(&r);
    free(o.base);
    return status;
}

const struct cmd_entry cmd_tune_entry = {
    .name = "tune",
    .usage = "[simulate options] [--headroom 10%] [--top N] "
             "[--report FILE.html]",
    .summary = "search FSDP settings for the best throughput that fits",
    .exec = cmd_tune,
    .help = cmd_tune_help,
};
