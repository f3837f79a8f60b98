models --show @SRCDIR@/tests/data/bom-config.json
