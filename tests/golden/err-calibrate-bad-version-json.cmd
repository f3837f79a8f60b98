calibrate --nccl-tests @SRCDIR@/tests/data/nccl-tests-bad-version.json -o partial.ini
