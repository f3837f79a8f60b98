models --show @SRCDIR@/tests/data/dup-config.json
