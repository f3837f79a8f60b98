calibrate --nccl-tests @SRCDIR@/tests/data/nccl-tests-two-runs.txt --out cal.ini
