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
 * needs A - A' to be a multiple of p, so A' is taken of A's parity (p is
 * mostly 1 or 2), and a fold in every step: the later steps start from the
 * state the earlier ones leave.
 *
 * Longer periods (up to ENGINE_FOLD_MAX_PERIOD, a run that does not fit
 * and reshuffles its cached segments on every retry) or a later repeat
 * need a longer short step: a probe of STEADY_PROBE_MICRO_BATCHES says,
 * per step, from which micro-batch and with which period the state
 * repeats, and the short step for A is then the shortest that still
 * reaches every repeat with A - A' a multiple of every period.  The probe
 * only chooses A'; A''s own run must fold in every step to be used.
 * The steps of that run need not be equally long (sched_build_steps):
 * each step only needs to be a whole number of its own periods shorter
 * than A, the later steps' periods depending on where the earlier ones
 * ended (try_own_steps).
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
    int complete;               /* folded in every step: the rest is set */
    int need;                   /* micro-batches a step needs to reach
                                   each of these repeats */
    int64_t period;             /* lcm of the steps' periods */
    int *steps;                 /* per step: the micro-batches it ran */
    int *step_need;             /* per step: those it needs to reach its
                                   repeat */
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
    free(sh->steps);
    free(sh->step_need);
    free(sh);
}

static int64_t
gcd(int64_t a, int64_t b)
{
    while (b != 0) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* The short run S, NR boiled down; not complete when it did not fold in
 * every step (then nothing can be said about a longer one). */
static struct steady_short *
boil_down(const struct sched *s, const struct topo *t,
          const struct sim_result *nr)
{
    const struct engine_result *r = &nr->res;
    struct steady_short *sh = xcalloc(1, sizeof *sh);
    if (r->too_long || r->n_jumps != s->iterations)
        return sh;
    sh->period = 1;
    sh->steps = xcalloc((size_t)s->iterations, sizeof *sh->steps);
    sh->step_need = xcalloc((size_t)s->iterations, sizeof *sh->step_need);
    for (int i = 0; i < r->n_jumps; i++) {
        const struct engine_fold_jump *j = &r->jumps[i];
        if (j->iter != i)
            return sh;
        sh->steps[i] = sched_step_micro_batches(s, i);
        /* The host reached micro-batch k (op b2) in the state of k - p:
         * a step of A has that repeat when k is one of its middle
         * micro-batches, up to A - 2 (engine_fold.c records it even
         * with no whole period after it). */
        int need = s->ops[j->b2].micro + 2;
        sh->step_need[i] = need;
        if (need > sh->need)
            sh->need = need;
        sh->period = sh->period / gcd(sh->period, j->micro) * j->micro;
    }
    sh->complete = 1;
    sh->head = *s;
    sh->head.n_ops = 0;         /* what reads the header finds no ops */
    sh->head.cap_ops = 0;
    sh->head.ops = NULL;
    sh->head.dep_pool = NULL;
    sh->head.leaves = NULL;
    sh->head.leaf_sac_gemm = NULL;
    sh->head.units = NULL;
    sh->head.block_cls = NULL;
    sh->head.step_micro_batches = NULL;
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

/* Whether a step of A micro-batches would be refused for its size
 * (sched_build's bound on the ops), by SH's schedule's bound per
 * micro-batch: then no short run stands for it. */
static int
too_many_ops(const struct steady_short *sh, int64_t a)
{
    return (double)sh->head.iterations * (double)a
               * sh->head.ops_bound_per_micro_batch
           > SCHED_MAX_OPS;
}

/* The short run SH stands for A micro-batches when each of its steps is
 * a whole number of periods short of A, and A's step would not have been
 * refused for its size: fills *x for the reported step and the allocator
 * figures of all steps. */
static int
extend(const struct steady_short *sh, int64_t a, struct metrics_steady *x)
{
    memset(x, 0, sizeof *x);
    if (!sh->complete)
        return 0;
    x->mem = sh->basis.mem;
    int64_t peak_shift = 0, shift = 0;
    double total = sh->total_ns;
    for (int i = 0; i < sh->n_jumps; i++) {
        const struct engine_fold_jump *j = &sh->jumps[i];
        /* Each step of its own length: the later steps start from the
         * state the earlier ones leave, the same (shifted) in both runs
         * when every earlier step is a whole number of its periods
         * shorter. */
        int64_t a1 = sh->steps[i];
        if (a < a1 || (a - a1) % j->micro != 0)
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
    return total <= ENGINE_MAX_TOTAL_NS && !too_many_ops(sh, a);
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
    struct steady_short *sh;
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

/* Whether KEY is there, with *sh its short run. */
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

/* Keep SH under KEY and return what is kept there: SH, or the equal run
 * a point beside this one put there first (SH freed).  NULL when the
 * cache is full: SH stays the caller's. */
static const struct steady_short *
cache_put(struct steady_cache *c, const char *key, struct steady_short *sh)
{
    pthread_mutex_lock(&c->lock);
    unsigned b = hash(key);
    struct cache_entry *e = c->bucket[b];
    while (e != NULL && strcmp(e->key, key) != 0)
        e = e->next;
    const struct steady_short *kept = NULL;
    if (e != NULL) {
        short_free(sh);
        kept = e->sh;
    } else if (c->n < CACHE_MAX) {
        e = xcalloc(1, sizeof *e);
        e->key = xstrdup(key);
        e->sh = sh;
        e->next = c->bucket[b];
        c->bucket[b] = e;
        c->n++;
        kept = sh;
    }
    pthread_mutex_unlock(&c->lock);
    return kept;
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

/* One steady_run's short runs: borrowed from the cache or, without one,
 * owned here. */
struct shorts {
    struct run *r;
    struct steady_cache *cache;
    const char *key;
    int plan_ready;
    struct steady_short *own[4];    /* the short, the probe, A's own,
                                       the whole step */
    int n_own;
};

static void
shorts_free(struct shorts *sr)
{
    for (int i = 0; i < sr->n_own; i++)
        short_free(sr->own[i]);
}

/* The plan (model, topology, wrapping) once, for every schedule built
 * after; errors blamed as setup_prepare does. */
static int
need_plan(struct shorts *sr, char **cause)
{
    if (sr->plan_ready)
        return 0;
    if (setup_prepare_plan(sr->r, cause) != 0) {
        *cause = config_blame(&sr->r->cfg, NULL, *cause);
        return -1;
    }
    sr->plan_ready = 1;
    return 0;
}

/* R's schedule with A micro-batches per step, the rest of R's settings. */
static int
build_with(struct run *r, int64_t a, char **cause)
{
    int64_t want = r->cfg.grad_accum;
    r->cfg.grad_accum = a;
    int rc = setup_build_sched(r, cause);
    r->cfg.grad_accum = want;
    if (rc != 0)
        *cause = config_blame(&r->cfg, NULL, *cause);
    return rc;
}

/* The key of the run of A micro-batches a step, or of STEPS[it] in step
 * it (NULL: A in each). */
static char *
short_key(const struct shorts *sr, int64_t a, const int *steps)
{
    if (steps == NULL)
        return xasprintf("%s%lld", sr->key, (long long)a);
    char *key = NULL;
    size_t len = 0;
    FILE *out = xopen_memstream(&key, &len);
    fputs(sr->key, out);
    for (int it = 0; it < sr->r->cfg.iterations; it++)
        fprintf(out, "%s%d", it > 0 ? "/" : "", steps[it]);
    fclose(out);
    return key;
}

/* Keep SH, run for A micro-batches (or STEPS), in the cache or in SR. */
static const struct steady_short *
keep(struct shorts *sr, int64_t a, const int *steps, struct steady_short *sh)
{
    if (sr->cache == NULL || sr->key == NULL) {
        sr->own[sr->n_own++] = sh;
        return sh;
    }
    char *k = short_key(sr, a, steps);
    const struct steady_short *kept = cache_put(sr->cache, k, sh);
    free(k);
    if (kept == NULL)           /* a full cache: this run's alone */
        sr->own[sr->n_own++] = sh;
    return kept != NULL ? kept : sh;
}

/* Whether the cache holds the run of A micro-batches a step (or STEPS[it]
 * in step it) already: *sh. */
static int
short_known_steps(struct shorts *sr, int64_t a, const int *steps,
                  const struct steady_short **sh)
{
    char *k = short_key(sr, a, steps);
    int hit = cache_find(sr->cache, k, sh);
    free(k);
    return hit;
}

static int
short_known(struct shorts *sr, int64_t a, const struct steady_short **sh)
{
    return short_known_steps(sr, a, NULL, sh);
}

/* R's schedule with STEPS[it] micro-batches in step it, the rest of R's
 * settings.  Only built after the same settings' schedule of STEPS[0]
 * micro-batches a step passed setup_build_sched, so NCCL has accepted
 * its collectives already: the same kinds on the same groups. */
static int
build_steps(struct run *r, const int *steps, char **cause)
{
    sched_free(r->sched);
    r->sched = sched_build_steps(r->model, &r->plan, &r->cfg, r->topo, steps,
                                 cause);
    if (r->sched == NULL) {
        *cause = config_blame(&r->cfg, NULL, *cause);
        return -1;
    }
    r->sched->nccl = r->nccl;
    return 0;
}

/* The run of R's settings with A micro-batches a step (or STEPS[it] in
 * step it, NULL: A in each), boiled down: from the cache, or built and
 * simulated (not complete when the network model refused it).  NULL with
 * *cause on bad settings. */
static const struct steady_short *
short_get_steps(struct shorts *sr, int64_t a, const int *steps, char **cause)
{
    const struct steady_short *known = NULL;
    if (sr->cache != NULL && sr->key != NULL
        && short_known_steps(sr, a, steps, &known))
        return known;
    if (need_plan(sr, cause) != 0
        || (steps != NULL ? build_steps(sr->r, steps, cause)
                          : build_with(sr->r, a, cause)) != 0)
        return NULL;
    struct sim_result nr;
    struct steady_short *sh;
    if (simulate_schedule(sr->r->sched, sr->r->topo, &sr->r->cfg, &nr, cause) == 0) {
        sh = boil_down(sr->r->sched, sr->r->topo, &nr);
        sim_result_free(&nr);
    } else {
        free(*cause);
        *cause = NULL;
        sh = xcalloc(1, sizeof *sh);
    }
    return keep(sr, a, steps, sh);
}

static const struct steady_short *
short_get(struct shorts *sr, int64_t a, char **cause)
{
    return short_get_steps(sr, a, NULL, cause);
}

/* The shortest step of at least NEED micro-batches whose difference from
 * A is a multiple of PERIOD. */
static int64_t
residue_step(int64_t a, int64_t need, int64_t period)
{
    int64_t r = (a - need) % period;
    return need + (r < 0 ? r + period : r);
}

/* R's summary from a step already run that is a multiple of STEP0
 * micro-batches shorter than A and at least FROM long, if one stands for
 * A: the first step starts from the same state whatever A is, so its
 * period STEP0 is every step's; the later steps' periods, which depend
 * on where the first ended, may divide the difference although their
 * least common multiple with STEP0 (the probe's period) does not.  Only
 * steps the cache holds are tried: running one costs what A's own does. */
static int
from_known(struct shorts *sr, int64_t a, int64_t from, int64_t step0,
           struct metrics *m)
{
    for (int64_t a2 = a - step0; a2 >= from; a2 -= step0) {
        const struct steady_short *sh;
        if (short_known(sr, a2, &sh) && from_short(sr->r, sh, m) == 0)
            return 1;
    }
    return 0;
}

/* The micro-batches a step needs to reach a repeat NEED micro-batches in
 * (engine_fold.c's repeat), and enough for the allocator to settle. */
static int64_t
at_least(int64_t need)
{
    return need > STEADY_MICRO_BATCHES ? need : STEADY_MICRO_BATCHES;
}

/* Into STEPS, for A micro-batches: step 0 of A0, and each later one the
 * shortest that reaches the repeat SH shows in that step at A's phase of
 * its period (no longer than A).  Whether they differ from A0. */
static int
steps_for(const struct steady_short *sh, int64_t a, int64_t a0, int *steps)
{
    int differ = 0;
    steps[0] = (int)a0;
    for (int i = 1; i < sh->n_jumps; i++) {
        int64_t ai = residue_step(a, at_least(sh->step_need[i]),
                                  sh->jumps[i].micro);
        steps[i] = (int)(ai < a ? ai : a);
        differ |= steps[i] != steps[0];
    }
    return differ;
}

/* R's summary from a run whose steps each have their own length, if one
 * stands for A: 1, 0 when none does, -1 with *cause.  The first step
 * starts from the same state whatever A is, so PROBE says from where and
 * how often it repeats: it is made the shortest that reaches that repeat
 * at A's phase (A0).  Where it ends in its period sets how the next step
 * repeats, which a run whose first step is A0 long shows: the later
 * steps are made the shortest that reach that run's repeats at A's
 * phase.  That run is the step of A0 micro-batches in each (a sweep's
 * point of that A, kept) or, when A is A0 itself or no such step was
 * kept, one whose later steps are as long as the probe's repeats need
 * at A0's phase (shared by every A of A0's phase, and the run A0 itself
 * takes when the probe's later periods are A0's too).  So a step that
 * repeats every 10 from micro-batch 7 followed by one that repeats every
 * 6 takes about 24 + 13 micro-batches for any A, where one length for
 * both needs A's phase modulo 30, up to 48 micro-batches twice. */
static int
try_own_steps(struct shorts *sr, const struct steady_short *probe,
              struct metrics *m, char **cause)
{
    struct run *r = sr->r;
    int64_t a = r->cfg.grad_accum;
    int n = probe->n_jumps;
    int64_t a0 = residue_step(a, at_least(probe->step_need[0]),
                              probe->jumps[0].micro);
    if (a0 > a || n < 2)
        return 0;
    int *steps = xcalloc((size_t)n, sizeof *steps);
    int *guess = xcalloc((size_t)n, sizeof *guess);
    const struct steady_short *base = NULL;
    int rc = 0;
    int guessed = steps_for(probe, a0, a0, guess);
    if (!short_known(sr, a0, &base)) {
        base = short_get_steps(sr, a0, guessed ? guess : NULL, cause);
        if (base == NULL) {
            rc = -1;
            goto out;
        }
    }
    if (from_short(r, base, m) == 0) {
        rc = 1;
        goto out;
    }
    if (!base->complete || base->n_jumps != n)
        goto out;
    int differ = steps_for(base, a, a0, steps);
    if (memcmp(steps, base->steps, sizeof *steps * (size_t)n) == 0)
        goto out;               /* that one was just tried */
    const struct steady_short *sh =
        differ ? short_get_steps(sr, a, steps, cause)
               : short_get(sr, a0, cause);
    rc = sh == NULL ? -1 : from_short(r, sh, m) == 0;
out:
    free(steps);
    free(guess);
    return rc;
}

/* The probes, shortest first (or one more, of A's parity): each is run
 * for a point whose A is past half its length (a sweep's later points
 * share it), or used when a point of that length has run already. */
static const int64_t probe_steps[] = {STEADY_PROBE_SHORT_MICRO_BATCHES,
                                      STEADY_PROBE_MICRO_BATCHES};

/* R's summary from a short run, if one stands for its A: 1, 0 when none
 * does, -1 with *cause on bad settings. */
static int
try_short(struct shorts *sr, struct metrics *m, char **cause)
{
    struct run *r = sr->r;
    int64_t a = r->cfg.grad_accum;
    int64_t a1 = short_step(a);
    if (a1 == 0)
        return 0;
    /* The summary needs the plan (model, topology) even when the short
     * run is known. */
    if (need_plan(sr, cause) != 0)
        return -1;
    const struct steady_short *sh = short_get(sr, a1, cause);
    if (sh == NULL)
        return -1;
    if (from_short(r, sh, m) == 0)
        return 1;
    /* A's own step is refused (the whole step says so): no other run
     * need be tried, and the ones below would be up to A long each. */
    if (sh->complete && too_many_ops(sh, a))
        return 0;
    /* Alone, a probe and a second short run cost more than the whole
     * step folded by the engine; shared by a sweep's points they cost
     * less. */
    if (sr->cache == NULL || sr->key == NULL)
        return 0;
    /* A later repeat or a longer period: a probe says which step reaches
     * them at A's phase. */
    for (size_t i = 0; i < sizeof probe_steps / sizeof *probe_steps; i++) {
        /* Of A's parity: a later step starts from the state the step
         * before leaves, which depends on where in its period that one
         * ended. */
        int64_t len = probe_steps[i] + ((a - probe_steps[i]) % 2 != 0);
        const struct steady_short *probe;
        if (a > len / 2) {
            probe = short_get(sr, len, cause);
            if (probe == NULL)
                return -1;
        } else if (!short_known(sr, len, &probe)) {
            continue;
        }
        if (!probe->complete)
            continue;
        if (from_short(r, probe, m) == 0)
            return 1;
        if (too_many_ops(probe, a))
            return 0;
        int64_t from = probe->need > a1 ? probe->need : a1;
        if (from_known(sr, a, from, probe->jumps[0].micro, m))
            return 1;
        int own = try_own_steps(sr, probe, m, cause);
        if (own != 0)
            return own;
        /* A step that ends at A's phase of the probe's periods; its later
         * steps may still repeat later than the probe's do (they start
         * from another state), so the next such step is tried too. */
        for (int64_t a2 = residue_step(a, probe->need > a1 ? probe->need
                                                           : a1,
                                       probe->period);
             a2 < a; a2 += probe->period) {
            sh = short_get(sr, a2, cause);
            if (sh == NULL)
                return -1;
            if (from_short(r, sh, m) == 0)
                return 1;
        }
        return 0;
    }
    return 0;
}

/* No short step stands for R's: the whole step, simulated (folded where
 * it repeats).  0, or -1 with *cause. */
static int
whole_step(struct shorts *sr, struct sim_result *nr, struct metrics *m,
           int eligible, char **cause)
{
    struct run *r = sr->r;
    if (need_plan(sr, cause) != 0
        || build_with(r, r->cfg.grad_accum, cause) != 0
        || simulate_schedule(r->sched, r->topo, &r->cfg, nr, cause) != 0)
        return -1;
    /* A step as long as other points' short steps or probe (a sweep's
     * points of 9 or 10 micro-batches, ...) is kept for them. */
    int64_t a = r->cfg.grad_accum;
    if (eligible && sr->cache != NULL && sr->key != NULL
        && a >= STEADY_MICRO_BATCHES && a <= STEADY_PROBE_MICRO_BATCHES + 1) {
        const struct steady_short *sh =
            keep(sr, a, NULL, boil_down(r->sched, r->topo, nr));
        /* Its sums over the step, made for the others, are this point's
         * too (metrics_compute adds them up again otherwise: a pass over
         * every op); the period's are not read without X. */
        if (sh->complete && sh->head.micro_batches == a) {
            metrics_finish(&sh->basis, r->sched, r->topo, NULL, m);
            return 0;
        }
    }
    metrics_compute(r->sched, r->topo, &nr->res, m);
    return 0;
}

int
steady_run(struct run *r, struct steady_cache *cache, const char *key,
           struct sim_result *nr, struct metrics *m, int *steady,
           char **cause)
{
    *steady = 0;
    memset(nr, 0, sizeof *nr);
    /* A network model's answers depend on what it has seen before, and
     * --exact asks for every micro-batch: neither folds. */
    int eligible = r->cfg.network == NETWORK_ANALYTIC && !r->cfg.exact;
    struct shorts sr = {r, cache, key, 0, {NULL}, 0};
    int rc = eligible ? try_short(&sr, m, cause) : 0;
    if (rc > 0)
        *steady = 1;
    else if (rc == 0)
        rc = whole_step(&sr, nr, m, eligible, cause);
    shorts_free(&sr);
    return rc < 0 ? -1 : 0;
}

int
steady_run_steps(struct run *r, const int *steps, struct metrics *m,
                 int *used, char **cause)
{
    struct shorts sr = {r, NULL, NULL, 0, {NULL}, 0};
    const struct steady_short *sh = short_get_steps(&sr, r->cfg.grad_accum,
                                                    steps, cause);
    *used = sh != NULL && from_short(r, sh, m) == 0;
    shorts_free(&sr);
    return sh != NULL ? 0 : -1;
}
