simulate --config @SRCDIR@/tests/data/run.ini --seq-len 1024
