/*
 * coll.c: NCCL ring model (see coll.h).
 *
 * Constants are NCCL's defaults at master (src/graph/tuning.cc,
 * ncclTunerConstantsDefaults; src/graph/topo.h), quoted in
 * fsdp-semantics.md §14.3.  Protocol order everywhere: LL, LL128, Simple.
 */
#include "coll.h"

#include <math.h>

/* baseLatencies[Ring] and hwLatencies[hw][Ring], microseconds. */
static const double ring_base_lat_us[PROTO_COUNT] = {6.6, 14.0, 8.4};
static const double ring_nvlink_lat_us[PROTO_COUNT] = {0.6, 1.9, 3.4};
static const double ring_pci_lat_us[PROTO_COUNT] = {1.0, 2.5, 5.7};
static const double ring_net_lat_us[PROTO_COUNT] = {2.7, 4.0, 14.0};

/* llMaxBws[arch][one node, two nodes, more], GB/s. */
static const double ll_max_bw_GBps[4][3] = {
    {39.0, 39.0, 20.4},     /* Volta */
    {87.7, 22.5, 19.0},     /* Ampere */
    {141.0, 45.0, 35.0},    /* Hopper */
    {282.0, 90.0, 70.0},    /* Blackwell */
};

/* Ring + LL128: min(0.92 * busBw, ...) in ncclTopoTuneModel. */
#define LL128_BW_FACTOR 0.92
/* Ring + LL: min(llMaxBw, 0.5 * busBw). */
#define LL_BW_FACTOR 0.5
/* Multi-node rings add a per-hop host overhead to the intra latency
 * (netOverhead: 1 us on Intel hosts, x3 for Simple). */
#define NET_OVERHEAD_US 1.0

/* What NCCL's topology search credits per link against the wire rate:
 * NVLink 20.0 GB/s per link on SM80 and 20.6 on SM90 against 25 GB/s
 * (topo.h SM80_NVLINK_BW, SM90_NVLINK_BW), a 100 Gb/s NIC 12.0 GB/s
 * against 12.5, PCIe Gen3 x16 12.0 against 16 (topo.h NET_BW, PCI_BW). */
static double
intra_link_efficiency(const struct topo *t)
{
    if (t->fabric == FABRIC_PCIE)
        return 12.0 / 16.0;
    if (t->arch >= GPU_ARCH_HOPPER)
        return 20.6 / 25.0;
    return 20.0 / 25.0;
}

#define NET_LINK_EFFICIENCY (12.0 / 12.5)

const char *
coll_proto_name(enum nccl_proto p)
{
    static const char *const names[PROTO_COUNT] = {"LL", "LL128", "Simple"};
    return names[p];
}

/* The ring's bus bandwidth.  Inside a node every hop is NVLink (or PCIe).
 * Across nodes each ring enters and leaves every node once, and every hop
 * carries the full stream (each chunk travels n-1 hops), so the rings of
 * all channels together are capped by the node's NICs: NCCL's busBw =
 * nChannels x bwInter.  Communicators that use only some GPUs of a node
 * (HSDP's replicate groups: one GPU per node) run side by side with their
 * twins on the other GPUs, so each gets its share of the NICs. */
static double
ring_bus_bandwidth(const struct topo *t, const struct coll_group *g)
{
    double intra = t->intra_Bps * intra_link_efficiency(t);
    if (g->nodes <= 1)
        return intra;
    double node_net = t->nics_per_node * t->nic_Bps * NET_LINK_EFFICIENCY;
    double share = node_net * g->ranks_per_node / t->gpus_per_node;
    return g->ranks_per_node > 1 && intra < share ? intra : share;
}

void
coll_estimate(const struct topo *t, enum coll_op op,
              const struct coll_group *g, double nbytes,
              struct coll_result *r)
{
    r->time_s = 0;
    r->proto = PROTO_SIMPLE;
    r->latency_s = 0;
    r->bus_Bps = 0;
    if (g->ranks <= 1 || nbytes <= 0)
        return;

    int n = g->ranks;
    /* Ring steps and the hops among them that cross nodes. */
    int nsteps = op == COLL_ALLREDUCE ? 2 * (n - 1) : n - 1;
    int ninter = g->nodes > 1
                     ? (op == COLL_ALLREDUCE ? 2 : 1) * (g->nodes - 1) : 0;
    /* busbw -> time: all-gather / reduce-scatter move (n-1)/n of the
     * buffer through every rank, all-reduce 2(n-1)/n (nccl-tests
     * doc/PERFORMANCE.md). */
    double factor = op == COLL_ALLREDUCE ? 2.0 * (n - 1) / n
                                         : (double)(n - 1) / n;
    double bus = ring_bus_bandwidth(t, g);
    int arch = t->arch;
    int nidx = g->nodes <= 1 ? 0 : g->nodes == 2 ? 1 : 2;

    double best = INFINITY;
    for (int p = 0; p < PROTO_COUNT; p++) {
        double bw = bus;
        if (p == PROTO_LL) {
            double cap = ll_max_bw_GBps[arch][nidx] * 1e9;
            bw = fmin(cap, LL_BW_FACTOR * bus);
        } else if (p == PROTO_LL128) {
            /* LL128 needs NVLink-class paths (disabled over PCIe). */
            if (t->fabric == FABRIC_PCIE || t->arch < GPU_ARCH_AMPERE)
                continue;
            bw = LL128_BW_FACTOR * bus;
        }
        const double *hw = t->fabric == FABRIC_PCIE ? ring_pci_lat_us
                                                    : ring_nvlink_lat_us;
        double intra_lat = fmax(hw[p], t->intra_latency_ns / 1e3);
        if (g->nodes > 1)
            intra_lat = fmax(intra_lat, NET_OVERHEAD_US
                                            * (p == PROTO_SIMPLE ? 3 : 1));
        double inter_lat = fmax(ring_net_lat_us[p],
                                t->inter_latency_ns / 1e3);
        double lat_us = ring_base_lat_us[p] + (nsteps - ninter) * intra_lat
                        + ninter * inter_lat;
        double time = lat_us * 1e-6 + nbytes * factor / bw;
        if (time < best) {
            best = time;
            r->time_s = time;
            r->proto = p;
            r->latency_s = lat_us * 1e-6;
            r->bus_Bps = bw;
        }
    }
}
