/*
 * straggler.c: the pace of a synchronous job whose GPUs are not equally
 * fast (see straggler.h).
 */
#include "straggler.h"

#include <math.h>

static const double PI = 3.14159265358979323846;

/* E[max of n] = integral of x n phi(x) Phi(x)^(n-1) dx, by Simpson's rule
 * over [-9, 9] in steps of 1/64: the integrand is smooth and below 1e-15
 * outside that range for every n up to 10^6, and 1,152 intervals give
 * the value to better than 1e-7.  Each thread keeps the last N it asked
 * for (a sweep's runs ask for their world size again and again; its
 * workers are threads). */
double
straggler_expected_max(int n)
{
    static _Thread_local int last_n;
    static _Thread_local double last_value;
    if (n <= 1)
        return 0;
    if (n == last_n)
        return last_value;
    const double lo = -9, hi = 9, h = 1.0 / 64;
    const int steps = (int)((hi - lo) / h);
    double sum = 0;
    for (int i = 0; i <= steps; i++) {
        double x = lo + i * h;
        double phi = exp(-0.5 * x * x) / sqrt(2 * PI);
        double cdf = 0.5 * erfc(-x / sqrt(2));
        double f = x * n * phi * pow(cdf, n - 1);
        sum += f * (i == 0 || i == steps ? 1 : i % 2 ? 4 : 2);
    }
    last_n = n;
    last_value = sum * h / 3;
    return last_value;
}

/* e(8), to which every spread refers, kept apart from the last N so
 * that asking for 8 and then the world size does not recompute both. */
static double
expected_max_of_8(void)
{
    static _Thread_local double e8;
    if (e8 == 0)
        e8 = straggler_expected_max(8);
    return e8;
}

double
straggler_speed(double spread, int world)
{
    if (spread <= 0 || world <= 1)
        return 1;
    double sigma = spread / (2 * expected_max_of_8());
    return 1 - sigma * straggler_expected_max(world);
}
