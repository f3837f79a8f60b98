calibrate --nccl-tests @SRCDIR@/tests/data/nccl-tests-allreduce-8x1.txt >/dev/full
