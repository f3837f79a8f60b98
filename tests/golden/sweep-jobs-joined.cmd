sweep --model tiny-llama --topology test-2x4 --vary nodes=1,2 -j1 --format jsonl
