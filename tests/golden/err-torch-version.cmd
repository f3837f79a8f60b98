simulate --model tiny-llama --topology test-2x4 --torch-version 2.11
