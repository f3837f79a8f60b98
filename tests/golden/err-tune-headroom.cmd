tune --model tiny-llama --topology test-2x4 --headroom 95%
