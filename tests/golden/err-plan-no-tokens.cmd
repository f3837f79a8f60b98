plan --model tiny-llama --deadline 30d --gpu test-2x4
