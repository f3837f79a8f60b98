/*
 * cmd_report.c: `fsdpsim report`, plots from the .dat files of a run.
 *
 * The gnuplot scripts of reports/ are built into the binary; each is
 * written to a temporary file and run as `gnuplot -c SCRIPT DATA OUT TERM`,
 * so the command works before installation and the scripts stay usable by
 * hand.  Plots are written under a temporary name and renamed when gnuplot
 * succeeds.
 */
#define _POSIX_C_SOURCE 200809L
#include "cmd.h"
#include "atomic_file.h"
#include "gnuplot.h"
#include "report_dat.h"
#include "report_html.h"
#include "textfile.h"
#include "xalloc.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


static void
cmd_report_help(FILE *out)
{
    fprintf(out,
            "usage: fsdpsim report --timeline FILE --memory FILE "
            "[--out PREFIX] [--term png|svg]\n"
            "       fsdpsim report --html FILE.html --timeline FILE "
            "--memory FILE\n\n"
            "Plot the files written by 'fsdpsim simulate --timeline FILE "
            "--memory FILE'\nwith gnuplot: PREFIX-timeline.png (a Gantt chart "
            "per stream) and\nPREFIX-memory.png (allocated, reserved and each "
            "category over time).\nEither input may be given alone.  PREFIX "
            "defaults to 'fsdpsim'.\nWith --html, both plots go into one "
            "self-contained HTML page instead (SVG\ninlined); simulate, "
            "sweep, tune and plan also write such a page themselves\nwith "
            "--report FILE.html.\n\n"
            "options:\n"
            "  --timeline FILE      timeline .dat from simulate\n"
            "  --memory FILE        memory .dat from simulate\n"
            "  --out PREFIX         output file prefix (default fsdpsim)\n"
            "  --term png|svg       image format (default png)\n"
            "  --html FILE.html     one HTML page with both plots\n"
            "  -h, --help           show this help\n\n"
            "exit status: 0 ok, 2 bad input, 3 gnuplot missing or failed.\n");
}

/* A run writes a few MiB at most; the bound keeps /dev/zero-like
 * mistakes from being read without end (devices and FIFOs are refused
 * anyway). */
#define REPORT_MAX_DAT_BYTES ((size_t)256 << 20)

/* 0, or EXIT_USAGE with one message: is PATH the .dat KIND (0 timeline,
 * 1 memory) says?  *last_us: the latest time it holds, for the plots' one
 * time unit. */
static int
check_dat(const char *path, enum report_dat_kind kind, double *last_us)
{
    char *msg = NULL, *why = NULL;
    const char *flag = report_dat_flag(kind);
    char *hint = xasprintf("is it %s from fsdpsim simulate?",
                           report_dat_what(kind));
    char *text = textfile_load(path, REPORT_MAX_DAT_BYTES, hint, &why);
    free(hint);
    if (text == NULL) {
        msg = xasprintf("%s %s", flag, why);
        free(why);
    } else {
        report_dat_check(text, kind, path, last_us, &msg);
    }
    free(text);
    if (msg == NULL)
        return 0;
    return cmd_fail("report", msg, EXIT_USAGE);
}

/* Run one embedded script; 0 ok, 2 bad input, 3 system failure. */
static int
plot(const char *script_name, const char *data, const char *out,
     const char *term, struct plot_time_base tb)
{
    const char *args[] = {data, GNUPLOT_OUT, term, tb.per_us, tb.unit, NULL};
    char *cause = NULL;
    if (gnuplot_run(script_name, args, out, &cause) != 0)
        return cmd_fail("report", cause, EXIT_SYSTEM);
    return 0;
}

/* Both plots in one page; 0, 2 or 3 as plot(). */
static int
html_report(const char *timeline, const char *memory, const char *path,
            struct plot_time_base tb)
{
    const char *data[] = {timeline, memory};
    const char *script[] = {"timeline", "memory"};
    const char *caption[] = {
        "Timeline per CUDA stream (C compute, U all-gather, P "
        "reduce-scatter, A all-reduce).",
        "Device memory per GPU over time: reserved, allocated and each "
        "category."};
    struct html h;
    char *cause = NULL;
    int rc = html_open(&h, path, "fsdpsim report", &cause);
    if (rc == 0)
        html_p(&h, "Both plots share one time axis: simulated time since "
               "the run's start, in %s.", tb.unit);
    for (int i = 0; i < 2 && rc == 0; i++) {
        if (data[i] == NULL)
            continue;
        html_h2(&h, script[i]);
        html_p(&h, "From %s.", data[i]);
        const char *args[] = {data[i], GNUPLOT_OUT, "svg", tb.per_us,
                              tb.unit, NULL};
        if ((rc = html_plot(&h, script[i], args, caption[i], &cause)) != 0)
            html_abort(&h);
    }
    if (rc == 0)
        rc = html_commit(&h, &cause);
    if (rc != 0)
        return cmd_fail("report", cause, EXIT_SYSTEM);
    printf("%s\n", path);
    return 0;
}

static const struct option report_options[] = {
    {"timeline", required_argument, NULL, 't'},
    {"memory", required_argument, NULL, 'm'},
    {"out", required_argument, NULL, 'o'},
    {"term", required_argument, NULL, 'T'},
    {"html", required_argument, NULL, 'H'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0}};

struct report_args {
    const char *timeline, *memory, *prefix, *term, *html;
};

/* ARGV into *A: CMD_RUN, or the exit status after the help or the
 * message. */
static int
parse_report_args(int argc, char **argv, struct report_args *a)
{
    *a = (struct report_args){.prefix = "fsdpsim", .term = "png"};
    struct cmd_getopt g = CMD_GETOPT(&cmd_report_entry, argc, argv);
    int c;
    while ((c = cmd_getopt(&g)) != CMD_OPT_END) {
        switch (c) {
        case 't': a->timeline = optarg; break;
        case 'm': a->memory = optarg; break;
        case 'o': a->prefix = optarg; break;
        case 'T': a->term = optarg; break;
        case 'H': a->html = optarg; break;
        case 'h':
            cmd_report_help(stdout);
            return 0;
        default:
            return EXIT_USAGE;
        }
    }
    if (optind < argc)
        return cmd_option_error("report", OPTION_UNEXPECTED, argv[optind]);
    if (strcmp(a->term, "png") != 0 && strcmp(a->term, "svg") != 0) {
        return cmd_errorf("report", 0, "--term: '%s' is not png or svg",
                          a->term);
    }
    if (*a->prefix == '\0' || (a->html && *a->html == '\0')) {
        cmd_error("report", a->html && *a->html == '\0' ? "--html: the file "
                  "name is empty" : "--out: the prefix is empty (plots would "
                  "be named -timeline.png)", 0);
        return EXIT_USAGE;
    }
    if (!a->timeline && !a->memory) {
        cmd_error("report", "nothing to plot: give --timeline FILE and/or "
                  "--memory FILE (written by fsdpsim simulate)", 1);
        return EXIT_USAGE;
    }
    return CMD_RUN;
}

/* The plots of A as image files, in time base TB: 0, 2 or 3 as plot().
 * Both plots or neither: the timeline's, once drawn, stays a file the
 * signal handler removes until the memory plot is drawn too, and goes if
 * that fails; the names are printed once both exist. */
static int
image_report(const struct report_args *a, struct plot_time_base tb)
{
    char *tl_out = a->timeline ? xasprintf("%s-timeline.%s", a->prefix,
                                           a->term)
                               : NULL;
    char *mem_out = a->memory ? xasprintf("%s-memory.%s", a->prefix, a->term)
                              : NULL;
    int rc = tl_out ? plot("timeline", a->timeline, tl_out, a->term, tb) : 0;
    if (rc == 0 && tl_out && mem_out)
        atomic_file_track(tl_out);
    if (rc == 0 && mem_out) {
        rc = plot("memory", a->memory, mem_out, a->term, tb);
        if (tl_out && rc != 0)
            atomic_file_remove(tl_out);
        else if (tl_out)
            atomic_file_untrack(tl_out);
    }
    if (rc == 0) {
        if (tl_out)
            printf("%s\n", tl_out);
        if (mem_out)
            printf("%s\n", mem_out);
    }
    free(tl_out);
    free(mem_out);
    return rc;
}

static int
cmd_report(int argc, char **argv)
{
    struct report_args a;
    int rc = parse_report_args(argc, argv, &a);
    if (rc != CMD_RUN)
        return rc;
    /* Both inputs are checked before anything is drawn, and give the
     * span from which the plots' one time unit is chosen. */
    double last_us = 0;
    if (a.timeline
        && check_dat(a.timeline, REPORT_DAT_TIMELINE, &last_us) != 0)
        return EXIT_USAGE;
    if (a.memory && check_dat(a.memory, REPORT_DAT_MEMORY, &last_us) != 0)
        return EXIT_USAGE;
    struct plot_time_base tb = gnuplot_time_base(last_us);
    if (a.html)
        return html_report(a.timeline, a.memory, a.html, tb);
    return image_report(&a, tb);
}

const struct cmd_entry cmd_report_entry = {
    .name = "report",
    .usage = "--timeline FILE --memory FILE [--out PREFIX] [--term png|svg]",
    .summary = "plot a timeline and memory series with gnuplot",
    .shortopts = ":ht:m:o:T:H:",
    .longopts = report_options,
    .exec = cmd_report,
    .help = cmd_report_help,
};
