/*
 * kineto.h: importing a PyTorch profiler (Kineto) Chrome trace of a real
 * FSDP job as the measured side of `fsdpsim compare`.
 *
 * The json_t given is borrowed; what is read is copied into the caller's
 * struct compare_timeline (which then owns it, see compare.h).
 */
#ifndef FSDPSIM_KINETO_H
#define FSDPSIM_KINETO_H

#include "compare.h"

#include <stdint.h>

struct json_t;

/* Members of an event object: KEY's string (NULL when not a string);
 * KEY's number in *OUT (0, or -1 when absent, not a number or beyond
 * 4e15); KEY as an integer, or DFLT.  kineto_kernels.c reads with them
 * too. */
const char *kineto_str(const struct json_t *obj, const char *key);
int kineto_num(const struct json_t *obj, const char *key, double *out);
int64_t kineto_int(const struct json_t *obj, const char *key, int64_t dflt);
/* A complete event ("ph": "X"), the kind both readers of a trace take
 * ops, launches and kernels from: its category, name and args (borrowed
 * from the event), and its span in ns (units_us_to_ns). */
struct kineto_span {
    const char *cat, *name;
    const struct json_t *args;
    int64_t ts_ns, dur_ns;
};
/* 1 with *S filled when EV is a complete event with a category, a name,
 * a ts and a dur not below 0 (kineto_num's numbers); else 0. */
int kineto_complete_event(const struct json_t *ev, struct kineto_span *s);
/* 1 when CAT is a CPU-side CUDA call, the launch a GPU op's
 * args.correlation points back to ("cuda_runtime", "cuda_driver"). */
int kineto_is_cuda_call(const char *cat);

/* 1 when ROOT looks like a profiler trace: "schemaVersion" or
 * "deviceProperties" at the top, or an event with "cat": "kernel". */
int kineto_detect(const struct json_t *root);

/* Fill TL with the GPU ops of the last profiled step of ROOT (see
 * kineto.c for what is mapped to what).  0, or -1 with *cause (caller
 * frees) naming PATH. */
int kineto_import(const char *path, const struct json_t *root,
                  struct compare_timeline *tl, char **cause);

#endif
