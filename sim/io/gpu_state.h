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
    int nvml;                 /* NVML answered for this GPU; 0: no readings */
    int samples;              /* SM clock readings taken while timed */
    double sm_mhz;            /* their mean */
    double watts;             /* mean board power; below 0: not read */
    int watts_from_energy;    /* 1: the energy counter's change over the
                               * timed time (exact); 0: the mean of NVML's
                               * power readings, which Ampere and newer
                               * GPUs other than A100 average over 1 s
                               * (NVML's nvmlDeviceGetPowerUsage) */
    double max_sm_mhz;        /* the highest SM clock; 0: not known */
    double power_limit_w;     /* the enforced limit; 0: not known */
};

/* One line to OUT: PREFIX, then WHAT ("SM clock while the GEMMs were
 * timed"), the mean clock against the maximum, the power against the
 * limit; says which readings are missing and why. */
void gpu_state_print(FILE *out, const char *prefix, const char *what,
                     const struct gpu_state *s);

#endif
