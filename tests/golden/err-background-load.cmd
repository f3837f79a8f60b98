simulate --model tiny-llama --topology test-2x4 --network simgrid --background-load 30
