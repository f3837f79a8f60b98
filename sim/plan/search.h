/*
 * search.h: what the searches of `fsdpsim tune` and `fsdpsim plan` share:
 * a point's command line (the base simulate options plus the point's own),
 * the headroom percentage, and the memory-headroom test.  Their option
 * splitting is command code, in cmd_search.h.
 *
 * Ownership: struct search_args owns the strings it appends and the array;
 * the base strings are borrowed from the caller's argv.
 */
#ifndef FSDPSIM_SEARCH_H
#define FSDPSIM_SEARCH_H

#include <stdint.h>

#include "batch.h"

/* A point's command line: base arguments, then owned "--key=value"
 * strings that override them as later flags do. */
struct search_args {
    int argc, n_base;
    char **argv;
};
void search_args_init(struct search_args *a, int base_argc, char **base);
void search_args_add(struct search_args *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void search_args_free(struct search_args *a);
/* A batch point borrowing a's vector. */
struct batch_point search_args_point(const struct search_args *a);

/* A percentage "10%" or "10" (percent) in [0, 90]: a fraction in *frac.
 * -1 with *cause naming opt. */
int search_parse_percent(const char *opt, const char *s, double *frac,
                         char **cause);

/* Whether a simulated point fits with a headroom fraction h of device
 * memory left over: peak reserved + NCCL's buffers <= (1 - h) x device
 * memory, and no allocation failed.  The reserved peak is the caching
 * allocator's, what an out-of-memory error compares against; NCCL's
 * buffers (nccl_buffer_bytes) are device memory outside it, which
 * nvidia-smi shows with it. */
int search_fits(const struct batch_columns *c, const struct sweep_result *r,
                double headroom);
/* Free device memory at the peak, as a fraction of it (negative: short):
 * what neither the allocator's reserved peak nor NCCL's buffers take. */
double search_mem_headroom(const struct batch_columns *c,
                           const struct sweep_result *r);

#endif
