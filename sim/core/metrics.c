/*
 * metrics.c: step metrics from a simulated run (see metrics.h).
 */
#include "metrics.h"
#include "xalloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct edge {
    int64_t t;
    int d_comm, d_comp;
};

/* Sort N edges by time, in O(n): least significant digit first, 11 bits
 * a pass over the times' range (a step's edges span some 2^40 ns: four
 * passes), each pass stable.  Edges of one time may end up in any order:
 * overlap_ns reads the counts only where time moves on, after all of
 * them.  qsort with a comparison call per pair cost a twentieth of a
 * sweep (perf, tests/bench-sweep.sh's accumulation 1..100 grid). */
#define EDGE_DIGIT_BITS 11
static void
sort_edges(struct edge *e, int n)
{
    if (n < 2)
        return;
    int64_t lo = e[0].t, hi = e[0].t;
    for (int i = 1; i < n; i++) {
        lo = e[i].t < lo ? e[i].t : lo;
        hi = e[i].t > hi ? e[i].t : hi;
    }
    uint64_t range = (uint64_t)hi - (uint64_t)lo;
    struct edge *tmp = xmalloc(sizeof *tmp * (size_t)n);
    struct edge *from = e, *to = tmp;
    enum { BUCKETS = 1 << EDGE_DIGIT_BITS };
    for (int shift = 0; shift < 64 && (range >> shift) != 0;
         shift += EDGE_DIGIT_BITS) {
        size_t count[BUCKETS + 1] = {0};
        for (int i = 0; i < n; i++)
            count[(((uint64_t)from[i].t - (uint64_t)lo) >> shift
                   & (BUCKETS - 1)) + 1]++;
        for (int b = 0; b < BUCKETS; b++)
            count[b + 1] += count[b];
        for (int i = 0; i < n; i++)
            to[count[((uint64_t)from[i].t - (uint64_t)lo) >> shift
                     & (BUCKETS - 1)]++] = from[i];
        struct edge *x = from;
        from = to;
        to = x;
    }
    if (from != e)
        memcpy(e, from, sizeof *e * (size_t)n);
    free(tmp);
}

/*
 * Sweep the intervals' edges in time order: the time covered by
 * communication, and the part of it covered by no compute, in ns, counting
 * only what lies in [FROM, TO).  Sorting the 2n edges costs O(n) (radix);
 * the alternative, a per-nanosecond bitmap, would cost the step's length.
 */
static void
overlap_ns(const struct metrics_busy *b, int n, int64_t from, int64_t to,
           int64_t *comm_ns, int64_t *exposed_ns)
{
    struct edge *e = xmalloc(sizeof *e * 2 * (size_t)(n ? n : 1));
    int ne = 0;
    for (int i = 0; i < n; i++) {
        int64_t s = b[i].start_ns > from ? b[i].start_ns : from;
        int64_t t = b[i].end_ns < to ? b[i].end_ns : to;
        if (!(b[i].is_comm || b[i].is_comp) || t <= s)
            continue;
        e[ne++] = (struct edge){s, b[i].is_comm, b[i].is_comp};
        e[ne++] = (struct edge){t, -b[i].is_comm, -b[i].is_comp};
    }
    sort_edges(e, ne);
    int comm = 0, comp = 0;
    *comm_ns = *exposed_ns = 0;
    for (int i = 0; i < ne; i++) {
        if (i > 0 && comm > 0) {
            int64_t dt = e[i].t - e[i - 1].t;
            *comm_ns += dt;
            if (comp == 0)
                *exposed_ns += dt;
        }
        comm += e[i].d_comm;
        comp += e[i].d_comp;
    }
    free(e);
}

/* Shared with `fsdpsim compare`, so a measured trace gets exactly the
 * definition `simulate` prints. */
void
metrics_overlap(const struct metrics_busy *b, int n, double *comm_s,
                double *exposed_s)
{
    int64_t comm_ns, exposed_ns;
    overlap_ns(b, n, INT64_MIN, INT64_MAX, &comm_ns, &exposed_ns);
    *comm_s = comm_ns * 1e-9;
    *exposed_s = exposed_ns * 1e-9;
}

/* The sums over ops FROM .. TO-1 of iteration IT, the union of their
 * busy intervals restricted to [T_FROM, T_TO). */
static void
step_sums(const struct sched *s, const struct engine_result *r, int it,
          int from, int to, int64_t t_from, int64_t t_to,
          struct metrics_sums *x)
{
    memset(x, 0, sizeof *x);
    int n = to - from;
    struct metrics_busy *b = xmalloc(sizeof *b * (size_t)(n > 0 ? n : 1));
    int nb = 0;
    for (int i = from; i < to; i++) {
        const struct sched_op *op = &s->ops[i];
        if (op->iter != it)
            continue;
        const struct op_time *tm = &r->times[i];
        int64_t dur = tm->end_ns - tm->start_ns;
        int is_comm = 0, is_comp = 0;
        switch (op->kind) {
        case OP_FORWARD:
        case OP_BACKWARD:
        case OP_RECOMPUTE:
            x->hardware_flops += (unsigned long long)llround(op->flops);
            /* fall through */
        case OP_OPTIMIZER:
            x->compute_ns += dur;
            is_comp = 1;
            break;
        case OP_ALLGATHER:
            x->allgather_ns += dur;
            x->n_allgathers++;
            is_comm = 1;
            break;
        case OP_REDUCESCATTER:
            x->reducescatter_ns += dur;
            x->n_reducescatters++;
            is_comm = 1;
            break;
        case OP_ALLREDUCE:
            x->allreduce_ns += dur;
            x->n_allreduces++;
            is_comm = 1;
            break;
        case OP_H2D:
        case OP_D2H:
            x->copy_ns += dur;
            is_comm = 1;
            break;
        case OP_CPU_WAIT:
            if (op->wait_op >= 0 && r->times[op->wait_op].end_ns > tm->issue_ns)
                x->host_wait_ns += r->times[op->wait_op].end_ns - tm->issue_ns;
            break;
        default:
            break;
        }
        x->host_busy_ns += r->cost.issue_ns[i];
        if (is_comm || is_comp)
            b[nb++] = (struct metrics_busy){tm->start_ns, tm->end_ns,
                                            is_comm, is_comp};
    }
    overlap_ns(b, nb, t_from, t_to, &x->comm_ns, &x->exposed_ns);
    free(b);
}

/* X plus K times P. */
static void
sums_add(struct metrics_sums *x, const struct metrics_sums *p, int64_t k)
{
    x->compute_ns += k * p->compute_ns;
    x->allgather_ns += k * p->allgather_ns;
    x->reducescatter_ns += k * p->reducescatter_ns;
    x->allreduce_ns += k * p->allreduce_ns;
    x->copy_ns += k * p->copy_ns;
    x->host_wait_ns += k * p->host_wait_ns;
    x->host_busy_ns += k * p->host_busy_ns;
    x->hardware_flops += (unsigned long long)k * p->hardware_flops;
    x->n_allgathers += (int)k * p->n_allgathers;
    x->n_reducescatters += (int)k * p->n_reducescatters;
    x->n_allreduces += (int)k * p->n_allreduces;
    x->comm_ns += k * p->comm_ns;
    x->exposed_ns += k * p->exposed_ns;
}

void
metrics_compute(const struct sched *s, const struct topo *t,
                const struct engine_result *r, struct metrics *m)
{
    metrics_compute_steady(s, t, r, NULL, m);
}

void
metrics_basis(const struct sched *s, const struct engine_result *r,
              const struct metrics_steady *x, struct metrics_basis *b)
{
    memset(b, 0, sizeof *b);
    int it = s->iterations - 1;
    b->step = it;
    b->n_units = s->n_units;
    b->step_start_ns = it > 0 ? r->step_end_ns[it - 1] : 0;
    b->step_end_ns = r->step_end_ns[it];
    step_sums(s, r, it, 0, s->n_ops, INT64_MIN, INT64_MAX, &b->sum);
    if (x != NULL) {
        /* A period adds its ops, and the busy time of every op running
         * between its start and the next's: those before LO had
         * finished, those after B2 were not issued yet. */
        struct metrics_sums window;
        step_sums(s, r, it, x->b1, x->b2, INT64_MIN, INT64_MAX, &b->per);
        step_sums(s, r, it, x->lo, x->b2, x->t1, x->t2, &window);
        b->per.comm_ns = window.comm_ns;
        b->per.exposed_ns = window.exposed_ns;
    }
    mem_get_stats(r->mem, &b->mem);
    int n_retry;
    const struct mem_retry *rt = mem_retries(r->mem, &n_retry);
    for (int i = 0; i < n_retry; i++) {
        if (rt[i].op < 0 || rt[i].op >= s->n_ops
            || s->ops[rt[i].op].iter != it)
            continue;
        b->step_retries++;
        b->step_syncs += rt[i].synced;
        b->stall_ns += rt[i].stall_ns;
    }
}

void
metrics_compute_steady(const struct sched *s, const struct topo *t,
                       const struct engine_result *r,
                       const struct metrics_steady *x, struct metrics *m)
{
    struct metrics_basis b;
    metrics_basis(s, r, x, &b);
    metrics_finish(&b, s, t, x, m);
}

void
metrics_finish(const struct metrics_basis *b, const struct sched *s,
               const struct topo *t, const struct metrics_steady *x,
               struct metrics *m)
{
    memset(m, 0, sizeof *m);
    m->step = b->step;
    m->step_start_ns = b->step_start_ns;
    m->step_end_ns = b->step_end_ns;
    if (x != NULL) {
        m->step_start_ns += x->before_ns;
        m->step_end_ns += x->before_ns + x->periods * (x->t2 - x->t1);
    }
    m->step_time_s = (m->step_end_ns - m->step_start_ns) * 1e-9;
    m->n_units = b->n_units;

    struct metrics_sums sum = b->sum;
    if (x != NULL && x->periods > 0)
        sums_add(&sum, &b->per, x->periods);
    m->compute_s = sum.compute_ns * 1e-9;
    m->allgather_s = sum.allgather_ns * 1e-9;
    m->reducescatter_s = sum.reducescatter_ns * 1e-9;
    m->allreduce_s = sum.allreduce_ns * 1e-9;
    m->copy_s = sum.copy_ns * 1e-9;
    m->host_wait_s = sum.host_wait_ns * 1e-9;
    m->host_busy_s = sum.host_busy_ns * 1e-9;
    m->hardware_flops = (double)sum.hardware_flops;
    m->n_allgathers = sum.n_allgathers;
    m->n_reducescatters = sum.n_reducescatters;
    m->n_allreduces = sum.n_allreduces;
    m->comm_s = sum.comm_ns * 1e-9;
    m->exposed_comm_s = sum.exposed_ns * 1e-9;
    m->overlap_ratio = m->comm_s > 0
                           ? 1.0 - m->exposed_comm_s / m->comm_s : 1.0;

    double world = s->world;
    if (m->step_time_s > 0) {
        m->tokens_per_s_per_gpu = s->tokens_per_gpu / m->step_time_s;
        m->tokens_per_s = m->tokens_per_s_per_gpu * world;
        m->model_tflops_per_gpu = s->model_flops_per_gpu / m->step_time_s
                                  / 1e12;
    }
    /* Utilisation is against the datasheet peak, as published figures
     * are (not the clock-limited one the kernels run at). */
    double peak = t->peak_flops[s->param_dtype];
    if (peak <= 0)
        peak = t->peak_flops[DTYPE_FP32];
    m->model_flops = s->model_flops_per_gpu;
    if (m->step_time_s > 0 && peak > 0) {
        m->hardware_tflops_per_gpu = m->hardware_flops / m->step_time_s
                                     / 1e12;
        m->mfu = m->model_flops / m->step_time_s / peak;
        m->mfu_palm = s->palm_flops_per_gpu / m->step_time_s / peak;
        m->hfu = m->hardware_flops / m->step_time_s / peak;
    }
    /* Host-bound: the host spent most of the step issuing work and hardly
     * ever waited for the GPU (the limiter and synchronizes are where a
     * GPU-bound host waits). */
    m->host_bound = m->step_time_s > 0
                    && m->host_busy_s >= 0.8 * m->step_time_s
                    && m->host_wait_s < 0.1 * m->step_time_s;

    m->mem = b->mem;
    m->step_retries = b->step_retries;
    m->step_syncs = b->step_syncs;
    int64_t stall_ns = b->stall_ns;
    if (x != NULL) {
        m->mem = x->mem;
        m->step_retries += (int)x->periods * x->per_period.retries;
        m->step_syncs += (int)x->periods * x->per_period.syncs;
        stall_ns += x->periods * x->per_period.stall_ns;
    }
    m->alloc_stall_s = stall_ns * 1e-9;
    m->device_mem_bytes = t->hbm_bytes;
    /* Reserved stays within the device; an allocation that did not fit
     * says how much more it needed. */
    m->margin_bytes = m->mem.ooms > 0 ? -(double)m->mem.oom_shortfall
                      : t->hbm_bytes - (double)m->mem.outside_bytes
                            - (double)m->mem.peak_reserved;
    m->fits = m->mem.ooms == 0 && m->margin_bytes >= 0;
}
