/*
 * fuzz_nccl_tests.c: nccl-tests output (text and -J JSON), read as
 * `fsdpsim calibrate --nccl-tests FILE` reads it.  An accepted run has
 * ranks, nodes and rows within their bounds, for every run of a file
 * that holds several; input that starts like the published-points CSV is
 * read as that too.  The reader takes a path, so
 * each input is written to a private temporary file first.
 */
#define _POSIX_C_SOURCE 200809L
#include "fuzz_util.h"
#include "nccl_tests.h"
#include "published.h"

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
    struct nccl_tests_run *runs = NULL;
    int n = 0;
    char *cause = NULL;
    if (nccl_tests_read_all(path, COLL_OP_COUNT, &runs, &n, &cause) == 0) {
        FUZZ_ASSERT(n >= 1);
        for (int k = 0; k < n; k++) {
            const struct nccl_tests_run *run = &runs[k];
            FUZZ_ASSERT(run->op >= 0 && run->op < COLL_OP_COUNT);
            FUZZ_ASSERT(run->ranks >= 1 && run->nodes >= 1);
            FUZZ_ASSERT(run->n_rows >= 1
                        && run->n_rows <= NCCL_TESTS_MAX_ROWS);
            for (int i = 0; i < run->n_rows; i++)
                FUZZ_ASSERT(run->rows[i].size_bytes >= 0
                            && run->rows[i].time_us >= 0);
        }
        for (int k = 0; k < n; k++)
            nccl_tests_run_free(&runs[k]);
        free(runs);
    } else {
        FUZZ_ASSERT(runs == NULL && n == 0);
        fuzz_check_cause(cause);
    }
    unlink(path);
    /* The published-points CSV, which calibrate also takes. */
    char *text = fuzz_text(data, size);
    if (text != NULL && published_is_csv(text)) {
        struct published_run *pub;
        int n_pub;
        if (published_parse("fuzz.csv", text, &pub, &n_pub, &cause) == 0) {
            for (int k = 0; k < n_pub; k++) {
                FUZZ_ASSERT(pub[k].n >= 1);
                for (int i = 1; i < pub[k].n; i++)
                    FUZZ_ASSERT(pub[k].pt[i - 1].size_bytes
                                <= pub[k].pt[i].size_bytes);
            }
            published_free(pub, n_pub);
        } else {
            fuzz_check_cause(cause);
        }
    }
    free(text);
    return 0;
}
