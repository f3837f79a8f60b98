simulate --model tiny-llama --topology test-2x4 --format json >/dev/full
