plan --model tiny-llama --tokens 1T --gpu test-2x4 --max-nodes 4 --finalists 2
