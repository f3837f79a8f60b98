calibrate --nccl-tests @SRCDIR@/tests/data/nccl-tests-norows.txt --out partial.ini
