simulate --model tiny-llama --topology test-2x4 --network simgrid --platform @SRCDIR@/tests/data/bad-platform.xml
