/*
 * progress.c: the progress line (see progress.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "progress.h"
#include "host_clock.h"

#include <math.h>
#include <stdio.h>
#include <unistd.h>

/* "0.4s", "42s", "3m07s", "2h05m": a duration short enough for one line. */
static void
format_duration(char *buf, size_t size, double s)
{
    long t = lround(s);
    if (s < 9.95)
        snprintf(buf, size, "%.1fs", s);
    else if (t < 60)
        snprintf(buf, size, "%lds", t);
    else if (t < 3600)
        snprintf(buf, size, "%ldm%02lds", t / 60, t % 60);
    else
        snprintf(buf, size, "%ldh%02ldm", t / 3600, t / 60 % 60);
}

char *
progress_format(char *buf, size_t size, const char *label, int64_t done,
                int64_t total, double elapsed, int final)
{
    int n = snprintf(buf, size, "fsdpsim: %s: %lld of %lld points (%.0f%%)",
                     label, (long long)done, (long long)total,
                     total > 0 ? 100.0 * (double)done / (double)total : 100.0);
    if (n < 0 || (size_t)n >= size)
        return buf;
    char d[32];
    if (done > 0 && elapsed > 0) {
        double rate = (double)done / elapsed;
        if (final)
            format_duration(d, sizeof d, elapsed);
        else
            format_duration(d, sizeof d, (double)(total - done) / rate);
        snprintf(buf + n, size - (size_t)n, ", %.*f points/s, %s %s",
                 rate < 10 ? 1 : 0, rate, d, final ? "in all" : "left");
    }
    return buf;
}

int
progress_due(double shown_at, double now)
{
    return shown_at < 0 || now - shown_at >= PROGRESS_INTERVAL_S;
}

static void
draw(struct progress *p, int64_t done, double now, int final)
{
    char line[160];
    progress_format(line, sizeof line, p->label, done, p->total, now - p->t0,
                    final);
    /* \r and erase to the end of the line: a shorter line leaves no
     * tail of the longer one before it. */
    fprintf(stderr, "\r%s\033[K%s", line, final ? "\n" : "");
    fflush(stderr);
    p->shown_at = now;
    p->shown = done;
}

void
progress_start(struct progress *p, const char *label, int64_t total)
{
    p->label = label;
    p->total = total;
    p->t0 = host_clock_s();
    p->shown_at = -1;
    p->shown = -1;
    p->tty = isatty(STDERR_FILENO);
}

void
progress_update(struct progress *p, int64_t done)
{
    if (!p->tty || done == p->shown)
        return;
    double now = host_clock_s();
    if (progress_due(p->shown_at, now))
        draw(p, done, now, 0);
}

void
progress_finish(struct progress *p, int64_t done)
{
    if (p->tty)
        draw(p, done, host_clock_s(), 1);
}
