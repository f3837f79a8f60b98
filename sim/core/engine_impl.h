/*
 * engine_impl.h: the engine's state, shared by engine.c (running a
 * schedule) and engine_fold.c (skipping repeated micro-batches).  Not for
 * other files.
 */
#ifndef FSDPSIM_ENGINE_IMPL_H
#define FSDPSIM_ENGINE_IMPL_H

#include "engine.h"
#include "des.h"

#include <stddef.h>
#include <stdint.h>

enum { EV_HOST, EV_END, EV_WAKE };

struct queue {
    int *ids;
    size_t head, tail, cap;
};

/* What an op contends for while it runs. */
enum op_class { CLASS_OTHER, CLASS_COMPUTE, CLASS_COMM };

struct engine {
    const struct sched *s;
    const struct topo *t;
    struct engine_result *r;
    struct des *des;
    unsigned char *done;
    unsigned char *started;
    int64_t *ready_ns;          /* earliest GPU start (first launch) */
    int64_t *issue_end_ns;      /* host finished issuing it */
    struct queue stream_q[STREAM_COUNT];
    int stream_busy[STREAM_COUNT];
    struct queue pg_q[PG_COUNT];
    int pg_busy[PG_COUNT];
    /* Progress of running GPU ops: work left in ns at full speed, the
     * rate it runs at now (1 = full speed), and when that was set. */
    double *remaining_ns;
    double *rate;
    int64_t *rate_since_ns;
    unsigned char *cls;         /* enum op_class */
    unsigned char *uses_net;    /* a collective whose group spans nodes */
    double compute_slowdown, comm_slowdown;
    int *sms_held;              /* a collective: the SMs its channels take */
    int sms;                    /* the GPU's SMs */
    const struct engine_net *net;   /* NULL: equal NIC shares */
    int next_op;                /* host program counter */
    int blocked_on;             /* CPU_WAIT target, or -1 */
    int reached_op;             /* last op the host reached */
    int host_scheduled;
    /* GPU ops issued and not finished, and while an allocation's retry
     * waits for them all (the synchronize), when that wait began (-1:
     * none).  No snapshot sees a wait: the host is at a new op then. */
    int in_flight;
    int64_t sync_from;
    struct engine_fold *fold;   /* NULL: every micro-batch is simulated */
};

/* One of op ID's times (FIELD 0: issue, 1: start, 2: end) is set to V:
 * engine_fold.c records the writes made while it watches a micro-batch. */
void engine_fold_log(struct engine_fold *f, int id, int field, int64_t v);

static inline void
put_time(struct engine *e, int id, int field, int64_t v)
{
    (&e->r->times[id].issue_ns)[field] = v;
    if (e->fold != NULL)
        engine_fold_log(e->fold, id, field, v);
}

enum { T_ISSUE, T_START, T_END };

/* What folding needs of every op, gathered in the engine's one pass over
 * them (a long step's ops are tens of MB, and reading them is most of
 * what a pass costs): where each step's micro-batches start, and which
 * op allocates each buffer. */
struct engine_fold_scan {
    int micro_batches, iterations, n_buffers;
    int *first;         /* [iter * (micro_batches + 1) + k]: the first op
                           of micro-batch k (k = micro_batches: of the
                           optimizer), or -1; NULL: no folding */
    int *buf_alloc_op;  /* per buffer, or -1 */
};

/* Op ID seen by the scan SC. */
static inline void
engine_fold_scan_op(struct engine_fold_scan *sc, int id,
                    const struct sched_op *op)
{
    if (sc->first == NULL)
        return;
    if (op->kind == OP_ALLOC && op->buffer >= 0 && op->buffer < sc->n_buffers)
        sc->buf_alloc_op[op->buffer] = id;
    int a = sc->micro_batches;
    if (op->iter < 0 || op->iter >= sc->iterations || op->micro < 0
        || op->micro >= a)
        return;
    int k = op->phase == PHASE_OPTIMIZER ? a : op->micro;
    int *slot = &sc->first[(size_t)op->iter * (a + 1) + k];
    if (*slot < 0)
        *slot = id;
}

/* Folding (engine_fold.c).  engine_fold_scan_new readies SC for a scan
 * of S's ops (0 when S has too few micro-batches to fold: SC is then
 * empty, and engine_fold_new returns NULL); engine_fold_new, after the
 * scan, takes SC over and returns NULL when the schedule has no run of
 * repeated micro-batches to skip. */
int engine_fold_scan_new(const struct sched *s, struct engine_fold_scan *sc);
struct engine_fold *engine_fold_new(const struct sched *s,
                                    struct engine_fold_scan *sc);
void engine_fold_free(struct engine_fold *f);
/* The host has reached op ID for the first time, at NOW: returns how far
 * the clock moved (0 unless micro-batches were skipped, in which case
 * e->next_op moved on too). */
int64_t engine_fold_reached(struct engine *e, int id, int64_t now);
/* Micro-batches skipped so far. */
int engine_fold_count(const struct engine_fold *f);

#endif
