/*
 * net_platform.c: the SimGrid platform of a topology (see
 * net_platform.h; net_platform_check.c checks platform files).
 *
 * The platform (SimGrid 3.32, DTD 4.1), in what it models as it was
 * when each node was a <cluster> and the top zone listed the route of
 * every pair of nodes (toolchain.md §2.3), and with the same routes:
 *   - a host per GPU, node<i>-gpu<g>, behind its own SPLITDUPLEX link at
 *     the [intra] bandwidth (its NVLink port, node<i>_link_<g>, named as
 *     a cluster names them) to its node's router (the NVSwitch, which
 *     never limits: each flow through it is held to its ports);
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
 *
 * Routing is a tree of zones, routed with Floyd, each with one
 * symmetrical route per child to its switch (a router): not a route per
 * pair of nodes, 4.2 million at 2,048 nodes, but one per GPU, node, leaf
 * and part, some 19,000.  In a tree Floyd's shortest path (fewest links)
 * is the one path, so a route holds exactly the links it held in the
 * per-pair table: out through the source's port and NICs, up from its
 * leaf and down to the other's when they differ, in through the
 * destination's NICs and port.
 *   - A block is a zone of hosts and routers: the GPUs, routers and links
 *     of a few nodes, and its own router, to which the nodes' NICs lead;
 *     when it holds whole leaves, their routers sit between (the NICs lead
 *     to them, their uplinks to the block's router).
 *   - A leaf is a block, or when its nodes do not fit in one, a zone of
 *     blocks ("leaf<L>-part<k>") and a router zone ("leaf<L>-switch": a
 *     zone holds either zones or hosts and routers, not both).
 *   - The top zone, "world", holds the leaves behind their uplinks (the
 *     nodes on a single switch), or when many leaves fit in one block,
 *     blocks of leaves; its router is the spine.
 *   - Zones of zones hold at most NET_PLATFORM_FANOUT children and
 *     blocks NET_PLATFORM_BLOCK_POINTS hosts and routers, since Floyd
 *     costs V^3 at load and V^2 memory; past that, children are split
 *     into parts ("<zone>-part<k>"), each joined to the zone's router by a
 *     trunk, a FATPIPE link (each flow alone) as fast as the part's links
 *     together, which never limits a flow (SimGrid refuses a route
 *     without links).
 * Blocks of several nodes matter for load time: SimGrid 3.32 looks up
 * every new host and link by name through every zone in turn, and seals
 * each zone by scanning every host, so loading costs about zones x
 * (hosts + links); a <cluster> per node made 2,048 nodes 44 s to load,
 * blocks of 16 make it 2 s.
 *
 * Why not SimGrid's own <cluster topology="FAT_TREE"> (FatTreeZone): its
 * leaves are single hosts, every link of it has the cluster's one rate
 * and latency, and a leaf's uplinks are whole cables, each flow routed
 * over one of them; a node here is eight GPUs behind NVLink ports and an
 * NVSwitch, with NICs at another rate, and a leaf's uplinks are one pool
 * (NCCL spreads a ring's channels over every NIC and rail, and
 * oversubscription such as 3:2 is no whole number of cables).  No
 * topology declares a torus or a dragonfly.
 *
 * SimGrid computes Floyd's tables when it seals the platform, at its first
 * simgrid_run(), and refuses routes asked for before: the backend runs
 * the engine once, with no actors, right after loading (net_simgrid.c).
 *
 * Bandwidths are the datasheet rates: what NCCL's protocols get out of
 * them is the analytic model's business (coll.c); the backend uses the
 * platform for how flows share links.
 */
#include "net_platform.h"
#include "xalloc.h"

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
    long gpus = (long)t->nodes * t->gpus_per_node;
    if (gpus <= NET_PLATFORM_MAX_GPUS)
        return 0;
    *cause = xasprintf("%d nodes x %d GPUs: --network simgrid simulates "
                       "at most %d GPUs, since it runs a SimGrid actor per "
                       "GPU and Linux allows a process only so many memory "
                       "mappings (use fewer nodes, or --network analytic)",
                       t->nodes, t->gpus_per_node, NET_PLATFORM_MAX_GPUS);
    return -1;
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

struct writer {
    FILE *out;
    const struct topo *t;
    struct net_link_rates lr;
    int block;                  /* most nodes one block zone holds */
    int *leaf_nodes;            /* the nodes of each leaf, leaf by leaf */
    int *leaf_start;            /* leaf L's are [leaf_start[L], [L + 1]) */
};

static void
indent(const struct writer *w, int depth)
{
    fprintf(w->out, "%*s", 2 * depth, "");
}

/* A child of a zone of zones, as its switch sees it: zone NAME (gateway
 * NAME-router) behind link LINK. */
struct child {
    char name[48], link[56];
    double Bps, lat_ns;
    bool trunk;                 /* FATPIPE, no direction; else SPLITDUPLEX */
};

/* The end of a zone of zones ID: its switch, the children's links, and a
 * route from each child to the switch (and back: symmetrical, the link's
 * DOWN half on the way back). */
static void
write_joins(const struct writer *w, const char *id, const struct child *c,
            int n, int depth)
{
    FILE *out = w->out;
    indent(w, depth);
    fprintf(out, "<zone id=\"%s-switch\" routing=\"Full\"><router "
            "id=\"%s-router\"/></zone>\n", id, id);
    for (int k = 0; k < n; k++) {
        indent(w, depth);
        fprintf(out, "<link id=\"%s\"", c[k].link);
        put_bw(out, "bandwidth", c[k].Bps);
        put_lat(out, "latency", c[k].lat_ns);
        fprintf(out, " sharing_policy=\"%s\"/>\n",
                c[k].trunk ? "FATPIPE" : "SPLITDUPLEX");
    }
    for (int k = 0; k < n; k++) {
        indent(w, depth);
        fprintf(out, "<zoneRoute src=\"%s\" dst=\"%s-switch\" gw_src=\"%s-"
                "router\" gw_dst=\"%s-router\" symmetrical=\"YES\"><link_ctn "
                "id=\"%s\"%s/></zoneRoute>\n", c[k].name, id, c[k].name, id,
                c[k].link, c[k].trunk ? "" : " direction=\"UP\"");
    }
}

/* Part K of zone ID as its switch sees it: behind a trunk at BPS, its
 * members' links together. */
static void
part_child(struct child *c, const char *id, int k, double Bps)
{
    snprintf(c->name, sizeof c->name, "%s-part%d", id, k);
    snprintf(c->link, sizeof c->link, "%s-trunk", c->name);
    c->Bps = Bps;
    c->trunk = true;
}

/* Split COUNT members into PARTS parts of at most PER (the last ones
 * one fewer); the size of part K. */
static int
part_size(int count, int parts, int k)
{
    return count / parts + (k < count % parts);
}

static int
part_start(int count, int parts, int k)
{
    return k * (count / parts) + (k < count % parts ? k : count % parts);
}

/* Zone ID holding the COUNT nodes M and router ID-router: each GPU a host
 * behind its NVLink port to its node's router, each node's router behind
 * its NICs to ID-router, or, when the block holds whole leaves (LEAF[k]
 * is node M[k]'s leaf, LEAF NULL: none), to its leaf's router and that
 * behind the leaf's uplinks to ID-router. */
static void
write_block(const struct writer *w, const char *id, const int *m,
            const int *leaf, int count, int depth)
{
    FILE *out = w->out;
    int g = w->t->gpus_per_node;
    indent(w, depth);
    fprintf(out, "<zone id=\"%s\" routing=\"Floyd\">\n", id);
    for (int k = 0; k < count; k++)
        for (int j = 0; j < g; j++) {
            indent(w, depth + 1);
            fprintf(out, "<host id=\"node%d-gpu%d\" speed=\"1Gf\"/>\n", m[k],
                    j);
        }
    for (int k = 0; k < count; k++) {
        indent(w, depth + 1);
        fprintf(out, "<router id=\"node%d-router\"/>\n", m[k]);
    }
    /* A leaf's nodes are consecutive in M. */
    for (int k = 0; leaf && k < count; k++)
        if (k == 0 || leaf[k] != leaf[k - 1]) {
            indent(w, depth + 1);
            fprintf(out, "<router id=\"leaf%d-router\"/>\n", leaf[k]);
        }
    indent(w, depth + 1);
    fprintf(out, "<router id=\"%s-router\"/>\n", id);
    for (int k = 0; k < count; k++) {
        for (int j = 0; j < g; j++) {
            indent(w, depth + 1);
            fprintf(out, "<link id=\"node%d_link_%d\"", m[k], j);
            put_bw(out, "bandwidth", w->lr.gpu_Bps);
            put_lat(out, "latency", w->lr.gpu_lat_ns);
            fprintf(out, " sharing_policy=\"SPLITDUPLEX\"/>\n");
        }
        indent(w, depth + 1);
        fprintf(out, "<link id=\"node%d-nic\"", m[k]);
        put_bw(out, "bandwidth", w->lr.nic_Bps);
        put_lat(out, "latency", w->lr.nic_lat_ns);
        fprintf(out, " sharing_policy=\"SPLITDUPLEX\"/>\n");
    }
    for (int k = 0; leaf && k < count; k++)
        if (k == 0 || leaf[k] != leaf[k - 1]) {
            indent(w, depth + 1);
            fprintf(out, "<link id=\"" NET_FABRIC_PREFIX "leaf%d\"", leaf[k]);
            put_bw(out, "bandwidth", w->lr.uplink_Bps);
            put_lat(out, "latency", w->lr.uplink_lat_ns);
            fprintf(out, " sharing_policy=\"SPLITDUPLEX\"/>\n");
        }
    for (int k = 0; k < count; k++) {
        for (int j = 0; j < g; j++) {
            indent(w, depth + 1);
            fprintf(out, "<route src=\"node%d-gpu%d\" dst=\"node%d-router\" "
                    "symmetrical=\"YES\"><link_ctn id=\"node%d_link_%d\" "
                    "direction=\"UP\"/></route>\n", m[k], j, m[k], m[k], j);
        }
        indent(w, depth + 1);
        if (leaf)
            fprintf(out, "<route src=\"node%d-router\" dst=\"leaf%d-router\" "
                    "symmetrical=\"YES\"><link_ctn id=\"node%d-nic\" "
                    "direction=\"UP\"/></route>\n", m[k], leaf[k], m[k]);
        else
            fprintf(out, "<route src=\"node%d-router\" dst=\"%s-router\" "
                    "symmetrical=\"YES\"><link_ctn id=\"node%d-nic\" "
                    "direction=\"UP\"/></route>\n", m[k], id, m[k]);
    }
    for (int k = 0; leaf && k < count; k++)
        if (k == 0 || leaf[k] != leaf[k - 1]) {
            indent(w, depth + 1);
            fprintf(out, "<route src=\"leaf%d-router\" dst=\"%s-router\" "
                    "symmetrical=\"YES\"><link_ctn id=\"" NET_FABRIC_PREFIX
                    "leaf%d\" direction=\"UP\"/></route>\n", leaf[k], id,
                    leaf[k]);
        }
    indent(w, depth);
    fprintf(out, "</zone>\n");
}

/* Zone ID holding the COUNT nodes M under one switch: a block, or parts
 * of them (at most NET_PLATFORM_FANOUT) each behind a trunk. */
static void
write_nodes(const struct writer *w, const char *id, const int *m, int count,
            int depth)
{
    if (count <= w->block) {
        write_block(w, id, m, NULL, count, depth);
        return;
    }
    int parts = (count + w->block - 1) / w->block;
    if (parts > NET_PLATFORM_FANOUT)
        parts = NET_PLATFORM_FANOUT;
    struct child *c = xcalloc(parts, sizeof *c);
    indent(w, depth);
    fprintf(w->out, "<zone id=\"%s\" routing=\"Floyd\">\n", id);
    for (int k = 0; k < parts; k++) {
        int n = part_size(count, parts, k);
        part_child(&c[k], id, k, n * w->lr.nic_Bps);
        write_nodes(w, c[k].name, m + part_start(count, parts, k), n,
                    depth + 1);
    }
    write_joins(w, id, c, parts, depth + 1);
    indent(w, depth);
    fprintf(w->out, "</zone>\n");
    free(c);
}

/* The nodes of leaves L[0..COUNT), leaf after leaf, into M (when M is
 * not NULL; LEAF[k] the leaf of M[k]); returns how many. */
static int
leaves_nodes(const struct writer *w, const int *l, int count, int *m,
             int *leaf)
{
    int n = 0;
    for (int k = 0; k < count; k++)
        for (int i = w->leaf_start[l[k]]; i < w->leaf_start[l[k] + 1]; i++) {
            if (m != NULL) {
                m[n] = w->leaf_nodes[i];
                leaf[n] = l[k];
            }
            n++;
        }
    return n;
}

/* Zone ID holding the COUNT leaves L under the switch ID-router (the
 * spine at the top): one block of them all when they fit in one; else
 * each leaf's zone behind its uplinks; or, when there are more than
 * NET_PLATFORM_FANOUT of them or several fit in a block, parts of them
 * each behind a trunk. */
static void
write_leaves(const struct writer *w, const char *id, const int *l, int count,
             int depth)
{
    int nodes = leaves_nodes(w, l, count, NULL, NULL);
    if (nodes <= w->block) {
        int *m = xcalloc(nodes, sizeof *m), *leaf = xcalloc(nodes,
                                                            sizeof *leaf);
        leaves_nodes(w, l, count, m, leaf);
        write_block(w, id, m, leaf, nodes, depth);
        free(m);
        free(leaf);
        return;
    }
    /* Parts of about a block each when a leaf is under half a block. */
    int parts = 0;
    if (2 * (nodes / count) <= w->block)
        parts = (nodes + w->block - 1) / w->block;
    if (parts == 0 && count > NET_PLATFORM_FANOUT)
        parts = (count + NET_PLATFORM_FANOUT - 1) / NET_PLATFORM_FANOUT;
    if (parts > NET_PLATFORM_FANOUT)
        parts = NET_PLATFORM_FANOUT;
    if (parts > count)
        parts = count;
    int n_children = parts > 0 ? parts : count;
    struct child *c = xcalloc(n_children, sizeof *c);
    indent(w, depth);
    fprintf(w->out, "<zone id=\"%s\" routing=\"Floyd\">\n", id);
    for (int k = 0; k < n_children; k++) {
        if (parts > 0) {
            int n = part_size(count, parts, k);
            part_child(&c[k], id, k, n * w->lr.uplink_Bps);
            write_leaves(w, c[k].name, l + part_start(count, parts, k), n,
                         depth + 1);
            continue;
        }
        int leaf = l[k];
        snprintf(c[k].name, sizeof c[k].name, "leaf%d", leaf);
        snprintf(c[k].link, sizeof c[k].link, NET_FABRIC_PREFIX "leaf%d",
                 leaf);
        c[k].Bps = w->lr.uplink_Bps;
        c[k].lat_ns = w->lr.uplink_lat_ns;
        write_nodes(w, c[k].name, w->leaf_nodes + w->leaf_start[leaf],
                    w->leaf_start[leaf + 1] - w->leaf_start[leaf], depth + 1);
    }
    write_joins(w, id, c, n_children, depth + 1);
    indent(w, depth);
    fprintf(w->out, "</zone>\n");
    free(c);
}

void
net_platform_write(const struct topo *t, FILE *out)
{
    int n = t->nodes, g = t->gpus_per_node;
    bool tree = t->shape != NET_SHAPE_SINGLE_SWITCH;
    int leaves = tree ? net_platform_n_leaves(t) : 1;
    struct writer w = {.out = out, .t = t};
    net_platform_rates(t, &w.lr);
    /* A block's Floyd table: its GPUs, their nodes' and leaves' routers
     * and its own. */
    w.block = (NET_PLATFORM_BLOCK_POINTS - 1) / (g + 2);
    if (w.block < 1)
        w.block = 1;

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
    fprintf(out, ".\n"
            "     node<i>-gpu<g>: GPU g of node i, behind its NVLink port "
            "node<i>_link_<g>\n"
            "     to node<i>-router (the NVSwitch); node<i>-nic: the node's "
            "NICs together\n"
            "     (%d x %.17g Gb/s) to its leaf; fabric-leaf<L>: the uplinks "
            "of leaf L to the\n"
            "     spine.  A zone per switch: leaf<L> (its nodes), world "
            "(the leaves, or the\n"
            "     nodes of a single switch); <zone>-part<k> holds a share of "
            "a large zone's\n"
            "     children behind <zone>-part<k>-trunk, which never limits; "
            "<zone>-router is\n"
            "     the zone's switch.  Load it with simgrid_load_platform(), "
            "or give it back\n"
            "     to fsdpsim with --platform. -->\n",
            t->nics_per_node, t->nic_Bps * 8 / 1e9);
    fprintf(out, "<platform version=\"4.1\">\n  <config>\n"
            "    <prop id=\"network/model\" value=\"CM02\"/>\n"
            "    <prop id=\"network/crosstraffic\" value=\"0\"/>\n"
            "    <prop id=\"network/TCP-gamma\" value=\"0\"/>\n"
            "  </config>\n");
    /* The nodes of each leaf in increasing order (a counting sort). */
    w.leaf_nodes = xcalloc(n, sizeof *w.leaf_nodes);
    w.leaf_start = xcalloc(leaves + 1, sizeof *w.leaf_start);
    int *fill = xcalloc(leaves, sizeof *fill);
    for (int i = 0; i < n; i++)
        w.leaf_start[(tree ? net_platform_leaf_of(t, i) : 0) + 1]++;
    for (int l = 0; l < leaves; l++)
        w.leaf_start[l + 1] += w.leaf_start[l];
    for (int i = 0; i < n; i++) {
        int l = tree ? net_platform_leaf_of(t, i) : 0;
        w.leaf_nodes[w.leaf_start[l] + fill[l]++] = i;
    }
    if (tree) {
        for (int l = 0; l < leaves; l++)
            fill[l] = l;
        write_leaves(&w, "world", fill, leaves, 1);
    } else {
        write_nodes(&w, "world", w.leaf_nodes, n, 1);
    }
    fprintf(out, "</platform>\n");
    free(fill);
    free(w.leaf_nodes);
    free(w.leaf_start);
}
