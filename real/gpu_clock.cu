/*
 * gpu_clock.cu: NVML, opened at run time, for the SM clock, board power
 * and energy (see gpu_clock.h).
 *
 * The few NVML calls used, with their types as the NVML API Reference
 * Guide gives them: every call returns nvmlReturn_t (0 is NVML_SUCCESS), a
 * device is an opaque handle, the SM clock domain is NVML_CLOCK_SM = 1 of
 * nvmlClockType_t, power is in milliwatts and energy
 * (nvmlDeviceGetTotalEnergyConsumption, Volta and newer) in millijoules
 * since the driver loaded.  nvmlDeviceGetPowerUsage is averaged over 1 s
 * on Ampere and newer GPUs other than A100, so the meter takes the mean
 * power from the energy counter where it can.  The _v2 entry points are
 * the ones the library exports under those names.
 */
#include "gpu_clock.h"

extern "C" {
#include "host_clock.h"
}

#include <cuda_runtime.h>

#include <dlfcn.h>
#include <stdlib.h>

typedef int nvml_return;
typedef struct nvml_device_opaque *nvml_device;
#define NVML_OK 0
#define NVML_CLOCK_SM 1

struct gpu_clock {
    void *lib;
    nvml_device dev;
    nvml_return (*get_clock)(nvml_device, int, unsigned *);
    nvml_return (*get_power)(nvml_device, unsigned *);
    nvml_return (*get_energy)(nvml_device, unsigned long long *);
    nvml_return (*shutdown)(void);
    double max_sm_mhz, limit_w;
};

/* Symbol NAME of LIB into *FN (a function pointer); 0 or -1. */
template <typename F>
static int
bind(void *lib, const char *name, F *fn)
{
    *fn = (F)dlsym(lib, name);
    return *fn != NULL ? 0 : -1;
}

struct gpu_clock *
gpu_clock_open(int dev)
{
    char bus[32];
    if (cudaDeviceGetPCIBusId(bus, (int)sizeof bus, dev) != cudaSuccess)
        return NULL;
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL)
        return NULL;
    struct gpu_clock *c = (struct gpu_clock *)calloc(1, sizeof *c);
    nvml_return (*init)(void) = NULL;
    nvml_return (*by_bus)(const char *, nvml_device *) = NULL;
    nvml_return (*max_clock)(nvml_device, int, unsigned *) = NULL;
    nvml_return (*limit)(nvml_device, unsigned *) = NULL;
    if (c == NULL || bind(lib, "nvmlInit_v2", &init) != 0
        || bind(lib, "nvmlShutdown", &c->shutdown) != 0
        || bind(lib, "nvmlDeviceGetHandleByPciBusId_v2", &by_bus) != 0
        || bind(lib, "nvmlDeviceGetClockInfo", &c->get_clock) != 0
        || init() != NVML_OK) {
        free(c);
        dlclose(lib);
        return NULL;
    }
    c->lib = lib;
    if (by_bus(bus, &c->dev) != NVML_OK) {
        c->shutdown();
        free(c);
        dlclose(lib);
        return NULL;
    }
    /* Optional: a GPU that answers none of these still gives its clock. */
    if (bind(lib, "nvmlDeviceGetPowerUsage", &c->get_power) != 0)
        c->get_power = NULL;
    if (bind(lib, "nvmlDeviceGetTotalEnergyConsumption", &c->get_energy)
        != 0)
        c->get_energy = NULL;
    unsigned v = 0;
    if (bind(lib, "nvmlDeviceGetMaxClockInfo", &max_clock) == 0
        && max_clock(c->dev, NVML_CLOCK_SM, &v) == NVML_OK)
        c->max_sm_mhz = v;
    if (bind(lib, "nvmlDeviceGetEnforcedPowerLimit", &limit) == 0
        && limit(c->dev, &v) == NVML_OK)
        c->limit_w = v / 1000.0;
    return c;
}

void
gpu_clock_close(struct gpu_clock *c)
{
    if (c == NULL)
        return;
    c->shutdown();
    dlclose(c->lib);
    free(c);
}

/* The energy counter in joules into *J; 0, or -1 where it is missing. */
static int
energy_j(struct gpu_clock *c, double *j)
{
    unsigned long long mj = 0;
    if (c->get_energy == NULL || c->get_energy(c->dev, &mj) != NVML_OK)
        return -1;
    *j = (double)mj / 1000.0;
    return 0;
}

void
gpu_clock_meter(const struct gpu_clock *c, struct gpu_meter *m)
{
    gpu_meter_init(m, c != NULL, c != NULL ? c->max_sm_mhz : 0,
                   c != NULL ? c->limit_w : 0);
}

void
gpu_clock_sample(struct gpu_clock *c, struct gpu_meter *m,
                 struct gpu_meter *also)
{
    if (c == NULL)
        return;
    unsigned mhz = 0, mw = 0;
    int ok = c->get_clock(c->dev, NVML_CLOCK_SM, &mhz) == NVML_OK;
    /* The averaged power, for where the energy counter fails. */
    int pok = c->get_power != NULL && c->get_power(c->dev, &mw) == NVML_OK;
    struct gpu_meter *to[2] = {m, also};
    for (int i = 0; i < 2 && to[i] != NULL; i++) {
        gpu_meter_add_clock(to[i], ok, mhz);
        if (pok)
            gpu_meter_add_power(to[i], mw / 1000.0);
    }
}

void
gpu_clock_begin(struct gpu_clock *c, struct gpu_interval *iv)
{
    iv->ok = c != NULL && energy_j(c, &iv->joules) == 0;
    iv->seconds = host_clock_s();
}

void
gpu_clock_end(struct gpu_clock *c, const struct gpu_interval *iv,
              struct gpu_meter *m, struct gpu_meter *also)
{
    if (c == NULL)
        return;
    double j = 0, t = host_clock_s();
    int ok = iv->ok && energy_j(c, &j) == 0;
    struct gpu_meter *to[2] = {m, also};
    for (int i = 0; i < 2 && to[i] != NULL; i++)
        gpu_meter_add_energy(to[i], ok, j - iv->joules, t - iv->seconds);
}
