/*
 * cmd_simulate.c: `fsdpsim simulate`, the main job.
 */
#include "cmd.h"
#include "atomic_file.h"
#include "engine.h"
#include "metrics.h"
#include "net.h"
#include "output.h"
#include "report_run.h"
#include "setup.h"
#include "steady.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

static void
cmd_simulate_help(FILE *out)
{
    fprintf(out,
            "usage: fsdpsim simulate [options]\n\n"
            "Simulate FSDP training steps of a model on a cluster and print "
            "the step time,\nthroughput, MFU, all-gather / reduce-scatter "
            "time, how much of it is exposed,\nand the per-GPU memory peak "
            "with its breakdown.  Options use PyTorch's names\n(dashes for "
            "underscores); a run file (--config) holds the same keys.\n\n"
            "options:\n");
    setup_print_options(out, true);
    fprintf(out, "  %-40s %s\n", "--report FILE.html",
            "write a self-contained HTML report (summary, timeline, "
            "memory)");
    fprintf(out, "\nexit status: 0 ok (a run that does not fit in memory is "
            "a result: see 'fits'),\n2 bad input (one message on stderr), "
            "3 an output file could not be written.\n");
}


/* --report FILE.html is taken out of argv (it is not a run setting, so
 * it stays out of run files and sweeps); *path is NULL without it, and
 * "" when its value is missing. */
static int
take_report(int *argc, char **argv, const char **path)
{
    *path = NULL;
    int n = 0;
    for (int i = 0; i < *argc; i++) {
        if (strncmp(argv[i], "--report=", 9) == 0)
            *path = argv[i] + 9;
        else if (strcmp(argv[i], "--report") == 0)
            *path = i + 1 < *argc ? argv[++i] : "";
        else
            argv[n++] = argv[i];
    }
    argv[n] = NULL;
    *argc = n;
    return *path && **path == '\0' ? -1 : 0;
}

static int
write_report(const struct run_view *v, const char *path)
{
    struct html h;
    char *cause = NULL;
    char *title = xasprintf("fsdpsim simulate: %s on %d x %s",
                            v->model->name, v->topo->nodes, v->topo->name);
    int rc = html_open(&h, path, title, &cause);
    free(title);
    if (rc == 0) {
        html_p(&h, "Command: fsdpsim %s", v->command_line);
        if (report_run_view(&h, v, &cause) != 0) {
            html_abort(&h);
            rc = -1;
        } else {
            rc = html_commit(&h, &cause);
        }
    }
    if (rc != 0)
        return cmd_fail("simulate", cause, EXIT_SYSTEM);
    return 0;
}

static int
cmd_simulate(int argc, char **argv)
{
    struct run r;
    char *cause = NULL;
    const char *report;
    if (take_report(&argc, argv, &report) != 0) {
        char *msg = setup_option_error(OPTION_NEEDS_VALUE, "--report");
        cmd_errorf("simulate", 1, "%s (the HTML file to write)", msg);
        free(msg);
        return EXIT_USAGE;
    }
    enum setup_status st = setup_parse_args(&r, "simulate", argc, argv,
                                            &cause);
    if (st == SETUP_OK && report) {
        /* The page would replace one of the other outputs, or they it. */
        const char *const other[] = {r.cfg.trace_path, r.cfg.timeline_path,
                                     r.cfg.memory_path, r.cfg.metrics_path};
        for (int i = 0; i < 4 && st == SETUP_OK; i++)
            if (other[i] && strcmp(other[i], report) == 0) {
                cause = xasprintf("--report and another output both name "
                                  "%s (give two files)", report);
                st = SETUP_BAD_VALUE;
            }
    }
    /* The JSON summary alone needs no op's times: a long accumulation
     * step is counted from a short one (steady.h). */
    int summary_only = st == SETUP_OK && r.cfg.format == FORMAT_JSON && !report
                       && !r.cfg.trace_path && !r.cfg.timeline_path
                       && !r.cfg.memory_path && !r.cfg.metrics_path;
    struct sim_result nr;
    struct metrics met;
    int steady;
    if (summary_only
        && steady_run(&r, NULL, NULL, &nr, &met, &steady, &cause) != 0)
        st = SETUP_BAD_VALUE;
    else if (!summary_only && st == SETUP_OK
             && setup_prepare(&r, &cause) != 0)
        st = SETUP_BAD_VALUE;
    int rc = cmd_setup_done(&cmd_simulate_entry, &r, st, cause);
    if (rc != CMD_RUN)
        return rc;
    if (!summary_only) {
        if (simulate_schedule(r.sched, r.topo, &r.cfg, &nr, &cause) != 0) {
            cmd_error("simulate", cause, 0);
            free(cause);
            setup_free(&r);
            return EXIT_USAGE;
        }
        metrics_compute(r.sched, r.topo, &nr.res, &met);
    }
    struct engine_result res = nr.res;
    struct run_view v = {&r.cfg, r.model, r.topo, r.sched, &res, &met,
                         r.command_line};
    /* Files first: if one cannot be written nothing claims success. */
    int status = cmd_write_outputs("simulate", &r.cfg, &v,
                                   output_metrics_predicted);
    if (!status && report)
        status = write_report(&v, report);
    if (!status) {
        if (r.cfg.format == FORMAT_JSON)
            output_summary_json(&v, stdout);
        else {
            output_summary_text(&v, stdout);
            net_report_text(&nr, r.sched, r.topo, &r.cfg, stdout);
        }
    }
    sim_result_free(&nr);
    setup_free(&r);
    return status;
}

const struct cmd_entry cmd_simulate_entry = {
    .name = "simulate",
    .usage = "[options]",
    .summary = "simulate FSDP training steps: step time, overlap, memory",
    .exec = cmd_simulate,
    .help = cmd_simulate_help,
};
