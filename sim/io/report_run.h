/*
 * report_run.h: one simulated run as sections of an HTML report: the
 * summary simulate prints, the timeline per stream and memory by
 * category over the step (reports/timeline.gp and memory.gp as SVG).
 */
#ifndef FSDPSIM_REPORT_RUN_H
#define FSDPSIM_REPORT_RUN_H

#include "output.h"
#include "report_html.h"

/* Append the sections for a run already simulated.  -1 with *cause when
 * a temporary file or gnuplot fails. */
int report_run_view(struct html *h, const struct run_view *v, char **cause);
/* Simulate a simulate command line (argv[0] the command's name), then
 * append as above.  -1 with *cause. */
int report_run_argv(struct html *h, int argc, char **argv, char **cause);

#endif
