calibrate --profile @SRCDIR@/tests/data/profile-not-json.json -o partial.ini
