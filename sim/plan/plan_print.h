/*
 * plan_print.h: `fsdpsim plan`'s answer as people read it: the table,
 * verdicts and SimGrid finalists per GPU type as text, the plot of time
 * and cost against cluster size (reports/plan.gp) and the HTML report.
 */
#ifndef FSDPSIM_PLAN_PRINT_H
#define FSDPSIM_PLAN_PRINT_H

#include "plan.h"

#include <stdio.h>

/* R as text on OUT, headed by the plan of MODEL on O's tokens. */
void plan_print_text(const struct plan_opts *o, const struct plan_result *r,
                     const char *model, FILE *out);
/* The plot into the image file OUT (TERM png or svg); 0, or -1 with
 * *cause. */
int plan_plot(const struct plan_opts *o, const struct plan_result *r,
              const char *out, const char *term, char **cause);
/* The self-contained HTML report at PATH, COMMAND_LINE shown as run;
 * 0, or -1 with *cause (no file left). */
int plan_write_report(const struct plan_opts *o, const struct plan_result *r,
                      const char *model, const char *command_line,
                      const char *path, char **cause);

#endif
