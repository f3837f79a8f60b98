plan --model tiny-llama --tokens 1T --gpu test-2x4 --max-nodes 4 --jobs 2 --budget 1e30 --price test-2x4=2/gpu-hour
