calibrate --profile @SRCDIR@/tests/data/profile-no-kernels.json -o partial.ini
