/*
 * compare_print.c: the report of `fsdpsim compare` as text or JSON (see
 * compare.h; the numbers come from compare_run() in compare.c).
 *
 * Both forms are deterministic: fixed row order, fixed number formats, and
 * an error of a sum that cannot be formed (nothing measured) printed as
 * "-" or null rather than as inf or NaN.
 */
#include "compare.h"
#include "json_out.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

/* ---- printing -------------------------------------------------------- */

/* Rows in print order; COMPARE_KERNEL is shown within "compute". */
static const int row_order[] = {
    OP_FORWARD, OP_BACKWARD, OP_RECOMPUTE, OP_ALLGATHER, OP_REDUCESCATTER,
    OP_ALLREDUCE, OP_OPTIMIZER, OP_CAST, OP_H2D, OP_D2H, COMPARE_NCCL_OTHER,
    COMPARE_ROW_COMPUTE};
#define N_ROW_ORDER ((int)(sizeof row_order / sizeof row_order[0]))

static const char *const phase_names[3] = {"forward", "backward",
                                           "optimizer"};

/* "+20.0%", "0.0%" (no sign when it rounds to zero) or "-" for NaN. */
static const char *
fmt_pct(char *buf, size_t len, double pct)
{
    if (isnan(pct))
        snprintf(buf, len, "-");
    else if (fabs(pct) < 0.05)
        snprintf(buf, len, "0.0%%");
    else
        snprintf(buf, len, "%+.1f%%", pct);
    return buf;
}

static const char *
fmt_ms(char *buf, size_t len, double s)
{
    if (isnan(s))
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.3f ms", s * 1e3);
    return buf;
}

static void
print_side(FILE *out, const char *role, const char *path,
           const struct compare_timeline *tl)
{
    fprintf(out, "%-10s %s (%s, %s, %d ops)\n", role, path,
            compare_format_name(tl->format), tl->step_label, tl->n_ops);
}

static void
print_line(FILE *out, const char *what, const char *p, const char *m,
           const char *e)
{
    fprintf(out, "%-16s %14s %14s %9s\n", what, p, m, e);
}

void
compare_print_text(FILE *out, const struct compare_timeline *pred,
                   const struct compare_timeline *meas,
                   const char *pred_path, const char *meas_path,
                   const struct compare_result *r)
{
    char a[32], b[32], c[32], d[32];
    fputs("# fsdpsim compare: error = (predicted - measured) / measured\n",
          out);
    print_side(out, "predicted", pred_path, pred);
    print_side(out, "measured", meas_path, meas);
    fprintf(out, "%-10s %s\n\n", "matched",
            r->by_op_id ? "by op id"
                        : "by kind, k-th predicted (issue order) with k-th "
                          "measured (time order)");
    fprintf(out, "# %-14s %6s %6s %7s %11s %11s %8s %10s\n", "kind", "pred",
            "meas", "matched", "pred_ms", "meas_ms", "error", "median_op");
    for (int i = 0; i < N_ROW_ORDER; i++) {
        int k = row_order[i];
        const struct compare_row *w = &r->rows[k];
        if (w->n_pred + w->n_meas == 0 && k != COMPARE_ROW_COMPUTE)
            continue;
        fprintf(out, "%-16s %6d %6d %7d %11.3f %11.3f %8s %10s\n",
                compare_kind_name(k), w->n_pred, w->n_meas, w->matched,
                w->pred_s * 1e3, w->meas_s * 1e3,
                fmt_pct(a, sizeof a, w->err_pct),
                fmt_pct(b, sizeof b, w->median_op_err_pct));
    }
    fputc('\n', out);
    fprintf(out, "# %-14s %14s %14s %9s\n", "step", "predicted", "measured",
            "error");
    print_line(out, "step time", fmt_ms(a, sizeof a, r->step_pred_s),
               fmt_ms(b, sizeof b, r->step_meas_s),
               fmt_pct(c, sizeof c, r->step_err_pct));
    if (r->has_phases)
        for (int p = 0; p < 3; p++) {
            char what[32];
            snprintf(what, sizeof what, "%s phase", phase_names[p]);
            print_line(out, what, fmt_ms(a, sizeof a, r->phase_pred_s[p]),
                       fmt_ms(b, sizeof b, r->phase_meas_s[p]),
                       fmt_pct(c, sizeof c,
                               compare_err_pct(r->phase_pred_s[p],
                                               r->phase_meas_s[p])));
        }
    print_line(out, "communication", fmt_ms(a, sizeof a, r->comm_pred_s),
               fmt_ms(b, sizeof b, r->comm_meas_s),
               fmt_pct(c, sizeof c,
                       compare_err_pct(r->comm_pred_s, r->comm_meas_s)));
    print_line(out, "exposed comm", fmt_ms(a, sizeof a, r->exposed_pred_s),
               fmt_ms(b, sizeof b, r->exposed_meas_s),
               fmt_pct(c, sizeof c, compare_err_pct(r->exposed_pred_s,
                                                    r->exposed_meas_s)));
    if (r->mem_pred_bytes >= 0 || r->mem_meas_bytes >= 0) {
        if (r->mem_pred_bytes >= 0)
            snprintf(a, sizeof a, "%.2f MiB", r->mem_pred_bytes / 1048576.0);
        else
            snprintf(a, sizeof a, "-");
        if (r->mem_meas_bytes >= 0)
            snprintf(b, sizeof b, "%.2f MiB", r->mem_meas_bytes / 1048576.0);
        else
            snprintf(b, sizeof b, "-");
        print_line(out, "peak memory", a, b,
                   fmt_pct(d, sizeof d,
                           r->mem_pred_bytes >= 0 && r->mem_meas_bytes >= 0
                               ? compare_err_pct((double)r->mem_pred_bytes,
                                                 (double)r->mem_meas_bytes)
                               : NAN));
    }
}

/* A number (one double, in FMT), or null for NaN (JSON has no NaN). */
static void __attribute__((format(printf, 2, 3)))
json_num_out(FILE *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    double v = va_arg(ap, double);
    va_end(ap);
    if (isnan(v)) {
        fputs("null", out);
        return;
    }
    va_start(ap, fmt);
    vfprintf(out, fmt, ap);
    va_end(ap);
}

/* A byte count, or null for -1 (unknown). */
static void
json_bytes_out(FILE *out, int64_t bytes)
{
    if (bytes >= 0)
        fprintf(out, "%lld", (long long)bytes);
    else
        fputs("null", out);
}

static void
json_side(FILE *out, const char *path, const struct compare_timeline *tl)
{
    fputs("{\"path\": ", out);
    json_out_string(out, path);
    fprintf(out, ", \"format\": \"%s\", \"step\": ",
            compare_format_name(tl->format));
    json_out_string(out, tl->step_label);
    fprintf(out, ", \"n_ops\": %d}", tl->n_ops);
}

void
compare_print_json(FILE *out, const struct compare_timeline *pred,
                   const struct compare_timeline *meas,
                   const char *pred_path, const char *meas_path,
                   const struct compare_result *r, double tol_pct)
{
    fputs("{\n  \"predicted\": ", out);
    json_side(out, pred_path, pred);
    fputs(",\n  \"measured\": ", out);
    json_side(out, meas_path, meas);
    fprintf(out, ",\n  \"matched_by\": \"%s\",\n  \"kinds\": [",
            r->by_op_id ? "op_id" : "kind_order");
    int first = 1;
    for (int i = 0; i < N_ROW_ORDER; i++) {
        int k = row_order[i];
        const struct compare_row *w = &r->rows[k];
        if (w->n_pred + w->n_meas == 0 && k != COMPARE_ROW_COMPUTE)
            continue;
        fprintf(out, "%s\n    {\"kind\": \"%s\", \"n_pred\": %d, "
                "\"n_meas\": %d, \"matched\": %d, \"pred_s\": %.9f, "
                "\"meas_s\": %.9f, \"error_pct\": ", first ? "" : ",",
                compare_kind_name(k), w->n_pred, w->n_meas, w->matched,
                w->pred_s, w->meas_s);
        json_num_out(out, "%.3f", w->err_pct);
        fputs(", \"median_op_error_pct\": ", out);
        json_num_out(out, "%.3f", w->median_op_err_pct);
        fputc('}', out);
        first = 0;
    }
    fputs("\n  ],\n  \"phases\": ", out);
    if (r->has_phases) {
        fputc('[', out);
        for (int p = 0; p < 3; p++)
            fprintf(out, "%s\n    {\"phase\": \"%s\", \"pred_s\": %.9f, "
                    "\"meas_s\": %.9f}", p ? "," : "", phase_names[p],
                    r->phase_pred_s[p], r->phase_meas_s[p]);
        fputs("\n  ]", out);
    } else {
        fputs("null", out);
    }
    fprintf(out, ",\n  \"step_pred_s\": %.9f,\n  \"step_meas_s\": %.9f,"
            "\n  \"step_error_pct\": ", r->step_pred_s, r->step_meas_s);
    json_num_out(out, "%.3f", r->step_err_pct);
    fprintf(out, ",\n  \"comm_pred_s\": %.9f,\n  \"comm_meas_s\": %.9f,"
            "\n  \"exposed_comm_pred_s\": %.9f,\n  "
            "\"exposed_comm_meas_s\": %.9f", r->comm_pred_s, r->comm_meas_s,
            r->exposed_pred_s, r->exposed_meas_s);
    fputs(",\n  \"peak_mem_pred_bytes\": ", out);
    json_bytes_out(out, r->mem_pred_bytes);
    fputs(",\n  \"peak_mem_meas_bytes\": ", out);
    json_bytes_out(out, r->mem_meas_bytes);
    fputs(",\n  \"tol_pct\": ", out);
    json_num_out(out, "%g", tol_pct >= 0 ? tol_pct : NAN);
    fputs(",\n  \"within_tol\": ", out);
    if (tol_pct >= 0)
        fputs(compare_within_tol(r, tol_pct) ? "true" : "false", out);
    else
        fputs("null", out);
    fputs("\n}\n", out);
}

int
compare_within_tol(const struct compare_result *r, double tol_pct)
{
    return !isnan(r->step_err_pct) && fabs(r->step_err_pct) <= tol_pct;
}
