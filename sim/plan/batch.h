/*
 * batch.h: many simulate command lines run in parallel, for the commands
 * that search over settings (tune, plan).
 *
 * A point is a whole simulate command line; each is simulated by
 * sweep_point_run, so a point of a search and `fsdpsim simulate` with the
 * same flags can never disagree.  Points run on worker threads and their
 * results land in the caller's array by index, so the output does not
 * depend on which thread finished first.
 *
 * Ownership: the caller owns the argument vectors and the result array;
 * batch_run fills the results, which the caller releases with
 * sweep_result_free.
 */
#ifndef FSDPSIM_BATCH_H
#define FSDPSIM_BATCH_H

#include <stdint.h>

#include "sweep.h"

#include <pthread.h>
#include <stdint.h>

struct batch_point {
    int argc;
    char **argv;        /* argv[0] is the command's name */
};

/* Simulate n points on jobs threads (0: one per online CPU) into res[0..n).
 * While stderr is a terminal, a progress line "fsdpsim: LABEL: i of n
 * points" is kept up to date there.  Ctrl-C stops taking new points;
 * points already running finish.  Returns 1 when interrupted (the points
 * not run have ok = 0 and a NULL message), else 0. */
int batch_run(const char *label, const struct batch_point *pts, int64_t n,
              int jobs, struct sweep_result *res);

/* Most worker threads a --jobs may ask for. */
#define BATCH_MAX_JOBS 1024
/* The number of worker threads for jobs = 0: the online CPUs. */
int batch_default_jobs(void);

/* The worker-thread plumbing batch_run shares with sweep's own pool
 * (cmd_sweep.c, which writes its rows in order as they come).
 *
 * batch_keep_heap: every point allocates and frees the same large arrays;
 * keep them in the heap.  batch_start_workers: JOBS threads running
 * RUN(ARG), with SIGINT blocked in them so that it reaches the thread
 * that polls; batch_join_workers waits for them and frees the array.
 * batch_wait_tick: wait on COND (LOCK held) until signalled or one tick
 * (100 ms) has passed, the rate at which the progress line and Ctrl-C are
 * looked at (the progress line is progress.h's). */
void batch_keep_heap(void);
pthread_t *batch_start_workers(int jobs, void *(*run)(void *), void *arg);
void batch_join_workers(pthread_t *threads, int jobs);
void batch_wait_tick(pthread_cond_t *cond, pthread_mutex_t *lock);

/* The result column names (sweep_metric_names), looked up once. */
struct batch_columns {
    char **names;
    int n;
};
void batch_columns_init(struct batch_columns *c);
void batch_columns_free(struct batch_columns *c);
/* The value of column name in a simulated result, as a number (true is 1,
 * false 0); NAN when the result is an error or the cell is not a number.
 * name must be a column (asserted). */
double batch_value(const struct batch_columns *c,
                   const struct sweep_result *res, const char *name);

#endif
