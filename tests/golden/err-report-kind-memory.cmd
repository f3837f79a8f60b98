report --timeline @SRCDIR@/tests/data/compare-pred.dat --memory @SRCDIR@/tests/data/compare-meas.dat --out partial
