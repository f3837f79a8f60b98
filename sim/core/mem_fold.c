/*
 * mem_fold.c: the allocator's side of folding repeated micro-batches (see
 * mem.h and engine_fold.c).
 *
 * Two moments match when everything the allocator will decide from then
 * on is the same: the segments and blocks (slot for slot: best fit breaks
 * ties by slot), the free lists and the spare slots, the totals, which
 * buffer holds which block, which blocks wait for which unfinished op, the
 * blocks carried without a segment after an OOM, and the last sample (a
 * sample at the same time replaces it).  A retry is never half done at a
 * snapshot: the host takes one only when it reaches a new op.  Ops map by one
 * micro-batch; a live buffer maps to the one its allocating op's
 * counterpart allocated, or to itself when it was allocated before the
 * first micro-batch (sharded parameters, accumulated gradients).
 *
 * Addresses are compared as (segment, offset): a segment by its rank in
 * address order, not by its base.  The allocator only ever compares two
 * addresses (best fit's tie-break) and adds a block's size to its address
 * within a segment, and a new segment always lies above every other
 * (next_addr only grows), so two states whose segments differ only by
 * where cudaMalloc put them decide alike from then on.  A run that frees
 * and re-creates segments every micro-batch (the retries of one that
 * does not fit) moves next_addr each time and still repeats.
 */
#include "mem.h"
#include "mem_impl.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

/* A live buffer: the block holding it, by address. */
struct live_buf {
    int buf;
    enum mem_category cat;
    uint64_t addr;
};

/* A block as the future sees it: by address, not by slot. */
struct canon_block {
    uint64_t addr, size, prev, next;    /* prev, next: UINT64_MAX: none */
    int pool, state, wait_op, oom;
};

struct mem_snapshot {
    struct canon_block *blocks;     /* by address once sorted */
    size_t n_blocks;
    int sorted;
    uint64_t *free_addr;            /* the pools' lists, one after another */
    size_t free_n[N_POOLS];
    uint64_t *pend_addr;            /* blocks waiting for ops lo .. b-1 */
    size_t *pend_n;                 /* per op */
    int pend_from, pend_count;
    size_t n_whole_free;
    int comparable;                 /* no offset too large to encode */
    int64_t allocated, reserved, by_cat[MEM_CATEGORY_COUNT];
    size_t n_samples;
    struct mem_sample last;
    int retries, syncs, ooms;
    int64_t stall_ns, oom_live;
    size_t n_retry_log;
    int n_buffers;
    /* The live buffers alone, by buffer id: a step has tens of thousands
     * of buffers and a few hundred live, and a snapshot is taken at
     * every watched micro-batch. */
    struct live_buf *live;
    int n_live;
};

static int
pending_at(const struct mem *m, const int *list, int op)
{
    return op >= 0 && (size_t)op < m->cap_pending ? list[op] : -1;
}

/* A canonical address: the segment's rank in address order above, the
 * offset in it below.  Segments are at most a device's memory (an
 * allocation that did not fit: its own size), far below 2^44 bytes. */
#define SEG_SHIFT 44
#define SEG_OFFSET_MAX (1ull << SEG_SHIFT)

/* The index of X's lowest set bit (X > 0). */
static int
lowest_bit(uint64_t x)
{
#if defined(__GNUC__)
    return __builtin_ctzll(x);
#else
    int n = 0;
    for (; !(x & 1); x >>= 1)
        n++;
    return n;
#endif
}

static uint64_t
addr_of(const uint64_t *canon, int slot)
{
    return slot < 0 ? UINT64_MAX : canon[slot];
}

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Each live block's canonical address, by slot (released: UINT64_MAX).
 * Returns 0 when an offset or the number of segments does not fit the
 * encoding (the state is then never said to repeat). */
static int
canonical_addrs(const struct mem *m, uint64_t *canon)
{
    size_t n_seg = 0;
    uint64_t *base = xmalloc(sizeof(uint64_t) * (m->n_blocks + 1));
    for (size_t i = 0; i < m->n_blocks; i++) {
        canon[i] = UINT64_MAX;
        if (m->blocks[i].state != BLOCK_RELEASED && m->blocks[i].prev < 0)
            base[n_seg++] = m->blocks[i].addr;
    }
    qsort(base, n_seg, sizeof *base, cmp_u64);
    int ok = n_seg < (1ull << (64 - SEG_SHIFT)) - 1;
    for (size_t i = 0; i < m->n_blocks && ok; i++) {
        const struct block *h = &m->blocks[i];
        if (h->state == BLOCK_RELEASED || h->prev >= 0)
            continue;
        const uint64_t *at = bsearch(&h->addr, base, n_seg, sizeof *base,
                                     cmp_u64);
        uint64_t rank = (uint64_t)(at - base);
        for (int k = (int)i; k >= 0 && ok; k = m->blocks[k].next) {
            uint64_t off = m->blocks[k].addr - h->addr;
            ok = off < SEG_OFFSET_MAX;
            canon[k] = rank << SEG_SHIFT | off;
        }
    }
    free(base);
    return ok;
}

static int
cmp_addr(const void *a, const void *b)
{
    const struct canon_block *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The allocator's state with slots replaced by addresses; pending lists
 * for ops LO .. END-1. */
struct mem_snapshot *
mem_snapshot_take(const struct mem *m, int lo, int end)
{
    int from = lo, count = end - lo;
    struct mem_snapshot *s = xcalloc(1, sizeof *s);
    uint64_t *canon = xmalloc(sizeof(uint64_t) * (m->n_blocks + 1));
    s->comparable = canonical_addrs(m, canon);
    s->blocks = xmalloc(sizeof *s->blocks * (m->n_blocks + 1));
    for (size_t i = 0; i < m->n_blocks; i++) {
        const struct block *b = &m->blocks[i];
        if (b->state == BLOCK_RELEASED)
            continue;
        s->blocks[s->n_blocks++] = (struct canon_block){
            canon[i], b->size, addr_of(canon, b->prev),
            addr_of(canon, b->next),
            b->pool, (int)b->state,
            b->state == BLOCK_PENDING ? b->wait_op : -1, b->oom};
    }
    size_t n_free = 0;
    for (int p = 0; p < N_POOLS; p++)
        n_free += m->free[p].n;
    s->free_addr = xmalloc(sizeof(uint64_t) * (n_free + 1));
    n_free = 0;
    for (int p = 0; p < N_POOLS; p++) {
        s->free_n[p] = m->free[p].n;
        for (size_t k = 0; k < m->free[p].n; k++)
            s->free_addr[n_free++] = canon[m->free[p].ids[k]];
    }
    s->pend_from = from;
    s->pend_count = count > 0 ? count : 0;
    s->pend_n = xcalloc((size_t)s->pend_count + 1, sizeof(size_t));
    size_t n_pend = 0, cap = 0;
    for (int i = 0; i < s->pend_count; i++)
        for (int k = pending_at(m, m->pending_head, from + i); k >= 0;
             k = m->blocks[k].pending_next) {
            s->pend_addr = xgrow(s->pend_addr, &cap, n_pend + 1,
                                 sizeof(uint64_t));
            s->pend_addr[n_pend++] = canon[k];
            s->pend_n[i]++;
        }
    s->n_whole_free = m->n_whole_free;
    s->allocated = m->allocated;
    s->reserved = m->reserved;
    memcpy(s->by_cat, m->by_cat, sizeof s->by_cat);
    s->n_samples = m->n_samples;
    if (m->n_samples > 0)
        s->last = m->samples[m->n_samples - 1];
    s->retries = m->st.retries;
    s->syncs = m->st.syncs;
    s->ooms = m->st.ooms;
    s->stall_ns = m->st.stall_ns;
    s->oom_live = m->oom_live;
    s->n_retry_log = m->n_retry_log;
    s->n_buffers = m->n_buffers;
    size_t cap_live = 0;
    /* The live buffers in id order, from the set bits (mem_impl.h): a
     * step's buffers are mostly freed ones. */
    for (int w = 0; w <= (m->n_buffers - 1) / 64; w++)
        for (uint64_t bits = m->live_bits[w]; bits != 0; bits &= bits - 1) {
            int v = w * 64 + lowest_bit(bits);
            uint64_t addr = addr_of(canon, m->buffer_block[v]);
            if (addr == UINT64_MAX)
                continue;
            s->live = xgrow(s->live, &cap_live, (size_t)s->n_live + 1,
                            sizeof *s->live);
            s->live[s->n_live++] =
                (struct live_buf){v, m->buffer_cat[v], addr};
        }
    free(canon);
    return s;
}

void
mem_snapshot_free(struct mem_snapshot *s)
{
    if (s == NULL)
        return;
    free(s->blocks);
    free(s->free_addr);
    free(s->pend_addr);
    free(s->pend_n);
    free(s->live);
    free(s);
}

/* A buffer id against a live buffer (bsearch). */
static int
cmp_live(const void *key, const void *elem)
{
    int u = *(const int *)key, b = ((const struct live_buf *)elem)->buf;
    return u < b ? -1 : u > b;
}

/* The buffer that live buffer V (at b2) stands for at b1, or -1. */
static int
counterpart(const struct mem_fold_map *map, int v)
{
    int a = map->buf_alloc_op[v];
    if (a < map->b1)
        return v;
    int a1 = a - (map->b2 - map->b1);
    if (a1 < 0 || map->s->ops[a1].kind != OP_ALLOC)
        return -1;
    return map->s->ops[a1].buffer;
}

static int
same_sample(const struct mem_sample *a, int64_t ta, const struct mem_sample *b,
            int64_t tb)
{
    return a->t_ns - ta == b->t_ns - tb && a->allocated == b->allocated
           && a->reserved == b->reserved
           && memcmp(a->by_cat, b->by_cat, sizeof a->by_cat) == 0;
}

/* Blocks are put in address order only for a state that passed the
 * cheap comparisons: most watched micro-batches fail those. */
static void
sort_blocks(struct mem_snapshot *s)
{
    if (!s->sorted)
        qsort(s->blocks, s->n_blocks, sizeof *s->blocks, cmp_addr);
    s->sorted = 1;
}

static int
same_state(struct mem_snapshot *a, struct mem_snapshot *b,
           const struct mem_fold_map *map)
{
    int stride = map->b2 - map->b1;
    if (a->n_blocks != b->n_blocks || a->n_whole_free != b->n_whole_free
        || !a->comparable || !b->comparable
        || a->allocated != b->allocated
        || a->reserved != b->reserved || a->oom_live != b->oom_live
        || memcmp(a->by_cat, b->by_cat, sizeof a->by_cat) != 0
        || memcmp(a->free_n, b->free_n, sizeof a->free_n) != 0
        || a->pend_count != b->pend_count)
        return 0;
    sort_blocks(a);
    sort_blocks(b);
    for (size_t i = 0; i < a->n_blocks; i++) {
        const struct canon_block *x = &a->blocks[i], *y = &b->blocks[i];
        if (x->addr != y->addr || x->size != y->size || x->prev != y->prev
            || x->next != y->next || x->pool != y->pool
            || x->state != y->state || x->oom != y->oom
            || (x->wait_op < 0 ? y->wait_op != x->wait_op
                               : y->wait_op != x->wait_op + stride))
            return 0;
    }
    size_t n_free = 0;
    for (int p = 0; p < N_POOLS; p++)
        n_free += a->free_n[p];
    if (memcmp(a->free_addr, b->free_addr, n_free * sizeof(uint64_t)) != 0)
        return 0;
    size_t n_pend = 0;
    for (int i = 0; i < a->pend_count; i++) {
        if (a->pend_n[i] != b->pend_n[i])
            return 0;
        n_pend += a->pend_n[i];
    }
    if (n_pend > 0
        && memcmp(a->pend_addr, b->pend_addr, n_pend * sizeof(uint64_t)))
        return 0;
    if ((a->n_samples > 0) != (b->n_samples > 0))
        return 0;
    return a->n_samples == 0
           || same_sample(&a->last, map->t1, &b->last, map->t2);
}

int
mem_snapshots_match(struct mem_snapshot *then, struct mem_snapshot *now,
                    const struct mem_fold_map *map)
{
    if (then->n_buffers != now->n_buffers || then->n_live != now->n_live
        || !same_state(then, now, map))
        return 0;
    /* Live buffers: a buffer now and its counterpart then hold blocks at
     * one address, one to one (as many live then as now, each hit once:
     * every one hit). */
    int n = now->n_buffers, ok = 1;
    unsigned char *hit = xcalloc((size_t)then->n_live + 1, 1);
    for (int i = 0; i < now->n_live && ok; i++) {
        const struct live_buf *v = &now->live[i];
        int u = counterpart(map, v->buf);
        const struct live_buf *w = NULL;
        if (u >= 0 && u < n)
            w = bsearch(&u, then->live, (size_t)then->n_live,
                        sizeof *then->live, cmp_live);
        ok = w != NULL && !hit[w - then->live] && w->addr == v->addr
             && w->cat == v->cat;
        if (ok)
            hit[w - then->live] = 1;
    }
    free(hit);
    return ok;
}

void
mem_fold_period(const struct mem *m, const struct mem_snapshot *s,
                struct mem_stats *d)
{
    memset(d, 0, sizeof *d);
    d->retries = m->st.retries - s->retries;
    d->syncs = m->st.syncs - s->syncs;
    d->ooms = m->st.ooms - s->ooms;
    d->stall_ns = m->st.stall_ns - s->stall_ns;
}

void
mem_fold(struct mem *m, const struct mem_snapshot *s,
         const struct mem_fold_map *map, int copies, int bstride)
{
    int shift = copies * (map->b2 - map->b1);
    int64_t period = map->t2 - map->t1;

    /* Blocks waiting for unfinished ops now wait for their copies, the
     * highest first: a target may be an op not moved yet. */
    for (int op = map->b2 - 1; op >= map->lo2; op--) {
        int head = pending_at(m, m->pending_head, op);
        if (head < 0)
            continue;
        int tail = m->pending_tail[op];
        m->pending_head[op] = m->pending_tail[op] = -1;
        mem_grow_pending(m, op + shift);
        m->pending_head[op + shift] = head;
        m->pending_tail[op + shift] = tail;
    }
    for (size_t i = 0; i < m->n_blocks; i++)
        if (m->blocks[i].state == BLOCK_PENDING)
            m->blocks[i].wait_op += shift;

    /* Buffers allocated since b1 become the copies' buffers. */
    for (int v = m->n_buffers - 1; v >= 0; v--) {
        if (m->buffer_block[v] < 0 || map->buf_alloc_op[v] < map->b1)
            continue;
        int w = v + copies * bstride;
        mem_set_buffer_block(m, w, m->buffer_block[v]);
        m->buffer_cat[w] = m->buffer_cat[v];
        mem_set_buffer_block(m, v, -1);
    }

    /* The micro-batch's samples, again for each copy.  Its first one
     * replaced the sample before it when that one changed. */
    size_t from = s->n_samples;
    if (from > 0 && !same_sample(&s->last, 0, &m->samples[from - 1], 0))
        from--;
    size_t n = m->n_samples - from;
    struct mem_sample *tpl = n ? xmemdup(m->samples + from, n * sizeof *tpl)
                               : NULL;
    for (int j = 1; j <= copies; j++)
        for (size_t k = 0; k < n; k++) {
            struct mem_sample x = tpl[k];
            x.t_ns += j * period;
            mem_put_sample(m, &x);
        }
    free(tpl);
    /* The micro-batch's retries, again for each copy. */
    size_t nr = m->n_retry_log - s->n_retry_log;
    for (int j = 1; j <= copies && nr > 0; j++) {
        m->retry_log = xgrow(m->retry_log, &m->cap_retry_log,
                             m->n_retry_log + nr, sizeof *m->retry_log);
        for (size_t k = 0; k < nr; k++) {
            struct mem_retry x = m->retry_log[s->n_retry_log + k];
            if (x.op >= 0)
                x.op += j * (map->b2 - map->b1);
            x.t_ns += j * period;
            m->retry_log[m->n_retry_log++] = x;
        }
    }
    struct mem_stats d;
    mem_fold_period(m, s, &d);
    m->st.retries += copies * d.retries;
    m->st.syncs += copies * d.syncs;
    m->st.ooms += copies * d.ooms;
    m->st.stall_ns += copies * d.stall_ns;
}
