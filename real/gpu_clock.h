/*
 * gpu_clock.h: a GPU's SM clock, board power and energy while real mode
 * times it, read through NVML (the library nvidia-smi uses), so that the
 * bench can say at what clock its TFLOPS were reached and a real run at
 * what clock its steps ran: NVIDIA's guidelines for power-limited GEMM
 * tests ask for the settled clock beside the FLOP/s (CUTLASS,
 * media/docs/cpp/gemm_performance_measurement_methodology_guidelines.md,
 * "Data Collection").  The readings are summed in a struct gpu_meter
 * (sim/io/gpu_state.h, plain C).
 *
 * NVML is the driver's libnvidia-ml.so.1, opened at run time: the build
 * machine needs no NVML header or library, and where the driver has none
 * (or it refuses) real mode runs on and reports no clock.  Every call
 * takes a NULL reader and then does nothing but mark the meter "no NVML".
 */
#ifndef FSDPSIM_GPU_CLOCK_H
#define FSDPSIM_GPU_CLOCK_H

extern "C" {
#include "gpu_state.h"
}

struct gpu_clock;

/* The reader of CUDA device DEV (matched by PCI bus id, as CUDA and NVML
 * may number GPUs differently), or NULL when NVML cannot be used. */
struct gpu_clock *gpu_clock_open(int dev);
void gpu_clock_close(struct gpu_clock *c);

/* M empty, with C's maximum clock and power limit. */
void gpu_clock_meter(const struct gpu_clock *c, struct gpu_meter *m);
/* The SM clock and power now, into M and, unless NULL, ALSO. */
void gpu_clock_sample(struct gpu_clock *c, struct gpu_meter *m,
                      struct gpu_meter *also);

/* An interval's start: the energy counter and the host clock. */
struct gpu_interval {
    double joules, seconds;
    int ok;
};
void gpu_clock_begin(struct gpu_clock *c, struct gpu_interval *iv);
/* Its end: the counter's change over it into M and, unless NULL, ALSO. */
void gpu_clock_end(struct gpu_clock *c, const struct gpu_interval *iv,
                   struct gpu_meter *m, struct gpu_meter *also);

#endif
