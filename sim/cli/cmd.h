/*
 * cmd.h: the fsdpsim commands, one file each (cmd_*.c), in one table.
 *
 * Exit codes: 0 ok; 1 ran but a check failed; 2 usage or input error;
 * 3 system failure; 130 interrupted.
 */
#ifndef FSDPSIM_CMD_H
#define FSDPSIM_CMD_H

#include <stdio.h>

#define EXIT_CHECK_FAILED 1
#define EXIT_USAGE 2
#define EXIT_SYSTEM 3
/* Stopped by Ctrl-C, as a shell reports SIGINT (128 + 2). */
#define EXIT_INTERRUPTED 130

struct cmd_entry {
    const char *name;
    const char *usage;      /* one line: options synopsis */
    const char *summary;    /* one line: what it does */
    int (*exec)(int argc, char **argv);
    void (*help)(FILE *out);
};

extern const struct cmd_entry cmd_table[];

int cmd_simulate(int argc, char **argv);
int cmd_schedule(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_models(int argc, char **argv);
int cmd_topologies(int argc, char **argv);
int cmd_topology(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_coll(int argc, char **argv);
int cmd_real(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_plan(int argc, char **argv);

void cmd_simulate_help(FILE *out);
void cmd_schedule_help(FILE *out);
void cmd_report_help(FILE *out);
void cmd_models_help(FILE *out);
void cmd_topologies_help(FILE *out);
void cmd_topology_help(FILE *out);
void cmd_bench_help(FILE *out);
void cmd_coll_help(FILE *out);
void cmd_real_help(FILE *out);
void cmd_calibrate_help(FILE *out);
void cmd_validate_help(FILE *out);
void cmd_compare_help(FILE *out);
void cmd_sweep_help(FILE *out);
void cmd_merge_help(FILE *out);
void cmd_tune_help(FILE *out);
void cmd_plan_help(FILE *out);

/* "fsdpsim: msg" on stderr, plus the usage hint for usage errors
 * (cmd_common.c). */
void cmd_error(const char *cmd, const char *msg, int usage_hint);
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
