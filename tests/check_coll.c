/*
 * check_coll.c: the NCCL ring model against hand-derived times.
 *
 * test-2x4 (topologies/test-2x4.ini): Ampere, NVSwitch at 100 GB/s per
 * GPU with 1 us latency, one 10 GB/s NIC per node with 10 us latency.
 * NCCL credits NVLink at 20/25 of the wire rate (SM80) and a NIC at
 * 12/12.5, so the intra-node bus bandwidth is 80e9 B/s and a node's
 * network 9.6e9 B/s.  Latencies (us, LL/LL128/Simple): base Ring 6.6 /
 * 14.0 / 8.4, NVLink hop 0.6 / 1.9 / 3.4, net hop 2.7 / 4.0 / 14.0.
 */
#include "coll.h"
#include "topo.h"

#include <check.h>
#include <stdlib.h>

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
    coll_estimate(t, COLL_ALLGATHER, &g, 1073741824.0, &r);
    double want = 18.6e-6 + 0.75 * 1073741824.0 / 80e9;
    ck_assert_int_eq(r.proto, PROTO_SIMPLE);
    ck_assert_double_eq_tol(r.time_s, want, want * REL_TOL);
    ck_assert_double_eq_tol(r.bus_Bps, 80e9, 1.0);
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
    coll_estimate(t, COLL_REDUCESCATTER, &g, 1024.0, &r);
    double want = 9.6e-6 + 0.75 * 1024.0 / 40e9;
    ck_assert_int_eq(r.proto, PROTO_LL);
    ck_assert_double_eq_tol(r.time_s, want, want * REL_TOL);
    topo_free(t);
}
END_TEST

START_TEST(test_coll_ring_across_nodes)
{
    /* 8 ranks on 2 nodes: bus bandwidth min(80e9, 9.6e9) = 9.6e9.  Simple
     * latency: 7 steps, 1 crossing: 8.4 + 6 x max(3.4, 1.0, 3 x 1.0) +
     * max(14.0, 10) = 42.8 us; time = 42.8e-6 + (7/8) x 2^30 / 9.6e9. */
    struct topo *t = test_topo();
    struct coll_group g = {8, 2, 4};
    struct coll_result r;
    coll_estimate(t, COLL_ALLGATHER, &g, 1073741824.0, &r);
    double want = 42.8e-6 + 0.875 * 1073741824.0 / 9.6e9;
    ck_assert_int_eq(r.proto, PROTO_SIMPLE);
    ck_assert_double_eq_tol(r.time_s, want, want * REL_TOL);
    topo_free(t);
}
END_TEST

START_TEST(test_coll_replicate_group_shares_nics)
{
    /* HSDP replicate all-reduce: 2 ranks, one per node; the 4 such groups
     * of a node share its NIC: 9.6e9 / 4 = 2.4e9.  Ring all-reduce: 2
     * steps, both crossing: Simple latency 8.4 + 2 x 14.0 = 36.4 us;
     * time = 36.4e-6 + 2 x (1/2) x 2^30 / 2.4e9. */
    struct topo *t = test_topo();
    struct coll_group g = {2, 2, 1};
    struct coll_result r;
    coll_estimate(t, COLL_ALLREDUCE, &g, 1073741824.0, &r);
    double want = 36.4e-6 + 1073741824.0 / 2.4e9;
    ck_assert_int_eq(r.proto, PROTO_SIMPLE);
    ck_assert_double_eq_tol(r.time_s, want, want * REL_TOL);
    topo_free(t);
}
END_TEST

START_TEST(test_coll_single_rank_is_free)
{
    struct topo *t = test_topo();
    struct coll_group g = {1, 1, 1};
    struct coll_result r;
    coll_estimate(t, COLL_ALLGATHER, &g, 1e9, &r);
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
        coll_estimate(t, COLL_ALLGATHER, &g, b, &r);
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
        coll_estimate(t, COLL_REDUCESCATTER, &g, b, &r);
        ck_assert(r.time_s > prev);
        prev = r.time_s;
    }
    topo_free(t);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("coll");
    TCase *core = tcase_create("core");
    tcase_add_test(core, test_coll_ring_allgather_one_node);
    tcase_add_test(core, test_coll_small_message_uses_ll);
    tcase_add_test(core, test_coll_ring_across_nodes);
    tcase_add_test(core, test_coll_replicate_group_shares_nics);
    tcase_add_test(core, test_coll_pcie_has_no_ll128);
    tcase_add_test(core, test_coll_time_grows_with_size);
    suite_add_tcase(s, core);
    TCase *limits = tcase_create("limits");
    tcase_add_test(limits, test_coll_single_rank_is_free);
    suite_add_tcase(s, limits);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
