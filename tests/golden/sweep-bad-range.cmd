sweep --model tiny-llama --topology test-2x4 --vary nodes=1:8:x2 --vary grad_accum=8:1:+1 --out partial.csv
