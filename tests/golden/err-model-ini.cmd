simulate --model @SRCDIR@/tests/data/bad-model.ini
