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

/* A short label for an op ("allgather u3"), into buf. */
const char *output_op_label(const struct sched *s, const struct sched_op *op,
                            char *buf, size_t len);

#endif
