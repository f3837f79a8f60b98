calibrate --nccl-tests @SRCDIR@/tests/data/nccl-tests-bad-wrong.txt -o partial.ini
