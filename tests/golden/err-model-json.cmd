simulate --model @SRCDIR@/tests/data/bad-config.json
