/*
 * main.c: fsdpsim's entry point and command table: each command's entry
 * comes from its own file (cmd.h).
 */
#include "cmd.h"
#include "output.h"
#include "runconf.h"
#include "xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int cmd_help(int argc, char **argv);
static int cmd_version(int argc, char **argv);

static const struct cmd_entry cmd_help_entry = {
    .name = "help",
    .usage = "[COMMAND]",
    .summary = "show help for fsdpsim or one command",
    .exec = cmd_help,
};

static const struct cmd_entry cmd_version_entry = {
    .name = "version",
    .usage = "",
    .summary = "print the version",
    .exec = cmd_version,
};

/* Every command, in the order 'fsdpsim help' lists them. */
static const struct cmd_entry *const cmd_table[] = {
    &cmd_simulate_entry, &cmd_schedule_entry, &cmd_sweep_entry,
    &cmd_merge_entry, &cmd_tune_entry, &cmd_plan_entry, &cmd_report_entry,
    &cmd_models_entry, &cmd_topologies_entry, &cmd_topology_entry,
    &cmd_coll_entry, &cmd_calibrate_entry, &cmd_validate_entry,
    &cmd_compare_entry, &cmd_real_entry, &cmd_bench_entry, &cmd_help_entry,
    &cmd_version_entry, NULL};

const struct cmd_entry *
cmd_find(const char *name)
{
    for (const struct cmd_entry *const *e = cmd_table; *e; e++)
        if (strcmp((*e)->name, name) == 0)
            return *e;
    return NULL;
}

static void
main_usage(FILE *out)
{
    fprintf(out, "usage: fsdpsim COMMAND [options]\n\n"
            "Predict how PyTorch FSDP training behaves on a cluster.\n\n"
            "commands:\n");
    for (const struct cmd_entry *const *e = cmd_table; *e; e++)
        fprintf(out, "  %-12s %s\n", (*e)->name, (*e)->summary);
    fprintf(out, "\nRun 'fsdpsim help COMMAND' for its options.  With no "
            "options, 'fsdpsim simulate'\nsimulates llama2-7b on one "
            "dgx-a100-80g node.\n");
}

/* NAME is no command: the message (the name cut to fit one short line)
 * and EXIT_USAGE. */
static int
unknown_command(const char *name)
{
    char msg[256];
    snprintf(msg, sizeof msg, "unknown command '%s'", name);
    cmd_error(NULL, msg, 1);
    return EXIT_USAGE;
}

static int
cmd_help(int argc, char **argv)
{
    if (argc < 2) {
        main_usage(stdout);
        return 0;
    }
    const struct cmd_entry *e = cmd_find(argv[1]);
    if (e == NULL)
        return unknown_command(argv[1]);
    if (e->help)
        e->help(stdout);
    else
        /* No space after the name when there are no operands (version):
         * the usage line is compared with the man page's SYNOPSIS. */
        printf("usage: fsdpsim %s%s%s\n%s\n", e->name,
               e->usage[0] != '\0' ? " " : "", e->usage, e->summary);
    return 0;
}

static int
cmd_version(int argc, char **argv)
{
    if (argc > 1) {
        char *msg = setup_option_error(OPTION_UNEXPECTED, argv[1]);
        cmd_errorf("version", 0, "%s (version takes none)", msg);
        free(msg);
        return EXIT_USAGE;
    }
    printf("fsdpsim %s\n", PACKAGE_VERSION);
    return 0;
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        main_usage(stderr);
        return EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0) {
        main_usage(stdout);
        return cmd_finish_stdout(0);
    }
    if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0)
        return cmd_finish_stdout(cmd_version(0, NULL));
    const struct cmd_entry *e = cmd_find(name);
    if (e == NULL)
        return unknown_command(name);
    return cmd_finish_stdout(e->exec(argc - 1, argv + 1));
}
