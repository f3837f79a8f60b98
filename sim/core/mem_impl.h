/*
 * mem_impl.h: the caching-allocator model's state, shared by mem.c (the
 * allocator) and mem_fold.c (comparing and moving that state when a
 * schedule's repeated micro-batches are folded).  Not for other files.
 */
#ifndef FSDPSIM_MEM_IMPL_H
#define FSDPSIM_MEM_IMPL_H

#include "mem.h"

#include <stddef.h>
#include <stdint.h>

#define MIN_BLOCK 512ull
#define SMALL_SIZE (1ull << 20)
#define SMALL_SEGMENT (2ull << 20)
#define LARGE_SEGMENT (20ull << 20)
#define MIN_LARGE_ALLOC (10ull << 20)
#define ROUND_LARGE (2ull << 20)

enum block_state { BLOCK_FREE, BLOCK_USED, BLOCK_PENDING, BLOCK_RELEASED };

struct block {
    uint64_t size;
    uint64_t addr;           /* its segment's (see next_addr) + offset */
    int pool;
    int prev, next;          /* neighbours in the segment, -1 at the ends */
    enum block_state state;
    int wait_op;
    int pending_next;        /* next block waiting for the same op, -1 */
    int oom;                 /* an allocation that did not fit: no
                                segment behind it, not in reserved */
};

/* Pools: per stream, small and large (pool_key). */
#define N_POOLS (STREAM_COUNT * 2)

/* Free blocks of one pool, sorted by (size, address): best fit is a
 * binary search for the first large enough, as the allocator's own pools
 * are std::sets ordered by (stream, size, address) with lower_bound.
 * Ordering by address rather than by slot makes the choice among equal
 * sizes independent of how slots happen to be reused. */
struct free_list {
    int *ids;
    size_t n, cap;
};

struct mem {
    struct block *blocks;
    size_t n_blocks, cap_blocks;
    int *buffer_block;
    /* Bit v set while buffer v is live (buffer_block[v] >= 0): a
     * snapshot (mem_fold.c) lists the live buffers of a step's tens of
     * thousands by walking the set bits. */
    uint64_t *live_bits;
    enum mem_category *buffer_cat;
    int n_buffers;
    double capacity;
    int64_t allocated, reserved;
    int64_t by_cat[MEM_CATEGORY_COUNT];
    struct mem_stats st;
    struct mem_sample *samples;
    size_t n_samples, cap_samples;
    /* Blocks in BLOCK_PENDING, a list per op they wait for, in the order
     * they were freed: an op's completion finds its blocks at once
     * instead of scanning every pending block. */
    int *pending_head, *pending_tail;   /* by op, -1 when none */
    size_t cap_pending;
    size_t pending_lo, pending_hi;      /* ops that may have one: [lo, hi) */
    struct free_list free[N_POOLS];
    /* Free blocks that are a whole segment (no neighbours): what
     * release_cached() can give back.  A listed block's neighbours never
     * change (blocks are only split or merged out of the lists), so the
     * count is kept in set_free() and unset_free(). */
    size_t n_whole_free;
    /* Where the next segment starts: cudaMalloc's addresses, as the
     * allocator would see them, are modelled as one growing range. */
    uint64_t next_addr;
    int *spare;               /* released block slots to reuse */
    size_t n_spare, cap_spare;
    /* Bytes of live blocks that did not fit (oom): what the device would
     * have needed beyond reserved. */
    int64_t oom_live;
    struct mem_costs costs;
    /* Every retry, in the order they happened (mem_retries). */
    struct mem_retry *retry_log;
    size_t n_retry_log, cap_retry_log;
    /* A retry waiting for the device to be synchronized (mem_alloc_op
     * returned with *needs_sync set): its op, when it began and the host
     * time it has cost so far. */
    int sync_pending;
    int sync_op;
    int64_t sync_t, sync_cost;
};

/* Record the current totals as a sample at t (mem.c). */
void mem_sample(struct mem *m, int64_t t);
/* Append S, or replace the last sample when it has the same time. */
void mem_put_sample(struct mem *m, const struct mem_sample *s);
/* Make room in the pending lists for op OP (new entries empty). */
void mem_grow_pending(struct mem *m, int op);

/* Buffer V now lives in block SLOT (-1: not live). */
static inline void
mem_set_buffer_block(struct mem *m, int v, int slot)
{
    m->buffer_block[v] = slot;
    uint64_t bit = UINT64_C(1) << (v % 64);
    if (slot >= 0)
        m->live_bits[v / 64] |= bit;
    else
        m->live_bits[v / 64] &= ~bit;
}

#endif
