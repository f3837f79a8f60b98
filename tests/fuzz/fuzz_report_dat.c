/*
 * fuzz_report_dat.c: the timeline and memory .dat checks `fsdpsim report`
 * makes before gnuplot sees a file (report_dat.c).
 *
 * The first byte picks the kind (even: timeline, odd: memory), the rest
 * is the file.  Invariants: the check ends (no input is read twice); a
 * refusal is one message naming the flag and the file; an accepted file
 * has the kind's column header and a latest time that is finite and not
 * negative unless a row says so.
 */
#include "fuzz_util.h"
#include "report_dat.h"

#include <math.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    enum report_dat_kind kind = data[0] & 1 ? REPORT_DAT_MEMORY
                                            : REPORT_DAT_TIMELINE;
    char *s = fuzz_text(data + 1, size - 1);
    if (s == NULL)
        return 0;
    double last_us = 0;
    char *cause = NULL;
    if (report_dat_check(s, kind, "fuzz.dat", &last_us, &cause) != 0) {
        FUZZ_ASSERT(cause != NULL);
        size_t fl = strlen(report_dat_flag(kind));
        FUZZ_ASSERT(strncmp(cause, report_dat_flag(kind), fl) == 0);
        FUZZ_ASSERT(strncmp(cause + fl, " fuzz.dat", 9) == 0);
        FUZZ_ASSERT(strchr(cause, '\n') == NULL);
        fuzz_check_cause(cause);
    } else {
        FUZZ_ASSERT(cause == NULL);
        FUZZ_ASSERT(isfinite(last_us));
        FUZZ_ASSERT(strstr(s, kind == REPORT_DAT_TIMELINE
                                  ? "# stream_index stream op kind"
                                  : "# t_us allocated_bytes") != NULL);
    }
    free(s);
    return 0;
}
