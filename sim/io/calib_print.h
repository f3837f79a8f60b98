/*
 * calib_print.h: `fsdpsim calibrate`'s report: each nccl-tests run's
 * table of measured and predicted times before and after the fit, and
 * the fitted [calibration] cells.
 */
#ifndef FSDPSIM_CALIB_PRINT_H
#define FSDPSIM_CALIB_PRINT_H

#include <stdio.h>

#include "calib.h"
#include "nccl_env.h"

/* Run R (read from PATH) size by size: measured, before and after the
 * fit with their errors, NCCL's choice; then the median errors over all
 * sizes and from 1 MiB. */
void calib_print_run(const struct calib_run *r, const char *path,
                     const struct nccl_config *nc, FILE *out);
/* The cells C fitted, named as their topology keys are. */
void calib_print_fits(const struct calib *c, FILE *out);

#endif
