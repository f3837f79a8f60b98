plan --model tiny-llama --tokens lots --gpu test-2x4
