calibrate --nccl-tests @SRCDIR@/tests/data/nccl-tests-bad-version.txt -o partial.ini
