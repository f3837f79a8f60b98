/*
 * net.c: running a schedule with the analytic or the SimGrid network
 * backend, and the report that sets them side by side (see net.h).
 *
 * With simgrid, a collective's time is NCCL's estimate (coll.c) with its
 * bandwidth term scaled by what SimGrid finds on the platform against a
 * non-blocking fabric, plus the latency the fabric adds:
 *     t = latency + (t_nccl - latency) x ratio + extra latency
 * (net_simgrid.c explains the ratio).  The analytic run is kept too, so
 * the report can show what the fabric costs.
 */
#include "net.h"
#include "cost.h"
#include "metrics.h"
#include "xalloc.h"
#ifdef HAVE_SIMGRID
#include "net_simgrid.h"
#endif

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool
net_have_simgrid(void)
{
#ifdef HAVE_SIMGRID
    return true;
#else
    return false;
#endif
}

int
net_simgrid_usable(char **cause)
{
#ifdef HAVE_SIMGRID
    return netsg_load(cause);
#else
    *cause = xstrdup("--network simgrid: this fsdpsim was built without "
                     "SimGrid (apt-get install libsimgrid-dev, then run "
                     "./configure and make again), or use --network "
                     "analytic");
    return -1;
#endif
}

static const char *const shape_label[] = {"single switch", "fat-tree",
                                          "rail-optimized"};

const char *
net_describe(const struct topo *t, const struct run_config *c, char *buf,
             size_t len)
{
    int w;
    if (c->platform_path != NULL)
        w = snprintf(buf, len, "platform %s", c->platform_path);
    else if (t->shape == NET_SHAPE_SINGLE_SWITCH)
        w = snprintf(buf, len, "single switch");
    else
        w = snprintf(buf, len, "%s, %d node%s per %s, oversubscription "
                     "%g:1, placement %s", shape_label[t->shape],
                     t->nodes_per_leaf, t->nodes_per_leaf == 1 ? "" : "s",
                     t->shape == NET_SHAPE_RAIL_OPTIMIZED ? "rail group"
                                                          : "leaf",
                     t->oversubscription,
                     topo_placement_name(t->placement));
    if (w >= 0 && (size_t)w < len && c->background_load > 0)
        snprintf(buf + w, len - (size_t)w, ", background load %g%%",
                 c->background_load * 100);
    if (w >= 0 && (size_t)w < len && c->exact)
        snprintf(buf + strlen(buf), len - strlen(buf), ", every ring step");
    return buf;
}

/* Start the SimGrid backend for this run: 0, or -1 with *cause. */
static int
open_simgrid(const struct topo *t, const struct run_config *c, char **cause)
{
#ifdef HAVE_SIMGRID
    if (netsg_open(t, c->platform_path, cause) != 0)
        return -1;
    netsg_configure(c->exact, c->background_load);
    return 0;
#else
    (void)t;
    (void)c;
    return net_simgrid_usable(cause);
#endif
}

#ifdef HAVE_SIMGRID
/* The engine's question: how do these concurrent collectives share? */
static void
share_cb(void *ctx, const int *ops, int n, double *rate)
{
    const struct netsg_coll *descs = ctx;
    struct netsg_coll *cs = xcalloc(n, sizeof *cs);
    for (int k = 0; k < n; k++)
        cs[k] = descs[ops[k]];
    netsg_share(cs, n, rate);
    free(cs);
}

/* NCCL's time T on the platform, where FIXED of it (launch, the first
 * chunk's trip, per-step latency: the data path's all but bw_s) does not
 * depend on the fabric's bandwidth. */
static double
simgrid_time(const struct netsg_coll *c, double t, double fixed)
{
    if (c->g.nodes <= 1)
        return t;
    double ratio, extra;
    netsg_coll_factor(c, &ratio, &extra);
    return fixed + (t - fixed) * ratio + extra;
}
#endif

/*
 * SimGrid keeps one engine per process, bound to the thread that created
 * it: it is neither thread-safe nor usable from another thread, even one
 * at a time.  Sweep, tune and plan simulate points on several threads, so
 * every use of SimGrid is handed to one thread of its own, started on
 * first use, which runs the requests one after the other; analytic points
 * carry on beside it on their own threads.
 */
struct sg_request {
    void (*fn)(void *arg);
    void *arg;
    bool done;
};

static pthread_mutex_t sg_submit = PTHREAD_MUTEX_INITIALIZER; /* callers */
static pthread_mutex_t sg_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sg_cv = PTHREAD_COND_INITIALIZER;
static struct sg_request *sg_pending;   /* under sg_mu */

static void *
sg_thread_main(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&sg_mu);
    for (;;) {
        while (sg_pending == NULL)
            pthread_cond_wait(&sg_cv, &sg_mu);
        struct sg_request *q = sg_pending;
        sg_pending = NULL;
        pthread_mutex_unlock(&sg_mu);
        q->fn(q->arg);
        pthread_mutex_lock(&sg_mu);
        q->done = true;
        pthread_cond_broadcast(&sg_cv);
    }
    return NULL;
}

/* Run FN(ARG) on the SimGrid thread and wait for it. */
static void
on_simgrid_thread(void (*fn)(void *arg), void *arg)
{
    static bool started;
    pthread_mutex_lock(&sg_submit);
    if (!started) {
        pthread_t th;
        if (pthread_create(&th, NULL, sg_thread_main, NULL) != 0) {
            fprintf(stderr, "fsdpsim: cannot start the SimGrid thread\n");
            abort();
        }
        pthread_detach(th);
        started = true;
    }
    struct sg_request q = {fn, arg, false};
    pthread_mutex_lock(&sg_mu);
    sg_pending = &q;
    pthread_cond_broadcast(&sg_cv);
    while (!q.done)
        pthread_cond_wait(&sg_cv, &sg_mu);
    pthread_mutex_unlock(&sg_mu);
    pthread_mutex_unlock(&sg_submit);
}

static int simgrid_run(const struct sched *s, const struct topo *t,
                       const struct run_config *c, struct sim_result *r,
                       char **cause);

/* simulate_schedule's arguments and result, across to the SimGrid
 * thread. */
struct run_call {
    const struct sched *s;
    const struct topo *t;
    const struct run_config *c;
    struct sim_result *r;
    char **cause;
    int rc;
};

static void
run_call(void *arg)
{
    struct run_call *a = arg;
    a->rc = simgrid_run(a->s, a->t, a->c, a->r, a->cause);
}

int
simulate_schedule(const struct sched *s, const struct topo *t,
                  const struct run_config *c, struct sim_result *r,
                  char **cause)
{
    memset(r, 0, sizeof *r);
    if (c->network == NETWORK_ANALYTIC && c->exact) {
        struct cost_table ct;
        cost_table_build(s, t, &ct);
        engine_run_exact(s, t, &ct, &r->res);
    } else if (c->network == NETWORK_ANALYTIC) {
        engine_run(s, t, &r->res);
    } else {
        struct run_call a = {s, t, c, r, cause, -1};
        on_simgrid_thread(run_call, &a);
        if (a.rc != 0) {
            /* "--platform FILE: ..." names the run file's line instead
             * when the platform was given there. */
            *cause = config_blame(c, NULL, *cause);
            return -1;
        }
    }
    if (r->res.too_long) {
        sim_result_free(r);
        *cause = xstrdup("the simulated step would last longer than 146 "
                         "years; check the topology's rates (a peak or "
                         "bandwidth far too low?)");
        return -1;
    }
    return 0;
}

/* simulate_schedule with --network simgrid, on the SimGrid thread. */
static int
simgrid_run(const struct sched *s, const struct topo *t,
            const struct run_config *c, struct sim_result *r, char **cause)
{
    if (open_simgrid(t, c, cause) != 0)
        return -1;
#ifdef HAVE_SIMGRID
    struct cost_table ct;
    cost_table_build(s, t, &ct);
    r->compared = true;
    struct netsg_coll *descs = xcalloc(s->n_ops ? s->n_ops : 1,
                                       sizeof *descs);
    int cap = 0;
    for (int i = 0; i < s->n_ops; i++) {
        const struct sched_op *op = &s->ops[i];
        if (!sched_op_is_collective(op))
            continue;
        struct netsg_coll *d = &descs[i];
        d->op = cost_coll_op(op->kind);
        struct coll_result *cr = cost_coll(&ct, i);
        d->algo = cr->algo;
        cost_op_group(s, op, &d->g);
        d->nbytes = (double)op->bytes;
        double an = cr->time_s;
        double tsg = simgrid_time(d, an, an - cr->bw_s);
        cr->time_s = tsg;
        ct.gpu_ns[i] = cost_seconds_to_ns(tsg);
        int k = 0;
        while (k < r->n_colls
               && !(r->colls[k].kind == op->kind && r->colls[k].pg == op->pg
                    && r->colls[k].bytes == op->bytes))
            k++;
        if (k == r->n_colls) {
            if (r->n_colls == cap) {
                cap = cap ? 2 * cap : 8;
                r->colls = xrealloc(r->colls, cap * sizeof *r->colls);
            }
            r->colls[k] = (struct net_coll_stat){op->kind, op->pg, op->bytes,
                                                 0, an, tsg};
            r->n_colls++;
        }
        r->colls[k].calls++;
    }
    struct engine_net net = {share_cb, descs};
    engine_run_net(s, t, &ct, &net, &r->res);
    free(descs);
    netsg_stats(&r->sg_runs, &r->sg_flows, &r->sg_reused);
#endif
    return 0;
}

void
sim_result_free(struct sim_result *r)
{
    engine_result_free(&r->res);
    free(r->colls);
    memset(r, 0, sizeof *r);
}

/* net_coll_time's arguments and result, across to the SimGrid thread. */
struct coll_call {
    const struct topo *t;
    const struct run_config *c;
    enum coll_op op;
    const struct coll_group *g;
    double nbytes;
    const struct coll_result *an;
    double *time_s;
    char **cause;
    int rc;
};

static void
coll_call(void *arg)
{
    struct coll_call *a = arg;
    a->rc = open_simgrid(a->t, a->c, a->cause);
    *a->time_s = a->an->time_s;
#ifdef HAVE_SIMGRID
    if (a->rc == 0) {
        struct netsg_coll d = {a->op, a->an->algo, *a->g, a->nbytes};
        *a->time_s = simgrid_time(&d, a->an->time_s,
                                  a->an->time_s - a->an->bw_s);
    }
#endif
}

int
net_coll_time(const struct topo *t, const struct run_config *c,
              enum coll_op op, const struct coll_group *g, double nbytes,
              const struct coll_result *an, double *time_s, char **cause)
{
    struct coll_call a = {t, c, op, g, nbytes, an, time_s, cause, -1};
    on_simgrid_thread(coll_call, &a);
    return a.rc;
}

static void
row(FILE *out, const char *what, double a, double b)
{
    fprintf(out, "  %-16s %12.3f ms %12.3f ms %8.2fx\n", what, a * 1e3,
            b * 1e3, a > 0 ? b / a : 1.0);
}

void
net_report_text(const struct sim_result *r, const struct sched *s,
                const struct topo *t, const struct run_config *c, FILE *out)
{
    if (!r->compared)
        return;
    /* The analytic run, only for this side-by-side: sweeps, benches and
     * JSON output never read it. */
    char buf[256];
    struct engine_result an;
    struct metrics ma, ms;
    engine_run(s, t, &an);
    metrics_compute(s, t, &an, &ma);
    engine_result_free(&an);
    metrics_compute(s, t, &r->res, &ms);
    fprintf(out, "\nnetwork           simgrid on %s\n",
            net_describe(t, c, buf, sizeof buf));
    fprintf(out, "  %-16s %15s %15s %9s\n", "", "analytic", "simgrid",
            "ratio");
    row(out, "step time", ma.step_time_s, ms.step_time_s);
    row(out, "communication", ma.comm_s, ms.comm_s);
    row(out, "exposed comm", ma.exposed_comm_s, ms.exposed_comm_s);
    row(out, "all-gather", ma.allgather_s, ms.allgather_s);
    row(out, "reduce-scatter", ma.reducescatter_s, ms.reducescatter_s);
    row(out, "all-reduce", ma.allreduce_s, ms.allreduce_s);
    fprintf(out, "  one call of each collective (kind, group, bytes, calls "
            "in the run):\n");
    for (int k = 0; k < r->n_colls; k++) {
        const struct net_coll_stat *cs = &r->colls[k];
        snprintf(buf, sizeof buf, "%s %s %.0f B x%d",
                 sched_op_kind_name(cs->kind), sched_pg_name(cs->pg),
                 (double)cs->bytes, cs->calls);
        fprintf(out, "    %-38s %10.3f ms %10.3f ms %7.2fx\n", buf,
                cs->analytic_s * 1e3, cs->simgrid_s * 1e3,
                cs->analytic_s > 0 ? cs->simgrid_s / cs->analytic_s : 1.0);
    }
    fprintf(out, "  simgrid: %lld runs, %lld flows simulated, %lld answers "
            "reused\n", (long long)r->sg_runs, (long long)r->sg_flows,
            (long long)r->sg_reused);
}
