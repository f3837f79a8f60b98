/*
 * median.c: the median of a sample (see median.h).
 */
#include "median.h"

#include <assert.h>
#include <stdlib.h>

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double
median_in_place(double *v, size_t n)
{
    assert(n > 0);
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
