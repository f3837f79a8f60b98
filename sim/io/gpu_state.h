/*
 * gpu_state.h: what a GPU's clock and power were while real mode timed it
 * (the bench's GEMMs, a real run's timed steps), summed up from NVML's
 * readings (real/gpu_clock.h reads them), and the one way fsdpsim words
 * it.
 *
 * A mean SM clock well below the GPU's maximum at its power limit is the
 * power-limited clock training runs at; the measured times already hold
 * it, so it is reported, never applied again.
 *
 * Plain C, so that the arithmetic and the wording are tested without a
 * GPU.
 */
#ifndef FSDPSIM_GPU_STATE_H
#define FSDPSIM_GPU_STATE_H

#include <stdio.h>

/* The least time the energy counter must span before the mean power is
 * taken from it: NVML updates the counter every 10 to 100 ms, so a shorter
 * interval can show no change or a whole update's worth. */
#define GPU_ENERGY_MIN_S 1.0

struct gpu_state {
    int nvml;                 /* NVML answered for this GPU; 0: no readings */
    int tried;                /* SM clock readings asked for while timed */
    int samples;              /* ... and given */
    double sm_mhz;            /* their mean */
    double watts;             /* mean board power; below 0: not read */
    int watts_from_energy;    /* 1: the energy counter's change over the
                               * timed time; 0: the mean of NVML's power
                               * readings, which Ampere and newer GPUs
                               * other than A100 average over 1 s (NVML's
                               * nvmlDeviceGetPowerUsage) */
    double max_sm_mhz;        /* the highest SM clock; 0: not known */
    double power_limit_w;     /* the enforced limit; 0: not known */
};

/* Readings summed over one timed interval or several. */
struct gpu_meter {
    int nvml;
    int tried, samples;
    double mhz_sum;
    int power_samples;
    double watts_sum;
    double joules, seconds;   /* the energy counter over the intervals */
    int energy_ok;            /* every interval had both counter readings */
    double max_sm_mhz, power_limit_w;
};

void gpu_meter_init(struct gpu_meter *m, int nvml, double max_sm_mhz,
                    double power_limit_w);
/* A clock reading: OK 0 when NVML did not give it. */
void gpu_meter_add_clock(struct gpu_meter *m, int ok, double mhz);
void gpu_meter_add_power(struct gpu_meter *m, double watts);
/* One interval of SECONDS with the counter's change JOULES; OK 0 when a
 * reading of the counter failed. */
void gpu_meter_add_energy(struct gpu_meter *m, int ok, double joules,
                          double seconds);
/* The means: the power from the energy counter when every interval read
 * it and they span GPU_ENERGY_MIN_S with some change, else from the power
 * readings. */
struct gpu_state gpu_meter_state(const struct gpu_meter *m);

/* One line to OUT: PREFIX, then WHAT ("SM clock while the GEMMs were
 * timed"), the mean clock against the maximum, the power against the
 * limit; says which readings are missing and why. */
void gpu_state_print(FILE *out, const char *prefix, const char *what,
                     const struct gpu_state *s);

#endif
