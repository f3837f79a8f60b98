simulate --model tiny-llama --topology test-2x4 --grad-accum 11 --format json --exact
