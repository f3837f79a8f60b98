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

static int
usage_error(const char *msg)
{
    cmd_error("compare", msg, 1);
    return EXIT_USAGE;
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

static int
cmd_compare(int argc, char **argv)
{
    static const struct option opts[] = {
        {"tol", required_argument, NULL, 1000},
        {"plot", required_argument, NULL, 1001},
        {"term", required_argument, NULL, 1002},
        {"format", required_argument, NULL, 1003},
        {"pred-memory", required_argument, NULL, 1004},
        {"measured-memory", required_argument, NULL, 1005},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *prefix = NULL, *term = "png", *format = "text";
    const char *pred_mem = NULL, *meas_mem = NULL;
    double tol = -1;
    int c;
    char *msg = NULL;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 1000: {
            char *end;
            tol = strtod(optarg, &end);
            if (end == optarg || *end != '\0' || units_is_hex_float(optarg)
                || !(tol >= 0 && tol <= 1e6)) {
                /* A bad value, not a bad command line: one line, no
                 * usage. */
                msg = xasprintf("--tol: '%s' is not a percentage (e.g. "
                                "--tol 10)", optarg);
                cmd_error("compare", msg, 0);
                free(msg);
                return EXIT_USAGE;
            }
            break;
        }
        case 1001: prefix = optarg; break;
        case 1002: term = optarg; break;
        case 1003: format = optarg; break;
        case 1004: pred_mem = optarg; break;
        case 1005: meas_mem = optarg; break;
        case 'h':
            cmd_compare_help(stdout);
            return 0;
        default: {
            msg = xasprintf(c == ':' ? "option '%s' needs a value"
                                     : "unknown option '%s'",
                            argv[optind - 1]);
            int rc = usage_error(msg);
            free(msg);
            return rc;
        }
        }
    }
    if (argc - optind != 2)
        return usage_error(argc - optind < 2
                               ? "give two files: PRED MEASURED"
                               : "give two files only: PRED MEASURED");
    if (prefix != NULL && *prefix == '\0') {
        cmd_error("compare", "--plot: the prefix is empty (the plot would "
                  "be named -compare.png)", 0);
        return EXIT_USAGE;
    }
    if (strcmp(term, "png") != 0 && strcmp(term, "svg") != 0) {
        msg = xasprintf("--term: '%s' is not png or svg", term);
        cmd_error("compare", msg, 0);
        free(msg);
        return EXIT_USAGE;
    }
    if (strcmp(format, "text") != 0 && strcmp(format, "json") != 0) {
        msg = xasprintf("--format: '%s' is not text or json", format);
        cmd_error("compare", msg, 0);
        free(msg);
        return EXIT_USAGE;
    }
    const char *pred_path = argv[optind], *meas_path = argv[optind + 1];
    struct compare_timeline pred, meas;
    struct compare_result res;
    char *cause = NULL;
    int rc = EXIT_USAGE;
    memset(&meas, 0, sizeof meas);
    if (compare_load(pred_path, &pred, &cause) != 0) {
        memset(&pred, 0, sizeof pred);
        goto fail;
    }
    if (compare_load(meas_path, &meas, &cause) != 0)
        goto fail;
    if ((pred_mem
         && compare_read_memory(pred_mem, &pred.peak_mem_bytes, &cause) != 0)
        || (meas_mem
            && compare_read_memory(meas_mem, &meas.peak_mem_bytes, &cause)
                   != 0))
        goto fail;
    if (compare_run(&pred, &meas, pred_path, meas_path, &res, &cause) != 0)
        goto fail;
    if (strcmp(format, "json") == 0)
        compare_print_json(stdout, &pred, &meas, pred_path, meas_path, &res,
                           tol);
    else
        compare_print_text(stdout, &pred, &meas, pred_path, meas_path, &res);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cause = xasprintf("standard output: cannot write: %s",
                          strerror(errno ? errno : EIO));
        rc = EXIT_SYSTEM;
        goto fail;
    }
    rc = 0;
    if (prefix)
        rc = plot(&pred, &meas, pred_path, meas_path, prefix, term);
    if (rc == 0 && tol >= 0 && !compare_within_tol(&res, tol)) {
        msg = isnan(res.step_err_pct)
                  ? xasprintf("step time: the measured step is empty, so "
                              "its error is undefined (--tol %g)", tol)
                  : xasprintf("step time error %+.1f%% is beyond --tol %g%%",
                              res.step_err_pct, tol);
        cmd_error("compare", msg, 0);
        free(msg);
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
    .exec = cmd_compare,
    .help = cmd_compare_help,
};
