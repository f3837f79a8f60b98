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
#include "gnuplot.h"
#include "xalloc.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


void
cmd_report_help(FILE *out)
{
    fprintf(out,
            "usage: fsdpsim report --timeline FILE --memory FILE "
            "[--out PREFIX] [--term png|svg]\n\n"
            "Plot the files written by 'fsdpsim simulate --timeline FILE "
            "--memory FILE'\nwith gnuplot: PREFIX-timeline.png (a Gantt chart "
            "per stream) and\nPREFIX-memory.png (allocated, reserved and each "
            "category over time).\nEither input may be given alone.  PREFIX "
            "defaults to 'fsdpsim'.\n\n"
            "options:\n"
            "  --timeline FILE      timeline .dat from simulate\n"
            "  --memory FILE        memory .dat from simulate\n"
            "  --out PREFIX         output file prefix (default fsdpsim)\n"
            "  --term png|svg       image format (default png)\n"
            "  -h, --help           show this help\n\n"
            "exit status: 0 ok, 2 bad input, 3 gnuplot missing or failed.\n");
}

/* Run one embedded script; 0 ok, 2 bad input, 3 system failure. */
static int
plot(const char *script_name, const char *data, const char *out,
     const char *term)
{
    if (access(data, R_OK) != 0) {
        char *msg = xasprintf("%s: cannot read: %s", data, strerror(errno));
        cmd_error("report", msg, 0);
        free(msg);
        return EXIT_USAGE;
    }
    const char *args[] = {data, GNUPLOT_OUT, term, NULL};
    char *cause = NULL;
    if (gnuplot_run(script_name, args, out, &cause) != 0) {
        cmd_error("report", cause, 0);
        free(cause);
        return EXIT_SYSTEM;
    }
    printf("%s\n", out);
    return 0;
}

int
cmd_report(int argc, char **argv)
{
    static const struct option opts[] = {
        {"timeline", required_argument, NULL, 't'},
        {"memory", required_argument, NULL, 'm'},
        {"out", required_argument, NULL, 'o'},
        {"term", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *timeline = NULL, *memory = NULL, *prefix = "fsdpsim";
    const char *term = "png";
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":ht:m:o:T:", opts, NULL)) != -1) {
        switch (c) {
        case 't': timeline = optarg; break;
        case 'm': memory = optarg; break;
        case 'o': prefix = optarg; break;
        case 'T': term = optarg; break;
        case 'h':
            cmd_report_help(stdout);
            return 0;
        default: {
            char *msg = xasprintf(c == ':' ? "option '%s' needs a value"
                                           : "unknown option '%s'",
                                  argv[optind - 1]);
            cmd_error("report", msg, 1);
            free(msg);
            return EXIT_USAGE;
        }
        }
    }
    if (optind < argc) {
        char *msg = xasprintf("unexpected argument '%s'", argv[optind]);
        cmd_error("report", msg, 1);
        free(msg);
        return EXIT_USAGE;
    }
    if (strcmp(term, "png") != 0 && strcmp(term, "svg") != 0) {
        char *msg = xasprintf("--term: '%s' is not png or svg", term);
        cmd_error("report", msg, 0);
        free(msg);
        return EXIT_USAGE;
    }
    if (!timeline && !memory) {
        cmd_error("report", "nothing to plot: give --timeline FILE and/or "
                  "--memory FILE (written by fsdpsim simulate)", 1);
        return EXIT_USAGE;
    }
    int rc = 0;
    if (timeline) {
        char *out = xasprintf("%s-timeline.%s", prefix, term);
        rc = plot("timeline", timeline, out, term);
        free(out);
    }
    if (!rc && memory) {
        char *out = xasprintf("%s-memory.%s", prefix, term);
        rc = plot("memory", memory, out, term);
        free(out);
    }
    return rc;
}
