/*
 * net_platform.c: the SimGrid platform of a topology (see
 * net_platform.h; net_platform_check.c checks platform files).
 *
 * The platform (SimGrid 3.32, DTD 4.1; shapes from toolchain.md §2.3,
 * which loaded and ran each of them):
 *   - one <cluster> per node: a host per GPU, each with its own
 *     SPLITDUPLEX link at the [intra] bandwidth (its NVLink port) and an
 *     NVSwitch backbone that never limits (FATPIPE); the cluster's router
 *     is where the node's NICs attach;
 *   - one SPLITDUPLEX link per node for its NICs together ([inter]
 *     nics_per_node x nic_bandwidth): NCCL stripes a ring's traffic over
 *     every NIC of a node (one channel per NIC, PXN moving data to the
 *     NIC on the destination's rail), so a flow-level model sees them as
 *     one pipe;
 *   - above the NICs, by [network] shape: one switch that never blocks;
 *     or leaves with nodes_per_leaf nodes each (fat_tree), or rail groups
 *     of nodes_per_leaf nodes whose NIC k all go to leaf k of the group
 *     (rail_optimized: with PXN a group's rails act as one non-blocking
 *     switch for its nodes), each with one SPLITDUPLEX link for its
 *     uplinks, fabric-leaf<L>, at nodes_per_leaf x the node's NIC rate
 *     divided by the oversubscription ratio.  The spine does not block:
 *     its capacity is what the leaves' uplinks bring to it.
 * The top zone is Full, with one zoneRoute per ordered pair of nodes
 * listing the links of its path.  SimGrid 3.32 would not route through
 * intermediate leaf zones here ("No route from node0 to node1" with Floyd
 * or Dijkstra and zone-level routes via a router zone), and explicit
 * routes make every path plain to read: N(N-1) routes, about 3 MB and
 * 0.04 s to load at 128 nodes (toolchain.md §2.3).
 *
 * Bandwidths are the datasheet rates: what NCCL's protocols get out of
 * them is the analytic model's business (coll.c); the backend uses the
 * platform for how flows share links.
 */
#include "net_platform.h"
#include "xalloc.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ---- Writing ---------------------------------------------------------- */

int
net_platform_n_leaves(const struct topo *t)
{
    int p = t->nodes_per_leaf > 0 ? t->nodes_per_leaf : 1;
    return (t->nodes + p - 1) / p;
}

int
net_platform_leaf_of(const struct topo *t, int node)
{
    int p = t->nodes_per_leaf > 0 ? t->nodes_per_leaf : 1;
    if (t->placement == NET_PLACE_SPREAD)
        return node % net_platform_n_leaves(t);
    return node / p;
}

/* Quantities as SimGrid reads them: "GBps" is 10^9 bytes/s and "us"
 * microseconds (toolchain.md §2.3); %.17g reads back exactly. */
static void
put_bw(FILE *out, const char *attr, double Bps)
{
    fprintf(out, " %s=\"%.17gGBps\"", attr, Bps / 1e9);
}

static void
put_lat(FILE *out, const char *attr, double ns)
{
    fprintf(out, " %s=\"%.17gus\"", attr, ns / 1e3);
}

int
net_platform_supported(const struct topo *t, char **cause)
{
    if (t->nodes <= NET_PLATFORM_MAX_NODES)
        return 0;
    *cause = xasprintf("%d nodes: a SimGrid platform built from a topology "
                       "holds at most %d nodes, since it lists the route "
                       "of every pair of nodes (use fewer nodes, or give "
                       "your own platform with --platform)", t->nodes,
                       NET_PLATFORM_MAX_NODES);
    return -1;
}

/* <link_ctn id="ID" direction="DIR"/>, the id printed from FMT. */
static void __attribute__((format(printf, 3, 4)))
put_link_ctn(FILE *out, const char *dir, const char *fmt, ...)
{
    va_list ap;
    fprintf(out, "<link_ctn id=\"");
    va_start(ap, fmt);
    vfprintf(out, fmt, ap);
    va_end(ap);
    fprintf(out, "\" direction=\"%s\"/>", dir);
}

void
net_platform_rates(const struct topo *t, struct net_link_rates *r)
{
    r->gpu_Bps = t->intra_Bps;
    r->gpu_lat_ns = t->intra_latency_ns / 2;
    r->backbone_Bps = t->intra_Bps * t->gpus_per_node;
    r->nic_Bps = t->nics_per_node * t->nic_Bps;
    r->nic_lat_ns = t->inter_latency_ns / 2;
    /* A leaf's uplinks carry its nodes' NICs over the oversubscription. */
    r->uplink_Bps = t->nodes_per_leaf * r->nic_Bps / t->oversubscription;
    r->uplink_lat_ns = t->spine_latency_ns / 2;
}

void
net_platform_write(const struct topo *t, FILE *out)
{
    int n = t->nodes, g = t->gpus_per_node;
    bool tree = t->shape != NET_SHAPE_SINGLE_SWITCH;
    int leaves = tree ? net_platform_n_leaves(t) : 1;
    struct net_link_rates lr;
    net_platform_rates(t, &lr);

    fprintf(out, "<?xml version='1.0'?>\n"
            "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
            "<!-- fsdpsim platform of topology '%s': %d node%s x %d GPUs, "
            "network %s", t->name, n, n == 1 ? "" : "s", g,
            topo_shape_name(t->shape));
    if (tree)
        fprintf(out, ", %d node%s per leaf, oversubscription %.17g:1, "
                "placement %s", t->nodes_per_leaf,
                t->nodes_per_leaf == 1 ? "" : "s", t->oversubscription,
                topo_placement_name(t->placement));
    fprintf(out, ".\n     node<i>-gpu<g>: GPU g of node i; node<i>-nic: the "
            "node's NICs together (%d x %.17g Gb/s);\n     fabric-leaf<L>: the "
            "uplinks of leaf L to the spine.  Load it with\n     "
            "simgrid_load_platform(), or give it back to fsdpsim with "
            "--platform. -->\n", t->nics_per_node, t->nic_Bps * 8 / 1e9);
    fprintf(out, "<platform version=\"4.1\">\n  <config>\n"
            "    <prop id=\"network/model\" value=\"CM02\"/>\n"
            "    <prop id=\"network/crosstraffic\" value=\"0\"/>\n"
            "    <prop id=\"network/TCP-gamma\" value=\"0\"/>\n"
            "  </config>\n  <zone id=\"world\" routing=\"Full\">\n");
    for (int i = 0; i < n; i++) {
        fprintf(out, "    <cluster id=\"node%d\" prefix=\"node%d-gpu\" "
                "suffix=\"\" radical=\"0-%d\" speed=\"1Gf\"", i, i, g - 1);
        put_bw(out, "bw", lr.gpu_Bps);
        put_lat(out, "lat", lr.gpu_lat_ns);
        fprintf(out, " sharing_policy=\"SPLITDUPLEX\"");
        put_bw(out, "bb_bw", lr.backbone_Bps);
        fprintf(out, " bb_lat=\"0us\" bb_sharing_policy=\"FATPIPE\" "
                "router_id=\"node%d-router\"/>\n", i);
    }
    for (int i = 0; i < n; i++) {
        fprintf(out, "    <link id=\"node%d-nic\"", i);
        put_bw(out, "bandwidth", lr.nic_Bps);
        put_lat(out, "latency", lr.nic_lat_ns);
        fprintf(out, " sharing_policy=\"SPLITDUPLEX\"/>\n");
    }
    for (int l = 0; tree && l < leaves; l++) {
        fprintf(out, "    <link id=\"" NET_FABRIC_PREFIX "leaf%d\"", l);
        put_bw(out, "bandwidth", lr.uplink_Bps);
        put_lat(out, "latency", lr.uplink_lat_ns);
        fprintf(out, " sharing_policy=\"SPLITDUPLEX\"/>\n");
    }
    /* Every ordered pair of nodes: out through the source's NICs, up
     * from its leaf and down to the other's when they differ, in through
     * the destination's NICs. */
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            if (i == j)
                continue;
            int li = tree ? net_platform_leaf_of(t, i) : 0;
            int lj = tree ? net_platform_leaf_of(t, j) : 0;
            fprintf(out, "    <zoneRoute src=\"node%d\" dst=\"node%d\" "
                    "gw_src=\"node%d-router\" gw_dst=\"node%d-router\" "
                    "symmetrical=\"NO\">", i, j, i, j);
            put_link_ctn(out, "UP", "node%d-nic", i);
            if (li != lj) {
                put_link_ctn(out, "UP", NET_FABRIC_PREFIX "leaf%d", li);
                put_link_ctn(out, "DOWN", NET_FABRIC_PREFIX "leaf%d", lj);
            }
            put_link_ctn(out, "DOWN", "node%d-nic", j);
            fprintf(out, "</zoneRoute>\n");
        }
    fprintf(out, "  </zone>\n</platform>\n");
}
