/*
 * steady.c: the summary of a long accumulation step from a short one (see
 * steady.h).
 *
 * Why the short step's fold carries over to the long one: the engine's
 * run up to the host reaching micro-batch k depends only on the ops
 * before it, which the two schedules share (the step's last micro-batch
 * and the optimizer come after), so both reach k in the same state.  The
 * short run found that state equal, shifted, to the one at micro-batch
 * k - p, with only copies of those p micro-batches coming up to the last
 * middle one; the long run has (A - A') / p more of them, each one period
 * later, and then the same end of step, shifted by as many periods.  That
 * needs A - A' to be a multiple of p, so A' is taken of A's parity (p is 1
 * or 2, FOLD_MAX_PERIOD), and a fold in every step: the later steps start
 * from the state the earlier ones leave.
 *
 * What the long step's summary needs of the short run does not depend on
 * A (struct steady_short), so a sweep's points that differ only in their
 * accumulation share one short run (struct steady_cache).
 */
#include "steady.h"
#include "engine.h"
#include "xalloc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The short step for A (0 when A is not longer): STEADY_MICRO_BATCHES
 * or one more, of A's parity. */
static int64_t
short_step(int64_t a)
{
    int64_t a1 = STEADY_MICRO_BATCHES;
    if ((a - a1) % 2 != 0)
        a1++;
    return a > a1 ? a1 : 0;
}

/* A short step's run, boiled down to what any longer step's summary
 * needs of it. */
struct steady_short {
    struct sched head;          /* the schedule's header, no ops */
    struct metrics_basis basis; /* with the reported step's period */
    struct engine_fold_jump *jumps;     /* one per step */
    double *window_ns;          /* per jump: engine_total_ns of a period */
    int n_jumps;
    double total_ns;            /* engine_total_ns of the short schedule */
};

static void
short_free(struct steady_short *sh)
{
    if (sh == NULL)
        return;
    free(sh->jumps);
    free(sh->window_ns);
    free(sh);
}

/* The short run S, NR boiled down, or NULL when it did not fold in every
 * step (then nothing can be said about a longer one). */
static struct steady_short *
boil_down(const struct sched *s, const struct topo *t,
          const struct sim_result *nr)
{
    const struct engine_result *r = &nr->res;
    if (r->too_long || r->n_jumps != s->iterations)
        return NULL;
    for (int i = 0; i < r->n_jumps; i++)
        if (r->jumps[i].iter != i)
            return NULL;
    struct steady_short *sh = xcalloc(1, sizeof *sh);
    sh->head = *s;
    sh->head.n_ops = 0;         /* what reads the header finds no ops */
    sh->head.cap_ops = 0;
    sh->head.ops = NULL;
    sh->head.dep_pool = NULL;
    sh->head.leaves = NULL;
    sh->head.leaf_sac_gemm = NULL;
    sh->head.units = NULL;
    sh->head.block_cls = NULL;
    sh->n_jumps = r->n_jumps;
    sh->jumps = xmemdup(r->jumps, sizeof *r->jumps * (size_t)r->n_jumps);
    sh->window_ns = xcalloc((size_t)r->n_jumps, sizeof *sh->window_ns);
    for (int i = 0; i < r->n_jumps; i++)
        sh->window_ns[i] = engine_total_ns(s, t, &r->cost, r->jumps[i].b1,
                                           r->jumps[i].b2);
    sh->total_ns = r->total_ns;
    const struct engine_fold_jump *j = &r->jumps[r->n_jumps - 1];
    struct metrics_steady at = {j->b1, j->b2, j->lo, j->t1, j->t2, 0, 0,
                                {0}, {0}};
    metrics_basis(s, r, &at, &sh->basis);
    return sh;
}

/* The short run SH stands for A micro-batches when each of its steps is
 * a whole number of periods short of A, and A's step would not have been
 * refused for its size: fills *x for the reported step and the allocator
 * figures of all steps. */
static int
extend(const struct steady_short *sh, int64_t a, struct metrics_steady *x)
{
    int64_t a1 = sh->head.micro_batches;
    memset(x, 0, sizeof *x);
    x->mem = sh->basis.mem;
    int64_t peak_shift = 0, shift = 0;
    double total = sh->total_ns;
    for (int i = 0; i < sh->n_jumps; i++) {
        const struct engine_fold_jump *j = &sh->jumps[i];
        if ((a - a1) % j->micro != 0)
            return 0;
        int64_t periods = (a - a1) / j->micro, period = j->t2 - j->t1;
        total += (double)periods * sh->window_ns[i];
        x->mem.retries += (int)periods * j->mem.retries;
        x->mem.syncs += (int)periods * j->mem.syncs;
        x->mem.ooms += (int)periods * j->mem.ooms;
        x->mem.stall_ns += periods * j->mem.stall_ns;
        /* The allocator's peak, when first reached after the jump,
         * comes that much later in the long step. */
        if (x->mem.peak_t_ns >= j->t2 + j->copies * period)
            peak_shift += periods * period;
        if (i == sh->n_jumps - 1)
            *x = (struct metrics_steady){j->b1, j->b2, j->lo, j->t1, j->t2,
                                         periods, shift, x->mem, j->mem};
        shift += periods * period;
    }
    x->mem.peak_t_ns += peak_shift;
    return total <= ENGINE_MAX_TOTAL_NS
           && (double)sh->head.iterations * (double)a
                      * sh->head.ops_bound_per_micro_batch
                  <= SCHED_MAX_OPS;
}

/* R's metrics from SH, whose schedule header becomes R's (no ops). */
static int
from_short(struct run *r, const struct steady_short *sh, struct metrics *m)
{
    struct metrics_steady x;
    if (!extend(sh, r->cfg.grad_accum, &x))
        return -1;
    sched_free(r->sched);
    r->sched = xmemdup(&sh->head, sizeof sh->head);
    r->sched->nccl = r->nccl;
    sched_set_batch(r->sched, &r->cfg);
    metrics_finish(&sh->basis, r->sched, r->topo, &x, m);
    return 0;
}

/* ---- the cache ---- */

struct cache_entry {
    char *key;
    struct steady_short *sh;    /* NULL: the short step did not fold */
    struct cache_entry *next;
};

#define CACHE_BUCKETS 4096
/* Entries are a few hundred bytes; a sweep of a million points holds at
 * most this many (the rest run as if there were no cache). */
#define CACHE_MAX 100000

struct steady_cache {
    pthread_mutex_t lock;
    struct cache_entry *bucket[CACHE_BUCKETS];
    int n;
};

struct steady_cache *
steady_cache_new(void)
{
    struct steady_cache *c = xcalloc(1, sizeof *c);
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

void
steady_cache_free(struct steady_cache *c)
{
    if (c == NULL)
        return;
    for (int b = 0; b < CACHE_BUCKETS; b++)
        for (struct cache_entry *e = c->bucket[b], *n; e; e = n) {
            n = e->next;
            free(e->key);
            short_free(e->sh);
            free(e);
        }
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static unsigned
hash(const char *s)
{
    unsigned h = 2166136261u;  /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h % CACHE_BUCKETS;
}

/* Whether KEY is there, with *sh its short run (NULL: did not fold). */
static int
cache_find(struct steady_cache *c, const char *key,
           const struct steady_short **sh)
{
    pthread_mutex_lock(&c->lock);
    struct cache_entry *e = c->bucket[hash(key)];
    while (e != NULL && strcmp(e->key, key) != 0)
        e = e->next;
    if (e != NULL)
        *sh = e->sh;
    pthread_mutex_unlock(&c->lock);
    return e != NULL;
}

/* Keep SH (taken over) under KEY, unless a point running beside this one
 * put it there first. */
static void
cache_put(struct steady_cache *c, const char *key, struct steady_short *sh)
{
    pthread_mutex_lock(&c->lock);
    unsigned b = hash(key);
    struct cache_entry *e = c->bucket[b];
    while (e != NULL && strcmp(e->key, key) != 0)
        e = e->next;
    if (e == NULL && c->n < CACHE_MAX) {
        e = xcalloc(1, sizeof *e);
        e->key = xstrdup(key);
        e->sh = sh;
        e->next = c->bucket[b];
        c->bucket[b] = e;
        c->n++;
        sh = NULL;
    }
    pthread_mutex_unlock(&c->lock);
    short_free(sh);
}

static int
is_accum_flag(const char *a, const char **value)
{
    static const char *const names[] = {"--grad-accum", "--grad_accum"};
    for (int i = 0; i < 2; i++) {
        size_t n = strlen(names[i]);
        if (strncmp(a, names[i], n) == 0 && (a[n] == '\0' || a[n] == '=')) {
            *value = a[n] == '=' ? a + n + 1 : NULL;
            return 1;
        }
    }
    return 0;
}

char *
steady_key(int argc, char *const *argv)
{
    /* Every word but the accumulation's, each with its length first, so
     * that no two command lines give one key. */
    char *key = NULL;
    size_t len = 0;
    FILE *out = xopen_memstream(&key, &len);
    for (int i = 0; i < argc; i++) {
        const char *v;
        if (is_accum_flag(argv[i], &v)) {
            if (v == NULL)
                i++;            /* its value is the next word */
            continue;
        }
        fprintf(out, "%zu:%s ", strlen(argv[i]), argv[i]);
    }
    fclose(out);
    return key;
}

/* ---- running ---- */

int
steady_run(struct run *r, struct steady_cache *cache, const char *key,
           struct sim_result *nr, struct metrics *m, int *steady,
           char **cause)
{
    *steady = 0;
    memset(nr, 0, sizeof *nr);
    int64_t a = r->cfg.grad_accum;
    /* A network model's answers depend on what it has seen before, and
     * --exact asks for every micro-batch: neither folds. */
    int eligible = r->cfg.network == NETWORK_ANALYTIC && !r->cfg.exact;
    int64_t a1 = eligible ? short_step(a) : 0;
    char *full_key = a1 > 0 && cache != NULL && key != NULL
                         ? xasprintf("%s%lld", key, (long long)a1)
                         : NULL;
    const struct steady_short *known = NULL;
    if (full_key != NULL && cache_find(cache, full_key, &known)) {
        /* A point with the same settings but its accumulation has run
         * the short step already: no schedule to build. */
        if (setup_prepare_plan(r, cause) != 0) {
            free(full_key);
            return -1;
        }
        if (known != NULL && from_short(r, known, m) == 0) {
            *steady = 1;
            free(full_key);
            return 0;
        }
        a1 = 0;                 /* it did not fold: the whole step */
        if (setup_build_sched(r, cause) != 0) {
            free(full_key);
            return -1;
        }
    } else {
        if (a1 > 0)
            r->cfg.grad_accum = a1;
        int rc = setup_prepare(r, cause);
        r->cfg.grad_accum = a;
        if (rc != 0) {
            free(full_key);
            return -1;
        }
    }
    if (a1 > 0) {
        struct steady_short *sh = NULL;
        if (simulate_schedule(r->sched, r->topo, &r->cfg, nr, cause) == 0)
            sh = boil_down(r->sched, r->topo, nr);
        else {
            free(*cause);
            *cause = NULL;
        }
        int ok = sh != NULL && from_short(r, sh, m) == 0;
        if (full_key != NULL)
            cache_put(cache, full_key, sh);
        else
            short_free(sh);
        free(full_key);
        if (ok) {
            *steady = 1;
            return 0;
        }
        /* Not a repeat in every step (or too long a step): the whole
         * one, simulated (folded where it repeats later). */
        sim_result_free(nr);
        memset(nr, 0, sizeof *nr);
        if (setup_build_sched(r, cause) != 0)
            return -1;
    } else {
        free(full_key);
    }
    if (simulate_schedule(r->sched, r->topo, &r->cfg, nr, cause) != 0)
        return -1;
    metrics_compute(r->sched, r->topo, &nr->res, m);
    return 0;
}
