/*
 * calib.c: fitting [calibration] cells to nccl-tests sweeps (see calib.h).
 *
 * A sweep is a few dozen sizes, so the points are kept in plain arrays and
 * every group is found by a linear scan; nothing here is tuned for speed.
 * The line fits are GSL's (gsl_fit_wlinear, gsl_fit_wmul), the curve
 * fits gsl_multifit_wlinear, the medians
 * gsl_stats_median on a copy, since it sorts in place.
 */
#include "calib.h"
#include "xalloc.h"

#include <assert.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_fit.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The ceilings of the topology keys: 1 s and 1000 TBps (topo.c). */
#define CALIB_MAX_LATENCY_S 1.0
#define CALIB_MAX_BUSBW_BPS 1e15

static double
round_digits(double v, int digits)
{
    if (v == 0 || !isfinite(v))
        return v;
    double scale = pow(10, digits - 1 - (int)floor(log10(fabs(v))));
    return round(v * scale) / scale;
}

/*
 * Weighted least squares of t = c0 + c1 x with w = 1/t^2.  When c0 < 0
 * (latency cannot be negative; small sizes measured with noise can still
 * pull the intercept below 0) the line is refitted through the origin,
 * c1 = sum(w x t) / sum(w x^2) (gsl_fit_wmul).  When c1 <= 0 the times do
 * not grow with size over the range measured: the latency is their
 * weighted mean and the bandwidth term is made negligible.
 */
int
calib_fit_line(const double *x, const double *t, size_t n,
               struct calib_fit *fit)
{
    memset(fit, 0, sizeof *fit);
    fit->points = (int)n;
    if (n < 2)
        return -1;
    double *w = xmalloc(n * sizeof *w);
    bool spread = false;
    for (size_t i = 0; i < n; i++) {
        if (!(t[i] > 0) || !(x[i] >= 0)) {
            free(w);
            return -1;
        }
        w[i] = 1 / (t[i] * t[i]);
        if (x[i] != x[0])
            spread = true;
    }
    if (!spread) {
        free(w);
        return -1;
    }
    /* GSL's default handler aborts; every return code is checked here. */
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    double c0, c1, cov00, cov01, cov11, sumsq;
    int rc = gsl_fit_wlinear(x, 1, w, 1, t, 1, n, &c0, &c1, &cov00, &cov01,
                             &cov11, &sumsq);
    if (rc == GSL_SUCCESS && c0 < 0) {
        fit->latency_clamped = true;
        c0 = 0;
        rc = gsl_fit_wmul(x, 1, w, 1, t, 1, n, &c1, &cov11, &sumsq);
    }
    if (rc == GSL_SUCCESS && !(c1 > 0)) {
        double sw = 0, swt = 0;
        for (size_t i = 0; i < n; i++) {
            sw += w[i];
            swt += w[i] * t[i];
        }
        c0 = swt / sw;
        c1 = 0;
        fit->latency_clamped = false;
        fit->bw_unresolved = true;
    }
    gsl_set_error_handler(old);
    free(w);
    if (rc != GSL_SUCCESS || !isfinite(c0) || !isfinite(c1))
        return -1;
    fit->fitted = true;
    fit->latency_s = fmin(c0, CALIB_MAX_LATENCY_S);
    fit->busbw_Bps = c1 > 0 ? fmin(1 / c1, CALIB_MAX_BUSBW_BPS)
                            : CALIB_MAX_BUSBW_BPS;
    return 0;
}

/* The sqrt term must move some prediction by at least this fraction to be
 * kept: below it the curve is the line within measurement noise, and a
 * line is the simpler cell to read. */
#define CALIB_MIN_PIPELINE_EFFECT 1e-3

/*
 * Weighted least squares of t = sum_j c_j f_j(x) over the columns COLS
 * (0: 1, 1: x, 2: sqrt x) into c[j]; 0, or -1 when GSL fails.
 */
static int
fit_columns(const double *x, const double *t, const double *w, size_t n,
            const int *cols, size_t k, double *c)
{
    gsl_matrix *X = gsl_matrix_alloc(n, k);
    gsl_vector *wv = gsl_vector_alloc(n), *tv = gsl_vector_alloc(n);
    gsl_vector *cv = gsl_vector_alloc(k);
    gsl_matrix *cov = gsl_matrix_alloc(k, k);
    gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc(n, k);
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < k; j++)
            gsl_matrix_set(X, i, j,
                           cols[j] == 0 ? 1 : cols[j] == 1 ? x[i]
                                                           : sqrt(x[i]));
        gsl_vector_set(wv, i, w[i]);
        gsl_vector_set(tv, i, t[i]);
    }
    double chisq;
    int rc = gsl_multifit_wlinear(X, wv, tv, cv, cov, &chisq, ws);
    for (size_t j = 0; j < k; j++)
        c[j] = gsl_vector_get(cv, j);
    gsl_multifit_linear_free(ws);
    gsl_matrix_free(cov);
    gsl_vector_free(cv);
    gsl_vector_free(tv);
    gsl_vector_free(wv);
    gsl_matrix_free(X);
    return rc == GSL_SUCCESS ? 0 : -1;
}

int
calib_fit_curve(const double *x, const double *t, size_t n,
                struct calib_fit *fit)
{
    if (calib_fit_line(x, t, n, fit) != 0 || n < 3 || fit->bw_unresolved)
        return fit->fitted ? 0 : -1;
    double *w = xmalloc(n * sizeof *w);
    for (size_t i = 0; i < n; i++)
        w[i] = 1 / (t[i] * t[i]);
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    /* Free fit first; when the latency comes out negative, through the
     * origin (latency 0), as calib_fit_line() does for the line. */
    static const int all3[] = {0, 1, 2}, no_latency[] = {1, 2};
    double c[3] = {0, 0, 0};
    bool clamped = false;
    int rc = fit_columns(x, t, w, n, all3, 3, c);
    if (rc == 0 && c[0] < 0) {
        clamped = true;
        rc = fit_columns(x, t, w, n, no_latency, 2, c + 1);
        c[0] = 0;
    }
    gsl_set_error_handler(old);
    free(w);
    if (rc != 0 || !(c[1] > 0) || !(c[2] > 0) || !isfinite(c[0]) ||
        !isfinite(c[1]) || !isfinite(c[2]))
        return 0;   /* keep the line */
    /* Keep the sqrt term only where it moves some size's prediction by
     * the minimum effect (its share c2 sqrt x / t peaks between the
     * smallest and the largest size, so every size is looked at). */
    bool matters = false;
    for (size_t i = 0; i < n && !matters; i++) {
        double term = c[2] * sqrt(x[i]);
        matters = term >= CALIB_MIN_PIPELINE_EFFECT
                              * (c[0] + c[1] * x[i] + term);
    }
    if (!matters)
        return 0;
    if (1 / c[1] > CALIB_MAX_BUSBW_BPS || c[0] > CALIB_MAX_LATENCY_S)
        return 0;
    fit->latency_s = c[0];
    fit->busbw_Bps = 1 / c[1];
    /* gamma = 2 sqrt(p / beta) = 2 sqrt(p c1), so p = gamma^2 / (4 c1). */
    fit->pipeline_s = fmin(c[2] * c[2] / (4 * c[1]), CALIB_MAX_LATENCY_S);
    fit->latency_clamped = clamped;
    return 0;
}

void
calib_store(struct topo *t, enum coll_op op, int scope, enum nccl_algo algo,
            enum nccl_proto proto, const struct calib_fit *fit)
{
    assert(op >= 0 && op < TOPO_CALIB_OPS && scope >= 0 &&
           scope < TOPO_CALIB_SCOPES && algo >= 0 &&
           algo < TOPO_CALIB_ALGOS && proto >= 0 &&
           proto < TOPO_CALIB_PROTOS);
    if (!fit->fitted)
        return;
    struct topo_calibration *c = &t->calib_algo[op][scope][algo][proto];
    c->latency_ns = fmin(round_digits(fit->latency_s * 1e9, CALIB_DIGITS),
                         CALIB_MAX_LATENCY_S * 1e9);
    c->busbw_Bps = fmin(round_digits(fit->busbw_Bps, CALIB_DIGITS),
                        CALIB_MAX_BUSBW_BPS);
    c->pipeline_ns = fmin(round_digits(fit->pipeline_s * 1e9, CALIB_DIGITS),
                          CALIB_MAX_LATENCY_S * 1e9);
}

void
calib_store_all(struct topo *t, const struct calib *c)
{
    for (int o = 0; o < TOPO_CALIB_OPS; o++)
        for (int s = 0; s < TOPO_CALIB_SCOPES; s++)
            for (int a = 0; a < TOPO_CALIB_ALGOS; a++)
                for (int p = 0; p < TOPO_CALIB_PROTOS; p++)
                    calib_store(t, o, s, a, p, &c->fit[o][s][a][p]);
}

int
calib_fitted_cells(const struct calib *c)
{
    const struct calib_fit *f = &c->fit[0][0][0][0];
    size_t n = sizeof c->fit / sizeof *f;
    int fitted = 0;
    for (size_t i = 0; i < n; i++)
        fitted += f[i].fitted;
    return fitted;
}

/* Predict every point of R with its topology into before_s or after_s. */
static int
predict(struct calib_run *r, const struct nccl_config *nc, bool after,
        char **cause)
{
    const struct nccl_tests_run *run = r->run;
    struct coll_group g = {run->ranks, run->nodes,
                           run->ranks / run->nodes};
    for (int i = 0; i < r->n_points; i++) {
        struct calib_point *p = &r->points[i];
        struct coll_result res;
        if (coll_estimate(r->topo, nc, run->op, REDOP_SUM, &g, p->size_bytes,
                          &res, cause) != 0)
            return -1;
        if (after) {
            p->after_s = res.time_s;
        } else {
            p->before_s = res.time_s;
            p->algo = res.algo;
            p->proto = res.proto;
        }
    }
    return 0;
}

int
calib_run_all(struct calib *c, struct calib_run *runs, int n_runs,
              const struct nccl_config *nc, char **cause)
{
    memset(c, 0, sizeof *c);
    c->runs = runs;
    c->n_runs = n_runs;
    for (int k = 0; k < n_runs; k++) {
        runs[k].points = NULL;
        runs[k].n_points = 0;
    }
    size_t total = 0;
    for (int k = 0; k < n_runs; k++) {
        struct calib_run *r = &runs[k];
        const struct nccl_tests_run *run = r->run;
        assert(run->ranks >= 1 && run->nodes >= 1 &&
               run->ranks % run->nodes == 0);
        r->scope = run->nodes > 1 ? 1 : 0;
        r->points = xcalloc((size_t)run->n_rows + 1, sizeof *r->points);
        /* Size 0 moves nothing and the model gives it no time; nccl-tests
         * still times the launch, which no cell describes. */
        for (int i = 0; i < run->n_rows; i++) {
            if (run->rows[i].size_bytes <= 0)
                continue;
            struct calib_point *p = &r->points[r->n_points++];
            p->size_bytes = run->rows[i].size_bytes;
            p->measured_s = run->rows[i].time_us * 1e-6;
        }
        if (predict(r, nc, false, cause) != 0)
            return -1;
        total += (size_t)r->n_points;
    }

    double *x = xmalloc((total + 1) * sizeof *x);
    double *t = xmalloc((total + 1) * sizeof *t);
    for (int o = 0; o < TOPO_CALIB_OPS; o++)
        for (int s = 0; s < TOPO_CALIB_SCOPES; s++)
            for (int a = 0; a < TOPO_CALIB_ALGOS; a++)
                for (int p = 0; p < TOPO_CALIB_PROTOS; p++) {
                    size_t n = 0;
                    for (int k = 0; k < n_runs; k++) {
                        const struct calib_run *r = &runs[k];
                        if ((int)r->run->op != o || r->scope != s)
                            continue;
                        double f = coll_busbw_factor(r->run->op,
                                                     r->run->ranks);
                        for (int i = 0; i < r->n_points; i++) {
                            if ((int)r->points[i].algo != a
                                || (int)r->points[i].proto != p)
                                continue;
                            x[n] = r->points[i].size_bytes * f;
                            t[n] = r->points[i].measured_s;
                            n++;
                        }
                    }
                    struct calib_fit *fit = &c->fit[o][s][a][p];
                    if (n > 0 && calib_fit_curve(x, t, n, fit) != 0)
                        fit->fitted = false;
                    fit->points = (int)n;
                }
    free(x);
    free(t);

    for (int k = 0; k < n_runs; k++) {
        calib_store_all(runs[k].topo, c);
        if (predict(&runs[k], nc, true, cause) != 0)
            return -1;
    }
    return 0;
}

void
calib_free(struct calib *c)
{
    if (c == NULL || c->runs == NULL)
        return;
    for (int k = 0; k < c->n_runs; k++) {
        free(c->runs[k].points);
        c->runs[k].points = NULL;
        c->runs[k].n_points = 0;
    }
    c->runs = NULL;
    c->n_runs = 0;
}

double
calib_median_abs(const double *v, size_t n)
{
    if (n == 0)
        return 0;
    double *a = xmalloc(n * sizeof *a);
    for (size_t i = 0; i < n; i++)
        a[i] = fabs(v[i]);
    double m = gsl_stats_median(a, 1, n);
    free(a);
    return m;
}

double
calib_median_error(const struct calib_point *p, int n, bool after,
                   double lo, double hi, int *count)
{
    double *e = xmalloc(((size_t)n + 1) * sizeof *e);
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        if (p[i].size_bytes < lo || p[i].size_bytes > hi ||
            !(p[i].measured_s > 0))
            continue;
        double pred = after ? p[i].after_s : p[i].before_s;
        e[k++] = 100 * (pred - p[i].measured_s) / p[i].measured_s;
    }
    double m = calib_median_abs(e, k);
    free(e);
    *count = (int)k;
    return m;
}
