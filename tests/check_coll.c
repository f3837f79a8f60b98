/*
 * check_coll.c: the NCCL ring model against hand-derived times.
 *
 * test-2x4 (topologies/test-2x4.ini): Ampere, NVSwitch at 100 GB/s per
 * GPU with 1 us latency, one 10 GB/s NIC per node with 10 us latency.
 * NCCL credits NVLink at 20/25 of the wire rate (SM80) and a NIC at
 * 12/12.5, so the intra-node bus bandwidth is 80e9 B/s and a node's
 * network 9.6e9 B/s.  Latencies (us, LL/LL128/Simple): base Ring 6.6 /
 * 14.0 / 8.4, NVLink hop 0.6 / 1.9 / 3.4, net hop 2.7 / 4.0 / 14.0, plus
 * the topology's own network latency (twice for Simple).
 */
#include "coll.h"
#include "nccl_tuner_aws.h"
#include "topo.h"
#include "check_main.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static struct nccl_config default_nccl;

/* Tests that check NCCL's own estimate (latency + bytes / bandwidth,
 * which picks the algorithm) read r.tuning_s; the data path's time is
 * r.time_s (test_path_* below). */

/* The model with NCCL's defaults, SUM reductions; must not fail. */
static void
estimate(const struct topo *t, enum coll_op op, const struct coll_group *g,
         double bytes, struct coll_result *r)
{
    char *cause = NULL;
    nccl_config_init(&default_nccl);
    int rc = coll_estimate(t, &default_nccl, op, REDOP_SUM, g, bytes, r,
                           &cause);
    ck_assert_msg(rc == 0, "%s", cause ? cause : "");
}

/* NCCL's defaults with NCCL_ALGO=ALGO and NCCL_PROTO=PROTO. */
static void
forced(struct nccl_config *nc, const char *algo, const char *proto)
{
    char *cause = NULL;
    nccl_config_init(nc);
    ck_assert_int_eq(nccl_config_set_algo(nc, algo, &cause), 0);
    ck_assert_int_eq(nccl_config_set_proto(nc, proto, &cause), 0);
}

#define REL_TOL 1e-9

static struct topo *
test_topo(void)
{
    char *cause = NULL;
    struct topo *t = topo_load("test-2x4", &cause);
    ck_assert_msg(t != NULL, "%s", cause ? cause : "");
    return t;
}

START_TEST(test_coll_ring_allgather_one_node)
{
    /* 4 ranks, 1 GiB gathered.  Simple: latency 8.4 + 3 x max(3.4, 1.0)
     * = 18.6 us; time = 18.6e-6 + (3/4) x 2^30 / 80e9.  LL128 (19.7 us,
     * 0.92 x 80e9) and LL (9.6 us, min(87.7e9, 40e9)) are slower. */
    struct topo *t = test_topo();
    struct coll_group g = {4, 1, 4};
    struct coll_result r;
    estimate(t, COLL_ALLGATHER, &g, 1073741824.0, &r);
    double want = 18.6e-6 + 0.75 * 1073741824.0 / 80e9;
    ck_assert_int_eq(r.algo, NCCL_ALGO_RING);
    ck_assert_int_eq(r.proto, PROTO_SIMPLE);
    ck_assert_double_eq_tol(r.tuning_s, want, want * REL_TOL);
    topo_free(t);
}
END_TEST

START_TEST(test_coll_small_message_uses_ll)
{
    /* 1 KiB over 4 ranks: LL latency 6.6 + 3 x max(0.6, 1.0) = 9.6 us
     * dominates; time = 9.6e-6 + 0.75 x 1024 / 40e9. */
    struct topo *t = test_topo();
    struct coll_group g = {4, 1, 4};
    struct coll_result r;
    estimate(t, COLL_REDUCESCATTER, &g, 1024.0, &r);
    double want = 9.6e-6 + 0.75 * 1024.0 / 40e9;
    ck_assert_int_eq(r.proto, PROTO_LL);
    ck_assert_double_eq_tol(r.tuning_s, want, want * REL_TOL);
    topo_free(t);
}
END_TEST

START_TEST(test_coll_ring_across_nodes)
{
    /* 8 ranks on 2 nodes: bus bandwidth min(80e9, 9.6e9) = 9.6e9.  Simple
     * latency: 7 steps, 1 crossing: 8.4 + 6 x max(3.4, 1.0, 3 x 1.0) +
     * (14.0 + 2 x 0) = 42.8 us (NCCL's IB transport reports no latency to
     * add: net_ib.cc "props->latency = 0"); time = 42.8e-6 + (7/8) x 2^30
     * / 9.6e9. */
    struct topo *t = test_topo();
    struct coll_group g = {8, 2, 4};
    struct coll_result r;
    estimate(t, COLL_ALLGATHER, &g, 1073741824.0, &r);
    double want = 42.8e-6 + 0.875 * 1073741824.0 / 9.6e9;
    ck_assert_int_eq(r.proto, PROTO_SIMPLE);
    ck_assert_double_eq_tol(r.tuning_s, want, want * REL_TOL);
    topo_free(t);
}
END_TEST

START_TEST(test_coll_replicate_group_shares_nics)
{
    /* HSDP replicate all-reduce: 2 ranks, one per node; the 4 such groups
     * of a node share its NIC: 9.6e9 / 4 = 2.4e9.  Tree: the buffer goes
     * up and down through the NIC share once, NCCL's tree busBw = 2 x
     * 2.4e9, times 0.92 (tree all-reduce) and 0.85 (one GPU a node: NCCL
     * builds the simple tree pattern), algorithm
     * bandwidth half of it: 2.4e9 x 0.92 x 0.85 = 1.8768e9; latency 8.4 +
     * 2 x (0 + log2(2) x 14) = 36.4 us.  Ring: 2 crossing steps, latency
     * (8.4 + 2 x 14) x 1.4 (the multi-node plateau) = 50.96 us,
     * algorithm bandwidth 2.4e9 / (2 x 1/2) = 2.4e9: the ring wins at
     * 1 GiB. */
    struct topo *t = test_topo();
    struct coll_group g = {2, 2, 1};
    struct coll_result r;
    estimate(t, COLL_ALLREDUCE, &g, 1073741824.0, &r);
    double want = 50.96e-6 + 1073741824.0 / 2.4e9;
    ck_assert_int_eq(r.algo, NCCL_ALGO_RING);
    ck_assert_int_eq(r.proto, PROTO_SIMPLE);
    ck_assert_double_eq_tol(r.tuning_s, want, want * REL_TOL);
    topo_free(t);
}
END_TEST

START_TEST(test_coll_single_rank_is_free)
{
    struct topo *t = test_topo();
    struct coll_group g = {1, 1, 1};
    struct coll_result r;
    estimate(t, COLL_ALLGATHER, &g, 1e9, &r);
    ck_assert_double_eq(r.time_s, 0.0);
    topo_free(t);
}
END_TEST

START_TEST(test_coll_pcie_has_no_ll128)
{
    /* pcie-a100: LL128 is never chosen over PCIe, whatever the size. */
    char *cause = NULL;
    struct topo *t = topo_load("pcie-a100", &cause);
    struct coll_group g = {8, 1, 8};
    struct coll_result r;
    for (double b = 1024; b < 1e10; b *= 4) {
        estimate(t, COLL_ALLGATHER, &g, b, &r);
        ck_assert_int_ne(r.proto, PROTO_LL128);
    }
    topo_free(t);
}
END_TEST

START_TEST(test_coll_time_grows_with_size)
{
    struct topo *t = test_topo();
    struct coll_group g = {8, 2, 4};
    struct coll_result r;
    double prev = 0;
    for (double b = 8; b < 1e10; b *= 2) {
        estimate(t, COLL_REDUCESCATTER, &g, b, &r);
        ck_assert(r.tuning_s > prev);
        prev = r.tuning_s;
    }
    topo_free(t);
}
END_TEST

static int
estimate_with(const char *topology, int version, const char *algo,
              const char *proto, int max_ch, enum coll_op op,
              enum coll_redop redop, struct coll_group g, double bytes,
              struct coll_result *r, char **cause)
{
    char *why = NULL;
    struct topo *t = topo_load(topology, &why);
    ck_assert_msg(t != NULL, "%s", why ? why : "");
    struct nccl_config nc;
    nccl_config_init(&nc);
    nc.version = version;
    if (algo)
        ck_assert_int_eq(nccl_config_set_algo(&nc, algo, &why), 0);
    if (proto)
        ck_assert_int_eq(nccl_config_set_proto(&nc, proto, &why), 0);
    nc.max_channels = max_ch;
    int rc = coll_estimate(t, &nc, op, redop, &g, bytes, r, cause);
    topo_free(t);
    return rc;
}

START_TEST(test_coll_busbw_identity)
{
    /* nccl-tests: busbw = algbw x (n-1)/n for all-gather and
     * reduce-scatter, x 2(n-1)/n for all-reduce; algbw = size / time. */
    struct topo *t = test_topo();
    struct coll_group g = {8, 2, 4};
    enum coll_op ops[] = {COLL_ALLGATHER, COLL_REDUCESCATTER, COLL_ALLREDUCE};
    double f[] = {7.0 / 8, 7.0 / 8, 14.0 / 8};
    for (int i = 0; i < 3; i++) {
        for (double b = 1024; b < 1e10; b *= 16) {
            struct coll_result r;
            estimate(t, ops[i], &g, b, &r);
            double busbw = b / r.time_s * f[i];
            ck_assert_double_eq_tol(r.bus_Bps, busbw, busbw * REL_TOL);
            ck_assert_double_eq_tol(coll_busbw_factor(ops[i], 8), f[i], 1e-12);
        }
    }
    topo_free(t);
}
END_TEST

START_TEST(test_coll_nvls_for_large_allreduce_on_hopper)
{
    /* DGX H100, 8 ranks: NVLS (NVSwitch multicast, Simple only) has a
     * 25 us latency but twice the ring's bus bandwidth for all-reduce:
     * small buffers go elsewhere, 256 MiB goes to NVLS.  With NCCL_ALGO=
     * Ring, or an AVG reduction (no NVLS kernel), it stays on the ring. */
    struct coll_group g = {8, 1, 8};
    struct coll_result r;
    char *cause = NULL;
    ck_assert_int_eq(estimate_with("dgx-h100", 228, NULL, NULL, 0,
                                   COLL_ALLREDUCE, REDOP_SUM, g, 4096.0, &r,
                                   &cause), 0);
    ck_assert_int_ne(r.algo, NCCL_ALGO_NVLS);
    ck_assert_int_eq(estimate_with("dgx-h100", 228, NULL, NULL, 0,
                                   COLL_ALLREDUCE, REDOP_SUM, g, 268435456.0,
                                   &r, &cause), 0);
    ck_assert_int_eq(r.algo, NCCL_ALGO_NVLS);
    ck_assert_int_eq(r.proto, PROTO_SIMPLE);
    ck_assert_int_eq(estimate_with("dgx-h100", 228, "Ring", NULL, 0,
                                   COLL_ALLREDUCE, REDOP_SUM, g, 268435456.0,
                                   &r, &cause), 0);
    ck_assert_int_eq(r.algo, NCCL_ALGO_RING);
    ck_assert_int_eq(estimate_with("dgx-h100", 228, NULL, NULL, 0,
                                   COLL_ALLREDUCE, REDOP_AVG, g, 268435456.0,
                                   &r, &cause), 0);
    ck_assert_int_ne(r.algo, NCCL_ALGO_NVLS);
    /* Ampere has no NVLS at all. */
    ck_assert_int_eq(estimate_with("dgx-a100-80g", 228, NULL, NULL, 0,
                                   COLL_ALLREDUCE, REDOP_SUM, g, 268435456.0,
                                   &r, &cause), 0);
    ck_assert_int_eq(r.algo, NCCL_ALGO_RING);
}
END_TEST

START_TEST(test_coll_pat_one_gpu_per_node)
{
    /* 64 ranks on 64 nodes (one GPU per node), 1 KiB all-gather on
     * test-2x4.  PAT (2.23+): latency 8 + log2(64) x 14 / 3.5 + 2.8 x 64
     * = 211.2 us, bandwidth 0.75 x 2.4e9.  Ring LL: 6.6 + 63 x 5.0 =
     * 321.6 us (63 network steps at the NET Tree latency when ppn = 1;
     * IB adds no reported latency).  PAT wins in 2.28; 2.22 has no PAT,
     * and NCCL_PROTO=LL rules it out (Simple only). */
    struct coll_group g = {64, 64, 1};
    struct coll_result r;
    char *cause = NULL;
    ck_assert_int_eq(estimate_with("test-2x4", 228, NULL, NULL, 0,
                                   COLL_ALLGATHER, REDOP_SUM, g, 1024.0, &r,
                                   &cause), 0);
    ck_assert_int_eq(r.algo, NCCL_ALGO_PAT);
    double want = 211.2e-6 + 1024.0 / (0.75 * 2.4e9);
    ck_assert_double_eq_tol(r.time_s, want, want * 1e-6);
    ck_assert_int_eq(estimate_with("test-2x4", 222, NULL, NULL, 0,
                                   COLL_ALLGATHER, REDOP_SUM, g, 1024.0, &r,
                                   &cause), 0);
    ck_assert_int_eq(r.algo, NCCL_ALGO_RING);
    ck_assert_int_eq(estimate_with("test-2x4", 228, NULL, "LL", 0,
                                   COLL_ALLGATHER, REDOP_SUM, g, 1024.0, &r,
                                   &cause), 0);
    ck_assert_int_eq(r.algo, NCCL_ALGO_RING);
    ck_assert_int_eq(r.proto, PROTO_LL);
}
END_TEST

START_TEST(test_coll_collnet_needs_sharp)
{
    /* 4 DGX H100 nodes (32 ranks), 1 GiB all-reduce.  Without SHARP
     * (the default) NCCL never picks CollNet.  With inter.sharp=true,
     * CollNet Direct: algorithm bandwidth min(0.9 x NIC share, NVLink)
     * with share = 8 NICs x 400 Gb/s x 12/12.5 = 384e9 B/s -> 345.6e9, and
     * NVLink 450e9 x 20.6/25 = 370.8e9 -> 345.6e9 B/s; latency 2 (3.7 +
     * 0.4 x 7) + 31 + 0 = 44 us (IB reports no latency of its own to
     * NCCL).  Time = 44 us + 2^30 / 345.6e9 s. */
    char *cause = NULL;
    struct topo *t = topo_load("dgx-h100", &cause);
    ck_assert_ptr_nonnull(t);
    t->nodes = 4;
    nccl_config_init(&default_nccl);
    struct coll_group g = {32, 4, 8};
    struct coll_result r;
    ck_assert_int_eq(coll_estimate(t, &default_nccl, COLL_ALLREDUCE,
                                   REDOP_SUM, &g, 1073741824.0, &r, &cause),
                     0);
    ck_assert_int_ne(r.algo, NCCL_ALGO_COLLNET_DIRECT);
    ck_assert_int_ne(r.algo, NCCL_ALGO_COLLNET_CHAIN);
    ck_assert_int_eq(topo_set(t, "inter.sharp=true", &cause), 0);
    /* SHARP in the network is not enough: NCCL_COLLNET_ENABLE is 0 unless
     * set (src/init.cc). */
    ck_assert_int_eq(coll_estimate(t, &default_nccl, COLL_ALLREDUCE,
                                   REDOP_SUM, &g, 1073741824.0, &r, &cause),
                     0);
    ck_assert_int_ne(r.algo, NCCL_ALGO_COLLNET_DIRECT);
    ck_assert_int_ne(r.algo, NCCL_ALGO_COLLNET_CHAIN);
    ck_assert_int_eq(nccl_config_set_var(&default_nccl, "collnet_enable",
                                         "1", &cause), 0);
    ck_assert_int_eq(coll_estimate(t, &default_nccl, COLL_ALLREDUCE,
                                   REDOP_SUM, &g, 1073741824.0, &r, &cause),
                     0);
    ck_assert_int_eq(r.algo, NCCL_ALGO_COLLNET_DIRECT);
    ck_assert_int_eq(r.proto, PROTO_SIMPLE);
    double want = 44e-6 + 1073741824.0 / 345.6e9;
    ck_assert_double_eq_tol(r.time_s, want, want * 1e-9);
    /* All-gather: the switch multicasts, so (N-1)/N of the buffer crosses
     * each node's NICs: 345.6e9 x 4/3 = 460.8e9, capped by NVLink at
     * 370.8e9 B/s.  NCCL 2.19 has no CollNet for all-gather (2.20+). */
    ck_assert_int_eq(coll_estimate(t, &default_nccl, COLL_ALLGATHER,
                                   REDOP_SUM, &g, 1073741824.0, &r, &cause),
                     0);
    ck_assert_int_eq(r.algo, NCCL_ALGO_COLLNET_DIRECT);
    want = 44e-6 + 1073741824.0 / 370.8e9;
    ck_assert_double_eq_tol(r.time_s, want, want * 1e-9);
    struct nccl_config old;
    nccl_config_init(&old);
    old.version = 219;
    old.collnet_enable = 1;
    ck_assert_int_eq(coll_estimate(t, &old, COLL_ALLGATHER, REDOP_SUM, &g,
                                   1073741824.0, &r, &cause), 0);
    ck_assert_int_ne(r.algo, NCCL_ALGO_COLLNET_DIRECT);
    /* One node: nothing for the switch to reduce across. */
    struct coll_group one = {8, 1, 8};
    ck_assert_int_eq(coll_estimate(t, &default_nccl, COLL_ALLREDUCE,
                                   REDOP_SUM, &one, 1073741824.0, &r,
                                   &cause), 0);
    ck_assert_int_ne(r.algo, NCCL_ALGO_COLLNET_DIRECT);
    topo_free(t);
}
END_TEST

START_TEST(test_coll_proto_override)
{
    /* 1 KiB picks LL on one node; NCCL_PROTO=Simple forces Simple:
     * 18.6 us + 768 / 80e9. */
    struct coll_group g = {4, 1, 4};
    struct coll_result r;
    char *cause = NULL;
    ck_assert_int_eq(estimate_with("test-2x4", 228, NULL, "Simple", 0,
                                   COLL_ALLGATHER, REDOP_SUM, g, 1024.0, &r,
                                   &cause), 0);
    ck_assert_int_eq(r.proto, PROTO_SIMPLE);
    double want = 18.6e-6 + 768.0 / 80e9;
    ck_assert_double_eq_tol(r.tuning_s, want, want * REL_TOL);
}
END_TEST

START_TEST(test_coll_max_channels_scales_bandwidth)
{
    /* NCCL_MAX_NCHANNELS=4 of the 8 test-2x4's node opens (its GPUs'
     * 80 GB/s of NVLink: 2 x 40, doubled twice) halves the ring's
     * bandwidth: 18.6 us + 0.75 x 2^30 / 40e9. */
    struct coll_group g = {4, 1, 4};
    struct coll_result r;
    char *cause = NULL;
    ck_assert_int_eq(estimate_with("test-2x4", 228, NULL, NULL, 4,
                                   COLL_ALLGATHER, REDOP_SUM, g, 1073741824.0,
                                   &r, &cause), 0);
    double want = 18.6e-6 + 0.75 * 1073741824.0 / 40e9;
    ck_assert_double_eq_tol(r.tuning_s, want, want * REL_TOL);
    ck_assert_int_eq(r.channels, 4);
}
END_TEST

START_TEST(test_coll_nccl_algo_tree_by_version)
{
    /* NCCL_ALGO=Tree leaves all-gather nothing: 2.18 fails, 2.19-2.23
     * fall back to Ring, 2.24+ refuse it (doc/fsdp-semantics.md §14.2); the
     * per-collective form applies to all-reduce only. */
    struct coll_group g = {8, 1, 8};
    struct coll_result r;
    char *cause = NULL;
    ck_assert_int_eq(estimate_with("dgx-a100-80g", 218, "Tree", NULL, 0,
                                   COLL_ALLGATHER, REDOP_SUM, g, 1e6, &r,
                                   &cause), -1);
    ck_assert_str_eq(cause, "NCCL_ALGO=Tree: NCCL 2.18 has no algorithm left "
                     "for allgather and fails: \"no algorithm/protocol "
                     "available\"");
    free(cause);
    cause = NULL;
    ck_assert_int_eq(estimate_with("dgx-a100-80g", 221, "Tree", NULL, 0,
                                   COLL_ALLGATHER, REDOP_SUM, g, 1e6, &r,
                                   &cause), 0);
    ck_assert_int_eq(r.algo, NCCL_ALGO_RING);
    ck_assert_int_eq(estimate_with("dgx-a100-80g", 228, "Tree", NULL, 0,
                                   COLL_ALLGATHER, REDOP_SUM, g, 1e6, &r,
                                   &cause), -1);
    ck_assert(strstr(cause, "No algorithm/protocol available for function "
                     "AllGather") != NULL);
    free(cause);
    cause = NULL;
    ck_assert_int_eq(estimate_with("dgx-a100-80g", 228, "allreduce:tree",
                                   NULL, 0, COLL_ALLGATHER, REDOP_SUM, g, 1e6,
                                   &r, &cause), 0);
    ck_assert_int_eq(estimate_with("dgx-a100-80g", 228, "allreduce:tree",
                                   NULL, 0, COLL_ALLREDUCE, REDOP_SUM, g, 1e6,
                                   &r, &cause), 0);
    ck_assert_int_eq(r.algo, NCCL_ALGO_TREE);
}
END_TEST

START_TEST(test_coll_nccl_env_errors)
{
    struct nccl_config nc;
    char *cause = NULL;
    nccl_config_init(&nc);
    ck_assert_int_eq(nccl_config_set_algo(&nc, "Rnig", &cause), -1);
    ck_assert_str_eq(cause, "NCCL_ALGO=Rnig: unknown algorithm 'Rnig' (NCCL "
                     "knows Tree, Ring, CollnetDirect, CollnetChain, NVLS, "
                     "NVLSTree, PAT)");
    free(cause);
    nc.version = 222;
    ck_assert_int_eq(nccl_config_set_algo(&nc, "allreduce:tree", &cause), -1);
    ck_assert_str_eq(cause, "NCCL_ALGO=allreduce:tree: per-collective "
                     "settings (\"allreduce:tree\") need NCCL 2.24 or newer; "
                     "NCCL 2.22 reads only a list of algorithms");
    free(cause);
    ck_assert_int_eq(nccl_config_set_proto(&nc, "LL256", &cause), -1);
    ck_assert_str_eq(cause, "NCCL_PROTO=LL256: unknown protocol 'LL256' "
                     "(NCCL knows LL, LL128, Simple)");
    free(cause);
    ck_assert_int_eq(nccl_config_set_version(&nc, "2.16", &cause), -1);
    ck_assert_str_eq(cause, "NCCL 2.16 is not modelled (2.18 to 2.28 are)");
    free(cause);
    ck_assert_int_eq(nccl_config_set_version(&nc, "2.21.5", &cause), 0);
    ck_assert_int_eq(nc.version, 221);
}
END_TEST

/* ---- The data path, hand-derived (coll.c coll_path) ---------------- */

static void
estimate_nc(const struct topo *t, const struct nccl_config *nc,
            enum coll_op op, const struct coll_group *g, double bytes,
            struct coll_result *r)
{
    char *cause = NULL;
    int rc = coll_estimate(t, nc, op, REDOP_SUM, g, bytes, r, &cause);
    ck_assert_msg(rc == 0, "%s", cause ? cause : "");
}

START_TEST(test_path_ring_bandwidth_bound)
{
    /* 4 ranks, 1 GiB all-gather, Ring Simple on 8 channels (NCCL's
     * search on 80 GB/s of NVLink a GPU: 2 channels x 40, 4 x 20, then
     * doubled): bus 80e9 so 10e9 a channel.  Each rank's share per
     * channel 2^30 / 32 = 32 MiB in chunks of 4 MiB / 8 x 4 = 2 MiB: 16
     * loops of 3 steps, 2 slices a step, each slice waiting max(3.4, 1.0)
     * us.  bandwidth 3 x 32 MiB / 10e9; fill 3 x 2 x 3.4 us; later loops
     * 15 x 3 x 2 x 3.4 us; launch 8.4 us. */
    struct topo *t = test_topo();
    struct coll_group g = {4, 1, 4};
    struct coll_result r;
    estimate(t, COLL_ALLGATHER, &g, 1073741824.0, &r);
    ck_assert_int_eq(r.algo, NCCL_ALGO_RING);
    ck_assert_int_eq(r.proto, PROTO_SIMPLE);
    ck_assert_int_eq(r.channels, 8);
    ck_assert_int_eq(r.loops, 16);
    double bw = 3 * 33554432.0 / 10e9;
    ck_assert_double_eq_tol(r.bw_s, bw, bw * REL_TOL);
    ck_assert_double_eq_tol(r.fill_s, 20.4e-6, 1e-12);
    ck_assert_double_eq_tol(r.steplat_s, 306e-6, 1e-12);
    double want = 8.4e-6 + 20.4e-6 + 306e-6 + bw;
    ck_assert_double_eq_tol(r.time_s, want, want * REL_TOL);
    topo_free(t);
}
END_TEST

START_TEST(test_path_ring_pipeline_bound)
{
    /* 4 ranks, 64 KiB all-gather: NCCL picks Ring LL.  Channels: LL's
     * threshold 8 x 4 ranks = 32 B a thread, 512 threads: 65536 <
     * nc x 16384 holds from the node's 8 channels down to nc = 4.  Bus
     * min(87.7e9, 0.5 x 80e9) = 40e9 over 8 channels = 5e9 a channel.
     * One loop, 3 steps of 65536 / 16 = 4096 B, each waiting max(0.6,
     * 1.0) us.  launch 6.6 + fill 3 x 1.0 + bandwidth 3 x 4096 / 5e9. */
    struct topo *t = test_topo();
    struct coll_group g = {4, 1, 4};
    struct coll_result r;
    estimate(t, COLL_ALLGATHER, &g, 65536.0, &r);
    ck_assert_int_eq(r.algo, NCCL_ALGO_RING);
    ck_assert_int_eq(r.proto, PROTO_LL);
    ck_assert_int_eq(r.channels, 4);
    double want = 6.6e-6 + 3e-6 + 3 * 4096 / 5e9;
    ck_assert_double_eq_tol(r.time_s, want, want * REL_TOL);
    ck_assert_double_eq_tol(r.steplat_s, 0, 1e-15);
    topo_free(t);
}
END_TEST

/* Tree Simple all-reduce over 2 nodes x 4 on test-2x4: 2 channels (2 per
 * NIC); bus 0.92 x 2 x 9.6e9 (an Ampere node of 4 GPUs: NCCL's balanced
 * tree pattern, no 0.85), algbw half of it, per channel half again;
 * intra hops faster by 80e9 / 9.6e9.  Hops: 2 x 3 chain hops
 * (max(4.0, 1.0) us each) and 2 tree hops (14 + 2 x 10 us). */
static void
tree_case(double bytes, double *want, struct coll_result *r)
{
    struct topo *t = test_topo();
    struct coll_group g = {8, 2, 4};
    struct nccl_config nc;
    forced(&nc, "Tree", "Simple");
    estimate_nc(t, &nc, COLL_ALLREDUCE, &g, bytes, r);
    ck_assert_int_eq(r->algo, NCCL_ALGO_TREE);
    double ch = 0.5 * 0.92 * 2 * 9.6e9 / 2, in = ch * 80e9 / 9.6e9;
    double C = bytes / 2, chunk = 524288;
    double M = C > chunk ? ceil(C / chunk) : 1, c = C / M;
    double fill = 6 * (c / in + 4e-6) + 2 * (c / ch + 34e-6) - c / ch;
    /* Credits: chunk i + 8 waits for chunk i's slot, a cycle of c / ch
     * plus 2 x 34 us; none wait here (c / ch is 118.7 us at 512 KiB). */
    double lat = floor((M - 1) / 8) * fmax(0, c / ch + 68e-6 - 8 * c / ch);
    *want = 8.4e-6 + fill + M * c / ch + lat;
    ck_assert_double_eq_tol(r->fill_s, fill, fill * REL_TOL);
    topo_free(t);
}

START_TEST(test_path_tree_bandwidth_bound)
{
    struct coll_result r;
    double want;
    tree_case(1073741824.0, &want, &r);      /* 1024 chunks of 512 KiB */
    ck_assert_int_eq(r.loops, 1024);
    ck_assert_double_eq_tol(r.time_s, want, want * REL_TOL);
}
END_TEST

START_TEST(test_path_tree_pipeline_bound)
{
    struct coll_result r;
    double want;
    tree_case(65536.0, &want, &r);           /* one 32 KiB chunk a channel */
    ck_assert_int_eq(r.loops, 1);
    ck_assert(r.fill_s > r.bw_s);
    ck_assert_double_eq_tol(r.time_s, want, want * REL_TOL);
}
END_TEST

/* Ring/Simple all-gather over 2 nodes x 4 on test-2x4 (Ampere, 1 NIC of
 * 10 GB/s, 10 us): 2 channels of 9.6e9 / 2 = 4.8e9 B/s; 7 steps of 2
 * slices, each slice's sync at its rank max(3.4, 1, 3 x 1) = 3.4 us; the
 * critical path crosses the network ceil(7 / 4) = 2 times at 14 + 2 x 10
 * = 34 us (GDR flush on Ampere); launch 8.4 us. */
static void
ring_net_case(double bytes, struct coll_result *r)
{
    struct topo *t = test_topo();
    struct coll_group g = {8, 2, 4};
    struct nccl_config nc;
    forced(&nc, "Ring", "Simple");
    estimate_nc(t, &nc, COLL_ALLGATHER, &g, bytes, r);
    ck_assert_int_eq(r->channels, 2);
    ck_assert_int_eq(r->net_hops, 2);
    ck_assert_double_eq_tol(r->net_lat_s, 34e-6, 1e-12);
    topo_free(t);
}

START_TEST(test_path_ring_net_bandwidth_bound)
{
    /* 1 GiB: 64 MiB a rank and channel in 32 loops of 2 MiB chunks; a
     * slice (1 MiB, 218.45 us) plus its sync outlasts the credit cycle
     * over 4 slices in flight, so no credit waits. */
    struct coll_result r;
    ring_net_case(1073741824.0, &r);
    double c = 2097152, per = 4.8e9;
    double want = 8.4e-6 + 7 * 32 * c / per + (7 * 2 * 3.4e-6 + 2 * 34e-6)
                  + 31 * 7 * 2 * 3.4e-6;
    ck_assert_int_eq(r.loops, 32);
    ck_assert_double_eq_tol(r.time_s, want, want * REL_TOL);
}
END_TEST

START_TEST(test_path_ring_net_pipeline_bound)
{
    /* 64 KiB: one loop of 4 KiB chunks, 14 slices of 2 KiB (0.4267 us).
     * With 4 slices in flight, each later group of 4 waits 0.4267 + 3.4 +
     * 2 x 34 - 4 x 3.8267 us for credits: 3 groups, less the 2 x 34 us the
     * fill already waits on the network. */
    struct coll_result r;
    ring_net_case(65536.0, &r);
    double ts = 2048 / 4.8e9, o = 3.4e-6;
    double stall = 3 * (ts + o + 68e-6 - 4 * (ts + o)) - 68e-6;
    double want = 8.4e-6 + 7 * 4096 / 4.8e9 + (7 * 2 * o + 68e-6) + stall;
    ck_assert_int_eq(r.loops, 1);
    ck_assert_double_eq_tol(r.steplat_s, stall, stall * REL_TOL);
    ck_assert_double_eq_tol(r.time_s, want, want * REL_TOL);
}
END_TEST

/* The same tree with a network step of 600 us (a far, slow fabric):
 * hop 14 + 2 x 600 = 1214 us, so a slot's cycle, 118.7 + 2428 us, is more
 * than 8 chunk transfers (950 us): of 1024 chunks a channel, every group
 * of 8 after the first (floor(1023 / 8) = 127) waits 118.7 + 2428 - 8 x
 * 118.7 us for its credits. */
START_TEST(test_path_tree_credit_bound)
{
    struct topo *t = test_topo();
    char *cause = NULL;
    ck_assert_int_eq(topo_set(t, "inter.latency=600us", &cause), 0);
    struct coll_group g = {8, 2, 4};
    struct nccl_config nc;
    struct coll_result r;
    forced(&nc, "Tree", "Simple");
    estimate_nc(t, &nc, COLL_ALLREDUCE, &g, 1073741824.0, &r);
    double ch = 0.5 * 0.92 * 2 * 9.6e9 / 2, c = 524288;
    double wait = 127 * (c / ch + 2 * 1214e-6 - 8 * c / ch);
    ck_assert_int_eq(r.loops, 1024);
    ck_assert_double_eq_tol(r.steplat_s, wait, wait * REL_TOL);
    topo_free(t);
}
END_TEST

/* Where NCCL flushes a GPUDirect receive (Ampere and older) a Simple
 * network step pays the latency twice (14 + 2 x 10 us on test-2x4); on
 * Hopper, or without GPUDirect RDMA (NCCL_NET_GDR_LEVEL=PIX, nearer than
 * the PXB path to the NIC), once (14 + 10 us).  Without GPUDirect the
 * NIC's bytes cross the GPUs' host links: 4 x 1 GB/s < 10 GB/s. */
START_TEST(test_path_flush_and_gdr)
{
    struct topo *t = test_topo();
    char *cause = NULL;
    struct coll_group g = {8, 2, 4};
    struct nccl_config nc;
    struct coll_result ampere, hopper, nogdr, slowhost;
    forced(&nc, "Tree", "Simple");
    estimate_nc(t, &nc, COLL_ALLREDUCE, &g, 1073741824.0, &ampere);
    ck_assert_double_eq_tol(ampere.hop_lat_s, 34e-6, 1e-12);
    ck_assert_int_eq(topo_set(t, "gpu.arch=hopper", &cause), 0);
    estimate_nc(t, &nc, COLL_ALLREDUCE, &g, 1073741824.0, &hopper);
    ck_assert_double_eq_tol(hopper.hop_lat_s, 24e-6, 1e-12);
    ck_assert_int_eq(topo_set(t, "gpu.arch=ampere", &cause), 0);
    ck_assert_int_eq(nccl_config_set_var(&nc, "NCCL_NET_GDR_LEVEL", "PIX",
                                         &cause), 0);
    estimate_nc(t, &nc, COLL_ALLREDUCE, &g, 1073741824.0, &nogdr);
    ck_assert_double_eq_tol(nogdr.hop_lat_s, 24e-6, 1e-12);
    ck_assert_int_eq(topo_set(t, "host.pcie_bandwidth=1GBps", &cause), 0);
    estimate_nc(t, &nc, COLL_ALLREDUCE, &g, 1073741824.0, &slowhost);
    ck_assert_double_eq_tol(slowhost.chan_Bps, nogdr.chan_Bps * 0.4,
                            nogdr.chan_Bps * 1e-9);
    topo_free(t);
}
END_TEST

/* NCCL_P2P_LEVEL=LOC is NCCL_P2P_DISABLE=1 (paths.cc ncclGetLevel);
 * NVL or farther keeps NVLink P2P. */
START_TEST(test_path_p2p_level)
{
    struct topo *t = test_topo();
    char *cause = NULL;
    struct coll_group g = {4, 1, 4};
    struct nccl_config nc;
    struct coll_result dflt, loc, off, nvl;
    nccl_config_init(&nc);
    estimate_nc(t, &nc, COLL_ALLREDUCE, &g, 1e8, &dflt);
    ck_assert_int_eq(nccl_config_set_var(&nc, "p2p_level", "LOC", &cause), 0);
    estimate_nc(t, &nc, COLL_ALLREDUCE, &g, 1e8, &loc);
    nccl_config_init(&nc);
    ck_assert_int_eq(nccl_config_set_var(&nc, "p2p_disable", "1", &cause), 0);
    estimate_nc(t, &nc, COLL_ALLREDUCE, &g, 1e8, &off);
    ck_assert_double_eq_tol(loc.time_s, off.time_s, off.time_s * 1e-12);
    ck_assert(loc.time_s > dflt.time_s);
    nccl_config_init(&nc);
    ck_assert_int_eq(nccl_config_set_var(&nc, "p2p_level", "2", &cause), 0);
    ck_assert_int_eq(nc.p2p_level, PATH_LEVEL_PXB);    /* old numbering */
    ck_assert_int_eq(nccl_config_set_var(&nc, "p2p_level", "NVL", &cause), 0);
    estimate_nc(t, &nc, COLL_ALLREDUCE, &g, 1e8, &nvl);
    ck_assert_double_eq_tol(nvl.time_s, dflt.time_s, dflt.time_s * 1e-12);
    topo_free(t);
}
END_TEST

/* The built-in topology NAME, loaded or the test fails. */
static struct topo *
builtin_topo(const char *name)
{
    char *cause = NULL;
    struct topo *t = topo_load(name, &cause);
    ck_assert_msg(t != NULL, "%s", cause ? cause : "");
    return t;
}

START_TEST(test_path_nvls_enable_0_moves_to_ring)
{
    char *cause = NULL;
    struct topo *t = builtin_topo("dgx-h100");
    struct coll_group g = {8, 1, 8};
    struct nccl_config nc;
    struct coll_result r;
    double b = 17179869184.0;
    nccl_config_init(&nc);
    estimate_nc(t, &nc, COLL_ALLREDUCE, &g, b, &r);
    ck_assert_int_eq(r.algo, NCCL_ALGO_NVLS);
    ck_assert_msg(r.bus_Bps > 460e9 && r.bus_Bps < 500e9, "%g", r.bus_Bps);
    ck_assert_int_eq(nccl_config_set_var(&nc, "nvls_enable", "0", &cause), 0);
    estimate_nc(t, &nc, COLL_ALLREDUCE, &g, b, &r);
    ck_assert_int_eq(r.algo, NCCL_ALGO_RING);
    ck_assert_msg(r.bus_Bps > 340e9 && r.bus_Bps < 380e9, "%g", r.bus_Bps);
    topo_free(t);
}
END_TEST

/* NVLS buffers on 8 H100s: 8 heads x 16 channels x 2 x 8 steps x 128 KiB
 * = 256 MiB, plus 16 x 2 x 64 B x 8 = 16 KiB of credits rounded to one
 * 2 MiB granule: 258 MiB; none with NCCL_NVLS_ENABLE=0 or on A100. */
START_TEST(test_nvls_buffer_bytes)
{
    char *cause = NULL;
    struct topo *t = topo_load("dgx-h100", &cause);
    ck_assert_ptr_nonnull(t);
    struct nccl_config nc;
    nccl_config_init(&nc);
    ck_assert_double_eq(coll_nvls_buffer_bytes(t, &nc, 8),
                        258.0 * 1048576);
    ck_assert_int_eq(nccl_config_set_var(&nc, "nvls_enable", "0", &cause), 0);
    ck_assert_double_eq(coll_nvls_buffer_bytes(t, &nc, 8), 0);
    topo_free(t);
    t = topo_load("dgx-a100-80g", &cause);
    nccl_config_init(&nc);
    ck_assert_double_eq(coll_nvls_buffer_bytes(t, &nc, 8), 0);
    topo_free(t);
}
END_TEST

/* comm->nChannels of a communicator spanning 4 nodes with only some of
 * each node's GPUs (coll.c partial_node_channels), derived by hand from
 * NCCL 2.28's search (search.cc ncclTopoCompute) and ncclTopoPostset.
 * NCCL's units, GB/s: a GPU's PCIe x16 link 24 (Gen4, A100) or 48 (Gen5,
 * H100), a NIC its speed / 8: HDR 25, NDR 50, EFA 12.5; NVLink 12 x 20 =
 * 240 (A100), 18 x 20.6 = 370.8 (H100).  A channel takes its speed off
 * one NIC and, each way, off one GPU's PCIe link, and off every GPU's
 * NVLink when there are two or more.
 *  - dgx-a100-80g, 1 GPU a node (its own HDR NIC): the paths allow 24;
 *    at 24 one channel (24/24 PCIe), 24 GB/s; 20, 18, 15 give one, 12
 *    gives two (24, not more); 10/24 < 0.49 stops.  24 < 25: no
 *    ncclTopoDupChannels.  Postset doubles: 2.  With 2 and 4 GPUs a node
 *    (every 4th, every 2nd GPU, each its NIC): 2 and 4 channels at 24,
 *    doubled: 4 and 8.  The full node keeps 16.
 *  - dgx-h100, 1 GPU a node: 48 (PCIe and NDR) carries one channel;
 *    slower speeds to 24 give at most 48 in all; 20/48 < 0.49 stops.
 *    DupChannels: 48 >= 25, one channel (not > 4): 2 at 24; pass 2 finds
 *    no faster speed with 2.  Postset: 4; 24 is not above 45, so no
 *    second doubling: 4.  2 GPUs: 2 at 48, dup 4 at 24, postset 8;
 *    4 GPUs: 4 at 48 (not > 4), dup 8, postset 16; 5 GPUs: 5 at 48
 *    (NVLink 370.8 / 48 = 7), 5 > 4 below 50: no dup; postset 10, and
 *    48 > 45 with 10 < 16 doubles again ("4 compute channels per search
 *    channel ... on <8 PPN"): 20.  The full node keeps 16.
 *  - aws-p4de (4 EFA, one per GPU pair), 1 GPU: 12.5 allows 12, one
 *    channel a NIC; 6 gives 2 x 6 = 12, no more: 1, doubled 2; 2 GPUs on
 *    two NICs: 4.  The full node keeps 8.
 *  - aws-p5: aws-ofi-nccl's RDMA protocol shows NCCL each GPU's 4 EFA as
 *    one device of 4 x 12.5 = 50 GB/s ([inter] plugin_nic_group = 4), 8
 *    in all: as dgx-h100, 4 channels with one GPU a node, 28 with 7, and
 *    the full node 2 x 8 = 16.
 *  - the same 32 EFA seen one by one (plugin_nic_group = 1), 7 GPUs: at
 *    12 one channel a NIC, 28 NICs and 7 x 4 on PCIe (48 / 12), NVLink
 *    370.8 / 12 = 30: 28; 6 gives 56 x 6, capped at 32: 192, less.  Below
 *    25 no dup; postset 56 (MAXCHANNELS 64 from 2.25); NCCL 2.24: the
 *    ring graph stops at MAXCHANNELS / 2 = 16, doubled 32.
 *  - NCCL_MAX_NCHANNELS=2 still caps: 2.
 *  - one node (2 GPUs of a dgx-h100) is not a network graph: 32. */
START_TEST(test_partial_node_channels)
{
    static const struct {
        const char *topo;
        int gpus, channels;
    } cases[] = {
        {"dgx-a100-80g", 1, 2}, {"dgx-a100-80g", 2, 4},
        {"dgx-a100-80g", 4, 8}, {"dgx-a100-80g", 8, 16},
        {"dgx-h100", 1, 4},     {"dgx-h100", 2, 8},
        {"dgx-h100", 4, 16},    {"dgx-h100", 5, 20},
        {"dgx-h100", 8, 16},    {"aws-p4de", 1, 2},
        {"aws-p4de", 2, 4},     {"aws-p4de", 8, 8},
        {"aws-p5", 1, 4},       {"aws-p5", 7, 28},
        {"aws-p5", 8, 16},
    };
    char *cause = NULL;
    struct nccl_config nc;
    struct coll_result r;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct topo *t = topo_load(cases[i].topo, &cause);
        ck_assert_ptr_nonnull(t);
        nccl_config_init(&nc);
        struct coll_group g = {4 * cases[i].gpus, 4, cases[i].gpus};
        estimate_nc(t, &nc, COLL_ALLREDUCE, &g, 1 << 26, &r);
        ck_assert_msg(r.comm_channels == cases[i].channels,
                      "%s, %d GPUs a node: %d channels, expected %d",
                      cases[i].topo, cases[i].gpus, r.comm_channels,
                      cases[i].channels);
        topo_free(t);
    }
    struct topo *t = topo_load("aws-p5", &cause);
    ck_assert_ptr_nonnull(t);
    t->plugin_nic_group = 1;
    nccl_config_init(&nc);
    struct coll_group seven = {28, 4, 7};
    estimate_nc(t, &nc, COLL_ALLREDUCE, &seven, 1 << 26, &r);
    ck_assert_int_eq(r.comm_channels, 56);
    ck_assert_int_eq(nccl_config_set_version(&nc, "2.24", &cause), 0);
    estimate_nc(t, &nc, COLL_ALLREDUCE, &seven, 1 << 26, &r);
    ck_assert_int_eq(r.comm_channels, 32);
    topo_free(t);
    t = topo_load("dgx-h100", &cause);
    ck_assert_ptr_nonnull(t);
    nccl_config_init(&nc);
    nc.max_channels = 2;
    struct coll_group one = {4, 4, 1}, pair = {2, 1, 2};
    estimate_nc(t, &nc, COLL_ALLREDUCE, &one, 1 << 26, &r);
    ck_assert_int_eq(r.comm_channels, 2);
    nccl_config_init(&nc);
    estimate_nc(t, &nc, COLL_ALLGATHER, &pair, 1 << 26, &r);
    ck_assert_int_eq(r.comm_channels, 32);
    topo_free(t);
}
END_TEST

/* Connection buffers a GPU holds (coll_conn_buffer_bytes), by hand from
 * NCCL's sources: LL 512 KiB, LL128 4800 KiB, Simple 4096 KiB
 * (init.cc computeBuffSizes), a 4 KiB control struct on each end
 * (ncclSendMem / ncclRecvMem), each P2P end rounded up to 2 MiB
 * (p2p.cc CUDA_IPC_MIN).
 *  - 8 H100s on NVSwitch, Ring on 32 channels, P2P write: the sender's
 *    end 4 KiB -> 2 MiB, the receiver's 4 + 512 + 4800 + 4096 = 9412 KiB
 *    -> 10 MiB; each GPU sends once and receives once a channel:
 *    32 x 12 MiB = 384 MiB.
 *  - 8 A100s, Ring on 16 channels, P2P read (sm_80 over NVLink): Simple
 *    moves to the sender, 4 KiB + 4 MiB -> 6 MiB; the receiver
 *    4 + 512 + 4800 = 5316 KiB -> 6 MiB: 16 x 12 MiB = 192 MiB.
 *  - 2 nodes of 8 H100s, Ring on 16 channels (two per NIC): a node's
 *    ring has 7 P2P hops and one network hop a channel; with GPUDirect
 *    the network sender maps LL128 + Simple = 8896 KiB -> 10 MiB (LL in
 *    host memory), the receiver all three, 9408 KiB -> 10 MiB:
 *    (7 x 12 + 20) / 8 = 13 MiB a GPU a channel, 208 MiB; without GDR
 *    (NCCL_NET_GDR_LEVEL=LOC) the network's buffers are host memory:
 *    7 x 12 / 8 x 16 = 168 MiB.
 *  - the same 2 nodes with Tree as well (an all-reduce): each node's
 *    chain of 8 has 7 links, one way of each the ring's already (rings
 *    step to GPU index + 1, trees to index - 1), so 7 P2P connections
 *    more, and the tree over 2 nodes has 1 edge, both ways at both
 *    ends: 2 x 1 / 2 network connections a node; (7 x 12 + 20) / 8 =
 *    13 MiB a channel more, 416 MiB with the ring's; Tree alone
 *    (14 x 12 + 20) / 8 = 23.5 MiB a channel, 376 MiB.
 *  - 16 nodes of one GPU (an HSDP replicate group), 16 channels, all
 *    network: Tree, up and down both ways over a tree of 15 edges:
 *    2 x 15 / 16 x 20 MiB = 37.5 MiB a channel, 600 MiB; Ring and PAT:
 *    peers +-1, +-2, +-4 and 8, 7 of them, the ring's two among them:
 *    7 x 20 x 16 = 2240 MiB; Ring alone 20 x 16 = 320 MiB.
 *  - NCCL_P2P_DISABLE=1: SHM buffers live in host memory: 0. */
START_TEST(test_conn_buffer_bytes)
{
    const double mib = 1048576;
    const unsigned ring = 1u << NCCL_ALGO_RING, tree = 1u << NCCL_ALGO_TREE,
                   pat = 1u << NCCL_ALGO_PAT;
    char *cause = NULL;
    struct topo *t = topo_load("dgx-h100", &cause);
    ck_assert_ptr_nonnull(t);
    struct nccl_config nc;
    nccl_config_init(&nc);
    struct coll_group node = {8, 1, 8}, two = {16, 2, 8}, rep = {16, 16, 1};
    ck_assert_double_eq(coll_conn_buffer_bytes(t, &nc, &node, 32, ring),
                        384 * mib);
    /* The communicator's channels are what coll_estimate says. */
    struct coll_result r;
    estimate_nc(t, &nc, COLL_ALLGATHER, &node, 1 << 20, &r);
    ck_assert_int_eq(r.comm_channels, 32);
    estimate_nc(t, &nc, COLL_ALLGATHER, &two, 1 << 20, &r);
    ck_assert_int_eq(r.comm_channels, 16);
    ck_assert_double_eq(coll_conn_buffer_bytes(t, &nc, &two, 16, ring),
                        208 * mib);
    ck_assert_double_eq(coll_conn_buffer_bytes(t, &nc, &two, 16,
                                               ring | tree), 416 * mib);
    ck_assert_double_eq(coll_conn_buffer_bytes(t, &nc, &two, 16, tree),
                        376 * mib);
    ck_assert_double_eq(coll_conn_buffer_bytes(t, &nc, &rep, 16, tree),
                        600 * mib);
    ck_assert_double_eq(coll_conn_buffer_bytes(t, &nc, &rep, 16, ring | pat),
                        2240 * mib);
    ck_assert_double_eq(coll_conn_buffer_bytes(t, &nc, &rep, 16, ring),
                        320 * mib);
    ck_assert_int_eq(nccl_config_set_var(&nc, "net_gdr_level", "LOC",
                                         &cause), 0);
    ck_assert_double_eq(coll_conn_buffer_bytes(t, &nc, &two, 16, ring),
                        168 * mib);
    nccl_config_init(&nc);
    ck_assert_int_eq(nccl_config_set_var(&nc, "p2p_disable", "1", &cause),
                     0);
    ck_assert_double_eq(coll_conn_buffer_bytes(t, &nc, &node, 32, ring), 0);
    topo_free(t);
    t = topo_load("dgx-a100-80g", &cause);
    ck_assert_ptr_nonnull(t);
    nccl_config_init(&nc);
    ck_assert_double_eq(coll_conn_buffer_bytes(t, &nc, &node, 16, ring),
                        192 * mib);
    topo_free(t);
}
END_TEST

/* NVLS's step and its buffers by version and plugin, on 8 H100s: before
 * 2.21 NVLS used the Simple buffers, NCCL_BUFFSIZE (4 MiB) each: 8 x 16 x
 * 2 x 4 MiB = 1 GiB + the 2 MiB credit granule; from 2.21 an
 * NCCL_NVLS_CHUNKSIZE of 512 KiB (aws-ofi-nccl on p5) gives 8 x 16 x 2 x
 * 8 x 512 KiB, the same 1026 MiB. */
START_TEST(test_nvls_step_by_version_and_plugin)
{
    char *cause = NULL;
    struct topo *t = topo_load("dgx-h100", &cause);
    ck_assert_ptr_nonnull(t);
    struct nccl_config nc;
    nccl_config_init(&nc);
    ck_assert_int_eq(nccl_config_set_version(&nc, "2.20", &cause), 0);
    ck_assert_double_eq(coll_nvls_buffer_bytes(t, &nc, 8),
                        1026.0 * 1048576);
    nccl_config_init(&nc);
    ck_assert_int_eq(topo_set(t, "inter.plugin_nvls_chunksize=512KiB",
                              &cause), 0);
    ck_assert_double_eq(coll_nvls_buffer_bytes(t, &nc, 8),
                        1026.0 * 1048576);
    topo_free(t);
}
END_TEST

/* NVLS Tree's chunk for a 4 GiB all-reduce of 8 H100s a node (16
 * channels x 8 heads = 128 concurrent ops, 32 MiB each): no size rule
 * shrinks a chunk of 512 KiB or less here (4 GiB >= 32 x 128 x 512 KiB).
 * 2.28: NCCL_NVLS_CHUNKSIZE, 128 KiB, on 2 nodes; 64 KiB from 4 nodes
 * (treeMaxChunkSize); the plugin's 512 KiB replaces both.  2.19 and 2.20
 * start from the Simple step, 4 MiB / 8 = 512 KiB, on 2 nodes, and cap it
 * at 64 KiB from 4. */
static double
nvls_tree_chunk(const char *version, int nodes, const char *plugin)
{
    char *cause = NULL;
    struct topo *t = topo_load("dgx-h100", &cause);
    ck_assert_ptr_nonnull(t);
    if (plugin != NULL)
        ck_assert_int_eq(topo_set(t, plugin, &cause), 0);
    struct nccl_config nc;
    forced(&nc, "NVLSTree", "Simple");
    ck_assert_int_eq(nccl_config_set_version(&nc, version, &cause), 0);
    struct coll_group g = {8 * nodes, nodes, 8};
    struct coll_result r;
    estimate_nc(t, &nc, COLL_ALLREDUCE, &g, 4294967296.0, &r);
    ck_assert_int_eq(r.algo, NCCL_ALGO_NVLS_TREE);
    topo_free(t);
    return r.chunk_bytes;
}

START_TEST(test_nvls_tree_chunk)
{
    const char *p5 = "inter.plugin_nvls_chunksize=512KiB";
    ck_assert_double_eq(nvls_tree_chunk("2.28", 2, NULL), 131072);
    ck_assert_double_eq(nvls_tree_chunk("2.28", 4, NULL), 65536);
    ck_assert_double_eq(nvls_tree_chunk("2.28", 2, p5), 524288);
    ck_assert_double_eq(nvls_tree_chunk("2.28", 4, p5), 524288);
    ck_assert_double_eq(nvls_tree_chunk("2.20", 2, NULL), 524288);
    ck_assert_double_eq(nvls_tree_chunk("2.19", 4, NULL), 65536);
}
END_TEST

START_TEST(test_path_socket_slower_than_ib)
{
    struct topo *t = test_topo();
    t->net = NET_IB;
    struct coll_group g = {8, 2, 4};
    struct nccl_config nc;
    struct coll_result ib, sock, more;
    char *cause = NULL;
    nccl_config_init(&nc);
    estimate_nc(t, &nc, COLL_ALLREDUCE, &g, 1073741824.0, &ib);
    ck_assert_int_eq(nccl_config_set_var(&nc, "NCCL_IB_DISABLE", "1", &cause),
                     0);
    estimate_nc(t, &nc, COLL_ALLREDUCE, &g, 1073741824.0, &sock);
    ck_assert_msg(sock.time_s > 2 * ib.time_s, "%g %g", sock.time_s,
                  ib.time_s);
    /* More sockets help, up to the NIC. */
    ck_assert_int_eq(nccl_config_set_var(&nc, "socket_nthreads", "4",
                                         &cause), 0);
    ck_assert_int_eq(nccl_config_set_var(&nc, "nsocks_perthread", "4",
                                         &cause), 0);
    estimate_nc(t, &nc, COLL_ALLREDUCE, &g, 1073741824.0, &more);
    ck_assert_msg(more.time_s < sock.time_s && more.time_s > ib.time_s,
                  "%g %g %g", more.time_s, sock.time_s, ib.time_s);
    topo_free(t);
}
END_TEST

static void
refused(const char *var, const char *val, const char *needle)
{
    struct nccl_config nc;
    char *cause = NULL;
    nccl_config_init(&nc);
    ck_assert_int_eq(nccl_config_set_var(&nc, var, val, &cause), -1);
    ck_assert_msg(cause && strstr(cause, needle), "%s=%s: %s", var, val,
                  cause ? cause : "(no message)");
    free(cause);
}

START_TEST(test_path_refusals)
{
    refused("NCCL_NVLS_ENABLE", "3", "write 0, 1 or 2");
    refused("nvls_enable", "yes", "Invalid value yes for NCCL_NVLS_ENABLE");
    refused("NCCL_BUFFSIZE", "1000", "multiple of 128");
    refused("NCCL_NTHREADS", "100", "must be a multiple of 32");
    refused("NCCL_NTHREADS", "1024", "maximum 512");
    refused("NCCL_IB_DISABLE", "2", "write 0 or 1");
    refused("NCCL_P2P_DISABLE", "x", "Invalid value");
    refused("NCCL_SOCKET_NTHREADS", "17", "setting to 16");
    refused("NCCL_NSOCKS_PERTHREAD", "65", "at most 64");
    refused("NCCL_FOO", "1", "unknown NCCL variable");
    refused("NCCL_P2P_LEVEL", "nvl", "ignores anything else");
    refused("NCCL_NET_GDR_LEVEL", "NET", "ignores anything else");
    refused("NCCL_CROSS_NIC", "3", "write 0, 1 or 2");
    refused("NCCL_COLLNET_ENABLE", "2", "write 0 (the default) or 1");
    struct nccl_config nc;
    char *cause = NULL;
    nccl_config_init(&nc);
    ck_assert_int_eq(nccl_config_set_var(&nc, "NCCL_SOCKET_NTHREADS", "8",
                                         &cause), 0);
    ck_assert_int_eq(nccl_config_set_var(&nc, "NCCL_NSOCKS_PERTHREAD", "16",
                                         &cause), -1);
    ck_assert_msg(strstr(cause, "setting NCCL_NSOCKS_PERTHREAD to 8"), "%s",
                  cause);
    free(cause);
    /* NVLS forced on where there is no multicast: NCCL fails. */
    struct topo *t = test_topo();
    struct coll_group g = {4, 1, 4};
    struct coll_result r;
    cause = NULL;
    nccl_config_init(&nc);
    ck_assert_int_eq(nccl_config_set_var(&nc, "NCCL_NVLS_ENABLE", "1",
                                         &cause), 0);
    ck_assert_int_eq(coll_estimate(t, &nc, COLL_ALLREDUCE, REDOP_SUM, &g,
                                   1e6, &r, &cause), -1);
    ck_assert_msg(strstr(cause, "no NVSwitch multicast"), "%s", cause);
    free(cause);
    topo_free(t);
}
END_TEST


/* NCCL's tree estimate, 1 GiB all-reduce over 2 nodes x 4 on test-2x4
 * (no tree correction from 2^24 lines of 64 B up).  Simple: busBw 2 x
 * 9.6e9 x 0.92 = 17.664e9, algbw half of it; latency 8.4 + 2 x (3 x 4.0
 * + 14) = 60.4 us (IB reports no latency for NCCL to add).  Only where NCCL builds the simple tree
 * pattern (Hopper; from 2.19) does it take 0.85 of that.  LL128 takes
 * 0.92 first too, then 120/128: 16.56e9 (under its 2 x 20e9 cap);
 * latency 14 + 2 x (3 x 1.25 + 8.5) = 38.5 us. */
START_TEST(test_coll_tree_pattern_and_factor)
{
    struct topo *t = test_topo();
    char *cause = NULL;
    struct coll_group g = {8, 2, 4};
    struct nccl_config nc;
    struct coll_result r;
    double B = 1073741824.0;
    forced(&nc, "Tree", "Simple");
    estimate_nc(t, &nc, COLL_ALLREDUCE, &g, B, &r);
    double want = 60.4e-6 + B / (0.5 * 17.664e9);
    ck_assert_double_eq_tol(r.tuning_s, want, want * REL_TOL);
    ck_assert_int_eq(topo_set(t, "gpu.arch=hopper", &cause), 0);
    estimate_nc(t, &nc, COLL_ALLREDUCE, &g, B, &r);
    want = 60.4e-6 + B / (0.5 * 17.664e9 * 0.85);
    ck_assert_double_eq_tol(r.tuning_s, want, want * REL_TOL);
    ck_assert_int_eq(nccl_config_set_version(&nc, "2.18", &cause), 0);
    estimate_nc(t, &nc, COLL_ALLREDUCE, &g, B, &r);
    want = 60.4e-6 + B / (0.5 * 17.664e9);
    ck_assert_double_eq_tol(r.tuning_s, want, want * REL_TOL);
    ck_assert_int_eq(topo_set(t, "gpu.arch=ampere", &cause), 0);
    forced(&nc, "Tree", "LL128");
    estimate_nc(t, &nc, COLL_ALLREDUCE, &g, B, &r);
    want = 38.5e-6 + B / (0.5 * 16.56e9);
    ck_assert_int_eq(r.proto, PROTO_LL128);
    ck_assert_double_eq_tol(r.tuning_s, want, want * REL_TOL);
    topo_free(t);
}
END_TEST

/* A tree over more than two nodes (trees.cc ncclGetDtree): every node
 * is an inner node of one tree and a leaf of the other, and from four
 * nodes on some inner node has two children, so its NICs carry the
 * buffer twice each way (S/2 up and 2 x S/2 down in one tree, S/2 as a
 * leaf in the other), as a ring's do.  1 GiB Tree/Simple over 4 nodes x
 * 4 on test-2x4: NCCL's estimate takes bwInter, not doubled: busBw 0.92
 * x 9.6e9 = 8.832e9, algbw half of it; latency 8.4 + 2 x (3 x 4.0 +
 * log2(4) x 14) = 88.4 us.  The data path moves 1024 chunks of
 * 512 KiB a channel at 0.5 x 8.832e9 / 2 B/s.  Over 3 nodes (a chain:
 * 1.5 passes) the data path is 4/3 as fast and NCCL's estimate the same
 * bandwidth; over 2 nodes (one pass) both are twice as fast
 * (test_coll_tree_pattern_and_factor, tree_case). */
START_TEST(test_coll_tree_nic_passes)
{
    struct topo *t = test_topo();
    struct nccl_config nc;
    struct coll_result r;
    double B = 1073741824.0, half = 536870912.0;
    forced(&nc, "Tree", "Simple");
    struct coll_group g4 = {16, 4, 4};
    estimate_nc(t, &nc, COLL_ALLREDUCE, &g4, B, &r);
    double want = 88.4e-6 + B / (0.5 * 8.832e9);
    ck_assert_double_eq_tol(r.tuning_s, want, want * REL_TOL);
    double ch = 0.5 * 8.832e9 / 2;
    ck_assert_double_eq_tol(r.bw_s, half / ch, half / ch * REL_TOL);
    struct coll_group g3 = {12, 3, 4};
    estimate_nc(t, &nc, COLL_ALLREDUCE, &g3, B, &r);
    want = 8.4e-6 + 2 * (12e-6 + log2(3) * 14e-6) + B / (0.5 * 8.832e9);
    ck_assert_double_eq_tol(r.tuning_s, want, want * REL_TOL);
    ck_assert_double_eq_tol(r.bw_s, half / (ch * 4 / 3),
                            half / (ch * 4 / 3) * REL_TOL);
    topo_free(t);
}
END_TEST

/* A network plugin's NCCL_BUFFSIZE (aws-ofi-nccl: 8 MiB): the 1 GiB
 * all-gather of test_path_ring_bandwidth_bound cuts each rank's 32 MiB a
 * channel into chunks of 8 MiB / 8 x 4 = 4 MiB, 8 loops instead of 16;
 * the user's own NCCL_BUFFSIZE wins over the plugin's. */
START_TEST(test_path_plugin_buffsize)
{
    struct topo *t = test_topo();
    char *cause = NULL;
    struct coll_group g = {4, 1, 4};
    struct nccl_config nc;
    struct coll_result r;
    ck_assert_int_eq(topo_set(t, "inter.plugin_buffsize=8MiB", &cause), 0);
    estimate(t, COLL_ALLGATHER, &g, 1073741824.0, &r);
    ck_assert_int_eq(r.proto, PROTO_SIMPLE);
    ck_assert_int_eq(r.loops, 8);
    ck_assert_double_eq(r.buffsize, 8388608.0);
    ck_assert(r.buffsize_from_plugin);
    nccl_config_init(&nc);
    ck_assert_int_eq(nccl_config_set_var(&nc, "NCCL_BUFFSIZE", "4194304",
                                         &cause), 0);
    estimate_nc(t, &nc, COLL_ALLGATHER, &g, 1073741824.0, &r);
    ck_assert_int_eq(r.loops, 16);
    ck_assert(!r.buffsize_from_plugin);
    ck_assert_int_eq(topo_set(t, "inter.plugin_buffsize=1000B", &cause), 0);
    ck_assert_int_eq(topo_validate(t, &cause), -1);
    ck_assert_msg(strstr(cause, "plugin_buffsize") != NULL, "%s", cause);
    free(cause);
    topo_free(t);
}
END_TEST


/* aws-ofi-nccl on p4de: it sets NCCL_PROTO=simple (SENDRECV endpoints
 * without in-order 128-byte delivery), reports 75 us a message to NCCL,
 * while a message takes 20 us.  8 B all-reduce over 2 nodes x 8, Tree/
 * Simple on one channel.  NCCL's estimate: baseLat 8.4 + 2 x (7 x 4.0 +
 * (14 + 75 + 75)) = 392.4 us (the plugin's latency twice for Simple's
 * flush).  The data path: launch 8.4 + 14 NVLink hops of 4.0 us + 2
 * network hops of 14 + 20 + 20 (the flush, a read of the received buffer
 * over the NIC: GPUDirect on Ampere) = 172.4 us; 8 bytes add about
 * 0.002 us.  A user's NCCL_PROTO wins over the plugin's. */
START_TEST(test_coll_efa_plugin_simple_and_latency)
{
    char *cause = NULL;
    struct topo *t = builtin_topo("aws-p4de");
    struct coll_group g = {16, 2, 8};
    struct nccl_config nc;
    struct coll_result r;
    estimate(t, COLL_ALLREDUCE, &g, 8.0, &r);
    ck_assert_int_eq(r.algo, NCCL_ALGO_TREE);
    ck_assert_int_eq(r.proto, PROTO_SIMPLE);
    ck_assert(r.simple_from_plugin);
    ck_assert_double_eq_tol(r.tuning_s, 392.4e-6, 0.01e-6);
    ck_assert_double_eq_tol(r.time_s, 172.4e-6, 0.01e-6);
    nccl_config_init(&nc);
    ck_assert_int_eq(nccl_config_set_proto(&nc, "LL", &cause), 0);
    estimate_nc(t, &nc, COLL_ALLREDUCE, &g, 8.0, &r);
    ck_assert_int_eq(r.proto, PROTO_LL);
    ck_assert(!r.simple_from_plugin);
    topo_free(t);
    /* p5's RDMA protocol keeps LL and LL128. */
    t = builtin_topo("aws-p5");
    estimate(t, COLL_ALLREDUCE, &g, 8.0, &r);
    ck_assert(!r.simple_from_plugin);
    ck_assert_int_ne(r.proto, PROTO_SIMPLE);
    topo_free(t);
}
END_TEST

/* NCCL 2.19 and older shrink a Simple tree all-reduce's chunks to the
 * tree's depth (enqueue.cc computeColl); 2.20 does not.  8 MiB over 2
 * p4de nodes (Simple only) on 8 channels: 1 MiB a channel, NCCL_BUFFSIZE
 * 8 MiB so 1 MiB steps, depth 8 - 1 + log2(2) = 8.  2.19: 1 MiB / chunk
 * < 64 halves to 128 KiB (8 chunks), < 32 to 64 KiB (16), where the
 * 65536 floor stops it; 16 >= 8 leaves it.  2.20: one 1 MiB chunk. */
START_TEST(test_coll_tree_simple_chunks_by_version)
{
    char *cause = NULL;
    struct topo *t = builtin_topo("aws-p4de");
    struct coll_group g = {16, 2, 8};
    struct nccl_config nc;
    struct coll_result r;
    nccl_config_init(&nc);
    ck_assert_int_eq(nccl_config_set_version(&nc, "2.19", &cause), 0);
    estimate_nc(t, &nc, COLL_ALLREDUCE, &g, 8388608.0, &r);
    ck_assert_int_eq(r.algo, NCCL_ALGO_TREE);
    ck_assert_int_eq(r.channels, 8);
    ck_assert_int_eq(r.loops, 16);
    ck_assert_double_eq(r.chunk_bytes, 65536.0);
    ck_assert_int_eq(nccl_config_set_version(&nc, "2.20", &cause), 0);
    estimate_nc(t, &nc, COLL_ALLREDUCE, &g, 8388608.0, &r);
    ck_assert_int_eq(r.loops, 1);
    ck_assert_double_eq(r.chunk_bytes, 1048576.0);
    topo_free(t);
}
END_TEST

/* One estimate on the built-in topology NAME, RANKS ranks over NODES
 * nodes, with NCCL's defaults. */
static void
estimate_builtin(const char *name, enum coll_op op, int ranks, int nodes,
                 double bytes, struct coll_result *r)
{
    char *cause = NULL;
    struct topo *t = topo_load(name, &cause);
    ck_assert_msg(t != NULL, "%s", cause ? cause : "");
    struct coll_group g = {ranks, nodes, ranks / nodes};
    estimate(t, op, &g, bytes, r);
    topo_free(t);
}

START_TEST(test_path_tree_ll_streams_through_the_node)
{
    /* dgx-a100-80g, one node of 8, 32 KiB all-reduce: NCCL picks Tree/LL.
     * LL's threshold keeps nc while 32768 >= nc x 512 x 8: 8 channels of
     * C = 4096 B, one chunk (LL's is 8 x 512 x 8 x 16 / 8 / 2 = 32 KiB).
     * The chain is 2 x 7 = 14 hops, each passing lines on as they land:
     * fill = 14 x max(0.6, 1.0 us) = 14 us, no chunk time per hop.  The
     * bandwidth term is one chunk at the channel's rate over the node's
     * 24 channels: bus = min(0.92 x 240e9, 24 x 24e9) / 3.8 = 58.1e9
     * (LL's share, under 87.7e9), algbw a channel 0.5 x 58.1e9 / 24 =
     * 1.21e9, 4096 / 1.21e9 = 3.384 us; launch 6.8 us.  Total 24.18 us. */
    struct coll_result r;
    estimate_builtin("dgx-a100-80g", COLL_ALLREDUCE, 8, 1, 32768.0, &r);
    ck_assert_int_eq(r.algo, NCCL_ALGO_TREE);
    ck_assert_int_eq(r.proto, PROTO_LL);
    ck_assert_int_eq(r.comm_channels, 24);
    ck_assert_int_eq(r.channels, 8);
    ck_assert_int_eq(r.hops, 14);
    ck_assert_double_eq_tol(r.fill_s, 14e-6, 1e-12);
    double bus = 0.92 * 300e9 * 0.8 / 3.8;
    ck_assert_double_eq_tol(r.bw_s, 4096 / (0.5 * bus / 24), 1e-12);
    ck_assert_double_eq_tol(r.time_s, 6.8e-6 + 14e-6 + 4096 / (0.5 * bus / 24),
                            1e-11);
}
END_TEST

START_TEST(test_path_tree_ll128_pipeline_bound)
{
    /* Tree/LL128 all-reduce of 1 MiB over 2 nodes x 4 on test-2x4 (Ampere,
     * one 10 GB/s NIC, 10 us; 80 GB/s NVLink, 1 us): 2 channels of
     * C = 512 KiB.  Bus: 2 x 9.6e9 x 0.92 = 17.664e9 (under 2 x 23.6e9),
     * x 120/128 = 16.56e9 (under 2 x 20e9); algbw a channel
     * 0.5 x 16.56e9 / 2 = 4.14e9.
     * Chunk (calcCollChunking): 614400 x 15/16 = 576000 halves while
     * C / chunk < (1 + 1 + 0.4) x 64 / 4 above 128 KiB, to 72000, then
     * while C / chunk < 2.4 x 16 / 4 above 32 KiB, to 36000, aligned down
     * to the 1920 B grain: 34560 (unaligned, 36000 would give 15), so 16
     * chunks of c = 32 KiB.  Fill: 6 chain hops, LL128 lines streaming
     * through, max(1.25, 1.0) us each; 2 network hops storing and
     * forwarding the chunk, each c / 4.14e9 + 8.5 + 10 us, less the one
     * chunk time bw_s counts.  640 threads (2.22 and newer).
     * Bandwidth 16 c / 4.14e9 = 126.6 us; no credit waits (a slot's cycle,
     * 7.9 + 2 x 18.5 us, is under 8 chunk times); launch 14 us. */
    struct topo *t = test_topo();
    struct coll_group g = {8, 2, 4};
    struct nccl_config nc;
    struct coll_result r;
    forced(&nc, "Tree", "LL128");
    estimate_nc(t, &nc, COLL_ALLREDUCE, &g, 1048576.0, &r);
    ck_assert_int_eq(r.algo, NCCL_ALGO_TREE);
    ck_assert_int_eq(r.proto, PROTO_LL128);
    ck_assert_int_eq(r.channels, 2);
    ck_assert_int_eq(r.loops, 16);
    double ch = 0.5 * 16.56e9 / 2, c = 32768;
    double fill = 6 * 1.25e-6 + 2 * (c / ch + 18.5e-6) - c / ch;
    double want = 14e-6 + fill + 16 * c / ch;
    ck_assert_int_eq(r.nthreads, 640);
    ck_assert(r.fill_s > 0.25 * r.time_s);   /* 52.4 of 193.1 us */
    ck_assert_double_eq_tol(r.fill_s, fill, fill * REL_TOL);
    ck_assert_double_eq_tol(r.steplat_s, 0, 1e-15);
    ck_assert_double_eq_tol(r.time_s, want, want * REL_TOL);
    topo_free(t);
}
END_TEST

START_TEST(test_path_nvls_switch_latency)
{
    /* dgx-h100, 1 MiB all-reduce: NVLS/Simple, 16 channels x 8 heads,
     * 1 chunk of 8192 B each (the chunk shrinks to 16 KiB below 2 x 128
     * ops x 16 KiB, and 1 MiB / 128 = 8192 B).  NCCL's NVLS latency, 25 us,
     * is the whole fixed cost, launch (8.4 us) included: the fill is
     * 25 - 8.4 = 16.6 us plus the second hop's chunk at a channel's rate;
     * the bandwidth term is one chunk more. */
    struct coll_result r;
    estimate_builtin("dgx-h100", COLL_ALLREDUCE, 8, 1, 1048576.0, &r);
    ck_assert_int_eq(r.algo, NCCL_ALGO_NVLS);
    ck_assert_double_eq(r.chunk_bytes, 8192);
    ck_assert_double_eq_tol(r.launch_s, 8.4e-6, 1e-12);
    ck_assert_double_eq_tol(r.fill_s, 16.6e-6 + 8192 / r.chan_Bps, 1e-12);
    ck_assert_double_eq_tol(r.bw_s, 8192 / r.chan_Bps, 1e-12);
}
END_TEST

static bool
any_runnable(void *ctx, int algo, int proto)
{
    (void)ctx, (void)algo, (void)proto;
    return true;
}

static bool
no_ll128(void *ctx, int algo, int proto)
{
    (void)ctx, (void)algo;
    return proto != PROTO_LL128;
}

START_TEST(test_aws_tuner_regions)
{
    /* aws-ofi-nccl's p5 table, in (log2 bytes, log2 ranks).  8 GPUs a
     * node on 4 nodes is y = 5.  Tree/LL128's polygon reaches x =
     * log2(37748736) = 25.17 at y = 5 (its vertex (36 MiB, 32)), so 16 MiB
     * (x = 24) is inside. */
    int a = -1, p = -1;
    ck_assert_int_eq(aws_tuner_pick(NET_TUNER_AWS_P5, COLL_ALLREDUCE,
                                    16777216.0, 32, 4, any_runnable, NULL,
                                    &a, &p), 1);
    ck_assert_int_eq(a, NCCL_ALGO_TREE);
    ck_assert_int_eq(p, PROTO_LL128);
    /* 64 MiB (x = 26) is past it and inside Ring/LL128's polygon, whose
     * left edge at y = 5 is that same vertex and whose right edge runs
     * from (1 GiB, 17) to (2 GiB, 64), about x = 30.5 there. */
    ck_assert_int_eq(aws_tuner_pick(NET_TUNER_AWS_P5, COLL_ALLREDUCE,
                                    67108864.0, 32, 4, any_runnable, NULL,
                                    &a, &p), 1);
    ck_assert_int_eq(a, NCCL_ALGO_RING);
    ck_assert_int_eq(p, PROTO_LL128);
    /* Without LL128 the two LL128 regions are passed over; NVLS Tree's
     * first region is the line y = 4 only, its second starts at y = 7,
     * and Ring/Simple's left edge at y = 5 is x = log2(1.5 GiB) = 30.6:
     * no region holds 16 MiB, and NCCL's own choice stands. */
    ck_assert_int_eq(aws_tuner_pick(NET_TUNER_AWS_P5, COLL_ALLREDUCE,
                                    16777216.0, 32, 4, no_ll128, NULL,
                                    &a, &p), 0);
    /* Two nodes: the tuner stands aside whatever the size. */
    ck_assert_int_eq(aws_tuner_pick(NET_TUNER_AWS_P5, COLL_ALLREDUCE,
                                    16777216.0, 16, 2, any_runnable, NULL,
                                    &a, &p), 0);
    /* One GPU a node, 16 nodes (y = 4): all-gather's Ring/Simple region
     * lies right of the line from (4 MiB, 2) to (8 GiB, 2048), at y = 4
     * x = 22 + 3 x 11 / 10 = 25.3: 8 MiB (23) is left of it, 1 GiB (30)
     * inside. */
    ck_assert_int_eq(aws_tuner_pick(NET_TUNER_AWS_P5, COLL_ALLGATHER,
                                    8388608.0, 16, 16, any_runnable, NULL,
                                    &a, &p), 0);
    ck_assert_int_eq(aws_tuner_pick(NET_TUNER_AWS_P5, COLL_ALLGATHER,
                                    1073741824.0, 16, 16, any_runnable, NULL,
                                    &a, &p), 1);
    ck_assert_int_eq(a, NCCL_ALGO_RING);
    ck_assert_int_eq(p, PROTO_SIMPLE);
    /* p5en sets the chunk of a one-GPU-a-node Tree/LL128 all-reduce: 16
     * nodes, nsteps = 1 + 4 = 5.  1 MiB: 1048576 / 288000 = 3 chunks <
     * 2 x 25, halve to 144000; 7 chunks is not < floor(7.5) = 7, and not
     * < 6: 144000.  64 MiB: 233 chunks of 288000 pass all three. */
    double chunk = 0;
    ck_assert_int_eq(aws_tuner_chunk_bytes(NET_TUNER_AWS_P5EN, COLL_ALLREDUCE,
                                           1048576.0, 16, 16, NCCL_ALGO_TREE,
                                           PROTO_LL128, &chunk), 1);
    ck_assert_double_eq(chunk, 144000);
    ck_assert_int_eq(aws_tuner_chunk_bytes(NET_TUNER_AWS_P5EN, COLL_ALLREDUCE,
                                           67108864.0, 16, 16, NCCL_ALGO_TREE,
                                           PROTO_LL128, &chunk), 1);
    ck_assert_double_eq(chunk, 288000);
    ck_assert_int_eq(aws_tuner_chunk_bytes(NET_TUNER_AWS_P5, COLL_ALLREDUCE,
                                           1048576.0, 16, 16, NCCL_ALGO_TREE,
                                           PROTO_LL128, &chunk), 0);
    /* p5en, 8 GPUs a node on 4 nodes (y = 5): Tree/LL holds everything
     * up to 192 KiB from 16 ranks up. */
    ck_assert_int_eq(aws_tuner_pick(NET_TUNER_AWS_P5EN, COLL_ALLREDUCE,
                                    65536.0, 32, 4, any_runnable, NULL,
                                    &a, &p), 1);
    ck_assert_int_eq(a, NCCL_ALGO_TREE);
    ck_assert_int_eq(p, PROTO_LL);
    /* No plugin tuner: never. */
    ck_assert_int_eq(aws_tuner_pick(NET_TUNER_NCCL, COLL_ALLREDUCE,
                                    16777216.0, 32, 4, any_runnable, NULL,
                                    &a, &p), 0);
}
END_TEST

START_TEST(test_coll_plugin_tuner_choice)
{
    /* aws-p5 on 4 nodes: NCCL alone picks NVLS Tree for a 64 MiB
     * all-reduce; the plugin's table forces Ring/LL128 (above), and the
     * result says whose choice it is. */
    struct coll_group g = {32, 4, 8};
    struct coll_result r;
    char *cause = NULL;
    ck_assert_int_eq(estimate_with("aws-p5", 228, NULL, NULL, 0,
                                   COLL_ALLREDUCE, REDOP_SUM, g, 67108864.0,
                                   &r, &cause), 0);
    ck_assert_int_eq(r.algo, NCCL_ALGO_RING);
    ck_assert_int_eq(r.proto, PROTO_LL128);
    ck_assert(r.plugin_tuned);
    /* NCCL 2.20 has no tuner API aws-ofi-nccl still exports. */
    ck_assert_int_eq(estimate_with("aws-p5", 220, NULL, NULL, 0,
                                   COLL_ALLREDUCE, REDOP_SUM, g, 67108864.0,
                                   &r, &cause), 0);
    ck_assert(!r.plugin_tuned);
    ck_assert_int_eq(r.algo, NCCL_ALGO_NVLS_TREE);
    /* NCCL 2.21 (tuner v2) stands aside when NCCL_PROTO is set; from
     * 2.22 the filter only removes cells, and Simple has no region at
     * 64 MiB on 32 ranks, so NCCL's choice stands either way. */
    ck_assert_int_eq(estimate_with("aws-p5", 221, NULL, "Simple", 0,
                                   COLL_ALLREDUCE, REDOP_SUM, g, 67108864.0,
                                   &r, &cause), 0);
    ck_assert(!r.plugin_tuned);
    /* Two nodes: NCCL's own choice. */
    struct coll_group g2 = {16, 2, 8};
    ck_assert_int_eq(estimate_with("aws-p5", 228, NULL, NULL, 0,
                                   COLL_ALLREDUCE, REDOP_SUM, g2, 67108864.0,
                                   &r, &cause), 0);
    ck_assert(!r.plugin_tuned);
    ck_assert_int_eq(r.algo, NCCL_ALGO_NVLS_TREE);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("coll");
    TCase *core = tcase_create("core");
    tcase_add_test(core, test_path_ring_bandwidth_bound);
    tcase_add_test(core, test_path_ring_pipeline_bound);
    tcase_add_test(core, test_path_tree_bandwidth_bound);
    tcase_add_test(core, test_path_tree_pipeline_bound);
    tcase_add_test(core, test_path_tree_credit_bound);
    tcase_add_test(core, test_path_ring_net_bandwidth_bound);
    tcase_add_test(core, test_nvls_buffer_bytes);
    tcase_add_test(core, test_conn_buffer_bytes);
    tcase_add_test(core, test_nvls_step_by_version_and_plugin);
    tcase_add_test(core, test_nvls_tree_chunk);
    tcase_add_test(core, test_path_ring_net_pipeline_bound);
    tcase_add_test(core, test_path_flush_and_gdr);
    tcase_add_test(core, test_path_p2p_level);
    tcase_add_test(core, test_path_nvls_enable_0_moves_to_ring);
    tcase_add_test(core, test_path_socket_slower_than_ib);
    tcase_add_test(core, test_path_refusals);
    tcase_add_test(core, test_coll_ring_allgather_one_node);
    tcase_add_test(core, test_coll_small_message_uses_ll);
    tcase_add_test(core, test_coll_ring_across_nodes);
    tcase_add_test(core, test_coll_replicate_group_shares_nics);
    tcase_add_test(core, test_coll_pcie_has_no_ll128);
    tcase_add_test(core, test_coll_time_grows_with_size);
    tcase_add_test(core, test_coll_busbw_identity);
    tcase_add_test(core, test_coll_nvls_for_large_allreduce_on_hopper);
    tcase_add_test(core, test_coll_pat_one_gpu_per_node);
    tcase_add_test(core, test_coll_collnet_needs_sharp);
    tcase_add_test(core, test_coll_proto_override);
    tcase_add_test(core, test_coll_max_channels_scales_bandwidth);
    tcase_add_test(core, test_partial_node_channels);
    tcase_add_test(core, test_coll_nccl_algo_tree_by_version);
    tcase_add_test(core, test_coll_tree_pattern_and_factor);
    tcase_add_test(core, test_coll_tree_nic_passes);
    tcase_add_test(core, test_path_plugin_buffsize);
    tcase_add_test(core, test_coll_efa_plugin_simple_and_latency);
    tcase_add_test(core, test_coll_tree_simple_chunks_by_version);
    tcase_add_test(core, test_aws_tuner_regions);
    tcase_add_test(core, test_path_nvls_switch_latency);
    tcase_add_test(core, test_path_tree_ll_streams_through_the_node);
    tcase_add_test(core, test_path_tree_ll128_pipeline_bound);
    tcase_add_test(core, test_coll_plugin_tuner_choice);
    suite_add_tcase(s, core);
    TCase *limits = tcase_create("limits");
    tcase_add_test(limits, test_coll_single_rank_is_free);
    suite_add_tcase(s, limits);
    TCase *errors = tcase_create("errors");
    tcase_add_test(errors, test_coll_nccl_env_errors);
    suite_add_tcase(s, errors);
    return tu_main(s);
}
