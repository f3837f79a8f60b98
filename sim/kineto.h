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

struct json_t;

/* 1 when ROOT looks like a profiler trace: "schemaVersion" or
 * "deviceProperties" at the top, or an event with "cat": "kernel". */
int kineto_detect(const struct json_t *root);

/* Fill TL with the GPU ops of the last profiled step of ROOT (see
 * kineto.c for what is mapped to what).  0, or -1 with *cause (caller
 * frees) naming PATH. */
int kineto_import(const char *path, const struct json_t *root,
                  struct compare_timeline *tl, char **cause);

#endif
