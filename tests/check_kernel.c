/*
 * check_kernel.c: the kernel lists of leaves (kernel.c), their times
 * (kernel_cost.c), the attention table (attn_table.c) and the FLOP
 * conventions of MFU and HFU, against values derived by hand.
 */
#include "attn_table.h"
#include "builtin.h"
#include "cost.h"
#include "kernel.h"
#include "kernel_cost.h"
#include "layer.h"
#include "model.h"
#include "testutil.h"
#include "runconf.h"
#include "straggler.h"
#include "topo.h"
#include "torch_version.h"
#include "xalloc.h"
#include "check_main.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static struct topo *
topo_named(const char *name)
{
    char *cause = NULL;
    struct topo *t = topo_load_sized(name, 1, 0, true, &cause);
    ck_assert_msg(t != NULL, "%s", cause ? cause : "");
    return t;
}

static struct kernel_ctx
ctx_of(int64_t mb, int64_t seq)
{
    struct kernel_ctx c = {.micro_batch = mb, .seq_len = seq, .act_bytes = 2,
                           .attn = ATTN_FLASH2, .compile = false,
                           .layer_cls = "Block"};
    return c;
}

START_TEST(test_linear_three_gemms)
{
    /* Linear(4096 -> 11008, bias) on 2 x 4096 tokens: forward one GEMM
     * (8192 x 4096) by (4096 x 11008), 2 * 8192 * 11008 * 4096 =
     * 7.3873e11 FLOPs; backward dgrad (8192 x 11008) by (11008 x 4096)
     * and wgrad (11008 x 8192) by (8192 x 4096), the same FLOPs each, and
     * the bias gradient, a sum over 8192 x 11008 bf16 elements:
     * 180355072 bytes. */
    struct module m = {.kind = LAYER_LINEAR, .in = 4096, .out = 11008,
                       .bias = true};
    struct kernel_ctx c = ctx_of(2, 4096);
    struct kernel k[KERNEL_MAX_PER_LEAF];
    ck_assert_int_eq(kernel_list(&m, &c, PHASE_FWD, k), 1);
    ck_assert_int_eq(k[0].cls, KERNEL_GEMM);
    ck_assert_int_eq(k[0].m, 8192);
    ck_assert_int_eq(k[0].n, 11008);
    ck_assert_int_eq(k[0].k, 4096);
    ck_assert_double_eq(k[0].flops, 2.0 * 8192 * 11008 * 4096);
    ck_assert_int_eq(kernel_list(&m, &c, PHASE_BWD, k), 3);
    ck_assert_int_eq(k[0].m, 8192);
    ck_assert_int_eq(k[0].n, 4096);
    ck_assert_int_eq(k[0].k, 11008);
    ck_assert_int_eq(k[1].m, 11008);
    ck_assert_int_eq(k[1].n, 4096);
    ck_assert_int_eq(k[1].k, 8192);
    ck_assert_double_eq(k[0].flops, k[1].flops);
    ck_assert_int_eq(k[2].cls, KERNEL_REDUCTION);
    ck_assert_double_eq(k[2].bytes, 8192.0 * 11008 * 2);
}
END_TEST

START_TEST(test_norm_bytes)
{
    /* LayerNorm(1024) on 1 x 512 tokens: E = 524288 elements; forward
     * reads x and writes y in bf16 and the fp32 mean and rstd of each
     * token: 2 * 2E + 8 * 512 = 2101248 bytes, one kernel.  Outside a
     * block (no residual add). */
    struct module ln = {.kind = LAYER_LAYERNORM, .out = 1024};
    struct kernel_ctx c = ctx_of(1, 512);
    struct kernel k[KERNEL_MAX_PER_LEAF];
    ck_assert_int_eq(kernel_list(&ln, &c, PHASE_FWD, k), 1);
    ck_assert_double_eq(k[0].bytes, 2.0 * 2 * 524288 + 8 * 512);
    /* Eager RMSNorm: eight kernels, (4b + 28) E + 20 T bytes: to(fp32)
     * E(b+4), pow 8E, mean 4E + 4T, eps 8T, rsqrt 8T, mul 8E, to(bf16)
     * E(4+b), weight mul 2bE = 36E + 20T for b = 2.  Compiled: one fused
     * kernel reading and writing E bf16 elements, 4E. */
    struct module rms = {.kind = LAYER_RMSNORM, .out = 1024};
    int n = kernel_list(&rms, &c, PHASE_FWD, k);
    ck_assert_int_eq(n, 8);
    double bytes = 0;
    for (int i = 0; i < n; i++)
        bytes += k[i].bytes;
    ck_assert_double_eq(bytes, 36.0 * 524288 + 20 * 512);
    c.compile = true;
    ck_assert_int_eq(kernel_list(&rms, &c, PHASE_FWD, k), 1);
    ck_assert_double_eq(k[0].bytes, 4.0 * 524288);
}
END_TEST

/* The eager-path tests' norm: RMSNorm(4096) on 2 x 4096 bf16 tokens,
 * E = 33,554,432 elements, on dgx-a100-80g: HBM 2,039 GB/s at 0.88
 * (1.79432e12 B/s), FP32 19.5 TFLOPS over 2 x 64 lanes an SM (1.5234e11
 * SM clocks a second). */
#define RMS_E 33554432.0
#define A100_HBM_BPS (2039e9 * 0.88)
#define A100_SM_CLOCKS (19.5e12 / 128)

struct rms_case {
    struct topo *t;
    struct module rms;
    struct kernel_ctx c;
    struct kernel k[KERNEL_MAX_PER_LEAF];
};

static void
rms_case_init(struct rms_case *x)
{
    x->t = topo_named("dgx-a100-80g");
    x->rms = (struct module){.kind = LAYER_RMSNORM, .out = 4096};
    x->c = ctx_of(2, 4096);
}

START_TEST(test_dtype_casts_by_release)
{
    /* The norm's two casts, to(fp32) (b + 4 = 6 bytes an element) and
     * to(input dtype) (6).  Vectorized, a cast takes its bytes at HBM
     * speed: 6E / 1.79432e12 = 112.20 us.  On the dynamic-cast path,
     * E / (1.2 x 1.5234e11) = 183.55 us.  PyTorch 2.5: both casts
     * dynamic; 2.6: to(fp32), the upcast, still is, to(input dtype) is
     * vectorized. */
    struct rms_case x;
    rms_case_init(&x);
    const double E = RMS_E;
    const double vec_us = 6 * E / A100_HBM_BPS * 1e6;
    const double dyn_us = E / (1.2 * A100_SM_CLOCKS) * 1e6;
    ck_assert_double_eq_tol(vec_us, 112.20, 0.01);
    ck_assert_double_eq_tol(dyn_us, 183.55, 0.01);
    int releases[2] = {205, 206};
    for (int r = 0; r < 2; r++) {
        x.c.torch_version = releases[r];
        int n = kernel_list(&x.rms, &x.c, PHASE_FWD, x.k);
        ck_assert_int_eq(n, 8);
        ck_assert_str_eq(x.k[0].name, "to (fp32)");
        ck_assert_str_eq(x.k[6].name, "to (input dtype)");
        ck_assert_double_eq(x.k[0].cast_elems, E);
        ck_assert_double_eq(x.k[6].cast_elems, r == 0 ? E : 0);
        ck_assert_double_eq_tol(kernel_time_s(x.t, &x.k[0], DTYPE_BF16) * 1e6,
                                dyn_us, 1e-6);
        ck_assert_double_eq_tol(kernel_time_s(x.t, &x.k[6], DTYPE_BF16) * 1e6,
                                r == 0 ? dyn_us : vec_us, 1e-6);
    }
    /* Compiled, the norm is one Triton kernel: no cast of its own. */
    x.c.compile = true;
    ck_assert_int_eq(kernel_list(&x.rms, &x.c, PHASE_FWD, x.k), 1);
    ck_assert_double_eq(x.k[0].cast_elems, 0);
    /* In fp32 both casts are Tensor.to of a tensor already in the
     * dtype, which returns it: six kernels, none a cast. */
    x.c.compile = false;
    x.c.act_bytes = 4;
    int n = kernel_list(&x.rms, &x.c, PHASE_FWD, x.k);
    ck_assert_int_eq(n, 6);
    for (int i = 0; i < n; i++)
        ck_assert_double_eq(x.k[i].cast_elems, 0);
    /* The rule itself: equal sizes never, float8 targets before 2.2,
     * 0 the default release (2.10). */
    ck_assert(torch_cast_is_dynamic(210, 2, 4));
    ck_assert(torch_cast_is_dynamic(205, 4, 2));
    ck_assert(!torch_cast_is_dynamic(206, 4, 2));
    ck_assert(!torch_cast_is_dynamic(0, 4, 2));
    ck_assert(torch_cast_is_dynamic(0, 2, 4));
    ck_assert(!torch_cast_is_dynamic(200, 4, 4));
    ck_assert(torch_cast_is_dynamic(201, 2, 1));
    ck_assert(!torch_cast_is_dynamic(202, 2, 1));
    topo_free(x.t);
}
END_TEST

START_TEST(test_strided_kernels)
{
    /* The norm's weight product broadcasts the weight over the tokens:
     * TensorIterator's strided path, E elements at 1.4 a clock on each
     * of the 1.5234e11 SM clocks a second, E / 2.1328e11 = 157.32 us,
     * though its 4E bytes would take 74.80 us at HBM speed.  The fp32
     * x * rsqrt moves 8E bytes, 149.60 us: the strided rate still bounds
     * it, 157.32.  pow, contiguous, stays at its bytes. */
    struct rms_case x;
    rms_case_init(&x);
    const double E = RMS_E;
    const double strided_us = E / (1.4 * A100_SM_CLOCKS) * 1e6;
    ck_assert_double_eq_tol(strided_us, 157.32, 0.01);
    ck_assert_double_eq_tol(4 * E / A100_HBM_BPS * 1e6, 74.80, 0.01);
    ck_assert_int_eq(kernel_list(&x.rms, &x.c, PHASE_FWD, x.k), 8);
    ck_assert_str_eq(x.k[1].name, "pow");
    ck_assert_str_eq(x.k[5].name, "mul (x * rsqrt)");
    ck_assert_str_eq(x.k[7].name, "mul (weight)");
    ck_assert_double_eq(x.k[1].strided_elems, 0);
    ck_assert_double_eq(x.k[5].strided_elems, E);
    ck_assert_double_eq(x.k[7].strided_elems, E);
    ck_assert_double_eq_tol(kernel_time_s(x.t, &x.k[7], DTYPE_BF16) * 1e6,
                            strided_us, 1e-6);
    ck_assert_double_eq_tol(kernel_time_s(x.t, &x.k[5], DTYPE_BF16) * 1e6,
                            strided_us, 1e-6);
    ck_assert_double_eq_tol(kernel_time_s(x.t, &x.k[1], DTYPE_BF16) * 1e6,
                            8 * E / A100_HBM_BPS * 1e6, 1e-6);
    /* Backward: the weight's and the statistic's products and the
     * mean's expand, three strided kernels. */
    int n = kernel_list(&x.rms, &x.c, PHASE_BWD, x.k), strided = 0;
    for (int i = 0; i < n; i++)
        strided += x.k[i].strided_elems == E;
    ck_assert_int_eq(strided, 3);
    topo_free(x.t);
}
END_TEST

START_TEST(test_torch_version_parse)
{
    int v = 0;
    char *why = NULL;
    ck_assert_int_eq(torch_version_parse("2.6", "--torch-version", &v,
                                         &why), 0);
    ck_assert_int_eq(v, 206);
    ck_assert_int_eq(torch_version_parse("2.7.0.dev20250101", "x", &v,
                                         &why), 0);
    ck_assert_int_eq(v, 207);
    ck_assert_int_eq(torch_version_parse("2.3.0a0+git1963fc8", "x", &v,
                                         &why), 0);
    ck_assert_int_eq(v, 203);
    ck_assert_int_eq(torch_version_parse("2.10", "x", &v, &why), 0);
    ck_assert_int_eq(v, 210);
    ck_assert_int_eq(torch_version_parse("2.11", "--torch-version", &v,
                                         &why), -1);
    ck_assert_str_eq(why, "--torch-version: PyTorch 2.11 is not modelled "
                          "(2.0 to 2.10 are)");
    free(why);
    ck_assert_int_eq(torch_version_parse("1.13", "f.ini:3", &v, &why), -1);
    ck_assert_str_eq(why, "f.ini:3: PyTorch 1.13 is not modelled (2.0 to "
                          "2.10 are)");
    free(why);
    ck_assert_int_eq(torch_version_parse("2.x", "--torch-version", &v,
                                         &why), -1);
    ck_assert_str_eq(why, "--torch-version: '2.x' is not a PyTorch version "
                          "(write e.g. 2.6)");
    free(why);
}
END_TEST

/* Float8Linear(256 -> 688) on 1 x 512 tokens, bf16 (b = 2), torchao
 * eab345c (kernel.c): X = 131,072 input and Y = 352,256 output elements,
 * W = 176,128 weights; T = 512, in = 256, out = 688. */
#define F8_X 131072.0
#define F8_Y 352256.0
#define F8_W 176128.0

static char f8_up_name[] = "up_proj";

/* That Float8Linear, as the model's up_proj (no parent: its input its
 * own). */
static struct module
f8_up(void)
{
    struct module m = {.kind = LAYER_LINEAR, .in = 256, .out = 688,
                       .name = f8_up_name};
    return m;
}

START_TEST(test_float8_linear_kernels)
{
    /* Eager tensorwise forward, ten kernels.  The input's cast
     * (hp_tensor_to_float8_dynamic): torch.abs writes a whole tensor,
     * 2 x 2X = 524,288 bytes; torch.max reads it, 2X + 2 = 262,146;
     * amax_to_scale on one element, five launches (to float64, clamp,
     * reciprocal, multiply, to float32), 1 x (2 + 68) = 70 bytes; the
     * cast, four launches (to float32 6X, * scale 8X + 4, clamp 8X, to
     * float8 5X), 27X + 4 = 3,538,948.  The weight's the same on W:
     * 704,512, 352,258, 70, 4,755,460.  addmm_float8_unwrapped's two
     * scale reciprocals, 16 bytes; the GEMM 512 x 688 x 256, float8
     * operands and a bf16 output, X + W + 2Y = 1,011,712 bytes.
     * Launches: 2 x (1 + 1 + 5 + 4) + 2 + 1 = 25. */
    char lm_head[] = "lm_head";
    struct module m = f8_up();
    struct kernel_ctx c = ctx_of(1, 512);
    c.float8 = FLOAT8_TENSORWISE;
    struct kernel k[KERNEL_MAX_PER_LEAF];
    int n = kernel_list(&m, &c, PHASE_FWD, k);
    ck_assert_int_eq(n, 10);
    const double fwd_bytes[10] = {
        4 * F8_X, 2 * F8_X + 2, 70, 27 * F8_X + 4,
        4 * F8_W, 2 * F8_W + 2, 70, 27 * F8_W + 4,
        16, F8_X + F8_W + 2 * F8_Y};
    const int fwd_launches[10] = {1, 1, 5, 4, 1, 1, 5, 4, 2, 1};
    for (int i = 0; i < n; i++) {
        ck_assert_double_eq(k[i].bytes, fwd_bytes[i]);
        ck_assert_int_eq(k[i].launches, fwd_launches[i]);
    }
    ck_assert_double_eq(k[3].bytes, 3538948.0);
    ck_assert_int_eq(k[1].cls, KERNEL_REDUCTION);
    ck_assert(k[9].fp8);
    ck_assert_int_eq(k[9].m, 512);
    ck_assert_int_eq(k[9].n, 688);
    ck_assert_int_eq(k[9].k, 256);
    /* Selective-op: abs and max are saved (eager: popped, never rerun);
     * the reciprocals go with the GEMM; the scale and the cast rerun. */
    ck_assert_int_eq(k[0].recompute, RECOMPUTE_NEVER);
    ck_assert_int_eq(k[1].recompute, RECOMPUTE_NEVER);
    ck_assert_int_eq(k[3].recompute, RECOMPUTE_BY_CLASS);
    ck_assert_int_eq(k[8].recompute, RECOMPUTE_WITH_GEMM);

    /* Backward, eleven kernels: manual_float8_matmul_with_args_in_float8
     * reuses the saved input_fp8 and weight_fp8_t, so only the gradient
     * is cast (abs 4Y, max 2Y + 2, scale 70, cast 27Y + 4); dgrad takes
     * the weight copied column-major (2W), wgrad the gradient's
     * transpose (2Y) and the input copied column-major (2X), each GEMM
     * after its two reciprocals. */
    n = kernel_list(&m, &c, PHASE_BWD, k);
    ck_assert_int_eq(n, 11);
    const double bwd_bytes[11] = {
        4 * F8_Y, 2 * F8_Y + 2, 70, 27 * F8_Y + 4, 2 * F8_W, 16,
        F8_Y + F8_W + 2 * F8_X, 2 * F8_Y, 2 * F8_X, 16,
        F8_Y + F8_X + 2 * F8_W};
    for (int i = 0; i < n; i++)
        ck_assert_double_eq(k[i].bytes, bwd_bytes[i]);
    ck_assert_int_eq(k[6].m, 512);
    ck_assert_int_eq(k[6].n, 256);
    ck_assert_int_eq(k[6].k, 688);
    ck_assert_int_eq(k[10].m, 688);
    ck_assert_int_eq(k[10].n, 256);
    ck_assert_int_eq(k[10].k, 512);

    /* Weights gathered in float8: the weight's four kernels go from the
     * forward (6 left); the backward still copies the gathered weight
     * column-major (11). */
    c.float8_weights_gathered = true;
    ck_assert_int_eq(kernel_list(&m, &c, PHASE_FWD, k), 6);
    ck_assert_int_eq(kernel_list(&m, &c, PHASE_BWD, k), 11);
    c.float8_weights_gathered = false;

    /* At the fp8 peak the GEMM takes half the bf16 time on an H100 (the
     * same shape model applies to both), but for the fixed pipeline fill:
     * within 0.1 %. */
    struct topo *t = topo_named("dgx-h100");
    struct kernel bf = {.cls = KERNEL_GEMM, .launches = 1, .m = 8192,
                        .n = 8192, .k = 8192, .batch = 1,
                        .flops = 2.0 * 8192 * 8192 * 8192,
                        .bytes = 3.0 * 8192 * 8192 * 2};
    struct kernel f8 = bf;
    f8.fp8 = true;
    f8.bytes = 8192.0 * 8192 * 4;
    double half = kernel_time_s(t, &bf, DTYPE_BF16) / 2;
    ck_assert_double_eq_tol(kernel_time_s(t, &f8, DTYPE_BF16), half,
                            1e-3 * half);
    topo_free(t);
    struct module head = m;
    head.name = lm_head;
    ck_assert_int_eq(kernel_list(&head, &c, PHASE_FWD, k), 1);
}
END_TEST

START_TEST(test_float8_linear_compiled)
{
    /* Compiled tensorwise: Inductor folds abs and the scale into the
     * reduction, X x 2 + 4 = 262,148 bytes, and the cast into one kernel,
     * X (2 + 1) + 4 = 393,220; the weight's 2W + 4 and 3W + 4; the GEMM
     * (no reciprocal kernels): five kernels, one launch each. */
    char block[] = "Block";
    struct module blk = {.kind = LAYER_CONTAINER, .cls = block};
    struct module m = f8_up();
    m.parent = &blk;
    struct kernel_ctx c = ctx_of(1, 512);
    c.float8 = FLOAT8_TENSORWISE;
    c.compile = true;
    struct kernel k[KERNEL_MAX_PER_LEAF];
    ck_assert_int_eq(kernel_list(&m, &c, PHASE_FWD, k), 5);
    ck_assert_double_eq(k[0].bytes, 262148.0);
    ck_assert_double_eq(k[1].bytes, 393220.0);
    ck_assert_double_eq(k[2].bytes, 2 * F8_W + 4);
    ck_assert_double_eq(k[3].bytes, 3 * F8_W + 4);
    /* The saved max spares the reduction in the recompute; the cast,
     * which the backward needs, reruns. */
    ck_assert_int_eq(k[0].recompute, RECOMPUTE_NEVER);
    ck_assert_int_eq(k[1].recompute, RECOMPUTE_BY_CLASS);
    /* Backward: the gradient's amax (2Y + 4) and its cast, which writes
     * the transposed copy too, Y (2 + 1) + 4 + Y = 1,409,028; the saved
     * weight's and input's column-major copies (2W, 2X) apart from
     * their casts, in the forward graph: six kernels. */
    ck_assert_int_eq(kernel_list(&m, &c, PHASE_BWD, k), 6);
    ck_assert_double_eq(k[0].bytes, 2 * F8_Y + 4);
    ck_assert_double_eq(k[1].bytes, 1409028.0);
    ck_assert_double_eq(k[2].bytes, 2 * F8_W);
    ck_assert_double_eq(k[4].bytes, 2 * F8_X);
    /* Compiled under selective-op, the casts rerun in the backward
     * graph and write the column-major copies themselves: the gradient's
     * two kernels and the two GEMMs. */
    c.selective_op = true;
    ck_assert_int_eq(kernel_list(&m, &c, PHASE_BWD, k), 4);
    ck_assert_int_eq(k[2].cls, KERNEL_GEMM);
    ck_assert_int_eq(k[3].cls, KERNEL_GEMM);
    /* Its recompute: the forward's five kernels and, where the mm runs
     * again and wants the row-major layouts too, X and W more bytes
     * written by the two casts (zero launches): 7 entries; 2 launches
     * with the mm saved, 3 with it recomputed. */
    ck_assert_int_eq(kernel_list(&m, &c, PHASE_RECOMPUTE, k), 7);
    ck_assert_int_eq(k[4].launches, 0);
    ck_assert_double_eq(k[4].bytes, F8_X);
    ck_assert_double_eq(k[5].bytes, F8_W);
    ck_assert_int_eq(k[5].recompute, RECOMPUTE_WITH_GEMM);
    struct topo *t = topo_named("dgx-h100");
    int launches;
    cost_leaf_recompute_selective_s(t, &m, &c, DTYPE_BF16, false,
                                    &launches);
    ck_assert_int_eq(launches, 2);
    cost_leaf_recompute_selective_s(t, &m, &c, DTYPE_BF16, true, &launches);
    ck_assert_int_eq(launches, 3);
    /* A weight gathered in float8 has no cast to rerun: the backward
     * copies it column-major itself (5). */
    c.float8_weights_gathered = true;
    ck_assert_int_eq(kernel_list(&m, &c, PHASE_BWD, k), 5);
    ck_assert_double_eq(k[2].bytes, 2 * F8_W);
    c.float8_weights_gathered = false;
    c.selective_op = false;

    /* gate and up take one input: compiled, the common-subexpression
     * pass leaves its cast to gate, so up's forward is its weight's two
     * kernels and the GEMM (3), its recompute the same, and its backward
     * loses the input's copy (5) and gains the sum of its input gradient
     * with gate's, fused into the next kernel (a read of 512 x 256 bf16
     * elements, no launch: 6 entries).  Rowwise, up's recompute (its mm
     * recomputed, gate's saved) reruns the shared input's amax and cast
     * itself: 5 launches with its mm, none without; its backward loses
     * the input's dimension-0 cast (12 - 2 = 10, and the fused sum:
     * 11). */
    char gate[] = "gate_proj";
    struct module g = {.kind = LAYER_LINEAR, .in = 256, .out = 688,
                       .name = gate, .parent = &blk};
    struct module *kids[2] = {&g, &m};
    blk.children = kids;
    blk.n_children = 2;
    ck_assert_int_eq(kernel_list(&g, &c, PHASE_FWD, k), 5);
    ck_assert_int_eq(kernel_list(&m, &c, PHASE_FWD, k), 3);
    ck_assert_double_eq(k[0].bytes, 2 * F8_W + 4);
    ck_assert_int_eq(kernel_list(&m, &c, PHASE_RECOMPUTE, k), 3);
    ck_assert_int_eq(kernel_list(&m, &c, PHASE_BWD, k), 6);
    ck_assert_int_eq(k[5].launches, 0);
    ck_assert_double_eq(k[5].bytes, 2 * F8_X);
    c.float8 = FLOAT8_ROWWISE;
    ck_assert_int_eq(kernel_list(&m, &c, PHASE_FWD, k), 3);
    ck_assert_int_eq(kernel_list(&m, &c, PHASE_RECOMPUTE, k), 5);
    ck_assert_int_eq(kernel_list(&m, &c, PHASE_BWD, k), 11);
    cost_leaf_recompute_selective_s(t, &m, &c, DTYPE_BF16, true, &launches);
    ck_assert_int_eq(launches, 5);
    cost_leaf_recompute_selective_s(t, &m, &c, DTYPE_BF16, false,
                                    &launches);
    ck_assert_int_eq(launches, 0);
    topo_free(t);
}
END_TEST

START_TEST(test_float8_linear_rowwise)
{
    /* Rowwise (manual_float8_matmul_with_args_in_hp): forward as
     * tensorwise but with R = T = 512 input scales and out = 688 weight
     * scales: the input's max writes 512 bf16 values, 2X + 1,024; the
     * scale 512 x 70 = 35,840; the cast 27X + 2,048; the reciprocals
     * 8 (512 + 688) = 9,600.  Ten kernels. */
    struct module m = f8_up();
    struct kernel_ctx c = ctx_of(1, 512);
    c.float8 = FLOAT8_ROWWISE;
    struct kernel k[KERNEL_MAX_PER_LEAF];
    ck_assert_int_eq(kernel_list(&m, &c, PHASE_FWD, k), 10);
    ck_assert_double_eq(k[1].bytes, 2 * F8_X + 1024);
    ck_assert_double_eq(k[2].bytes, 35840.0);
    ck_assert_double_eq(k[3].bytes, 27 * F8_X + 2048);
    ck_assert_double_eq(k[8].bytes, 9600.0);
    /* Backward: four casts of four kernels (the gradient per row, the
     * weight per input feature, then the gradient and the input along
     * dimension 0), three layout copies (the recast weight, the
     * gradient's transpose, the input), two GEMMs each after its
     * reciprocals and followed by the post-scaling without fast
     * accumulation: 16 + 3 + 2 x 3 = 25 kernels.  dgrad's post-scaling,
     * M x N = 512 x 256, four launches: 131,072 x (2 x 2 + 8) + 4 x
     * (512 + 256) + 8 = 1,575,944 bytes. */
    ck_assert_int_eq(kernel_list(&m, &c, PHASE_BWD, k), 25);
    ck_assert_int_eq(k[11].launches, 4);
    ck_assert_double_eq(k[11].bytes, 1575944.0);
    ck_assert_double_eq(k[1].bytes, 2 * F8_Y + 1024);
    /* Compiled: each cast is two kernels, its layout copy written by the
     * cast itself (only the copy is used: no bytes added), the
     * post-scaling one kernel: 4 x 2 + 2 x 2 = 12.  The weight's cast
     * (256 scales) W x 3 + 1,024 = 529,408; dgrad's post-scaling
     * 2 x 131,072 x 2 + 3,072 = 527,360. */
    c.compile = true;
    ck_assert_int_eq(kernel_list(&m, &c, PHASE_BWD, k), 12);
    ck_assert_double_eq(k[3].bytes, 529408.0);
    ck_assert_double_eq(k[5].bytes, 527360.0);
    /* Compiled rowwise forward casts rerun only with their mm: amax is
     * not saved, the backward recasts from the high-precision tensors. */
    ck_assert_int_eq(kernel_list(&m, &c, PHASE_FWD, k), 5);
    ck_assert_int_eq(k[0].recompute, RECOMPUTE_WITH_GEMM);
    ck_assert_int_eq(k[1].recompute, RECOMPUTE_WITH_GEMM);
}
END_TEST

START_TEST(test_float8_selective_recompute)
{
    /* What the selective-op recompute of the Float8Linear above reruns,
     * in launches, with its mm saved / recomputed: eager tensorwise, the
     * scale (5) and the cast (4) of the input and the weight, 18, plus
     * the reciprocals (2) and the GEMM, 21; the weights gathered in
     * float8, 9 / 12; compiled tensorwise, the two casts, 2 / 3;
     * compiled rowwise, nothing / both amaxes, both casts and the GEMM,
     * 5.  A bf16 Linear whose mm is recomputed reruns its whole forward,
     * to the bit. */
    struct module m = f8_up();
    struct kernel_ctx c = ctx_of(1, 512);
    struct topo *t = topo_named("dgx-h100");
    int saved, redone, fwd;
    double all = cost_leaf_time_s(t, &m, &c, DTYPE_BF16, PHASE_FWD, &fwd);
    ck_assert_double_eq(
        cost_leaf_recompute_selective_s(t, &m, &c, DTYPE_BF16, true, &redone),
        all);
    ck_assert_int_eq(redone, fwd);
    cost_leaf_recompute_selective_s(t, &m, &c, DTYPE_BF16, false, &saved);
    ck_assert_int_eq(saved, 0);
    const struct {
        int recipe;
        bool compile, gathered;
        int saved, redone;
    } cases[] = {
        {FLOAT8_TENSORWISE, false, false, 18, 21},
        {FLOAT8_TENSORWISE, false, true, 9, 12},
        {FLOAT8_TENSORWISE, true, false, 2, 3},
        {FLOAT8_ROWWISE, true, false, 0, 5},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        c.float8 = cases[i].recipe;
        c.compile = cases[i].compile;
        c.float8_weights_gathered = cases[i].gathered;
        cost_leaf_recompute_selective_s(t, &m, &c, DTYPE_BF16, false,
                                        &saved);
        cost_leaf_recompute_selective_s(t, &m, &c, DTYPE_BF16, true,
                                        &redone);
        ck_assert_int_eq(saved, cases[i].saved);
        ck_assert_int_eq(redone, cases[i].redone);
    }
    /* Eager tensorwise with its mm saved: the time of exactly the scale
     * and cast kernels (list entries 2, 3, 6, 7). */
    c.float8 = FLOAT8_TENSORWISE;
    c.compile = false;
    c.float8_weights_gathered = false;
    struct kernel k[KERNEL_MAX_PER_LEAF];
    kernel_list(&m, &c, PHASE_FWD, k);
    double expect = kernel_time_s(t, &k[2], DTYPE_BF16)
                    + kernel_time_s(t, &k[3], DTYPE_BF16)
                    + kernel_time_s(t, &k[6], DTYPE_BF16)
                    + kernel_time_s(t, &k[7], DTYPE_BF16);
    ck_assert_double_eq(
        cost_leaf_recompute_selective_s(t, &m, &c, DTYPE_BF16, false, &saved),
        expect);
    topo_free(t);
}
END_TEST

START_TEST(test_dropout_kernels)
{
    /* Dropout(1024) on 1 x 512 tokens, bf16: E = 524288; forward reads x
     * and writes the output and a one-byte mask, E (2 + 2 + 1) =
     * 2621440 bytes; backward reads the gradient and the mask and writes
     * the gradient, the same bytes; the mask (E bytes) is saved.
     * Compiled, Inductor fuses it: no kernel of its own. */
    struct module d = {.kind = LAYER_DROPOUT, .out = 1024};
    struct kernel_ctx c = ctx_of(1, 512);
    struct kernel k[KERNEL_MAX_PER_LEAF];
    ck_assert_int_eq(kernel_list(&d, &c, PHASE_FWD, k), 1);
    ck_assert_double_eq(k[0].bytes, 5.0 * 524288);
    ck_assert_int_eq(kernel_list(&d, &c, PHASE_BWD, k), 1);
    ck_assert_double_eq(k[0].bytes, 5.0 * 524288);
    struct layer_work w;
    layer_work(&d, 1, 512, 2, &w);
    ck_assert_double_eq(w.saved_bytes, 524288);
    ck_assert_double_eq(w.fwd_flops, 0);
    c.compile = true;
    ck_assert_int_eq(kernel_list(&d, &c, PHASE_FWD, k), 0);
}
END_TEST

START_TEST(test_native_loss_kernels)
{
    /* CrossEntropy(32000) on 2 x 4096 tokens (8192 x 32000 = 262144000
     * logits, V), bf16.  Plain (Hugging Face): the fp32 copy (V x 2 in,
     * V x 4 out), log_softmax in fp32 (8 V = 2097152000 bytes),
     * nll_loss; backward zeros and scatter (4 V), log_softmax_backward
     * (12 V), the cast back.  Native (fms-fsdp: cross_entropy on the bf16
     * logits): no casts, log_softmax reads and writes bf16, 4 V =
     * 1048576000, nll_loss 16 x 8192 = 131072; backward the zeros and
     * scatter 2 V = 524288000 in two launches, log_softmax_backward 6 V
     * = 1572864000. */
    struct module ce = {.kind = LAYER_CROSS_ENTROPY, .out = 32000};
    struct kernel_ctx c = ctx_of(2, 4096);
    struct kernel k[KERNEL_MAX_PER_LEAF];
    ck_assert_int_eq(kernel_list(&ce, &c, PHASE_FWD, k), 3);
    ck_assert_double_eq(k[1].bytes, 2097152000.0);
    ck_assert_int_eq(kernel_list(&ce, &c, PHASE_BWD, k), 3);
    c.native_loss = true;
    ck_assert_int_eq(kernel_list(&ce, &c, PHASE_FWD, k), 2);
    ck_assert_str_eq(k[0].name, "log_softmax");
    ck_assert_double_eq(k[0].bytes, 1048576000.0);
    ck_assert_double_eq(k[1].bytes, 131072.0);
    ck_assert_int_eq(kernel_list(&ce, &c, PHASE_BWD, k), 2);
    ck_assert_int_eq(k[0].launches, 2);
    ck_assert_double_eq(k[0].bytes, 524288000.0);
    ck_assert_double_eq(k[1].bytes, 1572864000.0);
}
END_TEST

START_TEST(test_fused_loss_kernels)
{
    /* lm_head = Linear(4096 -> 32000, no bias), loss = CrossEntropy(32000)
     * on 2 x 4096 tokens (BT = 8192), bf16.  Liger's chunking:
     * inc_factor = ceil(32000 / 4096) = 8, chunk_size =
     * next_power_of_2(ceil(8192 / 8)) = 1024, 8 chunks, none shorter.
     * Forward, ten entries: the zeroed grad_input (8192 x 4096) and
     * grad_weight (32000 x 4096), (33554432 + 131072000) x 2 = 329252864
     * bytes; the target count (13 x 8192 = 106496 bytes); per chunk (8
     * launches each) the logits GEMM 1024 x 32000 x 4096, the CE kernel
     * (two loads, one store of 1024 x 32000 bf16: 8 x 196608000 =
     * 1572864000 bytes), grad_input's GEMM 1024 x 4096 x 32000 and its
     * slice copy (8 x 2 x 1024 x 4096 x 2 = 134217728), grad_weight's
     * GEMM 32000 x 4096 x 1024, its .float() (8 x 131072000 x 6 =
     * 6291456000) and the += (8 x 131072000 x 8 = 8388608000); the
     * loss's sum (4 x 8192).  The three GEMMs carry 3 x 2 x 8192 x 32000
     * x 4096 FLOPs, the head's forward and backward of the plain loss.
     * The head itself launches nothing; backward is torch.equal against
     * 1.0 alone.  Saved: grad_input and grad_weight, 329252864 bytes,
     * against the plain loss's fp32 logits 8192 x 32000 x 4 = 1048576000
     * and the head's input. */
    struct module root = {.kind = LAYER_CONTAINER};
    struct module head = {.kind = LAYER_LINEAR, .in = 4096, .out = 32000,
                          .parent = &root};
    struct module ce = {.kind = LAYER_CROSS_ENTROPY, .out = 32000,
                        .parent = &root};
    struct module *kids[] = {&head, &ce};
    root.children = kids;
    root.n_children = 2;
    ck_assert_ptr_eq(layer_loss_head(&ce), &head);
    ck_assert(layer_feeds_loss(&head));

    struct kernel_ctx c = ctx_of(2, 4096);
    struct kernel k[KERNEL_MAX_PER_LEAF];
    ck_assert_int_eq(kernel_list(&ce, &c, PHASE_FWD, k), 3);   /* plain */
    ck_assert_int_eq(kernel_list(&head, &c, PHASE_FWD, k), 1);
    c.fused_loss = true;
    ck_assert_int_eq(kernel_list(&head, &c, PHASE_FWD, k), 0);
    ck_assert_int_eq(kernel_list(&head, &c, PHASE_BWD, k), 0);
    ck_assert_int_eq(kernel_list(&ce, &c, PHASE_FWD, k), 10);
    ck_assert_double_eq(k[0].bytes, 329252864.0);
    ck_assert_double_eq(k[1].bytes, 106496.0);
    ck_assert_int_eq(k[2].cls, KERNEL_GEMM);
    ck_assert_int_eq(k[2].launches, 8);
    ck_assert_int_eq(k[2].m, 1024);
    ck_assert_int_eq(k[2].n, 32000);
    ck_assert_int_eq(k[2].k, 4096);
    ck_assert_double_eq(k[3].bytes, 1572864000.0);
    ck_assert_int_eq(k[4].m, 1024);
    ck_assert_int_eq(k[4].n, 4096);
    ck_assert_int_eq(k[4].k, 32000);
    ck_assert_double_eq(k[5].bytes, 134217728.0);
    ck_assert_int_eq(k[6].m, 32000);
    ck_assert_int_eq(k[6].n, 4096);
    ck_assert_int_eq(k[6].k, 1024);
    ck_assert_double_eq(k[7].bytes, 6291456000.0);
    ck_assert_double_eq(k[8].bytes, 8388608000.0);
    ck_assert_double_eq(k[9].bytes, 32768.0);
    double gemm_flops = k[2].flops + k[4].flops + k[6].flops;
    ck_assert_double_eq(gemm_flops, 3 * 2.0 * 8192 * 32000 * 4096);
    ck_assert_int_eq(kernel_list(&ce, &c, PHASE_BWD, k), 1);

    struct layer_work w;
    layer_work(&ce, 2, 4096, 2, &w);
    ck_assert_double_eq(w.saved_bytes, 1048576000.0);
    ck_assert_double_eq(layer_fused_loss_saved_bytes(&ce, 2, 4096, 2,
                                                     w.saved_bytes),
                        329252864.0);
    layer_work(&head, 2, 4096, 2, &w);
    ck_assert_double_eq(layer_fused_loss_saved_bytes(&head, 2, 4096, 2,
                                                     w.saved_bytes), 0);

    /* 3 x 1000 tokens: chunk_size next_power_of_2(ceil(3000 / 8) = 375)
     * = 512, five full chunks (2560 rows) and a tail of 440, each its own
     * set of seven kernels. */
    c.micro_batch = 3;
    c.seq_len = 1000;
    int n = kernel_list(&ce, &c, PHASE_FWD, k);
    ck_assert_int_eq(n, 2 + 7 + 7 + 1);
    ck_assert_int_eq(k[2].m, 512);
    ck_assert_int_eq(k[2].launches, 5);
    ck_assert_int_eq(k[9].m, 440);
    ck_assert_int_eq(k[9].launches, 1);
}
END_TEST

START_TEST(test_rotary_styles)
{
    /* Attention(heads=4, kv_heads=2, head_dim=64) on 1 x 1024 tokens,
     * bf16 (b = 2): q has 1024 x 4 x 64 = 262144 elements, k 131072.
     * What the rotary embedding adds to the leaf, by style (kernel.c):
     *  - half (Hugging Face), forward: 10 b E a tensor in 5 launches,
     *    20 x 393216 = 7864320 bytes, 10 launches; backward 15 b E in 9
     *    and the clone back to the projection's layout, 2 b E: 34 x
     *    393216 = 13369344 bytes, 20 launches;
     *  - complex (torchtitan): the cast to fp32 (b + 4) E, the complex
     *    product 8 E + freqs_cis (1024 x 64 x 4 = 262144 bytes), the cast
     *    back (4 + b) E: 20 x 393216 + 2 x 262144 = 8388608 bytes in 6
     *    launches; backward the same and, for each tensor, a copy of the
     *    lazily conjugated freqs_cis, read and written: 8388608 + 4 x
     *    262144 = 9437184 in 8; compiled, the same bytes in 5, and backward one more
     *    kernel copying conj(freqs_cis) out, 2 x 262144 bytes, 6 launches;
     *  - matrix (FMS): position_ids made (arange, repeat, max, add:
     *    8 x 1024 + 16 x 1024 = 24576 bytes in 4), the rotations
     *    gathered, 2 x 1024 x 64 x 8 = 1048576 bytes, then (b + 4) E,
     *    4 E + 8 E, 8 E + 4 E, (4 + b) E = 36 E a tensor, and, q being
     *    contiguous in (B, h, T, d), the attention output's transpose
     *    copy, 2 b x 262144: 24576 + 1048576 + 36 x 393216 + 1048576 =
     *    16277504 bytes in 14 launches; backward 36 E a tensor, no
     *    gather, and the clones of the two gradients back to the
     *    projections' layout, 2 b E: (36 + 4) x 393216 = 15728640 in
     *    10;
     *    compiled, one fused kernel reading and writing q and k,
     *    2 x 393216 x 2 = 1572864 bytes. */
    struct module a = {.kind = LAYER_ATTENTION, .heads = 4, .kv_heads = 2,
                       .head_dim = 64, .causal = true};
    static const struct {
        enum rope_style rope;
        bool compile;
        enum kernel_phase ph;
        double bytes;
        int launches;
    } want[] = {
        {ROPE_HALF, false, PHASE_FWD, 7864320, 10},
        {ROPE_HALF, false, PHASE_BWD, 13369344, 20},
        {ROPE_COMPLEX, false, PHASE_FWD, 8388608, 6},
        {ROPE_COMPLEX, false, PHASE_BWD, 8388608 + 1048576, 8},
        {ROPE_COMPLEX, true, PHASE_FWD, 8388608, 5},
        {ROPE_COMPLEX, true, PHASE_BWD, 8388608 + 524288, 6},
        {ROPE_MATRIX, false, PHASE_FWD, 16277504, 14},
        {ROPE_MATRIX, false, PHASE_BWD, 15728640, 10},
        {ROPE_MATRIX, true, PHASE_FWD, 1572864, 1},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        struct kernel_ctx c = ctx_of(1, 1024);
        c.compile = want[i].compile;
        /* Hugging Face code of 4.47: repeat_kv for the KV heads, no
         * contiguous copies (test_hf_sdpa_releases has the others). */
        c.transformers_version = 447;
        struct module r = a;
        r.rope = want[i].rope;
        struct kernel k0[KERNEL_MAX_PER_LEAF], k1[KERNEL_MAX_PER_LEAF];
        int n0 = kernel_list(&a, &c, want[i].ph, k0);
        int n1 = kernel_list(&r, &c, want[i].ph, k1);
        double bytes = 0;
        int launches = 0;
        for (int j = 0; j < n1; j++) {
            bytes += k1[j].bytes;
            launches += k1[j].launches;
        }
        for (int j = 0; j < n0; j++) {
            bytes -= k0[j].bytes;
            launches -= k0[j].launches;
        }
        ck_assert_msg(bytes == want[i].bytes && launches == want[i].launches,
                      "case %zu: %.0f bytes in %d launches", i, bytes,
                      launches);
        /* --rotary overrides the model's style, never adds one. */
        c.rotary = ROPE_MATRIX;
        ck_assert_int_eq(kernel_list(&a, &c, want[i].ph, k1), n0);
    }
}
END_TEST

/* GPU launches the ops of tests/data/hf-llama-dispatch.txt stand for:
 * views none, slice_backward two (a zero fill and the copy into it), the
 * CPU flash attention op FlashAttention-2's one forward and three
 * backward (preprocess, main, dQ conversion), every other op one. */
static int
dispatch_launches(const char *phase, const char *op, int count)
{
    if (strcmp(op, "_unsafe_view.default") == 0)
        return 0;
    if (strcmp(op, "slice_backward.default") == 0)
        return 2 * count;
    if (strncmp(op, "_scaled_dot_product_flash_attention", 35) == 0)
        return strcmp(phase, "bwd") == 0 ? 3 * count : count;
    return count;
}

/* Launches per phase (0 forward, 1 backward) that the record NAME in
 * tests/data lists, by dispatch_launches. */
static void
dispatch_record(const char *name, int want[2])
{
    FILE *f = fopen(tu_data_path(name), "r");
    ck_assert_ptr_nonnull(f);
    want[0] = want[1] = 0;
    char line[256];
    while (fgets(line, sizeof line, f) != NULL) {
        char phase[8], op[128];
        int count;
        if (line[0] == '#'
            || sscanf(line, "%7s %127s %d", phase, op, &count) != 3)
            continue;
        want[strcmp(phase, "bwd") == 0] += dispatch_launches(phase, op,
                                                             count);
    }
    fclose(f);
}

/* Launches per phase of the leaves of M under PREFIX. */
static void
layer_launches(const struct model *m, const char *prefix,
               const struct kernel_ctx *c, int got[2])
{
    got[0] = got[1] = 0;
    for (int i = 0; i < m->n_modules; i++) {
        const struct module *mod = m->modules[i];
        char *path = model_module_path(mod);
        bool in_layer = strncmp(path, prefix, strlen(prefix)) == 0;
        free(path);
        if (!in_layer || mod->n_children > 0)
            continue;
        for (int ph = 0; ph < 2; ph++) {
            struct kernel k[KERNEL_MAX_PER_LEAF];
            int n = kernel_list(mod, c, ph ? PHASE_BWD : PHASE_FWD, k);
            for (int j = 0; j < n; j++)
                got[ph] += k[j].launches;
        }
    }
}


/* The leaves of M under PREFIX, in a block of class CLS, launch what
 * the record NAME lists, FWD and BWD launches; M is freed. */
static void
layer_matches_dispatch(const char *name, int fwd, int bwd, struct model *m,
                       const char *prefix, const char *cls)
{
    int want[2], got[2];
    dispatch_record(name, want);
    ck_assert_int_eq(want[0], fwd);
    ck_assert_int_eq(want[1], bwd);
    struct kernel_ctx c = ctx_of(2, 64);
    c.layer_cls = cls;
    layer_launches(m, prefix, &c, got);
    model_free(m);
    ck_assert_int_eq(got[0], want[0]);
    ck_assert_int_eq(got[1], want[1]);
}

/* The model at PATH, or a failed check. */
static struct model *
model_or_fail(const char *path)
{
    char *cause = NULL;
    struct model *m = model_load(path, &cause);
    ck_assert_msg(m != NULL, "%s", cause ? cause : "");
    return m;
}

START_TEST(test_kernels_match_dispatch)
{
    /* One decoder layer launches what PyTorch dispatched for it, recorded
     * by tests/oracle-tools/dispatch_ops.py on 2 x 64 bf16 tokens.
     *
     * Hugging Face's Llama (export-llama-config.json: hidden 256, ffn
     * 688, 4 heads; hf-llama-dispatch.txt).  Forward 38 ops: two norms
     * of 8 and their residual adds (18), seven GEMMs, rotary on q and k
     * (5 each), attention, SiLU and the product.  Backward 71 ops, 77
     * launches: the norms' 16 and the residual gradients' adds (34), 14
     * GEMMs, the rotary backward of q and k (7 ops, 9 launches, and the
     * clone back to the projection's layout: 20), the input-gradient adds
     * of k, v and up (3), attention (3 launches), SiLU's and the
     * product's (3).
     *
     * torchtitan's block (dim 256, 8 heads, 2 KV heads, ffn 896;
     * torchtitan-llama-dispatch.txt).  Forward 36: the norms and adds
     * (18), seven GEMMs, the complex rotary's cast, product and cast
     * back on q and k (6), repeat_kv's two copies, attention, SiLU, the
     * product.  Backward 65 ops, 67 launches: 34, 14 GEMMs, the rotary's
     * three and the clone of conj(freqs_cis) on q and k (8), repeat_kv's
     * two sums, the three input-gradient adds, attention (3), SiLU's and
     * the product's (3).
     *
     * FMS's block at a53f804 (torchtitan's sizes, 8 KV heads;
     * fms-llama-dispatch.txt).  Forward 42: 18, seven GEMMs, the four
     * small kernels that make position_ids and the gather of the
     * rotations, the 2x2 rotary's four on q and k (8), attention, the
     * output's transpose copy (q is contiguous in (B, h, T, d), so is
     * SDPA's output), SiLU, the product.  Backward 65 ops, 67 launches:
     * 34, 14, the rotary's four on q and k and their gradients' clones
     * (10), the input-gradient adds (3), attention (3), SiLU's and the
     * product's (3). */
    layer_matches_dispatch(
        "hf-llama-dispatch.txt", 38, 77,
        model_or_fail(tu_data_path("export-llama-config.json")),
        "model.layers.0.", "LlamaDecoderLayer");
    layer_matches_dispatch(
        "torchtitan-llama-dispatch.txt", 36, 67,
        model_or_fail(tu_data_path("torchtitan-block.ini")),
        "layers.0.", "TransformerBlock");
    layer_matches_dispatch("fms-llama-dispatch.txt", 42, 67,
                           model_or_fail(tu_data_path("fms-block.ini")),
                           "layers.0.", "LLaMABlock");
}
END_TEST

START_TEST(test_math_softmax_fp32)
{
    /* Attention(heads=4, head_dim=64, softmax_fp32) on the math path, 1 x
     * 1024 tokens, bf16: P = 4 x 1024 x 1024 = 4,194,304 probabilities.
     * Forward, after the table-timed math kernel: the softmax's fp32
     * output beyond the table's bf16, 2 P = 8,388,608 bytes (no launch of
     * its own), and the cast back, one launch, 6 P = 25,165,824.
     * Backward: the gradient cast up, 6 P, and the fp32 softmax
     * backward's extra reads, 2 x 2 P = 16,777,216.  Without the flag,
     * none of them. */
    struct module a = {.kind = LAYER_ATTENTION, .heads = 4, .kv_heads = 4,
                       .head_dim = 64, .causal = true, .softmax_fp32 = true};
    struct kernel_ctx c = ctx_of(1, 1024);
    c.attn = ATTN_MATH;
    struct kernel k[KERNEL_MAX_PER_LEAF];
    int n = kernel_list(&a, &c, PHASE_FWD, k);
    ck_assert_int_eq(n, 4);   /* math, fp32 softmax, cast, transpose copy */
    ck_assert_int_eq(k[1].launches, 0);
    ck_assert_double_eq(k[1].bytes, 8388608.0);
    ck_assert_int_eq(k[2].launches, 1);
    ck_assert_double_eq(k[2].bytes, 25165824.0);
    n = kernel_list(&a, &c, PHASE_BWD, k);
    ck_assert_int_eq(n, 4);   /* math, cast up, fp32 softmax, copy */
    ck_assert_double_eq(k[1].bytes, 25165824.0);
    ck_assert_double_eq(k[2].bytes, 16777216.0);
    a.softmax_fp32 = false;
    ck_assert_int_eq(kernel_list(&a, &c, PHASE_FWD, k), 2);
    ck_assert_int_eq(kernel_list(&a, &c, PHASE_BWD, k), 2);
}
END_TEST

START_TEST(test_hf_sdpa_releases)
{
    /* Hugging Face's Llama attention, 4 heads over 2 KV heads of 64, on 1
     * x 1024 tokens, bf16, FlashAttention-2: q 262,144 elements (E), k
     * and v 131,072 each.  transformers 4.47: repeat_kv copies k and v to
     * 4 heads (2 x 262,144 strided elements), no other copy.  4.50
     * (contiguous copies, no enable_gqa): q's copy (E) on top, k and v
     * contiguous after repeat_kv; the output is then (B, h, T, d), so
     * its transpose copy (E) too.  4.55 on PyTorch 2.10 (both): no
     * repeat_kv, q, k and v copied (262,144 + 2 x 131,072) and the
     * output's copy.  5.25: no repeat_kv, no copies; on PyTorch 2.4,
     * repeat_kv again (enable_gqa needs 2.5). */
    struct module a = {.kind = LAYER_ATTENTION, .heads = 4, .kv_heads = 2,
                       .head_dim = 64, .causal = true, .rope = ROPE_HALF};
    struct module plain = a;
    plain.rope = ROPE_NONE;
    static const struct {
        int hf, torch;
        double strided;   /* beyond the rotary's, which is the same */
        bool repeat;
    } want[] = {
        {447, 210, 524288, true},
        {450, 210, 524288 + 262144 + 262144, true},
        {455, 210, 262144 + 262144 + 262144, false},
        {525, 210, 0, false},
        {525, 204, 524288, true},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        struct kernel_ctx c = ctx_of(1, 1024);
        c.transformers_version = want[i].hf;
        c.torch_version = want[i].torch;
        struct kernel k[KERNEL_MAX_PER_LEAF];
        int n = kernel_list(&a, &c, PHASE_FWD, k), repeat = 0;
        double strided = 0;
        for (int j = 0; j < n; j++) {
            repeat |= strcmp(k[j].name, "repeat_kv (k, v)") == 0;
            if (strncmp(k[j].name, "rotary", 6) != 0)
                strided += k[j].strided_elems;
        }
        ck_assert_msg(strided == want[i].strided && repeat == want[i].repeat,
                      "transformers %d: %.0f strided, repeat %d", want[i].hf,
                      strided, repeat);
        ck_assert(kernel_attention_native_gqa(&a, &c) == !want[i].repeat);
        /* Not Hugging Face's code: always repeat_kv, never the copies. */
        ck_assert(!kernel_attention_native_gqa(&plain, &c));
    }
}
END_TEST

START_TEST(test_attention_strided_copies)
{
    /* Attention(heads=4, kv_heads=2, head_dim=64) on 1 x 1024 tokens,
     * bf16: q 262144 elements (E), k 131072.  Forward with
     * FlashAttention-2 and no rotary embedding: repeat_kv copies k and v
     * to 4 heads, 2 x 262144 = 524288 elements on the strided path (an
     * expanded input), and no transpose copy (SDPA's output is the
     * transpose of a (B, T, h, d) tensor); on the math path the copy is
     * there, E strided elements.  Hugging Face's rotary embedding adds
     * 4.5 E a tensor: 4.5 x (262144 + 131072) = 1769472. */
    struct module a = {.kind = LAYER_ATTENTION, .heads = 4, .kv_heads = 2,
                       .head_dim = 64, .causal = true};
    struct kernel_ctx c = ctx_of(1, 1024);
    c.transformers_version = 447;   /* repeat_kv, no contiguous copies */
    struct kernel k[KERNEL_MAX_PER_LEAF];
    const char *attn_names[2] = {"flash", "math"};
    for (int math = 0; math < 2; math++) {
        c.attn = math ? ATTN_MATH : ATTN_FLASH2;
        for (int half = 0; half < 2; half++) {
            struct module m = a;
            m.rope = half ? ROPE_HALF : ROPE_NONE;
            int n = kernel_list(&m, &c, PHASE_FWD, k), copies = 0;
            double strided = 0;
            for (int i = 0; i < n; i++) {
                strided += k[i].strided_elems;
                copies += strcmp(k[i].name, "transpose copy (output)") == 0;
            }
            ck_assert_msg(copies == math, "%s: %d copies", attn_names[math],
                          copies);
            ck_assert_double_eq(strided, 524288.0 + math * 262144.0
                                             + half * 1769472.0);
        }
    }
    /* Compiled, repeat_kv is Inductor's and vectorized. */
    c.attn = ATTN_FLASH2;
    c.compile = true;
    int n = kernel_list(&a, &c, PHASE_FWD, k);
    for (int i = 0; i < n; i++)
        ck_assert_double_eq(k[i].strided_elems, 0);
}
END_TEST

START_TEST(test_attention_dropout)
{
    /* Attention(heads=16, head_dim=64, causal, dropout 0.1) on 1 x 2048
     * tokens, bf16.  FlashAttention-2 draws a Philox byte per computed
     * score: 2048 x 2048 x 16 / 2 = 33554432 scores under the causal
     * mask, 5 integer instructions each forward (167772160) and 6
     * backward (201326592), on top of the table's time.  A100: 64 INT32
     * lanes per SM as FP32, 19.5e12 / 2 = 9.75e12 a second, so forward
     * takes 167772160 / 9.75e12 = 17.2 us more; H100: 64 INT32 lanes
     * against 128 FP32, 67e12 / 4 = 16.75e12, 12.0 us more backward
     * (201326592 / 16.75e12). */
    struct module a = {.kind = LAYER_ATTENTION, .heads = 16, .kv_heads = 16,
                       .head_dim = 64, .causal = true};
    struct module ad = a;
    ad.dropout = 0.1;
    struct kernel_ctx c = ctx_of(1, 2048);
    struct kernel k[KERNEL_MAX_PER_LEAF], kd[KERNEL_MAX_PER_LEAF];
    int n = kernel_list(&a, &c, PHASE_FWD, k);
    ck_assert_int_eq(kernel_list(&ad, &c, PHASE_FWD, kd), n);
    int at = 0;
    while (at < n && k[at].cls != KERNEL_ATTN_FWD)
        at++;
    ck_assert_int_lt(at, n);
    ck_assert_double_eq(k[at].int_ops, 0);
    ck_assert_double_eq(kd[at].int_ops, 167772160.0);
    struct topo *a100 = topo_named("dgx-a100-80g");
    double extra = kernel_time_s(a100, &kd[at], DTYPE_BF16)
                   - kernel_time_s(a100, &k[at], DTYPE_BF16);
    ck_assert_double_eq_tol(extra, 167772160.0 / 9.75e12, 1e-12);
    n = kernel_list(&a, &c, PHASE_BWD, k);
    kernel_list(&ad, &c, PHASE_BWD, kd);
    at = 0;
    while (at < n && k[at].cls != KERNEL_ATTN_BWD)
        at++;
    ck_assert_double_eq(kd[at].int_ops, 201326592.0);
    struct topo *h100 = topo_named("dgx-h100");
    extra = kernel_time_s(h100, &kd[at], DTYPE_BF16)
            - kernel_time_s(h100, &k[at], DTYPE_BF16);
    ck_assert_double_eq_tol(extra, 201326592.0 / 16.75e12, 1e-12);

    /* Math path: native_dropout on the 16 x 2048 x 2048 = 67108864
     * probabilities, reading them and writing the output and a one-byte
     * mask, 67108864 x 5 = 335544320 bytes, one more kernel each way;
     * saved: the softmax output, the dropped copy and the mask,
     * 67108864 x (2 + 2 + 1) = 335544320 bytes against 134217728
     * without dropout, each less the output and log-sum-exp a fused
     * kernel would keep and the math path does not, 2048 x 16 x (64 x 2
     * + 4) = 4325376: 331218944 and 129892352 beyond layer_work's. */
    c.attn = ATTN_MATH;
    n = kernel_list(&a, &c, PHASE_FWD, k);
    ck_assert_int_eq(kernel_list(&ad, &c, PHASE_FWD, kd), n + 1);
    int found = 0;
    for (int i = 0; i < n + 1; i++)
        if (strcmp(kd[i].name, "native_dropout (probabilities)") == 0) {
            ck_assert_double_eq(kd[i].bytes, 335544320.0);
            found = 1;
        }
    ck_assert(found);
    ck_assert_int_eq(kernel_list(&ad, &c, PHASE_BWD, kd),
                     kernel_list(&a, &c, PHASE_BWD, k) + 1);
    ck_assert_double_eq(layer_math_scores_bytes(&a, 1, 2048, 2),
                        129892352.0);
    ck_assert_double_eq(layer_math_scores_bytes(&ad, 1, 2048, 2),
                        331218944.0);

    /* nn.MultiheadAttention(64, 4, dropout=0.1) on 1 x 128 tokens: its
     * saved (5 x 128 x 64 + 128 x 128 x 4) x 2 = 212992 bytes and the
     * dropped probabilities and mask, 65536 x 3 = 196608, more. */
    struct module mha = {.kind = LAYER_MHA, .out = 64, .heads = 4};
    struct layer_work w;
    layer_work(&mha, 1, 128, 2, &w);
    ck_assert_double_eq(w.saved_bytes, 212992.0);
    mha.dropout = 0.1;
    layer_work(&mha, 1, 128, 2, &w);
    ck_assert_double_eq(w.saved_bytes, 409600.0);

    /* FlashAttention-3 runs without dropout (hopper/flash_api.cpp sets
     * p_dropout = 0): GPT-2 (attn_pdrop 0.1) is refused on it, and
     * FlashAttention-2 takes it. */
    char *cause = NULL;
    struct model *gpt2 = model_load("gpt2", &cause);
    ck_assert_msg(gpt2 != NULL, "%s", cause ? cause : "");
    enum attn_kernel got;
    ck_assert_int_eq(kernel_attention_for(gpt2, ATTN_FLASH3, h100,
                                          DTYPE_BF16, &got, &cause), -1);
    ck_assert_msg(strstr(cause, "FlashAttention-3 has no attention "
                                "dropout") != NULL, "%s", cause);
    free(cause);
    cause = NULL;
    ck_assert_int_eq(kernel_attention_for(gpt2, ATTN_FLASH2, h100,
                                          DTYPE_BF16, &got, &cause), 0);
    model_free(gpt2);
    topo_free(a100);
    topo_free(h100);
}
END_TEST

START_TEST(test_norm_in_block_adds_residual)
{
    /* A norm inside the block class opens a residual branch: its list
     * ends with the add, 3 E b bytes (two inputs, one output). */
    struct module block = {.kind = LAYER_CONTAINER, .cls = unconst("Block")};
    struct module rms = {.kind = LAYER_RMSNORM, .out = 1024,
                         .parent = &block};
    struct kernel_ctx c = ctx_of(1, 512);
    struct kernel k[KERNEL_MAX_PER_LEAF];
    int n = kernel_list(&rms, &c, PHASE_FWD, k);
    ck_assert_int_eq(n, 9);
    ck_assert_str_eq(k[8].name, "add (residual)");
    ck_assert_double_eq(k[8].bytes, 3.0 * 524288 * 2);
}
END_TEST

START_TEST(test_attention_table_read_and_interpolated)
{
    /* H100 FlashAttention-2 forward, causal, head dim 128, measured at
     * 2048 and 4096 tokens: 298 and 319 TFLOPS.  At 2^11.5 = 2896.3
     * tokens the table interpolates halfway in log2(S): 308.5 TFLOPS, or
     * 308.5 / 989 of the H100's peak. */
    double e = attn_table_efficiency(ATTN_FLASH2, GPU_ARCH_HOPPER, 128,
                                     pow(2, 11.5), true, false);
    ck_assert_double_eq_tol(e, 308.5 / 989, 1e-9);
    /* Past the longest measured sequence (16k: 335) the figure holds. */
    e = attn_table_efficiency(ATTN_FLASH2, GPU_ARCH_HOPPER, 128, 65536,
                              true, false);
    ck_assert_double_eq_tol(e, 335.0 / 989, 1e-9);
    /* Backward from forward+backward (294) and forward (319) at 4096:
     * 3.5 / 294 = 1 / 319 + 2.5 / P_b, P_b = 2.5 / (3.5/294 - 1/319) =
     * 285.07 TFLOPS. */
    e = attn_table_efficiency(ATTN_FLASH2, GPU_ARCH_HOPPER, 128, 4096, true,
                              true);
    ck_assert_double_eq_tol(e * 989, 2.5 / (3.5 / 294 - 1.0 / 319), 1e-6);
    /* A100 measured forward+backward only (173 at 4096, causal, d 128):
     * split by H100's ratio at the same point, rho = P_f / P_b = 319 /
     * 285.07; P_b = 173 (1 / rho + 2.5) / 3.5, P_f = rho P_b. */
    double pb_h = 2.5 / (3.5 / 294 - 1.0 / 319);
    double rho = 319 / pb_h;
    double pb = 173 * (1 / rho + 2.5) / 3.5;
    ck_assert_double_eq_tol(attn_table_efficiency(ATTN_FLASH2,
                                                  GPU_ARCH_AMPERE, 128, 4096,
                                                  true, true) * 312,
                            pb, 1e-6);
    ck_assert_double_eq_tol(attn_table_efficiency(ATTN_FLASH2,
                                                  GPU_ARCH_AMPERE, 128, 4096,
                                                  true, false) * 312,
                            rho * pb, 1e-6);
    /* Head dim 96 lies halfway between 64 and 128 (H100 flash2 forward,
     * causal, 4096: 284 and 319). */
    ck_assert_double_eq_tol(attn_table_efficiency(ATTN_FLASH2,
                                                  GPU_ARCH_HOPPER, 96, 4096,
                                                  true, false) * 989,
                            (284.0 + 319) / 2, 1e-6);
}
END_TEST

START_TEST(test_attention_choice)
{
    enum attn_kernel k;
    const char *why;
    /* SDPA on A100 in bf16 with head dim 128 takes flash; in fp32 the
     * memory-efficient kernel; with an ALiBi bias mask too. */
    ck_assert_int_eq(attn_table_resolve(ATTN_AUTO, GPU_ARCH_AMPERE,
                                        DTYPE_BF16, 128, false, &k, &why), 0);
    ck_assert_int_eq(k, ATTN_FLASH2);
    ck_assert_int_eq(attn_table_resolve(ATTN_AUTO, GPU_ARCH_AMPERE,
                                        DTYPE_FP32, 128, false, &k, &why), 0);
    ck_assert_int_eq(k, ATTN_XFORMERS);
    ck_assert_int_eq(attn_table_resolve(ATTN_AUTO, GPU_ARCH_AMPERE,
                                        DTYPE_BF16, 128, true, &k, &why), 0);
    ck_assert_int_eq(k, ATTN_XFORMERS);
    /* FlashAttention-3 is Hopper's only. */
    ck_assert_int_eq(attn_table_resolve(ATTN_FLASH3, GPU_ARCH_AMPERE,
                                        DTYPE_BF16, 128, false, &k, &why),
                     -1);
    ck_assert_ptr_nonnull(strstr(why, "Hopper"));
    ck_assert_int_eq(attn_table_resolve(ATTN_FLASH3, GPU_ARCH_HOPPER,
                                        DTYPE_BF16, 128, false, &k, &why), 0);
}
END_TEST

START_TEST(test_trends)
{
    struct topo *t = topo_named("dgx-a100-80g");
    /* Longer sequences cost more attention time per token (quadratic
     * work at a saturating efficiency). */
    struct module at = {.kind = LAYER_ATTENTION, .heads = 32, .kv_heads = 32,
                        .head_dim = 128, .causal = true};
    double prev = 0;
    for (int64_t s = 512; s <= 32768; s *= 2) {
        struct kernel_ctx c = ctx_of(1, s);
        struct kernel k[KERNEL_MAX_PER_LEAF];
        int n = kernel_list(&at, &c, PHASE_FWD, k);
        double sec = 0;
        for (int i = 0; i < n; i++)
            if (k[i].cls == KERNEL_ATTN_FWD)
                sec += kernel_time_s(t, &k[i], DTYPE_BF16);
        ck_assert(sec / (double)s > prev);
        prev = sec / (double)s;
    }
    /* Narrower GEMMs are less efficient: 8192 tokens by a width d
     * square projection, d from 4096 down to 256. */
    double last = 1;
    for (int64_t d = 4096; d >= 256; d /= 2) {
        double e = kernel_gemm_efficiency(t, 8192, d, d, 1);
        ck_assert(e <= last);
        last = e;
    }
    ck_assert(last < 0.6 * kernel_gemm_efficiency(t, 8192, 4096, 4096, 1));
    /* No shape passes the ceiling, the best a search over shapes found;
     * the shape it was found at comes within 4 %: 256x128 tiles, 4 x 80 =
     * 320 CTAs in 3 waves of 108 SMs (320/324), K fill 5120/5248: 0.869 x
     * 0.9877 x 0.9756 = 0.8374. */
    ck_assert_double_eq_tol(kernel_gemm_efficiency(t, 1024, 10240, 5120, 1),
                            0.869 * (320.0 / 324) * (5120.0 / 5248), 1e-9);
    for (int64_t d = 256; d <= 65536; d *= 2)
        ck_assert(kernel_gemm_efficiency(t, d, d, d, 1)
                  <= t->gemm_efficiency);
    topo_free(t);
}
END_TEST

/* MFU and HFU stay below what the GPU can do, over the built-in models,
 * sequences 512 to 32k, micro-batches 1 and 4, on one A100 and one H100
 * node: the executed FLOPs over the step can never exceed the best GEMM's
 * share of peak, and model FLOPs (no recomputation, backward 2x) never
 * exceed executed ones. */
START_TEST(test_mfu_below_ceiling)
{
    static const char *const topos[] = {"dgx-a100-80g", "dgx-h100"};
    static const int64_t seqs[] = {512, 4096, 32768};
    int runs = 0;
    for (int i = 0; i < builtin_n_files; i++) {
        const struct builtin_file *f = &builtin_files[i];
        if (strcmp(f->dir, "models") != 0)
            continue;
        for (int ti = 0; ti < 2; ti++)
            for (int si = 0; si < 3; si++)
                for (int mb = 1; mb <= 4; mb += 3) {
                    char args[256];
                    snprintf(args, sizeof args, "--model %s --topology %s "
                             "--seq-len %lld --micro-batch %d --param-dtype "
                             "bf16 --iterations 1", f->name, topos[ti],
                             (long long)seqs[si], mb);
                    struct tu_run r;
                    char *cause = NULL;
                    if (tu_run(&r, args, 1, &cause) != 0) {
                        free(cause);   /* e.g. a sequence past the
                                          model's table */
                        tu_free(&r);
                        continue;
                    }
                    runs++;
                    ck_assert_msg(r.met.mfu <= r.met.hfu + 1e-9,
                                  "%s: mfu %g > hfu %g", args, r.met.mfu,
                                  r.met.hfu);
                    ck_assert_msg(r.met.hfu <= r.r.topo->gemm_efficiency,
                                  "%s: hfu %g", args, r.met.hfu);
                    /* A run that fits is a prediction of a real one:
                     * none reaches 80 % MFU. */
                    if (r.met.fits)
                        ck_assert_msg(r.met.mfu <= 0.8, "%s: mfu %g", args,
                                      r.met.mfu);
                    tu_free(&r);
                }
    }
    ck_assert_int_gt(runs, 100);
}
END_TEST

START_TEST(test_straggler_pace)
{
    /* e(n), the expected largest of n standard normals: 0 for one draw,
     * 1/sqrt(pi) = 0.5641896 for two (the classical closed form), and
     * 1.4236003 for eight (tables of normal order statistics). */
    ck_assert_double_eq(straggler_expected_max(1), 0);
    ck_assert_double_eq_tol(straggler_expected_max(2), 0.5641896, 1e-6);
    ck_assert_double_eq_tol(straggler_expected_max(8), 1.4236003, 1e-6);
    /* The range of 8 is 2 e(8), so sigma = spread / (2 e(8)) and the
     * slowest of 8 runs at 1 - sigma e(8) = 1 - spread / 2: 0.975 for
     * the default 5 %.  The slowest of 128: e(128) = 2.5946 (same
     * tables), 1 - 0.05 x 2.5946 / 2.8472 = 0.95444. */
    ck_assert_double_eq_tol(straggler_speed(0.05, 8), 0.975, 1e-12);
    ck_assert_double_eq_tol(straggler_speed(0.05, 128), 0.95444, 1e-5);
    ck_assert_double_eq(straggler_speed(0.05, 1), 1);
    ck_assert_double_eq(straggler_speed(0, 128), 1);
    /* More GPUs, a slower slowest one. */
    double prev = 1;
    for (int n = 2; n <= 1 << 16; n *= 2) {
        double v = straggler_speed(0.05, n);
        ck_assert_double_lt(v, prev);
        prev = v;
    }
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("kernel");
    TCase *tc = tcase_create("kernel");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_linear_three_gemms);
    tcase_add_test(tc, test_norm_bytes);
    tcase_add_test(tc, test_dtype_casts_by_release);
    tcase_add_test(tc, test_torch_version_parse);
    tcase_add_test(tc, test_strided_kernels);
    tcase_add_test(tc, test_dropout_kernels);
    tcase_add_test(tc, test_fused_loss_kernels);
    tcase_add_test(tc, test_native_loss_kernels);
    tcase_add_test(tc, test_attention_dropout);
    tcase_add_test(tc, test_rotary_styles);
    tcase_add_test(tc, test_kernels_match_dispatch);
    tcase_add_test(tc, test_attention_strided_copies);
    tcase_add_test(tc, test_hf_sdpa_releases);
    tcase_add_test(tc, test_math_softmax_fp32);
    tcase_add_test(tc, test_float8_linear_kernels);
    tcase_add_test(tc, test_float8_linear_compiled);
    tcase_add_test(tc, test_float8_linear_rowwise);
    tcase_add_test(tc, test_float8_selective_recompute);
    tcase_add_test(tc, test_norm_in_block_adds_residual);
    tcase_add_test(tc, test_attention_table_read_and_interpolated);
    tcase_add_test(tc, test_attention_choice);
    tcase_add_test(tc, test_trends);
    tcase_add_test(tc, test_mfu_below_ceiling);
    tcase_add_test(tc, test_straggler_pace);
    suite_add_tcase(s, tc);
    return tu_main(s);
}
