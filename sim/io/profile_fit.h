/*
 * profile_fit.h: fitting a topology's compute keys to the kernels of a
 * profiler trace (kineto_kernels.h), for `fsdpsim calibrate --profile`.
 *
 * Each class's keys are chosen so that kernel_time_s() on the topology
 * best matches the measured kernels, by least squares on log(predicted /
 * measured) weighted by measured time: a log ratio makes the error
 * relative, so a 10 % miss counts the same on a short kernel and a long
 * one, and the weight makes the kernels the step's time is spent in
 * decide, not the many short ones; with the model exact every kernel's
 * ratio is 1 and the weights do not matter.  In order, each fit using
 * the values before it:
 *   - memory-bound kernels (elementwise and reductions together): [gpu]
 *     memory_efficiency e and kernel_overhead f in
 *     time = max(launches f, bytes / (e hbm)), every call weighted
 *     alike: the floor is what the short kernels say, and weighting by
 *     time would silence them, letting a few slow mid-sized kernels
 *     (a reduction its byte count undersells) raise it;
 *   - GEMMs: [gpu] gemm_efficiency, the ceiling the shape model scales
 *     from (clock_fraction is left as it is: the two only appear as
 *     their product);
 *   - attention: [compute] attention_forward_scale and
 *     attention_backward_scale;
 *   - host: [node] launch_overhead is the median forward launch gap,
 *     [host] autograd_overhead the median backward gap less it.
 * A key no kernel constrains keeps the topology's value.
 */
#ifndef FSDPSIM_PROFILE_FIT_H
#define FSDPSIM_PROFILE_FIT_H

#include <stdbool.h>
#include <stdio.h>

#include "kernel.h"
#include "kineto_kernels.h"
#include "topo.h"

struct profile_class_fit {
    int kernels;              /* launches */
    int entries;              /* operator calls */
    double measured_s;
    double before_s, after_s; /* predicted totals */
    double med_before, med_after; /* median |error| per call, fraction */
};

/* One fitted key: its value before and after, whether data fixed it. */
struct profile_key_fit {
    double before, after;
    bool fitted;
    bool clamped;             /* the best value was outside the key's range */
    int n;                    /* calls or gaps it was fitted to */
};

enum profile_key {
    PK_GEMM_EFFICIENCY,
    PK_MEMORY_EFFICIENCY,
    PK_KERNEL_OVERHEAD,       /* ns */
    PK_ATTN_FWD_SCALE,
    PK_ATTN_BWD_SCALE,
    PK_LAUNCH_OVERHEAD,       /* ns */
    PK_AUTOGRAD_OVERHEAD,     /* ns */
    PK_COUNT
};

struct profile_fit {
    struct profile_class_fit cls[KERNEL_CLASS_COUNT];
    struct profile_key_fit key[PK_COUNT];
};

/* Fit T's compute keys to P and set them in T (fitted values rounded to
 * four significant digits, times to the nanosecond).  Never fails: keys
 * without data keep their values. */
void profile_fit(struct topo *t, const struct prof_trace *p,
                 struct profile_fit *out);

/* The before/after table and the fitted keys, for PATH on topology
 * TOPO_NAME ("# " comment lines). */
void profile_fit_print(const struct profile_fit *f,
                       const struct prof_trace *p, const char *path,
                       const char *topo_name, FILE *out);

/* The fitted keys as a calibration file's sections ([gpu], [compute],
 * [node], [host]; keys not fitted are left out), for `simulate
 * --calibration`. */
void profile_fit_write_keys(const struct profile_fit *f, FILE *out);

/* "[gpu] gemm_efficiency", ... */
const char *profile_key_name(enum profile_key k);

#endif
