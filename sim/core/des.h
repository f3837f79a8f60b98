/*
 * des.h: the discrete-event core, a min-heap of events on a virtual clock.
 *
 * Time is integer nanoseconds.  Events are ordered by (time, seq), where
 * seq is the insertion counter, so events at the same instant fire in the
 * order they were scheduled and a run is reproducible bit for bit (the
 * libuv timer rule).  The clock never goes backwards: scheduling in the
 * past is a bug and asserts.  des owns its events; payloads are plain ints.
 */
#ifndef FSDPSIM_DES_H
#define FSDPSIM_DES_H

#include <stddef.h>
#include <stdint.h>

struct des_event {
    int64_t t_ns;
    uint64_t seq;
    int type;
    int arg;
};

struct des;

struct des *des_new(void);
void des_free(struct des *d);
/* Schedule an event at absolute time t_ns >= des_now(). */
void des_at(struct des *d, int64_t t_ns, int type, int arg);
/* Pop the earliest event into *ev and advance the clock; 0 when empty. */
int des_next(struct des *d, struct des_event *ev);
int64_t des_now(const struct des *d);
uint64_t des_events_processed(const struct des *d);

/* The pending events in the order they will run; *out (caller frees) may
 * be NULL when there are none. */
size_t des_pending(const struct des *d, struct des_event **out);
/* Move the clock and every pending event DT_NS later, give each event the
 * argument MAP returns for it, and count EXTRA events as processed: the
 * engine skips ahead over repeated micro-batches (engine_fold.c).  Order
 * is kept, since every event moves by the same time. */
void des_shift(struct des *d, int64_t dt_ns, int (*map)(void *, int type,
                                                         int arg),
               void *ctx, uint64_t extra);

#endif
