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
 * The CSV itself is published.c's.
 *
 * With --runs, the same CSV's fsdp_e2e rows instead: published
 * end-to-end FSDP training runs, each simulated as `fsdpsim simulate`
 * would with the row's settings, and its tokens/s per GPU, MFU, HFU and
 * peak memory set beside the measured ones (validate_runs.c).
 */
#include "calib.h"
#include "cmd.h"
#include "coll.h"
#include "nccl_env.h"
#include "nccl_tests.h"
#include "published.h"
#include "model_cache.h"
#include "textfile.h"
#include "topo.h"
#include "validate_print.h"
#include "validate_runs.h"
#include "units.h"
#include "xalloc.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define VALIDATE_MAX_FILE_BYTES ((size_t)16 * 1024 * 1024)
/* The size range FSDP's collectives live in (a transformer block's
 * parameters to a whole model's gradients): 1 MiB to 8 GiB. */
#define RANGE_LO 1048576.0
#define RANGE_HI 8589934592.0

static void
cmd_validate_help(FILE *out)
{
    fprintf(out,
            "usage: fsdpsim validate [--data CSV] [--tol PCT]\n"
            "       fsdpsim validate --runs CSV [--tol PCT] "
            "[--format text|json]\n\n"
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
            "With --runs, the CSV's fsdp_e2e rows instead: published FSDP "
            "training runs,\ngrouped by run_id.  Each run is simulated "
            "as 'fsdpsim simulate' would\nbe with the row's settings (model: "
            "a built-in of the same architecture, or\none generated from the "
            "architecture columns; A100 80GB: dgx-a100-80g, H100\n80GB: "
            "dgx-h100, with the row's nodes and inter-node bandwidth; "
            "sharding,\nmixed precision, limit_all_gathers, activation "
            "checkpointing, torch.compile,\nsequence, micro-batch and "
            "accumulation from their columns;\nFSDP2 rows with --fsdp-version 2, "
            "float8 rows with --float8).  A run is\nlisted as not modelled "
            "when it names a GPU with no built-in topology, lacks\na "
            "setting, or simulate refuses one of its settings (with "
            "simulate's\nmessage).  Printed: one\nline a run with measured "
            "and predicted tokens/s per GPU, MFU, HFU and peak\nreserved "
            "memory and their errors, then MAPE, median |error| and mean "
            "signed\nerror of each metric, and of tokens/s by GPU, model, "
            "activation\ncheckpointing, compile and sequence length.\n\n"
            "What a source's training loop does beyond its columns is read "
            "from its code:\n"
            "for fms-fsdp (S05), clip_grad_norm_(1.0) and .item() every step,\n"
            "use_orig_params under torch.compile and FMS's rotary embedding "
            "(--rotary\n"
            "matrix); for torchtitan (S07), clip_grad_norm_(1.0) every step "
            "and its\n"
            "complex rotary embedding (--rotary complex).  fms-fsdp's selective\n"
            "checkpointing, whose fraction of blocks the rows do not give, "
            "is predicted\n"
            "as a range from every block checkpointed to the fewest that "
            "fit in memory,\n"
            "and listed apart: its error is 0 when the measured value is "
            "inside, else\n"
            "against the nearer end.\n"
            "\n"
            "options:\n"
            "      --data CSV             the published points (default: "
            "$FSDPSIM_VALIDATION_DATA)\n"
            "      --runs CSV             validate the end-to-end runs of "
            "CSV instead\n"
            "      --tol PCT              exit 1 when the held-out calibrated "
            "median |error|\n"
            "                             over 1 MiB..8 GiB exceeds PCT "
            "percent; with --runs,\n"
            "                             when the MAPE of tokens/s does\n"
            "      --nccl-version X.Y     NCCL 2.18 .. 2.28 (default 2.28)\n"
            "      --format text|json     --runs: output format (default "
            "text)\n"
            "  -h, --help                 show this help\n\n"
            "Exit status: 0 ok, 1 the median or MAPE exceeds --tol, 2 bad "
            "input.\n");
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
    validate_print_medians(what, e->in, e->n_in, e->all, e->n_all, stdout);
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
predict_held_out(const struct published_run *v, const char *name, int skip,
                 const struct nccl_config *nc, struct coll_result *res,
                 char **cause)
{
    struct topo *t = topo_load_sized(name, v->nodes, v->gpn, true, cause);
    if (t == NULL)
        return -1;
    struct nccl_tests_run run;
    published_nccl_tests(v, skip, &run);
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
validate_run(const struct published_run *v, const struct nccl_config *nc,
             struct errs *all, struct errs *cv, char **cause)
{
    const char *name = published_topology(v);
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
    validate_print_run_header(v, name, stdout);
    struct errs e = {xmalloc(((size_t)v->n + 1) * sizeof(double)),
                     xmalloc(((size_t)v->n + 1) * sizeof(double)), 0, 0};
    struct errs ecv = {xmalloc(((size_t)v->n + 1) * sizeof(double)),
                       xmalloc(((size_t)v->n + 1) * sizeof(double)), 0, 0};
    int rc = 0;
    for (int i = 0; i < v->n && rc == 0; i++) {
        const struct published_point *p = &v->pt[i];
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
        validate_print_point(p, &r, err, &h, herr, stdout);
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

/* The published-points file PATH, or NULL with *msg. */
static char *
read_points(const char *path, char **msg)
{
    return textfile_load(path, VALIDATE_MAX_FILE_BYTES,
                         "is it the published-points CSV?", msg);
}

/* --runs PATH: every fsdp_e2e run simulated and compared. */
static int
validate_runs(const char *path, double tol, bool json)
{
    char *msg = NULL;
    struct published_e2e *rows = NULL;
    int n = 0, rc = EXIT_USAGE;
    char *text = read_points(path, &msg);
    if (text == NULL)
        goto fail;
    if (published_parse_e2e(path, text, &rows, &n, &msg) != 0)
        goto fail;
    if (n == 0) {
        msg = xasprintf("%s: no rows of category fsdp_e2e", path);
        goto fail;
    }
    struct vrun *v = xcalloc((size_t)n, sizeof *v);
    struct model_cache *mc = model_cache_new();
    for (int i = 0; i < n; i++) {
        v[i].row = &rows[i];
        vrun_predict(&v[i], mc);
    }
    struct vrun_stats st;
    if (json)
        vrun_print_json(v, n, path, stdout, &st);
    else
        vrun_print_text(v, n, path, stdout, &st);
    rc = 0;
    if (tol >= 0 && st.n > 0 && st.mape > tol) {
        msg = xasprintf("MAPE of tokens/s per GPU over %d run%s is %.1f %%, "
                        "more than --tol %g %%", st.n, st.n == 1 ? "" : "s",
                        st.mape, tol);
        cmd_error("validate", msg, 0);
        rc = EXIT_CHECK_FAILED;
    }
    for (int i = 0; i < n; i++)
        vrun_free(&v[i]);
    free(v);
    model_cache_free(mc);
    goto done;
fail:
    cmd_error("validate", msg, 0);
done:
    free(msg);
    free(text);
    published_e2e_free(rows, n);
    return rc;
}

/* Options without a short name. */
enum {
    OPT_DATA = 1000,
    OPT_TOL,
    OPT_NCCL_VERSION,
    OPT_RUNS,
    OPT_FORMAT,
};

static const struct option validate_options[] = {
    {"data", required_argument, NULL, OPT_DATA},
    {"tol", required_argument, NULL, OPT_TOL},
    {"nccl-version", required_argument, NULL, OPT_NCCL_VERSION},
    {"runs", required_argument, NULL, OPT_RUNS},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0}};

struct validate_args {
    const char *data, *version, *runs_path;
    bool data_given, json;
    double tol;                 /* -1 without --tol */
};

/* ARGV's options into *A: CMD_RUN, or the exit status after the help or
 * the message. */
static int
parse_validate_options(int argc, char **argv, struct validate_args *a)
{
    *a = (struct validate_args){.data = getenv("FSDPSIM_VALIDATION_DATA"),
                                .tol = -1};
    struct cmd_getopt g = CMD_GETOPT(&cmd_validate_entry, argc, argv);
    int c;
    while ((c = cmd_getopt(&g)) != CMD_OPT_END) {
        switch (c) {
        case OPT_DATA: a->data = optarg; a->data_given = true; break;
        case OPT_TOL: {
            char *end;
            a->tol = strtod(optarg, &end);
            if (end == optarg || (*end != '\0' && strcmp(end, "%") != 0)
                || units_is_hex_float(optarg)
                || !(a->tol >= 0 && a->tol <= 1e6))
                return cmd_errorf("validate", 0, "--tol: '%s' is not a "
                                  "percentage (e.g. --tol 20)", optarg);
            break;
        }
        case OPT_NCCL_VERSION: a->version = optarg; break;
        case OPT_RUNS: a->runs_path = optarg; break;
        case OPT_FORMAT:
            if (strcmp(optarg, "json") != 0 && strcmp(optarg, "text") != 0)
                return cmd_errorf("validate", 0, "--format: '%s' is not "
                                  "one of text | json", optarg);
            a->json = strcmp(optarg, "json") == 0;
            break;
        case 'h':
            cmd_validate_help(stdout);
            return 0;
        default:
            return EXIT_USAGE;
        }
    }
    return CMD_RUN;
}

/* --data PATH: every published collective run predicted, uncalibrated
 * and held-out calibrated (NCCL VERSION), with exit 1 past TOL. */
static int
validate_points(const char *data, const char *version, double tol)
{
    int rc = EXIT_USAGE;
    char *cause = NULL, *msg = NULL, *text = NULL;
    struct published_run *runs = NULL;
    int n_runs = 0;
    struct errs all = {NULL, NULL, 0, 0}, cv = {NULL, NULL, 0, 0};
    struct nccl_config nc;
    nccl_config_init(&nc);
    if (version && nccl_config_set_version(&nc, version, &cause) != 0)
        goto fail_cause;

    text = read_points(data, &msg);
    if (text == NULL)
        goto fail;
    if (published_parse(data, text, &runs, &n_runs, &cause) != 0)
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
    validate_print_title(data, n_runs, nc.version, stdout);
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
    published_free(runs, n_runs);
    return rc;
}

static int
cmd_validate(int argc, char **argv)
{
    struct validate_args a;
    int rc = parse_validate_options(argc, argv, &a);
    if (rc != CMD_RUN)
        return rc;
    if (optind != argc)
        return cmd_errorf("validate", 1, "unexpected argument (the data "
                          "file goes after --data)");
    if (a.runs_path != NULL) {
        if (a.data_given)
            return cmd_errorf("validate", 1, "give --data (collectives) or "
                              "--runs (end-to-end runs), not both");
        if (a.version != NULL)
            return cmd_errorf("validate", 1, "--nccl-version is for --data; "
                              "with --runs the simulate default is used");
        if (*a.runs_path == '\0')
            return cmd_errorf("validate", 1, "--runs needs the "
                              "published-points CSV");
        return validate_runs(a.runs_path, a.tol, a.json);
    }
    if (a.json)
        return cmd_errorf("validate", 1, "--format is for --runs");
    if (a.data == NULL || *a.data == '\0')
        return cmd_errorf("validate", 1, "give the published points with "
                          "--data CSV (or set FSDPSIM_VALIDATION_DATA)");
    return validate_points(a.data, a.version, a.tol);
}

const struct cmd_entry cmd_validate_entry = {
    .name = "validate",
    .usage = "[--data CSV] [--tol PCT]",
    .summary = "compare the uncalibrated collective model with published "
               "points",
    .shortopts = ":h",
    .longopts = validate_options,
    .exec = cmd_validate,
    .help = cmd_validate_help,
};
