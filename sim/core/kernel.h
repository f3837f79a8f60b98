/*
 * kernel.h: the GPU kernels PyTorch eager launches for one leaf layer.
 *
 * A leaf's forward, backward or recomputation is a list of kernels, each
 * with its own FLOPs, HBM bytes and, for matrix products, its GEMM shape:
 * a Linear is one GEMM forward and two backward (input and weight
 * gradients, each its own shape), an eager RMSNorm eight elementwise and
 * reduction kernels forward, attention one fused kernel (or the math
 * path's batched products and softmax), and so on.  kernel_cost.c times
 * each kernel on a GPU; the schedule keeps one op per unit and phase and
 * its cost is the sum over its leaves' kernels (cost.c).
 * doc/compute-model.md lists every kernel with the PyTorch function that
 * launches it.
 */
#ifndef FSDPSIM_KERNEL_H
#define FSDPSIM_KERNEL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "attn_table.h"
#include "model.h"
#include "topo.h"

/* What bounds a kernel's time, and which calibration applies to it. */
enum kernel_class {
    KERNEL_GEMM,         /* cuBLAS matrix product: FLOPs at the shape's
                            efficiency, or its bytes, whichever is slower */
    KERNEL_ATTN_FWD,     /* fused attention forward: the published table */
    KERNEL_ATTN_BWD,     /* fused attention backward */
    KERNEL_ELEMENTWISE,  /* memory-bound: bytes at HBM efficiency */
    KERNEL_REDUCTION,    /* memory-bound reductions (norm statistics,
                            softmax, bias and embedding gradients) */
    KERNEL_CLASS_COUNT
};

/* What the selective-op recompute (§10.1) of a leaf does with one of its
 * forward kernels.  BY_CLASS: GEMMs and attention run again only in a
 * leaf whose matrix product the policy recomputes (their outputs are
 * saved otherwise), every other kernel runs again.  WITH_GEMM: runs again
 * only with the leaf's matrix product (a float8 cast nothing else needs).
 * NEVER: its output is saved, so the recompute takes it (a float8 amax). */
enum kernel_recompute {
    RECOMPUTE_BY_CLASS,
    RECOMPUTE_WITH_GEMM,
    RECOMPUTE_NEVER
};

struct kernel {
    const char *name;        /* static, e.g. "mm (dgrad)" */
    enum kernel_class cls;
    int launches;            /* identical launches this entry stands for */
    double flops;            /* executed, all launches */
    double bytes;            /* HBM traffic, all launches */
    int64_t m, n, k;         /* GEMM: (m x k) by (k x n), per launch */
    int64_t batch;           /* GEMM: batched products per launch */
    bool fp8;                /* GEMM: float8 operands (torch._scaled_mm),
                                at the GPU's fp8 peak */
    /* Attention: the kernel and what its efficiency depends on. */
    enum attn_kernel attn;
    int64_t head_dim;
    double seq;              /* keys each query attends to (window) */
    bool causal;
    double cast_elems;       /* elements converted on eager PyTorch's
                                dynamic-cast path (torch_version.h), all
                                launches; 0: vectorized or none */
    double strided_elems;    /* elements written on TensorIterator's
                                strided path (a broadcast or a strided
                                operand: no vector loads, an offset
                                computed per element), all launches */
    double int_ops;          /* attention: integer instructions (per
                                thread lane) the kernel issues beyond the
                                benchmarked work, its in-kernel dropout's
                                Philox RNG and masking */
    enum kernel_recompute recompute;   /* forward kernels: selective-op */
};

/* PHASE_RECOMPUTE: a forward rerun by a selective-op recompute: the
 * forward's kernels, each to be kept or dropped by its recompute rule,
 * plus any the recompute alone runs (RECOMPUTE_WITH_GEMM entries a
 * forward shares with an earlier leaf). */
enum kernel_phase { PHASE_FWD, PHASE_BWD, PHASE_RECOMPUTE };

/* Run-wide facts the kernel lists depend on. */
struct kernel_ctx {
    int64_t micro_batch, seq_len;
    int act_bytes;                /* compute dtype's bytes per element */
    enum attn_kernel attn;        /* resolved (never ATTN_AUTO) */
    bool compile;                 /* torch.compile of each block: fused
                                     elementwise chains */
    const char *layer_cls;        /* transformer block class: a norm
                                     inside one opens a residual branch */
    int float8;                   /* enum float8_recipe (runconf.h):
                                     Float8Linear layers */
    bool float8_weights_gathered; /* their weights arrive in float8
                                     (FSDP2 float8 all-gather) */
    int rotary;                   /* enum rope_style (model.h): --rotary,
                                     how the training code applies the
                                     rotary embedding; 0: the model's */
    bool selective_op;            /* --activation-checkpointing
                                     selective-op: each block's recompute
                                     follows torchtitan's op policy
                                     (§10.1) */
    bool fused_loss;              /* --loss fused: the LM head and the
                                     cross-entropy as one chunked,
                                     fused function (Liger-Kernel) */
    bool native_loss;             /* --loss native: cross_entropy on the
                                     logits as the head returns them,
                                     no fp32 copy */
    int torch_version;            /* PyTorch release (torch_version.h);
                                     0: the default */
    int transformers_version;     /* transformers release of a Hugging
                                     Face model (hf_version.h); 0: the
                                     default */
};

#define KERNEL_MAX_PER_LEAF 32

/* The kernels of leaf M in phase PH (a full recomputation is PHASE_FWD,
 * selective-op's PHASE_RECOMPUTE).  Returns
 * how many were written to OUT (at most KERNEL_MAX_PER_LEAF). */
int kernel_list(const struct module *m, const struct kernel_ctx *ctx,
                enum kernel_phase ph, struct kernel *out);

const char *kernel_class_name(enum kernel_class c);

/* Whether attention M's output reaches the Linear after it through a copy
 * (FMS's layout, the math path) rather than as the tensor SDPA's fused
 * kernel saves for its backward, which autograd then keeps once. */
bool kernel_attention_output_copied(const struct module *m,
                                    const struct kernel_ctx *ctx);

/* Whether Hugging Face's code hands attention M's grouped-query heads to
 * SDPA without repeat_kv (enable_gqa: hf_version.h), so k and v stay at
 * the KV heads' width. */
bool kernel_attention_native_gqa(const struct module *m,
                                 const struct kernel_ctx *ctx);

/* Bytes attention M's rotary embedding saves for backward in one layer
 * (FMS's gathered rotations; 0 for the styles that share one table). */
double kernel_rotary_saved_bytes(const struct module *m,
                                 const struct kernel_ctx *ctx);

/* The attention kernel a run of model M uses on T in dtype D: REQUESTED
 * (enum attn_kernel, from --attention) unless it is ATTN_AUTO, then the
 * model's own config ([model] attention), then what SDPA picks.  0, or -1
 * with *cause (caller frees) when that kernel cannot run there. */
int kernel_attention_for(const struct model *m, int requested,
                         const struct topo *t, enum dtype d,
                         enum attn_kernel *out, char **cause);

/* Print, per distinct leaf (layers of a ModuleList folded into one line
 * with their count), each kernel of its forward and backward with shape,
 * FLOPs, bytes, efficiency and time on T, then the totals for one
 * micro-batch (fsdpsim models --show M --kernels). */
void kernel_print_model(const struct model *m, const struct topo *t,
                        const struct kernel_ctx *ctx, enum dtype d,
                        FILE *out);

#endif
