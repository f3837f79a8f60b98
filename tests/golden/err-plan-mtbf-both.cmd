plan --model tiny-llama --tokens 1T --gpu test-2x4 --mtbf-per-gpu 1h --mtbf-per-node 2h
