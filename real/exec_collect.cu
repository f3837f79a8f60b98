/*
 * exec_collect.cu: results: the timed pass's events and host clocks turned into the
 * simulator's struct engine_result, with the memory timeline.
 */
#include "exec_impl.h"

/* ---- Results -------------------------------------------------------- */

struct mem_event {
    int64_t t_ns;
    int type;           /* 0 an op finished, 1 a host ALLOC/FREE */
    int op;
};

static int
mem_event_cmp(const void *a, const void *b)
{
    const struct mem_event *x = (const struct mem_event *)a;
    const struct mem_event *y = (const struct mem_event *)b;
    if (x->t_ns != y->t_ns)
        return x->t_ns < y->t_ns ? -1 : 1;
    if (x->type != y->type)
        return x->type - y->type;
    return x->op - y->op;
}

/* GPU 0's measured times into *res, and the ledger replayed at them. */
int
collect(struct exec_run *r, struct engine_result *res, char **cause)
{
    const struct sched *s = r->s;
    struct gpu *g = &r->g[0];
    int n = s->n_ops;
    memset(res, 0, sizeof *res);
    res->times = (struct op_time *)xcalloc(n ? n : 1, sizeof *res->times);
    res->step_end_ns = (int64_t *)xcalloc(s->iterations ? s->iterations : 1,
                                          sizeof(int64_t));
    cost_table_alloc(&res->cost, s);
    res->mem = mem_new(s->n_buffers, r->t->hbm_bytes);
    res->events = (uint64_t)n;
    for (int i = 0; i < n; i++) {
        const struct sched_op *op = &s->ops[i];
        struct op_time *tm = &res->times[i];
        tm->issue_ns = g->h_issue[i];
        if (op->stream == STREAM_HOST || !sched_op_on_gpu(op)) {
            tm->start_ns = g->h_start[i];
            tm->end_ns = g->h_end[i];
        } else {
            float a = 0, b = 0;
            cudaError_t e = cudaEventElapsedTime(&a, g->t0, g->ev_start[i]);
            if (e == cudaSuccess)
                e = cudaEventElapsedTime(&b, g->t0, g->ev_end[i]);
            if (e != cudaSuccess) {
                char d[128];
                *cause = xasprintf("%s on rank %d: cudaEventElapsedTime: %s:"
                                   " %s", op_desc(s, i, d, sizeof d),
                                   g->rank, cudaGetErrorName(e),
                                   cudaGetErrorString(e));
                return -1;
            }
            tm->start_ns = llround((double)a * 1e6);
            tm->end_ns = llround((double)b * 1e6);
            /* The host clock is aligned to t0 only to within its wake-up
             * latency: an op cannot start before it was issued. */
            if (tm->issue_ns > tm->start_ns)
                tm->issue_ns = tm->start_ns;
        }
        if (tm->start_ns < 0)
            tm->start_ns = 0;
        if (tm->end_ns < tm->start_ns)
            tm->end_ns = tm->start_ns;
        if (tm->issue_ns < 0)
            tm->issue_ns = 0;
        res->cost.gpu_ns[i] = tm->end_ns - tm->start_ns;
        if (res->end_ns < tm->end_ns)
            res->end_ns = tm->end_ns;
        if (op->kind == OP_OPTIMIZER && op->iter >= 0
            && op->iter < s->iterations)
            res->step_end_ns[op->iter] = tm->end_ns;
        if (sched_op_is_collective(op) && tm->end_ns > tm->start_ns) {
            struct coll_result *c = cost_coll(&res->cost, i);
            enum coll_op co = cost_coll_op(op->kind);
            c->time_s = (double)(tm->end_ns - tm->start_ns) * 1e-9;
            c->alg_Bps = (double)op->bytes / c->time_s;
            c->bus_Bps = c->alg_Bps
                         * coll_busbw_factor(co, r->pg_size[op->pg]);
        }
    }
    /* Host time spent on an op: until the host issued the next one. */
    for (int i = 1; i < n; i++) {
        int64_t d = res->times[i].issue_ns - res->times[i - 1].issue_ns;
        res->cost.issue_ns[i - 1] = d > 0 ? d : 0;
    }

    /* The ledger at the measured times: host ALLOC/FREE when issued, a
     * record_stream block reusable when its last use ended. */
    unsigned char *waited = (unsigned char *)xcalloc(n ? n : 1, 1);
    struct mem_event *ev = (struct mem_event *)xcalloc(2 * (size_t)n + 1,
                                                       sizeof *ev);
    size_t ne = 0;
    for (int i = 0; i < n; i++) {
        const struct sched_op *op = &s->ops[i];
        if (op->kind == OP_FREE && op->wait_op >= 0)
            waited[op->wait_op] = 1;
    }
    for (int i = 0; i < n; i++) {
        const struct sched_op *op = &s->ops[i];
        if (op->kind == OP_ALLOC || op->kind == OP_FREE)
            ev[ne++] = (struct mem_event){res->times[i].issue_ns, 1, i};
        if (waited[i])
            ev[ne++] = (struct mem_event){res->times[i].end_ns, 0, i};
    }
    qsort(ev, ne, sizeof *ev, mem_event_cmp);
    for (size_t k = 0; k < ne; k++) {
        const struct sched_op *op = &s->ops[ev[k].op];
        if (ev[k].type == 0) {
            mem_op_done(res->mem, ev[k].t_ns, ev[k].op);
        } else if (op->kind == OP_ALLOC) {
            mem_alloc(res->mem, ev[k].t_ns, op->buffer, op->stream,
                      op->bytes, op->cat);
        } else {
            int w = op->wait_op;
            mem_release(res->mem, ev[k].t_ns, op->buffer, w,
                        w < 0 || res->times[w].end_ns <= ev[k].t_ns);
        }
    }
    free(ev);
    free(waited);
    return 0;
}
