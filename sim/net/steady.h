/*
 * steady.h: a run's summary at any gradient accumulation for the cost of
 * a few micro-batches.
 *
 * When only the summary is wanted (a sweep's rows), a step of A
 * micro-batches need not be simulated, nor even built, in full: the
 * engine proves, by finding the same state one period apart
 * (engine_fold.c), that the middle micro-batches repeat, and from then on
 * every further micro-batch adds one period's time, ops and allocator
 * retries.  So a schedule of A' (nine or ten) micro-batches is built and
 * simulated, and the summary of A is that of A' with (A - A') / p more
 * periods counted in every sum (metrics_compute_steady).  The sums are
 * integers, so the figures are those of the full simulation to the
 * nanosecond and byte; when the state does not repeat in every step the
 * full schedule is built and simulated as usual.
 */
#ifndef FSDPSIM_STEADY_H
#define FSDPSIM_STEADY_H

#include "metrics.h"
#include "net.h"
#include "setup.h"

/* Micro-batches of the schedule that stands for a longer step: enough
 * for the allocator to settle and a period of two to repeat once before
 * the last middle micro-batch (GPT-3 175B on 1024 GPUs, which does not
 * fit, repeats from micro-batch 6, every 2; folding needs 8 at least). */
#define STEADY_MICRO_BATCHES 9

/* Micro-batches of the probes that find a later repeat or a longer
 * period when the short step above has none in every step (sweeps only,
 * whose points share them): the short one for periods of a few
 * micro-batches (GPT-3 175B on 1024 GPUs at micro-batch 90 repeats from
 * micro-batch 2, every 6, in its second step), the long one for a period
 * of up to ENGINE_FOLD_MAX_PERIOD repeating once after the allocator has
 * settled (at micro-batch 2, from 4, every 20, in its first step). */
#define STEADY_PROBE_SHORT_MICRO_BATCHES 24
#define STEADY_PROBE_MICRO_BATCHES 64

/* Short runs kept for the points of a sweep that differ only in their
 * accumulation (thread-safe). */
struct steady_cache;
struct steady_cache *steady_cache_new(void);
void steady_cache_free(struct steady_cache *c);

/* The key under which ARGV's short run is kept: every word but the
 * accumulation's (--grad-accum N, --grad_accum=N).  Caller frees. */
char *steady_key(int argc, char *const *argv);

/* Prepare R (parsed by setup_parse_args) and simulate it for its summary:
 * *NR and *M as setup_prepare, simulate_schedule and metrics_compute give
 * them, except that R's schedule and NR's times may be of a shorter step
 * (r->sched->micro_batches), or R's schedule only a header and NR empty
 * (CACHE held the short run under KEY, steady_key of R's command line;
 * both may be NULL); either way the schedule's totals are R's.  0, or -1
 * with *cause (caller frees).  *steady says whether the shorter step was
 * used. */
int steady_run(struct run *r, struct steady_cache *cache, const char *key,
               struct sim_result *nr, struct metrics *m, int *steady,
               char **cause);

/* R's summary (*M, R's schedule only a header) from a run of R's
 * settings with STEPS[it] micro-batches in step it, when that run stands
 * for R's accumulation (*used; what steady_run does for the steps it
 * chooses): 0, or -1 with *cause.  For tests. */
int steady_run_steps(struct run *r, const int *steps, struct metrics *m,
                     int *used, char **cause);

#endif
