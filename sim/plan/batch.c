/*
 * batch.c: simulate command lines on worker threads (see batch.h).
 *
 * The same thread model as `fsdpsim sweep`: threads rather than fork()ed
 * workers, since the simulator keeps no mutable globals (getopt's are
 * serialized by a lock in sweep_point_run).  Unlike a sweep, a search
 * keeps every result in memory until it ranks them, so there is no
 * window of rows to bound: a search has thousands of points at most.
 */
#define _POSIX_C_SOURCE 200809L
#include "batch.h"
#include "progress.h"
#include "xalloc.h"

#include <assert.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

/* How often the progress line and Ctrl-C are looked at, in ms. */
#define BATCH_TICK_MS 100

/* Set by SIGINT; a signal handler can reach nothing but globals.  Never
 * cleared: a command runs several batches (plan: one per GPU type and
 * bisection step), and after Ctrl-C none of the later ones may start. */
static volatile sig_atomic_t batch_sigint;

static void
on_sigint(int sig)
{
    (void)sig;
    batch_sigint = 1;
}

struct pool {
    const struct batch_point *pts;
    struct sweep_result *res;
    int64_t n;
    struct sweep empty;         /* no axis: a point is its base argv */
    struct sweep_shared shared; /* parse lock, loaded models */
    pthread_mutex_t lock;       /* guards next, done, stop */
    pthread_cond_t finished;
    int64_t next, done;
    int stop;
};

static void *
worker(void *arg)
{
    struct pool *p = arg;
    pthread_mutex_lock(&p->lock);
    while (!p->stop && p->next < p->n) {
        int64_t i = p->next++;
        pthread_mutex_unlock(&p->lock);
        sweep_point_run(&p->empty, p->pts[i].argc, p->pts[i].argv, 0,
                        &p->shared, &p->res[i]);
        pthread_mutex_lock(&p->lock);
        p->done++;
        pthread_cond_signal(&p->finished);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

int
batch_default_jobs(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > BATCH_MAX_JOBS ? BATCH_MAX_JOBS : (int)n;
}

void
batch_keep_heap(void)
{
#ifdef M_TRIM_THRESHOLD
    /* Rather than mapping and faulting them in again per point (a third
     * of the time of a large point otherwise). */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
}

pthread_t *
batch_start_workers(int jobs, void *(*run)(void *), void *arg)
{
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    pthread_t *threads = xcalloc(jobs, sizeof *threads);
    for (int i = 0; i < jobs; i++) {
        int err = pthread_create(&threads[i], NULL, run, arg);
        if (err != 0) {
            fprintf(stderr, "fsdpsim: cannot start a thread: %s\n",
                    strerror(err));
            abort();
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return threads;
}

void
batch_join_workers(pthread_t *threads, int jobs)
{
    for (int i = 0; i < jobs; i++)
        pthread_join(threads[i], NULL);
    free(threads);
}

void
batch_wait_tick(pthread_cond_t *cond, pthread_mutex_t *lock)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += BATCH_TICK_MS * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(cond, lock, &ts);
}

int
batch_run(const char *label, const struct batch_point *pts, int64_t n,
          int jobs, struct sweep_result *res)
{
    for (int64_t i = 0; i < n; i++)
        memset(&res[i], 0, sizeof res[i]);
    if (n == 0 || batch_sigint)
        return batch_sigint != 0;
    struct pool p = {.pts = pts, .res = res, .n = n};
    sweep_init(&p.empty);
    sweep_shared_init(&p.shared);
    pthread_mutex_init(&p.lock, NULL);
    pthread_cond_init(&p.finished, NULL);
    if (jobs <= 0)
        jobs = batch_default_jobs();
    if (jobs > n)
        jobs = (int)n;
    batch_keep_heap();
    struct sigaction sa = {.sa_handler = on_sigint}, old_sa;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_sa);
    pthread_t *threads = batch_start_workers(jobs, worker, &p);

    struct progress bar;
    progress_start(&bar, label, n);
    pthread_mutex_lock(&p.lock);
    while (p.done < n && !batch_sigint) {
        batch_wait_tick(&p.finished, &p.lock);
        progress_update(&bar, p.done);
    }
    p.stop = 1;
    pthread_mutex_unlock(&p.lock);
    batch_join_workers(threads, jobs);
    progress_finish(&bar, p.done);
    sigaction(SIGINT, &old_sa, NULL);
    sweep_shared_destroy(&p.shared);
    pthread_mutex_destroy(&p.lock);
    pthread_cond_destroy(&p.finished);
    return batch_sigint != 0;
}

void
batch_columns_init(struct batch_columns *c)
{
    c->names = sweep_metric_names(&c->n);
}

void
batch_columns_free(struct batch_columns *c)
{
    sweep_names_free(c->names, c->n);
    c->names = NULL;
    c->n = 0;
}

double
batch_value(const struct batch_columns *c, const struct sweep_result *res,
            const char *name)
{
    int k;
    for (k = 0; k < c->n; k++)
        if (strcmp(c->names[k], name) == 0)
            break;
    assert(k < c->n);
    if (!res->ok)
        return NAN;
    const char *v = res->values[k];
    char *end;
    double d = strtod(v, &end);
    return strcmp(v, "true") == 0    ? 1
           : strcmp(v, "false") == 0 ? 0
           : *end == '\0' && end != v ? d
                                      : NAN;
}
