/*
 * kineto_kernels.c: a profiler trace's kernels as the compute model's
 * kernels (see kineto_kernels.h).
 *
 * The trace is what torch.profiler.profile(activities=[CPU, CUDA],
 * record_shapes=True) exports (export_chrome_trace): Trace Event Format
 * complete events ("ph": "X", ts and dur in microseconds).  The rules:
 *
 *  - Launch and operator.  A GPU kernel ("cat": "kernel") carries
 *    args.correlation; the CUDA runtime or driver call with the same
 *    correlation ("cat": "cuda_runtime" / "cuda_driver", cudaLaunchKernel
 *    and kin) launched it.  Its operator is the innermost CPU op ("cat":
 *    "cpu_op") on the launch's pid and tid whose span holds the launch's
 *    start; the ops around that one, innermost first, are its chain.
 *    With record_shapes=True an op has args "Input Dims" (one list per
 *    input: a tensor's sizes, [] for a scalar or None, a list of lists for
 *    a TensorList) and "Input type" ("c10::BFloat16", "float", ...).
 *  - NCCL: a name starting with "nccl" (ncclKernel_..., ncclDevKernel_...)
 *    is communication, counted and left out.
 *  - Attention: a name containing flash_fwd, flash_bwd, fmha, flash::,
 *    FlashAttn or attention, or an innermost op of the fused kernels
 *    (_flash_attention_*, _efficient_attention_*, _cudnn_attention_*).
 *    The shapes are those of the nearest op in the chain whose name holds
 *    "scaled_dot_product": query [B, H, S, D] (input 0 forward, 1
 *    backward, after grad_out) and key [B, Hkv, Skv, D] (the next input).
 *    FLOPs are 4 B H S Skv D forward, halved when causal, and 2.5 times
 *    that backward, as kernel.c counts them.  is_causal is read from the
 *    op's "Concrete Inputs" at its place in the ATen signature
 *    (causal_arg below); where it is not recorded the call is taken as
 *    causal and counted (n_causal_assumed), since training a decoder is
 *    what this is for.  Backward is a name with bwd, backward or cutlassB,
 *    or a "backward" op in the chain.  The kernel: FlashAttention-3 for
 *    names with Sm90/flash3, cuDNN for cudnn, memory-efficient (xformers')
 *    for fmha/efficient, else FlashAttention-2 (SDPA's flash).  Every
 *    kernel of one SDPA call and direction is one entry, as kernel.c
 *    counts a flash backward's three launches as one kernel.
 *  - GEMM: a name containing gemm, gemv, cutlass, xmma (sm80_xmma_...,
 *    sm90_xmma_...), cublas or splitKreduce, or any kernel but an
 *    elementwise, copy or fill one whose innermost op is a matrix product.
 *    M, N, K come from the nearest op in the chain that is one:
 *      aten::mm       [[M, K], [K, N]]
 *      aten::addmm    [[N] or [M, N], [M, K], [K, N]]
 *      aten::bmm      [[B, M, K], [B, K, N]]
 *      aten::baddbmm  [[B, M, N], [B, M, K], [B, K, N]]
 *      aten::matmul   [[..., M, K], [K, N]] (leading dims fold into M),
 *                     or [[..., M, K], [..., K, N]] batched
 *      aten::linear   [[..., K], [N, K], ...] (leading dims fold into M)
 *    FLOPs 2 M N K B, bytes (M K + K N + M N) B at the element size.  The
 *    kernels of one call (a GEMM and its split-K reduction) are one entry.
 *  - The rest is memory-bound: a reduction when the kernel's or its op's
 *    name holds reduce, norm, softmax, sum or mean (any case), else
 *    elementwise.  Bytes: every input tensor's elements times the size of
 *    its "Input type", plus for elementwise ops an output as large as the
 *    largest input (a reduction's output is small).  One entry per op call
 *    and class.
 *  - Compute dtype (GEMM, attention): the first tensor input's type;
 *    "float" is fp32 (PyTorch leaves TF32 matmuls off by default).
 *  - Left out and counted (n_unshaped): compute kernels with no operator,
 *    no shape where one is needed, an input type of unknown size (a
 *    TensorList: foreach optimizer kernels), or no duration.
 *  - Host: kernel launches (runtime calls named ...LaunchKernel...) are
 *    backward when their chain holds an op named autograd::engine... or
 *    ...Backward..., else forward.  The main thread is the one with the
 *    most forward launches; the forward gap is the median time between
 *    consecutive forward launch starts on it, the backward gap the same
 *    over consecutive backward launches on any one thread (autograd's
 *    device thread).  Only launches inside some op count.
 */
#include "kineto_kernels.h"
#include "kineto.h"
#include "median.h"
#include "str_ci.h"
#include "textfile.h"
#include "xalloc.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Traces of a few steps of a large model run to hundreds of MB. */
#define PROFILE_MAX_FILE_BYTES ((size_t)2 << 30)
#define MAX_DIMS 8

struct cpu_op {
    int64_t pid, tid, ts, end;
    const char *name;
    const json_t *args;
    int parent;               /* enclosing op, -1 at the top */
};

struct launch {
    int64_t pid, tid, ts, corr;
    bool kernel_launch;       /* a ...LaunchKernel... call */
    int op;                   /* innermost op around it, -1 */
};

struct kev {
    int64_t corr, ts;
    int64_t dur_ns;
    const char *name;
};

/* A classified kernel before grouping. */
struct tagged {
    int anchor;               /* op the entry is described by */
    int cls;                  /* enum kernel_class */
    int64_t ts;
    int64_t dur_ns;
    const char *name;
    int attn_op_bwd;          /* attention: direction */
};

static bool
has(const char *s, const char *sub)
{
    return s != NULL && strstr(s, sub) != NULL;
}

static int
cmp_i64(int64_t a, int64_t b)
{
    return (a > b) - (a < b);
}

static int
cmp_op(const void *pa, const void *pb)
{
    const struct cpu_op *a = pa, *b = pb;
    int c = cmp_i64(a->pid, b->pid);
    if (!c) c = cmp_i64(a->tid, b->tid);
    if (!c) c = cmp_i64(a->ts, b->ts);
    if (!c) c = cmp_i64(b->end, a->end);     /* the longer one outside */
    if (!c) c = strcmp(a->name, b->name);
    return c;
}

static int
cmp_launch_thread(const void *pa, const void *pb)
{
    const struct launch *a = pa, *b = pb;
    int c = cmp_i64(a->pid, b->pid);
    if (!c) c = cmp_i64(a->tid, b->tid);
    if (!c) c = cmp_i64(a->ts, b->ts);
    if (!c) c = cmp_i64(a->corr, b->corr);
    return c;
}

static int
cmp_corr_index(const void *pa, const void *pb)
{
    const int64_t *a = pa, *b = pb;   /* {corr, index} */
    int c = cmp_i64(a[0], b[0]);
    return c ? c : cmp_i64(a[1], b[1]);
}

static int
cmp_tagged(const void *pa, const void *pb)
{
    const struct tagged *a = pa, *b = pb;
    int c = (a->anchor > b->anchor) - (a->anchor < b->anchor);
    if (!c) c = (a->cls > b->cls) - (a->cls < b->cls);
    if (!c) c = cmp_i64(a->ts, b->ts);
    if (!c) c = cmp_i64(a->dur_ns, b->dur_ns);
    if (!c) c = strcmp(a->name, b->name);
    return c;
}

/* ---- shapes ---------------------------------------------------------- */

/* Bytes per element of a recorded "Input type"; 0 for what is not a
 * tensor (a Scalar, "", None), -1 when unknown (TensorList, ...). */
static int
type_bytes(const char *type)
{
    static const struct { const char *name; int bytes; } types[] = {
        {"float", 4}, {"double", 8}, {"c10::Half", 2}, {"c10::BFloat16", 2},
        {"long int", 8}, {"long", 8}, {"int", 4}, {"short int", 2},
        {"signed char", 1}, {"unsigned char", 1}, {"bool", 1},
        {"c10::complex<float>", 8}, {"c10::complex<double>", 16},
        {"Scalar", 0}, {"", 0}};
    if (type == NULL)
        return 0;
    if (strncmp(type, "c10::Float8", 11) == 0)
        return 1;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcmp(type, types[i].name) == 0)
            return types[i].bytes;
    return -1;
}

static enum dtype
type_dtype(const char *type)
{
    if (type == NULL)
        return DTYPE_BF16;
    if (strcmp(type, "c10::BFloat16") == 0)
        return DTYPE_BF16;
    if (strcmp(type, "c10::Half") == 0)
        return DTYPE_FP16;
    if (strncmp(type, "c10::Float8", 11) == 0)
        return DTYPE_FP8;
    return DTYPE_FP32;
}

/* The sizes of input I of ARGS, a flat list of integers, into D (at most
 * MAX_DIMS); their count, or -1 when absent or not such a list. */
static int
input_dims(const json_t *args, size_t i, int64_t *d)
{
    const json_t *all = json_object_get(args, "Input Dims");
    const json_t *one = json_array_get(all, i);
    if (!json_is_array(one) || json_array_size(one) > MAX_DIMS)
        return -1;
    size_t j;
    const json_t *v;
    json_array_foreach(one, j, v) {
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return -1;
        d[j] = json_integer_value(v);
    }
    return (int)json_array_size(one);
}

static const char *
input_type(const json_t *args, size_t i)
{
    const json_t *t = json_array_get(json_object_get(args, "Input type"), i);
    return json_is_string(t) ? json_string_value(t) : NULL;
}

static double
prod(const int64_t *d, int from, int to)
{
    double p = 1;
    for (int i = from; i < to; i++)
        p *= (double)d[i];
    return p;
}

/* The first tensor input's type, or NULL. */
static const char *
first_tensor_type(const json_t *args)
{
    const json_t *all = json_object_get(args, "Input Dims");
    for (size_t i = 0; i < json_array_size(all); i++) {
        int64_t d[MAX_DIMS];
        if (input_dims(args, i, d) > 0)
            return input_type(args, i);
    }
    return NULL;
}

/* Memory traffic of an op's call (see the header); -1 when an input's
 * size cannot be told. */
static double
op_bytes(const json_t *args, bool elementwise)
{
    const json_t *all = json_object_get(args, "Input Dims");
    double sum = 0, largest = 0;
    size_t i;
    const json_t *one;
    json_array_foreach(all, i, one) {
        if (!json_is_array(one))
            return -1;
        if (json_array_size(one) == 0)
            continue;
        int64_t d[MAX_DIMS];
        int nd = input_dims(args, i, d);
        int b = type_bytes(input_type(args, i));
        if (nd < 0 || b < 0)
            return -1;   /* a TensorList, or a type of unknown size */
        double bytes = prod(d, 0, nd) * b;
        sum += bytes;
        if (bytes > largest)
            largest = bytes;
    }
    return sum + (elementwise ? largest : 0);
}

static bool
is_gemm_op(const char *name)
{
    static const char *const ops[] = {"aten::mm", "aten::addmm", "aten::bmm",
                                      "aten::baddbmm", "aten::matmul",
                                      "aten::linear"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(name, ops[i]) == 0)
            return true;
    return false;
}

/* M, N, K and batch of a GEMM op's call; 0, or -1 when its dims are not
 * those of the rule. */
static int
gemm_shape(const struct cpu_op *op, struct kernel *k)
{
    int64_t a[MAX_DIMS], b[MAX_DIMS];
    const char *n = op->name;
    int ia = 0, ib = 1;
    if (strcmp(n, "aten::addmm") == 0 || strcmp(n, "aten::baddbmm") == 0)
        ia = 1, ib = 2;
    int na = input_dims(op->args, (size_t)ia, a);
    int nb = input_dims(op->args, (size_t)ib, b);
    double m, nn, kk, batch = 1;
    if (strcmp(n, "aten::mm") == 0 || strcmp(n, "aten::addmm") == 0) {
        if (na != 2 || nb != 2 || a[1] != b[0])
            return -1;
        m = (double)a[0], kk = (double)a[1], nn = (double)b[1];
    } else if (strcmp(n, "aten::bmm") == 0
               || strcmp(n, "aten::baddbmm") == 0) {
        if (na != 3 || nb != 3 || a[2] != b[1])
            return -1;
        batch = (double)a[0], m = (double)a[1], kk = (double)a[2];
        nn = (double)b[2];
    } else if (strcmp(n, "aten::matmul") == 0) {
        if (na < 2 || nb < 2 || a[na - 1] != b[nb - 2])
            return -1;
        kk = (double)a[na - 1], nn = (double)b[nb - 1];
        if (nb == 2) {
            m = prod(a, 0, na - 1);
        } else {
            m = (double)a[na - 2];
            batch = prod(a, 0, na - 2);
        }
    } else {   /* aten::linear: weight [N, K] */
        if (na < 1 || nb != 2 || a[na - 1] != b[1])
            return -1;
        kk = (double)a[na - 1], nn = (double)b[0];
        m = prod(a, 0, na - 1);
    }
    if (!(m > 0 && nn > 0 && kk > 0 && batch > 0))
        return -1;
    int eb = type_bytes(input_type(op->args, (size_t)ia));
    k->cls = KERNEL_GEMM;
    k->m = (int64_t)m;
    k->n = (int64_t)nn;
    k->k = (int64_t)kk;
    k->batch = (int64_t)batch;
    k->flops = 2 * m * nn * kk * batch;
    k->bytes = (m * kk + kk * nn + m * nn) * batch * (eb > 0 ? eb : 2);
    return 0;
}

/* Where is_causal sits among the arguments of the SDPA ops (ATen's
 * native_functions.yaml); -1 for an op without one. */
static int
causal_arg(const char *op)
{
    static const struct { const char *name; int arg; } sig[] = {
        {"aten::scaled_dot_product_attention", 5},
        {"aten::_scaled_dot_product_flash_attention", 4},
        {"aten::_scaled_dot_product_flash_attention_backward", 11},
        {"aten::_scaled_dot_product_efficient_attention", 6},
        {"aten::_scaled_dot_product_efficient_attention_backward", 11},
        {"aten::_scaled_dot_product_cudnn_attention", 6},
        {"aten::_scaled_dot_product_cudnn_attention_backward", 14}};
    for (size_t i = 0; i < sizeof sig / sizeof sig[0]; i++)
        if (strcmp(op, sig[i].name) == 0)
            return sig[i].arg;
    return -1;
}

/* 1 causal, 0 not, -1 not recorded: the chain from OP up. */
static int
recorded_causal(const struct cpu_op *ops, int op)
{
    for (int o = op; o >= 0; o = ops[o].parent) {
        int arg = causal_arg(ops[o].name);
        if (arg < 0)
            continue;
        const json_t *ci = json_array_get(
            json_object_get(ops[o].args, "Concrete Inputs"), (size_t)arg);
        const char *s = json_is_string(ci) ? json_string_value(ci) : NULL;
        if (s && (strcmp(s, "True") == 0 || strcmp(s, "true") == 0 ||
                  strcmp(s, "1") == 0))
            return 1;
        if (s && (strcmp(s, "False") == 0 || strcmp(s, "false") == 0 ||
                  strcmp(s, "0") == 0))
            return 0;
    }
    return -1;
}

static enum attn_kernel
attn_kind(const char *kname, const char *op)
{
    if (has(kname, "Sm90") || has(kname, "sm90")
        || str_has_ci(kname, "flash3"))
        return ATTN_FLASH3;
    if (str_has_ci(kname, "cudnn") || has(op, "cudnn"))
        return ATTN_CUDNN;
    if (has(kname, "fmha") || has(kname, "efficient") || has(op, "efficient"))
        return ATTN_XFORMERS;
    return ATTN_FLASH2;
}

/* Attention shapes from SDPA op OP (forward or BWD); 0 or -1. */
static int
attn_shape(const struct cpu_op *op, bool bwd, int causal, struct kernel *k)
{
    int64_t q[MAX_DIMS], kv[MAX_DIMS];
    size_t iq = bwd ? 1 : 0;
    if (input_dims(op->args, iq, q) != 4
        || input_dims(op->args, iq + 1, kv) != 4 || q[0] != kv[0]
        || q[3] != kv[3])
        return -1;
    double B = (double)q[0], H = (double)q[1], S = (double)q[2];
    double D = (double)q[3], Hkv = (double)kv[1], Skv = (double)kv[2];
    if (!(B > 0 && H > 0 && S > 0 && D > 0 && Hkv > 0 && Skv > 0))
        return -1;
    int eb = type_bytes(input_type(op->args, iq));
    double fwd = 4 * B * H * S * Skv * D / (causal ? 2 : 1);
    double q_el = B * S * H * D, kv_el = B * Skv * Hkv * D;
    k->cls = bwd ? KERNEL_ATTN_BWD : KERNEL_ATTN_FWD;
    k->flops = bwd ? 2.5 * fwd : fwd;
    k->bytes = (bwd ? 4 : 2) * (q_el + kv_el) * (eb > 0 ? eb : 2);
    k->head_dim = (int64_t)D;
    k->seq = Skv;
    k->causal = causal != 0;
    return 0;
}

/* ---- classification -------------------------------------------------- */

static bool
attn_name(const char *k)
{
    return has(k, "flash_fwd") || has(k, "flash_bwd") || has(k, "fmha")
           || has(k, "flash::") || has(k, "FlashAttn")
           || str_has_ci(k, "attention");
}

static bool
attn_op(const char *op)
{
    return has(op, "flash_attention") || has(op, "efficient_attention")
           || has(op, "cudnn_attention");
}

static bool
gemm_name(const char *k)
{
    return str_has_ci(k, "gemm") || str_has_ci(k, "gemv")
           || str_has_ci(k, "cutlass") || str_has_ci(k, "xmma")
           || str_has_ci(k, "cublas") || str_has_ci(k, "splitkreduce");
}

static bool
reduction_name(const char *s)
{
    return str_has_ci(s, "reduce") || str_has_ci(s, "norm")
           || str_has_ci(s, "softmax") || str_has_ci(s, "sum")
           || str_has_ci(s, "mean");
}

static bool
backward_op(const char *op)
{
    return strncmp(op, "autograd::engine", 16) == 0 || has(op, "Backward")
           || has(op, "backward");
}

/* ---- reading --------------------------------------------------------- */

static char *
read_text(const char *path, size_t *len, char **cause)
{
    char *text = textfile_load(path, PROFILE_MAX_FILE_BYTES,
                               "is it a profiler trace?", cause);
    if (text)
        *len = strlen(text);
    return text;
}

int
kineto_kernels_read(const char *path, struct prof_trace *out, char **cause)
{
    size_t len = 0;
    char *text = read_text(path, &len, cause);
    if (text == NULL)
        return -1;
    int rc = kineto_kernels_parse(path, text, len, out, cause);
    free(text);
    return rc;
}

struct parse {
    struct cpu_op *ops;
    size_t n_ops, cap_ops;
    struct launch *l;
    size_t n_l, cap_l;
    struct kev *kev;
    size_t n_kev, cap_kev;
};

static void
collect(const json_t *events, struct parse *p, int *n_shaped)
{
    size_t i;
    const json_t *ev;
    json_array_foreach(events, i, ev) {
        struct kineto_span x;
        if (!kineto_complete_event(ev, &x))
            continue;
        const char *cat = x.cat, *name = x.name;
        const json_t *args = x.args;
        int64_t t0 = x.ts_ns, d = x.dur_ns;
        double corr;
        if (strcmp(cat, "cpu_op") == 0) {
            p->ops = xgrow(p->ops, &p->cap_ops, p->n_ops + 1, sizeof *p->ops);
            p->ops[p->n_ops++] = (struct cpu_op){
                kineto_int(ev, "pid", -1), kineto_int(ev, "tid", -1), t0,
                t0 + d, name, args, -1};
            if (json_is_array(json_object_get(args, "Input Dims")))
                (*n_shaped)++;
        } else if (kineto_is_cuda_call(cat)
                   && kineto_num(args, "correlation", &corr) == 0) {
            p->l = xgrow(p->l, &p->cap_l, p->n_l + 1, sizeof *p->l);
            p->l[p->n_l++] = (struct launch){
                kineto_int(ev, "pid", -1), kineto_int(ev, "tid", -1), t0,
                (int64_t)corr, has(name, "LaunchKernel")
                                   || has(name, "LaunchCooperativeKernel"),
                -1};
        } else if (strcmp(cat, "kernel") == 0) {
            p->kev = xgrow(p->kev, &p->cap_kev, p->n_kev + 1,
                           sizeof *p->kev);
            p->kev[p->n_kev++] = (struct kev){
                kineto_int(args, "correlation", -1), t0, d, name};
        }
    }
}

/* Each op's parent and each launch's innermost op: one sweep per thread
 * over both in time order, keeping the ops still open on a stack. */
static void
nest(struct parse *p)
{
    if (p->n_ops)
        qsort(p->ops, p->n_ops, sizeof *p->ops, cmp_op);
    if (p->n_l)
        qsort(p->l, p->n_l, sizeof *p->l, cmp_launch_thread);
    int *stack = xmalloc((p->n_ops + 1) * sizeof *stack);
    int depth = 0;
    int64_t cur_pid = INT64_MIN, cur_tid = INT64_MIN;
    size_t i = 0, j = 0;
    while (i < p->n_ops || j < p->n_l) {
        bool take_op;
        if (i == p->n_ops) {
            take_op = false;
        } else if (j == p->n_l) {
            take_op = true;
        } else {
            int c = cmp_i64(p->ops[i].pid, p->l[j].pid);
            if (!c) c = cmp_i64(p->ops[i].tid, p->l[j].tid);
            take_op = c < 0 || (c == 0 && p->ops[i].ts <= p->l[j].ts);
        }
        int64_t pid = take_op ? p->ops[i].pid : p->l[j].pid;
        int64_t tid = take_op ? p->ops[i].tid : p->l[j].tid;
        if (pid != cur_pid || tid != cur_tid) {
            depth = 0;
            cur_pid = pid;
            cur_tid = tid;
        }
        if (take_op) {
            while (depth && p->ops[stack[depth - 1]].end <= p->ops[i].ts)
                depth--;
            p->ops[i].parent = depth ? stack[depth - 1] : -1;
            stack[depth++] = (int)i++;
        } else {
            while (depth && p->ops[stack[depth - 1]].end < p->l[j].ts)
                depth--;
            p->l[j++].op = depth ? stack[depth - 1] : -1;
        }
    }
    free(stack);
}

/* Median gaps between consecutive kernel launches (see the header). */
static void
host_gaps(const struct parse *p, struct prof_trace *out)
{
    /* The main thread: most forward launches. */
    bool *bwd = xcalloc(p->n_l + 1, sizeof *bwd);
    int64_t main_pid = 0, main_tid = 0;
    size_t best = 0, run = 0;
    for (size_t j = 0; j < p->n_l; j++) {
        for (int o = p->l[j].op; o >= 0; o = p->ops[o].parent)
            if (backward_op(p->ops[o].name)) {
                bwd[j] = true;
                break;
            }
        if (j == 0 || p->l[j].pid != p->l[j - 1].pid
            || p->l[j].tid != p->l[j - 1].tid)
            run = 0;
        if (p->l[j].kernel_launch && p->l[j].op >= 0 && !bwd[j]
            && ++run > best) {
            best = run;
            main_pid = p->l[j].pid;
            main_tid = p->l[j].tid;
        }
    }
    double *fg = xmalloc((p->n_l + 1) * sizeof *fg);
    double *bg = xmalloc((p->n_l + 1) * sizeof *bg);
    size_t nf = 0, nb = 0;
    const struct launch *prev = NULL;
    bool prev_bwd = false;
    for (size_t j = 0; j < p->n_l; j++) {
        const struct launch *l = &p->l[j];
        if (!l->kernel_launch || l->op < 0)
            continue;
        if (prev && prev->pid == l->pid && prev->tid == l->tid
            && prev_bwd == bwd[j]) {
            double gap = (double)(l->ts - prev->ts) * 1e-9;
            if (bwd[j])
                bg[nb++] = gap;
            else if (l->pid == main_pid && l->tid == main_tid)
                fg[nf++] = gap;
        }
        prev = l;
        prev_bwd = bwd[j];
    }
    out->fwd_gap_s = nf > 0 ? median_in_place(fg, nf) : 0;
    out->n_fwd_gaps = (int)nf;
    out->bwd_gap_s = nb > 0 ? median_in_place(bg, nb) : 0;
    out->n_bwd_gaps = (int)nb;
    free(fg);
    free(bg);
    free(bwd);
}

/* The class and anchor op of kernel K launched under op O (-1 none):
 * 0, or -1 when it is left out (*nccl set for NCCL kernels). */
static int
classify(const struct parse *p, const struct kev *k, int o,
         struct tagged *t, bool *nccl)
{
    *nccl = strncmp(k->name, "nccl", 4) == 0;
    if (*nccl || o < 0)
        return -1;
    const struct cpu_op *ops = p->ops;
    t->name = k->name;
    t->ts = k->ts;
    t->dur_ns = k->dur_ns;
    t->attn_op_bwd = 0;
    if (attn_name(k->name) || attn_op(ops[o].name)) {
        bool bwd = has(k->name, "bwd") || str_has_ci(k->name, "backward")
                   || has(k->name, "cutlassB");
        for (int a = o; a >= 0; a = ops[a].parent) {
            if (has(ops[a].name, "backward"))
                bwd = true;
            if (has(ops[a].name, "scaled_dot_product")) {
                t->anchor = a;
                t->cls = bwd ? KERNEL_ATTN_BWD : KERNEL_ATTN_FWD;
                return 0;
            }
        }
        return -1;
    }
    bool gemm = gemm_name(k->name)
                || (is_gemm_op(ops[o].name)
                    && !str_has_ci(k->name, "elementwise")
                    && !str_has_ci(k->name, "copy")
                    && !str_has_ci(k->name, "fill"));
    if (gemm) {
        for (int a = o; a >= 0; a = ops[a].parent)
            if (is_gemm_op(ops[a].name)) {
                t->anchor = a;
                t->cls = KERNEL_GEMM;
                return 0;
            }
        return -1;
    }
    t->anchor = o;
    t->cls = reduction_name(k->name) || reduction_name(ops[o].name)
                 ? KERNEL_REDUCTION : KERNEL_ELEMENTWISE;
    return 0;
}

/* Describe the entry of kernels T[0..n) (one anchor and class) as E; 0,
 * or -1 when its shapes do not allow it. */
static int
describe(const struct parse *p, const struct tagged *t, size_t n,
         struct prof_kernel *e, int *causal_assumed)
{
    const struct cpu_op *op = &p->ops[t[0].anchor];
    memset(e, 0, sizeof *e);
    e->k.launches = (int)n;
    for (size_t i = 0; i < n; i++)
        e->measured_s += (double)t[i].dur_ns * 1e-9;
    if (!(e->measured_s > 0))
        return -1;
    e->dtype = type_dtype(first_tensor_type(op->args));
    switch (t[0].cls) {
    case KERNEL_GEMM:
        if (gemm_shape(op, &e->k) != 0)
            return -1;
        break;
    case KERNEL_ATTN_FWD:
    case KERNEL_ATTN_BWD: {
        int causal = recorded_causal(p->ops, t[0].anchor);
        if (causal < 0) {
            causal = 1;
            (*causal_assumed)++;
        }
        if (attn_shape(op, t[0].cls == KERNEL_ATTN_BWD, causal, &e->k) != 0)
            return -1;
        /* The first kernel with an attention name tells which. */
        const char *kn = t[0].name;
        for (size_t i = 0; i < n; i++)
            if (attn_name(t[i].name)) {
                kn = t[i].name;
                break;
            }
        e->k.attn = attn_kind(kn, op->name);
        break;
    }
    default: {
        bool ew = t[0].cls == KERNEL_ELEMENTWISE;
        double b = op_bytes(op->args, ew);
        if (b < 0)
            return -1;
        e->k.cls = ew ? KERNEL_ELEMENTWISE : KERNEL_REDUCTION;
        e->k.bytes = b;
        break;
    }
    }
    e->name = xstrdup(t[0].name);
    e->op = xstrdup(op->name);
    e->k.name = e->name;
    return 0;
}

int
kineto_kernels_parse(const char *path, const char *text, size_t len,
                     struct prof_trace *out, char **cause)
{
    memset(out, 0, sizeof *out);
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL) {
        *cause = xasprintf("%s:%d: not valid JSON: %s (expected a PyTorch "
                           "profiler trace, as export_chrome_trace writes)",
                           path, jerr.line, jerr.text);
        return -1;
    }
    const json_t *events = json_is_array(root)
                               ? root : json_object_get(root, "traceEvents");
    struct parse p = {0};
    struct tagged *tg = NULL;
    int64_t (*by_corr)[2] = NULL;
    int rc = -1;
    if (!json_is_array(events)) {
        *cause = xasprintf("%s: JSON without 'traceEvents' (expected a "
                           "PyTorch profiler trace)", path);
        goto out;
    }
    collect(events, &p, &out->n_shaped_ops);
    out->n_kernels = (int)p.n_kev;
    if (p.n_kev == 0) {
        *cause = xasprintf("%s: no GPU kernel events (\"cat\": \"kernel\"): "
                           "profile with activities=[ProfilerActivity.CPU, "
                           "ProfilerActivity.CUDA]", path);
        goto out;
    }
    if (out->n_shaped_ops == 0) {
        *cause = xasprintf("%s: no operator shapes (\"Input Dims\"): record "
                           "the trace with torch.profiler.profile("
                           "record_shapes=True)", path);
        goto out;
    }
    nest(&p);
    host_gaps(&p, out);

    by_corr = xmalloc((p.n_l + 1) * sizeof *by_corr);
    for (size_t j = 0; j < p.n_l; j++) {
        by_corr[j][0] = p.l[j].corr;
        by_corr[j][1] = (int64_t)j;
    }
    if (p.n_l)
        qsort(by_corr, p.n_l, sizeof *by_corr, cmp_corr_index);
    tg = xmalloc((p.n_kev + 1) * sizeof *tg);
    size_t n_tg = 0;
    for (size_t i = 0; i < p.n_kev; i++) {
        const struct kev *k = &p.kev[i];
        int o = -1;
        if (k->corr >= 0 && p.n_l) {
            int64_t key[2] = {k->corr, -1};
            /* The first launch with this correlation. */
            size_t lo = 0, hi = p.n_l;
            while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (cmp_corr_index(by_corr[mid], key) < 0)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo < p.n_l && by_corr[lo][0] == k->corr)
                o = p.l[by_corr[lo][1]].op;
        }
        bool nccl;
        if (classify(&p, k, o, &tg[n_tg], &nccl) == 0)
            n_tg++;
        else if (nccl)
            out->n_nccl++;
        else
            out->n_unshaped++;
    }
    if (n_tg)
        qsort(tg, n_tg, sizeof *tg, cmp_tagged);
    out->k = xcalloc(n_tg + 1, sizeof *out->k);
    for (size_t i = 0; i < n_tg;) {
        size_t j = i + 1;
        while (j < n_tg && tg[j].anchor == tg[i].anchor
               && tg[j].cls == tg[i].cls)
            j++;
        if (describe(&p, &tg[i], j - i, &out->k[out->n],
                     &out->n_causal_assumed) == 0)
            out->n++;
        else
            out->n_unshaped += (int)(j - i);
        i = j;
    }
    if (out->n == 0) {
        *cause = xasprintf("%s: none of the %d kernels could be tied to an "
                           "operator with recorded shapes (%d NCCL; record "
                           "the trace with torch.profiler.profile("
                           "record_shapes=True))", path, out->n_kernels,
                           out->n_nccl);
        goto out;
    }
    rc = 0;
out:
    if (rc != 0)
        prof_trace_free(out);
    free(tg);
    free(by_corr);
    free(p.ops);
    free(p.l);
    free(p.kev);
    json_decref(root);
    return rc;
}

void
prof_trace_free(struct prof_trace *p)
{
    for (size_t i = 0; p->k != NULL && i < p->n; i++) {
        free(p->k[i].name);
        free(p->k[i].op);
    }
    free(p->k);
    memset(p, 0, sizeof *p);
}
