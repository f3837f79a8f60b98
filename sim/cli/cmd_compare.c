/*
 * cmd_compare.c: `fsdpsim compare PRED MEASURED`, a prediction held
 * against a measurement (or another prediction): per op kind, per phase,
 * the step, exposed communication and peak memory (compare.c), and on
 * request a plot of the two timelines one above the other.
 *
 * The plot goes through reports/compare.gp, embedded like the scripts of
 * `fsdpsim report`: the script and the two data files are written to a
 * fresh temporary directory, gnuplot writes the image under a temporary
 * name beside its target, and the directory is removed afterwards.
 */
#define _POSIX_C_SOURCE 200809L
#include "builtin.h"
#include "cmd.h"
#include "gnuplot.h"
#include "compare.h"
#include "units.h"
#include "xalloc.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


static void
cmd_compare_help(FILE *out)
{
    fprintf(out,
            "usage: fsdpsim compare PRED MEASURED [options]\n\n"
            "Compare the last step of a prediction with a measurement: per "
            "op kind (count,\nsummed time, error, median per-op error), per "
            "phase, the step time, exposed\ncommunication and peak memory.  "
            "Each file is a timeline .dat (simulate\n--timeline), an fsdpsim "
            "Chrome trace (simulate --trace) or a PyTorch profiler\ntrace of "
            "a real job, told apart by content.  Files of the same schedule "
            "are\nmatched op by op id; otherwise the k-th op of a kind with "
            "the k-th.  In a\nprofiler trace NCCL kernels are the "
            "collectives and every other kernel is\ncompute; its step is the "
            "last ProfilerStep#N.\n"
            "error = (predicted - measured) / measured.\n\n"
            "options:\n"
            "  --tol PCT                 exit 1 when |step-time error| > PCT\n"
            "  --plot PREFIX             write PREFIX-compare.png (both "
            "timelines) with gnuplot\n"
            "  --term png|svg            plot format (default png)\n"
            "  --format text|json        output format (default text)\n"
            "  --pred-memory FILE        memory .dat of the prediction "
            "(simulate --memory)\n"
            "  --measured-memory FILE    memory .dat of the measurement\n"
            "  -h, --help                show this help\n\n"
            "exit status: 0 ok, 1 step-time error beyond --tol, 2 bad input, "
            "3 the plot\ncould not be written.\n");
}

/* Write one side as plot data: lane, stream name, kind, start and end in
 * ms from the step's first op, into a temporary file (gnuplot.h) whose
 * path is returned; NULL with *cause. */
static char *
write_plot_data(const char *what, const struct compare_timeline *tl,
                char **cause)
{
    char *path;
    FILE *f = gnuplot_data_open(what, &path, cause);
    if (f == NULL)
        return NULL;
    int64_t t0 = compare_step_start_ns(tl);
    fputs("# lane stream kind start_ms end_ms\n", f);
    for (int i = 0; i < tl->n_ops; i++) {
        const struct compare_op *o = &tl->ops[i];
        fprintf(f, "%d %s %s %.6f %.6f\n", o->stream,
                tl->stream_names[o->stream], compare_kind_name(o->kind),
                (o->start_ns - t0) * 1e-6, (o->end_ns - t0) * 1e-6);
    }
    gnuplot_data_close(f, &path, cause);
    return path;
}


/* PREFIX-compare.TERM from both timelines; 0, or EXIT_SYSTEM with one
 * message.  The data files are temporaries SIGINT, SIGTERM and SIGHUP
 * remove, as they do the plot's. */
static int
plot(const struct compare_timeline *pred, const struct compare_timeline *meas,
     const char *pred_path, const char *meas_path, const char *prefix,
     const char *term)
{
    char *cause = NULL;
    char *pdat = write_plot_data("cmp-pred", pred, &cause);
    char *mdat = pdat ? write_plot_data("cmp-meas", meas, &cause) : NULL;
    char *out = xasprintf("%s-compare.%s", prefix, term);
    int rc = 0;
    if (mdat == NULL) {
        cmd_error("compare", cause, 0);
        free(cause);
        rc = EXIT_SYSTEM;
    } else {
        char *ptitle = xasprintf("predicted: %s", pred_path);
        char *mtitle = xasprintf("measured: %s", meas_path);
        const char *args[] = {pdat, mdat, GNUPLOT_OUT, term, ptitle, mtitle,
                              NULL};
        if (gnuplot_run("compare", args, out, &cause) != 0) {
            cmd_error("compare", cause, 0);
            free(cause);
            rc = EXIT_SYSTEM;
        } else {
            fprintf(stderr, "wrote %s\n", out);
        }
        free(ptitle);
        free(mtitle);
    }
    gnuplot_data_remove(pdat);
    gnuplot_data_remove(mdat);
    free(out);
    return rc;
}

/* Options without a short name. */
enum {
    OPT_TOL = 1000,
    OPT_PLOT,
    OPT_TERM,
    OPT_FORMAT,
    OPT_PRED_MEMORY,
    OPT_MEASURED_MEMORY,
};

static const struct option compare_options[] = {
    {"tol", required_argument, NULL, OPT_TOL},
    {"plot", required_argument, NULL, OPT_PLOT},
    {"term", required_argument, NULL, OPT_TERM},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"pred-memory", required_argument, NULL, OPT_PRED_MEMORY},
    {"measured-memory", required_argument, NULL, OPT_MEASURED_MEMORY},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0}};

struct compare_args {
    const char *prefix, *term, *format, *pred_mem, *meas_mem;
    const char *pred_path, *meas_path;
    double tol;                 /* -1 without --tol */
};

/* ARGV into *A: CMD_RUN, or the exit status after the help or the
 * message. */
static int
parse_compare_args(int argc, char **argv, struct compare_args *a)
{
    *a = (struct compare_args){.term = "png", .format = "text", .tol = -1};
    struct cmd_getopt g = CMD_GETOPT(&cmd_compare_entry, argc, argv);
    int c;
    while ((c = cmd_getopt(&g)) != CMD_OPT_END) {
        switch (c) {
        case OPT_TOL: {
            char *end;
            a->tol = strtod(optarg, &end);
            if (end == optarg || *end != '\0' || units_is_hex_float(optarg)
                || !(a->tol >= 0 && a->tol <= 1e6))
                /* A bad value, not a bad command line: one line, no
                 * usage. */
                return cmd_errorf("compare", 0, "--tol: '%s' is not a "
                                  "percentage (e.g. --tol 10)", optarg);
            break;
        }
        case OPT_PLOT: a->prefix = optarg; break;
        case OPT_TERM: a->term = optarg; break;
        case OPT_FORMAT: a->format = optarg; break;
        case OPT_PRED_MEMORY: a->pred_mem = optarg; break;
        case OPT_MEASURED_MEMORY: a->meas_mem = optarg; break;
        case 'h':
            cmd_compare_help(stdout);
            return 0;
        default:
            return EXIT_USAGE;
        }
    }
    if (argc - optind != 2)
        return cmd_errorf("compare", 1, argc - optind < 2
                              ? "give two files: PRED MEASURED"
                              : "give two files only: PRED MEASURED");
    a->pred_path = argv[optind];
    a->meas_path = argv[optind + 1];
    if (a->prefix != NULL && *a->prefix == '\0')
        return cmd_errorf("compare", 0, "--plot: the prefix is empty (the "
                          "plot would be named -compare.png)");
    if (strcmp(a->term, "png") != 0 && strcmp(a->term, "svg") != 0)
        return cmd_errorf("compare", 0, "--term: '%s' is not png or svg",
                          a->term);
    if (strcmp(a->format, "text") != 0 && strcmp(a->format, "json") != 0)
        return cmd_errorf("compare", 0, "--format: '%s' is not text or json",
                          a->format);
    return CMD_RUN;
}

/* Both sides of A, with their memory peaks: 0, or -1 with *cause
 * (*pred and *meas then as compare_timeline_free takes them). */
static int
load_both(const struct compare_args *a, struct compare_timeline *pred,
          struct compare_timeline *meas, char **cause)
{
    memset(meas, 0, sizeof *meas);
    if (compare_load(a->pred_path, pred, cause) != 0) {
        memset(pred, 0, sizeof *pred);
        return -1;
    }
    if (compare_load(a->meas_path, meas, cause) != 0)
        return -1;
    if ((a->pred_mem
         && compare_read_memory(a->pred_mem, &pred->peak_mem_bytes, cause))
        || (a->meas_mem
            && compare_read_memory(a->meas_mem, &meas->peak_mem_bytes,
                                   cause)))
        return -1;
    return 0;
}

static int
cmd_compare(int argc, char **argv)
{
    struct compare_args a;
    int rc = parse_compare_args(argc, argv, &a);
    if (rc != CMD_RUN)
        return rc;
    struct compare_timeline pred, meas;
    struct compare_result res;
    char *cause = NULL;
    rc = EXIT_USAGE;
    if (load_both(&a, &pred, &meas, &cause) != 0
        || compare_run(&pred, &meas, a.pred_path, a.meas_path, &res,
                       &cause) != 0)
        goto fail;
    if (strcmp(a.format, "json") == 0)
        compare_print_json(stdout, &pred, &meas, a.pred_path, a.meas_path,
                           &res, a.tol);
    else
        compare_print_text(stdout, &pred, &meas, a.pred_path, a.meas_path,
                           &res);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cause = xasprintf("standard output: cannot write: %s",
                          strerror(errno ? errno : EIO));
        rc = EXIT_SYSTEM;
        goto fail;
    }
    rc = 0;
    if (a.prefix)
        rc = plot(&pred, &meas, a.pred_path, a.meas_path, a.prefix, a.term);
    if (rc == 0 && a.tol >= 0 && !compare_within_tol(&res, a.tol)) {
        if (isnan(res.step_err_pct))
            cmd_errorf("compare", 0, "step time: the measured step is "
                       "empty, so its error is undefined (--tol %g)", a.tol);
        else
            cmd_errorf("compare", 0, "step time error %+.1f%% is beyond "
                       "--tol %g%%", res.step_err_pct, a.tol);
        rc = EXIT_CHECK_FAILED;
    }
    compare_timeline_free(&pred);
    compare_timeline_free(&meas);
    return rc;
fail:
    cmd_error("compare", cause, 0);
    free(cause);
    compare_timeline_free(&pred);
    compare_timeline_free(&meas);
    return rc;
}

const struct cmd_entry cmd_compare_entry = {
    .name = "compare",
    .usage = "PRED MEASURED [--tol PCT] [--plot PREFIX] [--term png|svg] "
             "[--format text|json]",
    .summary = "compare a predicted step with a measured one (trace or "
               "timeline)",
    .shortopts = ":h",
    .longopts = compare_options,
    .exec = cmd_compare,
    .help = cmd_compare_help,
};
