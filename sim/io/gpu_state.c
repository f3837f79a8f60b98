/*
 * gpu_state.c: wording a GPU's clock and power readings (see gpu_state.h).
 */
#include "gpu_state.h"

void
gpu_state_print(FILE *out, const char *prefix, const char *what,
                const struct gpu_state *s)
{
    if (!s->nvml) {
        fprintf(out, "%s%s: not read (no NVML: the driver's "
                "libnvidia-ml.so.1)\n", prefix, what);
        return;
    }
    if (s->samples > 0) {
        fprintf(out, "%s%s: %.0f MHz (mean of %d reading%s)", prefix, what,
                s->sm_mhz, s->samples, s->samples == 1 ? "" : "s");
        if (s->max_sm_mhz > 0)
            fprintf(out, ", %.1f %% of the %.0f MHz maximum",
                    100.0 * s->sm_mhz / s->max_sm_mhz, s->max_sm_mhz);
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
