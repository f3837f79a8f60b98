simulate --config @SRCDIR@/tests/data/run-bad-min-params.ini
