/*
 * cmd.h: the fsdpsim commands, one file each (cmd_*.c), each exporting its
 * entry, and what they share (cmd_common.c).
 *
 * Exit codes: 0 ok; 1 ran but a check failed; 2 usage or input error;
 * 3 system failure; 130 interrupted.
 */
#ifndef FSDPSIM_CMD_H
#define FSDPSIM_CMD_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "setup.h"

#define EXIT_CHECK_FAILED 1
#define EXIT_USAGE 2
#define EXIT_SYSTEM 3
/* Stopped by Ctrl-C, as a shell reports SIGINT (128 + 2). */
#define EXIT_INTERRUPTED 130

/*
 * A command, as its own file exports it (cmd_NAME_entry, tmux's
 * cmd_entry): the table of each program (sim/cli/main.c, real/main.c)
 * lists these, and dispatch, help and usage lines read them alone.
 */
struct cmd_entry {
    const char *name;
    const char *usage;      /* one line: options synopsis */
    const char *summary;    /* one line: what it does */
    /* The options cmd_getopt reads (getopt_long's two tables, the short
     * one starting with ':'); NULL for the commands that read the run
     * settings through setup_parse_args, which has its own. */
    const char *shortopts;
    const struct option *longopts;
    int (*exec)(int argc, char **argv);
    void (*help)(FILE *out);
};

extern const struct cmd_entry cmd_simulate_entry, cmd_schedule_entry;
extern const struct cmd_entry cmd_sweep_entry, cmd_merge_entry;
extern const struct cmd_entry cmd_tune_entry, cmd_plan_entry;
extern const struct cmd_entry cmd_report_entry, cmd_models_entry;
extern const struct cmd_entry cmd_topologies_entry, cmd_topology_entry;
extern const struct cmd_entry cmd_coll_entry, cmd_calibrate_entry;
extern const struct cmd_entry cmd_validate_entry, cmd_compare_entry;
extern const struct cmd_entry cmd_real_entry, cmd_bench_entry;

/*
 * Reading a command's options: getopt_long over the entry's tables with
 * getopt's own messages off, from ARGV[1]:
 *
 *     struct cmd_getopt g = CMD_GETOPT(&cmd_coll_entry, argc, argv);
 *     while ((c = cmd_getopt(&g)) != CMD_OPT_END)
 *         switch (c) { ... case CMD_OPT_BAD: return EXIT_USAGE; }
 *
 * then the operands are ARGV[optind..].  optarg and optind are getopt's.
 */
struct cmd_getopt {
    const struct cmd_entry *cmd;
    int argc;
    char **argv;
    bool started;
};
#define CMD_GETOPT(entry, argc, argv) {(entry), (argc), (argv), false}

/* What cmd_getopt returns besides an option's own code. */
enum {
    CMD_OPT_END = -1,       /* no options left */
    CMD_OPT_BAD = -2,       /* an option without its value or one the
                               command lacks: reported, exit EXIT_USAGE */
};
int cmd_getopt(struct cmd_getopt *g);

/* What a command's parser of its arguments returns to go on and run;
 * anything else is the exit status to stop with (0 after --help,
 * EXIT_USAGE after the message). */
#define CMD_RUN (-1)

/* The one report of a command line's shape errors, with CMD's usage
 * lines: "option 'WORD' needs a value", "unknown option 'WORD'" or
 * "unexpected argument 'WORD'" (setup_option_error's wording).  Returns
 * EXIT_USAGE. */
int cmd_option_error(const char *cmd, enum option_error e, const char *word);

/* After setup_parse_args (or setup_prepare, as SETUP_BAD_VALUE) failed
 * with ST: CAUSE as one line (with CMD's usage lines for SETUP_USAGE),
 * freed.  Returns EXIT_USAGE. */
int cmd_setup_error(const char *cmd, enum setup_status st, char *cause);
/* After parsing (and preparing) run R for command E ended in ST: CMD_RUN
 * to go on with R; else R is freed and this is the exit status, after
 * E's help (SETUP_HELP) or cmd_setup_error's message. */
int cmd_setup_done(const struct cmd_entry *e, struct run *r,
                   enum setup_status st, char *cause);

/* "fsdpsim: msg" on stderr, plus the usage hint for usage errors
 * (cmd_common.c). */
void cmd_error(const char *cmd, const char *msg, int usage_hint);
/* CAUSE (freed) as CMD's one-line error, for `return cmd_fail(...)`:
 * returns STATUS (EXIT_USAGE for bad input, EXIT_SYSTEM when a file or
 * a tool failed). */
int cmd_fail(const char *cmd, char *cause, int status);
/* cmd_error of a message formatted as printf does; returns EXIT_USAGE,
 * for a bad input's one line. */
int cmd_errorf(const char *cmd, int usage_hint, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* After a run that Ctrl-C stopped before it wrote anything: "fsdpsim:
 * interrupted; nothing written" on stderr.  Returns EXIT_INTERRUPTED. */
int cmd_interrupted(void);
/* After writing PATH with a writer that returned WRITE_RC (0, or -1 with
 * *CAUSE set): "wrote PATH" on standard output and 0, or *CAUSE as CMD's
 * one-line error and EXIT_SYSTEM; *CAUSE is freed and set to NULL.  The
 * one report of a written plot or report, so every command words it
 * alike. */
int cmd_wrote(const char *cmd, const char *path, int write_rc, char **cause);
/* The command named NAME, or NULL: each program's own table (sim/cli/main.c,
 * real/main.c). */
const struct cmd_entry *cmd_find(const char *name);
/* After a command: RC, or EXIT_SYSTEM with one line when standard output
 * could not be written (cmd_common.c). */
int cmd_finish_stdout(int rc);

/* Write the output files a run asked for (--trace, --timeline, --memory,
 * --metrics with the given writer), each atomically; 0, or EXIT_SYSTEM
 * after printing why one could not be written. */
struct run_config;
struct run_view;
int cmd_write_outputs(const char *cmd, const struct run_config *c,
                      const struct run_view *v,
                      void (*metrics)(const struct run_view *, FILE *));

#endif
