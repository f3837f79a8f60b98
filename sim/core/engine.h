/*
 * engine.h: executes a schedule on the discrete-event core.
 *
 * The host thread issues ops in schedule order, spending each op's issue
 * time and blocking at CPU_WAIT ops; each stream runs its ops in FIFO
 * order once their dependencies have finished; collectives additionally
 * start in issue order per communicator (one NCCL communicator serializes
 * its kernels, doc/fsdp-semantics.md §2.3).  Allocations and frees go to the
 * memory model at the host time they are issued; an allocation the
 * caching allocator has to retry takes host time, and one whose retry
 * synchronizes the device blocks the host until every GPU op issued so
 * far has finished (mem.h).  One representative rank
 * is simulated: by SPMD symmetry the cost does not grow with the number of
 * GPUs.
 */
#ifndef FSDPSIM_ENGINE_H
#define FSDPSIM_ENGINE_H

#include <stdint.h>

#include "cost.h"
#include "mem.h"
#include "sched.h"
#include "topo.h"

struct op_time {
    int64_t issue_ns;   /* host starts issuing it */
    int64_t start_ns;   /* GPU starts it (= issue for host-side ops) */
    int64_t end_ns;     /* GPU finishes it */
};

/* One run of skipped micro-batches (engine_fold.c): in step ITER, the
 * host reached op B2 at T2 in the state it reached B1 in at T1, one period
 * of MICRO micro-batches (B2 - B1 ops) before; COPIES more periods were
 * then filled in, and the simulation went on from T2 + COPIES x (T2 - T1).
 * COPIES is 0 when no whole period was left before the step's last
 * middle micro-batch: nothing was skipped, but a longer step repeats
 * there too (steady.c).
 * Every op before LO had finished at T1.
 * MEM: what the period added to the allocator's retries, syncs, OOMs and
 * their stall time. */
struct engine_fold_jump {
    int iter;
    int b1, b2;
    int lo;                     /* lowest op unfinished at T1 */
    int micro;
    int copies;
    int64_t t1, t2;
    struct mem_stats mem;
};

struct engine_result {
    struct op_time *times;      /* per op */
    struct cost_table cost;
    struct mem *mem;
    int64_t *step_end_ns;       /* per iteration: end of optimizer step */
    int64_t end_ns;             /* simulated time at the end */
    uint64_t events;            /* counting those of folded ones */
    int folded;                 /* micro-batches not simulated one by
                                   one (engine_fold.c) */
    struct engine_fold_jump *jumps;     /* in step order */
    int n_jumps;
    int too_long;               /* not run: times would overflow */
    double total_ns;            /* engine_total_ns of the whole schedule */
};

/* Upper bound on the sum of all op times, in ns (2^62: ~146 years). */
#define ENGINE_MAX_TOTAL_NS 4.6e18

/* What ops FROM .. TO-1 can take at most, one after the other (their
 * times and the allocator's retries), in ns: held to ENGINE_MAX_TOTAL_NS
 * over the whole schedule. */
double engine_total_ns(const struct sched *s, const struct topo *t,
                       const struct cost_table *ct, int from, int to);

/* Runs the whole schedule.  When the ops' times add up to more than 64-bit
 * nanoseconds can hold, nothing runs and too_long is set; an internal
 * deadlock (a bug) aborts with a message. */
void engine_run(const struct sched *s, const struct topo *t,
                struct engine_result *r);
/* The same with durations given (tests, calibrated replays); the table is
 * taken over by the result. */
void engine_run_costs(const struct sched *s, const struct topo *t,
                      struct cost_table *ct, struct engine_result *r);
void engine_result_free(struct engine_result *r);

/* A network model that knows how concurrent collectives share links
 * (net.h): given the ids of the n >= 2 collectives crossing the network
 * at the same time, it sets each one's rate relative to running alone
 * (0 < rate <= 1).  Without one, they share the NICs equally. */
struct engine_net {
    void (*share)(void *ctx, const int *ops, int n, double *rate);
    void *ctx;
};

/* engine_run_costs with a network model (NULL: as engine_run_costs). */
void engine_run_net(const struct sched *s, const struct topo *t,
                    struct cost_table *ct, const struct engine_net *net,
                    struct engine_result *r);

/* The longest period, in micro-batches, folding looks for.  One is the
 * common case, two when best fit takes two equal buffers in turn; a run
 * that does not fit keeps freeing and re-creating cached segments on its
 * retries, and the order they come back in repeats only every few
 * micro-batches (GPT-3 175B on 1024 GPUs, bf16, which needs 190 GB of an
 * 80 GB GPU: every 4 to 20 by micro-batch size; tests/check_steady.c). */
#define ENGINE_FOLD_MAX_PERIOD 24

/* Every run above folds repeated micro-batches: when the host reaches a
 * middle micro-batch of a gradient-accumulation step in exactly the state
 * (streams, queues, pending events, allocator, all relative to that
 * moment) it reached the one before in, and the micro-batches up to the
 * step's last are copies of it, those micro-batches would replay the same
 * events shifted by one period each: their times, memory samples and
 * event counts are filled in as copies and the simulation goes on from
 * the last one.  The result is the one simulating them would give, to the
 * nanosecond.  engine_run_exact simulates every op (--exact, tests). */
void engine_run_exact(const struct sched *s, const struct topo *t,
                      struct cost_table *ct, struct engine_result *r);

#endif
