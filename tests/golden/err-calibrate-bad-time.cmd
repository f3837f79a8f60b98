calibrate --nccl-tests @SRCDIR@/tests/data/nccl-tests-bad-time.txt -o partial.ini
