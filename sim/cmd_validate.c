/*
 * cmd_validate.c: `fsdpsim validate`, the collective model against
 * published nccl-tests measurements, uncalibrated and calibrated.
 *
 * The data is a CSV of published points (one value a row, RFC 4180, a
 * header naming the columns): rows of category "collective_bench" and
 * metric "time" are kept, grouped into sweeps by run_id, mapped to a
 * built-in topology by their hardware columns and predicted with
 * coll_estimate() on a default nccl_config, twice:
 *   - uncalibrated: the topology as shipped; nothing is fitted;
 *   - held-out calibrated: for each size, the topology calibrated (as
 *     `fsdpsim calibrate` does) on the run's other sizes only, then asked
 *     for that size.  This leave-one-out cross-validation is how well a
 *     user's calibrated topology predicts sizes and runs it was not fitted
 *     to, without ever scoring a point that took part in its own fit.
 *
 * The CSV is small (hundreds of rows), so it is read whole and scanned
 * linearly; the parser here handles quoted fields with commas, doubled
 * quotes and line breaks, and nothing more of CSV dialects.
 */
#include "calib.h"
#include "cmd.h"
#include "coll.h"
#include "nccl_model.h"
#include "nccl_tests.h"
#include "textfile.h"
#include "topo.h"
#include "xalloc.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define VALIDATE_MAX_FILE_BYTES ((size_t)16 * 1024 * 1024)
#define VALIDATE_MAX_RECORDS 100000
#define VALIDATE_MAX_FIELDS 256
/* The size range FSDP's collectives live in (a transformer block's
 * parameters to a whole model's gradients): 1 MiB to 8 GiB. */
#define RANGE_LO 1048576.0
#define RANGE_HI 8589934592.0

void
cmd_validate_help(FILE *out)
{
    fprintf(out,
            "usage: fsdpsim validate [--data CSV] [--tol PCT]\n\n"
            "Compare the collective model with published nccl-tests "
            "measurements: rows of\ncategory collective_bench and metric "
            "time in a CSV of published points\n(header line, RFC 4180 "
            "quoting), grouped by run.  Each run is mapped to a\nbuilt-in "
            "topology by its hardware (8x A100 NVSwitch node: dgx-a100-80g; "
            "AWS\np4de over EFA: aws-p4de); runs that map to none are listed "
            "and skipped.\nEvery size is predicted twice: by the model "
            "uncalibrated, and by the model\ncalibrated as 'fsdpsim "
            "calibrate' does on the run's other sizes only\n(leave-one-out "
            "cross-validation: no size is scored by a fit it took part\nin).\n\n"
            "options:\n"
            "      --data CSV             the published points (default: "
            "$FSDPSIM_VALIDATION_DATA)\n"
            "      --tol PCT              exit 1 when the held-out calibrated "
            "median |error|\n"
            "                             over 1 MiB..8 GiB exceeds PCT "
            "percent\n"
            "      --nccl-version X.Y     NCCL 2.18 .. 2.28 (default 2.28)\n"
            "  -h, --help                 show this help\n\n"
            "Exit status: 0 ok, 1 the median exceeds --tol, 2 bad input.\n");
}

static int
usage_error(const char *msg)
{
    cmd_error("validate", msg, 1);
    return EXIT_USAGE;
}

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
        if (c->n == VALIDATE_MAX_RECORDS) {
            *cause = xasprintf("%s:%d: more than %d records", path, line,
                               VALIDATE_MAX_RECORDS);
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
            if (r->n == VALIDATE_MAX_FIELDS) {
                *cause = xasprintf("%s:%d: more than %d fields", path,
                                   r->line, VALIDATE_MAX_FIELDS);
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

struct vpoint {
    double size_bytes;
    double measured_s;
    int line;
};

struct vrun {
    char *id;               /* run_id, less a trailing "-<size>" */
    int line;               /* first row */
    char *hardware;         /* "gpu | intra | inter", for messages */
    enum coll_op op;        /* COLL_OP_COUNT: not from a known program */
    int gpn, nodes;
    int n, cap;
    struct vpoint *pt;
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

static bool
contains_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++)
        if (strncasecmp(hay, needle, n) == 0)
            return true;
    return false;
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

static const char *
map_hardware(const struct vrun *v)
{
    if (v->gpn != 8)
        return NULL;
    for (const struct hw_map *m = hw_maps; m->topology; m++)
        if (contains_ci(v->hardware, m->need1) &&
            contains_ci(v->hardware, m->need2) &&
            (m->nodes == 0 || m->nodes == v->nodes))
            return m->topology;
    return NULL;
}

static int
cmp_point(const void *a, const void *b)
{
    const struct vpoint *x = a, *y = b;
    return (x->size_bytes > y->size_bytes) - (x->size_bytes < y->size_bytes);
}

static void
vruns_free(struct vrun *v, int n)
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
collect(const char *path, const struct csv *c, struct vrun **out, int *n_out,
        char **cause)
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
    struct vrun *v = NULL;
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
        struct vrun *vr = &v[k];
        size_t pcap = (size_t)vr->cap;
        vr->pt = xgrow(vr->pt, &pcap, (size_t)vr->n + 1, sizeof *vr->pt);
        vr->cap = (int)pcap;
        vr->pt[vr->n++] = (struct vpoint){size, value * unit, r->line};
    }
    for (int k = 0; k < n; k++)
        if (v[k].n > 0)
            qsort(v[k].pt, (size_t)v[k].n, sizeof *v[k].pt,
                  cmp_point);
    *out = v;
    *n_out = n;
    return 0;
}

/* ---- The command ----------------------------------------------------- */

/* Append 100 (pred - meas) / meas to E (two lists: in range, all). */
struct errs {
    double *in, *all;
    size_t n_in, n_all;
};

static void
errs_add(struct errs *e, double size, double err)
{
    e->all[e->n_all++] = err;
    if (size >= RANGE_LO && size <= RANGE_HI)
        e->in[e->n_in++] = err;
}

static void
print_medians(const char *what, const struct errs *e)
{
    printf("# %s median |error|: 1 MiB..8 GiB %.1f %% (%zu size%s), all "
           "sizes %.1f %% (%zu size%s)\n", what,
           calib_median_abs(e->in, e->n_in), e->n_in,
           e->n_in == 1 ? "" : "s", calib_median_abs(e->all, e->n_all),
           e->n_all, e->n_all == 1 ? "" : "s");
}

/*
 * The held-out prediction of point SKIP of run V: calibrate a fresh copy
 * of topology NAME on every other point of V (calib_run_all, exactly as
 * `fsdpsim calibrate` does on a user's sweep) and predict point SKIP with
 * it.  The point judged never takes part in the fit that predicts it
 * (leave-one-out cross-validation), so the error is that of a calibrated
 * model on a size it has not seen.  0, or -1 with *cause.
 */
static int
predict_held_out(const struct vrun *v, const char *name, int skip,
                 const struct nccl_config *nc, struct coll_result *res,
                 char **cause)
{
    struct topo *t = topo_load_sized(name, v->nodes, v->gpn, true, cause);
    if (t == NULL)
        return -1;
    struct nccl_tests_run run;
    nccl_tests_run_init(&run);
    run.op = v->op;
    run.ranks = v->nodes * v->gpn;
    run.nodes = v->nodes;
    run.rows = xcalloc((size_t)v->n, sizeof *run.rows);
    for (int i = 0; i < v->n; i++) {
        if (i == skip)
            continue;
        struct nccl_tests_row *row = &run.rows[run.n_rows++];
        row->size_bytes = v->pt[i].size_bytes;
        row->time_us = v->pt[i].measured_s * 1e6;
        row->line = v->pt[i].line;
    }
    struct calib_run cr = {.run = &run, .topo = t};
    struct calib c;
    struct coll_group g = {v->nodes * v->gpn, v->nodes, v->gpn};
    int rc = calib_run_all(&c, &cr, 1, nc, cause);
    if (rc == 0)
        rc = coll_estimate(t, nc, v->op, REDOP_SUM, &g,
                           v->pt[skip].size_bytes, res, cause);
    calib_free(&c);
    nccl_tests_run_free(&run);
    topo_free(t);
    return rc;
}

/* Predict and print one run; adds its errors to ALL (uncalibrated) and
 * CV (held-out calibrated).  0, 1 when skipped,
 * -1 with *cause when the model fails. */
static int
validate_run(const struct vrun *v, const struct nccl_config *nc,
             struct errs *all, struct errs *cv, char **cause)
{
    const char *name = map_hardware(v);
    if (v->op == COLL_OP_COUNT) {
        printf("# skipped run %s: not all_gather_perf, reduce_scatter_perf "
               "or all_reduce_perf\n", v->id);
        return 1;
    }
    if (name == NULL || v->nodes < 1) {
        printf("# skipped run %s: no built-in topology for %d node%s x %d "
               "GPUs of '%s'\n", v->id, v->nodes, v->nodes == 1 ? "" : "s",
               v->gpn, v->hardware);
        return 1;
    }
    struct topo *t = topo_load_sized(name, v->nodes, v->gpn, true, cause);
    if (t == NULL)
        return -1;
    struct coll_group g = {v->nodes * v->gpn, v->nodes, v->gpn};
    printf("# run %s: %s, %s, %d node%s x %d GPUs (from line %d)\n", v->id,
           nccl_tests_program(v->op), name, v->nodes,
           v->nodes == 1 ? "" : "s", v->gpn, v->line);
    printf("#%12s %11s %11s %7s %11s %7s  %-13s %s\n", "size", "measured",
           "predicted", "error", "held-out", "error", "algorithm", "proto");
    printf("#%12s %11s %11s %7s %11s %7s\n", "(B)", "(us)", "(us)", "(%)",
           "(us)", "(%)");
    struct errs e = {xmalloc(((size_t)v->n + 1) * sizeof(double)),
                     xmalloc(((size_t)v->n + 1) * sizeof(double)), 0, 0};
    struct errs ecv = {xmalloc(((size_t)v->n + 1) * sizeof(double)),
                       xmalloc(((size_t)v->n + 1) * sizeof(double)), 0, 0};
    int rc = 0;
    for (int i = 0; i < v->n && rc == 0; i++) {
        const struct vpoint *p = &v->pt[i];
        struct coll_result r;
        if (coll_estimate(t, nc, v->op, REDOP_SUM, &g, p->size_bytes, &r,
                          cause) != 0) {
            rc = -1;
            break;
        }
        struct coll_result h;
        if (predict_held_out(v, name, i, nc, &h, cause) != 0) {
            rc = -1;
            break;
        }
        double err = 100 * (r.time_s - p->measured_s) / p->measured_s;
        double herr = 100 * (h.time_s - p->measured_s) / p->measured_s;
        printf(" %12.0f %11.2f %11.2f %+7.1f %11.2f %+7.1f  %-13s %s\n",
               p->size_bytes, p->measured_s * 1e6, r.time_s * 1e6, err,
               h.time_s * 1e6, herr, nccl_algo_name(r.algo),
               nccl_proto_name(r.proto));
        errs_add(&e, p->size_bytes, err);
        errs_add(all, p->size_bytes, err);
        errs_add(&ecv, p->size_bytes, herr);
        errs_add(cv, p->size_bytes, herr);
    }
    if (rc == 0) {
        char *what = xasprintf("run %s uncalibrated", v->id);
        print_medians(what, &e);
        free(what);
        what = xasprintf("run %s held-out calibrated", v->id);
        print_medians(what, &ecv);
        free(what);
        printf("\n\n");
    }
    free(e.in);
    free(e.all);
    free(ecv.in);
    free(ecv.all);
    topo_free(t);
    return rc;
}

int
cmd_validate(int argc, char **argv)
{
    static const struct option opts[] = {
        {"data", required_argument, NULL, 1000},
        {"tol", required_argument, NULL, 1001},
        {"nccl-version", required_argument, NULL, 1002},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *data = getenv("FSDPSIM_VALIDATION_DATA");
    const char *version = NULL;
    double tol = -1;
    int c, rc = EXIT_USAGE;
    char *cause = NULL, *msg = NULL, *text = NULL;
    struct csv csv = {0};
    struct vrun *runs = NULL;
    int n_runs = 0;
    struct errs all = {NULL, NULL, 0, 0}, cv = {NULL, NULL, 0, 0};
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 1000: data = optarg; break;
        case 1001: {
            char *end;
            tol = strtod(optarg, &end);
            if (end == optarg || (*end != '\0' && strcmp(end, "%") != 0) ||
                !(tol >= 0 && tol <= 1e6)) {
                msg = xasprintf("--tol: '%s' is not a percentage (e.g. "
                                "--tol 20)", optarg);
                rc = usage_error(msg);
                free(msg);
                return rc;
            }
            break;
        }
        case 1002: version = optarg; break;
        case 'h':
            cmd_validate_help(stdout);
            return 0;
        default:
            msg = xasprintf(c == ':' ? "option '%s' needs a value"
                                     : "unknown option '%s'",
                            argv[optind - 1]);
            rc = usage_error(msg);
            free(msg);
            return rc;
        }
    }
    if (optind != argc)
        return usage_error("unexpected argument (the data file goes after "
                           "--data)");
    if (data == NULL || *data == '\0')
        return usage_error("give the published points with --data CSV (or "
                           "set FSDPSIM_VALIDATION_DATA)");
    struct nccl_config nc;
    nccl_config_init(&nc);
    if (version && nccl_config_set_version(&nc, version, &cause) != 0)
        goto fail_cause;

    enum textfile_error error;
    text = textfile_read(data, VALIDATE_MAX_FILE_BYTES, 0, &error);
    if (text == NULL) {
        msg = error == TEXTFILE_OPEN || error == TEXTFILE_READ
                  ? xasprintf("cannot open '%s': %s", data, strerror(errno))
                  : xasprintf("%s: %s (is it the published-points CSV?)",
                              data, error == TEXTFILE_TOO_BIG
                                        ? "file is larger than 16 MiB"
                                        : "contains a NUL byte");
        goto fail;
    }
    if (csv_parse(data, text, &csv, &cause) != 0 ||
        collect(data, &csv, &runs, &n_runs, &cause) != 0)
        goto fail_cause;
    size_t total = 0;
    for (int k = 0; k < n_runs; k++)
        total += (size_t)runs[k].n;
    if (total == 0) {
        msg = xasprintf("%s: no rows of category collective_bench with "
                        "metric time", data);
        goto fail;
    }
    all.in = xmalloc(total * sizeof(double));
    all.all = xmalloc(total * sizeof(double));
    cv.in = xmalloc(total * sizeof(double));
    cv.all = xmalloc(total * sizeof(double));
    printf("# fsdpsim validate: %s: %d run%s, NCCL %d.%d\n"
           "# predicted: the model uncalibrated; held-out: calibrated on the "
           "run's other sizes\n# (leave-one-out), so no size is scored by a "
           "fit it took part in\n\n", data, n_runs, n_runs == 1 ? "" : "s",
           nc.version / 100, nc.version % 100);
    int used = 0;
    for (int k = 0; k < n_runs; k++) {
        int r = validate_run(&runs[k], &nc, &all, &cv, &cause);
        if (r < 0)
            goto fail_cause;
        used += r == 0;
    }
    if (used == 0) {
        msg = xasprintf("%s: no run could be mapped to a built-in topology",
                        data);
        goto fail;
    }
    print_medians("overall uncalibrated", &all);
    print_medians("overall held-out calibrated", &cv);
    rc = 0;
    double m = calib_median_abs(cv.in, cv.n_in);
    if (tol >= 0 && cv.n_in > 0 && m > tol) {
        msg = xasprintf("held-out calibrated median |error| over 1 MiB..8 "
                        "GiB is %.1f %%, more than --tol %g %%", m, tol);
        cmd_error("validate", msg, 0);
        rc = EXIT_CHECK_FAILED;
    }
    goto done;

fail_cause:
    msg = cause;
    cause = NULL;
fail:
    cmd_error("validate", msg, 0);
    rc = EXIT_USAGE;
done:
    free(msg);
    free(cause);
    free(text);
    free(all.in);
    free(all.all);
    free(cv.in);
    free(cv.all);
    csv_free(&csv);
    vruns_free(runs, n_runs);
    return rc;
}
