simulate --config @SRCDIR@/tests/data/dup-run.ini
