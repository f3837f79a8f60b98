/*
 * sweep.h: parameter sweeps for `fsdpsim sweep`: the axes (--vary
 * KEY=SPEC), their Cartesian product, and one point simulated into the
 * cells of a CSV row.
 *
 * Ownership: everything a struct below points to belongs to that struct
 * and is released by its _free function; functions that return heap
 * memory say "caller frees".
 */
#ifndef FSDPSIM_SWEEP_H
#define FSDPSIM_SWEEP_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

/* Most points one sweep may have, over all its axes together: a million
 * points of the smallest model take minutes and the CSV ~1 GB, so a larger
 * product is taken to be a typo in a range. */
#define SWEEP_MAX_POINTS 1000000

enum sweep_spacing {
    SWEEP_LIST,         /* 1,2,4,8 or FULL_SHARD,HYBRID_SHARD */
    SWEEP_ARITHMETIC,   /* A:B:+S */
    SWEEP_GEOMETRIC,    /* A:B:xF */
    SWEEP_LOG10,        /* A:B:log10 */
};

struct sweep_axis {
    char *key;          /* column name: the option key with underscores,
                           or SECTION.KEY for a topology field (set=) */
    char *option;       /* the option with dashes, "--grad-accum" or
                           "--set" */
    char **values;      /* the values as passed to the option */
    int n_values;
    enum sweep_spacing spacing;
};

struct sweep {
    struct sweep_axis *axes;    /* first axis outermost */
    int n_axes;
    int64_t n_points;           /* product of the axes' n_values; 1 when
                                   there is no axis */
};

/* Parse one --vary argument, "KEY=SPEC" ("set=SECTION.KEY=SPEC" for a
 * topology field), into *ax.  0, or -1 with *cause (caller frees) naming
 * the argument, what is wrong and how to write it. */
int sweep_axis_parse(const char *arg, struct sweep_axis *ax, char **cause);
void sweep_axis_free(struct sweep_axis *ax);
/* Whether the axis is spaced by a factor (plotted on a log scale). */
int sweep_axis_is_log(const struct sweep_axis *ax);

void sweep_init(struct sweep *sw);
/* Parse and append an axis; -1 with *cause when it does not parse, varies
 * a key already varied, or the product would exceed SWEEP_MAX_POINTS. */
int sweep_add_axis(struct sweep *sw, const char *arg, char **cause);
void sweep_free(struct sweep *sw);

/* The value index on each axis of point number point (0 <= point <
 * n_points), last axis fastest: idx must hold n_axes ints. */
void sweep_point_index(const struct sweep *sw, int64_t point, int *idx);

/* The command line of one point: base_argv (argv[0] is the command name)
 * followed by "--option=value" per axis, so the point's values override
 * the base ones as later flags do.  Caller frees the array (its strings
 * are borrowed from base_argv or owned by the array's tail: free with
 * sweep_argv_free). */
char **sweep_point_argv(const struct sweep *sw, int base_argc,
                        char *const *base_argv, int64_t point, int *argc);
void sweep_argv_free(const struct sweep *sw, int base_argc, char **argv);

/* The result columns, one per key `simulate --format json` prints
 * (output_summary_json; nested objects flattened as "mem_breakdown.
 * activations"), in its order.  Caller frees (sweep_names_free). */
char **sweep_metric_names(int *n);
void sweep_names_free(char **names, int n);

struct sweep_result {
    int ok;             /* 1: simulated; 0: invalid settings */
    char *message;      /* why not, when !ok */
    char **values;      /* n_values cells, as output_summary_json prints
                           them (strings unquoted), when ok */
    int n_values;
};

/* What the points of one sweep or search share across threads: getopt
 * keeps its state in globals, so parsing takes a lock; models are loaded
 * once (model_cache.h). */
struct sweep_shared {
    pthread_mutex_t parse_lock;
    struct model_cache *models;
    struct steady_cache *steady;    /* short runs, by settings (steady.h) */
};

void sweep_shared_init(struct sweep_shared *sh);
void sweep_shared_destroy(struct sweep_shared *sh);

/* Simulate one point: parse, prepare, run, compute the metrics.  Invalid
 * settings are a result (ok = 0 and the message), never fatal.  SHARED is
 * NULL when the point runs alone. */
void sweep_point_run(const struct sweep *sw, int base_argc,
                     char *const *base_argv, int64_t point,
                     struct sweep_shared *shared, struct sweep_result *res);
void sweep_result_free(struct sweep_result *res);

/* CSV (RFC 4180: CRLF line ends, fields with a comma, quote or line break
 * quoted, quotes doubled).  The header is the varied keys, "status",
 * "message", then the metric names; a row the point's values, "ok" or
 * "error", the message, then the metrics (empty for an error). */
void sweep_csv_field(FILE *out, const char *s);
void sweep_csv_header(const struct sweep *sw, char *const *metric_names,
                      int n_metrics, FILE *out);
void sweep_csv_row(const struct sweep *sw, int64_t point,
                   const struct sweep_result *res, int n_metrics, FILE *out);

/* JSON lines (--format jsonl): one object per point, "vary" (an object
 * of the varied keys and values), "status", "message", then (for an ok
 * point) every result as `simulate
 * --format json` types it: IS_STRING (sweep_metric_strings) says which
 * columns are strings; the rest, and varied values, are written bare
 * when they are JSON numbers or literals. */
unsigned char *sweep_metric_strings(int *n);    /* caller frees */
void sweep_jsonl_row(const struct sweep *sw, int64_t point,
                     const struct sweep_result *res,
                     char *const *metric_names,
                     const unsigned char *is_string, int n_metrics,
                     FILE *out);

/* Sweeps across machines.  `sweep --shard K/N` simulates the points P
 * with P mod N = K; its CSV has two columns before the whole sweep's,
 * "point" (P) and "n_points" (the whole sweep's count), and its other
 * cells are exactly the whole sweep's row.  sweep_merge joins such files
 * back into the CSV one run writes. */

/* "K/N" with 0 <= K < N <= SWEEP_MAX_POINTS; -1 with *cause. */
int sweep_parse_shard(const char *s, int64_t *k, int64_t *n, char **cause);
/* The shard columns' header, written before sweep_csv_header's. */
#define SWEEP_SHARD_HEADER "point,n_points,"

/* JSON-lines shards: each line starts {"point":P,"n_points":N, then
 * the whole sweep's object without its "{".  sweep_merge takes either
 * kind (not both at once).
 *
 * Join the N shard CSVs TEXTS[i] (LENS[i] bytes, named NAMES[i] in
 * messages) into the whole sweep's CSV on OUT: the header without the
 * shard columns, then every point's row in point order.  -1 with *cause
 * (nothing written) when a file is not a shard CSV, the files are of
 * different sweeps, or a point is missing or in two files. */
int sweep_merge(const char *const *texts, const size_t *lens,
                const char *const *names, int n, FILE *out, char **cause);

#endif
