/*
 * gpu_clock.h: a GPU's SM clock and board power while real mode times it,
 * read through NVML (the library nvidia-smi uses), so that the bench can
 * say at what clock its TFLOPS were reached and a real run at what clock
 * its steps ran: NVIDIA's guidelines for power-limited GEMM tests ask for
 * the settled clock beside the FLOP/s (CUTLASS, media/docs/cpp/
 * gemm_performance_measurement_methodology_guidelines.md, "Data
 * Collection").
 *
 * NVML is the driver's libnvidia-ml.so.1, opened at run time: the build
 * machine needs no NVML header or library, and where the driver has none
 * (or it refuses) real mode runs on and reports no clock.
 *
 * A meter covers one timed interval or several: gpu_meter_begin and
 * gpu_meter_end around each (they read the energy counter and the host
 * clock, so the mean power is exact however short the interval), and
 * gpu_meter_sample as often as wanted in between (the SM clock, which NVML
 * reads as it is now).  gpu_meter_state sums it up.
 */
#ifndef FSDPSIM_GPU_CLOCK_H
#define FSDPSIM_GPU_CLOCK_H

extern "C" {
#include "gpu_state.h"
}

struct gpu_clock;

/* The clock reader of CUDA device DEV (matched by PCI bus id, as CUDA and
 * NVML may number GPUs differently), or NULL when NVML cannot be used. */
struct gpu_clock *gpu_clock_open(int dev);
void gpu_clock_close(struct gpu_clock *c);

struct gpu_meter {
    struct gpu_clock *clock;  /* NULL: every call is a no-op */
    int samples;
    double mhz_sum;
    int power_samples;        /* NVML's power readings, where the energy
                               * counter is missing */
    double watts_sum;
    double joules, seconds;   /* summed over the begin/end intervals */
    double e0, t0;            /* the open interval's start; e0 < 0: the
                               * energy counter did not answer */
    int energy_ok;            /* every interval had both readings */
};

void gpu_meter_init(struct gpu_meter *m, struct gpu_clock *c);
void gpu_meter_begin(struct gpu_meter *m);
void gpu_meter_sample(struct gpu_meter *m);
void gpu_meter_end(struct gpu_meter *m);
/* What M read, for gpu_state_print. */
struct gpu_state gpu_meter_state(const struct gpu_meter *m);

#endif
