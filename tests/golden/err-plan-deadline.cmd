plan --model tiny-llama --tokens 2T --deadline 30 --gpu test-2x4
