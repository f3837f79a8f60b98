/*
 * engine.c: host thread, streams and communicators on the event heap (see
 * engine.h).
 *
 * Three event types drive everything: HOST (the host thread may issue its
 * next op), END (an op finished on its stream) and WAKE (a stream's head
 * op, which could not start before the host had launched its first
 * kernel, may start now).  After every END each stream head is
 * re-examined; there are six streams, so a scan is cheaper than
 * maintaining wait lists.
 */
#include "engine.h"
#include "engine_impl.h"
#include "des.h"
#include "kernel_cost.h"
#include "xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
q_push(struct queue *q, int id)
{
    q->ids = xgrow(q->ids, &q->cap, q->tail + 1, sizeof(int));
    q->ids[q->tail++] = id;
}

static int
q_front(const struct queue *q)
{
    return q->head < q->tail ? q->ids[q->head] : -1;
}

/* Set every running op's rate from what runs beside it, and move its end
 * event accordingly.  Compute that overlaps a collective runs slower, and
 * so does the collective (the topology's [overlap] factors: they share
 * SMs and HBM bandwidth); collectives of different communicators that
 * cross the network at the same time share the node's NICs, equally or
 * as the network model says (engine_net: SimGrid finds how their flows
 * share links).  Stale end events are recognised by their time (see
 * finish). */
/* How much slower compute runs beside collectives holding SMS_HELD SMs.
 * Each NCCL channel is one thread block resident on one SM for the whole
 * collective (src/enqueue.cc: a block per channel), and a GEMM's or an
 * attention kernel's blocks, which fill every SM, cannot share it: the
 * kernel runs on the SMs left, SMs / (SMs - held) slower.  HBM traffic
 * slows it too ([overlap] compute_slowdown, which is the floor). */
static double
compute_slowdown(const struct engine *e, int sms_held)
{
    double left = e->sms - sms_held;
    if (left < e->sms / 2.0)   /* NCCL caps its channels well below */
        left = e->sms / 2.0;
    double sm_share = e->sms > 0 ? e->sms / left : 1.0;
    return sm_share > e->compute_slowdown ? sm_share : e->compute_slowdown;
}

static void
rebalance(struct engine *e, int64_t now)
{
    int n_compute = 0, n_comm = 0, n_net = 0, sms_held = 0;
    int net_ids[STREAM_COUNT];
    double net_rate[STREAM_COUNT];
    for (int st = 0; st < STREAM_COUNT; st++) {
        int id = e->stream_busy[st];
        if (id < 0)
            continue;
        n_compute += e->cls[id] == CLASS_COMPUTE;
        n_comm += e->cls[id] == CLASS_COMM;
        if (e->cls[id] == CLASS_COMM)
            sms_held += e->sms_held[id];
        if (e->uses_net[id])
            net_ids[n_net++] = id;
    }
    if (e->net != NULL && n_net > 1)
        e->net->share(e->net->ctx, net_ids, n_net, net_rate);
    for (int st = 0; st < STREAM_COUNT; st++) {
        int id = e->stream_busy[st];
        if (id < 0)
            continue;
        double rate = 1.0;
        if (e->cls[id] == CLASS_COMPUTE && n_comm > 0)
            rate /= compute_slowdown(e, sms_held);
        if (e->cls[id] == CLASS_COMM && n_compute > 0)
            rate /= e->comm_slowdown;
        for (int k = 0; k < n_net && n_net > 1; k++) {
            if (net_ids[k] != id)
                continue;
            if (e->net != NULL)
                rate *= net_rate[k];
            else
                rate /= n_net;
        }
        e->remaining_ns[id] -= (double)(now - e->rate_since_ns[id])
                               * e->rate[id];
        if (e->remaining_ns[id] < 0)
            e->remaining_ns[id] = 0;
        e->rate_since_ns[id] = now;
        if (rate == e->rate[id] && e->r->times[id].end_ns >= now)
            continue;
        e->rate[id] = rate;
        int64_t end = now + (int64_t)ceil(e->remaining_ns[id] / rate);
        /* A run of many kernels cannot finish before the host has issued
         * the last of them. */
        if (end < e->issue_end_ns[id])
            end = e->issue_end_ns[id];
        if (end != e->r->times[id].end_ns) {
            put_time(e, id, T_END, end);
            des_at(e->des, end, EV_END, id);
        }
    }
}

static void
try_start(struct engine *e, int stream, int64_t now)
{
    if (e->stream_busy[stream] >= 0)
        return;
    int id = q_front(&e->stream_q[stream]);
    if (id < 0)
        return;
    const struct sched_op *op = &e->s->ops[id];
    for (int i = 0; i < op->n_deps; i++)
        if (!e->done[op->deps[i]])
            return;
    if (op->pg != PG_NONE
        && (e->pg_busy[op->pg] >= 0 || q_front(&e->pg_q[op->pg]) != id))
        return;
    if (now < e->ready_ns[id]) {
        des_at(e->des, e->ready_ns[id], EV_WAKE, stream);
        return;
    }
    e->started[id] = 1;
    put_time(e, id, T_START, now);
    put_time(e, id, T_END, -1);
    e->remaining_ns[id] = (double)e->r->cost.gpu_ns[id];
    e->rate[id] = 0;            /* forces rebalance to schedule the end */
    e->rate_since_ns[id] = now;
    e->stream_busy[stream] = id;
    if (op->pg != PG_NONE)
        e->pg_busy[op->pg] = id;
    rebalance(e, now);
}

static void
try_start_all(struct engine *e, int64_t now)
{
    for (int st = 0; st < STREAM_COUNT; st++)
        try_start(e, st, now);
}

static void
schedule_host(struct engine *e, int64_t t)
{
    if (!e->host_scheduled) {
        e->host_scheduled = 1;
        des_at(e->des, t, EV_HOST, 0);
    }
}

static void
finish_op(struct engine *e, int id, int64_t now)
{
    const struct sched_op *op = &e->s->ops[id];
    /* An end event superseded by a rate change is stale. */
    if (e->done[id] || e->r->times[id].end_ns != now)
        return;
    e->done[id] = 1;
    if (op->stream != STREAM_HOST && e->stream_busy[op->stream] == id) {
        e->stream_busy[op->stream] = -1;
        e->stream_q[op->stream].head++;
    }
    if (op->pg != PG_NONE && e->pg_busy[op->pg] == id) {
        e->pg_busy[op->pg] = -1;
        e->pg_q[op->pg].head++;
    }
    mem_op_done(e->r->mem, now, id);
    if (op->stream != STREAM_HOST)
        e->in_flight--;
    /* The last GPU op a synchronize waits for: the host goes on. */
    if (e->sync_from >= 0 && e->in_flight == 0)
        schedule_host(e, now > e->sync_from ? now : e->sync_from);
    if (op->kind == OP_OPTIMIZER)
        e->r->step_end_ns[op->iter] = now;
    if (e->blocked_on == id) {
        e->blocked_on = -1;
        schedule_host(e, now);
    }
    rebalance(e, now);
    try_start_all(e, now);
}

/* The host thread: issue ops until one takes host time or blocks. */
static void
host_run(struct engine *e, int64_t now)
{
    const struct sched *s = e->s;
    e->host_scheduled = 0;
    while (e->next_op < s->n_ops) {
        int id = e->next_op;
        const struct sched_op *op = &s->ops[id];
        int64_t alloc_ns = 0;
        /* A host blocked on a CPU_WAIT or a synchronize comes back to the
         * same op: it was reached when the wait began. */
        if (e->reached_op != id) {
            if (e->fold != NULL) {
                int64_t skipped = engine_fold_reached(e, id, now);
                if (skipped > 0) {
                    now += skipped;
                    continue;
                }
            }
            put_time(e, id, T_ISSUE, now);
            e->reached_op = id;
        }
        switch (op->kind) {
        case OP_CPU_WAIT:
            if (!e->done[op->wait_op]) {
                e->blocked_on = op->wait_op;
                return;
            }
            break;
        case OP_ALLOC: {
            /* A retry that needs the device synchronized comes back here
             * when every GPU op issued so far has finished. */
            int64_t waited = -1;
            if (e->sync_from >= 0) {
                waited = now - e->sync_from;
                e->sync_from = -1;
            }
            int sync;
            alloc_ns = mem_alloc_op(e->r->mem, now, id, op->buffer,
                                    op->stream, op->bytes, op->cat, waited,
                                    &sync);
            if (sync) {
                e->sync_from = now + alloc_ns;
                if (e->in_flight == 0)
                    schedule_host(e, e->sync_from);
                return;
            }
            break;
        }
        case OP_FREE:
            mem_release(e->r->mem, now, op->buffer, op->wait_op,
                        op->wait_op < 0 || e->done[op->wait_op]);
            break;
        default:
            break;
        }
        if (op->kind == OP_CPU_WAIT || op->kind == OP_ALLOC
            || op->kind == OP_FREE) {
            /* Host-side bookkeeping: takes no time of its own, except an
             * allocation's retry (from its issue, the wait included). */
            put_time(e, id, T_START, op->kind == OP_ALLOC
                                         ? e->r->times[id].issue_ns : now);
            put_time(e, id, T_END, now + alloc_ns);
            e->done[id] = 1;
            e->next_op++;
            if (alloc_ns > 0) {
                schedule_host(e, now + alloc_ns);
                return;
            }
            continue;
        }
        int64_t issue = e->r->cost.issue_ns[id];
        e->next_op++;
        if (op->stream == STREAM_HOST) {
            /* Work the host does itself (the offloaded optimizer). */
            int64_t start = now + issue;
            put_time(e, id, T_START, start);
            put_time(e, id, T_END, start + e->r->cost.gpu_ns[id]);
            e->started[id] = 1;
            des_at(e->des, start + e->r->cost.gpu_ns[id], EV_END, id);
            e->blocked_on = id;
            return;
        }
        e->ready_ns[id] = now + e->r->cost.launch_ns[id];
        e->issue_end_ns[id] = now + issue;
        q_push(&e->stream_q[op->stream], id);
        e->in_flight++;
        if (op->pg != PG_NONE)
            q_push(&e->pg_q[op->pg], id);
        try_start(e, op->stream, now);
        if (issue > 0) {
            schedule_host(e, now + issue);
            return;
        }
    }
}

void
engine_run(const struct sched *s, const struct topo *t,
           struct engine_result *r)
{
    struct cost_table ct;
    cost_table_build(s, t, &ct);
    engine_run_costs(s, t, &ct, r);
}

void
engine_run_costs(const struct sched *s, const struct topo *t,
                 struct cost_table *ct, struct engine_result *r)
{
    engine_run_net(s, t, ct, NULL, r);
}

/* Each allocation retries at most once (two cudaMallocs and a
 * synchronize), and each segment a retry frees was created by one
 * allocation: the retries' host time is bounded per allocation. */
static double
retry_bound_ns(const struct topo *t)
{
    return 2.0 * llround(t->cuda_malloc_ns) + llround(t->cuda_free_ns)
           + llround(t->synchronize_ns);
}

/* engine_total_ns from its two parts: the ops' times added up in op
 * order, then N_ALLOC retries, one at a time (the same sum, rounded the
 * same way, as adding them in the loops it was written with). */
static double
total_with_retries(double op_ns, int n_alloc, const struct topo *t)
{
    double retry = retry_bound_ns(t);
    for (int i = 0; i < n_alloc; i++)
        op_ns += retry;
    return op_ns;
}

/* Simulated time cannot exceed every op run one after the other; if
 * that sum does not fit comfortably in 64-bit nanoseconds (about 146
 * years), the inputs are beyond anything the model is meant for. */
double
engine_total_ns(const struct sched *s, const struct topo *t,
                const struct cost_table *ct, int from, int to)
{
    double total = 0;
    int n_alloc = 0;
    for (int i = from; i < to; i++) {
        total += (double)ct->gpu_ns[i] + (double)ct->issue_ns[i];
        n_alloc += s->ops[i].kind == OP_ALLOC;
    }
    return total_with_retries(total, n_alloc, t);
}

static void run(const struct sched *s, const struct topo *t,
                struct cost_table *ct, const struct engine_net *net,
                int may_fold, struct engine_result *r);
static void engine_free(struct engine *e);

void
engine_run_net(const struct sched *s, const struct topo *t,
               struct cost_table *ct, const struct engine_net *net,
               struct engine_result *r)
{
    /* A network model's answers depend on what it has seen before, so
     * only the analytic model's micro-batches are folded. */
    run(s, t, ct, net, net == NULL, r);
}

void
engine_run_exact(const struct sched *s, const struct topo *t,
                 struct cost_table *ct, struct engine_result *r)
{
    run(s, t, ct, NULL, 0, r);
}

static void
run(const struct sched *s, const struct topo *t, struct cost_table *ct,
    const struct engine_net *net, int may_fold, struct engine_result *r)
{
    memset(r, 0, sizeof *r);
    r->cost = *ct;
    memset(ct, 0, sizeof *ct);
    r->times = xcalloc(s->n_ops ? s->n_ops : 1, sizeof *r->times);
    r->mem = mem_new(s->n_buffers, t->hbm_bytes);
    mem_set_outside(r->mem, r->cost.nccl_buffer_bytes);
    struct mem_costs mc = {llround(t->cuda_malloc_ns),
                           llround(t->cuda_free_ns),
                           llround(t->synchronize_ns)};
    mem_set_costs(r->mem, &mc);
    r->step_end_ns = xcalloc(s->iterations, sizeof(int64_t));

    struct engine e;
    memset(&e, 0, sizeof e);
    e.s = s;
    e.t = t;
    e.r = r;
    e.net = net;
    e.des = des_new();
    int n = s->n_ops ? s->n_ops : 1;
    e.done = xcalloc(n, 1);
    e.started = xcalloc(n, 1);
    e.ready_ns = xcalloc(n, sizeof(int64_t));
    e.issue_end_ns = xcalloc(n, sizeof(int64_t));
    e.remaining_ns = xcalloc(n, sizeof(double));
    e.rate = xcalloc(n, sizeof(double));
    e.rate_since_ns = xcalloc(n, sizeof(int64_t));
    e.cls = xcalloc(n, 1);
    e.uses_net = xcalloc(n, 1);
    e.sms_held = xcalloc(n, sizeof(int));
    e.sms = kernel_sm_count(t);
    e.compute_slowdown = t->overlap_compute_slowdown >= 1
                             ? t->overlap_compute_slowdown : 1.0;
    e.comm_slowdown = t->overlap_comm_slowdown >= 1
                          ? t->overlap_comm_slowdown : 1.0;
    /* One pass over the ops for what the engine keeps of each and for
     * engine_total_ns: a long step's ops are tens of MB, and reading them
     * is most of what a pass costs. */
    double op_ns = 0;
    int n_alloc = 0;
    struct engine_fold_scan scan = {0};
    if (may_fold)
        engine_fold_scan_new(s, &scan);
    for (int i = 0; i < s->n_ops; i++) {
        const struct sched_op *op = &s->ops[i];
        op_ns += (double)r->cost.gpu_ns[i] + (double)r->cost.issue_ns[i];
        n_alloc += op->kind == OP_ALLOC;
        engine_fold_scan_op(&scan, i, op);
        if (sched_op_is_compute(op) || op->kind == OP_CAST)
            e.cls[i] = CLASS_COMPUTE;
        else if (sched_op_is_collective(op)) {
            e.cls[i] = CLASS_COMM;
            struct coll_group g;
            cost_op_group(s, op, &g);
            e.uses_net[i] = g.nodes > 1;
            e.sms_held[i] = cost_coll(&r->cost, i)->channels;
        }
    }
    r->total_ns = total_with_retries(op_ns, n_alloc, t);
    mem_reserve_samples(r->mem, 2 * (size_t)n_alloc + 1);
    /* Made before the check below, so that the scan's arrays have one
     * owner to free them. */
    e.fold = engine_fold_new(s, &scan);
    if (r->total_ns > ENGINE_MAX_TOTAL_NS) {
        r->too_long = 1;
        engine_free(&e);
        return;
    }
    for (int i = 0; i < STREAM_COUNT; i++)
        e.stream_busy[i] = -1;
    for (int i = 0; i < PG_COUNT; i++)
        e.pg_busy[i] = -1;
    e.blocked_on = -1;
    e.reached_op = -1;
    e.sync_from = -1;

    schedule_host(&e, 0);
    struct des_event ev;
    while (des_next(e.des, &ev)) {
        switch (ev.type) {
        case EV_HOST:
            host_run(&e, ev.t_ns);
            break;
        case EV_END:
            finish_op(&e, ev.arg, ev.t_ns);
            break;
        case EV_WAKE:
            try_start(&e, ev.arg, ev.t_ns);
            break;
        }
    }
    r->end_ns = des_now(e.des);
    r->events = des_events_processed(e.des);
    for (int i = 0; i < s->n_ops; i++) {
        if (!e.done[i]) {
            fprintf(stderr, "fsdpsim: internal error: op %d (%s) never "
                    "finished: the schedule deadlocks\n", i,
                    sched_op_kind_name(s->ops[i].kind));
            abort();
        }
    }
    if (e.fold != NULL)
        r->folded = engine_fold_count(e.fold);
    engine_free(&e);
}

/* What run allocated for E. */
static void
engine_free(struct engine *e)
{
    engine_fold_free(e->fold);
    des_free(e->des);
    free(e->done);
    free(e->started);
    free(e->ready_ns);
    free(e->issue_end_ns);
    free(e->remaining_ns);
    free(e->rate);
    free(e->rate_since_ns);
    free(e->cls);
    free(e->uses_net);
    free(e->sms_held);
    for (int i = 0; i < STREAM_COUNT; i++)
        free(e->stream_q[i].ids);
    for (int i = 0; i < PG_COUNT; i++)
        free(e->pg_q[i].ids);
}

void
engine_result_free(struct engine_result *r)
{
    free(r->times);
    cost_table_free(&r->cost);
    mem_free(r->mem);
    free(r->step_end_ns);
    free(r->jumps);
    memset(r, 0, sizeof *r);
}
