/*
 * cmd_sweep.c: `fsdpsim sweep`, one simulation per point of a grid of
 * settings, one CSV row each.
 *
 * The grid and the rows are sweep.c's, the plot and the report
 * sweep_print.c's; this file runs the points on worker threads, writes
 * the rows in the grid's order whatever order they finish in, shows
 * progress on a terminal and stops cleanly on Ctrl-C.  Threads rather than
 * fork()ed workers: the simulator keeps no mutable globals (getopt's are
 * serialized by a lock), so threads share the parsed grid and need no
 * pipe protocol; a crash in one point takes the sweep down either way.
 */
#define _POSIX_C_SOURCE 200809L
#include "cmd.h"
#include "progress.h"
#include "atomic_file.h"
#include "batch.h"
#include "cmd_search.h"
#include "search.h"
#include "setup.h"
#include "sweep.h"
#include "sweep_print.h"
#include "units.h"
#include "xalloc.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Rows finished ahead of the next one to write, at most: bounds the
 * memory held when one slow point (a large grad_accum) holds up the
 * rows after it. */
#define SWEEP_WINDOW 4096

/* The signal that stopped the sweep (SIGINT, SIGTERM or SIGHUP: each
 * keeps the rows done, as Ctrl-C does), 0 while it runs.  A signal
 * handler can reach nothing but globals; the main thread polls it every
 * tick. */
static volatile sig_atomic_t sweep_interrupted;
static const int sweep_stop_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define N_STOP_SIGNALS 3

static void
on_sigint(int sig)
{
    sweep_interrupted = sig;
}

static void
cmd_sweep_help(FILE *out)
{
    fprintf(out,
            "usage: fsdpsim sweep [simulate options] --vary KEY=SPEC "
            "[--vary ...] [--out FILE.csv]\n"
            "                     [--plot PREFIX --metric KEY "
            "[--term png|svg]] [--report FILE.html]\n"
            "                     [--format csv|jsonl] [--jobs N] "
            "[--shard K/N]\n\n"
            "Simulate every combination of the varied settings and write "
            "one CSV row per\npoint: the varied values (columns vary.KEY), "
            "status (ok or error), message,\nthen every field of 'simulate "
            "--format json' (mem_breakdown.CATEGORY for\nthe breakdown).  "
            "Each point is the simulate command line with --KEY=VALUE\n"
            "appended per axis, so varied values override the base options.  "
            "A point with\ninvalid settings gets status=error and the "
            "message; one\nthat does not fit has fits=false.\n\n"
            "KEY is any simulate option (grad_accum or grad-accum, nodes, "
            "micro_batch,\nsharding_strategy, ...; set=SECTION.KEY for a "
            "topology field).  SPEC is\n"
            "  V1,V2,...        a list: 1,2,4,8 or FULL_SHARD,HYBRID_SHARD\n"
            "  A:B:xF           geometric: A, A*F, A*F^2, ... up to B\n"
            "  A:B:+S           arithmetic: A, A+S, A+2S, ... up to B\n"
            "  A:B:log10        powers of ten from A to B (1e6:1e9:log10)\n"
            "Several --vary give their product, the first outermost; at "
            "most %d points.\n\n"
            "options:\n"
            "  --vary KEY=SPEC          an axis of the grid (repeatable)\n"
            "  -o, --out FILE           write the CSV to FILE, atomically "
            "(default stdout)\n"
            "  --plot PREFIX            plot --metric against the first "
            "axis, one line per\n"
            "                           value of the second: "
            "PREFIX-METRIC.png (gnuplot)\n"
            "  --metric KEY             the column to plot, e.g. "
            "step_time_s\n"
            "  --term png|svg           image format (default png)\n"
            "  --report FILE.html       an HTML page with the plot of "
            "--metric and a table\n"
            "                           of every point's value\n"
            "  -j, --jobs N             points simulated in parallel "
            "(default: online CPUs)\n"
            "  --format csv|jsonl       CSV (default) or JSON lines: one "
            "object per point,\n"
            "                           results typed as simulate --format "
            "json prints them\n"
            "  --shard K/N              simulate only the points P with P "
            "mod N = K (one\n"
            "                           machine's share): the CSV gains "
            "point and n_points\n"
            "                           columns (keys) first; 'fsdpsim "
            "merge' joins the N\n"
            "                           files into the file one run "
            "writes\n"
            "  -h, --help               show this help\n\n"
            "simulate options (the base of every point):\n",
            SWEEP_MAX_POINTS);
    setup_print_options(out, false);
    fprintf(out, "\nA row needs only the summary: a step of more than 10 "
            "micro-batches is counted\nfrom one of 9 or 10 when the engine "
            "proves they repeat (the same row as\n--exact, byte for byte), "
            "shared by the points that differ only in grad_accum.\nOn a "
            "terminal, stderr shows points done, rate and time left.\n"
            "Ctrl-C (or SIGTERM, SIGHUP) stops the sweep: the rows "
            "done so far are kept\nas a complete CSV.  Two sweeps may not "
            "write one --out at once (the second\nis refused).\n"
            "exit status: 0 ok (error rows included), 2 bad input or no "
            "valid point,\n3 a file could not be written or gnuplot "
            "failed, 128 + the signal when\nstopped by one (130 Ctrl-C, "
            "143 SIGTERM, 129 SIGHUP).\n");
}

/* ---- running the points ---- */

struct pool {
    const struct sweep *sw;
    int base_argc;
    char *const *base_argv;
    int n_metrics;
    int metric;                 /* column plotted, -1 for none */
    int64_t shard_k, shard_n;   /* points k, k + n, ... (1 shard: all) */
    int jsonl;                  /* JSON lines instead of CSV */
    char *const *metric_names;  /* for JSON lines */
    const unsigned char *is_string;
    int64_t n_local;            /* points this run simulates */
    struct sweep_shared shared; /* parse lock, loaded models */
    pthread_mutex_t lock;       /* guards the fields below */
    pthread_cond_t done;        /* a point finished */
    pthread_cond_t space;       /* the window moved */
    int64_t next;               /* next point to take */
    int64_t written;            /* rows written so far */
    int stop;                   /* take no more points */
    char **rows;                /* per local point: its CSV row, until
                                   written */
    double *y;                  /* per local point: the metric (NAN:
                                   none) */
    int64_t n_ok;               /* points simulated */
    char *first_error;          /* the first error message, by point */
    int64_t first_error_point;
};

/* One point's row as text, and the plotted value.  Caller frees. */
static char *
format_row(struct pool *p, int64_t point, double *y, int *ok,
           char **message)
{
    struct sweep_result res;
    sweep_point_run(p->sw, p->base_argc, p->base_argv, point,
                    &p->shared, &res);
    char *text = NULL;
    size_t len = 0;
    FILE *mem = xopen_memstream(&text, &len);
    if (p->jsonl) {
        sweep_jsonl_row(p->sw, point, &res, p->metric_names, p->is_string,
                        p->n_metrics, mem);
        fclose(mem);
        if (p->shard_n > 1) {
            char *t = xasprintf("{\"point\":%lld,\"n_points\":%lld,%s",
                                (long long)point,
                                (long long)p->sw->n_points, text + 1);
            free(text);
            text = t;
        }
    } else {
        if (p->shard_n > 1)
            fprintf(mem, "%lld,%lld,", (long long)point,
                    (long long)p->sw->n_points);
        sweep_csv_row(p->sw, point, &res, p->n_metrics, mem);
        fclose(mem);
    }
    *y = NAN;
    *ok = res.ok;
    *message = NULL;
    if (res.ok && p->metric >= 0) {
        const char *v = res.values[p->metric];
        char *end;
        double d = strtod(v, &end);
        *y = strcmp(v, "true") == 0    ? 1
             : strcmp(v, "false") == 0 ? 0
             : *end == '\0' && end != v ? d
                                        : NAN;
    }
    if (!res.ok) {
        *message = res.message;
        res.message = NULL;
    }
    sweep_result_free(&res);
    return text;
}

static void *
worker(void *arg)
{
    struct pool *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->stop && p->next < p->n_local
               && p->next >= p->written + SWEEP_WINDOW)
            pthread_cond_wait(&p->space, &p->lock);
        if (p->stop || p->next >= p->n_local)
            break;
        int64_t i = p->next++;
        pthread_mutex_unlock(&p->lock);
        double y;
        int ok;
        char *message;
        char *row = format_row(p, p->shard_k + i * p->shard_n, &y, &ok,
                               &message);
        pthread_mutex_lock(&p->lock);
        p->rows[i] = row;
        if (p->y)
            p->y[i] = y;
        p->n_ok += ok;
        if (message && (p->first_error == NULL
                        || i < p->first_error_point)) {
            free(p->first_error);
            p->first_error = message;
            p->first_error_point = i;
        } else {
            free(message);
        }
        pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* Write the rows that are ready, in order, to out; returns how many. */
static int64_t
write_ready(struct pool *p, FILE *out)
{
    int64_t n = 0;
    while (p->written < p->n_local && p->rows[p->written]) {
        fputs(p->rows[p->written], out);
        free(p->rows[p->written]);
        p->rows[p->written] = NULL;
        p->written++;
        n++;
    }
    return n;
}

/* Run every point on jobs threads, writing rows to out in order.  Returns
 * 1 when Ctrl-C stopped it (the rows written are complete), else 0. */
static int
run_points(struct pool *p, int jobs, FILE *out)
{
    struct progress bar;
    progress_start(&bar, "sweep", p->n_local);
    pthread_t *threads = batch_start_workers(jobs, worker, p);

    int interrupted = 0;
    pthread_mutex_lock(&p->lock);
    while (p->written < p->n_local) {
        if (p->rows[p->written] == NULL)
            batch_wait_tick(&p->done, &p->lock);
        if (sweep_interrupted) {
            interrupted = 1;
            break;
        }
        if (write_ready(p, out) > 0)
            pthread_cond_broadcast(&p->space);
        progress_update(&bar, p->written);
    }
    /* Points in flight finish; no new ones start. */
    p->stop = 1;
    pthread_cond_broadcast(&p->space);
    pthread_mutex_unlock(&p->lock);
    batch_join_workers(threads, jobs);
    write_ready(p, out);
    progress_finish(&bar, p->written);
    return interrupted;
}

/* ---- the command ---- */

struct sweep_opts {
    const char *out, *plot, *metric, *term, *report, *shard, *format;
    int jobs;
};

/* The checks of sweep's own options O (SW's axes given): CMD_RUN, or
 * EXIT_USAGE after the message. */
static int
check_sweep_opts(const struct sweep *sw, struct sweep_opts *o,
                 const char *jobs)
{
    if (sw->n_axes == 0)
        return cmd_errorf("sweep", 1, "nothing to vary: give --vary "
                          "KEY=SPEC, e.g. --vary grad_accum=1,2,4");
    if (!(o->plot || o->report) != !o->metric)
        return cmd_errorf("sweep", 1, o->metric
                              ? "--metric needs --plot PREFIX (where to "
                                "write the plot)"
                          : o->plot ? "--plot needs --metric KEY (the column "
                                      "to plot, e.g. step_time_s)"
                                    : "--report needs --metric KEY (the "
                                      "column to show, e.g. step_time_s)");
    if (o->term && strcmp(o->term, "png") != 0 && strcmp(o->term, "svg"))
        return cmd_errorf("sweep", 0, "--term: '%s' is not png or svg",
                          o->term);
    if (o->format && strcmp(o->format, "csv") != 0
        && strcmp(o->format, "jsonl") != 0)
        return cmd_errorf("sweep", 0, "--format: '%s' is not csv or jsonl "
                          "(JSON lines: one object per point)", o->format);
    if (o->out && o->report && strcmp(o->out, o->report) == 0)
        return cmd_errorf("sweep", 0, "--out and --report both name %s: the "
                          "report would replace the CSV (give two files)",
                          o->out);
    if (o->shard && (o->plot || o->report))
        return cmd_errorf("sweep", 0, "--shard writes part of the points: "
                          "plot or report the merged CSV instead (fsdpsim "
                          "merge)");
    if (jobs) {
        int64_t j;
        char *cause = NULL;
        if (units_parse_count(jobs, 1, BATCH_MAX_JOBS, &j, &cause) != 0) {
            cmd_errorf("sweep", 0, "--jobs: %s", cause);
            free(cause);
            return EXIT_USAGE;
        }
        o->jobs = (int)j;
    }
    return CMD_RUN;
}

/* Split argv into sweep's own options and the base simulate options
 * (base[0] = "sweep"): CMD_RUN, or the exit status after the help or the
 * message. */
static int
parse_sweep_args(int argc, char **argv, struct sweep *sw,
                 struct sweep_opts *o, char **base, int *base_argc)
{
    const char *jobs = NULL;
    struct search_list vary = {0};
    *base_argc = 0;
    base[(*base_argc)++] = argv[0];
    const struct search_opt own[] = {
        {"--vary", NULL, NULL, &vary},  {"--out", "-o", &o->out, NULL},
        {"--plot", NULL, &o->plot, NULL}, {"--metric", NULL, &o->metric, NULL},
        {"--term", NULL, &o->term, NULL}, {"--jobs", "-j", &jobs, NULL},
        {"--report", NULL, &o->report, NULL},
        {"--shard", NULL, &o->shard, NULL},
        {"--format", NULL, &o->format, NULL}};
    int rc = search_split_args(&cmd_sweep_entry, argc, argv, own,
                               (int)(sizeof own / sizeof own[0]), base,
                               base_argc);
    for (int i = 0; rc == CMD_RUN && i < vary.n; i++) {
        char *cause = NULL;
        if (sweep_add_axis(sw, vary.v[i], &cause) != 0) {
            cmd_error("sweep", cause, 0);
            free(cause);
            rc = EXIT_USAGE;
        }
    }
    search_list_free(&vary);
    return rc == CMD_RUN ? check_sweep_opts(sw, o, jobs) : rc;
}

/* --shard K/N of O into *shard_k, *shard_n, and --metric into *metric
 * (its column among METRICS, -1 without): 0, or EXIT_USAGE after the
 * message. */
static int
check_shard_and_metric(const struct sweep *sw, const struct sweep_opts *o,
                       char **metrics, int n_metrics, int64_t *shard_k,
                       int64_t *shard_n, int *metric)
{
    *shard_k = 0;
    *shard_n = 1;
    *metric = -1;
    if (o->shard) {
        char *cause = NULL;
        if (sweep_parse_shard(o->shard, shard_k, shard_n, &cause) != 0)
            return cmd_fail("sweep", cause, EXIT_USAGE);
    }
    if (!o->metric)
        return 0;
    for (int i = 0; i < n_metrics && *metric < 0; i++)
        if (strcmp(metrics[i], o->metric) == 0)
            *metric = i;
    if (*metric < 0)
        return cmd_errorf("sweep", 0, "--metric %s: not a result column "
                          "(e.g. step_time_s, tokens_per_s, mfu, "
                          "peak_mem_bytes; see 'fsdpsim simulate --format "
                          "json')", o->metric);
    if (sw->n_axes > 2)
        return cmd_errorf("sweep", 0, "--plot draws the first varied key on "
                          "x and one line per value of the second; this "
                          "sweep varies more than two");
    return 0;
}

/* After atomic_file_open, which installs its own handler to remove the
 * temporary file: these signals now keep the rows written instead (OLD
 * keeps what they did).  One that is ignored (nohup's SIGHUP) stays
 * ignored. */
static void
catch_stop_signals(struct sigaction *old)
{
    struct sigaction sa = {.sa_handler = on_sigint};
    sigemptyset(&sa.sa_mask);
    sweep_interrupted = 0;
    for (int i = 0; i < N_STOP_SIGNALS; i++) {
        sigaction(sweep_stop_signals[i], NULL, &old[i]);
        if (old[i].sa_handler != SIG_IGN)
            sigaction(sweep_stop_signals[i], &sa, NULL);
    }
}

/* P's points (P set up but for its threads' state) on JOBS threads (at
 * most O's --jobs, at most the points), rows to OUT: whether a signal
 * stopped them. */
static int
run_pool(struct pool *p, const struct sweep_opts *o, FILE *out)
{
    sweep_shared_init(&p->shared);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->done, NULL);
    pthread_cond_init(&p->space, NULL);
    p->rows = xcalloc(p->n_local + 1, sizeof *p->rows);
    if (p->metric >= 0)
        p->y = xcalloc(p->n_local + 1, sizeof *p->y);
    int jobs = o->jobs ? o->jobs : batch_default_jobs();
    if (jobs > p->n_local)
        jobs = (int)p->n_local;
    int interrupted = p->n_local > 0 ? run_points(p, jobs, out) : 0;
    for (int64_t i = 0; i < p->n_local; i++)
        free(p->rows[i]);
    free(p->rows);
    sweep_shared_destroy(&p->shared);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->space);
    return interrupted;
}

/* After the points: the exit status, from whether the rows reached
 * their file (AF with --out) or stdout, a signal stopped them
 * (INTERRUPTED), any point ran, and the plot or report O asks for. */
static int
finish_sweep(const struct sweep *sw, const struct sweep_opts *o,
             const struct pool *p, struct atomic_file *af, int interrupted,
             int argc, char **argv)
{
    char *cause = NULL;
    if (o->out ? atomic_file_commit(af, &cause) != 0
               : fflush(stdout) != 0 || ferror(stdout)) {
        if (cause == NULL)
            cause = xasprintf("cannot write the CSV: %s", strerror(errno));
        return cmd_fail("sweep", cause, EXIT_SYSTEM);
    }
    if (interrupted) {
        fprintf(stderr, "fsdpsim: interrupted: %lld of %lld points written"
                "%s%s\n", (long long)p->written, (long long)p->n_local,
                o->out ? " to " : "", o->out ? o->out : "");
        /* As the shell reports a process the signal ended: 130 for
         * Ctrl-C, 143 for SIGTERM, 129 for SIGHUP. */
        return 128 + (int)sweep_interrupted;
    }
    if (p->n_ok == 0 && p->n_local > 0 && p->shard_n == 1)
        /* (A shard may hold only error rows: the whole sweep decides.) */
        return cmd_errorf("sweep", 0, "no point of the sweep could be "
                          "simulated; the first: %s", p->first_error);
    if (o->report) {
        char *args = setup_join_args(argc, argv);
        char *line = xasprintf("fsdpsim %s", args);
        free(args);
        int rc = sweep_write_report(sw, p->y, p->written, o->metric,
                                    o->report, line, &cause);
        free(line);
        if (rc != 0)
            return cmd_fail("sweep", cause, EXIT_SYSTEM);
    }
    if (o->plot) {
        char *path = xasprintf("%s-%s.%s", o->plot, o->metric, o->term);
        int rc = sweep_plot(sw, p->y, p->written, o->metric, path, o->term,
                            &cause);
        if (rc != 0) {
            cmd_error("sweep", cause, 0);
            free(cause);
        } else if (o->out == NULL) {
            /* stdout holds the CSV: the path goes to stderr. */
            fprintf(stderr, "fsdpsim: wrote %s\n", path);
        } else {
            printf("%s\n", path);
        }
        free(path);
        if (rc != 0)
            return EXIT_SYSTEM;
    }
    return 0;
}

static int
cmd_sweep(int argc, char **argv)
{
    struct sweep sw;
    struct sweep_opts o = {.term = "png"};
    char **base = xcalloc(argc + 1, sizeof *base);
    int base_argc = 0, status = 0, n_metrics = 0;
    char **metrics = NULL;
    struct atomic_file af = {0};
    sweep_init(&sw);
    int rc = parse_sweep_args(argc, argv, &sw, &o, base, &base_argc);
    if (rc != CMD_RUN) {
        status = rc;
        goto out;
    }
    if ((status = search_check_base("sweep", "writes one CSV row per "
                                    "point", base_argc, base)) != 0)
        goto out;
    int64_t shard_k, shard_n;
    int metric;
    metrics = sweep_metric_names(&n_metrics);
    if ((status = check_shard_and_metric(&sw, &o, metrics, n_metrics,
                                         &shard_k, &shard_n, &metric)) != 0)
        goto out;
    FILE *out = stdout;
    if (o.out) {
        char *cause = NULL;
        if (atomic_file_open(&af, o.out, &cause) != 0) {
            cmd_error("sweep", cause, 0);
            free(cause);
            status = EXIT_SYSTEM;
            goto out;
        }
        out = af.f;
    }
    struct sigaction old_sa[N_STOP_SIGNALS];
    catch_stop_signals(old_sa);
    batch_keep_heap();

    int jsonl = o.format && strcmp(o.format, "jsonl") == 0;
    int n_strings = 0;
    unsigned char *is_string = jsonl ? sweep_metric_strings(&n_strings)
                                     : NULL;
    if (!jsonl) {
        if (shard_n > 1)
            fputs(SWEEP_SHARD_HEADER, out);
        sweep_csv_header(&sw, metrics, n_metrics, out);
    }
    struct pool p = {.sw = &sw, .base_argc = base_argc, .base_argv = base,
                     .n_metrics = n_metrics, .metric = metric,
                     .shard_k = shard_k, .shard_n = shard_n,
                     .jsonl = jsonl, .metric_names = metrics,
                     .is_string = is_string};
    p.n_local = sw.n_points > shard_k
                    ? (sw.n_points - shard_k + shard_n - 1) / shard_n
                    : 0;
    int interrupted = run_pool(&p, &o, out);
    for (int i = 0; i < N_STOP_SIGNALS; i++)
        sigaction(sweep_stop_signals[i], &old_sa[i], NULL);
    status = finish_sweep(&sw, &o, &p, &af, interrupted, argc, argv);
    free(p.y);
    free(p.first_error);
    free(is_string);
out:
    sweep_names_free(metrics, n_metrics);
    sweep_free(&sw);
    free(base);
    return status;
}

const struct cmd_entry cmd_sweep_entry = {
    .name = "sweep",
    .usage = "[simulate options] --vary KEY=SPEC [--vary ...] "
             "[--out FILE.csv] [--plot PREFIX --metric KEY [--term png|svg]] "
             "[--report FILE.html] "
             "[--jobs N] [--shard K/N]",
    .summary = "simulate a grid of settings, one CSV row per point",
    .exec = cmd_sweep,
    .help = cmd_sweep_help,
};
