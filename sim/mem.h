/*
 * mem.h: the per-GPU memory ledger and a model of PyTorch's CUDA caching
 * allocator.
 *
 * "Allocated" is what torch.cuda.memory_allocated() reports: live tensors,
 * counted when the host allocates and frees them.  "Reserved" is what the
 * caching allocator holds from the device (memory_reserved()): segments
 * obtained with cudaMalloc, carved into blocks, pooled per stream and by
 * size class, split and merged like the real allocator.  A block freed
 * with record_stream stays unavailable until the GPU work that used it has
 * finished (fsdp-semantics §2.4), which is why a host running ahead of the
 * GPU makes reserved memory grow.  When a new segment does not fit, the
 * allocator releases its unused cached segments and retries; if it still
 * does not fit the allocation is an out-of-memory result, recorded, and
 * the simulation goes on so the report can say by how much.
 */
#ifndef FSDPSIM_MEM_H
#define FSDPSIM_MEM_H

#include <stdint.h>

#include "sched.h"

struct mem_sample {
    int64_t t_ns;
    int64_t allocated;
    int64_t reserved;
    int64_t by_cat[MEM_CATEGORY_COUNT];
};

struct mem;

struct mem *mem_new(int n_buffers, double capacity_bytes);
void mem_free(struct mem *m);

/* Host-side allocation of buffer (id from the schedule) at time t. */
void mem_alloc(struct mem *m, int64_t t_ns, int buffer,
               enum sched_stream pool, uint64_t bytes, enum mem_category cat);
/* Host-side free at t; pending_done says whether the op the block waits
 * for (record_stream) has already finished; if not, mem_op_done(op) later
 * makes the block reusable. */
void mem_release(struct mem *m, int64_t t_ns, int buffer, int wait_op,
                 int pending_done);
void mem_op_done(struct mem *m, int64_t t_ns, int op);

struct mem_stats {
    int64_t peak_allocated;
    int64_t peak_reserved;
    int64_t peak_t_ns;                      /* when allocated peaked */
    int64_t peak_by_cat[MEM_CATEGORY_COUNT];/* breakdown at that moment */
    int retries;                            /* cache flushes + retry */
    int ooms;                               /* allocations that failed */
    int64_t oom_shortfall;                  /* largest overshoot, bytes */
};

void mem_get_stats(const struct mem *m, struct mem_stats *st);
const struct mem_sample *mem_samples(const struct mem *m, int *n);
/* Reset the peaks (after warm-up) without touching live state. */
void mem_reset_peaks(struct mem *m, int64_t t_ns);

/* Folding a schedule's repeated micro-batches (engine_fold.c): the
 * allocator's state when the host reaches one micro-batch is kept, then
 * compared with its state at the next one; when the two match, the
 * allocator is moved on by whole micro-batches at once. */
struct mem_snapshot;

struct mem_fold_map {
    const struct sched *s;
    const int *buf_alloc_op;    /* per buffer: the op that allocates it */
    int b1, b2;                 /* first ops of the two micro-batches */
    int lo1, lo2;               /* lowest unfinished op at each */
    int64_t t1, t2;             /* when the host reached each */
};

/* The allocator's state when the host reaches op B, LO the lowest op
 * not finished. */
struct mem_snapshot *mem_snapshot_take(const struct mem *m, int lo, int b);
void mem_snapshot_free(struct mem_snapshot *snap);
/* Is NOW (taken at map->b2) the state THEN was (at map->b1), with ops,
 * buffers and times moved by one period?  Both may be sorted in place. */
int mem_snapshots_match(struct mem_snapshot *then, struct mem_snapshot *now,
                        const struct mem_fold_map *map);
/* Move the allocator on by COPIES micro-batches: ops by copies x stride,
 * the buffers allocated since b1 by copies x bstride, and the samples of
 * the micro-batch since the snapshot repeated, each t2 - t1 later. */
void mem_fold(struct mem *m, const struct mem_snapshot *snap,
              const struct mem_fold_map *map, int copies, int bstride);

#endif
