report --timeline @SRCDIR@/tests/data --out partial
