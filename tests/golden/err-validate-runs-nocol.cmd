validate --runs @SRCDIR@/tests/data/published-runs-nocol.csv
