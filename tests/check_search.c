/*
 * check_search.c: tests for the searches behind `fsdpsim tune` and
 * `fsdpsim plan`: the min_num_params thresholds of the toy model derived
 * by hand, tune never ranking a setting that misses the headroom, plan's
 * sizes, batch arithmetic and deadline bisection, the parsers of
 * durations, dollars and prices with their error messages, and how
 * parsing the base simulate options they start from ends.
 */
#define _POSIX_C_SOURCE 200809L

#include "batch.h"
#include "plan.h"
#include "search.h"
#include "setup.h"
#include "tune.h"
#include "xalloc.h"
#include "check_main.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* test-2x4 with its GPUs' memory set to 1 GiB (test_tune_winner_fits). */
#define TEST_HBM_BYTES (1.0 * 1073741824.0)
/* Durations and prices are parsed with strtod: exact for these inputs. */
#define PARSE_TOL 1e-9

START_TEST(test_tune_thresholds_toy)
{
    /* toy is Linear(1024, 2048) = 1024*2048 + 2048 = 2,099,200 params
     * (net1), ReLU (0) and Linear(2048, 4096) = 8,392,704 (net2) under
     * the root.  size_based_auto_wrap_policy wraps a module whose
     * unwrapped parameters reach min_num_params, the root always:
     *   t <= 2,099,200            net1, net2, root        3 units
     *   2,099,200 < t <= 8,392,704 net2, root (net1 in it) 2 units
     *   t > 8,392,704             root                    1 unit
     * The roundest threshold of each interval: 1e6, 3e6 and 1e7 (the
     * last interval runs to 10x its start). */
    struct run r;
    char *cause = NULL;
    char *av[] = {unconst("test"), unconst("--model=toy"),
                  unconst("--topology=test-2x4"),
                  unconst("--auto-wrap-policy=size"), NULL};
    ck_assert_int_eq(setup_parse_args(&r, "test", 4, av, &cause), 0);
    ck_assert_msg(setup_prepare(&r, &cause) == 0, "%s", cause);
    int *units, n;
    int64_t *t = tune_wrap_thresholds(r.model, &r.cfg, 16, &units, &n);
    ck_assert_int_eq(n, 3);
    ck_assert_int_eq(t[0], 1000000);
    ck_assert_int_eq(units[0], 3);
    ck_assert_int_eq(t[1], 3000000);
    ck_assert_int_eq(units[1], 2);
    ck_assert_int_eq(t[2], 10000000);
    ck_assert_int_eq(units[2], 1);
    free(t);
    free(units);
    setup_free(&r);
}
END_TEST

START_TEST(test_tune_winner_fits)
{
    /* GPUs of 1 GiB with a 50% headroom leave 512 MiB usable.  toy in
     * bf16 under NO_SHARD at micro-batch 8 reserves 680 MiB (simulate
     * prints it), so the search holds settings that miss the headroom
     * and the filter is exercised. */
    char *base[] = {unconst("tune"), unconst("--param-dtype=bf16"),
                    unconst("--model=toy"), unconst("--topology=test-2x4"),
                    unconst("--auto-wrap-policy=size"),
                    unconst("--set=gpu.memory=1GiB")};
    struct tune_opts o = {.base_argc = 6, .base = base, .headroom = 0.5,
                          .max_grad_accum = 4, .jobs = 2};
    struct tune_result r;
    char *cause = NULL;
    ck_assert_msg(tune_run(&o, &r, &cause) == 0, "%s", cause);
    ck_assert_int_gt(r.n_ranked, 0);
    int misses = 0;
    for (int i = 0; i < r.n_points; i++)
        misses += r.points[i].ok && !r.points[i].fits;
    ck_assert_int_gt(misses, 0);
    for (int k = 0; k < r.n_ranked; k++) {
        const struct tune_point *p = &r.points[r.ranked[k]];
        ck_assert(p->ok && p->fits);
        ck_assert(p->mem_free >= 0.5);
        /* Ranked by throughput; ties within 0.1% may come in either
         * order (the one closer to PyTorch's defaults first). */
        if (k > 0)
            ck_assert(p->tokens_per_s_per_gpu
                      <= 1.001 * r.points[r.ranked[k - 1]]
                                     .tokens_per_s_per_gpu);
    }
    /* The winner, simulated again on its own as `fsdpsim simulate`
     * would: its reserved peak is within 512 MiB. */
    struct search_args a;
    search_args_init(&a, 6, base);
    tune_setting_args(&r.points[r.ranked[0]].s, &a);
    struct sweep empty;
    sweep_init(&empty);
    struct sweep_result res;
    sweep_point_run(&empty, a.argc, a.argv, 0, NULL, &res);
    struct batch_columns cols;
    batch_columns_init(&cols);
    ck_assert(res.ok);
    ck_assert(batch_value(&cols, &res, "peak_reserved_bytes")
              <= 0.5 * TEST_HBM_BYTES);
    ck_assert(search_fits(&cols, &res, 0.5));
    batch_columns_free(&cols);
    sweep_result_free(&res);
    search_args_free(&a);
    tune_free(&r);
}
END_TEST

START_TEST(test_tune_pytorch_code)
{
    /* The FullyShardedDataParallel call spells PyTorch's keywords. */
    struct run_config c;
    config_init(&c);
    char *cause = NULL;
    ck_assert_int_eq(config_set(&c, "auto_wrap_policy", "size", "t",
                                &cause), 0);
    ck_assert_int_eq(config_set(&c, "min_num_params", "3e7", "t", &cause),
                     0);
    ck_assert_int_eq(config_set(&c, "param_dtype", "bf16", "t", &cause), 0);
    ck_assert_int_eq(config_set(&c, "grad_accum", "4", "t", &cause), 0);
    ck_assert_int_eq(config_set(&c, "no_sync", "true", "t", &cause), 0);
    ck_assert_int_eq(config_set(&c, "activation_checkpointing", "full", "t",
                                &cause), 0);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    tune_pytorch_code(&c, "LlamaDecoderLayer", f);
    fclose(f);
    const char *want[] = {
        "size_based_auto_wrap_policy, min_num_params=int(3e7)",
        "sharding_strategy=ShardingStrategy.FULL_SHARD,",
        "backward_prefetch=BackwardPrefetch.BACKWARD_PRE,",
        "limit_all_gathers=True,",
        "param_dtype=torch.bfloat16,",
        "device_id=torch.cuda.current_device(),",
        "checkpoint_impl=CheckpointImpl.NO_REENTRANT",
        "check_fn=lambda m: isinstance(m, LlamaDecoderLayer),",
        "accum = 4",
        "model.no_sync()",
        NULL};
    for (int i = 0; want[i]; i++)
        ck_assert_msg(strstr(text, want[i]), "missing: %s", want[i]);
    free(text);
    config_free(&c);
}
END_TEST

START_TEST(test_plan_sizes)
{
    /* Powers of two and 1.5 x 2^k: 1, 2, (3), 4, (6), 8, (12), 16; up
     * to 5 the list ends with 5 itself (6 is past it). */
    int n;
    int *s = plan_sizes(16, &n);
    const int want[] = {1, 2, 3, 4, 6, 8, 12, 16};
    ck_assert_int_eq(n, 8);
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(s[i], want[i]);
    free(s);
    s = plan_sizes(5, &n);
    const int want5[] = {1, 2, 3, 4, 5};
    ck_assert_int_eq(n, 5);
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(s[i], want5[i]);
    free(s);
}
END_TEST

START_TEST(test_plan_parse)
{
    double v;
    char *cause = NULL, *topo = NULL;
    enum plan_price_kind kind;
    /* 30 d x 86,400 s; 12 h x 3,600 s; 2 w x 604,800 s. */
    ck_assert_int_eq(plan_parse_duration("--deadline", "30d", &v, &cause),
                     0);
    ck_assert_double_eq_tol(v, 2592000, PARSE_TOL);
    ck_assert_int_eq(plan_parse_duration("--deadline", "12h", &v, &cause),
                     0);
    ck_assert_double_eq_tol(v, 43200, PARSE_TOL);
    ck_assert_int_eq(plan_parse_duration("--deadline", "2w", &v, &cause),
                     0);
    ck_assert_double_eq_tol(v, 1209600, PARSE_TOL);
    /* $2.5M = 2,500,000; 40k = 40,000. */
    ck_assert_int_eq(plan_parse_usd("--budget", "$2.5M", &v, &cause), 0);
    ck_assert_double_eq_tol(v, 2.5e6, PARSE_TOL);
    ck_assert_int_eq(plan_parse_usd("--budget", "40k", &v, &cause), 0);
    ck_assert_double_eq_tol(v, 4e4, PARSE_TOL);
    ck_assert_int_eq(plan_parse_price("dgx-h100=$2.5/gpu-hour", &topo,
                                      &kind, &v, &cause), 0);
    ck_assert_str_eq(topo, "dgx-h100");
    ck_assert_int_eq(kind, PLAN_PRICE_GPU_HOUR);
    ck_assert_double_eq_tol(v, 2.5, PARSE_TOL);
    free(topo);
    ck_assert_int_eq(plan_parse_price("dgx-a100-80g=300k/node", &topo,
                                      &kind, &v, &cause), 0);
    ck_assert_int_eq(kind, PLAN_PRICE_NODE);
    ck_assert_double_eq_tol(v, 3e5, PARSE_TOL);
    free(topo);
}
END_TEST

START_TEST(test_plan_parse_errors)
{
    double v;
    char *cause = NULL, *topo = NULL;
    enum plan_price_kind kind;
    ck_assert_int_eq(plan_parse_duration("--deadline", "30", &v, &cause),
                     -1);
    ck_assert_str_eq(cause, "--deadline: '30' is not a duration (a number "
                     "with s, min, h, d or w: e.g. --deadline 30d)");
    free(cause);
    ck_assert_int_eq(plan_parse_usd("--budget", "lots", &v, &cause), -1);
    ck_assert_str_eq(cause, "--budget: 'lots' is not an amount of dollars "
                     "(write e.g. --budget 2.5M or --budget 40000)");
    free(cause);
    ck_assert_int_eq(plan_parse_price("dgx-h100=2.5", &topo, &kind, &v,
                                      &cause), -1);
    ck_assert_str_eq(cause, "--price dgx-h100=2.5: expected "
                     "TOPOLOGY=$X/gpu-hour (renting) or TOPOLOGY=$Y/node "
                     "(buying), e.g. --price dgx-h100=2.5/gpu-hour");
    free(cause);
}
END_TEST

static char plan_arg0[] = "plan", plan_arg1[] = "--param-dtype=bf16",
            plan_arg2[] = "--model=tiny-llama";
static char *plan_base[] = {plan_arg0, plan_arg1, plan_arg2};

static void
plan_opts_init(struct plan_opts *o, struct plan_gpu *g, double deadline_s)
{
    /* 131,072 tokens per step / 2,048 per sequence = 64 sequences. */
    *g = (struct plan_gpu){.topology = unconst("test-2x4"),
                           .name = unconst("test-2x4"),
                           .gpu_name = unconst("test"), .gpus_per_node = 4};
    *o = (struct plan_opts){.base_argc = 3, .base = plan_base,
                            .tokens = 1e12, .deadline_s = deadline_s,
                            .global_batch_seqs = 64, .seq_len = 2048,
                            .headroom = 0.1, .max_nodes = 32, .jobs = 2,
                            .gpus = g, .n_gpus = 1};
}

START_TEST(test_plan_batch)
{
    /* 64 sequences: on 2 nodes x 4 GPUs each GPU takes 8, as micro-
     * batch x accumulation (1 x 8, 2 x 4 or 4 x 2: 8 x mb x accum = 64
     * exactly); 24 nodes = 96 GPUs is more GPUs than sequences, a batch
     * limit, as is 32. */
    struct plan_opts o;
    struct plan_gpu g;
    plan_opts_init(&o, &g, 0);
    struct plan_result r;
    ck_assert_int_eq(plan_run(&o, &r), 0);
    const struct plan_gpu_result *gr = &r.per_gpu[0];
    ck_assert_int_eq(gr->n_rows, 10);   /* 1 2 3 4 6 8 12 16 24 32 */
    for (int i = 0; i < gr->n_rows; i++) {
        const struct plan_row *w = &gr->rows[i];
        if (w->nodes == 2) {
            ck_assert(w->fits);
            ck_assert_int_eq(w->gpus * w->micro_batch * w->grad_accum, 64);
        }
        ck_assert_int_eq(w->batch_limited, w->gpus > 64);
        if (w->fits)
            ck_assert(w->mfu > 0 && w->mfu < 1);
        /* The batch rule: a row that rounds the 64 sequences up by more
         * than 25% (80 or more) is never eligible. */
        ck_assert_int_eq(w->batch_seqs,
                         w->micro_batch * w->grad_accum * w->gpus);
        ck_assert_int_eq(w->over_batch, w->batch_seqs > 80);
        if (w->eligible)
            ck_assert(w->fits && !w->batch_limited && w->batch_seqs <= 80);
        if (w->meets_deadline)
            ck_assert(w->eligible);
    }
    plan_free(&r);
}
END_TEST

START_TEST(test_plan_deadline)
{
    /* First without a deadline; then with one halfway between the times
     * of 6 and 8 nodes, so the answer lies between two sizes of the grid
     * and is found by bisection: the chosen size meets the deadline and
     * one node fewer does not. */
    struct plan_opts o;
    struct plan_gpu g;
    plan_opts_init(&o, &g, 0);
    struct plan_result r;
    ck_assert_int_eq(plan_run(&o, &r), 0);
    double d6 = -1, d8 = -1;
    for (int i = 0; i < r.per_gpu[0].n_rows; i++) {
        const struct plan_row *w = &r.per_gpu[0].rows[i];
        if (w->nodes == 6)
            d6 = w->days;
        if (w->nodes == 8)
            d8 = w->days;
    }
    plan_free(&r);
    ck_assert(d6 > d8 && d8 > 0);
    double deadline_days = (d6 + d8) / 2;
    plan_opts_init(&o, &g, deadline_days * 86400);
    ck_assert_int_eq(plan_run(&o, &r), 0);
    const struct plan_gpu_result *gr = &r.per_gpu[0];
    ck_assert_int_ge(gr->smallest, 1);
    const struct plan_row *w = &gr->rows[gr->smallest];
    const struct plan_row *p = &gr->rows[gr->smallest - 1];
    ck_assert(w->nodes == 7 || w->nodes == 8);
    ck_assert(w->meets_deadline && w->days <= deadline_days);
    ck_assert_int_eq(p->nodes, w->nodes - 1);
    ck_assert(!p->meets_deadline);
    ck_assert(!p->fits || p->days > deadline_days);
    ck_assert_int_ge(gr->cost_optimal, 0);
    ck_assert(gr->rows[gr->cost_optimal].meets_deadline);
    plan_free(&r);
}
END_TEST

START_TEST(test_plan_goodput_formulas)
{
    /* Young/Daly: sqrt(2 x 50 s x 10,000 s) = sqrt(1e6) = 1000 s. */
    ck_assert_double_eq_tol(plan_young_daly(50, 10000), 1000, 1e-9);
    /* 9025 s of work, a 50 s checkpoint every 1000 s, 450 s restarts, an
     * interruption every 10,000 s: each interval costs 1000 + 50 s
     * (x 1.05), each interruption loses 450 + (1000 + 50) / 2 = 975 s,
     * 9.75% of the MTBF: 9025 x 1.05 / 0.9025 = 10,500 s. */
    ck_assert_double_eq_tol(plan_expected_s(9025, 50, 1000, 450, 10000),
                            10500, 1e-6);
    /* No failures: the work itself. */
    ck_assert_double_eq(plan_expected_s(9025, 50, 1000, 450, INFINITY),
                        9025);
    /* A restart as long as the MTBF: no progress. */
    ck_assert(isinf(plan_expected_s(9025, 50, 1000, 10000, 10000)));
    /* The default: 54 days x 24 h x 16,384 GPUs / 419 interruptions. */
    ck_assert_double_eq_tol(PLAN_DEFAULT_MTBF_GPU_H, 50677.0, 0.01);
}
END_TEST

START_TEST(test_plan_goodput_row)
{
    /* 4 nodes x 4 GPUs, 0.9025 failure-free days.  The state, 2e10
     * bytes, written at 1e8 B/s per node by 4 nodes: 50 s.  One GPU
     * fails every 160,000 s, so the 16 of them every 10,000 s: the
     * interval is 1000 s and, as above, time grows by 1.05 / 0.9025 to
     * 1.05 days; at $2 per GPU-hour 1.05 x 24 x 16 x 2 = $806.40.  On
     * Spot 7.5e-5 preemptions per node per second add 3e-4 per second:
     * an interruption every 1 / 4e-4 = 2500 s, interval sqrt(2 x 50 x
     * 2500) = 500 s, time x 1.1 / (1 - (450 + 275) / 2500) = 1.1 / 0.71,
     * 0.9025 x 1.1 / 0.71 = 1.39824 days, at $1 x 16 GPUs. */
    struct plan_opts o = {.mtbf_gpu_s = 160000, .ckpt_bw_node = 1e8,
                          .restart_s = 450, .preempt_node_s = 7.5e-5};
    struct plan_gpu g = {.price_kind = PLAN_PRICE_GPU_HOUR,
                         .price_usd = 2, .spot_usd = 1};
    struct plan_row w = {.nodes = 4, .gpus = 16, .days = 0.9025,
                         .ckpt_bytes = 2e10};
    plan_goodput(&o, &g, &w);
    ck_assert_double_eq_tol(w.ckpt_s, 50, 1e-9);
    ck_assert_double_eq_tol(w.mtbf_s, 10000, 1e-9);
    ck_assert_double_eq_tol(w.interval_s, 1000, 1e-9);
    ck_assert_double_eq_tol(w.exp_days, 1.05, 1e-12);
    ck_assert_double_eq_tol(w.exp_cost_usd, 806.4, 1e-9);
    ck_assert_double_eq_tol(w.spot_days, 0.9025 * 1.1 / 0.71, 1e-12);
    ck_assert_double_eq_tol(w.spot_days, 1.398239, 1e-6);
    ck_assert_double_eq_tol(w.spot_cost_usd, w.spot_days * 24 * 16, 1e-9);
    /* The failure model off: expected = failure-free. */
    o.mtbf_gpu_s = 0;
    g.spot_usd = 0;
    plan_goodput(&o, &g, &w);
    ck_assert_double_eq(w.exp_days, 0.9025);
    ck_assert(isinf(w.mtbf_s) && isnan(w.spot_days));
}
END_TEST

START_TEST(test_plan_parse_rate)
{
    double v;
    char *cause = NULL;
    /* 20% a month of 730 hours; 0.001 an hour; 2 a day. */
    ck_assert_int_eq(plan_parse_rate("--preemption-rate", "20%/month", &v,
                                     &cause), 0);
    ck_assert_double_eq_tol(v, 0.2 / (730 * 3600), 1e-18);
    ck_assert_int_eq(plan_parse_rate("--preemption-rate", "0.001/h", &v,
                                     &cause), 0);
    ck_assert_double_eq_tol(v, 0.001 / 3600, 1e-18);
    ck_assert_int_eq(plan_parse_rate("--preemption-rate", "2/day", &v,
                                     &cause), 0);
    ck_assert_double_eq_tol(v, 2.0 / 86400, 1e-18);
    ck_assert_int_eq(plan_parse_rate("--preemption-rate", "5/s", &v,
                                     &cause), -1);
    ck_assert_ptr_nonnull(strstr(cause, "is not a rate per node"));
    free(cause);
    ck_assert_int_eq(plan_parse_rate("--preemption-rate", "2/min", &v,
                                     &cause), -1);
    free(cause);
}
END_TEST

START_TEST(test_tune_top_merged)
{
    /* Four settings: 0 and 1 differ only in backward_prefetch with the
     * same result (merged into "PRE or POST"); 2 differs only in the
     * limiter but frees less memory (kept); 3 is slower.  The keys
     * are four significant digits: 2449.9 and 2450.4 tie at 2450. */
    ck_assert_double_eq(tune_rank_key(2449.9), 2450);
    ck_assert_double_eq(tune_rank_key(2450.4), 2450);
    struct tune_setting s = {.sharding = SHARDING_FULL_SHARD, .micro_batch = 1,
                             .grad_accum = 1, .prefetch = BWD_PREFETCH_PRE,
                             .limit_all_gathers = 1};
    struct tune_point pts[4];
    for (int i = 0; i < 4; i++)
        pts[i] = (struct tune_point){s, 1, 1, 2450.4, 1.0, 0.4, 0.30, 0.05};
    pts[1].s.prefetch = BWD_PREFETCH_POST;
    pts[1].tokens_per_s_per_gpu = 2449.9;
    pts[2].s.limit_all_gathers = 0;
    pts[2].mem_free = 0.20;
    pts[3].tokens_per_s_per_gpu = 2000;
    int ranked[] = {0, 1, 2, 3};
    struct tune_result r = {.points = pts, .n_points = 4, .ranked = ranked,
                            .n_ranked = 4};
    struct tune_row rows[4];
    ck_assert_int_eq(tune_top(&r, 4, rows), 3);
    ck_assert_int_eq(rows[0].point, 0);
    ck_assert(rows[0].either_prefetch && !rows[0].either_limit);
    ck_assert_int_eq(rows[1].point, 2);
    ck_assert(!rows[1].either_prefetch && !rows[1].either_limit);
    ck_assert_int_eq(rows[2].point, 3);
    ck_assert_int_eq(tune_top(&r, 1, rows), 1);
}
END_TEST

/* setup_parse_args on the words of LINE (at most 7): its status, *cause
 * as it left it (caller frees). */
static enum setup_status
parse_line(const char *line, char **cause)
{
    char buf[256], *av[8];
    int ac = 0;
    snprintf(buf, sizeof buf, "%s", line);
    for (char *w = strtok(buf, " "); w && ac < 7; w = strtok(NULL, " "))
        av[ac++] = w;
    av[ac] = NULL;
    struct run r;
    *cause = NULL;
    enum setup_status st = setup_parse_args(&r, "test", ac, av, cause);
    setup_free(&r);
    return st;
}

START_TEST(test_setup_status)
{
    /* The four ends of parsing a command line, and the one wording of
     * each shape error (setup_option_error), as every command prints
     * it after "fsdpsim: ". */
    char *cause;
    ck_assert_int_eq(parse_line("simulate --model=toy", &cause), SETUP_OK);
    ck_assert_ptr_null(cause);
    ck_assert_int_eq(parse_line("simulate --help", &cause), SETUP_HELP);
    ck_assert_int_eq(parse_line("simulate --bogus", &cause), SETUP_USAGE);
    ck_assert_str_eq(cause, "unknown option '--bogus'");
    free(cause);
    ck_assert_int_eq(parse_line("simulate --model", &cause), SETUP_USAGE);
    ck_assert_str_eq(cause, "option '--model' needs a value");
    free(cause);
    ck_assert_int_eq(parse_line("simulate x", &cause), SETUP_USAGE);
    ck_assert_str_eq(cause, "unexpected argument 'x'");
    free(cause);
    /* A value out of range is bad input, not a bad command line: no
     * usage lines follow its message. */
    ck_assert_int_eq(parse_line("simulate --nodes 0", &cause),
                     SETUP_BAD_VALUE);
    ck_assert_str_eq(cause, "--nodes: '0' is out of range (allowed 1 to "
                     "100000)");
    free(cause);
    cause = setup_option_error(OPTION_NEEDS_VALUE, "-t");
    ck_assert_str_eq(cause, "option '-t' needs a value");
    free(cause);
}
END_TEST

static Suite *
search_suite(void)
{
    Suite *s = suite_create("search");

    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_tune_thresholds_toy);
    tcase_add_test(tc, test_tune_winner_fits);
    tcase_add_test(tc, test_tune_pytorch_code);
    tcase_add_test(tc, test_plan_sizes);
    tcase_add_test(tc, test_plan_parse);
    tcase_add_test(tc, test_plan_batch);
    tcase_add_test(tc, test_plan_deadline);
    tcase_add_test(tc, test_plan_goodput_formulas);
    tcase_add_test(tc, test_plan_goodput_row);
    tcase_add_test(tc, test_plan_parse_rate);
    tcase_add_test(tc, test_tune_top_merged);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_test(tc, test_plan_parse_errors);
    tcase_add_test(tc, test_setup_status);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return tu_main(search_suite());
}
