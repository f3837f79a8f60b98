validate --runs @SRCDIR@/tests/data/published-runs-badnum.csv
