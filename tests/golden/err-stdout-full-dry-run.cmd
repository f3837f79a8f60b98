real run --dry-run --model tiny-llama --topology test-2x4 >/dev/full
