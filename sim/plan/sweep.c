/*
 * sweep.c: the axes of a parameter sweep, their product, and one point
 * simulated into CSV cells (see sweep.h).
 *
 * A point is exactly the simulate command line it stands for: the base
 * options with "--key=value" appended per axis, parsed by
 * setup_parse_args and built by setup_prepare, so a sweep row and
 * `fsdpsim simulate` with the same flags can never disagree.  The result
 * columns are not a second list of metrics: they are read off the JSON
 * that output_summary_json prints for the point, keys and number formats
 * included, so a field added to the summary appears in sweeps too.  The
 * alternative, a table of (name, value) pairs shared by both writers,
 * would save printing and scanning ~1.5 kB per point (microseconds,
 * against milliseconds of simulation) at the cost of rewriting the
 * summary writer whose bytes golden tests pin.
 */
#define _POSIX_C_SOURCE 200809L
#include "sweep.h"
#include "steady.h"
#include "engine.h"
#include "metrics.h"
#include "model_cache.h"
#include "net.h"
#include "output.h"
#include "setup.h"
#include "json_out.h"
#include "xalloc.h"

#include <assert.h>
#include <ctype.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Ranges stop at B despite rounding: 0.1:0.3:+0.1 reaches 0.3 although
 * 0.1 + 2 * 0.1 is 0.30000000000000004 in binary. */
#define SWEEP_RANGE_REL_TOL 1e-9

/* Output options make no sense per point: one CSV row each instead. */
static const char *const unvariable_keys[] = {
    "format", "trace", "timeline", "memory", "metrics", NULL};

/* A number of a range bound or step: a plain number ("1e6", "0.5") with
 * an optional decimal multiple as counts take (k, M, G or B, T). */
static int
parse_number(const char *s, double *out)
{
    char *end;
    if (*s == '\0' || isspace((unsigned char)*s))
        return -1;
    double v = strtod(s, &end);
    if (end == s)
        return -1;
    switch (*end) {
    case 'k': v *= 1e3; end++; break;
    case 'M': v *= 1e6; end++; break;
    case 'G': case 'B': v *= 1e9; end++; break;
    case 'T': v *= 1e12; end++; break;
    default: break;
    }
    if (*end != '\0' || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

/* Values print as the shortest text that reads back as the same number
 * to 15 digits: 1000000 rather than 1e+06, 0.3 rather than
 * 0.30000000000000004. */
static char *
format_number(double v)
{
    return xasprintf("%.15g", v);
}

static void
add_value(struct sweep_axis *ax, char *v)
{
    ax->values = xrealloc(ax->values, sizeof *ax->values * (ax->n_values + 1));
    ax->values[ax->n_values++] = v;
}

static int
parse_list(const char *arg, const char *spec, struct sweep_axis *ax,
           char **cause)
{
    const char *p = spec;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0) {
            *cause = xasprintf("--vary %s: empty value in the list (write "
                               "values separated by single commas, e.g. "
                               "1,2,4)", arg);
            return -1;
        }
        add_value(ax, xstrndup(p, len));
        if (comma == NULL)
            return 0;
        p = comma + 1;
    }
}

static int
too_many(const char *arg, double n, char **cause)
{
    if (n <= SWEEP_MAX_POINTS)
        return 0;
    *cause = xasprintf("--vary %s: %.0f values, more than the %d points a "
                       "sweep may have (narrow the range or take a coarser "
                       "step)", arg, n, SWEEP_MAX_POINTS);
    return -1;
}

/* A:B:STEP with STEP = xF, +S or log10; every bound and step checked, the
 * count checked against the limit before any value is made. */
static int
parse_range(const char *arg, const char *spec, struct sweep_axis *ax,
            char **cause)
{
    char *s = xstrdup(spec);
    char *c1 = strchr(s, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    int rc = -1;
    if (c2 == NULL || strchr(c2 + 1, ':') != NULL) {
        *cause = xasprintf("--vary %s: a range is A:B:xF (geometric), "
                           "A:B:+S (arithmetic) or A:B:log10", arg);
        goto out;
    }
    *c1 = *c2 = '\0';
    const char *sa = s, *sb = c1 + 1, *step = c2 + 1;
    double a, b;
    if (parse_number(sa, &a) != 0 || parse_number(sb, &b) != 0) {
        *cause = xasprintf("--vary %s: '%s' is not a number", arg,
                           parse_number(sa, &a) != 0 ? sa : sb);
        goto out;
    }
    if (a > b) {
        *cause = xasprintf("--vary %s: the range is empty (its start %s is "
                           "greater than its end %s)", arg, sa, sb);
        goto out;
    }
    if (step[0] == '+') {
        double st;
        if (parse_number(step + 1, &st) != 0 || !(st > 0)) {
            *cause = xasprintf("--vary %s: the step '%s' must be a number "
                               "greater than 0", arg, step + 1);
            goto out;
        }
        double n = floor((b - a) / st + SWEEP_RANGE_REL_TOL) + 1;
        if (too_many(arg, n, cause))
            goto out;
        ax->spacing = SWEEP_ARITHMETIC;
        for (int64_t i = 0; i < (int64_t)n; i++)
            add_value(ax, format_number(a + (double)i * st));
    } else if (step[0] == 'x') {
        double f;
        if (parse_number(step + 1, &f) != 0 || !(f > 1)) {
            *cause = xasprintf("--vary %s: the factor '%s' must be a number "
                               "greater than 1", arg, step + 1);
            goto out;
        }
        if (!(a > 0)) {
            *cause = xasprintf("--vary %s: a geometric range must start "
                               "above 0", arg);
            goto out;
        }
        double n = floor(log(b / a) / log(f) + SWEEP_RANGE_REL_TOL) + 1;
        if (too_many(arg, n, cause))
            goto out;
        ax->spacing = SWEEP_GEOMETRIC;
        /* Repeated multiplication stays exact for whole numbers (1, 2, 4,
         * ...), where pow() may not. */
        double v = a;
        for (int64_t i = 0; i < (int64_t)n; i++, v *= f)
            add_value(ax, format_number(v));
    } else if (strcmp(step, "log10") == 0) {
        double ka = round(log10(a)), kb = round(log10(b));
        const char *bad = !(a > 0) || fabs(pow(10, ka) - a) > 1e-9 * a ? sa
                          : fabs(pow(10, kb) - b) > 1e-9 * b            ? sb
                                                                        : NULL;
        if (bad) {
            *cause = xasprintf("--vary %s: log10 takes powers of ten as its "
                               "bounds (1e6, 1e7, ...), and %s is not one",
                               arg, bad);
            goto out;
        }
        if (too_many(arg, kb - ka + 1, cause))
            goto out;
        ax->spacing = SWEEP_LOG10;
        for (double k = ka; k <= kb; k++)
            add_value(ax, format_number(pow(10, k)));
    } else {
        *cause = xasprintf("--vary %s: unknown step '%s' (use xF for a "
                           "geometric range, +S for an arithmetic one, or "
                           "log10)", arg, step);
        goto out;
    }
    rc = 0;
out:
    free(s);
    return rc;
}

/* The option a key names: dashes or underscores, any simulate option but
 * the output ones.  0 with the canonical key in *out (caller frees). */
static int
resolve_key(const char *arg, const char *key, char **out, char **cause)
{
    char *k = xstrdup(key);
    for (char *p = k; *p; p++)
        if (*p == '-')
            *p = '_';
    for (int i = 0; unvariable_keys[i]; i++) {
        if (strcmp(k, unvariable_keys[i]) == 0) {
            *cause = xasprintf("--vary %s: '%s' is an output option, not a "
                               "setting (a sweep writes one CSV row per "
                               "point)", arg, key);
            free(k);
            return -1;
        }
    }
    for (const struct config_option *o = config_options; o->key; o++) {
        if (strcmp(o->key, k) == 0) {
            *out = k;
            return 0;
        }
    }
    *cause = xasprintf("--vary %s: unknown key '%s' (any simulate option, "
                       "e.g. grad_accum, nodes, sharding_strategy, or "
                       "set=SECTION.KEY for a topology field)", arg, key);
    free(k);
    return -1;
}

int
sweep_axis_parse(const char *arg, struct sweep_axis *ax, char **cause)
{
    memset(ax, 0, sizeof *ax);
    const char *eq = strchr(arg, '=');
    if (eq == NULL || eq == arg) {
        *cause = xasprintf("--vary %s: expected KEY=SPEC, e.g. --vary "
                           "grad_accum=1,2,4 or --vary nodes=1:64:x2", arg);
        return -1;
    }
    char *key = xstrndup(arg, (size_t)(eq - arg));
    const char *spec = eq + 1;
    char *canon = NULL;
    int rc = -1;
    if (resolve_key(arg, key, &canon, cause) != 0)
        goto out;
    if (strcmp(canon, "set") == 0) {
        /* set=SECTION.KEY=SPEC: the field is part of the key. */
        const char *eq2 = strchr(spec, '=');
        if (eq2 == NULL || eq2 == spec || memchr(spec, '.', eq2 - spec)
                                               == NULL) {
            *cause = xasprintf("--vary %s: expected set=SECTION.KEY=SPEC, "
                               "e.g. set=inter.nic_bandwidth=100Gbps,"
                               "400Gbps", arg);
            goto out;
        }
        ax->key = xstrndup(spec, (size_t)(eq2 - spec));
        spec = eq2 + 1;
    } else {
        ax->key = xstrdup(canon);
    }
    ax->option = xasprintf("--%s", canon);
    for (char *p = ax->option; *p; p++)
        if (*p == '_')
            *p = '-';
    if (*spec == '\0') {
        *cause = xasprintf("--vary %s: no values (give a list such as "
                           "1,2,4 or a range such as 1:64:x2)", arg);
        goto out;
    }
    /* A range starts with a number and has no comma; anything else is a
     * list, so that NCCL's "allreduce:tree" stays one value. */
    char *colon = strchr(spec, ':');
    char *head = colon ? xstrndup(spec, (size_t)(colon - spec)) : NULL;
    double dummy;
    int is_range = colon && !strchr(spec, ',')
                   && parse_number(head, &dummy) == 0;
    free(head);
    rc = is_range ? parse_range(arg, spec, ax, cause)
                  : parse_list(arg, spec, ax, cause);
out:
    free(key);
    free(canon);
    if (rc != 0)
        sweep_axis_free(ax);
    return rc;
}

void
sweep_axis_free(struct sweep_axis *ax)
{
    for (int i = 0; i < ax->n_values; i++)
        free(ax->values[i]);
    free(ax->values);
    free(ax->key);
    free(ax->option);
    memset(ax, 0, sizeof *ax);
}

int
sweep_axis_is_log(const struct sweep_axis *ax)
{
    return ax->spacing == SWEEP_GEOMETRIC || ax->spacing == SWEEP_LOG10;
}

void
sweep_init(struct sweep *sw)
{
    memset(sw, 0, sizeof *sw);
    sw->n_points = 1;
}

int
sweep_add_axis(struct sweep *sw, const char *arg, char **cause)
{
    struct sweep_axis ax;
    if (sweep_axis_parse(arg, &ax, cause) != 0)
        return -1;
    for (int i = 0; i < sw->n_axes; i++) {
        if (strcmp(sw->axes[i].key, ax.key) == 0) {
            *cause = xasprintf("--vary %s: '%s' is already varied (give all "
                               "its values in one --vary)", arg, ax.key);
            sweep_axis_free(&ax);
            return -1;
        }
    }
    /* n_points <= SWEEP_MAX_POINTS and n_values <= SWEEP_MAX_POINTS, so
     * the product cannot overflow 64 bits. */
    int64_t n = sw->n_points * ax.n_values;
    if (n > SWEEP_MAX_POINTS) {
        char *dims = xstrdup("");
        for (int i = 0; i < sw->n_axes; i++) {
            char *d = xasprintf("%s%d x ", dims, sw->axes[i].n_values);
            free(dims);
            dims = d;
        }
        *cause = xasprintf("--vary %s: %s%d = %lld points, more than the "
                           "%d a sweep may have (narrow a range or take a "
                           "coarser step)", arg, dims, ax.n_values,
                           (long long)n, SWEEP_MAX_POINTS);
        free(dims);
        sweep_axis_free(&ax);
        return -1;
    }
    sw->axes = xrealloc(sw->axes, sizeof *sw->axes * (sw->n_axes + 1));
    sw->axes[sw->n_axes++] = ax;
    sw->n_points = n;
    return 0;
}

void
sweep_free(struct sweep *sw)
{
    for (int i = 0; i < sw->n_axes; i++)
        sweep_axis_free(&sw->axes[i]);
    free(sw->axes);
    sweep_init(sw);
}

void
sweep_point_index(const struct sweep *sw, int64_t point, int *idx)
{
    assert(point >= 0 && point < sw->n_points);
    for (int i = sw->n_axes - 1; i >= 0; i--) {
        idx[i] = (int)(point % sw->axes[i].n_values);
        point /= sw->axes[i].n_values;
    }
}

char **
sweep_point_argv(const struct sweep *sw, int base_argc,
                 char *const *base_argv, int64_t point, int *argc)
{
    int *idx = xcalloc(sw->n_axes + 1, sizeof *idx);
    sweep_point_index(sw, point, idx);
    char **av = xcalloc(base_argc + sw->n_axes + 1, sizeof *av);
    for (int i = 0; i < base_argc; i++)
        av[i] = base_argv[i];
    for (int i = 0; i < sw->n_axes; i++) {
        const struct sweep_axis *ax = &sw->axes[i];
        const char *v = ax->values[idx[i]];
        av[base_argc + i] = strcmp(ax->option, "--set") == 0
                                ? xasprintf("--set=%s=%s", ax->key, v)
                                : xasprintf("%s=%s", ax->option, v);
    }
    *argc = base_argc + sw->n_axes;
    free(idx);
    return av;
}

void
sweep_argv_free(const struct sweep *sw, int base_argc, char **argv)
{
    if (argv == NULL)
        return;
    for (int i = 0; i < sw->n_axes; i++)
        free(argv[base_argc + i]);
    free(argv);
}

/* ---- the summary JSON, flattened into (name, value) cells ---- */

struct cells {
    char **names, **values;
    unsigned char *quoted;      /* per cell: a JSON string */
    int n;
    size_t cap;
};

static void
cells_add(struct cells *c, const char *prefix, const char *name, size_t len,
          char *value, int quoted)
{
    if ((size_t)c->n == c->cap) {
        size_t cap = c->cap;
        c->names = xgrow(c->names, &cap, c->n + 1, sizeof *c->names);
        c->values = xrealloc(c->values, cap * sizeof *c->values);
        c->quoted = xrealloc(c->quoted, cap);
        c->cap = cap;
    }
    c->quoted[c->n] = (unsigned char)quoted;
    c->names[c->n] = prefix ? xasprintf("%s.%.*s", prefix, (int)len, name)
                            : xstrndup(name, len);
    c->values[c->n++] = value;
}

static const char *
skip_ws(const char *p)
{
    while (isspace((unsigned char)*p))
        p++;
    return p;
}

/* A JSON string at p (after the quote) as UTF-8 text; *end after the
 * closing quote.  Caller frees. */
static char *
scan_string(const char *p, const char **end)
{
    size_t len = 0, cap = 0;
    char *s = NULL;
    for (; *p && *p != '"'; p++) {
        char buf[4];
        size_t n = 1;
        buf[0] = *p;
        if (*p == '\\' && p[1]) {
            p++;
            switch (*p) {
            case 'n': buf[0] = '\n'; break;
            case 't': buf[0] = '\t'; break;
            case 'r': buf[0] = '\r'; break;
            case 'b': buf[0] = '\b'; break;
            case 'f': buf[0] = '\f'; break;
            case 'u': {
                unsigned u = 0;
                int k;
                for (k = 1; k <= 4 && isxdigit((unsigned char)p[k]); k++)
                    u = u * 16 + (unsigned)(isdigit((unsigned char)p[k])
                                     ? p[k] - '0'
                                     : (tolower((unsigned char)p[k]) - 'a'
                                        + 10));
                p += k - 1;
                if (u < 0x80) {
                    buf[0] = (char)u;
                } else if (u < 0x800) {
                    buf[0] = (char)(0xc0 | u >> 6);
                    buf[1] = (char)(0x80 | (u & 0x3f));
                    n = 2;
                } else {
                    buf[0] = (char)(0xe0 | u >> 12);
                    buf[1] = (char)(0x80 | (u >> 6 & 0x3f));
                    buf[2] = (char)(0x80 | (u & 0x3f));
                    n = 3;
                }
                break;
            }
            default: buf[0] = *p; break;
            }
        }
        s = xgrow(s, &cap, len + n + 1, 1);
        memcpy(s + len, buf, n);
        len += n;
    }
    s = xgrow(s, &cap, len + 1, 1);
    s[len] = '\0';
    *end = *p == '"' ? p + 1 : p;
    return s;
}

/* Flatten the object at p into c, nested objects as "outer.inner";
 * scalars keep their text exactly as printed.  Returns the position after
 * the object.  The input is output_summary_json's own output: anything
 * else (an array) is a bug there, caught by the assert. */
static const char *
flatten_object(const char *p, const char *prefix, struct cells *c)
{
    p = skip_ws(p);
    assert(*p == '{');
    p = skip_ws(p + 1);
    while (*p == '"') {
        const char *kend;
        char *key = scan_string(p + 1, &kend);
        p = skip_ws(kend);
        assert(*p == ':');
        p = skip_ws(p + 1);
        if (*p == '{') {
            char *inner = prefix ? xasprintf("%s.%s", prefix, key)
                                 : xstrdup(key);
            p = flatten_object(p, inner, c);
            free(inner);
        } else if (*p == '"') {
            cells_add(c, prefix, key, strlen(key), scan_string(p + 1, &p),
                      1);
        } else {
            const char *v = p;
            while (*p && *p != ',' && *p != '}' && !isspace((unsigned char)*p))
                p++;
            assert(*v != '[' && p > v);
            cells_add(c, prefix, key, strlen(key), xstrndup(v, p - v), 0);
        }
        free(key);
        p = skip_ws(p);
        if (*p == ',')
            p = skip_ws(p + 1);
    }
    assert(*p == '}');
    return p + 1;
}

static void
summary_cells(const struct run_view *v, struct cells *c)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = xopen_memstream(&text, &len);
    output_summary_json(v, mem);
    fclose(mem);
    memset(c, 0, sizeof *c);
    flatten_object(text, NULL, c);
    free(text);
}

/* The summary's cells for an empty run: its keys, and which are
 * strings, do not depend on the run. */
static void
empty_summary_cells(struct cells *c)
{
    struct run_config cfg;
    config_init(&cfg);
    char empty[1] = "";
    struct model model = {.name = empty, .layer_cls = empty};
    struct topo topo = {.name = empty};
    struct sched sched = {0};
    struct engine_result res = {0};
    struct metrics met = {0};
    struct run_view v = {&cfg, &model, &topo, &sched, &res, &met, empty};
    summary_cells(&v, c);
    config_free(&cfg);
}

char **
sweep_metric_names(int *n)
{
    struct cells c;
    empty_summary_cells(&c);
    for (int i = 0; i < c.n; i++)
        free(c.values[i]);
    free(c.values);
    free(c.quoted);
    *n = c.n;
    return c.names;
}

unsigned char *
sweep_metric_strings(int *n)
{
    struct cells c;
    empty_summary_cells(&c);
    for (int i = 0; i < c.n; i++) {
        free(c.values[i]);
        free(c.names[i]);
    }
    free(c.values);
    free(c.names);
    *n = c.n;
    return c.quoted;
}

/* Whether S is a JSON number, true, false or null, written as is. */
static int
json_literal(const char *s)
{
    if (strcmp(s, "true") == 0 || strcmp(s, "false") == 0
        || strcmp(s, "null") == 0)
        return 1;
    const char *p = s;
    if (*p == '-')
        p++;
    if (*p == '0')
        p++;
    else if (isdigit((unsigned char)*p))
        while (isdigit((unsigned char)*p))
            p++;
    else
        return 0;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return 0;
        while (isdigit((unsigned char)*p))
            p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!isdigit((unsigned char)*p))
            return 0;
        while (isdigit((unsigned char)*p))
            p++;
    }
    return *p == '\0';
}

static void
json_value(FILE *out, const char *v, int is_string)
{
    if (!is_string && json_literal(v))
        fputs(v, out);
    else
        json_out_string(out, v);
}

void
sweep_jsonl_row(const struct sweep *sw, int64_t point,
                const struct sweep_result *res, char *const *metric_names,
                const unsigned char *is_string, int n_metrics, FILE *out)
{
    int *idx = xcalloc(sw->n_axes + 1, sizeof *idx);
    sweep_point_index(sw, point, idx);
    /* The varied values in an object of their own: a varied key is
     * also a result key ("nodes"), and an object's keys are unique. */
    fputs("{\"vary\":{", out);
    for (int i = 0; i < sw->n_axes; i++) {
        if (i)
            fputc(',', out);
        json_out_string(out, sw->axes[i].key);
        fputc(':', out);
        json_value(out, sw->axes[i].values[idx[i]], 0);
    }
    free(idx);
    fputs("},", out);
    fputs(res->ok ? "\"status\":\"ok\",\"message\":\"\""
                  : "\"status\":\"error\",\"message\":", out);
    if (!res->ok)
        json_out_string(out, res->message ? res->message : "");
    /* An error row has no results: the keys are left out. */
    for (int i = 0; res->ok && i < n_metrics; i++) {
        fputc(',', out);
        json_out_string(out, metric_names[i]);
        fputc(':', out);
        json_value(out, res->values[i], is_string[i]);
    }
    fputs("}\n", out);
}

void
sweep_names_free(char **names, int n)
{
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

static void
fail(struct sweep_result *res, char *message)
{
    res->ok = 0;
    res->message = message;
}

/* A point's schedule, cost table and engine arrays are tens of MB at a
 * long accumulation (GPT-3 175B, 57 micro-batches: 170,000 ops), made
 * and freed again for every point.  glibc hands such blocks back to the
 * kernel when they are freed (mmap'd above 128 kB, a worker thread's
 * heap trimmed or unmapped when its top is free), and the next point
 * faults every page in again, zeroed and charged to the cgroup: a fifth
 * of a sweep's CPU time went there (perf, the accumulation 1..100 grid
 * of tests/bench-sweep.sh).  Kept in the process instead, they are
 * reused: blocks up to 32 MB (glibc's largest threshold) come from the
 * heap, which grows by 64 MB at a time and is trimmed only above 1 GB
 * free.  Resident memory stays at the largest point's, as before. */
static void
keep_freed_memory(void)
{
#ifdef __GLIBC__
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TOP_PAD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

void
sweep_shared_init(struct sweep_shared *sh)
{
    keep_freed_memory();
    pthread_mutex_init(&sh->parse_lock, NULL);
    sh->models = model_cache_new();
    sh->steady = steady_cache_new();
}

void
sweep_shared_destroy(struct sweep_shared *sh)
{
    pthread_mutex_destroy(&sh->parse_lock);
    model_cache_free(sh->models);
    sh->models = NULL;
    steady_cache_free(sh->steady);
    sh->steady = NULL;
}

void
sweep_point_run(const struct sweep *sw, int base_argc,
                char *const *base_argv, int64_t point,
                struct sweep_shared *shared, struct sweep_result *res)
{
    pthread_mutex_t *parse_lock = shared ? &shared->parse_lock : NULL;
    memset(res, 0, sizeof *res);
    int argc;
    char **argv = sweep_point_argv(sw, base_argc, base_argv, point, &argc);
    struct run r;
    char *cause = NULL;
    if (parse_lock)
        pthread_mutex_lock(parse_lock);
    enum setup_status st = setup_parse_args(&r, "sweep", argc, argv, &cause);
    if (parse_lock)
        pthread_mutex_unlock(parse_lock);
    char *key = shared != NULL ? steady_key(argc, argv) : NULL;
    sweep_argv_free(sw, base_argc, argv);
    /* --help was refused before the sweep started. */
    assert(st != SETUP_HELP);
    if (st == SETUP_OK && shared != NULL)
        r.models = shared->models;
    /* A row is the summary alone: a long accumulation step costs a
     * short one, shared by the points that differ only in it (steady.h). */
    struct sim_result nr;
    struct metrics met;
    int steady;
    if (st != SETUP_OK
        || steady_run(&r, shared != NULL ? shared->steady : NULL, key, &nr,
                      &met, &steady, &cause) != 0) {
        free(key);
        fail(res, cause);
        setup_free(&r);
        return;
    }
    free(key);
    struct run_view v = {&r.cfg, r.model, r.topo, r.sched, &nr.res, &met,
                         r.command_line};
    struct cells c;
    summary_cells(&v, &c);
    sweep_names_free(c.names, c.n);
    free(c.quoted);
    res->ok = 1;
    res->values = c.values;
    res->n_values = c.n;
    sim_result_free(&nr);
    setup_free(&r);
}

void
sweep_result_free(struct sweep_result *res)
{
    free(res->message);
    for (int i = 0; i < res->n_values; i++)
        free(res->values[i]);
    free(res->values);
    memset(res, 0, sizeof *res);
}

/* ---- CSV ---- */

void
sweep_csv_field(FILE *out, const char *s)
{
    if (strpbrk(s, ",\"\r\n") == NULL) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

void
sweep_csv_header(const struct sweep *sw, char *const *metric_names,
                 int n_metrics, FILE *out)
{
    /* The varied values are named vary.KEY, as JSON lines hold them in
     * "vary": a varied key is also a result column (nodes,
     * sharding_strategy), and a header naming one column twice is read
     * by most tools as one column or refused. */
    for (int i = 0; i < sw->n_axes; i++) {
        char *name = xasprintf("vary.%s", sw->axes[i].key);
        sweep_csv_field(out, name);
        free(name);
        fputc(',', out);
    }
    fputs("status,message", out);
    for (int i = 0; i < n_metrics; i++) {
        fputc(',', out);
        sweep_csv_field(out, metric_names[i]);
    }
    fputs("\r\n", out);
}

void
sweep_csv_row(const struct sweep *sw, int64_t point,
              const struct sweep_result *res, int n_metrics, FILE *out)
{
    int *idx = xcalloc(sw->n_axes + 1, sizeof *idx);
    sweep_point_index(sw, point, idx);
    for (int i = 0; i < sw->n_axes; i++) {
        sweep_csv_field(out, sw->axes[i].values[idx[i]]);
        fputc(',', out);
    }
    free(idx);
    if (res->ok) {
        /* Every run prints the same keys (sweep_metric_names). */
        assert(res->n_values == n_metrics);
        fputs("ok,", out);
        for (int i = 0; i < n_metrics; i++) {
            fputc(',', out);
            sweep_csv_field(out, res->values[i]);
        }
    } else {
        fputs("error,", out);
        sweep_csv_field(out, res->message);
        for (int i = 0; i < n_metrics; i++)
            fputc(',', out);
    }
    fputs("\r\n", out);
}

/* ---- shards ---- */

int
sweep_parse_shard(const char *s, int64_t *k, int64_t *n, char **cause)
{
    char *end;
    errno = 0;
    long long kk = strtoll(s, &end, 10);
    if (end != s && isdigit((unsigned char)*s) && *end == '/'
        && isdigit((unsigned char)end[1])) {
        const char *t = end + 1;
        long long nn = strtoll(t, &end, 10);
        if (*end == '\0' && errno == 0 && nn >= 1
            && nn <= SWEEP_MAX_POINTS && kk < nn) {
            *k = kk;
            *n = nn;
            return 0;
        }
    }
    *cause = xasprintf("--shard: '%s' is not K/N with 0 <= K < N <= %d "
                       "(shard K of N: e.g. --shard 0/4 ... --shard 3/4, "
                       "or --shard $SLURM_ARRAY_TASK_ID/100)", s,
                       SWEEP_MAX_POINTS);
    return -1;
}

/* The end of the CSV record starting at p (after its CRLF), quotes
 * respected; NULL when the text ends inside it or without a CRLF. */
static const char *
record_end(const char *p, const char *end)
{
    int quoted = 0;
    for (; p < end; p++) {
        if (*p == '"')
            quoted = !quoted;
        else if (!quoted && *p == '\r' && p + 1 < end && p[1] == '\n')
            return p + 2;
    }
    return NULL;
}

/* A decimal field ending in a comma at *p: its value, *p after the
 * comma; -1 when there is none. */
static int64_t
index_field(const char **p, const char *end)
{
    int64_t v = 0;
    const char *q = *p;
    if (q >= end || !isdigit((unsigned char)*q))
        return -1;
    for (; q < end && isdigit((unsigned char)*q); q++) {
        if (v > SWEEP_MAX_POINTS)
            return -1;
        v = v * 10 + (*q - '0');
    }
    if (q >= end || *q != ',')
        return -1;
    *p = q + 1;
    return v;
}

struct merged_row {
    const char *text;           /* the whole sweep's row, with its CRLF */
    size_t len;
    int file;
};

/* The rows merged so far: every point of an N-point sweep, by index. */
struct merge_rows {
    int64_t n_points;           /* -1 until the first row is read */
    int n_points_file;          /* the file that set it */
    struct merged_row *rows;
    const char *const *names;
};

/* Put row R, point POINT of a TOTAL-point sweep read from file F, in its
 * place: the first row fixes the sweep's size, a row of another size or
 * a point already placed is an error.  0, or -1 with *cause. */
static int
merge_place(struct merge_rows *mg, int64_t point, int64_t total, int f,
            struct merged_row r, char **cause)
{
    if (mg->n_points < 0) {
        mg->n_points = total;
        mg->n_points_file = f;
        mg->rows = xcalloc((size_t)total, sizeof *mg->rows);
    } else if (total != mg->n_points) {
        *cause = xasprintf("%s has %lld points and %s %lld: shards of "
                           "different sweeps", mg->names[mg->n_points_file],
                           (long long)mg->n_points, mg->names[f],
                           (long long)total);
        return -1;
    }
    if (mg->rows[point].text) {
        *cause = xasprintf("point %lld is in both %s and %s (a shard given "
                           "twice, or shards of different --shard N)",
                           (long long)point, mg->names[mg->rows[point].file],
                           mg->names[f]);
        return -1;
    }
    mg->rows[point] = r;
    return 0;
}

int
sweep_merge(const char *const *texts, const size_t *lens,
            const char *const *names, int n, FILE *out, char **cause)
{
    const size_t hl = strlen(SWEEP_SHARD_HEADER);
    const char *header = NULL;
    size_t header_len = 0;
    int header_file = -1;
    struct merge_rows mg = {-1, -1, NULL, names};
    *cause = NULL;
    if (n < 1) {
        *cause = xasprintf("merge: no files to merge");
        return -1;
    }
    int jsonl = -1, jsonl_file = -1;
    for (int f = 0; f < n && *cause == NULL; f++) {
        const char *p = texts[f], *end = texts[f] + lens[f];
        /* An empty file: a JSON-lines shard with no point. */
        if (lens[f] == 0)
            continue;
        int is_jsonl = *p == '{';
        if (jsonl >= 0 && is_jsonl != jsonl) {
            *cause = xasprintf("%s is JSON lines and %s CSV: shards of "
                               "one sweep have one --format",
                               names[is_jsonl ? f : jsonl_file],
                               names[is_jsonl ? jsonl_file : f]);
            break;
        }
        jsonl = is_jsonl;
        jsonl_file = f;
        if (is_jsonl) {
            static const char pre[] = "{\"point\":";
            static const char mid[] = "\"n_points\":";
            int64_t row_no = 1;
            for (; p < end; row_no++) {
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                const char *q = p + sizeof pre - 1;
                int64_t point = -1, total = -1;
                if (nl && (size_t)(nl - p) > sizeof pre
                    && memcmp(p, pre, sizeof pre - 1) == 0
                    && (point = index_field(&q, nl)) >= 0
                    && (size_t)(nl - q) > sizeof mid
                    && memcmp(q, mid, sizeof mid - 1) == 0) {
                    q += sizeof mid - 1;
                    total = index_field(&q, nl);
                }
                if (total < 1 || point >= total) {
                    *cause = xasprintf("%s: line %lld is not a shard's "
                                       "(starting {\"point\":P,\"n_points"
                                       "\":N,); the file is damaged or cut "
                                       "short", names[f], (long long)row_no);
                    break;
                }
                if (merge_place(&mg, point, total, f,
                                (struct merged_row){q, (size_t)(nl + 1 - q),
                                                    f}, cause) != 0)
                    break;
                p = nl + 1;
            }
            continue;
        }
        const char *h_end = record_end(p, end);
        if (h_end == NULL || (size_t)(h_end - p) < hl
            || memcmp(p, SWEEP_SHARD_HEADER, hl) != 0) {
            *cause = xasprintf("%s: not the CSV of a sweep shard (its "
                               "header does not start with %.*s; write "
                               "shards with fsdpsim sweep --shard K/N)",
                               names[f], (int)hl - 1, SWEEP_SHARD_HEADER);
            break;
        }
        const char *h = p + hl;
        size_t h_len = (size_t)(h_end - h);
        if (header == NULL) {
            header = h;
            header_len = h_len;
            header_file = f;
        } else if (h_len != header_len || memcmp(h, header, h_len) != 0) {
            *cause = xasprintf("%s and %s are shards of different sweeps "
                               "(their columns differ)", names[header_file],
                               names[f]);
            break;
        }
        int64_t row_no = 1;
        for (p = h_end; p < end; row_no++) {
            const char *r_end = record_end(p, end);
            const char *q = p;
            int64_t point = index_field(&q, end);
            int64_t total = point >= 0 ? index_field(&q, end) : -1;
            if (r_end == NULL || point < 0 || total < 1 || point >= total) {
                *cause = xasprintf("%s: row %lld is not a shard row "
                                   "(point,n_points, then the sweep's "
                                   "cells, ending in CRLF); the file is "
                                   "damaged or cut short", names[f],
                                   (long long)row_no);
                break;
            }
            if (merge_place(&mg, point, total, f,
                            (struct merged_row){q, (size_t)(r_end - q), f},
                            cause) != 0)
                break;
            p = r_end;
        }
    }
    int64_t n_points = mg.n_points;
    struct merged_row *rows = mg.rows;
    if (*cause == NULL && n_points < 0)
        *cause = xasprintf("merge: the files hold no points");
    int64_t missing = 0, first_missing = -1;
    for (int64_t i = 0; *cause == NULL && i < n_points; i++)
        if (rows[i].text == NULL && missing++ == 0)
            first_missing = i;
    if (*cause == NULL && missing > 0)
        *cause = xasprintf("%lld of %lld points are in none of the files, "
                           "the first point %lld (a shard missing or cut "
                           "short: rerun it)", (long long)missing,
                           (long long)n_points, (long long)first_missing);
    if (*cause) {
        free(rows);
        return -1;
    }
    if (!jsonl)
        fwrite(header, 1, header_len, out);
    for (int64_t i = 0; i < n_points; i++) {
        if (jsonl)
            fputc('{', out);
        fwrite(rows[i].text, 1, rows[i].len, out);
    }
    free(rows);
    return 0;
}
