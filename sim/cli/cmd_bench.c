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
#include "host_clock.h"
#include "median.h"
#include "metrics.h"
#include "net.h"
#include "setup.h"
#include "steady.h"
#include "xalloc.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define BENCH_REPEATS 20
#define STARTUP_RUNS 20

static void
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
            "--topology fat-tree-h100-1024'.\n\n"
            "It then times the summary alone, as a sweep row gets it: a step "
            "of more than\n10 micro-batches counted from one of 9 or 10 "
            "when the engine proves they\nrepeat.  Last, the start-up of a "
            "whole process: the median wall time and peak\nRSS of %d runs of "
            "'fsdpsim version' and of a small 'fsdpsim simulate'.\n\n"
            "simulate options (they override the run above):\n",
            BENCH_REPEATS, STARTUP_RUNS);
    setup_print_options(out, false);
}

/* The last --grad-accum of AV (1 without one). */
static int
accum_of(int ac, char **av)
{
    int a = 1;
    for (int i = 1; i < ac; i++) {
        if (strcmp(av[i], "--grad-accum") == 0 && i + 1 < ac)
            a = atoi(av[i + 1]);
        else if (strncmp(av[i], "--grad-accum=", 13) == 0)
            a = atoi(av[i] + 13);
    }
    return a;
}

/* Whole-process wall time and peak RSS of this fsdpsim running ARGV,
 * the median of STARTUP_RUNS runs (output to /dev/null): *ms and *mib, or
 * 0 when it could not be run.  Measured before bench allocates anything:
 * a forked child's peak RSS starts from its parent's. */
static void
startup_of(char *const *argv, double *ms, double *mib)
{
    double wall[STARTUP_RUNS];
    long rss = 0;
    *ms = *mib = 0;
    for (int i = 0; i < STARTUP_RUNS; i++) {
        double t0 = host_clock_s();
        pid_t pid = fork();
        if (pid == 0) {
            int fd = open("/dev/null", O_WRONLY);
            if (fd >= 0) {
                dup2(fd, STDOUT_FILENO);
                dup2(fd, STDERR_FILENO);
            }
            execv("/proc/self/exe", argv);
            _exit(127);
        }
        int status;
        struct rusage ru;
        if (pid < 0 || wait4(pid, &status, 0, &ru) != pid
            || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            return;
        wall[i] = host_clock_s() - t0;
        if (ru.ru_maxrss > rss)
            rss = ru.ru_maxrss;
    }
    *ms = median_in_place(wall, STARTUP_RUNS) * 1e3;
    *mib = rss / 1024.0;
}

/* How long a process takes to start and do little: 'fsdpsim version',
 * and a small simulate on the analytic network. */
struct startup {
    double version_ms, version_mib, simulate_ms, simulate_mib;
};

static void
bench_startup(struct startup *st)
{
    char *version[] = {unconst("fsdpsim"), unconst("version"), NULL};
    char *simulate[] = {
        unconst("fsdpsim"), unconst("simulate"), unconst("--model"),
        unconst("tiny-llama"), unconst("--topology"), unconst("test-2x4"),
        unconst("--format"), unconst("json"), NULL};
    startup_of(version, &st->version_ms, &st->version_mib);
    startup_of(simulate, &st->simulate_ms, &st->simulate_mib);
}

static void
print_startup(const char *what, double ms, double mib)
{
    if (ms > 0)
        printf("start-up, %-14s %.2f ms median of %d whole processes, "
               "%.1f MiB peak RSS\n", what, ms, STARTUP_RUNS, mib);
    else
        printf("start-up, %-14s could not be run\n", what);
}

/* What the timed runs measured. */
struct bench_times {
    double build_s, run_s, step_s, first_s;  /* totals over the runs */
    int simgrid, steps, n_ops, folded;
    uint64_t events;
    double summary_s;           /* the summary-alone runs, in total */
    int summary_steady, summary_a;
};

/* Bench's defaults, then the user's options (ARGV[1..]) that follow and
 * override them: the argument vector (caller frees), *ac its length. */
static char **
bench_args(int argc, char **argv, int *ac)
{
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
    *ac = nd + argc - 1;
    return av;
}

/* BENCH_REPEATS builds and simulations of AV into *BT: CMD_RUN, or the
 * exit status after the help or the message. */
static int
time_runs(int ac, char **av, struct bench_times *bt)
{
    for (int rep = 0; rep < BENCH_REPEATS; rep++) {
        struct run r;
        char *cause = NULL;
        double t0 = host_clock_s();
        enum setup_status parsed = setup_parse_args(&r, "bench", ac, av,
                                                    &cause);
        if (parsed == SETUP_OK && setup_prepare(&r, &cause) != 0)
            parsed = SETUP_BAD_VALUE;
        int rc = cmd_setup_done(&cmd_bench_entry, &r, parsed, cause);
        if (rc != CMD_RUN)
            return rc;
        double t1 = host_clock_s();
        struct sim_result nr;
        struct metrics met;
        if (simulate_schedule(r.sched, r.topo, &r.cfg, &nr, &cause) != 0) {
            setup_free(&r);
            return cmd_setup_error("bench", SETUP_BAD_VALUE, cause);
        }
        struct engine_result res = nr.res;
        metrics_compute(r.sched, r.topo, &res, &met);
        bt->simgrid = r.cfg.network == NETWORK_SIMGRID;
        double t2 = host_clock_s();
        if (rep == 0)
            bt->first_s = t2 - t0;
        bt->build_s += t1 - t0;
        bt->run_s += t2 - t1;
        bt->steps += r.sched->iterations;
        bt->n_ops = r.sched->n_ops;
        bt->events = res.events;
        bt->folded = res.folded;
        bt->step_s = met.step_time_s;
        sim_result_free(&nr);
        setup_free(&r);
    }
    return CMD_RUN;
}

/* The same run for its summary alone, as a sweep row is: CMD_RUN, or
 * EXIT_USAGE after the message. */
static int
time_summaries(int ac, char **av, struct bench_times *bt)
{
    for (int rep = 0; rep < BENCH_REPEATS; rep++) {
        struct run r;
        char *cause = NULL;
        double t0 = host_clock_s();
        struct sim_result nr;
        struct metrics met;
        if (setup_parse_args(&r, "bench", ac, av, &cause) != SETUP_OK
            || steady_run(&r, NULL, NULL, &nr, &met, &bt->summary_steady,
                          &cause) != 0) {
            setup_free(&r);
            return cmd_setup_error("bench", SETUP_BAD_VALUE, cause);
        }
        bt->summary_s += host_clock_s() - t0;
        bt->summary_a = r.sched->micro_batches;
        sim_result_free(&nr);
        setup_free(&r);
    }
    return CMD_RUN;
}

/* The report: BT's figures for a step of ACCUM micro-batches, the peak
 * RSS and the start-up times ST. */
static void
print_bench(const struct bench_times *bt, int accum,
            const struct startup *st)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("bench: %d runs, %d simulated steps, %d ops and %llu events "
           "per run\n", BENCH_REPEATS, bt->steps, bt->n_ops,
           (unsigned long long)bt->events);
    if (bt->folded > 0)
        printf("micro-batches folded     %d per run (repeats of the one "
               "before, not simulated event by event; --exact simulates "
               "them)\n", bt->folded);
    printf("simulated step time      %.6f s\n", bt->step_s);
    printf("wall per simulated step  %.3f ms (build %.3f ms + engine "
           "%.3f ms)\n", (bt->build_s + bt->run_s) / bt->steps * 1e3,
           bt->build_s / bt->steps * 1e3, bt->run_s / bt->steps * 1e3);
    if (bt->simgrid)
        printf("first run, SimGrid cold  %.3f s (%d simulated steps; "
               "later runs reuse its answers)\n", bt->first_s,
               bt->steps / BENCH_REPEATS);
    double full_ms = (bt->build_s + bt->run_s) / BENCH_REPEATS * 1e3;
    double summary_ms = bt->summary_s / BENCH_REPEATS * 1e3;
    if (bt->summary_steady)
        printf("summary alone (a row)    %.3f ms per run, %.1fx faster than "
               "the run: its step of %d micro-batches\n"
               "                         counted from one of %d\n",
               summary_ms, summary_ms > 0 ? full_ms / summary_ms : 0.0,
               accum, bt->summary_a);
    else
        printf("summary alone (a row)    %.3f ms per run (the whole step "
               "simulated)\n", summary_ms);
    printf("peak RSS                 %.1f MiB\n", ru.ru_maxrss / 1024.0);
    print_startup("version", st->version_ms, st->version_mib);
    print_startup("simulate", st->simulate_ms, st->simulate_mib);
}

static int
cmd_bench(int argc, char **argv)
{
    int ac;
    char **av = bench_args(argc, argv, &ac);
    struct startup st = {0};
    struct bench_times bt = {0};
    int rc = time_runs(ac, av, &bt);
    if (rc == CMD_RUN)
        rc = time_summaries(ac, av, &bt);
    /* The start-up processes after the options are known good (and not
     * for --help): a bad option is refused at once, not after 2 x
     * STARTUP_RUNS child processes. */
    if (rc == CMD_RUN)
        bench_startup(&st);
    int accum = accum_of(ac, av);
    free(av);
    if (rc != CMD_RUN)
        return rc;
    print_bench(&bt, accum, &st);
    return 0;
}

const struct cmd_entry cmd_bench_entry = {
    .name = "bench",
    .usage = "[simulate options]",
    .summary = "time the simulator itself (wall time per simulated step, "
               "RSS)",
    .exec = cmd_bench,
    .help = cmd_bench_help,
};
