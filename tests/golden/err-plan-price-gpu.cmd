plan --model tiny-llama --tokens 2T --gpu test-2x4 --price dgx-h100=2.5/gpu-hour
