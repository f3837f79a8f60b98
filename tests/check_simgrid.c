/*
 * check_simgrid.c: the SimGrid network backend against hand-derived
 * answers, and the platform checks that keep bad files away from SimGrid.
 *
 * SimGrid keeps one engine per process; Check's default fork mode gives
 * every test its own process, hence its own engine.  Platforms come from
 * the built-in test-2x4 topology (2 nodes x 4 GPUs, 100 GB/s NVLink ports
 * with 1 us GPU-to-GPU latency, one 80 Gb/s = 10 GB/s NIC per node with
 * 10 us node-to-node latency), so a route from a GPU of node 0 to one of
 * node 1 crosses: the source's port (0.5 us, 100 GB/s), node0-nic UP
 * (5 us, 10 GB/s), node1-nic DOWN (5 us, 10 GB/s), the destination's port
 * (0.5 us): 11 us, bottleneck 10 GB/s.
 */
#include "net_platform.h"
#include "net_simgrid.h"
#include "testutil.h"
#include "xalloc.h"
#include "check_main.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* SimGrid's clock is a double in seconds; its max-min solver works to
 * about 1e-9 relative precision (maxmin/precision default 1e-5 of a
 * share, on rates only). */
#define TIME_TOL_S 1e-9
/* --exact against one step per ring: what doc/settings.md promises. */
#define EXACT_REL_TOL 0.01
/* The two backends on a non-blocking network: what doc/settings.md promises. */
#define AGREE_REL_TOL 0.02

static struct topo *
topo_with(const char *name, const char *const *sets, int nodes)
{
    char *cause = NULL;
    struct topo *t = topo_load(name, &cause);
    ck_assert_msg(t != NULL, "%s", cause ? cause : "");
    for (int i = 0; sets && sets[i]; i++) {
        ck_assert_msg(topo_set(t, sets[i], &cause) == 0, "%s", cause);
    }
    if (nodes > 0)
        t->nodes = nodes;
    ck_assert_msg(topo_validate(t, &cause) == 0, "%s", cause);
    return t;
}

static void
open_or_fail(const struct topo *t, const char *platform)
{
    char *cause = NULL;
    int rc = netsg_open(t, platform, &cause);
    ck_assert_msg(rc == 0, "%s", cause ? cause : "");
    netsg_configure(false, 0);
}

START_TEST(test_simgrid_alpha_beta_one_flow)
{
    struct topo *t = topo_with("test-2x4", NULL, 0);
    open_or_fail(t, NULL);
    /* CM02 without cross-traffic: a flow alone takes latency + S / B.
     * Across nodes: 11 us + 1e9 B / 10 GB/s = 0.100011 s.  Inside node 0
     * (port up 0.5 us, FATPIPE backbone 0, port down 0.5 us, 100 GB/s):
     * 1 us + 1e9 / 100e9 = 0.010001 s. */
    const char *src[] = {"node0-gpu0"}, *dst[] = {"node1-gpu2"};
    const char *dst_in[] = {"node0-gpu3"};
    double bytes[] = {1e9}, end[1];
    netsg_flows(1, src, dst, bytes, end);
    ck_assert_double_eq_tol(end[0], 11e-6 + 1e9 / 10e9, TIME_TOL_S);
    netsg_flows(1, src, dst_in, bytes, end);
    ck_assert_double_eq_tol(end[0], 1e-6 + 1e9 / 100e9, TIME_TOL_S);
    /* Latency alone: a 1-byte flow is 11 us and 0.1 ns. */
    bytes[0] = 1;
    netsg_flows(1, src, dst, bytes, end);
    ck_assert_double_eq_tol(end[0], 11e-6 + 1 / 10e9, TIME_TOL_S);
    topo_free(t);
}
END_TEST

START_TEST(test_simgrid_two_flows_share_a_link)
{
    struct topo *t = topo_with("test-2x4", NULL, 0);
    open_or_fail(t, NULL);
    /* Two flows leave node 0 through its one NIC (10 GB/s, max-min: 5
     * GB/s each).  The 1 GB flow ends at 11 us + 1e9 / 5e9 = 0.200011 s;
     * the 3 GB flow then has 2 GB left at the full 10 GB/s: 0.2 s more,
     * ending at 11 us + (1e9 + 3e9) / 10e9 = 0.400011 s. */
    const char *src[] = {"node0-gpu0", "node0-gpu1"};
    const char *dst[] = {"node1-gpu0", "node1-gpu1"};
    double bytes[] = {1e9, 3e9}, end[2];
    double last = netsg_flows(2, src, dst, bytes, end);
    ck_assert_double_eq_tol(end[0], 11e-6 + 2 * 1e9 / 10e9, TIME_TOL_S);
    ck_assert_double_eq_tol(end[1], 11e-6 + 4e9 / 10e9, TIME_TOL_S);
    ck_assert_double_eq_tol(last, end[1], TIME_TOL_S);
    /* Opposite directions do not share: SPLITDUPLEX links have an UP and
     * a DOWN half.  Each takes 11 us + 1e9 / 10e9. */
    const char *src2[] = {"node0-gpu0", "node1-gpu0"};
    const char *dst2[] = {"node1-gpu1", "node0-gpu1"};
    double b2[] = {1e9, 1e9};
    netsg_flows(2, src2, dst2, b2, end);
    ck_assert_double_eq_tol(end[0], 11e-6 + 1e9 / 10e9, TIME_TOL_S);
    ck_assert_double_eq_tol(end[1], 11e-6 + 1e9 / 10e9, TIME_TOL_S);
    topo_free(t);
}
END_TEST

/* A ring all-gather over all 8 nodes x 4 GPUs of test-2x4 stretched to 8
 * nodes, on a fat-tree with 2 nodes per leaf, 4:1, nodes spread over the
 * 4 leaves (node i under leaf i mod 4). */
static const char *const spread_4to1[] = {
    "network.shape=fat_tree", "network.nodes_per_leaf=2",
    "network.oversubscription=4:1", "network.placement=spread", NULL};

START_TEST(test_simgrid_oversubscribed_ring)
{
    struct topo *t = topo_with("test-2x4", spread_4to1, 8);
    open_or_fail(t, NULL);
    /* Ranks are node-major, so each node sends one chunk per step to the
     * next node, which sits under another leaf.  A leaf's uplink carries
     * 2 nodes x 10 GB/s / 4 = 5 GB/s for its 2 outgoing flows: 2.5 GB/s
     * each, against the node's 10 GB/s NIC on a non-blocking fabric.
     * Every step is 4x slower in bandwidth: ratio 4, and no added
     * latency (spine_latency 0). */
    struct netsg_coll c = {COLL_ALLGATHER, NCCL_ALGO_RING, {32, 8, 4},
                           32 * 64e6};
    double ratio, extra;
    netsg_coll_factor(&c, &ratio, &extra);
    ck_assert_double_eq_tol(ratio, 4.0, 1e-6);
    ck_assert_double_eq_tol(extra, 0, TIME_TOL_S);
    topo_free(t);
}
END_TEST

START_TEST(test_simgrid_exact_matches_reuse)
{
    struct topo *t = topo_with("test-2x4", spread_4to1, 8);
    open_or_fail(t, NULL);
    /* One simulated step times 31 against all 31 steps of the ring, each
     * rank waiting for its predecessor's chunk: equal under a static
     * max-min share (toolchain.md §2.6), so within 1 %. */
    struct netsg_coll c = {COLL_REDUCESCATTER, NCCL_ALGO_RING, {32, 8, 4},
                           32 * 8e6};
    double r_rep, r_exact, e_rep, e_exact;
    netsg_configure(false, 0);
    netsg_coll_factor(&c, &r_rep, &e_rep);
    netsg_configure(true, 0);
    netsg_coll_factor(&c, &r_exact, &e_exact);
    ck_assert_double_eq_tol(r_exact, r_rep, EXACT_REL_TOL * r_rep);
    int64_t runs, flows, reused;
    netsg_stats(&runs, &flows, &reused);
    /* The exact runs simulated 31 steps x 32 flows each. */
    ck_assert_int_ge(flows, 2 * 31 * 32);
    topo_free(t);
}
END_TEST

START_TEST(test_simgrid_agrees_without_oversubscription)
{
    /* 1:1, packed: nothing above the NICs limits, so every collective
     * FSDP issues keeps NCCL's time (ratio 1, within 2 %): ring, tree and
     * PAT, of the whole cluster and of HSDP's replicate groups. */
    static const char *const ft[] = {
        "network.shape=fat_tree", "network.nodes_per_leaf=2", NULL};
    struct topo *t = topo_with("test-2x4", ft, 8);
    open_or_fail(t, NULL);
    struct netsg_coll cs[] = {
        {COLL_ALLGATHER, NCCL_ALGO_RING, {32, 8, 4}, 32 * 16e6},
        {COLL_REDUCESCATTER, NCCL_ALGO_RING, {32, 8, 4}, 32 * 16e6},
        {COLL_ALLREDUCE, NCCL_ALGO_RING, {8, 8, 1}, 64e6},
        {COLL_ALLREDUCE, NCCL_ALGO_TREE, {8, 8, 1}, 64e6},
        {COLL_ALLGATHER, NCCL_ALGO_PAT, {8, 8, 1}, 8 * 16e6},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        double ratio, extra;
        netsg_coll_factor(&cs[i], &ratio, &extra);
        ck_assert_double_eq_tol(ratio, 1.0, AGREE_REL_TOL);
        ck_assert_double_eq_tol(extra, 0, TIME_TOL_S);
    }
    topo_free(t);
}
END_TEST

START_TEST(test_simgrid_background_load)
{
    /* 30 % of every uplink taken: the spread 4:1 ring's 2.5 GB/s per flow
     * becomes 1.75 GB/s, so the ratio is 4 / 0.7. */
    struct topo *t = topo_with("test-2x4", spread_4to1, 8);
    open_or_fail(t, NULL);
    netsg_configure(false, 0.3);
    struct netsg_coll c = {COLL_ALLGATHER, NCCL_ALGO_RING, {32, 8, 4},
                           32 * 64e6};
    double ratio, extra;
    netsg_coll_factor(&c, &ratio, &extra);
    ck_assert_double_eq_tol(ratio, 4.0 / 0.7, 1e-6);
    topo_free(t);
}
END_TEST

START_TEST(test_simgrid_concurrent_share)
{
    /* HSDP on 8 nodes: the replicate groups' ring all-reduce (GPU j of
     * every node, 4 groups) beside a second copy of itself share each
     * node's NIC: two flows where one was, so each runs at 1/2.  On the
     * non-blocking single switch nothing else limits. */
    struct topo *t = topo_with("test-2x4", NULL, 8);
    open_or_fail(t, NULL);
    struct netsg_coll c = {COLL_ALLREDUCE, NCCL_ALGO_RING, {8, 8, 1}, 64e6};
    struct netsg_coll two[2] = {c, c};
    double rate[2];
    netsg_share(two, 2, rate);
    ck_assert_double_eq_tol(rate[0], 0.5, 1e-6);
    ck_assert_double_eq_tol(rate[1], 0.5, 1e-6);
    topo_free(t);
}
END_TEST

/* Two 1 GB flows, S0 -> D0 and S1 -> D1, started together: each must end
 * at WANT_S. */
static void
expect_two_flows(const char *s0, const char *d0, const char *s1,
                 const char *d1, double want_s)
{
    const char *src[] = {s0, s1}, *dst[] = {d0, d1};
    double bytes[] = {1e9, 1e9}, end[2];
    netsg_flows(2, src, dst, bytes, end);
    ck_assert_double_eq_tol(end[0], want_s, TIME_TOL_S);
    ck_assert_double_eq_tol(end[1], want_s, TIME_TOL_S);
}

START_TEST(test_simgrid_fat_tree_leaf_and_spine)
{
    /* spread_4to1 on 4 nodes: 2 leaves, node i under leaf i mod 2 (nodes
     * 0 and 2 under leaf 0, 1 and 3 under leaf 1); a leaf's uplinks carry
     * 2 x 10 GB/s / 4 = 5 GB/s each way, and spine_latency 0 keeps the 11
     * us of a route across one leaf for a route across the spine. */
    struct topo *t = topo_with("test-2x4", spread_4to1, 4);
    open_or_fail(t, NULL);
    /* Under their own leaves, node 0 -> 2 and node 1 -> 3 cross no
     * uplink: each has its NICs' 10 GB/s, 11 us + 1e9 / 10e9. */
    expect_two_flows("node0-gpu0", "node2-gpu0", "node1-gpu0",
                     "node3-gpu0", 11e-6 + 1e9 / 10e9);
    /* One flow across the spine: leaf 0's uplink (5 GB/s) is its
     * bottleneck, 11 us + 1e9 / 5e9. */
    const char *src1[] = {"node0-gpu0"}, *dst1[] = {"node1-gpu0"};
    double bytes[] = {1e9}, end[1];
    netsg_flows(1, src1, dst1, bytes, end);
    ck_assert_double_eq_tol(end[0], 11e-6 + 1e9 / 5e9, TIME_TOL_S);
    /* Two across, node 0 -> 1 and node 2 -> 3: both leave through leaf
     * 0's uplink and enter through leaf 1's, 2.5 GB/s each (max-min),
     * 11 us + 1e9 / 2.5e9. */
    expect_two_flows("node0-gpu0", "node1-gpu0", "node2-gpu0",
                     "node3-gpu0", 11e-6 + 1e9 / 2.5e9);
    topo_free(t);
}
END_TEST

START_TEST(test_simgrid_parts_never_limit)
{
    /* 30 nodes on one switch: more than a block of test-2x4 nodes holds
     * ((161 - 1) / (4 + 2) = 26), so the world's nodes sit in parts
     * joined by trunks.  A flow from node 0 to node 29 crosses two
     * trunks (FATPIPE, no latency) and keeps 11 us + 1e9 / 10e9; two
     * flows out of node 0's part to node 29's share nothing but the
     * trunks: still 10 GB/s each. */
    struct topo *t = topo_with("test-2x4", NULL, 30);
    char *xml = tu_topo_text(t, net_platform_write);
    ck_assert_ptr_nonnull(strstr(xml, "world-part1-trunk"));
    free(xml);
    open_or_fail(t, NULL);
    expect_two_flows("node0-gpu0", "node29-gpu0", "node1-gpu0",
                     "node28-gpu0", 11e-6 + 1e9 / 10e9);
    /* The same platform with 1 TB/s ports and 200 GB/s NICs, as a sweep
     * over rates gets it: a trunk written at 15 nodes x 10 GB/s would
     * hold the flows to 150 GB/s together; it still never limits, so
     * each has its NICs' 200 GB/s: 11 us + 1e9 / 200e9. */
    static const char *const fast[] = {
        "intra.bandwidth=1000GBps", "inter.nic_bandwidth=1600Gbps", NULL};
    struct topo *f = topo_with("test-2x4", fast, 30);
    open_or_fail(f, NULL);
    expect_two_flows("node0-gpu0", "node29-gpu0", "node1-gpu0",
                     "node28-gpu0", 11e-6 + 1e9 / 200e9);
    topo_free(f);
    topo_free(t);
}
END_TEST

START_TEST(test_simgrid_platform_grows_linearly)
{
    /* 512 DGX-class nodes (8 GPUs) on a fat tree of 4 nodes per leaf
     * (above the 256 from which the check samples the collectives'
     * pairs): one route per GPU (to its node), per node (to its leaf),
     * per leaf (to the spine) and per part (to its zone's switch), each
     * symmetrical: fewer than (8 + 2) x 512 = 5,120, where a route per
     * ordered pair of nodes was 261,632.  The checks pass.  (`make bench`
     * builds the 2,048-node case; under a sanitizer it outlasts a test.) */
    static const char *const ft[] = {
        "network.shape=fat_tree", "network.nodes_per_leaf=4",
        "node.gpus_per_node=8", NULL};
    struct topo *t = topo_with("test-2x4", ft, 512);
    char *xml = tu_topo_text(t, net_platform_write), *cause = NULL;
    int routes = 0;
    for (const char *p = xml; (p = strstr(p, "oute src=")) != NULL; p++)
        routes++;
    ck_assert_int_gt(routes, 512 * 8);
    ck_assert_int_lt(routes, 512 * 10);
    ck_assert_msg(net_platform_check_text(xml, "gen.xml", 512, 8, &cause)
                  == 0, "%s", cause ? cause : "");
    free(xml);
    topo_free(t);
}
END_TEST

/* ---- platform files --------------------------------------------------- */

static char *platform_text(const struct topo *t);

START_TEST(test_simgrid_user_platform_edits_count)
{
    /* test-2x4 on 4 nodes, node 2's NICs edited down from 10 to 5 GB/s.
     * The ring's node 1 -> node 2 and node 2 -> node 3 flows now run at
     * 5 GB/s: every step, and so the bandwidth time, doubles against the
     * topology's own platform (ratio 2). */
    struct topo *t = topo_with("test-2x4", NULL, 4);
    char *xml = platform_text(t);
    const char *from = "<link id=\"node2-nic\" bandwidth=\"10GBps\"";
    char *at = strstr(xml, from);
    ck_assert_ptr_nonnull(at);
    char *edited = xasprintf("%.*s<link id=\"node2-nic\" bandwidth=\"5GBps\""
                             "%s", (int)(at - xml), xml, at + strlen(from));
    char *path = tu_temp_text(edited);
    open_or_fail(t, path);
    struct netsg_coll c = {COLL_ALLGATHER, NCCL_ALGO_RING, {16, 4, 4},
                           16 * 4e6};
    double ratio, extra;
    netsg_coll_factor(&c, &ratio, &extra);
    ck_assert_double_eq_tol(ratio, 2.0, 1e-6);
    unlink(path);
    free(path);
    free(edited);
    free(xml);
    topo_free(t);
}
END_TEST

/* The platform test-2x4 generates, as text (caller frees). */
static char *
platform_text(const struct topo *t)
{
    return tu_topo_text(t, net_platform_write);
}

START_TEST(test_simgrid_generated_platforms_pass_checks)
{
    static const char *const shapes[][2] = {
        {"network.shape=single_switch", NULL},
        {"network.shape=fat_tree", NULL},
        {"network.shape=rail_optimized", NULL}};
    for (int i = 0; i < 3; i++) {
        struct topo *t = topo_with("test-2x4", shapes[i], 6);
        char *xml = platform_text(t), *cause = NULL;
        int rc = net_platform_check_text(xml, "gen.xml", 6, 4, &cause);
        ck_assert_msg(rc == 0, "%s", cause ? cause : "");
        free(xml);
        topo_free(t);
    }
}
END_TEST

/* Replace the first FROM in the test-2x4 platform by TO and check it:
 * the message must be WANT. */
static void
expect_platform_error(const char *from, const char *to, const char *want)
{
    struct topo *t = topo_with("test-2x4", NULL, 0);
    char *xml = platform_text(t);
    char *at = strstr(xml, from);
    ck_assert_msg(at != NULL, "'%s' not in the platform", from);
    char *bad = xasprintf("%.*s%s%s", (int)(at - xml), xml, to,
                          at + strlen(from));
    char *cause = NULL;
    ck_assert_int_eq(net_platform_check_text(bad, "p.xml", 2, 4, &cause),
                     -1);
    ck_assert_str_eq(cause, want);
    free(cause);
    free(bad);
    free(xml);
    topo_free(t);
}

START_TEST(test_simgrid_platform_errors)
{
    expect_platform_error("<!DOCTYPE platform SYSTEM \"https://simgrid.org/"
                          "simgrid.dtd\">", "",
                          "p.xml:12: no <!DOCTYPE platform SYSTEM \"https://"
                          "simgrid.org/simgrid.dtd\"> before <platform> "
                          "(SimGrid needs it: add it as the second line)");
    expect_platform_error("bandwidth=\"10GBps\"", "bandwidth=\"10\"",
                          "p.xml:34: <link> bandwidth=\"10\": not a "
                          "bandwidth with a unit (write e.g. \"25GBps\" or "
                          "\"200Gbps\")");
    expect_platform_error("<link_ctn id=\"node1-nic\"",
                          "<link_ctn id=\"node7-nic\"",
                          "p.xml:49: <link_ctn id=\"node7-nic\">: no link "
                          "'node7-nic' is defined above it");
    expect_platform_error("</zone>", "",
                          "p.xml:51: </platform> closes <zone> (close the "
                          "inner element first)");
    expect_platform_error("<host id=\"node0-gpu3\"", "<host id=\"node0-gpu9\"",
                          "p.xml:43: <route src=\"node0-gpu3\">: nothing "
                          "named 'node0-gpu3' is defined above it");
    /* A radical at LONG_MAX once overflowed the host loop's counter. */
    expect_platform_error("<router id=\"world-router\"/>",
                          "<cluster id=\"c\" prefix=\"c\" suffix=\"\" "
                          "radical=\"9223372036854775807\" speed=\"1Gf\" "
                          "bw=\"1GBps\" lat=\"0us\"/>",
                          "p.xml:29: cluster 'c': radical "
                          "'9223372036854775807' is not a list of numbers "
                          "and ranges (write e.g. radical=\"0-7\")");
    /* The 2-node platform checked for a job of 3 nodes. */
    struct topo *t = topo_with("test-2x4", NULL, 0);
    char *xml = platform_text(t), *cause = NULL;
    ck_assert_int_eq(net_platform_check_text(xml, "p.xml", 3, 4, &cause), -1);
    ck_assert_str_eq(cause, "p.xml: no host 'node2-gpu0': the job's 3 nodes "
                     "x 4 GPUs need hosts node<i>-gpu<g> (start from "
                     "'fsdpsim topology --simgrid-xml')");
    free(cause);
    free(xml);
    topo_free(t);
    expect_platform_error("<router id=\"node1-router\"",
                          "<router id=\"node0-router\"",
                          "p.xml:28: id 'node0-router' is defined twice (ids "
                          "of zones, hosts and routers must be unique)");
}
END_TEST

START_TEST(test_simgrid_unroutable_platform_is_an_error)
{
    /* Passes the checks, but node 1 has no route to the switch: SimGrid
     * would abort; the probe in a child process turns that into an
     * error, and this process never started SimGrid. */
    struct topo *t = topo_with("test-2x4", NULL, 0);
    char *xml = platform_text(t);
    char *cut = strstr(xml, "    <route src=\"node1-router\"");
    ck_assert_ptr_nonnull(cut);
    char *end = strstr(cut, "\n") + 1;
    memmove(cut, end, strlen(end) + 1);
    char *path = tu_temp_text(xml);
    char *cause = NULL;
    ck_assert_int_eq(netsg_open(t, path, &cause), -1);
    char *want = xasprintf("%s: SimGrid cannot use this platform: ", path);
    ck_assert_msg(strncmp(cause, want, strlen(want)) == 0, "%s", cause);
    unlink(path);
    free(want);
    free(path);
    free(cause);
    free(xml);
    topo_free(t);
}
END_TEST

static Suite *
simgrid_suite(void)
{
    Suite *s = suite_create("simgrid");
    TCase *core = tcase_create("core");
    tcase_add_test(core, test_simgrid_alpha_beta_one_flow);
    tcase_add_test(core, test_simgrid_two_flows_share_a_link);
    tcase_add_test(core, test_simgrid_oversubscribed_ring);
    tcase_add_test(core, test_simgrid_exact_matches_reuse);
    tcase_add_test(core, test_simgrid_agrees_without_oversubscription);
    tcase_add_test(core, test_simgrid_background_load);
    tcase_add_test(core, test_simgrid_concurrent_share);
    tcase_add_test(core, test_simgrid_user_platform_edits_count);
    tcase_add_test(core, test_simgrid_fat_tree_leaf_and_spine);
    tcase_add_test(core, test_simgrid_parts_never_limit);
    tcase_set_timeout(core, 60);
    suite_add_tcase(s, core);
    TCase *errors = tcase_create("errors");
    tcase_add_test(errors, test_simgrid_generated_platforms_pass_checks);
    tcase_add_test(errors, test_simgrid_platform_errors);
    tcase_add_test(errors, test_simgrid_unroutable_platform_is_an_error);
    tcase_set_timeout(errors, 60);
    suite_add_tcase(s, errors);
    /* A platform of hundreds of nodes loads in a few seconds, and ten
     * times slower under a sanitizer. */
    TCase *large = tcase_create("large");
    tcase_add_test(large, test_simgrid_platform_grows_linearly);
    tcase_set_timeout(large, 600);
    suite_add_tcase(s, large);
    return s;
}

int
main(void)
{
    return tu_main(simgrid_suite());
}
