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
 */
#include "mem.h"
#include "xalloc.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#define MIN_BLOCK 512ull
#define SMALL_SIZE (1ull << 20)
#define SMALL_SEGMENT (2ull << 20)
#define LARGE_SEGMENT (20ull << 20)
#define MIN_LARGE_ALLOC (10ull << 20)
#define ROUND_LARGE (2ull << 20)

enum block_state { BLOCK_FREE, BLOCK_USED, BLOCK_PENDING, BLOCK_RELEASED };

struct block {
    uint64_t size;
    int pool;
    int prev, next;          /* neighbours in the segment, -1 at the ends */
    enum block_state state;
    int wait_op;
    int free_pos;            /* index in its pool's free list, or -1 */
};

/* Pools: per stream, small and large (pool_key). */
#define N_POOLS (STREAM_COUNT * 2)

/* Free blocks of one pool: best fit scans only these, not every block
 * ever made (the allocator's own pools are sets of free blocks too). */
struct free_list {
    int *ids;
    size_t n, cap;
};

struct mem {
    struct block *blocks;
    size_t n_blocks, cap_blocks;
    int *buffer_block;
    enum mem_category *buffer_cat;
    int n_buffers;
    double capacity;
    int64_t allocated, reserved;
    int64_t by_cat[MEM_CATEGORY_COUNT];
    struct mem_stats st;
    struct mem_sample *samples;
    size_t n_samples, cap_samples;
    int *pending;             /* blocks in BLOCK_PENDING */
    size_t n_pending, cap_pending;
    struct free_list free[N_POOLS];
    int *spare;               /* released block slots to reuse */
    size_t n_spare, cap_spare;
};

static void
set_free(struct mem *m, int i)
{
    struct block *b = &m->blocks[i];
    struct free_list *fl = &m->free[b->pool];
    b->state = BLOCK_FREE;
    fl->ids = xgrow(fl->ids, &fl->cap, fl->n + 1, sizeof(int));
    b->free_pos = (int)fl->n;
    fl->ids[fl->n++] = i;
}

/* Take a block out of its free list (it becomes used or released). */
static void
unset_free(struct mem *m, int i, enum block_state state)
{
    struct block *b = &m->blocks[i];
    struct free_list *fl = &m->free[b->pool];
    int last = fl->ids[--fl->n];
    fl->ids[b->free_pos] = last;
    m->blocks[last].free_pos = b->free_pos;
    b->free_pos = -1;
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
    m->capacity = capacity_bytes;
    return m;
}

void
mem_free(struct mem *m)
{
    if (m == NULL)
        return;
    free(m->blocks);
    free(m->buffer_block);
    free(m->buffer_cat);
    free(m->samples);
    free(m->pending);
    for (int i = 0; i < N_POOLS; i++)
        free(m->free[i].ids);
    free(m->spare);
    free(m);
}

static void
sample(struct mem *m, int64_t t)
{
    if (m->allocated > m->st.peak_allocated) {
        m->st.peak_allocated = m->allocated;
        m->st.peak_t_ns = t;
        memcpy(m->st.peak_by_cat, m->by_cat, sizeof m->by_cat);
    }
    if (m->reserved > m->st.peak_reserved)
        m->st.peak_reserved = m->reserved;
    struct mem_sample *s;
    if (m->n_samples > 0 && m->samples[m->n_samples - 1].t_ns == t) {
        s = &m->samples[m->n_samples - 1];
    } else {
        m->samples = xgrow(m->samples, &m->cap_samples, m->n_samples + 1,
                           sizeof *m->samples);
        s = &m->samples[m->n_samples++];
    }
    s->t_ns = t;
    s->allocated = m->allocated;
    s->reserved = m->reserved;
    memcpy(s->by_cat, m->by_cat, sizeof m->by_cat);
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
    b->free_pos = -1;
    return i;
}

/* Block i has just become free: merge it with free neighbours in its
 * segment and put the result in the pool's free list. */
static void
merge_free(struct mem *m, int i)
{
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
        struct block *p = &m->blocks[pv];
        p->size += m->blocks[i].size;
        p->next = m->blocks[i].next;
        if (p->next >= 0)
            m->blocks[p->next].prev = pv;
        m->blocks[i].state = BLOCK_RELEASED;
        m->spare = xgrow(m->spare, &m->cap_spare, m->n_spare + 1,
                         sizeof(int));
        m->spare[m->n_spare++] = i;
        return;
    }
    set_free(m, i);
}

/* Release segments that are entirely free (cudaFree of cached memory). */
static void
release_cached(struct mem *m)
{
    for (int p = 0; p < N_POOLS; p++) {
        struct free_list *fl = &m->free[p];
        for (size_t k = fl->n; k-- > 0;) {
            int i = fl->ids[k];
            const struct block *b = &m->blocks[i];
            if (b->prev < 0 && b->next < 0) {
                m->reserved -= (int64_t)b->size;
                unset_free(m, i, BLOCK_RELEASED);
            }
        }
    }
}

static int
pool_key(enum sched_stream stream, uint64_t size)
{
    return (int)stream * 2 + (size <= SMALL_SIZE ? 0 : 1);
}

void
mem_alloc(struct mem *m, int64_t t, int buffer, enum sched_stream stream,
          uint64_t bytes, enum mem_category cat)
{
    assert(buffer >= 0 && buffer < m->n_buffers);
    assert(m->buffer_block[buffer] < 0);    /* not already live */
    uint64_t size = (bytes + MIN_BLOCK - 1) / MIN_BLOCK * MIN_BLOCK;
    if (size == 0)
        size = MIN_BLOCK;
    int pool = pool_key(stream, size);
    int small = size <= SMALL_SIZE;

    int best = -1;
    const struct free_list *fl = &m->free[pool];
    for (size_t k = 0; k < fl->n; k++) {
        int i = fl->ids[k];
        const struct block *b = &m->blocks[i];
        if (b->size >= size && (best < 0 || b->size < m->blocks[best].size
                                || (b->size == m->blocks[best].size
                                    && i < best)))
            best = i;
    }
    if (best >= 0)
        unset_free(m, best, BLOCK_USED);
    else {
        uint64_t seg = small ? SMALL_SEGMENT
                       : size < MIN_LARGE_ALLOC
                           ? LARGE_SEGMENT
                           : (size + ROUND_LARGE - 1) / ROUND_LARGE
                                 * ROUND_LARGE;
        if ((double)m->reserved + (double)seg > m->capacity) {
            release_cached(m);
            m->st.retries++;
            if ((double)m->reserved + (double)seg > m->capacity) {
                m->st.ooms++;
                int64_t over = m->reserved + (int64_t)seg
                               - (int64_t)m->capacity;
                if (over > m->st.oom_shortfall)
                    m->st.oom_shortfall = over;
            }
        }
        best = new_block(m, seg, pool);
        m->reserved += (int64_t)seg;
    }
    struct block *b = &m->blocks[best];
    uint64_t rest = b->size - size;
    /* should_split: small pool at least kMinBlockSize left, large pool
     * more than kSmallSize. */
    if (small ? rest >= MIN_BLOCK : rest > SMALL_SIZE) {
        int nb = new_block(m, rest, pool);
        b = &m->blocks[best];   /* new_block may move the array */
        struct block *r = &m->blocks[nb];
        r->prev = best;
        r->next = b->next;
        if (b->next >= 0)
            m->blocks[b->next].prev = nb;
        b->next = nb;
        b->size = size;
        merge_free(m, nb);      /* the remainder is free */
        b = &m->blocks[best];
    }
    b->state = BLOCK_USED;
    m->buffer_block[buffer] = best;
    m->buffer_cat[buffer] = cat;
    m->allocated += (int64_t)b->size;
    m->by_cat[cat] += (int64_t)b->size;
    sample(m, t);
}

void
mem_release(struct mem *m, int64_t t, int buffer, int wait_op,
            int pending_done)
{
    int i = m->buffer_block[buffer];
    assert(i >= 0);
    m->buffer_block[buffer] = -1;
    struct block *b = &m->blocks[i];
    m->allocated -= (int64_t)b->size;
    m->by_cat[m->buffer_cat[buffer]] -= (int64_t)b->size;
    if (pending_done || wait_op < 0) {
        b->state = BLOCK_USED;
        merge_free(m, i);
    } else {
        b->state = BLOCK_PENDING;
        b->wait_op = wait_op;
        m->pending = xgrow(m->pending, &m->cap_pending, m->n_pending + 1,
                           sizeof(int));
        m->pending[m->n_pending++] = i;
    }
    sample(m, t);
}

void
mem_op_done(struct mem *m, int64_t t, int op)
{
    (void)t;
    size_t w = 0;
    for (size_t k = 0; k < m->n_pending; k++) {
        int i = m->pending[k];
        if (m->blocks[i].wait_op == op) {
            m->blocks[i].wait_op = -1;
            merge_free(m, i);
        } else {
            m->pending[w++] = i;
        }
    }
    m->n_pending = w;
}

void
mem_get_stats(const struct mem *m, struct mem_stats *st)
{
    *st = m->st;
}

const struct mem_sample *
mem_samples(const struct mem *m, int *n)
{
    *n = (int)m->n_samples;
    return m->samples;
}

void
mem_reset_peaks(struct mem *m, int64_t t)
{
    m->st.peak_allocated = m->allocated;
    m->st.peak_reserved = m->reserved;
    m->st.peak_t_ns = t;
    memcpy(m->st.peak_by_cat, m->by_cat, sizeof m->by_cat);
    sample(m, t);
}
