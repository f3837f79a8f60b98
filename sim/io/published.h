/*
 * published.h: the published-points CSV, one measured value a row with the
 * settings of the run that produced it (data/published/, sources in its
 * README.md), read for its nccl-tests sweeps
 * (rows of category "collective_bench" and metric "time", grouped into
 * runs by run_id) and for its end-to-end FSDP runs (rows of category
 * "fsdp_e2e", published_parse_e2e).
 *
 * Ownership: published_parse() returns runs the caller releases with
 * published_free().
 */
#ifndef FSDPSIM_PUBLISHED_H
#define FSDPSIM_PUBLISHED_H

#include "nccl_tests.h"

#include <stdbool.h>

struct published_point {
    double size_bytes;
    double measured_s;
    int line;
};

struct published_run {
    char *id;               /* run_id, less a trailing "-<size>" */
    int line;               /* first row */
    char *hardware;         /* "gpu | intra | inter", for messages */
    enum coll_op op;        /* COLL_OP_COUNT: not from a known program */
    int gpn, nodes;
    int n, cap;
    struct published_point *pt;     /* by size */
};

/* Whether TEXT's first line is the published-points header (run_id,
 * category and metric columns). */
bool published_is_csv(const char *text);

/* The runs of TEXT (the file PATH, for messages).  Rows it cannot use are
 * listed on stdout as "# skipped PATH:LINE ...".  0, or -1 with *cause
 * (caller frees) naming PATH:LINE: bad CSV quoting, a missing column. */
int published_parse(const char *path, const char *text,
                    struct published_run **runs, int *n_runs, char **cause);
void published_free(struct published_run *runs, int n);

/* The built-in topology of a run's hardware (8x A100 NVSwitch node:
 * dgx-a100-80g; AWS p4de over EFA: aws-p4de), or NULL. */
const char *published_topology(const struct published_run *v);

/* Run V as an nccl-tests run (its op, ranks, nodes and out-of-place
 * times), leaving out point SKIP (-1: none).  RUN is released with
 * nccl_tests_run_free(). */
void published_nccl_tests(const struct published_run *v, int skip,
                          struct nccl_tests_run *run);

/* One end-to-end training run: the rows of category "fsdp_e2e" that
 * share a run_id, with the settings of its first row and the published
 * value of each metric compared (-1 when the run gives none).  Count
 * columns left empty in the row are -1. */
struct published_e2e {
    char *id;
    int line;                   /* first row */
    char *source;               /* source_id, "" when absent */
    char *model;                /* "Llama-2-7B" */
    long long n_layers, hidden, n_heads, n_kv_heads, ffn_hidden, vocab;
    long long seq_len, micro_batch, grad_accum;
    long long gpus_per_node, nodes;
    long long global_batch_tokens; /* -1 when the row gives none */
    char *precision, *mp_policy, *sharding, *fsdp_options, *ac, *compile;
    char *gpu, *inter;          /* gpu, inter_node_link */
    double tokens_per_s_per_gpu;
    double mfu, hfu;            /* fractions */
    double peak_reserved_bytes; /* peak_memory_reserved */
    int tokens_line, mfu_line, hfu_line, mem_line;
};

/* The fsdp_e2e runs of TEXT (the file PATH, for messages), in the order
 * they first appear.  0, or -1 with *cause (caller frees) naming
 * PATH:LINE: bad CSV quoting, a missing column (the header's line), a
 * count column or metric value that is not a number. */
int published_parse_e2e(const char *path, const char *text,
                        struct published_e2e **runs, int *n_runs,
                        char **cause);
void published_e2e_free(struct published_e2e *runs, int n);

#endif
