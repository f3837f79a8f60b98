/*
 * steady.c: the summary of a long accumulation step from a short one (see
 * steady.h).
 *
 * Why the short step's fold carries over to the long one: the engine's
 * run up to the host reaching micro-batch k depends only on the ops
 * before it, which the two schedules share (the step's last micro-batch
 * and the optimizer come after), so both reach k in the same state.  The
 * short run found that state equal, shifted, to the one at micro-batch
 * k - p, with only copies of those p micro-batches coming up to the last
 * middle one; the long run has (A - A') / p more of them, each one period
 * later, and then the same end of step, shifted by as many periods.  That
 * needs A - A' to be a multiple of p, so A' is taken of A's parity (p is 1
 * or 2, FOLD_MAX_PERIOD), and a fold in every step: the later steps start
 * from the state the earlier ones leave.
 */
#include "steady.h"
#include "engine.h"

#include <stdlib.h>
#include <string.h>

/* The short step for A (0 when A is not longer): STEADY_MICRO_BATCHES
 * or one more, of A's parity. */
static int64_t
short_step(int64_t a)
{
    int64_t a1 = STEADY_MICRO_BATCHES;
    if ((a - a1) % 2 != 0)
        a1++;
    return a > a1 ? a1 : 0;
}

/* The jumps of the short run NR stand for A micro-batches: one in each
 * of S's steps, each a whole number of periods short of A.  Fills *x for
 * the reported step and the allocator figures of all steps. */
static int
extend(const struct sched *s, const struct topo *t, const struct net_run *nr,
       int64_t a, struct metrics_steady *x)
{
    const struct engine_result *r = &nr->res;
    int64_t a1 = s->micro_batches;
    if (r->too_long || r->n_jumps != s->iterations)
        return 0;
    memset(x, 0, sizeof *x);
    mem_get_stats(r->mem, &x->mem);
    int64_t peak_shift = 0, shift = 0;
    double total = r->total_ns;
    for (int i = 0; i < r->n_jumps; i++) {
        const struct engine_fold_jump *j = &r->jumps[i];
        if (j->iter != i || (a - a1) % j->micro != 0)
            return 0;
        int64_t periods = (a - a1) / j->micro, period = j->t2 - j->t1;
        total += (double)periods
                 * engine_total_ns(s, t, &r->cost, j->b1, j->b2);
        x->mem.retries += (int)periods * j->mem.retries;
        x->mem.syncs += (int)periods * j->mem.syncs;
        x->mem.ooms += (int)periods * j->mem.ooms;
        x->mem.stall_ns += periods * j->mem.stall_ns;
        /* The allocator's peak, when first reached after the jump,
         * comes that much later in the long step. */
        if (x->mem.peak_t_ns >= j->t2 + j->copies * period)
            peak_shift += periods * period;
        if (i == r->n_jumps - 1)
            *x = (struct metrics_steady){j->b1, j->b2, j->lo, j->t1, j->t2,
                                         periods, shift, x->mem, j->mem};
        shift += periods * period;
    }
    x->mem.peak_t_ns += peak_shift;
    /* The long step would have been refused for its size. */
    if (total > ENGINE_MAX_TOTAL_NS
        || (double)s->iterations * (double)a * s->ops_bound_per_micro_batch
               > SCHED_MAX_OPS)
        return 0;
    return 1;
}

int
steady_run(struct run *r, struct net_run *nr, struct metrics *m,
           int *steady, char **cause)
{
    *steady = 0;
    memset(nr, 0, sizeof *nr);
    int64_t a = r->cfg.grad_accum;
    /* A network model's answers depend on what it has seen before, and
     * --exact asks for every micro-batch: neither folds. */
    int eligible = r->cfg.network == NETWORK_ANALYTIC && !r->cfg.exact;
    int64_t a1 = eligible ? short_step(a) : 0;
    if (a1 > 0)
        r->cfg.grad_accum = a1;
    int rc = setup_prepare(r, cause);
    r->cfg.grad_accum = a;
    if (rc != 0)
        return -1;
    if (a1 > 0) {
        struct metrics_steady x;
        if (net_run(r->sched, r->topo, &r->cfg, nr, cause) == 0
            && extend(r->sched, r->topo, nr, a, &x)) {
            sched_set_batch(r->sched, &r->cfg);
            metrics_compute_steady(r->sched, r->topo, &nr->res, &x, m);
            *steady = 1;
            return 0;
        }
        /* Not a repeat in every step (or too long a step): the whole
         * one, simulated (folded where it repeats later). */
        free(*cause);
        *cause = NULL;
        net_run_free(nr);
        memset(nr, 0, sizeof *nr);
        if (setup_build_sched(r, cause) != 0)
            return -1;
    }
    if (net_run(r->sched, r->topo, &r->cfg, nr, cause) != 0)
        return -1;
    metrics_compute(r->sched, r->topo, &nr->res, m);
    return 0;
}
