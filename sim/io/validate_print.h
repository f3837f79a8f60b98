/*
 * validate_print.h: `fsdpsim validate --data`'s report: per published
 * collective run a table of measured, predicted (uncalibrated) and
 * held-out calibrated times with their signed errors, then median
 * |error|s.  Errors are 100 (predicted - measured) / measured.
 */
#ifndef FSDPSIM_VALIDATE_PRINT_H
#define FSDPSIM_VALIDATE_PRINT_H

#include <stddef.h>
#include <stdio.h>

#include "coll.h"
#include "published.h"

/* The first lines: the file DATA, its N_RUNS runs, NCCL VERSION (as
 * nccl_config's: 228 for 2.28), and what the columns mean. */
void validate_print_title(const char *data, int n_runs, int version,
                          FILE *out);
/* Run V's heading (on built-in topology TOPOLOGY) and column names. */
void validate_print_run_header(const struct published_run *v,
                               const char *topology, FILE *out);
/* Point P: R uncalibrated (error ERR), H held-out calibrated (HERR). */
void validate_print_point(const struct published_point *p,
                          const struct coll_result *r, double err,
                          const struct coll_result *h, double herr,
                          FILE *out);
/* "# WHAT median |error|: ..." over the N_IN errors IN (1 MiB..8 GiB)
 * and the N_ALL errors ALL (every size). */
void validate_print_medians(const char *what, const double *in, size_t n_in,
                            const double *all, size_t n_all, FILE *out);

#endif
