/*
 * tune.c: the FSDP settings search of `fsdpsim tune` (see tune.h).
 *
 * The full product of the knobs is ~6,000 points for a llama-sized model
 * (9 wrappings x 5 strategies x 2 checkpointing x 4 micro-batches x 7
 * accumulation modes x 2 prefetch x 2 limiter), a few minutes on two
 * cores.  The search is staged instead, following how the knobs act:
 *   1. what decides memory and the size of each collective: wrapping,
 *      sharding strategy, checkpointing and micro-batch, at one micro-
 *      batch per step with PyTorch's default prefetch and limiter;
 *   2. what decides overlap and how often gradients are reduced:
 *      accumulation with and without no_sync, backward_prefetch and
 *      limit_all_gathers, around the best TUNE_SEEDS settings of stage 1;
 *   3. the winner over every wrapping, for the throughput curve.
 * A knob of stage 2 can change memory (no_sync keeps unsharded gradients,
 * the limiter bounds all-gather buffers), which is why stage 2 starts
 * from several settings and every point is checked against the headroom
 * on its own.  The cost, against the full product: a combination whose
 * stage-1 half ranks below the seeds is not tried.
 */
#define _POSIX_C_SOURCE 200809L
#include "tune.h"
#include "batch.h"
#include "setup.h"
#include "wrap.h"
#include "xalloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Stage-1 settings that stage 2 refines. */
#define TUNE_SEEDS 4
/* Distinct wrappings tried at most, spread over the thresholds. */
#define TUNE_MAX_WRAPS 16

static const int64_t tune_micro_batches[] = {1, 2, 4, 8};
#define N_MB ((int)(sizeof tune_micro_batches / sizeof *tune_micro_batches))

/* ---- the size policy's thresholds ---- */

static int
cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* A partition's fingerprint: the unit count and the units' sizes folded
 * together (FNV-1a); two thresholds with the same fingerprint draw the
 * same units. */
static uint64_t
plan_signature(const struct wrap_plan *p)
{
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)p->n_units;
    for (int i = 0; i < p->n_units; i++) {
        h ^= (uint64_t)p->units[i].numel;
        h *= 1099511628211ULL;
    }
    return h;
}

static int
signature_at(const struct model *m, struct run_config *cfg, int64_t t,
             uint64_t *sig, int *n_units)
{
    struct wrap_plan p;
    char *cause = NULL;
    cfg->min_num_params = t;
    if (wrap_plan_build(m, cfg, 1, 1, &p, &cause) != 0) {
        free(cause);
        return -1;
    }
    *sig = plan_signature(&p);
    *n_units = p.n_units;
    wrap_plan_free(&p);
    return 0;
}

/* The roundest number in [lo, hi) that draws the same units as lo: d x
 * 10^k with the fewest digits, so the PyTorch code reads
 * min_num_params=int(3e7) rather than 26214400.  The units can change
 * inside the interval too (the policy compares what is left of a module
 * after its wrapped children, not only whole subtrees), hence the
 * check. */
static int64_t
round_in(const struct model *m, struct run_config *cfg, int64_t lo,
         int64_t hi, uint64_t sig)
{
    for (double p = 1e12; p >= 1; p /= 10) {
        double r = ceil((double)lo / p) * p;
        uint64_t s;
        int n;
        if (r >= (double)lo && r < (double)hi
            && signature_at(m, cfg, (int64_t)r, &s, &n) == 0 && s == sig)
            return (int64_t)r;
    }
    return lo;
}

/* Append to (*t, *sig, *units) every change point in (a, b], where the
 * units at a and b differ: bisection down to one parameter. */
static void
find_changes(const struct model *m, struct run_config *cfg, int64_t a,
             uint64_t sa, int64_t b, uint64_t sb, int ub, int64_t **t,
             uint64_t **sig, int **units, int *n, size_t *cap)
{
    if (sa == sb)
        return;
    if (b - a <= 1) {
        size_t c = *cap;
        *t = xgrow(*t, &c, *n + 1, sizeof **t);
        *sig = xrealloc(*sig, c * sizeof **sig);
        *units = xrealloc(*units, c * sizeof **units);
        *cap = c;
        (*t)[*n] = b;
        (*sig)[*n] = sb;
        (*units)[(*n)++] = ub;
        return;
    }
    int64_t mid = a + (b - a) / 2;
    uint64_t sm;
    int um;
    if (signature_at(m, cfg, mid, &sm, &um) != 0)
        return;
    find_changes(m, cfg, a, sa, mid, sm, um, t, sig, units, n, cap);
    find_changes(m, cfg, mid, sm, b, sb, ub, t, sig, units, n, cap);
}

int64_t *
tune_wrap_thresholds(const struct model *m, const struct run_config *c,
                     int max_n, int **units, int *n)
{
    /* size_based_auto_wrap_policy compares what is left of a module
     * after its wrapped children with min_num_params, so the units change
     * at thresholds that are not only whole-subtree counts.  Walk a grid
     * (every subtree count), and bisect each step of it whose two ends
     * draw different units down to the exact threshold where they
     * change: ~20 changes x ~35 halvings of wrap_plan_build, a few ms. */
    int64_t *grid = xcalloc(m->n_modules + 2, sizeof *grid);
    int ng = 0;
    grid[ng++] = 1;
    for (int i = 0; i < m->n_modules; i++)
        if (m->modules[i]->subtree_params > 1)
            grid[ng++] = m->modules[i]->subtree_params;
    qsort(grid, ng, sizeof *grid, cmp_i64);
    struct run_config cfg = *c;
    cfg.wrap = WRAP_SIZE;
    int64_t *lo = NULL;
    uint64_t *sigs = NULL;
    int *cnt = NULL, k = 0;
    size_t cap = 0;
    int64_t prev_t = 0;
    uint64_t prev_sig = 0;
    for (int i = 0; i < ng; i++) {
        uint64_t sig;
        int nu;
        if ((i > 0 && grid[i] == grid[i - 1])
            || signature_at(m, &cfg, grid[i], &sig, &nu) != 0)
            continue;
        if (k == 0) {
            size_t c2 = cap;
            lo = xgrow(lo, &c2, 1, sizeof *lo);
            sigs = xrealloc(sigs, c2 * sizeof *sigs);
            cnt = xrealloc(cnt, c2 * sizeof *cnt);
            cap = c2;
            lo[0] = grid[i];
            sigs[0] = sig;
            cnt[k++] = nu;
        } else {
            find_changes(m, &cfg, prev_t, prev_sig, grid[i], sig, nu, &lo,
                         &sigs, &cnt, &k, &cap);
        }
        prev_t = grid[i];
        prev_sig = sig;
    }
    free(grid);
    /* Each set of units holds from its threshold up to the next one's. */
    int take = k < max_n ? k : max_n;
    int64_t *out = xcalloc(take + 1, sizeof *out);
    int *u = xcalloc(take + 1, sizeof *u);
    int n_out = 0;
    for (int j = 0; j < take; j++) {
        /* Spread over the range, the first and last always kept. */
        int i = take > 1 ? (int)((int64_t)j * (k - 1) / (take - 1)) : 0;
        int64_t hi = i + 1 < k ? lo[i + 1] : 10 * lo[i];
        out[n_out] = round_in(m, &cfg, lo[i], hi, sigs[i]);
        u[n_out++] = cnt[i];
    }
    free(lo);
    free(cnt);
    free(sigs);
    *units = u;
    *n = n_out;
    return out;
}

/* ---- points ---- */

void
tune_setting_args(const struct tune_setting *s, struct search_args *a)
{
    if (s->min_num_params > 0) {
        search_args_add(a, "--auto-wrap-policy=size");
        search_args_add(a, "--min-num-params=%lld",
                        (long long)s->min_num_params);
    } else {
        search_args_add(a, "--auto-wrap-policy=transformer");
    }
    search_args_add(a, "--sharding-strategy=%s", sharding_name(s->sharding));
    search_args_add(a, "--activation-checkpointing=%s", ac_name(s->ac));
    search_args_add(a, "--micro-batch=%lld", (long long)s->micro_batch);
    search_args_add(a, "--grad-accum=%lld", (long long)s->grad_accum);
    search_args_add(a, "--no-sync=%s", s->no_sync ? "true" : "false");
    search_args_add(a, "--backward-prefetch=%s",
                    backward_prefetch_name(s->prefetch));
    search_args_add(a, "--limit-all-gathers=%s",
                    s->limit_all_gathers ? "true" : "false");
}

/* Simulate settings s[0..n) and append them to r->points. */
static void
run_settings(const struct tune_opts *o, const struct tune_setting *s, int n,
             struct tune_result *r, const struct batch_columns *cols)
{
    struct search_args *args = xcalloc(n + 1, sizeof *args);
    struct batch_point *pts = xcalloc(n + 1, sizeof *pts);
    for (int i = 0; i < n; i++) {
        search_args_init(&args[i], o->base_argc, o->base);
        tune_setting_args(&s[i], &args[i]);
        pts[i] = search_args_point(&args[i]);
    }
    struct sweep_result *res = xcalloc(n + 1, sizeof *res);
    if (batch_run("tune", pts, n, o->jobs, res))
        r->interrupted = 1;
    r->points = xrealloc(r->points,
                         sizeof *r->points * (r->n_points + n + 1));
    for (int i = 0; i < n; i++) {
        struct tune_point *p = &r->points[r->n_points++];
        memset(p, 0, sizeof *p);
        p->s = s[i];
        p->ok = res[i].ok;
        if (!p->ok && res[i].message && r->first_error == NULL)
            r->first_error = xstrdup(res[i].message);
        if (p->ok) {
            p->fits = search_fits(cols, &res[i], o->headroom);
            p->tokens_per_s_per_gpu = batch_value(cols, &res[i],
                                                  "tokens_per_s_per_gpu");
            p->step_s = batch_value(cols, &res[i], "step_time_s");
            p->mfu = batch_value(cols, &res[i], "mfu");
            p->mem_free = search_mem_headroom(cols, &res[i]);
            p->exposed_share = batch_value(cols, &res[i], "exposed_comm_s")
                               / p->step_s;
            p->s.n_units = (int)batch_value(cols, &res[i], "n_units");
        }
        sweep_result_free(&res[i]);
        search_args_free(&args[i]);
    }
    free(res);
    free(args);
    free(pts);
}

/* Fitting points, best throughput first.  Throughputs within 0.1% of
 * each other are a tie (below what the model can tell apart), broken in
 * favour of fewer changes from PyTorch's defaults (BACKWARD_PRE, the
 * rate limiter on, no no_sync), then by search order, so the ranking is
 * deterministic and the winner no more unusual than it has to be.  The
 * key is the throughput rounded to four significant digits, which keeps
 * the comparison transitive as qsort needs. */
struct ranked {
    int i;
    double key;
    int changes;
};

static int
cmp_rank(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? 1 : -1;
    if (x->changes != y->changes)
        return x->changes - y->changes;
    return (x->i > y->i) - (x->i < y->i);
}

double
tune_rank_key(double v)
{
    if (!(v > 0))
        return v;
    double unit = pow(10, floor(log10(v)) - 3);
    return round(v / unit) * unit;
}

static void
rank(struct tune_result *r)
{
    struct ranked *k = xcalloc(r->n_points + 1, sizeof *k);
    int n = 0;
    for (int i = 0; i < r->n_points; i++) {
        const struct tune_point *p = &r->points[i];
        if (p->ok && p->fits)
            k[n++] = (struct ranked){
                i, tune_rank_key(p->tokens_per_s_per_gpu),
                (p->s.prefetch != BWD_PREFETCH_PRE)
                    + !p->s.limit_all_gathers + p->s.no_sync};
    }
    qsort(k, n, sizeof *k, cmp_rank);
    free(r->ranked);
    r->ranked = xcalloc(n + 1, sizeof *r->ranked);
    for (int i = 0; i < n; i++)
        r->ranked[i] = k[i].i;
    r->n_ranked = n;
    free(k);
}

/* Equal results as the top list tells them apart: the ranking's key and
 * the step, the free memory to the percent and the exposed communication
 * to a tenth of one, as the list prints them. */
static int
same_result(const struct tune_point *a, const struct tune_point *b)
{
    return tune_rank_key(a->tokens_per_s_per_gpu)
               == tune_rank_key(b->tokens_per_s_per_gpu)
           && tune_rank_key(a->step_s) == tune_rank_key(b->step_s)
           && round(100 * a->mem_free) == round(100 * b->mem_free)
           && round(1000 * a->exposed_share)
                  == round(1000 * b->exposed_share);
}

/* Which of prefetch (1) and the limiter (2) A and B differ in, or -1
 * when they differ in anything else. */
static int
differs_in(const struct tune_setting *a, const struct tune_setting *b)
{
    if (a->min_num_params != b->min_num_params || a->n_units != b->n_units
        || a->sharding != b->sharding || a->ac != b->ac
        || a->micro_batch != b->micro_batch
        || a->grad_accum != b->grad_accum || a->no_sync != b->no_sync)
        return -1;
    return (a->prefetch != b->prefetch) | (a->limit_all_gathers
                                           != b->limit_all_gathers) << 1;
}

int
tune_top(const struct tune_result *r, int top, struct tune_row *rows)
{
    char *used = xcalloc(r->n_ranked + 1, 1);
    int n = 0;
    for (int k = 0; k < r->n_ranked && n < top; k++) {
        if (used[k])
            continue;
        const struct tune_point *p = &r->points[r->ranked[k]];
        struct tune_row *row = &rows[n++];
        *row = (struct tune_row){r->ranked[k], 0, 0};
        for (int j = k + 1; j < r->n_ranked; j++) {
            const struct tune_point *q = &r->points[r->ranked[j]];
            int d;
            if (used[j] || !same_result(p, q)
                || (d = differs_in(&p->s, &q->s)) <= 0)
                continue;
            used[j] = 1;
            row->either_prefetch |= d & 1;
            row->either_limit |= d >> 1 & 1;
        }
    }
    free(used);
    return n;
}

int
tune_run(const struct tune_opts *o, struct tune_result *r, char **cause)
{
    memset(r, 0, sizeof *r);
    /* The model and cluster, once, for the thresholds and node count. */
    struct run base;
    struct search_args a;
    search_args_init(&a, o->base_argc, o->base);
    search_args_add(&a, "--auto-wrap-policy=size");
    int rc = setup_parse_args(&base, "tune", a.argc, a.argv, cause);
    search_args_free(&a);
    if (rc != 0 || setup_prepare(&base, cause) != 0) {
        setup_free(&base);
        return -1;
    }
    if (base.cfg.fsdp_version == 2) {
        /* The search is over FSDP1's own arguments. */
        *cause = xstrdup("--fsdp-version 2: tune searches FSDP1's sharding "
                         "strategies, backward prefetch and rate limiter, "
                         "which fully_shard does not take; compare FSDP2 "
                         "settings with 'fsdpsim sweep --fsdp-version 2 "
                         "--vary reshard_after_forward=true,false ...'");
        setup_free(&base);
        return -1;
    }
    r->nodes = base.topo->nodes;
    r->gpus_per_node = base.topo->gpus_per_node;
    int *units, n_wraps;
    int64_t *wraps = tune_wrap_thresholds(base.model, &base.cfg,
                                          TUNE_MAX_WRAPS, &units, &n_wraps);
    int has_layer_cls = base.model->layer_cls != NULL
                        || base.cfg.layer_cls != NULL;
    setup_free(&base);

    struct batch_columns cols;
    batch_columns_init(&cols);
    /* Stage 1: wrapping x sharding x checkpointing x micro-batch. */
    static const enum sharding_strategy shardings[] = {
        SHARDING_FULL_SHARD, SHARDING_SHARD_GRAD_OP, SHARDING_NO_SHARD,
        SHARDING_HYBRID_SHARD, SHARDING_HYBRID_SHARD_ZERO2};
    int n_sh = r->nodes > 1 ? 5 : 3;  /* hybrid needs several nodes */
    int n_w = n_wraps + has_layer_cls;
    struct tune_setting *s = xcalloc((size_t)(n_w * n_sh + 1) * 2 * N_MB + 1,
                                     sizeof *s);
    int n = 0;
    /* DDP, the baseline: no wrapping to vary, so once per checkpointing
     * and micro-batch (checkpointing needs the layer class). */
    for (int ck = 0; ck < 1 + has_layer_cls; ck++)
        for (int m = 0; m < N_MB; m++)
            s[n++] = (struct tune_setting){
                .sharding = SHARDING_DDP,
                .ac = ck ? AC_FULL : AC_NONE,
                .micro_batch = tune_micro_batches[m],
                .grad_accum = 1,
                .prefetch = BWD_PREFETCH_PRE,
                .limit_all_gathers = 1};
    for (int w = 0; w < n_w; w++)
        for (int h = 0; h < n_sh; h++)
            for (int ck = 0; ck < 2; ck++)
                for (int m = 0; m < N_MB; m++)
                    s[n++] = (struct tune_setting){
                        .min_num_params = w < n_wraps ? wraps[w] : 0,
                        .n_units = w < n_wraps ? units[w] : 0,
                        .sharding = shardings[h],
                        .ac = ck ? AC_FULL : AC_NONE,
                        .micro_batch = tune_micro_batches[m],
                        .grad_accum = 1,
                        .prefetch = BWD_PREFETCH_PRE,
                        .limit_all_gathers = 1};
    run_settings(o, s, n, r, &cols);
    free(s);
    rank(r);

    /* Stage 2: accumulation, no_sync, prefetch and limiter around the
     * best stage-1 settings. */
    int seeds = r->n_ranked < TUNE_SEEDS ? r->n_ranked : TUNE_SEEDS;
    int seed_at[TUNE_SEEDS + 1];
    for (int k = 0; k < seeds; k++)
        seed_at[k] = r->ranked[k];
    /* The DDP baseline is refined too, so that FSDP is compared with
     * DDP at its best. */
    int have_ddp = 0;
    for (int k = 0; k < seeds; k++)
        have_ddp |= r->points[seed_at[k]].s.sharding == SHARDING_DDP;
    for (int k = seeds; k < r->n_ranked && !have_ddp; k++)
        if (r->points[r->ranked[k]].s.sharding == SHARDING_DDP) {
            seed_at[seeds++] = r->ranked[k];
            have_ddp = 1;
        }
    s = xcalloc((size_t)seeds * 64 * 4 + 1, sizeof *s);
    n = 0;
    static const enum backward_prefetch prefetches[] = {BWD_PREFETCH_PRE,
                                                        BWD_PREFETCH_POST};
    for (int k = 0; k < seeds && !r->interrupted; k++) {
        struct tune_setting seed = r->points[seed_at[k]].s;
        for (int64_t acc = 1; acc <= o->max_grad_accum && acc <= 64;
             acc *= 2)
            for (int ns = 0; ns < (acc > 1 ? 2 : 1); ns++)
                for (int pf = 0; pf < 2; pf++)
                    for (int lim = 1; lim >= 0; lim--) {
                        struct tune_setting t = seed;
                        t.grad_accum = acc;
                        t.no_sync = ns;
                        t.prefetch = prefetches[pf];
                        t.limit_all_gathers = lim;
                        /* Stage 1 has this one already. */
                        if (acc == 1 && pf == 0 && lim == 1)
                            continue;
                        /* DDP has no prefetch or limiter. */
                        if (seed.sharding == SHARDING_DDP
                            && (pf != 0 || lim != 1))
                            continue;
                        s[n++] = t;
                    }
    }
    if (!r->interrupted)
        run_settings(o, s, n, r, &cols);
    free(s);
    rank(r);

    /* Stage 3: the winner's settings over every wrapping (the best FSDP
     * setting's when DDP wins: DDP has no wrapping). */
    int best_fsdp = -1;
    for (int k = 0; k < r->n_ranked && best_fsdp < 0; k++)
        if (r->points[r->ranked[k]].s.sharding != SHARDING_DDP)
            best_fsdp = r->ranked[k];
    if (best_fsdp >= 0 && !r->interrupted) {
        struct tune_setting win = r->points[best_fsdp].s;
        s = xcalloc(n_wraps + 1, sizeof *s);
        for (int w = 0; w < n_wraps; w++) {
            s[w] = win;
            s[w].min_num_params = wraps[w];
            s[w].n_units = units[w];
        }
        struct tune_result tmp = {0};
        run_settings(o, s, n_wraps, &tmp, &cols);
        r->interrupted |= tmp.interrupted;
        r->curve = tmp.points;
        r->n_curve = tmp.n_points;
        free(tmp.first_error);
        free(s);
    }
    batch_columns_free(&cols);
    free(wraps);
    free(units);
    return 0;
}

void
tune_free(struct tune_result *r)
{
    free(r->points);
    free(r->ranked);
    free(r->curve);
    free(r->first_error);
    memset(r, 0, sizeof *r);
}

/* ---- PyTorch code ---- */

const char *
tune_fmt_threshold(char *buf, size_t len, int64_t n, int python)
{
    int k = 0;
    int64_t d = n;
    while (d >= 10 && d % 10 == 0) {
        d /= 10;
        k++;
    }
    if (k >= 3 && d < 10)
        snprintf(buf, len, python ? "int(%llde%d)" : "%llde%d",
                 (long long)d, k);
    else
        snprintf(buf, len, "%lld", (long long)n);
    return buf;
}

static const char *
torch_dtype(enum dtype d)
{
    switch (d) {
    case DTYPE_BF16: return "torch.bfloat16";
    case DTYPE_FP16: return "torch.float16";
    default: return "torch.float32";
    }
}

/* The DDP baseline: DistributedDataParallel over the whole model, under
 * autocast for a low-precision compute dtype. */
static void
tune_pytorch_code_ddp(const struct run_config *c, const char *cls,
                      FILE *out)
{
    int ac = c->ac != AC_NONE;
    int amp = config_param_dtype(c) != DTYPE_FP32;
    fprintf(out, "import contextlib\n\nimport torch\n"
            "from torch.nn.parallel import DistributedDataParallel as DDP\n");
    if (ac)
        fprintf(out, "from torch.distributed.algorithms._checkpoint."
                "checkpoint_wrapper import (\n"
                "    apply_activation_checkpointing,\n)\n");
    if (ac && cls)
        fprintf(out, "# %s: import it from your model's module\n", cls);
    fprintf(out, "\nmodel = DDP(\n    model.cuda(),\n"
            "    device_ids=[torch.cuda.current_device()],\n");
    if (c->bucket_cap_mb_given)
        fprintf(out, "    bucket_cap_mb=%g,\n", c->bucket_cap_mb);
    if (c->gradient_as_bucket_view)
        fprintf(out, "    gradient_as_bucket_view=True,\n");
    if (c->static_graph)
        fprintf(out, "    static_graph=True,\n");
    fprintf(out, ")\n");
    if (ac)
        fprintf(out, "apply_activation_checkpointing(\n    model,\n"
                "    check_fn=lambda m: isinstance(m, %s),\n)\n",
                cls ? cls : "TransformerLayer");
    fprintf(out, "optimizer = torch.optim.%s(model.parameters(), lr=...)\n",
            c->optimizer == OPTIMIZER_SGD ? "SGD" : "AdamW");
    fprintf(out, "\naccum = %lld\nfor i, batch in enumerate(loader):\n",
            (long long)c->grad_accum);
    const char *ind = "    ";
    if (c->no_sync && c->grad_accum > 1) {
        fprintf(out, "    sync = (i + 1) %% accum == 0\n"
                "    with contextlib.nullcontext() if sync else "
                "model.no_sync():\n");
        ind = "        ";
    }
    if (amp)
        fprintf(out, "%swith torch.autocast(\"cuda\", dtype=%s):\n"
                "%s    loss = model(**batch).loss / accum\n",
                ind, config_param_dtype(c) == DTYPE_FP16 ? "torch.float16"
                                                         : "torch.bfloat16",
                ind);
    else
        fprintf(out, "%sloss = model(**batch).loss / accum\n", ind);
    fprintf(out, "%sloss.backward()\n", ind);
    fprintf(out, "    if (i + 1) %% accum == 0:\n"
            "        optimizer.step()\n"
            "        optimizer.zero_grad(set_to_none=True)\n");
}

void
tune_pytorch_code(const struct run_config *c, const char *layer_cls,
                  FILE *out)
{
    if (c->sharding == SHARDING_DDP) {
        tune_pytorch_code_ddp(c, c->layer_cls ? c->layer_cls : layer_cls,
                              out);
        return;
    }
    const char *cls = c->layer_cls ? c->layer_cls : layer_cls;
    int size = c->wrap == WRAP_SIZE;
    int none = c->wrap == WRAP_NONE;
    int mp = c->param_dtype_given || c->reduce_dtype_given
             || c->buffer_dtype_given;
    int ac = c->ac != AC_NONE;
    fprintf(out, "import contextlib\nimport functools\n\nimport torch\n"
            "from torch.distributed.fsdp import (\n"
            "    FullyShardedDataParallel as FSDP,\n"
            "    ShardingStrategy,\n    BackwardPrefetch,\n%s%s)\n",
            mp ? "    MixedPrecision,\n" : "",
            c->cpu_offload ? "    CPUOffload,\n" : "");
    if (!none)
        fprintf(out, "from torch.distributed.fsdp.wrap import %s\n",
                size ? "size_based_auto_wrap_policy"
                     : "transformer_auto_wrap_policy");
    if (ac)
        fprintf(out, "from torch.distributed.algorithms._checkpoint."
                "checkpoint_wrapper import (\n"
                "    apply_activation_checkpointing,\n"
                "    checkpoint_wrapper,\n    CheckpointImpl,\n)\n");
    if (((!size && !none) || ac) && cls)
        fprintf(out, "# %s: import it from your model's module, e.g. "
                "transformers' modeling file\n", cls);
    fprintf(out, "\nmodel = FSDP(\n    model,\n");
    if (size) {
        char n[32];
        fprintf(out, "    auto_wrap_policy=functools.partial(\n"
                "        size_based_auto_wrap_policy, "
                "min_num_params=%s\n    ),\n",
                tune_fmt_threshold(n, sizeof n, c->min_num_params, 1));
    }
    else if (!none)
        fprintf(out, "    auto_wrap_policy=functools.partial(\n"
                "        transformer_auto_wrap_policy, "
                "transformer_layer_cls={%s}\n    ),\n",
                cls ? cls : "TransformerLayer");
    fprintf(out, "    sharding_strategy=ShardingStrategy.%s,\n",
            sharding_name(c->sharding));
    if (c->backward_prefetch == BWD_PREFETCH_NONE)
        fprintf(out, "    backward_prefetch=None,\n");
    else
        fprintf(out, "    backward_prefetch=BackwardPrefetch.%s,\n",
                backward_prefetch_name(c->backward_prefetch));
    fprintf(out, "    forward_prefetch=%s,\n",
            c->forward_prefetch ? "True" : "False");
    fprintf(out, "    limit_all_gathers=%s,\n",
            c->limit_all_gathers ? "True" : "False");
    fprintf(out, "    use_orig_params=%s,\n",
            c->use_orig_params ? "True" : "False");
    if (mp)
        fprintf(out, "    mixed_precision=MixedPrecision(\n"
                "        param_dtype=%s,\n        reduce_dtype=%s,\n"
                "        buffer_dtype=%s,\n    ),\n",
                torch_dtype(config_param_dtype(c)),
                torch_dtype(config_reduce_dtype(c)),
                torch_dtype(c->buffer_dtype));
    if (c->cpu_offload)
        fprintf(out, "    cpu_offload=CPUOffload(offload_params=True),\n");
    fprintf(out, "    device_id=torch.cuda.current_device(),\n)\n");
    if (ac)
        fprintf(out, "apply_activation_checkpointing(\n    model,\n"
                "    checkpoint_wrapper_fn=functools.partial(\n"
                "        checkpoint_wrapper, checkpoint_impl="
                "CheckpointImpl.%s\n    ),\n"
                "    check_fn=lambda m: isinstance(m, %s),\n)\n",
                c->ac == AC_REENTRANT ? "REENTRANT" : "NO_REENTRANT",
                cls ? cls : "TransformerLayer");
    fprintf(out, "optimizer = torch.optim.%s(model.parameters(), lr=...)\n",
            c->optimizer == OPTIMIZER_SGD ? "SGD" : "AdamW");
    fprintf(out, "\n# %lld sequence%s of %lld tokens per GPU per "
            "micro-batch, %lld micro-batch%s per step\n",
            (long long)c->micro_batch, c->micro_batch == 1 ? "" : "s",
            (long long)c->seq_len, (long long)c->grad_accum,
            c->grad_accum == 1 ? "" : "es");
    fprintf(out, "accum = %lld\nfor i, batch in enumerate(loader):\n",
            (long long)c->grad_accum);
    if (c->no_sync && c->grad_accum > 1)
        fprintf(out, "    # reduce-scatter only on the last micro-batch\n"
                "    sync = (i + 1) %% accum == 0\n"
                "    with contextlib.nullcontext() if sync else "
                "model.no_sync():\n"
                "        loss = model(**batch).loss / accum\n"
                "        loss.backward()\n");
    else
        fprintf(out, "    loss = model(**batch).loss / accum\n"
                "    loss.backward()\n");
    fprintf(out, "    if (i + 1) %% accum == 0:\n"
            "        optimizer.step()\n"
            "        optimizer.zero_grad(set_to_none=True)\n");
}
