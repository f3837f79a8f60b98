/*
 * units.c: quantities with units (see units.h).
 */
#include "units.h"
#include "xalloc.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct unit {
    const char *name;
    double factor;
};

/* Largest magnitude accepted for any quantity: far above any real cluster
 * (1e21 bytes is a zettabyte) but small enough that products of two such
 * values stay finite in a double. */
#define UNITS_MAX_VALUE 1e21

static const struct unit bytes_units[] = {
    {"B", 1}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
    {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0},
    {"TiB", 1099511627776.0}, {NULL, 0}};

static const struct unit bw_units[] = {
    {"Bps", 1}, {"KBps", 1e3}, {"MBps", 1e6}, {"GBps", 1e9}, {"TBps", 1e12},
    {"KiBps", 1024.0}, {"MiBps", 1048576.0}, {"GiBps", 1073741824.0},
    {"bps", 1.0 / 8}, {"Kbps", 1e3 / 8}, {"Mbps", 1e6 / 8},
    {"Gbps", 1e9 / 8}, {"Tbps", 1e12 / 8}, {NULL, 0}};

static const struct unit time_units[] = {
    {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {NULL, 0}};

static const struct unit flops_units[] = {
    {"FLOPS", 1}, {"GFLOPS", 1e9}, {"TFLOPS", 1e12}, {"PFLOPS", 1e15},
    {NULL, 0}};

static char *
unit_list(const struct unit *u)
{
    size_t len = 0;
    for (const struct unit *p = u; p->name; p++)
        len += strlen(p->name) + 2;
    char *s = xmalloc(len + 1), *w = s;
    for (const struct unit *p = u; p->name; p++)
        w += sprintf(w, "%s%s", p == u ? "" : ", ", p->name);
    return s;
}

bool
units_is_hex_float(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    s += *s == '+' || *s == '-';
    return s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
}

/* Split "25.5GBps" into a finite non-negative number and a unit suffix. */
static int
parse_number_prefix(const char *s, const char *what, double *v,
                    const char **rest, char **cause)
{
    while (isspace((unsigned char)*s))
        s++;
    if (*s == '\0') {
        *cause = xasprintf("empty %s (write a number with its unit)", what);
        return -1;
    }
    /* strtod also reads C's hexadecimal floats ("0x10" is 16, "0x1p3"
     * is 8): no unit or count is written so, and "0x10" read as 16 GB or
     * 16 nodes would be a silent surprise. */
    if (units_is_hex_float(s)) {
        *cause = xasprintf("'%s' is not a decimal number (%s expected; "
                           "write e.g. 16, not 0x10)", s, what);
        return -1;
    }
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (end == s) {
        *cause = xasprintf("'%s' is not a number (%s expected)", s, what);
        return -1;
    }
    if (isnan(x) || isinf(x) || errno == ERANGE || fabs(x) > UNITS_MAX_VALUE) {
        *cause = xasprintf("'%s' is out of range for a %s", s, what);
        return -1;
    }
    if (x < 0) {
        *cause = xasprintf("'%s' is negative (a %s must be >= 0)", s, what);
        return -1;
    }
    while (isspace((unsigned char)*end))
        end++;
    *v = x;
    *rest = end;
    return 0;
}

static int
parse_with_units(const char *s, const struct unit *units, const char *what,
                 const char *example, double *out, char **cause)
{
    double x;
    const char *u;
    if (parse_number_prefix(s, what, &x, &u, cause) != 0)
        return -1;
    size_t ulen = strlen(u);
    while (ulen > 0 && isspace((unsigned char)u[ulen - 1]))
        ulen--;
    if (ulen == 0) {
        if (x == 0) {
            *out = 0;
            return 0;
        }
        *cause = xasprintf("missing unit in '%s' (write e.g. '%s')", s,
                           example);
        return -1;
    }
    for (const struct unit *p = units; p->name; p++) {
        if (strlen(p->name) == ulen && strncmp(p->name, u, ulen) == 0) {
            double v = x * p->factor;
            if (v > UNITS_MAX_VALUE) {
                *cause = xasprintf("'%s' is out of range for a %s", s, what);
                return -1;
            }
            *out = v;
            return 0;
        }
    }
    char *list = unit_list(units);
    *cause = xasprintf("unknown unit '%.*s' in '%s' (a %s takes one of: %s)",
                       (int)ulen, u, s, what, list);
    free(list);
    return -1;
}

int
units_parse_bytes(const char *s, double *bytes, char **cause)
{
    return parse_with_units(s, bytes_units, "size", "80GiB", bytes, cause);
}

int
units_parse_bandwidth(const char *s, double *bytes_per_s, char **cause)
{
    return parse_with_units(s, bw_units, "bandwidth", "25GBps", bytes_per_s,
                            cause);
}

int
units_parse_time_ns(const char *s, double *ns, char **cause)
{
    return parse_with_units(s, time_units, "time", "2us", ns, cause);
}

int
units_parse_flops(const char *s, double *flop_per_s, char **cause)
{
    return parse_with_units(s, flops_units, "compute rate", "312TFLOPS",
                            flop_per_s, cause);
}

int
units_parse_count(const char *s, int64_t lo, int64_t hi, int64_t *out,
                  char **cause)
{
    static const struct unit count_units[] = {
        {"K", 1e3}, {"k", 1e3}, {"M", 1e6}, {"B", 1e9}, {"G", 1e9},
        {"T", 1e12}, {NULL, 0}};
    double x;
    const char *u;
    if (parse_number_prefix(s, "count", &x, &u, cause) != 0)
        return -1;
    size_t ulen = strlen(u);
    while (ulen > 0 && isspace((unsigned char)u[ulen - 1]))
        ulen--;
    if (ulen > 0) {
        const struct unit *p;
        for (p = count_units; p->name; p++)
            if (strlen(p->name) == ulen && strncmp(p->name, u, ulen) == 0)
                break;
        if (p->name == NULL) {
            *cause = xasprintf("'%s' is not a whole number (write e.g. "
                               "'4096', '1e8' or '100M')", s);
            return -1;
        }
        x *= p->factor;
    }
    if (x != floor(x)) {
        *cause = xasprintf("'%s' is not a whole number", s);
        return -1;
    }
    /* (double)INT64_MAX rounds up to 2^63, so compare against the
     * largest double below it as well, or the cast would overflow. */
    if (x < (double)lo || x > (double)hi || x >= 9223372036854775808.0) {
        *cause = xasprintf("'%s' is out of range (allowed %lld to %lld)", s,
                           (long long)lo, (long long)hi);
        return -1;
    }
    *out = (int64_t)x;
    return 0;
}

int
units_parse_real(const char *s, double lo, double hi, double *out,
                 char **cause)
{
    double x;
    const char *u;
    if (parse_number_prefix(s, "number", &x, &u, cause) != 0)
        return -1;
    if (*u != '\0') {
        *cause = xasprintf("'%s' is not a plain number", s);
        return -1;
    }
    if (x < lo || x > hi) {
        *cause = xasprintf("'%s' is out of range (allowed %g to %g)", s, lo,
                           hi);
        return -1;
    }
    *out = x;
    return 0;
}

int
units_parse_bool(const char *s, bool *out, char **cause)
{
    static const char *yes[] = {"true", "yes", "on", "1", NULL};
    static const char *no[] = {"false", "no", "off", "0", NULL};
    for (int i = 0; yes[i]; i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    *cause = xasprintf("'%s' is not a boolean (write true or false)", s);
    return -1;
}

const char *
units_fmt_bytes(char *buf, size_t len, double bytes)
{
    static const char *names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int i = 0;
    double v = bytes;
    while (fabs(v) >= 1024.0 && i < 5) {
        v /= 1024.0;
        i++;
    }
    snprintf(buf, len, i == 0 ? "%.0f %s" : "%.2f %s", v, names[i]);
    return buf;
}

const char *
units_fmt_time_s(char *buf, size_t len, double seconds)
{
    double a = fabs(seconds);
    if (a >= 1.0 || a == 0)
        snprintf(buf, len, "%.3f s", seconds);
    else if (a >= 1e-3)
        snprintf(buf, len, "%.3f ms", seconds * 1e3);
    else
        snprintf(buf, len, "%.3f us", seconds * 1e6);
    return buf;
}

int
units_parse_nccl_size(const char *s, double *bytes)
{
    char *end;
    if (units_is_hex_float(s))
        return -1;
    double v = strtod(s, &end);
    if (end == s || isnan(v) || v < 0 || v > 1e15)
        return -1;
    if (*end == 'K' || *end == 'k')
        v *= 1024, end++;
    else if (*end == 'M' || *end == 'm')
        v *= 1048576, end++;
    else if (*end == 'G' || *end == 'g')
        v *= 1073741824, end++;
    if (*end == 'B')
        end++;
    /* A buffer is whole bytes: 1.5 (or 1.3K) is a typing slip. */
    if (*end != '\0' || v != floor(v))
        return -1;
    *bytes = v;
    return 0;
}

int64_t
units_us_to_ns(double us)
{
    return (int64_t)llround(us * 1000.0);
}
