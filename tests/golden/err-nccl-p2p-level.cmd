simulate --model tiny-llama --topology test-2x4 --nccl-p2p-level nvl
