/*
 * calib_file.c: writing a calibration file from a node's measurements (see
 * calib_file.h).
 */
#include "calib_file.h"
#include "calib.h"
#include "nccl_tests.h"
#include "xalloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Fit the runs in TEXT and store the cells in OUT_T; 0 or -1. */
static int
fit_collectives(const char *text, const char *base,
                const struct nccl_config *nc, struct topo *out_t,
                char **cause)
{
    struct nccl_tests_run *runs = NULL;
    int n = 0;
    if (nccl_tests_parse_all("real bench output", text, COLL_OP_COUNT, &runs,
                             &n, cause) != 0)
        return -1;
    struct calib_run *cr = xcalloc((size_t)n, sizeof *cr);
    struct calib cal = {0};
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        cr[i].run = &runs[i];
        cr[i].topo = topo_load_sized(base, runs[i].nodes,
                                     runs[i].ranks / runs[i].nodes, true,
                                     cause);
        if (cr[i].topo == NULL)
            rc = -1;
    }
    if (rc == 0)
        rc = calib_run_all(&cal, cr, n, nc, cause);
    if (rc == 0)
        calib_store_all(out_t, &cal);
    calib_free(&cal);
    for (int i = 0; i < n; i++) {
        topo_free(cr[i].topo);
        nccl_tests_run_free(&runs[i]);
    }
    free(cr);
    free(runs);
    return rc;
}

int
calib_file_write(FILE *out, const char *base, const struct nccl_config *nc,
                 const struct calib_measured *m, char **cause)
{
    struct topo *t = topo_load_sized(base, 0, 0, true, cause);
    if (t == NULL)
        return -1;
    double peak = t->peak_flops[m->gemm_dtype];
    if (m->gemm_flops_per_s > 0 && !(peak > 0)) {
        *cause = xasprintf("topology '%s' has no %s peak to compare the "
                           "GEMM sweep with (set [gpu] %s)", t->name,
                           dtype_name(m->gemm_dtype),
                           dtype_name(m->gemm_dtype));
        topo_free(t);
        return -1;
    }
    if (m->nccl_tests_text != NULL &&
        fit_collectives(m->nccl_tests_text, base, nc, t, cause) != 0) {
        topo_free(t);
        return -1;
    }
    fprintf(out, "# fsdpsim calibration: measured by 'fsdpsim real bench'"
            "%s%s, for topology '%s'\n# use it with 'fsdpsim simulate "
            "--topology %s --calibration FILE'\n",
            m->gpu_name ? " on " : "", m->gpu_name ? m->gpu_name : "",
            t->name, t->name);
    if (m->compute != NULL && m->compute->n > 0) {
        /* The shape model's keys (the GEMM ceiling, HBM share, kernel
         * floor, launch cost) fitted to the samples as calibrate
         * --profile fits a trace's kernels. */
        struct profile_fit fit;
        bench_fit(t, m->compute, &fit);
        fprintf(out, "\n# compute, fitted to %d samples (GEMM sweep: %.1f "
                "TFLOPS %s over the model's shapes, of %.1f peak)\n",
                m->compute->n, m->gemm_flops_per_s / 1e12,
                dtype_name(m->gemm_dtype), peak / 1e12);
        /* Whether the sweep ran power-limited, and how far below the
         * maximum clock its FLOP/s were reached (a comment only). */
        if (m->compute->clock.nvml)
            gpu_state_print(out, "# ", BENCH_CLOCK_WHAT, &m->compute->clock);
        profile_fit_write_keys(&fit, out);
    } else if (m->gemm_flops_per_s > 0) {
        /* No samples: what cuBLAS reached over the model's own shapes,
         * as a fraction of the peak (capped at 1, the key's range). */
        double eff = fmin(m->gemm_flops_per_s / peak, 1.0);
        fprintf(out, "\n[gpu]\n# GEMM sweep: %.1f TFLOPS %s of %.1f peak\n"
                "gemm_efficiency = %.3f\n", m->gemm_flops_per_s / 1e12,
                dtype_name(m->gemm_dtype), peak / 1e12, eff);
    }
    if (m->h2d_Bps > 0 && m->d2h_Bps > 0) {
        /* One key for both directions: offload moves parameters in and
         * gradients out, so their mean. */
        fprintf(out, "\n[host]\n# pinned copies: H2D %.2f GB/s, D2H %.2f "
                "GB/s\npcie_bandwidth = %.2fGBps\n", m->h2d_Bps / 1e9,
                m->d2h_Bps / 1e9, (m->h2d_Bps + m->d2h_Bps) / 2e9);
    }
    topo_print_calibration(t, out);
    topo_free(t);
    return 0;
}
