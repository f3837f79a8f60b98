/*
 * published.c: the published-points CSV (data/published/):
 * its nccl-tests sweeps, for `fsdpsim validate` and `fsdpsim calibrate`
 * (see published.h).
 *
 * The CSV is small (hundreds of rows), so it is read whole and scanned
 * linearly; the parser here handles quoted fields with commas, doubled
 * quotes and line breaks, and nothing more of CSV dialects.
 */
#include "published.h"
#include "str_ci.h"
#include "xalloc.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PUBLISHED_MAX_RECORDS 100000
#define PUBLISHED_MAX_FIELDS 256

/* ---- CSV ------------------------------------------------------------- */

struct csv_record {
    int line;               /* where the record starts */
    int n;
    char **field;
};

struct csv {
    int n;
    struct csv_record *rec;
};

static void
csv_free(struct csv *c)
{
    for (int i = 0; i < c->n; i++) {
        for (int j = 0; j < c->rec[i].n; j++)
            free(c->rec[i].field[j]);
        free(c->rec[i].field);
    }
    free(c->rec);
    c->n = 0;
    c->rec = NULL;
}

/* Parse TEXT (RFC 4180: fields split by commas, records by CRLF or LF,
 * quoted fields may hold commas, line breaks and "" for a quote).  Empty
 * lines are skipped.  -1 with *cause naming PATH:LINE. */
static int
csv_parse(const char *path, const char *text, struct csv *c, char **cause)
{
    size_t cap = 0, fcap = 0, blen = 0, bcap = 64;
    char *buf = xmalloc(bcap);
    const char *p = text;
    int line = 1;
    memset(c, 0, sizeof *c);
    while (*p) {
        if (*p == '\n' || (*p == '\r' && p[1] == '\n')) {
            p += *p == '\r' ? 2 : 1;
            line++;
            continue;
        }
        if (c->n == PUBLISHED_MAX_RECORDS) {
            *cause = xasprintf("%s:%d: more than %d records", path, line,
                               PUBLISHED_MAX_RECORDS);
            goto fail;
        }
        c->rec = xgrow(c->rec, &cap, (size_t)c->n + 1, sizeof *c->rec);
        struct csv_record *r = &c->rec[c->n++];
        memset(r, 0, sizeof *r);
        r->line = line;
        fcap = 0;
        for (;;) {
            blen = 0;
            if (*p == '"') {
                int qline = line;
                p++;
                for (;;) {
                    if (*p == '\0') {
                        *cause = xasprintf("%s:%d: quoted field never "
                                           "closed (add the closing '\"')",
                                           path, qline);
                        goto fail;
                    }
                    if (*p == '"' && p[1] == '"') {
                        p += 2;
                        buf[blen++] = '"';
                    } else if (*p == '"') {
                        p++;
                        break;
                    } else {
                        if (*p == '\n')
                            line++;
                        buf[blen++] = *p++;
                    }
                    if (blen + 2 >= bcap)
                        buf = xrealloc(buf, bcap *= 2);
                }
                if (*p != ',' && *p != '\n' && *p != '\r' && *p != '\0') {
                    *cause = xasprintf("%s:%d: text after a closing quote "
                                       "(quote the whole field)", path,
                                       line);
                    goto fail;
                }
            } else {
                while (*p && *p != ',' && *p != '\n' &&
                       !(*p == '\r' && p[1] == '\n')) {
                    buf[blen++] = *p++;
                    if (blen + 2 >= bcap)
                        buf = xrealloc(buf, bcap *= 2);
                }
            }
            if (r->n == PUBLISHED_MAX_FIELDS) {
                *cause = xasprintf("%s:%d: more than %d fields", path,
                                   r->line, PUBLISHED_MAX_FIELDS);
                goto fail;
            }
            r->field = xgrow(r->field, &fcap, (size_t)r->n + 1,
                             sizeof *r->field);
            r->field[r->n++] = xstrndup(buf, blen);
            if (*p != ',')
                break;
            p++;
        }
    }
    free(buf);
    return 0;
fail:
    free(buf);
    csv_free(c);
    return -1;
}

/* ---- Points and runs ------------------------------------------------- */

struct columns {
    int run_id, point_id, category, metric, value, unit, model, gpu,
        gpus_per_node, nodes, intra, inter, size;
};

static int
column(const struct csv_record *h, const char *name)
{
    for (int i = 0; i < h->n; i++)
        if (strcmp(h->field[i], name) == 0)
            return i;
    return -1;
}

static const char *
get(const struct csv_record *r, int col)
{
    return col >= 0 && col < r->n ? r->field[col] : "";
}

/* "size 32768 B" in the model text, else the size column. */
static double
point_size(const struct csv_record *r, const struct columns *col)
{
    const char *m = strstr(get(r, col->model), "size ");
    char *end;
    if (m != NULL) {
        double v = strtod(m + 5, &end);
        if (end != m + 5 && v >= 0)
            return v;
    }
    const char *s = get(r, col->size);
    double v = strtod(s, &end);
    return end != s && *end == '\0' && v >= 0 ? v : -1;
}

static double
unit_seconds(const char *unit)
{
    if (strcmp(unit, "us") == 0)
        return 1e-6;
    if (strcmp(unit, "ms") == 0)
        return 1e-3;
    if (strcmp(unit, "s") == 0)
        return 1;
    if (strcmp(unit, "ns") == 0)
        return 1e-9;
    return 0;
}

/* The run a row belongs to: its run_id, less a trailing "-<size>" when the
 * data names each size of a sweep as a run of its own (as the published
 * set does: S20-A100-AR-32768, S20-A100-AR-65536, ...). */
static char *
run_key(const char *run_id, double size)
{
    const char *dash = strrchr(run_id, '-');
    if (dash != NULL && dash > run_id && dash[1] != '\0') {
        char *end;
        double v = strtod(dash + 1, &end);
        if (*end == '\0' && v == size)
            return xstrndup(run_id, (size_t)(dash - run_id));
    }
    return xstrdup(run_id);
}

/* Built-in topologies for the hardware published runs name.  Checked in
 * order: p4de's NVSwitch would also match the DGX row. */
struct hw_map {
    const char *need1, *need2;  /* both in gpu | intra | inter */
    int nodes;                  /* required node count; 0 any */
    const char *topology;
};

static const struct hw_map hw_maps[] = {
    {"A100", "EFA", 0, "aws-p4de"},
    {"A100", "p4de", 0, "aws-p4de"},
    {"A100", "NVSwitch", 1, "dgx-a100-80g"},
    {NULL, NULL, 0, NULL}};

const char *
published_topology(const struct published_run *v)
{
    if (v->gpn != 8)
        return NULL;
    for (const struct hw_map *m = hw_maps; m->topology; m++)
        if (str_has_ci(v->hardware, m->need1) &&
            str_has_ci(v->hardware, m->need2) &&
            (m->nodes == 0 || m->nodes == v->nodes))
            return m->topology;
    return NULL;
}

static int
cmp_point(const void *a, const void *b)
{
    const struct published_point *x = a, *y = b;
    return (x->size_bytes > y->size_bytes) - (x->size_bytes < y->size_bytes);
}

void
published_free(struct published_run *v, int n)
{
    for (int i = 0; i < n; i++) {
        free(v[i].id);
        free(v[i].hardware);
        free(v[i].pt);
    }
    free(v);
}

/* Collect the collective_bench time rows of C into runs.  -1 with *cause
 * when the header lacks a column. */
static int
collect(const char *path, const struct csv *c, struct published_run **out,
        int *n_out, char **cause)
{
    if (c->n == 0) {
        *cause = xasprintf("%s: empty file (expected a header line and "
                           "rows of published points)", path);
        return -1;
    }
    const struct csv_record *h = &c->rec[0];
    struct columns col = {
        column(h, "run_id"), column(h, "point_id"), column(h, "category"),
        column(h, "metric"), column(h, "value"), column(h, "unit"),
        column(h, "model"), column(h, "gpu"), column(h, "gpus_per_node"),
        column(h, "nodes"), column(h, "intra_node_link"),
        column(h, "inter_node_link"), column(h, "size_bytes")};
    if (col.size < 0)
        col.size = column(h, "size");
    static const char *const need[] = {"run_id", "category", "metric",
                                       "value", "unit", "model", "gpu",
                                       "gpus_per_node", "nodes", NULL};
    for (int i = 0; need[i]; i++)
        if (column(h, need[i]) < 0) {
            *cause = xasprintf("%s:%d: no '%s' column in the header", path,
                               h->line, need[i]);
            return -1;
        }
    struct published_run *v = NULL;
    size_t cap = 0;
    int n = 0;
    for (int i = 1; i < c->n; i++) {
        const struct csv_record *r = &c->rec[i];
        if (strcmp(get(r, col.category), "collective_bench") != 0 ||
            strcmp(get(r, col.metric), "time") != 0)
            continue;
        char *end;
        const char *vs = get(r, col.value);
        double value = strtod(vs, &end);
        double unit = unit_seconds(get(r, col.unit));
        double size = point_size(r, &col);
        if (end == vs || *end != '\0' || !(value > 0) || unit == 0 ||
            size < 0) {
            printf("# skipped %s:%d (%s): %s\n", path, r->line,
                   get(r, col.point_id),
                   size < 0 ? "no size in the model text or a size column"
                   : unit == 0 ? "time unit is not ns, us, ms or s"
                               : "value is not a positive number");
            continue;
        }
        char *key = run_key(get(r, col.run_id), size);
        int k = 0;
        while (k < n && strcmp(v[k].id, key) != 0)
            k++;
        if (k == n) {
            v = xgrow(v, &cap, (size_t)n + 1, sizeof *v);
            memset(&v[n], 0, sizeof v[n]);
            v[n].id = key;
            v[n].line = r->line;
            v[n].hardware = xasprintf("%s | %s | %s", get(r, col.gpu),
                                      get(r, col.intra), get(r, col.inter));
            v[n].op = COLL_OP_COUNT;
            for (int o = 0; o < COLL_OP_COUNT; o++)
                if (strstr(get(r, col.model), nccl_tests_program(o)))
                    v[n].op = o;
            v[n].gpn = atoi(get(r, col.gpus_per_node));
            v[n].nodes = atoi(get(r, col.nodes));
            n++;
        } else {
            free(key);
        }
        struct published_run *vr = &v[k];
        size_t pcap = (size_t)vr->cap;
        vr->pt = xgrow(vr->pt, &pcap, (size_t)vr->n + 1, sizeof *vr->pt);
        vr->cap = (int)pcap;
        vr->pt[vr->n++] = (struct published_point){size, value * unit, r->line};
    }
    for (int k = 0; k < n; k++)
        if (v[k].n > 0)
            qsort(v[k].pt, (size_t)v[k].n, sizeof *v[k].pt,
                  cmp_point);
    *out = v;
    *n_out = n;
    return 0;
}

int
published_parse(const char *path, const char *text,
                struct published_run **runs, int *n_runs, char **cause)
{
    struct csv c;
    *runs = NULL;
    *n_runs = 0;
    if (csv_parse(path, text, &c, cause) != 0)
        return -1;
    int rc = collect(path, &c, runs, n_runs, cause);
    csv_free(&c);
    return rc;
}

bool
published_is_csv(const char *text)
{
    size_t n = strcspn(text, "\r\n");
    char *head = xstrndup(text, n);
    bool yes = strstr(head, "run_id") != NULL
               && strstr(head, "category") != NULL
               && strstr(head, "metric") != NULL;
    free(head);
    return yes;
}

void
published_nccl_tests(const struct published_run *v, int skip,
                     struct nccl_tests_run *run)
{
    nccl_tests_run_init(run);
    run->op = v->op;
    run->ranks = v->nodes * v->gpn;
    run->nodes = v->nodes;
    run->rows = xcalloc((size_t)v->n + 1, sizeof *run->rows);
    for (int i = 0; i < v->n; i++) {
        if (i == skip)
            continue;
        struct nccl_tests_row *row = &run->rows[run->n_rows++];
        row->size_bytes = v->pt[i].size_bytes;
        row->time_us = v->pt[i].measured_s * 1e6;
        row->line = v->pt[i].line;
    }
}

/* ---- End-to-end runs (category fsdp_e2e) ----------------------------- */

/* The columns an fsdp_e2e row must have: the settings a run is simulated
 * with, and its metric.  mixed_precision_policy, notes and the source_*
 * columns are read when present. */
static const char *const e2e_need[] = {
    "run_id", "category", "metric", "value", "unit", "model", "n_layers",
    "hidden", "n_heads", "n_kv_heads", "ffn_hidden", "vocab", "seq_len",
    "micro_batch_per_gpu", "grad_accum", "precision", "sharding_strategy",
    "fsdp_options", "activation_checkpointing", "torch_compile", "gpu",
    "gpus_per_node", "nodes", "inter_node_link", NULL};

/* A whole-number column: -1 when empty, else a positive integer; -2 when
 * it is not one. */
static long long
e2e_count(const char *s)
{
    if (*s == '\0')
        return -1;
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || !(v >= 1 && v <= 1e15) ||
        v != (double)(long long)v)
        return -2;
    return (long long)v;
}

/* Bytes in one UNIT of memory, 0 if it is not one. */
static double
unit_bytes(const char *unit)
{
    static const struct { const char *name; double bytes; } u[] = {
        {"GiB", 1073741824.0}, {"MiB", 1048576.0}, {"GB", 1e9},
        {"MB", 1e6}, {"B", 1}, {NULL, 0}};
    for (int i = 0; u[i].name; i++)
        if (strcmp(unit, u[i].name) == 0)
            return u[i].bytes;
    return 0;
}

void
published_e2e_free(struct published_e2e *v, int n)
{
    for (int i = 0; i < n; i++) {
        free(v[i].id);
        free(v[i].source);
        free(v[i].model);
        free(v[i].precision);
        free(v[i].mp_policy);
        free(v[i].sharding);
        free(v[i].fsdp_options);
        free(v[i].ac);
        free(v[i].compile);
        free(v[i].gpu);
        free(v[i].inter);
    }
    free(v);
}

/* Fill run V's settings from its first row R. -1 with *cause for a
 * count column that holds no positive whole number. */
static int
e2e_settings(const char *path, const struct csv_record *h,
             const struct csv_record *r, struct published_e2e *v,
             char **cause)
{
    static const char *const counts[] = {
        "n_layers", "hidden", "n_heads", "n_kv_heads", "ffn_hidden",
        "vocab", "seq_len", "micro_batch_per_gpu", "grad_accum",
        "gpus_per_node", "nodes", NULL};
    long long *dst[] = {&v->n_layers, &v->hidden, &v->n_heads,
                        &v->n_kv_heads, &v->ffn_hidden, &v->vocab,
                        &v->seq_len, &v->micro_batch, &v->grad_accum,
                        &v->gpus_per_node, &v->nodes};
    for (int i = 0; counts[i]; i++) {
        const char *s = get(r, column(h, counts[i]));
        long long x = e2e_count(s);
        if (x == -2) {
            *cause = xasprintf("%s:%d: %s '%s' is not a positive whole "
                               "number", path, r->line, counts[i], s);
            return -1;
        }
        *dst[i] = x;
    }
    /* Optional: what a row that gives no grad_accum implies it by. */
    const char *gbt = get(r, column(h, "global_batch_tokens"));
    v->global_batch_tokens = e2e_count(gbt);
    if (v->global_batch_tokens == -2) {
        *cause = xasprintf("%s:%d: global_batch_tokens '%s' is not a "
                           "positive whole number", path, r->line, gbt);
        return -1;
    }
    v->source = xstrdup(get(r, column(h, "source_id")));
    v->model = xstrdup(get(r, column(h, "model")));
    v->precision = xstrdup(get(r, column(h, "precision")));
    v->mp_policy = xstrdup(get(r, column(h, "mixed_precision_policy")));
    v->sharding = xstrdup(get(r, column(h, "sharding_strategy")));
    v->fsdp_options = xstrdup(get(r, column(h, "fsdp_options")));
    v->ac = xstrdup(get(r, column(h, "activation_checkpointing")));
    v->compile = xstrdup(get(r, column(h, "torch_compile")));
    v->gpu = xstrdup(get(r, column(h, "gpu")));
    v->inter = xstrdup(get(r, column(h, "inter_node_link")));
    return 0;
}

/* Record metric row R of run V.  Metrics other than the four compared
 * are ignored; -1 with *cause for a value that is not a number or a
 * unit that is not the metric's. */
static int
e2e_metric(const char *path, const struct csv_record *h,
           const struct csv_record *r, struct published_e2e *v,
           char **cause)
{
    const char *metric = get(r, column(h, "metric"));
    const char *vs = get(r, column(h, "value"));
    const char *unit = get(r, column(h, "unit"));
    double *dst = NULL, scale = 1;
    int *line = NULL;
    if (strcmp(metric, "tokens_per_sec_per_gpu") == 0) {
        dst = &v->tokens_per_s_per_gpu;
        line = &v->tokens_line;
    } else if (strcmp(metric, "mfu") == 0 || strcmp(metric, "hfu") == 0) {
        bool m = metric[0] == 'm';
        dst = m ? &v->mfu : &v->hfu;
        line = m ? &v->mfu_line : &v->hfu_line;
        scale = strcmp(unit, "%") == 0 ? 0.01 : 1;
    } else if (strcmp(metric, "peak_memory_reserved") == 0) {
        dst = &v->peak_reserved_bytes;
        line = &v->mem_line;
        scale = unit_bytes(unit);
        if (scale == 0) {
            *cause = xasprintf("%s:%d: peak_memory_reserved in '%s' (use "
                               "GiB, MiB, GB, MB or B)", path, r->line,
                               unit);
            return -1;
        }
    } else {
        return 0;
    }
    char *end;
    double x = strtod(vs, &end);
    if (end == vs || *end != '\0' || !(x > 0 && x < 1e300)) {
        *cause = xasprintf("%s:%d: %s value '%s' is not a positive number",
                           path, r->line, metric, vs);
        return -1;
    }
    *dst = x * scale;
    *line = r->line;
    return 0;
}

static int
e2e_collect(const char *path, const struct csv *c,
            struct published_e2e **out, int *n_out, char **cause)
{
    if (c->n == 0) {
        *cause = xasprintf("%s: empty file (expected a header line and "
                           "rows of published points)", path);
        return -1;
    }
    const struct csv_record *h = &c->rec[0];
    for (int i = 0; e2e_need[i]; i++)
        if (column(h, e2e_need[i]) < 0) {
            *cause = xasprintf("%s:%d: no '%s' column in the header (an "
                               "fsdp_e2e row needs the run's settings)",
                               path, h->line, e2e_need[i]);
            return -1;
        }
    int c_cat = column(h, "category"), c_id = column(h, "run_id");
    struct published_e2e *v = NULL;
    size_t cap = 0;
    int n = 0;
    for (int i = 1; i < c->n; i++) {
        const struct csv_record *r = &c->rec[i];
        if (strcmp(get(r, c_cat), "fsdp_e2e") != 0)
            continue;
        const char *id = get(r, c_id);
        if (*id == '\0') {
            *cause = xasprintf("%s:%d: empty run_id", path, r->line);
            goto fail;
        }
        int k = 0;
        while (k < n && strcmp(v[k].id, id) != 0)
            k++;
        if (k == n) {
            v = xgrow(v, &cap, (size_t)n + 1, sizeof *v);
            memset(&v[n], 0, sizeof v[n]);
            v[n].id = xstrdup(id);
            v[n].line = r->line;
            v[n].tokens_per_s_per_gpu = v[n].mfu = v[n].hfu =
                v[n].peak_reserved_bytes = -1;
            n++;
            if (e2e_settings(path, h, r, &v[k], cause) != 0)
                goto fail;
        }
        if (e2e_metric(path, h, r, &v[k], cause) != 0)
            goto fail;
    }
    *out = v;
    *n_out = n;
    return 0;
fail:
    published_e2e_free(v, n);
    return -1;
}

int
published_parse_e2e(const char *path, const char *text,
                    struct published_e2e **runs, int *n_runs, char **cause)
{
    struct csv c;
    *runs = NULL;
    *n_runs = 0;
    if (csv_parse(path, text, &c, cause) != 0)
        return -1;
    int rc = e2e_collect(path, &c, runs, n_runs, cause);
    csv_free(&c);
    return rc;
}
