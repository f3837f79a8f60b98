/*
 * check_topo.c: tests for topo.c, the topology files and their parser.
 *
 * Most tests edit one line of BASE, a small valid topology whose line
 * numbers are listed next to it, so that every expected message can name its
 * line.  Built-ins are read through builtin_find(), exactly as fsdpsim reads
 * them.  Files on disk are made with mkstemp() under $TMPDIR (or /tmp) and
 * removed by the test that made them.
 */
#define _POSIX_C_SOURCE 200809L

#include "builtin.h"
#include "coll.h"
#include "topo.h"

#include "testutil.h"
#include "xalloc.h"
#include "check_main.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Quantities that go through a decimal string and a multiplication (such as
 * "1.1GBps") are compared with this relative slack; the ones that are exact
 * in binary (80GiB, 19.5TFLOPS, 200Gbps) are compared exactly. */
#define REL_TOL 1e-12

/* A valid topology using only required keys plus bf16.  Line numbers:
 *  1 [gpu]                          11 bandwidth = 100GBps
 *  2 name = G                       12 latency = 1us
 *  3 arch = ampere                  13 [inter]
 *  4 bf16 = 100TFLOPS               14 kind = ib
 *  5 memory = 10GiB                 15 nics_per_node = 1
 *  6 memory_bandwidth = 1000GBps    16 nic_bandwidth = 100Gbps
 *  7 [node]                         17 latency = 10us
 *  8 gpus_per_node = 4              18 [host]
 *  9 [intra]                        19 pcie_bandwidth = 10GBps
 * 10 fabric = nvswitch
 */
static const char BASE[] =
    "[gpu]\n"
    "name = G\n"
    "arch = ampere\n"
    "bf16 = 100TFLOPS\n"
    "memory = 10GiB\n"
    "memory_bandwidth = 1000GBps\n"
    "[node]\n"
    "gpus_per_node = 4\n"
    "[intra]\n"
    "fabric = nvswitch\n"
    "bandwidth = 100GBps\n"
    "latency = 1us\n"
    "[inter]\n"
    "kind = ib\n"
    "nics_per_node = 1\n"
    "nic_bandwidth = 100Gbps\n"
    "latency = 10us\n"
    "[host]\n"
    "pcie_bandwidth = 10GBps\n";

/* BASE with the whole line OLD replaced by NEW (which may hold several
 * lines, or be "" to delete it).  Caller frees. */
static char *
edit(const char *old, const char *new)
{
    size_t olen = strlen(old);
    const char *p = BASE;
    for (;;) {
        p = strstr(p, old);
        ck_assert_msg(p != NULL, "line '%s' is not in BASE", old);
        if ((p == BASE || p[-1] == '\n') && p[olen] == '\n')
            break;
        p++;
    }
    size_t head = (size_t)(p - BASE);
    const char *tail = p + olen + 1;
    bool drop = new[0] == '\0';
    char *s = malloc(head + strlen(new) + 1 + strlen(tail) + 1);
    ck_assert_ptr_nonnull(s);
    sprintf(s, "%.*s%s%s%s", (int)head, BASE, new, drop ? "" : "\n", tail);
    return s;
}

/* Parse BASE with one line edited; on failure *cause holds the message. */
static struct topo *
parse_edit(const char *old, const char *new, char **cause)
{
    char *text = edit(old, new);
    struct topo *t = topo_parse_ini(text, "x.ini", cause);
    free(text);
    return t;
}

static void
expect_edit_error(const char *old, const char *new, const char *want)
{
    char *cause = NULL;
    struct topo *t = parse_edit(old, new, &cause);
    ck_assert_ptr_null(t);
    ck_assert_str_eq(cause, want);
    free(cause);
}

static void
expect_set_error(const char *assignment, const char *want)
{
    char *cause = NULL;
    struct topo *t = topo_parse_ini(BASE, "x.ini", &cause);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(topo_set(t, assignment, &cause), -1);
    ck_assert_str_eq(cause, want);
    free(cause);
    topo_free(t);
}

static struct topo *
load_ok(const char *name)
{
    char *cause = NULL;
    struct topo *t = topo_load(name, &cause);
    ck_assert_msg(t != NULL, "%s: %s", name, cause ? cause : "");
    return t;
}

static void
set_ok(struct topo *t, const char *assignment)
{
    char *cause = NULL;
    int rc = topo_set(t, assignment, &cause);
    ck_assert_msg(rc == 0, "%s", cause ? cause : "");
}

/* Every field of A equals B's, source aside (it names where each came
 * from).  Doubles compare exactly: the round trip must be lossless. */
static void
assert_topo_equal(const struct topo *a, const struct topo *b)
{
    ck_assert_str_eq(a->name, b->name);
    ck_assert_str_eq(a->gpu_name, b->gpu_name);
    ck_assert_int_eq(a->arch, b->arch);
    for (int d = 0; d < DTYPE_COUNT; d++)
        ck_assert_double_eq(a->peak_flops[d], b->peak_flops[d]);
    ck_assert_double_eq(a->hbm_bytes, b->hbm_bytes);
    ck_assert_double_eq(a->hbm_Bps, b->hbm_Bps);
    ck_assert_double_eq(a->gemm_efficiency, b->gemm_efficiency);
    ck_assert_double_eq(a->kernel_overhead_ns, b->kernel_overhead_ns);
    ck_assert_int_eq(a->gpus_per_node, b->gpus_per_node);
    ck_assert_int_eq(a->nodes, b->nodes);
    ck_assert_double_eq(a->launch_overhead_ns, b->launch_overhead_ns);
    ck_assert_double_eq(a->hook_overhead_ns, b->hook_overhead_ns);
    ck_assert_int_eq(a->fabric, b->fabric);
    ck_assert_double_eq(a->intra_Bps, b->intra_Bps);
    ck_assert_double_eq(a->intra_latency_ns, b->intra_latency_ns);
    ck_assert_int_eq(a->net, b->net);
    ck_assert_int_eq(a->nics_per_node, b->nics_per_node);
    ck_assert_double_eq(a->nic_Bps, b->nic_Bps);
    ck_assert_double_eq(a->inter_latency_ns, b->inter_latency_ns);
    ck_assert_int_eq(a->rail_optimized, b->rail_optimized);
    ck_assert_double_eq(a->pcie_Bps, b->pcie_Bps);
    ck_assert_double_eq(a->host_mem_Bps, b->host_mem_Bps);
    for (int o = 0; o < TOPO_CALIB_OPS; o++)
        for (int s = 0; s < TOPO_CALIB_SCOPES; s++)
            for (int p = 0; p < TOPO_CALIB_PROTOS; p++) {
                for (int g = 0; g < TOPO_CALIB_ALGOS; g++) {
                    const struct topo_calibration *x =
                        &a->calib_algo[o][s][g][p], *y =
                        &b->calib_algo[o][s][g][p];
                    ck_assert_double_eq(x->latency_ns, y->latency_ns);
                    ck_assert_double_eq(x->busbw_Bps, y->busbw_Bps);
                    ck_assert_double_eq(x->pipeline_ns, y->pipeline_ns);
                }
                ck_assert_double_eq(a->calib[o][s][p].latency_ns,
                                    b->calib[o][s][p].latency_ns);
                ck_assert_double_eq(a->calib[o][s][p].busbw_Bps,
                                    b->calib[o][s][p].busbw_Bps);
                ck_assert_double_eq(a->calib[o][s][p].pipeline_ns,
                                    b->calib[o][s][p].pipeline_ns);
            }
}

/* topo_print() of T as a string.  Caller frees. */
static char *
print_to_string(const struct topo *t)
{
    return tu_topo_text(t, topo_print);
}

/* topo_print() T, parse the output, and check it is the same topology. */
static void
assert_round_trip(const struct topo *t)
{
    char *text = print_to_string(t);
    ck_assert_int_gt(strlen(text), 0);
    char *cause = NULL;
    struct topo *back = topo_parse_ini(text, "printed.ini", &cause);
    ck_assert_msg(back != NULL, "%s\n%s", cause ? cause : "", text);
    assert_topo_equal(t, back);
    topo_free(back);
    free(text);
}

/* ---- core ------------------------------------------------------------ */

START_TEST(test_topo_builtins_load_and_validate)
{
    int n = 0;
    for (int i = 0; i < builtin_n_files; i++) {
        const struct builtin_file *b = &builtin_files[i];
        if (strcmp(b->dir, "topologies") != 0)
            continue;
        struct topo *t = load_ok(b->name);
        char *cause = NULL;
        ck_assert_msg(topo_validate(t, &cause) == 0, "%s", cause);
        /* Each file's [topology] name matches its file name. */
        ck_assert_str_eq(t->name, b->name);
        char want[128];
        snprintf(want, sizeof want, "topologies/%s.%s", b->name, b->ext);
        ck_assert_str_eq(t->source, want);
        topo_free(t);
        n++;
    }
    /* The nine files of topologies/: eight clusters plus test-2x4. */
    ck_assert_int_ge(n, 9);
}
END_TEST

START_TEST(test_topo_dgx_a100_80g_values)
{
    struct topo *t = load_ok("dgx-a100-80g");
    ck_assert_str_eq(t->gpu_name, "A100-SXM4-80GB");
    ck_assert_int_eq(t->arch, GPU_ARCH_AMPERE);
    /* Dense peaks from the datasheet, TFLOPS * 1e12; fp8 absent = 0. */
    ck_assert_double_eq(t->peak_flops[DTYPE_FP32], 19.5e12);
    ck_assert_double_eq(t->peak_flops[DTYPE_TF32], 156e12);
    ck_assert_double_eq(t->peak_flops[DTYPE_BF16], 312e12);
    ck_assert_double_eq(t->peak_flops[DTYPE_FP16], 312e12);
    ck_assert_double_eq(t->peak_flops[DTYPE_FP8], 0);
    /* 80GiB = 80 * 2^30 = 85899345920 bytes. */
    ck_assert_double_eq(t->hbm_bytes, 85899345920.0);
    /* 2039GBps = 2039 * 1e9 B/s. */
    ck_assert_double_eq(t->hbm_Bps, 2039e9);
    /* gemm_efficiency 0.869 as written (271.2 of 312 TFLOPS at the best
     * measured shape); kernel_overhead default 3us = 3000 ns;
     * memory_efficiency default 0.88; clock_fraction 1. */
    ck_assert_double_eq(t->gemm_efficiency, 0.869);
    ck_assert_double_eq(t->memory_efficiency, 0.88);
    ck_assert_double_eq(t->clock_fraction, 1);
    ck_assert_double_eq(t->kernel_overhead_ns, 3000);
    /* 8 GPUs in 1 node; overheads at their defaults: 5us = 5000 ns launch,
     * 20us = 20000 ns hook. */
    ck_assert_int_eq(t->gpus_per_node, 8);
    ck_assert_int_eq(t->nodes, 1);
    ck_assert_double_eq(t->launch_overhead_ns, 5000);
    ck_assert_double_eq(t->hook_overhead_ns, 20000);
    /* NVSwitch, 300GBps = 300e9 B/s per direction, 1us = 1000 ns. */
    ck_assert_int_eq(t->fabric, FABRIC_NVSWITCH);
    ck_assert_double_eq(t->intra_Bps, 300e9);
    ck_assert_double_eq(t->intra_latency_ns, 1000);
    /* 8 HDR NICs of 200Gbps = 200e9 / 8 = 25e9 B/s; 5us = 5000 ns. */
    ck_assert_int_eq(t->net, NET_IB);
    ck_assert_int_eq(t->nics_per_node, 8);
    ck_assert_double_eq(t->nic_Bps, 25e9);
    ck_assert_double_eq(t->inter_latency_ns, 5000);
    ck_assert(t->rail_optimized);
    /* PCIe 25GBps = 25e9 B/s; host DRAM 200GBps = 200e9 B/s. */
    ck_assert_double_eq(t->pcie_Bps, 25e9);
    ck_assert_double_eq(t->host_mem_Bps, 200e9);
    topo_free(t);
}
END_TEST

START_TEST(test_topo_other_builtin_values)
{
    struct topo *t = load_ok("dgx-h100");
    ck_assert_int_eq(t->arch, GPU_ARCH_HOPPER);
    /* Dense H100 SXM peaks: bf16 989, fp8 1979, tf32 494.5 TFLOPS. */
    ck_assert_double_eq(t->peak_flops[DTYPE_BF16], 989e12);
    ck_assert_double_eq(t->peak_flops[DTYPE_FP8], 1979e12);
    ck_assert_double_eq(t->peak_flops[DTYPE_TF32], 494.5e12);
    /* NDR 400Gbps = 400e9 / 8 = 50e9 B/s; NVLink4 450GBps = 450e9 B/s. */
    ck_assert_double_eq(t->nic_Bps, 50e9);
    ck_assert_double_eq(t->intra_Bps, 450e9);
    ck_assert_double_eq(t->gemm_efficiency, 0.803);
    topo_free(t);

    t = load_ok("aws-p4d");
    /* EFA 4 x 100Gbps: 100e9 / 8 = 12.5e9 B/s per NIC; not rail-optimised.
     * 40GiB = 40 * 2^30 = 42949672960 bytes. */
    ck_assert_int_eq(t->net, NET_EFA);
    ck_assert_int_eq(t->nics_per_node, 4);
    ck_assert_double_eq(t->nic_Bps, 12.5e9);
    ck_assert(!t->rail_optimized);
    ck_assert_double_eq(t->hbm_bytes, 42949672960.0);
    topo_free(t);

    t = load_ok("pcie-a100");
    /* PCIe-only: fabric pcie at 25GBps = 25e9 B/s; one Ethernet NIC. */
    ck_assert_int_eq(t->fabric, FABRIC_PCIE);
    ck_assert_double_eq(t->intra_Bps, 25e9);
    ck_assert_int_eq(t->net, NET_ETHERNET);
    ck_assert_int_eq(t->nics_per_node, 1);
    topo_free(t);
}
END_TEST

START_TEST(test_topo_test_2x4_values)
{
    struct topo *t = load_ok("test-2x4");
    /* 2 nodes x 4 GPUs = 8 ranks. */
    ck_assert_int_eq(t->nodes * t->gpus_per_node, 8);
    /* bf16 100TFLOPS at efficiency 0.5: 1e12 FLOP take
     * 1e12 / (0.5 * 100e12) = 0.02 s. */
    ck_assert_double_eq_tol(1e12 / (t->gemm_efficiency *
                                    t->peak_flops[DTYPE_BF16]),
                            0.02, 0.02 * REL_TOL);
    /* 10GiB = 10 * 2^30 = 10737418240 bytes; 1000GBps = 1e12 B/s. */
    ck_assert_double_eq(t->hbm_bytes, 10737418240.0);
    ck_assert_double_eq(t->hbm_Bps, 1e12);
    /* Intra 100GBps = 1e11 B/s, 1us; inter one NIC of 10GBps = 1e10 B/s,
     * 10us = 10000 ns. */
    ck_assert_double_eq(t->intra_Bps, 1e11);
    ck_assert_int_eq(t->nics_per_node, 1);
    ck_assert_double_eq(t->nic_Bps, 1e10);
    ck_assert_double_eq(t->inter_latency_ns, 10000);
    /* Overheads 1us, 2us, 10us in ns. */
    ck_assert_double_eq(t->kernel_overhead_ns, 1000);
    ck_assert_double_eq(t->launch_overhead_ns, 2000);
    ck_assert_double_eq(t->hook_overhead_ns, 10000);
    topo_free(t);
}
END_TEST

START_TEST(test_topo_defaults)
{
    char *cause = NULL;
    struct topo *t = topo_parse_ini(BASE, "dir/my-cluster.ini", &cause);
    ck_assert_msg(t != NULL, "%s", cause);
    /* No [topology] name: the origin's base name without ".ini". */
    ck_assert_str_eq(t->name, "my-cluster");
    ck_assert_str_eq(t->source, "dir/my-cluster.ini");
    /* Omitted peaks are 0 (unsupported); gemm_efficiency 0.75. */
    ck_assert_double_eq(t->peak_flops[DTYPE_FP32], 0);
    ck_assert_double_eq(t->peak_flops[DTYPE_FP8], 0);
    ck_assert_double_eq(t->gemm_efficiency, 0.75);
    /* Default overheads 3us, 5us, 20us in ns; 1 node; rail-optimised;
     * host memory 100GBps = 1e11 B/s. */
    ck_assert_double_eq(t->kernel_overhead_ns, 3000);
    ck_assert_double_eq(t->launch_overhead_ns, 5000);
    ck_assert_double_eq(t->hook_overhead_ns, 20000);
    ck_assert_int_eq(t->nodes, 1);
    ck_assert(t->rail_optimized);
    ck_assert_double_eq(t->host_mem_Bps, 1e11);
    ck_assert_int_eq(topo_validate(t, &cause), 0);
    topo_free(t);
}
END_TEST

START_TEST(test_topo_comments_and_indentation)
{
    /* '#' and ';' comments, after values too; indented keys; CRLF. */
    char *cause = NULL;
    struct topo *t = parse_edit(
        "[node]",
        "# whole-line comment\n"
        "; another\n"
        "[node]   # trailing comment on a section line",
        &cause);
    ck_assert_msg(t != NULL, "%s", cause);
    topo_free(t);

    t = parse_edit("gpus_per_node = 4",
                   "    gpus_per_node = 2      # two GPUs\n"
                   "\tnodes = 3 ; three nodes\r", &cause);
    ck_assert_msg(t != NULL, "%s", cause);
    /* 2 and 3 as written, the comments cut off. */
    ck_assert_int_eq(t->gpus_per_node, 2);
    ck_assert_int_eq(t->nodes, 3);
    topo_free(t);

    /* A '#' inside a word is part of the value. */
    t = parse_edit("name = G", "name = GPU#2", &cause);
    ck_assert_ptr_null(t);
    ck_assert_str_eq(cause, "x.ini:2: [gpu] name: 'GPU#2' is not a valid "
                     "name (use 1 to 64 printable characters without '#' "
                     "or ';')");
    free(cause);
}
END_TEST

START_TEST(test_topo_set_overrides)
{
    struct topo *t = load_ok("dgx-a100-80g");
    set_ok(t, "inter.nic_bandwidth=400Gbps");
    /* 400Gbps = 400e9 / 8 = 50e9 B/s. */
    ck_assert_double_eq(t->nic_Bps, 50e9);
    set_ok(t, " node.nodes = 16 ");
    ck_assert_int_eq(t->nodes, 16);
    set_ok(t, "gpu.arch=hopper");
    ck_assert_int_eq(t->arch, GPU_ARCH_HOPPER);
    set_ok(t, "inter.rail_optimized=no");
    ck_assert(!t->rail_optimized);
    set_ok(t, "intra.fabric=pcie");
    ck_assert_int_eq(t->fabric, FABRIC_PCIE);
    set_ok(t, "gpu.fp8=1PFLOPS");
    /* 1PFLOPS = 1e15 FLOP/s. */
    ck_assert_double_eq(t->peak_flops[DTYPE_FP8], 1e15);
    set_ok(t, "topology.name=big-a100");
    ck_assert_str_eq(t->name, "big-a100");
    set_ok(t, "gpu.name=A100 (modified)");
    ck_assert_str_eq(t->gpu_name, "A100 (modified)");
    set_ok(t, "topology.description=anything goes here");
    char *cause = NULL;
    ck_assert_int_eq(topo_validate(t, &cause), 0);
    topo_free(t);
}
END_TEST

START_TEST(test_topo_round_trip_builtins)
{
    for (int i = 0; i < builtin_n_files; i++) {
        if (strcmp(builtin_files[i].dir, "topologies") != 0)
            continue;
        struct topo *t = load_ok(builtin_files[i].name);
        assert_round_trip(t);
        topo_free(t);
    }
}
END_TEST

START_TEST(test_topo_round_trip_odd_values)
{
    /* Values with no short exact spelling still read back exactly. */
    struct topo *t = load_ok("test-2x4");
    set_ok(t, "gpu.memory=1.1GB");
    set_ok(t, "gpu.memory_bandwidth=1234.5678GiBps");
    set_ok(t, "gpu.gemm_efficiency=0.123456789");
    set_ok(t, "gpu.kernel_overhead=333ns");
    set_ok(t, "gpu.tf32=0.1FLOPS");
    set_ok(t, "intra.latency=0.1ns");
    set_ok(t, "inter.nic_bandwidth=7Mbps");
    set_ok(t, "host.pcie_bandwidth=3bps");
    set_ok(t, "host.memory_bandwidth=1e-3Bps");
    assert_round_trip(t);
    /* 1.1GB = 1.1e9 bytes up to one rounding of the product. */
    ck_assert_double_eq_tol(t->hbm_bytes, 1.1e9, 1.1e9 * REL_TOL);
    topo_free(t);
}
END_TEST

START_TEST(test_topo_print_format)
{
    /* The printed form uses the shortest exact unit: 85899345920 B as
     * 80GiB, 25e9 B/s on a NIC as 200Gbps, 3000 ns as 3us. */
    struct topo *t = load_ok("dgx-a100-80g");
    char *text = print_to_string(t);
    ck_assert_ptr_nonnull(strstr(text, "\nmemory           = 80GiB\n"));
    ck_assert_ptr_nonnull(strstr(text, "\nnic_bandwidth    = 200Gbps\n"));
    ck_assert_ptr_nonnull(strstr(text, "\nkernel_overhead  = 3us\n"));
    ck_assert_ptr_nonnull(strstr(text, "\nmemory_bandwidth = 2039GBps\n"));
    ck_assert_ptr_nonnull(strstr(text, "\nfp32             = 19.5TFLOPS\n"));
    ck_assert_ptr_nonnull(strstr(text, "\nfp8              = 0\n"));
    free(text);
    topo_free(t);
}
END_TEST

START_TEST(test_topo_calibration_keys)
{
    /* Uncalibrated topologies print no [calibration] section at all, so
     * `topologies --show` output is what it was before the section. */
    struct topo *t = load_ok("dgx-a100-80g");
    char *text = print_to_string(t);
    ck_assert_ptr_null(strstr(text, "calibration"));
    free(text);
    for (int o = 0; o < TOPO_CALIB_OPS; o++)
        for (int s = 0; s < TOPO_CALIB_SCOPES; s++)
            for (int p = 0; p < TOPO_CALIB_PROTOS; p++) {
                /* Every cell defaults to 0, "not calibrated". */
                ck_assert_double_eq(t->calib[o][s][p].latency_ns, 0);
                ck_assert_double_eq(t->calib[o][s][p].busbw_Bps, 0);
            }
    topo_free(t);

    char *cause = NULL;
    t = parse_edit("pcie_bandwidth = 10GBps",
                   "pcie_bandwidth = 10GBps\n[calibration]\n"
                   "allreduce_intra_simple_busbw = 231.4GBps\n"
                   "allgather_inter_ll128_latency = 25.1us\n"
                   "reducescatter_intra_ll_latency = 0", &cause);
    ck_assert_msg(t != NULL, "%s", cause ? cause : "");
    /* [collective][scope][protocol]: allreduce = 2, intra = 0, Simple = 2;
     * 231.4GBps = 231.4e9 B/s up to one rounding of the product. */
    ck_assert_double_eq_tol(t->calib[2][0][2].busbw_Bps, 231.4e9,
                            231.4e9 * REL_TOL);
    /* allgather = 0, inter = 1, LL128 = 1; 25.1us = 25100 ns. */
    ck_assert_double_eq_tol(t->calib[0][1][1].latency_ns, 25100,
                            25100 * REL_TOL);
    ck_assert_double_eq(t->calib[1][0][0].latency_ns, 0);
    text = print_to_string(t);
    ck_assert_ptr_nonnull(strstr(text, "\n[calibration]\n"));
    ck_assert_ptr_nonnull(strstr(text, "\nallreduce_intra_simple_busbw = "
                                       "231.4GBps\n"));
    ck_assert_ptr_nonnull(strstr(text, "\nallgather_inter_ll128_latency = "
                                       "25.1us\n"));
    /* Keys at 0, even when written in the file, are not printed. */
    ck_assert_ptr_null(strstr(text, "reducescatter_intra_ll_latency"));
    free(text);
    assert_round_trip(t);
    set_ok(t, "calibration.reducescatter_inter_simple_busbw=40GBps");
    /* reducescatter = 1, inter = 1, Simple = 2; 40GBps = 4e10 B/s. */
    ck_assert_double_eq(t->calib[1][1][2].busbw_Bps, 4e10);
    assert_round_trip(t);
    set_ok(t, "calibration.reducescatter_inter_simple_pipeline=27.2us");
    /* 27.2us = 27200 ns, printed back as it was given. */
    ck_assert_double_eq_tol(t->calib[1][1][2].pipeline_ns, 27200,
                            27200 * REL_TOL);
    text = print_to_string(t);
    ck_assert_ptr_nonnull(strstr(text, "\nreducescatter_inter_simple_"
                                       "pipeline = 27.2us\n"));
    free(text);
    assert_round_trip(t);
    ck_assert_int_eq(topo_validate(t, &cause), 0);
    /* With x = 1 GB x (n-1)/n over 2 x 8 ranks = 0.9375e9 B at 40 GB/s,
     * x / busbw = 23.4375 ms and 2 sqrt(27.2 us x 23.4375 ms) = 1.5969 ms
     * (latency 0): a reduce-scatter of 1 GB takes 25.0344 ms. */
    struct nccl_config nc;
    nccl_config_init(&nc);
    struct coll_group g = {16, 2, 8};
    struct coll_result r;
    t->nodes = 2;
    ck_assert_int_eq(coll_estimate(t, &nc, COLL_REDUCESCATTER, REDOP_SUM,
                                   &g, 1e9, &r, &cause), 0);
    ck_assert_int_eq(r.proto, PROTO_SIMPLE);
    ck_assert_double_eq_tol(r.time_s, 0.0234375 + 2 * sqrt(27.2e-6 *
                            0.0234375), 1e-9);
    /* The algorithm's own cell wins over the protocol's: Ring Simple at
     * 80 GB/s, no latency or pipeline, is 0.9375e9 / 80e9 = 11.71875 ms. */
    ck_assert_int_eq(r.algo, NCCL_ALGO_RING);
    set_ok(t, "calibration.reducescatter_inter_ring_simple_busbw=80GBps");
    ck_assert_double_eq(t->calib_algo[1][1][NCCL_ALGO_RING][2].busbw_Bps,
                        8e10);
    ck_assert_int_eq(coll_estimate(t, &nc, COLL_REDUCESCATTER, REDOP_SUM,
                                   &g, 1e9, &r, &cause), 0);
    ck_assert_double_eq_tol(r.time_s, 0.01171875, 1e-9);
    assert_round_trip(t);
    topo_free(t);
}
END_TEST

START_TEST(test_topo_load_file)
{
    char *path = tu_temp_file(BASE, strlen(BASE));
    struct topo *t = load_ok(path);
    /* No name key: the name is the file's base name, "check_topo_XXXXXX". */
    const char *slash = strrchr(path, '/');
    ck_assert_str_eq(t->name, slash + 1);
    ck_assert_str_eq(t->source, path);
    topo_free(t);
    unlink(path);
    free(path);
}
END_TEST

START_TEST(test_topo_dtypes)
{
    static const char *names[DTYPE_COUNT] = {"fp32", "tf32", "bf16",
                                             "fp16", "fp8"};
    /* Storage: fp32 and tf32 4 bytes, bf16 and fp16 2, fp8 1. */
    static const int bytes[DTYPE_COUNT] = {4, 4, 2, 2, 1};
    for (int d = 0; d < DTYPE_COUNT; d++) {
        enum dtype back;
        ck_assert_str_eq(dtype_name((enum dtype)d), names[d]);
        ck_assert_int_eq(dtype_parse(names[d], &back), 0);
        ck_assert_int_eq(back, d);
        ck_assert_int_eq(dtype_bytes((enum dtype)d), bytes[d]);
    }
    static const struct {
        const char *s;
        enum dtype d;
    } aliases[] = {
        {"float32", DTYPE_FP32}, {"float", DTYPE_FP32},
        {"bfloat16", DTYPE_BF16}, {"torch.bfloat16", DTYPE_BF16},
        {"float16", DTYPE_FP16}, {"half", DTYPE_FP16}, {"BF16", DTYPE_BF16},
        {"float8_e4m3fn", DTYPE_FP8},
    };
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++) {
        enum dtype d;
        ck_assert_int_eq(dtype_parse(aliases[i].s, &d), 0);
        ck_assert_int_eq(d, aliases[i].d);
    }
    enum dtype d;
    ck_assert_int_eq(dtype_parse("int8", &d), -1);
    ck_assert_int_eq(dtype_parse("", &d), -1);
    ck_assert_int_eq(dtype_parse("bf1", &d), -1);
}
END_TEST

/* ---- limits ---------------------------------------------------------- */

START_TEST(test_topo_limits_gpus)
{
    char *cause = NULL;
    /* 64 GPUs per node and 100000 nodes are each allowed... */
    struct topo *t = parse_edit("gpus_per_node = 4", "gpus_per_node = 64\n"
                                "nodes = 15625", &cause);
    ck_assert_msg(t != NULL, "%s", cause);
    /* ...and 64 * 15625 = 1000000 GPUs is exactly the limit. */
    ck_assert_int_eq(topo_validate(t, &cause), 0);
    set_ok(t, "node.nodes=100000");
    /* 64 * 100000 = 6400000 GPUs > 1000000. */
    ck_assert_int_eq(topo_validate(t, &cause), -1);
    ck_assert_str_eq(cause, "topology 'x': 100000 nodes of 64 GPUs is "
                     "6400000 GPUs, more than 1000000 (lower [node] nodes "
                     "or gpus_per_node)");
    free(cause);
    topo_free(t);

    expect_edit_error("gpus_per_node = 4", "gpus_per_node = 65",
                      "x.ini:8: [node] gpus_per_node: '65' is out of range "
                      "(allowed 1 to 64)");
    expect_edit_error("gpus_per_node = 4", "gpus_per_node = 0",
                      "x.ini:8: [node] gpus_per_node: '0' is out of range "
                      "(allowed 1 to 64)");
    expect_edit_error("gpus_per_node = 4", "gpus_per_node = 4\n"
                      "nodes = 100001",
                      "x.ini:9: [node] nodes: '100001' is out of range "
                      "(allowed 1 to 100000)");
}
END_TEST

START_TEST(test_topo_limits_quantities)
{
    char *cause = NULL;
    /* The inclusive upper ends are accepted. */
    struct topo *t = parse_edit("memory = 10GiB", "memory = 1TiB\n"
                                "gemm_efficiency = 1\n"
                                "kernel_overhead = 1s", &cause);
    ck_assert_msg(t != NULL, "%s", cause);
    /* 1TiB = 2^40 = 1099511627776 bytes. */
    ck_assert_double_eq(t->hbm_bytes, 1099511627776.0);
    ck_assert_int_eq(topo_validate(t, &cause), 0);
    topo_free(t);

    expect_edit_error("memory = 10GiB", "memory = 1025GiB",
                      "x.ini:5: [gpu] memory: '1025GiB' is out of range "
                      "(allowed more than 0 up to 1TiB)");
    expect_edit_error("memory = 10GiB", "memory = 0",
                      "x.ini:5: [gpu] memory: '0' is out of range "
                      "(allowed more than 0 up to 1TiB)");
    expect_edit_error("bf16 = 100TFLOPS", "gemm_efficiency = 0",
                      "x.ini:4: [gpu] gemm_efficiency: '0' is out of range "
                      "(allowed more than 0 up to 1)");
    expect_edit_error("bf16 = 100TFLOPS", "gemm_efficiency = 1.01",
                      "x.ini:4: [gpu] gemm_efficiency: '1.01' is out of "
                      "range (allowed more than 0 up to 1)");
    expect_edit_error("latency = 1us", "latency = 1001ms",
                      "x.ini:12: [intra] latency: '1001ms' is out of range "
                      "(allowed 0 to 1s)");
    expect_edit_error("bandwidth = 100GBps", "bandwidth = 0",
                      "x.ini:11: [intra] bandwidth: '0' is out of range "
                      "(allowed more than 0 up to 1000TBps)");
    expect_edit_error("nic_bandwidth = 100Gbps", "nic_bandwidth = 0",
                      "x.ini:16: [inter] nic_bandwidth: '0' is out of range "
                      "(allowed more than 0 up to 8000Tbps)");
    /* A zero latency is allowed (an ideal link). */
    t = parse_edit("latency = 1us", "latency = 0", &cause);
    ck_assert_msg(t != NULL, "%s", cause);
    topo_free(t);
}
END_TEST

START_TEST(test_topo_limits_validate)
{
    char *cause = NULL;
    struct topo *t = topo_parse_ini(BASE, "x.ini", &cause);
    ck_assert_ptr_nonnull(t);
    /* Fields changed in code are held to the same ranges as files. */
    t->hbm_bytes = 0;
    ck_assert_int_eq(topo_validate(t, &cause), -1);
    ck_assert_str_eq(cause, "topology 'x': [gpu] memory = 0 is out of range "
                     "(allowed more than 0 up to 1TiB)");
    free(cause);
    t->hbm_bytes = 1e9;
    t->gpus_per_node = 65;
    ck_assert_int_eq(topo_validate(t, &cause), -1);
    ck_assert_str_eq(cause, "topology 'x': [node] gpus_per_node = 65 is out "
                     "of range (allowed 1 to 64)");
    free(cause);
    t->gpus_per_node = 8;
    /* With bf16 gone, and fp16 and fp32 never set, nothing can train. */
    set_ok(t, "gpu.bf16=0");
    set_ok(t, "gpu.fp8=2000TFLOPS");
    ck_assert_int_eq(topo_validate(t, &cause), -1);
    ck_assert_str_eq(cause, "topology 'x': [gpu] has no bf16, fp16 or fp32 "
                     "peak (set at least one, e.g. 'bf16 = 312TFLOPS')");
    free(cause);
    set_ok(t, "gpu.fp32=10TFLOPS");
    ck_assert_int_eq(topo_validate(t, &cause), 0);
    topo_free(t);
}
END_TEST

START_TEST(test_topo_limits_long_line)
{
    /* libinih reads at most 199 characters of a line. */
    char line[260];
    memset(line, 'x', sizeof line - 1);
    line[sizeof line - 1] = '\0';
    memcpy(line, "description = ", 14);
    char *text = malloc(strlen(BASE) + 300);
    ck_assert_ptr_nonnull(text);
    sprintf(text, "[topology]\n%s\n%s", line, BASE);
    char *cause = NULL;
    ck_assert_ptr_null(topo_parse_ini(text, "x.ini", &cause));
    ck_assert_str_eq(cause, "x.ini:2: line is longer than 199 characters "
                     "(shorten it)");
    free(cause);
    free(text);
}
END_TEST

START_TEST(test_topo_limits_file_size)
{
    /* 16 MiB + 1 byte of comment lines is refused before parsing. */
    size_t n = 16u * 1024 * 1024 + 1;
    char *big = malloc(n);
    ck_assert_ptr_nonnull(big);
    for (size_t i = 0; i < n; i++)
        big[i] = i % 64 == 63 ? '\n' : '#';
    char *path = tu_temp_file(big, n);
    free(big);
    char *cause = NULL;
    ck_assert_ptr_null(topo_load(path, &cause));
    char want[256];
    snprintf(want, sizeof want, "%s: file is larger than 16 MiB (is it a "
             "topology .ini file?)", path);
    ck_assert_str_eq(cause, want);
    free(cause);
    unlink(path);
    free(path);
}
END_TEST

/* ---- errors ---------------------------------------------------------- */

START_TEST(test_topo_error_missing_unit)
{
    expect_edit_error("nic_bandwidth = 100Gbps", "nic_bandwidth = 400",
                      "x.ini:16: [inter] nic_bandwidth: missing unit in "
                      "'400' (write e.g. '25GBps')");
    expect_set_error("inter.nic_bandwidth=400",
                     "--set inter.nic_bandwidth=400: missing unit in '400' "
                     "(write e.g. '25GBps')");
    expect_edit_error("memory = 10GiB", "memory = 10",
                      "x.ini:5: [gpu] memory: missing unit in '10' (write "
                      "e.g. '80GiB')");
}
END_TEST

START_TEST(test_topo_error_unknown_key)
{
    expect_edit_error("bandwidth = 100GBps", "bandwith = 100GBps",
                      "x.ini:11: unknown key 'bandwith' in [intra] (known: "
                      "fabric, bandwidth, latency)");
    expect_set_error("intra.bandwith=1GBps",
                     "--set intra.bandwith=1GBps: unknown key 'bandwith' in "
                     "[intra] (known: fabric, bandwidth, latency)");
}
END_TEST

START_TEST(test_topo_error_unknown_section)
{
    /* Reported on the section's own line, keys or not. */
    expect_edit_error("[host]", "[hosts]",
                      "x.ini:18: unknown section [hosts] (known: topology, "
                      "gpu, compute, node, intra, inter, network, host, overlap, "
                      "calibration)");
    expect_edit_error("pcie_bandwidth = 10GBps",
                      "pcie_bandwidth = 10GBps\n[extra]",
                      "x.ini:20: unknown section [extra] (known: topology, "
                      "gpu, compute, node, intra, inter, network, host, overlap, "
                      "calibration)");
    expect_set_error("hosts.pcie_bandwidth=1GBps",
                     "--set hosts.pcie_bandwidth=1GBps: unknown section "
                     "[hosts] (known: topology, gpu, compute, node, intra, inter, "
                     "network, host, overlap, calibration)");
}
END_TEST

START_TEST(test_topo_error_bad_enum)
{
    expect_edit_error("fabric = nvswitch", "fabric = nvlnk",
                      "x.ini:10: [intra] fabric: unknown value 'nvlnk' "
                      "(choose one of: nvswitch, nvlink, pcie)");
    expect_edit_error("arch = ampere", "arch = Ampere",
                      "x.ini:3: [gpu] arch: unknown value 'Ampere' (choose "
                      "one of: volta, ampere, hopper, blackwell)");
    expect_set_error("inter.kind=infiniband",
                     "--set inter.kind=infiniband: unknown value "
                     "'infiniband' (choose one of: ib, roce, efa, "
                     "ethernet)");
    expect_set_error("inter.rail_optimized=maybe",
                     "--set inter.rail_optimized=maybe: 'maybe' is not a "
                     "boolean (write true or false)");
}
END_TEST

START_TEST(test_topo_error_missing_key)
{
    expect_edit_error("bandwidth = 100GBps", "",
                      "x.ini: missing key 'bandwidth' in [intra] (add e.g. "
                      "'bandwidth = 300GBps')");
    expect_edit_error("pcie_bandwidth = 10GBps", "",
                      "x.ini: missing key 'pcie_bandwidth' in [host] (add "
                      "e.g. 'pcie_bandwidth = 25GBps')");
    char *cause = NULL;
    ck_assert_ptr_null(topo_parse_ini("", "empty.ini", &cause));
    ck_assert_str_eq(cause, "empty.ini: missing key 'name' in [gpu] (add "
                     "e.g. 'name = A100-SXM4-80GB')");
    free(cause);
}
END_TEST

START_TEST(test_topo_error_malformed_line)
{
    expect_edit_error("bf16 = 100TFLOPS", "bf16 100TFLOPS",
                      "x.ini:4: malformed line 'bf16 100TFLOPS' (expected "
                      "'[section]', 'key = value' or a '#' comment)");
    expect_edit_error("[node]", "[node",
                      "x.ini:7: malformed line '[node' (expected "
                      "'[section]', 'key = value' or a '#' comment)");
    /* A syntax error before a bad value is the one reported... */
    char *text = edit("arch = ampere", "arch ampere");
    char *cause = NULL;
    char *text2 = malloc(strlen(text) + 32);
    ck_assert_ptr_nonnull(text2);
    sprintf(text2, "%s[bogus]\n", text);
    ck_assert_ptr_null(topo_parse_ini(text2, "x.ini", &cause));
    ck_assert_str_eq(cause, "x.ini:3: malformed line 'arch ampere' (expected "
                     "'[section]', 'key = value' or a '#' comment)");
    free(cause);
    free(text);
    free(text2);
    /* ...and of two bad values, the first. */
    text = edit("arch = ampere", "arch = ampre");
    text2 = malloc(strlen(text) + 32);
    ck_assert_ptr_nonnull(text2);
    sprintf(text2, "%sbogus line\n", text);
    ck_assert_ptr_null(topo_parse_ini(text2, "x.ini", &cause));
    ck_assert_str_eq(cause, "x.ini:3: [gpu] arch: unknown value 'ampre' "
                     "(choose one of: volta, ampere, hopper, blackwell)");
    free(cause);
    free(text);
    free(text2);
}
END_TEST

/* aws-ofi-nccl groups a p5 GPU's 4 EFA NICs into one NCCL device: the
 * built-in topology says so, and a group that does not divide the node's
 * NICs is refused with what to write instead. */
START_TEST(test_topo_plugin_nic_group)
{
    struct topo *t = load_ok("aws-p5");
    ck_assert_int_eq(t->plugin_nic_group, 4);
    char *cause = NULL;
    set_ok(t, "inter.plugin_nic_group=3");
    ck_assert_int_eq(topo_validate(t, &cause), -1);
    ck_assert_str_eq(cause, "topology 'aws-p5': [inter] plugin_nic_group = 3 "
                     "does not divide nics_per_node = 32; the plugin groups "
                     "a GPU's NICs, so write a divisor of 32");
    free(cause);
    topo_free(t);
    t = load_ok("dgx-h100");
    ck_assert_int_eq(t->plugin_nic_group, 1);
    topo_free(t);
}
END_TEST

START_TEST(test_topo_error_misc_file)
{
    expect_edit_error("memory = 10GiB", "memory = 10GiB\nmemory = 20GiB",
                      "x.ini:6: duplicate key 'memory' in [gpu] (already "
                      "set on line 5)");
    char *text = malloc(strlen(BASE) + 32);
    ck_assert_ptr_nonnull(text);
    sprintf(text, "nodes = 2\n%s", BASE);
    char *cause = NULL;
    ck_assert_ptr_null(topo_parse_ini(text, "x.ini", &cause));
    ck_assert_str_eq(cause, "x.ini:1: key 'nodes' is outside any section "
                     "(put it under its [section] line)");
    free(cause);
    free(text);
    expect_edit_error("[gpu]", "[topology]\nname = my cluster\n[gpu]",
                      "x.ini:2: [topology] name: 'my cluster' is not a "
                      "valid name (use 1 to 64 letters, digits and . _ + -)");
    expect_edit_error("gpus_per_node = 4", "gpus_per_node = 4.5",
                      "x.ini:8: [node] gpus_per_node: '4.5' is not a whole "
                      "number");
    /* A file name that cannot be a topology name needs a name key. */
    ck_assert_ptr_null(topo_parse_ini(BASE, "dir/my cluster.ini", &cause));
    ck_assert_str_eq(cause, "dir/my cluster.ini: the file name gives the "
                     "topology name 'my cluster', which is not valid (add "
                     "'name = ...' under [topology])");
    free(cause);
}
END_TEST

START_TEST(test_topo_error_calibration)
{
    /* The ranges are 0..1s and 0..1000TBps, as for every other latency
     * and bandwidth. */
    expect_edit_error("pcie_bandwidth = 10GBps",
                      "pcie_bandwidth = 10GBps\n[calibration]\n"
                      "allreduce_inter_ll_busbw = 2000TBps",
                      "x.ini:21: [calibration] allreduce_inter_ll_busbw: "
                      "'2000TBps' is out of range (allowed 0 to 1000TBps)");
    expect_edit_error("pcie_bandwidth = 10GBps",
                      "pcie_bandwidth = 10GBps\n[calibration]\n"
                      "allgather_intra_simple_latency = 2s",
                      "x.ini:21: [calibration] allgather_intra_simple_latency"
                      ": '2s' is out of range (allowed 0 to 1s)");
    /* An unknown protocol is an unknown key; the message lists the
     * section's keys, the first of which is allgather_intra_ll_latency. */
    char *cause = NULL;
    struct topo *t = parse_edit("pcie_bandwidth = 10GBps",
                                "pcie_bandwidth = 10GBps\n[calibration]\n"
                                "allreduce_intra_fast_busbw = 1GBps", &cause);
    ck_assert_ptr_null(t);
    const char *want = "x.ini:21: unknown key 'allreduce_intra_fast_busbw' in "
                       "[calibration] (known: allgather_intra_ll_latency, "
                       "allgather_intra_ll_busbw, ";
    ck_assert_msg(strncmp(cause, want, strlen(want)) == 0, "%s", cause);
    free(cause);
}
END_TEST

START_TEST(test_topo_error_set_syntax)
{
    expect_set_error("nodes=4", "--set nodes=4: expected section.key=value "
                     "(e.g. --set inter.nic_bandwidth=400Gbps)");
    expect_set_error("node.nodes", "--set node.nodes: expected "
                     "section.key=value (e.g. --set "
                     "inter.nic_bandwidth=400Gbps)");
    expect_set_error("node.nodes=0", "--set node.nodes=0: '0' is out of "
                     "range (allowed 1 to 100000)");
    /* A failed --set leaves the topology as it was. */
    char *cause = NULL;
    struct topo *t = topo_parse_ini(BASE, "x.ini", &cause);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(topo_set(t, "gpu.memory=5", &cause), -1);
    free(cause);
    /* Still BASE's 10GiB = 10737418240 bytes. */
    ck_assert_double_eq(t->hbm_bytes, 10737418240.0);
    topo_free(t);
}
END_TEST

START_TEST(test_topo_error_load)
{
    char *cause = NULL;
    ck_assert_ptr_null(topo_load("dgx-a100", &cause));
    /* The list of built-ins grows; check its frame and one member. */
    const char *head = "unknown topology 'dgx-a100' (built-in: ";
    const char *tail = "; or give the path of a topology .ini file)";
    ck_assert_int_eq(strncmp(cause, head, strlen(head)), 0);
    ck_assert_str_eq(cause + strlen(cause) - strlen(tail), tail);
    ck_assert_ptr_nonnull(strstr(cause, " dgx-a100-80g,"));
    ck_assert_ptr_null(strstr(cause, "llama"));
    free(cause);

    ck_assert_ptr_null(topo_load("no/such/dir/x.ini", &cause));
    ck_assert_str_eq(cause, "cannot open 'no/such/dir/x.ini': No such file "
                     "or directory");
    free(cause);

    /* Errors in a file name the file and line. */
    char *text = edit("arch = ampere", "arch = turing");
    char *path = tu_temp_file(text, strlen(text));
    free(text);
    ck_assert_ptr_null(topo_load(path, &cause));
    char want[512];
    snprintf(want, sizeof want, "%s:3: [gpu] arch: unknown value 'turing' "
             "(choose one of: volta, ampere, hopper, blackwell)", path);
    ck_assert_str_eq(cause, want);
    free(cause);
    unlink(path);
    free(path);

    /* A NUL byte means this is not a text file. */
    path = tu_temp_file("[gpu]\0name = x\n", 15);
    ck_assert_ptr_null(topo_load(path, &cause));
    snprintf(want, sizeof want, "%s: contains a NUL byte (is it a topology "
             ".ini file?)", path);
    ck_assert_str_eq(cause, want);
    free(cause);
    unlink(path);
    free(path);
}
END_TEST

static Suite *
topo_suite(void)
{
    Suite *s = suite_create("topo");

    TCase *core = tcase_create("core");
    tcase_add_test(core, test_topo_builtins_load_and_validate);
    tcase_add_test(core, test_topo_dgx_a100_80g_values);
    tcase_add_test(core, test_topo_other_builtin_values);
    tcase_add_test(core, test_topo_test_2x4_values);
    tcase_add_test(core, test_topo_defaults);
    tcase_add_test(core, test_topo_comments_and_indentation);
    tcase_add_test(core, test_topo_set_overrides);
    tcase_add_test(core, test_topo_round_trip_builtins);
    tcase_add_test(core, test_topo_round_trip_odd_values);
    tcase_add_test(core, test_topo_print_format);
    tcase_add_test(core, test_topo_calibration_keys);
    tcase_add_test(core, test_topo_load_file);
    tcase_add_test(core, test_topo_dtypes);
    suite_add_tcase(s, core);

    TCase *limits = tcase_create("limits");
    tcase_set_timeout(limits, 30);
    tcase_add_test(limits, test_topo_limits_gpus);
    tcase_add_test(limits, test_topo_limits_quantities);
    tcase_add_test(limits, test_topo_limits_validate);
    tcase_add_test(limits, test_topo_limits_long_line);
    tcase_add_test(limits, test_topo_limits_file_size);
    suite_add_tcase(s, limits);

    TCase *errors = tcase_create("errors");
    tcase_add_test(errors, test_topo_error_missing_unit);
    tcase_add_test(errors, test_topo_error_unknown_key);
    tcase_add_test(errors, test_topo_error_unknown_section);
    tcase_add_test(errors, test_topo_error_bad_enum);
    tcase_add_test(errors, test_topo_error_missing_key);
    tcase_add_test(errors, test_topo_error_malformed_line);
    tcase_add_test(errors, test_topo_error_misc_file);
    tcase_add_test(errors, test_topo_plugin_nic_group);
    tcase_add_test(errors, test_topo_error_calibration);
    tcase_add_test(errors, test_topo_error_set_syntax);
    tcase_add_test(errors, test_topo_error_load);
    suite_add_tcase(s, errors);
    return s;
}

int
main(void)
{
    return tu_main(topo_suite());
}
