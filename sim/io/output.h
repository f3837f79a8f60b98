/*
 * output.h: what `fsdpsim simulate` writes: the summary (text or JSON) on
 * stdout, and on request a Chrome trace, a timeline .dat and a memory .dat.
 * Every writer is deterministic: the same run gives the same bytes.
 */
#ifndef FSDPSIM_OUTPUT_H
#define FSDPSIM_OUTPUT_H

#include <stdio.h>

#include "runconf.h"
#include "engine.h"
#include "metrics.h"
#include "model.h"
#include "sched.h"
#include "topo.h"

struct run_view {
    const struct run_config *cfg;
    const struct model *model;
    const struct topo *topo;
    const struct sched *sched;
    const struct engine_result *res;
    const struct metrics *met;
    const char *command_line;   /* for the .dat headers */
};

void output_summary_text(const struct run_view *v, FILE *out);
void output_summary_json(const struct run_view *v, FILE *out);
void output_trace(const struct run_view *v, FILE *out);
void output_timeline_dat(const struct run_view *v, FILE *out);
void output_memory_dat(const struct run_view *v, FILE *out);

/* Prometheus text format for n runs (e.g. predicted and measured). */
void output_metrics(const struct run_view *const *views,
                    const char *const *sources, int n, FILE *out);

/* Prometheus text for one predicted run (a writer for output_write_file). */
void output_metrics_predicted(const struct run_view *v, FILE *out);

/* Write one output file atomically with the given writer; -1 with *cause
 * (caller frees) when it cannot be written. */
int output_write_file(const char *path,
                      void (*writer)(const struct run_view *, FILE *),
                      const struct run_view *v, char **cause);

/* A short label for an op ("allgather u3"), into buf. */
const char *output_op_label(const struct sched *s, const struct sched_op *op,
                            char *buf, size_t len);

#endif
