/*
 * check_sweep.c: tests for sweep.c: parsing and expanding --vary axes
 * (lists, geometric, arithmetic and log10 ranges, the point limit and
 * every error message), the product's order and the command line of each
 * point, the CSV quoting, and a real sweep of tiny-llama on test-2x4
 * (grad_accum 1,2 x nodes 1,2, and a HYBRID_SHARD point on one node that
 * must become an error row).
 */
#define _POSIX_C_SOURCE 200809L

#include "sweep.h"
#include "xalloc.h"
#include "check_main.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* tokens_per_s is printed to 1e-3 and step_time_s to 1e-9 s: their
 * product over the world size is off by rounding only, far below a
 * token. */
#define TOKENS_TOL 0.01

static struct sweep_axis
axis_ok(const char *arg)
{
    struct sweep_axis ax;
    char *cause = NULL;
    int rc = sweep_axis_parse(arg, &ax, &cause);
    ck_assert_msg(rc == 0, "%s: %s", arg, cause ? cause : "");
    return ax;
}

static void
axis_error(const char *arg, const char *want)
{
    struct sweep_axis ax;
    char *cause = NULL;
    ck_assert_int_eq(sweep_axis_parse(arg, &ax, &cause), -1);
    ck_assert_str_eq(cause, want);
    free(cause);
}

static void
assert_values(const struct sweep_axis *ax, const char *const *want, int n)
{
    ck_assert_int_eq(ax->n_values, n);
    for (int i = 0; i < n; i++)
        ck_assert_str_eq(ax->values[i], want[i]);
}

START_TEST(test_sweep_list)
{
    struct sweep_axis ax = axis_ok("grad_accum=1,2,4,8");
    const char *want[] = {"1", "2", "4", "8"};
    assert_values(&ax, want, 4);
    ck_assert_str_eq(ax.key, "grad_accum");
    ck_assert_str_eq(ax.option, "--grad-accum");
    ck_assert_int_eq(ax.spacing, SWEEP_LIST);
    ck_assert(!sweep_axis_is_log(&ax));
    sweep_axis_free(&ax);

    /* Dashes or underscores name the same key; choices stay as written. */
    ax = axis_ok("sharding-strategy=FULL_SHARD,HYBRID_SHARD");
    const char *want2[] = {"FULL_SHARD", "HYBRID_SHARD"};
    assert_values(&ax, want2, 2);
    ck_assert_str_eq(ax.key, "sharding_strategy");
    ck_assert_str_eq(ax.option, "--sharding-strategy");
    sweep_axis_free(&ax);

    /* NCCL's "allreduce:tree" has a colon but is no range: one value. */
    ax = axis_ok("nccl_algo=allreduce:tree");
    const char *want3[] = {"allreduce:tree"};
    assert_values(&ax, want3, 1);
    sweep_axis_free(&ax);

    /* A topology field: the column is SECTION.KEY, the option --set. */
    ax = axis_ok("set=inter.nic_bandwidth=100Gbps,400Gbps");
    const char *want4[] = {"100Gbps", "400Gbps"};
    assert_values(&ax, want4, 2);
    ck_assert_str_eq(ax.key, "inter.nic_bandwidth");
    ck_assert_str_eq(ax.option, "--set");
    sweep_axis_free(&ax);
}
END_TEST

START_TEST(test_sweep_geometric)
{
    /* 1 * 2^k for k = 0..6: 64 is the last at most 64. */
    struct sweep_axis ax = axis_ok("nodes=1:64:x2");
    const char *want[] = {"1", "2", "4", "8", "16", "32", "64"};
    assert_values(&ax, want, 7);
    ck_assert_int_eq(ax.spacing, SWEEP_GEOMETRIC);
    ck_assert(sweep_axis_is_log(&ax));
    sweep_axis_free(&ax);

    /* Up to 100: 128 > 100 stops after 64, so the same 7 values. */
    ax = axis_ok("nodes=1:100:x2");
    assert_values(&ax, want, 7);
    sweep_axis_free(&ax);

    /* Decimal multiples as counts take them: 1M * 10^k up to 100M. */
    ax = axis_ok("min_num_params=1M:100M:x10");
    const char *want2[] = {"1000000", "10000000", "100000000"};
    assert_values(&ax, want2, 3);
    sweep_axis_free(&ax);
}
END_TEST

START_TEST(test_sweep_arithmetic)
{
    /* 1 + k for k = 0..99: 100 values, the last 100. */
    struct sweep_axis ax = axis_ok("micro_batch=1:100:+1");
    ck_assert_int_eq(ax.n_values, 100);
    ck_assert_str_eq(ax.values[0], "1");
    ck_assert_str_eq(ax.values[99], "100");
    ck_assert_int_eq(ax.spacing, SWEEP_ARITHMETIC);
    ck_assert(!sweep_axis_is_log(&ax));
    sweep_axis_free(&ax);

    /* 512 + 512 k for k = 0..3. */
    ax = axis_ok("seq-len=512:2048:+512");
    const char *want[] = {"512", "1024", "1536", "2048"};
    assert_values(&ax, want, 4);
    sweep_axis_free(&ax);

    /* 1 + 0.1 k for k = 0..3: 1.3 is reached although 0.1 is inexact in
     * binary (1 + 3 * 0.1 = 1.3000000000000003). */
    ax = axis_ok("set=overlap.compute_slowdown=1:1.3:+0.1");
    const char *want2[] = {"1", "1.1", "1.2", "1.3"};
    assert_values(&ax, want2, 4);
    sweep_axis_free(&ax);

    /* 1 + 2 k up to 8: 1, 3, 5, 7 (9 > 8). */
    ax = axis_ok("grad_accum=1:8:+2");
    const char *want3[] = {"1", "3", "5", "7"};
    assert_values(&ax, want3, 4);
    sweep_axis_free(&ax);
}
END_TEST

START_TEST(test_sweep_log10)
{
    /* 10^k for k = 6..9. */
    struct sweep_axis ax = axis_ok("min_num_params=1e6:1e9:log10");
    const char *want[] = {"1000000", "10000000", "100000000", "1000000000"};
    assert_values(&ax, want, 4);
    ck_assert_int_eq(ax.spacing, SWEEP_LOG10);
    ck_assert(sweep_axis_is_log(&ax));
    sweep_axis_free(&ax);

    /* A single power: A = B gives one value. */
    ax = axis_ok("min_num_params=1e8:1e8:log10");
    const char *want2[] = {"100000000"};
    assert_values(&ax, want2, 1);
    sweep_axis_free(&ax);
}
END_TEST

START_TEST(test_sweep_product_order)
{
    struct sweep sw;
    char *cause = NULL;
    sweep_init(&sw);
    ck_assert_int_eq(sweep_add_axis(&sw, "grad_accum=1,2", &cause), 0);
    ck_assert_int_eq(sweep_add_axis(&sw, "nodes=1:4:x2", &cause), 0);
    /* 2 values x 3 values (1, 2, 4). */
    ck_assert_int_eq(sw.n_points, 6);
    /* First axis outermost: point p = 3 * i_grad_accum + i_nodes. */
    static const int want[6][2] = {{0, 0}, {0, 1}, {0, 2},
                                   {1, 0}, {1, 1}, {1, 2}};
    for (int p = 0; p < 6; p++) {
        int idx[2];
        sweep_point_index(&sw, p, idx);
        ck_assert_int_eq(idx[0], want[p][0]);
        ck_assert_int_eq(idx[1], want[p][1]);
    }
    /* Point 4 = (1, 1): grad_accum 2, nodes 2, appended after the base so
     * that they override it. */
    char *base[] = {unconst("sweep"), unconst("--nodes"), unconst("8"),
                    unconst("--model"), unconst("tiny-llama")};
    int argc;
    char **argv = sweep_point_argv(&sw, 5, base, 4, &argc);
    ck_assert_int_eq(argc, 7);
    ck_assert_str_eq(argv[0], "sweep");
    ck_assert_str_eq(argv[2], "8");
    ck_assert_str_eq(argv[5], "--grad-accum=2");
    ck_assert_str_eq(argv[6], "--nodes=2");
    ck_assert_ptr_null(argv[7]);
    sweep_argv_free(&sw, 5, argv);
    sweep_free(&sw);

    /* A topology field becomes --set=SECTION.KEY=VALUE. */
    sweep_init(&sw);
    ck_assert_int_eq(sweep_add_axis(&sw, "set=gpu.bf16=50TFLOPS", &cause),
                     0);
    argv = sweep_point_argv(&sw, 1, base, 0, &argc);
    ck_assert_int_eq(argc, 2);
    ck_assert_str_eq(argv[1], "--set=gpu.bf16=50TFLOPS");
    sweep_argv_free(&sw, 1, argv);
    sweep_free(&sw);
}
END_TEST

START_TEST(test_sweep_csv_quoting)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    sweep_csv_field(f, "plain");
    fputc('|', f);
    sweep_csv_field(f, "a,b");
    fputc('|', f);
    sweep_csv_field(f, "say \"hi\"");
    fputc('|', f);
    sweep_csv_field(f, "two\nlines");
    fclose(f);
    ck_assert_str_eq(text, "plain|\"a,b\"|\"say \"\"hi\"\"\"|\"two\nlines\"");
    free(text);
}
END_TEST

START_TEST(test_sweep_metric_names)
{
    int n;
    char **names = sweep_metric_names(&n);
    /* output_summary_json's keys in its order: "model" first,
     * "mem_margin_bytes" last, the breakdown flattened. */
    ck_assert_int_gt(n, 10);
    ck_assert_str_eq(names[0], "model");
    ck_assert_str_eq(names[n - 1], "mem_margin_bytes");
    int found = 0;
    for (int i = 0; i < n; i++)
        found += strcmp(names[i], "mem_breakdown.activations") == 0
                 || strcmp(names[i], "step_time_s") == 0
                 || strcmp(names[i], "fits") == 0;
    ck_assert_int_eq(found, 3);
    sweep_names_free(names, n);
}
END_TEST

/* ---- a real sweep ---- */

static int
column(char **names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    ck_abort_msg("no column %s", name);
    return -1;
}

static double
cell(const struct sweep_result *r, int col)
{
    return strtod(r->values[col], NULL);
}

START_TEST(test_sweep_tiny_llama)
{
    struct sweep sw;
    char *cause = NULL;
    sweep_init(&sw);
    ck_assert_int_eq(sweep_add_axis(&sw, "grad_accum=1,2", &cause), 0);
    ck_assert_int_eq(sweep_add_axis(&sw, "nodes=1,2", &cause), 0);
    /* 2 x 2 points. */
    ck_assert_int_eq(sw.n_points, 4);
    char *base[] = {unconst("sweep"), unconst("--model"),
                    unconst("tiny-llama"), unconst("--topology"),
                    unconst("test-2x4")};
    int n;
    char **names = sweep_metric_names(&n);
    int c_ga = column(names, n, "grad_accum");
    int c_nodes = column(names, n, "nodes");
    int c_world = column(names, n, "world_size");
    int c_mb = column(names, n, "micro_batch");
    int c_seq = column(names, n, "seq_len");
    int c_tps = column(names, n, "tokens_per_s");
    int c_step = column(names, n, "step_time_s");
    struct sweep_result res[4];
    double per_gpu[4];
    for (int p = 0; p < 4; p++) {
        sweep_point_run(&sw, 5, base, p, NULL, &res[p]);
        ck_assert_msg(res[p].ok, "point %d: %s", p, res[p].message);
        ck_assert_int_eq(res[p].n_values, n);
    }
    for (int p = 0; p < 4; p++) {
        /* Product order: point p has grad_accum 1 + p / 2 and nodes
         * 1 + p % 2, as the run itself reports them; test-2x4 has 4 GPUs
         * per node, so the world is 4 * nodes. */
        int ga = 1 + p / 2, nodes = 1 + p % 2;
        ck_assert_int_eq((int)cell(&res[p], c_ga), ga);
        ck_assert_int_eq((int)cell(&res[p], c_nodes), nodes);
        ck_assert_int_eq((int)cell(&res[p], c_world), 4 * nodes);
        /* Tokens per GPU per step = micro_batch * seq_len * grad_accum
         * = 1 * 2048 * ga. */
        ck_assert_int_eq((int)(cell(&res[p], c_mb) * cell(&res[p], c_seq)
                               * cell(&res[p], c_ga)), 2048 * ga);
        /* The simulator's own count: tokens_per_s = world * tokens per
         * GPU / step time, so tokens_per_s * step_time_s / world gives
         * 2048 * ga back. */
        per_gpu[p] = cell(&res[p], c_tps) * cell(&res[p], c_step)
                     / cell(&res[p], c_world);
        ck_assert_double_eq_tol(per_gpu[p], 2048.0 * ga, TOKENS_TOL);
    }
    /* grad_accum 2 doubles the tokens per GPU of grad_accum 1 on the same
     * nodes: points 2 and 0 (1 node), 3 and 1 (2 nodes); each is within
     * TOKENS_TOL of its value, so twice the first within 3 TOKENS_TOL. */
    for (int q = 0; q < 2; q++)
        ck_assert_double_eq_tol(per_gpu[q + 2], 2 * per_gpu[q],
                                3 * TOKENS_TOL);

    /* The rows: varied values (named vary.KEY in the header), ok, an
     * empty message, then the metrics;
     * 2 + 2 + n fields, so 2 + 1 + n commas (no field needs quoting). */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    sweep_csv_header(&sw, names, n, f);
    for (int p = 0; p < 4; p++)
        sweep_csv_row(&sw, p, &res[p], n, f);
    fclose(f);
    ck_assert(strncmp(text, "vary.grad_accum,vary.nodes,status,message,model,", 48)
              == 0);
    const char *line = strstr(text, "\r\n") + 2;
    ck_assert(strncmp(line, "1,1,ok,,tiny-llama,", 19) == 0);
    int rows = 0;
    for (const char *p = text; (p = strstr(p, "\r\n")) != NULL; p += 2)
        rows++;
    /* A header and 4 rows. */
    ck_assert_int_eq(rows, 5);
    int commas = 0;
    for (const char *p = line; *p != '\r'; p++)
        commas += *p == ',';
    ck_assert_int_eq(commas, 3 + n);
    free(text);
    for (int p = 0; p < 4; p++)
        sweep_result_free(&res[p]);
    sweep_names_free(names, n);
    sweep_free(&sw);
}
END_TEST

START_TEST(test_sweep_invalid_point_is_a_row)
{
    struct sweep sw;
    char *cause = NULL;
    sweep_init(&sw);
    ck_assert_int_eq(sweep_add_axis(&sw, "nodes=1,2", &cause), 0);
    char *base[] = {unconst("sweep"), unconst("--model"),
                    unconst("tiny-llama"), unconst("--topology"),
                    unconst("test-2x4"), unconst("--sharding-strategy"),
                    unconst("HYBRID_SHARD")};
    int n;
    char **names = sweep_metric_names(&n);
    struct sweep_result bad, good;
    /* HYBRID_SHARD on 1 node has no replicate group: an error row. */
    sweep_point_run(&sw, 7, base, 0, NULL, &bad);
    ck_assert(!bad.ok);
    ck_assert_int_eq(bad.n_values, 0);
    ck_assert_str_eq(bad.message,
                     "--sharding-strategy HYBRID_SHARD: hybrid sharding "
                     "shards within a node and replicates across nodes, "
                     "and 1 node leaves no replicate group (use "
                     "FULL_SHARD, which is the same on one node, or "
                     "--nodes 2 or more)");
    /* On 2 nodes it runs. */
    sweep_point_run(&sw, 7, base, 1, NULL, &good);
    ck_assert(good.ok);

    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    sweep_csv_row(&sw, 0, &bad, n, f);
    fclose(f);
    /* The varied value, "error", the message quoted (it holds commas),
     * then n empty metric fields: n commas after the message. */
    char *want_head = NULL;
    size_t want_len = 0;
    f = open_memstream(&want_head, &want_len);
    fputs("1,error,\"", f);
    fputs(bad.message, f);
    fputs("\"", f);
    for (int i = 0; i < n; i++)
        fputc(',', f);
    fputs("\r\n", f);
    fclose(f);
    ck_assert_str_eq(text, want_head);
    free(text);
    free(want_head);
    sweep_result_free(&bad);
    sweep_result_free(&good);
    sweep_names_free(names, n);
    sweep_free(&sw);
}
END_TEST

/* ---- limits ---- */

START_TEST(test_sweep_point_limit)
{
    struct sweep sw;
    char *cause = NULL;
    sweep_init(&sw);
    /* 1000 x 1000 = 1,000,000 = SWEEP_MAX_POINTS: allowed. */
    ck_assert_int_eq(sweep_add_axis(&sw, "micro_batch=1:1000:+1", &cause),
                     0);
    ck_assert_int_eq(sweep_add_axis(&sw, "grad_accum=1:1000:+1", &cause),
                     0);
    ck_assert_int_eq(sw.n_points, SWEEP_MAX_POINTS);
    /* The last point is (999, 999): both at 1000. */
    int argc;
    char *base[] = {unconst("sweep")};
    char **argv = sweep_point_argv(&sw, 1, base, SWEEP_MAX_POINTS - 1,
                                   &argc);
    ck_assert_str_eq(argv[1], "--micro-batch=1000");
    ck_assert_str_eq(argv[2], "--grad-accum=1000");
    sweep_argv_free(&sw, 1, argv);
    /* One more axis of 2 doubles it past the limit. */
    ck_assert_int_eq(sweep_add_axis(&sw, "seq_len=1024,2048", &cause), -1);
    ck_assert_str_eq(cause, "--vary seq_len=1024,2048: 1000 x 1000 x 2 = "
                     "2000000 points, more than the 1000000 a sweep may "
                     "have (narrow a range or take a coarser step)");
    free(cause);
    ck_assert_int_eq(sw.n_axes, 2);
    sweep_free(&sw);

    /* One axis alone: (2e6 - 1) / 1 + 1 = 2,000,000 values, refused
     * before any is made. */
    axis_error("micro_batch=1:2e6:+1",
               "--vary micro_batch=1:2e6:+1: 2000000 values, more than the "
               "1000000 points a sweep may have (narrow the range or take a "
               "coarser step)");
    /* A factor barely above 1: floor(ln 1e6 / ln 1.000001) + 1 =
     * floor(13.8155106 / 9.999995e-7) + 1 = 13815517 + 1 values. */
    axis_error("nodes=1:1e6:x1.000001",
               "--vary nodes=1:1e6:x1.000001: 13815518 values, more than "
               "the 1000000 points a sweep may have (narrow the range or "
               "take a coarser step)");
}
END_TEST

/* ---- errors ---- */

START_TEST(test_sweep_errors)
{
    axis_error("grad_accum", "--vary grad_accum: expected KEY=SPEC, e.g. "
               "--vary grad_accum=1,2,4 or --vary nodes=1:64:x2");
    axis_error("=1,2", "--vary =1,2: expected KEY=SPEC, e.g. --vary "
               "grad_accum=1,2,4 or --vary nodes=1:64:x2");
    axis_error("foo=1,2", "--vary foo=1,2: unknown key 'foo' (any simulate "
               "option, e.g. grad_accum, nodes, sharding_strategy, or "
               "set=SECTION.KEY for a topology field)");
    axis_error("trace=a.json", "--vary trace=a.json: 'trace' is an output "
               "option, not a setting (a sweep writes one CSV row per "
               "point)");
    axis_error("nodes=", "--vary nodes=: no values (give a list such as "
               "1,2,4 or a range such as 1:64:x2)");
    axis_error("nodes=1,,2", "--vary nodes=1,,2: empty value in the list "
               "(write values separated by single commas, e.g. 1,2,4)");
    axis_error("nodes=1,2,", "--vary nodes=1,2,: empty value in the list "
               "(write values separated by single commas, e.g. 1,2,4)");
    axis_error("nodes=1:8", "--vary nodes=1:8: a range is A:B:xF "
               "(geometric), A:B:+S (arithmetic) or A:B:log10");
    axis_error("nodes=1:8:x2:4", "--vary nodes=1:8:x2:4: a range is A:B:xF "
               "(geometric), A:B:+S (arithmetic) or A:B:log10");
    axis_error("nodes=1:eight:x2", "--vary nodes=1:eight:x2: 'eight' is not "
               "a number");
    axis_error("nodes=8:1:x2", "--vary nodes=8:1:x2: the range is empty "
               "(its start 8 is greater than its end 1)");
    axis_error("nodes=1:8:x1", "--vary nodes=1:8:x1: the factor '1' must "
               "be a number greater than 1");
    axis_error("nodes=1:8:xtwo", "--vary nodes=1:8:xtwo: the factor 'two' "
               "must be a number greater than 1");
    axis_error("nodes=0:8:x2", "--vary nodes=0:8:x2: a geometric range "
               "must start above 0");
    axis_error("nodes=1:8:+0", "--vary nodes=1:8:+0: the step '0' must be "
               "a number greater than 0");
    axis_error("nodes=1:8:+-1", "--vary nodes=1:8:+-1: the step '-1' must "
               "be a number greater than 0");
    axis_error("nodes=1:8:y2", "--vary nodes=1:8:y2: unknown step 'y2' (use "
               "xF for a geometric range, +S for an arithmetic one, or "
               "log10)");
    axis_error("min_num_params=3e6:1e9:log10", "--vary "
               "min_num_params=3e6:1e9:log10: log10 takes powers of ten as "
               "its bounds (1e6, 1e7, ...), and 3e6 is not one");
    axis_error("min_num_params=0:1e9:log10", "--vary "
               "min_num_params=0:1e9:log10: log10 takes powers of ten as "
               "its bounds (1e6, 1e7, ...), and 0 is not one");
    axis_error("set=gpu=1,2", "--vary set=gpu=1,2: expected "
               "set=SECTION.KEY=SPEC, e.g. "
               "set=inter.nic_bandwidth=100Gbps,400Gbps");

    struct sweep sw;
    char *cause = NULL;
    sweep_init(&sw);
    ck_assert_int_eq(sweep_add_axis(&sw, "grad_accum=1,2", &cause), 0);
    ck_assert_int_eq(sweep_add_axis(&sw, "grad-accum=4", &cause), -1);
    ck_assert_str_eq(cause, "--vary grad-accum=4: 'grad_accum' is already "
                     "varied (give all its values in one --vary)");
    free(cause);
    sweep_free(&sw);
}
END_TEST

START_TEST(test_sweep_shard_merge)
{
    /* Two shards of a 3-point sweep (0/2 holds points 0 and 2, 1/2 point
     * 1), given in either order; a message cell with a quoted CRLF and
     * comma stays one row.  The whole sweep's CSV is the header and rows
     * without the point,n_points columns, in point order. */
    int64_t k, n;
    char *cause = NULL;
    ck_assert_int_eq(sweep_parse_shard("3/4", &k, &n, &cause), 0);
    ck_assert(k == 3 && n == 4);
    ck_assert_int_eq(sweep_parse_shard("4/4", &k, &n, &cause), -1);
    free(cause);
    ck_assert_int_eq(sweep_parse_shard("1/0", &k, &n, &cause), -1);
    free(cause);
    ck_assert_int_eq(sweep_parse_shard("-1/4", &k, &n, &cause), -1);
    free(cause);
    const char *a = "point,n_points,x,status,message\r\n"
                    "0,3,1,ok,\r\n"
                    "2,3,4,error,\"bad,\r\nvalue\"\r\n";
    const char *b = "point,n_points,x,status,message\r\n"
                    "1,3,2,ok,\r\n";
    const char *want = "x,status,message\r\n"
                       "1,ok,\r\n"
                       "2,ok,\r\n"
                       "4,error,\"bad,\r\nvalue\"\r\n";
    const char *texts[] = {b, a};
    size_t lens[] = {strlen(b), strlen(a)};
    const char *names[] = {"b.csv", "a.csv"};
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    ck_assert_int_eq(sweep_merge(texts, lens, names, 2, mem, &cause), 0);
    fclose(mem);
    ck_assert_str_eq(buf, want);
    free(buf);
    /* Point 1 missing; point 0 twice. */
    mem = open_memstream(&buf, &len);
    ck_assert_int_eq(sweep_merge(&texts[1], &lens[1], &names[1], 1, mem,
                                 &cause), -1);
    ck_assert_str_eq(cause, "1 of 3 points are in none of the files, the "
                     "first point 1 (a shard missing or cut short: rerun "
                     "it)");
    free(cause);
    const char *twice[] = {a, a};
    size_t twice_lens[] = {strlen(a), strlen(a)};
    const char *twice_names[] = {"a.csv", "a2.csv"};
    ck_assert_int_eq(sweep_merge(twice, twice_lens, twice_names, 2, mem,
                                 &cause), -1);
    ck_assert_str_eq(cause, "point 0 is in both a.csv and a2.csv (a shard "
                     "given twice, or shards of different --shard N)");
    free(cause);
    /* Different columns: different sweeps. */
    const char *c = "point,n_points,y,status,message\r\n1,3,2,ok,\r\n";
    const char *mixed[] = {a, c};
    size_t mixed_lens[] = {strlen(a), strlen(c)};
    const char *mixed_names[] = {"a.csv", "c.csv"};
    ck_assert_int_eq(sweep_merge(mixed, mixed_lens, mixed_names, 2, mem,
                                 &cause), -1);
    ck_assert_ptr_nonnull(strstr(cause, "different sweeps"));
    free(cause);
    fclose(mem);
    ck_assert_uint_eq(len, 0);  /* nothing written on an error */
    free(buf);
}
END_TEST

START_TEST(test_sweep_jsonl)
{
    /* A row of JSON lines: the varied values in "vary" (numbers bare,
     * names quoted), then results typed by is_string; an error row has
     * status, message and no results. */
    struct sweep sw;
    sweep_init(&sw);
    char *cause = NULL;
    ck_assert_int_eq(sweep_add_axis(&sw, "nodes=1,2", &cause), 0);
    ck_assert_int_eq(sweep_add_axis(&sw, "sharding_strategy=FULL_SHARD",
                                    &cause), 0);
    char *names[] = {unconst("model"), unconst("step_time_s"),
                     unconst("fits"), unconst("n")};
    char *values[] = {unconst("1"), unconst("0.5"), unconst("true"),
                      unconst("1e3")};
    const unsigned char is_string[] = {1, 0, 0, 0};
    struct sweep_result ok = {.ok = 1, .values = values, .n_values = 4};
    struct sweep_result bad = {.ok = 0,
                               .message = unconst("no \"such\" size")};
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    sweep_jsonl_row(&sw, 1, &ok, names, is_string, 4, mem);
    sweep_jsonl_row(&sw, 0, &bad, names, is_string, 4, mem);
    fclose(mem);
    ck_assert_str_eq(buf,
        "{\"vary\":{\"nodes\":2,\"sharding_strategy\":\"FULL_SHARD\"},"
        "\"status\":\"ok\",\"message\":\"\",\"model\":\"1\","
        "\"step_time_s\":0.5,\"fits\":true,\"n\":1e3}\n"
        "{\"vary\":{\"nodes\":1,\"sharding_strategy\":\"FULL_SHARD\"},"
        "\"status\":\"error\",\"message\":\"no \\\"such\\\" size\"}\n");
    free(buf);
    sweep_free(&sw);
    /* Shards of JSON lines merge like CSV ones; an empty file is an
     * empty shard. */
    const char *a = "{\"point\":1,\"n_points\":2,\"x\":2}\n";
    const char *b = "{\"point\":0,\"n_points\":2,\"x\":1}\n";
    const char *texts[] = {a, "", b};
    size_t lens[] = {strlen(a), 0, strlen(b)};
    const char *fnames[] = {"a", "empty", "b"};
    mem = open_memstream(&buf, &len);
    ck_assert_int_eq(sweep_merge(texts, lens, fnames, 3, mem, &cause), 0);
    fclose(mem);
    ck_assert_str_eq(buf, "{\"x\":1}\n{\"x\":2}\n");
    free(buf);
}
END_TEST

static Suite *
sweep_suite(void)
{
    Suite *s = suite_create("sweep");

    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_sweep_list);
    tcase_add_test(tc, test_sweep_geometric);
    tcase_add_test(tc, test_sweep_arithmetic);
    tcase_add_test(tc, test_sweep_log10);
    tcase_add_test(tc, test_sweep_product_order);
    tcase_add_test(tc, test_sweep_csv_quoting);
    tcase_add_test(tc, test_sweep_metric_names);
    tcase_add_test(tc, test_sweep_tiny_llama);
    tcase_add_test(tc, test_sweep_invalid_point_is_a_row);
    tcase_add_test(tc, test_sweep_shard_merge);
    tcase_add_test(tc, test_sweep_jsonl);
    suite_add_tcase(s, tc);

    tc = tcase_create("limits");
    tcase_add_test(tc, test_sweep_point_limit);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_test(tc, test_sweep_errors);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return tu_main(sweep_suite());
}
