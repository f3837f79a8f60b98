/*
 * check_progress.c: the sweep's progress line (progress.c).
 */
#include "check_main.h"
#include "progress.h"

#include <check.h>

START_TEST(test_progress_line)
{
    char b[160];
    /* 2,500 of 10,000 points in 5 s: 500 points/s, and the 7,500 left take
     * 7,500 / 500 = 15 s. */
    ck_assert_str_eq(progress_format(b, sizeof b, "sweep", 2500, 10000, 5.0,
                                     0),
                     "fsdpsim: sweep: 2500 of 10000 points (25%), "
                     "500 points/s, 15s left");
    /* 3 points in 2 s: 1.5 points/s (one decimal under 10), 97 left take
     * 97 / 1.5 = 64.7 s, shown as 1m05s. */
    ck_assert_str_eq(progress_format(b, sizeof b, "tune", 3, 100, 2.0, 0),
                     "fsdpsim: tune: 3 of 100 points (3%), 1.5 points/s, "
                     "1m05s left");
    /* Done: the time it took; 10,000 points in 7,384 s = 2h03m04s. */
    ck_assert_str_eq(progress_format(b, sizeof b, "sweep", 10000, 10000,
                                     7384.0, 1),
                     "fsdpsim: sweep: 10000 of 10000 points (100%), "
                     "1.4 points/s, 2h03m in all");
    /* Before the first point: no rate to speak of. */
    ck_assert_str_eq(progress_format(b, sizeof b, "plan", 0, 8, 0.3, 0),
                     "fsdpsim: plan: 0 of 8 points (0%)");
}
END_TEST

START_TEST(test_progress_rate_limited)
{
    /* Redrawn at most every PROGRESS_INTERVAL_S (0.25 s), at once the
     * first time. */
    ck_assert(progress_due(-1, 0.0));
    ck_assert(!progress_due(10.0, 10.1));
    ck_assert(!progress_due(10.0, 10.249));
    ck_assert(progress_due(10.0, 10.25));
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("progress");
    TCase *c = tcase_create("core");
    tcase_add_test(c, test_progress_line);
    tcase_add_test(c, test_progress_rate_limited);
    suite_add_tcase(s, c);
    return tu_main(s);
}
