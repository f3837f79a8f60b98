/*
 * check_main.h: the runner every Check suite's main() ends with.
 */
#ifndef FSDPSIM_CHECK_MAIN_H
#define FSDPSIM_CHECK_MAIN_H

#include <check.h>
#include <stdlib.h>
#include <string.h>

/* Run every test of S (Check frees it with the runner); the exit status
 * for automake: success only when none failed. */
static inline int
tu_main(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* Whether tests run in forked children (not under CK_FORK=no, as
 * valgrind runs them): the tests that expect a crash need one. */
static inline int
tu_can_fork(void)
{
    const char *fork_env = getenv("CK_FORK");
    return !(fork_env && strcmp(fork_env, "no") == 0);
}

#endif
