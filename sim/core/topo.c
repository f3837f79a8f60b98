/*
 * topo.c: topology files, --set overrides, validation and printing
 * (see topo.h).
 *
 * Every key a topology file may hold is one row of the table `keys` below:
 * its section, its name, how its value is parsed, where it lands in struct
 * topo, its default (or that it is required) and its valid range.  Parsing a
 * file, applying --set, validating and printing all walk that one table, so
 * they cannot disagree about a key; the alternative, one switch statement per
 * operation, drifts as soon as a key is added to only some of them.
 *
 * Files are small (a few dozen lines), so nothing here is tuned for speed.
 * They are read with libinih through ini_lines.c, so that indentation is
 * ignored, '#' starts an inline comment as well as ';', and every message
 * carries the line it is about (see topo_parse_ini()).
 */
#include "topo.h"
#include "builtin.h"
#include "ini_lines.h"
#include "nccl_env.h"
#include "textfile.h"
#include "units.h"
#include "xalloc.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* A topology file is a few kilobytes; anything this big is the wrong file
 * (a checkpoint, a log) and is refused before it is read into memory. */
#define TOPO_MAX_FILE_BYTES ((size_t)16 * 1024 * 1024)

/* Upper bounds shared by several keys.  They are generous, about a thousand
 * times what current hardware reaches, and exist to catch unit slips (an
 * 'MiB' meant as 'TiB') rather than to judge hardware. */
#define MAX_FLOPS 1e18          /* 1000 PFLOPS per GPU */
#define MAX_HBM_BYTES 1099511627776.0 /* 1 TiB per GPU */
#define MAX_BPS 1e15            /* 1000 TBps for any link */
#define MAX_TIME_NS 1e9         /* 1 s for any latency or overhead */
#define MAX_TOTAL_GPUS 1000000  /* nodes * gpus_per_node */
#define MAX_LABEL_LEN 64        /* topology and GPU names, characters */

enum key_kind {
    KIND_NAME,     /* char *, a topology name: [A-Za-z0-9._+-] */
    KIND_IGNORE,   /* accepted and dropped (free text) */
    KIND_LABEL,    /* char *, free text on one line */
    KIND_ARCH,     /* enum gpu_arch */
    KIND_FABRIC,   /* enum intra_fabric */
    KIND_NET,      /* enum net_kind */
    KIND_SHAPE,    /* enum net_shape */
    KIND_PLACE,    /* enum net_placement */
    KIND_TUNER,    /* enum net_tuner */
    KIND_RATIO,    /* double, "4:1" or a plain number, stored as 4 */
    KIND_FLOPS,    /* double, FLOP/s */
    KIND_BYTES,    /* double, bytes */
    KIND_BW,       /* double, bytes/s, printed in bytes per second */
    KIND_BW_BITS,  /* double, bytes/s, printed in bits per second */
    KIND_TIME,     /* double, ns */
    KIND_INT,      /* int */
    KIND_REAL,     /* double, a plain number */
    KIND_BOOL      /* bool */
};

struct topo_key {
    const char *section;
    const char *key;
    enum key_kind kind;
    size_t off;            /* offset of the field in struct topo */
    bool required;
    const char *dflt;      /* value when omitted; NULL when required */
    const char *example;   /* a plausible value, for hints and docs */
    double lo, hi;         /* valid range of numeric kinds */
    bool lo_open;          /* lo itself is not allowed */
    const char *range;     /* the range in words, for messages */
};

#define F(field) offsetof(struct topo, field)
#define PEAK(d) offsetof(struct topo, peak_flops[d])

/* The keys of one calibration cell, "<op>_<scope>_<proto>_latency",
 * "..._busbw" and "..._pipeline", then the cells of one scope and of one
 * collective. */
#define CAL_SECTION "calibration"
#define CAL_KEYS(cell, name)                                                \
    {CAL_SECTION, name "_latency", KIND_TIME, F(cell.latency_ns), false,    \
     "0", "25.1us", 0, MAX_TIME_NS, false, "allowed 0 to 1s"},              \
    {CAL_SECTION, name "_busbw", KIND_BW, F(cell.busbw_Bps), false, "0",    \
     "231.4GBps", 0, MAX_BPS, false, "allowed 0 to 1000TBps"},              \
    {CAL_SECTION, name "_pipeline", KIND_TIME, F(cell.pipeline_ns), false,  \
     "0", "3.2us", 0, MAX_TIME_NS, false, "allowed 0 to 1s"}
/* Any algorithm: "<op>_<scope>_<proto>_..." */
#define CAL_CELL(o, on, s, sn, p, pn)                                       \
    CAL_KEYS(calib[o][s][p], on "_" sn "_" pn)
/* One algorithm: "<op>_<scope>_<algo>_<proto>_..." */
#define CAL_ACELL(o, on, s, sn, a, an, p, pn)                               \
    CAL_KEYS(calib_algo[o][s][a][p], on "_" sn "_" an "_" pn)
#define CAL_ALGO(o, on, s, sn, a, an)                                       \
    CAL_ACELL(o, on, s, sn, a, an, 0, "ll"),                                \
    CAL_ACELL(o, on, s, sn, a, an, 1, "ll128"),                             \
    CAL_ACELL(o, on, s, sn, a, an, 2, "simple")
#define CAL_SCOPE(o, on, s, sn)                                             \
    CAL_CELL(o, on, s, sn, 0, "ll"), CAL_CELL(o, on, s, sn, 1, "ll128"),    \
    CAL_CELL(o, on, s, sn, 2, "simple"),                                    \
    CAL_ALGO(o, on, s, sn, 0, "tree"), CAL_ALGO(o, on, s, sn, 1, "ring"),   \
    CAL_ALGO(o, on, s, sn, 2, "collnetdirect"),                             \
    CAL_ALGO(o, on, s, sn, 3, "collnetchain"),                              \
    CAL_ALGO(o, on, s, sn, 4, "nvls"), CAL_ALGO(o, on, s, sn, 5, "nvlstree"),\
    CAL_ALGO(o, on, s, sn, 6, "pat")
#define CAL_OP(o, on)                                                       \
    CAL_SCOPE(o, on, 0, "intra"), CAL_SCOPE(o, on, 1, "inter")

/* The names above spell enum coll_op and enum nccl_proto by position. */
_Static_assert(COLL_ALLGATHER == 0 && COLL_REDUCESCATTER == 1 &&
               COLL_ALLREDUCE == 2 && COLL_OP_COUNT == TOPO_CALIB_OPS,
               "calibration keys follow enum coll_op");
_Static_assert(PROTO_LL == 0 && PROTO_LL128 == 1 && PROTO_SIMPLE == 2 &&
               PROTO_COUNT == TOPO_CALIB_PROTOS,
               "calibration keys follow enum nccl_proto");
_Static_assert(NCCL_ALGO_TREE == 0 && NCCL_ALGO_RING == 1 &&
               NCCL_ALGO_COLLNET_DIRECT == 2 && NCCL_ALGO_COLLNET_CHAIN == 3 &&
               NCCL_ALGO_NVLS == 4 && NCCL_ALGO_NVLS_TREE == 5 &&
               NCCL_ALGO_PAT == 6 && NCCL_ALGO_COUNT == TOPO_CALIB_ALGOS,
               "calibration keys follow enum nccl_algo");

const char *const topo_calib_algo_keys[TOPO_CALIB_ALGOS] = {
    "tree", "ring", "collnetdirect", "collnetchain", "nvls", "nvlstree",
    "pat"};

static const struct topo_key keys[] = {
    {"topology", "name", KIND_NAME, F(name), false, NULL, "dgx-a100-80g",
     0, 0, false, NULL},
    {"topology", "description", KIND_IGNORE, 0, false, NULL, "...",
     0, 0, false, NULL},
    {"gpu", "name", KIND_LABEL, F(gpu_name), true, NULL, "A100-SXM4-80GB",
     0, 0, false, NULL},
    {"gpu", "arch", KIND_ARCH, F(arch), true, NULL, "ampere",
     0, 0, false, NULL},
    {"gpu", "fp32", KIND_FLOPS, PEAK(DTYPE_FP32), false, "0", "19.5TFLOPS",
     0, MAX_FLOPS, false, "allowed 0 to 1000PFLOPS"},
    {"gpu", "tf32", KIND_FLOPS, PEAK(DTYPE_TF32), false, "0", "156TFLOPS",
     0, MAX_FLOPS, false, "allowed 0 to 1000PFLOPS"},
    {"gpu", "bf16", KIND_FLOPS, PEAK(DTYPE_BF16), false, "0", "312TFLOPS",
     0, MAX_FLOPS, false, "allowed 0 to 1000PFLOPS"},
    {"gpu", "fp16", KIND_FLOPS, PEAK(DTYPE_FP16), false, "0", "312TFLOPS",
     0, MAX_FLOPS, false, "allowed 0 to 1000PFLOPS"},
    {"gpu", "fp8", KIND_FLOPS, PEAK(DTYPE_FP8), false, "0", "1979TFLOPS",
     0, MAX_FLOPS, false, "allowed 0 to 1000PFLOPS"},
    {"gpu", "memory", KIND_BYTES, F(hbm_bytes), true, NULL, "80GiB",
     0, MAX_HBM_BYTES, true, "allowed more than 0 up to 1TiB"},
    {"gpu", "memory_bandwidth", KIND_BW, F(hbm_Bps), true, NULL, "2039GBps",
     0, MAX_BPS, true, "allowed more than 0 up to 1000TBps"},
    {"gpu", "gemm_efficiency", KIND_REAL, F(gemm_efficiency), false, "0.75",
     "0.75", 0, 1, true, "allowed more than 0 up to 1"},
    {"gpu", "kernel_overhead", KIND_TIME, F(kernel_overhead_ns), false, "3us",
     "3us", 0, MAX_TIME_NS, false, "allowed 0 to 1s"},
    /* A streaming kernel reaches about 1.80 of the A100 80GB's 2.04 TB/s,
     * 88 %, "around 90 %" being the practical maximum (NVIDIA developer
     * forum, "Trouble to Reach Peak Bandwidth of A100", with Nsight
     * measurements); no H100 figure was found, so the same share. */
    {"gpu", "memory_efficiency", KIND_REAL, F(memory_efficiency), false,
     "0.88", "0.88", 0, 1, true, "allowed more than 0 up to 1"},
    /* Peaks are quoted at the boost clock; a part held below it (a 500 W
     * H100 cap, a hot node) sustains this fraction of them. */
    {"gpu", "clock_fraction", KIND_REAL, F(clock_fraction), false, "1",
     "1", 0, 1, true, "allowed more than 0 up to 1"},
    /* GPUs of one model differ: "5% and higher differences on an 8-gpu
     * node" in matmul throughput (stas00/ml-engineering, compute/
     * accelerator/README.md, "Not all accelerators are created equal"),
     * and a synchronous step goes at the slowest one's pace
     * (straggler.h).  0 takes every GPU as fast as the peaks say. */
    {"gpu", "speed_spread", KIND_REAL, F(speed_spread), false, "0.05",
     "0.05", 0, 0.5, false, "allowed 0 to 0.5"},
    {"gpu", "sms", KIND_INT, F(sms), false, "0", "132", 0, 1024, false,
     "allowed 0 (the architecture's) to 1024"},
    {"compute", "attention_forward_scale", KIND_REAL, F(attention_fwd_scale),
     false, "1", "1", 0, 10, true, "allowed more than 0 up to 10"},
    {"compute", "attention_backward_scale", KIND_REAL,
     F(attention_bwd_scale), false, "1", "1", 0, 10, true,
     "allowed more than 0 up to 10"},
    {"node", "gpus_per_node", KIND_INT, F(gpus_per_node), true, NULL, "8",
     1, 64, false, "allowed 1 to 64"},
    {"node", "nodes", KIND_INT, F(nodes), false, "1", "1",
     1, 100000, false, "allowed 1 to 100000"},
    {"node", "launch_overhead", KIND_TIME, F(launch_overhead_ns), false,
     "5us", "5us", 0, MAX_TIME_NS, false, "allowed 0 to 1s"},
    {"node", "hook_overhead", KIND_TIME, F(hook_overhead_ns), false, "20us",
     "20us", 0, MAX_TIME_NS, false, "allowed 0 to 1s"},
    {"intra", "fabric", KIND_FABRIC, F(fabric), true, NULL, "nvswitch",
     0, 0, false, NULL},
    {"intra", "bandwidth", KIND_BW, F(intra_Bps), true, NULL, "300GBps",
     0, MAX_BPS, true, "allowed more than 0 up to 1000TBps"},
    {"intra", "latency", KIND_TIME, F(intra_latency_ns), true, NULL, "1us",
     0, MAX_TIME_NS, false, "allowed 0 to 1s"},
    {"inter", "kind", KIND_NET, F(net), true, NULL, "ib",
     0, 0, false, NULL},
    {"inter", "nics_per_node", KIND_INT, F(nics_per_node), true, NULL, "8",
     1, 64, false, "allowed 1 to 64"},
    {"inter", "nic_bandwidth", KIND_BW_BITS, F(nic_Bps), true, NULL,
     "200Gbps", 0, MAX_BPS, true, "allowed more than 0 up to 8000Tbps"},
    {"inter", "latency", KIND_TIME, F(inter_latency_ns), true, NULL, "5us",
     0, MAX_TIME_NS, false, "allowed 0 to 1s"},
    /* NCCL's own transports leave the latency they report unset
     * (src/transport/net_ib.cc, net_socket.cc: "props->latency = 0; // Not
     * set"); aws-ofi-nccl reports its platform table's (platform-aws.cpp
     * platform_data_map .latency), which only steers NCCL's choice. */
    {"inter", "plugin_latency", KIND_TIME, F(plugin_latency_ns), false, "0",
     "75us", 0, MAX_TIME_NS, false, "allowed 0 to 1s"},
    {"inter", "rail_optimized", KIND_BOOL, F(rail_optimized), false, "true",
     "true", 0, 0, false, NULL},
    /* SHARP switches with NCCL's CollNet plugin enabled
     * (NCCL_COLLNET_ENABLE=1): off unless a cluster says so, as NCCL. */
    {"inter", "sharp", KIND_BOOL, F(sharp), false, "false", "false", 0, 0,
     false, NULL},
    /* A network plugin may set NCCL's environment at load time, before
     * NCCL reads it (aws-ofi-nccl src/platform-aws.cpp platform_data_map:
     * NCCL_BUFFSIZE=8388608 on p4d, p4de, p5, p5e, p5en, p6, never
     * overwriting a value the user set). */
    {"inter", "plugin_buffsize", KIND_BYTES, F(plugin_buffsize), false, "0",
     "8MiB", 0, 1073741824.0, false, "allowed 0 (none) up to 1GiB"},
    /* aws-ofi-nccl puts NCCL_PROTO=simple in the environment (unless the
     * user set NCCL_PROTO) where its libfabric endpoint cannot promise
     * in-order delivery of aligned 128-byte blocks, which LL and LL128
     * need (platform-aws.cpp platform_config_endpoint, "byte delivery
     * ordering"; nccl_ofi_net.cpp, "GDR" where GPUDirect is off): its
     * SENDRECV protocol on p4d and p4de, whose EFA does not report that
     * ordering (libfabric efa_rdm_ep_setopt checks the QP's RDMA-read
     * ordering, ibv_query_qp_data_in_order). */
    {"inter", "plugin_simple_only", KIND_BOOL, F(plugin_simple_only), false,
     "false", "true", 0, 0, false, NULL},
    /* aws-ofi-nccl's tuner, which replaces NCCL's choice of algorithm and
     * protocol on p5, p5e and p5en from three nodes up
     * (nccl_tuner_aws.h). */
    {"inter", "plugin_tuner", KIND_TUNER, F(plugin_tuner), false, "nccl",
     "aws-p5", 0, 0, false, NULL},
    /* aws-ofi-nccl sets NCCL_NVLS_CHUNKSIZE and NCCL_NVLSTREE_MAX_CHUNKSIZE
     * to 524288 on p5, p5e, p5en (the same table). */
    {"inter", "plugin_nvls_chunksize", KIND_BYTES, F(plugin_nvls_chunksize),
     false, "0", "512KiB", 0, 1073741824.0, false,
     "allowed 0 (none) up to 1GiB"},
    /* aws-ofi-nccl's RDMA protocol (its default on p5, p5e, p5en:
     * platform-aws.cpp platform_data_map .default_protocol) presents the
     * NICs nearest one GPU as one NCCL device (nccl_ofi_topo.cpp groups
     * them; nccl_ofi_rdma.cpp get_properties: port_speed x
     * max_group_size), so NCCL's search sees nics_per_node / this many
     * NICs at this many times the speed. */
    {"inter", "plugin_nic_group", KIND_INT, F(plugin_nic_group), false, "1",
     "4", 1, 64, false, "allowed 1 to 64"},
    /* [network]: the fabric above the NICs, for --network simgrid.  A
     * leaf's uplinks carry (nodes under it x NICs x NIC rate) divided by
     * the oversubscription ratio (a 2:1 leaf has half as much capacity
     * towards the spines as towards its nodes). */
    {"network", "shape", KIND_SHAPE, F(shape), false, "single_switch",
     "fat_tree", 0, 0, false, NULL},
    {"network", "nodes_per_leaf", KIND_INT, F(nodes_per_leaf), false, "1",
     "4", 1, 100000, false, "allowed 1 to 100000"},
    {"network", "oversubscription", KIND_RATIO, F(oversubscription), false,
     "1", "2:1", 1, 64, false, "allowed 1:1 to 64:1"},
    {"network", "spine_latency", KIND_TIME, F(spine_latency_ns), false,
     "0", "1us", 0, MAX_TIME_NS, false, "allowed 0 to 1s"},
    {"network", "placement", KIND_PLACE, F(placement), false, "packed",
     "spread", 0, 0, false, NULL},
    {"host", "pcie_bandwidth", KIND_BW, F(pcie_Bps), true, NULL, "25GBps",
     0, MAX_BPS, true, "allowed more than 0 up to 1000TBps"},
    {"host", "memory_bandwidth", KIND_BW, F(host_mem_Bps), false, "100GBps",
     "200GBps", 0, MAX_BPS, true, "allowed more than 0 up to 1000TBps"},
    /* Eager dispatch costs 5-7 us of CPU per op with or without autograd
     * recording (pytorch/pytorch#41383, #82793); autograd's engine adds
     * its node bookkeeping in backward, not measured as a number: 2 us
     * per kernel is an estimate. */
    {"host", "autograd_overhead", KIND_TIME, F(autograd_overhead_ns), false,
     "2us", "2us", 0, MAX_TIME_NS, false, "allowed 0 to 1s"},
    /* The training loop's own Python per step (zero_grad, loss and
     * logging, the optimizer's Python around its foreach kernels): an
     * estimate. */
    {"host", "step_overhead", KIND_TIME, F(step_overhead_ns), false,
     "500us", "500us", 0, MAX_TIME_NS, false, "allowed 0 to 1s"},
    /* The caching allocator's retry when cudaMalloc fails (mem.h): host
     * time of each cudaMalloc retried, each cudaFree of a cached segment,
     * and the fixed cost of a device synchronize (the wait for the GPU to
     * finish is simulated, not part of it).  NVIDIA's CUDA Best Practices
     * Guide: "Device memory allocation and de-allocation via cudaMalloc()
     * and cudaFree() ... are expensive operations"; cudaFree also waits
     * for the device (a synchronizing call, which is what the
     * stream-ordered cudaFreeAsync avoids).  M. Boyer measured cudaMalloc
     * at about 50 us per call from 4 KB to 512 KB, growing beyond that
     * (www.cs.virginia.edu/~mwb7w/cuda_support/
     * memory_management_overhead.html, an older GPU); the allocator's
     * segments are 2 MiB and more.  The defaults are estimates on that
     * scale, not measurements: 100 us each, and 10 us for a synchronize
     * of an idle device (a driver round trip).  Calibrate them from a
     * trace where it matters. */
    {"host", "cuda_malloc_cost", KIND_TIME, F(cuda_malloc_ns), false,
     "100us", "100us", 0, MAX_TIME_NS, false, "allowed 0 to 1s"},
    {"host", "cuda_free_cost", KIND_TIME, F(cuda_free_ns), false, "100us",
     "100us", 0, MAX_TIME_NS, false, "allowed 0 to 1s"},
    {"host", "synchronize_cost", KIND_TIME, F(synchronize_ns), false, "10us",
     "10us", 0, MAX_TIME_NS, false, "allowed 0 to 1s"},
    /* [overlap]: how much compute and NCCL kernels slow each other while
     * they run at the same time (1 = not at all).  NCCL kernels occupy one
     * SM per channel and compete for HBM bandwidth even when they leave
     * SMs free (NVIDIA/nccl#1433: "may not compete for SMs but still
     * compete for memory bandwidth", with communication up to 2x slower
     * next to CUTLASS GEMMs); CoCoNet (Jangda et al., ASPLOS 2022) and
     * the DMA-engine study of Agrawal et al. (2024) measure GEMMs 10-30%
     * slower beside a concurrent all-reduce or reduce-scatter.  The
     * defaults take the low end for compute (16 of 108 A100 SMs is 15%,
     * and GEMMs are not SM-bound at that margin) and a little more for
     * the collective, which is bandwidth-bound. */
    {"overlap", "compute_slowdown", KIND_REAL,
     F(overlap_compute_slowdown), false, "1.1", "1.1", 1, 4, false,
     "allowed 1 to 4"},
    {"overlap", "comm_slowdown", KIND_REAL, F(overlap_comm_slowdown), false,
     "1.15", "1.15", 1, 4, false, "allowed 1 to 4"},
    /* [calibration]: what `fsdpsim calibrate` fitted to nccl-tests output,
     * a latency, a bus bandwidth and a pipeline-fill time per collective,
     * scope and protocol
     * (topo.h).  All optional; 0 means "not calibrated", and only the keys
     * that are set are printed, so uncalibrated topologies print as before.
     * Index order and names follow enum coll_op and enum nccl_proto. */
    CAL_OP(0, "allgather"),
    CAL_OP(1, "reducescatter"),
    CAL_OP(2, "allreduce"),
};

#define N_KEYS (sizeof keys / sizeof keys[0])

static const char *const sections[] = {
    "topology", "gpu", "compute", "node", "intra", "inter", "network",
    "host", "overlap",
    CAL_SECTION, NULL};

/* Enum spellings, indexed by the enum value. */
static const char *const arch_names[] = {
    "volta", "ampere", "hopper", "blackwell", NULL};
static const char *const fabric_names[] = {
    "nvswitch", "nvlink", "pcie", NULL};
static const char *const net_names[] = {
    "ib", "roce", "efa", "ethernet", NULL};
static const char *const shape_names[] = {
    "single_switch", "fat_tree", "rail_optimized", NULL};
static const char *const place_names[] = {"packed", "spread", NULL};
static const char *const tuner_names[] = {"nccl", "aws-p5", "aws-p5en",
                                          NULL};

static const char *const dtype_names[DTYPE_COUNT] = {
    "fp32", "tf32", "bf16", "fp16", "fp8"};

/* ---- Field access ---------------------------------------------------- */

static void *
field(struct topo *t, const struct topo_key *k)
{
    return (char *)t + k->off;
}

static const void *
cfield(const struct topo *t, const struct topo_key *k)
{
    return (const char *)t + k->off;
}

static const char *const *
enum_choices(enum key_kind kind)
{
    switch (kind) {
    case KIND_ARCH:
        return arch_names;
    case KIND_FABRIC:
        return fabric_names;
    case KIND_NET:
        return net_names;
    case KIND_SHAPE:
        return shape_names;
    case KIND_PLACE:
        return place_names;
    case KIND_TUNER:
        return tuner_names;
    default:
        return NULL;
    }
}

/* The enum fields are read and written through their own types, not an
 * int pointer: the representation of an enum is the compiler's choice. */
static int
get_enum(const struct topo *t, const struct topo_key *k)
{
    switch (k->kind) {
    case KIND_ARCH:
        return (int)*(const enum gpu_arch *)cfield(t, k);
    case KIND_FABRIC:
        return (int)*(const enum intra_fabric *)cfield(t, k);
    case KIND_NET:
        return (int)*(const enum net_kind *)cfield(t, k);
    case KIND_SHAPE:
        return (int)*(const enum net_shape *)cfield(t, k);
    case KIND_PLACE:
        return (int)*(const enum net_placement *)cfield(t, k);
    case KIND_TUNER:
        return (int)*(const enum net_tuner *)cfield(t, k);
    default:
        assert(!"not an enum key");
        return -1;
    }
}

static void
set_enum(struct topo *t, const struct topo_key *k, int v)
{
    switch (k->kind) {
    case KIND_ARCH:
        *(enum gpu_arch *)field(t, k) = (enum gpu_arch)v;
        break;
    case KIND_FABRIC:
        *(enum intra_fabric *)field(t, k) = (enum intra_fabric)v;
        break;
    case KIND_NET:
        *(enum net_kind *)field(t, k) = (enum net_kind)v;
        break;
    case KIND_SHAPE:
        *(enum net_shape *)field(t, k) = (enum net_shape)v;
        break;
    case KIND_PLACE:
        *(enum net_placement *)field(t, k) = (enum net_placement)v;
        break;
    case KIND_TUNER:
        *(enum net_tuner *)field(t, k) = (enum net_tuner)v;
        break;
    default:
        assert(!"not an enum key");
    }
}

static int
list_len(const char *const *list)
{
    int n = 0;
    while (list[n])
        n++;
    return n;
}

/* "a, b, c" from a NULL-terminated list.  Caller frees. */
static char *
join(const char *const *list)
{
    size_t len = 1;
    for (int i = 0; list[i]; i++)
        len += strlen(list[i]) + 2;
    char *s = xmalloc(len), *w = s;
    *w = '\0';
    for (int i = 0; list[i]; i++)
        w += sprintf(w, "%s%s", i ? ", " : "", list[i]);
    return s;
}

static bool
known_section(const char *name)
{
    for (int i = 0; sections[i]; i++)
        if (strcmp(sections[i], name) == 0)
            return true;
    return false;
}

static const struct topo_key *
find_key(const char *section, const char *key)
{
    for (size_t i = 0; i < N_KEYS; i++)
        if (strcmp(keys[i].section, section) == 0 &&
            strcmp(keys[i].key, key) == 0)
            return &keys[i];
    return NULL;
}

/* The message for a key that does not exist: names the section's keys, or
 * the sections when the section is wrong.  Caller frees. */
static char *
unknown_key_message(const char *section, const char *key)
{
    if (!known_section(section)) {
        char *list = join(sections);
        char *m = xasprintf("unknown section [%s] (known: %s)", section,
                            list);
        free(list);
        return m;
    }
    const char *names[N_KEYS + 1];
    int n = 0;
    for (size_t i = 0; i < N_KEYS; i++)
        if (strcmp(keys[i].section, section) == 0)
            names[n++] = keys[i].key;
    names[n] = NULL;
    char *list = join(names);
    char *m = xasprintf("unknown key '%s' in [%s] (known: %s)", key, section,
                        list);
    free(list);
    return m;
}

/* ---- Values ---------------------------------------------------------- */

static bool
in_range(const struct topo_key *k, double v)
{
    /* Written so that NaN is out of every range. */
    return (k->lo_open ? v > k->lo : v >= k->lo) && v <= k->hi;
}

/* A topology name becomes part of file names and report headers, so it is
 * kept to characters that need no quoting anywhere. */
static int
check_name(const char *s, char **cause)
{
    size_t n = strlen(s);
    if (n == 0 || n > MAX_LABEL_LEN) {
        *cause = xasprintf("'%s' is not a valid name (use 1 to %d letters, "
                           "digits and . _ + -)", s, MAX_LABEL_LEN);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!isalnum(c) && c != '.' && c != '_' && c != '+' && c != '-') {
            *cause = xasprintf("'%s' is not a valid name (use 1 to %d "
                               "letters, digits and . _ + -)", s,
                               MAX_LABEL_LEN);
            return -1;
        }
    }
    return 0;
}

/* Free text must survive topo_print() and a re-read: one line, no comment
 * characters, no surrounding blanks (libinih strips them). */
static int
check_label(const char *s, char **cause)
{
    size_t n = strlen(s);
    bool ok = n > 0 && n <= MAX_LABEL_LEN && !isspace((unsigned char)s[0]) &&
              !isspace((unsigned char)s[n - 1]);
    for (size_t i = 0; ok && i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        ok = isprint(c) && c != '#' && c != ';';
    }
    if (!ok) {
        *cause = xasprintf("'%s' is not a valid name (use 1 to %d printable "
                           "characters without '#' or ';')", s,
                           MAX_LABEL_LEN);
        return -1;
    }
    return 0;
}

/* A ratio as switch vendors write it, "4:1", or the plain number "4".
 * Only N:1 is accepted: "3:2" is written 1.5. */
static int
parse_ratio(const char *value, double *v, char **cause)
{
    const char *colon = strchr(value, ':');
    if (colon == NULL)
        return units_parse_real(value, 0, HUGE_VAL, v, cause);
    char *num = xstrndup(value, (size_t)(colon - value));
    int rc = strcmp(colon, ":1") == 0
                 ? units_parse_real(num, 0, HUGE_VAL, v, cause) : -1;
    if (rc != 0 && *cause == NULL)
        *cause = xasprintf("'%s' is not a ratio (write it as N:1, e.g. "
                           "'2:1', or as a number, e.g. '1.5')", value);
    free(num);
    return rc;
}

/*
 * Parse VALUE as key K and store it in T.  Returns 0, or -1 with *cause set
 * to a message without any file or flag prefix (the caller adds it).  T is
 * unchanged on failure.
 */
static int
apply(struct topo *t, const struct topo_key *k, const char *value,
      char **cause)
{
    double v = 0;
    int rc = 0;
    switch (k->kind) {
    case KIND_IGNORE:
        return 0;
    case KIND_NAME:
    case KIND_LABEL:
        if (k->kind == KIND_NAME ? check_name(value, cause) != 0
                                 : check_label(value, cause) != 0)
            return -1;
        free(*(char **)field(t, k));
        *(char **)field(t, k) = xstrdup(value);
        return 0;
    case KIND_ARCH:
    case KIND_FABRIC:
    case KIND_NET:
    case KIND_SHAPE:
    case KIND_PLACE:
    case KIND_TUNER: {
        const char *const *choices = enum_choices(k->kind);
        for (int i = 0; choices[i]; i++) {
            if (strcmp(choices[i], value) == 0) {
                set_enum(t, k, i);
                return 0;
            }
        }
        char *list = join(choices);
        *cause = xasprintf("unknown value '%s' (choose one of: %s)", value,
                           list);
        free(list);
        return -1;
    }
    case KIND_BOOL: {
        bool b;
        if (units_parse_bool(value, &b, cause) != 0)
            return -1;
        *(bool *)field(t, k) = b;
        return 0;
    }
    case KIND_INT: {
        int64_t n;
        if (units_parse_count(value, (int64_t)k->lo, (int64_t)k->hi, &n,
                              cause) != 0)
            return -1;
        *(int *)field(t, k) = (int)n;
        return 0;
    }
    case KIND_FLOPS:
        rc = units_parse_flops(value, &v, cause);
        break;
    case KIND_BYTES:
        rc = units_parse_bytes(value, &v, cause);
        break;
    case KIND_BW:
    case KIND_BW_BITS:
        rc = units_parse_bandwidth(value, &v, cause);
        break;
    case KIND_TIME:
        rc = units_parse_time_ns(value, &v, cause);
        break;
    case KIND_REAL:
        rc = units_parse_real(value, 0, HUGE_VAL, &v, cause);
        break;
    case KIND_RATIO:
        rc = parse_ratio(value, &v, cause);
        break;
    }
    if (rc != 0)
        return -1;
    if (!in_range(k, v)) {
        *cause = xasprintf("'%s' is out of range (%s)", value, k->range);
        return -1;
    }
    *(double *)field(t, k) = v;
    return 0;
}

struct unit_choice {
    const char *unit;
    double factor;
};

/* Units topo_print() may choose from, largest first; ties prefer earlier
 * ones.  The factors only propose candidates: every candidate is checked by
 * parsing it back with units.c, so a slip here costs readability, never
 * correctness. */
static const struct unit_choice bytes_choices[] = {
    {"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3},
    {"TiB", 1099511627776.0}, {"GiB", 1073741824.0}, {"MiB", 1048576.0},
    {"KiB", 1024.0}, {"B", 1}, {NULL, 0}};
static const struct unit_choice bw_choices[] = {
    {"TBps", 1e12}, {"GBps", 1e9}, {"MBps", 1e6}, {"KBps", 1e3},
    {"GiBps", 1073741824.0}, {"MiBps", 1048576.0}, {"KiBps", 1024.0},
    {"Bps", 1}, {NULL, 0}};
static const struct unit_choice bits_choices[] = {
    {"Tbps", 1e12 / 8}, {"Gbps", 1e9 / 8}, {"Mbps", 1e6 / 8},
    {"Kbps", 1e3 / 8}, {"bps", 1.0 / 8}, {NULL, 0}};
static const struct unit_choice time_choices[] = {
    {"s", 1e9}, {"ms", 1e6}, {"us", 1e3}, {"ns", 1}, {NULL, 0}};
static const struct unit_choice flops_choices[] = {
    {"PFLOPS", 1e15}, {"TFLOPS", 1e12}, {"GFLOPS", 1e9}, {"FLOPS", 1},
    {NULL, 0}};

typedef int (*quantity_parser)(const char *, double *, char **);

/* True when S parses back to exactly X. */
static bool
reads_back(quantity_parser parse, const char *s, double x)
{
    char *cause = NULL;
    double y;
    if (parse(s, &y, &cause) != 0) {
        free(cause);
        return false;
    }
    return y == x;
}

/*
 * Write X into BUF as the shortest "<number><unit>" that parses back to
 * exactly X, so that topo_print() round-trips: 85899345920 bytes become
 * "80GiB", 2.5e10 B/s on a NIC "200Gbps".  Shorter numbers win, then
 * integers over fractions ("2039GBps" over "2.039TBps"), then list order.
 * Exponent forms are avoided; the base unit at full precision is the
 * fallback that always reads back.
 */
static const char *
fmt_quantity(char *buf, size_t len, double x,
             const struct unit_choice *choices, quantity_parser parse)
{
    if (x == 0) {
        snprintf(buf, len, "0");
        return buf;
    }
    char best[64] = "";
    size_t best_len = 0;
    bool best_frac = false;
    for (const struct unit_choice *u = choices; u->unit; u++) {
        char num[40], cand[64];
        for (int prec = 1; prec <= 17; prec++) {
            snprintf(num, sizeof num, "%.*g", prec, x / u->factor);
            if (strchr(num, 'e') != NULL)
                continue;
            snprintf(cand, sizeof cand, "%s%s", num, u->unit);
            if (!reads_back(parse, cand, x))
                continue;
            size_t n = strlen(num);
            bool frac = strchr(num, '.') != NULL;
            if (best[0] == '\0' || n < best_len ||
                (n == best_len && best_frac && !frac)) {
                snprintf(best, sizeof best, "%s", cand);
                best_len = n;
                best_frac = frac;
            }
            break;
        }
    }
    if (best[0] == '\0') {
        const struct unit_choice *base = choices;
        while (base[1].unit)
            base++;
        snprintf(best, sizeof best, "%.17g%s", x / base->factor, base->unit);
    }
    snprintf(buf, len, "%s", best);
    return buf;
}

/* The shortest plain number that reads back to exactly X. */
static const char *
fmt_real(char *buf, size_t len, double x)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, x);
        if (strtod(buf, NULL) == x)
            break;
    }
    return buf;
}

/* The value of key K in T as a topology file would spell it; points into
 * BUF (at least 64 bytes) or into T. */
static const char *
fmt_value(const struct topo *t, const struct topo_key *k, char *buf,
          size_t len)
{
    double d = 0;
    if (k->kind == KIND_FLOPS || k->kind == KIND_BYTES ||
        k->kind == KIND_BW || k->kind == KIND_BW_BITS ||
        k->kind == KIND_TIME || k->kind == KIND_REAL ||
        k->kind == KIND_RATIO)
        d = *(const double *)cfield(t, k);
    switch (k->kind) {
    case KIND_IGNORE:
        return "";
    case KIND_NAME:
    case KIND_LABEL: {
        const char *s = *(char *const *)cfield(t, k);
        return s ? s : "";
    }
    case KIND_ARCH:
    case KIND_FABRIC:
    case KIND_NET:
    case KIND_SHAPE:
    case KIND_PLACE:
    case KIND_TUNER: {
        const char *const *choices = enum_choices(k->kind);
        int v = get_enum(t, k);
        return v >= 0 && v < list_len(choices) ? choices[v] : "?";
    }
    case KIND_BOOL:
        return *(const bool *)cfield(t, k) ? "true" : "false";
    case KIND_INT:
        snprintf(buf, len, "%d", *(const int *)cfield(t, k));
        return buf;
    case KIND_FLOPS:
        return fmt_quantity(buf, len, d, flops_choices, units_parse_flops);
    case KIND_BYTES:
        return fmt_quantity(buf, len, d, bytes_choices, units_parse_bytes);
    case KIND_BW:
        return fmt_quantity(buf, len, d, bw_choices, units_parse_bandwidth);
    case KIND_BW_BITS:
        return fmt_quantity(buf, len, d, bits_choices,
                            units_parse_bandwidth);
    case KIND_TIME:
        return fmt_quantity(buf, len, d, time_choices, units_parse_time_ns);
    case KIND_REAL:
        return fmt_real(buf, len, d);
    case KIND_RATIO: {
        char num[40];
        snprintf(buf, len, "%s:1", fmt_real(num, sizeof num, d));
        return buf;
    }
    }
    return "";
}

/* ---- Parsing files --------------------------------------------------- */

struct parse {
    struct topo *t;
    bool overlay;           /* a calibration file: measured keys only */
    struct ini_lines rd;    /* the line reader; rd.line is being parsed */
    int seen[N_KEYS];       /* line each key was set on; 0 = not yet */
    int err_line;           /* line of err */
    char *err;              /* first error, without "origin:line: " */
};

/* Keep only the first error: later ones are often its echoes. */
static void
parse_fail(struct parse *ps, char *msg)
{
    if (ps->err == NULL) {
        ps->err = msg;
        ps->err_line = ps->rd.line;
    } else {
        free(msg);
    }
}

/* Line hook: check section names as their lines are read, so that an
 * unknown section is reported on its own line even when it holds no keys. */
static void
on_line(void *user, const char *line)
{
    struct parse *ps = user;
    if (line[0] == '[') {
        const char *close = strchr(line, ']');
        if (close != NULL) {
            char *name = xstrndup(line + 1, (size_t)(close - line - 1));
            if (!known_section(name))
                parse_fail(ps, unknown_key_message(name, ""));
            free(name);
        }
    }
}

/* libinih handler: one "key = value" line.  Returns 1, or 0 on error. */
static int
on_key(void *user, const char *section, const char *name, const char *value)
{
    struct parse *ps = user;
    if (section[0] == '\0') {
        parse_fail(ps, xasprintf("key '%s' is outside any section (put it "
                                 "under its [section] line)", name));
        return 0;
    }
    const struct topo_key *k = find_key(section, name);
    if (k == NULL) {
        parse_fail(ps, unknown_key_message(section, name));
        return 0;
    }
    /* Names, choices, switches and counts describe the cluster; only
     * measured quantities (times, bandwidths, rates, factors) may come
     * from a calibration file: of [node], the host overheads
     * (launch_overhead, hook_overhead), not its counts. */
    if (ps->overlay && (strcmp(section, "topology") == 0 ||
                        !(k->kind == KIND_FLOPS || k->kind == KIND_BW ||
                          k->kind == KIND_BW_BITS || k->kind == KIND_TIME ||
                          k->kind == KIND_REAL))) {
        parse_fail(ps, xasprintf("[%s] %s describes the cluster, not a "
                                 "measurement: a calibration file holds "
                                 "measured values only (set it in the "
                                 "topology, or with --set %s.%s=...)",
                                 section, name, section, name));
        return 0;
    }
    size_t i = (size_t)(k - keys);
    if (ps->seen[i] != 0) {
        parse_fail(ps, xasprintf("duplicate key '%s' in [%s] (already set "
                                 "on line %d)", name, section,
                                 ps->seen[i]));
        return 0;
    }
    ps->seen[i] = ps->rd.line;

    /* libinih ends values at " ;" only; '#' comments after a value are
     * cut here, so that the documented "nodes = 1   # default 1" works. */
    char *v = ini_lines_value(&ps->rd, value);
    char *cause = NULL;
    int rc = apply(ps->t, k, v, &cause);
    free(v);
    if (rc != 0) {
        parse_fail(ps, xasprintf("[%s] %s: %s", section, name, cause));
        free(cause);
        return 0;
    }
    return 1;
}

/* Line LINENO (from 1) of TEXT, trimmed and cut to 40 characters.  Caller
 * frees. */
static char *
text_line(const char *text, int lineno)
{
    const char *s = text;
    for (int i = 1; i < lineno && *s; i++) {
        const char *e = strchr(s, '\n');
        s = e ? e + 1 : s + strlen(s);
    }
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strcspn(s, "\r\n");
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        n--;
    return n > 40 ? xasprintf("%.37s...", s) : xstrndup(s, n);
}

static struct topo *
topo_new_defaults(void)
{
    struct topo *t = xcalloc(1, sizeof *t);
    for (size_t i = 0; i < N_KEYS; i++) {
        if (keys[i].dflt == NULL)
            continue;
        char *cause = NULL;
        int rc = apply(t, &keys[i], keys[i].dflt, &cause);
        assert(rc == 0 && "a default in keys[] does not parse");
        (void)rc;
        free(cause);
    }
    return t;
}

/*
 * Parse TEXT, a topology file, naming it ORIGIN in messages
 * ("ORIGIN:LINE: what (hint)").  Keys with defaults may be omitted; the
 * name defaults to ORIGIN's base name.  Each value is range-checked as it
 * is read; checks across keys are left to topo_validate(), since --set may
 * still change them.  Returns an owned topology (topo_free()), or NULL with
 * *cause set (caller frees).
 */
/* Parse TEXT into PS->t; 0, or -1 with *cause ("ORIGIN:LINE: ..."). */
static int
parse_text(struct parse *ps, const char *text, const char *origin,
           char **cause)
{
    /* Indentation is dropped, because libinih reads an indented line as
     * the continuation of the previous value, which would turn an indented
     * "latency = 1us" into a confusing second value for the key above it.
     * '#' starts a comment only after a blank, so "GPU#2" stays a name. */
    ini_lines_init(&ps->rd, text, 0);
    int rc = ini_lines_parse(&ps->rd, on_key, on_line, ps);
    /* Reading stopped at the long line, so it comes after every error
     * already kept and parse_fail() keeps it only when there is none. */
    if (ps->rd.too_long)
        parse_fail(ps, xasprintf("line is longer than %d characters "
                                 "(shorten it)", ps->rd.max_len));

    if (rc != 0 && (ps->err == NULL || rc < ps->err_line)) {
        /* libinih's own complaint: neither a section, a key nor a
         * comment. */
        char *line = text_line(text, rc);
        *cause = xasprintf("%s:%d: malformed line '%s' (expected "
                           "'[section]', 'key = value' or a '#' comment)",
                           origin, rc, line);
        free(line);
        free(ps->err);
        return -1;
    }
    if (ps->err != NULL) {
        *cause = xasprintf("%s:%d: %s", origin, ps->err_line, ps->err);
        free(ps->err);
        return -1;
    }
    return 0;
}

/*
 * Parse TEXT, a topology file, naming it ORIGIN in messages
 * ("ORIGIN:LINE: what (hint)").  Keys with defaults may be omitted; the
 * name defaults to ORIGIN's base name.  Each value is range-checked as it
 * is read; checks across keys are left to topo_validate(), since --set may
 * still change them.  Returns an owned topology (topo_free()), or NULL with
 * *cause set (caller frees).
 */
struct topo *
topo_parse_ini(const char *text, const char *origin, char **cause)
{
    assert(text != NULL && origin != NULL);
    struct parse ps = {.t = topo_new_defaults()};
    if (parse_text(&ps, text, origin, cause) != 0)
        goto fail;
    for (size_t i = 0; i < N_KEYS; i++) {
        if (keys[i].required && ps.seen[i] == 0) {
            *cause = xasprintf("%s: missing key '%s' in [%s] (add e.g. "
                               "'%s = %s')", origin, keys[i].key,
                               keys[i].section, keys[i].key,
                               keys[i].example);
            goto fail;
        }
    }
    if (ps.t->name == NULL) {
        char *base = textfile_stem(origin);
        char *why = NULL;
        if (check_name(base, &why) != 0) {
            *cause = xasprintf("%s: the file name gives the topology name "
                               "'%s', which is not valid (add 'name = ...' "
                               "under [topology])", origin, base);
            free(why);
            free(base);
            goto fail;
        }
        ps.t->name = base;
    }
    ps.t->source = xstrdup(origin);
    return ps.t;

fail:
    topo_free(ps.t);
    return NULL;
}


/* ---- Loading --------------------------------------------------------- */

/*
 * Read the file PATH into a NUL-terminated buffer (caller frees).  Returns
 * 0, 1 when there is no such file (so the caller can try a built-in), or
 * -1 with *cause set.  Only regular files are read (a FIFO would block,
 * a device might never end).
 */
static int
read_file(const char *path, char **text, char **cause)
{
    enum textfile_error error;
    *text = textfile_read(path, TOPO_MAX_FILE_BYTES, 0, &error);
    if (*text != NULL)
        return 0;
    if (error == TEXTFILE_OPEN && errno == ENOENT)
        return 1;
    *cause = textfile_error_message(path, error, TOPO_MAX_FILE_BYTES,
                                    "is it a topology .ini file?");
    return -1;
}

/*
 * NAME_OR_PATH is a file when one exists at that path, else the name of a
 * built-in topology.  A name that looks like a path (has a '/' or ends in
 * ".ini") and names no file is reported as a missing file rather than an
 * unknown built-in.  The result is parsed but not validated: callers apply
 * --set first, then topo_validate().
 */
struct topo *
topo_load(const char *name_or_path, char **cause)
{
    char *text = NULL;
    int rc = read_file(name_or_path, &text, cause);
    if (rc < 0)
        return NULL;
    if (rc == 0) {
        struct topo *t = topo_parse_ini(text, name_or_path, cause);
        free(text);
        return t;
    }
    const struct builtin_file *b = builtin_find("topologies", name_or_path);
    if (b != NULL) {
        char *origin = xasprintf("topologies/%s.%s", b->name, b->ext);
        struct topo *t = topo_parse_ini(b->text, origin, cause);
        free(origin);
        return t;
    }
    size_t n = strlen(name_or_path);
    if (strchr(name_or_path, '/') != NULL ||
        (n >= 4 && strcmp(name_or_path + n - 4, ".ini") == 0)) {
        *cause = xasprintf("cannot open '%s': %s", name_or_path,
                           strerror(ENOENT));
        return NULL;
    }
    char *list = builtin_names("topologies");
    *cause = xasprintf("unknown topology '%s' (built-in: %s; or give the "
                       "path of a topology .ini file)", name_or_path,
                       *list ? list : "none");
    free(list);
    return NULL;
}

int
topo_apply_calibration_text(struct topo *t, const char *text,
                            const char *origin, char **cause)
{
    /* Parsed into a copy, so that T is unchanged on failure.  Only
     * numeric kinds are accepted (on_key), so the copy never replaces
     * one of T's strings. */
    struct topo copy = *t;
    struct parse ps = {.t = &copy, .overlay = true};
    if (parse_text(&ps, text, origin, cause) != 0)
        return -1;
    /* A file with no value at all (empty, or comments only) is the wrong
     * file far more often than a calibration that changes nothing. */
    int any = 0;
    for (size_t k = 0; k < N_KEYS && !any; k++)
        any = ps.seen[k] != 0;
    if (!any) {
        *cause = xasprintf("%s: holds no calibration values (write one "
                           "with 'fsdpsim calibrate --out FILE' or 'real "
                           "bench --calibration-out FILE')", origin);
        return -1;
    }
    *t = copy;
    return 0;
}

int
topo_apply_calibration(struct topo *t, const char *path, char **cause)
{
    char *text = NULL;
    int rc = read_file(path, &text, cause);
    if (rc > 0)
        *cause = xasprintf("cannot open '%s': %s", path, strerror(ENOENT));
    if (rc != 0)
        return -1;
    rc = topo_apply_calibration_text(t, text, path, cause);
    free(text);
    return rc;
}

struct topo *
topo_load_sized(const char *name_or_path, int nodes, int gpus_per_node,
                bool uncalibrated, char **cause)
{
    struct topo *t = topo_load(name_or_path, cause);
    if (t == NULL)
        return NULL;
    if (nodes > 0)
        t->nodes = nodes;
    if (gpus_per_node > 0)
        t->gpus_per_node = gpus_per_node;
    if (uncalibrated) {
        memset(t->calib, 0, sizeof t->calib);
        memset(t->calib_algo, 0, sizeof t->calib_algo);
    }
    if (topo_validate(t, cause) != 0) {
        topo_free(t);
        return NULL;
    }
    return t;
}

/* ---- --set, validation, printing ------------------------------------- */

/*
 * ASSIGNMENT is "section.key=value" as given to --set; the value is read
 * exactly as in a file.  Messages start with "--set ASSIGNMENT: ".  T is
 * unchanged on failure.
 */
int
topo_set(struct topo *t, const char *assignment, char **cause)
{
    const char *eq = strchr(assignment, '=');
    const char *dot = eq ? memchr(assignment, '.',
                                  (size_t)(eq - assignment)) : NULL;
    if (dot == NULL) {
        *cause = xasprintf("--set %s: expected section.key=value (e.g. "
                           "--set inter.nic_bandwidth=400Gbps)", assignment);
        return -1;
    }
    char *section = ini_lines_trim(assignment, (size_t)(dot - assignment));
    char *key = ini_lines_trim(dot + 1, (size_t)(eq - dot - 1));
    char *value = ini_lines_trim(eq + 1, strlen(eq + 1));
    const struct topo_key *k = find_key(section, key);
    char *why = NULL;
    int rc = -1;
    if (k == NULL)
        why = unknown_key_message(section, key);
    else
        rc = apply(t, k, value, &why);
    if (rc != 0) {
        *cause = xasprintf("--set %s: %s", assignment, why);
        free(why);
    }
    free(section);
    free(key);
    free(value);
    return rc;
}

/*
 * Check every value against its key's range, then the rules that involve
 * several keys.  Messages start with "topology 'NAME': " and name the key
 * to change.
 */
int
topo_validate(const struct topo *t, char **cause)
{
    const char *name = t->name ? t->name : "?";
    char buf[64];
    for (size_t i = 0; i < N_KEYS; i++) {
        const struct topo_key *k = &keys[i];
        char *why = NULL;
        switch (k->kind) {
        case KIND_IGNORE:
        case KIND_BOOL:
            break;
        case KIND_NAME:
        case KIND_LABEL: {
            const char *s = *(char *const *)cfield(t, k);
            if (s == NULL)
                why = xstrdup("is not set");
            else if (k->kind == KIND_NAME)
                check_name(s, &why);
            else
                check_label(s, &why);
            break;
        }
        case KIND_ARCH:
        case KIND_FABRIC:
        case KIND_NET:
        case KIND_SHAPE:
        case KIND_PLACE:
        case KIND_TUNER:
            /* An enum outside its names can only come from a bug. */
            assert(get_enum(t, k) >= 0 &&
                   get_enum(t, k) < list_len(enum_choices(k->kind)));
            break;
        case KIND_INT: {
            int v = *(const int *)cfield(t, k);
            if (v < k->lo || v > k->hi)
                why = xasprintf("= %d is out of range (%s)", v, k->range);
            break;
        }
        default: {
            double v = *(const double *)cfield(t, k);
            if (!in_range(k, v))
                why = xasprintf("= %s is out of range (%s)",
                                fmt_value(t, k, buf, sizeof buf), k->range);
            break;
        }
        }
        if (why != NULL) {
            *cause = xasprintf("topology '%s': [%s] %s %s", name,
                               k->section, k->key, why);
            free(why);
            return -1;
        }
    }
    if (t->nics_per_node % t->plugin_nic_group != 0) {
        *cause = xasprintf("topology '%s': [inter] plugin_nic_group = %d "
                           "does not divide nics_per_node = %d; the plugin "
                           "groups a GPU's NICs, so write a divisor of %d",
                           name, t->plugin_nic_group, t->nics_per_node,
                           t->nics_per_node);
        return -1;
    }
    /* As nccl_config_set_var checks NCCL_BUFFSIZE itself; an NVLS chunk
     * is one NVLS step, cut the same way. */
    const struct { const char *key; double v; } plugin_sizes[] = {
        {"plugin_buffsize", t->plugin_buffsize},
        {"plugin_nvls_chunksize", t->plugin_nvls_chunksize * 8}};
    for (size_t i = 0; i < sizeof plugin_sizes / sizeof plugin_sizes[0];
         i++) {
        double v = plugin_sizes[i].v;
        if (v != 0 && (v < 8192 || fmod(v, 128) != 0)) {
            *cause = xasprintf("topology '%s': [inter] %s = %.0f B is no "
                               "buffer NCCL can cut into NCCL_STEPS (8) "
                               "steps of whole 16-byte lines; write 0 (none) "
                               "or a multiple of %s B from %s to 1GiB", name,
                               plugin_sizes[i].key, i == 0 ? v : v / 8,
                               i == 0 ? "128" : "16", i == 0 ? "8KiB" : "1KiB");
            return -1;
        }
    }
    long long gpus = (long long)t->nodes * t->gpus_per_node;
    if (gpus > MAX_TOTAL_GPUS) {
        *cause = xasprintf("topology '%s': %d nodes of %d GPUs is %lld GPUs, "
                           "more than %d (lower [node] nodes or "
                           "gpus_per_node)", name, t->nodes,
                           t->gpus_per_node, gpus, MAX_TOTAL_GPUS);
        return -1;
    }
    /* Training needs a 16- or 32-bit matmul rate; fp8 and tf32 alone are
     * not enough, since they are only used alongside one of these. */
    if (t->peak_flops[DTYPE_BF16] <= 0 && t->peak_flops[DTYPE_FP16] <= 0 &&
        t->peak_flops[DTYPE_FP32] <= 0) {
        *cause = xasprintf("topology '%s': [gpu] has no bf16, fp16 or fp32 "
                           "peak (set at least one, e.g. 'bf16 = "
                           "312TFLOPS')", name);
        return -1;
    }
    return 0;
}

/*
 * Write T as a topology file: every key, defaults included (calibration
 * keys only when set), in table order, each quantity in the shortest unit
 * that reads back exactly, so that topo_parse_ini() of the output gives an
 * identical struct (source aside).
 * The description is not stored and so not written.
 */
/* The keys of SECTION (every section when NULL), each section under its
 * "[name]" line; calibration cells left at 0 are skipped. */
static void
print_keys(const struct topo *t, const char *only, FILE *out)
{
    char buf[64];
    const char *section = NULL;
    for (size_t i = 0; i < N_KEYS; i++) {
        const struct topo_key *k = &keys[i];
        if (k->kind == KIND_IGNORE ||
            (only != NULL && strcmp(k->section, only) != 0))
            continue;
        /* Calibration keys left at 0 are not written: they are the norm,
         * and hundreds of lines of zeros would bury the rest. */
        if (strcmp(k->section, CAL_SECTION) == 0 &&
            *(const double *)cfield(t, k) == 0)
            continue;
        if (section == NULL || strcmp(section, k->section) != 0) {
            section = k->section;
            fprintf(out, "\n[%s]\n", section);
        }
        fprintf(out, "%-16s = %s\n", k->key,
                fmt_value(t, k, buf, sizeof buf));
    }
}

void
topo_print(const struct topo *t, FILE *out)
{
    fprintf(out, "# fsdpsim topology '%s'", t->name ? t->name : "?");
    if (t->source != NULL) {
        fputs(" from ", out);
        for (const char *s = t->source; *s; s++)
            fputc(isprint((unsigned char)*s) ? *s : '?', out);
    }
    fputc('\n', out);
    print_keys(t, NULL, out);
}

void
topo_print_calibration(const struct topo *t, FILE *out)
{
    print_keys(t, CAL_SECTION, out);
}

void
topo_free(struct topo *t)
{
    if (t == NULL)
        return;
    free(t->name);
    free(t->source);
    free(t->gpu_name);
    free(t);
}

/* ---- dtypes ---------------------------------------------------------- */

const char *
topo_shape_name(enum net_shape shape)
{
    return shape_names[shape];
}

const char *
topo_placement_name(enum net_placement placement)
{
    return place_names[placement];
}

const char *
dtype_name(enum dtype d)
{
    assert(d >= 0 && d < DTYPE_COUNT);
    return dtype_names[d];
}

static bool
same_lower(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return false;
    return *a == *b;
}

/*
 * S is one of our names ("bf16") or a PyTorch spelling ("bfloat16",
 * "torch.float16", "half", "float8_e4m3fn"), in any case.  Returns 0 and
 * sets *out, or -1 (the caller words the message, since it knows the flag
 * or key).
 */
int
dtype_parse(const char *s, enum dtype *out)
{
    static const struct {
        const char *name;
        enum dtype d;
    } aliases[] = {
        {"fp32", DTYPE_FP32}, {"float32", DTYPE_FP32}, {"float", DTYPE_FP32},
        {"tf32", DTYPE_TF32},
        {"bf16", DTYPE_BF16}, {"bfloat16", DTYPE_BF16},
        {"fp16", DTYPE_FP16}, {"float16", DTYPE_FP16}, {"half", DTYPE_FP16},
        {"fp8", DTYPE_FP8}, {"float8_e4m3fn", DTYPE_FP8},
        {"float8_e5m2", DTYPE_FP8},
    };
    if (strncmp(s, "torch.", 6) == 0)
        s += 6;
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++) {
        if (same_lower(s, aliases[i].name)) {
            *out = aliases[i].d;
            return 0;
        }
    }
    return -1;
}

/* Bytes per element as stored: tf32 is a matmul mode on fp32 storage. */
int
dtype_bytes(enum dtype d)
{
    static const int bytes[DTYPE_COUNT] = {4, 4, 2, 2, 1};
    assert(d >= 0 && d < DTYPE_COUNT);
    return bytes[d];
}
