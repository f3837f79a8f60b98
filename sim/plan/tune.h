/*
 * tune.h: the search behind `fsdpsim tune`: FSDP settings for the best
 * throughput that fits a model on a cluster with a memory headroom, the
 * min_num_params thresholds where size_based_auto_wrap_policy draws
 * different units, and the winner as PyTorch code.
 *
 * Ownership: struct tune_result owns its arrays and strings (tune_free).
 */
#ifndef FSDPSIM_TUNE_H
#define FSDPSIM_TUNE_H

#include <stdint.h>
#include <stdio.h>

#include "model.h"
#include "runconf.h"
#include "search.h"

struct tune_opts {
    int base_argc;              /* simulate options of every point */
    char **base;
    double headroom;            /* fraction of device memory kept free */
    int64_t max_grad_accum;     /* accumulation tried: 1, 2, 4, ... up to */
    int jobs;                   /* worker threads, 0 = online CPUs */
};

/* One setting tried: the options tune varies (the rest are the base's). */
struct tune_setting {
    int64_t min_num_params;     /* size policy threshold; 0 = the
                                   transformer policy */
    int n_units;                /* FSDP units it forms */
    enum sharding_strategy sharding;
    enum ac_mode ac;
    int64_t micro_batch, grad_accum;
    int no_sync;
    enum backward_prefetch prefetch;
    int limit_all_gathers;
};

struct tune_point {
    struct tune_setting s;
    int ok;                     /* simulated (else invalid settings) */
    int fits;                   /* fits with the headroom */
    double tokens_per_s_per_gpu;
    double step_s, mfu;
    double mem_free;            /* free device memory at the peak, 0..1 */
    double exposed_share;       /* exposed communication / step */
};

struct tune_result {
    struct tune_point *points;  /* every point simulated, in search order */
    int n_points;
    int *ranked;                /* indices of fitting points, best first */
    int n_ranked;
    struct tune_point *curve;   /* the winner over the size policy's
                                   thresholds, ascending */
    int n_curve;
    int nodes, gpus_per_node;
    int interrupted;
    char *first_error;
};

/* The min_num_params values at which size_based_auto_wrap_policy forms a
 * different set of units for model m (c gives the other settings), one
 * per distinct set, ascending, at most max_n spread over the range; the
 * unit count of each in *units.  Caller frees both. */
int64_t *tune_wrap_thresholds(const struct model *m,
                              const struct run_config *c, int max_n,
                              int **units, int *n);

/* Run the search; -1 with *cause when the base settings cannot be
 * prepared (r is still filled and must be freed). */
int tune_run(const struct tune_opts *o, struct tune_result *r,
             char **cause);
void tune_free(struct tune_result *r);

/* The ranking's key: V rounded to four significant digits, below which
 * the model cannot tell throughputs apart (the top list prints it). */
double tune_rank_key(double v);

/* One line of the top list: a ranked point, and whether points with the
 * same result differing only in backward_prefetch or limit_all_gathers
 * were merged into it ("BACKWARD_PRE or POST", "true or false"). */
struct tune_row {
    int point;                  /* index into r->points */
    int either_prefetch, either_limit;
};
/* The first TOP lines of the ranking, equal results merged, into ROWS
 * (room for TOP); returns how many. */
int tune_top(const struct tune_result *r, int top, struct tune_row *rows);

/* Append a setting's options to a point's command line. */
void tune_setting_args(const struct tune_setting *s, struct search_args *a);

/* A threshold as people write it: 30000000 as "3e7" (python: "int(3e7)"),
 * others in full. */
const char *tune_fmt_threshold(char *buf, size_t len, int64_t n,
                               int python);

/* The PyTorch code that sets c up: imports, the FullyShardedDataParallel
 * call with its arguments as PyTorch spells them, activation
 * checkpointing and the accumulation loop.  layer_cls names the
 * transformer layer class (for the policy and checkpointing). */
void tune_pytorch_code(const struct run_config *c, const char *layer_cls,
                       FILE *out);

#endif
