compare @SRCDIR@/tests/data/compare-pred.dat @SRCDIR@/tests/data/compare-meas.dat
