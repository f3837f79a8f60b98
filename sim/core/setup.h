/*
 * setup.h: from a command line to a ready-to-run schedule.
 *
 * Every command that simulates (simulate, schedule, and later sweep and
 * real) parses the same options and builds the schedule through these
 * functions, so the simulator and the real executor can never disagree on
 * what a command line means.
 */
#ifndef FSDPSIM_SETUP_H
#define FSDPSIM_SETUP_H

#include "runconf.h"
#include "model.h"
#include "nccl_env.h"
#include "sched.h"
#include "topo.h"
#include "wrap.h"

struct model_cache;

struct run {
    struct run_config cfg;
    const struct model *model;  /* own_model, or one of models' */
    struct model *own_model;    /* loaded for this run alone */
    struct model_cache *models; /* set before setup_prepare: share the
                                   models of a sweep's points (borrowed) */
    struct topo *topo;
    struct wrap_plan plan;
    struct sched *sched;
    struct nccl_config nccl;
    char *command_line;         /* for output headers */
};

/* Parse options.  Returns 0 on success, 1 when --help was printed, -1 on a
 * usage error (an unknown option, a missing value, a stray argument: the
 * caller adds the usage lines), -2 on a bad value in a flag, the run file
 * or NCCL's environment; on -1 and -2 *cause is set (caller frees). */
int setup_parse_args(struct run *r, const char *cmd, int argc, char **argv,
                     char **cause);
/* Load the model and topology, apply overrides, validate, wrap and build
 * the schedule.  -1 with *cause on bad input. */
int setup_prepare(struct run *r, char **cause);
/* setup_prepare in two halves: everything up to the wrap plan, then
 * (re)building the schedule from r->cfg (steady.c builds one with fewer
 * micro-batches first, or none when it knows the summary already).  -1
 * with *cause. */
int setup_prepare_plan(struct run *r, char **cause);
int setup_build_sched(struct run *r, char **cause);
void setup_free(struct run *r);

/* ARGV's ARGC words joined by single spaces.  Caller frees. */
char *setup_join_args(int argc, char *const *argv);

/* Print the option reference (for help). */
void setup_print_options(FILE *out);

#endif
