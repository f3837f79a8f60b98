topology @SRCDIR@/tests/data
