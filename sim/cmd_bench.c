/*
 * cmd_bench.c: `fsdpsim bench`, the speed benchmark (not a test).
 *
 * Builds and simulates a run (by default GPT-3 175B, FULL_SHARD, bf16, on
 * 128 DGX A100 nodes = 1024 GPUs) several times and reports the wall time
 * per simulated training step, split into building the schedule and
 * running it, and the peak resident memory.  Wall times vary with the
 * machine's load; compare ratios measured in one run.
 */
#define _POSIX_C_SOURCE 200809L
#include "cmd.h"
#include "engine.h"
#include "metrics.h"
#include "net.h"
#include "setup.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define BENCH_REPEATS 20

void
cmd_bench_help(FILE *out)
{
    fprintf(out,
            "usage: fsdpsim bench [simulate options]\n\n"
            "Time the simulator: build and simulate the run %d times and "
            "print the wall\ntime per simulated step and the peak RSS.  "
            "Without options: GPT-3 175B,\nFULL_SHARD, bf16, micro-batch 1 "
            "x 2048, on 128 dgx-a100-80g nodes (1024 GPUs);\nwith --config "
            "FILE, the run file and simulate's defaults instead.  With\n"
            "--grad-accum it also says how many micro-batches were folded "
            "(--exact\nsimulates them all).  With --network simgrid the "
            "first run, which fills the\nSimGrid memo, is reported on its "
            "own: e.g.\n'fsdpsim bench --network simgrid "
            "--topology fat-tree-h100-1024'.\n", BENCH_REPEATS);
}

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int
cmd_bench(int argc, char **argv)
{
    /* Defaults first; the user's options follow and override them. */
    static const char *defaults[] = {
        "bench", "--model", "gpt3-175b", "--topology", "dgx-a100-80g",
        "--nodes", "128", "--param-dtype", "bf16", "--seq-len", "2048"};
    int nd = (int)(sizeof defaults / sizeof defaults[0]);
    /* Flags override a run file, so bench's defaults given as flags would
     * silently replace the --config file's model, topology and nodes:
     * with a run file, it and simulate's defaults decide. */
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--config") == 0
            || strncmp(argv[i], "--config=", 9) == 0
            || strncmp(argv[i], "-c", 2) == 0)
            nd = 1;
    char **av = xcalloc(nd + argc + 1, sizeof(char *));
    for (int i = 0; i < nd; i++)
        av[i] = unconst(defaults[i]);
    for (int i = 1; i < argc; i++)
        av[nd + i - 1] = argv[i];
    int ac = nd + argc - 1;

    double build_s = 0, run_s = 0, step_s = 0, first_s = 0;
    int simgrid = 0;
    int steps = 0, n_ops = 0, folded = 0;
    uint64_t events = 0;
    for (int rep = 0; rep < BENCH_REPEATS; rep++) {
        struct run r;
        char *cause = NULL;
        double t0 = now_s();
        int rc = setup_parse_args(&r, "bench", ac, av, &cause);
        if (rc == 1) {
            cmd_bench_help(stdout);
            setup_free(&r);
            free(av);
            return 0;
        }
        if (rc == 0 && setup_prepare(&r, &cause) != 0)
            rc = -2;
        if (rc != 0) {
            cmd_error("bench", cause, rc == -1);
            free(cause);
            setup_free(&r);
            free(av);
            return EXIT_USAGE;
        }
        double t1 = now_s();
        struct net_run nr;
        struct metrics met;
        if (net_run(r.sched, r.topo, &r.cfg, &nr, &cause) != 0) {
            cmd_error("bench", cause, 0);
            free(cause);
            setup_free(&r);
            free(av);
            return EXIT_USAGE;
        }
        struct engine_result res = nr.res;
        metrics_compute(r.sched, r.topo, &res, &met);
        simgrid = r.cfg.network == NETWORK_SIMGRID;
        double t2 = now_s();
        if (rep == 0)
            first_s = t2 - t0;
        build_s += t1 - t0;
        run_s += t2 - t1;
        steps += r.sched->iterations;
        n_ops = r.sched->n_ops;
        events = res.events;
        folded = res.folded;
        step_s = met.step_time_s;
        net_run_free(&nr);
        setup_free(&r);
    }
    free(av);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("bench: %d runs, %d simulated steps, %d ops and %llu events "
           "per run\n", BENCH_REPEATS, steps, n_ops,
           (unsigned long long)events);
    if (folded > 0)
        printf("micro-batches folded     %d per run (repeats of the one "
               "before, not simulated event by event; --exact simulates "
               "them)\n", folded);
    printf("simulated step time      %.6f s\n", step_s);
    printf("wall per simulated step  %.3f ms (build %.3f ms + engine "
           "%.3f ms)\n", (build_s + run_s) / steps * 1e3,
           build_s / steps * 1e3, run_s / steps * 1e3);
    if (simgrid)
        printf("first run, SimGrid cold  %.3f s (%d simulated steps; "
               "later runs reuse its answers)\n", first_s,
               steps / BENCH_REPEATS);
    printf("peak RSS                 %.1f MiB\n", ru.ru_maxrss / 1024.0);
    return 0;
}
