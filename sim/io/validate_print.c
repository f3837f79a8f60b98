/*
 * validate_print.c: `fsdpsim validate --data`'s report (see
 * validate_print.h).
 */
#include "validate_print.h"
#include "calib.h"
#include "nccl_env.h"
#include "nccl_tests.h"

void
validate_print_title(const char *data, int n_runs, int version, FILE *out)
{
    fprintf(out, "# fsdpsim validate: %s: %d run%s, NCCL %d.%d\n"
            "# predicted: the model uncalibrated; held-out: calibrated on "
            "the run's other sizes\n# (leave-one-out), so no size is scored "
            "by a fit it took part in\n\n", data, n_runs,
            n_runs == 1 ? "" : "s", version / 100, version % 100);
}

void
validate_print_run_header(const struct published_run *v,
                          const char *topology, FILE *out)
{
    fprintf(out, "# run %s: %s, %s, %d node%s x %d GPUs (from line %d)\n",
            v->id, nccl_tests_program(v->op), topology, v->nodes,
            v->nodes == 1 ? "" : "s", v->gpn, v->line);
    fprintf(out, "#%12s %11s %11s %7s %11s %7s  %-13s %s\n", "size",
            "measured", "predicted", "error", "held-out", "error",
            "algorithm", "proto");
    fprintf(out, "#%12s %11s %11s %7s %11s %7s\n", "(B)", "(us)", "(us)",
            "(%)", "(us)", "(%)");
}

void
validate_print_point(const struct published_point *p,
                     const struct coll_result *r, double err,
                     const struct coll_result *h, double herr, FILE *out)
{
    fprintf(out, " %12.0f %11.2f %11.2f %+7.1f %11.2f %+7.1f  %-13s %s\n",
            p->size_bytes, p->measured_s * 1e6, r->time_s * 1e6, err,
            h->time_s * 1e6, herr, nccl_algo_name(r->algo),
            nccl_proto_name(r->proto));
}

void
validate_print_medians(const char *what, const double *in, size_t n_in,
                       const double *all, size_t n_all, FILE *out)
{
    fprintf(out, "# %s median |error|: 1 MiB..8 GiB %.1f %% (%zu size%s), "
            "all sizes %.1f %% (%zu size%s)\n", what,
            calib_median_abs(in, n_in), n_in, n_in == 1 ? "" : "s",
            calib_median_abs(all, n_all), n_all, n_all == 1 ? "" : "s");
}
