simulate --model tiny-llama --topology test-2x4 --nccl-min-nchannels 8 --nccl-max-nchannels 2
