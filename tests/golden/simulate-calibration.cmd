simulate --model tiny-llama --topology dgx-a100-80g --calibration @SRCDIR@/tests/data/calibration-a100.ini
