calibrate --nccl-tests @SRCDIR@/tests/data/published-sample.csv --out cal.ini
