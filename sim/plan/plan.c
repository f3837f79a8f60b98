/*
 * plan.c: cluster sizing (see plan.h).
 *
 * Every (GPU type, node count, micro-batch, checkpointing) candidate is one
 * simulate command line run by batch_run, so plan's numbers are exactly
 * what `fsdpsim simulate` prints for the row's settings.  Ranks are
 * symmetric (SPMD), so a step costs the same to simulate on 8 or 8,000
 * GPUs; what grows is the number of micro-batches on small clusters,
 * where a fixed global batch means hundreds of them.  Those steps are
 * simulated at 4 and 8 micro-batches and extended linearly: past the
 * first micro-batch, each further one issues the same all-gathers,
 * compute and reduce-scatters (doc/fsdp-semantics.md: without no_sync every
 * micro-batch reduce-scatters), so step time is affine in their number
 * and the peak memory is already reached.  Simulating all 512 micro-
 * batches of a one-node 70B plan would take ~100x longer for the same
 * answer to within the slope's rounding.
 */
#define _POSIX_C_SOURCE 200809L
#include "plan.h"
#include "batch.h"
#include "search.h"
#include "units.h"
#include "xalloc.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Micro-batches simulated at most; more are extrapolated from these two. */
/* Exposed communication above this share of the step makes it
 * communication-bound: more than a tenth of the step would go away if
 * communication were free. */
#define PLAN_COMM_BOUND 0.10
/* The knee: per-GPU throughput below this fraction of the best smaller
 * cluster's means adding nodes no longer pays in proportion. */
#define PLAN_KNEE_EFFICIENCY 0.80

static const int64_t plan_micro_batches[] = {1, 2, 4};
static const char *const plan_ckpt[] = {"none", "full"};
#define N_MB ((int)(sizeof plan_micro_batches / sizeof *plan_micro_batches))
#define N_CK 2

int *
plan_sizes(int max_nodes, int *n)
{
    int *s = NULL, k = 0;
    size_t cap = 0;
    for (int64_t p = 1; p <= max_nodes; p *= 2) {
        s = xgrow(s, &cap, k + 2, sizeof *s);
        s[k++] = (int)p;
        if (p >= 2 && p + p / 2 <= max_nodes)
            s[k++] = (int)(p + p / 2);
    }
    if (k == 0 || s[k - 1] != max_nodes) {
        s = xgrow(s, &cap, k + 1, sizeof *s);
        s[k++] = max_nodes;
    }
    *n = k;
    return s;
}

/* ---- parsing ---- */

static int
parse_amount(const char *s, double *v, const char **end)
{
    char *e;
    if (*s == '$')
        s++;
    if (!isdigit((unsigned char)*s) && *s != '.')
        return -1;
    if (units_is_hex_float(s))
        return -1;
    *v = strtod(s, &e);
    switch (*e) {
    case 'k': case 'K': *v *= 1e3; e++; break;
    case 'M': *v *= 1e6; e++; break;
    case 'B': case 'G': *v *= 1e9; e++; break;
    default: break;
    }
    *end = e;
    return isfinite(*v) && *v >= 0 ? 0 : -1;
}

int
plan_parse_usd(const char *opt, const char *s, double *usd, char **cause)
{
    const char *end;
    if (parse_amount(s, usd, &end) != 0 || *end != '\0' || !(*usd > 0)) {
        *cause = xasprintf("%s: '%s' is not an amount of dollars (write "
                           "e.g. %s 2.5M or %s 40000)", opt, s, opt, opt);
        return -1;
    }
    if (*usd > PLAN_MAX_BUDGET_USD) {
        *cause = xasprintf("%s: '%s' is above $%.0e, the largest budget "
                           "fsdpsim plans for", opt, s, PLAN_MAX_BUDGET_USD);
        return -1;
    }
    return 0;
}

int
plan_parse_duration(const char *opt, const char *s, double *sec,
                    char **cause)
{
    static const struct {
        const char *unit;
        double s;
    } units[] = {{"s", 1}, {"min", 60}, {"h", 3600}, {"d", 86400},
                 {"w", 7 * 86400}, {NULL, 0}};
    char *end;
    double v = strtod(s, &end);
    if (end != s && isfinite(v) && v > 0 && !units_is_hex_float(s))
        for (int i = 0; units[i].unit; i++)
            if (strcmp(end, units[i].unit) == 0) {
                *sec = v * units[i].s;
                if (*sec > PLAN_MAX_DEADLINE_S) {
                    *cause = xasprintf("%s: '%s' is longer than 100 years "
                                       "(36500d), the longest deadline "
                                       "fsdpsim plans for", opt, s);
                    return -1;
                }
                return 0;
            }
    *cause = xasprintf("%s: '%s' is not a duration (a number with s, min, "
                       "h, d or w: e.g. %s 30d)", opt, s, opt);
    return -1;
}

int
plan_parse_price(const char *s, char **topo, enum plan_price_kind *kind,
                 double *usd, char **cause)
{
    const char *eq = strchr(s, '=');
    const char *end;
    if (eq == NULL || eq == s || parse_amount(eq + 1, usd, &end) != 0)
        goto bad;
    if (strcmp(end, "/gpu-hour") == 0 || strcmp(end, "/gpu-h") == 0
        || strcmp(end, "/GPU-hour") == 0)
        *kind = PLAN_PRICE_GPU_HOUR;
    else if (strcmp(end, "/node") == 0)
        *kind = PLAN_PRICE_NODE;
    else
        goto bad;
    double max = *kind == PLAN_PRICE_GPU_HOUR ? PLAN_MAX_GPU_HOUR_USD
                                              : PLAN_MAX_NODE_USD;
    if (!(*usd > 0) || *usd > max) {
        *cause = xasprintf("--price %s: a price is above $0 and at most "
                           "$%.0e%s (leave out --price for no price)", s,
                           max, *kind == PLAN_PRICE_GPU_HOUR ? "/gpu-hour"
                                                              : "/node");
        return -1;
    }
    *topo = xstrndup(s, (size_t)(eq - s));
    return 0;
bad:
    *cause = xasprintf("--price %s: expected TOPOLOGY=$X/gpu-hour (renting) "
                       "or TOPOLOGY=$Y/node (buying), e.g. --price "
                       "dgx-h100=2.5/gpu-hour", s);
    return -1;
}

int
plan_parse_rate(const char *opt, const char *s, double *per_s, char **cause)
{
    static const struct {
        const char *unit;
        double s;
    } units[] = {{"/h", 3600}, {"/hour", 3600}, {"/d", 86400},
                 {"/day", 86400}, {"/w", 7 * 86400}, {"/week", 7 * 86400},
                 {"/month", 730 * 3600.0}, {NULL, 0}};
    char *end;
    double v = strtod(s, &end);
    if (end != s && isfinite(v) && v >= 0 && !units_is_hex_float(s)) {
        if (*end == '%') {
            v /= 100;
            end++;
        }
        for (int i = 0; units[i].unit; i++)
            if (strcmp(end, units[i].unit) == 0) {
                *per_s = v / units[i].s;
                if (*per_s > 1.0 / 60) {
                    *cause = xasprintf("%s: '%s' is more than one a "
                                       "minute per node; no job makes "
                                       "progress at that rate", opt, s);
                    return -1;
                }
                return 0;
            }
    }
    *cause = xasprintf("%s: '%s' is not a rate per node (a number, or a "
                       "percentage, per h, day, week or month (730 h): "
                       "e.g. %s 20%%/month)", opt, s, opt);
    return -1;
}

/* ---- goodput ---- */

double
plan_young_daly(double ckpt_s, double mtbf_s)
{
    return sqrt(2 * ckpt_s * mtbf_s);
}

double
plan_expected_s(double work_s, double ckpt_s, double interval_s,
                double restart_s, double mtbf_s)
{
    if (isinf(mtbf_s))
        return work_s;
    double lost = (restart_s + (interval_s + ckpt_s) / 2) / mtbf_s;
    if (!(lost < 1))
        return INFINITY;
    return work_s * (1 + ckpt_s / interval_s) / (1 - lost);
}

/* Wall time and interval on a cluster of mean time between interruptions
 * MTBF_S; W when there are none. */
static double
expected_days(const struct plan_opts *o, const struct plan_row *row,
              double mtbf_s, double *interval_s)
{
    double work = row->days * 86400;
    if (isinf(mtbf_s) || !(row->ckpt_s > 0)) {
        *interval_s = INFINITY;
        return isinf(mtbf_s) ? row->days
                             : plan_expected_s(work, 0, work,
                                               o->restart_s, mtbf_s)
                                   / 86400;
    }
    *interval_s = plan_young_daly(row->ckpt_s, mtbf_s);
    return plan_expected_s(work, row->ckpt_s, *interval_s, o->restart_s,
                           mtbf_s) / 86400;
}

void
plan_goodput(const struct plan_opts *o, const struct plan_gpu *g,
             struct plan_row *row)
{
    row->spot_days = row->spot_cost_usd = NAN;
    row->exp_cost_usd = NAN;
    row->ckpt_s = o->ckpt_bw_node > 0
                      ? row->ckpt_bytes / (o->ckpt_bw_node * row->nodes)
                      : 0;
    double fail_rate = o->mtbf_gpu_s > 0 ? row->gpus / o->mtbf_gpu_s : 0;
    row->mtbf_s = fail_rate > 0 ? 1 / fail_rate : INFINITY;
    row->exp_days = expected_days(o, row, row->mtbf_s, &row->interval_s);
    row->exp_gpu_hours = row->exp_days * 24 * row->gpus;
    if (g->price_kind == PLAN_PRICE_GPU_HOUR)
        row->exp_cost_usd = row->exp_gpu_hours * g->price_usd;
    else if (g->price_kind == PLAN_PRICE_NODE)
        row->exp_cost_usd = row->nodes * g->price_usd;
    if (g->spot_usd > 0) {
        double rate = fail_rate + row->nodes * o->preempt_node_s;
        double iv;
        row->spot_days = expected_days(o, row, rate > 0 ? 1 / rate
                                                        : INFINITY, &iv);
        row->spot_cost_usd = row->spot_days * 24 * row->gpus * g->spot_usd;
    }
}

/* The model and optimizer state a checkpoint writes: each rank's shard
 * of the parameters and optimizer state, times the ranks holding
 * distinct shards (all of them when fully sharded, one node's under
 * HYBRID_SHARD, one rank's when unsharded). */
static double
state_bytes(const struct batch_columns *cols, const struct sweep_result *res)
{
    double shard = batch_value(cols, res, "mem_breakdown.sharded_params")
                   + batch_value(cols, res, "mem_breakdown.optimizer_state");
    double world = batch_value(cols, res, "world_size");
    double per_node = batch_value(cols, res, "gpus_per_node");
    const char *strategy = "";
    for (int k = 0; k < cols->n; k++)
        if (strcmp(cols->names[k], "sharding_strategy") == 0)
            strategy = res->values[k];
    if (strstr(strategy, "HYBRID"))
        return shard * per_node;
    if (strstr(strategy, "SHARD"))
        return shard * world;
    return shard;
}

/* ---- simulating the sizes ---- */

/* One candidate setting at one size: which points hold it. */
struct cand {
    int size;                   /* index into the sizes evaluated */
    int64_t mb, accum;          /* the accumulation the batch asks for */
    int ck;
    int64_t p_lo, p_hi;         /* points (p_lo = -1: accum simulated
                                   directly at p_hi) */
};

static void
add_point(struct batch_point **pts, struct search_args **args, int64_t *n,
          size_t *cap, const struct plan_opts *o, const struct plan_gpu *g,
          int nodes, int64_t mb, int64_t accum, int ck)
{
    size_t c = *cap;
    *args = xgrow(*args, &c, *n + 1, sizeof **args);
    *pts = xrealloc(*pts, c * sizeof **pts);
    *cap = c;
    struct search_args *a = &(*args)[*n];
    plan_point_args(o, g, nodes, mb, accum, ck, a);
    (*pts)[*n] = search_args_point(a);
    (*n)++;
}

void
plan_point_args(const struct plan_opts *o, const struct plan_gpu *g,
                int nodes, int64_t mb, int64_t accum, int ck,
                struct search_args *a)
{
    search_args_init(a, o->base_argc, o->base);
    search_args_add(a, "--topology=%s", g->topology);
    if (g->strategy)
        search_args_add(a, "--sharding-strategy=%s", g->strategy);
    search_args_add(a, "--nodes=%d", nodes);
    search_args_add(a, "--micro-batch=%lld", (long long)mb);
    search_args_add(a, "--grad-accum=%lld", (long long)accum);
    search_args_add(a, "--activation-checkpointing=%s", plan_ckpt[ck]);
    for (int i = 0; i < o->n_grid_args; i++)
        search_args_add(a, "%s", o->grid_args[i]);
}

static void
keep_error(struct plan_result *r, const struct sweep_result *res)
{
    if (!res->ok && res->message && r->first_error == NULL)
        r->first_error = xstrdup(res->message);
}

double
plan_extend(double at_hi, double at_lo, int64_t accum)
{
    /* Affine in the micro-batches (see the file's header):
     * t(A) = t(8) + (A - 8) (t(8) - t(4)) / 4. */
    double da = (double)(accum - PLAN_ACCUM_HI)
                / (PLAN_ACCUM_HI - PLAN_ACCUM_LO);
    return at_hi + da * (at_hi - at_lo);
}

void
plan_row_finish(const struct plan_opts *o, const struct plan_gpu *g,
                struct plan_row *row)
{
    row->batch_seqs = row->micro_batch * row->grad_accum * row->gpus;
    row->batch_over = (double)row->batch_seqs / o->global_batch_seqs
                      - 1;
    row->over_batch = row->batch_over > PLAN_BATCH_SLACK + 1e-12;
    row->eligible = row->fits && !row->batch_limited
                    && !row->over_batch;
    if (row->fits) {
        row->days = o->tokens / row->tokens_per_s / 86400;
        row->gpu_hours = row->days * 24 * row->gpus;
        if (g->price_kind == PLAN_PRICE_GPU_HOUR)
            row->cost_usd = row->gpu_hours * g->price_usd;
        else if (g->price_kind == PLAN_PRICE_NODE)
            row->cost_usd = row->nodes * g->price_usd;
        row->bottleneck = row->batch_limited ? "batch limit"
                          : row->over_batch ? "batch rounding"
                          : row->exposed_share > PLAN_COMM_BOUND
                              ? "communication"
                              : "compute";
        plan_goodput(o, g, row);
    } else {
        if (row->batch_limited)
            row->bottleneck = "batch limit";
        row->exp_days = row->spot_days = NAN;
        row->exp_cost_usd = row->spot_cost_usd = NAN;
    }
    row->meets_deadline = row->eligible && isfinite(row->exp_days)
                          && (o->deadline_s <= 0
                              || row->exp_days * 86400 <= o->deadline_s);
    row->within_budget = o->budget_usd <= 0 || isnan(row->exp_cost_usd)
                         || row->exp_cost_usd <= o->budget_usd;
    row->spot_meets = row->eligible && g->spot_usd > 0
                      && isfinite(row->spot_days)
                      && (o->deadline_s <= 0
                          || row->spot_days * 86400 <= o->deadline_s)
                      && (o->budget_usd <= 0
                          || row->spot_cost_usd <= o->budget_usd);
}

/* Fill rows[i] for each node count nodes[i] of GPU type g. */
static void
evaluate(const struct plan_opts *o, const struct plan_gpu *g,
         const int *nodes, int n_sizes, struct plan_row *rows,
         struct plan_result *r, const struct batch_columns *cols)
{
    struct batch_point *pts = NULL;
    struct search_args *args = NULL;
    struct cand *cands = xcalloc((size_t)n_sizes * N_MB * N_CK,
                                 sizeof *cands);
    int n_cands = 0;
    int64_t n = 0;
    size_t cap = 0;
    for (int i = 0; i < n_sizes; i++) {
        int64_t gpus = (int64_t)nodes[i] * g->gpus_per_node;
        for (int m = 0; m < N_MB; m++) {
            int64_t mb = plan_micro_batches[m];
            /* A larger micro-batch than the batch leaves per GPU would
             * change the global batch; micro-batch 1 always runs, and is
             * flagged as a batch limit when even it is too large. */
            if (m > 0 && mb * gpus > o->global_batch_seqs)
                continue;
            int64_t accum = (o->global_batch_seqs + mb * gpus - 1)
                            / (mb * gpus);
            /* Rounding the accumulation up may overshoot the batch (4 x
             * 384 GPUs x 2 is 3072 sequences for 2048): a larger batch
             * is fewer, longer steps, not a faster one, so settings that
             * overshoot by more than PLAN_BATCH_SLACK are left out. */
            if (m > 0 && (double)(mb * gpus * accum)
                             > (1 + PLAN_BATCH_SLACK) * o->global_batch_seqs)
                continue;
            for (int ck = 0; ck < N_CK; ck++) {
                struct cand *c = &cands[n_cands++];
                *c = (struct cand){i, mb, accum, ck, -1, -1};
                if (accum > PLAN_ACCUM_HI) {
                    c->p_lo = n;
                    add_point(&pts, &args, &n, &cap, o, g, nodes[i], mb,
                              PLAN_ACCUM_LO, ck);
                    c->p_hi = n;
                    add_point(&pts, &args, &n, &cap, o, g, nodes[i], mb,
                              PLAN_ACCUM_HI, ck);
                } else {
                    c->p_hi = n;
                    add_point(&pts, &args, &n, &cap, o, g, nodes[i], mb,
                              accum, ck);
                }
            }
        }
    }
    struct sweep_result *res = xcalloc(n ? n : 1, sizeof *res);
    char *label = xasprintf("plan: %s", g->name);
    if (batch_run(label, pts, n, o->jobs, res))
        r->interrupted = 1;
    free(label);

    for (int i = 0; i < n_sizes; i++) {
        struct plan_row *row = &rows[i];
        memset(row, 0, sizeof *row);
        row->nodes = nodes[i];
        row->gpus = nodes[i] * g->gpus_per_node;
        row->batch_limited = row->gpus > o->global_batch_seqs;
        row->cost_usd = NAN;
        row->bottleneck = "memory";
        double best_tps = -1, best_headroom = -INFINITY;
        for (int k = 0; k < n_cands; k++) {
            const struct cand *c = &cands[k];
            if (c->size != i)
                continue;
            const struct sweep_result *hi = &res[c->p_hi];
            const struct sweep_result *lo = c->p_lo >= 0 ? &res[c->p_lo]
                                                         : NULL;
            keep_error(r, hi);
            if (lo)
                keep_error(r, lo);
            if (!hi->ok || (lo && !lo->ok))
                continue;
            double hr = search_mem_headroom(cols, hi);
            if (lo && search_mem_headroom(cols, lo) < hr)
                hr = search_mem_headroom(cols, lo);
            int fits = search_fits(cols, hi, o->headroom)
                       && (!lo || search_fits(cols, lo, o->headroom));
            if (!fits) {
                /* Shown when nothing fits: how short the best one is. */
                if (best_tps < 0 && hr > best_headroom) {
                    best_headroom = hr;
                    row->headroom = hr;
                    row->micro_batch = c->mb;
                    row->grad_accum = c->accum;
                    row->checkpointing = c->ck;
                }
                continue;
            }
            double t = batch_value(cols, hi, "step_time_s");
            double e = batch_value(cols, hi, "exposed_comm_s");
            double mfu = batch_value(cols, hi, "mfu");
            if (lo) {
                /* MFU is model FLOPs over time, so it scales by
                 * (A / 8) t(8) / t(A). */
                double tA = plan_extend(t, batch_value(cols, lo,
                                                       "step_time_s"),
                                        c->accum);
                e = plan_extend(e, batch_value(cols, lo, "exposed_comm_s"),
                                c->accum);
                if (e < 0)
                    e = 0;
                mfu *= (double)c->accum / PLAN_ACCUM_HI * t / tA;
                t = tA;
            }
            double tokens_step = (double)c->mb * c->accum * o->seq_len
                                 * row->gpus;
            double tps = tokens_step / t;
            if (tps <= best_tps)
                continue;
            best_tps = tps;
            row->fits = 1;
            row->extrapolated = lo != NULL;
            row->micro_batch = c->mb;
            row->grad_accum = c->accum;
            row->checkpointing = c->ck;
            row->step_s = t;
            row->tokens_per_s = tps;
            row->mfu = mfu;
            row->headroom = hr;
            row->exposed_share = e / t;
            row->ckpt_bytes = state_bytes(cols, hi);
        }
        plan_row_finish(o, g, row);
    }
    for (int64_t i = 0; i < n; i++) {
        sweep_result_free(&res[i]);
        search_args_free(&args[i]);
    }
    free(res);
    free(args);
    free(pts);
    free(cands);
}

static void
insert_row(struct plan_gpu_result *gr, const struct plan_row *row)
{
    int at = 0;
    while (at < gr->n_rows && gr->rows[at].nodes < row->nodes)
        at++;
    gr->rows = xrealloc(gr->rows, sizeof *gr->rows * (gr->n_rows + 1));
    memmove(&gr->rows[at + 1], &gr->rows[at],
            sizeof *gr->rows * (gr->n_rows - at));
    gr->rows[at] = *row;
    gr->n_rows++;
}

/* Whether row W meets the deadline: on demand, or on Spot when SPOT. */
static int
row_meets(const struct plan_row *w, int spot)
{
    return spot ? w->spot_meets : w->meets_deadline;
}

static int
first_meeting(const struct plan_gpu_result *gr, int spot)
{
    for (int i = 0; i < gr->n_rows; i++)
        if (row_meets(&gr->rows[i], spot))
            return i;
    return -1;
}

/* The sizes are a coarse grid: bisect between the last size that misses
 * the deadline (on Spot when SPOT) and the first that meets it, assuming
 * time to train falls as nodes are added (it does below the knee, and the
 * grid already shows where it stops), inserting the rows evaluated on the
 * way.  A size evaluated already (the Spot bisection runs over the rows
 * the on-demand one added) is read, not evaluated again. */
static void
bisect_smallest_meeting(const struct plan_opts *o, const struct plan_gpu *g,
                        struct plan_gpu_result *gr, struct plan_result *r,
                        const struct batch_columns *cols, int spot)
{
    int k = first_meeting(gr, spot);
    if (k <= 0)
        return;
    int lo = gr->rows[k - 1].nodes, hi = gr->rows[k].nodes;
    while (hi - lo > 1 && !r->interrupted) {
        int mid = lo + (hi - lo) / 2;
        int have = -1;
        for (int i = 0; i < gr->n_rows; i++)
            if (gr->rows[i].nodes == mid)
                have = i;
        struct plan_row row;
        if (have >= 0) {
            row = gr->rows[have];
        } else {
            evaluate(o, g, &mid, 1, &row, r, cols);
            insert_row(gr, &row);
        }
        if (row_meets(&row, spot))
            hi = mid;
        else
            lo = mid;
    }
}

double
plan_row_cost(const struct plan_row *w, int spot)
{
    if (spot)
        return w->spot_cost_usd;
    return isnan(w->exp_cost_usd) ? w->exp_gpu_hours : w->exp_cost_usd;
}

/* The knee: walking up the sizes, the last one before per-GPU throughput
 * falls below PLAN_KNEE_EFFICIENCY of the best smaller cluster's, or
 * before the batch runs out of sequences. */
static void
find_knee(const struct plan_opts *o, struct plan_gpu_result *gr)
{
    int best = -1, prev = -1;
    gr->knee = -1;
    for (int i = 0; i < gr->n_rows; i++) {
        const struct plan_row *w = &gr->rows[i];
        if (!w->fits || (w->over_batch && !w->batch_limited))
            continue;
        double per_gpu = w->tokens_per_s / w->gpus;
        if (prev >= 0 && w->batch_limited) {
            gr->knee = prev;
            gr->knee_why = xasprintf(
                "beyond %d nodes (%d GPUs) the batch runs out: %lld "
                "sequences of %lld tokens give each of %d GPUs less than "
                "one sequence, so the cluster either idles or trains on a "
                "larger batch than asked (raise --global-batch-tokens only "
                "if convergence allows)",
                gr->rows[prev].nodes, gr->rows[prev].gpus,
                (long long)o->global_batch_seqs, (long long)o->seq_len,
                w->gpus);
            return;
        }
        if (best >= 0) {
            const struct plan_row *b = &gr->rows[best];
            double eff = per_gpu / (b->tokens_per_s / b->gpus);
            if (eff < PLAN_KNEE_EFFICIENCY) {
                const struct plan_row *p = &gr->rows[prev];
                gr->knee = prev;
                gr->knee_why = xasprintf(
                    "beyond %d node%s adding nodes stops paying: at %d "
                    "nodes each GPU delivers %.0f%% of its best throughput "
                    "(at %d node%s); exposed communication grows to %.0f%% "
                    "of the step (%.0f%% at %d node%s): with %lld "
                    "micro-batch%s of %lld sequence%s per step (%lld at %d "
                    "node%s) there is less compute per step to hide the "
                    "all-gathers and reduce-scatters behind",
                    p->nodes, p->nodes == 1 ? "" : "s", w->nodes, 100 * eff,
                    b->nodes, b->nodes == 1 ? "" : "s",
                    100 * w->exposed_share, 100 * p->exposed_share,
                    p->nodes, p->nodes == 1 ? "" : "s",
                    (long long)w->grad_accum,
                    w->grad_accum == 1 ? "" : "es",
                    (long long)w->micro_batch,
                    w->micro_batch == 1 ? "" : "s",
                    (long long)p->grad_accum, p->nodes,
                    p->nodes == 1 ? "" : "s");
                return;
            }
        }
        if (best < 0 || per_gpu > gr->rows[best].tokens_per_s
                                      / gr->rows[best].gpus)
            best = i;
        prev = i;
    }
    gr->knee_why = xasprintf("no knee up to %d nodes: per-GPU throughput "
                             "stays within %.0f%% of its best",
                             o->max_nodes,
                             100 * (1 - PLAN_KNEE_EFFICIENCY));
}

static void
plan_one(const struct plan_opts *o, const struct plan_gpu *g,
         struct plan_gpu_result *gr, struct plan_result *r,
         const struct batch_columns *cols)
{
    int n_sizes;
    int *sizes = plan_sizes(o->max_nodes, &n_sizes);
    gr->rows = xcalloc(n_sizes, sizeof *gr->rows);
    gr->n_rows = n_sizes;
    evaluate(o, g, sizes, n_sizes, gr->rows, r, cols);
    free(sizes);
    if (o->deadline_s > 0)
        bisect_smallest_meeting(o, g, gr, r, cols, 0);
    /* Likewise for Spot, whose preemptions make it slower: the smallest
     * size meeting the deadline there. */
    if (o->deadline_s > 0 && g->spot_usd > 0)
        bisect_smallest_meeting(o, g, gr, r, cols, 1);
    /* Without a deadline there is no smallest size meeting it. */
    gr->smallest = o->deadline_s > 0 ? first_meeting(gr, 0) : -1;
    gr->cost_optimal = gr->spot_optimal = gr->fastest = -1;
    int want_fastest = o->deadline_s <= 0;
    for (int i = 0; i < gr->n_rows; i++) {
        const struct plan_row *w = &gr->rows[i];
        if (want_fastest && w->meets_deadline && (gr->fastest < 0
                            || w->exp_days < gr->rows[gr->fastest].exp_days))
            gr->fastest = i;
        if (w->spot_meets
            && (gr->spot_optimal < 0
                || plan_row_cost(w, 1)
                       < plan_row_cost(&gr->rows[gr->spot_optimal], 1)))
            gr->spot_optimal = i;
        if (!w->meets_deadline || !w->within_budget)
            continue;
        if (gr->cost_optimal < 0
            || plan_row_cost(w, 0)
                   < plan_row_cost(&gr->rows[gr->cost_optimal], 0))
            gr->cost_optimal = i;
    }
    find_knee(o, gr);
}

int
plan_run(const struct plan_opts *o, struct plan_result *r)
{
    memset(r, 0, sizeof *r);
    r->per_gpu = xcalloc(o->n_gpus, sizeof *r->per_gpu);
    r->n_gpus = o->n_gpus;
    struct batch_columns cols;
    batch_columns_init(&cols);
    for (int i = 0; i < o->n_gpus && !r->interrupted; i++)
        plan_one(o, &o->gpus[i], &r->per_gpu[i], r, &cols);
    batch_columns_free(&cols);
    return r->interrupted ? -1 : 0;
}

void
plan_free(struct plan_result *r)
{
    for (int i = 0; i < r->n_gpus; i++) {
        free(r->per_gpu[i].rows);
        free(r->per_gpu[i].knee_why);
        for (int k = 0; k < r->per_gpu[i].n_finalists; k++)
            free(r->per_gpu[i].finalists[k].error);
        free(r->per_gpu[i].finalists);
    }
    free(r->per_gpu);
    free(r->first_error);
    memset(r, 0, sizeof *r);
}
