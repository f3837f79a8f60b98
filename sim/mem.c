/*
 * mem.c: allocation ledger and caching-allocator model (see mem.h).
 *
 * Sizes and segment rules follow c10/cuda/CUDACachingAllocator.cpp:
 * requests round up to 512 bytes (kMinBlockSize); requests up to 1 MiB
 * come from a small pool of 2 MiB segments (kSmallBuffer), requests up to
 * 10 MiB from 20 MiB segments (kLargeBuffer), larger ones get a segment
 * rounded up to 2 MiB (kRoundLarge).  Pools are kept per stream.  A free
 * block is split when the remainder is at least 512 bytes (small pool) or
 * 1 MiB (large pool), and merged with free neighbours in its segment.
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
};

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

static int
new_block(struct mem *m, uint64_t size, int pool)
{
    m->blocks = xgrow(m->blocks, &m->cap_blocks, m->n_blocks + 1,
                      sizeof *m->blocks);
    struct block *b = &m->blocks[m->n_blocks];
    memset(b, 0, sizeof *b);
    b->size = size;
    b->pool = pool;
    b->prev = b->next = -1;
    b->state = BLOCK_FREE;
    b->wait_op = -1;
    return (int)m->n_blocks++;
}

static void
merge_free(struct mem *m, int i)
{
    struct block *b = &m->blocks[i];
    int nx = b->next;
    if (nx >= 0 && m->blocks[nx].state == BLOCK_FREE) {
        b->size += m->blocks[nx].size;
        b->next = m->blocks[nx].next;
        if (b->next >= 0)
            m->blocks[b->next].prev = i;
        m->blocks[nx].state = BLOCK_RELEASED;
    }
    int pv = b->prev;
    if (pv >= 0 && m->blocks[pv].state == BLOCK_FREE) {
        struct block *p = &m->blocks[pv];
        p->size += b->size;
        p->next = b->next;
        if (p->next >= 0)
            m->blocks[p->next].prev = pv;
        b->state = BLOCK_RELEASED;
    }
}

/* Release segments that are entirely free (cudaFree of cached memory). */
static void
release_cached(struct mem *m)
{
    for (size_t i = 0; i < m->n_blocks; i++) {
        struct block *b = &m->blocks[i];
        if (b->state == BLOCK_FREE && b->prev < 0 && b->next < 0) {
            m->reserved -= (int64_t)b->size;
            b->state = BLOCK_RELEASED;
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
    uint64_t size = (bytes + MIN_BLOCK - 1) / MIN_BLOCK * MIN_BLOCK;
    if (size == 0)
        size = MIN_BLOCK;
    int pool = pool_key(stream, size);
    int small = size <= SMALL_SIZE;

    int best = -1;
    for (size_t i = 0; i < m->n_blocks; i++) {
        const struct block *b = &m->blocks[i];
        if (b->state == BLOCK_FREE && b->pool == pool && b->size >= size
            && (best < 0 || b->size < m->blocks[best].size))
            best = (int)i;
    }
    if (best < 0) {
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
    if (rest >= (small ? MIN_BLOCK : SMALL_SIZE)) {
        int nb = new_block(m, rest, pool);
        b = &m->blocks[best];   /* new_block may move the array */
        struct block *r = &m->blocks[nb];
        r->prev = best;
        r->next = b->next;
        if (b->next >= 0)
            m->blocks[b->next].prev = nb;
        b->next = nb;
        b->size = size;
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
        b->state = BLOCK_FREE;
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
            m->blocks[i].state = BLOCK_FREE;
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
    m->st.peak_allocated = 0;
    m->st.peak_reserved = 0;
    sample(m, t);
}
