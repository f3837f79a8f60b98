/*
 * host_clock.h: the host's monotonic clock (CLOCK_MONOTONIC), for timing
 * fsdpsim itself: bench's wall times, the progress line's rate and
 * estimate, the rendezvous's and real mode's time-outs.  Simulated time
 * never reads it (it is the engine's integer nanoseconds, des.h).
 */
#ifndef FSDPSIM_HOST_CLOCK_H
#define FSDPSIM_HOST_CLOCK_H

#include <stdint.h>

/* Seconds since an arbitrary fixed point. */
double host_clock_s(void);
/* The same in nanoseconds. */
int64_t host_clock_ns(void);

#endif
