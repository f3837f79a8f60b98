/*
 * gpu_clock.h: a GPU's SM clock and board power while the bench runs, read
 * through NVML (the library nvidia-smi uses), so that the GEMM sweep can
 * say at what clock its TFLOPS were reached: NVIDIA's guidelines for
 * power-limited GEMM tests ask for the settled clock beside the FLOP/s
 * (CUTLASS, media/docs/cpp/gemm_performance_measurement_methodology_
 * guidelines.md, "Data Collection").
 *
 * NVML is the driver's libnvidia-ml.so.1, opened at run time: the build
 * machine needs no NVML header or library, and where the driver has none
 * (or it refuses) the bench runs on and reports no clock.
 */
#ifndef FSDPSIM_GPU_CLOCK_H
#define FSDPSIM_GPU_CLOCK_H

struct gpu_clock;

/* The clock reader of CUDA device DEV (matched by PCI bus id, as CUDA and
 * NVML may number GPUs differently), or NULL when NVML cannot be used. */
struct gpu_clock *gpu_clock_open(int dev);
/* The SM clock now (MHz) and board power (W); 0, or -1 when NVML fails. */
int gpu_clock_sample(struct gpu_clock *c, double *sm_mhz, double *watts);
/* The highest SM clock the GPU may run at (MHz) and its enforced power
 * limit (W); 0 where NVML does not say. */
double gpu_clock_max_sm_mhz(const struct gpu_clock *c);
double gpu_clock_power_limit_w(const struct gpu_clock *c);
void gpu_clock_close(struct gpu_clock *c);

#endif
