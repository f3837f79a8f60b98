report --timeline @SRCDIR@/tests/data/run.ini --out partial
