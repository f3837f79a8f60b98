/*
 * main.c: fsdpsim-real's entry point.  fsdpsim never links CUDA; its
 * `real run` and `real bench` exec this program as `fsdpsim-real real
 * ...` (sim/cli/cmd_real.c), which links the core library, the real command
 * and the CUDA sources, and nothing else of the CLI.
 */
#include "cmd.h"

#include <stdio.h>
#include <string.h>

static const struct cmd_entry real_table[] = {
    {"real", "run [simulate options] [--dry-run] | bench [options]",
     "run the same schedule on this node's GPUs and time it", cmd_real,
     cmd_real_help},
    {NULL, NULL, NULL, NULL, NULL}};

const struct cmd_entry *
cmd_find(const char *name)
{
    for (const struct cmd_entry *e = real_table; e->name; e++)
        if (strcmp(e->name, name) == 0)
            return e;
    return NULL;
}

int
main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "real") != 0) {
        cmd_error(NULL, "fsdpsim-real runs 'real run' and 'real bench' "
                  "for fsdpsim: use 'fsdpsim real ...'", 0);
        return EXIT_USAGE;
    }
    return cmd_finish_stdout(cmd_real(argc - 1, argv + 1));
}
