/*
 * tune_print.c: tune's results as text, plot and HTML report (see
 * tune_print.h); the search is tune.c's.
 */
#define _POSIX_C_SOURCE 200809L
#include "tune_print.h"
#include "gnuplot.h"
#include "report_html.h"
#include "report_run.h"
#include "search.h"
#include "setup.h"
#include "table.h"
#include "units.h"
#include "xalloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

int
tune_plot(const struct tune_result *r, const char *out, const char *term,
          char **cause)
{
    return plot_curve(r, out, term, NULL, cause);
}

int
tune_write_report(const struct tune_opts *o, const struct tune_result *r,
                  const char *title, const char *head,
                  const char *simulate, const char *code, const char *path,
                  char **cause)
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
    html_command(&h, simulate);
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

/* The report's title and the summary line (caller frees both), naming
 * the base run's model and topology. */
void
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
int
tune_print_results(const struct tune_opts *o, const struct tune_result *r,
                   const char *head, int top, char **simulate, char **code,
                   FILE *out, char **cause)
{
    fprintf(out, "fsdpsim tune: %s\n", head);
    if (r->n_ranked == 0) {
        fprintf(out, "no setting fits with %.0f%% of device memory free: "
                "try more nodes, a larger GPU, --cpu-offload, or a lower "
                "--headroom\n", 100 * o->headroom);
        return 1;
    }
    fprintf(out, "\ntop configurations:\n");
    struct table t;
    fill_top(&t, r, top);
    table_print_text(&t, "  ", out);
    table_free(&t);
    print_fsdp_vs_ddp(r, out);
    if (winner_text(o, &r->points[r->ranked[0]].s, simulate, code, cause)
        != 0)
        return -1;
    fprintf(out, "\nwinner, as fsdpsim runs it:\n  %s\n\nwinner in "
            "PyTorch:\n\n%s", *simulate, *code);
    fprintf(out, "\nthroughput over min_num_params "
            "(size_based_auto_wrap_policy, the %s other settings):\n",
            r->points[r->ranked[0]].s.sharding == SHARDING_DDP
                ? "best FSDP setting's" : "winner's");
    fill_curve(&t, r);
    table_print_text(&t, "  ", out);
    table_free(&t);
    return 0;
}

