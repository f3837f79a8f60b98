merge @SRCDIR@/tests/golden/sweep-tiny.out
