/*
 * table.h: a table of text cells printed either as aligned text columns
 * (a terminal) or as an HTML <table> (a report), so that the two never
 * show different numbers.
 *
 * Ownership: the table owns copies of every string given to it.
 */
#ifndef FSDPSIM_TABLE_H
#define FSDPSIM_TABLE_H

#include <stdio.h>

struct table {
    int n_cols, n_rows;
    char **head;        /* n_cols names */
    char ***cells;      /* n_rows rows of n_cols cells */
    int *left;          /* per column: 1 left-aligned (text), 0 right */
    char **row_class;   /* per row: an HTML class ("pick") or NULL */
};

/* A table with n_cols columns named by the NULL-terminated head; a name
 * starting with '<' is left-aligned (the '<' is not printed). */
void table_init(struct table *t, const char *const *head);
/* Append a row; the cells are printf-formatted one by one by the caller
 * with table_cell.  Returns the row's index. */
int table_add_row(struct table *t);
void table_cell(struct table *t, int row, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void table_row_class(struct table *t, int row, const char *cls);
void table_free(struct table *t);

/* Aligned columns, two spaces apart, each line prefixed by indent. */
void table_print_text(const struct table *t, const char *indent, FILE *out);
/* <table> with a header row; cells HTML-escaped, hyphenated words kept
 * whole (table_html_words). */
void table_print_html(const struct table *t, FILE *out);

/* s with &, <, >, " escaped, onto out. */
void table_html_escape(FILE *out, const char *s);
/* s escaped, each space-separated word that holds a hyphen (and is more
 * than the hyphen) wrapped in <span class="w">, which report_html.c's
 * stylesheet keeps on one line while it fits. */
void table_html_words(FILE *out, const char *s);

#endif
