/*
 * table.c: text cells as aligned columns or HTML (see table.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "table.h"
#include "xalloc.h"

#include <assert.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void
table_init(struct table *t, const char *const *head)
{
    memset(t, 0, sizeof *t);
    while (head[t->n_cols])
        t->n_cols++;
    t->head = xcalloc(t->n_cols, sizeof *t->head);
    t->left = xcalloc(t->n_cols, sizeof *t->left);
    for (int i = 0; i < t->n_cols; i++) {
        t->left[i] = head[i][0] == '<';
        t->head[i] = xstrdup(head[i] + t->left[i]);
    }
}

int
table_add_row(struct table *t)
{
    t->cells = xrealloc(t->cells, sizeof *t->cells * (t->n_rows + 1));
    t->row_class = xrealloc(t->row_class,
                            sizeof *t->row_class * (t->n_rows + 1));
    t->cells[t->n_rows] = xcalloc(t->n_cols, sizeof **t->cells);
    t->row_class[t->n_rows] = NULL;
    return t->n_rows++;
}

void
table_cell(struct table *t, int row, int col, const char *fmt, ...)
{
    assert(row >= 0 && row < t->n_rows && col >= 0 && col < t->n_cols);
    va_list ap;
    va_start(ap, fmt);
    free(t->cells[row][col]);
    t->cells[row][col] = xvasprintf(fmt, ap);
    va_end(ap);
}

void
table_row_class(struct table *t, int row, const char *cls)
{
    free(t->row_class[row]);
    t->row_class[row] = cls ? xstrdup(cls) : NULL;
}

void
table_free(struct table *t)
{
    for (int r = 0; r < t->n_rows; r++) {
        for (int c = 0; c < t->n_cols; c++)
            free(t->cells[r][c]);
        free(t->cells[r]);
        free(t->row_class[r]);
    }
    for (int c = 0; c < t->n_cols; c++)
        free(t->head[c]);
    free(t->cells);
    free(t->row_class);
    free(t->head);
    free(t->left);
    memset(t, 0, sizeof *t);
}

static const char *
cell(const struct table *t, int r, int c)
{
    return t->cells[r][c] ? t->cells[r][c] : "";
}

/* Column widths count bytes; every cell fsdpsim prints is ASCII. */
void
table_print_text(const struct table *t, const char *indent, FILE *out)
{
    int *w = xcalloc(t->n_cols, sizeof *w);
    for (int c = 0; c < t->n_cols; c++) {
        w[c] = (int)strlen(t->head[c]);
        for (int r = 0; r < t->n_rows; r++)
            if ((int)strlen(cell(t, r, c)) > w[c])
                w[c] = (int)strlen(cell(t, r, c));
    }
    for (int r = -1; r < t->n_rows; r++) {
        fputs(indent, out);
        for (int c = 0; c < t->n_cols; c++) {
            const char *s = r < 0 ? t->head[c] : cell(t, r, c);
            int last = c == t->n_cols - 1;
            if (t->left[c])
                fprintf(out, "%s%-*s", c ? "  " : "", last ? 0 : w[c], s);
            else
                fprintf(out, "%s%*s", c ? "  " : "", w[c], s);
        }
        fputc('\n', out);
    }
    free(w);
}

static void
escape_char(FILE *out, char c)
{
    switch (c) {
    case '&': fputs("&amp;", out); break;
    case '<': fputs("&lt;", out); break;
    case '>': fputs("&gt;", out); break;
    case '"': fputs("&quot;", out); break;
    default: fputc(c, out); break;
    }
}

void
table_html_escape(FILE *out, const char *s)
{
    for (; *s; s++)
        escape_char(out, *s);
}

/* Browsers may break a line after any hyphen, which splits option names
 * (--activation-checkpointing), GPU types (dgx-h100) and units
 * (GPU-hours) where a reader does not expect it; a word in a span of
 * class "w" is kept whole by the page's stylesheet (report_html.c). */
void
table_html_words(FILE *out, const char *s)
{
    while (*s) {
        size_t gap = strspn(s, " \t\n");
        for (size_t i = 0; i < gap; i++)
            fputc(s[i], out);
        s += gap;
        size_t len = strcspn(s, " \t\n");
        int whole = len > 1 && memchr(s, '-', len) != NULL;
        if (whole)
            fputs("<span class=\"w\">", out);
        for (size_t i = 0; i < len; i++)
            escape_char(out, s[i]);
        if (whole)
            fputs("</span>", out);
        s += len;
    }
}

void
table_print_html(const struct table *t, FILE *out)
{
    fputs("<table>\n<thead><tr>", out);
    for (int c = 0; c < t->n_cols; c++) {
        fputs(t->left[c] ? "<th class=\"l\">" : "<th>", out);
        table_html_words(out, t->head[c]);
        fputs("</th>", out);
    }
    fputs("</tr></thead>\n<tbody>\n", out);
    for (int r = 0; r < t->n_rows; r++) {
        if (t->row_class[r]) {
            fputs("<tr class=\"", out);
            table_html_escape(out, t->row_class[r]);
            fputs("\">", out);
        } else {
            fputs("<tr>", out);
        }
        for (int c = 0; c < t->n_cols; c++) {
            fputs(t->left[c] ? "<td class=\"l\">" : "<td>", out);
            table_html_words(out, cell(t, r, c));
            fputs("</td>", out);
        }
        fputs("</tr>\n", out);
    }
    fputs("</tbody>\n</table>\n", out);
}
