/*
 * gpu_state.c: summing up and wording a GPU's clock and power readings
 * (see gpu_state.h).
 */
#include "gpu_state.h"

#include <string.h>

void
gpu_meter_init(struct gpu_meter *m, int nvml, double max_sm_mhz,
               double power_limit_w)
{
    memset(m, 0, sizeof *m);
    m->nvml = nvml;
    m->energy_ok = 1;
    m->max_sm_mhz = max_sm_mhz;
    m->power_limit_w = power_limit_w;
}

void
gpu_meter_add_clock(struct gpu_meter *m, int ok, double mhz)
{
    m->tried++;
    if (ok) {
        m->samples++;
        m->mhz_sum += mhz;
    }
}

void
gpu_meter_add_power(struct gpu_meter *m, double watts)
{
    m->power_samples++;
    m->watts_sum += watts;
}

void
gpu_meter_add_energy(struct gpu_meter *m, int ok, double joules,
                     double seconds)
{
    if (!ok || joules < 0 || !(seconds > 0)) {
        m->energy_ok = 0;
        return;
    }
    m->joules += joules;
    m->seconds += seconds;
}

struct gpu_state
gpu_meter_state(const struct gpu_meter *m)
{
    struct gpu_state s;
    memset(&s, 0, sizeof s);
    s.watts = -1;
    if (!m->nvml)
        return s;
    s.nvml = 1;
    s.tried = m->tried;
    s.samples = m->samples;
    s.sm_mhz = m->samples > 0 ? m->mhz_sum / m->samples : 0;
    if (m->energy_ok && m->seconds >= GPU_ENERGY_MIN_S && m->joules > 0) {
        s.watts = m->joules / m->seconds;
        s.watts_from_energy = 1;
    } else if (m->power_samples > 0) {
        s.watts = m->watts_sum / m->power_samples;
    }
    s.max_sm_mhz = m->max_sm_mhz;
    s.power_limit_w = m->power_limit_w;
    return s;
}

void
gpu_state_print(FILE *out, const char *prefix, const char *what,
                const struct gpu_state *s)
{
    if (!s->nvml) {
        fprintf(out, "%s%s: not read (NVML, the driver's "
                "libnvidia-ml.so.1, missing or not answering)\n", prefix,
                what);
        return;
    }
    if (s->samples > 0) {
        fprintf(out, "%s%s: %.0f MHz (mean of %d reading%s)", prefix, what,
                s->sm_mhz, s->samples, s->samples == 1 ? "" : "s");
        if (s->max_sm_mhz > 0)
            fprintf(out, ", %.1f %% of the %.0f MHz maximum",
                    100.0 * s->sm_mhz / s->max_sm_mhz, s->max_sm_mhz);
    } else if (s->tried > 0) {
        fprintf(out, "%s%s: not given by NVML", prefix, what);
    } else {
        fprintf(out, "%s%s: no reading (timed for less than the 10 ms "
                "between readings)", prefix, what);
    }
    if (s->watts >= 0) {
        fprintf(out, "; board power %.0f W%s", s->watts,
                s->watts_from_energy ? "" : " (NVML's 1 s average)");
        if (s->power_limit_w > 0)
            fprintf(out, " of a %.0f W limit", s->power_limit_w);
    } else {
        fprintf(out, "; board power not read");
    }
    fprintf(out, "\n");
}
