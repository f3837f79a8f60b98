/*
 * coll.c: NCCL's tuning model over the cluster's bottleneck links (see
 * coll.h).
 *
 * Constants are NCCL's defaults at master (src/graph/tuning.cc,
 * ncclTunerConstantsDefaults; src/graph/topo.h), quoted in
 * doc/fsdp-semantics.md §14.3; protocol order everywhere LL, LL128, Simple.
 * Where NCCL's estimate differs from the hardware (NCCL credits a 2-node
 * ring with intra-node speed), the physical bottleneck is used, so the
 * time is what the collective takes, and the choice is NCCL's.
 */
#include "coll.h"
#include "nccl_tuner_aws.h"
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
/* What NVLS delivers, as against NCCL's estimate: NCCL's maintainers
 * quote about 480 GB/s busbw for NVLS all-reduce on H100 NVLink and about
 * 370 for all-gather / reduce-scatter, the Ring figure (NVIDIA/nccl-tests
 * issue #212).  All-gather and reduce-scatter over NVLS are bound by the
 * GPU's own NVLink at NCCL's credited 20.6/25 of the wire rate
 * (450 x 0.824 = 371 GB/s, the quote); all-reduce would reach
 * 2(n-1)/n x 371 = 649 GB/s if the switch's multicast reduction were
 * free, and reaches 480: the multimem.ld_reduce/st round trip runs at
 * 480 / 649 = 0.74 of the link.  Blackwell: NCCL's own 0.74 is kept
 * (no published figure here). */
static const double nvls_ar_efficiency[4] = {0, 0, 0.74, 0.74};

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
/* Socket transport (estimates, see coll_estimate). */
#define SOCKET_STREAM_BPS 3e9
#define SOCKET_STEP_US 10.0

double
coll_busbw_factor(enum coll_op op, int ranks)
{
    if (ranks <= 1)
        return 0;
    return op == COLL_ALLREDUCE ? 2.0 * (ranks - 1) / ranks
                                : (double)(ranks - 1) / ranks;
}

/* NCCL's search over the network (src/graph/search.cc ncclTopoCompute)
 * for a communicator with GPUS of each node's GPUs, one of the nodes seen
 * from inside: what its ring graph holds.  Units are NCCL's, GB/s. */
struct net_view {
    int gpus;           /* the communicator's GPUs in a node */
    int nics;           /* the NICs local to them */
    double nic;         /* one NIC's speed (topo.cc ncclTopoAddNet:
                           the plugin's speed in Mb/s / 8000; a group's
                           sum where the plugin groups NICs) */
    double pci;         /* a GPU's own PCIe link */
    double nvl;         /* a GPU's NVLink, all links together */
    int max_channels;   /* ringGraph->maxChannels = MAXCHANNELS / 2 */
};

/* The NICs of a node as NCCL's topology holds them: the network plugin
 * may present several as one device ([inter] plugin_nic_group). */
static int
nccl_nics(const struct topo *t)
{
    int n = t->nics_per_node / t->plugin_nic_group;
    return n < 1 ? 1 : n;
}

/* NCCL's credit for a GPU's own PCIe x16 link (topo.cc ncclTopoAddPci:
 * width x the lane rate of kvDictPciGen / 80): Gen3 12, Gen4 24, Gen5 48
 * GB/s; V100 is Gen3, A100 Gen4, H100 and newer Gen5. */
static double
nccl_gpu_pci_GBps(enum gpu_arch arch)
{
    return arch <= GPU_ARCH_VOLTA ? 12.0 : arch == GPU_ARCH_AMPERE ? 24.0
                                                                   : 48.0;
}

/* The speeds the search tries a channel at, fastest first (search.cc
 * speedArrayInter, sm90SpeedArrayInter, sm100SpeedArrayInter; 22.0 is in
 * the sm90 table from 2.19 to 2.25 only, the sm100 table is used from 2.25
 * and starts at 96 from 2.27). */
static int
inter_speeds(int arch, int version, const double **speeds)
{
    static const double sm80[] = {48, 30, 28, 24, 20, 18, 15, 12, 10, 9, 7,
                                  6, 5, 4, 3, 2.4, 1.2, 0.24, 0.12};
    static const double sm90[] = {48, 45, 42, 40, 30, 24, 20, 17.5, 15, 12,
                                  6, 3, 2.4, 1.2, 0.24, 0.12};
    static const double sm90_22[] = {48, 45, 42, 40, 30, 24, 22, 20, 17.5,
                                     15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12};
    static const double sm100[] = {96, 48, 45.1, 42, 40, 30, 24, 22, 20,
                                   17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12};
#define N_OF(a) ((int)(sizeof a / sizeof a[0]))
    if (arch < GPU_ARCH_HOPPER) {
        *speeds = sm80;
        return N_OF(sm80);
    }
    if (arch >= GPU_ARCH_BLACKWELL && version >= 227) {
        *speeds = sm100;
        return N_OF(sm100);
    }
    if (version >= 219 && version <= 225) {
        *speeds = sm90_22;
        return N_OF(sm90_22);
    }
    *speeds = sm90;
    return N_OF(sm90);
#undef N_OF
}

/* The first of the NS speeds SP (fastest first) at most BW, or the
 * slowest: where a search pass starts. */
static int
speed_at_most(const double *sp, int ns, double bw)
{
    int i = 0;
    while (i < ns - 1 && sp[i] > bw)
        i++;
    return i;
}

/* Channels of the ring graph at SPEED a channel: each channel enters the
 * node at one NIC and leaves it at one (ncclTopoSearchRecNet takes SPEED
 * off the first NIC's net.bw; ncclTopoFollowPath off every link of the
 * NIC-to-GPU and GPU-to-NIC paths, so a GPU's PCIe link carries one
 * channel's entry one way and one's exit the other), and crosses each
 * GPU's NVLink once when the node has more than one GPU. */
static int
ring_channels_at(const struct net_view *v, double speed)
{
    /* search.cc SUB_ROUND keeps three decimals: a tolerance, not a
     * rounding of the answer. */
    double eps = 1e-6;
    int c = v->nics * (int)floor(v->nic / speed + eps);
    int by_pci = v->gpus * (int)floor(v->pci / speed + eps);
    if (by_pci < c)
        c = by_pci;
    if (v->gpus > 1 && (int)floor(v->nvl / speed + eps) < c)
        c = (int)floor(v->nvl / speed + eps);
    return c < v->max_channels ? c : v->max_channels;
}

/* comm->nChannels NCCL builds for a communicator spanning nodes with
 * only some of each node's GPUs:
 *  - ncclTopoCompute (search.cc), pass 1: from the fastest speed a
 *    GPU-to-NIC path allows (system->maxBw, the path's narrowest link:
 *    the GPU's PCIe or the NIC) down, keeping the graph of most
 *    nChannels x speed (ncclTopoCompareGraphs: strictly more, so the
 *    faster of two equal ones), and going on down while the next speed is
 *    above 0.49 of the best one's, stopping at maxChannels (time -1);
 *  - ncclTopoDupChannels: doubles the channels at half the speed where
 *    the speed is at least 25 GB/s, except on sm_90 and newer below 50
 *    GB/s with more than 4 channels; pass 2 then tries faster speeds for
 *    at least as many channels (rings only);
 *  - the tree graph is searched for exactly the ring's channels (init.cc
 *    treeGraph->minChannels = maxChannels = ringGraph->nChannels) and a
 *    tree channel loads the NICs and PCIe no more than a ring channel, so
 *    comm->nChannels = min(tree, ring) is the ring's;
 *  - ncclTopoPostset (connect.cc): doubled ("Duplication should be
 *    complete now", up to MAXCHANNELS: 32 before 2.25, 64 from), and
 *    doubled again on sm_90 (from 2.25 sm_90 and newer) when the ring's
 *    speed is above 45 GB/s and fewer than 16 channels ("4 compute
 *    channels per search channel to reach peak BW on <8 PPN").
 * The NICs are those NCCL's search reaches from the communicator's GPUs:
 * the ones on their PCIe switches (ncclTopoSelectNets, ncclTopoGetLocal);
 * ncclTopoCompute raises the path type only up to PXN (through a peer
 * GPU of the communicator) once it has a graph, so a NIC behind the CPU
 * (PHB, SYS) is not used.  A communicator of every node's Nth GPU (an
 * HSDP or HYBRID_SHARD replicate group) has its GPUs on different
 * switches: it reaches the NICs NCCL sees (nccl_nics) over gpus_per_node
 * a GPU, or one where GPUs share a NIC, the node's at most.  (A DGX
 * A100's switches each hold two GPUs and two HDR NICs, both local to
 * either GPU; the
 * GPU's own Gen4 link, 24 GB/s, carries one channel at 24 whichever NIC
 * it takes, so one NIC a GPU counts the same.  On p4d and p4de
 * aws-ofi-nccl hands NCCL a topology file (topology/p4de-24xl-topo.xml)
 * whose links say 8 GT/s, 12 GB/s a GPU: with one 12.5 GB/s EFA a GPU
 * pair a channel runs at 12 either way, so the count is the same.)  Full
 * nodes and single
 * nodes keep default_channels' figures.  doc/fsdp-semantics.md §14.3. */
static int
partial_node_channels(const struct topo *t, const struct nccl_config *nc,
                      const struct coll_group *g, double nic_Bps,
                      double intra_GBps)
{
    int maxch = nc->version >= 225 ? 64 : 32;   /* MAXCHANNELS */
    int node_nics = nccl_nics(t);
    int per_gpu = node_nics / t->gpus_per_node;
    int nics = g->ranks_per_node * (per_gpu > 1 ? per_gpu : 1);
    struct net_view v = {
        g->ranks_per_node, nics < node_nics ? nics : node_nics,
        nic_Bps * t->plugin_nic_group / 1e9, nccl_gpu_pci_GBps(t->arch),
        intra_GBps, maxch / 2};
    const double *sp;
    int ns = inter_speeds(t->arch, nc->version, &sp);
    int i = speed_at_most(sp, ns, fmin(v.pci, v.nic));
    int n = 0;
    double bw = 0;
    for (;; i++) {
        int c = ring_channels_at(&v, sp[i]);
        if (c * sp[i] > n * bw) {
            n = c;
            bw = sp[i];
            if (n == v.max_channels)
                break;
        }
        if (i + 1 >= ns || (n > 0 && sp[i + 1] / bw <= 0.49))
            break;
    }
    if (n == 0)
        return 1;       /* "falling back to simple order": one channel */
    /* ncclTopoDupChannels (ccMin > 80: Hopper and newer). */
    if (bw >= 25.0
        && !(t->arch >= GPU_ARCH_HOPPER && bw < 50.0 && n > 4)) {
        int dup = 2 * n < v.max_channels ? 2 * n : v.max_channels;
        bw /= dup > n ? 2 : 1;
        n = dup;
        /* Pass 2: faster speeds for at least N channels. */
        int j = speed_at_most(sp, ns, bw);
        int min_n = n;
        double base = n * bw;
        for (j--; j >= 0; j--) {
            int c = ring_channels_at(&v, sp[j]);
            if (c >= min_n && c * sp[j] > base) {
                n = c;
                bw = sp[j];
                base = n * bw;
            }
        }
    }
    n = 2 * n < maxch ? 2 * n : maxch;
    bool sm90_rule = nc->version >= 225 ? t->arch >= GPU_ARCH_HOPPER
                                        : t->arch == GPU_ARCH_HOPPER;
    if (sm90_rule && bw > 45.0 && n < 16)
        n *= 2;
    return n;
}

/* comm->nChannels of a node of NVSwitch-connected Ampere (or older) GPUs
 * alone, with INTRA_GBPS of NCCL-credited NVLink a GPU (its links x
 * SM80_NVLINK_BW): ncclTopoCompute (search.cc) tries the ring at the
 * intra-node speeds (speedArrayIntra) from the fastest the GPU's links
 * allow, each channel taking that speed off every GPU's link to the
 * switch, and stops as soon as the channels cover the GPU's bandwidth
 * (nChannels x bw >= totalBw) or the next speed is at most 0.49 of the
 * best; ncclTopoDupChannels doubles the channels at half the speed (bw
 * >= 25), pass 2 tries faster speeds for as many, and ncclTopoPostset
 * doubles again (connect.cc, "Duplication should be complete now").  An
 * A100 (12 links, 240 GB/s): 6 x 40, then 12 x 20, then 24, as NCCL's
 * log of an HGX A100 shows ("Channel 23/24", nccl-tests issue 100). */
static int
nvswitch_node_channels(const struct nccl_config *nc, double intra_GBps)
{
    static const double sp[] = {40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3};
    const int ns = (int)(sizeof sp / sizeof sp[0]);
    int maxch = nc->version >= 225 ? 64 : 32;   /* MAXCHANNELS */
    double eps = 1e-6;                          /* search.cc SUB_ROUND */
#define CH_AT(speed) ((int)fmin(floor(intra_GBps / (speed) + eps), maxch / 2))
    int i = speed_at_most(sp, ns, intra_GBps);
    int n = 0;
    double bw = 0;
    for (;; i++) {
        int c = CH_AT(sp[i]);
        if (c * sp[i] > n * bw) {
            n = c;
            bw = sp[i];
        }
        if (n * bw >= intra_GBps - eps || n == maxch / 2 || i + 1 >= ns
            || (n > 0 && sp[i + 1] / bw <= 0.49))
            break;
    }
    if (n == 0)
        return 1;
    if (bw >= 25.0) {
        int dup = 2 * n < maxch / 2 ? 2 * n : maxch / 2;
        bw /= dup > n ? 2 : 1;
        n = dup;
        for (int j = speed_at_most(sp, ns, bw) - 1; j >= 0; j--)
            if (CH_AT(sp[j]) >= n)
                bw = sp[j];
    }
#undef CH_AT
    return 2 * n < maxch ? 2 * n : maxch;
}

/* Channels NCCL opens on this kind of system: on an Ampere NVSwitch node
 * nvswitch_node_channels' (24 on an A100), 32 on H100 and newer, few over
 * PCIe, and across nodes with every GPU of the node two per NIC NCCL sees
 * (a p5's 32 EFA are 8 devices of the plugin's: 16 channels).  A
 * communicator with only some of each node's GPUs over NVLink reaches only
 * the NICs near them, and NCCL's search gives what partial_node_channels
 * derives.  NIC_BPS is the NIC's own speed (what the plugin reports to
 * NCCL), INTRA_GBPS NCCL's credit for a GPU's NVLink. */
static int
default_channels(const struct topo *t, const struct nccl_config *nc,
                 const struct coll_group *g, double nic_Bps,
                 double intra_GBps)
{
    int ch;
    if (t->fabric == FABRIC_PCIE)
        ch = 2;
    else if (g->nodes > 1 && g->ranks_per_node < t->gpus_per_node)
        return partial_node_channels(t, nc, g, nic_Bps, intra_GBps);
    else if (t->fabric == FABRIC_NVLINK)
        ch = 4;
    else if (t->arch >= GPU_ARCH_HOPPER)
        ch = 32;
    else
        ch = nvswitch_node_channels(nc, intra_GBps);
    if (g->nodes > 1 && 2 * nccl_nics(t) < ch)
        ch = 2 * nccl_nics(t);
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
    bool plugin_tuner;          /* the network plugin's tuner is loaded */
};

/* Does NCCL build its trees in the simple pattern, all of a node's
 * network traffic through one GPU (NCCL_TOPO_PATTERN_TREE), which
 * tuning.cc charges 0.85 of the tree's bandwidth for (from 2.19;
 * comm->maxTreePattern from 2.26)?  init.cc starts the tree search from
 * NCCL_TOPO_PATTERN_BALANCED_TREE; search.cc ncclTopoCompute falls back to
 * the simple pattern only on Hopper and newer ("Try a simpler tree",
 * ccMin >= 90; taken here as found there) or with one GPU a node (every
 * pattern but the ring becomes TREE).  NCCL 2.18 has no such factor. */
static bool
tree_pattern_is_simple(const struct ctx *x)
{
    if (x->nc->version < 219)
        return false;
    return x->g->ranks_per_node == 1 || x->arch >= GPU_ARCH_HOPPER;
}

/* How many times a node's NICs carry an all-reduce's buffer each way in
 * NCCL's double binary tree (trees.cc ncclGetDtree): the buffer is split
 * between the tree and its mirror (or its shift by one rank), and every
 * node is a leaf in one, sending and receiving half the buffer once,
 * and an inner node in the other, sending half up to its parent and
 * half down to each of its children (and receiving as much).  Two
 * nodes: each is the other's only link, 1 pass; three: a chain, an
 * inner node with one child, 1.5; four and more: some inner node has
 * two children, 2 passes, the same as a ring's 2(n-1)/n. */
static double
dtree_nic_passes(int nodes)
{
    return nodes <= 2 ? 1.0 : nodes == 3 ? 1.5 : 2.0;
}

/* A tree all-reduce's bus bandwidth B after NCCL's factors and caps
 * (tuning.cc ncclTopoTuneModel): every tree all-reduce gets 0.92 and the
 * per-channel tree cap first, whatever the protocol; LL and LL128 then
 * take their own factor and cap on top; the simple pattern its 0.85. */
static double
tree_protocol_bus(const struct ctx *x, int p, double b, double scale)
{
    int multi = x->g->nodes > 1;
    b *= fmin(scale, 1.0);
    b = fmin(TREE_FACTOR * b,
             x->ch * per_ch_max_tree_bw[x->arch][x->nidx] * 1e9);
    if (p == PROTO_LL)
        b = fmin(b / 3.8, ll_max_bw[x->arch][x->nidx] * 1e9);
    else if (p == PROTO_LL128)
        b = fmin(b * (multi ? 120.0 / 128.0 : 7.0 / 9.0),
                 x->ch * per_ch_max_tree_ll128_bw[x->arch][x->nidx] * 1e9);
    if (tree_pattern_is_simple(x))
        b *= TREE_PATTERN_FACTOR;
    return b;
}

/* NCCL's tuning latency of one network step (tuning.cc
 * ncclTopoTuneModel interLat): its hwLatencies for the network (from 2.23
 * the Tree's where each node has one rank: "With ppn=1 latencies are
 * fully exposed"), plus the latency the network plugin reports
 * (graph->latencyInter, from ncclNetProperties_t.latency: 0 for NCCL's
 * own IB and socket transports), counted twice for Simple ("Also add the
 * flush extra latency").  Only the choice of algorithm uses it; the data
 * path pays the link's own latency (hop_lat_us). */
static double
tuning_inter_lat_us(const struct ctx *x, int a, int p)
{
    int la = x->nc->version >= 223 && x->g->ranks_per_node == 1
                 ? NCCL_ALGO_TREE : a;
    return hw_lat_us[HW_NET][la][p]
           + x->t->plugin_latency_ns / 1e3 * (p == PROTO_SIMPLE ? 2 : 1);
}

/* Bus bandwidth (bytes/s) and latency (us) of (algorithm, protocol), or
 * bus 0 when NCCL would not use it. */
static void
algo_cost(const struct ctx *x, int a, int p, double *bus, double *lat_us,
          double *path_bus)
{
    const struct topo *t = x->t;
    const struct coll_group *g = x->g;
    int n = g->ranks, N = g->nodes, ppn = g->ranks_per_node;
    int multi = N > 1;
    int intra_hw = t->fabric == FABRIC_PCIE ? HW_PCI : HW_NVLINK;
    double scale = (double)x->ch / x->ch_default;   /* NCCL_*_NCHANNELS */
    *bus = 0;
    *lat_us = 0;
    *path_bus = -1;     /* -1: the data path uses *bus */

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
        double inter_lat = tuning_inter_lat_us(x, a, p);
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
        /* What the buffer costs each node's NICs, each way, in a double
         * binary tree (dtree_nic_passes): the data path's bandwidth.
         * NCCL's own estimate (tuning.cc ncclTopoTuneModel) takes the
         * graph's bwIntra at two nodes or fewer, where the tree crosses
         * the network once each way, and bwInter (the NICs' share) above,
         * where its algorithm bandwidth is half the bus bandwidth: busBw
         * x 0.5.  In one node it is a chain over NVLink. */
        double lim = ppn > 1 ? x->intra : INFINITY;
        double path = multi ? 2 * fmin(x->share / dtree_nic_passes(N), lim)
                            : x->intra;
        double b = !multi ? x->intra
                   : N <= 2 ? 2 * fmin(x->share, lim)
                            : fmin(x->share, lim);
        /* The correction stands in for the pipeline fill, which the data
         * path derives itself: it gets the bandwidth before it. */
        *path_bus = tree_protocol_bus(x, p, path, scale);
        b = tree_protocol_bus(x, p, b, scale);
        int log_size = (int)floor(log2(fmax(x->nbytes / 64, 1)));
        if (log_size < 22)
            b *= tree_correction[p][log_size];
        double intra_lat = hw_lat_us[intra_hw][a][p];
        double inter_lat = tuning_inter_lat_us(x, a, p);
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
            || nvls_efficiency[x->arch] <= 0 || ppn < 2 || ppn > 32
            || x->nc->nvls_enable == 0)
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
        /* The data path's algorithm bandwidth: all-gather and
         * reduce-scatter move (ppn-1)/ppn of the buffer through each
         * GPU's link, so algbw = link x ppn/(ppn-1); all-reduce sends the
         * buffer into the switch and takes it back once, at
         * nvls_ar_efficiency of the link.  Across nodes (NVLS Tree) the
         * node's NICs carry the buffer once each way. */
        double pa = x->op == COLL_ALLREDUCE
                        ? x->intra * nvls_ar_efficiency[x->arch]
                        : x->intra * ppn / (ppn - 1.0);
        if (multi)
            pa = fmin(pa, x->share);
        *path_bus = pa * fmin(scale, 1.0);
        *lat_us = hw_lat_us[HW_NVLINK][a][p]
                  + (multi ? tuning_inter_lat_us(x, a, p) : 0);
        return;
    }
    if (a == NCCL_ALGO_PAT) {
        /* One GPU per node, host networking, Simple only. */
        if (p != PROTO_SIMPLE || x->op == COLL_ALLREDUCE || !multi
            || N != n)
            return;
        *bus = x->share * PAT_FACTOR * fmin(scale, 1.0);
        double inter_lat = tuning_inter_lat_us(x, a, p);
        *lat_us = base_lat_us[a][p] + log2(N) * inter_lat / 3.5 + 2.8 * n;
        return;
    }
    if (a == NCCL_ALGO_COLLNET_DIRECT || a == NCCL_ALGO_COLLNET_CHAIN) {
        /* In-network reduction (SHARP) through the CollNet plugin:
         * Simple only, across nodes, NVSwitch nodes of at most 8 GPUs;
         * all-gather and reduce-scatter only through CollNet Direct with
         * one NIC per GPU (doc/fsdp-semantics.md §14.1; the version rules are
         * nccl_algo_exists()'s).  The switch reduces (all-reduce,
         * reduce-scatter) or multicasts (all-gather), so each node's NICs
         * carry the buffer once instead of a ring's 2(N-1)/N, at NCCL's
         * 0.9 of the network bandwidth (tuning.cc: CollNet Direct
         * "ppn * min(bwIntra, 0.9 * bwInter)"); inside the node the data
         * is split over the GPUs' NVLink (Direct) or passed along a chain
         * (Chain), bounded by one GPU's NVLink bandwidth.  The value is
         * algorithm bandwidth (algo_time uses it as is). */
        if (!t->sharp || !x->nc->collnet_enable || p != PROTO_SIMPLE
            || !multi
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
        double inter_lat = tuning_inter_lat_us(x, a, p);
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

/* ---- The data path -------------------------------------------------
 * What the chosen (algorithm, protocol) takes on the hardware, from the
 * way NCCL moves the bytes rather than from its tuning estimate:
 *  - channels and threads: topoGetAlgoInfo (src/enqueue.cc) drops
 *    channels, then halves threads, while nBytes < nc x nt x threshold
 *    (thresholds src/include/comm.h: LL 8 (x nRanks for Ring), LL128 8,
 *    Simple 64 bytes a thread); NVLS always runs nvlsChannels;
 *  - chunks: calcCollChunking (src/enqueue.cc): stepSize = buffSize /
 *    NCCL_STEPS (8, src/include/device.h); Ring Simple chunks of
 *    chunkSteps = 4 steps cut in 2 slices (ALLREDUCE_CHUNKSTEPS /
 *    SLICESTEPS, src/include/collectives.h), and prims_simple.h waits on
 *    and posts a flag for every slice, even empty ones; LL carries 8 data
 *    bytes per 16-byte line (chunk = stepSize / 2), LL128 120 of 128
 *    (chunk = stepSize x 15 / 16), both one flag wait a step; Tree LL128
 *    and NVLS shrink their chunks for small sizes by the rules there;
 *    buffer sizes src/init.cc (DEFAULT_BUFFSIZE 4 MiB, LL 8 lines x 512
 *    threads x 8 steps x 16 B, LL128 120 x 640 x 8 x 8 B);
 *  - per-step latency: NCCL's hwLatencies per transport (tuning.cc) or
 *    the topology's own link latency, whichever is larger; a network hop
 *    adds the topology's latency (twice for Simple where NCCL flushes the
 *    receive, as NCCL's interLat does everywhere);
 *  - launch: NCCL's baseLatencies (kernel launch, work fetch, setup).
 * A ring's ranks run in lockstep: each slice costs its rank a flag wait
 * and post, and a loop's 2(n-1) (all-reduce) or n-1 dependent steps pay
 * the network's latency where they cross a node boundary; later loops
 * pipeline behind the first, held back only by credits.  A tree or NVLS
 * pipeline pays the first chunk's trip over every hop (fill), then one
 * chunk per bottleneck stage time, or per credit cycle over a slow hop. */
#define LL_BUFFSIZE (8.0 * 512 * 8 * 16)
#define LL128_BUFFSIZE (120.0 * 640 * 8 * 8)
#define NVLS_CHUNKSIZE 131072.0     /* NCCL_NVLS_CHUNKSIZE default */

/* The NCCL settings a network plugin puts in the environment where the
 * user has not (topo.h plugin_*): NCCL loads the plugin at every
 * communicator's init, one node or many, before it reads them. */
static void
plugin_config(const struct topo *t, const struct nccl_config *nc,
              struct nccl_config *out)
{
    *out = *nc;
    if (!nc->buffsize_given && t->plugin_buffsize > 0)
        out->buffsize = (long)t->plugin_buffsize;
    /* setenv("NCCL_PROTO", "simple", 0): NCCL then sees the variable as
     * the user's (its refusals name it). */
    if (!nc->proto_given && t->plugin_simple_only) {
        for (int p = 0; p < PROTO_COUNT; p++)
            out->proto_enable[p] = p == PROTO_SIMPLE;
        out->proto_given = true;
        snprintf(out->proto_text, sizeof out->proto_text, "simple");
    }
}

/* NVLS's step (bytes): from 2.21 NCCL_NVLS_CHUNKSIZE (128 KiB; the
 * plugin's where it sets one), the step of NVLS's own buffers
 * (transport/nvls.cc nvlsStepSize = comm->nvlsChunkSize); before, NVLS
 * connections used the Simple buffers, NCCL_BUFFSIZE / NCCL_STEPS
 * (nvls.cc buffSize = comm->buffSizes[NCCL_PROTO_SIMPLE]). */
static double
nvls_step_bytes(const struct topo *t, const struct nccl_config *nc)
{
    if (nc->version < 221)
        return nc->buffsize / 8.0;
    return t->plugin_nvls_chunksize > 0 ? t->plugin_nvls_chunksize
                                        : NVLS_CHUNKSIZE;
}

/* The chunk NVLS and NVLS Tree start from before shrinking it for small
 * sizes (enqueue.cc calcCollChunking).  NVLS: the Simple step
 * (NCCL_BUFFSIZE / 8) capped at 128 KiB, from 2.21 at comm->nvlsChunkSize.
 * NVLS Tree: the Simple step, from 2.21 comm->nvlsChunkSize; from 2.19
 * at most 64 KiB on 4 nodes or more, which from 2.20
 * NCCL_NVLSTREE_MAX_CHUNKSIZE replaces (the plugin's, where it sets it). */
static double
nvls_start_chunk(const struct topo *t, const struct nccl_config *nc,
                 bool tree, int nodes)
{
    double step = nc->buffsize / 8.0;
    if (!tree)
        return fmin(step, nc->version < 221 ? NVLS_CHUNKSIZE
                                            : nvls_step_bytes(t, nc));
    double chunk = nc->version < 221 ? step : nvls_step_bytes(t, nc);
    if (nc->version >= 220 && t->plugin_nvls_chunksize > 0)
        chunk = fmin(chunk, t->plugin_nvls_chunksize);
    else if (nc->version >= 219 && nodes >= 4)
        chunk = fmin(chunk, 65536);
    return chunk;
}

/* GPUDirect RDMA: NCCL uses it when the GPU-NIC path is no longer than
 * NCCL_NET_GDR_LEVEL (src/graph/paths.cc ncclTopoCheckGdr, default PXB).
 * The built-in nodes put each NIC under a PCIe switch with its GPUs
 * (DGX and EC2 P4/P5 block diagrams), a PXB path. */
static bool
net_gdr(const struct nccl_config *nc)
{
    return nc->net_gdr_level < 0 || nc->net_gdr_level >= PATH_LEVEL_PXB;
}

static double
hop_lat_us(const struct ctx *x, int a, int p, bool net)
{
    const struct topo *t = x->t;
    int ihw = t->fabric == FABRIC_PCIE ? HW_PCI : HW_NVLINK;
    int la = a == NCCL_ALGO_TREE ? NCCL_ALGO_TREE : NCCL_ALGO_RING;
    if (net) {
        if (la == NCCL_ALGO_RING && x->g->ranks_per_node == 1)
            la = NCCL_ALGO_TREE;
        /* One message's latency over the link (the topology's [inter]
         * latency; what the plugin reports to NCCL steers only its
         * choice, tuning_inter_lat_us).  Simple pays it a second time
         * for the receive-side flush, a read of the received buffer the
         * receiving proxy posts to the NIC (net.cc recvProxyProgress
         * iflush; aws-ofi-nccl sendrecv_recv_comm_flush: fi_read), which
         * NCCL's interLat counts always and the data path pays only
         * where NCCL flushes: GPUDirect receives on
         * Ampere and older (src/graph/paths.cc ncclTopoNeedFlush: "Flush
         * is required on Ampere and earlier"; NCCL_NET_FORCE_FLUSH 0). */
        bool flush = p == PROTO_SIMPLE && t->arch < GPU_ARCH_HOPPER
                     && net_gdr(x->nc);
        return hw_lat_us[HW_NET][la][p]
               + t->inter_latency_ns / 1e3 * (flush ? 2 : 1);
    }
    return fmax(hw_lat_us[ihw][la][p], t->intra_latency_ns / 1e3);
}

/* Waiting for credits in a pipeline of CHUNKS chunks over a hop that
 * holds WINDOW of them in flight (NCCL_STEPS, 8, src/include/device.h,
 * slots of one step; Ring Simple's 2-step slices fill 2 each): chunk
 * i + WINDOW can leave only when chunk i's slot is free again, a cycle of
 * the chunk's transfer plus one latency for the data and one for the
 * credit coming back (over the network the sender's slot frees when isend
 * completes, which needs the receiver's acknowledgement: net.cc
 * sendProxyProgress "transmitted < done + NCCL_STEPS").  The first WINDOW
 * chunks never wait; each later group waits what the cycle exceeds WINDOW
 * transfers by. */
static double
credit_wait(double chunks, double transfer_s, double hop_lat_s, int window)
{
    double groups = floor((chunks - 1) / window);
    return groups * fmax(0, transfer_s + 2 * hop_lat_s - window * transfer_s);
}

/* The unit NCCL rounds a chunk down to (device.h ncclProtoGrainSize):
 * an LL line, a warp's LL128 lines (32 x 8 / 16 x 15 x 8 B), 512 B. */
static double
proto_grain_bytes(int p)
{
    return p == PROTO_LL ? 16 : p == PROTO_LL128 ? 1920 : 512;
}

/* Threads of a tree kernel's block: from 2.22 every Tree collective
 * runs NCCL_MAX_NTHREADS, 640, whatever topoGetAlgoInfo reduced them to
 * ("Tree now uses all threads always", src/enqueue.cc); before, the
 * reduced count, with 4 warps more for Simple's split. */
static int
tree_block_threads(int version, int p, int nt)
{
    if (version >= 222)
        return 640;
    return p == PROTO_SIMPLE ? nt + 4 * 32 : nt;
}

static void
coll_path(const struct ctx *x, int a, int p, double bus, double tuning_s,
          struct coll_result *r)
{
    const struct coll_group *g = x->g;
    int n = g->ranks, N = g->nodes, ppn = g->ranks_per_node;
    bool multi = N > 1;
    double nb = x->nbytes;
    double launch = base_lat_us[a <= NCCL_ALGO_RING ? a : NCCL_ALGO_RING][p];
    r->syncs = 1;
    if (a == NCCL_ALGO_RING || a == NCCL_ALGO_TREE) {
        int nc = x->ch;
        int nt = x->nc->nthreads > 0 && p != PROTO_LL128 ? x->nc->nthreads
                 : p == PROTO_LL128 ? 640
                 : (p == PROTO_SIMPLE && a == NCCL_ALGO_RING
                    && x->t->fabric == FABRIC_PCIE) ? 256 : 512;
        double thr = p == PROTO_SIMPLE ? 64 : 8;
        if (a == NCCL_ALGO_RING && p == PROTO_LL)
            thr *= n;
        while (nb < (double)nc * nt * thr && nc >= 2)
            nc--;
        while (nb < (double)nc * nt * thr && nt % 128 == 0)
            nt /= 2;
        r->channels = nc;
        r->nthreads = nt;
        double step = p == PROTO_SIMPLE ? x->nc->buffsize / 8.0
                      : p == PROTO_LL ? LL_BUFFSIZE / 8 : LL128_BUFFSIZE / 8;
        double chunk = p == PROTO_LL ? step / 2
                       : p == PROTO_LL128 ? step * 15 / 16 : step;
        const double chunk0 = chunk;    /* the buffer's ceiling */
        /* bus is NCCL-style bus bandwidth over x->ch channels. */
        double per_ch = bus / x->ch;
        if (a == NCCL_ALGO_RING) {
            if (p == PROTO_SIMPLE) {
                chunk = step * 4;
                r->syncs = 2;
            }
            int D = x->op == COLL_ALLREDUCE ? 2 * (n - 1) : n - 1;
            double P = nb / ((double)nc * n);
            double loops = fmax(1, ceil(P / chunk));
            double c = P / loops;
            /* Every slice costs its rank a flag wait, a fence and a flag
             * post (prims_simple.h waitPeer / postPeer; LL and LL128 one
             * a step), serial with the copy on the same threads: the
             * intra-node hop latency, and across nodes at least NCCL's
             * net overhead (tuning.cc intraLat = max(intraLat,
             * netOverhead), x3 for Simple).  With one GPU a node every
             * hop is a network hop and NCCL's network latency is the
             * rank's own cost. */
            double o = multi && ppn == 1
                           ? hw_lat_us[HW_NET][NCCL_ALGO_TREE][p]
                           : hop_lat_us(x, a, p, false);
            if (multi)
                o = fmax(o, NET_OVERHEAD_US * (p == PROTO_SIMPLE ? 3 : 1));
            o *= 1e-6;
            /* The network's own latency is not the rank's work: it
             * delays the data.  The ranks run in lockstep, so one loop
             * ends after the longest chain of D dependent steps, which
             * crosses the ring's network links (one per node) as often
             * as D consecutive links can: ceil(D / ppn) times. */
            double Ln = multi ? hop_lat_us(x, a, p, true) * 1e-6 : 0;
            int k = !multi ? 0 : ppn == 1 ? D : (D + ppn - 1) / ppn;
            double slices = D * loops * r->syncs;
            double ts = c / r->syncs / per_ch;
            r->hops = D;
            r->net_hops = k;
            r->net_lat_s = Ln;
            r->loops = (int)fmin(loops, 1e9);
            r->chunk_bytes = c;
            r->hop_lat_s = o;
            r->chan_Bps = per_ch;
            r->launch_s = launch * 1e-6;
            r->bw_s = D * loops * c / per_ch;
            r->fill_s = D * r->syncs * o + k * Ln;
            /* Later loops pipeline behind the first: each slice still
             * costs its sync, and over the network a link holds
             * NCCL_STEPS / sliceSteps slices in flight (4 for Simple, 8
             * for LL and LL128), so a slow network stalls the ring for
             * credits (credit_wait), as far as the sender is not already
             * waiting for its data behind the fill's network hops. */
            r->steplat_s = (loops - 1) * D * r->syncs * o;
            if (multi)
                r->steplat_s += fmax(0, credit_wait(slices, ts + o, Ln,
                                                    p == PROTO_SIMPLE ? 4
                                                                      : 8)
                                            - k * Ln);
        } else {
            /* Tree all-reduce: NCCL's algbw is half its busBw. */
            double alg_ch = 0.5 * bus / x->ch;
            r->nthreads = tree_block_threads(x->nc->version, p, nt);
            double C = nb / nc;
            /* NCCL 2.19 and older cut a Simple tree all-reduce's chunks
             * to fill the tree's depth (enqueue.cc computeColl, "Optimize
             * chunkSize / nSteps", with connect.cc's depth nRanks/nNodes
             * - 1 + log2i(nNodes)); 2.20 dropped the rule. */
            if (p == PROTO_SIMPLE && x->nc->version < 220) {
                int d = ppn - 1 + (int)floor(log2(N));
                while (floor(C / chunk) < d * 8 && chunk > 131072)
                    chunk /= 2;
                while (floor(C / chunk) < d * 4 && chunk > 65536)
                    chunk /= 2;
                while (floor(C / chunk) < d && chunk > 32768)
                    chunk /= 2;
            }
            if (p == PROTO_LL128) {
                double steps = 1 + floor(log2(N)) + 0.1 * ppn;
                while (floor(C / chunk) < steps * 64 / ppn && chunk > 131072)
                    chunk /= 2;
                while (floor(C / chunk) < steps * 16 / ppn && chunk > 32768)
                    chunk /= 2;
            }
            /* The network plugin's tuner may set the chunk instead
             * (calcCollChunking asks getChunkSize after its own rules),
             * at most the buffer's step and in whole grains of the
             * protocol. */
            double tuned;
            if (x->plugin_tuner
                && aws_tuner_chunk_bytes(x->t->plugin_tuner, x->op, nb, n, N,
                                         a, p, &tuned) == 1) {
                double grain = proto_grain_bytes(p);
                chunk = floor(fmin(tuned, chunk0) / grain) * grain;
            } else {
                /* calcCollChunking: "align chunkSize to multiple
                 * grainSize", after the shrinking above. */
                double grain = proto_grain_bytes(p);
                chunk = floor(chunk / grain) * grain;
            }
            double M = fmax(1, ceil(C / chunk));
            double c = C / M;
            int depth = multi ? (int)ceil(log2(N)) : 0;
            int hi = 2 * (ppn - 1), hn = 2 * depth;
            double Li = hop_lat_us(x, a, p, false) * 1e-6;
            double Ln = hop_lat_us(x, a, p, true) * 1e-6;
            double intra_ch = multi ? alg_ch * fmax(1, x->intra / x->share)
                                    : alg_ch;
            double Lmax = hn ? fmax(Li, Ln) : Li;
            r->hops = hi + hn;
            r->loops = (int)fmin(M, 1e9);
            r->chunk_bytes = c;
            r->hop_lat_s = Lmax;
            r->chan_Bps = alg_ch;
            r->launch_s = launch * 1e-6;
            /* The first chunk's way through the tree.  A Simple hop is
             * store-and-forward: the receiver waits for the whole slice's
             * flag before it copies it on (prims_simple.h waitPeer /
             * postPeer).  LL and LL128 pass each line on as it lands: a
             * thread (LL, 16-byte lines) or a warp (LL128, 128-byte
             * lines) polls its line's flag, reduces it and stores it to
             * the next peer at once (prims_ll.h LLGenericOp readLL /
             * storeLL, prims_ll128.h recvReduceSendCopy), so inside a
             * node the chunk streams through the hops and each adds only
             * its latency.  A network hop is a whole step the proxy sends
             * once the GPU has posted it (net.cc sendProxyProgress waits
             * on the step's tail), store-and-forward for every protocol.
             * bw_s counts one chunk's transfer already. */
            double intra_fill = p == PROTO_SIMPLE ? c / intra_ch + Li : Li;
            r->fill_s = hi * intra_fill + hn * (c / alg_ch + Ln)
                        - (p == PROTO_SIMPLE || hn > 0 ? c / alg_ch : 0);
            r->bw_s = M * c / alg_ch;
            /* After the fill a hop keeps up to NCCL_STEPS chunks in
             * flight (one step each): a slot is free again only when the
             * receiver has consumed the chunk and its credit is back at
             * the sender (prims_ll128.h / prims_simple.h wait on the
             * peer's head; over the network net.cc recvProxyProgress
             * re-posts the receive for a slot the GPU freed, which
             * aws-ofi-nccl's RDMA protocol turns into a control message
             * to the sender).  A slot's cycle is the chunk's transfer plus
             * the latency there and back (credit_wait). */
            r->steplat_s = credit_wait(M, c / alg_ch, Lmax, 8);
        }
        r->time_s = r->launch_s + r->fill_s + r->bw_s + r->steplat_s;
        return;
    }
    if (a == NCCL_ALGO_NVLS || a == NCCL_ALGO_NVLS_TREE) {
        /* bus here is the data path's algorithm bandwidth. */
        int nc = NVLS_CHANNELS, heads = ppn;
        double ops = (double)nc * heads;
        double chunk = nvls_start_chunk(x->t, x->nc, a == NCCL_ALGO_NVLS_TREE,
                                        N);
        if (a == NCCL_ALGO_NVLS) {
            if (nb < 64 * ops * chunk && chunk > 65536) chunk = 65536;
            if (nb < 8 * ops * chunk && chunk > 32768) chunk = 32768;
            if (nb < 2 * ops * chunk && chunk > 16384) chunk = 16384;
        } else {
            if (nb < 32 * ops * chunk && chunk > 262144) chunk = 262144;
            if (nb < 16 * ops * chunk && chunk > 131072) chunk = 131072;
            if (nb < 4 * ops * chunk && chunk > 65536) chunk = 65536;
            if (nb < 1 * ops * chunk && chunk > 32768) chunk = 32768;
        }
        double P = nb / ops, M = fmax(1, ceil(P / chunk)), c = P / M;
        double op_Bps = bus / ops;
        double Li = hop_lat_us(x, NCCL_ALGO_RING, PROTO_SIMPLE, false) * 1e-6;
        double Ln = hop_lat_us(x, NCCL_ALGO_TREE, PROTO_SIMPLE, true) * 1e-6;
        int hn = multi ? 2 * (int)ceil(log2(N)) : 0;
        r->channels = nc;
        r->nthreads = 640;
        r->hops = 2 + hn;
        r->loops = (int)fmin(M, 1e9);
        r->chunk_bytes = c;
        r->hop_lat_s = hn ? fmax(Li, Ln) : Li;
        r->chan_Bps = op_Bps;
        r->launch_s = base_lat_us[NCCL_ALGO_RING][PROTO_SIMPLE] * 1e-6;
        /* The first chunk's trip into the switch and back out is no
         * NVLink P2P hop: every GPU stores to or loads-and-reduces from
         * the multicast address and the ranks meet on flags before the
         * next step.  NCCL charges NVLS 25 us for it
         * (tuning.cc hwLatencies[NVLINK][NVLS and NVLS_TREE][Simple]):
         * the whole of NVLS's latency, launch included (latencies =
         * intraLat, with no baseLatency), and on top of baseLatency for
         * NVLS Tree.  Two P2P hops are the floor. */
        double nvls_lat = hw_lat_us[HW_NVLINK][a][PROTO_SIMPLE] * 1e-6;
        double switch_s = a == NCCL_ALGO_NVLS
                              ? fmax(nvls_lat - r->launch_s, 2 * Li)
                              : fmax(nvls_lat, 2 * Li);
        r->fill_s = switch_s + hn * Ln + (r->hops - 1) * c / op_Bps;
        r->bw_s = M * c / op_Bps;
        r->steplat_s = credit_wait(M, c / op_Bps, r->hop_lat_s, 8);
        r->time_s = r->launch_s + r->fill_s + r->bw_s + r->steplat_s;
        return;
    }
    /* PAT and CollNet: NCCL's estimate (latency + bytes / bandwidth). */
    r->channels = x->ch;
    r->launch_s = r->latency_s;
    r->bw_s = tuning_s - r->latency_s;
    r->time_s = tuning_s;
}

#define NVLS_MEM_ALIGN (2.0 * 1024 * 1024)

/* The tuner plugin API aws-ofi-nccl still exports, oldest first:
 * ncclTunerPlugin_v2 (NCCL 2.21.5), which sets the algorithm and protocol
 * itself and stands aside when NCCL_ALGO or NCCL_PROTO is set
 * (nccl_ofi_tuner_init_v2), and from ncclTunerPlugin_v3 (NCCL 2.22.3)
 * NCCL's cost table, where what the user filtered out or NCCL cannot run
 * is marked ignored and the tuner passes over it (src/tuner/
 * nccl_ofi_tuner.cpp). */
#define TUNER_V2_VERSION 221
#define TUNER_V3_VERSION 222

struct runnable_ctx {
    const struct nccl_config *nc;
    const bool *usable;
    double (*bus)[PROTO_COUNT];
};

static bool
runnable(void *ctx, int a, int p)
{
    const struct runnable_ctx *rc = ctx;
    return a >= 0 && a < NCCL_ALGO_COUNT && p >= 0 && p < PROTO_COUNT
           && rc->usable[a] && rc->nc->proto_enable[p] && rc->bus[a][p] > 0;
}

/* BYTES rounded up to a whole number of UNITs (an allocation granule). */
static double
align_up(double bytes, double unit)
{
    return ceil(bytes / unit) * unit;
}

/* NCCL_P2P_LEVEL (paths.cc ncclTopoCheckP2p): P2P only between GPUs no
 * farther apart than the level; NVLink peers are NVL, GPUs of a PCIe-only
 * node share a switch (PXB).  NCCL_P2P_DISABLE=1 is LOC. */
static bool
p2p_disabled(const struct topo *t, const struct nccl_config *nc)
{
    int gpu_path = t->fabric == FABRIC_PCIE ? PATH_LEVEL_PXB : PATH_LEVEL_NVL;
    return nc->p2p_disable
           || (nc->p2p_level >= 0 && gpu_path > nc->p2p_level);
}

double
coll_nvls_buffer_bytes(const struct topo *t, const struct nccl_config *nc,
                       int ranks_per_node)
{
    if (t->fabric != FABRIC_NVSWITCH || t->arch < GPU_ARCH_HOPPER
        || nc->nvls_enable == 0 || p2p_disabled(t, nc) || ranks_per_node < 2)
        return 0;
    struct nccl_config ncl;
    plugin_config(t, nc, &ncl);
    double heads = ranks_per_node;
    double buffers = NVLS_CHANNELS * 2.0 * 8 * nvls_step_bytes(t, &ncl)
                     * heads;
    double credits = NVLS_CHANNELS * 2.0 * 64 * heads;
    return align_up(buffers, NVLS_MEM_ALIGN)
           + align_up(credits, NVLS_MEM_ALIGN);
}

/* The connection buffers a transport maps, NCCL 2.18 to 2.28 alike.
 * Each end of a connection has a control struct of MEM_ALIGN (4 KiB:
 * ncclSendMem, ncclRecvMem, src/include/comm.h), and the protocols' FIFOs
 * (src/init.cc computeBuffSizes): LL NCCL_LL_LINES_PER_THREAD x
 * NCCL_LL_MAX_NTHREADS x NCCL_STEPS x 16 B = 512 KiB (LL_BUFFSIZE),
 * LL128 NCCL_LL128_ELEMS_PER_THREAD x NCCL_LL128_MAX_NTHREADS x
 * NCCL_STEPS x 8 B = 4.6875 MiB (LL128_BUFFSIZE), Simple NCCL_BUFFSIZE
 * (4 MiB, or the plugin's).  Every protocol's buffers are mapped whatever
 * NCCL_PROTO allows. */
#define CONN_CTRL_BYTES 4096.0
#define CUDA_IPC_MIN_BYTES (2.0 * 1024 * 1024)

/* Bytes on the sending GPU plus those on the receiving GPU of one P2P
 * (CUDA peer memory) connection.  The proxy of each end allocates on its
 * own GPU (p2pSendProxySetup, p2pRecvProxySetup:
 * ncclP2pAllocateShareableBuffer), each rounded up to CUDA_IPC_MIN, 2 MiB
 * (p2pSendSetup, p2pRecvSetup ALIGN_SIZE).  The receiver holds LL, LL128
 * and Simple; with P2P read, which ncclTopoCheckP2p (src/graph/paths.cc)
 * turns on between Ampere (sm_80) GPUs over NVLink, the Simple buffer
 * sits on the sender instead ("For P2P Read the SIMPLE buffer is tagged
 * on the end of the ncclSendMem structure").  0 where NCCL takes the SHM
 * transport instead (NCCL_P2P_DISABLE, NCCL_P2P_LEVEL): its buffers are
 * host shared memory (src/transport/shm.cc). */
static double
p2p_conn_bytes(const struct topo *t, const struct nccl_config *nc,
               double simple)
{
    if (p2p_disabled(t, nc))
        return 0;
    bool read = t->arch == GPU_ARCH_AMPERE && t->fabric != FABRIC_PCIE;
    double send = CONN_CTRL_BYTES + (read ? simple : 0);
    double recv = CONN_CTRL_BYTES + LL_BUFFSIZE + LL128_BUFFSIZE
                  + (read ? 0 : simple);
    return align_up(send, CUDA_IPC_MIN_BYTES)
           + align_up(recv, CUDA_IPC_MIN_BYTES);
}

/* The same for a network connection (src/transport/net.cc).  With
 * GPUDirect RDMA (ncclTopoCheckGdr; reads, the send side, from Ampere
 * on without conditions) sendProxyConnect puts LL128 and Simple in
 * device memory, LL and the control structs in host memory, rounded up
 * to CUDA_IPC_MIN; recvProxyConnect puts all three protocols on the
 * device (ncclCuMemAlloc rounds to the 2 MiB granularity).  Without GDR
 * (NCCL_NET_GDR_LEVEL below the path, or the socket transport, whose
 * NICs have no gdrSupport) everything is host memory: 0. */
static double
net_conn_bytes(const struct topo *t, const struct nccl_config *nc,
               double simple)
{
    bool socket = t->net == NET_ETHERNET
                  || (nc->ib_disable && t->net != NET_EFA);
    if (!net_gdr(nc) || socket)
        return 0;
    return align_up(LL128_BUFFSIZE + simple, CUDA_IPC_MIN_BYTES)
           + align_up(LL_BUFFSIZE + LL128_BUFFSIZE + simple,
                      CUDA_IPC_MIN_BYTES);
}

/* Distinct peers of a PAT communicator of N ranks: ncclTransportPatConnect
 * (src/transport/generic.cc) connects rank +- mask for every power of two
 * mask below N, both ways each. */
static int
pat_peers(int n)
{
    int peers = 0;
    for (int d = 1; d < n; d++) {
        bool hit = false;
        for (int mask = 1; mask < n && !hit; mask <<= 1)
            hit = d == mask || d == n - mask;
        peers += hit;
    }
    return peers;
}

double
coll_conn_buffer_bytes(const struct topo *t, const struct nccl_config *nc,
                       const struct coll_group *g, int channels,
                       unsigned algos)
{
    if (g->ranks <= 1 || channels <= 0)
        return 0;
    struct nccl_config ncl;
    plugin_config(t, nc, &ncl);
    double simple = (double)ncl.buffsize;
    double ppn = g->ranks_per_node, nodes = g->nodes;
    double p2p = ppn > 1 ? p2p_conn_bytes(t, nc, simple) : 0;
    double net = nodes > 1 ? net_conn_bytes(t, nc, simple) : 0;
    /* Per channel, the mean over the group's GPUs of the connection ends
     * each holds (a connection's two ends together: p2p, net). */
    double per_channel = 0;
    if (algos & (1u << NCCL_ALGO_PAT)) {
        /* One GPU a node: every peer over the network.  A ring of one GPU
         * a node runs in rank order (nodes are numbered as their ranks
         * come), so its prev and next are PAT's mask-1 peers, already
         * connected in its direction. */
        per_channel += pat_peers(g->ranks) * net;
    } else if (algos & (1u << NCCL_ALGO_RING)) {
        /* ncclTransportRingConnect: each GPU receives from ring.prev and
         * sends to ring.next on every channel; across nodes one of a
         * node's GPUs a channel sends over the network and one receives. */
        per_channel += nodes > 1 ? ((ppn - 1) * p2p + net) / ppn : p2p;
    }
    if (algos & (1u << NCCL_ALGO_TREE)) {
        /* ncclTransportTreeConnect: up and down, both ways, on every
         * channel; a node's GPUs are a chain (ppn - 1 links), and each
         * channel's tree over the nodes has nodes - 1 edges.  NCCL
         * reuses a connection already made to the same peer
         * (ncclTransportP2pConnect skips connected ones).  Behind
         * NVSwitch both graph searches step to a neighbouring GPU index
         * first (search.cc ncclTopoSearchNextGpuSort: rings index + 1,
         * trees index - 1), so each chain link joins two GPUs the ring
         * joins, and one of its two directions is the ring's
         * connection: with Ring connected a chain adds ppn - 1.
         * Elsewhere, and over the network, counted apart (at most that
         * much too many). */
        double chain = (algos & (1u << NCCL_ALGO_RING))
                               && t->fabric == FABRIC_NVSWITCH
                           ? ppn - 1 : 2 * (ppn - 1);
        per_channel += (chain * p2p + 2 * (nodes - 1) / nodes * net) / ppn;
    }
    double bytes = channels * per_channel;
    if ((algos & (1u << NCCL_ALGO_NVLS_TREE)) && nodes > 1)
        /* ncclNvlsTreeConnect (transport/nvls.cc): the NVLS channels'
         * trees over the nodes, up and down both ways, network only. */
        bytes += NVLS_CHANNELS * 2 * (nodes - 1) / nodes * net / ppn;
    return bytes;
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

    /* NCCL_NVLS_ENABLE=1 forces multicast on (transport/nvls.cc
     * ncclNvlsInit); without NVSwitch multicast (Hopper and newer on an
     * NVSwitch) NCCL then fails to create the multicast object. */
    if (nc->nvls_enable == 1 && g->ranks_per_node > 1
        && (t->fabric != FABRIC_NVSWITCH || t->arch < GPU_ARCH_HOPPER)) {
        *cause = xasprintf("NCCL_NVLS_ENABLE=1: %s has no NVSwitch "
                           "multicast (NVLS needs Hopper or newer behind "
                           "NVSwitch); NCCL fails at init", t->name);
        return -1;
    }
    /* The transports the environment leaves (a copy of the topology with
     * the path NCCL would take):
     * - NCCL_P2P_DISABLE=1: no CUDA P2P inside the node; the SHM
     *   transport (src/transport/shm.cc) stages every step through host
     *   memory, so the node's links are each GPU's PCIe at NCCL's 12/16
     *   credit, with PCI latencies and no LL128 or NVLS;
     * - the socket transport (src/transport/net_socket.cc), for Ethernet
     *   without RDMA or NCCL_IB_DISABLE=1 on IB/RoCE: data crosses the
     *   host (no GPUDirect) and the kernel's TCP stack, NCCL_SOCKET_NTHREADS
     *   x NCCL_NSOCKS_PERTHREAD sockets a connection (default 1 x 1
     *   outside AWS and GCP: "we only use the main thread"), each a TCP
     *   stream that one core drives at about SOCKET_STREAM_BPS (an
     *   estimate: a core's send path copies and checksums every byte),
     *   and each step pays a TCP round trip (SOCKET_STEP_US, an
     *   estimate) over the link's latency. */
    struct topo tl = *t;
    double nic_reported_Bps = t->nic_Bps;   /* before GDR / sockets */
    /* What the network plugin sets where the user set nothing
     * (plugin_config; init.cc computeBuffSizes reads NCCL_BUFFSIZE after
     * the plugin loaded). */
    struct nccl_config ncl;
    plugin_config(t, nc, &ncl);
    r->simple_from_plugin = !nc->proto_given && t->plugin_simple_only;
    nc = &ncl;
    r->buffsize = (double)ncl.buffsize;
    r->buffsize_from_plugin = !ncl.buffsize_given && t->plugin_buffsize > 0;
    bool p2p_off = p2p_disabled(t, nc);
    /* Without GPUDirect RDMA (NCCL_NET_GDR_LEVEL below the GPU-NIC path)
     * net.cc puts the network buffers in host memory: every byte a NIC
     * carries crosses a GPU's PCIe link, so the node's network rate is at
     * most its GPUs' host links together; no flush is needed. */
    if (g->nodes > 1 && !net_gdr(nc)) {
        double host_cap = t->pcie_Bps * t->gpus_per_node / t->nics_per_node;
        tl.nic_Bps = fmin(t->nic_Bps, host_cap);
    }
    if (p2p_off && g->ranks_per_node > 1) {
        tl.fabric = FABRIC_PCIE;
        tl.intra_Bps = t->pcie_Bps;
    }
    if (g->nodes > 1 && (tl.net == NET_ETHERNET
                         || (nc->ib_disable && tl.net != NET_EFA))) {
        int socks = (nc->socket_nthreads > 0 ? nc->socket_nthreads : 1)
                    * (nc->nsocks_perthread > 0 ? nc->nsocks_perthread : 1);
        double per_nic = fmin(t->nic_Bps, socks * SOCKET_STREAM_BPS);
        tl.nic_Bps = per_nic;
        tl.inter_latency_ns = t->inter_latency_ns + SOCKET_STEP_US * 1e3;
    }
    t = &tl;

    struct ctx x = {t, nc, op, g, nbytes, (int)t->arch,
                    g->nodes <= 1 ? 0 : g->nodes == 2 ? 1 : 2, 0, 0, 0, 0,
                    false};
    x.ch_default = default_channels(t, nc, g, nic_reported_Bps,
                                    t->intra_Bps * intra_link_efficiency(t)
                                        / 1e9);
    x.ch = x.ch_default;
    if (nc->max_channels > 0 && x.ch > nc->max_channels)
        x.ch = nc->max_channels;
    if (nc->min_channels > 0 && x.ch < nc->min_channels)
        x.ch = nc->min_channels;
    r->comm_channels = x.ch;
    x.intra = t->intra_Bps * intra_link_efficiency(t);
    /* Communicators using only some GPUs of a node (HSDP replicate groups:
     * one per node) run beside their twins on the other GPUs and get
     * their share of the node's NICs. */
    x.share = t->nics_per_node * t->nic_Bps * NET_LINK_EFFICIENCY
              * g->ranks_per_node / t->gpus_per_node;

    bool usable[NCCL_ALGO_COUNT];
    double bus[NCCL_ALGO_COUNT][PROTO_COUNT], lat[NCCL_ALGO_COUNT][PROTO_COUNT];
    double pbus[NCCL_ALGO_COUNT][PROTO_COUNT];
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
            algo_cost(&x, a, p, &bus[a][p], &lat[a][p], &pbus[a][p]);
            if (pbus[a][p] < 0)
                pbus[a][p] = bus[a][p];
            if (bus[a][p] > 0)
                usable[a] = true;
        }
    }
    if (nccl_filter_algos(nc, op, usable, cause) != 0)
        return -1;

    /* The network plugin's tuner forces its pick where it has one
     * (nccl_tuner_aws.h): it gets a cost of 0 in NCCL's table, so NCCL's
     * search below stops there. */
    struct runnable_ctx rc = {nc, usable, bus};
    int forced_a = -1, forced_p = -1;
    x.plugin_tuner = t->plugin_tuner != NET_TUNER_NCCL
                     && nc->version >= TUNER_V2_VERSION
                     && !(nc->version < TUNER_V3_VERSION
                          && (nc->algo_given || nc->proto_given));
    if (x.plugin_tuner
        && aws_tuner_pick(t->plugin_tuner, op, nbytes, g->ranks, g->nodes,
                          runnable, &rc, &forced_a, &forced_p) == 1)
        r->plugin_tuned = true;

    double best = INFINITY;
    for (int a = 0; a < NCCL_ALGO_COUNT; a++) {
        if (!usable[a])
            continue;
        for (int p = 0; p < PROTO_COUNT; p++) {
            if (!nc->proto_enable[p] || bus[a][p] <= 0)
                continue;
            if (r->plugin_tuned && (a != forced_a || p != forced_p))
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
    r->tuning_s = r->time_s;
    coll_path(&x, r->algo, r->proto, pbus[r->algo][r->proto], r->tuning_s, r);
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
        r->launch_s = r->latency_s;
        r->fill_s = r->steplat_s = 0;
        r->bw_s = r->time_s - r->latency_s;
    } else {
        r->alg_Bps = nbytes / r->bw_s;
    }
    r->bus_Bps = nbytes / r->time_s * coll_busbw_factor(op, g->ranks);
    return 0;
}
