/*
 * coll.c: NCCL's tuning model over the cluster's bottleneck links (see
 * coll.h).
 *
 * Constants are NCCL's defaults at master (src/graph/tuning.cc,
 * ncclTunerConstantsDefaults; src/graph/topo.h), quoted in
 * fsdp-semantics.md §14.3; protocol order everywhere LL, LL128, Simple.
 * Where NCCL's estimate differs from the hardware (NCCL credits a 2-node
 * ring with intra-node speed), the physical bottleneck is used, so the
 * time is what the collective takes, and the choice is NCCL's.
 */
#include "coll.h"
#include "xalloc.h"

#include <math.h>
#include <string.h>

/* baseLatencies (us). */
static const double base_lat_us[NCCL_ALGO_COUNT][PROTO_COUNT] = {
    [NCCL_ALGO_TREE] = {6.8, 14.0, 8.4},
    [NCCL_ALGO_RING] = {6.6, 14.0, 8.4},
    [NCCL_ALGO_PAT] = {8.0, 8.0, 8.0},
};
/* hwLatencies[NVLINK / PCI / NET] (us). */
enum { HW_NVLINK, HW_PCI, HW_NET };
static const double hw_lat_us[3][NCCL_ALGO_COUNT][PROTO_COUNT] = {
    [HW_NVLINK] = {[NCCL_ALGO_TREE] = {0.6, 1.25, 4.0},
                   [NCCL_ALGO_RING] = {0.6, 1.9, 3.4},
                   [NCCL_ALGO_COLLNET_DIRECT] = {0, 0, 3.7},
                   [NCCL_ALGO_COLLNET_CHAIN] = {0, 0, 2.8},
                   [NCCL_ALGO_NVLS] = {0, 0, 25},
                   [NCCL_ALGO_NVLS_TREE] = {0, 0, 25},
                   [NCCL_ALGO_PAT] = {0, 0, 4.0}},
    [HW_PCI] = {[NCCL_ALGO_TREE] = {1.0, 1.9, 4.0},
                [NCCL_ALGO_RING] = {1.0, 2.5, 5.7},
                [NCCL_ALGO_COLLNET_DIRECT] = {0, 0, 3.7},
                [NCCL_ALGO_COLLNET_CHAIN] = {0, 0, 2.8},
                [NCCL_ALGO_PAT] = {0, 0, 4.0}},
    [HW_NET] = {[NCCL_ALGO_TREE] = {5.0, 8.5, 14},
                [NCCL_ALGO_RING] = {2.7, 4.0, 14.0},
                [NCCL_ALGO_COLLNET_DIRECT] = {0, 0, 31},
                [NCCL_ALGO_COLLNET_CHAIN] = {0, 0, 30},
                [NCCL_ALGO_NVLS] = {0, 0, 18},
                [NCCL_ALGO_NVLS_TREE] = {0, 0, 20.9},
                [NCCL_ALGO_PAT] = {0, 0, 14}},
};
/* Per-architecture caps (GB/s), rows Volta, Ampere, Hopper, Blackwell;
 * columns one node, two nodes, more. */
static const double ll_max_bw[4][3] = {
    {39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0},
    {282.0, 90.0, 70.0}};
static const double per_ch_max_ring_ll128_bw[4] = {20.0, 20.0, 36.7, 40.0};
static const double per_ch_max_tree_ll128_bw[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0},
    {55.6, 31.67, 20.0}};
static const double per_ch_max_tree_bw[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0},
    {70.0, 42.8, 24.0}};
static const double nvls_efficiency[4] = {0, 0, 0.85, 0.74};

/* Tree bandwidth correction by log2(nBytes / 64), 64 B to 128 MiB
 * (tuning.cc treeCorrectionFactor): trees fall short of the model for
 * medium sizes. */
static const double tree_correction[PROTO_COUNT][22] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7,
     .8, .9, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .5, .6, .6, .7,
     .7, .8, .9, .9, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .5, .5, .6,
     .6, .7, .8, .9}};

#define LL_FACTOR 0.5
#define LL128_FACTOR 0.92
/* NCCL 2.21 and older: LL128 rings with one GPU per node get 0.7. */
#define LL128_FACTOR_PPN1_OLD 0.7
#define TREE_FACTOR 0.92
#define TREE_PATTERN_FACTOR 0.85
#define PAT_FACTOR 0.75
#define NET_OVERHEAD_US 1.0
/* Multi-node ring/Simple all-reduce "plateau": latency x1.4 on Ampere and
 * newer (x1.9 before) once nBytes / (nChannels x nRanks) >= 64. */
#define RING_AR_PLATEAU 1.4
/* NVLS channels (comm->nvlsChannels on H100). */
#define NVLS_CHANNELS 16

/* Credited fraction of wire rate: NVLink 20.0 (SM80) / 20.6 (SM90) / 40.1
 * (SM100) GB/s per link against 25 / 25 / 50; PCIe Gen3 x16 12.0 against
 * 16; a 100 Gb/s NIC 12.0 against 12.5 (graph/topo.h). */
static double
intra_link_efficiency(const struct topo *t)
{
    if (t->fabric == FABRIC_PCIE)
        return 12.0 / 16.0;
    if (t->arch >= GPU_ARCH_BLACKWELL)
        return 40.1 / 50.0;
    if (t->arch >= GPU_ARCH_HOPPER)
        return 20.6 / 25.0;
    return 20.0 / 25.0;
}

#define NET_LINK_EFFICIENCY (12.0 / 12.5)

double
coll_busbw_factor(enum coll_op op, int ranks)
{
    if (ranks <= 1)
        return 0;
    return op == COLL_ALLREDUCE ? 2.0 * (ranks - 1) / ranks
                                : (double)(ranks - 1) / ranks;
}

/* Channels NCCL opens on this kind of system: two per NVLink-class ring
 * pair on NVSwitch systems (16 on A100, 32 on H100 and newer), few over
 * PCIe, and across nodes two per NIC. */
static int
default_channels(const struct topo *t, const struct coll_group *g)
{
    int ch;
    if (t->fabric == FABRIC_PCIE)
        ch = 2;
    else if (t->fabric == FABRIC_NVLINK)
        ch = 4;
    else
        ch = t->arch >= GPU_ARCH_HOPPER ? 32 : 16;
    if (g->nodes > 1 && 2 * t->nics_per_node < ch)
        ch = 2 * t->nics_per_node;
    return ch < 1 ? 1 : ch;
}

struct ctx {
    const struct topo *t;
    const struct nccl_config *nc;
    enum coll_op op;
    const struct coll_group *g;
    double nbytes;
    int arch, nidx, ch, ch_default;
    double intra, share;        /* bytes/s: intra-node, NIC share */
};

/* Bus bandwidth (bytes/s) and latency (us) of (algorithm, protocol), or
 * bus 0 when NCCL would not use it. */
static void
algo_cost(const struct ctx *x, int a, int p, double *bus, double *lat_us)
{
    const struct topo *t = x->t;
    const struct coll_group *g = x->g;
    int n = g->ranks, N = g->nodes, ppn = g->ranks_per_node;
    int multi = N > 1;
    int intra_hw = t->fabric == FABRIC_PCIE ? HW_PCI : HW_NVLINK;
    double scale = (double)x->ch / x->ch_default;   /* NCCL_*_NCHANNELS */
    double lat_inter_topo = t->inter_latency_ns / 1e3;
    *bus = 0;
    *lat_us = 0;

    if (a == NCCL_ALGO_RING) {
        double b = multi ? fmin(ppn > 1 ? x->intra : INFINITY, x->share)
                         : x->intra;
        b *= fmin(scale, 1.0);
        if (p == PROTO_LL)
            b = fmin(ll_max_bw[x->arch][x->nidx] * 1e9, LL_FACTOR * b);
        else if (p == PROTO_LL128)
            b = fmin(b * (x->nc->version <= 221 && ppn < 2
                              ? LL128_FACTOR_PPN1_OLD : LL128_FACTOR),
                     x->ch * per_ch_max_ring_ll128_bw[x->arch] * 1e9);
        int nsteps = x->op == COLL_ALLREDUCE ? 2 * (n - 1) : n - 1;
        int ninter = multi ? (x->op == COLL_ALLREDUCE ? 2 : 1) * (N - 1) : 0;
        double intra_lat = fmax(hw_lat_us[intra_hw][a][p],
                                t->intra_latency_ns / 1e3);
        if (multi)
            intra_lat = fmax(intra_lat, NET_OVERHEAD_US
                                            * (p == PROTO_SIMPLE ? 3 : 1));
        double inter_lat = hw_lat_us[HW_NET][ppn == 1 ? NCCL_ALGO_TREE : a][p]
                           + lat_inter_topo * (p == PROTO_SIMPLE ? 2 : 1);
        *lat_us = base_lat_us[a][p] + (nsteps - ninter) * intra_lat
                  + ninter * inter_lat;
        if (multi && x->op == COLL_ALLREDUCE && p == PROTO_SIMPLE
            && x->nbytes / ((double)x->ch * n) >= 64)
            *lat_us *= t->arch >= GPU_ARCH_AMPERE ? RING_AR_PLATEAU : 1.9;
        /* Ring: algorithm bandwidth = bus x n / nsteps-ish, i.e. time =
         * nbytes x busbw factor / bus (nccl-tests). */
        *bus = b;
        return;
    }
    if (a == NCCL_ALGO_TREE) {
        if (x->op != COLL_ALLREDUCE)
            return;
        /* A double binary tree moves the buffer once up and once down
         * through each node's NICs: algbw = the NIC share, NCCL's
         * busBw = 2 x algbw.  In one node it is a chain over NVLink. */
        double b = multi ? 2 * fmin(x->share, ppn > 1 ? x->intra : INFINITY)
                         : x->intra;
        b *= fmin(scale, 1.0);
        if (p == PROTO_LL)
            b = fmin(b / 3.8, ll_max_bw[x->arch][x->nidx] * 1e9);
        else if (p == PROTO_LL128)
            b = fmin(b * (multi ? 120.0 / 128.0 : 7.0 / 9.0),
                     x->ch * per_ch_max_tree_ll128_bw[x->arch][x->nidx] * 1e9);
        else
            b = fmin(TREE_FACTOR * b,
                     x->ch * per_ch_max_tree_bw[x->arch][x->nidx] * 1e9);
        b *= TREE_PATTERN_FACTOR;
        int log_size = (int)floor(log2(fmax(x->nbytes / 64, 1)));
        if (log_size < 22)
            b *= tree_correction[p][log_size];
        double intra_lat = hw_lat_us[intra_hw][a][p];
        double inter_lat = hw_lat_us[HW_NET][a][p] + lat_inter_topo;
        *lat_us = base_lat_us[a][p]
                  + 2 * ((ppn - 1) * intra_lat + log2(N) * inter_lat);
        *bus = b;
        return;
    }
    if (a == NCCL_ALGO_NVLS || a == NCCL_ALGO_NVLS_TREE) {
        /* NVSwitch multicast: Hopper+, an NVSwitch node, Simple only.
         * Across nodes, all-gather and reduce-scatter need SHARP (absent)
         * and all-reduce uses NVLS Tree. */
        if (p != PROTO_SIMPLE || t->fabric != FABRIC_NVSWITCH
            || nvls_efficiency[x->arch] <= 0 || ppn < 2 || ppn > 32)
            return;
        if (a == NCCL_ALGO_NVLS && multi)
            return;
        if (a == NCCL_ALGO_NVLS_TREE && (!multi || x->op != COLL_ALLREDUCE))
            return;
        double nch = NVLS_CHANNELS;
        double b = x->intra * nvls_efficiency[x->arch] * (nch - 1) / nch
                   * (x->op == COLL_ALLREDUCE ? 2.0 : (ppn - 1.0) / ppn);
        if (multi)
            b = fmin(b, 2 * x->share);
        *bus = b * fmin(scale, 1.0);
        *lat_us = hw_lat_us[HW_NVLINK][a][p]
                  + (multi ? hw_lat_us[HW_NET][a][p] + lat_inter_topo : 0);
        return;
    }
    if (a == NCCL_ALGO_PAT) {
        /* One GPU per node, host networking, Simple only. */
        if (p != PROTO_SIMPLE || x->op == COLL_ALLREDUCE || !multi
            || N != n)
            return;
        *bus = x->share * PAT_FACTOR * fmin(scale, 1.0);
        double inter_lat = hw_lat_us[HW_NET][a][p] + lat_inter_topo;
        *lat_us = base_lat_us[a][p] + log2(N) * inter_lat / 3.5 + 2.8 * n;
        return;
    }
    if (a == NCCL_ALGO_COLLNET_DIRECT || a == NCCL_ALGO_COLLNET_CHAIN) {
        /* In-network reduction (SHARP) through the CollNet plugin:
         * Simple only, across nodes, NVSwitch nodes of at most 8 GPUs;
         * all-gather and reduce-scatter only through CollNet Direct with
         * one NIC per GPU (fsdp-semantics §14.1; the version rules are
         * nccl_algo_exists()'s).  The switch reduces (all-reduce,
         * reduce-scatter) or multicasts (all-gather), so each node's NICs
         * carry the buffer once instead of a ring's 2(N-1)/N, at NCCL's
         * 0.9 of the network bandwidth (tuning.cc: CollNet Direct
         * "ppn * min(bwIntra, 0.9 * bwInter)"); inside the node the data
         * is split over the GPUs' NVLink (Direct) or passed along a chain
         * (Chain), bounded by one GPU's NVLink bandwidth.  The value is
         * algorithm bandwidth (algo_time uses it as is). */
        if (!t->sharp || p != PROTO_SIMPLE || !multi
            || t->fabric != FABRIC_NVSWITCH || ppn > 8)
            return;
        if (x->op != COLL_ALLREDUCE
            && (a != NCCL_ALGO_COLLNET_DIRECT
                || t->nics_per_node != t->gpus_per_node))
            return;
        double net = 0.9 * x->share;
        if (x->op == COLL_ALLGATHER || x->op == COLL_REDUCESCATTER)
            net *= (double)N / (N - 1);   /* (N-1)/N of it crosses NICs */
        *bus = fmin(net, x->intra) * fmin(scale, 1.0);
        /* tuning.cc latencies: Direct 2 (min(1, ppn-1) intraLat + 0.4 us
         * arity serialization x (ppn-1)) + interLat; Chain 2 (ppn-1)
         * intraLat + interLat, with baseLat 0 for CollNet. */
        double intra_lat = hw_lat_us[intra_hw][a][p];
        double inter_lat = hw_lat_us[HW_NET][a][p] + lat_inter_topo;
        *lat_us = a == NCCL_ALGO_COLLNET_DIRECT
                      ? 2 * (fmin(1, ppn - 1) * intra_lat + 0.4 * (ppn - 1))
                            + inter_lat
                      : 2 * (ppn - 1) * intra_lat + inter_lat;
        return;
    }
}

/* Time (s) from bus bandwidth, with each algorithm's bus-to-algorithm
 * conversion: Ring by nccl-tests' factor; NVLS and PAT all-gather and
 * reduce-scatter use busBw as algorithm bandwidth, CollNet is costed
 * in algorithm bandwidth already; Tree and NVLS
 * all-reduce halve it (NVLS: x n / 2(n-1)). */
static double
algo_time(const struct ctx *x, int a, double bus, double lat_us,
          double *alg)
{
    int n = x->g->ranks;
    if (a == NCCL_ALGO_RING)
        *alg = bus / coll_busbw_factor(x->op, n);
    else if (a == NCCL_ALGO_NVLS || a == NCCL_ALGO_NVLS_TREE)
        *alg = x->op == COLL_ALLREDUCE ? bus * n / (2.0 * (n - 1)) : bus;
    else if (a == NCCL_ALGO_PAT || a == NCCL_ALGO_COLLNET_DIRECT
             || a == NCCL_ALGO_COLLNET_CHAIN)
        *alg = bus;
    else
        *alg = 0.5 * bus;
    return lat_us * 1e-6 + x->nbytes / *alg;
}

int
coll_estimate(const struct topo *t, const struct nccl_config *nc,
              enum coll_op op, enum coll_redop redop,
              const struct coll_group *g, double nbytes,
              struct coll_result *r, char **cause)
{
    memset(r, 0, sizeof *r);
    r->algo = NCCL_ALGO_RING;
    r->proto = PROTO_SIMPLE;
    if (g->ranks <= 1 || nbytes <= 0)
        return 0;

    struct ctx x = {t, nc, op, g, nbytes, (int)t->arch,
                    g->nodes <= 1 ? 0 : g->nodes == 2 ? 1 : 2, 0, 0, 0, 0};
    x.ch_default = default_channels(t, g);
    x.ch = x.ch_default;
    if (nc->max_channels > 0 && x.ch > nc->max_channels)
        x.ch = nc->max_channels;
    if (nc->min_channels > 0 && x.ch < nc->min_channels)
        x.ch = nc->min_channels;
    x.intra = t->intra_Bps * intra_link_efficiency(t);
    /* Communicators using only some GPUs of a node (HSDP replicate groups:
     * one per node) run beside their twins on the other GPUs and get
     * their share of the node's NICs. */
    x.share = t->nics_per_node * t->nic_Bps * NET_LINK_EFFICIENCY
              * g->ranks_per_node / t->gpus_per_node;

    bool usable[NCCL_ALGO_COUNT];
    double bus[NCCL_ALGO_COUNT][PROTO_COUNT], lat[NCCL_ALGO_COUNT][PROTO_COUNT];
    for (int a = 0; a < NCCL_ALGO_COUNT; a++) {
        usable[a] = false;
        for (int p = 0; p < PROTO_COUNT; p++) {
            bus[a][p] = 0;
            if (!nccl_algo_exists(nc->version, op, a))
                continue;
            /* AVG (PreMulSum) reductions have no NVLS or PAT kernels. */
            if (redop == REDOP_AVG && op != COLL_ALLGATHER
                && (a == NCCL_ALGO_NVLS || a == NCCL_ALGO_NVLS_TREE
                    || a == NCCL_ALGO_PAT))
                continue;
            /* LL128 only on NVLink-class paths, Volta and newer. */
            if (p == PROTO_LL128 && (t->fabric == FABRIC_PCIE))
                continue;
            algo_cost(&x, a, p, &bus[a][p], &lat[a][p]);
            if (bus[a][p] > 0)
                usable[a] = true;
        }
    }
    if (nccl_filter_algos(nc, op, usable, cause) != 0)
        return -1;

    double best = INFINITY;
    for (int a = 0; a < NCCL_ALGO_COUNT; a++) {
        if (!usable[a])
            continue;
        for (int p = 0; p < PROTO_COUNT; p++) {
            if (!nc->proto_enable[p] || bus[a][p] <= 0)
                continue;
            double alg;
            double time = algo_time(&x, a, bus[a][p], lat[a][p], &alg);
            if (time < best) {
                best = time;
                r->time_s = time;
                r->algo = a;
                r->proto = p;
                r->latency_s = lat[a][p] * 1e-6;
                r->alg_Bps = alg;
            }
        }
    }
    if (!isfinite(best)) {
        *cause = xasprintf("NCCL_PROTO=%s: NCCL %d.%d has no algorithm/"
                           "protocol available for %s over %d ranks",
                           nc->proto_given ? nc->proto_text : "(default)",
                           nc->version / 100, nc->version % 100,
                           coll_op_name(op), g->ranks);
        return -1;
    }
    r->channels = (r->algo == NCCL_ALGO_NVLS || r->algo == NCCL_ALGO_NVLS_TREE)
                      ? NVLS_CHANNELS : x.ch;
    /* A calibrated topology replaces the model's time for the algorithm
     * and protocol NCCL picks by what nccl-tests measured (fsdpsim
     * calibrate), from the algorithm's own cell where there is one:
     *   t = latency + x / busbw + 2 sqrt(pipeline x / busbw)
     * with x the bytes times the busbw factor (nccl-tests
     * doc/PERFORMANCE.md).  The last two terms are the pipelined transfer
     * time (sqrt(pipeline) + sqrt(x / busbw))^2 of a message cut into
     * chunks (Johnsson and Ho, "Optimum broadcasting and personalized
     * communication in hypercubes", IEEE Trans. Computers 38(9), 1989,
     * pipelined broadcast): NCCL grows its chunks and channels with the
     * message (enqueue.cc), so the approach to the peak bus bandwidth is
     * gradual rather than the sharp knee of latency + x / busbw. */
    int scope = g->nodes > 1 ? 1 : 0;
    const struct topo_calibration *cal =
        &t->calib_algo[op][scope][r->algo][r->proto];
    if (!(cal->busbw_Bps > 0))
        cal = &t->calib[op][scope][r->proto];   /* any algorithm */
    if (cal->busbw_Bps > 0) {
        double xfer_s = nbytes * coll_busbw_factor(op, g->ranks)
                        / cal->busbw_Bps;
        r->latency_s = cal->latency_ns * 1e-9;
        r->time_s = r->latency_s + xfer_s
                    + 2 * sqrt(cal->pipeline_ns * 1e-9 * xfer_s);
        r->alg_Bps = nbytes / (r->time_s - r->latency_s);
    }
    r->bus_Bps = nbytes / r->time_s * coll_busbw_factor(op, g->ranks);
    return 0;
}
