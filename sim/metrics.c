/*
 * metrics.c: step metrics from a simulated run (see metrics.h).
 */
#include "metrics.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

struct edge {
    int64_t t;
    int d_comm, d_comp;
};

static int
cmp_edge(const void *x, const void *y)
{
    const struct edge *p = x, *q = y;
    return (p->t > q->t) - (p->t < q->t);
}

/*
 * Sweep the intervals' edges in time order: the time covered by
 * communication, and the part of it covered by no compute.  Sorting the
 * 2n edges costs O(n log n); the alternative, a per-nanosecond bitmap, would
 * cost the step's length.  Shared with `fsdpsim compare`, so a measured
 * trace gets exactly the definition `simulate` prints.
 */
void
metrics_overlap(const struct metrics_busy *b, int n, double *comm_s,
                double *exposed_s)
{
    struct edge *e = xmalloc(sizeof *e * 2 * (size_t)(n ? n : 1));
    int ne = 0;
    for (int i = 0; i < n; i++) {
        if (!(b[i].is_comm || b[i].is_comp) || b[i].end_ns <= b[i].start_ns)
            continue;
        e[ne++] = (struct edge){b[i].start_ns, b[i].is_comm, b[i].is_comp};
        e[ne++] = (struct edge){b[i].end_ns, -b[i].is_comm, -b[i].is_comp};
    }
    qsort(e, (size_t)ne, sizeof *e, cmp_edge);
    int comm = 0, comp = 0;
    int64_t comm_ns = 0, exposed_ns = 0;
    for (int i = 0; i < ne; i++) {
        if (i > 0 && comm > 0) {
            int64_t dt = e[i].t - e[i - 1].t;
            comm_ns += dt;
            if (comp == 0)
                exposed_ns += dt;
        }
        comm += e[i].d_comm;
        comp += e[i].d_comp;
    }
    free(e);
    *comm_s = comm_ns * 1e-9;
    *exposed_s = exposed_ns * 1e-9;
}

void
metrics_compute(const struct sched *s, const struct topo *t,
                const struct engine_result *r, struct metrics *m)
{
    memset(m, 0, sizeof *m);
    int it = s->iterations - 1;
    m->step = it;
    m->step_start_ns = it > 0 ? r->step_end_ns[it - 1] : 0;
    m->step_end_ns = r->step_end_ns[it];
    m->step_time_s = (m->step_end_ns - m->step_start_ns) * 1e-9;
    m->n_units = s->n_units;

    struct metrics_busy *b = xmalloc(sizeof *b * (s->n_ops ? s->n_ops : 1));
    int nb = 0;
    for (int i = 0; i < s->n_ops; i++) {
        const struct sched_op *op = &s->ops[i];
        if (op->iter != it)
            continue;
        const struct op_time *tm = &r->times[i];
        double dur = (tm->end_ns - tm->start_ns) * 1e-9;
        int is_comm = 0, is_comp = 0;
        switch (op->kind) {
        case OP_FORWARD:
        case OP_BACKWARD:
        case OP_RECOMPUTE:
            m->hardware_flops += op->flops;
            /* fall through */
        case OP_OPTIMIZER:
            m->compute_s += dur;
            is_comp = 1;
            break;
        case OP_ALLGATHER:
            m->allgather_s += dur;
            m->n_allgathers++;
            is_comm = 1;
            break;
        case OP_REDUCESCATTER:
            m->reducescatter_s += dur;
            m->n_reducescatters++;
            is_comm = 1;
            break;
        case OP_ALLREDUCE:
            m->allreduce_s += dur;
            m->n_allreduces++;
            is_comm = 1;
            break;
        case OP_H2D:
        case OP_D2H:
            m->copy_s += dur;
            is_comm = 1;
            break;
        case OP_CPU_WAIT:
            if (op->wait_op >= 0 && r->times[op->wait_op].end_ns > tm->issue_ns)
                m->host_wait_s +=
                    (r->times[op->wait_op].end_ns - tm->issue_ns) * 1e-9;
            break;
        default:
            break;
        }
        m->host_busy_s += r->cost.issue_ns[i] * 1e-9;
        if (is_comm || is_comp)
            b[nb++] = (struct metrics_busy){tm->start_ns, tm->end_ns,
                                            is_comm, is_comp};
    }
    metrics_overlap(b, nb, &m->comm_s, &m->exposed_comm_s);
    free(b);
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

    mem_get_stats(r->mem, &m->mem);
    int n_retry;
    const struct mem_retry *rt = mem_retries(r->mem, &n_retry);
    int64_t stall_ns = 0;
    for (int i = 0; i < n_retry; i++) {
        if (rt[i].op < 0 || rt[i].op >= s->n_ops
            || s->ops[rt[i].op].iter != it)
            continue;
        m->step_retries++;
        m->step_syncs += rt[i].synced;
        stall_ns += rt[i].stall_ns;
    }
    m->alloc_stall_s = stall_ns * 1e-9;
    m->device_mem_bytes = t->hbm_bytes;
    /* Reserved stays within the device; an allocation that did not fit
     * says how much more it needed. */
    m->margin_bytes = m->mem.ooms > 0 ? -(double)m->mem.oom_shortfall
                      : t->hbm_bytes - (double)m->mem.peak_reserved;
    m->fits = m->mem.ooms == 0 && m->margin_bytes >= 0;
}
