plan --model tiny-llama --tokens 1T --gpu test-2x4 --preemption-rate 5/s
