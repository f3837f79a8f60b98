plan --model tiny-llama --tokens 1T --deadline 2d --gpu test-2x4 --price test-2x4=2/gpu-hour --global-batch-tokens 256k --max-nodes 8 --jobs 2
