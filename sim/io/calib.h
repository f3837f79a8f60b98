/*
 * calib.h: fitting a topology's [calibration] cells to nccl-tests sweeps.
 *
 * nccl-tests reports time per size; NCCL's own model (and coll.c's) is
 * time = latency + size x busbw factor / busbw for the protocol it picks
 * (nccl-tests doc/PERFORMANCE.md for the factor, doc/fsdp-semantics.md
 * §14.3 for the form), plus a pipeline-fill term (coll.c) for the gradual
 * approach to peak bandwidth that measurements show.  Each measured size is
 * assigned the (collective, scope, algorithm, protocol) the uncalibrated
 * model would use for it; each group with three or more points gets a
 * weighted least-squares curve, a group of two a line.
 *
 * Ownership: struct calib owns its points; runs and topologies are
 * borrowed from the caller, and calib_run_all() writes the fitted cells
 * into every run's topology.
 */
#ifndef FSDPSIM_CALIB_H
#define FSDPSIM_CALIB_H

#include "coll.h"
#include "nccl_tests.h"
#include "topo.h"

#include <stdbool.h>
#include <stddef.h>

/* Fitted values are rounded to this many significant digits, so that a
 * calibrated topology reads "231.4GBps" rather than 17 digits; the
 * rounding moves a prediction by at most 0.05 %. */
#define CALIB_DIGITS 4

struct calib_fit {
    int points;             /* points in the group; < 2: not fitted */
    bool fitted;
    double latency_s;       /* alpha */
    double busbw_Bps;       /* beta = 1 / slope */
    double pipeline_s;      /* p in 2 sqrt(p x / beta); 0 for a line */
    bool latency_clamped;   /* the free fit gave alpha < 0: refitted with
                             * alpha = 0 */
    bool bw_unresolved;     /* times do not grow with size: alpha is their
                             * weighted mean, busbw the 1000TBps ceiling */
};

/*
 * Fit t = alpha + x / beta to N >= 2 points (x in bytes already multiplied
 * by the bus factor, t in seconds) by weighted least squares with weights
 * 1/t^2, so that every point counts by its relative error rather than
 * large messages dominating (toolchain.md §3: unweighted, a 5 us latency
 * came out as 3.5 us).  Returns 0, or -1 when the points cannot separate
 * latency from bandwidth (all at one size, or a time <= 0).
 */
int calib_fit_line(const double *x_bytes, const double *t_s, size_t n,
                   struct calib_fit *fit);

/*
 * Fit t = alpha + x / beta + gamma sqrt(x), gamma = 2 sqrt(p / beta) (the
 * pipelined form of coll.c) to N >= 3 points by weighted least squares
 * (gsl_multifit_wlinear, weights 1/t^2 as above).  When the fit needs a
 * negative coefficient, or the sqrt term changes no prediction by 0.1 %,
 * or there are fewer than 3 points, the result is calib_fit_line()'s.
 * Returns 0, or -1 as calib_fit_line().
 */
int calib_fit_curve(const double *x_bytes, const double *t_s, size_t n,
                    struct calib_fit *fit);

/* One measured size and what the model says about it. */
struct calib_point {
    double size_bytes;
    double measured_s;
    double before_s;        /* the run's topology before calibration */
    double after_s;         /* and after */
    enum nccl_algo algo;    /* what the model picks (before) */
    enum nccl_proto proto;
};

struct calib_run {
    const struct nccl_tests_run *run;   /* borrowed */
    struct topo *topo;      /* borrowed, nodes and gpus_per_node set from
                             * the run; its calib[] is written */
    int scope;              /* 0 intra (one node), 1 inter */
    int n_points;
    struct calib_point *points;         /* owned; sizes 0 are left out */
};

struct calib {
    int n_runs;
    struct calib_run *runs;             /* borrowed array, points owned */
    struct calib_fit fit[TOPO_CALIB_OPS][TOPO_CALIB_SCOPES][TOPO_CALIB_ALGOS]
                        [TOPO_CALIB_PROTOS];
};

/*
 * Predict every row of every run with its topology as given, pool the
 * points by (collective, scope, algorithm, protocol) over all runs, fit
 * each group of two or more, store the fits in every run's topology (other cells are
 * left as they were) and predict again.  RUNS[i].run and .topo must be
 * set.  Returns 0, or -1 with *cause (caller frees) when the model refuses
 * a size.  calib_free() releases the points even after a failure.
 */
int calib_run_all(struct calib *c, struct calib_run *runs, int n_runs,
                  const struct nccl_config *nc, char **cause);
void calib_free(struct calib *c);

/* Write cell FIT of (op, scope, algorithm, proto) into T->calib_algo,
 * rounded to CALIB_DIGITS; unfitted cells are left alone. */
void calib_store(struct topo *t, enum coll_op op, int scope,
                 enum nccl_algo algo, enum nccl_proto proto,
                 const struct calib_fit *fit);
/* calib_store() every cell of C into T. */
void calib_store_all(struct topo *t, const struct calib *c);
/* How many of C's cells were fitted. */
int calib_fitted_cells(const struct calib *c);

/*
 * The median of |100 (pred - meas) / meas| over the points whose size is
 * in [LO, HI] bytes, with PRED the before or after prediction; *COUNT
 * gets the number of points (the median is 0 when none).
 */
double calib_median_error(const struct calib_point *p, int n, bool after,
                          double lo, double hi, int *count);

/* The median of |V[i]| for N values (V is not modified); 0 when N is 0. */
double calib_median_abs(const double *v, size_t n);

#endif
