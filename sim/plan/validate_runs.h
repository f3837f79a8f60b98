/*
 * validate_runs.h: `fsdpsim validate --runs`, published end-to-end FSDP
 * runs (published.h's fsdp_e2e rows) predicted by the simulator.
 *
 * Each run's settings are turned into the argument list of `fsdpsim
 * simulate` (vrun_map) and simulated through the same option parsing,
 * setup and network code simulate uses (vrun_predict), so a flag simulate
 * gains is one the mapping can pass.  A run is "not modelled" either
 * before any argument is tried (FSDP2, a GPU with no built-in topology,
 * settings the row leaves out) or when simulate refuses one of its
 * arguments, with simulate's message.
 *
 * Ownership: vrun_args and vrun own their strings (vrun_free); the row a
 * vrun points to is borrowed.
 */
#ifndef FSDPSIM_VALIDATE_RUNS_H
#define FSDPSIM_VALIDATE_RUNS_H

#include "published.h"

#include <stdbool.h>
#include <stdio.h>

struct model_cache;

#define VRUN_MAX_ARGS 48

/* One option of the simulate command line the row maps to. */
struct vrun_arg {
    char *flag;                 /* "--seq-len" */
    char *value;                /* "4096", NULL for a bare flag */
};

struct vrun_args {
    struct vrun_arg arg[VRUN_MAX_ARGS];
    int n;
    char *model;                /* --model's value */
    bool model_builtin;         /* a built-in whose architecture matches */
    char *model_ini;            /* otherwise the model generated (INI) */
    const char *topology;
    const char *gpu;            /* "A100", "H100": the regime label */
    int ac_arg;                 /* index of --activation-checkpointing */
    bool ac_bracket;            /* "selective" with no fraction published:
                                   predicted as a range (vrun_predict) */
    long long grad_accum;       /* --grad-accum, the row's or implied */
};

struct vrun {
    const struct published_e2e *row;
    struct vrun_args a;
    char *not_modelled;         /* why, or NULL */
    char *command;              /* the simulate arguments, joined */
    double tokens, mfu, hfu, peak_reserved;   /* predicted, -1: none */
    int fits;
    /* A bracketed run: tokens/s with every block checkpointed (tokens)
     * and with the fewest that fit (tokens_fast, every fast_frequency-th
     * block; 0: none). */
    double tokens_fast;
    int fast_frequency;
};

/* Map ROW to simulate's arguments in A.  0, or 1 with *why (caller
 * frees) when the run is of a kind fsdpsim does not model. */
int vrun_map(const struct published_e2e *row, struct vrun_args *a,
             char **why);
void vrun_args_free(struct vrun_args *a);

/* Map and simulate V->row, models shared through MC.  Fills the
 * predictions, or V->not_modelled with the reason. */
void vrun_predict(struct vrun *v, struct model_cache *mc);
void vrun_free(struct vrun *v);

/* 100 (predicted - measured) / measured. */
double vrun_error(double predicted, double measured);

struct vrun_stats {
    int n;
    double mape;                /* mean |error|, % */
    double median_abs;          /* median |error|, % */
    double bias;                /* mean signed error, % */
    double min, max;            /* signed, % */
};

/* Statistics of ERR[0..N); all zero when N is 0. */
void vrun_stats(const double *err, int n, struct vrun_stats *st);

/* The table of runs V[0..N) read from PATH, then MAPE and median |error|
 * of tokens/s overall and by regime (GPU, model, activation
 * checkpointing, compile, sequence length); the tokens/s statistics
 * overall go to *overall. */
void vrun_print_text(const struct vrun *v, int n, const char *path,
                     FILE *out, struct vrun_stats *overall);
void vrun_print_json(const struct vrun *v, int n, const char *path,
                     FILE *out, struct vrun_stats *overall);

#endif
