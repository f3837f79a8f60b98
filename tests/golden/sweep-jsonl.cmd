sweep --model tiny-llama --topology test-2x4 --vary nodes=1,2 --vary micro_batch=1,100000 --format jsonl --jobs 2
