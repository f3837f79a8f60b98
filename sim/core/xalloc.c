/*
 * xalloc.c: aborting allocators (see xalloc.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "xalloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
xalloc_die(size_t size)
{
    fprintf(stderr, "fsdpsim: out of host memory allocating %zu bytes\n",
            size);
    abort();
}

void *
xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (p == NULL)
        xalloc_die(size);
    return p;
}

void *
xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (p == NULL)
        xalloc_die(n * size);
    return p;
}

void *
xrealloc(void *p, size_t size)
{
    void *q = realloc(p, size ? size : 1);
    if (q == NULL)
        xalloc_die(size);
    return q;
}

void *
xgrow(void *p, size_t *cap, size_t need, size_t elem_size)
{
    size_t c = *cap;
    if (need <= c)
        return p;
    if (c < 16)
        c = 16;
    while (c < need)
        c *= 2;
    *cap = c;
    return xrealloc(p, c * elem_size);
}

void *
xmemdup(const void *p, size_t bytes)
{
    void *q = xmalloc(bytes ? bytes : 1);
    if (bytes)
        memcpy(q, p, bytes);
    return q;
}

char *
xstrdup(const char *s)
{
    return xstrndup(s, strlen(s));
}

char *
xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

/*
 * Format FMT with AP into a new string (caller frees).  AP is consumed, as
 * by vsnprintf(); the caller still owns and va_end()s it.  Aborts on a
 * format error, which only a bad format string can cause.
 */
char *
xvasprintf(const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        abort();
    char *p = xmalloc((size_t)n + 1);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    return p;
}

char *
xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = xvasprintf(fmt, ap);
    va_end(ap);
    return p;
}

FILE *
xopen_memstream(char **buf, size_t *len)
{
    FILE *f = open_memstream(buf, len);
    if (f == NULL) {
        fprintf(stderr, "fsdpsim: out of host memory opening a memory "
                "stream\n");
        abort();
    }
    return f;
}
