calibrate --nccl-tests @SRCDIR@/tests/data/nccl-tests-bad-size.txt -o partial.ini
