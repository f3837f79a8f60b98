/*
 * gnuplot.h: running one of the built-in report scripts.
 *
 * The scripts of reports/ are compiled into the binary (builtin.h); one is
 * written to a temporary file and run as `gnuplot -c SCRIPT ARGS...`.  The
 * image is written under a temporary name and renamed to its final name
 * only when gnuplot succeeds, so a failed plot never leaves a file that
 * looks complete.
 */
#ifndef FSDPSIM_GNUPLOT_H
#define FSDPSIM_GNUPLOT_H

/* Run reports/NAME.gp with args (NULL-terminated); an argument equal to
 * GNUPLOT_OUT stands for the image being written, whose final name is out.
 * 0, or -1 with *cause (caller frees); *system_error tells a missing or
 * failing gnuplot (exit 3) from bad input. */
#define GNUPLOT_OUT "@OUT@"
int gnuplot_run(const char *name, const char *const *args, const char *out,
                char **cause);

/* One time unit for every plot of a report (timeline and memory alike),
 * chosen once from the span the plots cover, in microseconds: us below
 * 2 ms, ms below 20 s, s above, so that the axis reads 0 to a few
 * thousand.  per_us is the divisor from the .dat files' microseconds, as
 * the scripts take it (their 4th and 5th arguments: PER_US UNIT). */
struct plot_time_base {
    const char *unit;
    const char *per_us;
};
struct plot_time_base gnuplot_time_base(double span_us);

/* A temporary data file for a plot: open for writing under TMPDIR, its
 * path in *path (gnuplot_data_remove).  NULL with *cause. */
#include <stdio.h>
FILE *gnuplot_data_open(const char *what, char **path, char **cause);
/* Close it; -1 with *cause (the file removed, *path freed and NULL) when
 * a write failed. */
int gnuplot_data_close(FILE *f, char **path, char **cause);
/* Unlink and free it (NULL: nothing).  Until then SIGINT, SIGTERM and
 * SIGHUP remove it, as they do the script, the plot's temporary name and
 * the gnuplot child (atomic_file.h). */
void gnuplot_data_remove(char *path);

#endif
