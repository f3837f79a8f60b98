calibrate --profile @SRCDIR@/tests/data/profile-no-shapes.json -o partial.ini
