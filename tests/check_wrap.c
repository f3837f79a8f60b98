/*
 * check_wrap.c: FSDP unit formation and FlatParameter sizing against
 * PyTorch's rules (doc/fsdp-semantics.md §1.2-1.7).
 */
#include "runconf.h"
#include "model.h"
#include "wrap.h"
#include "check_main.h"

#include <check.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

static struct model *
load(const char *name)
{
    char *cause = NULL;
    char *path = NULL;
    struct model *m;
    if (name[0] == '@') {
        path = malloc(1024);
        snprintf(path, 1024, "%s/tests/data/%s", SRCDIR, name + 1);
        m = model_load(path, &cause);
        free(path);
    } else {
        m = model_load(name, &cause);
    }
    ck_assert_msg(m != NULL, "%s", cause ? cause : "");
    return m;
}

static int
units_for(const char *model, enum wrap_policy policy, int64_t min_params,
          int shard, struct wrap_plan *p, struct model **mout)
{
    struct run_config c;
    config_init(&c);
    c.wrap = policy;
    c.min_num_params = min_params;
    struct model *m = load(model);
    char *cause = NULL;
    int rc = wrap_plan_build(m, &c, shard, shard, p, &cause);
    ck_assert_msg(rc == 0, "%s", cause ? cause : "");
    config_free(&c);
    *mout = m;
    return p->n_units;
}

START_TEST(test_wrap_no_policy_root_only)
{
    /* auto_wrap_policy=None, FSDP(model): the root is the only unit and
     * holds every parameter. */
    struct wrap_plan p;
    struct model *m;
    ck_assert_int_eq(units_for("tiny-llama", WRAP_NONE, 0, 2, &p, &m), 1);
    ck_assert_int_eq(p.units[0].numel, m->n_params);
    wrap_plan_free(&p);
    model_free(m);
}
END_TEST

START_TEST(test_wrap_size_policy_worked_example)
{
    /* §1.3: each block (120 >= 100) is wrapped after its children (40 and
     * 80, both below 100) return 0; the ModuleList is never wrapped; the
     * root takes emb + head = 100.  Units: root, b0, b1, b2, b3. */
    struct wrap_plan p;
    struct model *m;
    ck_assert_int_eq(units_for("@wrap-example.ini", WRAP_SIZE, 100, 2, &p,
                               &m), 5);
    ck_assert_int_eq(p.units[0].numel, 100);
    for (int u = 1; u < 5; u++) {
        ck_assert_str_eq(p.units[u].mod->cls, "Block");
        ck_assert_int_eq(p.units[u].numel, 120);
    }
    wrap_plan_free(&p);
    model_free(m);
}
END_TEST

START_TEST(test_wrap_size_policy_leftover_goes_to_root)
{
    /* Variant: mlp 150 >= 100 is wrapped; the block's remainder 40 < 100,
     * so the block is not; its attn (40) falls to the root:
     * root = 50 + 50 + 4 x 40 = 260, four mlp units of 150. */
    struct wrap_plan p;
    struct model *m;
    ck_assert_int_eq(units_for("@wrap-variant.ini", WRAP_SIZE, 100, 2, &p,
                               &m), 5);
    ck_assert_int_eq(p.units[0].numel, 260);
    for (int u = 1; u < 5; u++)
        ck_assert_int_eq(p.units[u].numel, 150);
    wrap_plan_free(&p);
    model_free(m);
}
END_TEST

START_TEST(test_wrap_min_num_params_changes_units)
{
    /* toy: net1 = 1024*2048 + 2048 = 2099200, net2 = 2048*4096 + 4096 =
     * 8392704 parameters.  1e6: both wrapped -> 3 units (root keeps only
     * the parameter-free ReLU); 5e6: only net2 -> 2; 1e8: root only -> 1.
     * Threshold is inclusive (>=): 2099200 wraps net1. */
    struct wrap_plan p;
    struct model *m;
    ck_assert_int_eq(units_for("toy", WRAP_SIZE, 1000000, 2, &p, &m), 3);
    ck_assert_int_eq(p.units[0].numel, 0);
    wrap_plan_free(&p);
    model_free(m);
    ck_assert_int_eq(units_for("toy", WRAP_SIZE, 5000000, 2, &p, &m), 2);
    ck_assert_int_eq(p.units[1].numel, 8392704);
    ck_assert_int_eq(p.units[0].numel, 2099200);
    wrap_plan_free(&p);
    model_free(m);
    ck_assert_int_eq(units_for("toy", WRAP_SIZE, 2099200, 2, &p, &m), 3);
    wrap_plan_free(&p);
    model_free(m);
    ck_assert_int_eq(units_for("toy", WRAP_SIZE, 100000000, 2, &p, &m), 1);
    ck_assert_int_eq(p.units[0].numel, 10491904);
    wrap_plan_free(&p);
    model_free(m);
}
END_TEST

START_TEST(test_wrap_transformer_policy_llama)
{
    /* llama2-7b: 32 LlamaDecoderLayer units + root.  A layer holds
     * q,k,v,o 4 x 4096^2 + gate,up,down 3 x 4096 x 11008 + 2 norms x 4096
     * = 67108864 + 135266304 + 8192 = 202383360; the root the embedding
     * and head 2 x 32000 x 4096 plus the final norm 4096 = 262148096. */
    struct wrap_plan p;
    struct model *m;
    ck_assert_int_eq(units_for("llama2-7b", WRAP_TRANSFORMER, 0, 8, &p, &m),
                     33);
    ck_assert_int_eq(p.units[0].numel, 262148096);
    ck_assert_int_eq(p.units[1].numel, 202383360);
    wrap_plan_free(&p);
    model_free(m);
}
END_TEST

START_TEST(test_wrap_padded_shard_size)
{
    /* odd.ini holds 38 parameters in one unit.  use_orig_params=False:
     * S = ceil(38 / 4) = 10, padded W*S = 40.  W = 1 (NO_SHARD): no
     * padding, S = N = 38. */
    struct wrap_plan p;
    struct model *m;
    units_for("@odd.ini", WRAP_TRANSFORMER, 0, 4, &p, &m);
    ck_assert_int_eq(p.units[0].numel, 38);
    ck_assert_int_eq(p.units[0].shard_numel, 10);
    ck_assert_int_eq(p.units[0].padded_numel, 40);
    wrap_plan_free(&p);
    model_free(m);
    units_for("@odd.ini", WRAP_TRANSFORMER, 0, 1, &p, &m);
    ck_assert_int_eq(p.units[0].shard_numel, 38);
    ck_assert_int_eq(p.units[0].padded_numel, 38);
    wrap_plan_free(&p);
    model_free(m);
}
END_TEST

START_TEST(test_wrap_use_orig_params_alignment)
{
    /* use_orig_params=True, bf16: each parameter starts at a multiple of
     * 16 / 2 = 8 elements.  a.weight [0,15), a.bias at 16 -> [16,21),
     * b.weight at 24 -> [24,39), b.bias at 40 -> [40,43): 43 elements,
     * padded to a multiple of W = 4: 44, S = 11. */
    struct run_config c;
    config_init(&c);
    c.use_orig_params = true;
    c.param_dtype = DTYPE_BF16;
    struct model *m = load("@odd.ini");
    struct wrap_plan p;
    char *cause = NULL;
    ck_assert_int_eq(wrap_plan_build(m, &c, 4, 4, &p, &cause), 0);
    ck_assert_int_eq(p.units[0].padded_numel, 44);
    ck_assert_int_eq(p.units[0].shard_numel, 11);
    wrap_plan_free(&p);
    /* NO_SHARD on 2 ranks: nothing is sharded (W = 1) but the process
     * group has 2 ranks, so the 43 aligned elements pad to 44, the
     * "shard" the padded whole.  On a 1-rank group
     * (HYBRID_SHARD's fallback) only the alignment: 43. */
    ck_assert_int_eq(wrap_plan_build(m, &c, 1, 2, &p, &cause), 0);
    ck_assert_int_eq(p.units[0].padded_numel, 44);
    ck_assert_int_eq(p.units[0].shard_numel, 44);
    wrap_plan_free(&p);
    ck_assert_int_eq(wrap_plan_build(m, &c, 1, 1, &p, &cause), 0);
    ck_assert_int_eq(p.units[0].padded_numel, 43);
    ck_assert_int_eq(p.units[0].shard_numel, 43);
    wrap_plan_free(&p);
    model_free(m);
    config_free(&c);
}
END_TEST

START_TEST(test_wrap_unknown_layer_class)
{
    struct run_config c;
    config_init(&c);
    c.layer_cls = strdup("GPT2Block");
    struct model *m = load("tiny-llama");
    struct wrap_plan p;
    char *cause = NULL;
    ck_assert_int_eq(wrap_plan_build(m, &c, 4, 4, &p, &cause), -1);
    ck_assert_str_eq(cause,
                     "--transformer-layer-cls: no module of class "
                     "'GPT2Block' in model 'tiny-llama', so the policy would "
                     "wrap nothing but the root (see 'fsdpsim models --show "
                     "tiny-llama' for its classes)");
    free(cause);
    model_free(m);
    config_free(&c);
}
END_TEST

START_TEST(test_wrap_manual_enable_wrap)
{
    /* with enable_wrap(wrapper_cls=FSDP): model.encoder =
     * wrap(model.encoder); model.decoder = wrap(model.decoder); then
     * FSDP(model): three units, in module order: the root (shared
     * embedding, lm_head, the loss), encoder, decoder; each wrapped
     * module's whole subtree is its unit's. */
    struct run_config c;
    config_init(&c);
    c.wrap_modules = strdup("model.encoder, model.decoder");
    struct model *m = load("t5-11b");
    struct wrap_plan p;
    char *cause = NULL;
    ck_assert_int_eq(wrap_plan_build(m, &c, 8, 8, &p, &cause), 0);
    ck_assert_int_eq(p.n_units, 3);
    ck_assert_str_eq(p.units[1].mod->name, "encoder");
    ck_assert_str_eq(p.units[2].mod->name, "decoder");
    ck_assert_int_eq(p.units[1].numel, p.units[1].mod->subtree_params);
    ck_assert_int_eq(p.units[2].numel, p.units[2].mod->subtree_params);
    ck_assert_int_eq(p.units[0].numel, m->n_params - p.units[1].numel
                                           - p.units[2].numel);
    ck_assert_int_eq(p.units[0].numel, 32899072);
    wrap_plan_free(&p);
    /* Paths without the variable's name, and nested ones: the block
     * unit takes its subtree out of the encoder's. */
    free(c.wrap_modules);
    c.wrap_modules = strdup("encoder.block.0,encoder");
    ck_assert_int_eq(wrap_plan_build(m, &c, 8, 8, &p, &cause), 0);
    ck_assert_int_eq(p.n_units, 3);
    ck_assert_int_eq(p.units[2].numel, 201332736);
    wrap_plan_free(&p);
    free(c.wrap_modules);
    c.wrap_modules = strdup("model.nothing");
    ck_assert_int_eq(wrap_plan_build(m, &c, 8, 8, &p, &cause), -1);
    ck_assert(strstr(cause, "no module 'model.nothing'") != NULL);
    free(cause);
    config_free(&c);
    model_free(m);
}
END_TEST

START_TEST(test_wrap_module_wrap_policy)
{
    /* ModuleWrapPolicy({LlamaDecoderLayer}) forms what
     * transformer_auto_wrap_policy does; {LlamaMLP} wraps each MLP. */
    struct run_config c;
    config_init(&c);
    c.wrap = WRAP_MODULE;
    c.wrap_classes = strdup("LlamaDecoderLayer");
    struct model *m = load("tiny-llama");
    struct wrap_plan p, q;
    char *cause = NULL;
    ck_assert_int_eq(wrap_plan_build(m, &c, 8, 8, &p, &cause), 0);
    ck_assert_int_eq(p.n_units, 5);
    ck_assert_int_eq(p.units[1].numel, 791040);
    free(c.wrap_classes);
    c.wrap_classes = strdup("LlamaMLP");
    ck_assert_int_eq(wrap_plan_build(m, &c, 8, 8, &q, &cause), 0);
    ck_assert_int_eq(q.n_units, 5);
    ck_assert_int_eq(q.units[1].numel, 528384);
    wrap_plan_free(&p);
    wrap_plan_free(&q);
    free(c.wrap_classes);
    c.wrap_classes = strdup("NoSuchBlock");
    ck_assert_int_eq(wrap_plan_build(m, &c, 8, 8, &p, &cause), -1);
    free(cause);
    config_free(&c);
    model_free(m);
}
END_TEST


static Suite *
wrap_suite(void)
{
    Suite *s = suite_create("wrap");
    TCase *core = tcase_create("core");
    tcase_add_test(core, test_wrap_size_policy_worked_example);
    tcase_add_test(core, test_wrap_size_policy_leftover_goes_to_root);
    tcase_add_test(core, test_wrap_min_num_params_changes_units);
    tcase_add_test(core, test_wrap_transformer_policy_llama);
    tcase_add_test(core, test_wrap_padded_shard_size);
    tcase_add_test(core, test_wrap_use_orig_params_alignment);
    tcase_add_test(core, test_wrap_no_policy_root_only);
    tcase_add_test(core, test_wrap_manual_enable_wrap);
    tcase_add_test(core, test_wrap_module_wrap_policy);
    suite_add_tcase(s, core);
    TCase *errors = tcase_create("errors");
    tcase_add_test(errors, test_wrap_unknown_layer_class);
    suite_add_tcase(s, errors);
    return s;
}

int
main(void)
{
    return tu_main(wrap_suite());
}
