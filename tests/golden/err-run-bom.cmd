simulate --config @SRCDIR@/tests/data/bom-run.ini
