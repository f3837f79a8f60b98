simulate --model @SRCDIR@/tests/data/bad-key-config.json
