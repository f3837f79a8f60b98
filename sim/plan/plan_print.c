/*
 * plan_print.c: plan's results as text, plot and HTML report (see
 * plan_print.h); the numbers are plan.c's and plan_finalists.c's.
 */
#define _POSIX_C_SOURCE 200809L
#include "plan_print.h"
#include "gnuplot.h"
#include "report_html.h"
#include "report_run.h"
#include "search.h"
#include "table.h"
#include "units.h"
#include "xalloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

static const char *fmt_usd(char *buf, size_t len, double usd);
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

/* Days, or "never" when interruptions come faster than work is saved. */
static const char *
fmt_days(char *buf, size_t len, double d)
{
    if (isinf(d))
        snprintf(buf, len, "never");
    else
        snprintf(buf, len, "%.1f", d);
    return buf;
}

/* Cost in dollars, or GPU-hours when G has no price. */
static const char *
fmt_cost(char *buf, size_t len, const struct plan_gpu *g, double usd,
         double gpu_hours)
{
    if (isinf(gpu_hours))
        snprintf(buf, len, "never");
    else if (g->price_kind == PLAN_PRICE_NONE)
        snprintf(buf, len, "%.0f", gpu_hours);
    else
        fmt_usd(buf, len, usd);
    return buf;
}

/* Columns: the setting, the failure-free time and cost, the expected
 * ones with failures, on Spot when priced, then why and which. */
static void
fill_table(struct table *t, const struct plan_gpu *g,
           const struct plan_gpu_result *gr)
{
    int priced = g->price_kind != PLAN_PRICE_NONE;
    int spot = g->spot_usd > 0;
    const char *cost = priced ? "cost" : "GPU-hours";
    const char *exp_cost = priced ? "exp. cost" : "exp. GPU-h";
    const char *head[20];
    int n = 0;
    const char *fixed[] = {"nodes", "GPUs", "mb", "accum", "batch", "<ckpt",
                           "step", "tokens/s", "MFU", "mem free", "days"};
    for (int k = 0; k < 11; k++)
        head[n++] = fixed[k];
    head[n++] = cost;
    head[n++] = "exp. days";
    head[n++] = exp_cost;
    if (spot) {
        head[n++] = "spot days";
        head[n++] = "spot cost";
    }
    int c_why = n;
    head[n++] = "<bottleneck";
    head[n++] = "<note";
    head[n] = NULL;
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
        if (w->batch_over >= 0.005)
            table_cell(t, r, 4, "%lld +%.0f%%", (long long)w->batch_seqs,
                       100 * w->batch_over);
        else
            table_cell(t, r, 4, "%lld", (long long)w->batch_seqs);
        table_cell(t, r, 5, "%s", w->checkpointing ? "full" : "none");
        table_cell(t, r, 9, "%.0f%%", 100 * w->headroom);
        table_cell(t, r, c_why, "%s", w->bottleneck);
        if (w->fits) {
            table_cell(t, r, 6, "%s",
                       units_fmt_time_s(b, sizeof b, w->step_s));
            table_cell(t, r, 7, "%.0f", w->tokens_per_s);
            table_cell(t, r, 8, "%.1f%%", 100 * w->mfu);
            table_cell(t, r, 10, "%.1f", w->days);
            table_cell(t, r, 11, "%s", fmt_cost(b, sizeof b, g, w->cost_usd,
                                                w->gpu_hours));
            table_cell(t, r, 12, "%s", fmt_days(b, sizeof b, w->exp_days));
            table_cell(t, r, 13, "%s", fmt_cost(b, sizeof b, g,
                                                w->exp_cost_usd,
                                                w->exp_gpu_hours));
            if (spot) {
                table_cell(t, r, 14, "%s",
                           fmt_days(b, sizeof b, w->spot_days));
                /* Spot always has a price: dollars. */
                if (isinf(w->spot_days))
                    table_cell(t, r, 15, "never");
                else
                    table_cell(t, r, 15, "%s", fmt_usd(b, sizeof b,
                                                       w->spot_cost_usd));
            }
        } else {
            for (int c = 6; c < c_why; c++)
                if (c != 9)
                    table_cell(t, r, c, "-");
            table_cell(t, r, c_why, "%s", w->batch_limited ? "batch limit"
                                                           : "does not fit");
        }
        char note[160] = "";
#define NOTE(s) strcat(note, *note ? ", " s : s)
        if (i == gr->smallest)
            NOTE("smallest meeting deadline");
        if (i == gr->fastest)
            NOTE("fastest");
        if (i == gr->cost_optimal)
            NOTE("cost-optimal");
        if (i == gr->spot_optimal)
            NOTE("cheapest on Spot");
        if (i == gr->knee)
            NOTE("knee");
        if (w->fits && w->over_batch && !w->batch_limited)
            NOTE("batch over 25%, left out");
        if (w->fits && !w->within_budget)
            NOTE("over budget");
#undef NOTE
        table_cell(t, r, c_why + 1, "%s", note);
        if (i == gr->smallest || i == gr->cost_optimal
            || i == gr->spot_optimal)
            table_row_class(t, r, "pick");
        else if (!w->fits || (w->over_batch && !w->batch_limited))
            table_row_class(t, r, "bad");
    }
}

/* "24.5 days expected (23.9 failure-free)", or the failure-free days
 * alone when the failure model is off. */
static const char *
fmt_time_pair(char *buf, size_t len, const struct plan_opts *o,
              double exp_days, double days)
{
    char b[32];
    if (o->mtbf_gpu_s <= 0)
        snprintf(buf, len, "%.1f days", days);
    else
        snprintf(buf, len, "%s%s expected (%.1f failure-free)",
                 fmt_days(b, sizeof b, exp_days),
                 isinf(exp_days) ? "" : " days", days);
    return buf;
}

/* ", $1.2M expected ($1.1M failure-free)" or nothing without a price. */
static const char *
cost_pair(char *buf, size_t len, const struct plan_opts *o,
          const struct plan_row *w)
{
    char b1[32], b2[32];
    if (isnan(w->cost_usd) || isinf(w->exp_days))
        buf[0] = '\0';
    else if (o->mtbf_gpu_s <= 0 || w->exp_cost_usd == w->cost_usd)
        snprintf(buf, len, ", %s", fmt_usd(b1, sizeof b1, w->cost_usd));
    else if (strcmp(fmt_usd(b1, sizeof b1, w->exp_cost_usd),
                    fmt_usd(b2, sizeof b2, w->cost_usd)) == 0)
        snprintf(buf, len, ", %s expected and failure-free", b1);
    else
        snprintf(buf, len, ", %s expected (%s failure-free)",
                 fmt_usd(b1, sizeof b1, w->exp_cost_usd),
                 fmt_usd(b2, sizeof b2, w->cost_usd));
    return buf;
}

/* A duration in the largest unit that keeps it above 1: "6.9 min". */
static const char *
fmt_span(char *buf, size_t len, double s)
{
    if (isinf(s))
        snprintf(buf, len, "never");
    else if (s >= 86400 * 2)
        snprintf(buf, len, "%.1f days", s / 86400);
    else if (s >= 3600)
        snprintf(buf, len, "%.1f h", s / 3600);
    else if (s >= 60)
        snprintf(buf, len, "%.1f min", s / 60);
    else if (s >= 1)
        snprintf(buf, len, "%.1f s", s);
    else
        snprintf(buf, len, "%.1f ms", s * 1e3);
    return buf;
}

/* A per-GPU MTBF: "50677 h", or in a smaller unit below an hour. */
static const char *
mtbf_text(char *buf, size_t len, double s)
{
    if (s >= 3600)
        snprintf(buf, len, "%.0f h", s / 3600);
    else
        fmt_span(buf, len, s);
    return buf;
}

/* A bandwidth: "0.98 GB/s", "1.0 MB/s". */
static const char *
fmt_bw(char *buf, size_t len, double bps)
{
    if (bps >= 1e9)
        snprintf(buf, len, "%.2f GB/s", bps / 1e9);
    else if (bps >= 1e6)
        snprintf(buf, len, "%.1f MB/s", bps / 1e6);
    else
        snprintf(buf, len, "%.0f B/s", bps);
    return buf;
}

/* The failure model at row W, one sentence; caller frees. */
static char *
goodput_sentence(const struct plan_opts *o, const struct plan_row *w)
{
    char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32], b7[32];
    if (o->mtbf_gpu_s <= 0)
        return xasprintf("failures: none assumed (an MTBF of none): "
                         "the days are failure-free");
    double lost = isinf(w->exp_days) ? 1 : 1 - w->days / w->exp_days;
    return xasprintf(
        "failures at %d node%s: one interruption every %s (MTBF %s per "
        "GPU); a checkpoint of %s takes %s at %s per node, best "
        "every %s (Young/Daly, sqrt(2 x checkpoint x MTBF)); with %s per "
        "restart %.1f%% of the time is lost", w->nodes,
        w->nodes == 1 ? "" : "s", fmt_span(b1, sizeof b1, w->mtbf_s),
        mtbf_text(b7, sizeof b7, o->mtbf_gpu_s),
        units_fmt_bytes(b2, sizeof b2, w->ckpt_bytes),
        fmt_span(b3, sizeof b3, w->ckpt_s),
        fmt_bw(b6, sizeof b6, o->ckpt_bw_node),
        fmt_span(b4, sizeof b4, w->interval_s),
        fmt_span(b5, sizeof b5, o->restart_s), 100 * lost);
}

/* With a deadline no size meets: how far off the fastest size within
 * the batch is, and whether a larger batch would help. */
static char *
missed_deadline(const struct plan_opts *o, const struct plan_gpu_result *gr)
{
    char b1[96];
    /* The fastest size within the batch, to say how far off. */
    const struct plan_row *f = NULL;
    for (int i = 0; i < gr->n_rows; i++) {
        const struct plan_row *w = &gr->rows[i];
        if (w->eligible && (f == NULL || w->exp_days < f->exp_days))
            f = w;
    }
    /* Past the batch limit a size may be fast enough: say that a larger
     * batch, not more nodes, is what would help. */
    const struct plan_row *b = NULL;
    for (int i = 0; i < gr->n_rows && b == NULL; i++) {
        const struct plan_row *w = &gr->rows[i];
        if (w->fits && (w->batch_limited || w->over_batch)
            && w->exp_days * 86400 <= o->deadline_s)
            b = w;
    }
    char *more = b ? xasprintf(" (%d nodes would meet it with a global "
                               "batch of %lld sequences or more: raise "
                               "--global-batch-tokens if convergence "
                               "allows)", b->nodes, (long long)b->batch_seqs)
                   : xstrdup("");
    char *tail = f ? xasprintf("; the fastest within the batch, %d nodes, "
                               "takes %s", f->nodes,
                               fmt_time_pair(b1, sizeof b1, o, f->exp_days,
                                             f->days))
                   : xstrdup("");
    char *v = xasprintf("no cluster of up to %d nodes meets the %.0f-day "
                        "deadline with a %.0f%% memory headroom%s%s",
                        o->max_nodes, o->deadline_s / 86400,
                        100 * o->headroom, tail, more);
    free(tail);
    free(more);
    return v;
}

/* The first verdict: the smallest size meeting the deadline (or why
 * none does), or without a deadline the fastest size. */
static char *
time_verdict(const struct plan_opts *o, const struct plan_gpu_result *gr)
{
    char b1[96], b2[96], b3[32];
    if (o->deadline_s > 0 && gr->smallest < 0)
        return missed_deadline(o, gr);
    if (o->deadline_s > 0) {
        const struct plan_row *w = &gr->rows[gr->smallest];
        const struct plan_row *p = gr->smallest > 0
                                       ? &gr->rows[gr->smallest - 1]
                                       : NULL;
        char *tail = p && p->eligible
                         ? xasprintf("; %d node%s would take %s days",
                                     p->nodes, p->nodes == 1 ? "" : "s",
                                     fmt_days(b3, sizeof b3, p->exp_days))
                         : xstrdup("");
        char *v = xasprintf(
            "smallest cluster meeting the %.0f-day deadline: %d node%s "
            "(%d GPUs), %s%s%s", o->deadline_s / 86400,
            w->nodes, w->nodes == 1 ? "" : "s", w->gpus,
            fmt_time_pair(b1, sizeof b1, o, w->exp_days, w->days),
            cost_pair(b2, sizeof b2, o, w), tail);
        free(tail);
        return v;
    }
    if (gr->fastest < 0)
        return xasprintf("no cluster of up to %d nodes finishes: either "
                         "none fits in memory within the batch, or "
                         "interruptions come faster than a restart and a "
                         "checkpoint interval (see --mtbf-per-gpu, "
                         "--restart-time)", o->max_nodes);
    const struct plan_row *w = &gr->rows[gr->fastest];
    return xasprintf("fastest within the batch: %d node%s (%d GPUs), %s%s",
                     w->nodes, w->nodes == 1 ? "" : "s", w->gpus,
                     fmt_time_pair(b1, sizeof b1, o, w->exp_days, w->days),
                     cost_pair(b2, sizeof b2, o, w));
}

/* On Spot capacity (G has a spot price): the cheapest size, or that none
 * meets the deadline. */
static char *
spot_verdict(const struct plan_opts *o, const struct plan_gpu *g,
             const struct plan_gpu_result *gr)
{
    char b1[96], b3[32];
    if (gr->spot_optimal < 0)
        return xasprintf("no cluster on Spot at %.3g preemptions per node "
                         "per month meets the %s",
                         o->preempt_node_s * 730 * 3600,
                         o->budget_usd > 0 ? "deadline within the budget"
                                           : "deadline");
    const struct plan_row *w = &gr->rows[gr->spot_optimal];
    return xasprintf("cheapest on Spot at $%.2f per GPU-hour, %.3g "
                     "preemptions per node per month: %d node%s (%d GPUs), "
                     "%s days expected, %s expected", g->spot_usd,
                     o->preempt_node_s * 730 * 3600, w->nodes,
                     w->nodes == 1 ? "" : "s", w->gpus,
                     fmt_days(b3, sizeof b3, w->spot_days),
                     fmt_usd(b1, sizeof b1, w->spot_cost_usd));
}

/* The row whose failures the goodput sentence describes: the one a
 * verdict picked, else the fastest eligible one; -1 when none is. */
static int
goodput_row(const struct plan_gpu_result *gr)
{
    int k = gr->smallest >= 0       ? gr->smallest
            : gr->cost_optimal >= 0 ? gr->cost_optimal
                                    : gr->fastest;
    for (int i = 0; k < 0 && i < gr->n_rows; i++)
        if (gr->rows[i].eligible)
            k = i;
    for (int i = 0; i < gr->n_rows; i++)
        if (gr->rows[i].eligible && gr->smallest < 0
            && gr->cost_optimal < 0 && gr->fastest < 0
            && gr->rows[i].exp_days < gr->rows[k].exp_days)
            k = i;
    return k;
}

/* The verdict sentences for one GPU type (at most PLAN_VERDICTS); caller
 * frees each. */
#define PLAN_VERDICTS 6
static int
verdicts(const struct plan_opts *o, const struct plan_gpu *g,
         const struct plan_gpu_result *gr, char **out)
{
    int n = 0;
    char b1[96], b2[96];
    out[n++] = time_verdict(o, gr);
    if (gr->cost_optimal >= 0) {
        const struct plan_row *w = &gr->rows[gr->cost_optimal];
        out[n++] = xasprintf(
            "cost-optimal%s%s: %d node%s (%d GPUs), %s%s, %.0f GPU-hours",
            o->mtbf_gpu_s > 0 ? " by expected cost" : "",
            o->budget_usd > 0 ? " within the budget" : "",
            w->nodes, w->nodes == 1 ? "" : "s", w->gpus,
            fmt_time_pair(b1, sizeof b1, o, w->exp_days, w->days),
            cost_pair(b2, sizeof b2, o, w), w->exp_gpu_hours);
    } else if (o->budget_usd > 0) {
        out[n++] = xasprintf("no cluster meets the deadline within the "
                             "budget of %s",
                             fmt_usd(b2, sizeof b2, o->budget_usd));
    }
    if (g->spot_usd > 0)
        out[n++] = spot_verdict(o, g, gr);
    int k = goodput_row(gr);
    if (k >= 0)
        out[n++] = goodput_sentence(o, &gr->rows[k]);
    out[n++] = xasprintf("knee: %s", gr->knee_why);
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
        if (k >= 0 && (best < 0 || r->per_gpu[i].rows[k].exp_cost_usd
                                       < r->per_gpu[best].rows[
                                           r->per_gpu[best].cost_optimal]
                                             .exp_cost_usd))
            best = i;
    }
    if (best < 0 || r->n_gpus < 2)
        return NULL;
    const struct plan_row *w = &r->per_gpu[best].rows[
        r->per_gpu[best].cost_optimal];
    char b[32];
    char d[32];
    return xasprintf("cheapest overall%s: %s, %d node%s (%d GPUs), %s "
                     "days, %s", o->mtbf_gpu_s > 0 ? " (expected)" : "",
                     o->gpus[best].name, w->nodes,
                     w->nodes == 1 ? "" : "s", w->gpus,
                     fmt_days(d, sizeof d, w->exp_days),
                     fmt_usd(b, sizeof b, w->exp_cost_usd));
}

/* The finalist SimGrid picks: the first of GR's ranking (cmp_sg in
 * plan_finalists.c puts what meets the deadline and budget first) when it
 * ran and meets them; -1 when none does. */
static int
simgrid_pick(const struct plan_gpu_result *gr)
{
    if (gr->n_finalists == 0)
        return -1;
    const struct plan_finalist *f = &gr->finalists[0];
    return f->ok && f->sg.meets_deadline && f->sg.within_budget ? 0 : -1;
}

/* The finalists of GR, ranked by SimGrid, beside the analytic figures:
 * each side's step, expected days and cost, and which size each model
 * picks. */
static void
fill_finalists(struct table *t, const struct plan_gpu *g,
               const struct plan_gpu_result *gr)
{
    int priced = g->price_kind != PLAN_PRICE_NONE;
    const char *head[] = {"rank", "analytic", "nodes", "GPUs", "mb",
                          "accum", "<ckpt", "step", "SimGrid step",
                          "change", "exp. days", "SimGrid days",
                          priced ? "exp. cost" : "exp. GPU-h",
                          priced ? "SimGrid cost" : "SimGrid GPU-h",
                          "<note", NULL};
    table_init(t, head);
    int pick = simgrid_pick(gr);
    for (int k = 0; k < gr->n_finalists; k++) {
        const struct plan_finalist *f = &gr->finalists[k];
        const struct plan_row *w = &gr->rows[f->row];
        int r = table_add_row(t);
        char b[64];
        table_cell(t, r, 0, "%d", k + 1);
        table_cell(t, r, 1, "%d", f->analytic_rank);
        table_cell(t, r, 2, "%d", w->nodes);
        table_cell(t, r, 3, "%d", w->gpus);
        table_cell(t, r, 4, "%lld", (long long)w->micro_batch);
        table_cell(t, r, 5, "%lld%s", (long long)w->grad_accum,
                   w->extrapolated ? "*" : "");
        table_cell(t, r, 6, "%s", w->checkpointing ? "full" : "none");
        table_cell(t, r, 7, "%s", units_fmt_time_s(b, sizeof b, w->step_s));
        table_cell(t, r, 10, "%s", fmt_days(b, sizeof b, w->exp_days));
        table_cell(t, r, 12, "%s", fmt_cost(b, sizeof b, g, w->exp_cost_usd,
                                            w->exp_gpu_hours));
        /* The analytic model's pick is its first finalist (both rank by
         * plan_row_cost among the sizes meeting the deadline). */
        const char *analytic = f->analytic_rank == 1 ? "analytic pick" : "";
        if (!f->ok) {
            for (int c = 8; c < 14; c++)
                if (c != 10 && c != 12)
                    table_cell(t, r, c, "-");
            table_cell(t, r, 14, "%s%sSimGrid: %s", analytic,
                       *analytic ? "; " : "", f->error);
            table_row_class(t, r, "bad");
            continue;
        }
        table_cell(t, r, 8, "%s",
                   units_fmt_time_s(b, sizeof b, f->sg.step_s));
        table_cell(t, r, 9, "%+.1f%%", 100 * (f->sg.step_s / w->step_s - 1));
        table_cell(t, r, 11, "%s", fmt_days(b, sizeof b, f->sg.exp_days));
        table_cell(t, r, 13, "%s", fmt_cost(b, sizeof b, g,
                                            f->sg.exp_cost_usd,
                                            f->sg.exp_gpu_hours));
        const char *sg = k == pick ? (*analytic ? "pick of both models"
                                                : "SimGrid's pick")
                         : !f->sg.meets_deadline
                             ? "misses the deadline on SimGrid"
                         : !f->sg.within_budget ? "over budget on SimGrid"
                                                : "";
        if (k == pick)
            analytic = "";
        table_cell(t, r, 14, "%s%s%s", analytic,
                   *analytic && *sg ? ", " : "", sg);
        if (k == pick)
            table_row_class(t, r, "pick");
        else if (*sg)
            table_row_class(t, r, "bad");
    }
}

/* The finalists' heading for G's GR, BREAK between its two halves (a
 * new line in text, a space in HTML); caller frees. */
static char *
finalists_head(const struct plan_gpu *g, const struct plan_gpu_result *gr,
               const char *brk)
{
    if (gr->n_finalists == 0)
        return xstrdup("SimGrid finalists: none (no size meets the deadline "
                       "and budget)");
    return xasprintf("SimGrid finalists: the %d best by the analytic model, "
                     "simulated again with%s--network simgrid, ranked by "
                     "SimGrid's expected %s", gr->n_finalists, brk,
                     g->price_kind != PLAN_PRICE_NONE ? "cost"
                                                      : "GPU-hours");
}

/* SimGrid's answer for G's GR, one sentence for the report's verdicts:
 * its pick beside the analytic model's.  NULL without finalists; caller
 * frees. */
static char *
simgrid_verdict(const struct plan_opts *o, const struct plan_gpu *g,
                const struct plan_gpu_result *gr)
{
    if (gr->n_finalists == 0)
        return NULL;
    int k = simgrid_pick(gr);
    if (k < 0)
        return xasprintf("on SimGrid no finalist of %d meets the %s",
                         gr->n_finalists,
                         o->budget_usd > 0 ? "deadline within the budget"
                                           : "deadline");
    const struct plan_finalist *f = &gr->finalists[k];
    char b1[96], b2[32], b3[32];
    const struct plan_row *a = NULL;
    for (int i = 0; i < gr->n_finalists; i++)
        if (gr->finalists[i].analytic_rank == 1)
            a = &gr->rows[gr->finalists[i].row];
    char *same = a == &gr->rows[f->row]
                     ? xstrdup("the analytic model's pick too")
                     : xasprintf("the analytic model picks %d nodes, %s, "
                                 "%s%s", a->nodes,
                                 fmt_time_pair(b1, sizeof b1, o, a->exp_days,
                                               a->days),
                                 fmt_cost(b2, sizeof b2, g, a->exp_cost_usd,
                                          a->exp_gpu_hours),
                                 g->price_kind == PLAN_PRICE_NONE
                                     ? " GPU-hours" : "");
    char *v = xasprintf("on SimGrid, of %d finalists: %d node%s (%d GPUs), "
                        "%s days expected, %s%s (%+.1f%% step time); %s",
                        gr->n_finalists, f->sg.nodes,
                        f->sg.nodes == 1 ? "" : "s", f->sg.gpus,
                        fmt_days(b1, sizeof b1, f->sg.exp_days),
                        fmt_cost(b3, sizeof b3, g, f->sg.exp_cost_usd,
                                 f->sg.exp_gpu_hours),
                        g->price_kind == PLAN_PRICE_NONE ? " GPU-hours" : "",
                        100 * (f->sg.step_s / gr->rows[f->row].step_s - 1),
                        same);
    free(same);
    return v;
}

/* The finalists of GR as text: the heading, then the table. */
static void
print_finalists(const struct plan_gpu *g, const struct plan_gpu_result *gr,
                FILE *out)
{
    char *head = finalists_head(g, gr, "\n  ");
    fprintf(out, "\n  %s\n", head);
    free(head);
    if (gr->n_finalists == 0)
        return;
    struct table t;
    fill_finalists(&t, g, gr);
    table_print_text(&t, "  ", out);
    table_free(&t);
}

void
plan_print_text(const struct plan_opts *o, const struct plan_result *r,
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
        char *v[PLAN_VERDICTS];
        int n = verdicts(o, g, gr, v);
        for (int k = 0; k < n; k++) {
            fprintf(out, "  %s\n", v[k]);
            free(v[k]);
        }
        if (o->finalists > 0)
            print_finalists(g, gr, out);
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

/* The plot's data: one block per GPU type, the block's first line its
 * title, then "gpus days cost exp_days exp_cost spot_days spot_cost
 * sg_days sg_cost sg_exp_days sg_exp_cost" rows of the sizes that fit
 * within the batch (NaN where there is no such number; the sg_ columns
 * are a SimGrid finalist's own figures, NaN for the other sizes).  Cost
 * is GPU-hours when no type has a price.  Caller unlinks and frees the
 * path. */
static void
plot_value(FILE *f, double v)
{
    if (isnan(v) || isinf(v))
        fputs(" NaN", f);
    else
        fprintf(f, " %.6g", v);
}

/* Row K of GR as SimGrid simulated it, when it is a finalist SimGrid
 * ran; else NULL. */
static const struct plan_row *
simgrid_row(const struct plan_gpu_result *gr, int k)
{
    for (int i = 0; i < gr->n_finalists; i++)
        if (gr->finalists[i].row == k && gr->finalists[i].ok)
            return &gr->finalists[i].sg;
    return NULL;
}

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
            if (!w->eligible)
                continue;
            fprintf(f, "%d", w->gpus);
            plot_value(f, w->days);
            plot_value(f, priced ? w->cost_usd : w->gpu_hours);
            plot_value(f, w->exp_days);
            plot_value(f, priced ? w->exp_cost_usd : w->exp_gpu_hours);
            plot_value(f, w->spot_days);
            /* On the cost plot's axis: GPU-hours when nothing else has a
             * price. */
            plot_value(f, priced ? w->spot_cost_usd
                                 : w->spot_days * 24 * w->gpus);
            const struct plan_row *sg = simgrid_row(&r->per_gpu[i], k);
            plot_value(f, sg ? sg->days : NAN);
            plot_value(f, !sg ? NAN : priced ? sg->cost_usd : sg->gpu_hours);
            plot_value(f, sg ? sg->exp_days : NAN);
            plot_value(f, !sg       ? NAN
                          : priced ? sg->exp_cost_usd
                                   : sg->exp_gpu_hours);
            fputc('\n', f);
        }
    }
    gnuplot_data_close(f, &dat, cause);
    return dat;
}

static int
any_spot(const struct plan_opts *o)
{
    for (int i = 0; i < o->n_gpus; i++)
        if (o->gpus[i].spot_usd > 0)
            return 1;
    return 0;
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
                          o->mtbf_gpu_s > 0 ? "1" : "0",
                          any_spot(o) ? "1" : "0",
                          o->finalists > 0 ? "1" : "0", NULL};
    char *caption = xasprintf(
        "Time to train (top) and cost (bottom) against the number of GPUs, "
        "one colour per GPU type: solid failure-free, dashed expected with "
        "failures and restarts, dotted on Spot%s; the red dashed line is "
        "the deadline.  Sizes that do not fit, exceed the batch or round "
        "it up by more than 25%% are left out.",
        o->finalists == 0 ? ""
        : o->mtbf_gpu_s > 0
            ? "; triangles the finalists simulated again on SimGrid "
              "(filled failure-free, hollow expected), beside the "
              "analytic circles"
            : "; triangles the finalists simulated again on SimGrid, "
              "beside the analytic circles");
    int rc = html_plot_or_file(h, "plan", args, caption, out, dat, cause);
    free(caption);
    return rc;
}

int
plan_plot(const struct plan_opts *o, const struct plan_result *r,
          const char *out, const char *term, char **cause)
{
    return plot(o, r, out, term, NULL, cause);
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

int
plan_write_report(const struct plan_opts *o, const struct plan_result *r,
                  const char *model, const char *command_line,
                  const char *path, char **cause)
{
    struct html h;
    char tok[32];
    char *title = xasprintf("fsdpsim plan: %s on %s tokens", model,
                            fmt_count(tok, sizeof tok, o->tokens));
    int rc = html_open(&h, path, title, cause);
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
        char *v[PLAN_VERDICTS];
        int n = verdicts(o, &o->gpus[i], &r->per_gpu[i], v);
        char *s = xasprintf("%s: %s", o->gpus[i].name, v[0]);
        html_verdict(&h, s);
        free(s);
        for (int k = 0; k < n; k++)
            free(v[k]);
        char *sg = simgrid_verdict(o, &o->gpus[i], &r->per_gpu[i]);
        if (sg) {
            s = xasprintf("%s: %s", o->gpus[i].name, sg);
            html_verdict(&h, s);
            free(s);
        }
        free(sg);
    }
    if (plot(o, r, NULL, "svg", &h, cause) != 0)
        goto fail_open;
    for (int i = 0; i < r->n_gpus; i++) {
        const struct plan_gpu *g = &o->gpus[i];
        char head[256];
        snprintf(head, sizeof head, "%s (%s, %d GPUs per node, %s)",
                 g->name, g->gpu_name, g->gpus_per_node,
                 fmt_price(b, sizeof b, g));
        html_h2(&h, head);
        char *v[PLAN_VERDICTS];
        int n = verdicts(o, g, &r->per_gpu[i], v);
        for (int k = 0; k < n; k++) {
            html_p(&h, "%s.", v[k]);
            free(v[k]);
        }
        struct table t;
        fill_table(&t, g, &r->per_gpu[i]);
        html_table(&h, &t);
        table_free(&t);
        if (o->finalists > 0) {
            char *fh = finalists_head(g, &r->per_gpu[i], " ");
            html_p(&h, "%s.", fh);
            free(fh);
            if (r->per_gpu[i].n_finalists > 0) {
                fill_finalists(&t, g, &r->per_gpu[i]);
                html_table(&h, &t);
                table_free(&t);
            }
        }
    }
    if (pick_step(o, r, &h, cause) != 0)
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
           "than the batch has sequences, batch rounding when the "
           "accumulation rounds the batch up by more than 25%% (such rows "
           "are shown, never picked).");
    if (o->mtbf_gpu_s > 0)
        html_p(&h, "Expected days and cost include failures: one "
               "interruption per %.0f GPU-hours (the Llama 3 paper's 419 "
               "unexpected interruptions in 54 days on 16,384 GPUs, unless "
               "--mtbf-per-gpu says otherwise), a checkpoint of the model "
               "and optimizer state written at %.2f GB/s per node every "
               "sqrt(2 x checkpoint time x cluster MTBF) (Young/Daly), and "
               "%.0f s per restart plus the work since the last checkpoint. "
               " Spot adds %.3g preemptions per node per month.  Expected "
               "time = failure-free time x (1 + C / tau) / (1 - (R + (tau "
               "+ C) / 2) / MTBF).", o->mtbf_gpu_s / 3600,
               o->ckpt_bw_node / 1e9, o->restart_s,
               o->preempt_node_s * 730 * 3600);
    if (html_commit(&h, cause) != 0)
        goto fail;
    return 0;
fail_open:
    html_abort(&h);
fail:
    return -1;
}

