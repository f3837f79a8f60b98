calibrate --nccl-tests @SRCDIR@/tests/data/nccl-tests-bad-elements.txt -o partial.ini
