simulate --config @SRCDIR@/tests/data/bad-run.ini
