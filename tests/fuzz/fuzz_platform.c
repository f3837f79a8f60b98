/*
 * fuzz_platform.c: SimGrid platform files through the checks that stand
 * between a user's --platform FILE and SimGrid (which aborts on what it
 * cannot read).  Whatever the input, the checker accepts it or gives one
 * message naming the file.
 */
#define _POSIX_C_SOURCE 200809L
#include "fuzz_util.h"
#include "net_platform.h"

#include <string.h>

static void
check_platform(char *s)
{
    char *cause = NULL;
    /* The job of test-2x4: 2 nodes x 4 GPUs. */
    if (net_platform_check_text(s, "fuzz.xml", 2, 4, &cause) != 0) {
        FUZZ_ASSERT(cause == NULL || strncmp(cause, "fuzz.xml", 8) == 0);
        fuzz_check_cause(cause);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_run_text(data, size, check_platform);
}
