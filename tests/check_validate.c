/*
 * check_validate.c: tests for `fsdpsim validate --runs` (validate_runs.c
 * and published.c's fsdp_e2e reader): a row's settings mapped to
 * simulate's arguments, the errors and their statistics, bad input.
 *
 * tests/data/published-runs.csv holds three runs written for these
 * tests: T-A1 with the settings of S05's Llama-2-7B A100 run (P0031-2),
 * T-F2 an FSDP2 run (settings of S07's P0103-4) and T-MI the T-A1
 * settings on a GPU with no built-in topology.
 */
#define _POSIX_C_SOURCE 200809L

#include "model.h"
#include "model_cache.h"
#include "published.h"
#include "textfile.h"
#include "validate_runs.h"
#include "xalloc.h"

#include "testutil.h"
#include "check_main.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct published_e2e *
load(const char *name, int *n)
{
    const char *path = tu_data_path(name);
    enum textfile_error e;
    char *text = textfile_read(path, 1 << 20, 0, &e);
    ck_assert_ptr_nonnull(text);
    struct published_e2e *v = NULL;
    char *cause = NULL;
    ck_assert_msg(published_parse_e2e(name, text, &v, n, &cause) == 0,
                  "%s", cause ? cause : "");
    free(text);
    return v;
}

/* Whether A holds FLAG VALUE. */
static int
has_arg(const struct vrun_args *a, const char *flag, const char *value)
{
    for (int i = 0; i < a->n; i++)
        if (strcmp(a->arg[i].flag, flag) == 0
            && (value == NULL ? a->arg[i].value == NULL
                              : a->arg[i].value
                                && strcmp(a->arg[i].value, value) == 0))
            return 1;
    return 0;
}

START_TEST(test_parse)
{
    int n;
    struct published_e2e *v = load("published-runs.csv", &n);
    ck_assert_int_eq(n, 3);
    ck_assert_str_eq(v[0].id, "T-A1");
    ck_assert_int_eq(v[0].line, 2);
    ck_assert_int_eq(v[0].n_layers, 32);
    ck_assert_int_eq(v[0].nodes, 16);
    ck_assert_double_eq(v[0].tokens_per_s_per_gpu, 3700);
    ck_assert_double_eq_tol(v[0].mfu, 0.57, 1e-12);
    ck_assert_double_eq(v[0].hfu, -1);      /* not in the file */
    ck_assert_int_eq(v[0].mfu_line, 3);
    ck_assert_str_eq(v[1].id, "T-F2");
    ck_assert_int_eq(v[1].grad_accum, -1);  /* left empty */
    ck_assert_double_eq_tol(v[1].peak_reserved_bytes, 82.4 * 1073741824.0,
                            1);
    ck_assert_str_eq(v[2].gpu, "MI300X 192GB");
    published_e2e_free(v, n);
}
END_TEST

START_TEST(test_map)
{
    int n;
    struct published_e2e *v = load("published-runs.csv", &n);
    struct vrun_args a;
    char *why = NULL;
    ck_assert_int_eq(vrun_map(&v[0], &a, &why), 0);
    /* 32 layers, 4096 wide, 32 heads and KV heads, FFN 11008, vocabulary
     * 32000: the built-in llama2-7b. */
    ck_assert_str_eq(a.model, "llama2-7b");
    ck_assert(a.model_builtin);
    ck_assert_ptr_null(a.model_ini);
    ck_assert_str_eq(a.topology, "dgx-a100-80g");
    ck_assert(has_arg(&a, "--model", "llama2-7b"));
    ck_assert(has_arg(&a, "--nodes", "16"));
    ck_assert(has_arg(&a, "--gpus-per-node", "8"));
    /* 400 Gbps a node over its 8 NICs. */
    ck_assert(has_arg(&a, "--set", "inter.nics_per_node=8"));
    ck_assert(has_arg(&a, "--set", "inter.nic_bandwidth=50Gbps"));
    ck_assert(has_arg(&a, "--sharding-strategy", "HYBRID_SHARD"));
    ck_assert(has_arg(&a, "--limit-all-gathers", "True"));
    ck_assert(has_arg(&a, "--param-dtype", "bf16"));
    ck_assert(has_arg(&a, "--reduce-dtype", "bf16"));
    ck_assert(has_arg(&a, "--activation-checkpointing", "none"));
    ck_assert(has_arg(&a, "--attention", "flash2"));
    ck_assert(!has_arg(&a, "--compile", "true"));   /* torch_compile no */
    ck_assert(has_arg(&a, "--seq-len", "4096"));
    ck_assert(has_arg(&a, "--micro-batch", "2"));
    ck_assert(has_arg(&a, "--grad-accum", "1"));
    vrun_args_free(&a);

    /* The same run with torch.compile and selective checkpointing: an
     * fms-fsdp (S05) row leaves the fraction unpublished, so it is
     * bracketed, simulated first with every block checkpointed; the
     * loop's facts come with it (clip 1.0, .item() each step, and
     * use_orig_params under compile: main_training.py). */
    struct published_e2e c = v[0];
    c.compile = unconst("yes");
    c.ac = unconst("selective (checkpoint every n-th block)");
    ck_assert_int_eq(vrun_map(&c, &a, &why), 0);
    ck_assert(has_arg(&a, "--compile", "true"));
    ck_assert(has_arg(&a, "--activation-checkpointing", "full"));
    ck_assert(a.ac_bracket);
    ck_assert(has_arg(&a, "--clip-grad-norm", "1.0"));
    ck_assert(has_arg(&a, "--loss-item", "true"));
    ck_assert(has_arg(&a, "--use-orig-params", "true"));
    vrun_args_free(&a);
    /* Another source's "selective" goes to simulate as written, to be
     * refused there. */
    c.source = unconst("S99");
    ck_assert_int_eq(vrun_map(&c, &a, &why), 0);
    ck_assert(has_arg(&a, "--activation-checkpointing", "selective"));
    ck_assert(!a.ac_bracket);
    ck_assert(!has_arg(&a, "--clip-grad-norm", "1.0"));
    vrun_args_free(&a);

    /* torchtitan's FSDP2 row gives no grad_accum: without a global batch
     * it cannot be run; with torchtitan's 131072 tokens on 8 GPUs of
     * 2 x 8192 it is 1.  FSDP2 maps to --fsdp-version 2 and no sharding
     * strategy, "selective (op)" to selective-op, the 96 GB H100 to its
     * own node. */
    ck_assert_int_eq(vrun_map(&v[1], &a, &why), 1);
    ck_assert_ptr_nonnull(strstr(why, "grad_accum"));
    free(why);
    struct published_e2e f = v[1];
    f.global_batch_tokens = 131072;
    ck_assert_int_eq(vrun_map(&f, &a, &why), 0);
    ck_assert_str_eq(a.topology, "teton-h100-96g");
    ck_assert(has_arg(&a, "--model", "llama3-8b"));
    ck_assert(has_arg(&a, "--fsdp-version", "2"));
    ck_assert(!has_arg(&a, "--sharding-strategy", "FULL_SHARD"));
    ck_assert(has_arg(&a, "--activation-checkpointing", "selective-op"));
    ck_assert(has_arg(&a, "--reduce-dtype", "fp32"));
    ck_assert(has_arg(&a, "--grad-accum", "1"));
    vrun_args_free(&a);
    ck_assert_int_eq(vrun_map(&v[2], &a, &why), 1);
    ck_assert_str_eq(why, "no built-in topology for GPU 'MI300X 192GB'");
    free(why);
    published_e2e_free(v, n);
}
END_TEST

/* Llama-2-34B has no built-in: the model comes from the columns.  48
 * layers of q, o (8192 x 8192), k, v (8192 x 1024), three 8192 x 22016
 * MLP matrices and two norms (692.1 M), 2 x 32000 x 8192 embeddings and
 * head (524.3 M) and the final norm: 33.744 G parameters. */
START_TEST(test_generated_model)
{
    int n;
    struct published_e2e *v = load("published-runs.csv", &n);
    struct published_e2e r = v[0];
    r.model = unconst("Llama-2-34B");
    r.n_layers = 48;
    r.hidden = 8192;
    r.n_heads = 64;
    r.n_kv_heads = 8;
    r.ffn_hidden = 22016;
    struct vrun_args a;
    char *why = NULL;
    ck_assert_int_eq(vrun_map(&r, &a, &why), 0);
    ck_assert(!a.model_builtin);
    ck_assert_str_eq(a.model, "llama-2-34b");
    struct model *m = model_parse_ini(a.model_ini, "test", &why);
    ck_assert_msg(m != NULL, "%s", why ? why : "");
    double want = 48.0 * (2 * 8192.0 * 8192 + 2 * 8192.0 * 1024
                          + 3 * 8192.0 * 22016 + 2 * 8192)
                  + 2 * 32000.0 * 8192 + 8192;
    ck_assert_double_eq_tol((double)m->n_params, want, 1);
    model_free(m);
    vrun_args_free(&a);
    published_e2e_free(v, n);
}
END_TEST

START_TEST(test_errors)
{
    /* (4070 - 3700) / 3700 = 370 / 3700 = +10 %. */
    ck_assert_double_eq_tol(vrun_error(4070, 3700), 10.0, 1e-9);
    ck_assert_double_eq_tol(vrun_error(333, 370), -10.0, 1e-9);
    /* |+10|, |-20|, |+30|: mean 20, median 20; signed mean 20/3. */
    double e[] = {10, -20, 30, -40};
    struct vrun_stats st;
    vrun_stats(e, 3, &st);
    ck_assert_int_eq(st.n, 3);
    ck_assert_double_eq_tol(st.mape, 20, 1e-9);
    ck_assert_double_eq_tol(st.median_abs, 20, 1e-9);
    ck_assert_double_eq_tol(st.bias, 20.0 / 3, 1e-9);
    ck_assert_double_eq(st.min, -20);
    ck_assert_double_eq(st.max, 30);
    /* Four: |e| sorted 10, 20, 30, 40, median (20 + 30) / 2 = 25. */
    vrun_stats(e, 4, &st);
    ck_assert_double_eq_tol(st.median_abs, 25, 1e-9);
    ck_assert_double_eq_tol(st.mape, 25, 1e-9);
    vrun_stats(e, 0, &st);
    ck_assert_int_eq(st.n, 0);
}
END_TEST

/* T-A1 simulated through simulate's path, then given a known prediction:
 * the table shows 3700 against 4070, +10.0 %, and the statistics 10.0. */
START_TEST(test_predict_and_table)
{
    int n;
    struct published_e2e *v = load("published-runs.csv", &n);
    struct model_cache *mc = model_cache_new();
    struct vrun r[3];
    memset(r, 0, sizeof r);
    for (int i = 0; i < 3; i++) {
        r[i].row = &v[i];
        vrun_predict(&r[i], mc);
    }
    ck_assert_msg(r[0].not_modelled == NULL, "%s", r[0].not_modelled);
    ck_assert(r[0].tokens > 0 && r[0].mfu > 0 && r[0].peak_reserved > 0);
    ck_assert_ptr_nonnull(strstr(r[0].command, "--model llama2-7b"));
    ck_assert_ptr_nonnull(r[1].not_modelled);
    ck_assert_ptr_nonnull(r[2].not_modelled);
    r[0].tokens = 4070;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct vrun_stats st;
    vrun_print_text(r, 3, "runs.csv", f, &st);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, " T-A1 "));
    ck_assert_ptr_nonnull(strstr(buf, "   3700    4070  +10.0"));
    ck_assert_ptr_nonnull(strstr(buf, "# not modelled: T-F2"));
    ck_assert_int_eq(st.n, 1);
    ck_assert_double_eq_tol(st.mape, 10, 1e-9);
    free(buf);
    for (int i = 0; i < 3; i++)
        vrun_free(&r[i]);
    model_cache_free(mc);
    published_e2e_free(v, n);
}
END_TEST

/* T-A1 with unpublished selective checkpointing: the range runs from
 * every block checkpointed (slowest) to the fewest that fit (fastest).
 * Given a known range 1600..2000, a measured 3700 lies above it: the
 * error is against the fast end, (2000 - 3700) / 3700 = -45.9 %, and the
 * run is left out of the scored statistics. */
START_TEST(test_bracket)
{
    int n;
    struct published_e2e *v = load("published-runs.csv", &n);
    struct model_cache *mc = model_cache_new();
    struct published_e2e c = v[0];
    c.ac = unconst("selective (checkpoint every n-th block)");
    struct vrun r;
    memset(&r, 0, sizeof r);
    r.row = &c;
    vrun_predict(&r, mc);
    ck_assert_msg(r.not_modelled == NULL, "%s", r.not_modelled);
    ck_assert(r.fits);
    ck_assert(r.tokens > 0 && r.tokens_fast >= r.tokens);
    ck_assert(r.fast_frequency >= 0 && r.fast_frequency <= 32);
    r.tokens = 1600;
    r.tokens_fast = 2000;
    r.fast_frequency = 4;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct vrun_stats st;
    vrun_print_text(&r, 1, "runs.csv", f, &st);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "   3700    1600    2000 4         -45.9"));
    ck_assert_ptr_nonnull(strstr(buf, "0 inside the range, 0 slower than "
                                      "its slowest end, 1 faster"));
    ck_assert_int_eq(st.n, 0);
    free(buf);
    vrun_free(&r);
    model_cache_free(mc);
    published_e2e_free(v, n);
}
END_TEST

static void
expect_error(const char *text, const char *want)
{
    struct published_e2e *v = NULL;
    int n = 0;
    char *cause = NULL;
    ck_assert_int_eq(published_parse_e2e("x.csv", text, &v, &n, &cause),
                     -1);
    ck_assert_msg(strstr(cause, want) != NULL, "'%s' lacks '%s'", cause,
                  want);
    ck_assert_ptr_null(v);
    free(cause);
}

START_TEST(test_bad_input)
{
    int n;
    struct published_e2e *v = load("published-runs.csv", &n);
    published_e2e_free(v, n);
    enum textfile_error e;
    char *text = textfile_read(tu_data_path("published-runs.csv"), 1 << 20,
                               0, &e);
    /* The header without grad_accum. */
    char *t = xstrdup(text);
    char *p = strstr(t, ",grad_accum");
    memmove(p, p + 11, strlen(p + 11) + 1);
    expect_error(t, "x.csv:1: no 'grad_accum' column");
    free(t);
    /* Line 2's n_layers (its first "32,") not a number. */
    t = xstrdup(text);
    p = strstr(strchr(t, '\n'), ",32,");
    memcpy(p, ",3x,", 4);
    expect_error(t, "x.csv:2: n_layers '3x' is not a positive whole number");
    free(t);
    /* Line 3's mfu not a number. */
    t = xstrdup(text);
    p = strstr(t, ",0.57,");
    memcpy(p, ",0.5x,", 6);
    expect_error(t, "x.csv:3: mfu value '0.5x' is not a positive number");
    free(t);
    free(text);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("validate");
    TCase *tc = tcase_create("runs");
    tcase_add_test(tc, test_parse);
    tcase_add_test(tc, test_map);
    tcase_add_test(tc, test_generated_model);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_predict_and_table);
    tcase_add_test(tc, test_bracket);
    tcase_add_test(tc, test_bad_input);
    suite_add_tcase(s, tc);
    return tu_main(s);
}
