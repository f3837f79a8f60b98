simulate --model llama9
