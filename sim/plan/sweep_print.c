/*
 * sweep_print.c: a sweep's plot of one metric (reports/sweep.gp) and its
 * HTML report (see sweep_print.h); the grid and the rows are sweep.c's.
 */
#define _POSIX_C_SOURCE 200809L
#include "sweep_print.h"
#include "gnuplot.h"
#include "report_html.h"
#include "table.h"
#include "xalloc.h"

#include <math.h>
#include <stdlib.h>

/* The metric against the first axis, one gnuplot data block per value of
 * the second: "pos x y" rows, the block's first line its title.  Into the
 * report H when given, else into the image file OUT.  0, or -1 with
 * *cause. */
static int
plot(const struct sweep *sw, const double *y, int64_t n_rows,
     const char *metric, const char *out, const char *term, struct html *h,
     char **cause)
{
    const struct sweep_axis *ax = &sw->axes[0];
    const struct sweep_axis *series = sw->n_axes > 1 ? &sw->axes[1] : NULL;
    int numeric = 1;
    for (int i = 0; i < ax->n_values; i++) {
        char *end;
        strtod(ax->values[i], &end);
        if (*end != '\0' || end == ax->values[i])
            numeric = 0;
    }
    char *dat;
    FILE *f = gnuplot_data_open("sweep", &dat, cause);
    if (f == NULL)
        return -1;
    int n_series = series ? series->n_values : 1;
    for (int s = 0; s < n_series; s++) {
        fprintf(f, "%s", s ? "\n\n" : "");
        if (series)
            fprintf(f, "pos x \"%s=%s\"\n", series->key, series->values[s]);
        else
            fprintf(f, "pos x \"%s\"\n", metric);
        for (int i = 0; i < ax->n_values; i++) {
            int64_t point = (int64_t)i * n_series + s;
            double v = point < n_rows ? y[point] : NAN;
            fprintf(f, numeric ? "%d %s " : "%d \"%s\" ", i,
                    ax->values[i]);
            if (isnan(v))
                fputs("NaN\n", f);
            else
                fprintf(f, "%.17g\n", v);
        }
    }
    if (gnuplot_data_close(f, &dat, cause) != 0)
        return -1;
    char *caption = xasprintf("%s against %s%s%s.", metric, ax->key,
                              series ? ", one line per " : "",
                              series ? series->key : "");
    const char *args[] = {dat, GNUPLOT_OUT, h ? "svg" : term, ax->key,
                          metric, sweep_axis_is_log(ax) ? "1" : "0",
                          numeric ? "1" : "0", NULL};
    int rc = html_plot_or_file(h, "sweep", args, caption, out, dat, cause);
    free(caption);
    return rc;
}

int
sweep_plot(const struct sweep *sw, const double *y, int64_t n_rows,
           const char *metric, const char *out, const char *term,
           char **cause)
{
    return plot(sw, y, n_rows, metric, out, term, NULL, cause);
}

int
sweep_write_report(const struct sweep *sw, const double *y, int64_t n_rows,
                   const char *metric, const char *path,
                   const char *command_line, char **cause)
{
    struct html h;
    char *title = xasprintf("fsdpsim sweep: %s", metric);
    int rc = html_open(&h, path, title, cause);
    free(title);
    if (rc != 0)
        return -1;
    html_p(&h, "Command: %s", command_line);
    if (plot(sw, y, n_rows, metric, NULL, "svg", &h, cause) != 0) {
        html_abort(&h);
        return -1;
    }
    const char **head = xcalloc(sw->n_axes + 2, sizeof *head);
    for (int i = 0; i < sw->n_axes; i++)
        head[i] = sw->axes[i].key;
    head[sw->n_axes] = metric;
    struct table t;
    table_init(&t, head);
    free(head);
    int *idx = xcalloc(sw->n_axes + 1, sizeof *idx);
    for (int64_t p = 0; p < n_rows; p++) {
        int r = table_add_row(&t);
        sweep_point_index(sw, p, idx);
        for (int i = 0; i < sw->n_axes; i++)
            table_cell(&t, r, i, "%s", sw->axes[i].values[idx[i]]);
        if (isnan(y[p])) {
            table_cell(&t, r, sw->n_axes, "error");
            table_row_class(&t, r, "bad");
        } else {
            table_cell(&t, r, sw->n_axes, "%.6g", y[p]);
        }
    }
    free(idx);
    html_h2(&h, "Points");
    html_table(&h, &t);
    table_free(&t);
    return html_commit(&h, cause);
}
