plan --model tiny-llama --tokens 2T --gpu test-2x4 --budget 1M
