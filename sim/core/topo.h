/*
 * topo.h: the cluster a job runs on.
 *
 * A topology describes one node type and how many of them there are: the GPU
 * (peak dense throughput per dtype, HBM size and bandwidth), the intra-node
 * fabric (per-GPU NVLink bandwidth and latency, NVSwitch or not, or PCIe
 * only), the inter-node network (NICs per node, bandwidth per NIC, latency,
 * kind) and the host link used by CPU offload.  Files are INI with units on
 * every quantity; --set section.key=value overrides any field.
 *
 * All bandwidths are per direction, in bytes per second; latencies in ns.
 */
#ifndef FSDPSIM_TOPO_H
#define FSDPSIM_TOPO_H

#include "nccl_tuner_aws.h"
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum gpu_arch { GPU_ARCH_VOLTA, GPU_ARCH_AMPERE, GPU_ARCH_HOPPER,
                GPU_ARCH_BLACKWELL };
enum intra_fabric { FABRIC_NVSWITCH, FABRIC_NVLINK, FABRIC_PCIE };
enum net_kind { NET_IB, NET_ROCE, NET_EFA, NET_ETHERNET };
/* How the nodes' NICs are wired together ([network] shape). */
enum net_shape { NET_SHAPE_SINGLE_SWITCH, NET_SHAPE_FAT_TREE,
                 NET_SHAPE_RAIL_OPTIMIZED };
/* Where a job's consecutive nodes sit on the leaves ([network] placement):
 * packed fills one leaf before the next, spread deals them out round-robin
 * as a scheduler on a busy cluster does. */
enum net_placement { NET_PLACE_PACKED, NET_PLACE_SPREAD };
enum dtype { DTYPE_FP32, DTYPE_TF32, DTYPE_BF16, DTYPE_FP16, DTYPE_FP8,
             DTYPE_COUNT };

/* Measured ring/tree/NVLS performance for one collective, scope and
 * protocol, fitted from nccl-tests output by `fsdpsim calibrate`: with
 * x = size x busbw factor,
 *   time = latency + x / busbw + 2 sqrt(pipeline x / busbw),
 * i.e. latency plus the pipelined-transfer time (sqrt(pipeline) +
 * sqrt(x / busbw))^2 (coll.c says where the form comes from).  Zero when
 * not calibrated; pipeline 0 gives the plain latency-bandwidth line. */
struct topo_calibration {
    double latency_ns;
    double busbw_Bps;
    double pipeline_ns;
};

/* Index order of topo.calib: [collective][scope][protocol] with
 * collective allgather, reducescatter, allreduce (enum coll_op), scope
 * intra (one node) or inter (several), protocol LL, LL128, Simple. */
#define TOPO_CALIB_OPS 3
#define TOPO_CALIB_SCOPES 2
#define TOPO_CALIB_PROTOS 3
/* Algorithm-specific cells, topo.calib_algo[collective][scope][algorithm]
 * [protocol], algorithms in enum nccl_algo's order (tree, ring,
 * collnetdirect, collnetchain, nvls, nvlstree, pat).  Where a cell of the
 * algorithm NCCL picks is set, it is used; else the protocol's cell of
 * topo.calib (any algorithm). */
#define TOPO_CALIB_ALGOS 7
/* The algorithms as calibration keys spell them ("tree", "ring", ...). */
extern const char *const topo_calib_algo_keys[TOPO_CALIB_ALGOS];

struct topo {
    char *name;                 /* e.g. "dgx-a100-80g" */
    char *source;               /* file or built-in it came from */
    /* [gpu] */
    char *gpu_name;
    enum gpu_arch arch;
    double peak_flops[DTYPE_COUNT]; /* dense FLOP/s per dtype; 0 = none */
    double hbm_bytes;           /* device memory, bytes */
    double hbm_Bps;             /* HBM bandwidth, bytes/s */
    double gemm_efficiency;     /* sustained fraction of peak a GEMM of the
                                   best published shape gets */
    double kernel_overhead_ns;  /* shortest time one GPU kernel takes */
    double memory_efficiency;   /* fraction of HBM bandwidth a streaming
                                   kernel reaches */
    double clock_fraction;      /* sustained clock over the one the peaks
                                   are quoted at (power-limited parts) */
    double speed_spread;        /* expected range of sustained speed
                                   among 8 GPUs of the model, a fraction
                                   of a typical one's (straggler.h) */
    int sms;                    /* streaming multiprocessors; 0 = the
                                   architecture's flagship count */
    /* [compute]: measured corrections of the attention table, from
     * `calibrate --profile` or `real bench` (1 = as published) */
    double attention_fwd_scale;
    double attention_bwd_scale;
    /* [node] */
    int gpus_per_node;
    int nodes;
    double launch_overhead_ns;  /* host time to issue one GPU op */
    double hook_overhead_ns;    /* host time of one FSDP hook */
    /* [intra] */
    enum intra_fabric fabric;
    double intra_Bps;           /* per GPU, per direction */
    double intra_latency_ns;
    /* [inter] */
    enum net_kind net;
    int nics_per_node;
    double nic_Bps;             /* per NIC, per direction */
    double inter_latency_ns;    /* one network message, as the wire and
                                   the NICs take it (the data path) */
    double plugin_latency_ns;   /* what the network plugin reports to NCCL
                                   (ncclNetProperties_t.latency), which
                                   NCCL's tuning adds to every network
                                   step (graph->latencyInter) */
    bool rail_optimized;
    bool sharp;                 /* in-network reduction (NCCL CollNet) */
    double plugin_buffsize;     /* NCCL_BUFFSIZE the network plugin sets
                                   where the environment does not; 0 none */
    bool plugin_simple_only;    /* the plugin sets NCCL_PROTO=simple where
                                   the environment does not */
    enum net_tuner plugin_tuner;    /* the plugin's tuner, if it brings
                                       one (nccl_tuner_aws.h) */
    double plugin_nvls_chunksize;   /* NCCL_NVLS_CHUNKSIZE and
                                       NCCL_NVLSTREE_MAX_CHUNKSIZE it sets */
    int plugin_nic_group;       /* NICs the plugin presents to NCCL as one
                                   device (its RDMA protocol's groups) */
    /* [network]: the switches between the NICs (used by --network
     * simgrid; the analytic model assumes a non-blocking network) */
    enum net_shape shape;
    int nodes_per_leaf;         /* nodes under one leaf (fat_tree) or in
                                   one rail group (rail_optimized) */
    double oversubscription;    /* leaf down:up capacity, 1 = 1:1 */
    double spine_latency_ns;    /* added one way by a path via the spine */
    enum net_placement placement;
    /* [host] */
    double pcie_Bps;            /* host<->device, per GPU, per direction */
    double host_mem_Bps;        /* host memory bandwidth (CPU optimizer) */
    double autograd_overhead_ns;/* host time per kernel autograd's engine
                                   launches in backward, on top of
                                   launch_overhead */
    double step_overhead_ns;    /* host time per optimizer step outside
                                   FSDP and the model (Python loop) */
    /* host time of the caching allocator's retry path (mem.h), ns */
    double cuda_malloc_ns;      /* one cudaMalloc of a segment */
    double cuda_free_ns;        /* one cudaFree of a cached segment */
    double synchronize_ns;      /* a device synchronize, GPU idle */
    /* [overlap]: slowdown factors while compute and NCCL kernels run at
     * the same time (1 = no interference) */
    double overlap_compute_slowdown;
    double overlap_comm_slowdown;
    /* [calibration] */
    struct topo_calibration
        calib[TOPO_CALIB_OPS][TOPO_CALIB_SCOPES][TOPO_CALIB_PROTOS];
    struct topo_calibration calib_algo[TOPO_CALIB_OPS][TOPO_CALIB_SCOPES]
                                      [TOPO_CALIB_ALGOS][TOPO_CALIB_PROTOS];
};

/* Load NAME (built-in) or FILE.  NULL with *cause set (caller frees). */
struct topo *topo_load(const char *name_or_path, char **cause);
/* topo_load() then NODES nodes of GPUS_PER_NODE GPUs (0: the file's),
 * every calibration cell cleared when UNCALIBRATED, and topo_validate():
 * the topology a measurement of that size is predicted with.  NULL with
 * *cause. */
struct topo *topo_load_sized(const char *name_or_path, int nodes,
                             int gpus_per_node, bool uncalibrated,
                             char **cause);
/*
 * Apply a calibration file, PATH: a partial topology holding measured
 * values only ([gpu] gemm_efficiency, [host] pcie_bandwidth,
 * [calibration] cells, [node] launch_overhead, ... as `fsdpsim real bench
 * --calibration-out` or `fsdpsim calibrate --calibration-out` writes; no
 * [topology] keys, no counts such as [node] nodes and no choices such as
 * fabric).
 * Keys it sets replace T's.  0, or -1 with *cause ("PATH:LINE: ...");
 * T is unchanged on failure.
 */
int topo_apply_calibration(struct topo *t, const char *path, char **cause);
/* The same for TEXT already in memory, named ORIGIN in messages. */
int topo_apply_calibration_text(struct topo *t, const char *text,
                                const char *origin, char **cause);
struct topo *topo_parse_ini(const char *text, const char *origin,
                            char **cause);
/* Apply "section.key=value" (from --set); -1 with *cause on error. */
int topo_set(struct topo *t, const char *assignment, char **cause);
/* Check ranges and consistency; -1 with *cause on error. */
int topo_validate(const struct topo *t, char **cause);
/* Write the topology back as INI (fsdpsim topologies --show). */
void topo_print(const struct topo *t, FILE *out);
/* Only the [calibration] section, the cells that are set (nothing when
 * none is). */
void topo_print_calibration(const struct topo *t, FILE *out);
void topo_free(struct topo *t);

const char *dtype_name(enum dtype d);
/* "fat_tree", "spread", ...: the [network] values as files spell them. */
const char *topo_shape_name(enum net_shape shape);
const char *topo_placement_name(enum net_placement placement);
int dtype_parse(const char *s, enum dtype *out);
int dtype_bytes(enum dtype d);

#endif
