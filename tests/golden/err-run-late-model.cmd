simulate --config @SRCDIR@/tests/data/run-bad-model.ini
