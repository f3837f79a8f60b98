plan --model tiny-llama --tokens 1T --deadline 1d --gpu test-2x4 --global-batch-tokens 32k --max-nodes 8 --jobs 2
