/*
 * report_html.c: self-contained HTML reports (see report_html.h).
 *
 * Plots are gnuplot's SVG, inlined rather than referenced or base64'd
 * PNG: the page stays one file, text in the plots stays sharp and
 * searchable, and the SVG needs only its XML prolog removed to sit
 * inside HTML5.  The styling is a short inline stylesheet: readable
 * widths, tabular numbers right-aligned, the picked rows highlighted.
 */
#define _POSIX_C_SOURCE 200809L
#include "report_html.h"
#include "gnuplot.h"
#include "xalloc.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char html_style[] =
    "body{font-family:'DejaVu Sans',Helvetica,Arial,sans-serif;"
    "max-width:1240px;margin:2em auto;padding:0 .8em;color:#1a202c;"
    "line-height:1.45;overflow-wrap:break-word}\n"
    "h1{font-size:1.6em;border-bottom:2px solid #2b6cb0;padding-bottom:.2em}"
    "\nh2{font-size:1.25em;margin-top:1.8em;color:#2b6cb0}\n"
    /* Wide tables (plan's, tune's) fit a 1280-pixel window: a smaller
     * font, tight padding and headers that may wrap. */
    "table{border-collapse:collapse;margin:.8em 0;font-size:.8em;"
    "display:block;overflow-x:auto;max-width:100%}\n"
    "th,td{padding:.25em .4em;text-align:right;"
    "font-variant-numeric:tabular-nums;border-bottom:1px solid #e2e8f0;"
    "white-space:nowrap}\n"
    "th{background:#edf2f7;border-bottom:2px solid #a0aec0;"
    "white-space:normal;vertical-align:bottom}\n"
    "th.l,td.l{text-align:left}\n"
    /* Notes may wrap: numbers stay on one line, the table in the page. */
    "td.l:last-child{white-space:normal;min-width:7em}\n"
    "p.verdict{font-size:1.1em;background:#ebf8ff;border-left:4px solid "
    "#2b6cb0;padding:.5em .8em}\n"
    "tr.pick td{background:#fefcbf;font-weight:bold}\n"
    "tr.bad td{color:#a0aec0}\n"
    /* Long command lines wrap rather than run off the page. */
    "pre{background:#f7fafc;border:1px solid #e2e8f0;padding:.8em;"
    "overflow-x:auto;font-size:.9em;white-space:pre-wrap;"
    "overflow-wrap:anywhere}\n"
    /* A word with a hyphen (an option, a GPU type) stays on one line
     * while it fits the line; a longer one still wraps inside its box. */
    "span.w{display:inline-block;max-width:100%}\n"
    "th span.w{white-space:nowrap}\n"
    "figure{margin:1em 0}\n"
    "figure svg{max-width:100%;height:auto;display:block}\n"
    "figcaption{color:#4a5568;font-size:.9em;margin-top:.3em}\n";

int
html_open(struct html *h, const char *path, const char *title, char **cause)
{
    memset(h, 0, sizeof *h);
    if (atomic_file_open(&h->af, path, cause) != 0)
        return -1;
    h->f = h->af.f;
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
          "<meta charset=\"utf-8\"/>\n<title>", h->f);
    table_html_escape(h->f, title);
    fprintf(h->f, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<h1>",
            html_style);
    table_html_words(h->f, title);
    fputs("</h1>\n", h->f);
    return 0;
}

void
html_h2(struct html *h, const char *text)
{
    fputs("<h2>", h->f);
    table_html_words(h->f, text);
    fputs("</h2>\n", h->f);
}

void
html_p(struct html *h, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = xvasprintf(fmt, ap);
    va_end(ap);
    fputs("<p>", h->f);
    table_html_words(h->f, s);
    fputs("</p>\n", h->f);
    free(s);
}

void
html_verdict(struct html *h, const char *text)
{
    fputs("<p class=\"verdict\">", h->f);
    table_html_words(h->f, text);
    fputs("</p>\n", h->f);
}

void
html_pre(struct html *h, const char *text)
{
    fputs("<pre>", h->f);
    table_html_escape(h->f, text);
    fputs("</pre>\n", h->f);
}

void
html_command(struct html *h, const char *text)
{
    fputs("<pre class=\"cmd\">", h->f);
    table_html_words(h->f, text);
    fputs("</pre>\n", h->f);
}

void
html_table(struct html *h, const struct table *t)
{
    table_print_html(t, h->f);
}

/* Write line with every id and reference to one prefixed by "pN-":
 * gnuplot names the same things (gpPt0, gnuplot_plot_1, textbox) in every
 * plot, and ids must be unique in one page, or a <use> or url(#...) of
 * the second plot would point into the first. */
static void
put_prefixed(FILE *out, const char *line, int n)
{
    static const char *const refs[] = {"id='", "id=\"", "href='#",
                                       "href=\"#", "url(#", NULL};
    const char *p = line;
    while (*p) {
        const char *best = NULL;
        size_t blen = 0;
        for (int i = 0; refs[i]; i++) {
            const char *q = strstr(p, refs[i]);
            if (q && (best == NULL || q < best)) {
                best = q;
                blen = strlen(refs[i]);
            }
        }
        if (best == NULL) {
            fputs(p, out);
            return;
        }
        fwrite(p, 1, (size_t)(best - p) + blen, out);
        fprintf(out, "p%d-", n);
        p = best + blen;
    }
}

/* Copy an SVG file into the page without its XML prolog and doctype,
 * which HTML5 does not allow inside <body>. */
static int
inline_svg(FILE *out, const char *path, int n)
{
    FILE *in = fopen(path, "r");
    if (in == NULL)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    int in_doctype = 0;
    while (getline(&line, &cap, in) > 0) {
        if (strncmp(line, "<?xml", 5) == 0)
            continue;
        if (strncmp(line, "<!DOCTYPE", 9) == 0)
            in_doctype = 1;
        if (in_doctype) {
            if (strchr(line, '>'))
                in_doctype = 0;
            continue;
        }
        put_prefixed(out, line, n);
    }
    free(line);
    int bad = ferror(in);
    fclose(in);
    return bad ? -1 : 0;
}

int
html_plot(struct html *h, const char *script, const char *const *args,
          const char *caption, char **cause)
{
    /* gnuplot writes the SVG to a temporary file of ours. */
    char *path;
    FILE *f = gnuplot_data_open("svg", &path, cause);
    if (f == NULL)
        return -1;
    fclose(f);
    int rc = gnuplot_run(script, args, path, cause);
    if (rc == 0) {
        fprintf(h->f, "<figure id=\"plot-%d\">\n", ++h->n_plots);
        if (inline_svg(h->f, path, h->n_plots) != 0) {
            *cause = xasprintf("cannot read the plot back: %s",
                               strerror(errno));
            rc = -1;
        }
        fputs("<figcaption>", h->f);
        table_html_words(h->f, caption);
        fputs("</figcaption>\n</figure>\n", h->f);
    }
    gnuplot_data_remove(path);
    return rc;
}

int
html_plot_or_file(struct html *h, const char *script,
                  const char *const *args, const char *caption,
                  const char *out, char *dat, char **cause)
{
    int rc = h ? html_plot(h, script, args, caption, cause)
               : gnuplot_run(script, args, out, cause);
    gnuplot_data_remove(dat);
    return rc;
}

int
html_commit(struct html *h, char **cause)
{
    fputs("</body>\n</html>\n", h->f);
    return atomic_file_commit(&h->af, cause);
}

void
html_abort(struct html *h)
{
    atomic_file_abort(&h->af);
}
