/*
 * report_run.c: a simulated run's sections of an HTML report (see
 * report_run.h).  The plots are drawn from the same .dat files `simulate
 * --timeline --memory` writes, through temporary files, so the report
 * and `fsdpsim report` never draw different pictures of a run.
 */
#define _POSIX_C_SOURCE 200809L
#include "report_run.h"
#include "engine.h"
#include "gnuplot.h"
#include "metrics.h"
#include "net.h"
#include "setup.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Write a .dat with writer to a temporary file and plot it with script. */
static int
plot_dat(struct html *h, const struct run_view *v,
         void (*writer)(const struct run_view *, FILE *), const char *what,
         const char *caption, struct plot_time_base tb, char **cause)
{
    char *dat;
    FILE *f = gnuplot_data_open(what, &dat, cause);
    if (f == NULL)
        return -1;
    writer(v, f);
    if (gnuplot_data_close(f, &dat, cause) != 0)
        return -1;
    const char *args[] = {dat, GNUPLOT_OUT, "svg", tb.per_us, tb.unit,
                          NULL};
    int rc = html_plot(h, what, args, caption, cause);
    gnuplot_data_remove(dat);
    return rc;
}

/* The latest time either plot shows, in microseconds: the last op's end
 * or memory sample. */
static double
run_span_us(const struct run_view *v)
{
    int64_t last = 0;
    for (int i = 0; i < v->sched->n_ops; i++)
        if (v->res->times[i].end_ns > last)
            last = v->res->times[i].end_ns;
    int n;
    const struct mem_sample *ms = mem_samples(v->res->mem, &n);
    for (int i = 0; i < n; i++)
        if (ms[i].t_ns > last)
            last = ms[i].t_ns;
    return (double)last / 1e3;
}

int
report_run_view(struct html *h, const struct run_view *v, char **cause)
{
    /* One time unit for both plots, chosen once. */
    struct plot_time_base tb = gnuplot_time_base(run_span_us(v));
    char *text = NULL;
    size_t len = 0;
    FILE *mem = xopen_memstream(&text, &len);
    output_summary_text(v, mem);
    fclose(mem);
    html_pre(h, text);
    free(text);
    html_p(h, "Both plots share one time axis: simulated time since the "
           "run's start, in %s.", tb.unit);
    if (plot_dat(h, v, output_timeline_dat, "timeline",
                 "Timeline of the simulated steps, one row per CUDA stream "
                 "(C compute, U all-gather, P reduce-scatter); gaps on C "
                 "are exposed communication or host waits.", tb, cause) != 0)
        return -1;
    return plot_dat(h, v, output_memory_dat, "memory",
                    "Device memory per GPU over the steps: reserved by the "
                    "caching allocator, allocated, and each category.",
                    tb, cause);
}

int
report_run_argv(struct html *h, int argc, char **argv, char **cause)
{
    struct run r;
    char **av = xcalloc(argc + 1, sizeof *av);
    memcpy(av, argv, argc * sizeof *av);
    int rc = setup_parse_args(&r, argv[0], argc, av, cause);
    free(av);
    if (rc != 0 || setup_prepare(&r, cause) != 0) {
        setup_free(&r);
        return -1;
    }
    /* The same backend as the tables beside it (--network). */
    struct sim_result nr;
    struct metrics met;
    if (simulate_schedule(r.sched, r.topo, &r.cfg, &nr, cause) != 0) {
        setup_free(&r);
        return -1;
    }
    metrics_compute(r.sched, r.topo, &nr.res, &met);
    struct run_view v = {&r.cfg, r.model, r.topo, r.sched, &nr.res, &met,
                         r.command_line};
    rc = report_run_view(h, &v, cause);
    sim_result_free(&nr);
    setup_free(&r);
    return rc;
}
