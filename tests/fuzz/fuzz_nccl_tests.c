/*
 * fuzz_nccl_tests.c: nccl-tests output (text and -J JSON), read as
 * `fsdpsim calibrate --nccl-tests FILE` reads it.  An accepted run has
 * ranks, nodes and rows within their bounds.  The reader takes a path, so
 * each input is written to a private temporary file first.
 */
#define _POSIX_C_SOURCE 200809L
#include "fuzz_util.h"
#include "nccl_tests.h"

#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[64];
    if (path[0] == '\0')
        snprintf(path, sizeof path, "/tmp/fsdpsim-fuzz-nt-%ld",
                 (long)getpid());
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        abort();
    if (size > 0 && fwrite(data, 1, size, f) != size)
        abort();
    fclose(f);
    struct nccl_tests_run run;
    nccl_tests_run_init(&run);
    char *cause = NULL;
    if (nccl_tests_read(path, &run, &cause) == 0) {
        FUZZ_ASSERT(run.op >= 0 && run.op < COLL_OP_COUNT);
        FUZZ_ASSERT(run.ranks >= 1 && run.nodes >= 1);
        FUZZ_ASSERT(run.n_rows >= 1 && run.n_rows <= NCCL_TESTS_MAX_ROWS);
        for (int i = 0; i < run.n_rows; i++)
            FUZZ_ASSERT(run.rows[i].size_bytes >= 0
                        && run.rows[i].time_us >= 0);
    } else {
        fuzz_check_cause(cause);
    }
    nccl_tests_run_free(&run);
    unlink(path);
    return 0;
}
