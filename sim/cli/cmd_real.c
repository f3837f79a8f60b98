/*
 * cmd_real.c: `fsdpsim real run` and `fsdpsim real bench`, the schedule on
 * real GPUs.
 *
 * `real run` takes exactly the options of `simulate` (parsed by the same
 * setup code, so both build the same schedule) plus its own: --dry-run
 * prints the schedule it would execute without touching a GPU (the same
 * text as `fsdpsim schedule`), --warmup and --timeout.  The executor
 * (real/) is built only where configure found CUDA, cuBLAS and NCCL; this
 * file compiles everywhere and says so when it is not.
 *
 * Launching: one process per node, one thread per GPU.  A multi-node run
 * takes its rank and the node count from torchrun, srun or mpirun and
 * meets the other nodes' processes at MASTER_ADDR:MASTER_PORT
 * (sim/core/rendezvous.h), e.g. `torchrun --nnodes N --nproc-per-node 1
 * --rdzv-endpoint HOST:PORT --no-python fsdpsim real run ...`.
 */
#include "cmd.h"
#include "atomic_file.h"
#include "builtin.h"
#include "engine.h"
#include "metrics.h"
#include "output.h"
#include "setup.h"
#include "units.h"
#include "xalloc.h"
#ifdef FSDPSIM_REAL_BINARY
#include "calib_file.h"
#include "real.h"
#include "rendezvous.h"
#endif

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void
cmd_real_help(FILE *out)
{
    fprintf(out,
            "usage: fsdpsim real run [simulate options] [--dry-run] "
            "[--warmup N] [--timeout S]\n"
            "       fsdpsim real bench [-b SIZE] [-e SIZE] [-f F] [--iters N]"
            " [--warmup N]\n"
            "                          [--nccl-tests-out FILE] [--model M "
            "--micro-batch B\n"
            "                          --seq-len S --param-dtype D] "
            "[--topology T]\n"
            "                          [--calibration-out FILE]\n\n"
            "real run executes the schedule `fsdpsim schedule` prints, with "
            "the same\noptions, on this node's GPUs: cuBLAS GEMMs with each "
            "layer's shapes, NCCL\ncollectives on the schedule's streams and "
            "communicators, CUDA events for its\ndependencies, allocations "
            "that follow the memory ledger.  Every op is timed;\nthe measured "
            "summary is printed next to the prediction and --trace,\n"
            "--timeline, --memory and --metrics write the measured run "
            "(`fsdpsim compare`\nmatches it with a prediction op by op), and "
            "GPU 0's SM clock and board power\nover the timed steps are read "
            "through NVML (libnvidia-ml.so.1) where the driver has it.\n\n"
            "real run options:\n"
            "  --dry-run      print the schedule it would run; no GPU needed\n"
            "  --warmup N     steps run before the timed one (default 1)\n"
            "  --timeout S    abort NCCL after S seconds without progress "
            "(default 300)\n\n"
            "real bench sweeps all-gather, reduce-scatter and all-reduce "
            "with data\nverification (nccl-tests format, which `fsdpsim "
            "calibrate` reads), a GEMM\nsweep over the model's shapes, a "
            "device-memory copy sweep and host<->device\ncopy bandwidth.\n\n"
            "real bench options:\n"
            "  -b, --minbytes SIZE      smallest collective size (default 1K)\n"
            "  -e, --maxbytes SIZE      largest collective size (default 1G)\n"
            "  -f, --stepfactor F       multiply the size by F (default 2)\n"
            "  --iters N                timed iterations a size (default 20;\n"
            "                           a GEMM: at least this many and 0.25 s,\n"
            "                           at most 100000, after 3 s of GEMMs to\n"
            "                           settle the clock)\n"
            "  --warmup N               untimed iterations first (default 5)\n"
            "  --nccl-tests-out FILE    the sweeps' output (default stdout)\n"
            "  -m, --model NAME|FILE    the model whose GEMM shapes are timed\n"
            "  --micro-batch N          its micro-batch (default 1)\n"
            "  --seq-len N              its sequence length (default 2048)\n"
            "  --param-dtype DTYPE      the GEMMs' dtype (default bf16)\n"
            "  -t, --topology NAME|FILE the node's topology (default "
            "dgx-a100-80g)\n"
            "  --calibration-out FILE   write what it measured: the GEMM "
            "ceiling, HBM\n"
            "                           share and kernel floor fitted to "
            "every timed kernel\n"
            "                           as 'calibrate --profile' fits a "
            "trace, the copy\n"
            "                           bandwidth, and collective cells "
            "fitted as 'fsdpsim\n"
            "                           calibrate' does, for 'simulate "
            "--calibration FILE'\n"
            "  -h, --help               show this help\n\n"
            "Several nodes (real run): one process per node, started by "
            "torchrun\n(--nproc-per-node 1 --no-python), srun "
            "(--ntasks-per-node 1) or mpirun\n(--map-by ppr:1:node), with "
            "MASTER_ADDR and MASTER_PORT naming node 0 and a\nfree port: "
            "the processes meet there and share NCCL's ids.  Node 0 writes "
            "the\noutput files.  real bench measures one node (use "
            "nccl-tests across nodes).\n\n"
            "exit status: 0 ok, 2 bad input, 3 no GPU, real mode not built, "
            "or a CUDA/NCCL\nfailure (the message names the op and rank).\n"
            "\nsimulate options (real run's; the output files are the "
            "measured run's):\n");
    setup_print_options(out, true);
}

#ifndef FSDPSIM_REAL_BINARY
/* fsdpsim itself never links CUDA, so it runs on any machine; real runs
 * are done by fsdpsim-real, built beside it where configure found CUDA,
 * cuBLAS and NCCL, and installed in the package's libexec directory.
 * Exec it with the same arguments; say so when it is not there. */
static int
run_real_binary(int argc, char **argv)
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    char *candidates[2] = {NULL, NULL};
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = '\0';
            candidates[0] = xasprintf("%s/fsdpsim-real", self);
        }
    }
#ifdef FSDPSIM_LIBEXECDIR
    candidates[1] = xasprintf("%s/fsdpsim-real", FSDPSIM_LIBEXECDIR);
#endif
    /* argv[0] is the real subcommand (run or bench). */
    char **av = xcalloc(argc + 3, sizeof(char *));
    av[0] = unconst("fsdpsim-real");
    av[1] = unconst("real");
    for (int i = 0; i < argc; i++)
        av[i + 2] = argv[i];
    for (int i = 0; i < 2; i++) {
        if (candidates[i] && access(candidates[i], X_OK) == 0) {
            fflush(stdout);
            execv(candidates[i], av);
        }
    }
    for (int i = 0; i < 2; i++)
        free(candidates[i]);
    free(av);
    cmd_error("real", "real mode is not built: configure found no CUDA "
              "toolkit with cuBLAS and NCCL (install them and rerun "
              "./configure, or give --with-cuda=DIR)", 0);
    return EXIT_SYSTEM;
}
#endif

/* Remove real-only options from argv (they are not simulate options):
 * SETUP_OK, or with *cause SETUP_USAGE when a value is missing (the
 * command line's shape: usage follows), SETUP_BAD_VALUE when a value is
 * bad (one line). */
struct real_opts {
    int dry_run;
    int64_t warmup;
    double timeout_s;
};

static enum setup_status
take_real_opts(int *argc, char **argv, struct real_opts *ro, char **cause)
{
    int w = 1;
    ro->dry_run = 0;
    ro->warmup = 1;
    ro->timeout_s = 300;
    for (int i = 1; i < *argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--dry-run") == 0) {
            ro->dry_run = 1;
        } else if (strcmp(a, "--warmup") == 0 || strcmp(a, "--timeout") == 0
                   || strncmp(a, "--warmup=", 9) == 0
                   || strncmp(a, "--timeout=", 10) == 0) {
            int is_warmup = strncmp(a, "--warmup", 8) == 0;
            const char *eq = strchr(a, '=');
            const char *val = eq ? eq + 1 : (i + 1 < *argc ? argv[++i] : NULL);
            char *why = NULL;
            if (val == NULL) {
                *cause = setup_option_error(OPTION_NEEDS_VALUE, a);
                return SETUP_USAGE;
            }
            if (is_warmup
                    ? units_parse_count(val, 1, 100, &ro->warmup, &why)
                    : units_parse_real(val, 1, 86400, &ro->timeout_s, &why)) {
                *cause = xasprintf("%s: %s", is_warmup ? "--warmup"
                                                       : "--timeout", why);
                free(why);
                return SETUP_BAD_VALUE;
            }
        } else {
            argv[w++] = argv[i];
        }
    }
    *argc = w;
    argv[w] = NULL;
    return SETUP_OK;
}

#ifdef FSDPSIM_REAL_BINARY
/*
 * This process's place among the nodes of run R, and the rendezvous with
 * the others: MPI's when the build has it and mpirun started us, else the
 * launcher's variables and the TCP rendezvous.  0, or the exit status
 * after printing why (EXIT_USAGE: the job does not match the options;
 * EXIT_SYSTEM: the nodes did not meet).
 */
static int
launch_nodes(const struct run *r, int gpus, double timeout_s,
             struct real_launch *l)
{
    char *cause = NULL;
    struct rendezvous_place place;
    *l = (struct real_launch){0, 1, gpus, NULL};
    int from_mpi = 1;
#ifdef HAVE_MPI
    from_mpi = real_mpi_launch(l, &cause);
    if (from_mpi < 0)
        return cmd_fail("real", cause, EXIT_SYSTEM);
    place.launcher = "mpirun";
#endif
    if (from_mpi != 0) {
        if (rendezvous_place_from_env(&place, &cause) != 0)
            return cmd_fail("real", cause, EXIT_USAGE);
        l->node_rank = place.rank;
        l->nodes = place.world;
    }
    if (l->nodes != r->topo->nodes || gpus < r->topo->gpus_per_node) {
        cmd_errorf("real", 0, "the schedule is for %d node(s) x %d GPUs, "
                   "but this is node %d of %d (from %s) with %d GPU(s): "
                   "pass --nodes and --gpus-per-node to match, and launch "
                   "one process per node", r->topo->nodes,
                   r->topo->gpus_per_node, l->node_rank, l->nodes,
                   place.launcher, gpus);
        rendezvous_close(l->rv);
#ifdef HAVE_MPI
        real_mpi_finish(0);
#endif
        return EXIT_USAGE;
    }
    if (l->nodes > 1 && l->rv == NULL) {
        l->rv = rendezvous_open(&place, timeout_s, &cause);
        if (l->rv == NULL)
            return cmd_fail("real", cause, EXIT_SYSTEM);
    }
    l->gpus = r->topo->gpus_per_node;
    return 0;
}
#endif

#ifdef FSDPSIM_REAL_BINARY
/* This node's GPUs: how many, or -1 after saying why there are none to
 * use. */
static int
probe_gpus(void)
{
    char *cause = NULL;
    int gpus = 0;
    if (real_probe(&gpus, &cause) == 0)
        return gpus;
    cmd_error("real", cause, 0);
    free(cause);
    return -1;
}

/* The files of a real run: the measured run MV (PV the prediction)
 * where R's options name them, the --metrics file with both; on node 0
 * alone (on a shared file system every node would write the same
 * paths).  0, or EXIT_SYSTEM after the message. */
static int
write_real_outputs(struct run *r, const struct real_launch *launch,
                   const struct run_view *pv, const struct run_view *mv)
{
    if (launch->node_rank > 0) {
        free(r->cfg.trace_path);
        free(r->cfg.timeline_path);
        free(r->cfg.memory_path);
        free(r->cfg.metrics_path);
        r->cfg.trace_path = r->cfg.timeline_path = r->cfg.memory_path =
            r->cfg.metrics_path = NULL;
    }
    if (launch->nodes > 1)
        printf("node %d of %d (rank %d):\n", launch->node_rank,
               launch->nodes, launch->node_rank * launch->gpus);
    /* The --metrics file holds both runs: written below. */
    char *metrics_path = r->cfg.metrics_path;
    r->cfg.metrics_path = NULL;
    int status = cmd_write_outputs("real", &r->cfg, mv, NULL);
    r->cfg.metrics_path = metrics_path;
    if (status || !r->cfg.metrics_path)
        return status;
    /* Predicted and measured side by side, for Prometheus. */
    const struct run_view *views[] = {pv, mv};
    const char *sources[] = {"predicted", "measured"};
    struct atomic_file af;
    char *cause = NULL;
    if (atomic_file_open(&af, r->cfg.metrics_path, &cause) == 0) {
        output_metrics(views, sources, 2, af.f);
        if (atomic_file_commit(&af, &cause) == 0)
            return 0;
    }
    return cmd_fail("real", cause, EXIT_SYSTEM);
}

/* Predicted (PM) and measured (MM) side by side, with the error. */
static void
print_real_table(const struct metrics *pm, const struct metrics *mm)
{
    printf("%-22s %14s %14s %8s\n", "", "predicted", "measured", "error");
    double rows[][2] = {{pm->step_time_s, mm->step_time_s},
                        {pm->compute_s, mm->compute_s},
                        {pm->allgather_s, mm->allgather_s},
                        {pm->reducescatter_s, mm->reducescatter_s},
                        {pm->allreduce_s, mm->allreduce_s},
                        {pm->exposed_comm_s, mm->exposed_comm_s},
                        {(double)pm->mem.peak_reserved,
                         (double)mm->mem.peak_reserved}};
    const char *names[] = {"step time (s)", "compute (s)", "all-gather (s)",
                           "reduce-scatter (s)", "all-reduce (s)",
                           "exposed comm (s)", "peak reserved (B)"};
    for (int i = 0; i < 7; i++)
        printf("%-22s %14.6g %14.6g %+7.1f%%\n", names[i], rows[i][0],
               rows[i][1], rows[i][1] > 0
                               ? 100 * (rows[i][0] / rows[i][1] - 1)
                               : 0.0);
}

/* R (prepared) on this node's GPUs with the options RO, printed next to
 * its prediction: the exit status. */
static int
execute_run(struct run *r, const struct real_opts *ro)
{
    char *cause = NULL;
    int gpus = probe_gpus();
    if (gpus < 0)
        return EXIT_SYSTEM;
    struct real_launch launch;
    int lrc = launch_nodes(r, gpus, ro->timeout_s, &launch);
    if (lrc != 0)
        return lrc;

    struct engine_result pred, meas;
    struct metrics pm, mm;
    engine_run(r->sched, r->topo, &pred);
    metrics_compute(r->sched, r->topo, &pred, &pm);
    struct real_options o = {(int)ro->warmup, ro->timeout_s, 0};
    int64_t peak_reserved = 0;
    struct gpu_state gs;
    int run_rc = real_run(r->sched, r->model, r->topo, &launch, &o, &meas,
                          &peak_reserved, &gs, &cause);
    rendezvous_close(launch.rv);
#ifdef HAVE_MPI
    real_mpi_finish(run_rc == 0);
#endif
    if (run_rc != 0) {
        cmd_error("real", cause, 0);
        free(cause);
        engine_result_free(&pred);
        return EXIT_SYSTEM;
    }
    metrics_compute(r->sched, r->topo, &meas, &mm);
    if (peak_reserved > 0)
        mm.mem.peak_reserved = peak_reserved;
    struct run_view pv = {&r->cfg, r->model, r->topo, r->sched, &pred, &pm,
                          r->command_line};
    struct run_view mv = {&r->cfg, r->model, r->topo, r->sched, &meas, &mm,
                          r->command_line};
    /* Every node prints its own GPU 0's table. */
    int status = write_real_outputs(r, &launch, &pv, &mv);
    if (!status) {
        print_real_table(&pm, &mm);
        /* The clock the measured times ran at: below the maximum at the
         * power limit, the power-limited clock the prediction's peaks
         * do not know of (a topology's [gpu] clock_fraction does). */
        gpu_state_print(stdout, "", "GPU 0's SM clock while timed", &gs);
    }
    engine_result_free(&pred);
    engine_result_free(&meas);
    return status;
}
#endif

static int
real_run_cmd(int argc, char **argv)
{
    struct real_opts ro;
    struct run r;
    char *cause = NULL;
    enum setup_status st = take_real_opts(&argc, argv, &ro, &cause);
    if (st != SETUP_OK)
        return cmd_setup_error("real", st, cause);
    st = setup_parse_args(&r, "real", argc, argv, &cause);
    if (st == SETUP_OK && setup_prepare(&r, &cause) != 0)
        st = SETUP_BAD_VALUE;
    int status = cmd_setup_done(&cmd_real_entry, &r, st, cause);
    if (status != CMD_RUN)
        return status;
    status = 0;
    if (ro.dry_run) {
        /* Exactly what `fsdpsim schedule` prints for these options. */
        if (r.cfg.format == FORMAT_JSON)
            sched_print_json(r.sched, stdout);
        else
            sched_print_text(r.sched, stdout);
    } else {
#ifndef FSDPSIM_REAL_BINARY
        /* Not reached: cmd_real hands non-dry runs to fsdpsim-real. */
        status = EXIT_SYSTEM;
#else
        status = execute_run(&r, &ro);
#endif
    }
    setup_free(&r);
    return status;
}

#ifdef FSDPSIM_REAL_BINARY
/* TEXT into PATH, atomically; 0 or -1 with *cause. */
static int
write_text_file(const char *path, const char *text, char **cause)
{
    struct atomic_file af;
    if (atomic_file_open(&af, path, cause) != 0)
        return -1;
    fputs(text, af.f);
    return atomic_file_commit(&af, cause);
}
#endif

/* The options of `real bench`. */
struct bench_args {
    double minb, maxb, factor;
    int64_t iters, warmup, mb, seq;
    const char *out_path, *model_name, *dtype_s, *cal_path, *topo_name;
    enum dtype dt;              /* --param-dtype, once checked */
    struct model *m;            /* --model's, once loaded (caller frees) */
};

/* Option A with its value V into *B: 0, 1 when A is not an option of
 * real bench, or -1 with *msg. */
static int
bench_option(struct bench_args *b, const char *a, const char *v, char **msg)
{
    char *cause = NULL;
    if (strcmp(a, "-b") == 0 || strcmp(a, "--minbytes") == 0
        || strcmp(a, "-e") == 0 || strcmp(a, "--maxbytes") == 0) {
        double *dst = a[1] == 'b' || strcmp(a, "--minbytes") == 0
                          ? &b->minb : &b->maxb;
        if (units_parse_nccl_size(v, dst) != 0)
            *msg = xasprintf("%s: '%s' is not a size (e.g. 8, 1K, 8G)", a,
                             v);
    } else if (strcmp(a, "-f") == 0 || strcmp(a, "--stepfactor") == 0) {
        b->factor = strtod(v, NULL);
        if (!(b->factor > 1 && b->factor <= 1024))
            *msg = xasprintf("%s: '%s' is not a factor above 1", a, v);
    } else if (strcmp(a, "--iters") == 0 || strcmp(a, "--warmup") == 0
               || strcmp(a, "--micro-batch") == 0
               || strcmp(a, "--seq-len") == 0) {
        int64_t *dst = strcmp(a, "--iters") == 0     ? &b->iters
                       : strcmp(a, "--warmup") == 0  ? &b->warmup
                       : strcmp(a, "--seq-len") == 0 ? &b->seq : &b->mb;
        if (units_parse_count(v, 1, 1048576, dst, &cause) != 0) {
            *msg = xasprintf("%s: %s", a, cause);
            free(cause);
        }
    } else if (strcmp(a, "--nccl-tests-out") == 0) {
        b->out_path = v;
    } else if (strcmp(a, "--calibration-out") == 0) {
        b->cal_path = v;
    } else if (strcmp(a, "--topology") == 0 || strcmp(a, "-t") == 0) {
        b->topo_name = v;
    } else if (strcmp(a, "--model") == 0 || strcmp(a, "-m") == 0) {
        b->model_name = v;
    } else if (strcmp(a, "--param-dtype") == 0) {
        b->dtype_s = v;
    } else {
        return 1;
    }
    return *msg ? -1 : 0;
}

/* The sizes, dtype, model and topology of B, checked (B->m loaded): 0,
 * or -1 with *msg. */
static int
check_bench_args(struct bench_args *b, char **msg)
{
    char *cause = NULL;
    if (b->minb > b->maxb) {
        *msg = xasprintf("-b is larger than -e");
        return -1;
    }
    if (dtype_parse(b->dtype_s, &b->dt) != 0) {
        *msg = xasprintf("--param-dtype: '%s' is not a dtype", b->dtype_s);
        return -1;
    }
    if (b->model_name && (b->m = model_load(b->model_name, msg)) == NULL)
        return -1;
    struct topo *bt = topo_load(b->topo_name, &cause);
    if (bt == NULL) {
        *msg = xasprintf("--topology: %s", cause);
        free(cause);
        return -1;
    }
    if (b->cal_path != NULL && !(bt->peak_flops[b->dt] > 0))
        *msg = xasprintf("--calibration-out: topology '%s' has no %s peak "
                         "to rate the GEMM sweep against (pick another "
                         "--param-dtype or --topology)", bt->name,
                         dtype_name(b->dt));
    topo_free(bt);
    return *msg ? -1 : 0;
}

/* ARGV into *B: CMD_RUN, or the exit status after the help or the
 * message. */
static int
parse_bench_args(int argc, char **argv, struct bench_args *b)
{
    *b = (struct bench_args){.minb = 1024, .maxb = 1073741824.0,
                             .factor = 2, .iters = 20, .warmup = 5, .mb = 1,
                             .seq = 2048, .dtype_s = "bf16",
                             .topo_name = "dgx-a100-80g",
                             .dt = DTYPE_BF16};
    char *msg = NULL;
    for (int i = 1; i < argc && msg == NULL; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            cmd_real_help(stdout);
            return 0;
        }
        if (v == NULL) {
            msg = xasprintf("unknown or incomplete option '%s'", a);
            break;
        }
        i++;
        if (bench_option(b, a, v, &msg) == 1)
            msg = setup_option_error(OPTION_UNKNOWN, a);
    }
    if (msg == NULL && check_bench_args(b, &msg) == 0)
        return CMD_RUN;
    return cmd_fail("real", msg, EXIT_USAGE);
}

#ifdef FSDPSIM_REAL_BINARY
/* The calibration file of B from the sweeps' TEXT and RES: 0, or
 * EXIT_SYSTEM with *cause. */
static int
write_bench_calibration(const struct bench_args *b, const char *text,
                        const struct real_bench_result *res, char **cause)
{
    struct calib_measured cm = {text, res->gemm_flops_per_s, b->dt,
                                res->h2d_Bps, res->d2h_Bps,
                                res->gpu_name[0] ? res->gpu_name : NULL,
                                &res->compute};
    struct nccl_config nc;
    nccl_config_init(&nc);
    struct atomic_file af;
    if (atomic_file_open(&af, b->cal_path, cause) != 0)
        return EXIT_SYSTEM;
    if (calib_file_write(af.f, b->topo_name, &nc, &cm, cause) != 0) {
        atomic_file_abort(&af);
        return EXIT_SYSTEM;
    }
    if (atomic_file_commit(&af, cause) != 0)
        return EXIT_SYSTEM;
    printf("wrote %s; use it with 'fsdpsim simulate --topology %s "
           "--calibration %s'\n", b->cal_path, b->topo_name, b->cal_path);
    return 0;
}

/* The sweeps of B on this node's GPUs, printed or written as asked: the
 * exit status. */
static int
execute_bench(const struct bench_args *b)
{
    char *cause = NULL;
    int gpus = probe_gpus();
    if (gpus < 0)
        return EXIT_SYSTEM;
    struct real_launch l = {0, 1, gpus, NULL};
    struct real_bench_options o = {b->minb, b->maxb, b->factor,
                                   (int)b->iters, (int)b->warmup, b->m,
                                   b->mb, b->seq, b->dt};
    /* The sweeps go to memory first: printed or written as asked, and
     * fitted for the calibration file. */
    char *text = NULL;
    size_t text_len = 0;
    FILE *nt = open_memstream(&text, &text_len);
    if (nt == NULL) {
        cmd_error("real", "cannot buffer the nccl-tests output (out of "
                  "memory)", 0);
        return EXIT_SYSTEM;
    }
    struct real_bench_result res;
    int rc = real_bench(&l, &o, nt, &res, &cause);
    fclose(nt);
    if (rc == 0 && b->out_path == NULL)
        fputs(text, stdout);
    if (rc == 0 && b->out_path != NULL &&
        write_text_file(b->out_path, text, &cause) != 0)
        rc = EXIT_SYSTEM;
    if (rc == 0 && b->cal_path != NULL)
        rc = write_bench_calibration(b, text, &res, &cause);
    free(text);
    if (rc != 0) {
        cmd_error("real", cause, 0);
        free(cause);
    }
    return rc;
}
#endif

static int
real_bench_cmd(int argc, char **argv)
{
    struct bench_args b;
    int rc = parse_bench_args(argc, argv, &b);
    if (rc == CMD_RUN) {
#ifndef FSDPSIM_REAL_BINARY
        /* Options checked here; the run itself is fsdpsim-real's. */
        rc = run_real_binary(argc, argv);
#else
        rc = execute_bench(&b);
#endif
    }
    model_free(b.m);
    return rc;
}

static int
cmd_real(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "-h") == 0
        || strcmp(argv[1], "--help") == 0) {
        cmd_real_help(argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_USAGE : 0;
    }
#ifndef FSDPSIM_REAL_BINARY
    if (strcmp(argv[1], "run") == 0) {
        int dry = 0, help = 0;
        for (int i = 2; i < argc; i++) {
            dry |= strcmp(argv[i], "--dry-run") == 0;
            help |= strcmp(argv[i], "-h") == 0
                    || strcmp(argv[i], "--help") == 0;
        }
        if (!dry && !help)
            return run_real_binary(argc - 1, argv + 1);
    }
#endif
    if (strcmp(argv[1], "run") == 0)
        return real_run_cmd(argc - 1, argv + 1);
    if (strcmp(argv[1], "bench") == 0)
        return real_bench_cmd(argc - 1, argv + 1);
    return cmd_errorf("real", 1, "unknown real command '%s' (run or bench)",
                      argv[1]);
}

const struct cmd_entry cmd_real_entry = {
    .name = "real",
    .usage = "run [simulate options] [--dry-run] | bench [options]",
    .summary = "run the same schedule on this node's GPUs and time it",
    .exec = cmd_real,
    .help = cmd_real_help,
};
