plan --model tiny-llama --tokens 1T --gpu test-2x4 --spot-price test-2x4=5/node
