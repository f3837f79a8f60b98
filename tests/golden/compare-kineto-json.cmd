compare @SRCDIR@/tests/data/compare-pred.json @SRCDIR@/tests/data/compare-kineto.json --format json --tol 5
