tune --model toy --topology test-2x4 --auto-wrap-policy size --max-grad-accum 2 --top 3 --jobs 2
