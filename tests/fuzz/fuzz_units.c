/*
 * fuzz_units.c: every quantity parser on arbitrary text.  Accepted values
 * are finite, non-negative and within the documented bounds.
 */
#include "fuzz_util.h"
#include "units.h"

#include <math.h>

static void
check_units(char *s)
{
    int (*parsers[])(const char *, double *, char **) = {
        units_parse_bytes, units_parse_bandwidth, units_parse_time_ns,
        units_parse_flops};
    for (size_t i = 0; i < sizeof parsers / sizeof parsers[0]; i++) {
        double v = -1;
        char *cause = NULL;
        if (parsers[i](s, &v, &cause) == 0)
            FUZZ_ASSERT(isfinite(v) && v >= 0 && v <= 1e21 * 1.0000001);
        else
            fuzz_check_cause(cause);
    }
    int64_t n = -1;
    char *cause = NULL;
    if (units_parse_count(s, 1, INT64_C(1000000000000000), &n, &cause) == 0)
        FUZZ_ASSERT(n >= 1 && n <= INT64_C(1000000000000000));
    else
        fuzz_check_cause(cause);
    cause = NULL;
    if (units_parse_count(s, 0, INT64_MAX, &n, &cause) == 0)
        FUZZ_ASSERT(n >= 0);
    else
        fuzz_check_cause(cause);
    double r;
    cause = NULL;
    if (units_parse_real(s, 0, 1, &r, &cause) == 0)
        FUZZ_ASSERT(r >= 0 && r <= 1);
    else
        fuzz_check_cause(cause);
    bool b;
    cause = NULL;
    if (units_parse_bool(s, &b, &cause) != 0)
        fuzz_check_cause(cause);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_run_text(data, size, check_units);
}
