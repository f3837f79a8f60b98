simulate --config @SRCDIR@/tests/data/run-bad-channels.ini
