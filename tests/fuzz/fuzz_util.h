/*
 * fuzz_util.h: shared checks for the libFuzzer harnesses.
 *
 * Each harness feeds its input to the same entry point the command line
 * uses and checks one invariant: the input is either rejected with a
 * message, or accepted and the result is valid.  A violated invariant
 * aborts, which libFuzzer reports as a crash with the input saved.
 */
#ifndef FSDPSIM_FUZZ_UTIL_H
#define FSDPSIM_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The input as a C string, or NULL when it holds a NUL byte (files with
 * one are rejected before any parser sees them). */
static inline char *
fuzz_text(const uint8_t *data, size_t size)
{
    if (memchr(data, 0, size) != NULL)
        return NULL;
    char *s = malloc(size + 1);
    if (s == NULL)
        abort();
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* The whole of a text harness's LLVMFuzzerTestOneInput: CHECK gets the
 * input as a C string (fuzz_text; an input holding a NUL byte is
 * skipped), freed after it.  Returns 0, libFuzzer's "go on". */
static inline int
fuzz_run_text(const uint8_t *data, size_t size, void (*check)(char *text))
{
    char *s = fuzz_text(data, size);
    if (s != NULL) {
        check(s);
        free(s);
    }
    return 0;
}

/* A rejection must come with a non-empty message. */
static inline void
fuzz_check_cause(char *cause)
{
    if (cause == NULL || cause[0] == '\0') {
        fprintf(stderr, "rejected without a message\n");
        abort();
    }
    free(cause);
}

#define FUZZ_ASSERT(cond)                                                   \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__,      \
                    __LINE__, #cond);                                       \
            abort();                                                        \
        }                                                                   \
    } while (0)

#endif
