plan --model tiny-llama --tokens 1T --deadline 2d --gpu test-2x4 --global-batch-tokens 256k --max-nodes 4 --mtbf-per-node none --jobs 2
