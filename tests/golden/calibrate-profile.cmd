calibrate --profile @SRCDIR@/tests/data/profile-small.json -t dgx-a100-80g -o profile-cal.ini
