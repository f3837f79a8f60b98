/*
 * check_calibrate.c: tests for nccl_tests.c (reading nccl-tests output),
 * calib.c (fitting [calibration] cells), kineto_kernels.c and
 * profile_fit.c (calibrate --profile) and the calibrate and validate
 * commands' exit codes.
 *
 * The sample files in tests/data/nccl-tests-*.{txt,json} were written for
 * these tests in nccl-tests' own layouts (src/common.cu, src/util.cu);
 * their times come from two latency-bandwidth lines per file, not from a
 * real cluster.  tests/data/profile-*.json were written the same way in
 * the layout torch.profiler's export_chrome_trace writes: profile-small.json
 * is two layers of a small transformer forward and backward with invented
 * durations (a few percent of jitter around plausible A100 times), the
 * others are the three bad inputs (not JSON, no kernels, no shapes).  The
 * fit tests write their own trace from known values (synthetic_trace).
 * Files the tests need to vary are made with mkstemp()
 * under $TMPDIR (or /tmp) and removed by the test that made them.
 */
#define _POSIX_C_SOURCE 200809L

#include "calib.h"
#include "bench_fit.h"
#include "calib_file.h"
#include "coll.h"
#include "kernel_cost.h"
#include "kineto_kernels.h"
#include "nccl_tests.h"
#include "profile_fit.h"
#include "published.h"
#include "textfile.h"
#include "topo.h"

#include "testutil.h"
#include "check_main.h"

#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* nccl-tests prints algbw and busbw with two decimals (getFloatStr, width
 * 6), each rounded on its own from the unrounded algbw: busbw printed
 * differs from algbw printed x factor by at most 0.005 + 0.005 x factor,
 * and factor <= 2, so 0.015 GB/s; 0.02 leaves room for the time's own
 * rounding in larger values. */
#define BUSBW_TOL_GBPS 0.02
/* Recovering a synthetic latency and bandwidth: the issue asks for 1 %. */
#define FIT_REL_TOL 0.01
/* Values read back from a file as printed. */
#define READ_TOL 1e-9

/* Read FILE (under tests/data) or fail with the reader's message. */
static void
read_ok(const char *path, struct nccl_tests_run *run)
{
    char *cause = NULL;
    int rc = nccl_tests_read(path, run, &cause);
    ck_assert_msg(rc == 0, "%s", cause ? cause : "");
}

/* Expect nccl_tests_read(TEXT as a file, hint) to fail with WANT, where
 * "@" in WANT stands for the file's path. */
static void
expect_read_error(const char *text, enum coll_op hint, const char *want)
{
    char *path = tu_temp_text(text);
    struct nccl_tests_run run;
    nccl_tests_run_init(&run);
    run.op_hint = hint;
    char *cause = NULL;
    ck_assert_int_eq(nccl_tests_read(path, &run, &cause), -1);
    char full[1024];
    const char *at = strchr(want, '@');
    ck_assert_ptr_nonnull(at);
    snprintf(full, sizeof full, "%.*s%s%s", (int)(at - want), want, path,
             at + 1);
    ck_assert_str_eq(cause, full);
    ck_assert_int_eq(run.n_rows, 0);
    free(cause);
    unlink(path);
    free(path);
}

/* Eight rank lines on HOST_A (the first N_A) and HOST_B, as nccl-tests
 * prints them. */
static void
rank_lines(char *buf, size_t len, int n_a, int n)
{
    size_t off = 0;
    for (int i = 0; i < n; i++)
        off += (size_t)snprintf(buf + off, len - off,
                                "#  Rank %2d Group  0 Pid  100 on %s device "
                                "%2d [0x07] NVIDIA A100-SXM4-80GB\n", i,
                                i < n_a ? "host-a" : "host-b", i % 8);
}

/* ---- core: the reader ------------------------------------------------ */

START_TEST(test_calibrate_read_text_one_node)
{
    struct nccl_tests_run run;
    nccl_tests_run_init(&run);
    read_ok(tu_data_path("nccl-tests-allreduce-8x1.txt"), &run);
    /* The command line names all_reduce_perf; eight Rank lines, all on
     * dgx-node1; 8 B to 8 GiB by factors of 4 is 16 sizes. */
    ck_assert_int_eq(run.op, COLL_ALLREDUCE);
    ck_assert_int_eq(run.ranks, 8);
    ck_assert_int_eq(run.nodes, 1);
    ck_assert_int_eq(run.n_rows, 16);
    /* nccl-library=22703 is NCCL 2.27.3. */
    ck_assert_int_eq(run.nccl_version, 227);
    ck_assert_str_eq(run.gpu, "NVIDIA A100-SXM4-80GB");
    ck_assert_int_eq(run.json, 0);
    /* First row, line 19 (after the command line, 5 header lines, 8 rank
     * lines and 4 more): "8 2 float sum -1 14.00 ..."; the out-of-place
     * time is the first of the two. */
    ck_assert_double_eq(run.rows[0].size_bytes, 8);
    ck_assert_double_eq(run.rows[0].count, 2);
    ck_assert_str_eq(run.rows[0].type, "float");
    ck_assert_str_eq(run.rows[0].redop, "sum");
    ck_assert_double_eq_tol(run.rows[0].time_us, 14.00, READ_TOL);
    ck_assert_int_eq(run.rows[0].line, 19);
    /* Last row: 8589934592 B in 63995.6 us, busbw 234.90 GB/s. */
    ck_assert_double_eq(run.rows[15].size_bytes, 8589934592.0);
    ck_assert_double_eq_tol(run.rows[15].time_us, 63995.6, READ_TOL);
    ck_assert_double_eq_tol(run.rows[15].busbw_GBps, 234.90, READ_TOL);
    nccl_tests_run_free(&run);
    ck_assert_ptr_null(run.rows);
}
END_TEST

START_TEST(test_calibrate_read_text_two_nodes)
{
    struct nccl_tests_run run;
    nccl_tests_run_init(&run);
    read_ok(tu_data_path("nccl-tests-allgather-8x2.txt"), &run);
    /* mpirun -np 16 with -g 1: sixteen Rank lines on p4de-a and p4de-b;
     * the NCCL INFO line between them is not data. */
    ck_assert_int_eq(run.op, COLL_ALLGATHER);
    ck_assert_int_eq(run.ranks, 16);
    ck_assert_int_eq(run.nodes, 2);
    /* all_gather sizes are whole multiples of 16 ranks x 4 B, so 8 and 32
     * B become 0 and are not printed: 14 of the 16 sizes remain. */
    ck_assert_int_eq(run.n_rows, 14);
    ck_assert_double_eq(run.rows[0].size_bytes, 128);
    ck_assert_str_eq(run.rows[0].redop, "none");
    ck_assert_int_eq(run.nccl_version, 0);
    nccl_tests_run_free(&run);
}
END_TEST

START_TEST(test_calibrate_read_several_runs)
{
    /* nccl-tests-two-runs.txt is nccl-tests-allgather-8x2.txt followed by
     * nccl-tests-allreduce-8x1.txt (41 lines then 38), as a shell loop over
     * the programs writes them: two runs, split after the first "# Avg
     * bus bandwidth" line, each as read alone. */
    struct nccl_tests_run *runs = NULL;
    int n = 0;
    char *cause = NULL;
    const char *path = tu_data_path("nccl-tests-two-runs.txt");
    ck_assert_msg(nccl_tests_read_all(path, COLL_OP_COUNT, &runs, &n,
                                      &cause) == 0, "%s", cause);
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(runs[0].op, COLL_ALLGATHER);
    ck_assert_int_eq(runs[0].ranks, 16);
    ck_assert_int_eq(runs[0].n_rows, 14);
    ck_assert_int_eq(runs[1].op, COLL_ALLREDUCE);
    ck_assert_int_eq(runs[1].ranks, 8);
    ck_assert_int_eq(runs[1].n_rows, 16);
    /* Line numbers are the file's: the all-reduce run's rows are 41 lines
     * further down than in nccl-tests-allreduce-8x1.txt. */
    struct nccl_tests_run one;
    nccl_tests_run_init(&one);
    const char *alone = tu_data_path("nccl-tests-allreduce-8x1.txt");
    read_ok(alone, &one);
    ck_assert_int_eq(runs[1].rows[0].line,
                     one.rows[0].line + 41);
    nccl_tests_run_free(&one);
    for (int k = 0; k < n; k++)
        nccl_tests_run_free(&runs[k]);
    free(runs);

    /* One run in a file: the same as nccl_tests_read. */
    path = tu_data_path("nccl-tests-allreduce-8x2.json");
    ck_assert_int_eq(nccl_tests_read_all(path, COLL_OP_COUNT, &runs, &n,
                                         &cause), 0);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(runs[0].ranks, 16);
    nccl_tests_run_free(&runs[0]);
    free(runs);
}
END_TEST

START_TEST(test_calibrate_calibration_file)
{
    /* What real bench writes from its measurements, read back onto the
     * topology by simulate --calibration.  GEMMs at 200 TFLOPS bf16 on a
     * 312 TFLOPS A100 are 0.641 of peak; copies at 20 and 22 GB/s give
     * pcie_bandwidth 21 GB/s; the all-reduce sweep of
     * nccl-tests-allreduce-8x1.txt gives its Ring Simple cell, 235 GB/s
     * and 28 us (as calibrate prints it). */
    enum textfile_error error;
    char *text = textfile_read(tu_data_path("nccl-tests-allreduce-8x1.txt"),
                               1 << 20, 0, &error);
    ck_assert_ptr_nonnull(text);
    struct calib_measured m = {text, 200e12, DTYPE_BF16, 20e9, 22e9,
                               "NVIDIA A100-SXM4-80GB", NULL};
    struct nccl_config nc;
    nccl_config_init(&nc);
    char *out = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&out, &len);
    char *cause = NULL;
    ck_assert_msg(calib_file_write(mem, "dgx-a100-80g", &nc, &m, &cause)
                      == 0, "%s", cause);
    fclose(mem);
    ck_assert_ptr_nonnull(strstr(out, "\ngemm_efficiency = 0.641\n"));
    ck_assert_ptr_nonnull(strstr(out, "\npcie_bandwidth = 21.00GBps\n"));
    ck_assert_ptr_nonnull(strstr(out, "\nallreduce_intra_ring_simple_busbw "
                                      "= 235GBps\n"));
    char *path = tu_temp_text(out);
    struct topo *t = topo_load("dgx-a100-80g", &cause);
    ck_assert_ptr_nonnull(t);
    ck_assert_msg(topo_apply_calibration(t, path, &cause) == 0, "%s",
                  cause);
    ck_assert_double_eq_tol(t->gemm_efficiency, 0.641, 1e-12);
    ck_assert_double_eq_tol(t->pcie_Bps, 21e9, 1e-3);
    const struct topo_calibration *cell =
        &t->calib_algo[COLL_ALLREDUCE][0][NCCL_ALGO_RING][PROTO_SIMPLE];
    ck_assert_double_eq_tol(cell->busbw_Bps, 235e9, 1e-3);
    ck_assert_double_eq_tol(cell->latency_ns, 28000, 1e-6);
    topo_free(t);
    unlink(path);
    free(path);
    free(out);
    free(text);

    /* A file that changes the cluster's shape is refused, and the
     * topology is left as it was. */
    path = tu_temp_text("[gpu]\ngemm_efficiency = 0.5\n[intra]\n"
                        "fabric = pcie\n");
    t = topo_load("dgx-a100-80g", &cause);
    double before = t->gemm_efficiency;
    ck_assert_int_eq(topo_apply_calibration(t, path, &cause), -1);
    ck_assert_msg(strstr(cause, ":4: [intra] fabric describes the cluster, "
                                "not a measurement") != NULL, "%s", cause);
    ck_assert_double_eq(t->gemm_efficiency, before);
    free(cause);
    topo_free(t);
    unlink(path);
    free(path);
}
END_TEST

START_TEST(test_calibrate_published_csv)
{
    /* published-sample.csv: a synthetic all_reduce_perf sweep on one
     * 8-GPU node, 1 KiB to 1 GiB by 4 (11 sizes), t = 20 us + size x
     * 2(8-1)/8 / 200 GB/s, beside an fsdp_e2e row that is not a sweep.
     * It reads as one run of 11 points in size order; as nccl-tests rows
     * its fit gives back 20 us and 200 GB/s in every cell. */
    enum textfile_error error;
    const char *path = tu_data_path("published-sample.csv");
    char *text = textfile_read(path, 1 << 20, 0, &error);
    ck_assert_ptr_nonnull(text);
    ck_assert(published_is_csv(text));
    struct published_run *pub;
    int n = 0;
    char *cause = NULL;
    ck_assert_msg(published_parse(path, text, &pub, &n, &cause) == 0, "%s",
                  cause);
    ck_assert_int_eq(n, 1);
    ck_assert_str_eq(pub[0].id, "SYN-AR");
    ck_assert_int_eq(pub[0].op, COLL_ALLREDUCE);
    ck_assert_int_eq(pub[0].n, 11);
    ck_assert_double_eq(pub[0].pt[0].size_bytes, 1024);
    ck_assert_str_eq(published_topology(&pub[0]), "dgx-a100-80g");
    struct nccl_tests_run run;
    published_nccl_tests(&pub[0], 3, &run);
    ck_assert_int_eq(run.n_rows, 10);       /* size 4^3 KiB left out */
    ck_assert_int_eq(run.ranks, 8);
    struct topo *t = topo_load_sized("dgx-a100-80g", 1, 8, true, &cause);
    struct calib_run cr = {.run = &run, .topo = t};
    struct calib c;
    struct nccl_config nc;
    nccl_config_init(&nc);
    ck_assert_int_eq(calib_run_all(&c, &cr, 1, &nc, &cause), 0);
    const struct calib_fit *f =
        &c.fit[COLL_ALLREDUCE][0][NCCL_ALGO_RING][PROTO_SIMPLE];
    ck_assert(f->fitted);
    ck_assert_double_eq_tol(f->latency_s, 20e-6, 20e-6 * FIT_REL_TOL);
    ck_assert_double_eq_tol(f->busbw_Bps, 200e9, 200e9 * FIT_REL_TOL);
    calib_free(&c);
    topo_free(t);
    nccl_tests_run_free(&run);
    published_free(pub, n);
    /* nccl-tests output is not the CSV. */
    free(text);
    text = textfile_read(tu_data_path("nccl-tests-allreduce-8x1.txt"),
                         1 << 20, 0, &error);
    ck_assert(!published_is_csv(text));
    free(text);
}
END_TEST

START_TEST(test_calibrate_read_text_old_layout)
{
    struct nccl_tests_run run;
    nccl_tests_run_init(&run);
    read_ok(tu_data_path("nccl-tests-allgather-old.txt"), &run);
    /* No program name, no column header and no redop column: 11 fields,
     * "size count type" + 8, which only all-gather printed. */
    ck_assert_int_eq(run.op, COLL_ALLGATHER);
    ck_assert_int_eq(run.ranks, 8);
    ck_assert_int_eq(run.nodes, 1);
    /* 8 B to 128 KiB by 4 is 8 sizes; 8 B is less than 8 ranks x 4 B. */
    ck_assert_int_eq(run.n_rows, 7);
    ck_assert_str_eq(run.rows[0].redop, "");
    /* Row "32 1 float 8.00 0.00 ...": time is the 4th field. */
    ck_assert_double_eq_tol(run.rows[0].time_us, 8.00, READ_TOL);
    ck_assert_str_eq(run.gpu, "A100-SXM4-40GB");
    nccl_tests_run_free(&run);
}
END_TEST

START_TEST(test_calibrate_read_json)
{
    struct nccl_tests_run run;
    nccl_tests_run_init(&run);
    read_ok(tu_data_path("nccl-tests-allreduce-8x2.json"), &run);
    /* "args"[0] is ./build/all_reduce_perf; config: nthreads 1, ngpus 8,
     * two "devices" (one per process) on gpu-a and gpu-b: 1 x 8 x 2 = 16
     * ranks on 2 nodes. */
    ck_assert_int_eq(run.op, COLL_ALLREDUCE);
    ck_assert_int_eq(run.ranks, 16);
    ck_assert_int_eq(run.nodes, 2);
    ck_assert_int_eq(run.json, 1);
    ck_assert_int_eq(run.n_rows, 16);
    ck_assert_int_eq(run.nccl_version, 227);
    /* results[0].out_of_place.time = 35.003750 us for 8 B. */
    ck_assert_double_eq(run.rows[0].size_bytes, 8);
    ck_assert_double_eq_tol(run.rows[0].time_us, 35.00375, READ_TOL);
    ck_assert_str_eq(run.rows[0].redop, "sum");
    ck_assert_int_eq(run.rows[0].line, 1);
    nccl_tests_run_free(&run);
}
END_TEST

START_TEST(test_calibrate_busbw_identity)
{
    /* nccl-tests doc/PERFORMANCE.md: busbw = algbw x (n-1)/n for
     * all-gather and reduce-scatter, algbw x 2(n-1)/n for all-reduce;
     * every sample row must satisfy it up to the printing's rounding. */
    static const char *const files[] = {
        "nccl-tests-allreduce-8x1.txt", "nccl-tests-allgather-8x2.txt",
        "nccl-tests-allgather-old.txt", "nccl-tests-allreduce-8x2.json",
        NULL};
    for (int f = 0; files[f]; f++) {
        struct nccl_tests_run run;
        nccl_tests_run_init(&run);
        read_ok(tu_data_path(files[f]), &run);
        double n = run.ranks;
        double factor = run.op == COLL_ALLREDUCE ? 2 * (n - 1) / n
                                                 : (n - 1) / n;
        /* coll.c's factor is the same formula. */
        ck_assert_double_eq_tol(coll_busbw_factor(run.op, run.ranks),
                                factor, 1e-15);
        for (int i = 0; i < run.n_rows; i++)
            ck_assert_msg(fabs(run.rows[i].busbw_GBps -
                               run.rows[i].algbw_GBps * factor)
                              <= BUSBW_TOL_GBPS,
                          "%s row %d: busbw %g, algbw %g x %g", files[f], i,
                          run.rows[i].busbw_GBps, run.rows[i].algbw_GBps,
                          factor);
        nccl_tests_run_free(&run);
    }
}
END_TEST

START_TEST(test_calibrate_op_hint)
{
    /* A redop column with "sum" fits all_reduce_perf and
     * reduce_scatter_perf; with no program name the hint decides. */
    char text[4096];
    char ranks[2048];
    rank_lines(ranks, sizeof ranks, 8, 8);
    snprintf(text, sizeof text, "%s"
             "     1048576   32768  float  sum  -1  20.00  52.43  45.88  0"
             "  20.10  52.17  45.65  0\n"
             "     4194304  131072  float  sum  -1  40.00 104.86  91.75  0"
             "  40.20 104.33  91.29  0\n", ranks);
    char *path = tu_temp_text(text);
    struct nccl_tests_run run;
    nccl_tests_run_init(&run);
    run.op_hint = COLL_REDUCESCATTER;
    read_ok(path, &run);
    ck_assert_int_eq(run.op, COLL_REDUCESCATTER);
    ck_assert_int_eq(run.n_rows, 2);
    nccl_tests_run_free(&run);
    /* The hint survives nccl_tests_run_free(), so a run can be reread. */
    ck_assert_int_eq(run.op_hint, COLL_REDUCESCATTER);
    unlink(path);
    free(path);
}
END_TEST

/* ---- core: the fit --------------------------------------------------- */

START_TEST(test_calibrate_fit_exact)
{
    /* t = alpha + x / beta with alpha = 20 us, beta = 200 GB/s, x from
     * 1 KB to 10 GB: a line through the points is the line itself. */
    const double alpha = 20e-6, beta = 200e9;
    double x[8], t[8];
    for (int i = 0; i < 8; i++) {
        x[i] = 1e3 * pow(10, i);
        t[i] = alpha + x[i] / beta;
    }
    struct calib_fit fit;
    ck_assert_int_eq(calib_fit_line(x, t, 8, &fit), 0);
    ck_assert(fit.fitted);
    ck_assert(!fit.latency_clamped && !fit.bw_unresolved);
    ck_assert_double_eq_tol(fit.latency_s, alpha, alpha * FIT_REL_TOL);
    ck_assert_double_eq_tol(fit.busbw_Bps, beta, beta * FIT_REL_TOL);
}
END_TEST

START_TEST(test_calibrate_fit_noisy)
{
    /* The same line with +1 % and -1 % alternating: weights 1/t^2 make
     * every point count by its relative error, so neither end dominates;
     * the noise is symmetric, so both parameters stay within 1 %
     * (toolchain.md §3 found 0.1 % and 0.2 % for +-1 % noise). */
    const double alpha = 20e-6, beta = 200e9;
    double x[16], t[16];
    for (int i = 0; i < 16; i++) {
        x[i] = 1e3 * pow(10, i / 2.0);
        t[i] = (alpha + x[i] / beta) * (i % 2 ? 1.01 : 0.99);
    }
    struct calib_fit fit;
    ck_assert_int_eq(calib_fit_line(x, t, 16, &fit), 0);
    ck_assert_double_eq_tol(fit.latency_s, alpha, alpha * FIT_REL_TOL);
    ck_assert_double_eq_tol(fit.busbw_Bps, beta, beta * FIT_REL_TOL);
}
END_TEST

START_TEST(test_calibrate_fit_clamps)
{
    /* t = x / beta - 1 us over 100 MB .. 10 GB (1 ms .. 100 ms at 100
     * GB/s): the free fit's intercept is -1 us, so the line is refitted
     * through 0; the 1 us is at most 0.1 % of any t, so beta stays within
     * 1 %. */
    const double beta = 100e9;
    double x[3] = {1e8, 1e9, 1e10}, t[3];
    for (int i = 0; i < 3; i++)
        t[i] = x[i] / beta - 1e-6;
    struct calib_fit fit;
    ck_assert_int_eq(calib_fit_line(x, t, 3, &fit), 0);
    ck_assert(fit.latency_clamped);
    ck_assert_double_eq(fit.latency_s, 0);
    ck_assert_double_eq_tol(fit.busbw_Bps, beta, beta * FIT_REL_TOL);

    /* Flat times (10 us whatever the size): slope 0, so the latency is
     * their mean, 10 us, and busbw the 1000 TBps ceiling. */
    double tf[3] = {10e-6, 10e-6, 10e-6};
    ck_assert_int_eq(calib_fit_line(x, tf, 3, &fit), 0);
    ck_assert(fit.bw_unresolved);
    ck_assert_double_eq_tol(fit.latency_s, 10e-6, 10e-6 * FIT_REL_TOL);
    ck_assert_double_eq(fit.busbw_Bps, 1e15);

    /* One size twice cannot separate latency from bandwidth; nor can one
     * point. */
    double xs[2] = {1e6, 1e6}, ts[2] = {1e-5, 1.1e-5};
    ck_assert_int_eq(calib_fit_line(xs, ts, 2, &fit), -1);
    ck_assert(!fit.fitted);
    ck_assert_int_eq(calib_fit_line(xs, ts, 1, &fit), -1);
}
END_TEST

START_TEST(test_calibrate_fit_curve)
{
    /* t = alpha + x / beta + 2 sqrt(p x / beta) with alpha = 20 us, beta =
     * 200 GB/s, p = 50 us (coll.c's pipelined form): at x = 1 GB the
     * terms are 20 us + 5 ms + 2 sqrt(50e-6 x 5e-3) = 1 ms, so the sqrt
     * term is 16 % of t and the fit must recover all three. */
    const double alpha = 20e-6, beta = 200e9, pipe = 50e-6;
    double x[8], t[8];
    for (int i = 0; i < 8; i++) {
        x[i] = 1e3 * pow(10, i);
        t[i] = alpha + x[i] / beta + 2 * sqrt(pipe * x[i] / beta);
    }
    struct calib_fit fit;
    ck_assert_int_eq(calib_fit_curve(x, t, 8, &fit), 0);
    ck_assert(fit.fitted && !fit.latency_clamped);
    ck_assert_double_eq_tol(fit.latency_s, alpha, alpha * FIT_REL_TOL);
    ck_assert_double_eq_tol(fit.busbw_Bps, beta, beta * FIT_REL_TOL);
    ck_assert_double_eq_tol(fit.pipeline_s, pipe, pipe * FIT_REL_TOL);

    /* A plain line (p = 0) stays a line: the curve keeps no sqrt term. */
    for (int i = 0; i < 8; i++)
        t[i] = alpha + x[i] / beta;
    ck_assert_int_eq(calib_fit_curve(x, t, 8, &fit), 0);
    ck_assert_double_eq(fit.pipeline_s, 0);
    ck_assert_double_eq_tol(fit.busbw_Bps, beta, beta * FIT_REL_TOL);

    /* Two points: only a line can go through them. */
    ck_assert_int_eq(calib_fit_curve(x + 5, t + 5, 2, &fit), 0);
    ck_assert_double_eq(fit.pipeline_s, 0);
}
END_TEST

START_TEST(test_calibrate_recovers_synthetic_run)
{
    /* all_reduce_perf on 8 ranks of one host, every size timed as
     * t = 20 us + size x 2(8-1)/8 / 200 GB/s (the model's own form), with
     * six decimals so that printing loses nothing.  Whatever protocol the
     * model assigns to each size, every fitted cell must come back as
     * 20 us and 200 GB/s, and every prediction after as the measurement,
     * within 1 % (the stored values are rounded to 4 digits, 0.05 %). */
    const double alpha_us = 20, beta_GBps = 200;
    const double factor = 2.0 * 7 / 8;
    char *text = malloc(65536);
    ck_assert_ptr_nonnull(text);
    size_t off = (size_t)sprintf(text, "$ ./all_reduce_perf -b 8 -e 8G "
                                       "-f 2 -g 8\n");
    rank_lines(text + off, 65536 - off, 8, 8);
    off = strlen(text);
    for (double s = 8; s <= 8589934592.0; s *= 2) {
        double t = alpha_us + s * factor / (beta_GBps * 1e3);
        double alg = s / t / 1e3;
        off += (size_t)snprintf(text + off, 65536 - off,
                                "%12.0f %12.0f float sum -1 %.6f %.6f %.6f 0"
                                " %.6f %.6f %.6f 0\n", s, s / 4, t, alg,
                                alg * factor, t, alg, alg * factor);
    }
    char *path = tu_temp_text(text);
    free(text);

    struct nccl_tests_run run;
    nccl_tests_run_init(&run);
    read_ok(path, &run);
    char *cause = NULL;
    struct topo *t = topo_load("dgx-a100-80g", &cause);
    ck_assert_ptr_nonnull(t);
    struct calib_run cr = {.run = &run, .topo = t};
    struct nccl_config nc;
    nccl_config_init(&nc);
    struct calib c;
    ck_assert_int_eq(calib_run_all(&c, &cr, 1, &nc, &cause), 0);
    int fitted = 0;
    for (int k = 0; k < TOPO_CALIB_ALGOS * TOPO_CALIB_PROTOS; k++) {
        int a = k / TOPO_CALIB_PROTOS, p = k % TOPO_CALIB_PROTOS;
        const struct calib_fit *f = &c.fit[COLL_ALLREDUCE][0][a][p];
        if (!f->fitted)
            continue;
        fitted++;
        ck_assert_double_eq_tol(f->latency_s, alpha_us * 1e-6,
                                alpha_us * 1e-6 * FIT_REL_TOL);
        ck_assert_double_eq_tol(f->busbw_Bps, beta_GBps * 1e9,
                                beta_GBps * 1e9 * FIT_REL_TOL);
        const struct topo_calibration *cell =
            &t->calib_algo[COLL_ALLREDUCE][0][a][p];
        ck_assert_double_eq_tol(cell->latency_ns, alpha_us * 1e3,
                                alpha_us * 1e3 * FIT_REL_TOL);
        ck_assert_double_eq_tol(cell->busbw_Bps, beta_GBps * 1e9,
                                beta_GBps * 1e9 * FIT_REL_TOL);
    }
    /* 8 B .. 8 GiB spans at least LL and Simple (Tree and Ring). */
    ck_assert_int_ge(fitted, 2);
    /* No inter-node cell: one host. */
    for (int a = 0; a < TOPO_CALIB_ALGOS; a++)
        for (int p = 0; p < TOPO_CALIB_PROTOS; p++)
            ck_assert_int_eq(c.fit[COLL_ALLREDUCE][1][a][p].points, 0);
    ck_assert_int_eq(cr.n_points, run.n_rows);
    for (int i = 0; i < cr.n_points; i++)
        ck_assert_double_eq_tol(cr.points[i].after_s,
                                cr.points[i].measured_s,
                                cr.points[i].measured_s * FIT_REL_TOL);
    int n;
    /* Hence the median error after is below 1 % too. */
    ck_assert_double_lt(calib_median_error(cr.points, cr.n_points, true, 0,
                                           INFINITY, &n), 100 * FIT_REL_TOL);
    ck_assert_int_eq(n, run.n_rows);
    calib_free(&c);
    topo_free(t);
    nccl_tests_run_free(&run);
    unlink(path);
    free(path);
}
END_TEST

START_TEST(test_calibrate_medians)
{
    /* |{-3, 1, 2}| sorted is 1, 2, 3: median 2. */
    double odd[3] = {-3, 1, 2};
    ck_assert_double_eq(calib_median_abs(odd, 3), 2);
    /* The input is left as it was (gsl_stats_median sorts a copy). */
    ck_assert_double_eq(odd[0], -3);
    /* |{1, -4, 2, -3}| sorted is 1, 2, 3, 4: median (2 + 3) / 2. */
    double even[4] = {1, -4, 2, -3};
    ck_assert_double_eq(calib_median_abs(even, 4), 2.5);
    ck_assert_double_eq(calib_median_abs(NULL, 0), 0);
    /* Errors of 10 % at 1 KiB and -20 %, +30 % at 1 MiB and 1 GiB: over
     * 1 MiB and up the median of 20 and 30 is 25. */
    struct calib_point p[3] = {
        {1024, 1.0, 1.1, 1.1, NCCL_ALGO_RING, PROTO_LL},
        {1048576, 1.0, 0.8, 0.8, NCCL_ALGO_RING, PROTO_SIMPLE},
        {1073741824, 1.0, 1.3, 1.3, NCCL_ALGO_RING, PROTO_SIMPLE}};
    int n;
    ck_assert_double_eq_tol(calib_median_error(p, 3, false, 1048576,
                                               INFINITY, &n), 25, 1e-9);
    ck_assert_int_eq(n, 2);
    /* Over all three, sorted 10, 20, 30: 20. */
    ck_assert_double_eq_tol(calib_median_error(p, 3, true, 0, INFINITY, &n),
                            20, 1e-9);
    ck_assert_int_eq(n, 3);
}
END_TEST

/* ---- errors ---------------------------------------------------------- */

START_TEST(test_calibrate_error_no_rows)
{
    char *cause = NULL;
    struct nccl_tests_run run;
    nccl_tests_run_init(&run);
    const char *path = tu_data_path("nccl-tests-norows.txt");
    ck_assert_int_eq(nccl_tests_read(path, &run, &cause), -1);
    char want[2048];
    snprintf(want, sizeof want, "%s: no data rows (expected nccl-tests "
             "output: lines of size, count, type, redop, root, time, algbw, "
             "busbw, ...)", path);
    ck_assert_str_eq(cause, want);
    free(cause);
}
END_TEST

START_TEST(test_calibrate_error_missing_file)
{
    char *cause = NULL;
    struct nccl_tests_run run;
    nccl_tests_run_init(&run);
    ck_assert_int_eq(nccl_tests_read("/nonexistent/ar.txt", &run, &cause),
                     -1);
    ck_assert_str_eq(cause, "/nonexistent/ar.txt: No such file or "
                            "directory");
    free(cause);
}
END_TEST

START_TEST(test_calibrate_error_text)
{
    char ranks[2048], text[4096];
    rank_lines(ranks, sizeof ranks, 8, 8);
    /* A redop of "sum" and no program name: ambiguous without a hint. */
    snprintf(text, sizeof text, "%s  1024 256 float sum -1 10.0 0.10 0.18 0"
             " 10.0 0.10 0.18 0\n", ranks);
    expect_read_error(text, COLL_OP_COUNT,
                      "@: cannot tell all_reduce_perf from "
                      "reduce_scatter_perf output (no program name in the "
                      "file; give the collective)");
    /* A time that is not a number, on line 9 (after 8 rank lines). */
    snprintf(text, sizeof text, "%s  1024 256 float sum -1 fast 0.10 0.18 0"
             " 10.0 0.10 0.18 0\n", ranks);
    expect_read_error(text, COLL_ALLREDUCE,
                      "@:9: cannot read this row: size, count, time, algbw "
                      "and busbw must be numbers (out-of-place time in "
                      "column 6)");
    /* Too few fields for any layout. */
    snprintf(text, sizeof text, "%s  1024 256 float sum -1 10.0 0.10\n",
             ranks);
    expect_read_error(text, COLL_ALLREDUCE,
                      "@:9: cannot read this row: 7 fields (expected size "
                      "count type [redop [root]] time algbw busbw #wrong, "
                      "out-of-place then in-place)");
    /* Another nccl-tests program. */
    snprintf(text, sizeof text, "$ ./build/broadcast_perf -g 8\n%s", ranks);
    expect_read_error(text, COLL_OP_COUNT,
                      "@:1: unknown op 'broadcast_perf': fsdpsim reads "
                      "all_gather_perf, reduce_scatter_perf and "
                      "all_reduce_perf output");
    /* Rows but no rank lines. */
    expect_read_error("  1024 256 float sum -1 10.0 0.10 0.18 0 10.0 0.10 "
                      "0.18 0\n", COLL_ALLREDUCE,
                      "@: no '#  Rank N ... on HOST device D' lines, so the "
                      "number of ranks is unknown (keep nccl-tests' whole "
                      "header in the file)");
    /* 6 ranks on host-a, 2 on host-b. */
    rank_lines(ranks, sizeof ranks, 6, 8);
    snprintf(text, sizeof text, "%s  1024 256 float sum -1 10.0 0.10 0.18 0"
             " 10.0 0.10 0.18 0\n", ranks);
    expect_read_error(text, COLL_ALLREDUCE,
                      "@: inconsistent ranks: host 'host-a' runs 6 ranks but "
                      "'host-b' runs 2 (fsdpsim needs the same number of "
                      "GPUs on every node)");
    /* Two device lists of different sizes in one file. */
    char four[1024];
    rank_lines(ranks, sizeof ranks, 8, 8);
    rank_lines(four, sizeof four, 4, 4);
    snprintf(text, sizeof text, "%s%s", ranks, four);
    expect_read_error(text, COLL_ALLREDUCE,
                      "@:9: inconsistent ranks: the device list here has 4 "
                      "ranks, the one on line 1 has 8 (give one nccl-tests "
                      "run per file)");
}
END_TEST

START_TEST(test_calibrate_error_json)
{
    expect_read_error("{\"results\": [\n", COLL_OP_COUNT,
                      "@:2: invalid JSON: ']' expected near end of file");
    expect_read_error("[{\"size\": 8}]", COLL_OP_COUNT,
                      "@: not nccl-tests JSON output (expected an object "
                      "with a 'results' list, as all_reduce_perf -J FILE "
                      "writes)");
    expect_read_error("{\"args\": [\"all_reduce_perf\"], \"config\": "
                      "{\"nthreads\": 1, \"ngpus\": 8, \"devices\": "
                      "[{\"hostname\": \"a\"}]}, \"results\": []}",
                      COLL_OP_COUNT,
                      "@: no data rows (the 'results' list holds no "
                      "out-of-place measurement)");
    expect_read_error("{\"args\": [\"all_reduce_perf\"], \"results\": []}",
                      COLL_OP_COUNT,
                      "@: config: expected 'nthreads', 'ngpus' and a "
                      "'devices' list, so the number of ranks is unknown");
}
END_TEST

START_TEST(test_calibrate_error_exit_codes)
{
    if (getenv("FSDPSIM") == NULL)
        return;
    char err[4096], args[8192], want[8192];
    /* Bad input is exit 2 with one line on stderr. */
    ck_assert_int_eq(tu_run_fsdpsim("calibrate --nccl-tests /nonexistent.txt "
                                 "--out /dev/null", err, sizeof err), 2);
    ck_assert_str_eq(err, "fsdpsim: /nonexistent.txt: No such file or "
                          "directory\n");
    snprintf(args, sizeof args, "calibrate '%s' --out /dev/null",
             tu_data_path("nccl-tests-norows.txt"));
    ck_assert_int_eq(tu_run_fsdpsim(args, err, sizeof err), 2);
    snprintf(want, sizeof want, "fsdpsim: %s: no data rows (expected "
             "nccl-tests output: lines of size, count, type, redop, root, "
             "time, algbw, busbw, ...)\n", tu_data_path("nccl-tests-norows.txt"));
    ck_assert_str_eq(err, want);
    /* One node and two nodes, both of 8 GPUs, make one topology... */
    snprintf(args, sizeof args, "calibrate '%s' '%s' --out /dev/null",
             tu_data_path("nccl-tests-allreduce-8x1.txt"),
             tu_data_path("nccl-tests-allgather-8x2.txt"));
    ck_assert_int_eq(tu_run_fsdpsim(args, NULL, 0), 0);
    /* ...but 8 and 4 GPUs per node do not. */
    char ranks[1024], text[2048];
    rank_lines(ranks, sizeof ranks, 4, 4);
    snprintf(text, sizeof text, "$ ./all_reduce_perf -g 4\n%s"
             "  1024 256 float sum -1 10.0 0.10 0.15 0 10.0 0.10 0.15 0\n"
             "  4096 1024 float sum -1 11.0 0.37 0.56 0 11.0 0.37 0.56 0\n",
             ranks);
    char *four = tu_temp_text(text);
    snprintf(args, sizeof args, "calibrate '%s' '%s' --out /dev/null",
             tu_data_path("nccl-tests-allreduce-8x1.txt"), four);
    ck_assert_int_eq(tu_run_fsdpsim(args, err, sizeof err), 2);
    snprintf(want, sizeof want, "fsdpsim: %s: inconsistent ranks: 4 GPUs per "
             "node, but %s has 8 (calibrate one node type at a time)\n", four,
             tu_data_path("nccl-tests-allreduce-8x1.txt"));
    ck_assert_str_eq(err, want);
    unlink(four);
    free(four);
    ck_assert_int_eq(tu_run_fsdpsim("calibrate --op bogus x", NULL, 0), 2);
    ck_assert_int_eq(tu_run_fsdpsim("calibrate", NULL, 0), 2);
    /* A good file writes the topology, which simulate then reads. */
    char *out = tu_temp_text("");
    snprintf(args, sizeof args, "calibrate --nccl-tests '%s' --out '%s'",
             tu_data_path("nccl-tests-allreduce-8x1.txt"), out);
    ck_assert_int_eq(tu_run_fsdpsim(args, NULL, 0), 0);
    snprintf(args, sizeof args, "simulate --topology '%s'", out);
    ck_assert_int_eq(tu_run_fsdpsim(args, NULL, 0), 0);
    unlink(out);
    free(out);
}
END_TEST

START_TEST(test_calibrate_validate_exit_codes)
{
    if (getenv("FSDPSIM") == NULL)
        return;
    char err[4096], args[8192];
    /* No data: usage error, unless FSDPSIM_VALIDATION_DATA is set. */
    unsetenv("FSDPSIM_VALIDATION_DATA");
    ck_assert_int_eq(tu_run_fsdpsim("validate", err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "fsdpsim: give the published points "
                                      "with --data CSV (or set "
                                      "FSDPSIM_VALIDATION_DATA) (the "
                                      "options: 'fsdpsim help "
                                      "validate')\n"));
    /* A small CSV in the published layout: quoted fields with commas, a
     * doubled quote and a line break; one mappable run of two sizes and
     * one H100 run no built-in topology describes. */
    char *csv = tu_temp_text(
        "point_id,run_id,category,model,gpu,gpus_per_node,nodes,"
        "intra_node_link,inter_node_link,metric,value,unit,notes\n"
        "P1,R-1048576,collective_bench,\"nccl-tests all_reduce_perf -g 8, "
        "size 1048576 B\",\"A100 (SXM, NVSwitch)\",8,1,NVSwitch,,time,"
        "101.9,us,\"said \"\"trimmed\"\"\"\n"
        "P2,R-1048576,collective_bench,\"nccl-tests all_reduce_perf -g 8, "
        "size 1048576 B\",\"A100 (SXM, NVSwitch)\",8,1,NVSwitch,,busbw,"
        "18.0,GB/s,\n"
        "P3,R-4194304,collective_bench,\"nccl-tests all_reduce_perf -g 8, "
        "size 4194304 B\",\"A100 (SXM, NVSwitch)\",8,1,NVSwitch,,time,"
        "101.5,us,\"two\nlines\"\n"
        "P4,H-8,collective_bench,nccl-tests all_reduce_perf size 8 B,H100,"
        "8,1,NVSwitch,,time,20,us,\n");
    snprintf(args, sizeof args, "validate --data '%s'", csv);
    ck_assert_int_eq(tu_run_fsdpsim(args, NULL, 0), 0);
    /* A tolerance of 0 % fails unless the model is exact. */
    snprintf(args, sizeof args, "validate --data '%s' --tol 0", csv);
    ck_assert_int_eq(tu_run_fsdpsim(args, NULL, 0), 1);
    ck_assert_int_eq(tu_run_fsdpsim("validate --data /nonexistent.csv", err,
                                 sizeof err), 2);
    ck_assert_str_eq(err, "fsdpsim: /nonexistent.csv: No such file or "
                          "directory\n");
    unlink(csv);
    free(csv);
}
END_TEST

/* ---- calibrate --profile: a synthetic profiler trace ---------------- */

/*
 * The trace is written here in Kineto's layout (what
 * torch.profiler.profile(record_shapes=True).export_chrome_trace()
 * writes): "cpu_op" events with "Input Dims", "Input type" and, for the
 * SDPA ops, "Concrete Inputs"; one "cuda_runtime" cudaLaunchKernel per
 * kernel with args.correlation; "kernel" events on the GPU's stream with
 * the same correlation.  Each kernel's duration is kernel_time_s() on a
 * topology with the true values below, so a fit that reads the trace as
 * the model does recovers them.  Host: forward launches 6 us apart on
 * the main thread (tid 1), backward ones 9 us apart on autograd's thread
 * (tid 2), so launch_overhead = 6 us and autograd_overhead = 9 - 6 = 3
 * us.
 */
#define TRUE_GEMM_EFF 0.70
#define TRUE_MEM_EFF 0.80
#define TRUE_FLOOR_NS 4000.0
#define TRUE_ATTN_FWD 0.90
#define TRUE_ATTN_BWD 0.85
#define TRUE_LAUNCH_NS 6000.0
#define TRUE_AUTOGRAD_NS 3000.0
/* The brief asks for 1-2 %: durations are printed to the nanosecond, so
 * the shortest (4 us floor) kernels carry 0.0125 % rounding and the fit
 * rounds to four digits (0.05 %); 1 % is ample. */
#define PROFILE_TOL 0.01

struct gen {
    char *buf;
    size_t len;
    FILE *f;
    int n_events;
    int64_t corr;
    double clock[3];          /* host time per tid, us */
    double gap[3];            /* launch spacing per tid, us */
    double gpu;               /* the stream's time, us */
    const struct topo *t;     /* the true topology */
};

static void
gen_event(struct gen *g, const char *fmt, ...)
{
    va_list ap;
    fputs(g->n_events++ ? ",\n  " : "\n  ", g->f);
    va_start(ap, fmt);
    vfprintf(g->f, fmt, ap);
    va_end(ap);
}

static void
gen_open(struct gen *g, const struct topo *t)
{
    memset(g, 0, sizeof *g);
    g->f = open_memstream(&g->buf, &g->len);
    g->t = t;
    g->clock[1] = 1000;
    g->clock[2] = 500000;
    g->gap[1] = TRUE_LAUNCH_NS * 1e-3;
    g->gap[2] = (TRUE_LAUNCH_NS + TRUE_AUTOGRAD_NS) * 1e-3;
    g->gpu = 1000;
    fputs("{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0, "
          "\"name\": \"NVIDIA A100-SXM4-80GB\"}],\n\"traceEvents\": [",
          g->f);
    gen_event(g, "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": "
              "\"ProfilerStep#1\", \"pid\": 1, \"tid\": 1, \"ts\": 900, "
              "\"dur\": 2000000}");
}

static char *
gen_close(struct gen *g)
{
    fputs("\n]}\n", g->f);
    fclose(g->f);
    return g->buf;
}

/* One op call on thread TID: OUTER (NULL-terminated, outermost first)
 * around NAME (with DIMS, TYPES and CONCRETE, JSON text or NULL) around
 * INNER (or NULL), launching N kernels KNAME[i] whose durations share
 * kernel_time_s(K) as SHARE[i]. */
static void
gen_op(struct gen *g, int tid, const char *const *outer, const char *name,
       const char *dims, const char *types, const char *concrete,
       const char *inner, int n, const char *const *kname,
       const double *share, const struct kernel *k, enum dtype d)
{
    double s0 = g->clock[tid], s1 = s0 + (n - 1) * g->gap[tid];
    g->clock[tid] += n * g->gap[tid];
    int depth = 0;
    for (; outer && outer[depth]; depth++)
        gen_event(g, "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"%s\", "
                  "\"pid\": 1, \"tid\": %d, \"ts\": %.3f, \"dur\": %.3f, "
                  "\"args\": {\"External id\": 1}}", outer[depth], tid,
                  s0 - 1.5 + 0.1 * depth, s1 - s0 + 4.5 - 0.2 * depth);
    gen_event(g, "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"%s\", "
              "\"pid\": 1, \"tid\": %d, \"ts\": %.3f, \"dur\": %.3f, "
              "\"args\": {\"External id\": 2, \"Input Dims\": %s, "
              "\"Input type\": %s%s%s}}", name, tid, s0 - 1, s1 - s0 + 4,
              dims, types, concrete ? ", \"Concrete Inputs\": " : "",
              concrete ? concrete : "");
    if (inner)
        gen_event(g, "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": "
                  "\"%s\", \"pid\": 1, \"tid\": %d, \"ts\": %.3f, "
                  "\"dur\": %.3f, \"args\": {\"Input Dims\": [], "
                  "\"Input type\": []}}", inner, tid, s0 - 0.5, s1 - s0 + 3);
    double total_us = k ? kernel_time_s(g->t, k, d) * 1e6 : 10;
    for (int i = 0; i < n; i++) {
        double s = s0 + i * g->gap[tid];
        int64_t c = ++g->corr;
        gen_event(g, "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": "
                  "\"cudaLaunchKernel\", \"pid\": 1, \"tid\": %d, \"ts\": "
                  "%.3f, \"dur\": 2.0, \"args\": {\"correlation\": %lld}}",
                  tid, s, (long long)c);
        double dur = total_us * share[i];
        double ts = fmax(g->gpu, s + 5);
        gen_event(g, "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", "
                  "\"pid\": 0, \"tid\": 7, \"ts\": %.3f, \"dur\": %.3f, "
                  "\"args\": {\"device\": 0, \"stream\": 7, "
                  "\"correlation\": %lld}}", kname[i], ts, dur,
                  (long long)c);
        g->gpu = ts + dur + 1;
    }
}

static struct kernel
gemm_k(int64_t m, int64_t n, int64_t k, int64_t batch)
{
    /* As kineto_kernels.c reads a matrix product: 2 M N K B FLOPs, (M K +
     * K N + M N) B bf16 elements. */
    struct kernel g = {.cls = KERNEL_GEMM, .launches = 1, .m = m, .n = n,
                       .k = k, .batch = batch};
    g.flops = 2.0 * m * n * k * batch;
    g.bytes = ((double)m * k + (double)k * n + (double)m * n) * batch * 2;
    return g;
}

static struct kernel
attn_k(bool bwd, int64_t B, int64_t H, int64_t S, int64_t D, bool causal)
{
    /* 4 B H S^2 D forward, halved when causal, backward 2.5x; bytes 2
     * (forward) or 4 (backward) times q + k + v... as kernel.c:
     * (q + kv) elements of 2 bytes. */
    struct kernel a = {.cls = bwd ? KERNEL_ATTN_BWD : KERNEL_ATTN_FWD,
                       .launches = bwd ? 3 : 1, .attn = ATTN_FLASH2,
                       .head_dim = D, .seq = (double)S, .causal = causal};
    double fwd = 4.0 * B * H * S * S * D / (causal ? 2 : 1);
    a.flops = bwd ? 2.5 * fwd : fwd;
    a.bytes = (bwd ? 4 : 2) * 2.0 * B * S * H * D * 2;
    return a;
}

static struct kernel
mem_k(enum kernel_class cls, double bytes)
{
    struct kernel m = {.cls = cls, .launches = 1, .bytes = bytes};
    return m;
}

/* The synthetic trace (caller frees); T is the true topology. */
static char *
synthetic_trace(const struct topo *t)
{
    static const double one[] = {1}, three[] = {0.1, 0.8, 0.1};
    static const char *const gemm_name[] = {
        "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_nn"};
    static const char *const ew_name[] = {
        "void at::native::vectorized_elementwise_kernel<4, "
        "at::native::CUDAFunctor_add<c10::BFloat16>>"};
    static const char *const red_name[] = {
        "void at::native::reduce_kernel<512, 1>"};
    static const char *const fwd_name[] = {
        "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, "
        "128, 64, 4>, true, true>"};
    static const char *const bwd_names[] = {
        "void pytorch_flash::flash_bwd_dot_do_o_kernel<true>",
        "void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<>",
        "void pytorch_flash::flash_bwd_convert_dq_kernel<>"};
    static const char *const nccl_name[] = {
        "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"};
    static const char *const linear[] = {"aten::linear", NULL};
    static const char *const mm_bwd[] = {
        "autograd::engine::evaluate_function: MmBackward0", "MmBackward0",
        NULL};
    static const char *const sdpa_bwd[] = {
        "autograd::engine::evaluate_function: "
        "ScaledDotProductFlashAttentionBackward0",
        "ScaledDotProductFlashAttentionBackward0", NULL};
    static const char *const sdpa_fwd[] = {
        "aten::scaled_dot_product_attention", NULL};
    struct gen g;
    gen_open(&g, t);
    char dims[512];
    const char *bf2 = "[\"c10::BFloat16\", \"c10::BFloat16\"]";
    const char *bf3 = "[\"c10::BFloat16\", \"c10::BFloat16\", "
                      "\"c10::BFloat16\"]";
    /* GEMMs of Llama-like blocks, 2 x 2048 tokens, and smaller ones. */
    static const int64_t shapes[][3] = {
        {4096, 4096, 4096}, {4096, 11008, 4096}, {4096, 4096, 11008},
        {4096, 1024, 4096}, {2048, 4096, 4096}, {1024, 14336, 4096},
        {512, 4096, 512}, {8192, 8192, 1024}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        int64_t m = shapes[i][0], n = shapes[i][1], k = shapes[i][2];
        struct kernel kk = gemm_k(m, n, k, 1);
        snprintf(dims, sizeof dims, "[[%lld], [%lld, %lld], [%lld, %lld], "
                 "[], []]", (long long)n, (long long)m, (long long)k,
                 (long long)k, (long long)n);
        gen_op(&g, 1, linear, "aten::addmm", dims,
               "[\"c10::BFloat16\", \"c10::BFloat16\", \"c10::BFloat16\", "
               "\"Scalar\", \"Scalar\"]", NULL, NULL, 1, gemm_name, one, &kk,
               DTYPE_BF16);
        /* backward: the same shapes' dgrad and wgrad, as mm */
        kk = gemm_k(m, k, n, 1);
        snprintf(dims, sizeof dims, "[[%lld, %lld], [%lld, %lld]]",
                 (long long)m, (long long)n, (long long)n, (long long)k);
        gen_op(&g, 2, mm_bwd, "aten::mm", dims, bf2, NULL, NULL, 1,
               gemm_name, one, &kk, DTYPE_BF16);
        kk = gemm_k(k, n, m, 1);
        snprintf(dims, sizeof dims, "[[%lld, %lld], [%lld, %lld]]",
                 (long long)k, (long long)m, (long long)m, (long long)n);
        gen_op(&g, 2, mm_bwd, "aten::mm", dims, bf2, NULL, NULL, 1,
               gemm_name, one, &kk, DTYPE_BF16);
    }
    struct kernel kk = gemm_k(2048, 2048, 128, 64);
    gen_op(&g, 1, NULL, "aten::bmm", "[[64, 2048, 128], [64, 128, 2048]]",
           bf2, NULL, NULL, 1, gemm_name, one, &kk, DTYPE_BF16);
    /* Attention: causal, and one not, at three lengths and two head
     * dims; is_causal recorded (index 5 of scaled_dot_product_attention,
     * 4 of the flash op, 11 of its backward). */
    static const int64_t att[][4] = {{2, 32, 2048, 128}, {4, 16, 1024, 64},
                                     {1, 32, 4096, 128}, {2, 8, 512, 64}};
    for (size_t i = 0; i < sizeof att / sizeof att[0]; i++) {
        long long B = att[i][0], H = att[i][1], S = att[i][2], D = att[i][3];
        bool causal = i != 3;
        const char *c = causal ? "\"True\"" : "\"False\"";
        char concrete[256];
        kk = attn_k(false, B, H, S, D, causal);
        snprintf(dims, sizeof dims, "[[%lld, %lld, %lld, %lld], [%lld, %lld, "
                 "%lld, %lld], [%lld, %lld, %lld, %lld], [], [], [], []]", B,
                 H, S, D, B, H, S, D, B, H, S, D);
        snprintf(concrete, sizeof concrete, "[\"\", \"\", \"\", \"0.\", %s, "
                 "\"False\", \"\"]", c);
        gen_op(&g, 1, sdpa_fwd, "aten::_scaled_dot_product_flash_attention",
               dims, bf3, concrete, "aten::_flash_attention_forward", 1,
               fwd_name, one, &kk, DTYPE_BF16);
        kk = attn_k(true, B, H, S, D, causal);
        snprintf(dims, sizeof dims, "[[%lld, %lld, %lld, %lld], [%lld, %lld, "
                 "%lld, %lld], [%lld, %lld, %lld, %lld], [%lld, %lld, %lld, "
                 "%lld]]", B, H, S, D, B, H, S, D, B, H, S, D, B, H, S, D);
        snprintf(concrete, sizeof concrete, "[\"\", \"\", \"\", \"\", \"\", "
                 "\"\", \"\", \"\", \"\", \"\", \"0.\", %s]", c);
        gen_op(&g, 2, sdpa_bwd,
               "aten::_scaled_dot_product_flash_attention_backward", dims,
               "[\"c10::BFloat16\", \"c10::BFloat16\", \"c10::BFloat16\", "
               "\"c10::BFloat16\"]", concrete,
               "aten::_flash_attention_backward", 3, bwd_names, three, &kk,
               DTYPE_BF16);
    }
    /* Memory-bound: adds of two bf16 tensors (reads 2 E, writes E: 6 E
     * bytes) and sums (reads E: 2 E bytes), from 1k to 256M elements
     * either side of the knee (4 us x 0.8 x 2039 GB/s = 6.5 MB). */
    for (double e = 1024; e <= 268435456; e *= 4) {
        kk = mem_k(KERNEL_ELEMENTWISE, 6 * e);
        snprintf(dims, sizeof dims, "[[%.0f], [%.0f], []]", e, e);
        gen_op(&g, 1, NULL, "aten::add", dims,
               "[\"c10::BFloat16\", \"c10::BFloat16\", \"Scalar\"]", NULL,
               NULL, 1, ew_name, one, &kk, DTYPE_BF16);
        kk = mem_k(KERNEL_REDUCTION, 2 * e);
        snprintf(dims, sizeof dims, "[[%.0f], [], [], []]", e);
        gen_op(&g, 2, NULL, "aten::sum", dims,
               "[\"c10::BFloat16\", \"\", \"Scalar\", \"\"]", NULL, NULL, 1,
               red_name, one, &kk, DTYPE_BF16);
    }
    /* Left out: an all-gather and a foreach op's TensorList. */
    gen_op(&g, 1, NULL, "record_param_comms", "[[1048576], [8388608]]",
           bf2, NULL, NULL, 1, nccl_name, one, NULL, DTYPE_BF16);
    gen_op(&g, 1, NULL, "aten::_foreach_add_", "[[[4096], [4096]], []]",
           "[\"TensorList\", \"Scalar\"]", NULL, NULL, 1, ew_name, one, NULL,
           DTYPE_BF16);
    return gen_close(&g);
}

/* The true topology: dgx-a100-80g with the values above. */
static struct topo *
true_topology(void)
{
    char *cause = NULL;
    struct topo *t = topo_load("dgx-a100-80g", &cause);
    ck_assert_msg(t != NULL, "%s", cause);
    t->gemm_efficiency = TRUE_GEMM_EFF;
    t->memory_efficiency = TRUE_MEM_EFF;
    t->kernel_overhead_ns = TRUE_FLOOR_NS;
    t->attention_fwd_scale = TRUE_ATTN_FWD;
    t->attention_bwd_scale = TRUE_ATTN_BWD;
    t->launch_overhead_ns = TRUE_LAUNCH_NS;
    t->autograd_overhead_ns = TRUE_AUTOGRAD_NS;
    return t;
}

static void
expect_recovered(const struct topo *t)
{
    ck_assert_double_eq_tol(t->gemm_efficiency, TRUE_GEMM_EFF,
                            PROFILE_TOL * TRUE_GEMM_EFF);
    ck_assert_double_eq_tol(t->memory_efficiency, TRUE_MEM_EFF,
                            PROFILE_TOL * TRUE_MEM_EFF);
    ck_assert_double_eq_tol(t->kernel_overhead_ns, TRUE_FLOOR_NS,
                            PROFILE_TOL * TRUE_FLOOR_NS);
    ck_assert_double_eq_tol(t->attention_fwd_scale, TRUE_ATTN_FWD,
                            PROFILE_TOL * TRUE_ATTN_FWD);
    ck_assert_double_eq_tol(t->attention_bwd_scale, TRUE_ATTN_BWD,
                            PROFILE_TOL * TRUE_ATTN_BWD);
    ck_assert_double_eq_tol(t->launch_overhead_ns, TRUE_LAUNCH_NS,
                            PROFILE_TOL * TRUE_LAUNCH_NS);
    ck_assert_double_eq_tol(t->autograd_overhead_ns, TRUE_AUTOGRAD_NS,
                            PROFILE_TOL * TRUE_AUTOGRAD_NS);
}

START_TEST(test_calibrate_profile_reads)
{
    struct topo *tt = true_topology();
    char *text = synthetic_trace(tt);
    struct prof_trace p;
    char *cause = NULL;
    ck_assert_msg(kineto_kernels_parse("synthetic", text, strlen(text), &p,
                                       &cause) == 0, "%s", cause);
    /* 8 shapes x 3 GEMMs + a bmm; 4 forward and 4 backward attention
     * calls (3 kernels each, one entry); 10 adds and 10 sums. */
    int n_cls[KERNEL_CLASS_COUNT] = {0};
    for (size_t i = 0; i < p.n; i++)
        n_cls[p.k[i].k.cls]++;
    ck_assert_int_eq(n_cls[KERNEL_GEMM], 25);
    ck_assert_int_eq(n_cls[KERNEL_ATTN_FWD], 4);
    ck_assert_int_eq(n_cls[KERNEL_ATTN_BWD], 4);
    ck_assert_int_eq(n_cls[KERNEL_ELEMENTWISE], 10);
    ck_assert_int_eq(n_cls[KERNEL_REDUCTION], 10);
    ck_assert_int_eq(p.n_nccl, 1);
    ck_assert_int_eq(p.n_unshaped, 1);
    ck_assert_int_eq(p.n_causal_assumed, 0);
    ck_assert_int_eq(p.n_kernels, 25 + 4 + 12 + 20 + 2);
    /* The first backward attention call: three kernels, one entry. */
    const struct prof_kernel *e = NULL;
    for (size_t i = 0; i < p.n && e == NULL; i++)
        if (p.k[i].k.cls == KERNEL_ATTN_BWD)
            e = &p.k[i];
    ck_assert_int_eq(e->k.launches, 3);
    ck_assert_int_eq(e->k.head_dim, 128);
    ck_assert(e->k.causal);
    ck_assert_int_eq(e->k.attn, ATTN_FLASH2);
    ck_assert_double_eq_tol(p.fwd_gap_s, TRUE_LAUNCH_NS * 1e-9, 1e-12);
    ck_assert_double_eq_tol(p.bwd_gap_s,
                            (TRUE_LAUNCH_NS + TRUE_AUTOGRAD_NS) * 1e-9,
                            1e-12);
    prof_trace_free(&p);
    free(text);
    topo_free(tt);
}
END_TEST

START_TEST(test_calibrate_profile_recovers)
{
    struct topo *tt = true_topology();
    char *text = synthetic_trace(tt);
    struct prof_trace p;
    char *cause = NULL;
    ck_assert_msg(kineto_kernels_parse("synthetic", text, strlen(text), &p,
                                       &cause) == 0, "%s", cause);
    /* From the shipped values (0.869, 0.88, 3 us, 1, 1, 5 us, 2 us). */
    struct topo *t = topo_load("dgx-a100-80g", &cause);
    struct profile_fit f;
    profile_fit(t, &p, &f);
    for (int k = 0; k < PK_COUNT; k++)
        ck_assert_msg(f.key[k].fitted, "%s not fitted", profile_key_name(k));
    expect_recovered(t);
    /* After the fit every class's total is within the tolerance. */
    for (int c = 0; c < KERNEL_CLASS_COUNT; c++)
        ck_assert_double_eq_tol(f.cls[c].after_s, f.cls[c].measured_s,
                                PROFILE_TOL * f.cls[c].measured_s);
    ck_assert_int_eq(topo_validate(t, &cause), 0);
    topo_free(t);
    prof_trace_free(&p);
    free(text);
    topo_free(tt);
}
END_TEST

/* real bench's samples, made by the model itself on an A100 whose GEMM
 * ceiling is 0.700 (shipped 0.869), HBM share 0.800 (0.88) and kernel
 * floor 5 us (3 us): the GEMMs of llama2-7b's Linear shapes at 8192
 * tokens in all three orientations, and the copy kernel's read + write
 * bytes at 64 KiB to 256 MiB.  calib_file_write fits them as calibrate
 * --profile does and writes the three keys back exactly (to the fit's
 * four digits); attention and the host keys stay out (not measured). */
START_TEST(test_calibrate_bench_compute_keys)
{
    char *cause = NULL;
    struct topo *truth = topo_load("dgx-a100-80g", &cause);
    truth->gemm_efficiency = 0.7;
    truth->memory_efficiency = 0.8;
    truth->kernel_overhead_ns = 5000;
    static struct bench_measure bm;
    memset(&bm, 0, sizeof bm);
    bm.dtype = DTYPE_BF16;
    const int64_t shapes[3][3] = {{8192, 4096, 4096}, {8192, 11008, 4096},
                                  {8192, 4096, 11008}};
    for (int i = 0; i < 3; i++) {
        int64_t M = shapes[i][0], N = shapes[i][1], K = shapes[i][2];
        const int64_t o[3][3] = {{M, N, K}, {M, K, N}, {N, K, M}};
        for (int j = 0; j < 3; j++) {
            struct kernel k = {.name = "mm", .cls = KERNEL_GEMM,
                               .launches = 1, .m = o[j][0], .n = o[j][1],
                               .k = o[j][2], .batch = 1};
            k.flops = 2.0 * k.m * k.n * k.k;
            k.bytes = ((double)k.m * k.k + (double)k.k * k.n
                       + (double)k.m * k.n) * 2;
            struct bench_sample *x = &bm.s[bm.n++];
            x->cls = KERNEL_GEMM;
            x->m = k.m;
            x->n = k.n;
            x->k = k.k;
            x->seconds = kernel_time_s(truth, &k, DTYPE_BF16);
        }
    }
    for (double sz = 65536; sz <= 256.0 * 1048576; sz *= 4) {
        struct kernel k = {.name = "copy", .cls = KERNEL_ELEMENTWISE,
                           .launches = 1, .bytes = 2 * sz};
        struct bench_sample *x = &bm.s[bm.n++];
        x->cls = KERNEL_ELEMENTWISE;
        x->bytes = 2 * sz;
        x->seconds = kernel_time_s(truth, &k, DTYPE_BF16);
    }
    topo_free(truth);
    /* NVML's readings during the timed GEMMs: 1500 MHz of 1980 is
     * 75.8 %, printed as comments only (the clock is already in the
     * GEMMs' times, so no key may carry it twice). */
    bm.clock = (struct gpu_state){1, 40, 40, 1500, 695.4, 1, 1980, 700};
    struct calib_measured m = {NULL, 180e12, DTYPE_BF16, 0, 0, NULL, &bm};
    struct nccl_config nc;
    nccl_config_init(&nc);
    char *out = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&out, &len);
    ck_assert_msg(calib_file_write(mem, "dgx-a100-80g", &nc, &m, &cause)
                      == 0, "%s", cause);
    fclose(mem);
    ck_assert_msg(strstr(out, "\ngemm_efficiency = 0.7\n") != NULL, "%s",
                  out);
    ck_assert_msg(strstr(out, "\nmemory_efficiency = 0.8\n") != NULL, "%s",
                  out);
    ck_assert_msg(strstr(out, "\nkernel_overhead = 5000ns\n") != NULL, "%s",
                  out);
    ck_assert_ptr_null(strstr(out, "attention"));
    ck_assert_ptr_null(strstr(out, "launch_overhead"));
    ck_assert_msg(strstr(out, "\n# SM clock while the GEMMs were timed: "
                         "1500 MHz (mean of 40 readings), 75.8 % of the "
                         "1980 MHz maximum; board power 695 W of a 700 W "
                         "limit\n") != NULL, "%s", out);
    ck_assert_ptr_null(strstr(out, "clock_fraction"));
    char *path = tu_temp_text(out);
    struct topo *t = topo_load("dgx-a100-80g", &cause);
    ck_assert_msg(topo_apply_calibration(t, path, &cause) == 0, "%s",
                  cause);
    ck_assert_double_eq_tol(t->gemm_efficiency, 0.7, 1e-9);
    topo_free(t);
    unlink(path);
    free(path);
    free(out);
}
END_TEST

/* NVML's readings as real bench and real run print them: each missing
 * part named, never a zero passed off as a reading.  1620 MHz of 1980 is
 * 81.8 %, 1755 of 1980 88.6 %. */
START_TEST(test_calibrate_gpu_state_wording)
{
    struct {
        struct gpu_state s;
        const char *want;
    } cases[] = {
        {{0, 0, 0, 0, -1, 0, 0, 0},
         "x: not read (NVML, the driver's libnvidia-ml.so.1, missing or "
         "not answering)\n"},
        {{1, 1, 1, 1620, 540, 1, 1980, 0},
         "x: 1620 MHz (mean of 1 reading), 81.8 % of the 1980 MHz maximum; "
         "board power 540 W\n"},
        {{1, 0, 0, 0, 300, 1, 0, 700},
         "x: no reading (timed for less than the 10 ms between readings); "
         "board power 300 W of a 700 W limit\n"},
        {{1, 2, 0, 0, 300, 1, 0, 700},
         "x: not given by NVML; board power 300 W of a 700 W limit\n"},
        {{1, 3, 3, 1500, 690, 0, 0, 700},
         "x: 1500 MHz (mean of 3 readings); board power 690 W (NVML's 1 s "
         "average) of a 700 W limit\n"},
        {{1, 2, 2, 1755, -1, 0, 1980, 0},
         "x: 1755 MHz (mean of 2 readings), 88.6 % of the 1980 MHz maximum; "
         "board power not read\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *out = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&out, &len);
        gpu_state_print(mem, "", "x", &cases[i].s);
        fclose(mem);
        ck_assert_str_eq(out, cases[i].want);
        free(out);
    }
}
END_TEST

/* The meter's sums: clock readings 1500 and 1600 (one refused) give
 * 1550 MHz of 2 readings; energy 400 J over 0.5 s and 300 J over 0.6 s
 * span 1.1 s, at least GPU_ENERGY_MIN_S, so the power is 700 / 1.1 =
 * 636.4 W from the counter, not the power readings' mean of 650.  Under
 * a second, or with a failed counter reading, the readings' mean is
 * taken instead; without NVML nothing is. */
START_TEST(test_calibrate_gpu_meter_sums)
{
    struct gpu_meter m;
    gpu_meter_init(&m, 1, 1980, 700);
    gpu_meter_add_clock(&m, 1, 1500);
    gpu_meter_add_clock(&m, 0, 0);
    gpu_meter_add_clock(&m, 1, 1600);
    gpu_meter_add_power(&m, 600);
    gpu_meter_add_power(&m, 700);
    gpu_meter_add_energy(&m, 1, 400, 0.5);
    struct gpu_state s = gpu_meter_state(&m);
    ck_assert_int_eq(s.tried, 3);
    ck_assert_int_eq(s.samples, 2);
    ck_assert_double_eq_tol(s.sm_mhz, 1550, 1e-9);
    ck_assert_double_eq_tol(s.watts, 650, 1e-9);    /* 0.5 s: too short */
    ck_assert_int_eq(s.watts_from_energy, 0);
    gpu_meter_add_energy(&m, 1, 300, 0.6);
    s = gpu_meter_state(&m);
    ck_assert_double_eq_tol(s.watts, 700 / 1.1, 1e-9);
    ck_assert_int_eq(s.watts_from_energy, 1);
    ck_assert_double_eq_tol(s.max_sm_mhz, 1980, 1e-9);
    gpu_meter_add_energy(&m, 0, 0, 1.0);            /* a failed reading */
    s = gpu_meter_state(&m);
    ck_assert_double_eq_tol(s.watts, 650, 1e-9);
    ck_assert_int_eq(s.watts_from_energy, 0);
    gpu_meter_init(&m, 0, 0, 0);
    gpu_meter_add_clock(&m, 1, 1500);
    s = gpu_meter_state(&m);
    ck_assert_int_eq(s.nvml, 0);
    ck_assert_int_eq(s.samples, 0);
    ck_assert(s.watts < 0);
}
END_TEST

START_TEST(test_calibrate_profile_errors)
{
    struct prof_trace p;
    char *cause = NULL;
    const char *bad[][2] = {
        {"{\"traceEvents\": [", "x:1: not valid JSON"},
        {"{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": "
         "\"aten::mm\", \"ts\": 1, \"dur\": 2, \"args\": {\"Input Dims\": "
         "[[2, 2], [2, 2]]}}]}",
         "x: no GPU kernel events (\"cat\": \"kernel\")"},
        {"{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": "
         "\"k\", \"ts\": 1, \"dur\": 2, \"args\": {\"correlation\": 1}}]}",
         "x: no operator shapes (\"Input Dims\"): record the trace with "
         "torch.profiler.profile(record_shapes=True)"},
        {"[1, 2]", "x: no GPU kernel events"},
        {"{\"x\": 1}", "x: JSON without 'traceEvents'"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(kineto_kernels_parse("x", bad[i][0],
                                              strlen(bad[i][0]), &p, &cause),
                         -1);
        ck_assert_msg(strncmp(cause, bad[i][1], strlen(bad[i][1])) == 0,
                      "%s", cause);
        free(cause);
        cause = NULL;
    }
}
END_TEST

START_TEST(test_calibrate_profile_cli)
{
    if (getenv("FSDPSIM") == NULL)
        return;
    struct topo *tt = true_topology();
    char *text = synthetic_trace(tt);
    char *trace = tu_temp_text(text);
    char *out = tu_temp_text(""), *cal = tu_temp_text("");
    char args[8192], err[4096];
    snprintf(args, sizeof args, "calibrate --profile '%s' -t dgx-a100-80g "
             "-o '%s' --calibration-out '%s'", trace, out, cal);
    ck_assert_int_eq(tu_run_fsdpsim(args, err, sizeof err), 0);
    char *cause = NULL;
    struct topo *t = topo_load(out, &cause);
    ck_assert_msg(t != NULL, "%s", cause);
    expect_recovered(t);
    ck_assert_str_eq(t->name, "dgx-a100-80g-calibrated");
    topo_free(t);
    /* The partial form gives the same on the base topology. */
    t = topo_load("dgx-a100-80g", &cause);
    ck_assert_msg(topo_apply_calibration(t, cal, &cause) == 0, "%s", cause);
    expect_recovered(t);
    topo_free(t);
    snprintf(args, sizeof args, "simulate --topology '%s'", out);
    ck_assert_int_eq(tu_run_fsdpsim(args, NULL, 0), 0);
    snprintf(args, sizeof args, "simulate --topology dgx-a100-80g "
             "--calibration '%s'", cal);
    ck_assert_int_eq(tu_run_fsdpsim(args, NULL, 0), 0);
    /* With --nccl-tests in the same run: both parts in one topology. */
    snprintf(args, sizeof args, "calibrate --profile '%s' --nccl-tests '%s' "
             "-o '%s'", trace, tu_data_path("nccl-tests-allreduce-8x1.txt"),
             out);
    ck_assert_int_eq(tu_run_fsdpsim(args, NULL, 0), 0);
    t = topo_load(out, &cause);
    ck_assert_msg(t != NULL, "%s", cause);
    expect_recovered(t);
    ck_assert(t->calib_algo[COLL_ALLREDUCE][0][NCCL_ALGO_RING][PROTO_SIMPLE]
                  .busbw_Bps > 0);
    topo_free(t);
    /* An output that cannot be written: exit 3, nothing left. */
    snprintf(args, sizeof args, "calibrate --profile '%s' -o "
             "/nonexistent/dir/cal.ini", trace);
    ck_assert_int_eq(tu_run_fsdpsim(args, NULL, 0), 3);
    unlink(trace);
    unlink(out);
    unlink(cal);
    free(trace);
    free(out);
    free(cal);
    free(text);
    topo_free(tt);
}
END_TEST

static Suite *
calibrate_suite(void)
{
    Suite *s = suite_create("calibrate");

    TCase *core = tcase_create("core");
    tcase_add_test(core, test_calibrate_read_text_one_node);
    tcase_add_test(core, test_calibrate_read_text_two_nodes);
    tcase_add_test(core, test_calibrate_read_text_old_layout);
    tcase_add_test(core, test_calibrate_read_several_runs);
    tcase_add_test(core, test_calibrate_calibration_file);
    tcase_add_test(core, test_calibrate_published_csv);
    tcase_add_test(core, test_calibrate_read_json);
    tcase_add_test(core, test_calibrate_busbw_identity);
    tcase_add_test(core, test_calibrate_op_hint);
    tcase_add_test(core, test_calibrate_fit_exact);
    tcase_add_test(core, test_calibrate_fit_noisy);
    tcase_add_test(core, test_calibrate_fit_clamps);
    tcase_add_test(core, test_calibrate_fit_curve);
    tcase_add_test(core, test_calibrate_recovers_synthetic_run);
    tcase_add_test(core, test_calibrate_medians);
    suite_add_tcase(s, core);

    TCase *errors = tcase_create("errors");
    tcase_set_timeout(errors, 60);
    tcase_add_test(errors, test_calibrate_error_no_rows);
    tcase_add_test(errors, test_calibrate_error_missing_file);
    tcase_add_test(errors, test_calibrate_error_text);
    tcase_add_test(errors, test_calibrate_error_json);
    tcase_add_test(errors, test_calibrate_error_exit_codes);
    tcase_add_test(errors, test_calibrate_validate_exit_codes);
    suite_add_tcase(s, errors);

    TCase *profile = tcase_create("profile");
    tcase_set_timeout(profile, 60);
    tcase_add_test(profile, test_calibrate_profile_reads);
    tcase_add_test(profile, test_calibrate_profile_recovers);
    tcase_add_test(profile, test_calibrate_gpu_state_wording);
    tcase_add_test(profile, test_calibrate_gpu_meter_sums);
    tcase_add_test(profile, test_calibrate_profile_errors);
    tcase_add_test(profile, test_calibrate_bench_compute_keys);
    tcase_add_test(profile, test_calibrate_profile_cli);
    suite_add_tcase(s, profile);
    return s;
}

int
main(void)
{
    return tu_main(calibrate_suite());
}
