/*
 * cmd_calibrate.c: `fsdpsim calibrate`, fitting a topology's
 * [calibration] cells to nccl-tests sweeps measured on the cluster.
 *
 * Each file is one all_gather_perf, reduce_scatter_perf or
 * all_reduce_perf run (text or -J JSON, nccl_tests.c).  Its ranks and
 * hosts give the node count and GPUs per node the base topology is
 * predicted with; calib.c groups the sizes by the algorithm and protocol
 * the model picks
 * and fits time = latency + x / busbw + 2 sqrt(pipeline x / busbw), x =
 * size x busbw factor, per group (calib.h).  The
 * tables show every size before and after, so a poor fit is seen rather
 * than trusted, and the calibrated topology is written with topo_print()
 * for `fsdpsim simulate --topology FILE`.
 *
 * --profile TRACE.json fits the compute keys instead, or as well:
 * kineto_kernels.c reads the trace's kernels, profile_fit.c fits and
 * prints them, and they replace the base's values in the same topology
 * (and, with --calibration-out, in a partial file of measured keys).
 */
#include "atomic_file.h"
#include "calib.h"
#include "calib_print.h"
#include "cmd.h"
#include "coll.h"
#include "kineto_kernels.h"
#include "nccl_env.h"
#include "nccl_tests.h"
#include "profile_fit.h"
#include "published.h"
#include "topo.h"
#include "xalloc.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void
cmd_calibrate_help(FILE *out)
{
    fprintf(out,
            "usage: fsdpsim calibrate --nccl-tests FILE... [options]\n"
            "       fsdpsim calibrate --profile TRACE.json [--nccl-tests "
            "FILE...] [options]\n\n"
            "Fit the topology's collective model to nccl-tests output "
            "measured on the\ncluster (all_gather_perf, reduce_scatter_perf "
            "or all_reduce_perf; their\nstdout, or the -J FILE JSON).  Each "
            "file gives its ranks and hosts, so the\nbase topology is "
            "predicted with that many nodes and GPUs per node; a text\n"
            "file may hold several runs one after another (a shell loop over "
            "the three\nprograms, or 'fsdpsim real bench'), and a CSV of "
            "published points (as\n'fsdpsim validate' reads) gives its "
            "collective sweeps.  Sizes are grouped by\nthe algorithm and "
            "protocol NCCL would pick (Ring LL, Tree LL128, Ring\nSimple, "
            "...) inside one node or across nodes; each group of three or "
            "more\ngets, with x = size x "
            "busbw factor,\n"
            "  time = latency + x / busbw + 2 sqrt(pipeline x / busbw)\n"
            "by weighted least squares (a group of two: the line without "
            "pipeline).\n\n"
            "With --profile, fit the compute model to a PyTorch profiler "
            "trace of a few\ntraining steps (export_chrome_trace of "
            "torch.profiler.profile with CUDA\nactivity and "
            "record_shapes=True): each GPU kernel is tied to the operator\n"
            "that launched it, classed (GEMM, attention forward or backward, "
            "elementwise,\nreduction; NCCL left out) and sized from the "
            "operator's input shapes, and\n[gpu] gemm_efficiency, "
            "memory_efficiency, kernel_overhead, [compute]\n"
            "attention_forward_scale, attention_backward_scale, [node] "
            "launch_overhead\nand [host] autograd_overhead are fitted "
            "(least squares on log(predicted /\nmeasured)); a table "
            "shows each class before and after.\n\n"
            "The result is written as a topology ([calibration] cells and "
            "the fitted\nkeys); 'fsdpsim simulate --topology FILE' uses "
            "it.\n\n"
            "options:\n"
            "      --nccl-tests FILE      nccl-tests output (repeat, or list "
            "more files\n"
            "                             after the options)\n"
            "      --profile TRACE.json   a profiler trace of one rank\n"
            "  -t, --topology NAME|FILE   base topology (default "
            "dgx-a100-80g)\n"
            "  -o, --out FILE             calibrated topology (default "
            "calibrated.ini)\n"
            "      --calibration-out FILE also write the fitted values alone, "
            "for\n"
            "                             'simulate --calibration FILE'\n"
            "      --op OP                allgather, reducescatter or "
            "allreduce, for files\n"
            "                             that do not say which\n"
            "      --nccl-version X.Y     NCCL 2.18 .. 2.28 (default: the "
            "files', else 2.28)\n"
            "  -h, --help                 show this help\n\n"
            "Errors are medians of |predicted - measured| / measured over "
            "all sizes and\nover sizes from 1 MiB.  Exit status: 0 ok, 2 bad "
            "input, 3 the output could\nnot be written.\n");
}

static int
parse_op(const char *s, enum coll_op *op)
{
    for (int i = 0; i < COLL_OP_COUNT; i++)
        if (strcmp(s, coll_op_name(i)) == 0) {
            *op = i;
            return 0;
        }
    return -1;
}

/* The output topology: BASE with the fitted cells, GPN GPUs per node and
 * the most nodes any file ran on, named "<base>-calibrated". */
static struct topo *
output_topology(const char *base, const struct calib *c, int nodes, int gpn,
                char **cause)
{
    struct topo *t = topo_load_sized(base, nodes, gpn, false, cause);
    if (t == NULL)
        return NULL;
    calib_store_all(t, c);
    char *name = xasprintf("%s-calibrated", t->name);
    char *why = NULL;
    char *set = xasprintf("topology.name=%s", name);
    if (topo_set(t, set, &why) != 0)
        free(why);      /* too long: keep the base's name */
    free(set);
    free(name);
    return t;
}

/*
 * The runs of file PATH with a label each (both arrays caller frees):
 * nccl-tests output (text or -J JSON, one run or several), or the
 * published-points CSV, whose collective sweeps are taken as nccl-tests
 * runs labelled "PATH run ID".  0, or -1 with *cause.
 */
static int
read_runs(const char *path, enum coll_op hint, struct nccl_tests_run **runs,
          char ***labels, int *n, char **cause)
{
    *runs = NULL;
    *labels = NULL;
    *n = 0;
    char *text = nccl_tests_load(path, cause);
    if (text == NULL)
        return -1;
    int rc = 0;
    if (!published_is_csv(text)) {
        rc = nccl_tests_parse_all(path, text, hint, runs, n, cause);
        if (rc == 0) {
            *labels = xcalloc((size_t)*n, sizeof **labels);
            for (int k = 0; k < *n; k++)
                (*labels)[k] = xstrdup(path);
        }
        free(text);
        return rc;
    }
    struct published_run *pub;
    int n_pub;
    rc = published_parse(path, text, &pub, &n_pub, cause);
    free(text);
    if (rc != 0)
        return -1;
    *runs = xcalloc((size_t)n_pub + 1, sizeof **runs);
    *labels = xcalloc((size_t)n_pub + 1, sizeof **labels);
    for (int k = 0; k < n_pub; k++) {
        if (pub[k].op == COLL_OP_COUNT || pub[k].n < 1 || pub[k].gpn < 1
            || pub[k].nodes < 1) {
            printf("# skipped run %s (from line %d): not a sweep of "
                   "all_gather_perf, reduce_scatter_perf or "
                   "all_reduce_perf with its GPUs and nodes\n", pub[k].id,
                   pub[k].line);
            continue;
        }
        published_nccl_tests(&pub[k], -1, &(*runs)[*n]);
        (*labels)[(*n)++] = xasprintf("%s run %s", path, pub[k].id);
    }
    published_free(pub, n_pub);
    if (*n == 0) {
        *cause = xasprintf("%s: no rows of category collective_bench with "
                           "metric time from a known nccl-tests program",
                           path);
        free(*runs);
        free(*labels);
        *runs = NULL;
        *labels = NULL;
        return -1;
    }
    return 0;
}

/* Every run of every file of FILES (a file may hold several, one after
 * another) into *RUNS, with *LABELS[i] the file run i came from: 0, or
 * -1 with *cause (what was read is in *RUNS and *LABELS, *N of each). */
static int
read_all_runs(const char **files, int n_files, enum coll_op hint,
              struct nccl_tests_run **runs, char ***labels, int *n,
              char **cause)
{
    for (int f = 0; f < n_files; f++) {
        struct nccl_tests_run *more;
        char **more_labels;
        int n_more;
        if (read_runs(files[f], hint, &more, &more_labels, &n_more, cause)
            != 0)
            return -1;
        *runs = xrealloc(*runs, (size_t)(*n + n_more) * sizeof **runs);
        *labels = xrealloc(*labels, (size_t)(*n + n_more) * sizeof **labels);
        for (int k = 0; k < n_more; k++) {
            (*runs)[*n] = more[k];
            (*labels)[(*n)++] = more_labels[k];
        }
        free(more);
        free(more_labels);
    }
    return 0;
}

/* NCCL's version for the fit into *NC: VERSION when given, else the one
 * the files name (FILE_VERSION, 0 when none does): 0, or -1 with *msg. */
static int
fit_version(const char *version, int file_version, struct nccl_config *nc,
            char **msg)
{
    nccl_config_init(nc);
    if (version != NULL)
        return nccl_config_set_version(nc, version, msg) != 0 ? -1 : 0;
    if (file_version >= NCCL_VERSION_MIN && file_version <= NCCL_VERSION_MAX)
        nc->version = file_version;
    else if (file_version != 0) {
        *msg = xasprintf("the measurements are of NCCL %d.%d, which fsdpsim "
                         "does not model (2.%d .. 2.%d): give --nccl-version "
                         "X.Y to fit one of those", file_version / 100,
                         file_version % 100, NCCL_VERSION_MIN % 100,
                         NCCL_VERSION_MAX % 100);
        return -1;
    }
    return 0;
}

/* Each of the N_RUNS runs paired with BASE sized as it ran (CR[i]), all
 * of one node type: *GPN GPUs per node, *MAX_NODES the most nodes, and
 * *FILE_VERSION the first NCCL version a file names.  0, or -1 with
 * *msg. */
static int
pair_topologies(const struct nccl_tests_run *runs, char **labels,
                int n_runs, const char *base, struct calib_run *cr,
                int *gpn, int *max_nodes, int *file_version, char **msg)
{
    *gpn = 0;
    *max_nodes = 1;
    *file_version = 0;
    for (int i = 0; i < n_runs; i++) {
        int g = runs[i].ranks / runs[i].nodes;
        if (*gpn != 0 && g != *gpn) {
            *msg = xasprintf("%s: inconsistent ranks: %d GPUs per node, "
                             "but %s has %d (calibrate one node type at a "
                             "time)", labels[i], g, labels[0], *gpn);
            return -1;
        }
        *gpn = g;
        if (runs[i].nodes > *max_nodes)
            *max_nodes = runs[i].nodes;
        if (*file_version == 0)
            *file_version = runs[i].nccl_version;
        cr[i].run = &runs[i];
        char *cause = NULL;
        cr[i].topo = topo_load_sized(base, runs[i].nodes, g, false, &cause);
        if (cr[i].topo == NULL) {
            *msg = xasprintf("%s: %s", labels[i], cause);
            free(cause);
            return -1;
        }
    }
    return 0;
}

/*
 * The nccl-tests part: read FILES, fit CAL (printing each run's table and
 * the fitted cells), and give the GPUs per node and the most nodes the
 * runs had.  0, or -1 with *msg (caller frees).
 */
static int
nccl_part(const char **files, int n_files, const char *base,
          enum coll_op hint, const char *version, struct calib *cal,
          int *max_nodes_out, int *gpn_out, char **msg)
{
    struct nccl_tests_run *runs = NULL;
    char **labels = NULL;
    int n_runs = 0, rc = -1;
    struct calib_run *cr = NULL;
    int gpn, max_nodes, file_version;
    struct nccl_config nc;
    if (read_all_runs(files, n_files, hint, &runs, &labels, &n_runs, msg))
        goto out;
    cr = xcalloc((size_t)n_runs, sizeof *cr);
    if (pair_topologies(runs, labels, n_runs, base, cr, &gpn, &max_nodes,
                        &file_version, msg) != 0
        || fit_version(version, file_version, &nc, msg) != 0
        || calib_run_all(cal, cr, n_runs, &nc, msg) != 0)
        goto out;
    int fitted = calib_fitted_cells(cal);
    for (int i = 0; i < n_runs; i++) {
        if (i > 0)
            printf("\n\n");
        calib_print_run(&cr[i], labels[i], &nc, stdout);
    }
    printf("\n");
    calib_print_fits(cal, stdout);
    if (fitted == 0) {
        *msg = xstrdup("no protocol group has two sizes or more: nothing "
                       "to fit (measure a wider sweep, e.g. -b 8 -e 8G -f "
                       "2)");
        goto out;
    }
    *max_nodes_out = max_nodes;
    *gpn_out = gpn;
    rc = 0;
out:
    calib_free(cal);   /* it borrows CR; the fitted cells stay */
    for (int i = 0; cr != NULL && i < n_runs; i++)
        topo_free(cr[i].topo);
    for (int i = 0; runs != NULL && i < n_runs; i++)
        nccl_tests_run_free(&runs[i]);
    free(cr);
    free(runs);
    for (int i = 0; labels != NULL && i < n_runs; i++)
        free(labels[i]);
    free(labels);
    return rc;
}

/* The partial form (`simulate --calibration FILE`) onto OUT: the keys the
 * profile fitted (PF, or NULL) and the [calibration] cells of CELLS (or
 * NULL). */
static void
print_calibration(FILE *out, const char *base, const struct profile_fit *pf,
                  const struct topo *cells)
{
    fprintf(out, "# fsdpsim calibration: measured by 'fsdpsim calibrate', "
            "for topology '%s'\n# use it with 'fsdpsim simulate --topology "
            "%s --calibration FILE'\n", base, base);
    if (pf != NULL)
        profile_fit_write_keys(pf, out);
    if (cells != NULL)
        topo_print_calibration(cells, out);
}

/* Options without a short name. */
enum {
    OPT_NCCL_TESTS = 1000,
    OPT_OP,
    OPT_NCCL_VERSION,
    OPT_PROFILE,
    OPT_CALIBRATION_OUT,
};

static const struct option calibrate_options[] = {
    {"nccl-tests", required_argument, NULL, OPT_NCCL_TESTS},
    {"topology", required_argument, NULL, 't'},
    {"out", required_argument, NULL, 'o'},
    {"op", required_argument, NULL, OPT_OP},
    {"nccl-version", required_argument, NULL, OPT_NCCL_VERSION},
    {"profile", required_argument, NULL, OPT_PROFILE},
    {"calibration-out", required_argument, NULL, OPT_CALIBRATION_OUT},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0}};

struct calibrate_args {
    const char *base, *out, *version, *profile, *cal_out;
    const char **files;         /* --nccl-tests and the operands */
    int n_files;
    enum coll_op hint;          /* --op, COLL_OP_COUNT without */
};

/* ARGV into *A (A->files sized for ARGC): CMD_RUN, or the exit status
 * after the help or the message. */
static int
parse_calibrate_args(int argc, char **argv, struct calibrate_args *a)
{
    struct cmd_getopt g = CMD_GETOPT(&cmd_calibrate_entry, argc, argv);
    int c;
    while ((c = cmd_getopt(&g)) != CMD_OPT_END) {
        switch (c) {
        case OPT_NCCL_TESTS: a->files[a->n_files++] = optarg; break;
        case 't': a->base = optarg; break;
        case 'o': a->out = optarg; break;
        case OPT_OP:
            if (parse_op(optarg, &a->hint) != 0)
                /* A bad value: one line. */
                return cmd_errorf("calibrate", 0, "--op: unknown op '%s' "
                                  "(allgather, reducescatter or allreduce)",
                                  optarg);
            break;
        case OPT_NCCL_VERSION: a->version = optarg; break;
        case OPT_PROFILE:
            if (a->profile != NULL)
                return cmd_errorf("calibrate", 1, "--profile: give one "
                                  "trace (one rank's)");
            a->profile = optarg;
            break;
        case OPT_CALIBRATION_OUT: a->cal_out = optarg; break;
        case 'h':
            cmd_calibrate_help(stdout);
            return 0;
        default:
            return EXIT_USAGE;
        }
    }
    while (optind < argc)
        a->files[a->n_files++] = argv[optind++];
    if (a->n_files == 0 && a->profile == NULL)
        return cmd_errorf("calibrate", 1, "give nccl-tests output with "
                          "--nccl-tests FILE or a profiler trace with "
                          "--profile TRACE.json");
    if ((a->out != NULL && *a->out == '\0')
        || (a->cal_out != NULL && *a->cal_out == '\0'))
        return cmd_errorf("calibrate", 0, *a->out == '\0'
                              ? "--out: the file name is empty (give a path)"
                              : "--calibration-out: the file name is empty "
                                "(give a path)");
    if (a->cal_out != NULL && strcmp(a->cal_out, a->out) == 0)
        return cmd_errorf("calibrate", 0, "--out and --calibration-out both "
                          "name %s: the second would replace the first "
                          "(give two files)", a->out);
    return CMD_RUN;
}

/* The files A asks for, from T (with the profile's fit PF when A has a
 * profile): 0, or EXIT_SYSTEM after the message.  Both are opened and
 * written before either is renamed into place, and --calibration-out is
 * committed first: when it cannot be written (a missing directory, a
 * full disk) the topology is not left behind as if the run had
 * succeeded.  Only a rename of the topology failing after that leaves the
 * calibration file alone. */
static int
write_outputs(const struct calibrate_args *a, const struct topo *t,
              const struct profile_fit *pf, int max_nodes, int gpn)
{
    char *cause = NULL;
    struct atomic_file topo_af, cal_af;
    if (atomic_file_open(&topo_af, a->out, &cause) != 0)
        goto fail;
    topo_print(t, topo_af.f);
    if (a->cal_out != NULL) {
        if (atomic_file_open(&cal_af, a->cal_out, &cause) != 0) {
            atomic_file_abort(&topo_af);
            goto fail;
        }
        print_calibration(cal_af.f, a->base, a->profile ? pf : NULL,
                          a->n_files > 0 ? t : NULL);
        if (atomic_file_commit(&cal_af, &cause) != 0) {
            atomic_file_abort(&topo_af);
            goto fail;
        }
    }
    if (atomic_file_commit(&topo_af, &cause) != 0)
        goto fail;
    printf("# wrote %s (%s, %d node%s x %d GPUs); use it with 'fsdpsim "
           "simulate --topology %s'\n", a->out, t->name, max_nodes,
           max_nodes == 1 ? "" : "s", gpn, a->out);
    if (a->cal_out == NULL)
        return 0;
    printf("# wrote %s (measured keys only); use it with 'fsdpsim "
           "simulate --topology %s --calibration %s'\n", a->cal_out, a->base,
           a->cal_out);
    return 0;
fail:
    return cmd_fail("calibrate", cause, EXIT_SYSTEM);
}

static int
cmd_calibrate(int argc, char **argv)
{
    struct calibrate_args a = {
        .base = "dgx-a100-80g", .out = "calibrated.ini",
        .files = xcalloc((size_t)argc + 1, sizeof(char *)),
        .hint = COLL_OP_COUNT};
    char *msg = NULL;
    struct calib cal = {0};
    struct topo *t_out = NULL;
    struct prof_trace trace = {0};
    struct profile_fit pfit;
    int max_nodes = 1, gpn = 0;
    int rc = parse_calibrate_args(argc, argv, &a);
    if (rc != CMD_RUN)
        goto done;
    rc = EXIT_USAGE;
    /* The trace first, so that a bad one is the only thing said. */
    if (a.profile != NULL && kineto_kernels_read(a.profile, &trace, &msg))
        goto fail;
    if (a.n_files > 0 && nccl_part(a.files, a.n_files, a.base, a.hint,
                                   a.version, &cal, &max_nodes, &gpn,
                                   &msg) != 0)
        goto fail;
    t_out = output_topology(a.base, &cal, a.n_files > 0 ? max_nodes : 0,
                            a.n_files > 0 ? gpn : 0, &msg);
    if (t_out == NULL)
        goto fail;
    if (a.n_files == 0) {
        max_nodes = t_out->nodes;
        gpn = t_out->gpus_per_node;
    }
    if (a.profile != NULL) {
        if (a.n_files > 0)
            printf("\n");
        profile_fit(t_out, &trace, &pfit);
        profile_fit_print(&pfit, &trace, a.profile, a.base, stdout);
        if (topo_validate(t_out, &msg) != 0)
            goto fail;
    }
    rc = write_outputs(&a, t_out, &pfit, max_nodes, gpn);
    goto done;
fail:
    cmd_error("calibrate", msg, 0);
done:
    free(msg);
    calib_free(&cal);
    prof_trace_free(&trace);
    topo_free(t_out);
    free(a.files);
    return rc;
}

const struct cmd_entry cmd_calibrate_entry = {
    .name = "calibrate",
    .usage = "--nccl-tests FILE... [-t BASE] [-o FILE] [--op OP]",
    .summary = "fit a topology's collective model to nccl-tests output",
    .shortopts = ":ht:o:",
    .longopts = calibrate_options,
    .exec = cmd_calibrate,
    .help = cmd_calibrate_help,
};
