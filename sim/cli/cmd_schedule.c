/*
 * cmd_schedule.c: `fsdpsim schedule`, the op list one run issues.
 */
#include "cmd.h"
#include "setup.h"

#include <stdlib.h>
#include <string.h>

static void
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
    setup_print_options(out, false);
}

static int
cmd_schedule(int argc, char **argv)
{
    struct run r;
    char *cause = NULL;
    enum setup_status st = setup_parse_args(&r, "schedule", argc, argv,
                                            &cause);
    if (st == SETUP_OK && (r.cfg.trace_path || r.cfg.timeline_path
                    || r.cfg.memory_path || r.cfg.metrics_path)) {
        cause = strdup("--trace, --timeline, --memory and --metrics are "
                       "outputs of a simulation; use 'fsdpsim simulate' for "
                       "them");
        st = SETUP_BAD_VALUE;
    }
    if (st == SETUP_OK && setup_prepare(&r, &cause) != 0)
        st = SETUP_BAD_VALUE;
    int rc = cmd_setup_done(&cmd_schedule_entry, &r, st, cause);
    if (rc != CMD_RUN)
        return rc;
    if (r.cfg.format == FORMAT_JSON)
        sched_print_json(r.sched, stdout);
    else
        sched_print_text(r.sched, stdout);
    setup_free(&r);
    return 0;
}

const struct cmd_entry cmd_schedule_entry = {
    .name = "schedule",
    .usage = "[options] [--format text|json]",
    .summary = "print the op list one step issues (streams, groups, deps)",
    .exec = cmd_schedule,
    .help = cmd_schedule_help,
};
