/*
 * tune_print.h: `fsdpsim tune`'s answer as people read it: the top
 * settings, FSDP against DDP, the winner as a simulate command line and
 * as PyTorch code, the throughput curve over min_num_params (text, the
 * plot reports/tune.gp draws) and the HTML report.
 */
#ifndef FSDPSIM_TUNE_PRINT_H
#define FSDPSIM_TUNE_PRINT_H

#include "tune.h"

#include <stdio.h>

/* Settings the report lists, and the text by default (--top). */
#define TUNE_DEFAULT_TOP 10

/* The report's title and the summary line naming the base run's model
 * and topology (caller frees both). */
void tune_headline(const struct tune_opts *o, const struct tune_result *r,
                   char **title, char **head);
/* R as text on OUT after HEAD: the TOP best settings, FSDP against DDP,
 * the winner as fsdpsim runs it and in PyTorch (*simulate, *code, caller
 * frees) and the curve over min_num_params.  0; 1 when no setting fits
 * (OUT says so); -1 with *cause when the winner no longer parses. */
int tune_print_results(const struct tune_opts *o, const struct tune_result *r,
                       const char *head, int top, char **simulate,
                       char **code, FILE *out, char **cause);
/* The curve into the image file OUT (TERM png or svg); 0, or -1 with
 * *cause. */
int tune_plot(const struct tune_result *r, const char *out, const char *term,
              char **cause);
/* The self-contained HTML report at PATH (TITLE, HEAD, the winner's
 * SIMULATE line and CODE as tune_print_results made them); 0, or -1 with
 * *cause (no file left). */
int tune_write_report(const struct tune_opts *o, const struct tune_result *r,
                      const char *title, const char *head,
                      const char *simulate, const char *code,
                      const char *path, char **cause);

#endif
