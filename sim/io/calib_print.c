/*
 * calib_print.c: `fsdpsim calibrate`'s report (see calib_print.h).
 */
#include "calib_print.h"
#include "nccl_tests.h"
#include "topo.h"

#include <math.h>

/* Medians are given over all sizes and over sizes from 1 MiB, where
 * bandwidth rather than launch latency sets the time and FSDP's
 * all-gathers and reduce-scatters of whole units sit. */
#define LARGE_BYTES 1048576.0

void
calib_print_run(const struct calib_run *r, const char *path,
                const struct nccl_config *nc, FILE *out)
{
    const struct nccl_tests_run *run = r->run;
    fprintf(out, "# fsdpsim calibrate: %s: %s, %d ranks on %d node%s, %s, "
             "NCCL %d.%d\n", path, nccl_tests_program(run->op), run->ranks,
             run->nodes, run->nodes == 1 ? "" : "s", r->topo->name,
             nc->version / 100, nc->version % 100);
    fprintf(out, "#%12s %11s %11s %7s %11s %7s  %-13s %s\n", "size",
             "measured", "before", "error", "after", "error", "algorithm",
             "proto");
    fprintf(out, "#%12s %11s %11s %7s %11s %7s\n", "(B)", "(us)", "(us)",
             "(%)", "(us)", "(%)");
    for (int i = 0; i < r->n_points; i++) {
        const struct calib_point *p = &r->points[i];
        double eb = 100 * (p->before_s - p->measured_s) / p->measured_s;
        double ea = 100 * (p->after_s - p->measured_s) / p->measured_s;
        fprintf(out, " %12.0f %11.2f %11.2f %+7.1f %11.2f %+7.1f  %-13s "
                "%s\n", p->size_bytes, p->measured_s * 1e6,
                p->before_s * 1e6, eb, p->after_s * 1e6, ea,
                nccl_algo_name(p->algo), nccl_proto_name(p->proto));
    }
    for (int after = 0; after <= 1; after++) {
        int nl, na;
        double ml = calib_median_error(r->points, r->n_points, after,
                                       LARGE_BYTES, INFINITY, &nl);
        double ma = calib_median_error(r->points, r->n_points, after, 0,
                                       INFINITY, &na);
        char large[32];
        snprintf(large, sizeof large, nl ? "%5.1f %%" : "  n/a", ml);
        fprintf(out, "# median |error| %-7s 1 MiB and up: %s (%d size%s), "
                "all sizes: %5.1f %% (%d size%s)\n",
                after ? "after:" : "before:", large, nl, nl == 1 ? "" : "s",
                ma, na, na == 1 ? "" : "s");
    }
}

/* One fitted cell, named as its topology keys are. */
static void
print_fit(const struct calib_fit *f, int op, const char *scope,
          const char *algo, const char *proto, FILE *out)
{
    if (f->points == 0)
        return;
    char cell[64];
    snprintf(cell, sizeof cell, "%s_%s_%s_%s", coll_op_name(op), scope,
             algo, proto);
    if (!f->fitted) {
        fprintf(out, "#   %-32s not fitted: %d size%s (needs two sizes or "
                "more)\n", cell, f->points, f->points == 1 ? "" : "s");
        return;
    }
    fprintf(out, "#   %-32s latency %.4g us, busbw %.4g GB/s, pipeline "
            "%.4g us (%d sizes)%s\n", cell, f->latency_s * 1e6,
            f->busbw_Bps / 1e9, f->pipeline_s * 1e6, f->points,
            f->latency_clamped
                ? "; the free fit gave a negative latency, so it was fitted "
                  "through 0"
            : f->bw_unresolved
                ? "; times do not grow with size, so busbw is the 1000TBps "
                  "ceiling"
                : "");
}

void
calib_print_fits(const struct calib *c, FILE *out)
{
    static const char *const scopes[TOPO_CALIB_SCOPES] = {"intra", "inter"};
    static const char *const protos[TOPO_CALIB_PROTOS] = {"ll", "ll128",
                                                         "simple"};
    fprintf(out, "# fitted [calibration] cells (x = size x busbw factor; "
            "time = latency + x / busbw\n#   + 2 sqrt(pipeline x / "
            "busbw)):\n");
    for (int o = 0; o < TOPO_CALIB_OPS; o++)
        for (int s = 0; s < TOPO_CALIB_SCOPES; s++)
            for (int a = 0; a < TOPO_CALIB_ALGOS; a++)
                for (int p = 0; p < TOPO_CALIB_PROTOS; p++)
                    print_fit(&c->fit[o][s][a][p], o, scopes[s],
                              topo_calib_algo_keys[a], protos[p], out);
}
