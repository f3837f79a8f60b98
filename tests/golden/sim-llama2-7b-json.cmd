simulate --model llama2-7b --topology dgx-a100-80g --nodes 1 --format json
