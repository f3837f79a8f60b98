/*
 * search.c: helpers shared by tune and plan (see search.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "search.h"
#include "units.h"
#include "xalloc.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void
search_args_init(struct search_args *a, int base_argc, char **base)
{
    a->argc = a->n_base = base_argc;
    a->argv = xcalloc(base_argc + 1, sizeof *a->argv);
    memcpy(a->argv, base, base_argc * sizeof *a->argv);
}

void
search_args_add(struct search_args *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = xvasprintf(fmt, ap);
    va_end(ap);
    a->argv = xrealloc(a->argv, sizeof *a->argv * (a->argc + 2));
    a->argv[a->argc++] = s;
    a->argv[a->argc] = NULL;
}

void
search_args_free(struct search_args *a)
{
    if (a->argv)
        for (int i = a->n_base; i < a->argc; i++)
            free(a->argv[i]);
    free(a->argv);
    memset(a, 0, sizeof *a);
}

struct batch_point
search_args_point(const struct search_args *a)
{
    return (struct batch_point){a->argc, a->argv};
}

int
search_parse_percent(const char *opt, const char *s, double *frac,
                     char **cause)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || (*end != '\0' && strcmp(end, "%") != 0) || !isfinite(v)
        || v < 0 || v > 90 || units_is_hex_float(s)) {
        *cause = xasprintf("%s: '%s' is not a percentage from 0%% to 90%% "
                           "(write e.g. %s 10%%)", opt, s, opt);
        return -1;
    }
    *frac = v / 100;
    return 0;
}

int
search_fits(const struct batch_columns *c, const struct sweep_result *r,
            double headroom)
{
    if (!r->ok || batch_value(c, r, "fits") != 1)
        return 0;
    double dev = batch_value(c, r, "device_mem_bytes");
    return batch_value(c, r, "peak_reserved_bytes")
               + batch_value(c, r, "nccl_buffer_bytes")
           <= (1 - headroom) * dev;
}

double
search_mem_headroom(const struct batch_columns *c,
                    const struct sweep_result *r)
{
    double dev = batch_value(c, r, "device_mem_bytes");
    return dev > 0 ? 1 - (batch_value(c, r, "peak_reserved_bytes")
                          + batch_value(c, r, "nccl_buffer_bytes")) / dev
                   : NAN;
}

