/*
 * main.c: fsdpsim's entry point and command table.
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

const struct cmd_entry cmd_table[] = {
    {"simulate", "[options]",
     "simulate FSDP training steps: step time, overlap, memory",
     cmd_simulate, cmd_simulate_help},
    {"schedule", "[options] [--format text|json]",
     "print the op list one step issues (streams, groups, deps)",
     cmd_schedule, cmd_schedule_help},
    {"sweep",
     "[simulate options] --vary KEY=SPEC [--vary ...] [--out FILE.csv] "
     "[--plot PREFIX --metric KEY [--term png|svg]] [--report FILE.html] "
     "[--jobs N] [--shard K/N]",
     "simulate a grid of settings, one CSV row per point",
     cmd_sweep, cmd_sweep_help},
    {"merge", "SHARD.csv... [--out FILE.csv]",
     "join the CSVs of sweep --shard K/N into one sweep's CSV",
     cmd_merge, cmd_merge_help},
    {"tune",
     "[simulate options] [--headroom 10%] [--top N] [--report FILE.html]",
     "search FSDP settings for the best throughput that fits",
     cmd_tune, cmd_tune_help},
    {"plan",
     "--model M --tokens N [--deadline D] [--budget $] --gpu TOPOLOGY... "
     "[--price T=$X/gpu-hour] [--spot-price T=$X/gpu-hour] "
     "[--mtbf-per-gpu D] [--report FILE.html]",
     "size a cluster for a token budget, a deadline and a price, with "
     "failures",
     cmd_plan, cmd_plan_help},
    {"report", "--timeline FILE --memory FILE [--out PREFIX] [--term png|svg]",
     "plot a timeline and memory series with gnuplot",
     cmd_report, cmd_report_help},
    {"models", "[--show NAME|FILE]", "list built-in models or show one",
     cmd_models, cmd_models_help},
    {"topologies", "[--show NAME|FILE]",
     "list built-in topologies or show one", cmd_topologies,
     cmd_topologies_help},
    {"topology", "[NAME|FILE] [--set S.K=V] [--nodes N] [--simgrid-xml [FILE]]",
     "print one topology, or its SimGrid platform", cmd_topology,
     cmd_topology_help},
    {"coll", "OP [-t TOPOLOGY] [-b 8] [-e 8G] [-f 2] [-g G] [--nodes N]",
     "predicted collective times in nccl-tests' columns",
     cmd_coll, cmd_coll_help},
    {"calibrate", "--nccl-tests FILE... [-t BASE] [-o FILE] [--op OP]",
     "fit a topology's collective model to nccl-tests output",
     cmd_calibrate, cmd_calibrate_help},
    {"validate", "[--data CSV] [--tol PCT]",
     "compare the uncalibrated collective model with published points",
     cmd_validate, cmd_validate_help},
    {"compare",
     "PRED MEASURED [--tol PCT] [--plot PREFIX] [--term png|svg] "
     "[--format text|json]",
     "compare a predicted step with a measured one (trace or timeline)",
     cmd_compare, cmd_compare_help},
    {"real", "run [simulate options] [--dry-run] | bench [options]",
     "run the same schedule on this node's GPUs and time it",
     cmd_real, cmd_real_help},
    {"bench", "[simulate options]",
     "time the simulator itself (wall time per simulated step, RSS)",
     cmd_bench, cmd_bench_help},
    {"help", "[COMMAND]", "show help for fsdpsim or one command", cmd_help,
     NULL},
    {"version", "", "print the version", cmd_version, NULL},
    {NULL, NULL, NULL, NULL, NULL}};

const struct cmd_entry *
cmd_find(const char *name)
{
    for (const struct cmd_entry *e = cmd_table; e->name; e++)
        if (strcmp(e->name, name) == 0)
            return e;
    return NULL;
}

static void
main_usage(FILE *out)
{
    fprintf(out, "usage: fsdpsim COMMAND [options]\n\n"
            "Predict how PyTorch FSDP training behaves on a cluster.\n\n"
            "commands:\n");
    for (const struct cmd_entry *e = cmd_table; e->name; e++)
        fprintf(out, "  %-12s %s\n", e->name, e->summary);
    fprintf(out, "\nRun 'fsdpsim help COMMAND' for its options.  With no "
            "options, 'fsdpsim simulate'\nsimulates llama2-7b on one "
            "dgx-a100-80g node.\n");
}

static int
cmd_help(int argc, char **argv)
{
    if (argc < 2) {
        main_usage(stdout);
        return 0;
    }
    const struct cmd_entry *e = cmd_find(argv[1]);
    if (e == NULL) {
        char msg[256];
        snprintf(msg, sizeof msg, "unknown command '%s'", argv[1]);
        cmd_error(NULL, msg, 1);
        return EXIT_USAGE;
    }
    if (e->help)
        e->help(stdout);
    else
        printf("usage: fsdpsim %s %s\n%s\n", e->name, e->usage, e->summary);
    return 0;
}

static int
cmd_version(int argc, char **argv)
{
    if (argc > 1) {
        char *msg = xasprintf("unexpected argument '%s' (version takes "
                              "none)", argv[1]);
        cmd_error("version", msg, 0);
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
    if (e == NULL) {
        char msg[256];
        snprintf(msg, sizeof msg, "unknown command '%s'", name);
        cmd_error(NULL, msg, 1);
        return EXIT_USAGE;
    }
    return cmd_finish_stdout(e->exec(argc - 1, argv + 1));
}
