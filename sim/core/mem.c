/*
 * mem.c: allocation ledger and caching-allocator model (see mem.h).
 *
 * Sizes and segment rules follow c10/cuda/CUDACachingAllocator.cpp:
 * requests round up to 512 bytes (kMinBlockSize); requests up to 1 MiB
 * come from a small pool of 2 MiB segments (kSmallBuffer), requests up to
 * 10 MiB from 20 MiB segments (kLargeBuffer), larger ones get a segment
 * rounded up to 2 MiB (kRoundLarge).  Pools are kept per stream.  A free
 * block is split when the remainder is at least 512 bytes (small pool) or
 * more than 1 MiB (large pool), and merged with free neighbours in its
 * segment.
 *
 * The retry path (mem.h) follows DeviceCachingAllocator::malloc: when
 * alloc_block (cudaMalloc) fails it tries release_available_cached_blocks
 * and then release_cached_blocks, which first runs
 * synchronize_and_free_events (cudaEventSynchronize on every outstanding
 * record_stream event, then frees their blocks) and then cudaFree on
 * every unsplit free block, and retries alloc_block once more; failing
 * that it raises OutOfMemoryError.  (PyTorch's
 * release_available_cached_blocks frees oversize blocks only and does
 * nothing unless max_split_size_mb is set; the model's first step, the
 * unused segments released without waiting for the GPU, stands for it
 * and for the part of release_cached_blocks that needs no event.)
 */
#include "mem.h"
#include "mem_impl.h"
#include "xalloc.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* Position in FL of the first block ordered at or after (SIZE, ADDR). */
static size_t
free_lower_bound(const struct mem *m, const struct free_list *fl,
                 uint64_t size, uint64_t addr)
{
    size_t lo = 0, hi = fl->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct block *bj = &m->blocks[fl->ids[mid]];
        if (bj->size < size || (bj->size == size && bj->addr < addr))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void
set_free(struct mem *m, int i)
{
    struct block *b = &m->blocks[i];
    struct free_list *fl = &m->free[b->pool];
    b->state = BLOCK_FREE;
    fl->ids = xgrow(fl->ids, &fl->cap, fl->n + 1, sizeof(int));
    size_t at = free_lower_bound(m, fl, b->size, b->addr);
    memmove(fl->ids + at + 1, fl->ids + at, (fl->n - at) * sizeof(int));
    fl->ids[at] = i;
    fl->n++;
    m->n_whole_free += b->prev < 0 && b->next < 0;
}

/* Take a block out of its free list (it becomes used or released).  Its
 * size must be the one it was listed with. */
static void
unset_free(struct mem *m, int i, enum block_state state)
{
    struct block *b = &m->blocks[i];
    struct free_list *fl = &m->free[b->pool];
    size_t at = free_lower_bound(m, fl, b->size, b->addr);
    assert(at < fl->n && fl->ids[at] == i);
    memmove(fl->ids + at, fl->ids + at + 1, (fl->n - at - 1) * sizeof(int));
    fl->n--;
    m->n_whole_free -= b->prev < 0 && b->next < 0;
    b->state = state;
    if (state == BLOCK_RELEASED) {
        m->spare = xgrow(m->spare, &m->cap_spare, m->n_spare + 1,
                         sizeof(int));
        m->spare[m->n_spare++] = i;
    }
}

struct mem *
mem_new(int n_buffers, double capacity_bytes)
{
    struct mem *m = xcalloc(1, sizeof *m);
    m->n_buffers = n_buffers;
    m->buffer_block = xmalloc(sizeof(int) * (n_buffers ? n_buffers : 1));
    m->buffer_cat = xcalloc(n_buffers ? n_buffers : 1, sizeof *m->buffer_cat);
    for (int i = 0; i < n_buffers; i++)
        m->buffer_block[i] = -1;
    m->live_bits = xcalloc((size_t)n_buffers / 64 + 1, sizeof *m->live_bits);
    m->capacity = capacity_bytes;
    m->pending_lo = SIZE_MAX;
    return m;
}

void
mem_free(struct mem *m)
{
    if (m == NULL)
        return;
    free(m->blocks);
    free(m->buffer_block);
    free(m->live_bits);
    free(m->buffer_cat);
    free(m->samples);
    free(m->pending_head);
    free(m->pending_tail);
    for (int i = 0; i < N_POOLS; i++)
        free(m->free[i].ids);
    free(m->spare);
    free(m->retry_log);
    free(m);
}

void
mem_set_costs(struct mem *m, const struct mem_costs *c)
{
    m->costs = *c;
}

void
mem_sample(struct mem *m, int64_t t)
{
    if (m->allocated > m->st.peak_allocated) {
        m->st.peak_allocated = m->allocated;
        m->st.peak_t_ns = t;
        memcpy(m->st.peak_by_cat, m->by_cat, sizeof m->by_cat);
    }
    if (m->reserved > m->st.peak_reserved)
        m->st.peak_reserved = m->reserved;
    struct mem_sample s = {t, m->allocated, m->reserved, {0}};
    memcpy(s.by_cat, m->by_cat, sizeof m->by_cat);
    mem_put_sample(m, &s);
}

void
mem_reserve_samples(struct mem *m, size_t n)
{
    m->samples = xgrow(m->samples, &m->cap_samples, n, sizeof *m->samples);
}

void
mem_put_sample(struct mem *m, const struct mem_sample *s)
{
    /* Several changes at one time leave one sample, the last. */
    if (m->n_samples > 0 && m->samples[m->n_samples - 1].t_ns == s->t_ns) {
        m->samples[m->n_samples - 1] = *s;
        return;
    }
    m->samples = xgrow(m->samples, &m->cap_samples, m->n_samples + 1,
                       sizeof *m->samples);
    m->samples[m->n_samples++] = *s;
}

void
mem_grow_pending(struct mem *m, int op)
{
    /* Every op given here may get a pending list: the range that a
     * device synchronize has to look through. */
    if ((size_t)op < m->pending_lo)
        m->pending_lo = (size_t)op;
    if ((size_t)op + 1 > m->pending_hi)
        m->pending_hi = (size_t)op + 1;
    if ((size_t)op < m->cap_pending)
        return;
    size_t old = m->cap_pending;
    m->pending_head = xgrow(m->pending_head, &m->cap_pending, (size_t)op + 1,
                            sizeof(int));
    m->pending_tail = xrealloc(m->pending_tail, m->cap_pending * sizeof(int));
    for (size_t k = old; k < m->cap_pending; k++)
        m->pending_head[k] = m->pending_tail[k] = -1;
}

/* A new block, not yet in any list (state USED until the caller says). */
static int
new_block(struct mem *m, uint64_t size, int pool)
{
    int i;
    if (m->n_spare > 0) {
        i = m->spare[--m->n_spare];
    } else {
        m->blocks = xgrow(m->blocks, &m->cap_blocks, m->n_blocks + 1,
                          sizeof *m->blocks);
        i = (int)m->n_blocks++;
    }
    struct block *b = &m->blocks[i];
    memset(b, 0, sizeof *b);
    b->size = size;
    b->pool = pool;
    b->prev = b->next = -1;
    b->state = BLOCK_USED;
    b->wait_op = -1;
    return i;
}

/* Block i has just become free: merge it with free neighbours in its
 * segment and put the result in the pool's free list.  A block that did
 * not fit (oom) has no segment: it is dropped. */
static void
merge_free(struct mem *m, int i)
{
    if (m->blocks[i].oom) {
        m->oom_live -= (int64_t)m->blocks[i].size;
        m->blocks[i].state = BLOCK_RELEASED;
        m->spare = xgrow(m->spare, &m->cap_spare, m->n_spare + 1,
                         sizeof(int));
        m->spare[m->n_spare++] = i;
        return;
    }
    int nx = m->blocks[i].next;
    if (nx >= 0 && m->blocks[nx].state == BLOCK_FREE) {
        unset_free(m, nx, BLOCK_RELEASED);
        m->blocks[i].size += m->blocks[nx].size;
        m->blocks[i].next = m->blocks[nx].next;
        if (m->blocks[i].next >= 0)
            m->blocks[m->blocks[i].next].prev = i;
    }
    int pv = m->blocks[i].prev;
    if (pv >= 0 && m->blocks[pv].state == BLOCK_FREE) {
        /* The neighbour grows: out of the sorted list and back in. */
        unset_free(m, pv, BLOCK_USED);
        struct block *p = &m->blocks[pv];
        p->size += m->blocks[i].size;
        p->next = m->blocks[i].next;
        if (p->next >= 0)
            m->blocks[p->next].prev = pv;
        m->blocks[i].state = BLOCK_RELEASED;
        m->spare = xgrow(m->spare, &m->cap_spare, m->n_spare + 1,
                         sizeof(int));
        m->spare[m->n_spare++] = i;
        set_free(m, pv);
        return;
    }
    set_free(m, i);
}

/* Release segments that are entirely free (cudaFree of cached memory);
 * returns how many. */
static int
release_cached(struct mem *m)
{
    int n = 0;
    for (int p = 0; p < N_POOLS && m->n_whole_free > 0; p++) {
        struct free_list *fl = &m->free[p];
        for (size_t k = fl->n; k-- > 0;) {
            int i = fl->ids[k];
            const struct block *b = &m->blocks[i];
            if (b->prev < 0 && b->next < 0) {
                m->reserved -= (int64_t)b->size;
                unset_free(m, i, BLOCK_RELEASED);
                n++;
            }
        }
    }
    return n;
}

/* The device has been synchronized: every event has completed, so every
 * block waiting for one is free. */
static void
free_all_pending(struct mem *m, int64_t t)
{
    for (size_t op = m->pending_lo; op < m->pending_hi; op++)
        if (m->pending_head[op] >= 0)
            mem_op_done(m, t, (int)op);
    m->pending_lo = SIZE_MAX;
    m->pending_hi = 0;
}

static void
log_retry(struct mem *m, int op, int64_t t, int64_t stall, int synced,
          int oom)
{
    m->retry_log = xgrow(m->retry_log, &m->cap_retry_log,
                         m->n_retry_log + 1, sizeof *m->retry_log);
    m->retry_log[m->n_retry_log++] = (struct mem_retry){op, synced, oom, t,
                                                        stall};
    m->st.stall_ns += stall;
}

static int
pool_key(enum sched_stream stream, uint64_t size)
{
    return (int)stream * 2 + (size <= SMALL_SIZE ? 0 : 1);
}

static int
fits(const struct mem *m, uint64_t seg)
{
    return (double)m->reserved + (double)seg <= m->capacity;
}

/* A new segment of SEG bytes in POOL (cudaMalloc); its block, in use. */
static int
new_segment(struct mem *m, uint64_t seg, int pool)
{
    int i = new_block(m, seg, pool);
    m->blocks[i].addr = m->next_addr;
    m->next_addr += seg;
    m->reserved += (int64_t)seg;
    return i;
}

int64_t
mem_alloc_op(struct mem *m, int64_t t, int op, int buffer,
             enum sched_stream stream, uint64_t bytes, enum mem_category cat,
             int64_t waited, int *needs_sync)
{
    assert(buffer >= 0 && buffer < m->n_buffers);
    assert(m->buffer_block[buffer] < 0);    /* not already live */
    assert((waited >= 0) == (m->sync_pending != 0));
    *needs_sync = 0;
    uint64_t size = (bytes + MIN_BLOCK - 1) / MIN_BLOCK * MIN_BLOCK;
    if (size == 0)
        size = MIN_BLOCK;
    int pool = pool_key(stream, size);
    int small = size <= SMALL_SIZE;
    uint64_t seg = small ? SMALL_SEGMENT
                   : size < MIN_LARGE_ALLOC
                       ? LARGE_SEGMENT
                       : (size + ROUND_LARGE - 1) / ROUND_LARGE * ROUND_LARGE;
    const struct mem_costs *c = &m->costs;
    int64_t cost = 0;
    int best = -1;

    if (waited < 0) {
        const struct free_list *fl = &m->free[pool];
        size_t at = free_lower_bound(m, fl, size, 0);
        if (at < fl->n) {
            best = fl->ids[at];
            unset_free(m, best, BLOCK_USED);
        } else if (fits(m, seg)) {
            best = new_segment(m, seg, pool);
        } else {
            /* cudaMalloc fails: release the unused segments and retry. */
            m->st.retries++;
            int freed = release_cached(m);
            cost = freed * c->cuda_free_ns + c->cuda_malloc_ns;
            if (!fits(m, seg)) {
                /* The retried cudaMalloc fails as well: the
                 * synchronize comes next.  The host has spent the frees
                 * and that cudaMalloc. */
                m->sync_pending = 1;
                m->sync_op = op;
                m->sync_t = t;
                m->sync_cost = cost;
                *needs_sync = 1;
                if (freed > 0)
                    mem_sample(m, t);
                return cost;
            }
            log_retry(m, op, t, cost, 0, 0);
            best = new_segment(m, seg, pool);
        }
    } else {
        /* release_cached_blocks after the wait: every event has
         * completed; a device synchronize, cudaFree of every unused
         * segment, one more cudaMalloc. */
        m->sync_pending = 0;
        m->st.syncs++;
        free_all_pending(m, t);
        cost = c->synchronize_ns + release_cached(m) * c->cuda_free_ns
               + c->cuda_malloc_ns;
        int oom = !fits(m, seg);
        log_retry(m, m->sync_op, m->sync_t, m->sync_cost + waited + cost, 1,
                  oom);
        if (oom) {
            /* OutOfMemoryError: counted, and by how much the device
             * would have had to be larger; the tensor is carried on
             * without a segment. */
            m->st.ooms++;
            int64_t over = m->reserved + m->oom_live + (int64_t)seg
                           - (int64_t)m->capacity;
            if (over > m->st.oom_shortfall)
                m->st.oom_shortfall = over;
            best = new_block(m, size, pool);
            m->blocks[best].oom = 1;
            m->blocks[best].addr = m->next_addr;
            m->next_addr += size;
            m->oom_live += (int64_t)size;
        } else {
            best = new_segment(m, seg, pool);
        }
    }
    struct block *b = &m->blocks[best];
    uint64_t rest = b->size - size;
    /* should_split: small pool at least kMinBlockSize left, large pool
     * more than kSmallSize. */
    if (!b->oom && (small ? rest >= MIN_BLOCK : rest > SMALL_SIZE)) {
        int nb = new_block(m, rest, pool);
        b = &m->blocks[best];   /* new_block may move the array */
        struct block *r = &m->blocks[nb];
        r->prev = best;
        r->next = b->next;
        if (b->next >= 0)
            m->blocks[b->next].prev = nb;
        b->next = nb;
        b->size = size;
        r->addr = b->addr + size;
        merge_free(m, nb);      /* the remainder is free */
        b = &m->blocks[best];
    }
    b->state = BLOCK_USED;
    mem_set_buffer_block(m, buffer, best);
    m->buffer_cat[buffer] = cat;
    m->allocated += (int64_t)b->size;
    m->by_cat[cat] += (int64_t)b->size;
    mem_sample(m, t);
    return cost;
}

int64_t
mem_alloc(struct mem *m, int64_t t, int buffer, enum sched_stream stream,
          uint64_t bytes, enum mem_category cat)
{
    int sync;
    int64_t cost = mem_alloc_op(m, t, -1, buffer, stream, bytes, cat, -1,
                                &sync);
    if (sync)
        cost += mem_alloc_op(m, t + cost, -1, buffer, stream, bytes, cat, 0,
                             &sync);
    return cost;
}

void
mem_release(struct mem *m, int64_t t, int buffer, int wait_op,
            int pending_done)
{
    int i = m->buffer_block[buffer];
    assert(i >= 0);
    mem_set_buffer_block(m, buffer, -1);
    struct block *b = &m->blocks[i];
    m->allocated -= (int64_t)b->size;
    m->by_cat[m->buffer_cat[buffer]] -= (int64_t)b->size;
    if (pending_done || wait_op < 0) {
        b->state = BLOCK_USED;
        merge_free(m, i);
    } else {
        b->state = BLOCK_PENDING;
        b->wait_op = wait_op;
        b->pending_next = -1;
        mem_grow_pending(m, wait_op);
        if (m->pending_head[wait_op] < 0)
            m->pending_head[wait_op] = i;
        else
            m->blocks[m->pending_tail[wait_op]].pending_next = i;
        m->pending_tail[wait_op] = i;
    }
    mem_sample(m, t);
}

void
mem_op_done(struct mem *m, int64_t t, int op)
{
    (void)t;
    if (op < 0 || (size_t)op >= m->cap_pending)
        return;
    int i = m->pending_head[op];
    m->pending_head[op] = m->pending_tail[op] = -1;
    while (i >= 0) {
        /* merge_free may reuse block i's slot: read the link first. */
        int next = m->blocks[i].pending_next;
        m->blocks[i].wait_op = -1;
        merge_free(m, i);
        i = next;
    }
}

void
mem_get_stats(const struct mem *m, struct mem_stats *st)
{
    *st = m->st;
}

void
mem_set_outside(struct mem *m, double bytes)
{
    m->capacity -= bytes;
    m->st.outside_bytes = (int64_t)bytes;
}

const struct mem_sample *
mem_samples(const struct mem *m, int *n)
{
    *n = (int)m->n_samples;
    return m->samples;
}

const struct mem_retry *
mem_retries(const struct mem *m, int *n)
{
    *n = (int)m->n_retry_log;
    return m->retry_log;
}

void
mem_reset_peaks(struct mem *m, int64_t t)
{
    m->st.peak_allocated = m->allocated;
    m->st.peak_reserved = m->reserved;
    m->st.peak_t_ns = t;
    memcpy(m->st.peak_by_cat, m->by_cat, sizeof m->by_cat);
    mem_sample(m, t);
}
