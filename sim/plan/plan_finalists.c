/*
 * plan_finalists.c: `plan --network simgrid`, the best few
 * sizes of the analytic ranking simulated again with SimGrid (see plan.h).
 *
 * The analytic network model takes a cluster to be non-blocking and lets
 * concurrent collectives share the NICs equally; SimGrid routes every
 * flow over the platform (oversubscription, placement, background load)
 * and shares links max-min (net_simgrid.h).  A SimGrid step costs seconds
 * where an analytic one costs milliseconds, so plan ranks every size with
 * the analytic model and gives SimGrid only the finalists: each is the
 * same setting (nodes, micro-batch, accumulation, checkpointing; a step
 * of more than PLAN_ACCUM_HI micro-batches simulated at PLAN_ACCUM_LO and
 * PLAN_ACCUM_HI and extended as plan.c does), and its days, cost and
 * verdicts follow from SimGrid's step time by the same formulas
 * (plan_row_finish).  The finalists are then ranked by SimGrid's cost.
 *
 * SimGrid simulates one platform per process, and finalists differ in
 * their node count, so each point is `fsdpsim simulate ... --network
 * simgrid --format json` in a process of its own (this program again,
 * /proc/self/exe), one after the other; its summary is read back.
 */
#define _POSIX_C_SOURCE 200809L
#include "plan.h"
#include "xalloc.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* What a child simulation gave: its summary's figures, or its error. */
struct child_result {
    int ok;
    char *message;
    double step_s, exposed_s, mfu;
};

/* The number after "KEY": in the summary JSON TEXT, or NAN. */
static double
json_number(const char *text, const char *key)
{
    char *pat = xasprintf("\"%s\":", key);
    const char *p = strstr(text, pat);
    double v = NAN;
    if (p != NULL)
        v = strtod(p + strlen(pat), NULL);
    free(pat);
    return v;
}

/* The last line of TEXT that says something: a failed run's message. */
static char *
last_line(const char *text)
{
    const char *end = text + strlen(text);
    while (end > text && (end[-1] == '\n' || end[-1] == ' '))
        end--;
    const char *start = end;
    while (start > text && start[-1] != '\n')
        start--;
    if (start == end)
        return xstrdup("it printed nothing");
    size_t n = (size_t)(end - start);
    char *m = xmalloc(n + 1);
    memcpy(m, start, n);
    m[n] = '\0';
    return m;
}

/* Simulate point A (a plan point's words, argv[0] its command's name) in
 * a child: fsdpsim simulate A... --network=simgrid --format=json, its
 * output and errors read through one pipe. */
static void
run_child(const struct search_args *a, struct child_result *res)
{
    memset(res, 0, sizeof *res);
    int fd[2];
    if (pipe(fd) != 0) {
        res->message = xasprintf("pipe: %s", strerror(errno));
        return;
    }
    /* execv takes char *const[]: writable copies of the fixed words. */
    static char prog[] = "fsdpsim", cmd[] = "simulate",
                format[] = "--format=json";
    char **argv = xcalloc((size_t)a->argc + 4, sizeof *argv);
    int n = 0;
    argv[n++] = prog;
    argv[n++] = cmd;
    for (int i = 1; i < a->argc; i++)
        argv[n++] = a->argv[i];
    argv[n++] = format;
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], STDOUT_FILENO);
        dup2(fd[1], STDERR_FILENO);
        close(fd[0]);
        close(fd[1]);
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    free(argv);
    close(fd[1]);
    if (pid < 0) {
        close(fd[0]);
        res->message = xasprintf("fork: %s", strerror(errno));
        return;
    }
    char *text = NULL;
    size_t len = 0, cap = 0;
    char buf[4096];
    ssize_t got;
    while ((got = read(fd[0], buf, sizeof buf)) != 0) {
        if (got < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        text = xgrow(text, &cap, len + (size_t)got + 1, 1);
        memcpy(text + len, buf, (size_t)got);
        len += (size_t)got;
    }
    close(fd[0]);
    if (text == NULL)
        text = xstrdup("");
    text[len] = '\0';
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        res->step_s = json_number(text, "step_time_s");
        res->exposed_s = json_number(text, "exposed_comm_s");
        res->mfu = json_number(text, "mfu");
        res->ok = res->step_s > 0;
        if (!res->ok)
            res->message = xstrdup("its summary has no step time");
    } else if (WIFSIGNALED(status)) {
        res->message = xasprintf("stopped by signal %d", WTERMSIG(status));
    } else {
        res->message = last_line(text);
    }
    free(text);
}

/* Analytic rank order: sizes meeting the deadline and budget, cheapest
 * first (plan_row_cost), ties to the smaller cluster. */
static int
better(const struct plan_row *a, const struct plan_row *b)
{
    double ca = plan_row_cost(a, 0), cb = plan_row_cost(b, 0);
    if (ca != cb)
        return ca < cb;
    return a->nodes < b->nodes;
}

/* The rows of GR that compete, best first, at most N: into IDX. */
static int
pick(const struct plan_gpu_result *gr, int n, int *idx)
{
    int *all = xcalloc((size_t)gr->n_rows + 1, sizeof *all);
    int k = 0;
    for (int i = 0; i < gr->n_rows; i++) {
        const struct plan_row *w = &gr->rows[i];
        if (!w->meets_deadline || !w->within_budget)
            continue;
        int at = k++;           /* insertion: a few dozen rows */
        while (at > 0 && better(w, &gr->rows[all[at - 1]])) {
            all[at] = all[at - 1];
            at--;
        }
        all[at] = i;
    }
    if (k > n)
        k = n;
    memcpy(idx, all, sizeof *idx * (size_t)k);
    free(all);
    return k;
}

/* Finalist F (row W of GPU type G) from SimGrid's runs HI (and LO when
 * the step was extended). */
static void
fill(const struct plan_opts *o, const struct plan_gpu *g,
     const struct plan_row *w, const struct child_result *hi,
     const struct child_result *lo, struct plan_finalist *f)
{
    const struct child_result *bad = !hi->ok ? hi : lo && !lo->ok ? lo
                                                                 : NULL;
    if (bad != NULL) {
        f->error = xstrdup(bad->message);
        return;
    }
    double t = hi->step_s, e = hi->exposed_s, mfu = hi->mfu;
    if (lo != NULL) {
        double tA = plan_extend(t, lo->step_s, w->grad_accum);
        e = plan_extend(e, lo->exposed_s, w->grad_accum);
        if (e < 0)
            e = 0;
        mfu *= (double)w->grad_accum / PLAN_ACCUM_HI * t / tA;
        t = tA;
    }
    f->ok = 1;
    f->sg = *w;
    f->sg.step_s = t;
    f->sg.tokens_per_s = (double)w->micro_batch * w->grad_accum * o->seq_len
                         * w->gpus / t;
    f->sg.mfu = mfu;
    f->sg.exposed_share = e / t;
    plan_row_finish(o, g, &f->sg);
}

/* Row W's setting at ACCUM micro-batches, simulated on SimGrid. */
static void
simulate(const struct plan_opts *o, const struct plan_gpu *g,
         const struct plan_row *w, int64_t accum, struct child_result *res)
{
    struct search_args a;
    plan_point_args(o, g, w->nodes, w->micro_batch, accum, w->checkpointing,
                    &a);
    for (int i = 0; i < o->n_sg_args; i++)
        search_args_add(&a, "%s", o->sg_args[i]);
    run_child(&a, res);
    search_args_free(&a);
}

static int
cmp_sg(const void *pa, const void *pb)
{
    const struct plan_finalist *a = pa, *b = pb;
    if (a->ok != b->ok)
        return a->ok ? -1 : 1;  /* what SimGrid refused comes last */
    if (a->ok) {
        /* A finalist that misses the deadline under SimGrid falls behind
         * every one that still meets it. */
        int ma = a->sg.meets_deadline && a->sg.within_budget;
        int mb = b->sg.meets_deadline && b->sg.within_budget;
        if (ma != mb)
            return ma ? -1 : 1;
        if (better(&a->sg, &b->sg))
            return -1;
        if (better(&b->sg, &a->sg))
            return 1;
    }
    return a->analytic_rank - b->analytic_rank;
}

int
plan_finalists(const struct plan_opts *o, struct plan_result *r)
{
    for (int i = 0; i < r->n_gpus; i++) {
        const struct plan_gpu *g = &o->gpus[i];
        struct plan_gpu_result *gr = &r->per_gpu[i];
        int *idx = xcalloc((size_t)o->finalists, sizeof *idx);
        int n = pick(gr, o->finalists, idx);
        gr->finalists = xcalloc((size_t)n + 1, sizeof *gr->finalists);
        gr->n_finalists = n;
        for (int k = 0; k < n; k++) {
            const struct plan_row *w = &gr->rows[idx[k]];
            struct plan_finalist *f = &gr->finalists[k];
            f->row = idx[k];
            f->analytic_rank = k + 1;
            struct child_result hi, lo;
            if (w->extrapolated) {
                simulate(o, g, w, PLAN_ACCUM_LO, &lo);
                simulate(o, g, w, PLAN_ACCUM_HI, &hi);
            } else {
                simulate(o, g, w, w->grad_accum, &hi);
            }
            fill(o, g, w, &hi, w->extrapolated ? &lo : NULL, f);
            free(hi.message);
            if (w->extrapolated)
                free(lo.message);
        }
        qsort(gr->finalists, (size_t)n, sizeof *gr->finalists, cmp_sg);
        free(idx);
    }
    return 0;
}
