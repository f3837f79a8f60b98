tune --model tiny-llama --topology test-2x4 --trace partial.json
