simulate --model tiny-llama --topology test-2x4 --set gpu.bf16=0 --param-dtype bf16
