/*
 * report_html.h: one self-contained HTML page per run (simulate, sweep,
 * tune, plan): text, tables and gnuplot's SVG plots inlined, no scripts,
 * no external files, so the page can be mailed or archived alone.
 *
 * Usage: html_open, then sections, paragraphs, tables (table.h) and plots
 * in reading order, then html_commit, which writes the file atomically.
 * Ownership: struct html owns its output file until commit or abort.
 */
#ifndef FSDPSIM_REPORT_HTML_H
#define FSDPSIM_REPORT_HTML_H

#include <stdio.h>

#include "atomic_file.h"
#include "table.h"

struct html {
    struct atomic_file af;
    FILE *f;
    int n_plots;        /* <figure>s written */
};

/* Open path and write the head with the page's title.  -1 with *cause. */
int html_open(struct html *h, const char *path, const char *title,
              char **cause);
void html_h2(struct html *h, const char *text);
/* A paragraph of plain text (escaped, hyphenated words kept whole);
 * printf-style. */
void html_p(struct html *h, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The page's answer, highlighted (escaped, as html_p). */
void html_verdict(struct html *h, const char *text);
/* Preformatted text (escaped): code, a summary. */
void html_pre(struct html *h, const char *text);
/* A command line to copy (escaped): wraps between its words, an option
 * kept whole while it fits the line. */
void html_command(struct html *h, const char *text);
void html_table(struct html *h, const struct table *t);
/* Run reports/SCRIPT.gp with args (NULL-terminated, GNUPLOT_OUT standing
 * for the image, which is SVG: pass "svg" where the script takes its
 * terminal) and inline the SVG in a <figure> with caption.  -1 with
 * *cause when gnuplot fails. */
int html_plot(struct html *h, const char *script, const char *const *args,
              const char *caption, char **cause);
/* Plot into the page h when it is not NULL, else into the image file out
 * (gnuplot_run); either way the data file dat is removed and its path
 * freed afterwards.  -1 with *cause. */
int html_plot_or_file(struct html *h, const char *script,
                      const char *const *args, const char *caption,
                      const char *out, char *dat, char **cause);
/* Close the page and rename it into place; -1 with *cause. */
int html_commit(struct html *h, char **cause);
void html_abort(struct html *h);

#endif
