simulate --calibration @SRCDIR@/tests/data/nccl-tests-allreduce-8x1.txt
