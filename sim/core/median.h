/*
 * median.h: the median of a sample, as bench (start-up times), compare
 * (per-op errors), validate (absolute errors) and the profiler-trace fit
 * (launch gaps) report it.
 */
#ifndef FSDPSIM_MEDIAN_H
#define FSDPSIM_MEDIAN_H

#include <stddef.h>

/* The median of V[0..N), N >= 1, sorting V in place: the middle value,
 * or the mean of the two middle ones when N is even.  What an empty
 * sample shows (0, NaN, nothing) is the caller's to say. */
double median_in_place(double *v, size_t n);

#endif
