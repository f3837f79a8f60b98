/*
 * torch_version.c: the PyTorch release of a run (see torch_version.h).
 */
#include "torch_version.h"

#include "xalloc.h"

#include <stdio.h>

int
release_version_parse(const char *s, const char *origin, const char *what,
                      const char *example, int min, int max, int *out,
                      char **cause)
{
    int major = 0, minor = 0, n = 0;
    /* A release's own "2.6.0", a nightly's "2.7.0.dev20250101" and a
     * source build's "2.3.0a0+git..." all start with X.Y. */
    if (s == NULL || sscanf(s, "%d.%d%n", &major, &minor, &n) != 2
        || major < 0 || minor < 0 || minor > 99
        || !(s[n] == '\0' || s[n] == '.' || s[n] == '+' || s[n] == 'a')) {
        *cause = xasprintf("%s: '%s' is not a %s version (write e.g. %s)",
                           origin, s ? s : "", what, example);
        return -1;
    }
    int v = major * 100 + minor;
    if (v < min || v > max) {
        *cause = xasprintf("%s: %s %d.%d is not modelled (%d.%d to %d.%d "
                           "are)", origin, what, major, minor, min / 100,
                           min % 100, max / 100, max % 100);
        return -1;
    }
    *out = v;
    return 0;
}

int
torch_version_parse(const char *s, const char *origin, int *out,
                    char **cause)
{
    return release_version_parse(s, origin, "PyTorch", "2.6",
                                 TORCH_VERSION_MIN, TORCH_VERSION_MAX, out,
                                 cause);
}

bool
torch_cast_is_dynamic(int version, int from_bytes, int to_bytes)
{
    if (version <= 0)
        version = TORCH_VERSION_DEFAULT;
    if (from_bytes == to_bytes)
        return false;
    if (to_bytes == 1)
        return version < TORCH_VECTORIZED_FLOAT8_CAST;
    if (from_bytes == 4 && to_bytes == 2)
        return version < TORCH_VECTORIZED_DOWNCAST;
    return true;   /* 16-bit to fp32: no vectorized kernel on CUDA */
}
