/*
 * xalloc.h: allocation helpers that never return NULL.
 *
 * Running out of host memory while simulating is not something the tool can
 * recover from, so these print a message and abort instead of making every
 * call site check for NULL (the redis/tmux/jq convention).  Everything they
 * return is owned by the caller and released with free().
 */
#ifndef FSDPSIM_XALLOC_H
#define FSDPSIM_XALLOC_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

void *xmalloc(size_t size);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t size);
/* Grow an array to hold at least need elements; *cap is updated. */
void *xgrow(void *p, size_t *cap, size_t need, size_t elem_size);
/* A copy of BYTES bytes at P (P may be NULL when BYTES is 0). */
void *xmemdup(const void *p, size_t bytes);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *xvasprintf(const char *fmt, va_list ap)
    __attribute__((format(printf, 1, 0)));
/* open_memstream(BUF, LEN): a stream into memory, *BUF owned by the
 * caller once the stream is closed. */
FILE *xopen_memstream(char **buf, size_t *len);

/* S as a plain char *, for an argv slot or a lookup key that points at a
 * string nothing writes through (a literal, a caller's const string):
 * getopt_long and the option parsers reorder argv's pointers but never
 * change its strings.  No cast, so -Wcast-qual stays on everywhere else. */
static inline char *
unconst(const char *s)
{
    union {
        const char *c;
        char *m;
    } u = {.c = s};
    return u.m;
}

#endif
