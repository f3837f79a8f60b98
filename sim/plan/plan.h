/*
 * plan.h: cluster sizing for `fsdpsim plan`: for each candidate GPU type,
 * the time and cost to train on a token budget at each cluster size, the
 * smallest size that meets a deadline, the cost-optimal one and the knee
 * where adding nodes stops paying.
 *
 * Each size is simulated as one training step at a fixed global batch:
 * the micro-batch and activation checkpointing are searched (the fastest
 * setting that fits with the memory headroom wins), the accumulation
 * steps follow from the batch, and time-to-train = tokens / (tokens per
 * step / step time).
 *
 * Ownership: struct plan_result owns its rows and strings (plan_free).
 */
#ifndef FSDPSIM_PLAN_H
#define FSDPSIM_PLAN_H

#include "search.h"

#include <stdint.h>

/* Steps of more than this many micro-batches are simulated at
 * PLAN_ACCUM_LO (plan.c) and this many, and extended linearly. */
#define PLAN_ACCUM_HI 8
#define PLAN_ACCUM_LO 4

/* plan --network simgrid: how many of the best sizes of each GPU
 * type are simulated again (--finalists, at most PLAN_MAX_FINALISTS). */
#define PLAN_DEFAULT_FINALISTS 3
#define PLAN_MAX_FINALISTS 20

/* Bounds on what a user may ask of plan (doc/inputs.md, limits table): past them
 * a value means nothing (a 1e30-day deadline, a $1e30 node) and is
 * refused. */
#define PLAN_MAX_DEADLINE_S (36500.0 * 86400)   /* 100 years */
#define PLAN_MAX_BUDGET_USD 1e15
#define PLAN_MAX_GPU_HOUR_USD 1e4
#define PLAN_MAX_NODE_USD 1e9
#define PLAN_MAX_BATCH_TOKENS (INT64_C(1) << 40)

/* How far above the asked global batch a setting may round (a larger
 * batch is fewer, longer steps: a different training run, not a faster
 * one); rows that only reach the batch by overshooting more are shown
 * but never picked. */
#define PLAN_BATCH_SLACK 0.25

/* The failure model's defaults (doc/commands.md, "Goodput").  The Llama 3 paper
 * (Dubey et al. 2024, section 3.3.4, table 5) reports 419 unexpected
 * interruptions in a 54-day snapshot of pre-training on 16,384 H100 GPUs:
 * one every 54 x 24 / 419 = 3.09 hours on the cluster, so a mean time
 * between failures of 54 x 24 x 16384 / 419 = 50,677 hours per GPU. */
#define PLAN_DEFAULT_MTBF_GPU_H (54.0 * 24 * 16384 / 419)
/* Checkpoint write bandwidth per node: the same paper's Tectonic file
 * system sustains 2 TB/s (section 3.3.1) for 2,048 nodes of 8 GPUs,
 * 2e12 / 2048 = 0.98 GB/s per node. */
#define PLAN_DEFAULT_CKPT_BW_NODE (2e12 / 2048)
/* Restart after an interruption (re-queue, process start, NCCL set-up,
 * checkpoint reload): an assumption, not a published figure. */
#define PLAN_DEFAULT_RESTART_S 600.0
/* Spot preemptions per node per hour: 20% a month (730 hours), the
 * lower bound of the worst "frequency of interruption" band (>20%) the
 * AWS Spot Instance Advisor reports. */
#define PLAN_DEFAULT_PREEMPT_NODE_H (0.20 / 730)

enum plan_price_kind { PLAN_PRICE_NONE, PLAN_PRICE_GPU_HOUR,
                       PLAN_PRICE_NODE };

struct plan_gpu {
    char *topology;             /* built-in name or file, as given */
    char *name;                 /* the topology's name */
    char *gpu_name;             /* e.g. "H100-SXM5-80GB" */
    int gpus_per_node;
    enum plan_price_kind price_kind;
    double price_usd;           /* per GPU-hour, or per node bought */
    char *strategy;             /* --strategies: this row set's
                                   --sharding-strategy, NULL = the base's */
    double spot_usd;            /* Spot per GPU-hour, 0: none */
};

struct plan_opts {
    int base_argc;              /* simulate options of every point */
    char **base;
    double tokens;              /* to train on */
    double deadline_s;          /* 0: none */
    double budget_usd;          /* 0: none */
    int64_t global_batch_seqs;  /* sequences per optimizer step */
    int64_t seq_len;            /* tokens per sequence */
    double headroom;            /* fraction of device memory kept free */
    int max_nodes;
    int jobs;                   /* worker threads, 0 = online CPUs */
    struct plan_gpu *gpus;
    int n_gpus;
    /* Goodput (plan_goodput): failures, checkpoints and restarts. */
    double mtbf_gpu_s;          /* per GPU; 0: no failures */
    double ckpt_bw_node;        /* checkpoint write bytes/s per node */
    double restart_s;           /* lost per interruption besides work */
    double preempt_node_s;      /* Spot preemptions per node per second */
    int finalists;              /* sizes simulated again with SimGrid per
                                   GPU type (plan_finalists); 0: none */
    char **sg_args;             /* their options besides a point's own:
                                   --network=simgrid, ... */
    int n_sg_args;
    char **grid_args;           /* every point's options after the base's:
                                   --network=analytic when a run file
                                   says simgrid (cmd_plan.c) */
    int n_grid_args;
};

struct plan_row {
    int nodes, gpus;
    int fits;                   /* some setting fits with the headroom */
    int batch_limited;          /* more GPUs than the batch's sequences */
    int extrapolated;           /* step time extended from 4 and 8
                                   micro-batches (see plan.c) */
    int64_t micro_batch, grad_accum;
    int checkpointing;          /* activation checkpointing on */
    double step_s;              /* one optimizer step, s */
    double tokens_per_s;        /* whole cluster */
    double days;                /* time to train, days */
    double gpu_hours;
    double cost_usd;            /* NAN without a price */
    double mfu;                 /* 0..1 */
    double headroom;            /* free device memory at the peak, 0..1 */
    double exposed_share;       /* exposed communication / step time */
    int64_t batch_seqs;         /* sequences per step as run */
    double batch_over;          /* batch_seqs / the asked batch - 1 */
    int over_batch;             /* batch_over > PLAN_BATCH_SLACK */
    int eligible;               /* fits, within the batch: may be picked */
    /* Goodput (plan_goodput; equal to the failure-free numbers when the
     * failure model is off). */
    double ckpt_bytes;          /* model and optimizer state */
    double ckpt_s;              /* one checkpoint written */
    double mtbf_s;              /* the cluster's, INFINITY: no failures */
    double interval_s;          /* Young/Daly checkpoint interval */
    double exp_days;            /* expected time to train */
    double exp_cost_usd;        /* NAN without a price */
    double exp_gpu_hours;
    double spot_days, spot_cost_usd;    /* NAN without --spot-price */
    int meets_deadline, within_budget;  /* by the expected time, cost */
    int spot_meets;             /* on Spot, by time and budget */
    const char *bottleneck;     /* "compute", "communication", "memory",
                                   "batch limit" */
};

/* A size of the analytic ranking simulated again with --network simgrid
 * (plan_finalists): ROW's setting, its figures from SimGrid's step time
 * in SG (ok), or why SimGrid could not run it (error). */
struct plan_finalist {
    int row;                    /* in plan_gpu_result.rows */
    int analytic_rank;          /* 1: the best by the analytic model */
    int ok;
    char *error;
    struct plan_row sg;
};

struct plan_gpu_result {
    struct plan_row *rows;      /* by node count, ascending */
    int n_rows;
    int smallest;               /* smallest row meeting the deadline, -1 */
    int cost_optimal;           /* cheapest eligible row, -1 */
    int fastest;                /* fastest eligible row, -1 */
    int spot_optimal;           /* cheapest on Spot meeting the deadline
                                   and budget, -1 */
    int knee;                   /* last row before scaling stops paying,
                                   -1 when none up to the largest size */
    char *knee_why;             /* one sentence */
    struct plan_finalist *finalists;    /* ranked by SimGrid */
    int n_finalists;
};

struct plan_result {
    struct plan_gpu_result *per_gpu;    /* n_gpus */
    int n_gpus;
    int interrupted;
    char *first_error;          /* first simulation error, if any */
};

/* The simulate options of one point: O's base options and GPU type G's
 * topology at NODES nodes, micro-batch MB, ACCUM micro-batches, activation
 * checkpointing CK (0 none, 1 full), then O's grid_args.  Into A
 * (search_args_free). */
void plan_point_args(const struct plan_opts *o, const struct plan_gpu *g,
                     int nodes, int64_t mb, int64_t accum, int ck,
                     struct search_args *a);

/* Simulate every size of every GPU type; -1 only when interrupted before
 * any result (r is still filled and must be freed). */
int plan_run(const struct plan_opts *o, struct plan_result *r);
/* After plan_run, for o->finalists > 0: the o->finalists eligible sizes of
 * each GPU type that meet the deadline and budget at the lowest expected
 * cost (GPU-hours without a price), simulated again at the same setting
 * with --network simgrid and ranked by the cost that gives.  1 when
 * interrupted, else 0 (a size SimGrid refuses is a finalist with its
 * error). */
int plan_finalists(const struct plan_opts *o, struct plan_result *r);

/* t(A) from the step simulated at PLAN_ACCUM_HI and PLAN_ACCUM_LO
 * micro-batches (AT_HI, AT_LO): the step is affine in its micro-batches. */
double plan_extend(double at_hi, double at_lo, int64_t accum);
/* ROW's batch, days, cost, goodput and verdict fields from its setting,
 * fits, step_s, tokens_per_s and exposed_share, for G. */
void plan_row_finish(const struct plan_opts *o, const struct plan_gpu *g,
                     struct plan_row *row);
/* The cost a row is compared by: expected dollars, else GPU-hours (SPOT:
 * on Spot). */
double plan_row_cost(const struct plan_row *w, int spot);
void plan_free(struct plan_result *r);

/* Young/Daly: the checkpoint interval sqrt(2 x CKPT_S x MTBF_S) that
 * minimises lost time (Young 1974; Daly 2006, first order). */
double plan_young_daly(double ckpt_s, double mtbf_s);
/* Expected wall time of WORK_S of failure-free training with a
 * checkpoint of CKPT_S every INTERVAL_S of work, on a cluster whose
 * interruptions come MTBF_S apart on average, each costing RESTART_S plus
 * the work since the last checkpoint (half an interval and checkpoint on
 * average):
 *   T = W (1 + C / tau) / (1 - (R + (tau + C) / 2) / M).
 * INFINITY when interruptions come faster than that loses; W when MTBF_S
 * is infinite. */
double plan_expected_s(double work_s, double ckpt_s, double interval_s,
                       double restart_s, double mtbf_s);
/* Fill ROW's goodput fields from its failure-free days, GPU count,
 * ckpt_bytes and G's prices. */
void plan_goodput(const struct plan_opts *o, const struct plan_gpu *g,
                  struct plan_row *row);

/* The node counts tried: 1, 2, 3, 4, 6, 8, 12, ... up to max_nodes (powers
 * of two and the midpoints 1.5 x 2^k).  Caller frees. */
int *plan_sizes(int max_nodes, int *n);

/* "30d", "12h", "2w", "90min", "3600s" in seconds; -1 with *cause. */
int plan_parse_duration(const char *opt, const char *s, double *sec,
                        char **cause);
/* "$2.5M", "40000", "1.2k" in dollars; -1 with *cause. */
int plan_parse_usd(const char *opt, const char *s, double *usd,
                   char **cause);
/* "TOPO=$X/gpu-hour" or "TOPO=$Y/node": *topo (caller frees), kind and
 * amount; -1 with *cause. */
int plan_parse_price(const char *s, char **topo, enum plan_price_kind *kind,
                     double *usd, char **cause);
/* "0.2/month", "1%/day", "0.001/h" (per node) in events per second;
 * -1 with *cause. */
int plan_parse_rate(const char *opt, const char *s, double *per_s,
                    char **cause);

#endif
