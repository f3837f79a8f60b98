/*
 * progress.h: the "points done, rate, time left" line a sweep (and tune's
 * and plan's searches) shows on a terminal.
 *
 * It goes to stderr only when stderr is a terminal, so it never lands in
 * an output file or a pipe, and it is redrawn at most every
 * PROGRESS_INTERVAL_S (a point can take well under a millisecond: a line
 * per point would cost more than the points).
 */
#ifndef FSDPSIM_PROGRESS_H
#define FSDPSIM_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

#define PROGRESS_INTERVAL_S 0.25

struct progress {
    const char *label;
    int64_t total;
    double t0;          /* when it started (monotonic seconds) */
    double shown_at;    /* when the line was last drawn, -1: never */
    int64_t shown;      /* the count it showed */
    int tty;            /* stderr is a terminal: draw at all */
};

void progress_start(struct progress *p, const char *label, int64_t total);
/* DONE points finished: redraw the line if it is due. */
void progress_update(struct progress *p, int64_t done);
/* The last line, with the total time, and a newline (if any was drawn
 * or the run took long enough to want one). */
void progress_finish(struct progress *p, int64_t done);

/* The line's text for DONE of TOTAL points after ELAPSED seconds: count,
 * percentage, points per second and (FINAL: the time taken, else) the time
 * left at that rate.  Returns BUF. */
char *progress_format(char *buf, size_t size, const char *label,
                      int64_t done, int64_t total, double elapsed, int final);
/* Whether a line drawn at SHOWN_AT (-1: none) is due again at NOW. */
int progress_due(double shown_at, double now);

#endif
