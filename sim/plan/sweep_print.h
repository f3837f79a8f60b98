/*
 * sweep_print.h: a sweep's results for people: the plot of one metric
 * against the first varied key, one line per value of the second, and
 * the HTML page with that plot and a table of every point's value.
 */
#ifndef FSDPSIM_SWEEP_PRINT_H
#define FSDPSIM_SWEEP_PRINT_H

#include "sweep.h"

#include <stdint.h>

/* Y[p] is METRIC at point p of SW (NAN: none), for the first N_ROWS
 * points. */

/* The plot into the image file OUT (TERM png or svg); 0, or -1 with
 * *cause. */
int sweep_plot(const struct sweep *sw, const double *y, int64_t n_rows,
               const char *metric, const char *out, const char *term,
               char **cause);
/* The self-contained HTML report at PATH, COMMAND_LINE shown as run;
 * 0, or -1 with *cause (no file left). */
int sweep_write_report(const struct sweep *sw, const double *y,
                       int64_t n_rows, const char *metric, const char *path,
                       const char *command_line, char **cause);

#endif
