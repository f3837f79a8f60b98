/*
 * engine_fold.c: skipping the repeated micro-batches of a gradient-
 * accumulation step without changing the result (see engine.h).
 *
 * A step of A micro-batches has middle ones that the builder emits the
 * same way: same ops, costs and streams, dependencies on the micro-batch
 * before (or on ops long finished), buffers of their own.  Micro-batch 0
 * allocates what the later ones accumulate into, so micro-batch 1 still
 * refers back to one unlike itself; from micro-batch 2 to A-2 each is a
 * copy of the one before, which copies_follow() checks op by op from
 * where the state repeats.
 *
 * The engine is deterministic and everything it does depends only on its
 * state and on the ops still to come, all relative to the present.  So
 * when the host reaches micro-batch k in the state it reached micro-batch
 * k-p in (p = 1, 2 when best fit takes two equal buffers in turn, up to
 * ENGINE_FOLD_MAX_PERIOD),
 * shifted by p micro-batches (ops by `stride`, buffers by `bstride`, time
 * by the period), the micro-batches from k on replay those of k-p .. k-1,
 * one period later each.  Whole periods up to micro-batch A-2 are then not
 * simulated: the times written while the host went from k-p to k (logged)
 * are written again for each copy, the memory samples repeated, the event
 * count added, and the state moved on; the rest of the step is simulated
 * as usual.  Until the state repeats, each middle micro-batch's start is
 * remembered and nothing is skipped: the result is exact either way.  A
 * repeat with no whole period left is recorded all the same (none
 * skipped): a sweep counts longer steps of the setting from it.
 *
 * "State" is everything the future depends on: ops not finished yet (a
 * GPU op's progress, rate and projected end, a queued op's readiness),
 * the stream and communicator queues, the host's blocking, the pending
 * events (time, order, kind, op), and the allocator (mem_fold.c).  The
 * GPU ops in flight, which an allocator retry's synchronize waits for,
 * are the unfinished ops compared; a synchronize never spans a snapshot
 * (the host is at a new op then), and the retries of the watched period
 * are repeated with its samples.  Ops
 * issued before micro-batch k-p must all have finished by k, so no op
 * spans a whole period, and the ops still running at k-p's start must be
 * copies of those running at k's.
 */
#include "engine_impl.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

/* One step's run of middle micro-batches 2 .. last: micro-batch k
 * starts at op first + (k - 2) x stride. */
struct fold_run {
    int first;          /* first op of micro-batch 2 */
    int last;           /* the last middle micro-batch, A-2 */
    int stride;         /* ops per middle micro-batch */
    int bstride;        /* buffers allocated per middle micro-batch */
};

/* One period found: it runs from op b1 (micro-batch k-p) to b2 (k), and
 * `copies` more of it follow before the run's last middle micro-batch
 * ends. */
struct fold_step {
    int b1, b2;
    int stride, bstride;        /* ops and buffers per period */
    int micro;                  /* micro-batches per period */
    int copies;
};

struct time_write {
    int op, field;
    int64_t v;
};

/* The engine's state when the host reached a micro-batch's first op. */
struct eng_snap {
    int k;                      /* the micro-batch */
    int b;                      /* its first op */
    int64_t t;
    int lo;                     /* lowest unfinished op */
    uint64_t events;
    size_t log_at;              /* the time log's length then */
    unsigned char *done, *started;      /* ops lo .. b-1 */
    int64_t *ready, *issue_end, *since;
    double *remaining, *rate;
    struct op_time *times;
    int *q[STREAM_COUNT + PG_COUNT];
    size_t qn[STREAM_COUNT + PG_COUNT];
    int busy[STREAM_COUNT + PG_COUNT];
    int blocked, host_scheduled;
    struct des_event *ev;
    size_t n_ev;
    struct mem_snapshot *mem;
};

/* Watching costs a snapshot per micro-batch and the allocator takes a
 * few micro-batches to settle: below this many per step, folding saves
 * less than it costs (bench: GPT-3 on 1024 GPUs, even at 8). */
#define FOLD_MIN_MICRO_BATCHES 8

/* Periods tried: one micro-batch up to ENGINE_FOLD_MAX_PERIOD (engine.h
 * says why more than one).  A snapshot is kept for each; the comparisons
 * of the cheap totals fail at once for all but the right one. */
#define FOLD_MAX_PERIOD ENGINE_FOLD_MAX_PERIOD

struct engine_fold {
    struct fold_run *steps;
    int n_steps, cur;
    int *buf_alloc_op;          /* per buffer */
    int folded;
    int lo_hint;                /* no op below it is unfinished */
    struct eng_snap *snaps[FOLD_MAX_PERIOD];    /* [0]: the latest */

    /* The times written since the oldest snapshot. */
    struct time_write *log;
    size_t n_log, cap_log;
    int logging;
};

/* Is op X (in a later micro-batch) op Y again, STRIDE ops and BSTRIDE
 * buffers on?  References may be relative (moved by the stride) or
 * absolute (the same op or buffer); the latest absolute op goes to
 * *max_abs. */
static int
rel_op(int x, int y, int stride, int *max_abs)
{
    if (x == y + stride && y >= 0)
        return 1;
    if (x == y) {
        if (x > *max_abs)
            *max_abs = x;
        return 1;
    }
    return 0;
}

static int
rel_buf(int x, int y, int bstride)
{
    return x == y || (y >= 0 && x == y + bstride);
}

static int
op_repeats(const struct sched *s, const struct cost_table *ct, int x, int y,
           int stride, int bstride, int *max_abs)
{
    const struct sched_op *a = &s->ops[x], *b = &s->ops[y];
    if (a->kind != b->kind || a->stream != b->stream || a->pg != b->pg
        || a->phase != b->phase || a->iter != b->iter || a->unit != b->unit
        || a->leaf_begin != b->leaf_begin || a->leaf_end != b->leaf_end
        || a->flops != b->flops || a->model_flops != b->model_flops
        || a->bytes != b->bytes || a->dtype != b->dtype
        || a->in_offset != b->in_offset || a->cat != b->cat
        || a->hooks != b->hooks || a->n_deps != b->n_deps
        || ct->gpu_ns[x] != ct->gpu_ns[y]
        || ct->issue_ns[x] != ct->issue_ns[y]
        || ct->launch_ns[x] != ct->launch_ns[y])
        return 0;
    if (a->kind == OP_ALLOC ? a->buffer != b->buffer + bstride
                            : !rel_buf(a->buffer, b->buffer, bstride))
        return 0;
    if (!rel_buf(a->buf_in, b->buf_in, bstride)
        || !rel_buf(a->buf_out, b->buf_out, bstride))
        return 0;
    if (!rel_op(a->wait_op, b->wait_op, stride, max_abs))
        return 0;
    for (int d = 0; d < a->n_deps; d++)
        if (!rel_op(a->deps[d], b->deps[d], stride, max_abs))
            return 0;
    return 1;
}

/* Step IT's middle micro-batches, if they are laid out alike (the same
 * number of ops and buffers each): 1 with *f filled.  Micro-batch 0
 * allocates what later ones accumulate into, so 1's ops refer back to a
 * micro-batch unlike them; from micro-batch 2 on, each refers to one like
 * itself.  That their ops are copies is checked only where the state
 * repeats, and only from there on (copies_follow): the micro-batches
 * before are simulated anyway, and a step that never repeats would pay
 * for comparing them all (most of a short step's). */
static int
find_step(const struct sched *s, const int *first, int it,
          struct fold_run *f)
{
    int most = s->micro_batches, a = sched_step_micro_batches(s, it);
    const int *b = first + (size_t)it * (most + 1); /* b[most]: optimizer */
    if (a < FOLD_MIN_MICRO_BATCHES)
        return 0;
    for (int k = 0; k < a; k++)
        if (b[k] < 0 || (k > 0 && b[k] <= b[k - 1]))
            return 0;
    if (b[most] <= b[a - 1])
        return 0;
    int stride = b[3] - b[2];
    for (int k = 2; k <= a - 2; k++)
        if (b[k + 1] - b[k] != stride)
            return 0;
    int bstride = -1;
    for (int x = b[3]; x < b[3] + stride; x++)
        if (s->ops[x].kind == OP_ALLOC) {
            bstride = s->ops[x].buffer - s->ops[x - stride].buffer;
            break;
        }
    if (bstride < 0)
        bstride = 0;
    *f = (struct fold_run){b[2], a - 2, stride, bstride};
    return 1;
}

/* The ops from ST's b2 to the end of RUN's middle micro-batches (the
 * copies a jump fills in, then the rest up to the step's last
 * micro-batch) are those of one period before, shifted: what a jump
 * assumes of the copies, and what a longer step counted from this one
 * assumes of its middle (steady.c).  The latest op they refer to in
 * absolute terms goes to *max_abs. */
static int
copies_follow(const struct engine *e, const struct fold_run *run,
              const struct fold_step *st, int *max_abs)
{
    int end = run->first + (run->last - 1) * run->stride;
    for (int x = st->b2; x < end; x++)
        if (!op_repeats(e->s, &e->r->cost, x, x - st->stride, st->stride,
                        st->bstride, max_abs))
            return 0;
    return 1;
}

int
engine_fold_scan_new(const struct sched *s, struct engine_fold_scan *sc)
{
    memset(sc, 0, sizeof *sc);
    int a = s->micro_batches;
    if (a < FOLD_MIN_MICRO_BATCHES || s->iterations < 1)
        return 0;
    sc->micro_batches = a;
    sc->iterations = s->iterations;
    sc->n_buffers = s->n_buffers;
    sc->first = xmalloc(sizeof(int) * (size_t)s->iterations * (a + 1));
    for (size_t i = 0; i < (size_t)s->iterations * (a + 1); i++)
        sc->first[i] = -1;
    sc->buf_alloc_op = xmalloc(sizeof(int) * (s->n_buffers ? s->n_buffers
                                                            : 1));
    for (int i = 0; i < s->n_buffers; i++)
        sc->buf_alloc_op[i] = -1;
    return 1;
}

struct engine_fold *
engine_fold_new(const struct sched *s, struct engine_fold_scan *sc)
{
    if (sc->first == NULL)
        return NULL;
    struct engine_fold *f = xcalloc(1, sizeof *f);
    f->steps = xcalloc(s->iterations, sizeof *f->steps);
    f->buf_alloc_op = sc->buf_alloc_op;
    for (int it = 0; it < s->iterations; it++)
        if (find_step(s, sc->first, it, &f->steps[f->n_steps]))
            f->n_steps++;
    free(sc->first);
    memset(sc, 0, sizeof *sc);
    if (f->n_steps == 0) {
        engine_fold_free(f);
        return NULL;
    }
    return f;
}

static void
snap_free(struct eng_snap *sn)
{
    if (sn == NULL)
        return;
    free(sn->done);
    free(sn->started);
    free(sn->ready);
    free(sn->issue_end);
    free(sn->since);
    free(sn->remaining);
    free(sn->rate);
    free(sn->times);
    for (int q = 0; q < STREAM_COUNT + PG_COUNT; q++)
        free(sn->q[q]);
    free(sn->ev);
    mem_snapshot_free(sn->mem);
    free(sn);
}

static void
drop_snapshots(struct engine_fold *f)
{
    for (int i = 0; i < FOLD_MAX_PERIOD; i++) {
        snap_free(f->snaps[i]);
        f->snaps[i] = NULL;
    }
    f->logging = 0;
    f->n_log = 0;
}

void
engine_fold_free(struct engine_fold *f)
{
    if (f == NULL)
        return;
    drop_snapshots(f);
    free(f->log);
    free(f->steps);
    free(f->buf_alloc_op);
    free(f);
}

int
engine_fold_count(const struct engine_fold *f)
{
    return f->folded;
}

void
engine_fold_log(struct engine_fold *f, int id, int field, int64_t v)
{
    if (!f->logging)
        return;
    f->log = xgrow(f->log, &f->cap_log, f->n_log + 1, sizeof *f->log);
    f->log[f->n_log++] = (struct time_write){id, field, v};
}

/* The lowest op not finished (all of them: n_ops).  Ops finish for
 * good, so the search resumes where the last one ended. */
static int
lowest_open(const struct engine *e)
{
    int lo = e->fold->lo_hint;
    while (lo < e->s->n_ops && e->done[lo])
        lo++;
    e->fold->lo_hint = lo;
    return lo;
}

/* Queue Q of the engine: streams first, then communicators. */
static struct queue *
queue_at(struct engine *e, int q)
{
    return q < STREAM_COUNT ? &e->stream_q[q] : &e->pg_q[q - STREAM_COUNT];
}

static int *
busy_at(struct engine *e, int q)
{
    return q < STREAM_COUNT ? &e->stream_busy[q]
                            : &e->pg_busy[q - STREAM_COUNT];
}

/* A copy of elements FROM .. FROM+N-1 of the array at BASE. */
static void *
slice(const void *base, size_t elem, int from, int n)
{
    if (n <= 0)
        return xmemdup(NULL, 0);
    return xmemdup((const char *)base + elem * (size_t)from,
                   elem * (size_t)n);
}

static struct eng_snap *
take_snapshot(struct engine *e, int k, int b, int64_t now)
{
    struct engine_fold *f = e->fold;
    struct eng_snap *sn = xcalloc(1, sizeof *sn);
    sn->k = k;
    sn->b = b;
    sn->t = now;
    sn->lo = lowest_open(e);
    sn->events = des_events_processed(e->des);
    sn->log_at = f->n_log;
    int lo = sn->lo, n = b - lo;
    sn->done = slice(e->done, 1, lo, n);
    sn->started = slice(e->started, 1, lo, n);
    sn->ready = slice(e->ready_ns, sizeof(int64_t), lo, n);
    sn->issue_end = slice(e->issue_end_ns, sizeof(int64_t), lo, n);
    sn->since = slice(e->rate_since_ns, sizeof(int64_t), lo, n);
    sn->remaining = slice(e->remaining_ns, sizeof(double), lo, n);
    sn->rate = slice(e->rate, sizeof(double), lo, n);
    sn->times = slice(e->r->times, sizeof(struct op_time), lo, n);
    for (int q = 0; q < STREAM_COUNT + PG_COUNT; q++) {
        const struct queue *qu = queue_at(e, q);
        sn->qn[q] = qu->tail - qu->head;
        sn->q[q] = slice(qu->ids, sizeof(int), (int)qu->head, (int)sn->qn[q]);
        sn->busy[q] = *busy_at(e, q);
    }
    sn->blocked = e->blocked_on;
    sn->host_scheduled = e->host_scheduled;
    sn->n_ev = des_pending(e->des, &sn->ev);
    sn->mem = mem_snapshot_take(e->r->mem, lo, b);
    return sn;
}

/* Same time relative to each moment; negative values are "not set". */
static int
same_t(int64_t a, int64_t t1, int64_t b, int64_t t2)
{
    return a < 0 || b < 0 ? a == b : a - t1 == b - t2;
}

static int
same_ref(int a, int b, int stride)
{
    return a < 0 ? b == a : b == a + stride;
}

/* Is snapshot NOW (at b2 = st->b2) snapshot THEN (at b1 = st->b1) again,
 * one period on? */
static int
state_repeats(const struct engine *e, const struct eng_snap *then,
              const struct eng_snap *now, const struct fold_step *st,
              int *max_abs)
{
    int stride = st->stride;
    int64_t t1 = then->t, t2 = now->t;
    if (now->lo != then->lo + stride || now->lo < st->b1)
        return 0;
    for (int i = 0; i < st->b1 - then->lo; i++) {
        if (then->done[i] != now->done[i])
            return 0;
        if (then->done[i])
            continue;
        const struct op_time *a = &then->times[i], *b = &now->times[i];
        if (then->started[i] != now->started[i]
            || !same_t(then->ready[i], t1, now->ready[i], t2)
            || !same_t(then->issue_end[i], t1, now->issue_end[i], t2)
            || !same_t(a->issue_ns, t1, b->issue_ns, t2)
            || then->remaining[i] != now->remaining[i]
            || then->rate[i] != now->rate[i]
            || (then->started[i]    /* unset before it starts */
                && (!same_t(a->start_ns, t1, b->start_ns, t2)
                    || !same_t(a->end_ns, t1, b->end_ns, t2)
                    || !same_t(then->since[i], t1, now->since[i], t2))))
            return 0;
        int y = now->lo + i;
        if (!op_repeats(e->s, &e->r->cost, y, y - stride, stride,
                        st->bstride, max_abs))
            return 0;
    }
    for (int q = 0; q < STREAM_COUNT + PG_COUNT; q++) {
        if (now->qn[q] != then->qn[q]
            || !same_ref(then->busy[q], now->busy[q], stride))
            return 0;
        for (size_t k = 0; k < then->qn[q]; k++)
            if (now->q[q][k] != then->q[q][k] + stride)
                return 0;
    }
    if (!same_ref(then->blocked, now->blocked, stride)
        || then->host_scheduled != now->host_scheduled
        || now->n_ev != then->n_ev)
        return 0;
    for (size_t k = 0; k < now->n_ev; k++) {
        const struct des_event *a = &then->ev[k], *b = &now->ev[k];
        if (a->type != b->type || a->t_ns - t1 != b->t_ns - t2
            || (a->type == EV_END ? b->arg != a->arg + stride
                                  : b->arg != a->arg))
            return 0;
    }
    struct mem_fold_map map = {e->s, e->fold->buf_alloc_op, st->b1, st->b2,
                               then->lo, now->lo, t1, t2};
    return mem_snapshots_match(then->mem, now->mem, &map);
}

struct shift_ctx {
    int ops;
};

static int
shift_arg(void *ctx, int type, int arg)
{
    const struct shift_ctx *c = ctx;
    return type == EV_END ? arg + c->ops : arg;
}

static int64_t
shifted(int64_t v, int64_t dt)
{
    return v < 0 ? v : v + dt;
}

/* The repeat found, for the summary of a longer step (steady.c): the
 * host is at b2, now, in the state it was in at snapshot SN (b1). */
static void
record_jump(struct engine *e, const struct eng_snap *sn,
            const struct fold_step *st, int64_t now)
{
    struct engine_result *r = e->r;
    size_t cap = (size_t)r->n_jumps;
    r->jumps = xgrow(r->jumps, &cap, (size_t)r->n_jumps + 1,
                     sizeof *r->jumps);
    struct engine_fold_jump *jp = &r->jumps[r->n_jumps++];
    *jp = (struct engine_fold_jump){e->s->ops[st->b1].iter, st->b1, st->b2,
                                    sn->lo, st->micro, st->copies, sn->t,
                                    now, {0}};
    mem_fold_period(r->mem, sn->mem, &jp->mem);
}

/* Skip st->copies periods: the host is at b2, now, in the state it was in
 * at snapshot SN (b1). */
static int64_t
jump(struct engine *e, const struct eng_snap *sn, const struct fold_step *st,
     int64_t now, int lo2)
{
    struct engine_fold *f = e->fold;
    int stride = st->stride, n = st->copies;
    int shift = n * stride;
    int64_t period = now - sn->t, dt = n * period;

    /* Every op of the skipped periods has finished, except the copies of
     * the ops still running or queued now, which all lie in the watched
     * period (lo2 >= b1): they become the last skipped period's, and the
     * originals have finished. */
    memset(e->done + st->b2, 1, (size_t)shift);
    memset(e->started + st->b2, 1, (size_t)shift);
    for (int x = st->b2 - 1; x >= lo2; x--) {
        if (e->done[x])
            continue;
        int y = x + shift;
        e->done[y] = 0;
        e->started[y] = e->started[x];
        e->ready_ns[y] = shifted(e->ready_ns[x], dt);
        e->issue_end_ns[y] = shifted(e->issue_end_ns[x], dt);
        e->remaining_ns[y] = e->remaining_ns[x];
        e->rate[y] = e->rate[x];
        e->rate_since_ns[y] = shifted(e->rate_since_ns[x], dt);
        for (int fl = T_ISSUE; fl <= T_END; fl++)
            (&e->r->times[y].issue_ns)[fl] =
                shifted((&e->r->times[x].issue_ns)[fl], dt);
        e->done[x] = 1;
        e->started[x] = 1;
    }
    /* The skipped micro-batches' times: the watched period's writes
     * again, one period later for each (after the copies above read the
     * running ops' times, which this overwrites with their final ones). */
    for (int j = 1; j <= n; j++)
        for (size_t k = sn->log_at; k < f->n_log; k++) {
            const struct time_write *w = &f->log[k];
            (&e->r->times[w->op + j * stride].issue_ns)[w->field] =
                shifted(w->v, j * period);
        }

    for (int q = 0; q < STREAM_COUNT + PG_COUNT; q++) {
        struct queue *qu = queue_at(e, q);
        for (size_t k = qu->head; k < qu->tail; k++)
            qu->ids[k] += shift;
        int *busy = busy_at(e, q);
        if (*busy >= 0)
            *busy += shift;
    }
    if (e->blocked_on >= 0)
        e->blocked_on += shift;
    struct shift_ctx ctx = {shift};
    uint64_t per = des_events_processed(e->des) - sn->events;
    des_shift(e->des, dt, shift_arg, &ctx, per * (uint64_t)n);
    struct mem_fold_map map = {e->s, f->buf_alloc_op, st->b1, st->b2,
                               sn->lo, lo2, sn->t, now};
    record_jump(e, sn, st, now);
    mem_fold(e->r->mem, sn->mem, &map, n, st->bstride);
    e->next_op = st->b2 + shift;
    e->reached_op = -1;
    f->folded += n * st->micro;
    return dt;
}

int64_t
engine_fold_reached(struct engine *e, int id, int64_t now)
{
    struct engine_fold *f = e->fold;
    while (f->cur < f->n_steps) {
        const struct fold_run *run = &f->steps[f->cur];
        if (id < run->first + (run->last - 1) * run->stride)
            break;
        drop_snapshots(f);      /* passed without folding */
        f->cur++;
    }
    if (f->cur >= f->n_steps)
        return 0;
    const struct fold_run *run = &f->steps[f->cur];
    if (id < run->first || (id - run->first) % run->stride != 0)
        return 0;
    /* The host starts micro-batch k (2 <= k <= last). */
    int k = 2 + (id - run->first) / run->stride;
    f->logging = 0;
    struct eng_snap *cur = take_snapshot(e, k, id, now);
    for (int p = 1; p <= FOLD_MAX_PERIOD; p++) {
        const struct eng_snap *sn = f->snaps[p - 1];
        /* Whole periods up to the last middle micro-batch.  None may
         * be left: the repeat is still recorded, with no copies, and a
         * longer step extends this one from it (steady.c); the rest of
         * the step is simulated as it would be without. */
        int periods = (run->last + 1 - k) / p;
        if (sn == NULL || sn->k != k - p)
            continue;
        struct fold_step st = {sn->b, id, p * run->stride, p * run->bstride,
                               p, periods};
        int max_abs = -1;
        if (state_repeats(e, sn, cur, &st, &max_abs) && max_abs < sn->lo) {
            if (!copies_follow(e, run, &st, &max_abs) || max_abs >= sn->lo) {
                /* Not copies after all: this step is simulated whole. */
                snap_free(cur);
                drop_snapshots(f);
                f->cur++;
                return 0;
            }
            int64_t dt = 0;
            if (periods > 0)
                dt = jump(e, sn, &st, now, cur->lo);
            else
                record_jump(e, sn, &st, now);
            snap_free(cur);
            drop_snapshots(f);
            f->cur++;
            return dt;
        }
    }
    if (k >= run->last) {
        snap_free(cur);
        drop_snapshots(f);      /* nothing left to compare it with */
        return 0;
    }
    /* Not (yet) a repeat: remember this micro-batch too. */
    snap_free(f->snaps[FOLD_MAX_PERIOD - 1]);
    memmove(f->snaps + 1, f->snaps,
            sizeof *f->snaps * (FOLD_MAX_PERIOD - 1));
    f->snaps[0] = cur;
    /* The log starts at the oldest snapshot kept: the last one there
     * (until FOLD_MAX_PERIOD micro-batches were watched, not the last
     * slot). */
    const struct eng_snap *oldest = f->snaps[0];
    for (int i = 1; i < FOLD_MAX_PERIOD; i++)
        if (f->snaps[i] != NULL)
            oldest = f->snaps[i];
    /* Dropping the prefix no snapshot needs moves the log: do it only
     * when that prefix is most of it, so the moves cost O(1) a write. */
    if (oldest->log_at > 0 && oldest->log_at >= f->n_log / 2) {
        size_t cut = oldest->log_at;
        memmove(f->log, f->log + cut, (f->n_log - cut) * sizeof *f->log);
        f->n_log -= cut;
        for (int i = 0; i < FOLD_MAX_PERIOD; i++)
            if (f->snaps[i] != NULL)
                f->snaps[i]->log_at -= cut;
    }
    f->logging = 1;
    return 0;
}
