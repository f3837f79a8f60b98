/*
 * des.c: binary min-heap of (time, seq) events (see des.h).
 *
 * A binary heap gives O(log n) insert and pop with a flat array; the
 * number of pending events here is small (a few per stream), so a pairing
 * heap or calendar queue would not pay for its complexity.
 */
#include "des.h"
#include "xalloc.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

struct des {
    struct des_event *heap;
    size_t n, cap;
    uint64_t next_seq;
    uint64_t processed;
    int64_t now_ns;
};

struct des *
des_new(void)
{
    return xcalloc(1, sizeof(struct des));
}

void
des_free(struct des *d)
{
    if (d == NULL)
        return;
    free(d->heap);
    free(d);
}

static int
earlier(const struct des_event *a, const struct des_event *b)
{
    return a->t_ns < b->t_ns || (a->t_ns == b->t_ns && a->seq < b->seq);
}

void
des_at(struct des *d, int64_t t_ns, int type, int arg)
{
    assert(t_ns >= d->now_ns);
    d->heap = xgrow(d->heap, &d->cap, d->n + 1, sizeof *d->heap);
    size_t i = d->n++;
    struct des_event ev = {t_ns, d->next_seq++, type, arg};
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!earlier(&ev, &d->heap[parent]))
            break;
        d->heap[i] = d->heap[parent];
        i = parent;
    }
    d->heap[i] = ev;
}

int
des_next(struct des *d, struct des_event *ev)
{
    if (d->n == 0)
        return 0;
    *ev = d->heap[0];
    struct des_event last = d->heap[--d->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const struct des_event *best = &last;
        if (l < d->n && earlier(&d->heap[l], best)) {
            m = l;
            best = &d->heap[l];
        }
        if (r < d->n && earlier(&d->heap[r], best))
            m = r;
        if (m == i)
            break;
        d->heap[i] = d->heap[m];
        i = m;
    }
    if (d->n > 0)
        d->heap[i] = last;
    assert(ev->t_ns >= d->now_ns);
    d->now_ns = ev->t_ns;
    d->processed++;
    return 1;
}

int64_t
des_now(const struct des *d)
{
    return d->now_ns;
}

uint64_t
des_events_processed(const struct des *d)
{
    return d->processed;
}

static int
cmp_events(const void *a, const void *b)
{
    const struct des_event *x = a, *y = b;
    return earlier(x, y) ? -1 : earlier(y, x) ? 1 : 0;
}

size_t
des_pending(const struct des *d, struct des_event **out)
{
    *out = NULL;
    if (d->n == 0)
        return 0;
    *out = xmemdup(d->heap, d->n * sizeof **out);
    qsort(*out, d->n, sizeof **out, cmp_events);
    return d->n;
}

void
des_shift(struct des *d, int64_t dt_ns, int (*map)(void *, int, int),
          void *ctx, uint64_t extra)
{
    d->now_ns += dt_ns;
    for (size_t i = 0; i < d->n; i++) {
        d->heap[i].t_ns += dt_ns;
        d->heap[i].arg = map(ctx, d->heap[i].type, d->heap[i].arg);
    }
    d->processed += extra;
}
