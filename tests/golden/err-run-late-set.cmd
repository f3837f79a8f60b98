simulate --config @SRCDIR@/tests/data/run-bad-set.ini
