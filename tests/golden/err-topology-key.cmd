simulate --topology @SRCDIR@/tests/data/bad-topology.ini
