/*
 * cmd_schedule.c: `fsdpsim schedule`, the op list one run issues.
 */
#include "cmd.h"
#include "setup.h"

#include <stdlib.h>
#include <string.h>

void
cmd_schedule_help(FILE *out)
{
    fprintf(out,
            "usage: fsdpsim schedule [options] [--format text|json]\n\n"
            "Print the schedule the simulator executes, and the real mode "
            "runs unchanged:\nevery op in host issue order with its stream "
            "(C compute, PU pre-unshard,\nU unshard, P post-backward, A "
            "all-reduce, HOST), process group, bytes,\nFLOPs, leaf range, "
            "buffer, memory category and dependencies.\nTakes the same "
            "options as simulate:\n\n");
    setup_print_options(out);
}

int
cmd_schedule(int argc, char **argv)
{
    struct run r;
    char *cause = NULL;
    int rc = setup_parse_args(&r, "schedule", argc, argv, &cause);
    if (rc == 1) {
        cmd_schedule_help(stdout);
        setup_free(&r);
        return 0;
    }
    if (rc == 0 && (r.cfg.trace_path || r.cfg.timeline_path
                    || r.cfg.memory_path || r.cfg.metrics_path)) {
        cause = strdup("--trace, --timeline, --memory and --metrics are "
                       "outputs of a simulation; use 'fsdpsim simulate' for "
                       "them");
        rc = -2;
    }
    if (rc == 0)
        rc = setup_prepare(&r, &cause) == 0 ? 0 : -2;
    if (rc != 0) {
        cmd_error("schedule", cause, rc == -1);
        free(cause);
        setup_free(&r);
        return EXIT_USAGE;
    }
    if (r.cfg.format == FORMAT_JSON)
        sched_print_json(r.sched, stdout);
    else
        sched_print_text(r.sched, stdout);
    setup_free(&r);
    return 0;
}
