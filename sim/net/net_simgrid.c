/*
 * net_simgrid.c: collectives as SimGrid flows (see net_simgrid.h).
 *
 * A collective becomes the flows its algorithm sends, for every instance
 * of its process group at once, on the platform of the cluster
 * (net_platform.c): a ring all-gather or reduce-scatter over n ranks is
 * n-1 steps in which every rank sends nbytes/n to the next; a ring
 * all-reduce 2(n-1) such steps (nccl-tests doc/PERFORMANCE.md); a tree
 * all-reduce is NCCL's double binary tree over the nodes, each tree
 * carrying half the buffer up and down at once (pipelined: Sanders et
 * al. 2009, as NCCL 2.4 implements it); PAT, the Bruck-like all-gather of
 * one GPU per node (doc/fsdp-semantics.md §14.1), is log2(n) steps in
 * which rank r sends 2^k chunks to rank r + 2^k.  NVLS stays inside a node.
 *
 * SimGrid shares links max-min (CM02, cross-traffic off: a flow alone
 * takes latency + size / bandwidth exactly; toolchain.md §2.3, §2.5).
 * What it adds to NCCL's own model (coll.c) is how flows of one collective,
 * of its twin groups and of other collectives slow each other on the
 * fabric.  So each collective is simulated twice: on the platform as it is
 * (with the background load), and on the topology's own platform with the
 * fabric above the NICs made non-blocking (links "fabric-*" unbounded, no
 * latency; a user's platform gets the topology's rates back on the links
 * it shares names with, so that editing a NIC's rate counts).  The ratio of the
 * two bandwidth times scales NCCL's bandwidth term, which keeps NCCL's
 * protocol efficiencies and algorithm choice; on a non-blocking network
 * the backends agree.  Latency the fabric adds per step (the spine's) is
 * added per step.
 *
 * Speed: all steps of a ring move the same flows between the same hosts,
 * and under a static max-min share each takes the same time (toolchain.md
 * §2.6: (N-1) x the first step, to the ns), so one step is simulated and
 * multiplied; --exact runs every step, each rank waiting for its
 * predecessor's chunk before sending the next, as NCCL's ring does.
 * Results are memoized by (collective, algorithm, group, bytes) and by the
 * set of collectives running together.
 *
 * SimGrid's engine is one per process and global (simgrid_init may be
 * called once), so this file keeps it in one static structure; the actors
 * it creates run inside simgrid_run() on SimGrid's own stacks.
 */
#include "net_simgrid.h"
#include "net_platform.h"
#include "atomic_file.h"
#include "xalloc.h"

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <simgrid/mailbox.h>
#include <xbt/config.h>
#include <xbt/log.h>

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Bandwidth (bytes/s) of a fabric link in the reference run: far above
 * any NIC, so it never limits a flow. */
#define UNBOUNDED_BPS 1e18
/* Stack of each actor (KiB): they only post and wait for transfers;
 * SimGrid's default is 8 MiB (toolchain.md §2.6: 64 KiB ran at 1024). */
#define ACTOR_STACK_KIB "128"

struct memo_coll {
    struct netsg_coll c;
    double ratio, extra_latency_s;
    double step_s;              /* one representative step, alone */
};

/* One link in the two runs of a collective: as the platform has it
 * (act), and as the reference run sets it (ref): the topology's value for
 * links named as net_platform.c names them, non-blocking for the fabric,
 * and unchanged for links of other names. */
struct link_rates {
    sg_link_t link;
    bool fabric;                /* id starts with NET_FABRIC_PREFIX */
    double act_bw, act_lat;     /* bytes/s, s */
    double ref_bw, ref_lat;
};

struct memo_share {
    int n;
    struct netsg_coll *cs;
    double *rate;
};

/* The process's SimGrid engine (see the file comment). */
static struct {
    bool open;
    char *signature;            /* the platform it loaded */
    char *structure;            /* generated: what fixes its links */
    int nodes, gpn;
    sg_host_t *hosts;           /* [node * gpn + gpu] */
    struct link_rates *links;   /* every link of the platform */
    size_t n_links;
    bool exact;
    double background;
    struct memo_coll *colls;
    size_t n_colls, cap_colls;
    struct memo_share *shares;
    size_t n_shares, cap_shares;
    int64_t runs, flows, reused;
} sg;

/* A non-NULL payload: SimGrid refuses NULL, and no data moves. */
static int token = 1;

/* ---- Flows ------------------------------------------------------------ */

struct flow {
    int src, dst;               /* host index */
    double bytes;
    int tag;                    /* which collective of the run */
    double end_s;               /* when it finished (simulated clock) */
    char mbox[24];
};

static void
start_actor(const char *name, sg_host_t h, void (*code)(int, char **),
            void *data)
{
    sg_actor_t a = sg_actor_init(name, h);
    sg_actor_set_data(a, data);
    sg_actor_start_(a, code, 0, NULL);
}

/* What one host sends and receives in a run of flows. */
struct host_flows {
    struct flow *f;             /* the run's flows */
    int *out, n_out;            /* indices of the flows it sends */
    int *in, n_in;              /* ... and receives */
};

/* One actor per host, not two per flow: it posts every send and receive
 * of its host at once and notes when each send ends.  A ring step of
 * 2,048 nodes is 16,384 flows; an actor's stack with its guard page is
 * two memory mappings, and Linux allows a process 65,530 by default
 * (vm.max_map_count), so actors per flow ran out at that size. */
static void
host_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    struct host_flows *me = sg_actor_self_get_data();
    int n = me->n_out + me->n_in;
    sg_comm_t *comms = xcalloc(n > 0 ? n : 1, sizeof *comms);
    int *which = xcalloc(n > 0 ? n : 1, sizeof *which);
    void *got;
    for (int k = 0; k < me->n_out; k++) {
        struct flow *f = &me->f[me->out[k]];
        comms[k] = sg_mailbox_put_async(sg_mailbox_by_name(f->mbox), &token,
                                        (long)f->bytes);
        which[k] = me->out[k];
    }
    for (int k = 0; k < me->n_in; k++) {
        comms[me->n_out + k] = sg_mailbox_get_async(
            sg_mailbox_by_name(me->f[me->in[k]].mbox), &got);
        which[me->n_out + k] = -1;
    }
    /* The matching receive is posted at time 0 too, so a send ends when
     * its flow has arrived. */
    while (n > 0) {
        ssize_t k = sg_comm_wait_any(comms, (size_t)n);
        if (which[k] >= 0)
            me->f[which[k]].end_s = simgrid_get_clock();
        comms[k] = comms[n - 1];
        which[k] = which[n - 1];
        n--;
    }
    free(comms);
    free(which);
}

/* Run the flows, all starting now; sets each end_s to its duration.
 * Returns the longest. */
static double
run_flows(struct flow *f, int n)
{
    double t0 = simgrid_get_clock();
    int hosts = sg.nodes * sg.gpn;
    struct host_flows *h = xcalloc(hosts, sizeof *h);
    int *slots = xcalloc(2 * (size_t)(n > 0 ? n : 1), sizeof *slots);
    for (int k = 0; k < n; k++) {
        snprintf(f[k].mbox, sizeof f[k].mbox, "f%d", k);
        h[f[k].src].n_out++;
        h[f[k].dst].n_in++;
    }
    int used = 0;
    for (int i = 0; i < hosts; i++) {
        h[i].f = f;
        h[i].out = slots + used;
        used += h[i].n_out;
        h[i].in = slots + used;
        used += h[i].n_in;
        h[i].n_out = h[i].n_in = 0;
    }
    for (int k = 0; k < n; k++) {
        h[f[k].src].out[h[f[k].src].n_out++] = k;
        h[f[k].dst].in[h[f[k].dst].n_in++] = k;
    }
    for (int i = 0; i < hosts; i++)
        if (h[i].n_out + h[i].n_in > 0)
            start_actor("host", sg.hosts[i], host_main, &h[i]);
    simgrid_run();
    sg.runs++;
    sg.flows += n;
    double last = 0;
    for (int k = 0; k < n; k++) {
        f[k].end_s -= t0;
        if (f[k].end_s > last)
            last = f[k].end_s;
    }
    free(slots);
    free(h);
    return last;
}

/* ---- Collectives as flows ---------------------------------------------- */

struct flowlist {
    struct flow *f;
    size_t n, cap;
};

static void
add_flow(struct flowlist *l, int src, int dst, double bytes, int tag)
{
    l->f = xgrow(l->f, &l->cap, l->n + 1, sizeof *l->f);
    memset(&l->f[l->n], 0, sizeof *l->f);
    l->f[l->n].src = src;
    l->f[l->n].dst = dst;
    l->f[l->n].bytes = bytes;
    l->f[l->n].tag = tag;
    l->n++;
}

/* The instances of C's group: node blocks of g.nodes nodes times GPU
 * blocks of g.ranks_per_node GPUs (an HSDP replicate group is GPU j of
 * every node, and its twins the other j).  Host of rank r (node-major) of
 * instance (b, j). */
static int
n_node_blocks(const struct netsg_coll *c)
{
    int b = sg.nodes / c->g.nodes;
    return b > 0 ? b : 1;
}

static int
n_gpu_blocks(const struct netsg_coll *c)
{
    int j = sg.gpn / c->g.ranks_per_node;
    return j > 0 ? j : 1;
}

static int
rank_host(const struct netsg_coll *c, int b, int j, int r)
{
    int ppn = c->g.ranks_per_node;
    int node = b * c->g.nodes + r / ppn;
    int gpu = j * ppn + r % ppn;
    return node * sg.gpn + gpu;
}

/* Ring steps, tree depth or PAT steps: how many times the step pattern
 * runs one after another. */
static int
coll_steps(const struct netsg_coll *c)
{
    int n = c->g.ranks;
    switch (c->algo) {
    case NCCL_ALGO_TREE:
    case NCCL_ALGO_NVLS_TREE:
        return 1;
    case NCCL_ALGO_PAT: {
        int k = 0;
        while ((1 << k) < n)
            k++;
        return k;
    }
    default:
        return c->op == COLL_ALLREDUCE ? 2 * (n - 1) : n - 1;
    }
}

/* Whether the collective is a tree (all-reduce Tree or NVLS Tree). */
static bool
is_tree(const struct netsg_coll *c)
{
    return c->algo == NCCL_ALGO_TREE || c->algo == NCCL_ALGO_NVLS_TREE;
}

/* Append the flows of step STEP of collective C, every instance, tagged
 * TAG.  Ring: every rank to the next, nbytes/n.  Tree: over the nodes'
 * first GPUs, two binary trees (heap order and its mirror), each edge
 * both ways with half the buffer.  PAT step k: rank r to r + 2^k with
 * min(2^k, n - 2^k) chunks. */
static void
coll_flows(const struct netsg_coll *c, int step, int tag,
           struct flowlist *l)
{
    int n = c->g.ranks, ppn = c->g.ranks_per_node;
    double chunk = c->nbytes / n;
    for (int b = 0; b < n_node_blocks(c); b++)
        for (int j = 0; j < n_gpu_blocks(c); j++) {
            if (is_tree(c)) {
                int nn = c->g.nodes;
                for (int t = 0; t < 2; t++)
                    for (int k = 1; k < nn; k++) {
                        int child = t ? nn - 1 - k : k;
                        int parent = t ? nn - 1 - (k - 1) / 2 : (k - 1) / 2;
                        int hc = rank_host(c, b, j, child * ppn);
                        int hp = rank_host(c, b, j, parent * ppn);
                        add_flow(l, hc, hp, c->nbytes / 2, tag);
                        add_flow(l, hp, hc, c->nbytes / 2, tag);
                    }
            } else if (c->algo == NCCL_ALGO_PAT) {
                int d = 1 << step;
                double k = d < n - d ? d : n - d;
                for (int r = 0; r < n; r++)
                    add_flow(l, rank_host(c, b, j, r),
                             rank_host(c, b, j, (r + d) % n), k * chunk,
                             tag);
            } else {
                for (int r = 0; r < n; r++)
                    add_flow(l, rank_host(c, b, j, r),
                             rank_host(c, b, j, (r + 1) % n), chunk, tag);
            }
        }
}

/* Longest route latency among the flows tagged TAG (s). */
static double
max_latency(const struct flowlist *l, int tag)
{
    double m = 0;
    for (size_t k = 0; k < l->n; k++)
        if (l->f[k].tag == tag) {
            double lat = sg_host_get_route_latency(sg.hosts[l->f[k].src],
                                                   sg.hosts[l->f[k].dst]);
            if (lat > m)
                m = lat;
        }
    return m;
}

/* ---- Exact rings ------------------------------------------------------- */

struct ring_rank {
    sg_mailbox_t in, out;
    int steps;
    double chunk;
    double end_s;
};

/* NCCL's ring: send the chunk to the next rank, wait for the previous
 * rank's, and only then go on (the next step forwards what arrived). */
static void
ring_rank_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    struct ring_rank *me = sg_actor_self_get_data();
    for (int s = 0; s < me->steps; s++) {
        sg_comm_t put = sg_mailbox_put_async(me->out, &token,
                                             (long)me->chunk);
        sg_mailbox_get(me->in);
        sg_comm_wait(put);
    }
    me->end_s = simgrid_get_clock();
}

/* Every step of ring collective C; returns its duration (s). */
static double
run_exact_ring(const struct netsg_coll *c)
{
    int n = c->g.ranks, inst = n_node_blocks(c) * n_gpu_blocks(c);
    struct ring_rank *rk = xcalloc((size_t)n * inst, sizeof *rk);
    double t0 = simgrid_get_clock();
    char name[40];
    int i = 0;
    for (int b = 0; b < n_node_blocks(c); b++)
        for (int j = 0; j < n_gpu_blocks(c); j++, i++)
            for (int r = 0; r < n; r++) {
                struct ring_rank *me = &rk[i * n + r];
                snprintf(name, sizeof name, "ring%d-%d", i, r);
                me->in = sg_mailbox_by_name(name);
                snprintf(name, sizeof name, "ring%d-%d", i, (r + 1) % n);
                me->out = sg_mailbox_by_name(name);
                me->steps = coll_steps(c);
                me->chunk = c->nbytes / n;
            }
    i = 0;
    for (int b = 0; b < n_node_blocks(c); b++)
        for (int j = 0; j < n_gpu_blocks(c); j++, i++)
            for (int r = 0; r < n; r++)
                start_actor("rank", sg.hosts[rank_host(c, b, j, r)],
                            ring_rank_main, &rk[i * n + r]);
    simgrid_run();
    sg.runs++;
    sg.flows += (int64_t)n * inst * coll_steps(c);
    double last = 0;
    for (int k = 0; k < n * inst; k++)
        if (rk[k].end_s - t0 > last)
            last = rk[k].end_s - t0;
    free(rk);
    return last;
}

/* ---- Runs on the platform as it is and on a non-blocking fabric ------- */

/* Give every link its rate and latency for the reference run (the
 * topology's node links, a non-blocking fabric) or for the platform as it
 * is, with the background load taken off the fabric. */
static void
set_links(bool reference)
{
    for (size_t k = 0; k < sg.n_links; k++) {
        const struct link_rates *l = &sg.links[k];
        double bw = reference ? l->ref_bw
                    : l->fabric ? l->act_bw * (1 - sg.background)
                                : l->act_bw;
        sg_link_set_bandwidth(l->link, bw);
        sg_link_set_latency(l->link, reference ? l->ref_lat : l->act_lat);
    }
}

/* Bandwidth time of collective C (s), and the latency of its longest
 * route per step: the whole collective (exact ring) or its steps run one
 * at a time, each step's time less its longest route latency. */
static double
coll_bw_time(const struct netsg_coll *c, bool whole, double *lat_s)
{
    int steps = coll_steps(c);
    bool ring = !is_tree(c) && c->algo != NCCL_ALGO_PAT;
    struct flowlist l = {0};
    coll_flows(c, 0, 0, &l);
    *lat_s = max_latency(&l, 0);
    double t;
    if (ring && whole) {
        t = run_exact_ring(c) - steps * *lat_s;
    } else if (ring) {
        t = steps * (run_flows(l.f, (int)l.n) - *lat_s);
    } else {
        /* Tree: one pipelined phase; PAT: each of its steps in turn. */
        t = 0;
        for (int s = 0; s < steps; s++) {
            if (s > 0) {
                l.n = 0;
                coll_flows(c, s, 0, &l);
            }
            t += run_flows(l.f, (int)l.n) - max_latency(&l, 0);
            if (is_tree(c))
                break;
        }
    }
    free(l.f);
    return t > 0 ? t : 0;
}

static bool
coll_same(const struct netsg_coll *a, const struct netsg_coll *b)
{
    return a->op == b->op && a->algo == b->algo && a->g.ranks == b->g.ranks
           && a->g.nodes == b->g.nodes
           && a->g.ranks_per_node == b->g.ranks_per_node
           && a->nbytes == b->nbytes;
}

static struct memo_coll *
coll_memo(const struct netsg_coll *c)
{
    for (size_t i = 0; i < sg.n_colls; i++)
        if (coll_same(&sg.colls[i].c, c)) {
            sg.reused++;
            return &sg.colls[i];
        }
    /* An all-gather and a reduce-scatter of one size over one group send
     * the same flows (ring: n - 1 steps of nbytes / n from each rank to
     * the next; coll_flows and coll_steps look at the operation only for
     * an all-reduce's steps): FSDP's pairs share one simulation. */
    for (size_t i = 0; i < sg.n_colls; i++) {
        const struct netsg_coll *o = &sg.colls[i].c;
        if (o->algo == c->algo && o->g.ranks == c->g.ranks
            && o->g.nodes == c->g.nodes
            && o->g.ranks_per_node == c->g.ranks_per_node
            && o->nbytes == c->nbytes && coll_steps(o) == coll_steps(c)) {
            struct memo_coll m = sg.colls[i];
            m.c = *c;
            sg.reused++;
            sg.colls = xgrow(sg.colls, &sg.cap_colls, sg.n_colls + 1,
                             sizeof *sg.colls);
            sg.colls[sg.n_colls] = m;
            return &sg.colls[sg.n_colls++];
        }
    }
    struct memo_coll m = {*c, 1, 0, 0};
    /* Inside one node nothing crosses the fabric: nothing to simulate. */
    if (c->g.nodes > 1 && c->g.ranks > 1 && c->nbytes > 0) {
        double lat_ref, lat_act;
        set_links(true);
        double ref = coll_bw_time(c, sg.exact, &lat_ref);
        set_links(false);
        double act = coll_bw_time(c, sg.exact, &lat_act);
        m.ratio = ref > 0 ? act / ref : 1;
        int lat_steps = is_tree(c) ? 2 : coll_steps(c);
        m.extra_latency_s = lat_steps * (lat_act - lat_ref);
        /* One step alone, as netsg_share compares against: a ring's
         * steps are alike, so the run above already measured it. */
        if (!is_tree(c) && c->algo != NCCL_ALGO_PAT && !sg.exact) {
            m.step_s = act / coll_steps(c);
        } else {
            struct flowlist l = {0};
            coll_flows(c, 0, 0, &l);
            m.step_s = run_flows(l.f, (int)l.n) - max_latency(&l, 0);
            free(l.f);
        }
    }
    sg.colls = xgrow(sg.colls, &sg.cap_colls, sg.n_colls + 1,
                     sizeof *sg.colls);
    sg.colls[sg.n_colls] = m;
    return &sg.colls[sg.n_colls++];
}

void
netsg_coll_factor(const struct netsg_coll *c, double *ratio,
                  double *extra_latency_s)
{
    struct memo_coll *m = coll_memo(c);
    *ratio = m->ratio;
    *extra_latency_s = m->extra_latency_s;
}

void
netsg_share(const struct netsg_coll *cs, int n, double *rate)
{
    for (size_t i = 0; i < sg.n_shares; i++) {
        struct memo_share *m = &sg.shares[i];
        bool same = m->n == n;
        for (int k = 0; same && k < n; k++)
            same = coll_same(&m->cs[k], &cs[k]);
        if (same) {
            sg.reused++;
            memcpy(rate, m->rate, n * sizeof *rate);
            return;
        }
    }
    /* One step of each, all together, against each one's step alone.
     * When their steps differ in length, the shorter ends first and the
     * longer then runs alone for the rest of its step, so the longer
     * one's slowdown is understated; the C API gives no flow's remaining
     * bytes to measure the shared phase alone. */
    double *alone = xcalloc(n, sizeof *alone);
    for (int k = 0; k < n; k++)
        alone[k] = coll_memo(&cs[k])->step_s;
    struct flowlist l = {0};
    for (int k = 0; k < n; k++)
        coll_flows(&cs[k], 0, k, &l);
    set_links(false);
    run_flows(l.f, (int)l.n);
    for (int k = 0; k < n; k++) {
        double end = 0;
        for (size_t f = 0; f < l.n; f++)
            if (l.f[f].tag == k && l.f[f].end_s > end)
                end = l.f[f].end_s;
        double together = end - max_latency(&l, k);
        rate[k] = together > 0 && alone[k] > 0 ? alone[k] / together : 1;
        if (rate[k] > 1)
            rate[k] = 1;
    }
    free(l.f);
    free(alone);
    struct memo_share m = {n, xcalloc(n, sizeof *cs), xcalloc(n,
                                                              sizeof *rate)};
    memcpy(m.cs, cs, n * sizeof *cs);
    memcpy(m.rate, rate, n * sizeof *rate);
    sg.shares = xgrow(sg.shares, &sg.cap_shares, sg.n_shares + 1,
                      sizeof *sg.shares);
    sg.shares[sg.n_shares++] = m;
}

double
netsg_flows(int n, const char *const *src, const char *const *dst,
            const double *bytes, double *end_s)
{
    struct flow *f = xcalloc(n > 0 ? n : 1, sizeof *f);
    for (int k = 0; k < n; k++) {
        sg_host_t hs = sg_host_by_name(src[k]), hd = sg_host_by_name(dst[k]);
        for (int h = 0; h < sg.nodes * sg.gpn; h++) {
            if (sg.hosts[h] == hs)
                f[k].src = h;
            if (sg.hosts[h] == hd)
                f[k].dst = h;
        }
        f[k].bytes = bytes[k];
    }
    set_links(false);
    double last = run_flows(f, n);
    for (int k = 0; k < n; k++)
        end_s[k] = f[k].end_s;
    free(f);
    return last;
}

/* Memoized answers hold for the platform and settings they were found
 * with. */
static void
forget(void)
{
    for (size_t i = 0; i < sg.n_shares; i++) {
        free(sg.shares[i].cs);
        free(sg.shares[i].rate);
    }
    sg.n_shares = 0;
    sg.n_colls = 0;
}

void
netsg_configure(bool exact, double background_load)
{
    if (exact != sg.exact || background_load != sg.background)
        forget();
    sg.exact = exact;
    sg.background = background_load;
}

void
netsg_stats(int64_t *runs, int64_t *flows, int64_t *reused)
{
    *runs = sg.runs;
    *flows = sg.flows;
    *reused = sg.reused;
}

/* ---- Starting SimGrid ------------------------------------------------- */

/* SimGrid's options: CM02 without cross-traffic and without the TCP
 * window bound (gamma / 2 latency), which would cap a 6 us path at
 * 350 GB/s: what is left is latency + size / max-min share
 * (toolchain.md §2.5); quiet logs, so that outputs stay ours; small actor
 * stacks. */
static void
start_engine(void)
{
    static char a0[] = "fsdpsim";
    static char a1[] = "--log=root.thres:warning";
    static char a2[] = "--cfg=network/model:CM02";
    static char a3[] = "--cfg=network/crosstraffic:0";
    static char a4[] = "--cfg=network/TCP-gamma:0";
    static char a5[] = "--cfg=contexts/stack-size:" ACTOR_STACK_KIB;
    char *argv[] = {a0, a1, a2, a3, a4, a5, NULL};
    int argc = 6;
    simgrid_init(&argc, argv);
}

/* The rate (bytes/s) and latency (s) topology T gives the link NAME of
 * its generated platform (net_platform.c); false for other names. */
static bool
nominal(const struct topo *t, const char *name, double *bw, double *lat)
{
    int a, b;
    char c;
    struct net_link_rates lr;
    net_platform_rates(t, &lr);
    *lat = 0;
    if (strncmp(name, NET_FABRIC_PREFIX, strlen(NET_FABRIC_PREFIX)) == 0) {
        *bw = lr.uplink_Bps;
        *lat = lr.uplink_lat_ns * 1e-9;
    } else if (sscanf(name, "node%d_link_%d_", &a, &b) == 2) {
        *bw = lr.gpu_Bps;
        *lat = lr.gpu_lat_ns * 1e-9;
    } else if (sscanf(name, "node%d_backbon%c", &a, &c) == 2) {
        *bw = lr.backbone_Bps;
    } else if (sscanf(name, "node%d-ni%c", &a, &c) == 2) {
        *bw = lr.nic_Bps;
        *lat = lr.nic_lat_ns * 1e-9;
    } else if (strlen(name) > 6
               && strcmp(name + strlen(name) - 6, "-trunk") == 0) {
        /* Between a zone's parts: as fast as the part's links together
         * in the platform written, so that it never limits; unbounded
         * when a sweep raises the rates of those links. */
        *bw = UNBOUNDED_BPS;
    } else {
        return false;
    }
    return true;
}

/* Record every link's rates for the two runs.  FROM_PLATFORM: the
 * platform as loaded is what runs; otherwise (a generated platform whose
 * topology changed only in rates and latencies, as in a sweep over
 * oversubscription) T's values replace it, so that one process can
 * simulate them all. */
static void
set_rates(const struct topo *t, bool from_platform)
{
    size_t n = sg_link_count();
    sg_link_t *all = sg_link_list();
    free(sg.links);
    sg.links = xcalloc(n ? n : 1, sizeof *sg.links);
    sg.n_links = n;
    for (size_t k = 0; k < n; k++) {
        struct link_rates *l = &sg.links[k];
        const char *name = sg_link_get_name(all[k]);
        double bw, lat;
        bool known = nominal(t, name, &bw, &lat);
        l->link = all[k];
        l->fabric = strncmp(name, NET_FABRIC_PREFIX,
                            strlen(NET_FABRIC_PREFIX)) == 0;
        l->act_bw = from_platform || !known ? sg_link_get_bandwidth(all[k])
                                            : bw;
        l->act_lat = from_platform || !known ? sg_link_get_latency(all[k])
                                             : lat;
        l->ref_bw = l->fabric ? UNBOUNDED_BPS : known ? bw : l->act_bw;
        l->ref_lat = l->fabric ? 0 : known ? lat : l->act_lat;
    }
    free(all);
    forget();
}

/* SimGrid computes the routing tables of Floyd and Dijkstra zones when
 * it seals the platform, at the first simgrid_run(), and refuses to route
 * before (s4u EngineImpl::seal_platform): a run without actors seals it,
 * so that route latencies can be asked for at once. */
static void
load_and_seal(const char *path)
{
    simgrid_load_platform(path);
    simgrid_run();
}

/* The job's hosts, node<i>-gpu<g> at [i * GPN + g], from one list of
 * every host rather than a search per name (SimGrid looks a name up
 * through every zone of the platform in turn).  Returns -1, or the index
 * of a host the platform lacks. */
static int
find_hosts(int nodes, int gpn, sg_host_t *hosts)
{
    size_t n_all = sg_host_count();
    sg_host_t *all = sg_host_list();
    for (size_t k = 0; k < n_all; k++) {
        int i, g;
        char again[48];
        const char *name = sg_host_get_name(all[k]);
        if (sscanf(name, "node%d-gpu%d", &i, &g) != 2 || i < 0
            || i >= nodes || g < 0 || g >= gpn)
            continue;
        snprintf(again, sizeof again, "node%d-gpu%d", i, g);
        if (strcmp(again, name) == 0)
            hosts[i * gpn + g] = all[k];
    }
    free(all);
    for (int h = 0; h < nodes * gpn; h++)
        if (hosts[h] == NULL)
            return h;
    return -1;
}

/* Load the checked platform file and find the job's hosts and the fabric
 * links; 0, or -1 with *cause when a host is missing. */
static int
load(const struct topo *t, const char *path, char **cause)
{
    load_and_seal(path);
    sg.hosts = xcalloc((size_t)sg.nodes * sg.gpn, sizeof *sg.hosts);
    int missing = find_hosts(sg.nodes, sg.gpn, sg.hosts);
    if (missing >= 0) {
        *cause = xasprintf("%s: no host 'node%d-gpu%d'", path,
                           missing / sg.gpn, missing % sg.gpn);
        return -1;
    }
    set_rates(t, true);
    return 0;
}

/* Up to this many nodes the probe asks for a route between every pair
 * of nodes (65,536 routes); more would take minutes. */
#define PROBE_ALL_PAIRS_NODES 256

/* SimGrid aborts on what it cannot route, and the checks of
 * net_platform_check stop short of routing.  So a user's platform is
 * first loaded in a child process that asks for the routes the job uses;
 * if SimGrid aborts there, the parent reports its message and has not
 * started SimGrid itself.  0, or -1 with *cause. */
static int
probe_platform(const char *path, int nodes, int gpn, char **cause)
{
    int fds[2];
    if (pipe(fds) != 0) {
        *cause = xasprintf("cannot check %s: pipe: %s", path,
                           strerror(errno));
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        *cause = xasprintf("cannot check %s: fork: %s", path,
                           strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        start_engine();
        load_and_seal(path);
        sg_host_t *h = xcalloc((size_t)nodes * gpn, sizeof *h);
        if (find_hosts(nodes, gpn, h) >= 0)
            _exit(0);       /* the parent's load says which is missing */
        for (int i = 0; i < nodes; i++)
            for (int g = 0; g < gpn; g++) {
                /* Ring neighbours, the node's GPUs, and GPU 0 of every
                 * node to GPU 0 of every other (trees, PAT, HSDP); past
                 * PROBE_ALL_PAIRS_NODES, to those a ring, PAT (i + 2^k)
                 * and the trees (parent (i - 1) / 2, mirrored) over the
                 * whole cluster reach, both ways. */
                int next = g + 1 < gpn ? i : (i + 1) % nodes;
                sg_host_get_route_latency(h[i * gpn + g],
                                          h[next * gpn + (g + 1) % gpn]);
                if (g > 0)
                    continue;
                if (nodes <= PROBE_ALL_PAIRS_NODES) {
                    for (int j = 0; j < nodes; j++)
                        sg_host_get_route_latency(h[i * gpn], h[j * gpn]);
                    continue;
                }
                int m = nodes - 1 - i;
                int peers[] = {i > 0 ? (i - 1) / 2 : i,
                               m > 0 ? nodes - 1 - (m - 1) / 2 : i};
                for (int k = 0; k < 2; k++) {
                    sg_host_get_route_latency(h[i * gpn], h[peers[k] * gpn]);
                    sg_host_get_route_latency(h[peers[k] * gpn], h[i * gpn]);
                }
                for (int d = 1; d < nodes; d *= 2) {
                    int j = (i + d) % nodes;
                    sg_host_get_route_latency(h[i * gpn], h[j * gpn]);
                    sg_host_get_route_latency(h[j * gpn], h[i * gpn]);
                }
            }
        _exit(0);
    }
    close(fds[1]);
    char buf[4096], msg[512] = "";
    size_t got = 0;
    ssize_t r;
    while ((r = read(fds[0], buf + got, sizeof buf - 1 - got)) > 0) {
        got += (size_t)r;
        if (got == sizeof buf - 1)
            got = 0;        /* keep reading; only the start matters */
    }
    buf[got] = '\0';
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    /* SimGrid's first message, without its "[time] file:line: [category]"
     * prefix and the exception's name. */
    char *line = strtok(buf, "\n");
    if (line != NULL) {
        char *p = line, *e;
        while ((e = strstr(p, "] ")) != NULL)
            p = e + 2;
        if (strncmp(p, "Uncaught exception", 18) == 0
            && (e = strstr(p, ": ")) != NULL)
            p = e + 2;
        snprintf(msg, sizeof msg, "%s", p);
    }
    *cause = xasprintf("%s: SimGrid cannot use this platform: %s (start "
                       "from 'fsdpsim topology --simgrid-xml')", path,
                       msg[0] ? msg : "it stopped without a message");
    return -1;
}

/* What the generated platform's links and routes depend on; topologies
 * that agree on it differ only in link rates and latencies. */
static char *
structure_of(const struct topo *t)
{
    bool tree = t->shape != NET_SHAPE_SINGLE_SWITCH;
    return xasprintf("%d %d %d %d %d", t->nodes, t->gpus_per_node,
                     (int)t->shape, tree ? t->nodes_per_leaf : 0,
                     tree ? (int)t->placement : 0);
}

/* A generated platform's structure and link rates (net_platform_rates):
 * opens that agree on it load the same platform. */
static char *
rates_key(const struct topo *t)
{
    char *st = structure_of(t);
    struct net_link_rates lr;
    net_platform_rates(t, &lr);
    char *key = xasprintf("%s %.17g %.17g %.17g %.17g %.17g %.17g %.17g",
                          st, lr.gpu_Bps, lr.gpu_lat_ns, lr.backbone_Bps,
                          lr.nic_Bps, lr.nic_lat_ns, lr.uplink_Bps,
                          lr.uplink_lat_ns);
    free(st);
    return key;
}

int
netsg_open(const struct topo *t, const char *platform, char **cause)
{
    char *xml = NULL, *sig;
    if (net_platform_supported(t, cause) != 0)
        return -1;
    /* A key, not the platform text: a warm open (every sweep point, every
     * bench run) must not write megabytes of XML to compare them. */
    sig = platform != NULL ? xasprintf("file %s %d %d", platform, t->nodes,
                                       t->gpus_per_node)
                           : rates_key(t);
    if (sg.open) {
        int same = strcmp(sig, sg.signature) == 0;
        char *st = platform == NULL ? structure_of(t) : NULL;
        if (!same && st != NULL && sg.structure != NULL
            && strcmp(st, sg.structure) == 0) {
            set_rates(t, false);
            free(sg.signature);
            sg.signature = sig;
            sig = NULL;
            same = 1;
        }
        free(st);
        free(sig);
        if (same)
            return 0;
        *cause = xstrdup("--network simgrid: SimGrid simulates one platform "
                         "per process, and this one already loaded another "
                         "shape (vary rates, latencies and oversubscription "
                         "in one run; run one fsdpsim per node count, "
                         "network shape, placement or platform file)");
        return -1;
    }
    if (platform == NULL) {
        size_t len = 0;
        FILE *m = xopen_memstream(&xml, &len);
        net_platform_write(t, m);
        fclose(m);
    }
    int rc = -1;
    char *path = NULL;
    if (platform != NULL) {
        if (net_platform_check(platform, t->nodes, t->gpus_per_node, cause)
            != 0
            || probe_platform(platform, t->nodes, t->gpus_per_node, cause)
                   != 0)
            goto out;
        path = xstrdup(platform);
    } else {
        /* SimGrid reads platforms from files only: a temporary one,
         * which SIGINT, SIGTERM and SIGHUP remove (atomic_file.h). */
        const char *dir = getenv("TMPDIR");
        path = xasprintf("%s/fsdpsim-platform-XXXXXX",
                         dir && *dir ? dir : "/tmp");
        int fd = atomic_file_mkstemp(path);
        FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
        if (f == NULL || fputs(xml, f) == EOF || fclose(f) != 0) {
            *cause = xasprintf("--network simgrid: cannot write the "
                               "platform to %s: %s", path, strerror(errno));
            if (fd >= 0)
                atomic_file_remove(path);
            goto out;
        }
        /* The writer's output passes the same checks as a user's. */
        if (net_platform_check_text(xml, "generated platform", t->nodes,
                                    t->gpus_per_node, cause) != 0) {
            atomic_file_remove(path);
            goto out;
        }
    }
    sg.nodes = t->nodes;
    sg.gpn = t->gpus_per_node;
    start_engine();
    rc = load(t, path, cause);
    if (platform == NULL)
        atomic_file_remove(path);
    sg.open = true;
    sg.signature = sig;
    sig = NULL;
    if (platform == NULL)
        sg.structure = structure_of(t);
out:
    free(sig);
    free(xml);
    free(path);
    return rc;
}

#ifdef NETSG_PLUGIN
/* The plugin's one exported symbol (it is built with hidden visibility:
 * its own calls stay inside it). */
__attribute__((visibility("default"))) extern const struct netsg_api
    fsdpsim_netsg_api;
const struct netsg_api fsdpsim_netsg_api = {
    NETSG_API_VERSION, netsg_open, netsg_configure, netsg_coll_factor,
    netsg_share, netsg_flows, netsg_stats};
#endif
