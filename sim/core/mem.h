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
 * finished (doc/fsdp-semantics.md §2.4), which is why a host running ahead
 * of the GPU makes reserved memory grow.
 *
 * Reserved never exceeds the device.  When a new segment does not fit
 * (cudaMalloc would fail), the allocator retries, as
 * DeviceCachingAllocator::malloc does:
 *   1. it releases its unused cached segments (whole segments with no
 *      block in use or waiting for an event: cudaFree each) and tries
 *      cudaMalloc again;
 *   2. if that is still too little, release_cached_blocks():
 *      synchronize_and_free_events() waits for every outstanding event,
 *      and cudaFree synchronizes the device, so the host stalls until all
 *      GPU work issued so far has finished; then every block freed with
 *      record_stream is free, the unused segments are released again and
 *      cudaMalloc is tried a last time;
 *   3. if that fails too, the allocation is an out-of-memory result
 *      (torch.cuda.OutOfMemoryError).  It is recorded and the simulation
 *      goes on so the report can say by how much: the tensor counts in
 *      allocated, but no segment is reserved for it (reserved stays within
 *      the device); its bytes count towards the shortfall of later
 *      OOMs while it is live, and it is not cached once freed.
 * Each retry costs host time (struct mem_costs): cudaFree per segment
 * released, the synchronize's fixed cost, the retried cudaMalloc, plus the
 * wait for the GPU in step 2, which the caller (the engine) measures.
 * An ordinary cudaMalloc, outside a retry, is not charged: it happens in
 * the warm-up step.
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
/* Device memory taken outside the allocator before it runs (NCCL's
 * buffers): the allocator's capacity is the device's less BYTES, and the
 * figure is reported in mem_stats.outside_bytes. */
void mem_set_outside(struct mem *m, double bytes);
void mem_free(struct mem *m);

/* Host time of the calls a retry makes (topology [host] keys), ns. */
struct mem_costs {
    int64_t cuda_malloc_ns;     /* the retried cudaMalloc */
    int64_t cuda_free_ns;       /* cudaFree of one unused segment */
    int64_t synchronize_ns;     /* a device synchronize, GPU already idle */
};

/* Costs for later retries (mem_new: all 0). */
void mem_set_costs(struct mem *m, const struct mem_costs *c);

/* Host-side allocation of buffer (id from the schedule) by op OP (-1:
 * none) at T.  Returns the host time the call took (0 unless it retried).
 * When the retry needs the device synchronized, *needs_sync is set and
 * nothing is allocated yet: the caller makes the host wait, from T plus
 * the time returned, until every GPU op issued so far has finished (their
 * mem_op_done calls free the blocks waiting for them), then calls again
 * for the same allocation with WAITED_NS, the length of that wait (>= 0),
 * at the time the wait ended.  A first call passes WAITED_NS < 0. */
int64_t mem_alloc_op(struct mem *m, int64_t t_ns, int op, int buffer,
                     enum sched_stream pool, uint64_t bytes,
                     enum mem_category cat, int64_t waited_ns,
                     int *needs_sync);
/* The same with no GPU work outstanding (op -1): a synchronize waits for
 * nothing and makes every pending block free at once.  Returns the host
 * time taken. */
int64_t mem_alloc(struct mem *m, int64_t t_ns, int buffer,
                  enum sched_stream pool, uint64_t bytes,
                  enum mem_category cat);
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
    int retries;                            /* cudaMalloc failed: retried */
    int syncs;                              /* retries that synchronized */
    int ooms;                               /* allocations that failed */
    int64_t oom_shortfall;                  /* largest overshoot, bytes:
                                               reserved + live OOM blocks
                                               + the request - device */
    int64_t stall_ns;                       /* host time of all retries */
    int64_t outside_bytes;                  /* device memory held outside
                                               the allocator (NCCL's), so
                                               not available to it */
};

/* One retry: the allocating op (-1: none), when the host began the
 * allocation, the host time it took (waiting for the GPU included),
 * whether it synchronized and whether it still failed. */
struct mem_retry {
    int op;
    int synced, oom;
    int64_t t_ns;
    int64_t stall_ns;
};

void mem_get_stats(const struct mem *m, struct mem_stats *st);
const struct mem_sample *mem_samples(const struct mem *m, int *n);
/* Room for N samples before the list grows (an allocation and a free
 * leave one each): growing a long step's list by doubling copied it
 * several times over. */
void mem_reserve_samples(struct mem *m, size_t n);
/* Every retry so far, in order. */
const struct mem_retry *mem_retries(const struct mem *m, int *n);
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
 * the buffers allocated since b1 by copies x bstride, and the samples and
 * retries of the micro-batch since the snapshot repeated, each t2 - t1
 * later (a retry's op moved by one period more each). */
void mem_fold(struct mem *m, const struct mem_snapshot *snap,
              const struct mem_fold_map *map, int copies, int bstride);
/* What one period (snapshot SNAP to now) added to M's retries, syncs,
 * ooms and stall_ns (the other fields zero). */
void mem_fold_period(const struct mem *m, const struct mem_snapshot *snap,
                     struct mem_stats *d);

#endif
