/*
 * host_clock.c: the host's monotonic clock (see host_clock.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "host_clock.h"

#include <time.h>

double
host_clock_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int64_t
host_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
