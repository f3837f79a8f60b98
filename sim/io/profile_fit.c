/*
 * profile_fit.c: compute keys fitted to a profiler trace's kernels (see
 * profile_fit.h).
 *
 * One-parameter fits (GEMM ceiling, attention scales) minimise the
 * objective over a log-spaced grid of the key's range, then refine the
 * best interior point with GSL's Brent minimiser (gsl_min); where the
 * key is the only thing in play the model's time is proportional to its
 * inverse and the minimum is the time-weighted geometric mean of the
 * ratios, found to 1e-9.  The memory model's two parameters are found by
 * splitting the calls, sorted by bytes per launch, into those at the
 * floor and those at bandwidth (each side's parameter is then a mean of
 * logs, gsl_stats_wmean with unit weights); every split point is tried
 * (up to MAX_SPLITS of them), the split is re-assigned by which term of
 * the max is larger until it settles, and the lowest objective wins.
 */
#include "profile_fit.h"
#include "kernel_cost.h"

#include <gsl/gsl_errno.h>
#include <gsl/gsl_min.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

#define GRID 97
/* Split points tried for the memory model, at most. */
#define MAX_SPLITS 1024

static const char *const key_names[PK_COUNT] = {
    "[gpu] gemm_efficiency", "[gpu] memory_efficiency",
    "[gpu] kernel_overhead", "[compute] attention_forward_scale",
    "[compute] attention_backward_scale", "[node] launch_overhead",
    "[host] autograd_overhead"};

const char *
profile_key_name(enum profile_key k)
{
    return (unsigned)k < PK_COUNT ? key_names[k] : "?";
}

static bool
is_memory(enum kernel_class c)
{
    return c == KERNEL_ELEMENTWISE || c == KERNEL_REDUCTION;
}

/* Four significant digits, so that the file reads as measured (through
 * the decimal text, so that 0.7 is the double nearest 0.7). */
static double
round4(double x)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%.4g", x);
    return strtod(buf, NULL);
}

/* ---- one-parameter fits ---------------------------------------------- */

struct obj1 {
    struct topo t;            /* a copy whose *field is varied */
    double *field;
    const struct prof_trace *p;
    enum kernel_class cls;
};

static double
objective1(double x, void *ctx)
{
    struct obj1 *o = ctx;
    *o->field = x;
    double sum = 0;
    for (size_t i = 0; i < o->p->n; i++) {
        const struct prof_kernel *e = &o->p->k[i];
        if (e->k.cls != o->cls)
            continue;
        double pred = kernel_time_s(&o->t, &e->k, e->dtype);
        if (!(pred > 0))
            continue;
        double r = log(pred / e->measured_s);
        sum += e->measured_s * r * r;
    }
    return sum;
}

/* The x in [lo, hi] minimising F, or NAN when F does not depend on x (no
 * call of the class responds to it).  *at_edge when the best is an end. */
static double
fit1d(double (*f)(double, void *), void *ctx, double lo, double hi,
      bool *at_edge)
{
    double x[GRID], v[GRID];
    int best = 0;
    for (int i = 0; i < GRID; i++) {
        x[i] = lo * pow(hi / lo, (double)i / (GRID - 1));
        v[i] = f(x[i], ctx);
        if (v[i] < v[best])
            best = i;
    }
    double vmax = v[0];
    for (int i = 1; i < GRID; i++)
        vmax = fmax(vmax, v[i]);
    if (!(vmax - v[best] > 1e-15 * fmax(vmax, 1e-300)))
        return NAN;
    *at_edge = best == 0 || best == GRID - 1;
    if (*at_edge)
        return x[best];
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    gsl_min_fminimizer *m = gsl_min_fminimizer_alloc(gsl_min_fminimizer_brent);
    gsl_function F = {f, ctx};
    double xm = x[best];
    if (m != NULL && gsl_min_fminimizer_set_with_values(
                         m, &F, x[best], v[best], x[best - 1], v[best - 1],
                         x[best + 1], v[best + 1]) == GSL_SUCCESS) {
        for (int it = 0; it < 200; it++) {
            if (gsl_min_fminimizer_iterate(m) != GSL_SUCCESS)
                break;
            double a = gsl_min_fminimizer_x_lower(m);
            double b = gsl_min_fminimizer_x_upper(m);
            if (gsl_min_test_interval(a, b, 0, 1e-10) == GSL_SUCCESS)
                break;
        }
        xm = gsl_min_fminimizer_x_minimum(m);
    }
    gsl_min_fminimizer_free(m);
    gsl_set_error_handler(old);
    return xm;
}

static void
fit_one(struct topo *t, const struct prof_trace *p, enum kernel_class cls,
        double *field, double lo, double hi, struct profile_key_fit *kf)
{
    struct obj1 o = {*t, NULL, p, cls};
    o.field = (double *)((char *)&o.t + ((char *)field - (char *)t));
    for (size_t i = 0; i < p->n; i++)
        kf->n += p->k[i].k.cls == cls;
    kf->before = *field;
    kf->after = *field;
    if (kf->n == 0)
        return;
    bool edge = false;
    double x = fit1d(objective1, &o, lo, hi, &edge);
    if (isnan(x))
        return;
    kf->fitted = true;
    kf->clamped = edge;
    kf->after = round4(x);
    *field = kf->after;
}

/* ---- the memory model ------------------------------------------------ */

struct mem_call {
    double t;                 /* measured */
    double w;                 /* weight: 1 (see profile_fit.h) */
    double xf;                /* log(t / launches): log f at the floor */
    double xb;                /* log(t hbm / bytes): -log e at bandwidth */
    double key;               /* bytes per launch */
};

static int
cmp_mem(const void *pa, const void *pb)
{
    const struct mem_call *a = pa, *b = pb;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return (a->t > b->t) - (a->t < b->t);
}

/* The objective at floor F (per launch, s) and efficiency E. */
static double
mem_objective(const struct mem_call *c, size_t n, double f, double e)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        /* max(L f, B / (e hbm)) / t, from the logs kept */
        double at_floor = log(f) - c[i].xf;
        double at_bw = -log(e) - c[i].xb;
        double r = fmax(at_floor, at_bw);
        sum += c[i].w * r * r;
    }
    return sum;
}

/* Each side's parameter from the calls assigned to it (SIDE[i] 1 at the
 * floor); a side with no call keeps *F or *E. */
static void
mem_means(const struct mem_call *c, size_t n, const char *side,
          double *wbuf, double *xbuf, double *f, double *e)
{
    size_t nf = 0, nb = 0;
    for (size_t i = 0; i < n; i++)
        if (side[i]) {
            wbuf[nf] = c[i].w;
            xbuf[nf++] = c[i].xf;
        }
    if (nf)
        *f = exp(gsl_stats_wmean(wbuf, 1, xbuf, 1, nf));
    for (size_t i = 0; i < n; i++)
        if (!side[i]) {
            wbuf[nb] = c[i].w;
            xbuf[nb++] = c[i].xb;
        }
    if (nb)
        *e = exp(-gsl_stats_wmean(wbuf, 1, xbuf, 1, nb));
}

static void
fit_memory(struct topo *t, const struct prof_trace *p,
           struct profile_key_fit *ke, struct profile_key_fit *kf)
{
    ke->before = ke->after = t->memory_efficiency;
    kf->before = kf->after = t->kernel_overhead_ns;
    size_t n = 0;
    for (size_t i = 0; i < p->n; i++)
        n += is_memory(p->k[i].k.cls) && p->k[i].k.bytes > 0;
    if (n == 0)
        return;
    struct mem_call *c = xmalloc(n * sizeof *c);
    size_t m = 0;
    for (size_t i = 0; i < p->n; i++) {
        const struct prof_kernel *e = &p->k[i];
        if (!is_memory(e->k.cls) || !(e->k.bytes > 0))
            continue;
        double L = e->k.launches > 0 ? e->k.launches : 1;
        c[m++] = (struct mem_call){e->measured_s, 1,
                                   log(e->measured_s / L),
                                   log(e->measured_s * t->hbm_Bps
                                       / e->k.bytes),
                                   e->k.bytes / L};
    }
    qsort(c, n, sizeof *c, cmp_mem);
    char *side = xmalloc(n), *next = xmalloc(n);
    double *wbuf = xmalloc(n * sizeof *wbuf);
    double *xbuf = xmalloc(n * sizeof *xbuf);
    double f0 = t->kernel_overhead_ns * 1e-9, e0 = t->memory_efficiency;
    double best = INFINITY, best_f = f0, best_e = e0;
    size_t step = n / MAX_SPLITS + 1;
    double min_xf = c[0].xf;
    for (size_t i = 1; i < n; i++)
        min_xf = fmin(min_xf, c[i].xf);
    /* Splits 0, step, 2 step, ... and n (every call at the floor). */
    for (size_t s = 0;; s += step) {
        size_t split = s < n ? s : n;
        for (size_t i = 0; i < n; i++)
            side[i] = i < split;
        double f = f0, e = e0;
        /* All at bandwidth: no floor in the data, so none above the
         * shortest call's time per launch. */
        if (split == 0)
            f = fmin(f0, exp(min_xf));
        for (int it = 0; it < 50; it++) {
            mem_means(c, n, side, wbuf, xbuf, &f, &e);
            bool same = true;
            for (size_t i = 0; i < n; i++) {
                next[i] = log(f) - c[i].xf >= -log(e) - c[i].xb;
                same = same && next[i] == side[i];
            }
            if (same)
                break;
            memcpy(side, next, n);
        }
        double v = mem_objective(c, n, f, e);
        if (v < best) {
            best = v;
            best_f = f;
            best_e = e;
        }
        if (split == n)
            break;
    }
    int at_floor = 0;
    for (size_t i = 0; i < n; i++)
        at_floor += log(best_f) - c[i].xf >= -log(best_e) - c[i].xb;
    kf->n = at_floor;
    ke->n = (int)n - at_floor;
    if (at_floor > 0) {
        kf->fitted = true;
        kf->after = round(best_f * 1e9);
        t->kernel_overhead_ns = kf->after;
    }
    if (ke->n > 0) {
        ke->fitted = true;
        ke->clamped = best_e > 1;
        ke->after = round4(fmin(best_e, 1.0));
        t->memory_efficiency = ke->after;
    }
    free(c);
    free(side);
    free(next);
    free(wbuf);
    free(xbuf);
}

/* ---- all of it ------------------------------------------------------- */

static void
class_stats(const struct topo *t, const struct prof_trace *p, bool after,
            struct profile_fit *out)
{
    double *err = xmalloc((p->n + 1) * sizeof *err);
    for (int c = 0; c < KERNEL_CLASS_COUNT; c++) {
        struct profile_class_fit *cf = &out->cls[c];
        size_t ne = 0;
        double total = 0;
        for (size_t i = 0; i < p->n; i++) {
            const struct prof_kernel *e = &p->k[i];
            if ((int)e->k.cls != c)
                continue;
            double pred = kernel_time_s(t, &e->k, e->dtype);
            total += pred;
            err[ne++] = fabs(pred - e->measured_s) / e->measured_s;
            if (!after) {
                cf->kernels += e->k.launches;
                cf->entries++;
                cf->measured_s += e->measured_s;
            }
        }
        double med = ne ? gsl_stats_median(err, 1, ne) : 0;
        if (after) {
            cf->after_s = total;
            cf->med_after = med;
        } else {
            cf->before_s = total;
            cf->med_before = med;
        }
    }
    free(err);
}

void
profile_fit(struct topo *t, const struct prof_trace *p,
            struct profile_fit *out)
{
    memset(out, 0, sizeof *out);
    class_stats(t, p, false, out);
    fit_memory(t, p, &out->key[PK_MEMORY_EFFICIENCY],
               &out->key[PK_KERNEL_OVERHEAD]);
    fit_one(t, p, KERNEL_GEMM, &t->gemm_efficiency, 0.01, 1,
            &out->key[PK_GEMM_EFFICIENCY]);
    fit_one(t, p, KERNEL_ATTN_FWD, &t->attention_fwd_scale, 0.01, 10,
            &out->key[PK_ATTN_FWD_SCALE]);
    fit_one(t, p, KERNEL_ATTN_BWD, &t->attention_bwd_scale, 0.01, 10,
            &out->key[PK_ATTN_BWD_SCALE]);

    struct profile_key_fit *kl = &out->key[PK_LAUNCH_OVERHEAD];
    struct profile_key_fit *ka = &out->key[PK_AUTOGRAD_OVERHEAD];
    kl->before = kl->after = t->launch_overhead_ns;
    ka->before = ka->after = t->autograd_overhead_ns;
    kl->n = p->n_fwd_gaps;
    ka->n = p->n_bwd_gaps;
    if (p->n_fwd_gaps > 0) {
        kl->fitted = true;
        kl->after = t->launch_overhead_ns = round(p->fwd_gap_s * 1e9);
    }
    if (p->n_bwd_gaps > 0) {
        ka->fitted = true;
        double a = round(p->bwd_gap_s * 1e9) - t->launch_overhead_ns;
        ka->clamped = a < 0;
        ka->after = t->autograd_overhead_ns = fmax(a, 0);
    }
    class_stats(t, p, true, out);
}

/* ---- printing -------------------------------------------------------- */

static double
pct(double pred, double meas)
{
    return meas > 0 ? 100 * (pred - meas) / meas : 0;
}

static void
print_value(enum profile_key k, double v, char *buf, size_t len)
{
    if (k == PK_KERNEL_OVERHEAD || k == PK_LAUNCH_OVERHEAD
        || k == PK_AUTOGRAD_OVERHEAD)
        snprintf(buf, len, "%.3f us", v * 1e-3);
    else
        snprintf(buf, len, "%.4g", v);
}

void
profile_fit_print(const struct profile_fit *f, const struct prof_trace *p,
                  const char *path, const char *topo_name, FILE *out)
{
    fprintf(out, "# fsdpsim calibrate --profile: %s: %d kernels, %zu "
            "operator calls fitted; %d NCCL and %d without shapes left "
            "out; %s\n", path, p->n_kernels, p->n, p->n_nccl, p->n_unshaped,
            topo_name);
    if (p->n_causal_assumed > 0)
        fprintf(out, "# %d attention call%s did not record is_causal: "
                "taken as causal\n", p->n_causal_assumed,
                p->n_causal_assumed == 1 ? "" : "s");
    fprintf(out, "#%-14s %8s %6s %11s %11s %7s %11s %7s %7s %7s\n", "class",
            "kernels", "calls", "measured", "before", "error", "after",
            "error", "median", "median");
    fprintf(out, "#%-14s %8s %6s %11s %11s %7s %11s %7s %7s %7s\n", "", "",
            "", "(ms)", "(ms)", "(%)", "(ms)", "(%)", "before", "after");
    double m = 0, b = 0, a = 0;
    int nk = 0, ne = 0;
    for (int c = 0; c < KERNEL_CLASS_COUNT; c++) {
        const struct profile_class_fit *cf = &f->cls[c];
        if (cf->entries == 0)
            continue;
        fprintf(out, " %-14s %8d %6d %11.4f %11.4f %+7.1f %11.4f %+7.1f "
                "%6.1f%% %6.1f%%\n", kernel_class_name(c), cf->kernels,
                cf->entries, cf->measured_s * 1e3, cf->before_s * 1e3,
                pct(cf->before_s, cf->measured_s), cf->after_s * 1e3,
                pct(cf->after_s, cf->measured_s), 100 * cf->med_before,
                100 * cf->med_after);
        m += cf->measured_s;
        b += cf->before_s;
        a += cf->after_s;
        nk += cf->kernels;
        ne += cf->entries;
    }
    fprintf(out, " %-14s %8d %6d %11.4f %11.4f %+7.1f %11.4f %+7.1f\n",
            "total", nk, ne, m * 1e3, b * 1e3, pct(b, m), a * 1e3,
            pct(a, m));
    fprintf(out, "# fitted (least squares on log(predicted / measured), "
            "weighted by measured time;\n#   memory-bound calls weighted "
            "alike):\n");
    for (int k = 0; k < PK_COUNT; k++) {
        const struct profile_key_fit *kf = &f->key[k];
        char before[32], after[32];
        print_value(k, kf->before, before, sizeof before);
        print_value(k, kf->after, after, sizeof after);
        if (!kf->fitted) {
            fprintf(out, "#   %-34s %s (not fitted: %s)\n", key_names[k],
                    before,
                    k == PK_LAUNCH_OVERHEAD
                        ? "no consecutive forward launches"
                    : k == PK_AUTOGRAD_OVERHEAD
                        ? "no consecutive backward launches"
                    : k == PK_KERNEL_OVERHEAD
                        ? "no memory-bound call at the floor"
                    : kf->n == 0 ? "no calls of its class"
                                 : "the calls do not depend on it");
            continue;
        }
        const char *what;
        switch (k) {
        case PK_KERNEL_OVERHEAD: what = "calls at the floor"; break;
        case PK_MEMORY_EFFICIENCY: what = "calls at bandwidth"; break;
        case PK_LAUNCH_OVERHEAD: what = "forward launch gaps, median";
            break;
        case PK_AUTOGRAD_OVERHEAD:
            what = "backward launch gaps, median less launch_overhead";
            break;
        default: what = "calls"; break;
        }
        fprintf(out, "#   %-34s %s -> %s (%d %s)%s\n", key_names[k], before,
                after, kf->n, what,
                kf->clamped ? (k == PK_AUTOGRAD_OVERHEAD
                                   ? "; backward gaps are shorter: 0"
                                   : "; at the end of the key's range")
                            : "");
    }
}

void
profile_fit_write_keys(const struct profile_fit *f, FILE *out)
{
    static const struct { int key; const char *section, *name; } w[] = {
        {PK_GEMM_EFFICIENCY, "gpu", "gemm_efficiency"},
        {PK_KERNEL_OVERHEAD, "gpu", "kernel_overhead"},
        {PK_MEMORY_EFFICIENCY, "gpu", "memory_efficiency"},
        {PK_ATTN_FWD_SCALE, "compute", "attention_forward_scale"},
        {PK_ATTN_BWD_SCALE, "compute", "attention_backward_scale"},
        {PK_LAUNCH_OVERHEAD, "node", "launch_overhead"},
        {PK_AUTOGRAD_OVERHEAD, "host", "autograd_overhead"}};
    const char *section = NULL;
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
        const struct profile_key_fit *kf = &f->key[w[i].key];
        if (!kf->fitted)
            continue;
        if (section == NULL || strcmp(section, w[i].section) != 0) {
            section = w[i].section;
            fprintf(out, "\n[%s]\n", section);
        }
        if (w[i].key == PK_KERNEL_OVERHEAD || w[i].key == PK_LAUNCH_OVERHEAD
            || w[i].key == PK_AUTOGRAD_OVERHEAD)
            fprintf(out, "%s = %.0fns\n", w[i].name, kf->after);
        else
            fprintf(out, "%s = %.4g\n", w[i].name, kf->after);
    }
}
