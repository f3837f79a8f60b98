/*
 * sched.h: one training step as an explicit list of operations.
 *
 * The schedule is the contract between the simulator and the real GPU
 * executor: both walk this list, neither rebuilds it.  Ops appear in the
 * order the host thread issues them (the Python thread running FSDP's hooks
 * and autograd), each bound to a CUDA stream, and, for collectives, to a
 * process group whose NCCL communicator runs its kernels in issue order
 * (doc/fsdp-semantics.md §2.3).  Cross-stream waits (stream.wait_stream) are
 * explicit dependencies on earlier ops; host blocking points (the rate
 * limiter, synchronize()) are CPU_WAIT ops; allocations and frees are ops
 * too, so memory follows the same order as on a GPU.
 *
 * Ownership: struct sched owns its ops and their dependencies (one array,
 * dep_pool, that every op.deps points into); units and leaves are
 * borrowed from the wrap plan and model, which must outlive it.
 */
#ifndef FSDPSIM_SCHED_H
#define FSDPSIM_SCHED_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "attn_table.h"
#include "runconf.h"
#include "model.h"
#include "nccl_env.h"
#include "topo.h"
#include "wrap.h"

/* FSDP1 streams (doc/fsdp-semantics.md §2.2); HOST is work done by the CPU
 * itself (the optimizer under CPU offload).  FSDP2 (§13.2) uses the same
 * slots for its own streams: PU is the all-gather copy-in stream, U the
 * all-gather stream, P the reduce-scatter stream and A the HSDP
 * all-reduce stream (sched_stream_label prints FSDP2's names). */
enum sched_stream { STREAM_C, STREAM_PU, STREAM_U, STREAM_P, STREAM_A,
                    STREAM_HOST, STREAM_COUNT };

/* Process groups: FSDP's own (the shard group; every rank for NO_SHARD)
 * and, for hybrid sharding, the replicate group across nodes.  FSDP2 with
 * reshard_after_forward=N gathers in backward over the smaller
 * post-forward mesh: one communicator for each fully_shard call, which
 * PG_POST_FORWARD stands for all together (cost.c counts each one's NVLS
 * buffers; the all-gather stream orders them anyway, §13.9.3). */
enum sched_pg { PG_NONE, PG_SHARD, PG_REPLICATE, PG_POST_FORWARD,
                PG_COUNT };

enum sched_op_kind {
    OP_FORWARD,        /* forward kernels of a run of leaves */
    OP_BACKWARD,       /* their gradient kernels */
    OP_RECOMPUTE,      /* activation-checkpoint recomputation */
    OP_ALLGATHER,
    OP_REDUCESCATTER,
    OP_ALLREDUCE,
    OP_CAST,           /* elementwise copy, dtype cast or accumulation */
    OP_H2D,            /* host to device copy (offload) */
    OP_D2H,            /* device to host copy (offload) */
    OP_OPTIMIZER,
    OP_EVENT,          /* a recorded CUDA event: zero work, carries deps */
    OP_ALLOC,          /* caching-allocator allocation (host side) */
    OP_FREE,           /* free; reusable once wait_op has finished */
    OP_CPU_WAIT,       /* the host blocks until wait_op has finished */
    OP_KIND_COUNT
};

enum sched_phase { PHASE_FORWARD, PHASE_BACKWARD, PHASE_OPTIMIZER };

enum mem_category {
    MEM_SHARDED_PARAMS,
    MEM_UNSHARDED_PARAMS,
    MEM_GRAD_UNSHARDED,
    MEM_GRAD_SHARDED,
    MEM_OPTIMIZER_STATE,
    MEM_ACTIVATIONS,
    MEM_AG_BUFFER,      /* low-precision shard fed to the all-gather */
    MEM_RS_BUFFER,      /* reduce-dtype / padded copies, RS output */
    MEM_OFFLOAD_STAGING,
    MEM_CATEGORY_COUNT
};

struct sched_op {
    int id;
    enum sched_op_kind kind;
    enum sched_stream stream;   /* for ALLOC/FREE: the allocator pool */
    enum sched_pg pg;
    enum sched_phase phase;
    int iter, micro;
    int unit;                   /* FSDP unit, -1 if none */
    int leaf_begin, leaf_end;   /* compute: leaves [begin, end) */
    double flops;               /* compute: executed FLOPs */
    double model_flops;         /* compute: FLOPs as MFU counts them */
    uint64_t bytes;             /* collective nBytes (NCCL: whole buffer),
                                   copy bytes, allocation size */
    enum dtype dtype;           /* element type moved or reduced */
    int redop;                  /* collectives: enum coll_redop (coll.h),
                                   REDOP_SUM unless FSDP2 averages */
    int buffer;                 /* ALLOC/FREE: buffer id */
    int buf_in, buf_out;        /* collectives, casts, copies: the buffers
                                   read and written (-1: host memory or
                                   none; compute ops use scratch) */
    uint64_t in_offset;         /* bytes into buf_in where the data starts
                                   (a unit's slice of the sharded params) */
    enum mem_category cat;      /* ALLOC/FREE */
    int wait_op;                /* CPU_WAIT and FREE: op id, or -1 */
    int *deps;                  /* earlier ops that must finish first
                                   (sched_build: into sched.dep_pool) */
    int n_deps;
    int hooks;                  /* FSDP hooks run on the host before it */
    double cast_elems;          /* casts: elements eager PyTorch converts
                                   on its dynamic-cast path (not
                                   vectorized: torch_version.h), 0 for
                                   the rest */
};

/* torch.optim.AdamW on CUDA tensors defaults to its foreach path
 * (torch/optim/optimizer.py _default_to_fused_or_foreach), which
 * _multi_tensor_adamw runs as eight passes over the fp32 state, each a
 * multi-tensor kernel (bytes per element, reads + writes): weight decay
 * _foreach_mul_(params) 4+4; _foreach_lerp_(exp_avgs, grads) 8+4;
 * _foreach_mul_(exp_avg_sqs) 4+4; _foreach_addcmul_(exp_avg_sqs, grads,
 * grads) 8+4 (the second read of the gradient hits in cache);
 * _foreach_sqrt(exp_avg_sqs) into a new list 4+4; _foreach_div_ 4+4;
 * _foreach_add_(eps) 4+4; _foreach_addcdiv_(params, exp_avgs, denom)
 * 12+4.  48 read + 32 written = 80, against the 28 a fused kernel needs.
 * The host path (CPU offload) runs the same passes one tensor at a time
 * (_single_tensor_adamw).  Plain SGD without momentum is one
 * _foreach_add_(params, grads): 8 + 4. */
#define ADAMW_FOREACH_PASSES 8
#define ADAMW_FOREACH_BYTES 80.0
#define ADAMW_FOREACH_READ_BYTES 48.0
#define SGD_FOREACH_BYTES 12.0
#define SGD_FOREACH_READ_BYTES 8.0

struct sched {
    struct sched_op *ops;
    int n_ops;
    size_t cap_ops;
    int *dep_pool;              /* every op's deps, in op order */
    const struct module **leaves; /* execution order */
    int n_leaves;
    /* per leaf, under AC_SELECTIVE_OP: its forward GEMM is recomputed in
     * backward (the policy does not save that Linear's output; sched.c
     * sac_account) */
    bool *leaf_sac_gemm;
    const struct fsdp_unit *units;
    int n_units;
    int n_buffers;
    int iterations;
    int micro_batches;          /* per step (the most, see below) */
    int *step_micro_batches;    /* NULL, or per step its own count: a
                                   schedule built to stand for longer
                                   steps (steady.c) whose steps repeat
                                   with different periods */
    int world;                  /* all GPUs */
    int shard_size;             /* W */
    int replicate_size;         /* R (1 unless hybrid) */
    int no_shard_ranks;         /* NO_SHARD: the all-reduce group, the
                                   world, or 1 in the hybrid fallback */
    int gpus_per_node;
    int fsdp_version;           /* 1: FullyShardedDataParallel, 2:
                                   fully_shard (sched_fsdp2.c) */
    int post_forward_size;      /* FSDP2 reshard_after_forward=N: N */
    int *post_forward_sizes;    /* FSDP2, per unit: its post-forward
                                   mesh's N (0: none), the communicator
                                   of its PG_POST_FORWARD all-gathers */
    enum dtype param_dtype, reduce_dtype;
    enum attn_kernel attn;      /* the attention kernel (resolved) */
    bool compile;               /* torch.compile of each block */
    int loss;                   /* enum loss_kind (runconf.h) */
    int rotary;                 /* enum rope_style (model.h), 0: the
                                   model's */
    int float8;                 /* enum float8_recipe (runconf.h) */
    bool float8_all_gather;     /* FSDP2 gathers float8 weights */
    int torch_version;          /* PyTorch release (torch_version.h) */
    int transformers_version;   /* transformers release (hf_version.h) */
    const char *block_cls;      /* the model's transformer block class */
    int64_t micro_batch;        /* sequences per micro-batch */
    int64_t seq_len;            /* tokens per sequence */
    int64_t tokens_per_gpu;     /* per optimizer step */
    double model_flops_per_gpu; /* per optimizer step (3x forward) */
    double palm_flops_per_gpu;  /* the same by PaLM's convention */
    double fwd_model_flops;     /* one micro-batch's forward, per GPU */
    double fwd_palm_flops;
    double ops_bound_per_micro_batch;   /* what SCHED_MAX_OPS is held to */
    struct nccl_config nccl;    /* the NCCL the collectives run on */

    /* Activation checkpointing: under AC_SELECTIVE_OP a recompute op runs
     * its leaves' non-GEMM, non-attention kernels and the GEMMs of the
     * Linears whose outputs the policy does not save (cost.c). */
    enum ac_mode ac;
    /* GradScaler (fp16): the fp32 gradient elements its unscale_ and inf
     * check read and write each step, 0 without one. */
    double scaler_grad_numel;
    /* The optimizer step: its kernel passes over the sharded state and
     * the parameter tensors they run over (cost.c turns them into
     * multi-tensor launches). */
    int optimizer_passes;
    int optimizer_tensors;
    double optimizer_numel;
    /* DistributedDataParallel: gradient buckets of the reported (last)
     * step; the first step all-reduces one bucket of every gradient. */
    bool ddp;
    int n_buckets;
    uint64_t bucket_cap_bytes, first_bucket_bytes;
};

/* The largest schedule built: about 120 bytes an op, so at most ~0.6 GB,
 * and a few seconds to simulate. */
#define SCHED_MAX_OPS 5000000

/* Build the schedule.  Returns NULL with *cause (caller frees) when the
 * settings cannot run (e.g. a GPU count the strategy cannot use). */
/* Set S's per-step totals (tokens, FLOPs) for C's batch: a schedule
 * built with fewer micro-batches stands for C's (steady.c). */
void sched_set_batch(struct sched *s, const struct run_config *c);

struct sched *sched_build(const struct model *m, const struct wrap_plan *p,
                          const struct run_config *c, const struct topo *t,
                          char **cause);
/* sched_build with STEPS[it] micro-batches in step it (c->iterations of
 * them) instead of c->grad_accum in each; NULL: sched_build. */
struct sched *sched_build_steps(const struct model *m,
                                const struct wrap_plan *p,
                                const struct run_config *c,
                                const struct topo *t, const int *steps,
                                char **cause);
void sched_free(struct sched *s);

/* FSDP2's 2-D mesh (replicate, shard) for a world of `world` GPUs, from
 * --dp-replicate / --dp-shard (default: one replica, the shard group all
 * GPUs).  Returns 0, or -1 with *cause (caller frees). */
int sched_fsdp2_mesh(const struct run_config *c, int world,
                     int gpus_per_node, int *shard, int *replicate,
                     char **cause);
/* The post-forward mesh of an int reshard_after_forward (either key) on
 * a SHARD-rank group, or 0 (none, or an int fully_shard reads as a
 * bool). */
int sched_fsdp2_post_forward_size(const struct run_config *c, int shard);

const char *sched_stream_name(enum sched_stream s);
/* The stream's name in the schedule's own FSDP version (FSDP2: CI, AG,
 * RS, AR for PU, U, P, A). */
const char *sched_stream_label(const struct sched *s, enum sched_stream st);
const char *sched_op_kind_name(enum sched_op_kind k);
const char *sched_pg_name(enum sched_pg pg);
const char *sched_phase_name(enum sched_phase p);
const char *mem_category_name(enum mem_category c);
/* Micro-batches of step IT of S. */
static inline int
sched_step_micro_batches(const struct sched *s, int it)
{
    return s->step_micro_batches != NULL ? s->step_micro_batches[it]
                                         : s->micro_batches;
}

/* What kind of work an op is: inline, since the engine and the cost
 * table ask it of every op. */
static inline int
sched_op_is_collective(const struct sched_op *op)
{
    return op->kind == OP_ALLGATHER || op->kind == OP_REDUCESCATTER
           || op->kind == OP_ALLREDUCE;
}

static inline int
sched_op_is_compute(const struct sched_op *op)
{
    return op->kind == OP_FORWARD || op->kind == OP_BACKWARD
           || op->kind == OP_RECOMPUTE || op->kind == OP_OPTIMIZER;
}

static inline int
sched_op_on_gpu(const struct sched_op *op)
{
    return op->kind != OP_ALLOC && op->kind != OP_FREE
           && op->kind != OP_CPU_WAIT && op->stream != STREAM_HOST;
}

/* fsdpsim schedule: text or JSON listing of every op. */
void sched_print_text(const struct sched *s, FILE *out);
void sched_print_json(const struct sched *s, FILE *out);

#endif
