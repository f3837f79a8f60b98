/*
 * check_compare.c: tests for compare.c (reading timelines and traces,
 * matching, the statistics), kineto.c (the profiler trace import) and the
 * exit codes of `fsdpsim compare`.
 *
 * tests/data/compare-pred.dat is a hand-written one-step prediction: two
 * units, all-gathers of 120 us, forward 300 us, backward 600 us,
 * reduce-scatters and the optimizer 100 us.  compare-meas.dat is the same
 * step measured with every all-gather 20 us (1/6) shorter, so the
 * prediction's all-gathers are 20 % too long and its compute exact;
 * compare-kineto.json is that measurement as a PyTorch profiler trace
 * (kernels shifted to t = 10000 us, launched inside ProfilerStep#1, plus a
 * step-0 kernel and an all-gather that must be left out).
 * compare-pred.json is compare-pred.dat as an fsdpsim Chrome trace.
 *
 * The step of compare-pred.dat, as a timeline (us):
 *   U  AG u0 0-120 | AG u1 120-240 |            | AG u0 720-840
 *   C              | fwd u0 120-420 | fwd u1 420-720 | bwd u1 720-1320
 *   P  RS u1 1320-1420, RS u0 1920-2020
 *   C  bwd u0 1320-1920, optimizer 2020-2120
 * compare-meas.dat is the same with 100 us all-gathers: every later op
 * starts 20 us earlier, the step ends at 2100 us.
 */
#define _POSIX_C_SOURCE 200809L

#include "compare.h"
#include "kineto.h"

#include "testutil.h"
#include "check_main.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Times read back from a file printed to the nanosecond are exact; sums of
 * a few of them in seconds are off by rounding only. */
#define TIME_TOL_S 1e-12
/* Percentages computed from exact times: rounding only. */
#define PCT_TOL 1e-9

static void
load_ok(const char *path, struct compare_timeline *tl)
{
    char *cause = NULL;
    int rc = compare_load(path, tl, &cause);
    ck_assert_msg(rc == 0, "%s", cause ? cause : "");
}

static void
run_ok(const struct compare_timeline *p, const struct compare_timeline *m,
       struct compare_result *r)
{
    char *cause = NULL;
    int rc = compare_run(p, m, "pred", "meas", r, &cause);
    ck_assert_msg(rc == 0, "%s", cause ? cause : "");
}

#define TIMELINE_HEAD                                                       \
    "# fsdpsim 0.1.0 test\n"                                                \
    "# stream_index stream op kind unit iter micro start_us end_us bytes\n" \
    "# - - - - - - - us us B\n"

/* ---- core ------------------------------------------------------------ */

START_TEST(test_compare_known_errors)
{
    struct compare_timeline p, m;
    struct compare_result r;
    load_ok(tu_data_path("compare-pred.dat"), &p);
    load_ok(tu_data_path("compare-meas.dat"), &m);
    run_ok(&p, &m, &r);
    /* Same schedule, same step: matched op by op id. */
    ck_assert_int_eq(r.by_op_id, 1);
    /* All-gathers: 3 x 120 us predicted, 3 x 100 us measured:
     * (360 - 300) / 300 = +20 %, and each op is +20 %. */
    const struct compare_row *ag = &r.rows[OP_ALLGATHER];
    ck_assert_int_eq(ag->matched, 3);
    ck_assert_double_eq_tol(ag->pred_s, 360e-6, TIME_TOL_S);
    ck_assert_double_eq_tol(ag->meas_s, 300e-6, TIME_TOL_S);
    ck_assert_double_eq_tol(ag->err_pct, 20.0, PCT_TOL);
    ck_assert_double_eq_tol(ag->median_op_err_pct, 20.0, PCT_TOL);
    /* Compute: fwd 2 x 300 + bwd 2 x 600 + optimizer 100 = 1900 us on both
     * sides: 0 %. */
    const struct compare_row *c = &r.rows[COMPARE_ROW_COMPUTE];
    ck_assert_int_eq(c->matched, 5);
    ck_assert_double_eq_tol(c->pred_s, 1900e-6, TIME_TOL_S);
    ck_assert_double_eq_tol(c->err_pct, 0.0, PCT_TOL);
    /* Reduce-scatters: 2 x 100 us on both sides: 0 %. */
    ck_assert_double_eq_tol(r.rows[OP_REDUCESCATTER].err_pct, 0.0, PCT_TOL);
    /* Step: only the first all-gather (0-120 vs 0-100) is exposed before
     * compute, so the step is 20 us longer: 2120 vs 2100 us,
     * (2120 - 2100) / 2100 = +0.952381 %. */
    ck_assert_double_eq_tol(r.step_pred_s, 2120e-6, TIME_TOL_S);
    ck_assert_double_eq_tol(r.step_meas_s, 2100e-6, TIME_TOL_S);
    ck_assert_double_eq_tol(r.step_err_pct, 100.0 * 20 / 2100, PCT_TOL);
    /* Exposed: the first all-gather (120 / 100 us) and RS u0, which runs
     * between the end of backward and the optimizer (100 us on both):
     * 220 vs 200 us.  Communication: no two transfers overlap, so
     * 3 x 120 + 2 x 100 = 560 us vs 500 us. */
    ck_assert_double_eq_tol(r.exposed_pred_s, 220e-6, TIME_TOL_S);
    ck_assert_double_eq_tol(r.exposed_meas_s, 200e-6, TIME_TOL_S);
    ck_assert_double_eq_tol(r.comm_pred_s, 560e-6, TIME_TOL_S);
    ck_assert_double_eq_tol(r.comm_meas_s, 500e-6, TIME_TOL_S);
    /* Phases, cut where compute switches phase: forward from 0 to the end
     * of fwd u1 (720 / 700 us), backward to the end of bwd u0 (1920 - 720
     * = 1200 us on both), optimizer to the step end (2120 - 1920 = 200). */
    ck_assert_int_eq(r.has_phases, 1);
    ck_assert_double_eq_tol(r.phase_pred_s[PHASE_FORWARD], 720e-6,
                            TIME_TOL_S);
    ck_assert_double_eq_tol(r.phase_meas_s[PHASE_FORWARD], 700e-6,
                            TIME_TOL_S);
    ck_assert_double_eq_tol(r.phase_pred_s[PHASE_BACKWARD], 1200e-6,
                            TIME_TOL_S);
    ck_assert_double_eq_tol(r.phase_pred_s[PHASE_OPTIMIZER], 200e-6,
                            TIME_TOL_S);
    /* The report says so: "+20.0%" twice on the all-gather line, "0.0%"
     * for compute, "+1.0%" (0.952 rounded) for the step. */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    compare_print_text(f, &p, &m, "pred", "meas", &r);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "\nallgather             3      3"
                                      "       3       0.360       0.300"
                                      "   +20.0%     +20.0%\n"));
    ck_assert_ptr_nonnull(strstr(buf, "\ncompute               5      5"
                                      "       5       1.900       1.900"
                                      "     0.0%       0.0%\n"));
    ck_assert_ptr_nonnull(strstr(buf, "\nstep time              2.120 ms"
                                      "       2.100 ms     +1.0%\n"));
    free(buf);
    compare_timeline_free(&p);
    compare_timeline_free(&m);
}
END_TEST

START_TEST(test_compare_op_id_matching)
{
    /* The measurement lists its ops in another order, drops op 3 (the
     * second all-gather) and has an op 99 the prediction lacks: pairs
     * still follow op ids. */
    char *path = tu_temp_text(TIMELINE_HEAD
        "0 C 10 optimizer -1 0 0 2000.000 2100.000 0\n"
        "3 P 9 reducescatter 0 0 0 1900.000 2000.000 1000\n"
        "0 C 8 backward 0 0 0 1300.000 1900.000 0\n"
        "3 P 7 reducescatter 1 0 0 1300.000 1400.000 1000\n"
        "2 U 6 allgather 0 0 0 700.000 800.000 1000\n"
        "0 C 5 backward 1 0 0 700.000 1300.000 0\n"
        "0 C 4 forward 1 0 0 400.000 700.000 0\n"
        "0 C 2 forward 0 0 0 100.000 400.000 0\n"
        "2 U 1 allgather 0 0 0 0.000 50.000 1000\n"
        "2 U 99 allgather 9 0 0 50.000 100.000 1000\n");
    struct compare_timeline p, m;
    struct compare_result r;
    load_ok(tu_data_path("compare-pred.dat"), &p);
    load_ok(path, &m);
    run_ok(&p, &m, &r);
    ck_assert_int_eq(r.by_op_id, 1);
    /* All-gathers: 3 predicted, 3 measured (1, 6, 99), 2 matched (1, 6). */
    const struct compare_row *ag = &r.rows[OP_ALLGATHER];
    ck_assert_int_eq(ag->n_pred, 3);
    ck_assert_int_eq(ag->n_meas, 3);
    ck_assert_int_eq(ag->matched, 2);
    /* Op 1: 120 vs 50 us, +140 %; op 6: 120 vs 100 us, +20 %; the median
     * of two is their mean, +80 %.  Matched by kind order instead, op 1
     * would meet op 1 (+140 %), op 3 op 6 and op 6 op 99 (120 vs 50,
     * +140 %): median +140 %. */
    ck_assert_double_eq_tol(ag->median_op_err_pct, 80.0, PCT_TOL);
    unlink(path);
    free(path);
    compare_timeline_free(&p);
    compare_timeline_free(&m);
}
END_TEST

START_TEST(test_compare_last_step)
{
    /* Two iterations: only the last (iter 1, ops 11 and 12) is kept. */
    char *path = tu_temp_text(TIMELINE_HEAD
        "2 U 1 allgather 0 0 0 0.000 500.000 1000\n"
        "0 C 2 forward 0 0 0 500.000 900.000 0\n"
        "2 U 11 allgather 0 1 0 1000.000 1100.000 1000\n"
        "0 C 12 forward 0 1 0 1100.000 1400.000 0\n");
    struct compare_timeline t;
    load_ok(path, &t);
    ck_assert_int_eq(t.step, 1);
    ck_assert_int_eq(t.n_ops, 2);
    ck_assert_str_eq(t.step_label, "step 1");
    /* The step: first op start 1000 us to last op end 1400 us. */
    ck_assert_int_eq(compare_step_start_ns(&t), 1000000);
    ck_assert_int_eq(compare_step_end_ns(&t), 1400000);
    unlink(path);
    free(path);
    compare_timeline_free(&t);
}
END_TEST

START_TEST(test_compare_trace_equals_timeline)
{
    /* compare-pred.json holds the ops of compare-pred.dat plus a host
     * cpu_wait (left out, as the timeline leaves it out) and a memory
     * counter of 0.001953 GiB. */
    struct compare_timeline p, m;
    struct compare_result r;
    load_ok(tu_data_path("compare-pred.json"), &p);
    load_ok(tu_data_path("compare-pred.dat"), &m);
    ck_assert_int_eq(p.format, COMPARE_FSDPSIM_TRACE);
    ck_assert_int_eq(m.format, COMPARE_TIMELINE_DAT);
    ck_assert_int_eq(p.n_ops, 10);
    /* 0.001953 GiB x 2^30 B/GiB = 2097017.78 B, rounded to 2097018. */
    ck_assert_int_eq(p.peak_mem_bytes, 2097018);
    ck_assert_int_eq(m.peak_mem_bytes, -1);
    run_ok(&p, &m, &r);
    /* Same ops, same times: every error is 0. */
    ck_assert_int_eq(r.by_op_id, 1);
    ck_assert_int_eq(r.rows[COMPARE_ROW_COMPUTE].matched, 5);
    ck_assert_double_eq_tol(r.rows[OP_ALLGATHER].err_pct, 0.0, PCT_TOL);
    ck_assert_double_eq_tol(r.step_err_pct, 0.0, PCT_TOL);
    ck_assert_double_eq_tol(r.exposed_pred_s, r.exposed_meas_s, TIME_TOL_S);
    compare_timeline_free(&p);
    compare_timeline_free(&m);
}
END_TEST

START_TEST(test_compare_kineto_import)
{
    struct compare_timeline k;
    load_ok(tu_data_path("compare-kineto.json"), &k);
    ck_assert_int_eq(k.format, COMPARE_KINETO);
    ck_assert_int_eq(k.has_op_ids, 0);
    ck_assert_str_eq(k.step_label, "ProfilerStep#1");
    /* Launched in ProfilerStep#1 (2000-3500 us on the CPU): correlation
     * 10-20; the kernels run at 10000-12100 us, outside that span, so
     * only the correlation ids place them.  Left out: correlation 1 and 2
     * (launched in ProfilerStep#0) and 20 (a device-to-device copy).
     * That leaves 10 kernels: 3 all-gathers (ncclDevKernel_AllGather_...
     * and the older ncclKernel_AllGather_...), 2 reduce-scatters and 5
     * compute kernels (4 GEMMs and the Adam kernel). */
    ck_assert_int_eq(k.n_ops, 10);
    int n[COMPARE_KIND_COUNT] = {0};
    int64_t t[COMPARE_KIND_COUNT] = {0};
    for (int i = 0; i < k.n_ops; i++) {
        n[k.ops[i].kind]++;
        t[k.ops[i].kind] += k.ops[i].end_ns - k.ops[i].start_ns;
    }
    ck_assert_int_eq(n[OP_ALLGATHER], 3);
    ck_assert_int_eq(n[OP_REDUCESCATTER], 2);
    ck_assert_int_eq(n[COMPARE_KERNEL], 5);
    /* Durations: 3 x 100 us of all-gather, 2 x 100 us of reduce-scatter,
     * 300 + 300 + 600 + 600 + 100 = 1900 us of compute. */
    ck_assert_int_eq(t[OP_ALLGATHER], 300000);
    ck_assert_int_eq(t[OP_REDUCESCATTER], 200000);
    ck_assert_int_eq(t[COMPARE_KERNEL], 1900000);
    /* The step: 10000 us to the Adam kernel's end at 12100 us. */
    ck_assert_int_eq(compare_step_end_ns(&k) - compare_step_start_ns(&k),
                     2100000);
    /* Streams 7 (compute), 20 (all-gather), 24 (reduce-scatter), in tid
     * order. */
    ck_assert_int_eq(k.n_streams, 3);
    ck_assert_str_eq(k.stream_names[0], "s7");
    ck_assert_str_eq(k.stream_names[2], "s24");
    /* Peak memory: the CUDA [memory] events reach 1 MiB then 3 MiB; the
     * CPU one (Device Type 0, 99999999 B) does not count. */
    ck_assert_int_eq(k.peak_mem_bytes, 3145728);

    /* Against the prediction: k-th all-gather with k-th, so +20 % as with
     * op ids; compute 1900 vs 1900 us, 0 %, with no pairs (kernels have no
     * kind to pair by), and no phases (kernels have none). */
    struct compare_timeline p;
    struct compare_result r;
    load_ok(tu_data_path("compare-pred.dat"), &p);
    run_ok(&p, &k, &r);
    ck_assert_int_eq(r.by_op_id, 0);
    ck_assert_int_eq(r.rows[OP_ALLGATHER].matched, 3);
    ck_assert_double_eq_tol(r.rows[OP_ALLGATHER].err_pct, 20.0, PCT_TOL);
    ck_assert_double_eq_tol(r.rows[OP_ALLGATHER].median_op_err_pct, 20.0,
                            PCT_TOL);
    ck_assert_double_eq_tol(r.rows[COMPARE_ROW_COMPUTE].err_pct, 0.0,
                            PCT_TOL);
    ck_assert_int_eq(r.rows[COMPARE_ROW_COMPUTE].matched, 0);
    ck_assert_int_eq(r.has_phases, 0);
    /* Step 2120 vs 2100 us and exposed 220 vs 200 us, as against
     * compare-meas.dat: the trace is that step shifted by 10000 us. */
    ck_assert_double_eq_tol(r.step_err_pct, 100.0 * 20 / 2100, PCT_TOL);
    ck_assert_double_eq_tol(r.exposed_meas_s, 200e-6, TIME_TOL_S);
    compare_timeline_free(&p);
    compare_timeline_free(&k);
}
END_TEST

START_TEST(test_compare_kineto_whole_trace)
{
    /* Without a ProfilerStep annotation the whole trace is the step: a
     * kernel at 0-10 us and an all-reduce at 5-25 us; a memset and a
     * broadcast-free trace otherwise. */
    char *path = tu_temp_text("{\"traceEvents\": [\n"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"elementwise\", "
        "\"pid\": 0, \"tid\": 7, \"ts\": 0, \"dur\": 10},\n"
        "{\"ph\": \"X\", \"cat\": \"gpu_memset\", \"name\": \"Memset\", "
        "\"pid\": 0, \"tid\": 7, \"ts\": 30, \"dur\": 10},\n"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": "
        "\"ncclDevKernel_AllReduce_Sum_bf16_RING_LL\", \"pid\": 0, "
        "\"tid\": 9, \"ts\": 5, \"dur\": 20}]}\n");
    struct compare_timeline k;
    load_ok(path, &k);
    ck_assert_str_eq(k.step_label, "whole trace");
    ck_assert_int_eq(k.n_ops, 2);
    /* The span: 0 us to the all-reduce's end at 25 us (the memset is
     * left out). */
    ck_assert_int_eq(compare_step_end_ns(&k) - compare_step_start_ns(&k),
                     25000);
    ck_assert_int_eq(k.peak_mem_bytes, -1);
    unlink(path);
    free(path);
    compare_timeline_free(&k);
}
END_TEST

/* ---- limits ---------------------------------------------------------- */

START_TEST(test_compare_tolerance)
{
    struct compare_timeline p, m;
    struct compare_result r;
    load_ok(tu_data_path("compare-pred.dat"), &p);
    load_ok(tu_data_path("compare-meas.dat"), &m);
    run_ok(&p, &m, &r);
    /* The step error is 20 / 2100 = 0.952 %: within 1 %, beyond 0.9 %. */
    ck_assert_int_eq(compare_within_tol(&r, 1.0), 1);
    ck_assert_int_eq(compare_within_tol(&r, 0.9), 0);
    compare_timeline_free(&p);
    compare_timeline_free(&m);
}
END_TEST

/* ---- errors ---------------------------------------------------------- */

/* Expect compare_load(TEXT as a file) to fail with WANT, where "@" in WANT
 * stands for the file's path. */
static void
expect_load_error(const char *text, const char *want)
{
    char *path = tu_temp_text(text);
    struct compare_timeline t;
    char *cause = NULL, full[2048];
    ck_assert_int_eq(compare_load(path, &t, &cause), -1);
    const char *at = strchr(want, '@');
    ck_assert_ptr_nonnull(at);
    snprintf(full, sizeof full, "%.*s%s%s", (int)(at - want), want, path,
             at + 1);
    ck_assert_str_eq(cause, full);
    free(cause);
    unlink(path);
    free(path);
}

START_TEST(test_compare_error_messages)
{
    struct compare_timeline t;
    char *cause = NULL;
    ck_assert_int_eq(compare_load("/nonexistent.dat", &t, &cause), -1);
    ck_assert_str_eq(cause, "/nonexistent.dat: No such file or directory");
    free(cause);
    expect_load_error("hello\n", "@: unknown format (expected a timeline "
                      ".dat, an fsdpsim trace or a PyTorch profiler trace)");
    expect_load_error("# fsdpsim 0.1.0 simulate\n# t_us allocated_bytes "
                      "reserved_bytes\n0.000 1 2\n",
                      "@: a memory .dat, not a timeline (give it with "
                      "--pred-memory or --measured-memory)");
    expect_load_error(TIMELINE_HEAD "0 C 1 forward 0 0 0 1.0\n",
                      "@:4: cannot read this line (expected stream_index "
                      "stream op kind unit iter micro start_us end_us "
                      "bytes)");
    expect_load_error(TIMELINE_HEAD "0 C 1 launch 0 0 0 1.0 2.0 0\n",
                      "@:4: unknown op kind 'launch'");
    expect_load_error(TIMELINE_HEAD, "@: no ops (an empty timeline?)");
    expect_load_error("{\"a\": 1}", "@: JSON without 'traceEvents' "
                      "(expected a Chrome trace)");
    expect_load_error("{\"traceEvents\": [", "@:1: not valid JSON: "
                      "']' expected near end of file");
    expect_load_error("{\"traceEvents\": [{\"ph\": \"X\", \"cat\": "
                      "\"cpu_op\", \"name\": \"aten::mm\", \"ts\": 1, "
                      "\"dur\": 2}]}",
                      "@: a Chrome trace with neither fsdpsim ops "
                      "(args.op) nor GPU kernels (cat \"kernel\")");
    /* A profiler trace whose last step launched no kernel. */
    expect_load_error("{\"schemaVersion\": 1, \"traceEvents\": [\n"
                      "{\"ph\": \"X\", \"cat\": \"user_annotation\", "
                      "\"name\": \"ProfilerStep#4\", \"ts\": 0, \"dur\": 5},\n"
                      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", "
                      "\"ts\": 10, \"dur\": 5}]}",
                      "@: no GPU kernels launched in ProfilerStep#4");

    /* Nothing in common: one host-to-device copy against one
     * device-to-host copy. */
    char *a = tu_temp_text(TIMELINE_HEAD "0 C 1 h2d 0 0 0 0.0 1.0 8\n");
    char *b = tu_temp_text(TIMELINE_HEAD "0 C 1 d2h 0 0 0 0.0 1.0 8\n");
    struct compare_timeline p, m;
    struct compare_result r;
    load_ok(a, &p);
    load_ok(b, &m);
    ck_assert_int_eq(compare_run(&p, &m, "a.dat", "b.dat", &r, &cause), -1);
    ck_assert_str_eq(cause, "a.dat and b.dat: nothing to match (no kind of "
                            "op occurs in both)");
    free(cause);
    compare_timeline_free(&p);
    compare_timeline_free(&m);
    unlink(a);
    unlink(b);
    free(a);
    free(b);

    ck_assert_int_eq(compare_read_memory(tu_data_path("compare-pred.dat"),
                                         &(int64_t){0}, &cause), -1);
    char want[2048];
    snprintf(want, sizeof want, "%s: not a memory .dat (no '# t_us "
             "allocated_bytes ...' line)", tu_data_path("compare-pred.dat"));
    ck_assert_str_eq(cause, want);
    free(cause);
}
END_TEST

START_TEST(test_compare_exit_codes)
{
    if (getenv("FSDPSIM") == NULL)
        return;     /* outside make check */
    char err[4096], args[8192], want[8192];
    const char *p = tu_data_path("compare-pred.dat");
    const char *m = tu_data_path("compare-meas.dat");
    /* Step error 0.952 %: --tol 1 passes (0), --tol 0.5 fails (1). */
    snprintf(args, sizeof args, "compare '%s' '%s' --tol 1", p, m);
    ck_assert_int_eq(tu_run_fsdpsim(args, err, sizeof err), 0);
    ck_assert_str_eq(err, "");
    snprintf(args, sizeof args, "compare '%s' '%s' --tol 0.5", p, m);
    ck_assert_int_eq(tu_run_fsdpsim(args, err, sizeof err), 1);
    ck_assert_str_eq(err, "fsdpsim: step time error +1.0% is beyond --tol "
                          "0.5%\n");
    /* Bad input: 2 and one line naming the file. */
    snprintf(args, sizeof args, "compare '%s' /nonexistent.json", p);
    ck_assert_int_eq(tu_run_fsdpsim(args, err, sizeof err), 2);
    ck_assert_str_eq(err, "fsdpsim: /nonexistent.json: No such file or "
                          "directory\n");
    snprintf(args, sizeof args, "compare '%s' '%s' --measured-memory '%s'",
             p, m, m);
    ck_assert_int_eq(tu_run_fsdpsim(args, err, sizeof err), 2);
    snprintf(want, sizeof want, "fsdpsim: %s: not a memory .dat (no '# t_us "
             "allocated_bytes ...' line)\n", m);
    ck_assert_str_eq(err, want);
    /* Usage errors: 2, one line with where the options are listed. */
    snprintf(args, sizeof args, "compare '%s'", p);
    ck_assert_int_eq(tu_run_fsdpsim(args, err, sizeof err), 2);
    ck_assert_str_eq(err, "fsdpsim: give two files: PRED MEASURED (the "
                          "options: 'fsdpsim help compare')\n");
    snprintf(args, sizeof args, "compare '%s' '%s' --tol x", p, m);
    ck_assert_int_eq(tu_run_fsdpsim(args, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "fsdpsim: --tol: 'x' is not a "
                                      "percentage (e.g. --tol 10)\n"));
}
END_TEST

static Suite *
compare_suite(void)
{
    Suite *s = suite_create("compare");

    TCase *core = tcase_create("core");
    tcase_add_test(core, test_compare_known_errors);
    tcase_add_test(core, test_compare_op_id_matching);
    tcase_add_test(core, test_compare_last_step);
    tcase_add_test(core, test_compare_trace_equals_timeline);
    tcase_add_test(core, test_compare_kineto_import);
    tcase_add_test(core, test_compare_kineto_whole_trace);
    suite_add_tcase(s, core);

    TCase *limits = tcase_create("limits");
    tcase_add_test(limits, test_compare_tolerance);
    suite_add_tcase(s, limits);

    TCase *errors = tcase_create("errors");
    tcase_set_timeout(errors, 60);
    tcase_add_test(errors, test_compare_error_messages);
    tcase_add_test(errors, test_compare_exit_codes);
    suite_add_tcase(s, errors);
    return s;
}

int
main(void)
{
    return tu_main(compare_suite());
}
