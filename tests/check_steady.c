/*
 * check_steady.c: a long accumulation step's summary from a short one
 * (steady.c) is the summary of simulating every micro-batch, byte for
 * byte.
 */
#define _POSIX_C_SOURCE 200809L
#include "check_main.h"
#include "net.h"
#include "output.h"
#include "steady.h"
#include "testutil.h"
#include "xalloc.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* What a sweep row holds for ARGS (tiny-llama on test-2x4): the summary
 * JSON, by steady_run, or with STEADY 0 by simulating the whole step
 * (--exact: no micro-batch skipped).  *used: whether steady_run took the
 * short step; *mem: the allocator's figures. */
static struct steady_cache *shared_cache;   /* NULL: none */

/* The summary JSON of run R timed as NR with metrics M. */
static char *
summary_json(struct run *r, struct sim_result *nr, struct metrics *m)
{
    struct run_view v = {&r->cfg, r->model, r->topo, r->sched, &nr->res, m,
                         r->command_line};
    char *text = NULL;
    size_t len = 0;
    FILE *out = xopen_memstream(&text, &len);
    output_summary_json(&v, out);
    fclose(out);
    return text;
}

/* *R parsed from the command line LINE (split into ARGV, *ARGC words in
 * place: R may point into it, so LINE is freed after R); ARGS names it
 * in a failure. */
static void
parse_line(char *line, const char *args, struct run *r, char **argv,
           int *argc)
{
    *argc = tu_split_args(line, argv, 64);
    char *cause = NULL;
    int rc = setup_parse_args(r, "simulate", *argc, argv, &cause);
    ck_assert_msg(rc == 0, "%s: %s", args, cause);
}

/* With STEPS, by steady_run_steps from a run of STEPS[it] micro-batches
 * in step it instead (*used: whether that run stood for ARGS's; NULL
 * when it did not). */
static char *
summary_steps(const char *args, int steady, const int *steps, int *used,
              struct mem_stats *mem)
{
    char *line = xasprintf("simulate --model tiny-llama --topology test-2x4 "
                           "%s%s", args, steady ? "" : " --exact");
    char *argv[64];
    int argc, rc;
    struct run r;
    struct sim_result nr;
    struct metrics m;
    char *cause = NULL;
    parse_line(line, args, &r, argv, &argc);
    *used = 0;
    char *key = shared_cache ? steady_key(argc, argv) : NULL;
    if (steady && steps != NULL) {
        memset(&nr, 0, sizeof nr);
        rc = steady_run_steps(&r, steps, &m, used, &cause);
    } else if (steady) {
        rc = steady_run(&r, shared_cache, key, &nr, &m, used, &cause);
    } else {
        rc = setup_prepare(&r, &cause);
        if (rc == 0)
            rc = simulate_schedule(r.sched, r.topo, &r.cfg, &nr, &cause);
        if (rc == 0)
            metrics_compute(r.sched, r.topo, &nr.res, &m);
    }
    free(key);
    ck_assert_msg(rc == 0, "%s: %s", args, cause);
    /* Steps that do not stand for ARGS's accumulation leave no summary. */
    char *text = steps == NULL || *used ? summary_json(&r, &nr, &m) : NULL;
    if (text != NULL)
        *mem = m.mem;
    sim_result_free(&nr);
    setup_free(&r);
    free(line);
    return text;
}

static char *
summary(const char *args, int steady, int *used, struct mem_stats *mem)
{
    return summary_steps(args, steady, NULL, used, mem);
}

/* ARGS's summary by steady_run and by the whole simulation agree;
 * returns whether the short step was used. */
static int
steady_matches(const char *args)
{
    int used, exact_used;
    struct mem_stats ms, mx;
    char *a = summary(args, 1, &used, &ms);
    char *b = summary(args, 0, &exact_used, &mx);
    ck_assert(!exact_used);
    ck_assert_msg(strcmp(a, b) == 0, "%s:\nsteady %s\nwhole %s", args, a, b);
    /* Every allocator figure, the peak's moment included. */
    ck_assert_msg(memcmp(&ms, &mx, sizeof ms) == 0, "%s: allocator", args);
    free(a);
    free(b);
    return used;
}

START_TEST(test_steady_is_exact)
{
    /* The settings folding is tested on (tu_fold_settings), each at 13
     * and 24 micro-batches: odd and even, so that a period of two
     * micro-batches is met with A - A' even either way. */
    static const int accum[] = {13, 24};
    int used = 0, tried = 0;
    for (int i = 0; i < tu_n_fold_settings; i++)
        for (size_t k = 0; k < 2; k++) {
            char *args = xasprintf("--grad-accum %d %s", accum[k],
                                   tu_fold_settings[i]);
            int u = steady_matches(args);
            if (i == 0)
                ck_assert_msg(u, "%s: the short step was not used", args);
            used += u;
            tried++;
            free(args);
        }
    /* Most settings repeat within the short step; the comparison is
     * void for those that do not (they are simulated whole). */
    ck_assert_int_gt(used, tried / 2);
}
END_TEST

/* ARGS's summary (tiny-llama on test-2x4) counted from a run of STEPS[it]
 * micro-batches in step it, against simulating every micro-batch: equal
 * whenever that run stands for ARGS's accumulation, which is returned. */
static int
steps_match(const char *args, const int *steps)
{
    int used, exact_used;
    struct mem_stats ms, mx;
    char *a = summary_steps(args, 1, steps, &used, &ms);
    if (used) {
        char *b = summary(args, 0, &exact_used, &mx);
        ck_assert_msg(strcmp(a, b) == 0, "%s:\nsteps %s\nwhole %s", args, a,
                      b);
        ck_assert_msg(memcmp(&ms, &mx, sizeof ms) == 0, "%s: allocator",
                      args);
        free(b);
    }
    free(a);
    return used;
}

START_TEST(test_steady_own_step_lengths)
{
    /* A run whose steps have lengths of their own (9 or 10 micro-batches,
     * of A's parity, and two more) stands for A when each step is a whole
     * number of its periods shorter, and then gives the summary of
     * simulating all A: over the settings folding is tested on, at 13,
     * 24, 999 and 1,000 micro-batches, the longer step first and last
     * (the later steps start from the state an earlier step of another
     * length leaves). */
    static const int accum[] = {13, 24, 999, 1000};
    int used = 0, tried = 0;
    for (int i = 0; i < tu_n_fold_settings; i++)
        for (size_t k = 0; k < sizeof accum / sizeof *accum; k++)
            for (int longer = 0; longer < 2; longer++) {
                int a0 = 9 + (accum[k] - 9) % 2, steps[3];
                for (int it = 0; it < 3; it++)
                    steps[it] = a0 + 2 * ((it == 0) == longer);
                char *args = xasprintf("--grad-accum %d %s", accum[k],
                                       tu_fold_settings[i]);
                int u = steps_match(args, steps);
                if (i == 0)
                    ck_assert_msg(u, "%s: the steps did not stand for it",
                                  args);
                used += u;
                tried++;
                free(args);
            }
    ck_assert_int_gt(used, tried / 2);
}
END_TEST

START_TEST(test_steady_long_step)
{
    /* A thousand micro-batches from nine or ten of them, and the same
     * summary as simulating all thousand; also with the device too small
     * (240 MiB, 212 MiB for the allocator once NCCL's 28 MiB of ring
     * buffers are off: micro-batches retry, synchronize and run out of
     * memory, and the cached segments repeat within the short step; at
     * most allocator sizes between 150 and 250 MiB, with FSDP1's
     * flat-gradient and the
     * loss's temporaries, they do not, and the step is simulated whole). */
    ck_assert(steady_matches("--grad-accum 1000"));
    ck_assert(steady_matches("--grad-accum 999 --limit-all-gathers false "
                             "--set gpu.memory=240MiB"));
}
END_TEST

START_TEST(test_steady_step_grows_by_periods)
{
    /* Two more micro-batches add one whole period of two, or two of one:
     * the step time at A + 2 minus that at A is the same for every A past
     * the short step, and tokens per GPU are micro-batch x sequence x A
     * (tiny-llama's defaults: 1 x 2048 unless the model says otherwise). */
    int used;
    struct mem_stats ms;
    double t[3];
    long long tokens[3];
    for (int i = 0; i < 3; i++) {
        char *args = xasprintf("--grad-accum %d", 100 + 2 * i);
        char *j = summary(args, 1, &used, &ms);
        ck_assert(used);
        const char *p = strstr(j, "\"step_time_s\": ");
        ck_assert_ptr_nonnull(p);
        t[i] = strtod(p + strlen("\"step_time_s\": "), NULL);
        const char *q = strstr(j, "\"seq_len\": ");
        const char *mb = strstr(j, "\"micro_batch\": ");
        ck_assert(q && mb);
        tokens[i] = strtoll(mb + strlen("\"micro_batch\": "), NULL, 10)
                    * strtoll(q + strlen("\"seq_len\": "), NULL, 10)
                    * (100 + 2 * i);
        const char *tp = strstr(j, "\"tokens_per_s_per_gpu\": ");
        ck_assert_ptr_nonnull(tp);
        double per = strtod(tp + strlen("\"tokens_per_s_per_gpu\": "), NULL);
        /* tokens_per_s_per_gpu = tokens per GPU / step time (3 decimals) */
        ck_assert_double_eq_tol(per, tokens[i] / t[i], 1e-3);
        free(j);
        free(args);
    }
    /* Step times print to the nanosecond: equal differences exactly. */
    ck_assert_int_eq(llround((t[1] - t[0]) * 1e9),
                     llround((t[2] - t[1]) * 1e9));
    ck_assert(t[1] > t[0]);
}
END_TEST

START_TEST(test_steady_shared_short_step)
{
    /* Points that differ only in their accumulation share the short
     * step: the first of each parity runs it, the others are counted from
     * it without a schedule; each summary is still the whole simulation's.
     * A setting that does not fold (NO_SHARD at this size) is remembered
     * as such and simulated whole every time. */
    shared_cache = steady_cache_new();
    static const char *const settings[] = {"", "--limit-all-gathers false "
                                           "--set gpu.memory=220MiB",
                                           "--sharding-strategy NO_SHARD"};
    for (int i = 0; i < 3; i++)
        for (int a = 30; a <= 33; a++) {
            char *args = xasprintf("--grad-accum %d %s", a, settings[i]);
            int u = steady_matches(args);
            ck_assert_int_eq(u, i < 2);
            free(args);
        }
    steady_cache_free(shared_cache);
    shared_cache = NULL;
}
END_TEST

/* GPT-3 175B (bf16) on 128 dgx-a100-80g nodes: it needs about 190 GB of
 * an 80 GB GPU, so every micro-batch retries its allocations and frees
 * and re-creates cached segments, whose order comes back only every few
 * micro-batches. */
#define GPT3_1024 "--model gpt3-175b --topology dgx-a100-80g --nodes 128 " \
                  "--param-dtype bf16"

START_TEST(test_steady_long_periods)
{
    /* Micro-batches 3 and 13 repeat every 6 micro-batches in the first
     * step, where a period of one or two is what a short step of 9 or 10
     * can show; the probes see it.  With a sweep's shared cache each
     * accumulation gets the summary of simulating all its micro-batches,
     * byte for byte, and past the long probe (65) every one is counted
     * from a shorter run. */
    shared_cache = steady_cache_new();
    static const int accum[] = {13, 23, 37, 101};
    for (int mb = 0; mb < 2; mb++)
        for (size_t k = 0; k < sizeof accum / sizeof *accum; k++) {
            char *args = xasprintf("%s --micro-batch %d --grad-accum %d",
                                   GPT3_1024, mb ? 13 : 3, accum[k]);
            int u = steady_matches(args);
            if (accum[k] == 101)
                ck_assert_msg(u, "%s: not counted from a shorter run", args);
            free(args);
        }
    steady_cache_free(shared_cache);
    shared_cache = NULL;
}
END_TEST

/* GPT-3 on 1024 GPUs with ARGS, the whole step simulated by the engine
 * (folded where it repeats): *r and *nr, and the command line they were
 * parsed from (returned), for the caller to free. */
static char *
gpt3_folded(const char *args, struct run *r, struct sim_result *nr)
{
    char *line = xasprintf("simulate %s %s", GPT3_1024, args);
    char *argv[64];
    int argc;
    char *cause = NULL;
    parse_line(line, args, r, argv, &argc);
    ck_assert(setup_prepare(r, &cause) == 0);
    ck_assert(simulate_schedule(r->sched, r->topo, &r->cfg, nr, &cause) == 0);
    return line;
}

START_TEST(test_fold_long_period)
{
    /* The engine folds a period longer than two micro-batches: the whole
     * step of 60 at micro-batch 4 skips micro-batches in its first step
     * too (from micro-batch 4, every 8: GPT-3 does not fit, and the
     * allocator's retries reshuffle its cached segments), and its times
     * are those of simulating them all. */
    struct run r;
    struct sim_result nr;
    char *line = gpt3_folded("--format json --micro-batch 4 --grad-accum 60",
                             &r, &nr);
    int long_period = 0;
    for (int i = 0; i < nr.res.n_jumps; i++)
        long_period |= nr.res.jumps[i].iter == 0
                       && nr.res.jumps[i].micro > 2;
    ck_assert_msg(long_period, "no period longer than 2 in step 0");
    struct metrics m;
    metrics_compute(r.sched, r.topo, &nr.res, &m);
    char *folded = summary_json(&r, &nr, &m);
    int used;
    struct mem_stats ms;
    char *exact = summary(GPT3_1024 " --micro-batch 4 --grad-accum 60", 0,
                          &used, &ms);
    ck_assert_str_eq(folded, exact);
    free(folded);
    free(exact);
    sim_result_free(&nr);
    setup_free(&r);
    free(line);
}
END_TEST

START_TEST(test_steady_repeat_without_period)
{
    /* At micro-batch 92 the first step repeats from micro-batch 7, every
     * 10 (micro-batch 17 is in 7's state), and the second every 6 or 2
     * by where the first ended: a step of 20 has the repeat at 17 but no
     * whole period after it.  The engine records the repeat with no
     * copies (its summary still that of simulating every micro-batch),
     * and every step from 20 on is counted from runs whose steps have
     * lengths of their own: 20 from one whose second step is as short as
     * the probe's second step says it may be at 20's phase; 50, 40 and 33
     * from one whose first step is 20 or 23 long (a whole number of
     * periods of 10 shorter) and whose second is as long as the second
     * step after a first of 20 or 23 (ending at their phase of 10) needs
     * for a whole number of its periods of 6 or 2; 400 the same way
     * (about the longest step of GPT-3 the schedule limit allows). */
    struct run r;
    struct sim_result nr;
    char *line = gpt3_folded("--micro-batch 92 --grad-accum 20", &r, &nr);
    ck_assert_int_eq(nr.res.n_jumps, 2);
    const struct engine_fold_jump *j = &nr.res.jumps[0];
    ck_assert_int_eq(j->iter, 0);
    ck_assert_int_eq(j->micro, 10);
    ck_assert_int_eq(r.sched->ops[j->b2].micro, 17);
    ck_assert_int_eq(j->copies, 0);
    sim_result_free(&nr);
    setup_free(&r);
    free(line);

    shared_cache = steady_cache_new();
    static const int accum[] = {20, 50, 40, 33, 400};
    for (size_t k = 0; k < sizeof accum / sizeof *accum; k++) {
        char *args = xasprintf("%s --micro-batch 92 --grad-accum %d",
                               GPT3_1024, accum[k]);
        int u = steady_matches(args);
        ck_assert_msg(u, "%s: not counted from a shorter run", args);
        free(args);
    }
    steady_cache_free(shared_cache);
    shared_cache = NULL;
}
END_TEST

START_TEST(test_steady_refused_step)
{
    /* A step too large to build (GPT-3 at micro-batch 30 and 600
     * micro-batches: about 6.1 million ops, over SCHED_MAX_OPS) is
     * refused as simulating it whole would be, once the 9- or 10-
     * micro-batch run shows its size, without trying other steps of up
     * to 600 micro-batches first (which took minutes). */
    shared_cache = steady_cache_new();
    char *line = xasprintf("simulate %s --micro-batch 30 --grad-accum 600",
                           GPT3_1024);
    char *argv[64];
    int argc, steady;
    struct run r;
    struct sim_result nr;
    struct metrics m;
    char *cause = NULL;
    parse_line(line, "--micro-batch 30 --grad-accum 600", &r, argv, &argc);
    char *key = steady_key(argc, argv);
    ck_assert_int_eq(steady_run(&r, shared_cache, key, &nr, &m, &steady,
                                &cause), -1);
    ck_assert_msg(strstr(cause, "the schedule would hold about") != NULL,
                  "%s", cause);
    free(cause);
    free(key);
    sim_result_free(&nr);
    setup_free(&r);
    free(line);
    steady_cache_free(shared_cache);
    shared_cache = NULL;
}
END_TEST

START_TEST(test_steady_key)
{
    /* The key leaves out the accumulation in every spelling, and only
     * it; words are length-prefixed, so no two command lines share one. */
    char *a[] = {unconst("sweep"), unconst("--grad-accum"), unconst("12"),
                 unconst("--nodes=2")};
    char *b[] = {unconst("sweep"), unconst("--nodes=2"),
                 unconst("--grad_accum=40")};
    char *c[] = {unconst("sweep"), unconst("--nodes=3"),
                 unconst("--grad-accum=12")};
    char *ka = steady_key(4, a), *kb = steady_key(3, b), *kc = steady_key(3, c);
    ck_assert_str_eq(ka, "5:sweep 9:--nodes=2 ");
    ck_assert_str_eq(kb, ka);
    ck_assert_str_ne(kc, ka);
    free(ka);
    free(kb);
    free(kc);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("steady");
    TCase *c = tcase_create("core");
    tcase_set_timeout(c, 120);
    tcase_add_test(c, test_steady_is_exact);
    tcase_add_test(c, test_steady_own_step_lengths);
    tcase_add_test(c, test_steady_long_step);
    tcase_add_test(c, test_steady_step_grows_by_periods);
    tcase_add_test(c, test_steady_shared_short_step);
    tcase_add_test(c, test_steady_key);
    suite_add_tcase(s, c);
    /* GPT-3 at up to 101 micro-batches, simulated whole for the
     * comparison: seconds, more under ASan. */
    TCase *g = tcase_create("gpt3");
    tcase_set_timeout(g, 600);
    tcase_add_test(g, test_steady_long_periods);
    tcase_add_test(g, test_fold_long_period);
    tcase_add_test(g, test_steady_repeat_without_period);
    tcase_add_test(g, test_steady_refused_step);
    suite_add_tcase(s, g);
    return tu_main(s);
}
