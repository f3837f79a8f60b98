/*
 * cmd_simulate.c: `fsdpsim simulate`, the main job.
 */
#include "cmd.h"
#include "atomic_file.h"
#include "engine.h"
#include "metrics.h"
#include "net.h"
#include "output.h"
#include "setup.h"

#include <stdlib.h>

void
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
    setup_print_options(out);
    fprintf(out, "\nexit status: 0 ok (a run that does not fit in memory is "
            "a result: see 'fits'),\n2 bad input (one message on stderr), "
            "3 an output file could not be written.\n");
}


int
cmd_simulate(int argc, char **argv)
{
    struct run r;
    char *cause = NULL;
    int rc = setup_parse_args(&r, "simulate", argc, argv, &cause);
    if (rc == 1) {
        cmd_simulate_help(stdout);
        setup_free(&r);
        return 0;
    }
    if (rc == 0)
        rc = setup_prepare(&r, &cause) == 0 ? 0 : -2;
    if (rc != 0) {
        cmd_error("simulate", cause, rc == -1);
        free(cause);
        setup_free(&r);
        return EXIT_USAGE;
    }

    struct net_run nr;
    struct metrics met;
    if (net_run(r.sched, r.topo, &r.cfg, &nr, &cause) != 0) {
        cmd_error("simulate", cause, 0);
        free(cause);
        setup_free(&r);
        return EXIT_USAGE;
    }
    struct engine_result res = nr.res;
    if (res.too_long) {
        cmd_error("simulate", "the simulated step would last longer than "
                  "146 years; check the topology's rates (a peak or "
                  "bandwidth far too low?)", 0);
        net_run_free(&nr);
        setup_free(&r);
        return EXIT_USAGE;
    }
    metrics_compute(r.sched, r.topo, &res, &met);
    struct run_view v = {&r.cfg, r.model, r.topo, r.sched, &res, &met,
                         r.command_line};
    /* Files first: if one cannot be written nothing claims success. */
    int status = cmd_write_outputs("simulate", &r.cfg, &v,
                                   output_metrics_predicted);
    if (!status) {
        if (r.cfg.format == FORMAT_JSON)
            output_summary_json(&v, stdout);
        else {
            output_summary_text(&v, stdout);
            net_report_text(&nr, r.sched, r.topo, &r.cfg, stdout);
        }
    }
    net_run_free(&nr);
    setup_free(&r);
    return status;
}
