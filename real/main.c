/*
 * main.c: fsdpsim-real's entry point.  fsdpsim never links CUDA; its
 * `real run` and `real bench` exec this program as `fsdpsim-real real
 * ...` (sim/cli/cmd_real.c), which links the core library, the real command
 * and the CUDA sources, and nothing else of the CLI.
 */
#include "cmd.h"

#include <stdio.h>
#include <string.h>

/* The one command fsdpsim-real runs, from its own file as in fsdpsim. */
const struct cmd_entry *
cmd_find(const char *name)
{
    return strcmp(name, cmd_real_entry.name) == 0 ? &cmd_real_entry : NULL;
}

int
main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "real") != 0) {
        cmd_error(NULL, "fsdpsim-real runs 'real run' and 'real bench' "
                  "for fsdpsim: use 'fsdpsim real ...'", 0);
        return EXIT_USAGE;
    }
    return cmd_finish_stdout(cmd_real_entry.exec(argc - 1, argv + 1));
}
