plan --model tiny-llama --tokens 1T --gpu test-2x4 --max-nodes 4 --jobs 2 --price 'test-2x4=$1e30/node'
