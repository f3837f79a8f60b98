/*
 * gpu_state.h: what a GPU's clock and power were while real mode timed it
 * (the bench's GEMMs, a real run's timed steps), as NVML read them
 * (real/gpu_clock.h), and the one way fsdpsim words it.
 *
 * A mean SM clock well below the GPU's maximum at its power limit is the
 * power-limited clock training runs at; the measured times already hold
 * it, so it is reported, never applied again.
 */
#ifndef FSDPSIM_GPU_STATE_H
#define FSDPSIM_GPU_STATE_H

#include <stdio.h>

struct gpu_state {
    int samples;              /* readings taken; 0: none (no NVML) */
    double sm_mhz, watts;     /* their means */
    double max_sm_mhz;        /* the highest SM clock; 0: not known */
    double power_limit_w;     /* the enforced limit; 0: not known */
};

/* One line to OUT: PREFIX, then WHAT ("SM clock while the GEMMs were
 * timed"), the mean clock against the maximum, the power against the
 * limit; "not read" when there are no samples. */
void gpu_state_print(FILE *out, const char *prefix, const char *what,
                     const struct gpu_state *s);

#endif
