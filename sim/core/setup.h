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

/* How parsing a command line ended.  Both errors are exit 2 (cmd.h); they
 * differ in what the message needs: a usage error names the option's
 * syntax, so the command adds its usage lines (cmd_setup_error). */
enum setup_status {
    SETUP_OK = 0,
    SETUP_HELP,         /* -h or --help: the caller prints its help */
    SETUP_USAGE,        /* an unknown option, a missing value, a stray
                           argument */
    SETUP_BAD_VALUE,    /* a bad value in a flag, the run file or NCCL's
                           environment */
};

/* Parse options into R.  On SETUP_USAGE and SETUP_BAD_VALUE *cause is set
 * (caller frees); R is set up for setup_free whatever the status. */
enum setup_status setup_parse_args(struct run *r, const char *cmd, int argc,
                                   char **argv, char **cause);
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

/* A command line's shape errors. */
enum option_error {
    OPTION_NEEDS_VALUE,         /* getopt_long's ':' */
    OPTION_UNKNOWN,             /* its '?' */
    OPTION_UNEXPECTED,          /* an operand the command takes none of */
};
/* Their one wording, for this file's options and every command's:
 * "option 'WORD' needs a value", "unknown option 'WORD'" or "unexpected
 * argument 'WORD'", WORD as written.  Caller frees. */
char *setup_option_error(enum option_error e, const char *word);
/* The option getopt_long just refused (it returned ':' or '?'): a long
 * option is the word it passed; a short one may sit inside a word ("-j1":
 * getopt stops at 'j' before moving past it), so it is named by optopt,
 * written into BUF. */
const char *setup_refused_option(char *const *argv, char buf[3]);

/* ARGV's ARGC words joined by single spaces.  Caller frees. */
char *setup_join_args(int argc, char *const *argv);

/* Print the option reference (for help): every run setting, and the
 * output files (--trace, --timeline, --memory, --metrics) only
 * WITH_OUTPUT_FILES, for the commands that write them (simulate, real
 * run); schedule, sweep, tune and plan refuse them and bench writes none. */
void setup_print_options(FILE *out, bool with_output_files);

#endif
